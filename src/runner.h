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
    const eb_rates *rates;      /* the roofline's F (per dtype) and BW, or
                                   NULL */
    int64_t max_memory_bytes;   /* budget of one measurement's peak bytes */
    double timeout_s;           /* --timeout per measurement, 0: none */
    const char *filter;         /* --filter: POSIX ERE on names, or NULL */
    int has_dtype;              /* --dtype given: every instance runs in */
    eb_dtype dtype;             /* this dtype, not its file's */
    int list;                   /* --list */
    int total;                  /* measurements selected, for progress */
} eb_run_opts;

/* What a command line selects (eb_runner_select). */
typedef struct {
    int instances;      /* instances that pass --filter and load */
    int measurements;   /* their selected strategies x modes */
    int errors;         /* targets that do not load (counted quietly) */
    int skipped;        /* instances skipped (valid, but unsupported) */
    char skip_msg[EB_ERROR_MSG_BYTES]; /* why the first was skipped */
    unsigned dtypes;    /* bit 1u << dt of every dtype they run in */
} eb_selection;

typedef struct {
    int input_errors;   /* bad files, options that do not fit an instance */
    int failures;       /* measurements or checks that failed */
    int measured;       /* ok records */
    int unverified;     /* check results without an independent reference */
    int write_errors;   /* records a reporter could not write (it said why) */
    int completed;      /* measurements or checks that ran to the end */
    int interrupted;    /* the signal that stopped the run, or 0 */
} eb_run_summary;

/* The dtype an instance runs in: --dtype's, else its file's (inst->dt). */
void eb_runner_apply_dtype(const eb_run_opts *o, eb_instance *inst);

/* Expand targets and count what they select, quietly; with list, print
 * one row per instance and strategy to stdout instead (sizes of the path)
 * and report bad targets in sum like a run does. */
void eb_runner_select(const eb_run_opts *o, char *const *targets,
                      int ntargets, int list, eb_selection *sel,
                      eb_run_summary *sum);

/* Expand targets (files and folders) and run them, announcing each
 * measurement on stderr as "[i/N] instance strategy mode" (N: o->total). */
void eb_runner_run(const eb_run_opts *o, char *const *targets, int ntargets,
                   eb_reporter *reps, int nreps, eb_run_summary *sum);

#endif
