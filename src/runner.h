/*
 * runner: the `run` and `check` commands' job over a list of instances:
 * load -> paths -> inputs -> for each strategy and mode: scope, executor,
 * measurement (or verification) -> records. One bad instance is reported
 * and skipped; the others still run.
 *
 * Ownership: the runner borrows its options and reporters.
 */
#ifndef EB_RUNNER_H
#define EB_RUNNER_H

#include "exec.h"
#include "operands.h"
#include "report.h"
#include "roofline.h"
#include "sysinfo.h"

typedef struct {
    int verify_only;            /* `check`: no timing */
    int modes[EB_MODE_COUNT];   /* which modes to run */
    const char *strategies;     /* "all" or "a,b" */
    const char *paths;          /* --paths, or NULL */
    int warmups, samples, threads;
    eb_fill fill;
    const char *fill_str;
    const char *save_dir;       /* --save-output, or NULL */
    int check;                  /* --check */
    uint64_t check_seed;
    int per_sample_dumps;
    int no_fuse;                /* --no-fuse: trace runs every step alone */
    const eb_rates *rates;      /* the roofline's F and BW, or NULL */
    int64_t max_memory_bytes;   /* budget of one measurement's peak bytes */
    double timeout_s;           /* --timeout per measurement, 0: none */
} eb_run_opts;

typedef struct {
    int input_errors;   /* bad files, options that do not fit an instance */
    int failures;       /* measurements or checks that failed */
    int measured;       /* ok records */
    int unverified;     /* check results without an independent reference */
    int write_errors;   /* records a reporter could not write (it said why) */
    int completed;      /* measurements or checks that ran to the end */
    int interrupted;    /* the signal that stopped the run, or 0 */
} eb_run_summary;

/* Expand targets (files and folders) and run them. */
void eb_runner_run(const eb_run_opts *o, char *const *targets, int ntargets,
                   eb_reporter *reps, int nreps, eb_run_summary *sum);

#endif
