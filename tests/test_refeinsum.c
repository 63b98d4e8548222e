/* test_refeinsum: the stepwise naive reference (eb_ref_pairwise, issue 15
 * item 11) against the whole-einsum naive loop (eb_ref_einsum) on random
 * inputs: two implementations that share no code agree on contractions of
 * every kind (batch, contracted, free, summed-out-of-one, traces, scalar
 * output, a trace at the final step), for every path order tried. And a
 * perturbed result is caught: the check's tolerance sees a 1e-7 error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "einsum_util.h"
#include "operands.h"
#include "refeinsum.h"
#include "schedule.h"
#include "verify.h"

static int64_t size_of(uint32_t cp, void *arg)
{
    (void)arg;
    return 2 + (int64_t)(cp % 4); /* 2..5 */
}

static void one(const char *fs, const eb_pair *steps, int nsteps)
{
    eb_instance *inst = tu_instance(fs, size_of, NULL);
    EB_CHECK(inst != NULL, "%s", fs);
    if (!inst)
        return;
    eb_path path = {.strategy = "t", .num_steps = nsteps,
                    .steps = (eb_pair *)steps};
    eb_fill fill = {.kind = EB_FILL_RANDOM, .seed = 7};
    eb_operands *ops;
    eb_schedule *sched;
    eb_error err;
    EB_CHECK(eb_operands_create(inst, &fill, &ops, &err) == EB_OK, "%s",
             err.msg);
    EB_CHECK(eb_schedule_build(inst, &path, &sched, &err) == EB_OK, "%s: %s",
             fs, err.msg);
    int64_t n = tu_output_elems(inst);
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    EB_CHECK(eb_ref_einsum(inst, ops->views, a, &err) == EB_OK, "%s", err.msg);
    EB_CHECK(eb_ref_pairwise(inst, sched, ops->views, b, &err) == EB_OK, "%s",
             err.msg);
    double e = eb_ref_rel_err(b, a, n);
    EB_CHECK(e <= 1e-13, "%s: stepwise vs naive max_rel_err %g", fs, e);
    b[n / 2] *= 1 + 1e-7;
    b[n / 2] += b[n / 2] == 0 ? 1e-7 : 0;
    EB_CHECK(eb_ref_rel_err(b, a, n) > EB_CHECK_TOL,
             "%s: a 1e-7 perturbation passes the tolerance", fs);
    free(a);
    free(b);
    eb_schedule_destroy(sched);
    eb_operands_destroy(ops);
    eb_instance_destroy(inst);
}

int main(void)
{
    static const eb_pair p01[] = {{0, 1}}, p3[] = {{0, 1}, {0, 1}},
                         p3b[] = {{1, 2}, {0, 1}}, p4[] = {{0, 1}, {0, 1}, {0, 1}},
                         p4b[] = {{2, 3}, {0, 1}, {0, 1}};
    one("ij,jk->ik", p01, 1);
    one("bij,bjk->bik", p01, 1);
    one("ij,jk->ki", p01, 1);
    one("i,j->ij", p01, 1);
    one("ij,ij->", p01, 1);
    one("iij,jk->ik", p01, 1);      /* a trace in an operand */
    one("ijx,jk->ik", p01, 1);      /* summed out of one operand */
    one("ab,bc,cd->ad", p3, 2);
    one("ab,bc,cd->ad", p3b, 2);
    one("ab,bc,ca->", p3, 2);       /* scalar output */
    one("abc,bcd,de,ea->bd", p4, 3);
    one("abc,bcd,de,ea->bd", p4b, 3);
    one("ab,ab,ab->ab", p3, 2);     /* hyperedges */
    return eb_check_done("test_refeinsum");
}
