/* budget: peak bytes of a schedule, walked once with slot liveness. */
#include "budget.h"

#include <stdio.h>
#include <stdlib.h>

double eb_budget_inputs(const eb_instance *inst)
{
    double b = 0;
    for (int k = 0; k < inst->num_tensors; k++)
        b += (double)eb_instance_operand_elems(inst, k) *
             (double)eb_dtype_size(inst->dt);
    return b;
}

static double slot_elems(const eb_instance *inst, const eb_schedule *s,
                         int slot)
{
    return slot < s->num_inputs
               ? (double)eb_instance_operand_elems(inst, slot)
               : s->steps[slot - s->num_inputs].out_elems;
}

double eb_budget_peak(const eb_instance *inst, const eb_schedule *sched)
{
    double inputs = eb_budget_inputs(inst), live = 0, peak = 0;
    const double d = (double)eb_dtype_size(inst->dt);
    for (int t = 0; t < sched->num_steps; t++) {
        const eb_sched_step *st = &sched->steps[t];
        double a = slot_elems(inst, sched, st->a) * d;
        double b = slot_elems(inst, sched, st->b) * d;
        double out = st->out_elems * d;
        double need = live + a + b + 2 * out;
        if (need > peak)
            peak = need;
        /* The operands' buffers go back; the output stays live. */
        live += out - (st->a >= sched->num_inputs ? a : 0) -
                (st->b >= sched->num_inputs ? b : 0);
    }
    if (sched->num_steps == 0 && inst->num_tensors > 0)
        peak = 2 * (double)eb_instance_operand_elems(inst, 0) * d;
    return inputs + peak;
}

const char *eb_budget_str(double bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%.0f bytes", bytes);
        return buf;
    }
    int u = 0;
    bytes /= 1024;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, cap, "%.1f %s", bytes, units[u]);
    return buf;
}
