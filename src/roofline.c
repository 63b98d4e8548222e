/* roofline: per-step bounds max(flops / F, bytes / BW) along a path. */
#include "roofline.h"

enum { ELEM_BYTES = 8 };    /* float64 */

eb_roofline_step eb_roofline_of(double flops, double bytes, const eb_rates *r)
{
    eb_roofline_step s = {.flops = flops, .bytes = bytes};
    /* GFLOP/s and GB/s are 1e6 per millisecond. */
    s.flop_ms = flops / (r->gflops * 1e6);
    s.byte_ms = bytes / (r->gbs * 1e6);
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
    double sum = 0;
    for (int s = 0; s < sched->num_steps; s++) {
        const eb_sched_step *st = &sched->steps[s];
        double elems = slot_elems(inst, sched, st->a) +
                       slot_elems(inst, sched, st->b) + st->out_elems;
        eb_roofline_step b = eb_roofline_of(st->flops, ELEM_BYTES * elems, r);
        if (steps)
            steps[s] = b;
        sum += b.bound_ms;
    }
    return sum;
}
