/* bench: warmups, timed samples, window, statistics. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "clock.h"
#include "interrupt.h"
#include "window.h"

static int64_t minflt_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

void eb_bench_result_free(eb_bench_result *r)
{
    free(r->samples_ns);
    free(r->minflt);
    r->samples_ns = r->minflt = NULL;
}

/* Between two runs: has a signal or the deadline asked to stop? */
static int stop_now(const eb_bench_opts *o, eb_bench_result *r)
{
    if (eb_interrupt_pending())
        r->stopped = EB_BENCH_INTERRUPTED;
    else if (o->deadline_ns && eb_now_ns() >= o->deadline_ns)
        r->stopped = EB_BENCH_TIMEOUT;
    return r->stopped != EB_BENCH_DONE;
}

eb_status eb_bench_run(const eb_executor *ex, const eb_bench_opts *o,
                       eb_bench_result *r, eb_error *err)
{
    memset(r, 0, sizeof *r);
    int n = o->samples;
    r->samples = n;
    r->samples_ns = malloc((size_t)n * sizeof(int64_t));
    r->minflt = malloc((size_t)n * sizeof(int64_t));
    int64_t *scratch = malloc((size_t)n * sizeof(int64_t));
    char label[512];
    snprintf(label, sizeof label, "%s/samples=%d", o->label, n);
    if (!r->samples_ns || !r->minflt || !scratch) {
        free(scratch);
        eb_bench_result_free(r);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    eb_status st = EB_OK;
    const void *out = NULL;
    for (int w = 0; w < o->warmups && !st && !stop_now(o, r); w++) {
        eb_exec_counters c = {0};
        st = ex->run(ex->ctx, &out, &c, err);
        ex->release(ex->ctx);
    }
    if (st) {
        free(scratch);
        eb_bench_result_free(r);
        return st;
    }
    /* Per-sample labels are formatted before the window opens, and the
     * clock and rusage calls are bound once, so that nothing but the
     * samples is counted (t_callgrind_window checks per-sample dumps add
     * up to the window). */
    char (*sample_labels)[600] = NULL;
    if (o->per_sample_dumps) {
        sample_labels = malloc((size_t)n * sizeof *sample_labels);
        if (!sample_labels) {
            free(scratch);
            eb_bench_result_free(r);
            return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        }
        for (int k = 0; k < n; k++)
            snprintf(sample_labels[k], sizeof sample_labels[k],
                     "%s/sample=%dof%d", o->label, k + 1, n);
    }
    (void)eb_now_ns();
    (void)minflt_now();
    eb_window_begin(label);
    int done = 0;
    for (int k = 0; k < n && !r->stopped && !stop_now(o, r); k++) {
        eb_exec_counters c = {0};
        int64_t f0 = minflt_now();
        int64_t t0 = eb_now_ns();
        st = ex->run(ex->ctx, &out, &c, err);
        ex->release(ex->ctx);
        int64_t t1 = eb_now_ns();
        r->minflt[k] = minflt_now() - f0;
        r->samples_ns[k] = t1 - t0;
        r->per_sample = c;
        if (o->per_sample_dumps)
            eb_window_dump(sample_labels[k]);
        if (st)
            break;
        done++;
    }
    eb_window_end(label, !o->per_sample_dumps);
    free(sample_labels);
    if (st) {
        free(scratch);
        eb_bench_result_free(r);
        return st;
    }
    r->samples = done;
    if (done > 0)
        eb_stats_compute(r->samples_ns, done, scratch, &r->stats);
    free(scratch);
    r->out = done > 0 ? out : NULL;
    return EB_OK;
}
