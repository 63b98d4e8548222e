/*
 * report: one reporter per output format behind one interface
 * (begin -> measurement* -> finish), in the manner of hyperfine and Google
 * Benchmark: the human table (stdout) and JSON-lines records (DESIGN 5.2).
 *
 * Records are borrowed for the duration of the call; reporters copy what
 * they keep. A JSON line is built whole in memory and written with one
 * call, so a failure never leaves half a record.
 */
#ifndef EB_REPORT_H
#define EB_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "calibrate.h"
#include "noise.h"
#include "stats.h"
#include "status.h"
#include "sysinfo.h"

/* One option of the command line as the run used it: value NULL when
 * neither given nor defaulted; a flag is on when value is not NULL. */
typedef struct {
    const char *name;           /* without the leading "--" */
    const char *value;
    int is_flag;
} eb_opt_value;

typedef struct {
    const eb_sysinfo *sys;
    const char *command;        /* "run" or "check" */
    const char *modes;          /* "eager", "trace" or "both" */
    const char *strategies;     /* as given */
    const char *fill;           /* as given */
    int threads;                /* requested budget */
    int warmups, samples;
    int reexec;                 /* 1 if the process re-executed itself */
    const eb_calibration *calibration; /* the roofline's F and BW, or NULL */
    int argc;                   /* the command line as given */
    char *const *argv;
    int num_options;            /* every option of the command */
    const eb_opt_value *options;
} eb_run_info;

typedef struct {
    const char *instance;
    const char *instance_file;
    const char *dtype;          /* what was measured (--dtype or the file's) */
    const char *file_dtype;     /* what the instance file says */
    const char *strategy;
    const char *mode;
    const char *status;         /* "ok", "skipped", "error" */
    const char *error;          /* NULL when ok */
    const char *path_source;    /* file of the path, NULL if none */
    const char *path_digest;    /* NULL if none */
    const char *reused_from;    /* strategy measured instead, or NULL */
    const char *instance_sha256; /* of the instance file, or NULL */
    const char *paths_sha256;   /* of the file the path came from, or NULL */
    int num_tensors;
    int threads, openblas_threads, warmups, samples;
    const int64_t *samples_ns;  /* samples entries, or NULL */
    const int64_t *minflt;      /* per sample, or NULL */
    int has_stats;
    eb_stats stats;
    double compile_ms;          /* trace compile; 0 for eager */
    double flops;               /* recomputed, opt_einsum convention */
    double log10_flops, log2_size;          /* recomputed */
    double stored_log10_flops, stored_log2_size; /* NaN if absent */
    int64_t peak_bytes;         /* inputs + pool/arena at the end */
    int64_t gemm_calls, blas_calls, permuted_elems; /* per sample */
    int fused_groups;           /* trace: groups run block by block */
    int engine_threads;         /* threads the runs used (exec.h) */
    int lanes_at;               /* trace: first step after the lanes, or -1 */
    int has_roofline;           /* the roofline fields are set */
    double roofline_ms;         /* sum of the step bounds (roofline.h) */
    double roofline_gflops, roofline_gbs; /* the F and BW used */
    int has_noise;              /* noise and marks are set */
    eb_noise noise;             /* during the samples */
    int num_marks;              /* why the times are suspect (noise.h) */
    const char *marks[EB_NOISE_MAX_MARKS];
    int has_check;
    double max_rel_err;
    const char *check_ref;      /* what the check compared against */
    const char *check_status;   /* "passed", "failed", "unverified" */
} eb_record;

typedef struct {
    void *ctx;
    int (*begin)(void *ctx, const eb_run_info *info);
    int (*measurement)(void *ctx, const eb_record *rec);
    int (*finish)(void *ctx);
    void (*destroy)(void *ctx);
} eb_reporter;

/* Human table, printed at finish, one section per strategy and mode. */
eb_status eb_report_table(FILE *f, eb_reporter *out, eb_error *err);

/* JSON lines to file ("-" for stdout). */
eb_status eb_report_jsonl(const char *file, eb_reporter *out, eb_error *err);

#endif
