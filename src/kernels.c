/* kernels: dot, small GEMM, vector-batch GEMM, reduction (elementwise
 * multiplies, outer products and permutations: permute.c). */
#include "kernels.h"

#include <immintrin.h>
#include <string.h>

double eb_kern_dot(int64_t K, const double *a, int64_t sa, const double *b,
                   int64_t sb)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = 0;
    if (sa == 1 && sb == 1) {
        for (; k + 4 <= K; k += 4) {
            s0 += a[k] * b[k];
            s1 += a[k + 1] * b[k + 1];
            s2 += a[k + 2] * b[k + 2];
            s3 += a[k + 3] * b[k + 3];
        }
    }
    for (; k < K; k++)
        s0 += a[k * sa] * b[k * sb];
    return (s0 + s1) + (s2 + s3);
}

/* Largest C tile and B copy (elements) the small GEMM keeps on the stack. */
enum { SMALL_TILE = 1024, SMALL_BTILE = 4096 };

/* Rows of a vector-batch block the packer prefetches ahead. */
#define VEC_PREFETCH 8

/* Contracted rows per slice of the vector-batch GEMM (see below). */
#ifndef VEC_KSLICE
#define VEC_KSLICE 48
#endif


/* One row block of C for a row-major B and C: nv full vectors of 4
 * accumulated over K in registers, then stored once (beta = 0). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_row_block_avx2(int64_t K, const double *ar, int64_t sak, const double *b,
               int64_t sbk, double *cr, const int nv)
{
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(),
                      _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (int64_t k = 0; k < K; k++) {
        __m256d av = _mm256_broadcast_sd(ar + k * sak);
        const double *bk = b + k * sbk;
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++)
            acc[v] = _mm256_fmadd_pd(av, _mm256_loadu_pd(bk + 4 * v), acc[v]);
    }
    _Pragma("GCC unroll 4")
    for (int v = 0; v < nv; v++)
        _mm256_storeu_pd(cr + 4 * v, acc[v]);
}

/* Four rows of C at once, nv <= 3 vectors each: twelve independent FMA
 * chains hide the FMA latency that limits the one-row kernel when K is
 * long and N narrow (the lm networks' 12-wide batched steps). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_rows4_avx2(int64_t K, const double *ar, int64_t sam, int64_t sak,
                   const double *b, int64_t sbk, double *cr, int64_t scm,
                   const int nv)
{
    __m256d acc[4][3];
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++)
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm256_setzero_pd();
    for (int64_t k = 0; k < K; k++) {
        const double *bk = b + k * sbk;
        __m256d bv[3];
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++)
            bv[v] = _mm256_loadu_pd(bk + 4 * v);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < 4; r++) {
            __m256d av = _mm256_broadcast_sd(ar + r * sam + k * sak);
            _Pragma("GCC unroll 4")
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm256_fmadd_pd(av, bv[v], acc[r][v]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int r = 0; r < 4; r++)
        _Pragma("GCC unroll 4")
        for (int v = 0; v < nv; v++)
            _mm256_storeu_pd(cr + r * scm + 4 * v, acc[r][v]);
}

/* The last N % 4 columns, with masked loads and stores. */
__attribute__((target("avx2,fma"))) static void
eb_kern_row_tail_avx2(int64_t K, const double *ar, int64_t sak, const double *b,
              int64_t sbk, double *cr, int rem)
{
    const __m256i mask = _mm256_setr_epi64x(-1, rem > 1 ? -1 : 0,
                                            rem > 2 ? -1 : 0, 0);
    __m256d acc = _mm256_setzero_pd();
    for (int64_t k = 0; k < K; k++)
        acc = _mm256_fmadd_pd(_mm256_broadcast_sd(ar + k * sak),
                              _mm256_maskload_pd(b + k * sbk, mask), acc);
    _mm256_maskstore_pd(cr, mask, acc);
}

/* Columns [0, nc) of C = A B for row-major B and C: four rows of C at a
 * time in chunks of 12, 8 or 4 columns (the panel of B stays in L1 while
 * the four rows of A pass over it), then the remaining rows one by one. */
__attribute__((target("avx2,fma"))) static void
eb_kern_rows_avx2(int64_t M, int64_t nc, int64_t K, const double *a,
                  int64_t sam, int64_t sak, const double *b, int64_t sbk,
                  double *c, int64_t scm)
{
    int64_t m = 0;
    for (; m + 4 <= M; m += 4) {
        const double *ar = a + m * sam;
        double *cr = c + m * scm;
        int64_t n = 0;
        for (; n + 12 <= nc; n += 12)
            eb_kern_rows4_avx2(K, ar, sam, sak, b + n, sbk, cr + n, scm, 3);
        if (nc - n >= 8) {
            eb_kern_rows4_avx2(K, ar, sam, sak, b + n, sbk, cr + n, scm, 2);
            n += 8;
        } else if (nc - n >= 4) {
            eb_kern_rows4_avx2(K, ar, sam, sak, b + n, sbk, cr + n, scm, 1);
            n += 4;
        }
        if (n < nc)
            for (int r = 0; r < 4; r++)
                eb_kern_row_tail_avx2(K, ar + r * sam, sak, b + n, sbk,
                                      cr + r * scm + n, (int)(nc - n));
    }
    for (; m < M; m++) {
        const double *ar = a + m * sam;
        double *cr = c + m * scm;
        int64_t n = 0;
        for (; n + 16 <= nc; n += 16)
            eb_kern_row_block_avx2(K, ar, sak, b + n, sbk, cr + n, 4);
        switch ((nc - n) / 4) {
        case 3: eb_kern_row_block_avx2(K, ar, sak, b + n, sbk, cr + n, 3); break;
        case 2: eb_kern_row_block_avx2(K, ar, sak, b + n, sbk, cr + n, 2); break;
        case 1: eb_kern_row_block_avx2(K, ar, sak, b + n, sbk, cr + n, 1); break;
        default: break;
        }
        n += (nc - n) / 4 * 4;
        if (n < nc)
            eb_kern_row_tail_avx2(K, ar, sak, b + n, sbk, cr + n,
                                  (int)(nc - n));
    }
}

/* Panel width for a K-long panel of B: a multiple of 12 columns, about 16
 * KiB of B, so that the panel stays in L1 while all rows of A pass. */
static int64_t panel_width(int64_t K)
{
    int64_t w = 2048 / K / 12 * 12;
    return w < 12 ? 12 : w;
}

/* C = A B for row-major C and any B: column panels of B (copied to the
 * stack in row-major order when B's columns are not contiguous, at a cost
 * of K elements per column against M multiply-adds per element copied).
 * Returns 0 when a copied panel would not fit on the stack. */
__attribute__((target("avx2,fma"))) static int
eb_kern_gemm_rowc_avx2(int64_t M, int64_t N, int64_t K, const double *a,
                       int64_t sam, int64_t sak, const double *b, int64_t sbk,
                       int64_t sbn, double *c, int64_t scm)
{
    int64_t panel = panel_width(K);
    if (sbn != 1 && K * (N < panel ? N : panel) > SMALL_BTILE)
        return 0;
    double bt[SMALL_BTILE];
    for (int64_t n0 = 0; n0 < N; n0 += panel) {
        int64_t nc = N - n0 < panel ? N - n0 : panel;
        const double *bp = b + n0 * sbn;
        int64_t ldb = sbk;
        if (sbn != 1) {
            for (int64_t k = 0; k < K; k++)
                for (int64_t n = 0; n < nc; n++)
                    bt[k * nc + n] = bp[k * sbk + n * sbn];
            bp = bt;
            ldb = nc;
        }
        eb_kern_rows_avx2(M, nc, K, a, sam, sak, bp, ldb, c + n0, scm);
    }
    return 1;
}

/* Portable version of the row-major case. */
static void eb_kern_small_gemm_rows(int64_t M, int64_t N, int64_t K, const double *a,
                            int64_t sam, int64_t sak, const double *b,
                            int64_t sbk, double *c, int64_t scm)
{
    for (int64_t m = 0; m < M; m++) {
        double *restrict cr = c + m * scm;
        double am = a[m * sam];
        for (int64_t n = 0; n < N; n++)
            cr[n] = am * b[n];
        for (int64_t k = 1; k < K; k++) {
            const double *restrict br = b + k * sbk;
            am = a[m * sam + k * sak];
            for (int64_t n = 0; n < N; n++)
                cr[n] += am * br[n];
        }
    }
}

static void eb_kern_gemm_dots(int64_t M, int64_t N, int64_t K, const double *a,
                              int64_t sam, int64_t sak, const double *b,
                              int64_t sbk, int64_t sbn, double *c, int64_t scm,
                              int64_t scn)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
            c[m * scm + n * scn] = eb_kern_dot(K, a + m * sam, sak, b + n * sbn,
                                               sbk);
}

void eb_kern_small_gemm(int64_t M, int64_t N, int64_t K, const double *a,
                        int64_t sam, int64_t sak, const double *b, int64_t sbk,
                        int64_t sbn, double *c, int64_t scm, int64_t scn)
{
    if (scn != 1 && scm == 1) {
        /* Column-major C: compute C^T = B^T A^T, whose rows are C's
         * contiguous columns. */
        eb_kern_small_gemm(N, M, K, b, sbn, sbk, a, sak, sam, c, scn, scm);
        return;
    }
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        if (sbn == 1 && scn == 1)
            eb_kern_small_gemm_rows(M, N, K, a, sam, sak, b, sbk, c, scm);
        else
            eb_kern_gemm_dots(M, N, K, a, sam, sak, b, sbk, sbn, c, scm, scn);
        return;
    }
    if (scn == 1) {
        if (!eb_kern_gemm_rowc_avx2(M, N, K, a, sam, sak, b, sbk, sbn, c, scm))
            eb_kern_gemm_dots(M, N, K, a, sam, sak, b, sbk, sbn, c, scm, scn);
        return;
    }
    if (N > SMALL_TILE) {
        eb_kern_gemm_dots(M, N, K, a, sam, sak, b, sbk, sbn, c, scm, scn);
        return;
    }
    /* C strided both ways: blocks of rows into a compact tile on the
     * stack, then scattered. */
    double tile[SMALL_TILE];
    int64_t rows = SMALL_TILE / N;
    for (int64_t m0 = 0; m0 < M; m0 += rows) {
        int64_t mc = M - m0 < rows ? M - m0 : rows;
        if (!eb_kern_gemm_rowc_avx2(mc, N, K, a + m0 * sam, sam, sak, b, sbk,
                                    sbn, tile, N)) {
            eb_kern_gemm_dots(mc, N, K, a + m0 * sam, sam, sak, b, sbk, sbn,
                              c + m0 * scm, scm, scn);
            continue;
        }
        for (int64_t m = 0; m < mc; m++)
            for (int64_t n = 0; n < N; n++)
                c[(m0 + m) * scm + n * scn] = tile[m * N + n];
    }
}

/* One block of C for the vector-batch GEMM on packed rows: mb (1..3) rows
 * m by nn (1..4) columns n, for one vector of 4 elements of w, summed over
 * K in twelve registers at most. Row k of A's row i is at pa[i] + 8 k, of
 * B's column j at pb[j] + ldb k: each load feeds 3 or 4 multiply-adds, so
 * the packed block is read from L2 at the rate the FMA units use it. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
eb_kern_vec_block_avx2(int64_t K, const double *const *pa,
                       const double *const *pb, int64_t ldb, double *c,
                       const int64_t *cm, const int64_t *cn, int64_t scw,
                       int add, const int mb, const int nn)
{
    __m256d acc[3][4];
    _Pragma("GCC unroll 3")
    for (int i = 0; i < mb; i++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            const double *o = c + cm[i] + cn[j];
            acc[i][j] = !add ? _mm256_setzero_pd()
                        : scw == 1 ? _mm256_loadu_pd(o)
                        : _mm256_setr_pd(o[0], o[scw], o[2 * scw], o[3 * scw]);
        }
    for (int64_t k = 0; k < K; k++) {
        __m256d bv[4];
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++)
            bv[j] = _mm256_loadu_pd(pb[j] + ldb * k);
        _Pragma("GCC unroll 3")
        for (int i = 0; i < mb; i++) {
            __m256d av = _mm256_loadu_pd(pa[i] + 8 * k);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < nn; j++)
                acc[i][j] = _mm256_fmadd_pd(av, bv[j], acc[i][j]);
        }
    }
    _Pragma("GCC unroll 3")
    for (int i = 0; i < mb; i++)
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            double *o = c + cm[i] + cn[j];
            if (scw == 1) {
                _mm256_storeu_pd(o, acc[i][j]);
            } else {
                double t[4];
                _mm256_storeu_pd(t, acc[i][j]);
                for (int x = 0; x < 4; x++)
                    o[x * scw] = t[x];
            }
        }
}

/* C for one packed block of wb elements of w, chunk by
 * chunk of 8 elements: a chunk's rows of A and B (64 bytes each) lie one
 * after another, without the cache-set conflicts of rows a power of two
 * apart. K is cut into slices of VEC_KSLICE so that the rows one block of
 * C reads (3 of A, 4 of B) stay in L1 for both vectors of the chunk;
 * slices after the first add to C. */
__attribute__((target("avx2,fma"))) static void
eb_kern_vec_packed_avx2(int64_t wb, int64_t M, int64_t N, int64_t K, const double *pa,
                        const double *pb, double *c, const int64_t *cm,
                        const int64_t *cn, int64_t scw)
{
    for (int64_t w8 = 0; w8 + 4 <= wb; w8 += 8) {
        const double *pac = pa + w8 * M * K;
        const double *pbc = pb + w8 * K * N;
        for (int64_t k0 = 0; k0 < K; k0 += VEC_KSLICE) {
            int64_t kk = K - k0 < VEC_KSLICE ? K - k0 : VEC_KSLICE;
            for (int64_t n = 0; n < N; n += 4) {
                int nn = N - n < 4 ? (int)(N - n) : 4;
                for (int64_t m = 0; m < M; m += 3) {
                    int mb = M - m < 3 ? (int)(M - m) : 3;
                    for (int64_t h = 0; h < 8 && w8 + h + 4 <= wb; h += 4) {
                        const double *pai[3], *pbj[4];
                        for (int i = 0; i < mb; i++)
                            pai[i] = pac + ((m + i) * K + k0) * 8 + h;
                        for (int j = 0; j < nn; j++)
                            pbj[j] = pbc + (k0 * N + n + j) * 8 + h;
                        double *cw = c + (w8 + h) * scw;
                        int add = k0 > 0;
#define EB_VEC_BLOCK(MB, NN) \
    eb_kern_vec_block_avx2(kk, pai, pbj, 8 * N, cw, cm + m, cn + n, scw, add, \
                           MB, NN)
#define EB_VEC_ROW(MB) \
    switch (nn) { \
    case 4: EB_VEC_BLOCK(MB, 4); break; \
    case 3: EB_VEC_BLOCK(MB, 3); break; \
    case 2: EB_VEC_BLOCK(MB, 2); break; \
    default: EB_VEC_BLOCK(MB, 1); break; \
    }
                        if (mb == 3) {
                            EB_VEC_ROW(3)
                        } else if (mb == 2) {
                            EB_VEC_ROW(2)
                        } else {
                            EB_VEC_ROW(1)
                        }
#undef EB_VEC_ROW
#undef EB_VEC_BLOCK
                    }
                }
            }
        }
    }
}

__attribute__((target("avx2"))) static void
eb_kern_vec_pack_avx2(int64_t i0, int64_t i1, int64_t nj, const double *src,
                      const int64_t *oi, const int64_t *oj, int64_t wb,
                      int64_t rows, double *dst)
{
    int64_t full = wb / 8 * 8;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = 0; j < nj; j++) {
            const double *s = src + oi[i] + oj[j];
            /* The rows are short runs far apart, which the hardware
             * prefetcher does not follow: fetch the row VEC_PREFETCH rows
             * ahead now, so that its misses overlap this row's copy. */
            int64_t pi = i, pj = j + VEC_PREFETCH;
            while (pj >= nj) {
                pj -= nj;
                pi++;
            }
            if (pi < i1) {
                const char *q = (const char *)(src + oi[pi] + oj[pj]);
                for (int64_t x = 0; x < wb; x += 8)
                    _mm_prefetch(q + 8 * x, _MM_HINT_T0);
            }
            double *d = dst + (i * nj + j) * 8;
            for (int64_t x = 0; x < full; x += 8) {
                _mm256_storeu_pd(d + x * rows, _mm256_loadu_pd(s + x));
                _mm256_storeu_pd(d + x * rows + 4, _mm256_loadu_pd(s + x + 4));
            }
            for (int64_t x = full; x < wb; x++)
                d[full * rows + x - full] = s[x];
        }
}

void eb_kern_vec_pack(int64_t i0, int64_t i1, int64_t nj, const double *src,
                      const int64_t *oi, const int64_t *oj, int64_t wb,
                      int64_t rows, double *dst)
{
    if (__builtin_cpu_supports("avx2")) {
        eb_kern_vec_pack_avx2(i0, i1, nj, src, oi, oj, wb, rows, dst);
        return;
    }
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = 0; j < nj; j++) {
            const double *s = src + oi[i] + oj[j];
            double *d = dst + (i * nj + j) * 8;
            for (int64_t x = 0; x < wb; x++)
                d[x / 8 * 8 * rows + x % 8] = s[x];
        }
}

void eb_kern_vec_gemm(int64_t wb, int64_t M, int64_t N, int64_t K, const double *pa, const double *pb,
                      double *c, const int64_t *cm, const int64_t *cn,
                      int64_t scw)
{
    int64_t w = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        eb_kern_vec_packed_avx2(wb, M, N, K, pa, pb, c, cm, cn, scw);
        w = wb / 4 * 4;
    }
    for (; w < wb; w++) {
        const double *pac = pa + w / 8 * 8 * M * K + w % 8;
        const double *pbc = pb + w / 8 * 8 * K * N + w % 8;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += pac[(m * K + k) * 8] * pbc[(k * N + n) * 8];
                c[cm[m] + cn[n] + w * scw] = s;
            }
    }
}

void eb_xform_simplify(eb_xform *x)
{
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (x->shape[d] == 1)
            continue;
        if (r > 0 && x->in_stride[r - 1] == x->in_stride[d] * x->shape[d]) {
            /* Contiguous in the input as in the output: merge into one. */
            x->shape[r - 1] *= x->shape[d];
            x->in_stride[r - 1] = x->in_stride[d];
            continue;
        }
        x->shape[r] = x->shape[d];
        x->in_stride[r] = x->in_stride[d];
        r++;
    }
    x->rank = r;
    int q = 0;
    for (int e = 0; e < x->red_rank; e++) {
        if (x->red_shape[e] == 1)
            continue;
        x->red_shape[q] = x->red_shape[e];
        x->red_stride[q] = x->red_stride[e];
        q++;
    }
    x->red_rank = q;
    eb_xform_plan(x);
}

int64_t eb_xform_out_elems(const eb_xform *x)
{
    int64_t n = 1;
    for (int d = 0; d < x->rank; d++)
        n *= x->shape[d];
    return n;
}

/* Sum over the reduced dims of in (offset base) into one row of out. */
static void eb_kern_reduce_row(const eb_xform *x, const double *in, int64_t n,
                       int64_t s, double *restrict out)
{
    int64_t idx[EB_MAX_RANK] = {0};
    int64_t off = 0;
    for (int64_t j = 0; j < n; j++)
        out[j] = in[j * s];
    for (;;) {
        int e = x->red_rank - 1;
        for (; e >= 0; e--) {
            off += x->red_stride[e];
            if (++idx[e] < x->red_shape[e])
                break;
            off -= x->red_stride[e] * x->red_shape[e];
            idx[e] = 0;
        }
        if (e < 0)
            return;
        const double *p = in + off;
        for (int64_t j = 0; j < n; j++)
            out[j] += p[j * s];
    }
}

void eb_xform_plan(eb_xform *x)
{
    x->planned = x->red_rank == 0;
    if (!x->planned)
        return;
    int64_t os[EB_MAX_RANK], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        os[d] = s;
        s *= x->shape[d];
    }
    eb_perm_plan(&x->perm, x->rank, x->shape, os, x->in_stride, NULL);
}

void eb_kern_xform(const eb_xform *x, const double *in, double *out,
                   struct eb_team *team)
{
    if (x->red_rank == 0) {
        eb_xform local;
        if (!x->planned) {
            local = *x;
            eb_xform_plan(&local);
            x = &local;
        }
        eb_perm_exec(&x->perm, in, NULL, out, team);
        return;
    }
    if (x->rank == 0) {
        eb_kern_reduce_row(x, in, 1, 0, out);
        return;
    }
    int r = x->rank;
    int64_t n = x->shape[r - 1], s = x->in_stride[r - 1];
    int64_t idx[EB_MAX_RANK] = {0};
    int64_t off = 0;
    for (double *o = out;; o += n) {
        if (x->red_rank == 0)
            for (int64_t j = 0; j < n; j++)
                o[j] = in[off + j * s];
        else
            eb_kern_reduce_row(x, in + off, n, s, o);
        int d = r - 2;
        for (; d >= 0; d--) {
            off += x->in_stride[d];
            if (++idx[d] < x->shape[d])
                break;
            off -= x->in_stride[d] * x->shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}
