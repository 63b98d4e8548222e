/*
 * calibrate: the machine rates the roofline model divides by (DESIGN 6),
 * measured by the tool itself and cached per machine.
 *
 *   F   per dtype: the cblas_{d,s,z,c}gemm rate of C = A B at 1024^3,
 *       counted as 2 * 1024^3 flops per call whatever the dtype (the
 *       instances' flop convention: a complex GEMM's F is about a quarter
 *       of its real flop rate), OpenBLAS's pool as the process has it (the
 *       caller re-executes itself with OPENBLAS_NUM_THREADS = threads
 *       first). float64's is always measured; the others only when a run
 *       needs them (zgemm alone takes about a second), or all four by
 *       `einsum-bench calibrate`;
 *   BW  the stream bandwidth of c[i] = a[i] * b[i] over three 32 MiB arrays
 *       (bytes read plus written: 3 * 32 MiB per pass), split over
 *       `threads` engine threads.
 * Each is the best of a few timed runs after one warmup (STREAM's
 * convention: the rate the machine reaches), on buffers from mem (as the
 * engine and the bench's references allocate), filled before timing. A
 * run's time is its wall time, or the CPU time the work took when that
 * is shorter: for F the process's over the thread count (OpenBLAS's
 * threads), for BW the busiest engine thread's over the parts it ran
 * (eb_calib_parts_ns). On a machine that other processes load, the rates
 * stay those of the work while it runs. float64's F and BW take a few
 * hundred milliseconds.
 *
 * The cache: one small text file per key (CPU model, OpenBLAS config and
 * core, thread count) in $EB_CALIBRATION_DIR, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/einsum-bench/. A file whose key differs
 * from this machine's, or that cannot be read or parsed, is measured again
 * (with a note) and replaced atomically (write to a temporary, rename);
 * a valid one that lacks the F of a dtype the run needs gets that rate
 * measured and added (the others are kept).
 * Under Valgrind nothing is measured or written (its times are not the
 * machine's): a valid cached file is used, else there is no calibration.
 * An explicit file (--calibration FILE) is read as given, key or not: its
 * rates pin the model (for tests and cross-machine comparisons); a bad one,
 * or one without the F of a dtype the run needs, is an input error naming
 * the file and line (or field).
 *
 * File format, one "name value" per line (order free, '#' comments):
 *   einsum-bench-calibration 1
 *   cpu_model, blas_config, blas_core   strings (rest of the line)
 *   threads                             integer >= 1
 *   gflops, gbs                         positive finite numbers (gflops:
 *                                       float64's F)
 *   gflops_float32, gflops_complex128,  the other dtypes' F, each optional
 *   gflops_complex64
 *   date                                ISO 8601 UTC, informative
 */
#ifndef EB_CALIBRATE_H
#define EB_CALIBRATE_H

#include <stdint.h>

#include "jsonw.h"
#include "roofline.h"
#include "status.h"
#include "sysinfo.h"

enum { EB_CALIB_PATH = 4096 };

typedef struct {
    eb_rates rates;
    int threads;
    char cpu_model[EB_SYSINFO_STR];
    char blas_config[EB_SYSINFO_STR];
    char blas_core[EB_SYSINFO_STR];
    char date[64];
    char file[EB_CALIB_PATH];   /* read from / written to; "" if none */
    const char *source;         /* "measured", "cache" or "file" */
    int key_matches;            /* the file's key is this machine's */
} eb_calibration;

typedef struct {
    const char *file;   /* --calibration FILE, or NULL for the cache */
    int threads;        /* the key's thread count (and BW's threads) */
    int measure;        /* 1: measure now (every dtype), write to file or
                           the cache */
    unsigned dtypes;    /* bit 1u << dt: the dtypes whose F the run needs
                           (float64's is always included) */
} eb_calib_opts;

/* The bit of every dtype. */
#define EB_CALIB_ALL_DTYPES ((1u << EB_DTYPE_COUNT) - 1)

/* Measure BW and the F of every dtype in `dtypes` (bits as above) now with
 * `threads` threads; out->gflops of the others is 0. */
eb_status eb_calib_measure(int threads, unsigned dtypes, eb_rates *out,
                           eb_error *err);

/*
 * The calibration to use: the explicit file, else the cache if its key
 * matches, else a new measurement (cached when a cache folder can be
 * made). With o->measure: a new measurement, written to o->file or the
 * cache. Notes for the user (measuring, a bad cache file replaced, a key
 * that differs) go to `notes` (stderr in the tool), one line each.
 * Fails only for a bad explicit file, or when nothing can be measured
 * (under Valgrind, out of memory): then err says why.
 */
eb_status eb_calib_get(const eb_sysinfo *sys, const eb_calib_opts *o,
                       FILE *notes, eb_calibration *out, eb_error *err);

/* Read and validate a calibration file (any key). */
eb_status eb_calib_read(const char *file, eb_calibration *out,
                        eb_error *err);

/* The cache file of this machine's key: 0, or -1 when no cache folder is
 * known (no EB_CALIBRATION_DIR, XDG_CACHE_HOME or HOME). */
int eb_calib_cache_file(const eb_sysinfo *sys, int threads, char *buf,
                        size_t size);

/* The calibration as members of the open JSON object under `key`. */
void eb_calib_json(const eb_calibration *c, eb_jw *w, const char *key);

/* The time of one pass of a job's nparts parts: the largest sum of
 * part_ns over the parts one thread ran (part_thread[p]: which thread ran
 * part p), or wall_ns when that is shorter: the rate of the work while it
 * ran, on a machine whose other processes take the CPUs part of the time,
 * counting parts one thread ran one after another. */
int64_t eb_calib_parts_ns(int nparts, const int64_t *part_ns,
                          const uintptr_t *part_thread, int64_t wall_ns);

#endif
