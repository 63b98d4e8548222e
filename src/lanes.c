/* lanes: where a trace program can run as concurrent lanes. */
#include "lanes.h"

#include <stdlib.h>

/* Is step t a root of the cut at x: its subtree holds at most x and its
 * consumer's (it is not the last step) more? */
static int is_root(int t, const int *consumer, const double *sub, double x)
{
    return consumer[t] != t && sub[t] <= x && sub[consumer[t]] > x;
}

/* lane[] for the roots in root[0 .. nroot) (unit k + 1 for root[k]); 0
 * if a step shares its turn with a step of another unit, 1 otherwise. */
static int assign(int n, const int *consumer, const int *turn,
                  const int *root, int nroot, signed char *lane)
{
    for (int t = n - 1; t >= 0; t--) {
        lane[t] = consumer[t] == t ? 0 : lane[consumer[t]];
        for (int k = 0; k < nroot; k++)
            if (root[k] == t)
                lane[t] = (signed char)(k + 1);
    }
    for (int t = 0; t < n; t++)
        if (lane[t] != lane[turn[t]])
            return 0;
    return 1;
}

/* Does root a go before root b: more work, or equal work and earlier? */
static int before(int a, int b, const double *sub)
{
    return sub[a] != sub[b] ? sub[a] > sub[b] : a < b;
}

/* Insertion sort of the roots by work, largest first (qsort has no
 * context argument in C11). */
static void sort_roots(int *root, int nroot, const double *sub)
{
    for (int i = 1; i < nroot; i++)
        for (int j = i; j > 0 && before(root[j], root[j - 1], sub); j--) {
            int r = root[j];
            root[j] = root[j - 1];
            root[j - 1] = r;
        }
}

static int cmp_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

int eb_lanes_plan(int nsteps, const int *consumer, const int *turn,
                  const double *work, double min_share, double min_lane,
                  signed char *lane)
{
    for (int t = 0; t < nsteps; t++)
        lane[t] = 0;
    size_t n = (size_t)(nsteps > 0 ? nsteps : 1);
    double *sub = malloc(n * sizeof *sub), *cut = malloc(n * sizeof *cut);
    int *root = malloc(n * sizeof *root), *best = malloc(n * sizeof *best);
    signed char *tmp = malloc(n);
    int fork = -1;
    if (!sub || !cut || !root || !best || !tmp)
        goto done; /* out of memory: run without lanes */
    /* Work of each step's subtree: producers come before their consumer. */
    double total = 0;
    for (int t = 0; t < nsteps; t++)
        sub[t] = 0;
    for (int t = 0; t < nsteps; t++) {
        sub[t] += work[t];
        total += work[t];
        if (consumer[t] != t)
            sub[consumer[t]] += sub[t];
    }
    /* The thresholds: every subtree's work, largest first, so that an
     * equal estimate keeps the cut with fewer roots. */
    for (int t = 0; t < nsteps; t++)
        cut[t] = sub[t];
    qsort(cut, n, sizeof *cut, cmp_desc);
    double best_est = (1 - min_share) * total;
    int nbest = 0;
    for (int i = 0; i < nsteps; i++) {
        if (i > 0 && cut[i] == cut[i - 1])
            continue;
        int nroot = 0;
        double cover = 0, largest = 0;
        for (int t = 0; t < nsteps; t++)
            if (is_root(t, consumer, sub, cut[i])) {
                if (nroot == EB_LANES_MAX_UNITS) {
                    nroot = 0; /* too many units: not this cut */
                    break;
                }
                root[nroot++] = t;
                cover += sub[t];
                largest = sub[t] > largest ? sub[t] : largest;
            }
        if (nroot < 2 || cover < 2 * min_share * total ||
            largest < min_lane || cover - largest < min_lane)
            continue;
        double span = cover / 2 > largest ? cover / 2 : largest;
        double est = span + (1 - min_share) * (total - cover);
        if (est > best_est || (nbest && est == best_est) ||
            !assign(nsteps, consumer, turn, root, nroot, tmp))
            continue;
        best_est = est;
        nbest = nroot;
        for (int k = 0; k < nroot; k++)
            best[k] = root[k];
    }
    if (nbest) {
        sort_roots(best, nbest, sub);
        assign(nsteps, consumer, turn, best, nbest, lane);
        fork = nsteps;
        for (int k = 0; k < nbest; k++)
            fork = consumer[best[k]] < fork ? consumer[best[k]] : fork;
    }
done:
    free(sub);
    free(cut);
    free(root);
    free(best);
    free(tmp);
    return fork;
}
