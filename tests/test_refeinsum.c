/* test_refeinsum: the stepwise naive reference (eb_ref_pairwise, issue 15
 * item 11) against the whole-einsum naive loop (eb_ref_einsum) on random
 * inputs: two implementations that share no code agree on contractions of
 * every kind (batch, contracted, free, summed-out-of-one, traces, scalar
 * output, a trace at the final step), for every path order tried, and on
 * 300 random einsums (2..5 operands of rank 0..4, size-1 and long labels,
 * random paths) that take both multiply loops and cross their blocks. And
 * a perturbed result is caught: the check's tolerance sees a 1e-7 relative
 * error in one element. */
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

/* Sizes 1..24 for the random cases: size-1 labels, and labels long enough
 * to cross the multiply's blocks when several are grouped. */
static int64_t size_rand(uint32_t cp, void *arg)
{
    const int *sizes = arg;
    return sizes[cp - 'a'];
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static void one_sized(const char *fs, const eb_pair *steps, int nsteps,
                      int64_t (*sizes)(uint32_t, void *), void *arg)
{
    eb_instance *inst = tu_instance(fs, sizes, arg);
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
    /* A 1e-7 relative error in the largest element. */
    int64_t big = 0;
    for (int64_t i = 1; i < n; i++)
        big = fabs(a[i]) > fabs(a[big]) ? i : big;
    b[big] += a[big] != 0 ? 1e-7 * a[big] : 1e-7;
    EB_CHECK(eb_ref_rel_err(b, a, n) > EB_CHECK_TOL,
             "%s: a 1e-7 perturbation passes the tolerance", fs);
    free(a);
    free(b);
    eb_schedule_destroy(sched);
    eb_operands_destroy(ops);
    eb_instance_destroy(inst);
}

static void one(const char *fs, const eb_pair *steps, int nsteps)
{
    one_sized(fs, steps, nsteps, size_of, NULL);
}

/* A random einsum over labels a..f: 2..5 operands of rank 0..4 (repeats
 * make traces), an output of distinct labels (sum-outs where one operand
 * alone has a label the output lacks), a random pairwise path. */
static void one_random(void)
{
    enum { NL = 6 };
    int sizes[NL];
    for (int l = 0; l < NL; l++)
        sizes[l] = rnd(4) == 0 ? 1 : 2 + (int)rnd(rnd(3) == 0 ? 23 : 5);
    char fs[96];
    int len = 0, n = 2 + (int)rnd(4), used[NL] = {0};
    for (int k = 0; k < n; k++) {
        int rank = (int)rnd(5);
        for (int a = 0; a < rank; a++) {
            int l = (int)rnd(NL);
            used[l] = 1;
            fs[len++] = (char)('a' + l);
        }
        fs[len++] = k + 1 < n ? ',' : '-';
    }
    fs[len++] = '>';
    for (int l = 0; l < NL; l++)
        if (used[l] && rnd(2))
            fs[len++] = (char)('a' + l);
    fs[len] = '\0';
    eb_pair steps[8];
    for (int t = 0, left = n; left > 1; t++, left--) {
        int i = (int)rnd((unsigned)left), j = (int)rnd((unsigned)left - 1);
        j += j >= i;
        steps[t] = (eb_pair){i < j ? i : j, i < j ? j : i};
    }
    one_sized(fs, steps, n - 1, size_rand, sizes);
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
    for (int r = 0; r < 300; r++)
        one_random();
    return eb_check_done("test_refeinsum");
}
