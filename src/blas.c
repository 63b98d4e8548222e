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

void eb_blas_gemm_square(eb_dtype dt, int64_t n, const void *a,
                         const void *b, void *c)
{
    static const double one[2] = {1, 0}, zero[2] = {0, 0};
    static const float onef[2] = {1, 0}, zerof[2] = {0, 0};
    blasint m = (blasint)n;
    const CBLAS_ORDER o = CblasRowMajor;
    const CBLAS_TRANSPOSE t = CblasNoTrans;
    switch (dt) {
    case EB_F32:
        cblas_sgemm(o, t, t, m, m, m, 1.0f, a, m, b, m, 0.0f, c, m);
        break;
    case EB_C128:
        cblas_zgemm(o, t, t, m, m, m, one, a, m, b, m, zero, c, m);
        break;
    case EB_C64:
        cblas_cgemm(o, t, t, m, m, m, onef, a, m, b, m, zerof, c, m);
        break;
    default:
        cblas_dgemm(o, t, t, m, m, m, 1.0, a, m, b, m, 0.0, c, m);
    }
}

int eb_blas_threads(void) { return openblas_get_num_threads(); }
void eb_blas_set_threads(int n) { openblas_set_num_threads(n); }
const char *eb_blas_config(void) { return openblas_get_config(); }
const char *eb_blas_corename(void) { return openblas_get_corename(); }
int eb_blas_parallel(void) { return openblas_get_parallel(); }
