/*
 * refs: the raw reference programs of `make bench` (DESIGN 6).
 *
 *   refs dgemm   [--shape M,N,K]    one cblas_dgemm, C = A B   (1024,1024,1024)
 *   refs gemm    [--shape M,N,K]    one GEMM of --dtype: cblas_{d,s,z,c}gemm
 *   refs batched [--shape B,M,N,K]  a loop of B cblas_dgemm on
 *                                   contiguous slices           (32,128,128,128)
 *   refs mul     [--shape R,C]      a plain C loop c[i] = a[i] * b[i]
 *                                   (float64, or float32 with --dtype)
 *                                                               (2048,2048)
 *   common: [--warmup N] [--samples N] [--dtype T]              (3, 15, float64)
 *
 * Each program measures what einsum-bench measures for the matching
 * instance (bin_matmul_1024, bin_batched_matmul_b32_m128_n128_k128,
 * bin_elementwise_mul_2048x2048; with --dtype, what `einsum-bench run
 * --dtype T` measures on them), with nothing of the engine around it:
 * row-major buffers of the dtype (complex interleaved, as BLAS and the
 * engine store it), all allocated and filled (so every page is faulted in)
 * before the first warmup; then warmups; then the sampled runs,
 * each timed with CLOCK_MONOTONIC exactly around the work, with the same
 * per-sample bookkeeping (getrusage minor faults) and the same callgrind
 * client requests as the tool's bench module, so that a window's
 * instructions per sample compare exactly with the tool's. Statistics follow
 * the tool: median = sorted[n/2], IQR = sorted[3n/4] - sorted[n/4].
 *
 * A GEMM's flops are 2 * M * N * K in every dtype (the instances'
 * convention), so "gflops" of zgemm is a quarter of its real flop rate. The
 * label and "ref" name the routine: dgemm, sgemm, zgemm, cgemm; mul, or
 * mul_float32.
 *
 * Output: one JSON line on stdout ("type": "reference"). Thread count is
 * whatever OpenBLAS took from the environment (OPENBLAS_NUM_THREADS); it is
 * recorded, never changed here.
 *
 * Buffers hold zeros, like the tool's default `--fill zeros`: written element
 * by element into memory from the engine's own allocator, src/mem.c (which
 * the compiler cannot fold into calloc), so every page is faulted in; "prefault_minflt" in the output is
 * the minor faults taken by allocation and fill, as evidence. Zeros matter
 * under Valgrind, whose FMA emulation is much slower on nonzero operands
 * (the instruction counts are the same either way).
 *
 * Build (scripts/bench does it, into build/bench/refs), with the project's
 * optimisation flags and no -march, so the C loop is what -O2 makes of it:
 *   cc -std=c11 -O2 -g -Isrc bench/refs.c src/mem.c -o build/bench/refs \
 *      $(pkg-config --cflags --libs openblas)
 */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include "dtype.h"
#include "mem.h"

enum { REF_DGEMM, REF_BATCHED, REF_MUL };

typedef struct {
    int kind;
    char name[32];  /* the routine: dgemm, zgemm, ..., mul, mul_float32 */
    long dim[4]; /* dgemm: M N K; batched: B M N K; mul: R C */
    int ndim;
    int warmups, samples;
    eb_dtype dt;
    void *a, *b, *c;
} ref;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t minflt_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
    return (p > q) - (p < q);
}

/* The reference loop: plain C, left to what -O2 makes of it. */
static void mul_loop(size_t n, const double *restrict a,
                     const double *restrict b, double *restrict c)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] * b[i];
}

static void mul_loop_f32(size_t n, const float *restrict a,
                         const float *restrict b, float *restrict c)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] * b[i];
}

/* C = A B, M x K times K x N, in r->dt. */
static void gemm(const ref *r, int m, int n, int k)
{
    static const double one[2] = {1, 0}, zero[2] = {0, 0};
    static const float onef[2] = {1, 0}, zerof[2] = {0, 0};
    const CBLAS_ORDER o = CblasRowMajor;
    const CBLAS_TRANSPOSE t = CblasNoTrans;
    switch (r->dt) {
    case EB_F32:
        cblas_sgemm(o, t, t, m, n, k, 1.0f, r->a, k, r->b, n, 0.0f, r->c, n);
        break;
    case EB_C128:
        cblas_zgemm(o, t, t, m, n, k, one, r->a, k, r->b, n, zero, r->c, n);
        break;
    case EB_C64:
        cblas_cgemm(o, t, t, m, n, k, onef, r->a, k, r->b, n, zerof, r->c, n);
        break;
    default:
        cblas_dgemm(o, t, t, m, n, k, 1.0, r->a, k, r->b, n, 0.0, r->c, n);
    }
}

static void work(const ref *r)
{
    const long *d = r->dim;
    switch (r->kind) {
    case REF_DGEMM:
        gemm(r, (int)d[0], (int)d[1], (int)d[2]);
        break;
    case REF_BATCHED:
        for (long s = 0; s < d[0]; s++)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d[1],
                        (int)d[2], (int)d[3], 1.0,
                        (const double *)r->a + s * d[1] * d[3], (int)d[3],
                        (const double *)r->b + s * d[3] * d[2], (int)d[2], 0.0,
                        (double *)r->c + s * d[1] * d[2], (int)d[2]);
        break;
    default:
        if (r->dt == EB_F32)
            mul_loop_f32((size_t)(d[0] * d[1]), r->a, r->b, r->c);
        else
            mul_loop((size_t)(d[0] * d[1]), r->a, r->b, r->c);
    }
}

/* Element counts of a, b, c; flops of one run. */
static void sizes(const ref *r, size_t n[3], double *flops)
{
    const long *d = r->dim;
    if (r->kind == REF_DGEMM) {
        n[0] = (size_t)(d[0] * d[2]);
        n[1] = (size_t)(d[2] * d[1]);
        n[2] = (size_t)(d[0] * d[1]);
        *flops = 2.0 * d[0] * d[1] * d[2];
    } else if (r->kind == REF_BATCHED) {
        n[0] = (size_t)(d[0] * d[1] * d[3]);
        n[1] = (size_t)(d[0] * d[3] * d[2]);
        n[2] = (size_t)(d[0] * d[1] * d[2]);
        *flops = 2.0 * d[0] * d[1] * d[2] * d[3];
    } else {
        n[0] = n[1] = n[2] = (size_t)(d[0] * d[1]);
        *flops = (double)(d[0] * d[1]);
    }
}

/* n elements of dt, allocated as the engine allocates (src/mem.c: 64-byte
 * aligned, huge-page advice from 4 MiB), so that a ratio measures the
 * engine, not how its memory was mapped; written float by float (every
 * dtype is a whole number of floats): every page is faulted. */
static void *alloc_filled(size_t n, eb_dtype dt)
{
    size_t floats = n * eb_dtype_size(dt) / sizeof(float);
    float *p = eb_mem_alloc(floats * sizeof(float));
    if (p)
        for (size_t i = 0; i < floats; i++)
            p[i] = 0.0f;
    return p;
}

static int usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "refs: %s\n", msg);
    fputs("usage: refs dgemm|gemm|batched|mul [--shape D,D,...] [--warmup N] "
          "[--samples N] [--dtype T]\n"
          "  dgemm   --shape M,N,K    (default 1024,1024,1024)\n"
          "  gemm    --shape M,N,K    the GEMM of --dtype (float64 float32 "
          "complex128 complex64)\n"
          "  batched --shape B,M,N,K  (default 32,128,128,128)\n"
          "  mul     --shape R,C      (default 2048,2048; --dtype float64 "
          "or float32)\n",
          msg ? stderr : stdout);
    return msg ? 2 : 0;
}

static int parse_shape(ref *r, const char *s)
{
    int k = 0;
    char *end;
    while (k < 4) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > (1L << 20))
            return -1;
        r->dim[k++] = v;
        if (*end != ',')
            break;
        s = end + 1;
    }
    return (*end == '\0' && k == r->ndim) ? 0 : -1;
}

/* 0: run; -1: help was printed; 2: usage error (printed). */
static int parse_args(ref *r, int argc, char **argv)
{
    static const struct { const char *name; int kind, ndim; long dim[4]; } kinds[] = {
        {"dgemm", REF_DGEMM, 3, {1024, 1024, 1024, 0}},
        {"gemm", REF_DGEMM, 3, {1024, 1024, 1024, 0}},
        {"batched", REF_BATCHED, 4, {32, 128, 128, 128}},
        {"mul", REF_MUL, 2, {2048, 2048, 0, 0}},
    };
    int found = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (argc > 1 && strcmp(argv[1], kinds[i].name) == 0) {
            r->kind = kinds[i].kind;
            snprintf(r->name, sizeof r->name, "%s", kinds[i].name);
            r->ndim = kinds[i].ndim;
            memcpy(r->dim, kinds[i].dim, sizeof r->dim);
            found = 1;
        }
    if (!found && argc > 1 && strcmp(argv[1], "--help") == 0)
        return usage(NULL) - 1;
    if (!found)
        return usage(argc > 1 ? "unknown reference" : "which reference?");
    r->warmups = 3;
    r->samples = 15;
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(argv[i], "--help") == 0)
            return usage(NULL) - 1;
        if (!v)
            return usage("option needs a value");
        if (strcmp(argv[i], "--shape") == 0) {
            if (parse_shape(r, v))
                return usage("bad --shape");
        } else if (strcmp(argv[i], "--warmup") == 0) {
            r->warmups = (int)strtol(v, &end, 10);
            if (*end || r->warmups < 0)
                return usage("bad --warmup (N >= 0)");
        } else if (strcmp(argv[i], "--dtype") == 0) {
            if (eb_dtype_parse(v, &r->dt) != 0)
                return usage("bad --dtype (float64, float32, complex128, "
                             "complex64)");
        } else if (strcmp(argv[i], "--samples") == 0) {
            r->samples = (int)strtol(v, &end, 10);
            if (*end || r->samples < 1 || r->samples > 100000)
                return usage("bad --samples (N >= 1)");
        } else {
            return usage("unknown option");
        }
        i++;
    }
    /* dgemm and batched are float64 by name; mul has real dtypes only. */
    static const char gemm_letter[EB_DTYPE_COUNT] = {'d', 's', 'z', 'c'};
    if (r->dt != EB_F64 && (!strcmp(r->name, "dgemm") ||
                            r->kind == REF_BATCHED))
        return usage("--dtype: dgemm and batched are float64 (use gemm)");
    if (r->kind == REF_MUL && eb_dtype_is_complex(r->dt))
        return usage("--dtype: mul is float64 or float32");
    if (r->kind == REF_DGEMM)
        snprintf(r->name, sizeof r->name, "%cgemm", gemm_letter[r->dt]);
    else if (r->kind == REF_MUL && r->dt != EB_F64)
        snprintf(r->name, sizeof r->name, "mul_%s", eb_dtype_name(r->dt));
    return 0;
}

static void print_i64s(const char *key, const int64_t *v, int n)
{
    printf(", \"%s\": [", key);
    for (int k = 0; k < n; k++)
        printf("%s%lld", k ? ", " : "", (long long)v[k]);
    printf("]");
}

static void report(const ref *r, const char *label, const int64_t *ns,
                   const int64_t *flt, int64_t *scratch, double flops,
                   int64_t prefault)
{
    int n = r->samples;
    memcpy(scratch, ns, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_i64);
    double med = (double)scratch[n / 2];
    double iqr = (double)(scratch[3 * n / 4] - scratch[n / 4]);
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += (double)ns[k];
    size_t nel[3];
    double fl;
    sizes(r, nel, &fl);
    /* reads the result, so no store to c is dead (as floats: every dtype
     * is a whole number of them) */
    double check = 0;
    size_t floats = nel[2] * eb_dtype_size(r->dt) / sizeof(float);
    for (size_t i = 0; i < floats; i += 4099)
        check += ((const float *)r->c)[i];
    printf("{\"type\": \"reference\", \"ref\": \"%s\", \"label\": \"%s\", "
           "\"shape\": [", r->name, label);
    for (int k = 0; k < r->ndim; k++)
        printf("%s%ld", k ? ", " : "", r->dim[k]);
    printf("], \"dtype\": \"%s\", \"warmups\": %d, \"samples\": %d",
           eb_dtype_name(r->dt), r->warmups, n);
    print_i64s("samples_ns", ns, n);
    printf(", \"median_ms\": %.6f, \"iqr_ms\": %.6f, \"min_ms\": %.6f, "
           "\"max_ms\": %.6f, \"mean_ms\": %.6f",
           med / 1e6, iqr / 1e6, (double)scratch[0] / 1e6,
           (double)scratch[n - 1] / 1e6, sum / n / 1e6);
    print_i64s("minflt", flt, n);
    memcpy(scratch, flt, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_i64);
    printf(", \"minflt_median\": %lld, \"prefault_minflt\": %lld, "
           "\"flops\": %.0f, \"gflops\": %.4f, "
           "\"bytes\": %zu, \"openblas_threads\": %d, \"openblas_core\": "
           "\"%s\", \"openblas_config\": \"%s\", \"checksum\": %.17g}\n",
           (long long)scratch[n / 2], (long long)prefault, flops, flops / med,
           (nel[0] + nel[1] + nel[2]) * eb_dtype_size(r->dt),
           openblas_get_num_threads(), openblas_get_corename(),
           openblas_get_config(), check);
}

int main(int argc, char **argv)
{
    ref r = {0};
    int rc = parse_args(&r, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    size_t nel[3];
    double flops;
    sizes(&r, nel, &flops);
    int64_t flt0 = minflt_now();
    r.a = alloc_filled(nel[0], r.dt);
    r.b = alloc_filled(nel[1], r.dt);
    r.c = alloc_filled(nel[2], r.dt);
    int64_t prefault = minflt_now() - flt0;
    int n = r.samples;
    int64_t *ns = malloc((size_t)n * sizeof *ns);
    int64_t *flt = malloc((size_t)n * sizeof *flt);
    int64_t *scratch = malloc((size_t)n * sizeof *scratch);
    if (!r.a || !r.b || !r.c || !ns || !flt || !scratch) {
        fprintf(stderr, "refs: out of memory\n");
        return 1;
    }
    char label[256];
    int len = snprintf(label, sizeof label, "ref/%s/", r.name);
    for (int k = 0; k < r.ndim; k++)
        len += snprintf(label + len, sizeof label - (size_t)len, "%s%ld",
                        k ? "x" : "", r.dim[k]);
    snprintf(label + len, sizeof label - (size_t)len, "/samples=%d", n);

    /* First calls fault in the clock's and getrusage's pages outside. */
    (void)now_ns();
    (void)minflt_now();
    for (int w = 0; w < r.warmups; w++)
        work(&r);
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    for (int k = 0; k < n; k++) {
        int64_t f0 = minflt_now();
        int64_t t0 = now_ns();
        work(&r);
        int64_t t1 = now_ns();
        flt[k] = minflt_now() - f0;
        ns[k] = t1 - t0;
    }
    CALLGRIND_DUMP_STATS_AT(label);
    CALLGRIND_STOP_INSTRUMENTATION;

    report(&r, label, ns, flt, scratch, flops, prefault);
    eb_mem_free(r.a);
    eb_mem_free(r.b);
    eb_mem_free(r.c);
    free(ns);
    free(flt);
    free(scratch);
    return 0;
}
