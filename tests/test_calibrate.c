/*
 * test_calibrate: the roofline per dtype (element size and F of the run's
 * dtype) and the per-dtype rates of the calibration file: written and read
 * back, an explicit file without a needed dtype's F refused naming the
 * field, a cached file without it topped up by measuring only that F
 * (float32's, the cheapest; under Valgrind: a note and no rate), the
 * other rates kept.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibrate.h"
#include "check.h"
#include "roofline.h"
#include "schedule.h"
#include "window.h"

static char tmpdir[] = "/tmp/test_calibrate.XXXXXX";

static void write_text(const char *file, const char *text)
{
    FILE *f = fopen(file, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static char *read_text(const char *file)
{
    static char buf[4096];
    FILE *f = fopen(file, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

/* ab,bc->ac with a = 64, b = 32, c = 16 in each dtype: one GEMM step of
 * 2 * 64 * 32 * 16 flops over 64*32 + 32*16 + 64*16 elements. */
static void test_roofline_per_dtype(void)
{
    static const char *names[] = {"float64", "float32", "complex128",
                                  "complex64"};
    eb_rates r = {{10, 20, 2.5, 5}, 4};
    int64_t sa[] = {64, 32}, sb[] = {32, 16};
    int64_t *shapes[] = {sa, sb};
    int ranks[] = {2, 2};
    eb_pair pair = {0, 1};
    eb_path path = {.strategy = "test", .num_steps = 1, .steps = &pair};
    for (int dt = 0; dt < EB_DTYPE_COUNT; dt++) {
        eb_instance *inst;
        eb_schedule *sched;
        eb_error err;
        if (eb_instance_build("t.json", "t", "ab,bc->ac", names[dt], 2, shapes,
                              ranks, &inst, &err) ||
            eb_schedule_build(inst, &path, &sched, &err)) {
            EB_CHECK(0, "%s: %s", names[dt], err.msg);
            continue;
        }
        EB_CHECK(inst->dt == (eb_dtype)dt, "%s parsed", names[dt]);
        double flops = 2.0 * 64 * 32 * 16;
        double bytes = (double)eb_dtype_size((eb_dtype)dt) * (64 * 32 + 32 * 16
                                                             + 64 * 16);
        double want = fmax(flops / (r.gflops[dt] * 1e6), bytes / (r.gbs * 1e6));
        eb_roofline_step step;
        double got = eb_roofline_path(inst, sched, &r, &step);
        EB_CHECK(fabs(got - want) <= 1e-12 * want, "%s: %g vs %g", names[dt],
                 got, want);
        EB_CHECK(step.bytes == bytes && step.flops == flops,
                 "%s: step bytes %g flops %g", names[dt], step.bytes,
                 step.flops);
        EB_CHECK(eb_rates_have(&r, (eb_dtype)dt), "%s known", names[dt]);
        eb_rates partial = r;
        partial.gflops[dt] = 0;
        EB_CHECK(isnan(eb_roofline_path(inst, sched, &partial, NULL)) &&
                     !eb_rates_have(&partial, (eb_dtype)dt),
                 "%s: no F, no bound", names[dt]);
        eb_schedule_destroy(sched);
        eb_instance_destroy(inst);
    }
    /* float32 moves half the bytes of float64 and complex128 twice: the
     * byte terms scale with the element size exactly. */
    eb_roofline_step s64 = eb_roofline_of(1, 800, 1, 4);
    EB_CHECK(s64.byte_ms == 800 / 4e6 && s64.byte_bound, "byte term");
    EB_CHECK(!eb_rates_have(NULL, EB_F64), "NULL rates");
}

static const char header[] =
    "einsum-bench-calibration 1\ncpu_model %s\nblas_config %s\n"
    "blas_core %s\nthreads 1\n";

static void test_explicit_file(const eb_sysinfo *sys)
{
    char file[256], text[2048];
    snprintf(file, sizeof file, "%s/pinned.txt", tmpdir);
    int n = snprintf(text, sizeof text, header, "pinned CPU", "pinned BLAS",
                     "pinned");
    snprintf(text + n, sizeof text - (size_t)n,
             "gflops 10\ngflops_complex128 2.5\ngbs 4\n");
    write_text(file, text);
    FILE *notes = tmpfile();
    eb_calibration c;
    eb_error err;
    eb_calib_opts o = {file, 1, 0, 1u << EB_C128};
    EB_CHECK(eb_calib_get(sys, &o, notes, &c, &err) == EB_OK, "%s", err.msg);
    EB_CHECK(c.rates.gflops[EB_F64] == 10 && c.rates.gflops[EB_C128] == 2.5 &&
                 c.rates.gflops[EB_F32] == 0 && c.rates.gbs == 4,
             "rates as given");
    o.dtypes = 1u << EB_C128 | 1u << EB_C64;
    EB_CHECK(eb_calib_get(sys, &o, notes, &c, &err) == EB_ERR_INVALID &&
                 strstr(err.msg, "pinned.txt: gflops_complex64: missing") &&
                 strstr(err.msg, "complex64 GEMM rate"),
             "a needed F missing: %s", err.msg);
    /* float64's F is required in every file. */
    n = snprintf(text, sizeof text, header, "X", "Y", "Z");
    snprintf(text + n, sizeof text - (size_t)n, "gflops_float32 3\ngbs 4\n");
    write_text(file, text);
    o.dtypes = 1u << EB_F32;
    EB_CHECK(eb_calib_get(sys, &o, notes, &c, &err) == EB_ERR_INVALID &&
                 strstr(err.msg, "gflops: missing"), "%s", err.msg);
    static const char *bad[] = {"gflops_complex64 nan\n", "gflops_float32 0\n",
                                "gflops_float32 1\ngflops_float32 2\n",
                                "gflops_float16 3\n"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        n = snprintf(text, sizeof text, header, "X", "Y", "Z");
        snprintf(text + n, sizeof text - (size_t)n, "gflops 1\ngbs 1\n%s",
                 bad[k]);
        write_text(file, text);
        EB_CHECK(eb_calib_read(file, &c, &err) != EB_OK &&
                     strstr(err.msg, "pinned.txt: line "),
                 "bad %zu: %s", k, err.msg);
    }
    fclose(notes);
}

static void test_cache_top_up(const eb_sysinfo *sys)
{
    setenv("EB_CALIBRATION_DIR", tmpdir, 1);
    char file[EB_CALIB_PATH], text[4096];
    EB_CHECK(eb_calib_cache_file(sys, 1, file, sizeof file) == 0, "cache");
    /* A file as older versions wrote it: float64's F only. */
    int n = snprintf(text, sizeof text, header, sys->cpu_model,
                     sys->blas_config, sys->blas_core);
    snprintf(text + n, sizeof text - (size_t)n, "gflops 12.5\ngbs 3.25\n"
             "date 2026-01-01T00:00:00Z\n");
    write_text(file, text);
    FILE *notes = tmpfile();
    eb_calibration c;
    eb_error err;
    eb_calib_opts o = {NULL, 1, 0, 1u << EB_F64};
    EB_CHECK(eb_calib_get(sys, &o, notes, &c, &err) == EB_OK &&
                 strcmp(c.source, "cache") == 0 &&
                 c.rates.gflops[EB_F64] == 12.5 && c.rates.gflops[EB_F32] == 0,
             "float64 only: read as it is");
    o.dtypes = 1u << EB_F32;
    EB_CHECK(eb_calib_get(sys, &o, notes, &c, &err) == EB_OK, "%s", err.msg);
    EB_CHECK(c.rates.gflops[EB_F64] == 12.5 && c.rates.gbs == 3.25,
             "the cached rates kept");
    char said[1024] = "";
    rewind(notes);
    size_t got = fread(said, 1, sizeof said - 1, notes);
    said[got] = '\0';
    const char *after = read_text(file);
    if (eb_window_on_valgrind()) {
        EB_CHECK(c.rates.gflops[EB_F32] == 0 &&
                     strstr(said, "no roofline figures for float32"),
                 "valgrind: noted, not measured: %s", said);
        EB_CHECK(!strstr(after, "gflops_float32"), "valgrind: file as it was");
    } else {
        EB_CHECK(c.rates.gflops[EB_F32] > 0, "float32's F measured");
        EB_CHECK(strstr(said, "float32 GEMM rate") &&
                     !strstr(said, "complex"), "noted: %s", said);
        EB_CHECK(strstr(after, "gflops 12.5\n") &&
                     strstr(after, "gflops_float32 ") &&
                     strstr(after, "gbs 3.25\n") &&
                     !strstr(after, "complex"),
                 "file topped up: %s", after);
        EB_CHECK(strcmp(c.file, file) == 0, "names the file");
        /* The next run reads it quietly. */
        long before = ftell(notes);
        EB_CHECK(eb_calib_get(sys, &o, notes, &c, &err) == EB_OK &&
                     c.rates.gflops[EB_F32] > 0 && ftell(notes) == before,
                 "second read quiet");
    }
    fclose(notes);
    unlink(file);
}

/* A stream pass's time: the busiest thread's CPU time over the parts it
 * ran, or the wall time when shorter. */
static void test_parts_time(void)
{
    int64_t ns[4] = {100, 100, 100, 100};
    uintptr_t two[4] = {1, 2, 1, 2}, one[4] = {7, 7, 7, 7};
    EB_CHECK(eb_calib_parts_ns(4, ns, two, 1000) == 200,
             "two threads, two parts each: one thread's two parts");
    EB_CHECK(eb_calib_parts_ns(4, ns, one, 1000) == 400,
             "one thread ran all four: their sum, not a quarter");
    EB_CHECK(eb_calib_parts_ns(4, ns, one, 300) == 300,
             "the wall time when shorter");
    int64_t uneven[2] = {50, 300};
    uintptr_t ab[2] = {3, 4};
    EB_CHECK(eb_calib_parts_ns(2, uneven, ab, 1000) == 300,
             "the slower thread");
    int64_t none[2] = {0, 0};
    EB_CHECK(eb_calib_parts_ns(2, none, ab, 1000) == 1000,
             "no CPU time read: the wall time");
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    test_roofline_per_dtype();
    test_parts_time();
    test_explicit_file(&sys);
    test_cache_top_up(&sys);
    char file[256];
    snprintf(file, sizeof file, "%s/pinned.txt", tmpdir);
    unlink(file);
    rmdir(tmpdir);
    return eb_check_done("test_calibrate");
}
