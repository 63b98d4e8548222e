/*
 * lanes: where a trace program can run as concurrent lanes.
 *
 * A contraction tree holds subtrees that need nothing of each other: the
 * batch-likelihood networks join two halves of exactly equal work at
 * their last step, a matrix chain's path (str_matrix_chain) multiplies a
 * few long runs of matrices on their own before combining them. Such
 * subtrees (units) can run at the same time, each step of a unit on one
 * thread, the threads claiming whole units, and the rest of the program
 * on the team. Each unit then keeps its data in its own core's caches
 * from step to step, where splitting every step between two cores makes
 * each step read what the other core wrote the step before
 * (docs/engine.md, "Threads").
 *
 * eb_lanes_plan picks the units: for a threshold X, the largest subtrees
 * of at most X work whose consumer's subtree is larger (the roots), every
 * threshold tried; a cut counts when it has two or more roots, the roots
 * hold at least 2 min_share of the program's work, both the largest root
 * and the rest of the roots hold at least min_lane, and no fused group
 * straddles a unit's border; of those, the cut whose estimated time is
 * least, and at most (1 - min_share) of one thread's:
 *     max(roots' work / 2, largest root) + (1 - min_share) (the rest),
 * two threads claiming units (each finishes what it claimed by the time
 * the other has taken the remaining units: at best half the roots' work,
 * never less than the largest one), the other steps split over the team
 * at (1 - min_share) of their one-thread time. Ties go to the cut with
 * fewer roots. With two roots of equal work and nothing else, that is
 * the one join of two halves.
 *
 * Steps are in path order: a step's producers come before it,
 * consumer[t] > t for every step but the last (whose consumer is
 * itself). turn[t] is the step at whose turn t runs (its fused group's
 * consumer, or t). lane[t] gets the unit of step t, 1 to the number of
 * units (numbered by their work, largest first; equal work by the root's
 * place in the path), or 0 for a step outside them.
 *
 * Returns the fork: the first step (in path order) that reads a unit's
 * result; steps outside the units before it need nothing of them and run
 * first, the units next, then the fork and the other steps after it. -1
 * (every lane[t] 0) when no cut qualifies.
 */
#ifndef EB_LANES_H
#define EB_LANES_H

/* The defaults trace uses: the roots at least 2 x 40% of the program's
 * work, the estimate at most 60% of one thread's time (two threads
 * splitting each step take about 50-55% of it where they scale). */
#define EB_LANES_MIN_SHARE 0.4

/* At most this many units (lane[] is a signed char). */
enum { EB_LANES_MAX_UNITS = 64 };

int eb_lanes_plan(int nsteps, const int *consumer, const int *turn,
                  const double *work, double min_share, double min_lane,
                  signed char *lane);

#endif
