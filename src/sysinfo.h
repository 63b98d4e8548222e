/*
 * sysinfo: machine, build and BLAS metadata for the records and `info`.
 *
 * Collected once per process (eb_sysinfo_collect) into a plain struct of
 * fixed-size strings; reading it never fails (unknown values are "unknown").
 * Build facts come from the Makefile as -DEB_BUILD_CFLAGS and
 * -DEB_GIT_COMMIT on this module only.
 */
#ifndef EB_SYSINFO_H
#define EB_SYSINFO_H

#include <stdint.h>

#include "jsonw.h"

/* The tool's version (records, --version); the commit comes with it. */
#define EB_VERSION "0.9.0"

enum { EB_SYSINFO_STR = 256, EB_SYSINFO_FLAGS = 2048, EB_SYSINFO_ENVS = 16 };

typedef struct {
    char cpu_model[EB_SYSINFO_STR];     /* /proc/cpuinfo "model name" */
    char cpu_flags[EB_SYSINFO_FLAGS];   /* /proc/cpuinfo "flags" */
    int online_cpus;                    /* sysconf(_SC_NPROCESSORS_ONLN) */
    char hostname[EB_SYSINFO_STR];
    char kernel[EB_SYSINFO_STR];        /* uname -sr */
    char blas_config[EB_SYSINFO_STR];   /* openblas_get_config() */
    char blas_core[EB_SYSINFO_STR];     /* openblas_get_corename() */
    int blas_threads;                   /* openblas_get_num_threads() */
    int blas_parallel;                  /* 0 seq, 1 pthreads, 2 OpenMP */
    char compiler[EB_SYSINFO_STR];      /* __VERSION__ */
    char cflags[EB_SYSINFO_STR];        /* EB_BUILD_CFLAGS */
    char git_commit[64];                /* EB_GIT_COMMIT */
    char date[64];                      /* ISO 8601 UTC at collection */
    int avx2;                           /* CPU has AVX2 (engine kernels) */
    char thp[32];                       /* transparent huge pages: the
                                           kernel's mode (mem.h) */
    char governor[32];                  /* cpu0's scaling governor */
    double cpu_mhz;                     /* mean "cpu MHz" of the CPUs; 0
                                           when unknown */
    char caches[EB_SYSINFO_STR];        /* cpu0: "L1d 32K, L1i 32K, ..." */
    int64_t mem_total_kb, mem_avail_kb; /* /proc/meminfo; 0 if unknown */
    /* Thread- and BLAS-related environment variables, in a fixed list
     * (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, OPENBLAS_NUM_THREADS,
     * OMP_NUM_THREADS, GOTO_NUM_THREADS, MKL_NUM_THREADS, ...): name and
     * value, value NULL-equivalent "" with is_set 0 when unset. */
    int num_env;
    struct {
        char name[64];
        char value[EB_SYSINFO_STR];
        int is_set;
    } env[EB_SYSINFO_ENVS];
} eb_sysinfo;

void eb_sysinfo_collect(eb_sysinfo *si);

/* Set cpu_model and cpu_flags from a file in /proc/cpuinfo format (collect
 * reads /proc/cpuinfo; tests pass their own). Values are cleaned to one line
 * of valid UTF-8 and cut to fit, flags at a whole flag; "unknown" when the
 * file or the field is missing. */
void eb_sysinfo_read_cpuinfo(eb_sysinfo *si, const char *path);

/* Write the fields as members of the currently open JSON object of w
 * ("cpu_model", "cpu_flags", ..., and "env": {NAME: value-or-null}). */
void eb_sysinfo_json(const eb_sysinfo *si, eb_jw *w);

/* Human-readable multi-line description (for `einsum-bench info`). */
void eb_sysinfo_print(const eb_sysinfo *si, FILE *f);

#endif
