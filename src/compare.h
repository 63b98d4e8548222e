/*
 * compare: `einsum-bench compare BASE.jsonl NEW.jsonl` (in the manner of
 * pyperf compare_to and Google Benchmark's compare.py).
 *
 * For every backend x instance x strategy x mode measured in both files:
 * the ratio NEW/BASE of the medians, a distribution-free 95% interval for
 * the ratio, and a verdict. The interval is the Hodges-Lehmann one on log
 * times: the shift between the two samples' logs is estimated by the median
 * of all m*n differences log(new_j) - log(base_i), and its interval runs
 * from the C-th smallest to the C-th largest difference, C from the exact
 * Mann-Whitney distribution (normal approximation above 40,000 pairs). The
 * verdict is "faster" when the whole interval is below 1, "slower" when it
 * is above 1, else "inconclusive": a wide interval never says "same".
 */
#ifndef EB_COMPARE_H
#define EB_COMPARE_H

#include <stdio.h>

typedef enum { EB_FASTER, EB_SLOWER, EB_INCONCLUSIVE } eb_verdict;

typedef struct {
    double ratio;       /* median(new) / median(base) */
    double hl_ratio;    /* exp(Hodges-Lehmann shift of the logs) */
    double lo, hi;      /* 95% interval of the ratio; 0 and inf when the
                           samples are too few for one */
    eb_verdict verdict;
} eb_ratio;

/* base[0..m) and new_[0..n) sample times (> 0, any unit). conf in (0, 1),
 * e.g. 0.95. m, n >= 1. Returns -1 when out of memory. */
int eb_compare_samples(const double *base, int m, const double *new_,
                       int n, double conf, eb_ratio *out);

/* The number C of the interval above: the largest C >= 0 with
 * P(U < C) <= alpha/2 for the Mann-Whitney U of sample sizes m and n. */
long eb_mann_whitney_c(int m, int n, double alpha);

const char *eb_verdict_name(eb_verdict v);

typedef struct {
    double fail_above;  /* exit 1 when a lower bound exceeds it; 0: off */
    int markdown;
} eb_compare_opts;

/* Compare two JSON-lines files and print to out (warnings to err).
 * Returns the exit status: 0, 1 (--fail-above tripped), 2 (bad input). */
int eb_compare_files(const char *base, const char *new_,
                     const eb_compare_opts *o, FILE *out, FILE *err);

/* einsum-bench compare [--fail-above R] [--markdown] BASE NEW */
int eb_cmd_compare(int argc, char **argv);

#endif
