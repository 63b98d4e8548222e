/* vec512: the vector-batch GEMM in AVX-512 registers: blocks of 8 elements
 * of w a vector, and rows of C along n one element of w at a time. */
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

/*
 * The vector-batch GEMM in rows of C along n (eb_kern_vec_rows_avx512):
 * one small GEMM per element of w, the way a batch-outer GEMM runs, on a
 * block of B transposed to batch-outer and A read where it lies.
 */

/* Rows k of the pack of element x: pbw[(x K + k) N + n] = B(k, n) of
 * element x, from B's rows at b + bk[k] + bn[n] (w unit stride): four
 * rows of one k and four elements of w per 4 x 4 transpose, w outer, so
 * that each row of B is read along w once and the pack written in
 * order. */
__attribute__((target("avx2"))) void
eb_kern_vec_rows_pack(int64_t wb, int64_t K, int64_t N, const double *b,
                      const int64_t *bk, const int64_t *bn, double *pbw,
                      int64_t pfw)
{
    int64_t KN = K * N, n4 = N / 4 * 4, x = 0;
    for (; x + 4 <= wb; x += 4)
        for (int64_t k = 0; k < K; k++) {
            const double *bx = b + bk[k] + x;
            double *d = pbw + x * KN + k * N;
            /* B's K N rows are as many streams, too many for the
             * hardware prefetcher when B comes from memory: each line
             * of this block fetches the line of the next block's pfw
             * elements wb further on into L2. */
            if ((x & 7) == 0 && x < pfw)
                for (int64_t n = 0; n < N; n++)
                    _mm_prefetch((const char *)(bx + bn[n] + wb),
                                 _MM_HINT_T1);
            for (int64_t n = 0; n < n4; n += 4) {
                __m256d r[4] = {_mm256_loadu_pd(bx + bn[n]),
                                _mm256_loadu_pd(bx + bn[n + 1]),
                                _mm256_loadu_pd(bx + bn[n + 2]),
                                _mm256_loadu_pd(bx + bn[n + 3])};
                eb_transpose4(r);
                _Pragma("GCC unroll 4")
                for (int e = 0; e < 4; e++)
                    _mm256_storeu_pd(d + e * KN + n, r[e]);
            }
            for (int64_t n = n4; n < N; n++)
                for (int e = 0; e < 4; e++)
                    d[e * KN + n] = bx[bn[n] + e];
        }
    for (; x < wb; x++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t n = 0; n < N; n++)
                pbw[x * KN + k * N + n] = b[bk[k] + bn[n] + x];
}

/* Up to 8 rows (mr) by nv vectors of C_x over all of K: per contracted
 * row nv vectors of the pack and one broadcast of A per row, the sums in
 * registers from 0 (the chain of eb_kern_vec_gemm's blocks, k
 * ascending); the last vector masked to N's end. */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_block(int64_t K, const double *const *ar, const int64_t *ak,
           const double *bw, int64_t N, double *const *cr, __mmask8 last,
           const int mr, const int nv)
{
    __m512d acc[8][2];
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    for (int64_t k = 0; k < K; k++) {
        const double *bk = bw + k * N;
        __m512d b0 = nv == 1 ? _mm512_maskz_loadu_pd(last, bk)
                             : _mm512_loadu_pd(bk);
        __m512d b1 = nv == 2 ? _mm512_maskz_loadu_pd(last, bk + 8) : b0;
        int64_t o = ak[k];
        _Pragma("GCC unroll 8")
        for (int r = 0; r < mr; r++) {
            __m512d av = _mm512_set1_pd(ar[r][o]);
            acc[r][0] = _mm512_fmadd_pd(av, b0, acc[r][0]);
            if (nv == 2)
                acc[r][1] = _mm512_fmadd_pd(av, b1, acc[r][1]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int r = 0; r < mr; r++) {
        if (nv == 1) {
            _mm512_mask_storeu_pd(cr[r], last, acc[r][0]);
            continue;
        }
        _mm512_storeu_pd(cr[r], acc[r][0]);
        _mm512_mask_storeu_pd(cr[r] + 8, last, acc[r][1]);
    }
}

__attribute__((target("avx512f"))) void
eb_kern_vec_rows_avx512(int64_t wb, int64_t M, int64_t N, int64_t K,
                        const double *a, const int64_t *am, const int64_t *ak,
                        int64_t saw, const double *pbw, double *c,
                        const int64_t *cm, int64_t scw)
{
    int nv = N > 8 ? 2 : 1;
    __mmask8 last = (__mmask8)((1u << (N - 8 * (nv - 1))) - 1);
    /* A is read in place, along w in its rows' runs of k: the lines of
     * each run (a run start, then every 8 elements) are fetched a few
     * elements of w ahead, once per line of w. */
    int64_t kpf[EB_VEC_ROWS_MAX_K], npf = 0;
    for (int64_t k = 0, run = 0; k < K; k++) {
        if (k == 0 || ak[k] != ak[k - 1] + 1 || k - run == 8) {
            kpf[npf++] = k;
            run = k;
        }
    }
    int64_t ahead = 8 * saw < 32 ? 32 : 8 * saw;
    for (int64_t x = 0; x < wb; x++) {
        const double *bw = pbw + x * K * N;
        int fetch = ((x * saw) & 7) < saw;
        for (int64_t m = 0; m < M; m += 8) {
            int mr = M - m < 8 ? (int)(M - m) : 8;
            const double *ar[8];
            double *cr[8];
            for (int r = 0; r < mr; r++) {
                ar[r] = a + am[m + r] + x * saw;
                cr[r] = c + cm[m + r] + x * scw;
                /* C's rows are as many write streams: the row of
                 * element x + 8 is fetched now (its first and last
                 * line), so that its stores do not wait for memory. */
                const char *cq = (const char *)(cr[r] + 8 * scw);
                _mm_prefetch(cq, _MM_HINT_T0);
                _mm_prefetch(cq + 8 * N - 8, _MM_HINT_T0);
                if (fetch)
                    for (int64_t q = 0; q < npf; q++)
                        _mm_prefetch((const char *)(ar[r] + ak[kpf[q]] +
                                                    ahead),
                                     _MM_HINT_T0);
            }
#define EB_ROWS(MR) \
    (nv == 1 ? rows_block(K, ar, ak, bw, N, cr, last, MR, 1) \
             : rows_block(K, ar, ak, bw, N, cr, last, MR, 2))
            switch (mr) {
            case 8: EB_ROWS(8); break;
            case 7: EB_ROWS(7); break;
            case 6: EB_ROWS(6); break;
            case 5: EB_ROWS(5); break;
            case 4: EB_ROWS(4); break;
            case 3: EB_ROWS(3); break;
            case 2: EB_ROWS(2); break;
            default: EB_ROWS(1); break;
            }
#undef EB_ROWS
        }
    }
}
