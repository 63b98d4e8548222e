/* perm-dtypes: bytes/s of the permutation engine per dtype (docs/engine.md,
 * "dtypes in the permutation engine"). Not built by make:
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -DHAVE_DT -o perm-dtypes \
 *      bench/perm-dtypes.c build/libeb.a $(pkg-config --libs openblas \
 *      libcjson) -lm -lpthread
 *   ./perm-dtypes DTYPE CASE N REPS THREADS
 * (without -DHAVE_DT it builds against the float64-only API before issue
 * 17, for A/B runs). CASE transpose: N x N -> its transpose; mul / copy:
 * N elements, out = a * b / out = a; bmul: N elements times a broadcast
 * row of 64; perm6: a rank-6 permutation of (N^(1/6))^6; red: (N/64) x 64
 * summed over the 64 (eb_kern_xform). Prints the median thread CPU time
 * (wall time with PB_WALL set) and GB/s = eb_perm_bytes / time, after
 * "old" when the binary's name contains "old", else "new". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "kernels.h"
#include "permute.h"
#include "team.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(getenv("PB_WALL") ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage\n");
        return 2;
    }
    eb_dtype dt = EB_F64;
#ifdef HAVE_DT
    eb_dtype_parse(argv[1], &dt);
    size_t es = eb_dtype_size(dt);
#else
    size_t es = 8;
#endif
    const char *cs = argv[2];
    int64_t N = atoll(argv[3]);
    int reps = atoi(argv[4]), th = atoi(argv[5]);
    eb_team *team = NULL;
    eb_error err = {0};
    if (th > 1)
        eb_team_create(th, &team, &err);
    int64_t nel = !strcmp(cs, "transpose") ? N * N : N;
    char *a = aligned_alloc(64, (size_t)nel * es + 64);
    char *b = aligned_alloc(64, (size_t)nel * es + 64);
    char *o = aligned_alloc(64, (size_t)nel * es + 64);
    for (size_t i = 0; i < (size_t)nel * es; i++) {
        a[i] = (char)(i * 7 + 1);
        b[i] = (char)(i * 13 + 3);
        o[i] = 0;
    }
    /* keep floats finite: small exponents */
    for (size_t i = 0; i < (size_t)nel * es; i += 4) {
        float one = 1.0f + (float)(i % 97) / 97.0f;
        memcpy(a + i, &one, 4);
        memcpy(b + i, &one, 4);
    }
    eb_perm p;
    eb_xform x;
    memset(&x, 0, sizeof x);
    int isred = 0;
    if (!strcmp(cs, "transpose")) {
        int64_t sh[2] = {N, N}, so[2] = {N, 1}, si[2] = {1, N};
#ifdef HAVE_DT
        eb_perm_plan_dt(&p, dt, 2, sh, so, si, NULL);
#else
        eb_perm_plan(&p, 2, sh, so, si, NULL);
#endif
    } else if (!strcmp(cs, "mul") || !strcmp(cs, "copy")) {
        int64_t one = 1;
#ifdef HAVE_DT
        eb_perm_plan_dt(&p, dt, 1, &N, &one, &one, !strcmp(cs, "mul") ? &one : NULL);
#else
        eb_perm_plan(&p, 1, &N, &one, &one, !strcmp(cs, "mul") ? &one : NULL);
#endif
    } else if (!strcmp(cs, "bmul")) {
        int64_t sh[2] = {N / 64, 64}, so[2] = {64, 1}, s1[2] = {0, 1};
#ifdef HAVE_DT
        eb_perm_plan_dt(&p, dt, 2, sh, so, so, s1);
#else
        eb_perm_plan(&p, 2, sh, so, so, s1);
#endif
    } else if (!strcmp(cs, "perm6")) {
        int64_t m = (int64_t)llround(pow((double)N, 1.0 / 6)), sh[6], so[6], si[6];
        static const int ord[6] = {3, 0, 5, 1, 4, 2};
        int64_t s = 1;
        for (int d = 5; d >= 0; d--) { sh[d] = m; so[d] = s; s *= m; }
        s = 1;
        for (int k = 5; k >= 0; k--) { si[ord[k]] = s; s *= m; }
#ifdef HAVE_DT
        eb_perm_plan_dt(&p, dt, 6, sh, so, si, NULL);
#else
        eb_perm_plan(&p, 6, sh, so, si, NULL);
#endif
    } else {
        isred = 1;
#ifdef HAVE_DT
        x.dt = dt;
#endif
        x.rank = 1;
        x.shape[0] = N / 64;
        x.in_stride[0] = 1;
        x.red_rank = 1;
        x.red_shape[0] = 64;
        x.red_stride[0] = N / 64;
        eb_xform_simplify(&x);
    }
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (isred)
            eb_kern_xform(&x, a, o, team);
        else
            eb_perm_exec(&p, a, b, o, team);
        t[r] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double med = t[reps / 2];
    double bytes = isred ? (double)N * es * (1 + 1.0 / 64) : eb_perm_bytes(&p);
    printf("%s ", strstr(argv[0], "old") ? "old" : "new");
    printf("%s %s %lld %.6f s %.2f GB/s mode %d\n", argv[1], cs, (long long)N,
           med, bytes / med / 1e9, isred ? -1 : (int)p.mode);
    if (team)
        eb_team_destroy(team);
    return 0;
}
