/* cli: argument parsing, thread set-up, and the run/check/plan/info
 * commands (gen and path live in cmd_gen.c and cmd_path.c). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "calibrate.h"
#include "clock.h"
#include "commands.h"
#include "compare.h"
#include "export.h"
#include "eager.h"
#include "interrupt.h"
#include "trace.h"
#include "lanes.h"
#include "load.h"
#include "plan_json.h"
#include "recfile.h"
#include "roofline.h"
#include "runner.h"
#include "schedule.h"
#include "steptime.h"
#include "window.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

#define usage_error(...) eb_arg_fail(EXIT_USAGE, NULL, "", __VA_ARGS__)

/* The commands this file parses, as bits of opt_spec.cmds. */
enum { C_RUN = 1, C_CHECK = 2, C_PLAN = 4, C_CALIBRATE = 8 };

typedef struct {
    const char *name;
    unsigned bit;               /* C_*, 0 for gen/path/info */
    const char *synopsis;
    const char *summary;
} cmd_spec;

static const cmd_spec commands[] = {
    {"run", C_RUN, "run [options] INSTANCE|DIR ...",
     "measure: warmups, then timed samples"},
    {"check", C_CHECK, "check [options] INSTANCE|DIR ...",
     "verify results only, no timing"},
    {"plan", C_PLAN, "plan [options] INSTANCE", "the path step by step"},
    {"compare", 0, "compare [options] BASE.jsonl NEW.jsonl",
     "NEW/BASE time ratios with 95% intervals"},
    {"info", 0, "info", "machine, build and BLAS metadata"},
    {"calibrate", C_CALIBRATE, "calibrate [--threads N] [--calibration FILE]",
     "measure the roofline's F and BW"},
    {"gen", 0, "gen lm ...", "generate an instance (help gen)"},
    {"path", 0, "path ...", "compute and store a path (help path)"},
    {NULL, 0, NULL, NULL},
};

/* Every option of run, check and plan: one row each. A new option is a row
 * here and a case in set_opt. */
typedef enum {
    O_MODE, O_STRATEGY, O_PATHS, O_FILTER, O_WARMUP, O_SAMPLES, O_THREADS,
    O_DTYPE, O_FILL, O_INPUTS, O_SAVE_OUTPUT, O_CHECK, O_CHECK_SEED, O_JSON,
    O_EXPORT_CSV, O_EXPORT_MARKDOWN, O_CALLGRIND, O_NO_FUSE, O_LIST, O_TIME,
    O_CALIBRATION, O_MAX_MEMORY, O_TIMEOUT, O_COUNT
} opt_id;

typedef struct {
    opt_id id;
    const char *name;
    const char *arg;            /* the value's placeholder; NULL: a flag */
    unsigned cmds;              /* C_* it applies to */
    const char *def;            /* default shown in records, or NULL */
    const char *help;           /* '\n' starts a continuation line */
} opt_spec;

static const opt_spec options[] = {
    {O_MODE, "--mode", "eager|trace|both", C_RUN | C_CHECK | C_PLAN, "trace",
     "execution mode (default trace)"},
    {O_STRATEGY, "--strategy", "NAME[,NAME]|all", C_RUN | C_CHECK | C_PLAN,
     "all", "which stored paths (default all)"},
    {O_PATHS, "--paths", "FILE|DIR", C_RUN | C_CHECK | C_PLAN, NULL,
     "where stored paths come from"},
    {O_FILTER, "--filter", "REGEX", C_RUN | C_CHECK, NULL,
     "only instances whose name matches REGEX\n(POSIX extended, unanchored)"},
    {O_WARMUP, "--warmup", "N", C_RUN | C_PLAN, "3",
     "warmup runs, N >= 0 (default 3)"},
    {O_SAMPLES, "--samples", "N", C_RUN | C_PLAN, "15",
     "timed runs, N >= 1 (default 15)"},
    {O_THREADS, "--threads", "N", C_RUN | C_CHECK | C_PLAN | C_CALIBRATE, "1",
     "thread budget of the scope (default 1)"},
    {O_DTYPE, "--dtype", "DTYPE", C_RUN | C_CHECK | C_PLAN, NULL,
     "run in DTYPE: float64, float32,\ncomplex128 or complex64 (default: "
     "each\ninstance file's \"dtype\")"},
    {O_FILL, "--fill", "zeros|random[:SEED]", C_RUN | C_PLAN, "zeros",
     "how inputs are filled (default zeros)"},
    {O_INPUTS, "--inputs", "DIR", C_RUN | C_PLAN, NULL,
     "operand k from DIR/k.npy (C order, the\nrun's dtype: <f8 <f4 <c16 <c8)"},
    {O_SAVE_OUTPUT, "--save-output", "DIR", C_RUN, NULL,
     "last sample's output to\nDIR/<instance>.<strategy>.<mode>.npy"},
    {O_CHECK, "--check", NULL, C_RUN, NULL,
     "verify each result before timing"},
    {O_CHECK_SEED, "--check-seed", "N", C_RUN | C_CHECK, "1",
     "seed of the check's random inputs (default 1)"},
    {O_JSON, "--json", "FILE", C_RUN | C_CHECK | C_PLAN, NULL,
     "JSON-lines records to FILE ('-': stdout,\nthen no table); plan: the plan "
     "as JSON\n(for the peers) instead of the table"},
    {O_EXPORT_CSV, "--export-csv", "FILE", C_RUN | C_CHECK, NULL,
     "the measurements as CSV to FILE"},
    {O_EXPORT_MARKDOWN, "--export-markdown", "FILE", C_RUN | C_CHECK, NULL,
     "the measurements as a Markdown table to\nFILE"},
    {O_CALLGRIND, "--callgrind-per-sample", NULL, C_RUN, NULL,
     "one callgrind dump per sample"},
    {O_NO_FUSE, "--no-fuse", NULL, C_RUN | C_CHECK | C_PLAN, NULL,
     "trace: run every step on its own (no\nblocked groups of steps)"},
    {O_LIST, "--list", NULL, C_RUN | C_CHECK, NULL,
     "print what would run (instances, sizes,\nmeasurements) and exit"},
    {O_TIME, "--time", NULL, C_PLAN, NULL,
     "also run the path (--threads, --warmup,\n--samples, --fill) and print "
     "each step's\nmedian time"},
    {O_CALIBRATION, "--calibration", "FILE", C_RUN | C_PLAN | C_CALIBRATE,
     NULL, "the roofline's F and BW from FILE as given\n(default: measured "
     "once per machine, BLAS\nand --threads, cached in\n"
     "$EB_CALIBRATION_DIR or\n${XDG_CACHE_HOME:-~/.cache}/einsum-bench)"},
    {O_MAX_MEMORY, "--max-memory", "SIZE", C_RUN | C_CHECK, NULL,
     "refuse a measurement whose peak bytes\n(inputs + intermediates) exceed "
     "SIZE\n(K/M/G/T suffixes; default 80% of\nMemAvailable at start)"},
    {O_TIMEOUT, "--timeout", "SECONDS", C_RUN | C_CHECK, NULL,
     "stop a measurement after SECONDS, between\ntwo runs (status timeout; "
     "default none)"},
};
enum { NUM_OPTS = sizeof options / sizeof options[0] };
_Static_assert((int)NUM_OPTS == (int)O_COUNT, "one row per option id");

static const char exit_text[] =
    "exit status: 0 ok, 1 a measurement or check failed, 2 usage or input "
    "error\n";

/* check's references, for `check --help` (verify.h). */
static const char check_refs_text[] =
    "each result names its reference, the first affordable of:\n"
    "  naive                    the whole einsum as one loop (up to 3e9\n"
    "                           multiply-adds)\n"
    "  naive stepwise (path S)  the first stored path S step by step with\n"
    "                           its own loops, no engine code (up to 2e11\n"
    "                           path flops, or $EB_CHECK_STEPWISE_MAX_FLOPS;\n"
    "                           within --max-memory)\n"
    "  path S                   another order run by the engine\n";

typedef struct {
    eb_run_opts run;
    const char *json;
    const char *inputs;
    const char *mode_str;
    int time;                   /* plan --time */
    const char *calibration;    /* --calibration FILE */
    unsigned cmd;               /* C_* of the command parsed */
    const char *val[O_COUNT];   /* each option's value as given, or NULL */
    char **targets;
    int ntargets;
} cli_opts;

static const cmd_spec *find_command(const char *name)
{
    for (const cmd_spec *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* "an option of run, check" for an option that exists but not here. */
static void applies_to(unsigned cmds, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const cmd_spec *c = commands; c->name; c++)
        if (c->bit & cmds)
            len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                    len ? ", " : "", c->name);
}

static int unknown_option(const cmd_spec *cmd, const char *arg)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
    for (int k = 0; k < NUM_OPTS; k++)
        if (strcmp(options[k].name, name) == 0) {
            char where[64];
            applies_to(options[k].cmds, where, sizeof where);
            return eb_arg_fail(EXIT_USAGE, cmd->name, cmd->name,
                               "%s does not apply to %s (an option of %s)",
                               name, cmd->name, where);
        }
    const char *near = eb_arg_closest(name, &options[0].name, NUM_OPTS,
                                      sizeof options[0]);
    if (near)
        return eb_arg_fail(EXIT_USAGE, cmd->name, cmd->name,
                           "unknown option '%s' (did you mean %s?)", name,
                           near);
    return eb_arg_fail(EXIT_USAGE, cmd->name, cmd->name,
                       "unknown option '%s'", name);
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* SIZE: bytes with an optional K, M, G or T suffix (powers of 1024). */
static int parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    const char *units = "KMGT";
    const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
    if (errno || end == s || !(v > 0) || (*end && (!u || end[1])))
        return -1;
    if (u)
        for (const char *k = units; k <= u; k++)
            v *= 1024;
    if (v < 1 || v > 9.2e18)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int parse_mode(cli_opts *c, const char *v)
{
    memset(c->run.modes, 0, sizeof c->run.modes);
    c->mode_str = v;
    if (strcmp(v, "eager") == 0 || strcmp(v, "both") == 0)
        c->run.modes[EB_MODE_EAGER] = 1;
    if (strcmp(v, "trace") == 0 || strcmp(v, "both") == 0)
        c->run.modes[EB_MODE_TRACE] = 1;
    if (!c->run.modes[EB_MODE_EAGER] && !c->run.modes[EB_MODE_TRACE])
        return usage_error("--mode: '%s' is not eager, trace or both", v);
    return 0;
}

/* A count option's value in lo..hi, or a usage error naming it. */
static int count_opt(const opt_spec *o, const char *v, long lo, long hi,
                     long *n)
{
    if (!parse_int(v, lo, hi, n))
        return 0;
    if (hi == LONG_MAX)
        return usage_error("%s: '%s' is not a number >= %ld", o->name, v, lo);
    return usage_error("%s: '%s' is not a count from %ld to %ld", o->name, v,
                       lo, hi);
}

static int set_opt(cli_opts *c, const opt_spec *o, const char *v)
{
    long n = 0;
    int rc = 0;
    c->val[o->id] = v;
    switch (o->id) {
    case O_MODE:
        return parse_mode(c, v);
    case O_STRATEGY:
        c->run.strategies = v;
        break;
    case O_PATHS:
        c->run.paths = v;
        break;
    case O_FILTER:
        c->run.filter = v;
        break;
    case O_WARMUP:
        if (!(rc = count_opt(o, v, 0, 1000000, &n)))
            c->run.warmups = (int)n;
        break;
    case O_SAMPLES:
        if (!(rc = count_opt(o, v, 1, 1000000, &n)))
            c->run.samples = (int)n;
        break;
    case O_THREADS:
        if (!(rc = count_opt(o, v, 1, 1024, &n)))
            c->run.threads = (int)n;
        break;
    case O_CHECK_SEED:
        if (!(rc = count_opt(o, v, 0, LONG_MAX, &n)))
            c->run.check_seed = (uint64_t)n;
        break;
    case O_DTYPE:
        if (eb_dtype_parse(v, &c->run.dtype))
            return usage_error("--dtype: '%s' is not float64, float32, "
                               "complex128 or complex64", v);
        c->run.has_dtype = 1;
        break;
    case O_FILL:
        if (eb_fill_parse(v, &c->run.fill))
            return usage_error("--fill: '%s' is not zeros, random or "
                               "random:SEED", v);
        c->run.fill_str = v;
        break;
    case O_INPUTS:
        c->inputs = v;
        break;
    case O_SAVE_OUTPUT:
        c->run.save_dir = v;
        break;
    case O_JSON:
        c->json = v;
        break;
    case O_EXPORT_CSV:
    case O_EXPORT_MARKDOWN:
        break; /* c->val[] has the file */
    case O_CHECK:
        c->run.check = 1;
        break;
    case O_CALLGRIND:
        c->run.per_sample_dumps = 1;
        break;
    case O_NO_FUSE:
        c->run.no_fuse = 1;
        break;
    case O_LIST:
        c->run.list = 1;
        break;
    case O_TIME:
        c->time = 1;
        break;
    case O_CALIBRATION:
        c->calibration = v;
        break;
    case O_MAX_MEMORY:
        if (parse_size(v, &c->run.max_memory_bytes))
            return usage_error("--max-memory: '%s' is not a size (e.g. 512M, "
                               "16G)", v);
        break;
    case O_TIMEOUT: {
        char *end;
        errno = 0;
        c->run.timeout_s = strtod(v, &end);
        if (errno || end == v || *end || !(c->run.timeout_s > 0) ||
            c->run.timeout_s > 1e9)
            return usage_error("--timeout: '%s' is not a number of seconds "
                               "> 0", v);
        break;
    }
    case O_COUNT:
        break;
    }
    return rc;
}

static const opt_spec *find_option(const char *arg)
{
    for (int k = 0; k < NUM_OPTS; k++) {
        size_t n = strlen(options[k].name);
        if (strncmp(arg, options[k].name, n) == 0 &&
            (arg[n] == '\0' || (arg[n] == '=' && options[k].arg)))
            return &options[k];
    }
    return NULL;
}

static int parse_args(const cmd_spec *cmd, int argc, char **argv,
                      cli_opts *c)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd->bit;
    c->run.modes[EB_MODE_TRACE] = 1;
    c->mode_str = "trace";
    c->run.strategies = "all";
    c->run.warmups = 3;
    c->run.samples = 15;
    c->run.threads = 1;
    c->run.fill_str = "zeros";
    c->run.check_seed = 1;
    c->targets = calloc((size_t)argc + 1, sizeof(char *));
    if (!c->targets)
        return usage_error("%s", "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            c->targets[c->ntargets++] = argv[i];
            continue;
        }
        const opt_spec *o = find_option(a);
        if (!o || !(o->cmds & cmd->bit))
            return unknown_option(cmd, a);
        const char *v = o->arg ? eb_arg_value(argc, argv, &i, o->name) : "1";
        if (!*v)
            return usage_error("%s needs a value", o->name);
        int rc = set_opt(c, o, v);
        if (rc)
            return rc;
    }
    if (c->inputs) {
        if (c->val[O_FILL])
            return usage_error("%s", "--inputs and --fill exclude each other");
        c->run.fill.kind = EB_FILL_NPY;
        c->run.fill.dir = c->inputs;
        c->run.fill_str = "npy";
    }
    return 0;
}

/* Options of the command(s) in cmds, in the --help layout. */
static void print_options(FILE *f, unsigned cmds, int tag)
{
    for (int k = 0; k < NUM_OPTS; k++) {
        const opt_spec *o = &options[k];
        if (!(o->cmds & cmds))
            continue;
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        const char *h = o->help;
        int first = 1;
        while (*h) {
            size_t n = strcspn(h, "\n");
            fprintf(f, "  %-29s%.*s", first ? head : "", (int)n, h);
            if (tag && !h[n]) {
                char where[64];
                applies_to(o->cmds, where, sizeof where);
                fprintf(f, " [%s]", where);
            }
            fputc('\n', f);
            h += n + (h[n] == '\n');
            first = 0;
        }
    }
}

static void print_usage(FILE *f)
{
    fputs("usage: einsum-bench COMMAND [options] ...\n"
          "       einsum-bench help COMMAND | COMMAND --help\n"
          "       einsum-bench --version\n\ncommands:\n", f);
    for (const cmd_spec *c = commands; c->name; c++)
        fprintf(f, "  %-39s  %s\n", c->synopsis, c->summary);
    fputs("\noptions (the commands each applies to in brackets):\n", f);
    print_options(f, C_RUN | C_CHECK | C_PLAN | C_CALIBRATE, 1);
    fprintf(f, "\n%s", exit_text);
}

/* help of one command: its synopsis and its own options. */
static int command_help(const cmd_spec *cmd)
{
    char *argv[] = {(char *)cmd->name, (char *)"--help", NULL};
    if (strcmp(cmd->name, "gen") == 0)
        return eb_cmd_gen(2, argv);
    if (strcmp(cmd->name, "path") == 0)
        return eb_cmd_path(2, argv);
    if (strcmp(cmd->name, "compare") == 0)
        return eb_cmd_compare(2, argv);
    printf("usage: einsum-bench %s\n\n%s\n", cmd->synopsis, cmd->summary);
    if (cmd->bit) {
        printf("\noptions:\n");
        print_options(stdout, cmd->bit, 0);
    }
    if (cmd->bit == C_CHECK)
        printf("\n%s", check_refs_text);
    printf("\n%s", exit_text);
    return 0;
}

static int print_version(void)
{
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    printf("einsum-bench %s (commit %s)\n", EB_VERSION, sys.git_commit);
    return 0;
}

/* OpenBLAS sizes its thread pool when it loads: make the environment say the
 * budget and start again, once. With more than one thread, OpenBLAS's idle
 * workers would spin for a while after each call and take the core the
 * engine's own threads need (measured: the batched small-GEMM steps of the
 * lm instance got slower, not faster, at --threads 2), so unless the user
 * chose otherwise OPENBLAS_THREAD_TIMEOUT=4 makes them sleep almost at
 * once. Under Valgrind the pool is set at run time instead (a re-executed
 * child would run outside the tool). Returns 1 after a re-exec. */
static int apply_threads(int threads, char **argv)
{
    char want[16];
    snprintf(want, sizeof want, "%d", threads);
    const char *have = getenv("OPENBLAS_NUM_THREADS");
    int need_timeout = threads > 1 && !getenv("OPENBLAS_THREAD_TIMEOUT");
    if (have && strcmp(have, want) == 0 && !need_timeout)
        return getenv("EB_REEXEC") != NULL;
    if (getenv("EB_REEXEC") || eb_window_on_valgrind()) {
        if (!have || strcmp(have, want) != 0)
            fprintf(stderr, "einsum-bench: warning: OPENBLAS_NUM_THREADS=%s "
                    "but --threads %d; setting the pool at run time\n",
                    have ? have : "(unset)", threads);
        return getenv("EB_REEXEC") != NULL;
    }
    setenv("OPENBLAS_NUM_THREADS", want, 1);
    if (need_timeout)
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    setenv("EB_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "einsum-bench: warning: cannot re-execute (%s); setting "
            "the pool at run time\n", strerror(errno));
    return 0;
}

/* The default memory budget: 80% of MemAvailable now (no limit if the
 * kernel does not say). */
static int64_t default_budget(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib > 0 ? (int64_t)(kib * 1024.0 * 0.8) : INT64_MAX;
}

/* dir exists as a folder or is made, with its missing parents (mkdir -p). */
static int ensure_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0)
        return S_ISDIR(sb.st_mode) ? 0 : -1;
    char *parent = strdup(dir);
    if (!parent)
        return -1;
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    int rc = 0;
    if (slash && slash != parent) {
        *slash = '\0';
        rc = ensure_dir(parent);
    }
    free(parent);
    return rc ? rc : mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

static int open_reporters(const cli_opts *c, eb_reporter *reps, int *n)
{
    eb_error err;
    *n = 0;
    if (!c->json || strcmp(c->json, "-") != 0) {
        if (eb_report_table(stdout, &reps[(*n)++], &err))
            return -1;
    }
    if (c->json && eb_report_jsonl(c->json, &reps[*n], &err)) {
        fprintf(stderr, "einsum-bench: --json: %s\n", err.msg);
        return -1;
    }
    if (c->json)
        (*n)++;
    static const struct {
        opt_id id;
        eb_export_kind kind;
    } exports[] = {{O_EXPORT_CSV, EB_EXPORT_CSV},
                   {O_EXPORT_MARKDOWN, EB_EXPORT_MARKDOWN}};
    for (int k = 0; k < 2; k++) {
        const char *file = c->val[exports[k].id];
        if (!file)
            continue;
        if (eb_report_export(file, exports[k].kind, &reps[*n], &err)) {
            fprintf(stderr, "einsum-bench: %s: %s\n",
                    exports[k].kind == EB_EXPORT_CSV ? "--export-csv"
                                                     : "--export-markdown",
                    err.msg);
            return -1;
        }
        (*n)++;
    }
    return 0;
}

/* The roofline's F (of the dtypes in the bits of `dtypes`) and BW for run
 * and plan: 0 with *have = 1 when known (after a note, the run goes on
 * without them otherwise), EXIT_USAGE for a bad --calibration FILE. */
static int get_calibration(const cli_opts *c, const eb_sysinfo *sys,
                           unsigned dtypes, eb_calibration *cal, int *have)
{
    eb_calib_opts o = {c->calibration, c->run.threads, 0, dtypes};
    eb_error err;
    *have = eb_calib_get(sys, &o, stderr, cal, &err) == EB_OK;
    if (*have) {
        if (strcmp(cal->source, "measured") == 0)
            fprintf(stderr, "einsum-bench: F %.2f GFLOP/s, BW %.2f GB/s%s%s\n",
                    cal->rates.gflops[EB_F64], cal->rates.gbs,
                    cal->file[0] ? ", cached in " : " (not cached)",
                    cal->file);
        return 0;
    }
    if (c->calibration) {
        fprintf(stderr, "einsum-bench: --calibration: %s\n", err.msg);
        return EXIT_USAGE;
    }
    fprintf(stderr, "einsum-bench: note: no roofline figures: %s\n", err.msg);
    return 0;
}

/* --json must not name a file the run reads: opening it for records would
 * empty it first. Checked against every target (and the *.json files of a
 * target folder) and --paths. */
static int json_is_input(const cli_opts *c)
{
    if (!c->json || strcmp(c->json, "-") == 0)
        return 0;
    if (c->run.paths && eb_recfile_same_file(c->json, c->run.paths))
        return usage_error("--json: '%s' is also the --paths file; records "
                           "would overwrite it", c->json);
    const char *slash = strrchr(c->json, '/');
    const char *base = slash ? slash + 1 : c->json;
    size_t blen = strlen(base);
    int json_name = blen > 5 && strcmp(base + blen - 5, ".json") == 0;
    for (int t = 0; t < c->ntargets; t++) {
        char *dir = NULL;
        int in_dir = 0;
        if (json_name) {
            dir = slash ? strndup(c->json, (size_t)(slash - c->json))
                        : strdup(".");
            in_dir = dir && *dir && eb_recfile_same_file(dir, c->targets[t]);
            free(dir);
        }
        if (in_dir || eb_recfile_same_file(c->json, c->targets[t]))
            return usage_error("--json: '%s' is also an input (%s); records "
                               "would overwrite it", c->json, c->targets[t]);
    }
    return 0;
}

/* A command line that selects no instance at all. */
static int no_selection(const cli_opts *c, const eb_selection *sel)
{
    if (sel->skipped)
        return usage_error("no instance selected: %d skipped (%s)",
                           sel->skipped, sel->skip_msg);
    if (c->run.filter)
        return usage_error("no instance selected: --filter '%s' matches "
                           "none of the instances given", c->run.filter);
    return usage_error("%s", "no instance selected: the targets hold no "
                       "instance files");
}

static int list_selection(cli_opts *c);
static int run_selection(cli_opts *c, int argc, char **full_argv);

static int cmd_run(const cmd_spec *cmd, int argc, char **argv,
                   char **full_argv)
{
    int verify_only = cmd->bit == C_CHECK;
    cli_opts c;
    int rc = parse_args(cmd, argc, argv, &c);
    if (!rc && c.ntargets == 0)
        rc = usage_error("%s: no INSTANCE or DIR given", argv[0]);
    if (!rc)
        rc = json_is_input(&c);
    regex_t re;
    if (!rc && c.run.filter && regcomp(&re, c.run.filter, REG_EXTENDED |
                                                          REG_NOSUB) != 0)
        rc = usage_error("--filter: '%s' is not a regular expression",
                         c.run.filter);
    else if (!rc && c.run.filter)
        regfree(&re);
    if (!rc && !c.run.list && c.run.save_dir && ensure_dir(c.run.save_dir))
        rc = usage_error("--save-output: '%s' is not a folder that can be "
                         "created", c.run.save_dir);
    c.run.verify_only = verify_only;
    if (!rc && c.run.list)
        rc = list_selection(&c);
    else if (!rc)
        rc = run_selection(&c, argc + 1, full_argv);
    free(c.targets);
    return rc;
}

/* --list: what the command line selects, without running it. */
static int list_selection(cli_opts *c)
{
    eb_selection sel;
    eb_run_summary sum;
    eb_calibration cal;
    int have_cal = 0;
    if (c->cmd == C_RUN) {
        eb_sysinfo sys;
        eb_sysinfo_collect(&sys);
        /* A quiet pass first: the dtypes whose F the rows need. */
        eb_runner_select(&c->run, c->targets, c->ntargets, 0, &sel, &sum);
        if (get_calibration(c, &sys, sel.dtypes, &cal, &have_cal))
            return EXIT_USAGE;
    }
    c->run.rates = have_cal ? &cal.rates : NULL;
    eb_runner_select(&c->run, c->targets, c->ntargets, 1, &sel, &sum);
    if (sum.input_errors)
        return EXIT_USAGE;
    printf("%d measurements of %d instances\n", sel.measurements,
           sel.instances);
    return sel.instances ? 0 : no_selection(c, &sel);
}

/* Every option of the command with the value the run used, for the run
 * record; out has room for NUM_OPTS. */
static int option_values(const cli_opts *c, eb_opt_value *out)
{
    int n = 0;
    for (int k = 0; k < NUM_OPTS; k++) {
        const opt_spec *o = &options[k];
        if (!(o->cmds & c->cmd))
            continue;
        const char *v = c->val[o->id] ? c->val[o->id] : o->def;
        if (o->id == O_FILL)
            v = c->run.fill_str;
        out[n++] = (eb_opt_value){o->name + 2, v, o->arg == NULL};
    }
    return n;
}

static int run_selection(cli_opts *c, int argc, char **full_argv)
{
    int verify_only = c->run.verify_only;
    int reexec = apply_threads(c->run.threads, full_argv);
    if (!c->run.max_memory_bytes)
        c->run.max_memory_bytes = default_budget();
    eb_interrupt_install();
    eb_selection sel;
    eb_run_summary sum;
    eb_runner_select(&c->run, c->targets, c->ntargets, 0, &sel, &sum);
    if (sel.instances == 0 && sel.errors == 0)
        return no_selection(c, &sel);
    c->run.total = sel.measurements;
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    if (!verify_only && sys.online_cpus > 0 &&
        c->run.threads > sys.online_cpus)
        fprintf(stderr, "einsum-bench: warning: --threads %d exceeds the %d "
                "online CPUs: threads share cores (records marked "
                "\"threads\")\n", c->run.threads, sys.online_cpus);
    if (!verify_only && eb_window_on_valgrind())
        fprintf(stderr, "einsum-bench: warning: under Valgrind the times "
                "are not real times (records marked \"valgrind\"); count "
                "instructions instead\n");
    eb_calibration cal;
    int have_cal = 0;
    if (!verify_only && get_calibration(c, &sys, sel.dtypes, &cal, &have_cal))
        return EXIT_USAGE;
    c->run.rates = have_cal ? &cal.rates : NULL;
    eb_reporter reps[4];
    int nreps;
    if (open_reporters(c, reps, &nreps)) {
        for (int k = 0; k < nreps; k++)
            reps[k].destroy(reps[k].ctx);
        return EXIT_USAGE;
    }
    eb_run_info info = {.sys = &sys,
                        .command = verify_only ? "check" : "run",
                        .modes = c->mode_str,
                        .strategies = c->run.strategies,
                        .fill = c->run.fill_str,
                        .threads = c->run.threads,
                        .warmups = verify_only ? 0 : c->run.warmups,
                        .samples = verify_only ? 0 : c->run.samples,
                        .reexec = reexec,
                        .calibration = have_cal ? &cal : NULL,
                        .argc = argc,
                        .argv = full_argv};
    eb_opt_value values[NUM_OPTS];
    info.num_options = option_values(c, values);
    info.options = values;
    for (int k = 0; k < nreps; k++)
        reps[k].begin(reps[k].ctx, &info);
    eb_runner_run(&c->run, c->targets, c->ntargets, reps, nreps, &sum);
    int write_failed = sum.write_errors > 0;
    for (int k = 0; k < nreps; k++) {
        if (reps[k].finish(reps[k].ctx) != 0) {
            write_failed = 1;
            if (k == 0 && (!c->json || strcmp(c->json, "-") != 0))
                fprintf(stderr, "einsum-bench: stdout: cannot write the "
                        "table: %s\n", strerror(errno));
        }
        reps[k].destroy(reps[k].ctx);
    }
    if (verify_only)
        fprintf(stderr, "einsum-bench: check: %d failed, %d unverified, %d "
                "input errors\n", sum.failures, sum.unverified,
                sum.input_errors);
    if (sum.interrupted) {
        fprintf(stderr, "einsum-bench: interrupted (%s): %d measurements "
                "completed; their records and table are kept\n",
                eb_interrupt_name(sum.interrupted), sum.completed);
        return 128 + sum.interrupted;
    }
    if (sum.input_errors)
        return EXIT_USAGE;
    return sum.failures || write_failed ? EXIT_FAIL : 0;
}

static int64_t moved_elems(const eb_plan *p)
{
    int64_t n = 0;
    if (p->kind == EB_KIND_COPY)
        return p->out_elems;
    for (int s = 0; s < 2; s++)
        if (p->prep[s])
            n += p->prep_elems[s];
    return n + p->bp_moved + (p->post ? p->out_elems : 0);
}

/* Trace's fused groups: which steps run together, along what, in blocks
 * of how many. */
static void print_fusion(const eb_instance *inst, const eb_step_desc *d, int n)
{
    for (int c = 0; c < n; c++) {
        if (d[c].fused_at != c)
            continue;
        int64_t w = inst->label_size[d[c].fuse_label], bw = d[c].fuse_block;
        char lab[8];
        printf("fused: steps");
        for (int s = 0; s < n; s++)
            if (d[s].fused_at == c)
                printf(" %d", s);
        printf(" run at step %d in %lld blocks", c,
               (long long)d[c].fuse_blocks);
        if (d[c].fuse_nlab > 1) {
            printf(" (one index at a time of");
            for (int k = 0; k < d[c].fuse_nlab - 1; k++)
                printf(" '%s'", eb_label_str(inst, d[c].fuse_labels[k], lab));
            printf(", then)");
        }
        printf(" of %lld along '%s' (%lld)", (long long)bw,
               eb_label_str(inst, d[c].fuse_label, lab), (long long)w);
        const char *sep = "; a block ahead prefetched:";
        for (int s = 0; s < n; s++) {
            if (d[s].fused_at != c || !d[s].fuse_pf)
                continue;
            static const char *const which[] = {"", "A", "B", "A and B"};
            printf("%s step %d's %s", sep, s, which[d[s].fuse_pf & 3]);
            sep = ",";
        }
        printf("\n");
    }
}

/* Steps s of d with unit u, as ranges "0-5,9". */
static void print_unit_steps(const eb_step_desc *d, int n, int u)
{
    const char *sep = "";
    for (int s = 0; s < n; s++) {
        if (d[s].unit != u)
            continue;
        int e = s;
        while (e + 1 < n && d[e + 1].unit == u)
            e++;
        if (e > s)
            printf("%s%d-%d", sep, s, e);
        else
            printf("%s%d", sep, s);
        sep = ",";
        s = e;
    }
}

/* How a run at --threads N uses its threads: trace's program alone, split
 * step by step, or with units (subtrees) side by side first. */
static void print_team(eb_mode mode, const eb_step_desc *d, int n,
                       const eb_trace_team *tt, int threads)
{
    if (threads < 2)
        return;
    if (mode != EB_MODE_TRACE) {
        printf("threads: %d: each step's kernels split their work over the "
               "team when it is large enough\n", threads);
        return;
    }
    if (tt->solo) {
        printf("threads: %d: the program runs on the calling thread alone "
               "(its work, %.3g multiply-adds and elements written, is "
               "below %.3g: waking the team would cost more than it "
               "saves)\n", threads, tt->work, tt->solo_work);
        return;
    }
    if (tt->nunits < 1) {
        printf("threads: %d: each step's kernels split their work over the "
               "team (no subtrees to run side by side)\n", threads);
        return;
    }
    double w[EB_LANES_MAX_UNITS + 1] = {0}; /* [0]: outside the units */
    for (int s = 0; s < n; s++)
        w[d[s].unit] += eb_plan_work(&d[s].plan);
    printf("threads: %d: %d units (subtrees) run side by side, each on one "
           "thread, claimed largest first, before step %d; the other steps' "
           "kernels split over the team; units hold %.0f%% of the work\n",
           threads, tt->nunits, tt->fork,
           tt->work > 0 ? 100 * (tt->work - w[0]) / tt->work : 0);
    for (int u = 1; u <= tt->nunits; u++) {
        printf("  unit %d: %.3g work, steps ", u, w[u]);
        print_unit_steps(d, n, u);
        putchar('\n');
    }
}

/* The --time columns of step s: median ms, share of the sum, GFLOP/s (of
 * the whole group at a fused group's turn); "(in N)" for a step that runs
 * at step N's turn. */
static void print_step_time(const eb_step_desc *d, int n, int s,
                            const eb_step_times *tm,
                            const eb_roofline_step *bound)
{
    if (d[s].fused_at >= 0 && d[s].fused_at != s) {
        char in[32];
        snprintf(in, sizeof in, "(in %d)", d[s].fused_at);
        printf(" %10s", in);
        return;
    }
    double flops = d[s].plan.flops;
    double bound_ms = bound ? bound[s].bound_ms : 0;
    for (int t = 0; t < n; t++)
        if (t != s && d[t].fused_at == s) {
            flops += d[t].plan.flops;
            bound_ms += bound ? bound[t].bound_ms : 0;
        }
    double ms = tm->median_ms[s];
    printf(" %10.3f %5.1f%%", ms, 100 * tm->share[s]);
    if (ms > 0)
        printf(" %8.2f", flops / ms / 1e6);
    else
        printf(" %8s", "-");
    if (bound_ms > 0)
        printf(" %8.2f", ms / bound_ms);
    else
        printf(" %8s", "-");
}

/* The roofline line under a plan: the sum of the bounds, the rates, and
 * with --time the whole run over it. */
static void print_roofline(const eb_schedule *sched, eb_dtype dt,
                           const eb_roofline_step *bound,
                           const eb_calibration *cal, const eb_step_times *tm)
{
    double sum = 0, flop_ms = 0;
    int byte_steps = 0;
    for (int s = 0; s < sched->num_steps; s++) {
        sum += bound[s].bound_ms;
        byte_steps += bound[s].byte_bound;
        flop_ms += bound[s].byte_bound ? 0 : bound[s].bound_ms;
    }
    printf("roofline: sum of the step bounds %.4g ms (%d of %d steps "
           "byte-bound, flop-bound steps %.4g ms); F %.2f GFLOP/s (%s), BW "
           "%.2f GB/s (%s%s%s)", sum, byte_steps, sched->num_steps, flop_ms,
           cal->rates.gflops[dt], eb_dtype_name(dt), cal->rates.gbs,
           cal->source,
           cal->file[0] ? " " : "", cal->file);
    if (tm && sum > 0)
        printf("; whole run / roofline %.2f", tm->run_median_ms / sum);
    putchar('\n');
}

/* tm: per-step times (--time), or NULL; bound: per-step roofline bounds,
 * or NULL without a calibration. */
static void print_plan(const eb_instance *inst, const eb_path *path,
                       const eb_step_desc *d, const eb_schedule *sched,
                       const eb_step_times *tm, const eb_roofline_step *bound)
{
    char a[EB_MAX_RANK * 4 + 1], b[EB_MAX_RANK * 4 + 1], o[EB_MAX_RANK * 4 + 1];
    printf("%-5s %-9s %-18s %-18s %-18s %-10s %8s %8s %8s %8s %12s %12s %12s"
           " %10s %5s", "step", "pair", "A", "B", "out", "kernel", "B", "M",
           "N", "K", "flops", "out_elems", "permuted", "bound_ms", "bound");
    if (tm)
        printf(" %10s %6s %8s %8s", "ms", "share", "GFLOP/s", "x_bound");
    putchar('\n');
    int n = path->num_steps ? path->num_steps : 1;
    int64_t moved = 0;
    for (int s = 0; s < n; s++) {
        const eb_plan *p = &d[s].plan;
        char pair[32] = "-";
        if (path->num_steps)
            snprintf(pair, sizeof pair, "[%d,%d]", path->steps[s].i,
                     path->steps[s].j);
        eb_term_str(inst, d[s].a_ids, d[s].a_rank, a, sizeof a);
        if (d[s].b_rank >= 0)
            eb_term_str(inst, d[s].b_ids, d[s].b_rank, b, sizeof b);
        else
            strcpy(b, "-");
        eb_term_str(inst, p->out_ids, p->out_rank, o, sizeof o);
        moved += moved_elems(p);
        printf("%-5d %-9s %-18s %-18s %-18s %-10s %8lld %8lld %8lld %8lld "
               "%12.4g %12lld %12lld", s, pair, a[0] ? a : "(scalar)",
               b[0] ? b : "(scalar)", o[0] ? o : "(scalar)",
               eb_kind_name(p->kind), (long long)p->nbatch, (long long)p->M,
               (long long)p->N, (long long)p->K, p->flops,
               (long long)p->out_elems, (long long)moved_elems(p));
        if (bound && s < sched->num_steps)
            printf(" %10.4g %5s", bound[s].bound_ms,
                   bound[s].byte_bound ? "bytes" : "flops");
        else
            printf(" %10s %5s", "-", "-");
        if (tm)
            print_step_time(d, n, s, tm, bound);
        putchar('\n');
    }
    printf("total: %d steps, log10_flops %.4f (stored %.4f), log2_size %.4f "
           "(stored %.4f), permuted elements per run %lld\n", path->num_steps,
           sched->log10_flops, path->log10_flops, sched->log2_size,
           path->log2_size, (long long)moved);
    print_fusion(inst, d, n);
}

/* plan --time: per-step times of runs made as a measurement would, or NULL
 * (after printing why) when they cannot be taken. */
static eb_step_times *time_steps(const eb_instance *inst, const eb_path *path,
                                 eb_mode mode, const cli_opts *c,
                                 const eb_fuse_opts *fuse)
{
    eb_step_times *tm = calloc(1, sizeof *tm);
    eb_error err;
    eb_step_times_opts o = {.mode = mode, .threads = c->run.threads,
                            .warmups = c->run.warmups,
                            .samples = c->run.samples, .fill = c->run.fill,
                            .fuse = fuse};
    if (!tm) {
        fprintf(stderr, "einsum-bench: out of memory\n");
    } else if (eb_step_times_measure(inst, path, &o, tm, &err)) {
        fprintf(stderr, "einsum-bench: %s: %s/%s: %s\n", inst->file,
                path->strategy, eb_mode_name(mode), err.msg);
        free(tm);
        tm = NULL;
    }
    return tm;
}

static int plan_one(const eb_instance *inst, const eb_path *path,
                    const char *source, eb_mode mode, const cli_opts *c,
                    const eb_calibration *cal)
{
    int no_fuse = c->run.no_fuse;
    eb_error err;
    eb_schedule *sched;
    if (eb_schedule_build(inst, path, &sched, &err)) {
        fprintf(stderr, "einsum-bench: %s\n", err.msg);
        return EXIT_USAGE;
    }
    int n = path->num_steps ? path->num_steps : 1;
    eb_step_desc *d = malloc((size_t)n * sizeof *d);
    eb_roofline_step *bound = cal && eb_rates_have(&cal->rates, inst->dt)
                                  ? calloc((size_t)n, sizeof *bound) : NULL;
    if (bound)
        eb_roofline_path(inst, sched, &cal->rates, bound);
    int64_t arena = 0;
    eb_fuse_opts fuse = eb_fuse_default_opts();
    eb_trace_team team = {0};
    eb_status st = !d ? eb_error_set(&err, EB_ERR_NOMEM, "out of memory")
                   : mode == EB_MODE_TRACE
                       ? eb_trace_describe_team(inst, path,
                                                no_fuse ? NULL : &fuse,
                                                c->run.threads, d, &arena,
                                                &team, &err)
                       : eb_eager_describe(inst, path, d, &err);
    if (st)
        fprintf(stderr, "einsum-bench: %s\n", err.msg);
    eb_step_times *tm = NULL;
    int ok = !st;
    if (ok && c->time)
        ok = (tm = time_steps(inst, path, mode, c,
                              no_fuse ? NULL : &fuse)) != NULL;
    if (ok) {
        printf("\n%s  strategy %s  mode %s  dtype %s  (path from %s)\n",
               inst->name, path->strategy, eb_mode_name(mode),
               eb_dtype_name(inst->dt), source);
        if (mode == EB_MODE_TRACE)
            printf("arena: %lld bytes\n", (long long)arena);
        printf("%s\n", inst->format_string);
        print_plan(inst, path, d, sched, tm, bound);
        print_team(mode, d, n, &team, c->run.threads);
        if (bound)
            print_roofline(sched, inst->dt, bound, cal, tm);
        if (tm)
            printf("times: medians of %d clocked runs after %d warmups, "
                   "--threads %d, fill %s: whole run %.3f ms, sum of the "
                   "steps' medians %.3f ms (not a measurement: `run` gives "
                   "those)\n", tm->samples, c->run.warmups, c->run.threads,
                   c->run.fill_str, tm->run_median_ms, tm->sum_ms);
    }
    eb_step_times_free(tm);
    free(tm);
    free(bound);
    free(d);
    eb_schedule_destroy(sched);
    return ok ? 0 : EXIT_FAIL;
}

/* plan --json FILE: the plan for the peers, written whole. */
static int plan_json(const cli_opts *c)
{
    eb_instance *inst = NULL;
    eb_pathset *ps = NULL;
    eb_error err;
    eb_jw *w = eb_jw_create(0);
    eb_status st = !w ? eb_error_set(&err, EB_ERR_NOMEM, "out of memory")
                      : eb_load_instance(c->targets[0], &inst, &err);
    if (!st)
        eb_runner_apply_dtype(&c->run, inst);
    if (!st)
        st = eb_load_find_paths(inst, c->run.paths, &ps, &err);
    if (!st)
        st = eb_plan_json(inst, ps, c->run.strategies, w, &err);
    if (!st && strcmp(c->json, "-") == 0 && eb_jw_write_line(w, stdout))
        st = eb_error_set(&err, EB_ERR_IO, "--json: cannot write to stdout");
    else if (!st && strcmp(c->json, "-") != 0)
        st = eb_jw_write_file(w, c->json, &err);
    if (st)
        fprintf(stderr, "einsum-bench: %s\n", err.msg);
    eb_jw_destroy(w);
    eb_pathset_destroy(ps);
    eb_instance_destroy(inst);
    return st ? (st == EB_ERR_IO ? EXIT_FAIL : EXIT_USAGE) : 0;
}

static int cmd_plan(const cmd_spec *cmd, int argc, char **argv,
                    char **full_argv)
{
    cli_opts c;
    int rc = parse_args(cmd, argc, argv, &c);
    if (!rc && c.ntargets != 1)
        rc = usage_error("%s: give exactly one INSTANCE", argv[0]);
    if (!rc && c.json && c.time)
        rc = usage_error("%s", "plan: --json and --time exclude each other");
    if (!rc && c.json)
        rc = plan_json(&c);
    if (rc || c.json) {
        free(c.targets);
        return rc;
    }
    /* The pool matters for --time, and for F when calibration measures. */
    apply_threads(c.run.threads, full_argv);
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    eb_instance *inst = NULL;
    eb_pathset *ps = NULL;
    eb_error err;
    eb_status st = eb_load_instance(c.targets[0], &inst, &err);
    if (!st)
        eb_runner_apply_dtype(&c.run, inst);
    if (!st)
        st = eb_load_find_paths(inst, c.run.paths, &ps, &err);
    rc = st ? EXIT_USAGE : 0;
    if (st)
        fprintf(stderr, "einsum-bench: %s\n", err.msg);
    eb_calibration cal;
    int have_cal = 0;
    if (!st && get_calibration(&c, &sys, 1u << inst->dt, &cal, &have_cal))
        st = EB_ERR_INVALID, rc = EXIT_USAGE;
    int shown = 0;
    for (int k = 0; !st && k < ps->count; k++) {
        if (!eb_strategy_selected(c.run.strategies, ps->paths[k].strategy))
            continue;
        shown++;
        for (int m = 0; m < EB_MODE_COUNT; m++) {
            if (!c.run.modes[m])
                continue;
            int r = plan_one(inst, &ps->paths[k], ps->source, (eb_mode)m,
                             &c, have_cal ? &cal : NULL);
            if (r > rc)
                rc = r;
        }
    }
    if (!st && !shown) {
        fprintf(stderr, "einsum-bench: %s: paths: no strategy '%s'\n",
                inst->file, c.run.strategies);
        rc = EXIT_USAGE;
    }
    eb_pathset_destroy(ps);
    eb_instance_destroy(inst);
    free(c.targets);
    return rc;
}

/* calibrate: measure F of every dtype and BW now and write them to the
 * cache (or to --calibration FILE). */
static int cmd_calibrate(const cmd_spec *cmd, int argc, char **argv,
                         char **full_argv)
{
    cli_opts c;
    int rc = parse_args(cmd, argc, argv, &c);
    if (!rc && c.ntargets)
        rc = usage_error("calibrate: unexpected argument '%s'", c.targets[0]);
    free(c.targets);
    if (rc)
        return rc;
    apply_threads(c.run.threads, full_argv);
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    eb_calib_opts o = {c.calibration, c.run.threads, 1, EB_CALIB_ALL_DTYPES};
    eb_calibration cal;
    eb_error err;
    int64_t t0 = eb_now_ns();
    if (eb_calib_get(&sys, &o, stderr, &cal, &err)) {
        fprintf(stderr, "einsum-bench: calibrate: %s\n", err.msg);
        return EXIT_FAIL;
    }
    static const char gemm[EB_DTYPE_COUNT] = {'d', 's', 'z', 'c'};
    for (int dt = 0; dt < EB_DTYPE_COUNT; dt++)
        printf("F   %8.2f GFLOP/s  %-10s  cblas_%cgemm 1024^3, 2 * 1024^3 "
               "flops per call, best of 5 (OpenBLAS %s, %d thread%s)\n",
               cal.rates.gflops[dt], eb_dtype_name((eb_dtype)dt), gemm[dt],
               sys.blas_core, cal.threads, cal.threads == 1 ? "" : "s");
    printf("BW  %8.2f GB/s     c[i] = a[i] * b[i] over 3 x 32 MiB, bytes "
           "read + written, best of 10 + 10 passes (ordinary, non-temporal "
           "stores)\n", cal.rates.gbs);
    printf("%s%s (%.0f ms)\n", cal.file[0] ? "cached in " : "not cached",
           cal.file, (double)(eb_now_ns() - t0) / 1e6);
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return usage_error("info: unexpected argument '%s'", argv[1]);
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    eb_sysinfo_print(&sys, stdout);
    return 0;
}

static int is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

int eb_cli_main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "no command given");
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0)
        return print_version();
    if (is_help(name) || strcmp(name, "help") == 0) {
        if (argc < 3 || is_help(name)) {
            print_usage(stdout);
            return 0;
        }
        const cmd_spec *cmd = find_command(argv[2]);
        if (!cmd)
            return usage_error("help: unknown command '%s'", argv[2]);
        return command_help(cmd);
    }
    const cmd_spec *cmd = find_command(name);
    if (!cmd) {
        const char *near = eb_arg_closest(name, &commands[0].name,
                                          sizeof commands / sizeof commands[0]
                                              - 1,
                                          sizeof commands[0]);
        if (near)
            return usage_error("unknown command '%s' (did you mean %s?)",
                               name, near);
        return usage_error("unknown command '%s'", name);
    }
    if (cmd->bit)
        for (int i = 2; i < argc; i++)
            if (is_help(argv[i]))
                return command_help(cmd);
    if (cmd->bit & (C_RUN | C_CHECK))
        return cmd_run(cmd, argc - 1, argv + 1, argv);
    if (cmd->bit == C_PLAN)
        return cmd_plan(cmd, argc - 1, argv + 1, argv);
    if (cmd->bit == C_CALIBRATE)
        return cmd_calibrate(cmd, argc - 1, argv + 1, argv);
    if (strcmp(name, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(name, "gen") == 0)
        return eb_cmd_gen(argc - 1, argv + 1);
    if (strcmp(name, "compare") == 0)
        return eb_cmd_compare(argc - 1, argv + 1);
    return eb_cmd_path(argc - 1, argv + 1);
}
