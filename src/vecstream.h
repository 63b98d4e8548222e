/*
 * vecstream: the streamed vector-batch GEMM, for a product whose large
 * operand Y holds a run of L batch elements (one or more batch labels)
 * at unit stride, its other labels strided (an eager step's canonical
 * intermediate whose batch labels are its innermost ones). Permuting Y
 * for one GEMM per batch element writes Y to memory and reads it back
 * (gm_queen's 129 M-element operand: 160-180 ms of a 267 ms step), and
 * one small GEMM per batch element in place reads each element from
 * another cache line. Here vectors run along the run instead: Y is read
 * once, in place, 8 of its batch elements a vector, and
 *
 *     C'[r][m][n][x] = sum_k X'[r][k][m][x] Y[yr[r] + yk[k] + yn[n] + x]
 *
 * for lanes x < L (r: the other batch elements, m: the small operand X's
 * free elements, n: Y's, k: the contracted ones). X' is X packed with
 * the lanes innermost (it is small: read from L2 for every n), C' is
 * compact with rows of Lp (L rounded up to 8) and is permuted into C by
 * the caller (permute.h). Blocks of 3 columns n by up to 9 rows m of C'
 * per chunk of 8 lanes stay in registers over all of K; Y's lines for
 * the next block are prefetched into L2 while a block computes, spread
 * over its (r, chunk) iterations (on gm_queen's step, without stores, a
 * scratch copy took 224-243 ms with a burst at each block's start or no
 * prefetch, 99-106 spread; docs/bench.md, "Thirty-fifth round").
 */
#ifndef EB_VECSTREAM_H
#define EB_VECSTREAM_H

#include <stdint.h>

typedef struct {
    int64_t L, Lp;         /* lanes, and the rows of X' and C' (L up to 8) */
    int64_t R, M, N, K;    /* other batch, X's free, Y's free, contracted */
    const int64_t *yr, *yk, *yn; /* Y's offsets of r, k and n (elements) */
    int stream;            /* non-temporal stores of C' (C' past L3) */
} eb_vs;

/* X' from X: element x of row (r, k, m) is X[xr[r] + xk[k] + xm[m] +
 * xl[x]] for x < L, 0 for L <= x < Lp. xp holds R K M Lp doubles. */
void eb_vs_pack(const eb_vs *g, const double *x, const int64_t *xr,
                const int64_t *xk, const int64_t *xm, const int64_t *xl,
                double *xp);

/* Columns [n0, n1) of C' (every r, m and lane x < L; with the AVX-512
 * kernel lanes L to Lp - 1 are written 0), from X' and Y. xp and cp are
 * 64-byte aligned. scalar: portable loops only (tests; taken anyway
 * where eb_vs_avx512() does not hold). The AVX-512 kernel multiplies and
 * adds in one rounding, the portable loops in two. */
void eb_vs_gemm(const eb_vs *g, const double *xp, const double *y,
                double *cp, int64_t n0, int64_t n1, int scalar);

/* Does eb_vs_gemm run its AVX-512 kernel on this CPU? */
int eb_vs_avx512(void);

/* Columns of C' a block of the kernel holds (parts split n in these). */
enum { EB_VS_NB = 3 };

#endif
