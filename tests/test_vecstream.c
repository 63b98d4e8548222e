/* test_vecstream: the streamed vector-batch GEMM's pack and kernel
 * against naive sums, on odd shapes (lanes 8 to 33, a last vector part
 * full; rows of C' past one register block; columns past a block of 3),
 * scattered offsets of X and Y, a range of columns at a time (the threads'
 * parts), plain and non-temporal stores; the portable loops everywhere,
 * the AVX-512 kernel where it runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vecstream.h"

/* A linear congruential generator (Knuth's MMIX constants), high bits. */
static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 33;
}

static double value(void) { return (double)(next() % 2001) / 1000.0 - 1.0; }

/* n distinct offsets, each a multiple of step, shuffled. */
static void offsets(int64_t n, int64_t step, int64_t *o)
{
    for (int64_t i = 0; i < n; i++)
        o[i] = i * step;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next() % (uint64_t)(i + 1)), t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
}

static void *aligned(size_t doubles)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (doubles ? doubles : 1) * sizeof(double)))
        return NULL;
    return p;
}

/* One shape: X and Y laid out with every group scattered (Y's lanes a
 * contiguous run at each place), C' computed over [n0, n1) and checked
 * there, untouched elsewhere. */
static void check_shape(int64_t L, int64_t R, int64_t M, int64_t N,
                        int64_t K, int64_t n0, int64_t n1, int stream,
                        int scalar)
{
    int64_t Lp = (L + 7) / 8 * 8;
    int64_t yr[16], yk[16], yn[64], xr[16], xk[16], xm[32], xl[40];
    /* Y: places of (r, k, n) runs of L, spaced by L + 3 (gaps between
     * runs); X: every element scattered. */
    int64_t run = L + 3;
    offsets(R, run * K * N, yr);
    offsets(K, run * N, yk);
    offsets(N, run, yn);
    int64_t xs = R * K * M * L;
    offsets(R, K * M * L, xr);
    offsets(K, M * L, xk);
    offsets(M, L, xm);
    offsets(L, 1, xl);
    int64_t ylen = R * K * N * run, cpn = R * M * N * Lp;
    double *y = aligned((size_t)ylen), *x = aligned((size_t)xs),
           *xp = aligned((size_t)(R * K * M * Lp)), *cp = aligned((size_t)cpn);
    if (!y || !x || !xp || !cp) {
        EB_CHECK(0, "out of memory");
        free(y);
        free(x);
        free(xp);
        free(cp);
        return;
    }
    for (int64_t i = 0; i < ylen; i++)
        y[i] = value();
    for (int64_t i = 0; i < xs; i++)
        x[i] = value();
    for (int64_t i = 0; i < cpn; i++)
        cp[i] = 1234.5;
    eb_vs g = {.L = L, .Lp = Lp, .R = R, .M = M, .N = N, .K = K, .yr = yr,
               .yk = yk, .yn = yn, .stream = stream};
    eb_vs_pack(&g, x, xr, xk, xm, xl, xp);
    int packed = 1;
    for (int64_t r = 0; r < R; r++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t l = 0; l < Lp; l++) {
                    double want = l < L ? x[xr[r] + xk[k] + xm[m] + xl[l]]
                                        : 0.0;
                    packed &= xp[((r * K + k) * M + m) * Lp + l] == want;
                }
    EB_CHECK(packed, "pack L=%lld R=%lld M=%lld K=%lld", (long long)L,
             (long long)R, (long long)M, (long long)K);
    eb_vs_gemm(&g, xp, y, cp, n0, n1, scalar);
    double err = 0.0;
    int untouched = 1, pads = 1;
    for (int64_t r = 0; r < R; r++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++)
                for (int64_t l = 0; l < Lp; l++) {
                    double got = cp[((r * M + m) * N + n) * Lp + l];
                    if (n < n0 || n >= n1) {
                        untouched &= got == 1234.5;
                        continue;
                    }
                    if (l >= L) {
                        /* the AVX-512 kernel writes its idle lanes 0 */
                        pads &= scalar || !eb_vs_avx512() ? got == 1234.5
                                                          : got == 0.0;
                        continue;
                    }
                    double s = 0.0, mag = 0.0;
                    for (int64_t k = 0; k < K; k++) {
                        double t = x[xr[r] + xk[k] + xm[m] + xl[l]] *
                                   y[yr[r] + yk[k] + yn[n] + l];
                        s += t;
                        mag += fabs(t);
                    }
                    double e = fabs(got - s) / (mag > 1.0 ? mag : 1.0);
                    err = e > err ? e : err;
                }
    EB_CHECK(err <= 1e-14 && untouched && pads,
             "%s L=%lld R=%lld M=%lld N=%lld K=%lld [%lld, %lld) stream %d: "
             "err %g, untouched %d, pads %d",
             scalar ? "portable" : "kernel", (long long)L, (long long)R,
             (long long)M, (long long)N, (long long)K, (long long)n0,
             (long long)n1, stream, err, untouched, pads);
    free(y);
    free(x);
    free(xp);
    free(cp);
}

int main(void)
{
    static const int64_t Ls[] = {8, 9, 13, 16, 27, 33};
    static const int64_t Ms[] = {1, 2, 5, 9, 10, 19, 23};
    static const int64_t Ns[] = {1, 2, 3, 4, 7, 11};
    for (int scalar = 1; scalar >= 0; scalar--)
        for (size_t a = 0; a < sizeof Ls / sizeof Ls[0]; a++)
            for (size_t b = 0; b < sizeof Ms / sizeof Ms[0]; b++)
                for (size_t c = 0; c < sizeof Ns / sizeof Ns[0]; c++) {
                    int64_t L = Ls[a], M = Ms[b], N = Ns[c];
                    int64_t R = 1 + (int64_t)((a + b) % 3),
                            K = 1 + (int64_t)((a * 7 + b * 3 + c) % 13);
                    check_shape(L, R, M, N, K, 0, N, (int)(c & 1), scalar);
                    if (N > 3) /* a part: whole blocks, then the rest */
                        check_shape(L, R, M, N, K, 3, N, (int)(b & 1),
                                    scalar);
                }
    /* gm_queen's step 148 in little: 27 lanes, 9 other batch elements,
     * 9 rows, columns over many blocks. */
    check_shape(27, 9, 9, 64, 16, 0, 64, 1, 0);
    check_shape(27, 2, 9, 64, 16, 0, 64, 1, 1);
    return eb_check_done("test_vecstream");
}
