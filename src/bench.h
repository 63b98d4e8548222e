/*
 * bench: the measurement loop of one executor inside one scope: warmups,
 * then samples, each a run + release bracketed by CLOCK_MONOTONIC, inside
 * the callgrind window (DESIGN 4.4, 4.5). Nothing in the loop allocates,
 * parses or prints; minor page faults are read (getrusage) just outside
 * each clock bracket. A SIGINT/SIGTERM (interrupt.h) or the deadline ends
 * the loop at the next boundary between runs; the result then holds the
 * samples completed so far (possibly none).
 *
 * Ownership: the result owns its arrays (eb_bench_result_free).
 */
#ifndef EB_BENCH_H
#define EB_BENCH_H

#include <stdint.h>

#include "exec.h"
#include "stats.h"

typedef struct {
    int warmups, samples;
    int per_sample_dumps;   /* --callgrind-per-sample */
    const char *label;      /* "<instance>/<strategy>/<mode>" */
    int64_t deadline_ns;    /* eb_now_ns() limit of the measurement, 0: none */
} eb_bench_opts;

/* Why a measurement ended before its last sample (checked between runs:
 * a run is never cut short). */
typedef enum { EB_BENCH_DONE, EB_BENCH_INTERRUPTED, EB_BENCH_TIMEOUT } eb_bench_stop;

typedef struct {
    int samples;
    int64_t *samples_ns;
    int64_t *minflt;            /* minor page faults per sample */
    eb_stats stats;
    eb_exec_counters per_sample; /* counters of one (the last) sample */
    const void *out;            /* output of the last sample (inst->dt) */
    eb_bench_stop stopped;      /* samples < opts.samples unless DONE */
} eb_bench_result;

eb_status eb_bench_run(const eb_executor *ex, const eb_bench_opts *o,
                       eb_bench_result *r, eb_error *err);
void eb_bench_result_free(eb_bench_result *r);

#endif
