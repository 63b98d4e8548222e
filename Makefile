# einsum-bench: one non-recursive Makefile.
#
#   make            build ./einsum-bench (installs missing packages as root)
#   make run        build and run the default suite on instances/
#   make test       build and run every test; last line "N passed, N failed"
#   make suite      every public instance, both modes and strategies -> results/
#   make bench      paired performance figures against raw references
#   make bench-suite the public suite against its roofline and the peers
#   make report     eager, trace, numpy and torch on instances/ -> results/
#   make memcheck   the test suite under valgrind memcheck
#   make sanitize   the test suite built with -fsanitize=address,undefined
#   make install    binary, scripts (einsum-bench-*), man page, bash
#                   completion under PREFIX (/usr/local); DESTDIR honoured
#   make uninstall  removes what install put there
#   make fuzz       libFuzzer harnesses (clang, ASan+UBSan) for the instance
#                   loader with planning, the path-file loader and the .npy
#                   reader, FUZZ_SECONDS each (default 120), inputs up to
#                   FUZZ_MAX_LEN bytes; `make test` replays tests/fuzz/*/
#   make tsan       ThreadSanitizer on the threaded tests (build-san-thread/)
#   V=1 shows commands; WERROR=1 adds -Werror; SANITIZE=address,undefined
#   builds into build-san/ (SANITIZE=thread into build-san-thread/).

SHELL := /bin/bash
.DEFAULT_GOAL := all

ifeq ($(V),1)
Q :=
else
Q := @
endif

ifneq ($(SANITIZE),)
# ThreadSanitizer objects cannot link with ASan's: a folder of their own.
BUILD := build-san$(if $(filter thread,$(SANITIZE)),-thread,)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
else
BUILD := build
SANFLAGS :=
endif

CC ?= cc
# Recursive (=) so pkg-config runs after the deps step has installed things.
PKG_CFLAGS = $(shell pkg-config --cflags openblas libcjson 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs openblas libcjson 2>/dev/null)
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wformat=2 -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif
OPT ?= -O2 -g
EB_CFLAGS = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) $(PKG_CFLAGS) $(CFLAGS)
EB_LDLIBS = $(SANFLAGS) $(PKG_LIBS) -lm -lpthread $(LDFLAGS)

SRCS := $(filter-out src/main.c,$(wildcard src/*.c))
OBJS := $(SRCS:src/%.c=$(BUILD)/%.o)
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
# Fuzz harnesses: replayed over their corpus by `make test` (normal build),
# run under libFuzzer by `make fuzz`.
FUZZ_NAMES := instance pathfile npy
TEST_BINS += $(FUZZ_NAMES:%=$(BUILD)/tests/test_fuzz_%)
BIN := $(if $(SANITIZE),$(BUILD)/einsum-bench,einsum-bench)

GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)

.PHONY: all deps deps-python deps-install run suite test memcheck sanitize tsan \
        fuzz bench bench-suite report install uninstall clean

all: $(BIN)

deps:
	$(Q)scripts/ensure-deps

deps-python:
	$(Q)scripts/ensure-deps --python

deps-install:
	$(Q)scripts/ensure-deps --install

$(BUILD)/%.o: src/%.c | deps
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(EB_CFLAGS) -MMD -MP -c $< -o $@

# sysinfo records how it was built: compiler flags and git commit.
$(BUILD)/sysinfo.o: EXTRA_DEFS = -DEB_BUILD_CFLAGS='"$(strip -std=c11 $(OPT) $(SANFLAGS) $(CFLAGS))"' \
    -DEB_GIT_COMMIT='"$(GIT_COMMIT)"'
$(BUILD)/sysinfo.o: src/sysinfo.c $(BUILD)/.commit | deps
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(EB_CFLAGS) $(EXTRA_DEFS) -MMD -MP -c $< -o $@

# Rebuild sysinfo.o when the commit changes.
$(BUILD)/.commit: FORCE
	@mkdir -p $(BUILD)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
FORCE:

$(BUILD)/libeb.a: $(OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN): $(BUILD)/main.o $(BUILD)/libeb.a
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) -o $@ $^ $(EB_LDLIBS)

$(BUILD)/tests/%: tests/%.c tests/check.h $(BUILD)/libeb.a | deps
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(EB_CFLAGS) -Isrc -MMD -MP -o $@ $< $(BUILD)/libeb.a $(EB_LDLIBS)

$(BUILD)/tests/test_fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(BUILD)/libeb.a | deps
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(EB_CFLAGS) -Isrc -Itests/fuzz -DEB_FUZZ_NAME='"$*"' -o $@ \
	  $< tests/fuzz/replay.c $(BUILD)/libeb.a $(EB_LDLIBS)

# make fuzz: its own clang build in build-fuzz/.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 120
FUZZ_MAX_LEN ?= 2000000
FUZZ_BUILD := build-fuzz
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer \
  -fsanitize=address,undefined -fno-sanitize-recover=undefined $(PKG_CFLAGS)
FUZZ_OBJS := $(SRCS:src/%.c=$(FUZZ_BUILD)/%.o)

$(FUZZ_BUILD)/%.o: src/%.c | deps
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $< (fuzz)")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJS)
	@$(if $(Q),echo "  LD $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Isrc -Itests/fuzz $< \
	  $(FUZZ_OBJS) -o $@ $(PKG_LIBS) -lm -lpthread

.SECONDARY: $(FUZZ_OBJS)

fuzz: $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
	$(Q)tests/fuzz/run-fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_MAX_LEN)

# The default selection: the mission's four workloads (elementwise, matmul,
# batched matmul, the public lm networks). `make suite` runs all of them.
RUN_INSTANCES := $(addprefix instances/,$(addsuffix .json,\
    bin_elementwise_mul_2048x2048 bin_matmul_1024 \
    bin_batched_matmul_b32_m128_n128_k128 lm_batch_likelihood_sentence_3_12d \
    lm_batch_likelihood_sentence_4_4d lm_batch_likelihood_brackets_4_4d))

run: $(BIN)
	./$(BIN) run --mode both $(RUN_INSTANCES)

# The whole public suite (instances/*.json except the generated gen_*),
# eager and trace, every stored strategy, default warmups and samples:
# records, table, report.md and chart.svg in results/suite-<timestamp>/.
PUBLIC_INSTANCES = $(filter-out instances/gen_%,$(wildcard instances/*.json))

suite: $(BIN)
	$(Q)scripts/make-report --backends einsum-bench --bin ./$(BIN) \
	  -o results/suite-$$(date +%Y%m%d-%H%M%S) \
	  $(addprefix --instances ,$(PUBLIC_INSTANCES)) $(SUITE_ARGS)

# The Python peers' tests need Debian's python3-numpy and python3-torch.
test: $(BIN) $(TEST_BINS) | deps-python
	$(Q)EB_BUILD=$(BUILD) EB_BIN=./$(BIN) tests/run-all

memcheck: $(BIN) $(TEST_BINS) | deps-python
	$(Q)EB_BUILD=$(BUILD) EB_BIN=./$(BIN) \
	  EB_WRAP="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite -q" \
	  tests/run-all

sanitize:
	$(Q)EB_SANITIZE=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(MAKE) --no-print-directory SANITIZE=address,undefined test

# ThreadSanitizer on the tests that run the engine's team and split work
# (one, two and three threads). OpenBLAS's own threads synchronize in
# code TSan does not see; tests/tsan.supp drops the races with a frame in
# it, and a second pass runs OpenBLAS at one thread with no suppression.
TSAN_TESTS := test_team test_permute test_fuse test_engine
tsan:
	$(Q)$(MAKE) --no-print-directory SANITIZE=thread \
	  $(TSAN_TESTS:%=build-san-thread/tests/%)
	$(Q)for t in $(TSAN_TESTS); do \
	  TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	    build-san-thread/tests/$$t || exit 1; \
	done
	$(Q)OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1 \
	  build-san-thread/tests/test_engine

bench: $(BIN)
	$(Q)scripts/bench $(BENCH_ARGS)

bench-suite: $(BIN) | deps-python
	$(Q)scripts/bench --suite $(BENCH_ARGS)

report: $(BIN) | deps-python
	$(Q)scripts/make-report $(REPORT_ARGS)

# ---- install ----------------------------------------------------------------
# The scripts keep their names and their folder (they import ebpeer.py from
# it) under LIBDIR; BINDIR gets einsum-bench-NAME links to them.
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
LIBDIR = $(PREFIX)/lib/einsum-bench
MANDIR = $(PREFIX)/share/man/man1
COMPDIR = $(PREFIX)/share/bash-completion/completions
SCRIPTS := paired report make-report peer-numpy peer-torch callgrind-window \
           callgrind-compare
SCRIPT_FILES := $(addprefix scripts/,$(SCRIPTS) ebpeer.py)
MAN_NAME := einsum benchmark runner: eager and trace execution along stored paths

$(BUILD)/einsum-bench.1: $(BIN) | deps-install
	$(Q)help2man --no-info --name="$(MAN_NAME)" -o $@ ./$(BIN)

install: $(BIN) $(BUILD)/einsum-bench.1
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/scripts \
	  $(DESTDIR)$(MANDIR) $(DESTDIR)$(COMPDIR)
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/einsum-bench
	install -m 755 $(SCRIPT_FILES) $(DESTDIR)$(LIBDIR)/scripts/
	chmod 644 $(DESTDIR)$(LIBDIR)/scripts/ebpeer.py
	$(foreach s,$(SCRIPTS),ln -sf ../lib/einsum-bench/scripts/$(s) \
	  $(DESTDIR)$(BINDIR)/einsum-bench-$(s) &&) true
	install -m 644 $(BUILD)/einsum-bench.1 $(DESTDIR)$(MANDIR)/einsum-bench.1
	install -m 644 scripts/completion.bash $(DESTDIR)$(COMPDIR)/einsum-bench

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/einsum-bench \
	  $(addprefix $(DESTDIR)$(BINDIR)/einsum-bench-,$(SCRIPTS)) \
	  $(DESTDIR)$(MANDIR)/einsum-bench.1 $(DESTDIR)$(COMPDIR)/einsum-bench
	rm -rf $(DESTDIR)$(LIBDIR)

clean:
	rm -rf build build-san build-san-thread build-fuzz einsum-bench

-include $(wildcard $(BUILD)/*.d $(BUILD)/tests/*.d)
