/* steptime: per-step times of runs outside any measurement. */
#include "steptime.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scope.h"
#include "stats.h"

/* Warmups, then samples runs with the step clock: ns[s * samples + k] is
 * step s of run k, runs[k] the whole run k. */
static eb_status clocked_runs(const eb_executor *ex, int warmups, int samples,
                              int nsteps, int64_t *acc, int64_t *ns,
                              int64_t *runs, eb_error *err)
{
    for (int k = 0; k < warmups; k++) {
        const void *out;
        eb_exec_counters cnt = {0};
        eb_status st = ex->run(ex->ctx, &out, &cnt, err);
        if (st)
            return st;
        ex->release(ex->ctx);
    }
    for (int k = 0; k < samples; k++) {
        const void *out;
        eb_exec_counters cnt = {0};
        memset(acc, 0, (size_t)nsteps * sizeof *acc);
        ex->time_steps(ex->ctx, acc);
        int64_t t0 = eb_now_ns();
        eb_status st = ex->run(ex->ctx, &out, &cnt, err);
        runs[k] = eb_now_ns() - t0;
        ex->time_steps(ex->ctx, NULL);
        if (st)
            return st;
        ex->release(ex->ctx);
        for (int s = 0; s < nsteps; s++)
            ns[(int64_t)s * samples + k] = acc[s];
    }
    return EB_OK;
}

static eb_status summarize(const int64_t *ns, const int64_t *runs,
                           int nsteps, int samples, int64_t *scratch,
                           eb_step_times *out, eb_error *err)
{
    out->median_ms = calloc((size_t)nsteps, sizeof *out->median_ms);
    out->share = calloc((size_t)nsteps, sizeof *out->share);
    if (!out->median_ms || !out->share)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    out->nsteps = nsteps;
    out->samples = samples;
    eb_stats s;
    double sum = 0;
    for (int t = 0; t < nsteps; t++) {
        eb_stats_compute(ns + (int64_t)t * samples, samples, scratch, &s);
        out->median_ms[t] = s.median_ns / 1e6;
        sum += out->median_ms[t];
    }
    for (int t = 0; t < nsteps; t++)
        out->share[t] = sum > 0 ? out->median_ms[t] / sum : 0;
    out->sum_ms = sum;
    eb_stats_compute(runs, samples, scratch, &s);
    out->run_median_ms = s.median_ns / 1e6;
    return EB_OK;
}

eb_status eb_step_times_measure(const eb_instance *inst, const eb_path *path,
                                const eb_step_times_opts *o,
                                eb_step_times *out, eb_error *err)
{
    memset(out, 0, sizeof *out);
    int nsteps = path->num_steps ? path->num_steps : 1;
    int samples = o->samples < 1 ? 1 : o->samples;
    int64_t *acc = calloc((size_t)nsteps, sizeof *acc);
    int64_t *ns = calloc((size_t)nsteps * (size_t)samples, sizeof *ns);
    int64_t *runs = calloc((size_t)samples, sizeof *runs);
    int64_t *scratch = calloc((size_t)samples, sizeof *scratch);
    eb_operands *ops = NULL;
    eb_scope *scope = NULL;
    eb_status st = EB_OK;
    if (!acc || !ns || !runs || !scratch)
        st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    if (!st)
        st = eb_operands_create(inst, &o->fill, &ops, err);
    if (!st)
        st = eb_scope_enter(o->threads, &scope, err);
    eb_executor ex;
    if (!st) {
        st = eb_exec_create(o->mode, inst, path, ops->views,
                            eb_scope_pool(scope), eb_scope_team(scope),
                            o->fuse, &ex, err);
        if (!st) {
            st = clocked_runs(&ex, o->warmups, samples, nsteps, acc, ns, runs,
                              err);
            eb_exec_destroy(&ex);
        }
    }
    if (!st)
        st = summarize(ns, runs, nsteps, samples, scratch, out, err);
    eb_scope_leave(scope);
    eb_operands_destroy(ops);
    free(acc);
    free(ns);
    free(runs);
    free(scratch);
    if (st)
        eb_step_times_free(out);
    return st;
}

void eb_step_times_free(eb_step_times *t)
{
    if (!t)
        return;
    free(t->median_ms);
    free(t->share);
    t->median_ms = t->share = NULL;
    t->nsteps = 0;
}
