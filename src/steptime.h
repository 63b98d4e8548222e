/*
 * steptime: where the time of a run goes, step by step (`plan --time`).
 *
 * Runs one (instance, path, mode) the way a measurement does (inputs
 * filled once, one scope with the thread budget, one executor, warmups)
 * and then `samples` runs with the executor's step clock on: each step's
 * time per run, and each whole run's time. These runs are not
 * measurements: the clock reads between steps add a few microseconds per
 * run, so `run` stays the tool for the headline numbers; this says which
 * steps they are made of. A fused group's time counts at its consumer's
 * step; the steps fused into it show none.
 *
 * Ownership: the result owns its arrays (eb_step_times_free).
 */
#ifndef EB_STEPTIME_H
#define EB_STEPTIME_H

#include "exec.h"
#include "operands.h"

typedef struct {
    eb_mode mode;
    int threads, warmups, samples;
    eb_fill fill;
    const eb_fuse_opts *fuse;   /* trace fusion, NULL: none */
} eb_step_times_opts;

typedef struct {
    int nsteps;
    double *median_ms;   /* per step: median over the runs (sorted[n/2]) */
    double *share;       /* per step: median_ms / sum_ms */
    double sum_ms;       /* sum of the steps' median_ms */
    double run_median_ms; /* whole runs, same convention */
    int samples;
} eb_step_times;

eb_status eb_step_times_measure(const eb_instance *inst, const eb_path *path,
                                const eb_step_times_opts *o,
                                eb_step_times *out, eb_error *err);
void eb_step_times_free(eb_step_times *t); /* NULL is fine */

#endif
