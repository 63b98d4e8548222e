/*
 * stats: summary statistics of sample times, with the conventions of the
 * public suites so that numbers compare (DESIGN 4.4): median = sorted[n/2],
 * IQR = sorted[3n/4] - sorted[n/4] (integer division), MAD = the same
 * median of |x - median|.
 */
#ifndef EB_STATS_H
#define EB_STATS_H

#include <stdint.h>

typedef struct {
    int n;
    double median_ns, iqr_ns, min_ns, max_ns, mean_ns, mad_ns;
} eb_stats;

/* samples are not modified; scratch needs n elements. n >= 1. */
void eb_stats_compute(const int64_t *samples_ns, int n, int64_t *scratch,
                      eb_stats *out);

#endif
