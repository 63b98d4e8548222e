/* kernels: elementwise, outer, dot, small GEMM, permutation/reduction. */
#include "kernels.h"

#include <immintrin.h>
#include <string.h>

__attribute__((target("avx2"))) static void eb_kern_mul_avx2(int64_t n,
                                                     const double *a,
                                                     const double *b,
                                                     double *c)
{
    int64_t i = 0;
    /* Full vectors only in the main loop: 4 lanes x 4 registers. */
    for (; i + 16 <= n; i += 16) {
        __m256d x0 = _mm256_mul_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i));
        __m256d x1 = _mm256_mul_pd(_mm256_loadu_pd(a + i + 4), _mm256_loadu_pd(b + i + 4));
        __m256d x2 = _mm256_mul_pd(_mm256_loadu_pd(a + i + 8), _mm256_loadu_pd(b + i + 8));
        __m256d x3 = _mm256_mul_pd(_mm256_loadu_pd(a + i + 12), _mm256_loadu_pd(b + i + 12));
        _mm256_storeu_pd(c + i, x0);
        _mm256_storeu_pd(c + i + 4, x1);
        _mm256_storeu_pd(c + i + 8, x2);
        _mm256_storeu_pd(c + i + 12, x3);
    }
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(c + i, _mm256_mul_pd(_mm256_loadu_pd(a + i),
                                              _mm256_loadu_pd(b + i)));
    for (; i < n; i++)
        c[i] = a[i] * b[i];
}

void eb_kern_mul(int64_t n, const double *a, const double *b, double *c)
{
    if (__builtin_cpu_supports("avx2")) {
        eb_kern_mul_avx2(n, a, b, c);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        c[i] = a[i] * b[i];
}

void eb_kern_mul_strided(int64_t n, const double *a, int64_t sa,
                         const double *b, int64_t sb, double *c, int64_t sc)
{
    if (sa == 1 && sb == 1 && sc == 1) {
        eb_kern_mul(n, a, b, c);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        c[i * sc] = a[i * sa] * b[i * sb];
}

void eb_kern_outer(int64_t M, int64_t N, const double *a, int64_t sam,
                   const double *b, int64_t sbn, double *c, int64_t scm,
                   int64_t scn)
{
    if (scn == 1 && sbn == 1) {
        for (int64_t m = 0; m < M; m++) {
            double am = a[m * sam];
            double *restrict cr = c + m * scm;
            for (int64_t n = 0; n < N; n++)
                cr[n] = am * b[n];
        }
        return;
    }
    for (int64_t m = 0; m < M; m++) {
        double am = a[m * sam];
        for (int64_t n = 0; n < N; n++)
            c[m * scm + n * scn] = am * b[n * sbn];
    }
}

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

/* Columns [n0, n0 + nc) of C = A B for row-major B and C, row by row. */
__attribute__((target("avx2,fma"))) static void
eb_kern_rows_avx2(int64_t M, int64_t nc, int64_t K, const double *a,
                  int64_t sam, int64_t sak, const double *b, int64_t sbk,
                  double *c, int64_t scm)
{
    int64_t m = 0;
    if (nc % 4 == 0 && nc <= 12 && K >= 16) {
        const int nv = (int)(nc / 4);
        for (; m + 4 <= M; m += 4) {
            const double *ar = a + m * sam;
            double *cr = c + m * scm;
            if (nv == 3)
                eb_kern_rows4_avx2(K, ar, sam, sak, b, sbk, cr, scm, 3);
            else if (nv == 2)
                eb_kern_rows4_avx2(K, ar, sam, sak, b, sbk, cr, scm, 2);
            else
                eb_kern_rows4_avx2(K, ar, sam, sak, b, sbk, cr, scm, 1);
        }
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

/* C = A B for row-major B and C. Wide C is done in column panels so that
 * the panel of B stays in L1 while every row of A passes over it. */
__attribute__((target("avx2,fma"))) static void
eb_kern_small_gemm_avx2(int64_t M, int64_t N, int64_t K, const double *a,
                        int64_t sam, int64_t sak, const double *b, int64_t sbk,
                        double *c, int64_t scm)
{
    int64_t panel = K > 0 ? (2048 / K + 15) / 16 * 16 : N;
    if (panel < 16)
        panel = 16;
    for (int64_t n0 = 0; n0 < N; n0 += panel) {
        int64_t nc = N - n0 < panel ? N - n0 : panel;
        eb_kern_rows_avx2(M, nc, K, a, sam, sak, b + n0, sbk, c + n0, scm);
    }
}

/* Portable version of the same row-major case. */
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

void eb_kern_small_gemm(int64_t M, int64_t N, int64_t K, const double *a,
                        int64_t sam, int64_t sak, const double *b, int64_t sbk,
                        int64_t sbn, double *c, int64_t scm, int64_t scn)
{
    if (!(sbn == 1 && scn == 1) && sam == 1 && scm == 1) {
        /* Column-major C: compute C^T = B^T A^T, which is row-major. */
        eb_kern_small_gemm(N, M, K, b, sbn, sbk, a, sak, sam, c, scn, scm);
        return;
    }
    int fast = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (sbn == 1 && scn == 1) {
        if (fast)
            eb_kern_small_gemm_avx2(M, N, K, a, sam, sak, b, sbk, c, scm);
        else
            eb_kern_small_gemm_rows(M, N, K, a, sam, sak, b, sbk, c, scm);
        return;
    }
    if (sbn != 1 && fast && K * N <= SMALL_BTILE) {
        /* B without unit column stride: copy it row-major onto the stack
         * (K * N elements, against M * N * K multiply-adds) and use the
         * vector kernel instead of one dot product per element of C. */
        double bt[SMALL_BTILE];
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++)
                bt[k * N + n] = b[k * sbk + n * sbn];
        eb_kern_small_gemm(M, N, K, a, sam, sak, bt, N, 1, c, scm, scn);
        return;
    }
    if (sbn == 1 && fast && M * N <= SMALL_TILE) {
        /* Strided C: compute a compact tile on the stack, then scatter. */
        double tile[SMALL_TILE];
        eb_kern_small_gemm_avx2(M, N, K, a, sam, sak, b, sbk, tile, N);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                c[m * scm + n * scn] = tile[m * N + n];
        return;
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
            c[m * scm + n * scn] = eb_kern_dot(K, a + m * sam, sak, b + n * sbn,
                                               sbk);
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

/* out[i*so + j] = in[i*si + j*sj], in square tiles so that both the strided
 * reads and the strided writes of a tile stay in L1. */
static void eb_kern_copy_2d(int64_t ni, int64_t nj, const double *in, int64_t si,
                    int64_t sj, double *restrict out, int64_t so)
{
    enum { T = 16 };
    if (sj == 1 || nj < 4 || ni < 4) {
        for (int64_t i = 0; i < ni; i++)
            for (int64_t j = 0; j < nj; j++)
                out[i * so + j] = in[i * si + j * sj];
        return;
    }
    for (int64_t i0 = 0; i0 < ni; i0 += T)
        for (int64_t j0 = 0; j0 < nj; j0 += T) {
            int64_t ie = i0 + T < ni ? i0 + T : ni;
            int64_t je = j0 + T < nj ? j0 + T : nj;
            for (int64_t i = i0; i < ie; i++)
                for (int64_t j = j0; j < je; j++)
                    out[i * so + j] = in[i * si + j * sj];
        }
}

/*
 * Pure permutation. The 2-D tile pairs the output's contiguous dim (the
 * last) with the input's most contiguous other dim, so that a tile reads
 * whole cache lines on one side and writes them on the other; every other
 * dim is walked by an odometer.
 */
static void eb_kern_permute(const eb_xform *x, const double *in, double *out)
{
    int r = x->rank;
    int64_t ostride[EB_MAX_RANK];
    int64_t os = 1;
    for (int d = r - 1; d >= 0; d--) {
        ostride[d] = os;
        os *= x->shape[d];
    }
    int p = r - 2;
    for (int d = 0; d < r - 1; d++)
        if (x->in_stride[d] < x->in_stride[p])
            p = d;
    int64_t ni = x->shape[p], si = x->in_stride[p], so = ostride[p];
    int64_t nj = x->shape[r - 1], sj = x->in_stride[r - 1];
    int64_t idx[EB_MAX_RANK] = {0};
    int64_t ioff = 0, ooff = 0;
    for (;;) {
        eb_kern_copy_2d(ni, nj, in + ioff, si, sj, out + ooff, so);
        int d = r - 2;
        for (; d >= 0; d--) {
            if (d == p)
                continue;
            ioff += x->in_stride[d];
            ooff += ostride[d];
            if (++idx[d] < x->shape[d])
                break;
            ioff -= x->in_stride[d] * x->shape[d];
            ooff -= ostride[d] * x->shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

void eb_kern_xform(const eb_xform *x, const double *in, double *out)
{
    if (x->rank == 0) {
        eb_kern_reduce_row(x, in, 1, 0, out);
        return;
    }
    if (x->red_rank == 0 && x->rank >= 2) {
        eb_kern_permute(x, in, out);
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
