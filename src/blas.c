/* blas: thin row-major wrappers over CBLAS and OpenBLAS's info calls. */
#include "blas.h"

#include <cblas.h>
#include <limits.h>

void eb_blas_gemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
                  const double *a, int64_t lda, const double *b, int64_t ldb,
                  double *c, int64_t ldc)
{
    cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, 1.0, a, (blasint)lda, b, (blasint)ldb, 0.0, c,
                (blasint)ldc);
}

void eb_blas_gemv(int trans, int64_t M, int64_t N, const double *a,
                  int64_t lda, const double *x, int64_t incx, double *y,
                  int64_t incy)
{
    /* CBLAS takes the stored matrix's rows and columns. */
    blasint rows = (blasint)(trans ? N : M), cols = (blasint)(trans ? M : N);
    cblas_dgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, rows, cols,
                1.0, a, (blasint)lda, x, (blasint)incx, 0.0, y, (blasint)incy);
}

double eb_blas_dot(int64_t n, const double *x, int64_t incx, const double *y,
                   int64_t incy)
{
    return cblas_ddot((blasint)n, x, (blasint)incx, y, (blasint)incy);
}

int64_t eb_blas_max_dim(void)
{
    return sizeof(blasint) >= 8 ? INT64_MAX : INT_MAX;
}

int eb_blas_threads(void) { return openblas_get_num_threads(); }
void eb_blas_set_threads(int n) { openblas_set_num_threads(n); }
const char *eb_blas_config(void) { return openblas_get_config(); }
const char *eb_blas_corename(void) { return openblas_get_corename(); }
int eb_blas_parallel(void) { return openblas_get_parallel(); }
