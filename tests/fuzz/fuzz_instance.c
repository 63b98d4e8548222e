/* fuzz_instance: the instance loader (JSON, validation, inline paths) and
 * the planning every measurement starts with: schedule, peak bytes, and
 * eager's per-step plans (trace's compile for small paths). */
#include <stdlib.h>

#include "budget.h"
#include "eager.h"
#include "fuzz.h"
#include "load.h"
#include "schedule.h"
#include "trace.h"

/* Plans are big (13 KB a step); paths past this many steps only get the
 * schedule, so one input cannot take gigabytes; and only the first few
 * strategies are planned (a run would measure them all, in linear time,
 * but 50,000 of them are not a fuzz iteration). */
enum { PLAN_MAX_STEPS = 512, PLAN_MAX_PATHS = 4 };

static void plan(const eb_instance *inst, const eb_path *path)
{
    eb_error err;
    eb_schedule *sched;
    if (eb_schedule_build(inst, path, &sched, &err))
        return;
    (void)eb_budget_peak(inst, sched);
    eb_schedule_destroy(sched);
    if (path->num_steps > PLAN_MAX_STEPS)
        return;
    int n = path->num_steps ? path->num_steps : 1;
    eb_step_desc *d = malloc((size_t)n * sizeof *d);
    if (!d)
        return;
    int64_t arena;
    if (eb_eager_describe(inst, path, d, &err) == EB_OK)
        (void)eb_trace_describe(inst, path, NULL, d, &arena, &err);
    free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *file = eb_fuzz_file(0, data, size);
    eb_instance *inst;
    eb_error err;
    if (!file || eb_load_instance(file, &inst, &err))
        return 0;
    for (int k = 0; inst->inline_paths && k < inst->inline_paths->count &&
                    k < PLAN_MAX_PATHS; k++)
        plan(inst, &inst->inline_paths->paths[k]);
    eb_instance_destroy(inst);
    return 0;
}
