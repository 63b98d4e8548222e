/* blas: thin row-major wrappers over CBLAS and OpenBLAS's info calls. */
#include "blas.h"

#include <cblas.h>
#include <limits.h>
#include <strings.h>

/* alpha = 1 and beta = 0 for the complex routines, which take them by
 * pointer as (real, imaginary) pairs of their real type. */
static const double z_one[2] = {1, 0}, z_zero[2] = {0, 0};
static const float c_one[2] = {1, 0}, c_zero[2] = {0, 0};

static enum CBLAS_TRANSPOSE op(int trans)
{
    return trans ? CblasTrans : CblasNoTrans;
}

void eb_blas_gemm_dt(eb_dtype dt, int trans_a, int trans_b, int64_t M,
                     int64_t N, int64_t K, const void *a, int64_t lda,
                     const void *b, int64_t ldb, void *c, int64_t ldc)
{
    blasint m = (blasint)M, n = (blasint)N, k = (blasint)K;
    blasint la = (blasint)lda, lb = (blasint)ldb, lc = (blasint)ldc;
    switch (dt) {
    case EB_F32:
        cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, k, 1.0f,
                    a, la, b, lb, 0.0f, c, lc);
        break;
    case EB_C128:
        cblas_zgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, k, z_one,
                    a, la, b, lb, z_zero, c, lc);
        break;
    case EB_C64:
        cblas_cgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, k, c_one,
                    a, la, b, lb, c_zero, c, lc);
        break;
    default:
        cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, k, 1.0, a,
                    la, b, lb, 0.0, c, lc);
        break;
    }
}

void eb_blas_gemv(eb_dtype dt, int trans, int64_t M, int64_t N, const void *a,
                  int64_t lda, const void *x, int64_t incx, void *y,
                  int64_t incy)
{
    if (trans && eb_dtype_is_complex(dt)) {
        /* OpenBLAS 0.3.21's Haswell cgemv_n/zgemv_n (a row-major
         * transposed GEMV) read up to 32 bytes past the matrix when the
         * length of y is 2 mod 4 (valgrind memcheck, bare CBLAS calls
         * too); the same product as a GEMM with one column reads exactly
         * what it uses. */
        eb_blas_gemm_dt(dt, 1, 0, M, 1, N, a, lda, x, incx, y, incy);
        return;
    }
    /* CBLAS takes the stored matrix's rows and columns. */
    blasint rows = (blasint)(trans ? N : M), cols = (blasint)(trans ? M : N);
    blasint la = (blasint)lda, ix = (blasint)incx, iy = (blasint)incy;
    switch (dt) {
    case EB_F32:
        cblas_sgemv(CblasRowMajor, op(trans), rows, cols, 1.0f, a, la, x, ix,
                    0.0f, y, iy);
        break;
    case EB_C128:
        cblas_zgemv(CblasRowMajor, op(trans), rows, cols, z_one, a, la, x, ix,
                    z_zero, y, iy);
        break;
    case EB_C64:
        cblas_cgemv(CblasRowMajor, op(trans), rows, cols, c_one, a, la, x, ix,
                    c_zero, y, iy);
        break;
    default:
        cblas_dgemv(CblasRowMajor, op(trans), rows, cols, 1.0, a, la, x, ix,
                    0.0, y, iy);
        break;
    }
}

void eb_blas_dot(eb_dtype dt, int64_t n, const void *x, int64_t incx,
                 const void *y, int64_t incy, void *out)
{
    blasint k = (blasint)n, ix = (blasint)incx, iy = (blasint)incy;
    switch (dt) {
    case EB_F32:
        *(float *)out = cblas_sdot(k, x, ix, y, iy);
        break;
    case EB_C128:
        cblas_zdotu_sub(k, x, ix, y, iy, out);
        break;
    case EB_C64:
        cblas_cdotu_sub(k, x, ix, y, iy, out);
        break;
    default:
        *(double *)out = cblas_ddot(k, x, ix, y, iy);
        break;
    }
}

int64_t eb_blas_max_dim(void)
{
    return sizeof(blasint) >= 8 ? INT64_MAX : INT_MAX;
}

int eb_blas_threads(void) { return openblas_get_num_threads(); }
void eb_blas_set_threads(int n) { openblas_set_num_threads(n); }
const char *eb_blas_config(void) { return openblas_get_config(); }
const char *eb_blas_corename(void) { return openblas_get_corename(); }

int eb_blas_small_kernels(void) { return eb_blas_avx512(); }

int eb_blas_avx512(void)
{
    static const char *const cores[] = {"skylakex", "cooperlake",
                                        "sapphirerapids"};
    const char *c = openblas_get_corename();
    for (size_t i = 0; c && i < sizeof cores / sizeof cores[0]; i++)
        if (strcasecmp(c, cores[i]) == 0)
            return 1;
    return 0;
}
int eb_blas_parallel(void) { return openblas_get_parallel(); }
