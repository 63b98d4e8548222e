/* test_refeinsum: the stepwise naive reference (eb_ref_pairwise, issue 15
 * item 11) against the whole-einsum naive loop (eb_ref_einsum) on random
 * inputs: two implementations that share no code agree on contractions of
 * every kind (batch, contracted, free, summed-out-of-one, traces, scalar
 * output, a trace at the final step), for every path order tried, and on
 * 300 random einsums (2..5 operands of rank 0..4, size-1 and long labels,
 * random paths) that take both multiply loops and cross their blocks. And
 * a perturbed result is caught: the check's tolerance sees a 1e-7 relative
 * error in one element. The same in complex128, where both references are
 * also checked against the complex einsum taken apart into real ones. */
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

/* The complex einsum as real ones: with each operand split into its real
 * and imaginary planes, every choice of one plane per operand is a real
 * einsum (the trusted real naive loop) that adds to the result times
 * i^(number of imaginary planes). */
static void complex_by_planes(const eb_instance *cinst, const eb_view *cv,
                              double *want)
{
    eb_instance rinst = *cinst;
    rinst.dt = EB_F64;
    int n = cinst->num_tensors;
    int64_t out = tu_output_elems(cinst);
    double *planes[2][8], *r = malloc((size_t)out * sizeof *r);
    eb_view rv[8];
    for (int k = 0; k < n; k++) {
        int64_t e = eb_instance_operand_elems(cinst, k);
        const double *src = (const double *)cv[k].data;
        for (int p = 0; p < 2; p++) {
            planes[p][k] = malloc((size_t)e * sizeof(double));
            for (int64_t i = 0; i < e; i++)
                planes[p][k][i] = src[2 * i + p];
        }
    }
    memset(want, 0, (size_t)out * 2 * sizeof *want);
    eb_error err;
    for (unsigned mask = 0; mask < 1u << n; mask++) {
        int imag = 0;
        for (int k = 0; k < n; k++) {
            int p = (mask >> k) & 1;
            imag += p;
            eb_view_compact(&rv[k], planes[p][k], cinst->inputs[k].ids,
                            cinst->inputs[k].rank, cinst->label_size);
        }
        EB_CHECK(eb_ref_einsum(&rinst, rv, r, &err) == EB_OK, "%s", err.msg);
        /* i^imag: 1, i, -1, -i */
        double sign = imag % 4 < 2 ? 1 : -1;
        for (int64_t i = 0; i < out; i++)
            want[2 * i + imag % 2] += sign * r[i];
    }
    for (int k = 0; k < n; k++)
        for (int p = 0; p < 2; p++)
            free(planes[p][k]);
    free(r);
}

/* |element i| of a real (w 1) or complex (w 2) array. */
static double modulus(const double *x, int64_t i, int w)
{
    return w == 2 ? hypot(x[2 * i], x[2 * i + 1]) : fabs(x[i]);
}

/* The stepwise reference against the whole-einsum loop in dt (float64 or
 * complex128; complex: both also against the einsum taken apart into real
 * ones), and a 1e-7 relative error in the largest element (complex: in its
 * imaginary part) caught by the check's tolerance. */
static void one_dt(const char *fs, const eb_pair *steps, int nsteps,
                   int64_t (*sizes)(uint32_t, void *), void *arg,
                   eb_dtype dt)
{
    eb_instance *inst = tu_instance(fs, sizes, arg);
    EB_CHECK(inst != NULL, "%s", fs);
    if (!inst)
        return;
    inst->dt = dt;
    int w = dt == EB_C128 ? 2 : 1;
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
    double *a = malloc((size_t)(n * w) * sizeof *a),
           *b = malloc((size_t)(n * w) * sizeof *b);
    EB_CHECK(eb_ref_einsum(inst, ops->views, a, &err) == EB_OK, "%s", err.msg);
    EB_CHECK(eb_ref_pairwise(inst, sched, ops->views, b, &err) == EB_OK, "%s",
             err.msg);
    double e = eb_ref_rel_err_dt(dt, b, a, n);
    EB_CHECK(e <= 1e-13, "%s (%s): stepwise vs naive max_rel_err %g", fs,
             eb_dtype_name(dt), e);
    if (dt == EB_C128) {
        double *c = malloc((size_t)n * 2 * sizeof *c);
        complex_by_planes(inst, ops->views, c);
        e = eb_ref_rel_err_dt(dt, a, c, n);
        EB_CHECK(e <= 1e-13, "%s: complex naive vs real planes %g", fs, e);
        free(c);
    }
    int64_t big = 0;
    for (int64_t i = 1; i < n; i++)
        big = modulus(a, i, w) > modulus(a, big, w) ? i : big;
    double mag = modulus(a, big, w);
    b[w * big + w - 1] += mag != 0 ? 1e-7 * mag : 1e-7;
    EB_CHECK(eb_ref_rel_err_dt(dt, b, a, n) > EB_CHECK_TOL,
             "%s (%s): a 1e-7 perturbation passes the tolerance", fs,
             eb_dtype_name(dt));
    free(a);
    free(b);
    eb_schedule_destroy(sched);
    eb_operands_destroy(ops);
    eb_instance_destroy(inst);
}

static void one(const char *fs, const eb_pair *steps, int nsteps)
{
    one_dt(fs, steps, nsteps, size_of, NULL, EB_F64);
    one_dt(fs, steps, nsteps, size_of, NULL, EB_C128);
}

/* A random einsum over labels a..f: 2..5 operands of rank 0..4 (repeats
 * make traces), an output of distinct labels (sum-outs where one operand
 * alone has a label the output lacks), a random pairwise path. */
static void one_random(int complex_too)
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
    one_dt(fs, steps, n - 1, size_rand, sizes, EB_F64);
    if (complex_too)
        one_dt(fs, steps, n - 1, size_rand, sizes, EB_C128);
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
    /* A third of them in complex128 too (its plane check pays 2^n real
     * einsums). */
    for (int r = 0; r < 300; r++)
        one_random(r % 3 == 0);
    /* The reference refuses the dtypes it does not compute in. */
    eb_instance *f32 = tu_instance("ij,jk->ik", size_of, NULL);
    if (f32) {
        double out[64];
        eb_error err;
        f32->dt = EB_F32;
        EB_CHECK(eb_ref_einsum(f32, NULL, out, &err) == EB_ERR_INTERNAL &&
                     strstr(err.msg, "float64 or complex128"),
                 "float32 reference: %s", err.msg);
        EB_CHECK(eb_ref_dtype(EB_F32) == EB_F64 &&
                     eb_ref_dtype(EB_C64) == EB_C128 &&
                     eb_ref_dtype(EB_C128) == EB_C128,
                 "reference dtypes");
        eb_instance_destroy(f32);
    }
    return eb_check_done("test_refeinsum");
}
