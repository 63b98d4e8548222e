/* cli: argument parsing, thread set-up, and the run/check/plan/info
 * commands (gen and path live in cmd_gen.c and cmd_path.c). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "clock.h"
#include "calibrate.h"
#include "commands.h"
#include "eager.h"
#include "trace.h"
#include "interrupt.h"
#include "load.h"
#include "roofline.h"
#include "recfile.h"
#include "runner.h"
#include "schedule.h"
#include "steptime.h"
#include "window.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

#define usage_error(...) eb_arg_fail(EXIT_USAGE, NULL, "", __VA_ARGS__)

static const char usage_text[] =
    "usage: einsum-bench COMMAND [options] ...\n"
    "\n"
    "commands:\n"
    "  run   [options] INSTANCE|DIR ...   measure (warmups, then samples)\n"
    "  check [options] INSTANCE|DIR ...   verify results only, no timing\n"
    "  plan  [options] INSTANCE           the path step by step\n"
    "  info                               machine, build and BLAS metadata\n"
    "  calibrate [--threads N] [--calibration FILE]\n"
    "                                     measure the roofline's F and BW\n"
    "  gen   lm ...                       generate an instance (gen --help)\n"
    "  path  ...                          compute and store a path (path --help)\n"
    "\n"
    "options of run (and of check and plan where they apply):\n"
    "  --mode eager|trace|both      execution mode (default trace)\n"
    "  --strategy NAME[,NAME]|all   which stored paths (default all)\n"
    "  --paths FILE|DIR             where stored paths come from\n"
    "  --warmup N                   warmup runs, N >= 0 (default 3)\n"
    "  --samples N                  timed runs, N >= 1 (default 15)\n"
    "  --threads N                  thread budget of the scope (default 1)\n"
    "  --fill zeros|random[:SEED]   how inputs are filled (default zeros)\n"
    "  --inputs DIR                 operand k from DIR/k.npy (float64, C order)\n"
    "  --save-output DIR            last sample's output to\n"
    "                               DIR/<instance>.<strategy>.<mode>.npy\n"
    "  --check                      verify each result before timing\n"
    "  --check-seed N               seed of the check's random inputs (default 1)\n"
    "  --json FILE                  JSON-lines records to FILE ('-': stdout,\n"
    "                               then no table)\n"
    "  --callgrind-per-sample       one callgrind dump per sample\n"
    "  --max-memory SIZE            refuse a measurement whose peak bytes\n"
    "                               (inputs + intermediates) exceed SIZE\n"
    "                               (K/M/G/T suffixes; default 80% of\n"
    "                               MemAvailable at start)\n"
    "  --timeout SECONDS            stop a measurement after SECONDS, between\n"
    "                               two runs (status timeout; default none)\n"
    "  --no-fuse                    trace: run every step on its own (no\n"
    "                               blocked groups of steps)\n"
    "  --time                       plan: also run the path (--threads,\n"
    "                               --warmup, --samples, --fill) and print\n"
    "                               each step's median time\n"
    "  --calibration FILE           the roofline's F and BW from FILE as given\n"
    "                               (default: measured once per machine, BLAS\n"
    "                               and --threads, cached in\n"
    "                               $EB_CALIBRATION_DIR or\n"
    "                               ${XDG_CACHE_HOME:-~/.cache}/einsum-bench)\n"
    "\n"
    "exit status: 0 ok, 1 a measurement or check failed, 2 usage or input "
    "error\n";


typedef struct {
    eb_run_opts run;
    const char *json;
    const char *inputs;
    const char *mode_str;
    const char *calibration;    /* --calibration FILE */
    int fill_given;
    int time;                   /* plan --time */
    char **targets;
    int ntargets;
} cli_opts;

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

static int is_opt(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
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

/* Options with a numeric value. */
static int parse_number_opt(cli_opts *c, const char *arg, const char *v)
{
    long n;
    if (is_opt(arg, "--warmup")) {
        if (parse_int(v, 0, 1000000, &n))
            return usage_error("--warmup: '%s' is not a count >= 0", v);
        c->run.warmups = (int)n;
    } else if (is_opt(arg, "--samples")) {
        if (parse_int(v, 1, 1000000, &n))
            return usage_error("--samples: '%s' is not a count >= 1", v);
        c->run.samples = (int)n;
    } else if (is_opt(arg, "--max-memory")) {
        if (parse_size(v, &c->run.max_memory_bytes))
            return usage_error("--max-memory: '%s' is not a size (e.g. 512M, "
                               "16G)", v);
    } else if (is_opt(arg, "--timeout")) {
        char *end;
        errno = 0;
        c->run.timeout_s = strtod(v, &end);
        if (errno || end == v || *end || !(c->run.timeout_s > 0) ||
            c->run.timeout_s > 1e9)
            return usage_error("--timeout: '%s' is not a number of seconds "
                               "> 0", v);
    } else if (is_opt(arg, "--threads")) {
        if (parse_int(v, 1, 1024, &n))
            return usage_error("--threads: '%s' is not a count from 1 to 1024",
                               v);
        c->run.threads = (int)n;
    } else {
        if (parse_int(v, 0, LONG_MAX, &n))
            return usage_error("--check-seed: '%s' is not a number >= 0", v);
        c->run.check_seed = (uint64_t)n;
    }
    return 0;
}

static int parse_value_opt(cli_opts *c, const char *arg, const char *v)
{
    if (!*v)
        return usage_error("%s needs a value", arg);
    if (is_opt(arg, "--mode"))
        return parse_mode(c, v);
    if (is_opt(arg, "--strategy"))
        c->run.strategies = v;
    else if (is_opt(arg, "--paths"))
        c->run.paths = v;
    else if (is_opt(arg, "--fill")) {
        if (eb_fill_parse(v, &c->run.fill))
            return usage_error("--fill: '%s' is not zeros, random or "
                               "random:SEED", v);
        c->run.fill_str = v;
        c->fill_given = 1;
    } else if (is_opt(arg, "--inputs"))
        c->inputs = v;
    else if (is_opt(arg, "--save-output"))
        c->run.save_dir = v;
    else if (is_opt(arg, "--json"))
        c->json = v;
    else if (is_opt(arg, "--calibration"))
        c->calibration = v;
    else
        return parse_number_opt(c, arg, v);
    return 0;
}

static const char *const value_opts[] = {
    "--mode", "--strategy", "--paths", "--fill", "--inputs", "--save-output",
    "--json", "--warmup", "--samples", "--threads", "--check-seed",
    "--calibration", "--max-memory", "--timeout", NULL};

static int parse_args(int argc, char **argv, cli_opts *c)
{
    memset(c, 0, sizeof *c);
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
        if (strcmp(a, "--check") == 0) {
            c->run.check = 1;
            continue;
        }
        if (strcmp(a, "--time") == 0) {
            c->time = 1;
            continue;
        }
        if (strcmp(a, "--no-fuse") == 0) {
            c->run.no_fuse = 1;
            continue;
        }
        if (strcmp(a, "--callgrind-per-sample") == 0) {
            c->run.per_sample_dumps = 1;
            continue;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            c->targets[c->ntargets++] = argv[i];
            continue;
        }
        int k = 0;
        for (; value_opts[k]; k++)
            if (is_opt(a, value_opts[k]))
                break;
        if (!value_opts[k])
            return usage_error("unknown option '%s'", a);
        const char *v = eb_arg_value(argc, argv, &i, value_opts[k]);
        int rc = parse_value_opt(c, value_opts[k], v);
        if (rc)
            return rc;
    }
    if (c->inputs) {
        if (c->fill_given)
            return usage_error("%s", "--inputs and --fill exclude each other");
        c->run.fill.kind = EB_FILL_NPY;
        c->run.fill.dir = c->inputs;
        c->run.fill_str = "npy";
    }
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

static int ensure_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0)
        return S_ISDIR(sb.st_mode) ? 0 : -1;
    return mkdir(dir, 0777);
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
    return 0;
}

/* The roofline's F and BW for run and plan: 0 with *have = 1 when known
 * (after a note, the run goes on without them otherwise), EXIT_USAGE for
 * a bad --calibration FILE. */
static int get_calibration(const cli_opts *c, const eb_sysinfo *sys,
                           eb_calibration *cal, int *have)
{
    eb_calib_opts o = {c->calibration, c->run.threads, 0};
    eb_error err;
    *have = eb_calib_get(sys, &o, stderr, cal, &err) == EB_OK;
    if (*have) {
        if (strcmp(cal->source, "measured") == 0)
            fprintf(stderr, "einsum-bench: F %.2f GFLOP/s, BW %.2f GB/s%s%s\n",
                    cal->rates.gflops, cal->rates.gbs,
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

static int cmd_run(int argc, char **argv, char **full_argv, int verify_only)
{
    cli_opts c;
    int rc = parse_args(argc, argv, &c);
    if (!rc && c.ntargets == 0)
        rc = usage_error("%s: no INSTANCE or DIR given", argv[0]);
    if (!rc && c.time)
        rc = usage_error("%s: --time is an option of plan", argv[0]);
    if (!rc)
        rc = json_is_input(&c);
    if (!rc && c.run.save_dir && ensure_dir(c.run.save_dir))
        rc = usage_error("--save-output: '%s' is not a folder that can be "
                         "created", c.run.save_dir);
    if (rc) {
        free(c.targets);
        return rc;
    }
    c.run.verify_only = verify_only;
    int reexec = apply_threads(c.run.threads, full_argv);
    if (!c.run.max_memory_bytes)
        c.run.max_memory_bytes = default_budget();
    eb_interrupt_install();
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    eb_calibration cal;
    int have_cal = 0;
    if (!verify_only && get_calibration(&c, &sys, &cal, &have_cal)) {
        free(c.targets);
        return EXIT_USAGE;
    }
    c.run.rates = have_cal ? &cal.rates : NULL;
    eb_reporter reps[2];
    int nreps;
    if (open_reporters(&c, reps, &nreps)) {
        for (int k = 0; k < nreps; k++)
            reps[k].destroy(reps[k].ctx);
        free(c.targets);
        return EXIT_USAGE;
    }
    eb_run_info info = {&sys, verify_only ? "check" : "run", c.mode_str,
                        c.run.strategies, c.run.fill_str, c.run.threads,
                        verify_only ? 0 : c.run.warmups,
                        verify_only ? 0 : c.run.samples, reexec,
                        have_cal ? &cal : NULL};
    for (int k = 0; k < nreps; k++)
        reps[k].begin(reps[k].ctx, &info);
    eb_run_summary sum;
    eb_runner_run(&c.run, c.targets, c.ntargets, reps, nreps, &sum);
    int write_failed = sum.write_errors > 0;
    for (int k = 0; k < nreps; k++) {
        if (reps[k].finish(reps[k].ctx) != 0) {
            write_failed = 1;
            if (k == 0 && (!c.json || strcmp(c.json, "-") != 0))
                fprintf(stderr, "einsum-bench: stdout: cannot write the "
                        "table: %s\n", strerror(errno));
        }
        reps[k].destroy(reps[k].ctx);
    }
    free(c.targets);
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
    return n + (p->post ? p->out_elems : 0);
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
        printf(" run at step %d in %lld blocks of %lld along '%s' (%lld)\n", c,
               (long long)((w + bw - 1) / bw), (long long)bw,
               eb_label_str(inst, d[c].fuse_label, lab), (long long)w);
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
static void print_roofline(const eb_schedule *sched,
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
           "byte-bound, flop-bound steps %.4g ms); F %.2f GFLOP/s, BW %.2f "
           "GB/s (%s%s%s)", sum, byte_steps, sched->num_steps, flop_ms,
           cal->rates.gflops, cal->rates.gbs, cal->source,
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
    eb_roofline_step *bound = cal ? calloc((size_t)n, sizeof *bound) : NULL;
    if (bound)
        eb_roofline_path(inst, sched, &cal->rates, bound);
    int64_t arena = 0;
    eb_fuse_opts fuse = eb_fuse_default_opts();
    eb_status st = !d ? eb_error_set(&err, EB_ERR_NOMEM, "out of memory")
                   : mode == EB_MODE_TRACE
                       ? eb_trace_describe(inst, path, no_fuse ? NULL : &fuse,
                                           d, &arena, &err)
                       : eb_eager_describe(inst, path, d, &err);
    if (st)
        fprintf(stderr, "einsum-bench: %s\n", err.msg);
    eb_step_times *tm = NULL;
    int ok = !st;
    if (ok && c->time)
        ok = (tm = time_steps(inst, path, mode, c,
                              no_fuse ? NULL : &fuse)) != NULL;
    if (ok) {
        printf("\n%s  strategy %s  mode %s  (path from %s)\n", inst->name,
               path->strategy, eb_mode_name(mode), source);
        if (mode == EB_MODE_TRACE)
            printf("arena: %lld bytes\n", (long long)arena);
        printf("%s\n", inst->format_string);
        print_plan(inst, path, d, sched, tm, bound);
        if (bound)
            print_roofline(sched, bound, cal, tm);
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

/* Is `name` one of the comma-separated names in `list` (exact match)? */
static int in_strategy_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list;; p++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (!e)
            return 0;
        p = e;
    }
}

static int cmd_plan(int argc, char **argv, char **full_argv)
{
    cli_opts c;
    int rc = parse_args(argc, argv, &c);
    if (!rc && c.ntargets != 1)
        rc = usage_error("%s: give exactly one INSTANCE", argv[0]);
    if (rc) {
        free(c.targets);
        return rc;
    }
    /* The pool matters for --time, and for F when calibration measures. */
    apply_threads(c.run.threads, full_argv);
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    eb_calibration cal;
    int have_cal = 0;
    if (get_calibration(&c, &sys, &cal, &have_cal)) {
        free(c.targets);
        return EXIT_USAGE;
    }
    eb_instance *inst = NULL;
    eb_pathset *ps = NULL;
    eb_error err;
    eb_status st = eb_load_instance(c.targets[0], &inst, &err);
    if (!st)
        st = eb_load_find_paths(inst, c.run.paths, &ps, &err);
    rc = st ? EXIT_USAGE : 0;
    if (st)
        fprintf(stderr, "einsum-bench: %s\n", err.msg);
    int shown = 0;
    for (int k = 0; !st && k < ps->count; k++) {
        if (strcmp(c.run.strategies, "all") != 0 &&
            !in_strategy_list(c.run.strategies, ps->paths[k].strategy))
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

/* calibrate: measure F and BW now and write them to the cache (or to
 * --calibration FILE). */
static int cmd_calibrate(int argc, char **argv, char **full_argv)
{
    cli_opts c;
    int rc = parse_args(argc, argv, &c);
    if (!rc && c.ntargets)
        rc = usage_error("calibrate: unexpected argument '%s'", c.targets[0]);
    free(c.targets);
    if (rc)
        return rc;
    apply_threads(c.run.threads, full_argv);
    eb_sysinfo sys;
    eb_sysinfo_collect(&sys);
    eb_calib_opts o = {c.calibration, c.run.threads, 1};
    eb_calibration cal;
    eb_error err;
    int64_t t0 = eb_now_ns();
    if (eb_calib_get(&sys, &o, stderr, &cal, &err)) {
        fprintf(stderr, "einsum-bench: calibrate: %s\n", err.msg);
        return EXIT_FAIL;
    }
    printf("F   %8.2f GFLOP/s  cblas_dgemm 1024^3, best of 3 (OpenBLAS %s, "
           "%d thread%s)\n", cal.rates.gflops, sys.blas_core,
           cal.threads, cal.threads == 1 ? "" : "s");
    printf("BW  %8.2f GB/s     c[i] = a[i] * b[i] over 3 x 32 MiB, bytes "
           "read + written, best of 5\n", cal.rates.gbs);
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

int eb_cli_main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
        strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 && strcmp(cmd, "gen") != 0 &&
            strcmp(cmd, "path") != 0) {
            fputs(usage_text, stdout);
            return 0;
        }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1, argv, 0);
    if (strcmp(cmd, "check") == 0)
        return cmd_run(argc - 1, argv + 1, argv, 1);
    if (strcmp(cmd, "plan") == 0)
        return cmd_plan(argc - 1, argv + 1, argv);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "calibrate") == 0)
        return cmd_calibrate(argc - 1, argv + 1, argv);
    if (strcmp(cmd, "gen") == 0)
        return eb_cmd_gen(argc - 1, argv + 1);
    if (strcmp(cmd, "path") == 0)
        return eb_cmd_path(argc - 1, argv + 1);
    return usage_error("unknown command '%s'", cmd);
}
