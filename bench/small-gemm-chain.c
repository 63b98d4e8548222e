/* small-gemm-chain: the two small GEMMs of one step pair of an MPS inner
 * product (docs/bench.md, "Small GEMMs, third round"), on
 * eb_kern_small_gemm, bond dimension D = 19:
 *   a: C1[K1 D, D] = A[K1 D, D] S[D, D]                    (row kernel)
 *   b: S'[D, D] = sum_{k1,k} C1[k1, m, k] B[k1, n, k]    (k-vector kernel)
 * A and B are fresh inputs each pair (P pairs, cycled: from memory for
 * P = 200, from the caches for P = 1). Not built by make:
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o small-gemm-chain \
 *      bench/small-gemm-chain.c build/libeb.a \
 *      $(pkg-config --libs openblas libcjson) -lm -lpthread
 *   ./small-gemm-chain P K1 [REPS]
 * Prints per step the least over REPS (default 15) passes of the thread
 * CPU time per step, and its GFLOP/s. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels.h"

enum { D = 19 };

static double cpu_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + 1e-3 * t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: small-gemm-chain P K1 [REPS]\n");
        return 2;
    }
    int P = atoi(argv[1]), K1 = atoi(argv[2]);
    int reps = argc > 3 ? atoi(argv[3]) : 15;
    if (P < 1 || K1 < 1 || reps < 1) {
        fprintf(stderr, "small-gemm-chain: P, K1 and REPS must be >= 1\n");
        return 2;
    }
    int64_t E = (int64_t)K1 * D * D;
    double **in = malloc(sizeof *in * 2 * (size_t)P);
    double *c1 = malloc(sizeof *c1 * (size_t)E), s[D * D], s2[D * D];
    if (!in || !c1)
        return 1;
    for (int i = 0; i < 2 * P; i++) {
        if (!(in[i] = malloc(sizeof **in * (size_t)E)))
            return 1;
        for (int64_t j = 0; j < E; j++)
            in[i][j] = 1e-3 * (double)((j * 7 + i) % 13);
    }
    for (int i = 0; i < D * D; i++)
        s[i] = 0.01 * (i % 7);
    eb_gemm_k ka = {1, 0, 1, 0, D};          /* K = D, A's k at stride 1 */
    eb_gemm_k kb = {K1, D * D, 1, D * D, 1}; /* K = (k1, k) */
    double best_a = 1e300, best_b = 1e300;
    for (int r = 0; r < reps; r++) {
        double ta = 0, tb = 0;
        for (int i = 0; i < P; i++) {
            double t0 = cpu_us();
            eb_kern_small_gemm((int64_t)K1 * D, D, D, in[2 * i], D, s, 1, &ka,
                               c1, D, 1);
            double t1 = cpu_us();
            eb_kern_small_gemm(D, D, D, c1, D, in[2 * i + 1], D, &kb, s2, D,
                               1);
            double t2 = cpu_us();
            ta += t1 - t0;
            tb += t2 - t1;
            for (int j = 0; j < D * D; j++)
                s[j] = 1e-3 * s2[j];
        }
        best_a = ta < best_a ? ta : best_a;
        best_b = tb < best_b ? tb : best_b;
    }
    double flops = 2.0 * K1 * D * D * D * P;
    printf("P=%d K1=%d: a %.2f us/step %.1f GFLOP/s   b %.2f us/step %.1f "
           "GFLOP/s\n", P, K1, best_a / P, flops / best_a * 1e-3, best_b / P,
           flops / best_b * 1e-3);
    for (int i = 0; i < 2 * P; i++)
        free(in[i]);
    free(in);
    free(c1);
    return 0;
}
