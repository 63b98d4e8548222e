/* contract_exec: execution of a planned contraction step (contract.h):
 * operand preparation, the main kernel per batch element or as one batched
 * call, the output permutation, and their split over the engine team.
 *
 * Buffers are untyped (the plan's dtype); offsets are in elements and
 * become byte offsets through at(). The own GEMM and dot kernels are
 * float64 code, reached only by float64 plans (the planner picks BLAS
 * kinds for the other dtypes). */
#include "contract.h"

#include <stddef.h>
#include <string.h>

#include "blas.h"
#include "gemm512.h"
#include "team.h"
#include "vec512.h"
#include "vecstream.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Element `off` of a buffer of elements of esz bytes. */
static inline void *at(const void *base, int64_t off, size_t esz)
{
    return (char *)(uintptr_t)base + off * (int64_t)esz;
}

/* GEMM with general strides mapped onto row-major CBLAS: the plan's
 * strides, with M and N given (a part of the plan's C). */
static void gemm_strided(const eb_plan *p, int64_t M, int64_t N,
                         const void *a, const void *b, void *c)
{
    if (p->scn == 1) {
        eb_blas_gemm_dt(p->dt, p->sak != 1, p->sbn != 1, M, N, p->K, a,
                        p->sak == 1 ? p->sam : p->sak, b,
                        p->sbn == 1 ? p->sbk : p->sbn, c, p->scm);
    } else {
        /* C is column-major: compute C^T[N,M] = B^T A^T. */
        eb_blas_gemm_dt(p->dt, p->sbk != 1, p->sam != 1, N, M, p->K, b,
                        p->sbk == 1 ? p->sbn : p->sbk, a,
                        p->sam == 1 ? p->sak : p->sam, c, p->scn);
    }
}

/* GEMV over `len` elements of y (the plan's M when N is 1, else its N). */
static void gemv_len(const eb_plan *p, int64_t len, const void *a,
                     const void *b, void *c)
{
    if (p->N == 1) {
        /* y[M] = A[M,K] x[K] */
        int trans = p->sak != 1;
        eb_blas_gemv(p->dt, trans, len, p->K, a, trans ? p->sak : p->sam, b,
                     p->sbk, c, p->scm);
    } else {
        /* y[N] = B[K,N]^T x[K] */
        int trans = p->sbn == 1;
        eb_blas_gemv(p->dt, trans, len, p->K, b, trans ? p->sbk : p->sbn, a,
                     p->sak, c, p->scn);
    }
}

static void gemv_strided(const eb_plan *p, const void *a, const void *b,
                         void *c)
{
    gemv_len(p, p->N == 1 ? p->M : p->N, a, b, c);
}

/* The own GEMM kernel (float64) on columns or rows of the plan's C (M, N
 * given). */
static void small_gemm(const eb_plan *p, int64_t M, int64_t N, const void *a,
                       const void *b, void *c)
{
    eb_gemm_k k = {p->K1, p->sak1, p->sak, p->sbk1, p->sbk};
    eb_kern_small_gemm(M, N, p->K / p->K1, a, p->sam, b, p->sbn, &k, c, p->scm,
                    p->scn);
}

/* One batch element of the main kernel. cnt may be NULL (a part of a
 * split run: its caller counts the BLAS calls). Inlined into the loop over
 * batch elements, as before dtypes (a call per element showed in the
 * callgrind window of the lm instance: +0.08% instructions). */
__attribute__((always_inline)) static inline void
kernel_one(const eb_plan *p, const void *a, const void *b, void *c,
           eb_exec_counters *cnt)
{
    switch (p->kind) {
    case EB_KIND_DOT:
        if (p->dt == EB_F64) {
            *(double *)c = eb_kern_dot(p->K, a, p->sak, b, p->sbk);
        } else {
            eb_blas_dot(p->dt, p->K, a, p->sak, b, p->sbk, c);
            if (cnt)
                cnt->blas_calls++;
        }
        break;
    case EB_KIND_SMALL_GEMM:
        small_gemm(p, p->M, p->N, a, b, c);
        break;
    case EB_KIND_GEMV:
        gemv_strided(p, a, b, c);
        cnt->blas_calls++;
        break;
    case EB_KIND_GEMM:
        gemm_strided(p, p->M, p->N, a, b, c);
        cnt->blas_calls++;
        cnt->gemm_calls++;
        break;
    default:
        break;
    }
}

/* Offsets of flat index i over the first nd batch dims (row-major). */
static void batch_offsets(const eb_plan *p, int nd, int64_t i, int64_t *idx,
                          int64_t *off)
{
    off[0] = off[1] = off[2] = 0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = i % p->bshape[d];
        i /= p->bshape[d];
        for (int s = 0; s < 3; s++)
            off[s] += idx[d] * p->bstride[s][d];
    }
}

static void batch_next(const eb_plan *p, int nd, int64_t *idx, int64_t *off)
{
    for (int d = nd - 1; d >= 0; d--) {
        for (int s = 0; s < 3; s++)
            off[s] += p->bstride[s][d];
        if (++idx[d] < p->bshape[d])
            return;
        for (int s = 0; s < 3; s++)
            off[s] -= p->bstride[s][d] * p->bshape[d];
        idx[d] = 0;
    }
}

/* Batch elements [lo, hi), elements of esz bytes (a constant where it is
 * inlined for float64: the same code as typed pointers). */
__attribute__((always_inline)) static inline void
run_rows_esz(const eb_plan *p, const void *a, const void *b, void *c,
             int64_t lo, int64_t hi, eb_exec_counters *cnt, size_t esz)
{
    int64_t idx[EB_MAX_RANK], off[3];
    batch_offsets(p, p->nb, lo, idx, off);
    if (p->kind == EB_KIND_SMALL_GEMM && p->nb > 0) {
        /* The own kernel takes each run along the innermost batch dim in
         * one call (eb_kern_small_gemm_batch). */
        int d = p->nb - 1;
        eb_gemm_k k = {p->K1, p->sak1, p->sak, p->sbk1, p->sbk};
        for (int64_t i = lo; i < hi;) {
            int64_t run = p->bshape[d] - idx[d];
            run = run < hi - i ? run : hi - i;
            eb_kern_small_gemm_batch(
                run, p->M, p->N, p->K / p->K1, at(a, off[0], esz), p->sam,
                p->bstride[0][d], at(b, off[1], esz), p->sbn,
                p->bstride[1][d], &k, at(c, off[2], esz), p->scm, p->scn,
                p->bstride[2][d]);
            i += run;
            if (i < hi)
                batch_offsets(p, p->nb, i, idx, off);
        }
        return;
    }
    for (int64_t i = lo; i < hi; i++) {
        kernel_one(p, at(a, off[0], esz), at(b, off[1], esz),
                   at(c, off[2], esz), cnt);
        batch_next(p, p->nb, idx, off);
    }
}

static void run_rows(const eb_plan *p, const void *a, const void *b, void *c,
                     int64_t lo, int64_t hi, eb_exec_counters *cnt)
{
    if (p->dt == EB_F64)
        run_rows_esz(p, a, b, c, lo, hi, cnt, sizeof(double));
    else
        run_rows_esz(p, a, b, c, lo, hi, cnt, eb_dtype_size(p->dt));
}

static int64_t row_count(const eb_plan *p)
{
    int64_t n = 1;
    for (int d = 0; d < p->nb; d++)
        n *= p->bshape[d];
    return n;
}

/* Work below this many multiply-adds or elements stays on one thread: a
 * wake-up of the team costs microseconds. */
#define PARALLEL_MIN_WORK (1 << 16)

/* Products below this many multiply-adds (about 13 us on one thread at
 * 20 G multiply-adds/s) are offered only to workers still spinning from
 * the previous job. Waking a sleeping one costs the caller a system call
 * (an empty job after 200 us idle: 3.3 us median, team.c) and the worker
 * comes 10-120 us later (median 24 us): too late to help such a product,
 * but it then spins for 50 us and takes its share of the steps that
 * follow (166 of str_mps's 198 products have 2^18 to 2^20 multiply-adds:
 * with 2^20 here they ran on one thread once the worker slept). */
#define WAKE_MIN_WORK (1 << 18)

/* Runs a product's job of nparts parts over the team (see WAKE_MIN_WORK). */
static void team_product(eb_team *team, int nparts, eb_team_fn fn, void *j,
                         double work)
{
    if (work >= WAKE_MIN_WORK)
        eb_team_run_parts(team, nparts, fn, j);
    else
        eb_team_run_awake(team, nparts, fn, j);
}

typedef struct {
    const eb_plan *p;
    const void *a, *b;
    void *c;
    const eb_xform *x;
    const void *in;
    void *out;
} job;

static void rows_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    const eb_plan *p = j->p;
    long long lo, hi;
    eb_team_split(row_count(p), part, nparts, &lo, &hi);
    eb_exec_counters unused = {0, 0, 0};
    run_rows(p, j->a, j->b, j->c, lo, hi, &unused);
}

/* Part `part` of nparts of C's rows (split_m) or columns, cut in
 * multiples of unit: [*lo, *hi), empty when *lo >= *hi. */
static void side_part(const eb_plan *p, int split_m, int64_t unit, int part,
                      int nparts, int64_t *lo, int64_t *hi)
{
    int64_t len = split_m ? p->M : p->N;
    long long l, h;
    eb_team_split((len + unit - 1) / unit, part, nparts, &l, &h);
    *lo = l * unit;
    *hi = h * unit < len ? h * unit : len;
}

/* side_part of C's longer side; returns 1 for rows (M the longer). */
static int longer_side_part(const eb_plan *p, int64_t unit, int part,
                            int nparts, int64_t *lo, int64_t *hi)
{
    int split_m = p->M >= p->N;
    side_part(p, split_m, unit, part, nparts, lo, hi);
    return split_m;
}

/* Own GEMMs split along their longer side of C, in multiples of 12 (the
 * kernel's column chunk and a multiple of its 4-row block): the same
 * slice of every batch element (fewer batch elements than threads). */
static void gemm_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    const eb_plan *p = j->p;
    int64_t lo, hi;
    int split_m = longer_side_part(p, 12, part, nparts, &lo, &hi);
    if (lo >= hi)
        return;
    const size_t esz = sizeof(double); /* the own kernel's dtype */
    int64_t rows = row_count(p), idx[EB_MAX_RANK], off[3];
    batch_offsets(p, p->nb, 0, idx, off);
    for (int64_t i = 0; i < rows; i++) {
        const void *a = at(j->a, off[0], esz), *b = at(j->b, off[1], esz);
        void *c = at(j->c, off[2], esz);
        if (split_m)
            small_gemm(p, hi - lo, p->N, at(a, lo * p->sam, esz), b,
                       at(c, lo * p->scm, esz));
        else
            small_gemm(p, p->M, hi - lo, a, at(b, lo * p->sbn, esz),
                       at(c, lo * p->scn, esz));
        batch_next(p, p->nb, idx, off);
    }
}

/*
 * A small C with a long K (str_mps's 19 x 19 x 1748): C's sides hold too
 * few blocks of 12 to share evenly (19 splits 12 / 7), so the team splits
 * K instead: part 0 writes C, part k > 0 its own partial C (compact, in
 * the job on the caller's stack), and the caller adds the partials to C
 * after the job. The outer rows of a two-level K are split when there are
 * enough of them, else the inner run. For C of at most KSPLIT_MAX_C
 * elements, up to KSPLIT_PARTS parts of at least KSPLIT_MIN_K each. The
 * sums are then taken in another order than on one thread (a different
 * rounding, fixed for a given team size).
 */
enum { KSPLIT_MAX_C = 32 * 32, KSPLIT_PARTS = 4, KSPLIT_MIN_K = 64 };

typedef struct {
    const eb_plan *p;
    const double *a, *b;
    double *c;
    double part_c[KSPLIT_PARTS - 1][KSPLIT_MAX_C];
} ksplit_job;

static void ksplit_part(void *arg, int part, int nparts)
{
    ksplit_job *j = arg;
    const eb_plan *p = j->p;
    eb_gemm_k k = {p->K1, p->sak1, p->sak, p->sbk1, p->sbk};
    int64_t kin = p->K / p->K1;
    int outer = p->K1 >= nparts;
    long long lo, hi;
    eb_team_split(outer ? p->K1 : kin, part, nparts, &lo, &hi);
    const double *a = j->a, *b = j->b;
    if (outer) {
        k.K1 = hi - lo;
        a += lo * p->sak1;
        b += lo * p->sbk1;
    } else {
        kin = hi - lo;
        a += lo * p->sak;
        b += lo * p->sbk;
    }
    if (part == 0)
        eb_kern_small_gemm(p->M, p->N, kin, a, p->sam, b, p->sbn, &k, j->c,
                           p->scm, p->scn);
    else
        eb_kern_small_gemm(p->M, p->N, kin, a, p->sam, b, p->sbn, &k,
                           j->part_c[part - 1], p->N, 1);
}

static int ksplit_parts(const eb_plan *p, int n)
{
    int parts = n < KSPLIT_PARTS ? n : KSPLIT_PARTS;
    if (p->kind != EB_KIND_SMALL_GEMM || p->M * p->N > KSPLIT_MAX_C ||
        p->K < (int64_t)KSPLIT_MIN_K * parts)
        return 1;
    return parts;
}

static void run_ksplit(const eb_plan *p, const double *a, const double *b,
                       double *c, int parts, eb_team *team, double work)
{
    ksplit_job j = {.p = p, .a = a, .b = b, .c = c};
    team_product(team, parts, ksplit_part, &j, work);
    for (int q = 1; q < parts; q++)
        for (int64_t m = 0; m < p->M; m++)
            for (int64_t nn = 0; nn < p->N; nn++)
                c[m * p->scm + nn * p->scn] += j.part_c[q - 1][m * p->N + nn];
}

/* C's outer side (the one of the larger stride in C) of a BLAS GEMM split
 * over the team where it is at least OUTER_SPLIT_K4 / 4 times K, and
 * long enough for a unit of 8 per part.
 *
 * Cut along C's contiguous side, each of C's rows is written half by one
 * thread and half by the other, and each core's prefetchers run on along
 * the row into lines the other core is writing: the last step of
 * str_matrix_chain (C 371 x 424 with its 424 contiguous, K 24) took
 * 0.164-0.168 ms on two threads against 0.153 on one, and 0.077-0.079
 * with C cut into two blocks of whole rows; cuts aligned to 256 bytes
 * instead of 64 changed nothing (0.169). Cut along the outer side, each
 * part reads all of the other operand: where K is long next to that side
 * (200 x 4000 x 128 with C's 200 rows outer) reading B twice cost more
 * than the shared rows (2.17-2.22 ms against 2.30-2.48). Measured on the
 * one-step instances listed in docs/engine.md ("Threads"), both cuts
 * alternating, `plan --time --threads 2 --samples 40 --warmup 5`. */
enum { OUTER_SPLIT_K4 = 7 };

/* The side of C (1: M, 0: N) that blas_part splits into nparts: a GEMM's
 * outer side where that pays (see OUTER_SPLIT_K4), else the longer. */
static int blas_split_m(const eb_plan *p, int nparts)
{
    int outer_m = p->scm >= p->scn;
    int64_t len = outer_m ? p->M : p->N;
    if (p->kind == EB_KIND_GEMM && 4 * len >= OUTER_SPLIT_K4 * p->K &&
        (len + 7) / 8 >= nparts)
        return outer_m;
    return p->M >= p->N;
}

/*
 * One BLAS GEMM or GEMV split by the engine: part k computes its share of
 * the longer side of C (in multiples of 8, the width of OpenBLAS's
 * kernels; a GEMV's C is its y; a GEMM's outer side where blas_split_m
 * says so) with a one-thread BLAS call, at every size. OpenBLAS's own
 * threading splits statically: its caller waits for a worker that sleeps between
 * calls or has lost its core to another process (256^3 under a load
 * average of 5 on 2 cores: 4.3 ms median against 0.79 ms on one thread),
 * while the team's parts go to whichever thread is free. On the lm
 * instance's 144 x 1100 x 121 steps this split was also the faster one on
 * a quiet machine (1.6x-1.8x against 1.4x-1.6x). At 1024^3 both scale
 * alike (in-process, interleaved, quiet: 1.97x against 1.95x). A GEMV of
 * 9216 elements and more OpenBLAS threads by waking its worker for the
 * call: 200 x 300 took 10.4-10.7 us so against 6.5-6.6 us on one thread
 * (interleaved, minima and medians of 2001 calls).
 */
static void blas_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    const eb_plan *p = j->p;
    int64_t lo, hi;
    int split_m = blas_split_m(p, nparts);
    side_part(p, split_m, 8, part, nparts, &lo, &hi);
    if (lo >= hi)
        return;
    size_t esz = eb_dtype_size(p->dt);
    const void *a = j->a, *b = j->b;
    void *c;
    if (split_m) {
        a = at(j->a, lo * p->sam, esz);
        c = at(j->c, lo * p->scm, esz);
    } else {
        b = at(j->b, lo * p->sbn, esz);
        c = at(j->c, lo * p->scn, esz);
    }
    if (p->kind == EB_KIND_GEMV)
        gemv_len(p, hi - lo, a, b, c);
    else if (split_m)
        gemm_strided(p, hi - lo, p->N, a, b, c);
    else
        gemm_strided(p, p->M, hi - lo, a, b, c);
}

/* Runs `fn` over the team with OpenBLAS at one thread for the job (every
 * BLAS call inside a part is a one-thread call; 30 ns a switch). */
static void run_blas_job(eb_team *team, int nparts, eb_team_fn fn, job *j,
                         double work)
{
    int blas = eb_blas_threads();
    eb_blas_set_threads(1);
    team_product(team, nparts, fn, j, work);
    eb_blas_set_threads(blas);
}

/* A single BLAS GEMM or GEMV split over the team, one-thread calls. */
static void run_own_split(const eb_plan *p, const void *a, const void *b,
                          void *c, eb_team *team, eb_exec_counters *cnt)
{
    job j = {.p = p, .a = a, .b = b, .c = c};
    int gemm = p->kind == EB_KIND_GEMM, n = eb_team_size(team);
    run_blas_job(team, n, blas_part, &j,
                 (double)p->M * (double)p->N * (double)p->K);
    /* One call per part that had columns or rows (units of 8) to compute. */
    int64_t len = blas_split_m(p, n) ? p->M : p->N;
    int64_t units = (len + 7) / 8, calls = units < n ? units : n;
    cnt->blas_calls += calls;
    if (gemm)
        cnt->gemm_calls += calls;
}

/* Batch rows split over the team: at most this many parts per thread, so
 * that a thread that joins late still finds parts to take. */
enum { ROW_PARTS_PER_THREAD = 4 };

/* eb_plan_wrows plans: units of up to wrows_block(p) elements of the
 * innermost batch dim (w) of one index of the outer ones, so that B's
 * matrices for a unit (K N each) stay in L2 while the row blocks pass. */
enum { WROWS_B_ELEMS = 16384, WROWS_MAX_BLOCK = 256 };

static int64_t wrows_block(const eb_plan *p)
{
    int64_t wb = WROWS_B_ELEMS / (p->K * p->N) / 8 * 8;
    return wb < 8 ? 8 : wb > WROWS_MAX_BLOCK ? WROWS_MAX_BLOCK : wb;
}

static void run_wrows(const eb_plan *p, const double *a, const double *b,
                      double *c, int64_t lo, int64_t hi)
{
    int d = p->nb - 1;
    int64_t W = p->bshape[d], wb = wrows_block(p), nwb = (W + wb - 1) / wb;
    int64_t idx[EB_MAX_RANK], off[3];
    for (int64_t u = lo; u < hi; u++) {
        if (u == lo || u % nwb == 0)
            batch_offsets(p, d, u / nwb, idx, off);
        int64_t w0 = u % nwb * wb, wn = W - w0 < wb ? W - w0 : wb;
        eb_kern_gemm_wrows(p->M, p->N, p->K, wn, a + off[0] + w0, p->sam,
                           p->sak, b + off[1] + w0 * p->bstride[1][d], p->sbk,
                           p->bstride[1][d],
                           c + off[2] + w0 * p->bstride[2][d], p->scm,
                           p->bstride[2][d]);
    }
}

static int64_t wrows_units(const eb_plan *p)
{
    int d = p->nb - 1;
    int64_t wb = wrows_block(p);
    return row_count(p) / p->bshape[d] * ((p->bshape[d] + wb - 1) / wb);
}

static void wrows_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    long long lo, hi;
    eb_team_split(wrows_units(j->p), part, nparts, &lo, &hi);
    run_wrows(j->p, j->a, j->b, j->c, lo, hi);
}

/* Do two batch elements of p's C share cache lines (a batch dim of C
 * with a stride under a line: tensornetwork's 2 x (4 x 524288 x 4) with
 * its batch label innermost in C)? Split by batch element, both threads
 * then write every line of C: 5.1-5.2 ms on one thread, 18-24 on two. */
static int batch_shares_lines(const eb_plan *p)
{
    int64_t line = 64 / (int64_t)eb_dtype_size(p->dt);
    for (int d = 0; d < p->nb; d++) {
        int64_t s = p->bstride[2][d] < 0 ? -p->bstride[2][d] : p->bstride[2][d];
        if (s > 0 && s < line && p->bshape[d] > 1)
            return 1;
    }
    return 0;
}

static void run_batched(const eb_plan *p, const void *a, const void *b,
                        void *c, eb_team *team, eb_exec_counters *cnt)
{
    int64_t rows = row_count(p);
    double work = (double)p->nbatch * (double)p->M * (double)p->N *
                  (double)p->K;
    int n = eb_team_size(team);
    if (eb_plan_wrows(p)) {
        int64_t units = wrows_units(p);
        if (n > 1 && work >= PARALLEL_MIN_WORK && units >= n) {
            job j = {.p = p, .a = a, .b = b, .c = c};
            team_product(team, units < n ? (int)units : n, wrows_part, &j,
                         work);
        } else {
            run_wrows(p, a, b, c, 0, units);
        }
        return;
    }
    /* BLAS calls (GEMMs, GEMVs, and dot products outside float64, which
     * the own kernel does not cover) run as one-thread calls per part. */
    int blas = p->kind == EB_KIND_GEMM || p->kind == EB_KIND_GEMV ||
               (p->kind == EB_KIND_DOT && p->dt != EB_F64);
    /* The own kernel's C with batch elements sharing lines: cut C's
     * longer side instead (gemm_part, below), a slice of every element
     * per part. */
    int by_side = p->kind == EB_KIND_SMALL_GEMM && batch_shares_lines(p) &&
                  (p->M > p->N ? p->M : p->N) >= 24 * (int64_t)n;
    if (n > 1 && work >= PARALLEL_MIN_WORK && rows >= n && !by_side) {
        /* Whole batch elements per part; BLAS ones as one-thread calls. */
        job j = {.p = p, .a = a, .b = b, .c = c};
        int64_t parts = rows < ROW_PARTS_PER_THREAD * n
                            ? rows
                            : ROW_PARTS_PER_THREAD * n;
        if (blas) {
            run_blas_job(team, (int)parts, rows_part, &j, work);
            cnt->blas_calls += rows;
            if (p->kind == EB_KIND_GEMM)
                cnt->gemm_calls += rows;
        } else {
            team_product(team, (int)parts, rows_part, &j, work);
        }
        return;
    }
    if (rows == 1 && !by_side && n > 1 && work >= PARALLEL_MIN_WORK &&
        ksplit_parts(p, n) > 1) {
        run_ksplit(p, a, b, c, ksplit_parts(p, n), team, work);
        return;
    }
    if (p->kind == EB_KIND_SMALL_GEMM && n > 1 && work >= PARALLEL_MIN_WORK) {
        job j = {.p = p, .a = a, .b = b, .c = c};
        team_product(team, n, gemm_part, &j, work);
        return;
    }
    if ((p->kind == EB_KIND_GEMM || p->kind == EB_KIND_GEMV) && rows == 1 &&
        n > 1 && work >= PARALLEL_MIN_WORK && (p->M >= 16 || p->N >= 16)) {
        run_own_split(p, a, b, c, team, cnt);
        return;
    }
    /* Too small to split: BLAS on this thread alone. OpenBLAS's own split
     * would wake its sleeping worker for the call (see blas_part) while
     * the team's worker may spin on the other core. (Larger calls the team
     * does not split, such as 2 batch rows on 3 threads, stay with
     * OpenBLAS's threads.) */
    int threads = blas && n > 1 && work < PARALLEL_MIN_WORK
                      ? eb_blas_threads()
                      : 1;
    if (threads > 1)
        eb_blas_set_threads(1);
    run_rows(p, a, b, c, 0, rows, cnt);
    if (threads > 1)
        eb_blas_set_threads(threads);
}

static void xform_part(void *arg, int part, int nparts)
{
    const job *j = arg;
    eb_xform sub = *j->x;
    long long lo, hi;
    eb_team_split(sub.shape[0], part, nparts, &lo, &hi);
    int64_t ostride = eb_xform_out_elems(j->x) / sub.shape[0];
    size_t esz = eb_dtype_size(j->p->dt);
    sub.shape[0] = hi - lo;
    if (sub.shape[0] > 0)
        eb_kern_xform(&sub, at(j->in, lo * sub.in_stride[0], esz),
                      at(j->out, lo * ostride, esz), NULL);
}

/* A permutation (the engine splits it over the team itself) or a
 * reduction, split along its outermost output dim when it writes at least
 * PARALLEL_MIN_WORK float64s' worth of bytes: up to ROW_PARTS_PER_THREAD
 * parts a thread, claimed like batch rows (one part per thread left the
 * caller waiting for a late worker's whole half). */
static void xform(const eb_plan *p, const eb_xform *x, const void *in,
                  void *out, eb_team *team)
{
    int n = eb_team_size(team);
    if (x->red_rank > 0 && n > 1 && x->rank >= 1 && x->shape[0] >= n &&
        eb_xform_out_elems(x) * (int64_t)eb_dtype_size(p->dt) >=
            PARALLEL_MIN_WORK * (int64_t)sizeof(double)) {
        job j = {.p = p, .x = x, .in = in, .out = out};
        int64_t parts = x->shape[0] < ROW_PARTS_PER_THREAD * n
                            ? x->shape[0]
                            : ROW_PARTS_PER_THREAD * n;
        eb_team_run_parts(team, (int)parts, xform_part, &j);
        return;
    }
    eb_kern_xform(x, in, out, team);
}

/* Offsets of nd dims (outermost first) at these strides, row-major. */
static void dims_offsets(int nd, const int64_t *shape, const int64_t *stride,
                         int64_t *out)
{
    int64_t len = 1;
    out[0] = 0;
    for (int d = 0; d < nd; d++) {
        for (int64_t e = len - 1; e >= 0; e--)
            for (int64_t i = shape[d] - 1; i >= 0; i--)
                out[e * shape[d] + i] = out[e] + i * stride[d];
        len *= shape[d];
    }
}

/* Offsets of the dims of group g (row-major over vshape[g]) in stride
 * set s: out gets the product of the group's shape entries. */
static void vec_offsets(const eb_plan *p, int g, int s, int64_t *out)
{
    dims_offsets(p->vdims[g], p->vshape[g], p->vstride[g][s], out);
}

typedef struct {
    const eb_plan *p;
    const double *a, *b; /* float64: the vector-batch GEMM's only dtype */
    double *c, *pack;
    const int64_t *am, *ak, *bk, *bn, *cm, *cn;
    int rows; /* in rows of C along n (vec_rows) */
} vec_job;

/*
 * Does the vector-batch GEMM run in rows of C along n
 * (eb_kern_vec_rows_avx512): one small GEMM per element of w on a block of
 * B transposed to batch-outer, A broadcast where it lies? Where the CPU
 * runs the AVX-512 kernels, C's n dims are one run of 8 to 16 elements
 * and w has unit stride in B (the pack reads it in vectors), for products
 * of at least VEC_ROWS_MIN_MNK multiply-adds. Against the blocks along w
 * (both operands packed, C stored through transposes): lm eager's 1900 x
 * (16 x 16 x 16) steps, A read with w at stride 4, 0.41-0.49 -> 0.31-0.37
 * ms on their own and 0.52-0.58 -> 0.39-0.45 ms in sentence_4_4d; 1900 x
 * (9 x 15 x 9) 0.22-0.23 -> 0.15; 1900 x (4 x 8 x 8) 0.052 -> 0.057,
 * below the bound (docs/bench.md, "Twentieth round").
 */
enum { VEC_ROWS_MIN_MNK = 512 };

static int vec_rows(const eb_plan *p, const int64_t *cn)
{
    if (!eb_gemm512_usable() || p->vsw[1] != 1 || p->N < 8 ||
        p->N > EB_VEC_ROWS_MAX_N || p->K > EB_VEC_ROWS_MAX_K ||
        p->M * p->N * p->K < VEC_ROWS_MIN_MNK)
        return 0;
    for (int64_t n = 1; n < p->N; n++)
        if (cn[n] != cn[0] + n)
            return 0;
    return 1;
}

/*
 * Part of the vector-batch GEMM: a contiguous share of w (in multiples of
 * 8), cut into blocks that this part packs into its own slice of the pack
 * buffer and computes. The buffer holds one block of EB_VEC_WBLOCK; with
 * n parts each gets a block of EB_VEC_WBLOCK / n (at least 8, so at most 8
 * parts work), and the team is woken once per step, not once per block.
 */
static void vec_part(void *arg, int part, int nparts)
{
    const vec_job *j = arg;
    const eb_plan *p = j->p;
    int active = nparts < EB_VEC_WBLOCK / 8 ? nparts : EB_VEC_WBLOCK / 8;
    if (part >= active)
        return;
    int64_t sub = EB_VEC_WBLOCK / active / 8 * 8;
    int64_t mk = p->M * p->K, kn = p->K * p->N;
    double *pa = j->pack + part * sub * (mk + kn), *pb = pa + sub * mk;
    long long lo, hi;
    eb_team_split((p->vw + 7) / 8, part, active, &lo, &hi);
    lo *= 8;
    hi = hi * 8 < p->vw ? hi * 8 : p->vw;
    int64_t rows = 1, idx[EB_MAX_RANK], off[3];
    for (int d = 0; d < p->nb; d++)
        rows *= p->bshape[d];
    batch_offsets(p, p->nb, 0, idx, off);
    int gv = eb_plan_vec_gemv(p);
    if (gv) {
        /* One side of C is 1: the larger operand g streamed in place,
         * the other (s) copied per block of w (eb_kern_vec_gemv). */
        double *scratch =
            j->pack + part * eb_kern_vec_gemv_scratch(p->vw, p->K);
        int sa = gv == 1; /* A is the small operand */
        const double *s0 = sa ? j->a : j->b, *g0 = sa ? j->b : j->a;
        const int64_t *sk = sa ? j->ak : j->bk, *gj = sa ? j->bn : j->am,
                      *gk = sa ? j->bk : j->ak, *cj = sa ? j->cn : j->cm;
        int64_t sfix = sa ? j->am[0] : j->bn[0], cfix = sa ? j->cm[0] : j->cn[0];
        int64_t ssw = p->vsw[sa ? 0 : 1];
        for (int64_t r = 0; r < rows && lo < hi; r++) {
            eb_kern_vec_gemv(hi - lo, sa ? p->N : p->M, p->K,
                             s0 + off[sa ? 0 : 1] + sfix + lo * ssw, sk, ssw,
                             g0 + off[sa ? 1 : 0] + lo, gj, gk,
                             j->c + off[2] + cfix + lo * p->vscw, cj,
                             p->vscw, scratch);
            batch_next(p, p->nb, idx, off);
        }
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t w0 = lo; w0 < hi; w0 += sub) {
            int64_t wb = hi - w0 < sub ? hi - w0 : sub;
            const double *a = j->a + off[0] + w0 * p->vsw[0];
            double *c = j->c + off[2] + w0 * p->vscw;
            if (j->rows) {
                int64_t nx = hi - w0 - wb; /* the next block's */
                eb_kern_vec_rows_pack(wb, p->K, p->N, j->b + off[1] + w0,
                                      j->bk, j->bn, pa, nx < wb ? nx : wb);
                eb_kern_vec_rows_avx512(wb, p->M, p->N, p->K, a, j->am,
                                        j->ak, p->vsw[0], pa, c + j->cn[0],
                                        j->cm, p->vscw);
                continue;
            }
            eb_kern_vec_pack(0, p->M, p->K, a, j->am, j->ak, wb, p->vsw[0],
                             mk, pa);
            eb_kern_vec_pack(0, p->K, p->N, j->b + off[1] + w0 * p->vsw[1],
                             j->bk, j->bn, wb, p->vsw[1], kn, pb);
            eb_kern_vec_gemm(wb, p->M, p->N, p->K, pa, pb, c, j->cm, j->cn,
                             p->vscw);
        }
        batch_next(p, p->nb, idx, off);
    }
}

static void run_vec(const eb_plan *p, const void *a, const void *b, void *c,
                    void *pack, eb_team *team)
{
    int64_t am[EB_VEC_MAX_DIM], cm[EB_VEC_MAX_DIM], bn[EB_VEC_MAX_DIM],
        cn[EB_VEC_MAX_DIM], ak[EB_VEC_MAX_DIM], bk[EB_VEC_MAX_DIM];
    vec_offsets(p, 0, 0, am);
    vec_offsets(p, 0, 1, cm);
    vec_offsets(p, 1, 0, bn);
    vec_offsets(p, 1, 1, cn);
    vec_offsets(p, 2, 0, ak);
    vec_offsets(p, 2, 1, bk);
    vec_job j = {.p = p, .a = a, .b = b, .c = c, .pack = pack, .am = am,
                 .ak = ak, .bk = bk, .bn = bn, .cm = cm, .cn = cn,
                 .rows = !eb_plan_vec_gemv(p) && vec_rows(p, cn)};
    double work = (double)p->nbatch * (double)p->M * (double)p->N *
                  (double)p->K;
    if (eb_team_size(team) > 1 && work >= PARALLEL_MIN_WORK && p->vw >= 16)
        team_product(team, eb_team_size(team), vec_part, &j, work);
    else
        vec_part(&j, 0, 1);
}

/* Runs job j's units (blocks, chunks) in up to EB_BP_PARTS parts over the
 * team, each with its own scratch; *parts (the job's) gets their number
 * before fn runs. */
static void run_block_parts(eb_team *team, int64_t units, double work,
                            eb_team_fn fn, void *j, int *parts)
{
    int n = eb_team_size(team);
    *parts = n < EB_BP_PARTS ? n : EB_BP_PARTS;
    *parts = units < *parts ? (int)units : *parts;
    if (*parts > 1 && work >= PARALLEL_MIN_WORK) {
        team_product(team, *parts, fn, j, work);
    } else {
        *parts = 1;
        fn(j, 0, 1);
    }
}

typedef struct {
    const eb_plan *p;
    const double *a, *b; /* float64: the own GEMM kernel's only dtype */
    double *c, *scratch;
    eb_xform last; /* the preparation of the last, shorter block */
    int parts;
} bp_job;

/* Part of a blocked preparation (eb_plan.bp): its share of the blocks of
 * A's rows, each permuted into this part's scratch and multiplied from
 * there. */
static void bp_part(void *arg, int part, int nparts)
{
    (void)nparts;
    const bp_job *j = arg;
    const eb_plan *p = j->p;
    long long lo, hi;
    eb_team_split((p->bp_size + p->bp_len - 1) / p->bp_len, part, j->parts,
                  &lo, &hi);
    double *blk = j->scratch + part * p->bp_blk;
    for (int64_t t = lo; t < hi; t++) {
        int64_t i0 = t * p->bp_len;
        int64_t len = p->bp_size - i0 < p->bp_len ? p->bp_size - i0 : p->bp_len;
        eb_kern_xform(len == p->bp_len ? &p->xf[0] : &j->last,
                      j->a + i0 * p->bp_in, blk, NULL);
        /* The next block's lines of A come into L2 while this one's
         * product computes from L2 (A's runs are far apart: lm's 16 runs
         * of 8 KiB per block). */
        if (t + 1 < hi) {
            int64_t i1 = i0 + p->bp_len;
            const eb_xform *nx =
                p->bp_size - i1 < p->bp_len ? &j->last : &p->xf[0];
            if (nx->planned)
                eb_perm_prefetch(&nx->perm, 0, j->a + i1 * p->bp_in);
        }
        small_gemm(p, len * p->bp_rows, p->N, blk, j->b,
                   j->c + i0 * p->bp_rows * p->scm);
    }
}

static void run_blocked(const eb_plan *p, const void *a, const void *b,
                        void *c, void *tmp, eb_team *team,
                        eb_exec_counters *cnt)
{
    bp_job j = {.p = p, .a = a, .b = b, .c = c, .scratch = tmp};
    /* The last block's xform: dim 0 of the block's (which may have merged
     * the dims inside it) scaled to its length. */
    int64_t rem = p->bp_size % p->bp_len;
    j.last = p->xf[0];
    if (rem) {
        j.last.shape[0] = j.last.shape[0] / p->bp_len * rem;
        eb_xform_plan(&j.last);
    }
    int64_t nblk = (p->bp_size + p->bp_len - 1) / p->bp_len;
    double work = (double)p->M * (double)p->N * (double)p->K;
    run_block_parts(team, nblk, work, bp_part, &j, &j.parts);
    cnt->permuted_elems += p->bp_moved;
}

typedef struct {
    const eb_plan *p;
    const double *y, *x; /* the chunked operand, the other one */
    double *c, *scratch;
    const int32_t *tab;  /* see cp_table */
    const int64_t *roff;
    const int64_t *om, *on; /* C's offsets of a block's m and n indices */
    int64_t lead; /* elements contiguous in both Y and the chunk, first */
    int parts;
} cp_job;

/*
 * The chunk's permutation as tables: the chunk is cp_blk / cp_run runs of
 * Y (one run when Y is compact and the chunk is its innermost labels),
 * run r at roff[r], and tab[r cp_run + i] is the place in the scratch of
 * element i of run r. A chunk is then moved by reading its runs in order
 * (whole lines, which the prefetcher follows) and storing each element
 * at its place in the scratch, which stays in L2 from one chunk to the
 * next. On tensornetwork's step (chunks of 14 dims of 2) the whole chunk
 * loop, the block's adds and stores included, ran about 7 instructions
 * an element; the permutation engine's tiles of such short dims took 13
 * for the move alone and rebuilt their offset table for every chunk.
 */
static void cp_table(const eb_plan *p, int32_t *tab, int64_t *roff)
{
    int64_t idx[EB_MAX_RANK] = {0}, in = 0, out = 0;
    for (int64_t t = 0; t < p->cp_blk; t++) {
        if (t % p->cp_run == 0)
            roff[t / p->cp_run] = in;
        tab[t] = (int32_t)out;
        for (int d = 0; d < p->cp_dims; d++) {
            in += p->cp_dstride[0][d];
            out += p->cp_dstride[1][d];
            if (++idx[d] < p->cp_dshape[d])
                break;
            in -= p->cp_dstride[0][d] * p->cp_dshape[d];
            out -= p->cp_dstride[1][d] * p->cp_dshape[d];
            idx[d] = 0;
        }
    }
}

/* Offsets in Y, X and C of flat index i over a chunked plan's outer dims
 * [d0, d1) (row-major). */
static void cp_offsets(const eb_plan *p, int d0, int d1, int64_t i,
                       int64_t *off)
{
    off[0] = off[1] = off[2] = 0;
    for (int d = d1 - 1; d >= d0; d--) {
        int64_t q = i % p->cp_shape[d];
        i /= p->cp_shape[d];
        for (int s = 0; s < 3; s++)
            off[s] += q * p->cp_stride[s][d];
    }
}

/* a[e] += b[e] for e < n, two at a time (SSE2, every x86-64; the
 * compiler does not vectorize a loop whose arrays may overlap). */
static void add_into(double *a, const double *b, int64_t n)
{
    int64_t e = 0;
#if defined(__SSE2__)
    for (; e + 2 <= n; e += 2)
        _mm_storeu_pd(a + e,
                      _mm_add_pd(_mm_loadu_pd(a + e), _mm_loadu_pd(b + e)));
#endif
    for (; e < n; e++)
        a[e] += b[e];
}

/* A chunk's product per batch element i of the chunk: into C (acc NULL),
 * else into the compact block acc (i's at acc + i M N, rows of N: the
 * kernel's fastest layout), which the first chunk along the outer
 * contracted dims writes (cb NULL) and the others add to through cb. */
static void cp_product(const eb_plan *p, const double *a, const double *b,
                       double *c, double *acc, double *cb)
{
    eb_gemm_k k = {1, 0, p->sak, 0, p->sbk};
    int64_t M = p->cp_M, N = p->cp_N, mn = M * N, idx[EB_MAX_RANK], off[3];
    int64_t rows = row_count(p);
    batch_offsets(p, p->nb, 0, idx, off);
    for (int64_t i = 0; i < rows; i++) {
        const double *ai = a + off[0], *bi = b + off[1];
        if (!acc) {
            eb_kern_small_gemm(M, N, p->cp_K, ai, p->sam, bi, p->sbn, &k,
                               c + off[2], p->scm, p->scn);
        } else if (!cb) {
            eb_kern_small_gemm(M, N, p->cp_K, ai, p->sam, bi, p->sbn, &k,
                               acc + i * mn, N, 1);
        } else {
            eb_kern_small_gemm(M, N, p->cp_K, ai, p->sam, bi, p->sbn, &k, cb,
                               N, 1);
            double *ac = acc + i * mn;
            add_into(ac, cb, mn);
        }
        batch_next(p, p->nb, idx, off);
    }
}

/* The block acc (cp_product) into C: C's offsets of the block's m and n
 * indices are om and on. */
static void cp_store(const eb_plan *p, const double *acc, const int64_t *om,
                     const int64_t *on, double *c)
{
    int64_t M = p->cp_M, N = p->cp_N, idx[EB_MAX_RANK], off[3];
    int64_t rows = row_count(p);
    batch_offsets(p, p->nb, 0, idx, off);
    for (int64_t i = 0; i < rows; i++) {
        const double *ai = acc + i * M * N;
        double *ci = c + off[2];
        for (int64_t m = 0; m < M; m++) {
            double *cm = ci + om[m];
            for (int64_t n = 0; n < N; n++)
                cm[on[n]] = ai[m * N + n];
        }
        batch_next(p, p->nb, idx, off);
    }
}

/* How far ahead cp_scatter prefetches Y (elements): a scratch program
 * moving gm_queen's chunk of 8 dims of 3 (6561 elements) from 43 M
 * elements in memory ran 24 ms without, 17.6 at 256, 15.3 at 512 and
 * 14.5 at 1024 ahead (13.7 with Y in cache): the runs of a chunk are read
 * in order, but the scattered stores hold back the loads, and the
 * prefetcher alone does not get ahead of them. */
enum { CP_PREFETCH = 1024, CP_STEP = 64 };

/* Elements [i, i1) of a run yr of Y into blk in groups of lead (a
 * constant where cp_scatter's short groups inline it), each group at its
 * first element's place tr[]. */
__attribute__((always_inline)) static inline void
cp_groups(const double *yr, const int32_t *tr, double *blk, int64_t i,
          int64_t i1, const int64_t lead)
{
#if defined(__SSE2__)
    if (lead == 3) {
        /* Two moves a group, not three. */
        for (; i < i1; i += 3) {
            double *d = blk + tr[i];
            _mm_storeu_pd(d, _mm_loadu_pd(yr + i));
            d[2] = yr[i + 2];
        }
        return;
    }
#endif
    for (; i < i1; i += lead) {
        double *d = blk + tr[i];
        _Pragma("GCC unroll 4")
        for (int64_t e = 0; e < lead; e++)
            d[e] = yr[i + e];
    }
}

/* Moves a chunk of Y (its runs at y + roff[r]) by its tables (cp_table)
 * into blk, in groups of lead elements contiguous in both (lead divides
 * the run), prefetching CP_PREFETCH elements ahead in the chunk's runs
 * and then in the next chunk's (at ynext; NULL: none). */
static void cp_scatter(const eb_plan *p, const int32_t *tab,
                       const int64_t *roff, int64_t lead, const double *y,
                       const double *ynext, double *blk)
{
    int64_t n = p->cp_run, nr = p->cp_blk / n;
    int64_t step = (CP_STEP + lead - 1) / lead * lead;
    /* The prefetch cursor: run pr of the chunk at pb, element pi. */
    const double *pb = y;
    int64_t pr = CP_PREFETCH / n, pi = CP_PREFETCH % n;
    if (pr >= nr) {
        pb = pr < 2 * nr ? ynext : NULL;
        pr -= nr;
    }
    for (int64_t r = 0; r < nr; r++) {
        const double *yr = y + roff[r];
        const int32_t *tr = tab + r * n;
        for (int64_t i0 = 0; i0 < n; i0 += step) {
            /* The cursor's next `step` elements, a line (8) apart, in
             * pieces within one run. */
            for (int64_t e = 0; e < step && pb;) {
                int64_t m = step - e < n - pi ? step - e : n - pi;
                const double *q = pb + roff[pr] + pi;
                for (int64_t u = 0; u < m; u += 8)
                    __builtin_prefetch(q + u);
                m = (m + 7) & ~(int64_t)7;
                e += m;
                if ((pi += m) >= n) {
                    pi -= n;
                    if (++pr == nr) {
                        pb = pb == y ? ynext : NULL;
                        pr = 0;
                    }
                }
            }
            int64_t i1 = i0 + step < n ? i0 + step : n, i = i0;
            switch (lead) {
            case 1:
                for (; i + 4 <= i1; i += 4) {
                    double y0 = yr[i], y1 = yr[i + 1], y2 = yr[i + 2],
                           y3 = yr[i + 3];
                    blk[tr[i]] = y0;
                    blk[tr[i + 1]] = y1;
                    blk[tr[i + 2]] = y2;
                    blk[tr[i + 3]] = y3;
                }
                for (; i < i1; i++)
                    blk[tr[i]] = yr[i];
                break;
            case 2:
                cp_groups(yr, tr, blk, i, i1, 2);
                break;
            case 3:
                cp_groups(yr, tr, blk, i, i1, 3);
                break;
            case 4:
                cp_groups(yr, tr, blk, i, i1, 4);
                break;
            default:
                cp_groups(yr, tr, blk, i, i1, lead);
            }
        }
    }
}

/* Part of a chunked preparation (eb_plan.cp): its share of the chunks
 * along the outer free and batch dims, and for each of them every chunk
 * along the outer contracted dims (which add into the same block of C). */
static void cp_part(void *arg, int part, int nparts)
{
    (void)nparts;
    const cp_job *j = arg;
    const eb_plan *p = j->p;
    int nf = p->cp_nout - p->cp_nk;
    int64_t nfree = 1, nk = 1;
    for (int d = 0; d < p->cp_nout; d++)
        *(d < nf ? &nfree : &nk) *= p->cp_shape[d];
    long long lo, hi;
    eb_team_split(nfree, part, j->parts, &lo, &hi);
    double *blk = j->scratch + part * (p->cp_blk + p->cp_cblk);
    double *acc = p->cp_acc ? blk + p->cp_blk : NULL;
    double *cb = acc ? acc + p->cp_cblk - p->cp_M * p->cp_N : NULL;
    /* The chunks in order, (f, q), each with the next one's offsets. */
    int64_t of[3], ok[3], nof[3], nok[3];
    if (lo < hi) {
        cp_offsets(p, 0, nf, lo, nof);
        cp_offsets(p, nf, p->cp_nout, 0, nok);
    }
    for (int64_t f = lo; f < hi; f++) {
        memcpy(of, nof, sizeof of);
        for (int64_t q = 0; q < nk; q++) {
            memcpy(ok, nok, sizeof ok);
            const double *ynext = NULL;
            if (q + 1 < nk || f + 1 < hi) {
                if (q + 1 == nk)
                    cp_offsets(p, 0, nf, f + 1, nof);
                cp_offsets(p, nf, p->cp_nout, q + 1 < nk ? q + 1 : 0, nok);
                ynext = j->y + nof[0] + nok[0];
            }
            cp_scatter(p, j->tab, j->roff, j->lead, j->y + of[0] + ok[0],
                       ynext, blk);
            const double *x = j->x + of[1] + ok[1];
            cp_product(p, p->cp_side ? x : blk, p->cp_side ? blk : x,
                       j->c + of[2], acc, q ? cb : NULL);
        }
        if (acc)
            cp_store(p, acc, j->om, j->on, j->c + of[2]);
    }
}

static void run_chunked(const eb_plan *p, const void *a, const void *b,
                        void *c, void *tmp, eb_team *team,
                        eb_exec_counters *cnt)
{
    cp_job j = {.p = p, .y = p->cp_side ? b : a, .x = p->cp_side ? a : b,
                .c = c, .scratch = tmp};
    int32_t *tab = (int32_t *)((double *)tmp + EB_BP_PARTS * (p->cp_blk +
                                                             p->cp_cblk));
    int64_t *roff = (int64_t *)((double *)tab + (p->cp_blk + 1) / 2);
    cp_table(p, tab, roff);
    j.lead = 1;
    for (int d = 0; d < p->cp_dims && p->cp_dstride[0][d] == j.lead &&
                    p->cp_dstride[1][d] == j.lead;
         d++)
        j.lead *= p->cp_dshape[d];
    if (j.lead > p->cp_run)
        j.lead = p->cp_run; /* not reached: the run starts the same way */
    j.tab = tab;
    j.roff = roff;
    int64_t *om = roff + p->cp_blk / p->cp_run;
    vec_offsets(p, 0, 1, om);
    vec_offsets(p, 1, 1, om + p->cp_M);
    j.om = om;
    j.on = om + p->cp_M;
    int64_t nfree = 1;
    for (int d = 0; d < p->cp_nout - p->cp_nk; d++)
        nfree *= p->cp_shape[d];
    double work = (double)p->nbatch * (double)p->M * (double)p->N *
                  (double)p->K;
    run_block_parts(team, nfree, work, cp_part, &j, &j.parts);
    cnt->permuted_elems += p->bp_moved;
}

typedef struct {
    const eb_vs *g;
    const double *xp, *y;
    double *cp;
} vs_job;

/* Part of the streamed vector-batch GEMM: its share of C''s columns, in
 * whole blocks of EB_VS_NB. */
static void vs_part(void *arg, int part, int nparts)
{
    const vs_job *j = arg;
    int64_t blocks = (j->g->N + EB_VS_NB - 1) / EB_VS_NB;
    long long lo, hi;
    eb_team_split(blocks, part, nparts, &lo, &hi);
    int64_t n1 = hi * EB_VS_NB < j->g->N ? hi * EB_VS_NB : j->g->N;
    eb_vs_gemm(j->g, j->xp, j->y, j->cp, lo * EB_VS_NB, n1, 0);
}

/* The streamed vector-batch GEMM (eb_plan.vs): X packed, Y read in place
 * into C', C' put into C. */
static void run_vs(const eb_plan *p, const void *a, const void *b, void *c,
                   void *tmp, eb_team *team, eb_exec_counters *cnt)
{
    const double *x = p->vs_y ? a : b, *y = p->vs_y ? b : a;
    double *xp = (double *)(((uintptr_t)tmp + 63) & ~(uintptr_t)63);
    double *cp = xp + p->vs_R * p->K * p->vs_M * p->vs_Lp;
    int64_t *yr = (int64_t *)(cp + p->vs_R * p->vs_M * p->vs_N * p->vs_Lp),
            *yk = yr + p->vs_R,
            *yn = yk + p->K, *xr = yn + p->vs_N, *xk = xr + p->vs_R,
            *xm = xk + p->K, *xl = xm + p->vs_M;
    dims_offsets(p->nb, p->bshape, p->bstride[1], yr);
    dims_offsets(p->nb, p->bshape, p->bstride[0], xr);
    vec_offsets(p, 2, 1, yk);
    vec_offsets(p, 2, 0, xk);
    vec_offsets(p, 1, 1, yn);
    vec_offsets(p, 0, 0, xm);
    dims_offsets(p->cp_dims, p->cp_dshape, p->cp_dstride[0], xl);
    eb_vs g = {.L = p->vs_L, .Lp = p->vs_Lp, .R = p->vs_R, .M = p->vs_M,
               .N = p->vs_N, .K = p->K, .yr = yr, .yk = yk, .yn = yn,
               .stream = p->vs_stream};
    eb_vs_pack(&g, x, xr, xk, xm, xl, xp);
    vs_job j = {.g = &g, .xp = xp, .y = y, .cp = cp};
    double work = (double)p->nbatch * (double)p->M * (double)p->N *
                  (double)p->K;
    int64_t blocks = (g.N + EB_VS_NB - 1) / EB_VS_NB;
    int n = eb_team_size(team);
    if (n > 1 && blocks > 1 && work >= PARALLEL_MIN_WORK)
        team_product(team, n < blocks ? n : (int)blocks, vs_part, &j, work);
    else
        vs_part(&j, 0, 1);
    eb_perm_exec(&p->ew, cp, NULL, c, team);
    cnt->permuted_elems += p->bp_moved;
}

void eb_contract_exec(const eb_plan *p, const void *a, const void *b,
                      void *prep0, void *prep1, void *tmp, void *out,
                      eb_team *team, eb_exec_counters *cnt)
{
    if (p->kind == EB_KIND_COPY) {
        xform(p, &p->xf[0], a, out, team);
        cnt->permuted_elems += p->out_elems;
        return;
    }
    if (p->prep[0]) {
        xform(p, &p->xf[0], a, prep0, team);
        cnt->permuted_elems += p->prep_elems[0];
        a = prep0;
    }
    if (p->prep[1]) {
        xform(p, &p->xf[1], b, prep1, team);
        cnt->permuted_elems += p->prep_elems[1];
        b = prep1;
    }
    if (p->bp) {
        run_blocked(p, a, b, out, tmp, team, cnt);
        return;
    }
    if (p->cp) {
        run_chunked(p, a, b, out, tmp, team, cnt);
        return;
    }
    if (p->vs) {
        run_vs(p, a, b, out, tmp, team, cnt);
        return;
    }
    if (p->kind == EB_KIND_VEC_GEMM) {
        run_vec(p, a, b, out, tmp, team);
        return;
    }
    if (p->kind == EB_KIND_MUL || p->kind == EB_KIND_OUTER) {
        eb_perm_exec(&p->ew, a, b, out, team);
        return;
    }
    void *c = p->post ? tmp : out;
    run_batched(p, a, b, c, team, cnt);
    if (p->post) {
        xform(p, &p->xf_post, tmp, out, team);
        cnt->permuted_elems += p->out_elems;
    }
}
