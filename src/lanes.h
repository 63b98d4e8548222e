/*
 * lanes: where a trace program can run as two concurrent lanes.
 *
 * A contraction tree whose step F joins two subtrees of similar work (the
 * batch-likelihood networks join two halves of exactly equal work at
 * their last step) can run those subtrees at the same time, one per
 * thread, each step of them on one thread, and then F on the team. Each
 * lane then keeps its data in its own core's caches from step to step,
 * where splitting every step between two cores makes each step read what
 * the other core wrote the step before (docs/engine.md, "Threads").
 *
 * eb_lanes_plan picks F: the step with two producing steps whose smaller
 * subtree has the most work, at least min_share of the whole program's
 * and at least min_lane; and whose subtrees do not share a fused group
 * with anything outside them. Steps are in path order: a step's producers
 * come before it, consumer[t] > t for every step but the last (whose
 * consumer is itself). turn[t] is the step at whose turn t runs (its
 * fused group's consumer, or t). lane[t] gets 1 or 2 for the steps of
 * F's first and second producer's subtrees, 0 for the others.
 *
 * Returns F, or -1 (every lane[t] 0) when no step qualifies.
 */
#ifndef EB_LANES_H
#define EB_LANES_H

/* The defaults trace uses: the smaller lane at least 40% of the program's
 * work (two lanes then take at most 60% of one thread's time, against
 * about 50-55% for steps split over two threads where they scale). */
#define EB_LANES_MIN_SHARE 0.4

int eb_lanes_plan(int nsteps, const int *consumer, const int *turn,
                  const double *work, double min_share, double min_lane,
                  signed char *lane);

#endif
