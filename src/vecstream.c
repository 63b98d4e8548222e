/* vecstream: the streamed vector-batch GEMM (vecstream.h). */
#include "vecstream.h"

#include <immintrin.h>

#include "gemm512.h"

/* Rows of C' per register block (9 x 3 accumulators, 3 vectors of Y and
 * one of X': 31 of the 32 registers). */
enum { MB_MAX = 9 };

int eb_vs_avx512(void) { return eb_gemm512_usable(); }

void eb_vs_pack(const eb_vs *g, const double *x, const int64_t *xr,
                const int64_t *xk, const int64_t *xm, const int64_t *xl,
                double *xp)
{
    for (int64_t r = 0; r < g->R; r++)
        for (int64_t k = 0; k < g->K; k++)
            for (int64_t m = 0; m < g->M; m++) {
                const double *s = x + xr[r] + xk[k] + xm[m];
                double *d = xp + ((r * g->K + k) * g->M + m) * g->Lp;
                for (int64_t l = 0; l < g->L; l++)
                    d[l] = s[xl[l]];
                for (int64_t l = g->L; l < g->Lp; l++)
                    d[l] = 0.0;
            }
}

static void gemm_scalar(const eb_vs *g, const double *xp, const double *y,
                        double *cp, int64_t n0, int64_t n1)
{
    int64_t L = g->L, Lp = g->Lp, M = g->M, N = g->N, K = g->K;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t r = 0; r < g->R; r++)
            for (int64_t m = 0; m < M; m++) {
                double *c = cp + ((r * M + m) * N + n) * Lp;
                const double *yy = y + g->yr[r] + g->yn[n];
                for (int64_t l = 0; l < L; l++) {
                    double s = 0.0;
                    for (int64_t k = 0; k < K; k++)
                        s += xp[((r * K + k) * M + m) * Lp + l] *
                             yy[g->yk[k] + l];
                    c[l] = s;
                }
            }
}

/*
 * One register block: rows m0 .. m0 + MB - 1 of C' (MB a constant at
 * every call, so the loops unroll into registers), columns y0..y2 (Y at
 * the block's r, n and chunk; a column past the block's nz repeats the
 * last one and is not stored), lanes of mask mk, over all of K.
 */
__attribute__((target("avx512f"), always_inline)) static inline void
block(const int MB, const double *xa, int64_t sxk, int64_t Lp,
      const double *y0, const double *y1, const double *y2,
      const int64_t *yk, int64_t K, __mmask8 mk, double *c, int64_t scm,
      int nz, int stream)
{
    __m512d acc[MB_MAX][EB_VS_NB];
    _Pragma("GCC unroll 9")
    for (int i = 0; i < MB; i++)
        _Pragma("GCC unroll 3")
        for (int z = 0; z < EB_VS_NB; z++)
            acc[i][z] = _mm512_setzero_pd();
    for (int64_t k = 0; k < K; k++) {
        int64_t o = yk[k];
        __m512d b0 = _mm512_maskz_loadu_pd(mk, y0 + o),
                b1 = _mm512_maskz_loadu_pd(mk, y1 + o),
                b2 = _mm512_maskz_loadu_pd(mk, y2 + o);
        const double *a = xa + k * sxk;
        _Pragma("GCC unroll 9")
        for (int i = 0; i < MB; i++) {
            __m512d av = _mm512_load_pd(a + i * Lp);
            acc[i][0] = _mm512_fmadd_pd(av, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_pd(av, b1, acc[i][1]);
            acc[i][2] = _mm512_fmadd_pd(av, b2, acc[i][2]);
        }
    }
    _Pragma("GCC unroll 9")
    for (int i = 0; i < MB; i++)
        _Pragma("GCC unroll 3")
        for (int z = 0; z < EB_VS_NB; z++) {
            if (z >= nz)
                break;
            double *d = c + i * scm + z * Lp;
            if (stream)
                _mm512_stream_pd(d, acc[i][z]);
            else
                _mm512_store_pd(d, acc[i][z]);
        }
}

/* Prefetch into L2 the lines of Y that chunk (r, j) of the block at
 * columns y0..y2 reads: each vector's first element's line, and with
 * last > 0 (the last chunk of the run: the chunks before it start where
 * each one's last line is) its element `last` too. Both lines of every
 * vector took 9% longer in gm_queen's step 148 (128-134 against
 * 117-120 ms for the kernel). */
__attribute__((target("avx512f"), always_inline)) static inline void
prefetch(const double *y0, const double *y1, const double *y2,
         const int64_t *yk, int64_t K, int last)
{
    for (int64_t k = 0; k < K; k++) {
        int64_t o = yk[k];
        _mm_prefetch((const char *)(y0 + o), _MM_HINT_T1);
        _mm_prefetch((const char *)(y1 + o), _MM_HINT_T1);
        _mm_prefetch((const char *)(y2 + o), _MM_HINT_T1);
        if (last) {
            _mm_prefetch((const char *)(y0 + o + last), _MM_HINT_T1);
            _mm_prefetch((const char *)(y1 + o + last), _MM_HINT_T1);
            _mm_prefetch((const char *)(y2 + o + last), _MM_HINT_T1);
        }
    }
}

__attribute__((target("avx512f"))) static void
gemm_avx512(const eb_vs *g, const double *xp, const double *y, double *cp,
            int64_t n0, int64_t n1)
{
    int64_t Lp = g->Lp, M = g->M, N = g->N, K = g->K, sxk = M * Lp;
    /* Rows per register block: M in balanced blocks of at most MB_MAX. */
    int64_t nmb = (M + MB_MAX - 1) / MB_MAX, mb = (M + nmb - 1) / nmb;
    for (int64_t n = n0; n < n1; n += EB_VS_NB) {
        int nz = n1 - n < EB_VS_NB ? (int)(n1 - n) : EB_VS_NB;
        const int64_t o0 = g->yn[n], o1 = g->yn[n + (nz > 1)],
                      o2 = g->yn[n + (nz > 2 ? 2 : nz - 1)];
        int64_t nx = n + EB_VS_NB, nzx = n1 - nx < EB_VS_NB ? n1 - nx
                                                             : EB_VS_NB;
        int pf = nx < n1;
        int64_t p0 = 0, p1 = 0, p2 = 0;
        if (pf) {
            p0 = g->yn[nx];
            p1 = g->yn[nx + (nzx > 1)];
            p2 = g->yn[nx + (nzx > 2 ? 2 : nzx - 1)];
        }
        for (int64_t r = 0; r < g->R; r++) {
            const double *yr = y + g->yr[r];
            for (int64_t j = 0; j < Lp; j += 8) {
                int64_t lanes = g->L - j < 8 ? g->L - j : 8;
                __mmask8 mk = (__mmask8)((1u << lanes) - 1);
                if (pf)
                    prefetch(yr + p0 + j, yr + p1 + j, yr + p2 + j, g->yk, K,
                             j + 8 >= Lp ? (int)lanes - 1 : 0);
                for (int64_t m0 = 0; m0 < M; m0 += mb) {
                    int64_t rows = M - m0 < mb ? M - m0 : mb;
                    const double *xa = xp + (r * K * M + m0) * Lp + j;
                    double *c = cp + ((r * M + m0) * N + n) * Lp + j;
                    const double *y0 = yr + o0 + j, *y1 = yr + o1 + j,
                                 *y2 = yr + o2 + j;
#define VS_BLOCK(MB)                                                         \
    block(MB, xa, sxk, Lp, y0, y1, y2, g->yk, K, mk, c, N * Lp, nz,          \
          g->stream)
                    switch (rows) {
                    case 1: VS_BLOCK(1); break;
                    case 2: VS_BLOCK(2); break;
                    case 3: VS_BLOCK(3); break;
                    case 4: VS_BLOCK(4); break;
                    case 5: VS_BLOCK(5); break;
                    case 6: VS_BLOCK(6); break;
                    case 7: VS_BLOCK(7); break;
                    case 8: VS_BLOCK(8); break;
                    default: VS_BLOCK(9); break;
                    }
#undef VS_BLOCK
                }
            }
        }
    }
    if (g->stream)
        _mm_sfence();
}

void eb_vs_gemm(const eb_vs *g, const double *xp, const double *y,
                double *cp, int64_t n0, int64_t n1, int scalar)
{
    if (n0 >= n1)
        return;
    if (scalar || !eb_vs_avx512())
        gemm_scalar(g, xp, y, cp, n0, n1);
    else
        gemm_avx512(g, xp, y, cp, n0, n1);
}
