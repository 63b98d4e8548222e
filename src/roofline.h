/*
 * roofline: the physical yardstick of a measurement (DESIGN 6).
 *
 * For each pairwise step of a path, with A and B its operands and out its
 * output (the kept-label rule of schedule):
 *
 *     flops = prod(sizes of all labels of A and B) * (2 if a label is summed)
 *     bytes = element size * (|A| + |B| + |out|)
 *     bound = max(flops / F, bytes / BW)
 *
 * summed over the steps. The element size and F are the run's dtype's
 * (inst->dt): F is the machine's cblas_{d,s,z,c}gemm rate at 1024^3
 * counted as 2 * 1024^3 / time whatever the dtype, the same units as the
 * flops, which are the schedule's (opt_einsum's convention, independent of
 * dtype: a complex multiply-add counts as one, so a complex GEMM's F is
 * about a quarter of its real flop rate). BW is the stream bandwidth, the
 * same for every dtype (bytes are bytes). Both are measured by calibrate at
 * the measurement's thread count. It is a model, not a strict bound: a step
 * whose operands stay in cache can beat its byte term.
 */
#ifndef EB_ROOFLINE_H
#define EB_ROOFLINE_H

#include "dtype.h"
#include "schedule.h"

typedef struct {
    /* F per dtype (eb_dtype order): the {d,s,z,c}gemm rate in GFLOP/s
     * (1e9 flop/s, 2 n^3 flops per n^3 GEMM); 0 when not calibrated. */
    double gflops[EB_DTYPE_COUNT];
    double gbs;     /* BW: stream bandwidth, GB/s (1e9 bytes/s) */
} eb_rates;

/* 1 when r (may be NULL) has F of dt and BW. */
int eb_rates_have(const eb_rates *r, eb_dtype dt);

typedef struct {
    double flops;       /* the schedule's */
    double bytes;       /* element size * (|A| + |B| + |out|) */
    double flop_ms;     /* flops / F */
    double byte_ms;     /* bytes / BW */
    double bound_ms;    /* the larger of the two */
    int byte_bound;     /* 1 when the byte term is the larger */
} eb_roofline_step;

/* One step's bound from its flops and bytes, F in GFLOP/s and BW in GB/s. */
eb_roofline_step eb_roofline_of(double flops, double bytes, double gflops,
                                double gbs);

/* The bound of every step of sched (steps[s] for s < sched->num_steps,
 * when steps is not NULL) in inst->dt, and their sum in ms, the return
 * value. A path without steps has bound 0. NAN (and steps untouched) when
 * r lacks the rates of inst->dt (eb_rates_have). */
double eb_roofline_path(const eb_instance *inst, const eb_schedule *sched,
                        const eb_rates *r, eb_roofline_step *steps);

#endif
