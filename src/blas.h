/*
 * blas: the engine's only door to OpenBLAS (the only module that includes
 * cblas.h). Row-major, alpha = 1, beta = 0: every call overwrites its
 * output, so callers never zero it first. Dimensions must fit in an int
 * (OpenBLAS's blasint here); the planner checks that before it picks BLAS.
 *
 * One wrapper per routine family, dispatching on the dtype (dtype.h) to
 * the s, d, c or z routine; strides and leading dimensions in elements.
 * Complex products are never conjugated (einsum does not conjugate).
 */
#ifndef EB_BLAS_H
#define EB_BLAS_H

#include <stdint.h>

#include "dtype.h"

/* C[M,N] = op(A) op(B) in dtype dt; trans_* nonzero means the operand is
 * stored transposed (A as [K][M] with lda >= M, B as [N][K] with
 * ldb >= K). */
void eb_blas_gemm_dt(eb_dtype dt, int trans_a, int trans_b, int64_t M,
                     int64_t N, int64_t K, const void *a, int64_t lda,
                     const void *b, int64_t ldb, void *c, int64_t ldc);

/* y[M] = op(A) x in dtype dt; A is [M][N] with lda (trans = 0) or [N][M]
 * (trans = 1), M being the length of y. (A complex transposed GEMV is one
 * ?gemm call with one column: OpenBLAS's c/zgemv_n read past A.) */
void eb_blas_gemv(eb_dtype dt, int trans, int64_t M, int64_t N, const void *a,
                  int64_t lda, const void *x, int64_t incx, void *y,
                  int64_t incy);

/* *out = sum_i x[i incx] y[i incy] in dtype dt (unconjugated). */
void eb_blas_dot(eb_dtype dt, int64_t n, const void *x, int64_t incx,
                 const void *y, int64_t incy, void *out);

/* Largest dimension or leading dimension BLAS accepts. */
int64_t eb_blas_max_dim(void);

/* OpenBLAS's own view of itself, for the records. */
int eb_blas_threads(void);
void eb_blas_set_threads(int n);
const char *eb_blas_config(void);
const char *eb_blas_corename(void);

/* Does the BLAS run GEMMs of small matrices through kernels of their own
 * (OpenBLAS's small-matrix kernels of its AVX-512 cores: no packing, no
 * beta pass)? With them cblas_dgemm beats the own kernel on small square
 * GEMMs; without them (its Haswell and Zen kernels, and under Valgrind)
 * it loses (docs/bench.md, "Fifteenth round"). */
int eb_blas_small_kernels(void);

/* Does the BLAS run its AVX-512 kernels (OpenBLAS's SkylakeX, Cooperlake
 * and Sapphire Rapids cores, the ones that also have small-matrix
 * kernels)? Its Haswell kernels on an AVX-512 CPU (OPENBLAS_CORETYPE=
 * Haswell) use half the vector width the own kernel uses there. */
int eb_blas_avx512(void);
int eb_blas_parallel(void); /* 0 sequential, 1 pthreads, 2 OpenMP */

#endif
