/* team-gemm: one row-major NN dgemm C[M,N] = A[M,K] B[K,N] on two threads,
 * four ways (docs/bench.md, "Two threads, second round"). Not built by
 * make:
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o team-gemm bench/team-gemm.c \
 *      build/libeb.a $(pkg-config --libs openblas libcjson) -lm -lpthread
 *   OPENBLAS_NUM_THREADS=2 OPENBLAS_THREAD_TIMEOUT=4 \
 *      ./team-gemm M N K ROUNDS [PAUSE_US]
 * Ways, interleaved within each round: 1thr (one-thread BLAS), obl2
 * (OpenBLAS's own 2 threads), splitN / splitM (the team's 2 parts along
 * N / M, one-thread BLAS each, as contract_exec.c's blas_part). With
 * PAUSE_US, each call follows a pause of that many microseconds (so that
 * every worker has gone to sleep). Prints per way the minimum and median
 * wall time (us) and the median speedup over 1thr. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "team.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + 1e-3 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    int M, N, K, split_m;
    const double *a, *b;
    double *c;
} job;

static void part(void *arg, int k, int n)
{
    const job *j = arg;
    long long lo, hi;
    eb_team_split(j->split_m ? j->M : j->N, k, n, &lo, &hi);
    if (j->split_m)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(hi - lo),
                    j->N, j->K, 1.0, j->a + lo * j->K, j->K, j->b, j->N, 0.0,
                    j->c + lo * j->N, j->N);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->M,
                    (int)(hi - lo), j->K, 1.0, j->a, j->K, j->b + lo, j->N,
                    0.0, j->c + lo, j->N);
}

enum { WAYS = 4 };
static const char *name[WAYS] = {"1thr", "obl2", "splitN", "splitM"};

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: team-gemm M N K ROUNDS [PAUSE_US]\n");
        return 2;
    }
    int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
    int rounds = atoi(argv[4]);
    int pause = argc > 5 ? atoi(argv[5]) : 0;
    double *a = malloc(sizeof *a * M * K), *b = malloc(sizeof *b * K * N),
           *c = malloc(sizeof *c * M * N);
    for (long i = 0; i < (long)M * K; i++)
        a[i] = 1.0 / (1 + i % 7);
    for (long i = 0; i < (long)K * N; i++)
        b[i] = 1.0 / (1 + i % 5);
    eb_team *team;
    eb_error err;
    if (eb_team_create(2, &team, &err))
        return 1;
    double *t = malloc(sizeof *t * WAYS * rounds);
    for (int r = -2; r < rounds; r++) {
        for (int w0 = 0; w0 < WAYS; w0++) {
            int w = (w0 + (r < 0 ? 0 : r)) % WAYS;
            if (pause)
                usleep(pause);
            job j = {M, N, K, w == 3, a, b, c};
            double t0 = now_us();
            if (w == 0) {
                openblas_set_num_threads(1);
                part(&j, 0, 1);
            } else if (w == 1) {
                openblas_set_num_threads(2);
                part(&j, 0, 1);
            } else {
                openblas_set_num_threads(1);
                eb_team_run_parts(team, 2, part, &j);
            }
            double dt = now_us() - t0;
            if (r >= 0)
                t[w * rounds + r] = dt;
        }
    }
    double med1 = 0;
    for (int w = 0; w < WAYS; w++) {
        qsort(t + w * rounds, rounds, sizeof *t, cmp);
        double med = t[w * rounds + rounds / 2];
        if (w == 0)
            med1 = med;
        printf("%dx%dx%d %-6s min %9.1f us  median %9.1f us  speedup %.2f\n",
               M, N, K, name[w], t[w * rounds], med, med1 / med);
    }
    eb_team_destroy(team);
    return 0;
}
