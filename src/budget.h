/*
 * budget: the memory a measurement needs, known before anything is
 * allocated (DESIGN 3.3), so that a path whose intermediates would not fit
 * is refused with one message instead of running into the OOM killer.
 *
 * The figure is an upper bound read from the path's schedule: the inputs,
 * plus at the worst step the intermediates still live, the step's output,
 * a scratch of the output's size (a kernel's natural layout before a final
 * permutation) and compact copies of both operands (a permutation before
 * the kernel). Eager's pool and trace's arena (which reuses buffers by
 * liveness) stay within it.
 */
#ifndef EB_BUDGET_H
#define EB_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "schedule.h"

/* Bytes are in the run's dtype (inst->dt, after any --dtype). */

/* Bytes of every input operand. */
double eb_budget_inputs(const eb_instance *inst);

/* Peak bytes of running the schedule once (inputs included). */
double eb_budget_peak(const eb_instance *inst, const eb_schedule *sched);

/* "64.0 GiB", "512.0 MiB", "12.0 KiB", "100 bytes" into buf; returns buf. */
const char *eb_budget_str(double bytes, char *buf, size_t cap);

#endif
