/*
 * blas: the engine's only door to OpenBLAS (the only module that includes
 * cblas.h). Row-major, alpha = 1, beta = 0: every call overwrites its
 * output, so callers never zero it first. Dimensions must fit in an int
 * (OpenBLAS's blasint here); the planner checks that before it picks BLAS.
 */
#ifndef EB_BLAS_H
#define EB_BLAS_H

#include <stdint.h>

#include "dtype.h"

/* C[M,N] = op(A) op(B); trans_* nonzero means the operand is stored
 * transposed (A as [K][M] with lda >= M, B as [N][K] with ldb >= K). */
void eb_blas_gemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                  const double *a, int64_t lda, const double *b, int64_t ldb,
                  double *c, int64_t ldc);

/* y[M] = op(A) x; A is [M][N] with lda (trans = 0) or [N][M] (trans = 1),
 * M being the length of y. */
void eb_blas_gemv(int trans, int64_t M, int64_t N, const double *a,
                  int64_t lda, const double *x, int64_t incx, double *y,
                  int64_t incy);

double eb_blas_dot(int64_t n, const double *x, int64_t incx, const double *y,
                   int64_t incy);

/* Largest dimension or leading dimension BLAS accepts. */
int64_t eb_blas_max_dim(void);

/* C = A B of three n x n row-major matrices of dtype dt through
 * cblas_{s,d,c,z}gemm, alpha 1, beta 0: calibrate's GEMM rate per dtype
 * (added by the dtype perf branch for calibrate.c). */
void eb_blas_gemm_square(eb_dtype dt, int64_t n, const void *a,
                         const void *b, void *c);

/* OpenBLAS's own view of itself, for the records. */
int eb_blas_threads(void);
void eb_blas_set_threads(int n);
const char *eb_blas_config(void);
const char *eb_blas_corename(void);
int eb_blas_parallel(void); /* 0 sequential, 1 pthreads, 2 OpenMP */

#endif
