/* vec512: the vector-batch GEMM's blocks, 8 elements of w a vector. */
#include "vec512.h"

#include <immintrin.h>

#include "simd.h"

/*
 * The walk is the AVX2 blocks' (kernels.c, eb_kern_vec_packed_avx2):
 * chunk by chunk of 8 elements of w, K in slices of KSLICE rows (slices
 * after the first add to C), C in blocks of up to 4 rows by 4 columns,
 * rows outer where the chunk's slice of B fits B_L1 bytes, else columns
 * outer. Here one vector holds a whole chunk, where the AVX2 blocks take
 * it in two halves: a block keeps 16 accumulators and per contracted row
 * loads 4 vectors of A and 4 of B against 16 multiply-adds. The last
 * chunk of a block of w is masked: lanes past wb are neither read nor
 * written; whole chunks load without a mask (10-14% less time for the
 * blocks of lm's 1900 x (16 x 16 x 16) steps).
 */
enum { KSLICE = 48, B_L1 = 16384 };

/* Rows w < nw of a 4-column run of C (at c + w scw, 4 adjacent doubles)
 * into r[0..3] as vectors along w (lanes past nw zero). */
__attribute__((target("avx512f"), always_inline)) static inline void
load_rows(const double *c, int64_t scw, int nw, __m512d *r)
{
    __m256d lo[4], hi[4];
    _Pragma("GCC unroll 4")
    for (int w = 0; w < 4; w++) {
        lo[w] = w < nw ? _mm256_loadu_pd(c + w * scw) : _mm256_setzero_pd();
        hi[w] = w + 4 < nw ? _mm256_loadu_pd(c + (w + 4) * scw)
                           : _mm256_setzero_pd();
    }
    eb_transpose4(lo);
    eb_transpose4(hi);
    _Pragma("GCC unroll 4")
    for (int x = 0; x < 4; x++)
        r[x] = _mm512_insertf64x4(_mm512_castpd256_pd512(lo[x]), hi[x], 1);
}

/* The inverse of load_rows: r[0..3] (vectors along w) to rows w < nw. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_rows(double *c, int64_t scw, int nw, const __m512d *r)
{
    __m256d lo[4], hi[4];
    _Pragma("GCC unroll 4")
    for (int x = 0; x < 4; x++) {
        lo[x] = _mm512_castpd512_pd256(r[x]);
        hi[x] = _mm512_extractf64x4_pd(r[x], 1);
    }
    eb_transpose4(lo);
    eb_transpose4(hi);
    _Pragma("GCC unroll 4")
    for (int w = 0; w < 4; w++) {
        if (w < nw)
            _mm256_storeu_pd(c + w * scw, lo[w]);
        if (w + 4 < nw)
            _mm256_storeu_pd(c + (w + 4) * scw, hi[w]);
    }
}

/*
 * One block of mb x nn elements of C over kk contracted rows: row i of A
 * at pa[i] (contracted rows 8 apart), column j of B at pb[j] (rows ldb
 * apart); C's element (i, j) of lane w at c + cm[i] + cn[j] + w scw. tr:
 * nn = 4 columns one after another in C and scw != 1, stored as rows of
 * 4 transposed in registers; else one vector per element, contiguous
 * (scw = 1) or scattered.
 */
__attribute__((target("avx512f"), always_inline)) static inline void
block(int64_t kk, const double *const *pa, const double *const *pb,
      int64_t ldb, double *c, const int64_t *cm, const int64_t *cn,
      int64_t scw, int nw, int add, int tr, const int mb, const int nn,
      const int full)
{
    __mmask8 lanes = (__mmask8)((1u << nw) - 1);
    __m512i idx = _mm512_set_epi64(7 * scw, 6 * scw, 5 * scw, 4 * scw,
                                   3 * scw, 2 * scw, scw, 0);
    __m512d acc[4][4];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < mb; i++) {
        if (nn == 4 && tr) {
            __m512d r[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(),
                            _mm512_setzero_pd(), _mm512_setzero_pd()};
            if (add)
                load_rows(c + cm[i] + cn[0], scw, nw, r);
            _Pragma("GCC unroll 4")
            for (int j = 0; j < 4; j++)
                acc[i][j] = r[j];
            continue;
        }
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            const double *o = c + cm[i] + cn[j];
            acc[i][j] = !add ? _mm512_setzero_pd()
                        : scw == 1
                            ? _mm512_maskz_loadu_pd(lanes, o)
                            : _mm512_mask_i64gather_pd(_mm512_setzero_pd(),
                                                       lanes, idx, o, 8);
        }
    }
    for (int64_t k = 0; k < kk; k++) {
        __m512d av[4];
        _Pragma("GCC unroll 4")
        for (int i = 0; i < mb; i++)
            av[i] = full ? _mm512_loadu_pd(pa[i] + 8 * k)
                         : _mm512_maskz_loadu_pd(lanes, pa[i] + 8 * k);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            __m512d bv = full ? _mm512_loadu_pd(pb[j] + ldb * k)
                              : _mm512_maskz_loadu_pd(lanes, pb[j] + ldb * k);
            _Pragma("GCC unroll 4")
            for (int i = 0; i < mb; i++)
                acc[i][j] = _mm512_fmadd_pd(av[i], bv, acc[i][j]);
        }
    }
    _Pragma("GCC unroll 4")
    for (int i = 0; i < mb; i++) {
        if (nn == 4 && tr) {
            /* (copied: acc's address never taken keeps it in registers) */
            __m512d r[4] = {acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
            store_rows(c + cm[i] + cn[0], scw, nw, r);
            continue;
        }
        _Pragma("GCC unroll 4")
        for (int j = 0; j < nn; j++) {
            double *o = c + cm[i] + cn[j];
            if (scw == 1)
                _mm512_mask_storeu_pd(o, lanes, acc[i][j]);
            else
                _mm512_mask_i64scatter_pd(o, lanes, idx, acc[i][j], 8);
        }
    }
}

/* The block at rows m, columns n of the chunk at pac, pbc (kernels.h's
 * pack: A's row (m, k) at (m K + k) 8, B's (k, n) at (k N + n) 8), over
 * the slice of kk contracted rows from k0. */
__attribute__((target("avx512f"))) static void
tile(int64_t M, int64_t N, int64_t K, int64_t k0, int64_t kk, int64_t m,
     int64_t n, const double *pac, const double *pbc, double *c,
     const int64_t *cm, const int64_t *cn, int64_t scw, int nw)
{
    int nn = N - n < 4 ? (int)(N - n) : 4;
    int mb = M - m < 4 ? (int)(M - m) : 4;
    int tr = nn == 4 && scw != 1 && cn[n + 1] == cn[n] + 1 &&
             cn[n + 2] == cn[n] + 2 && cn[n + 3] == cn[n] + 3;
    const double *pai[4], *pbj[4];
    for (int i = 0; i < mb; i++)
        pai[i] = pac + ((m + i) * K + k0) * 8;
    for (int j = 0; j < nn; j++)
        pbj[j] = pbc + (k0 * N + n + j) * 8;
    int add = k0 > 0;
#define EB_VEC512_BLOCK(MB, NN) \
    (nw == 8 ? block(kk, pai, pbj, 8 * N, c, cm + m, cn + n, scw, nw, add, \
                     tr, MB, NN, 1) \
             : block(kk, pai, pbj, 8 * N, c, cm + m, cn + n, scw, nw, add, \
                     tr, MB, NN, 0))
#define EB_VEC512_ROW(MB) \
    switch (nn) { \
    case 4: EB_VEC512_BLOCK(MB, 4); break; \
    case 3: EB_VEC512_BLOCK(MB, 3); break; \
    case 2: EB_VEC512_BLOCK(MB, 2); break; \
    default: EB_VEC512_BLOCK(MB, 1); break; \
    }
    switch (mb) {
    case 4: EB_VEC512_ROW(4) break;
    case 3: EB_VEC512_ROW(3) break;
    case 2: EB_VEC512_ROW(2) break;
    default: EB_VEC512_ROW(1) break;
    }
#undef EB_VEC512_ROW
#undef EB_VEC512_BLOCK
}

void eb_kern_vec_packed_avx512(int64_t wb, int64_t M, int64_t N, int64_t K,
                               const double *pa, const double *pb, double *c,
                               const int64_t *cm, const int64_t *cn,
                               int64_t scw)
{
    for (int64_t w8 = 0; w8 < wb; w8 += 8) {
        int nw = wb - w8 < 8 ? (int)(wb - w8) : 8;
        const double *pac = pa + w8 * M * K, *pbc = pb + w8 * K * N;
        double *cw = c + w8 * scw;
        for (int64_t k0 = 0; k0 < K; k0 += KSLICE) {
            int64_t kk = K - k0 < KSLICE ? K - k0 : KSLICE;
            if (kk * N * 64 <= B_L1)
                for (int64_t m = 0; m < M; m += 4)
                    for (int64_t n = 0; n < N; n += 4)
                        tile(M, N, K, k0, kk, m, n, pac, pbc, cw, cm, cn,
                             scw, nw);
            else
                for (int64_t n = 0; n < N; n += 4)
                    for (int64_t m = 0; m < M; m += 4)
                        tile(M, N, K, k0, kk, m, n, pac, pbc, cw, cm, cn,
                             scw, nw);
        }
    }
}
