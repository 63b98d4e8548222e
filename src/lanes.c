/* lanes: where a trace program can run as two concurrent lanes. */
#include "lanes.h"

#include <stdlib.h>

/* lane[t] for F's subtrees (producers p1 and p2); 0 if some step shares
 * its turn with a step of another lane, 1 otherwise. */
static int assign(int n, const int *consumer, const int *turn, int f,
                  int p1, int p2, signed char *lane)
{
    for (int t = n - 1; t >= 0; t--)
        lane[t] = t == p1                     ? 1
                  : t == p2                   ? 2
                  : t == f || consumer[t] == t ? 0
                                               : lane[consumer[t]];
    for (int t = 0; t < n; t++)
        if (lane[t] != lane[turn[t]])
            return 0;
    return 1;
}

int eb_lanes_plan(int nsteps, const int *consumer, const int *turn,
                  const double *work, double min_share, double min_lane,
                  signed char *lane)
{
    for (int t = 0; t < nsteps; t++)
        lane[t] = 0;
    size_t n = (size_t)(nsteps > 0 ? nsteps : 1);
    double *sub = malloc(n * sizeof *sub);
    int *first = malloc(n * sizeof *first), *second = malloc(n * sizeof *second);
    if (!sub || !first || !second) {
        free(sub);
        free(first);
        free(second);
        return -1; /* out of memory: run without lanes */
    }
    /* Work of each step's subtree, and its producing steps: producers
     * come before their consumer. */
    double total = 0;
    for (int t = 0; t < nsteps; t++) {
        sub[t] = 0;
        first[t] = second[t] = -1;
    }
    for (int t = 0; t < nsteps; t++) {
        sub[t] += work[t];
        total += work[t];
        int c = consumer[t];
        if (c == t)
            continue;
        sub[c] += sub[t];
        if (first[c] < 0)
            first[c] = t;
        else
            second[c] = t;
    }
    int best = -1;
    double best_min = 0;
    for (int f = 0; f < nsteps; f++) {
        if (second[f] < 0)
            continue;
        double m = sub[first[f]] < sub[second[f]] ? sub[first[f]]
                                                  : sub[second[f]];
        if (m < min_share * total || m < min_lane || m <= best_min)
            continue;
        if (!assign(nsteps, consumer, turn, f, first[f], second[f], lane))
            continue;
        best = f;
        best_min = m;
    }
    if (best >= 0)
        assign(nsteps, consumer, turn, best, first[best], second[best], lane);
    else
        for (int t = 0; t < nsteps; t++)
            lane[t] = 0;
    free(sub);
    free(first);
    free(second);
    return best;
}
