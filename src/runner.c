/* runner: instances x strategies x modes, with error isolation. */
#include "runner.h"

#include <dirent.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "budget.h"
#include "clock.h"
#include "interrupt.h"
#include "verify.h"
#include "load.h"
#include "npy.h"
#include "refeinsum.h"
#include "schedule.h"
#include "scope.h"
#include "sha256.h"
#include "window.h"

/* One walk over the targets either counts the selection quietly, lists it,
 * or runs it. */
typedef enum { PASS_COUNT, PASS_LIST, PASS_RUN } pass_kind;

typedef struct {
    const eb_run_opts *o;
    eb_reporter *reps;
    int nreps;
    eb_run_summary *sum;
    char inst_sha[65], paths_sha[65]; /* of the instance being run */
    pass_kind pass;
    regex_t filter;
    int has_filter;
    eb_selection sel;           /* PASS_COUNT and PASS_LIST fill it */
    int index;                  /* PASS_RUN: measurements announced */
    int64_t t0_ns;
    int online_cpus;
} runner;

/* What one measured (strategy, mode) produced, kept for reuse. */
typedef struct {
    const eb_path *path;
    eb_mode mode;
    eb_record rec;
    int64_t *samples_ns, *minflt;
    char digest[17];
    char check_ref[96];
    char error[EB_ERROR_MSG_BYTES + 64];
} done_entry;

static void emit(runner *r, const eb_record *rec)
{
    for (int k = 0; k < r->nreps; k++)
        if (r->reps[k].measurement(r->reps[k].ctx, rec))
            r->sum->write_errors++;
}

static void input_error(runner *r, const eb_error *err)
{
    fprintf(stderr, "einsum-bench: %s\n", err->msg);
    r->sum->input_errors++;
}

/* Does strategy name s appear in the comma list? */
static int in_list(const char *list, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* Every requested strategy must exist in the path set. */
static eb_status check_strategies(const eb_instance *inst, const eb_pathset *ps,
                                  const char *list, eb_error *err)
{
    if (strcmp(list, "all") == 0)
        return EB_OK;
    char have[512] = "";
    for (int k = 0; k < ps->count; k++) {
        size_t len = strlen(have);
        snprintf(have + len, sizeof have - len, "%s%s", k ? ", " : "",
                 ps->paths[k].strategy);
    }
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int found = 0;
        for (int k = 0; k < ps->count; k++)
            if (strlen(ps->paths[k].strategy) == len &&
                strncmp(ps->paths[k].strategy, p, len) == 0)
                found = 1;
        if (!found)
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: paths: no strategy '%.*s' in %s (have: %s)",
                                inst->file, (int)len, p, ps->source, have);
        if (!e)
            break;
        p = e + 1;
    }
    return EB_OK;
}

void eb_runner_apply_dtype(const eb_run_opts *o, eb_instance *inst)
{
    if (o->has_dtype)
        inst->dt = o->dtype;
}

static void base_record(const eb_instance *inst, const eb_pathset *ps,
                        const eb_path *path, const eb_schedule *sched,
                        eb_mode mode, const eb_run_opts *o, char *digest,
                        eb_record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->instance = inst->name;
    rec->instance_file = inst->file;
    rec->dtype = eb_dtype_name(inst->dt);
    rec->file_dtype = inst->dtype;
    rec->strategy = path->strategy;
    rec->mode = eb_mode_name(mode);
    rec->status = "ok";
    rec->path_source = ps->source;
    rec->path_digest = eb_path_digest(path, digest);
    rec->num_tensors = inst->num_tensors;
    rec->threads = o->threads;
    rec->warmups = o->verify_only ? 0 : o->warmups;
    rec->samples = o->verify_only ? 0 : o->samples;
    rec->flops = sched->total_flops;
    rec->log10_flops = sched->log10_flops;
    rec->log2_size = sched->log2_size;
    rec->stored_log10_flops = path->log10_flops;
    rec->stored_log2_size = path->log2_size;
    rec->max_rel_err = NAN;
    if (eb_rates_have(o->rates, inst->dt)) {
        rec->has_roofline = 1;
        rec->roofline_ms = eb_roofline_path(inst, sched, o->rates, NULL);
        rec->roofline_gflops = o->rates->gflops[inst->dt];
        rec->roofline_gbs = o->rates->gbs;
    }
}

static eb_status save_output(const eb_instance *inst, const char *dir,
                             const char *strategy, eb_mode mode,
                             const void *out, eb_error *err)
{
    /* Built only from names validated at load (no '/', no leading dot),
     * checked again here: the file stays inside dir whatever the input. */
    if (eb_name_problem(inst->name) || eb_name_problem(strategy))
        return eb_error_set(err, EB_ERR_INTERNAL, "%s: an unvalidated name "
                            "reached --save-output", inst->file);
    char file[4096];
    int n = snprintf(file, sizeof file, "%s/%s.%s.%s.npy", dir, inst->name,
                     strategy, eb_mode_name(mode));
    if (n < 0 || (size_t)n >= sizeof file)
        return eb_error_set(err, EB_ERR_IO, "--save-output: '%s': folder "
                            "name too long", dir);
    int64_t shape[EB_MAX_RANK];
    for (int a = 0; a < inst->output.rank; a++)
        shape[a] = inst->label_size[inst->output.ids[a]];
    return eb_npy_write(file, shape, inst->output.rank, inst->dt, out, err);
}

/* A measurement a signal or --timeout ended early: it keeps the samples
 * it completed, with status "interrupted" or "timeout". */
static void stopped_early(const eb_run_opts *o, const eb_bench_result *br,
                          eb_record *rec, done_entry *d)
{
    int sig = eb_interrupt_pending();
    if (br->stopped == EB_BENCH_TIMEOUT) {
        rec->status = "timeout";
        snprintf(d->error, sizeof d->error, "--timeout %g s reached after "
                 "%d of %d samples", o->timeout_s, br->samples, o->samples);
    } else {
        rec->status = "interrupted";
        snprintf(d->error, sizeof d->error, "%s after %d of %d samples",
                 eb_interrupt_name(sig), br->samples, o->samples);
    }
    rec->error = d->error;
}

/* One warning line for the marks a run-wide warning has not said. */
static void warn_noise(const eb_record *rec)
{
    char what[256] = "";
    for (int k = 0; k < rec->num_marks; k++)
        if (strcmp(rec->marks[k], "iqr") == 0 ||
            strcmp(rec->marks[k], "busy") == 0)
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s",
                     what[0] ? "; " : "", eb_noise_explain(rec->marks[k]));
    if (what[0])
        fprintf(stderr, "einsum-bench: warning: %s/%s/%s: noisy: %s (IQR "
                "%.1f%% of the median, others %.2f CPUs, load %.2f)\n",
                rec->instance, rec->strategy, rec->mode, what,
                100 * rec->stats.iqr_ns / rec->stats.median_ns,
                rec->noise.others_cpus, rec->noise.load1);
}

/* Warmups and samples of one (path, mode) in one scope. */
static eb_status measure(runner *r, const eb_instance *inst,
                         const eb_operands *ops, const eb_path *path,
                         eb_mode mode, eb_record *rec, done_entry *d,
                         eb_error *err)
{
    const eb_run_opts *o = r->o;
    int64_t deadline_ns = o->timeout_s > 0
                              ? eb_now_ns() + (int64_t)(o->timeout_s * 1e9)
                              : 0;
    eb_scope *scope;
    eb_status st = eb_scope_enter(o->threads, &scope, err);
    if (st)
        return st;
    rec->openblas_threads = eb_scope_blas_threads(scope);
    eb_executor ex;
    eb_fuse_opts fuse = eb_fuse_default_opts();
    st = eb_exec_create(mode, inst, path, ops->views, eb_scope_pool(scope),
                        eb_scope_team(scope), o->no_fuse ? NULL : &fuse, &ex,
                        err);
    if (st) {
        eb_scope_leave(scope);
        return st;
    }
    char label[512];
    snprintf(label, sizeof label, "%s/%s/%s", inst->name, path->strategy,
             eb_mode_name(mode));
    eb_bench_opts bo = {o->warmups, o->samples, o->per_sample_dumps, label,
                        deadline_ns};
    eb_bench_result br;
    eb_noise_clock nc;
    eb_noise_begin(&nc);
    st = eb_bench_run(&ex, &bo, &br, err);
    if (!st && br.stopped)
        stopped_early(o, &br, rec, d);
    eb_noise_end(&nc, &rec->noise);
    if (!st) {
        rec->has_stats = br.samples > 0;
        rec->samples = br.samples;
        rec->stats = br.stats;
        rec->has_noise = 1;
        rec->num_marks = eb_noise_marks(&rec->noise, br.stats.median_ns,
                                        br.stats.iqr_ns, o->threads,
                                        r->online_cpus,
                                        eb_window_on_valgrind(), rec->marks);
        warn_noise(rec);
        rec->compile_ms = ex.compile_ms;
        rec->fused_groups = ex.fused_groups;
        rec->engine_threads = ex.engine_threads;
        rec->lanes_at = ex.lanes_at;
        rec->gemm_calls = br.per_sample.gemm_calls;
        rec->blas_calls = br.per_sample.blas_calls;
        rec->permuted_elems = br.per_sample.permuted_elems;
        rec->peak_bytes = ops->bytes + eb_pool_bytes(eb_scope_pool(scope)) +
                          ex.static_bytes;
        d->samples_ns = br.samples_ns;
        d->minflt = br.minflt;
        rec->samples_ns = br.samples_ns;
        rec->minflt = br.minflt;
        if (o->save_dir && !br.stopped)
            st = save_output(inst, o->save_dir, path->strategy, mode, br.out,
                             err);
    }
    eb_exec_destroy(&ex);
    eb_scope_leave(scope);
    return st;
}

static void do_check(runner *r, eb_checker *chk, const eb_path *path,
                     eb_mode mode, eb_record *rec, done_entry *d)
{
    eb_check_outcome co;
    eb_error err;
    eb_status st = eb_checker_verify(chk, path, mode, &co, &err);
    rec->has_check = 1;
    if (st) {
        rec->status = "error";
        snprintf(d->error, sizeof d->error, "check: %s", err.msg);
        rec->error = d->error;
        fprintf(stderr, "einsum-bench: %s/%s/%s: %s\n", rec->instance,
                rec->strategy, rec->mode, d->error);
        rec->check_status = "error";
        r->sum->failures++;
        return;
    }
    rec->max_rel_err = co.max_rel_err;
    snprintf(d->check_ref, sizeof d->check_ref, "%s", co.reference);
    rec->check_ref = d->check_ref;
    rec->check_status = co.status;
    if (strcmp(co.status, "failed") == 0) {
        r->sum->failures++;
        rec->status = "error";
        snprintf(d->error, sizeof d->error, "check failed: max_rel_err %.3g "
                 "against %s", co.max_rel_err, co.reference);
        rec->error = d->error;
        fprintf(stderr, "einsum-bench: %s/%s/%s: check FAILED: max_rel_err "
                "%.3g against %s\n", rec->instance, rec->strategy, rec->mode,
                co.max_rel_err, co.reference);
    } else if (strcmp(co.status, "unverified") == 0) {
        r->sum->unverified++;
        fprintf(stderr, "einsum-bench: %s/%s/%s: unverified (no independent "
                "reference affordable)\n", rec->instance, rec->strategy,
                rec->mode);
    }
}

/* "[i/N] instance strategy mode" on stderr before each measurement, with
 * the time left at the pace so far when stderr is a terminal. */
static void announce(runner *r, const char *inst, const char *strategy,
                     eb_mode mode)
{
    int i = ++r->index, n = r->o->total;
    fprintf(stderr, "[%d/%d] %s %s %s", i, n > 0 ? n : i, inst, strategy,
            eb_mode_name(mode));
    if (i > 1 && n >= i && isatty(STDERR_FILENO)) {
        double left = (double)(eb_now_ns() - r->t0_ns) / (i - 1) *
                      (n - i + 1) / 1e9;
        fprintf(stderr, "  (ETA %dm%02ds)", (int)(left / 60),
                (int)left % 60);
    }
    fputc('\n', stderr);
}

/* --save-output for a reused measurement: the file of the one it reuses. */
static void copy_output(runner *r, const char *inst, const char *from,
                        const char *to, const char *mode)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/%s.%s.%s.npy", r->o->save_dir, inst, from,
             mode);
    snprintf(dst, sizeof dst, "%s/%s.%s.%s.npy", r->o->save_dir, inst, to,
             mode);
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    int ok = in && out;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    if (in)
        fclose(in);
    if (out && fclose(out))
        ok = 0;
    if (!ok) {
        fprintf(stderr, "einsum-bench: --save-output: cannot copy %s to %s\n",
                src, dst);
        remove(dst);
        r->sum->failures++;
    }
}

/* A record for a strategy whose path equals one already measured. */
static void emit_reused(runner *r, const done_entry *prev, const eb_path *path,
                        done_entry *d)
{
    d->rec = prev->rec;
    d->rec.strategy = path->strategy;
    d->rec.reused_from = prev->rec.strategy;
    d->rec.stored_log10_flops = path->log10_flops;
    d->rec.stored_log2_size = path->log2_size;
    announce(r, d->rec.instance, path->strategy, prev->mode);
    if (r->o->save_dir && !r->o->verify_only)
        copy_output(r, d->rec.instance, prev->rec.strategy, path->strategy,
                    d->rec.mode);
    emit(r, &d->rec);
    fprintf(stderr, "einsum-bench: %s/%s/%s: same path as %s, reused\n",
            d->rec.instance, path->strategy, d->rec.mode, prev->rec.strategy);
}

static void progress(const eb_record *rec)
{
    if (strcmp(rec->status, "ok") != 0)
        fprintf(stderr, "einsum-bench: %s/%s/%s: %s: %s\n", rec->instance,
                rec->strategy, rec->mode, rec->status,
                rec->error ? rec->error : "");
    else if (rec->has_stats)
        fprintf(stderr, "einsum-bench: %s/%s/%s: median %.3f ms, IQR %.3f ms\n",
                rec->instance, rec->strategy, rec->mode,
                rec->stats.median_ns / 1e6, rec->stats.iqr_ns / 1e6);
    else if (rec->has_check)
        fprintf(stderr, "einsum-bench: %s/%s/%s: check %s (%s, max_rel_err "
                "%.3g)\n", rec->instance, rec->strategy, rec->mode,
                rec->check_status, rec->check_ref, rec->max_rel_err);
}

/* Bytes of the input copies a run makes: one set to measure, one more
 * for the checker's random inputs, and for a float32 or complex64 check
 * those widened for the reference (twice the bytes). */
static double input_bytes(const eb_instance *inst, const eb_run_opts *o)
{
    int checks = o->verify_only || o->check;
    double b = eb_budget_inputs(inst) * (!o->verify_only + checks);
    if (checks && eb_ref_dtype(inst->dt) != inst->dt)
        b += 2 * eb_budget_inputs(inst);
    return b;
}

/* A measurement whose peak bytes exceed the budget: refused before any
 * allocation, status error (the others still run). */
static void over_budget(runner *r, double need, eb_record *rec, done_entry *d)
{
    char a[32], b[32];
    snprintf(d->error, sizeof d->error, "needs %s, budget %s (--max-memory)",
             eb_budget_str(need, a, sizeof a),
             eb_budget_str((double)r->o->max_memory_bytes, b, sizeof b));
    rec->status = "error";
    rec->error = d->error;
    r->sum->failures++;
}

/* One strategy in one mode: check and/or measure, then emit. */
static void run_one(runner *r, const eb_instance *inst, const eb_pathset *ps,
                    const eb_operands *ops, eb_checker *chk,
                    const eb_path *path, eb_mode mode, done_entry *d)
{
    const eb_run_opts *o = r->o;
    eb_schedule *sched;
    eb_error err;
    d->path = path;
    d->mode = mode;
    if (eb_schedule_build(inst, path, &sched, &err)) {
        input_error(r, &err);
        d->path = NULL;
        return;
    }
    base_record(inst, ps, path, sched, mode, o, d->digest, &d->rec);
    d->rec.instance_sha256 = r->inst_sha[0] ? r->inst_sha : NULL;
    d->rec.paths_sha256 = r->paths_sha[0] ? r->paths_sha : NULL;
    announce(r, inst->name, path->strategy, mode);
    eb_record *rec = &d->rec;
    /* Inputs not created (they alone are over the budget) also refuse. */
    int no_inputs = (!o->verify_only && !ops) ||
                    ((o->verify_only || o->check) && !chk);
    double need = eb_budget_peak(inst, sched);
    eb_schedule_destroy(sched);
    if (no_inputs && need < input_bytes(inst, o))
        need = input_bytes(inst, o);
    if (no_inputs || need > (double)o->max_memory_bytes) {
        over_budget(r, need, rec, d);
        progress(rec);
        emit(r, rec);
        return;
    }
    if (chk)
        do_check(r, chk, path, mode, rec, d);
    if (!o->verify_only && strcmp(rec->status, "ok") == 0) {
        eb_status st = measure(r, inst, ops, path, mode, rec, d, &err);
        if (st) {
            rec->status = "error";
            snprintf(d->error, sizeof d->error, "%s", err.msg);
            rec->error = d->error;
            r->sum->failures++;
        } else if (strcmp(rec->status, "timeout") == 0) {
            r->sum->failures++;
        } else if (strcmp(rec->status, "ok") == 0) {
            r->sum->measured++;
        }
    }
    if (strcmp(rec->status, "ok") == 0)
        r->sum->completed++;
    progress(rec);
    emit(r, rec);
}

static const done_entry *find_done(const done_entry *done, int n,
                                   const eb_path *path, eb_mode mode)
{
    for (int k = 0; k < n; k++)
        if (done[k].path && done[k].mode == mode &&
            eb_path_equal(done[k].path, path))
            return &done[k];
    return NULL;
}

static void run_strategies(runner *r, const eb_instance *inst,
                           const eb_pathset *ps, const eb_operands *ops,
                           eb_checker *chk)
{
    int cap = ps->count * EB_MODE_COUNT;
    done_entry *done = calloc((size_t)cap, sizeof *done);
    if (!done) {
        fprintf(stderr, "einsum-bench: out of memory\n");
        r->sum->failures++;
        return;
    }
    int n = 0;
    for (int k = 0; k < ps->count; k++) {
        const eb_path *path = &ps->paths[k];
        if (strcmp(r->o->strategies, "all") != 0 &&
            !in_list(r->o->strategies, path->strategy))
            continue;
        for (int m = 0; m < EB_MODE_COUNT; m++) {
            if (!r->o->modes[m] || eb_interrupt_pending())
                continue;
            const done_entry *prev = find_done(done, n, path, (eb_mode)m);
            if (prev && strcmp(prev->rec.status, "ok") == 0)
                emit_reused(r, prev, path, &done[n++]);
            else
                run_one(r, inst, ps, ops, chk, path, (eb_mode)m, &done[n++]);
        }
    }
    for (int k = 0; k < n; k++) {
        free(done[k].samples_ns);
        free(done[k].minflt);
    }
    free(done);
}

static int selected_strategy(const eb_run_opts *o, const eb_path *path)
{
    return strcmp(o->strategies, "all") == 0 ||
           in_list(o->strategies, path->strategy);
}

static int num_modes(const eb_run_opts *o)
{
    int n = 0;
    for (int m = 0; m < EB_MODE_COUNT; m++)
        n += o->modes[m] != 0;
    return n;
}

/* --list: one row per selected strategy of an instance. */
static void list_instance(runner *r, const eb_instance *inst,
                          const eb_pathset *ps)
{
    int64_t bytes = 0;
    for (int k = 0; k < inst->num_tensors; k++)
        bytes += eb_instance_operand_elems(inst, k) *
                 (int64_t)eb_dtype_size(inst->dt);
    for (int k = 0; k < ps->count; k++) {
        if (!selected_strategy(r->o, &ps->paths[k]))
            continue;
        eb_schedule *sched;
        eb_error err;
        if (eb_schedule_build(inst, &ps->paths[k], &sched, &err)) {
            input_error(r, &err);
            continue;
        }
        char modes[32] = "";
        for (int m = 0; m < EB_MODE_COUNT; m++)
            if (r->o->modes[m])
                snprintf(modes + strlen(modes), sizeof modes - strlen(modes),
                         "%s%s", modes[0] ? "," : "", eb_mode_name((eb_mode)m));
        const eb_rates *rates = r->o->rates;
        if (r->sel.measurements == 0)
            printf("%-52s %-12s %7s %10s %8s %10s %s%s\n", "Instance",
                   "Strategy", "Tensors", "log10FLOPS", "log2SIZE",
                   "Inputs(MB)", rates ? "Roofline(ms) " : "", "Modes");
        printf("%-52s %-12s %7d %10.4f %8.4f %10.3f ", inst->name,
               ps->paths[k].strategy, inst->num_tensors, sched->log10_flops,
               sched->log2_size, (double)bytes / 1e6);
        if (eb_rates_have(rates, inst->dt))
            printf("%12.4g ", eb_roofline_path(inst, sched, rates, NULL));
        else if (rates)
            printf("%12s ", "-");
        printf("%s\n", modes);
        r->sel.measurements += num_modes(r->o);
        eb_schedule_destroy(sched);
    }
}

/* PASS_COUNT and PASS_LIST: count (and list) what an instance selects. */
static void select_instance(runner *r, const eb_instance *inst,
                            const eb_pathset *ps)
{
    r->sel.instances++;
    r->sel.dtypes |= 1u << inst->dt;
    if (r->pass == PASS_LIST) {
        list_instance(r, inst, ps);
        return;
    }
    for (int k = 0; k < ps->count; k++)
        if (selected_strategy(r->o, &ps->paths[k]))
            r->sel.measurements += num_modes(r->o);
}

static void run_instance(runner *r, const char *file)
{
    const eb_run_opts *o = r->o;
    eb_instance *inst = NULL;
    eb_pathset *ps = NULL;
    eb_operands *ops = NULL;
    eb_checker *chk = NULL;
    eb_error err;
    eb_status st = eb_load_instance(file, &inst, &err);
    if (!st)
        eb_runner_apply_dtype(o, inst);
    if (st == EB_ERR_UNSUPPORTED) {
        eb_instance_destroy(inst);
        if (r->pass != PASS_COUNT)
            fprintf(stderr, "einsum-bench: skipped: %s\n", err.msg);
        else if (!r->sel.skipped++)
            snprintf(r->sel.skip_msg, sizeof r->sel.skip_msg, "%s", err.msg);
        return;
    }
    if (!st && r->has_filter &&
        regexec(&r->filter, inst->name, 0, NULL, 0) != 0) {
        eb_instance_destroy(inst);
        return;
    }
    if (!st)
        st = eb_load_find_paths(inst, o->paths, &ps, &err);
    if (!st)
        st = check_strategies(inst, ps, o->strategies, &err);
    if (r->pass != PASS_RUN) {
        if (!st)
            select_instance(r, inst, ps);
        else if (r->pass == PASS_COUNT)
            r->sel.errors++;
        else
            input_error(r, &err);
        eb_pathset_destroy(ps);
        eb_instance_destroy(inst);
        return;
    }
    if (!st) {
        eb_sha256_file(inst->file, r->inst_sha);
        eb_sha256_file(ps->source, r->paths_sha);
    }
    /* Inputs over the budget are not created: each measurement is then
     * refused by run_one with the numbers. */
    int fits = !st && input_bytes(inst, o) <= (double)o->max_memory_bytes;
    if (fits && !o->verify_only)
        st = eb_operands_create(inst, &o->fill, &ops, &err);
    if (fits && !st && (o->verify_only || o->check))
        st = eb_checker_create(inst, ps, o->check_seed,
                               o->fill.kind == EB_FILL_NPY ? &o->fill : NULL,
                               o->threads,
                               !o->no_fuse, &chk, &err);
    if (chk)
        eb_checker_set_max_memory(chk, (double)o->max_memory_bytes);
    if (st)
        input_error(r, &err);
    else
        run_strategies(r, inst, ps, ops, chk);
    eb_checker_destroy(chk);
    eb_operands_destroy(ops);
    eb_pathset_destroy(ps);
    eb_instance_destroy(inst);
}

static int json_name(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
}

static void run_dir(runner *r, const char *dir)
{
    struct dirent **list;
    int n = scandir(dir, &list, json_name, alphasort);
    if (n < 0 && r->pass == PASS_COUNT) {
        r->sel.errors++;
        return;
    }
    if (n < 0) {
        eb_error err;
        eb_error_set(&err, EB_ERR_IO, "%s: cannot read folder", dir);
        input_error(r, &err);
        return;
    }
    for (int k = 0; k < n; k++) {
        if (eb_interrupt_pending()) {
            free(list[k]);
            continue;
        }
        char file[4096];
        snprintf(file, sizeof file, "%s%s%s", dir,
                 dir[strlen(dir) - 1] == '/' ? "" : "/", list[k]->d_name);
        eb_file_kind kind = eb_load_file_kind(file);
        if ((kind == EB_FILE_PATHS || kind == EB_FILE_OTHER) &&
            r->pass != PASS_COUNT)
            fprintf(stderr, "einsum-bench: note: skipping %s (%s)\n", file,
                    kind == EB_FILE_PATHS ? "a path file, not an instance"
                                          : "not an instance");
        else if (kind != EB_FILE_PATHS && kind != EB_FILE_OTHER)
            run_instance(r, file);
        free(list[k]);
    }
    free(list);
}

/* One pass over the targets. */
static void walk(runner *r, char *const *targets, int ntargets)
{
    r->has_filter = r->o->filter &&
                    regcomp(&r->filter, r->o->filter,
                            REG_EXTENDED | REG_NOSUB) == 0;
    for (int t = 0; t < ntargets && !eb_interrupt_pending(); t++) {
        struct stat sb;
        if (stat(targets[t], &sb) == 0 && S_ISDIR(sb.st_mode))
            run_dir(r, targets[t]);
        else
            run_instance(r, targets[t]);
    }
    if (r->has_filter)
        regfree(&r->filter);
}

void eb_runner_select(const eb_run_opts *o, char *const *targets,
                      int ntargets, int list, eb_selection *sel,
                      eb_run_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    runner r = {.o = o, .sum = sum, .pass = list ? PASS_LIST : PASS_COUNT};
    walk(&r, targets, ntargets);
    *sel = r.sel;
}

void eb_runner_run(const eb_run_opts *o, char *const *targets, int ntargets,
                   eb_reporter *reps, int nreps, eb_run_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    runner r = {.o = o, .reps = reps, .nreps = nreps, .sum = sum,
                .pass = PASS_RUN, .t0_ns = eb_now_ns()};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    r.online_cpus = cpus > 0 ? (int)cpus : 0;
    walk(&r, targets, ntargets);
    sum->interrupted = eb_interrupt_pending();
}
