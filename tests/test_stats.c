/* test_stats: eb_stats_compute on synthetic samples (DESIGN 4.4): median =
 * sorted[n/2], IQR = sorted[3n/4] - sorted[n/4] (integer division), min,
 * max, mean, MAD = sorted |x - median| at n/2. Expected values are worked out
 * by hand in the comments; a brute-force reference covers random inputs. No
 * clock is involved. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stats.h"

typedef struct {
    const char *what;
    int n;
    int64_t samples[16];   /* unsorted */
    double median, iqr, min, max, mean, mad;
} stats_case;

static const stats_case cases[] = {
    /* [7]: every statistic is 7 or 0. */
    {"n=1", 1, {7}, 7, 0, 7, 7, 7, 0},
    /* sorted [3, 9]: median s[1] = 9; IQR s[1] - s[0] = 6; mean 6;
     * |x - 9| = [6, 0] -> sorted [0, 6], s[1] = 6. */
    {"n=2", 2, {9, 3}, 9, 6, 3, 9, 6, 6},
    /* sorted [10, 20, 30]: median s[1] = 20; IQR s[2] - s[0] = 20; mean 20;
     * |x - 20| = [10, 10, 0] -> [0, 10, 10], s[1] = 10. */
    {"n=3", 3, {30, 10, 20}, 20, 20, 10, 30, 20, 10},
    /* sorted [1, 2, 3, 4]: median s[2] = 3; IQR s[3] - s[1] = 2; mean 2.5;
     * |x - 3| = [1, 2, 0, 1] -> [0, 1, 1, 2], s[2] = 1. */
    {"n=4", 4, {4, 1, 3, 2}, 3, 2, 1, 4, 2.5, 1},
    /* sorted [10, 20, 40, 50, 100]: median s[2] = 40; IQR s[3] - s[1] = 30;
     * mean 220 / 5 = 44; |x - 40| -> [0, 10, 20, 30, 60], s[2] = 20. */
    {"n=5", 5, {50, 10, 40, 20, 100}, 40, 30, 10, 100, 44, 20},
    /* Fibonacci 3..2584, shuffled. sorted: [3 5 8 13 21 34 55 89 144 233 377
     * 610 987 1597 2584]; median s[7] = 89; IQR s[11] - s[3] = 610 - 13 =
     * 597; mean 6760 / 15; |x - 89| sorted: [0 34 55 55 68 76 81 84 86 144
     * 288 521 898 1508 2495], s[7] = 84. */
    {"n=15", 15, {377, 8, 2584, 55, 13, 987, 3, 144, 21, 1597, 89, 34, 610, 5,
                  233},
     89, 597, 3, 2584, 6760.0 / 15, 84},
    /* All equal. */
    {"equal", 6, {5, 5, 5, 5, 5, 5}, 5, 0, 5, 5, 5, 0},
    /* sorted [1, 1, 1, 100]: median s[2] = 1; IQR s[3] - s[1] = 99 (the
     * outlier sits at 3n/4 = 3); mean 103 / 4; |x - 1| -> [0 0 0 99], s[2] =
     * 0. */
    {"outlier", 4, {1, 100, 1, 1}, 1, 99, 1, 100, 103.0 / 4, 0},
    /* n = 7: 3n/4 = 5, n/4 = 1. sorted [1 2 4 8 16 32 64]: median s[3] = 8;
     * IQR 32 - 2 = 30; mean 127 / 7; |x - 8| -> [0 4 6 7 8 24 56], s[3] = 7. */
    {"n=7", 7, {64, 1, 32, 2, 16, 4, 8}, 8, 30, 1, 64, 127.0 / 7, 7},
    /* Nanosecond counts near 10^12 stay exact. */
    {"large", 3, {1000000000003LL, 1000000000001LL, 1000000000002LL},
     1000000000002.0, 2, 1000000000001.0, 1000000000003.0, 1000000000002.0, 1},
};

static int near(double a, double b)
{
    double d = a - b;
    return (d < 0 ? -d : d) <= 1e-9 * (b < 0 ? -b : b) + 1e-12;
}

static void check_case(const stats_case *c)
{
    int n = c->n;
    int64_t *in = malloc((size_t)n * sizeof *in);
    int64_t *copy = malloc((size_t)n * sizeof *copy);
    int64_t *scratch = malloc((size_t)n * sizeof *scratch); /* exactly n */
    memcpy(in, c->samples, (size_t)n * sizeof *in);
    memcpy(copy, in, (size_t)n * sizeof *in);
    eb_stats s;
    memset(&s, 0xFF, sizeof s);
    eb_stats_compute(in, n, scratch, &s);
    EB_CHECK(s.n == n, "%s: n %d", c->what, s.n);
    EB_CHECK(s.median_ns == c->median, "%s: median %.17g (want %.17g)",
             c->what, s.median_ns, c->median);
    EB_CHECK(s.iqr_ns == c->iqr, "%s: IQR %.17g (want %.17g)", c->what,
             s.iqr_ns, c->iqr);
    EB_CHECK(s.min_ns == c->min, "%s: min %.17g (want %.17g)", c->what,
             s.min_ns, c->min);
    EB_CHECK(s.max_ns == c->max, "%s: max %.17g (want %.17g)", c->what,
             s.max_ns, c->max);
    EB_CHECK(near(s.mean_ns, c->mean), "%s: mean %.17g (want %.17g)",
             c->what, s.mean_ns, c->mean);
    EB_CHECK(s.mad_ns == c->mad, "%s: MAD %.17g (want %.17g)", c->what,
             s.mad_ns, c->mad);
    EB_CHECK(memcmp(in, copy, (size_t)n * sizeof *in) == 0,
             "%s: samples modified", c->what);
    free(in);
    free(copy);
    free(scratch);
}

/* ---- brute force -------------------------------------------------------- */

static void insertion_sort(int64_t *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            int64_t t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random samples of every n in 1..64 against a direct computation. */
static void check_random(void)
{
    for (int n = 1; n <= 64; n++) {
        int64_t in[64], copy[64], sorted[64], dev[64], scratch[64];
        int64_t span = (n % 3 == 0) ? 10 : 1000000; /* many ties when 10 */
        for (int k = 0; k < n; k++)
            in[k] = 1000 + (int64_t)(rng() % (uint64_t)span);
        memcpy(copy, in, sizeof in);
        memcpy(sorted, in, sizeof in);
        insertion_sort(sorted, n);
        int64_t med = sorted[n / 2];
        double sum = 0;
        for (int k = 0; k < n; k++) {
            sum += (double)in[k];
            dev[k] = in[k] > med ? in[k] - med : med - in[k];
        }
        insertion_sort(dev, n);
        eb_stats s;
        eb_stats_compute(in, n, scratch, &s);
        int ok = s.n == n && s.median_ns == (double)med &&
                 s.iqr_ns == (double)(sorted[3 * n / 4] - sorted[n / 4]) &&
                 s.min_ns == (double)sorted[0] &&
                 s.max_ns == (double)sorted[n - 1] &&
                 near(s.mean_ns, sum / n) && s.mad_ns == (double)dev[n / 2];
        EB_CHECK(ok, "random n=%d: median %g IQR %g min %g max %g mean %g "
                 "MAD %g", n, s.median_ns, s.iqr_ns, s.min_ns, s.max_ns,
                 s.mean_ns, s.mad_ns);
        EB_CHECK(memcmp(in, copy, (size_t)n * sizeof *in) == 0,
                 "random n=%d: samples modified", n);
    }
}

/* The result does not depend on the order of the samples. */
static void check_order(void)
{
    const stats_case *c = &cases[5]; /* n = 15 */
    int64_t a[15], scratch[15];
    memcpy(a, c->samples, sizeof a);
    eb_stats first;
    eb_stats_compute(a, 15, scratch, &first);
    for (int round = 0; round < 20; round++) {
        for (int k = 14; k > 0; k--) { /* Fisher-Yates */
            int j = (int)(rng() % (uint64_t)(k + 1));
            int64_t t = a[k];
            a[k] = a[j];
            a[j] = t;
        }
        eb_stats s;
        eb_stats_compute(a, 15, scratch, &s);
        EB_CHECK(s.median_ns == first.median_ns && s.iqr_ns == first.iqr_ns &&
                 s.min_ns == first.min_ns && s.max_ns == first.max_ns &&
                 s.mean_ns == first.mean_ns && s.mad_ns == first.mad_ns,
                 "round %d: order changes the statistics", round);
    }
    /* Sorted ascending and descending give the same too. */
    int64_t up[15], down[15];
    memcpy(up, a, sizeof up);
    insertion_sort(up, 15);
    for (int k = 0; k < 15; k++)
        down[k] = up[14 - k];
    eb_stats su, sd;
    eb_stats_compute(up, 15, scratch, &su);
    eb_stats_compute(down, 15, scratch, &sd);
    EB_CHECK(su.median_ns == 89 && sd.median_ns == 89 && su.mad_ns == 84 &&
             sd.mad_ns == 84 && su.iqr_ns == 597 && sd.iqr_ns == 597,
             "sorted inputs");
}

int main(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        check_case(&cases[k]);
    check_random();
    check_order();
    return eb_check_done("test_stats");
}
