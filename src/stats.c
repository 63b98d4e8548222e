/* stats: order statistics with the public suites' index conventions. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void eb_stats_compute(const int64_t *samples_ns, int n, int64_t *scratch,
                      eb_stats *out)
{
    memcpy(scratch, samples_ns, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_i64);
    out->n = n;
    out->median_ns = (double)scratch[n / 2];
    out->iqr_ns = (double)(scratch[3 * n / 4] - scratch[n / 4]);
    out->min_ns = (double)scratch[0];
    out->max_ns = (double)scratch[n - 1];
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += (double)scratch[k];
    out->mean_ns = sum / n;
    int64_t med = scratch[n / 2];
    for (int k = 0; k < n; k++) {
        int64_t d = samples_ns[k] - med;
        scratch[k] = d < 0 ? -d : d;
    }
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_i64);
    out->mad_ns = (double)scratch[n / 2];
}
