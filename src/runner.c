/* runner: instances x strategies x modes, with error isolation. */
#include "runner.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "budget.h"
#include "clock.h"
#include "interrupt.h"
#include "verify.h"
#include "load.h"
#include "npy.h"
#include "schedule.h"
#include "scope.h"

typedef struct {
    const eb_run_opts *o;
    eb_reporter *reps;
    int nreps;
    eb_run_summary *sum;
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

static void base_record(const eb_instance *inst, const eb_pathset *ps,
                        const eb_path *path, const eb_schedule *sched,
                        eb_mode mode, const eb_run_opts *o, char *digest,
                        eb_record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->instance = inst->name;
    rec->instance_file = inst->file;
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
    if (o->rates) {
        rec->has_roofline = 1;
        rec->roofline_ms = eb_roofline_path(inst, sched, o->rates, NULL);
        rec->roofline_gflops = o->rates->gflops;
        rec->roofline_gbs = o->rates->gbs;
    }
}

static eb_status save_output(const eb_instance *inst, const char *dir,
                             const char *strategy, eb_mode mode,
                             const double *out, eb_error *err)
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
    return eb_npy_write(file, shape, inst->output.rank, out, err);
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
    st = eb_bench_run(&ex, &bo, &br, err);
    if (!st && br.stopped)
        stopped_early(o, &br, rec, d);
    if (!st) {
        rec->has_stats = br.samples > 0;
        rec->samples = br.samples;
        rec->stats = br.stats;
        rec->compile_ms = ex.compile_ms;
        rec->fused_groups = ex.fused_groups;
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

/* A record for a strategy whose path equals one already measured. */
static void emit_reused(runner *r, const done_entry *prev, const eb_path *path,
                        done_entry *d)
{
    d->rec = prev->rec;
    d->rec.strategy = path->strategy;
    d->rec.reused_from = prev->rec.strategy;
    d->rec.stored_log10_flops = path->log10_flops;
    d->rec.stored_log2_size = path->log2_size;
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
 * for the checker's random inputs. */
static double input_bytes(const eb_instance *inst, const eb_run_opts *o)
{
    int copies = !o->verify_only + (o->verify_only || o->check);
    return eb_budget_inputs(inst) * copies;
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

static void run_instance(runner *r, const char *file)
{
    const eb_run_opts *o = r->o;
    eb_instance *inst = NULL;
    eb_pathset *ps = NULL;
    eb_operands *ops = NULL;
    eb_checker *chk = NULL;
    eb_error err;
    eb_status st = eb_load_instance(file, &inst, &err);
    if (st == EB_ERR_UNSUPPORTED) {
        fprintf(stderr, "einsum-bench: skipped: %s\n", err.msg);
        return;
    }
    if (!st)
        st = eb_load_find_paths(inst, o->paths, &ps, &err);
    if (!st)
        st = check_strategies(inst, ps, o->strategies, &err);
    /* Inputs over the budget are not created: each measurement is then
     * refused by run_one with the numbers. */
    int fits = !st && input_bytes(inst, o) <= (double)o->max_memory_bytes;
    if (fits && !o->verify_only)
        st = eb_operands_create(inst, &o->fill, &ops, &err);
    if (fits && !st && (o->verify_only || o->check))
        st = eb_checker_create(inst, ps, o->check_seed, o->threads,
                               !o->no_fuse, &chk, &err);
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
        if (kind == EB_FILE_PATHS || kind == EB_FILE_OTHER)
            fprintf(stderr, "einsum-bench: note: skipping %s (%s)\n", file,
                    kind == EB_FILE_PATHS ? "a path file, not an instance"
                                          : "not an instance");
        else
            run_instance(r, file);
        free(list[k]);
    }
    free(list);
}

void eb_runner_run(const eb_run_opts *o, char *const *targets, int ntargets,
                   eb_reporter *reps, int nreps, eb_run_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    runner r = {o, reps, nreps, sum};
    for (int t = 0; t < ntargets && !eb_interrupt_pending(); t++) {
        struct stat sb;
        if (stat(targets[t], &sb) == 0 && S_ISDIR(sb.st_mode))
            run_dir(&r, targets[t]);
        else
            run_instance(&r, targets[t]);
    }
    sum->interrupted = eb_interrupt_pending();
}
