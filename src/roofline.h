/*
 * roofline: the physical yardstick of a measurement (DESIGN 6).
 *
 * For each pairwise step of a path, with A and B its operands and out its
 * output (the kept-label rule of schedule):
 *
 *     flops = prod(sizes of all labels of A and B) * (2 if a label is summed)
 *     bytes = 8 * (|A| + |B| + |out|)
 *     bound = max(flops / F, bytes / BW)
 *
 * summed over the steps. F is the machine's cblas_dgemm rate and BW its
 * stream bandwidth, both measured by calibrate at the measurement's thread
 * count. flops are exactly the schedule's (opt_einsum convention). It is a
 * model, not a strict bound: a step whose operands stay in cache can beat
 * its byte term.
 */
#ifndef EB_ROOFLINE_H
#define EB_ROOFLINE_H

#include "schedule.h"

typedef struct {
    double gflops;  /* F: cblas_dgemm rate, GFLOP/s (1e9 flop/s) */
    double gbs;     /* BW: stream bandwidth, GB/s (1e9 bytes/s) */
} eb_rates;

typedef struct {
    double flops;       /* the schedule's */
    double bytes;       /* 8 * (|A| + |B| + |out|) */
    double flop_ms;     /* flops / F */
    double byte_ms;     /* bytes / BW */
    double bound_ms;    /* the larger of the two */
    int byte_bound;     /* 1 when the byte term is the larger */
} eb_roofline_step;

/* One step's bound from its flops and bytes. */
eb_roofline_step eb_roofline_of(double flops, double bytes,
                                const eb_rates *r);

/* The bound of every step of sched (steps[s] for s < sched->num_steps,
 * when steps is not NULL) and their sum in ms, the return value. A path
 * without steps has bound 0. */
double eb_roofline_path(const eb_instance *inst, const eb_schedule *sched,
                        const eb_rates *r, eb_roofline_step *steps);

#endif
