/* roofline: per-step bounds max(flops / F, bytes / BW) along a path. */
#include "roofline.h"

#include <math.h>

int eb_rates_have(const eb_rates *r, eb_dtype dt)
{
    return r && (unsigned)dt < EB_DTYPE_COUNT && r->gflops[dt] > 0 &&
           r->gbs > 0;
}

eb_roofline_step eb_roofline_of(double flops, double bytes, double gflops,
                                double gbs)
{
    eb_roofline_step s = {.flops = flops, .bytes = bytes};
    /* GFLOP/s and GB/s are 1e6 per millisecond. */
    s.flop_ms = flops / (gflops * 1e6);
    s.byte_ms = bytes / (gbs * 1e6);
    s.byte_bound = s.byte_ms > s.flop_ms;
    s.bound_ms = s.byte_bound ? s.byte_ms : s.flop_ms;
    return s;
}

/* Elements of operand slot k: an input's shape (a repeated label counts
 * once per axis, as stored) or an earlier step's output. */
static double slot_elems(const eb_instance *inst, const eb_schedule *sched,
                         int k)
{
    if (k >= sched->num_inputs)
        return sched->steps[k - sched->num_inputs].out_elems;
    const eb_term *t = &inst->inputs[k];
    double n = 1;
    for (int a = 0; a < t->rank; a++)
        n *= (double)inst->label_size[t->ids[a]];
    return n;
}

double eb_roofline_path(const eb_instance *inst, const eb_schedule *sched,
                        const eb_rates *r, eb_roofline_step *steps)
{
    if (!eb_rates_have(r, inst->dt))
        return NAN;
    double elem_bytes = (double)eb_dtype_size(inst->dt), sum = 0;
    for (int s = 0; s < sched->num_steps; s++) {
        const eb_sched_step *st = &sched->steps[s];
        double elems = slot_elems(inst, sched, st->a) +
                       slot_elems(inst, sched, st->b) + st->out_elems;
        eb_roofline_step b = eb_roofline_of(st->flops, elem_bytes * elems,
                                            r->gflops[inst->dt], r->gbs);
        if (steps)
            steps[s] = b;
        sum += b.bound_ms;
    }
    return sum;
}
