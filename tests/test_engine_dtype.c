/*
 * test_engine_dtype: the contraction engine in float64, float32, complex128
 * and complex64, eager and trace (fused where possible, too), one and two
 * engine threads, against a naive einsum written here in the dtype's wide
 * type (double or double _Complex, from the same input values).
 *
 * Tolerance per output element: c * eps(dtype) * (terms + operands) *
 * sum |terms|, the rounding bound of any order of summing `terms` products
 * of `operands` factors (eps = 2^-52 or 2^-23, c = 8 covers the complex
 * product's extra roundings and the planner's pairwise intermediates).
 *
 * Structure: for every case the trace program of a dtype has the steps and
 * kernel kinds of float64's, except that float64's own small and
 * vector-batch GEMM kernels become BLAS GEMM or GEMV.
 */
#include <complex.h>
#include <math.h>

#include "check.h"
#include "contract.h"
#include "einsum_util.h"
#include "trace.h"

typedef double _Complex wide;

static const eb_dtype dtypes[] = {EB_F64, EB_F32, EB_C128, EB_C64};

/* Uniform in [-1, 1), exactly representable in float. */
static double unit(uint64_t *s)
{
    return (double)(tu_rng_next(s) >> 40) * 0x1.0p-24 * 2.0 - 1.0;
}

/* Element i of a buffer of dt, as a wide value. */
static wide get(eb_dtype dt, const void *buf, int64_t i)
{
    switch (dt) {
    case EB_F32: return ((const float *)buf)[i];
    case EB_C128: return ((const double _Complex *)buf)[i];
    case EB_C64: return ((const float _Complex *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

static void put(eb_dtype dt, void *buf, int64_t i, wide v)
{
    switch (dt) {
    case EB_F32: ((float *)buf)[i] = (float)creal(v); break;
    case EB_C128: ((double _Complex *)buf)[i] = v; break;
    case EB_C64: ((float _Complex *)buf)[i] = (float _Complex)v; break;
    default: ((double *)buf)[i] = creal(v); break;
    }
}

/* Inputs of inst in its dtype (random, both parts for complex), their
 * wide copies and magnitudes. Every element draws a real and an imaginary
 * part (a real dtype drops the latter): the real dtypes get the same
 * values, as do the complex ones, so one reference serves each pair. */
typedef struct {
    int n;
    void **buf;
    wide **w;
    double **mag;
    eb_view *views;
} inputs;

static void inputs_free(inputs *in)
{
    for (int k = 0; k < in->n; k++) {
        free(in->buf[k]);
        free(in->w[k]);
        free(in->mag[k]);
    }
    free(in->buf);
    free(in->w);
    free(in->mag);
    free(in->views);
}

static void inputs_make(const eb_instance *inst, uint64_t seed, inputs *in)
{
    int n = inst->num_tensors;
    in->n = n;
    in->buf = calloc((size_t)n, sizeof *in->buf);
    in->w = calloc((size_t)n, sizeof *in->w);
    in->mag = calloc((size_t)n, sizeof *in->mag);
    in->views = calloc((size_t)n, sizeof *in->views);
    size_t esz = eb_dtype_size(inst->dt);
    int cplx = eb_dtype_is_complex(inst->dt);
    for (int k = 0; k < n; k++) {
        int64_t e = eb_instance_operand_elems(inst, k);
        in->buf[k] = aligned_alloc(64, ((size_t)e * esz + 63) / 64 * 64);
        in->w[k] = malloc((size_t)e * sizeof(wide));
        in->mag[k] = malloc((size_t)e * sizeof(double));
        for (int64_t i = 0; i < e; i++) {
            double re = unit(&seed), im = unit(&seed);
            put(inst->dt, in->buf[k], i, re + (cplx ? im : 0) * I);
            in->w[k][i] = get(inst->dt, in->buf[k], i);
            in->mag[k][i] = cabs(in->w[k][i]);
        }
        eb_view_compact(&in->views[k], in->buf[k], inst->inputs[k].ids,
                        inst->inputs[k].rank, inst->label_size);
    }
}

/* The naive einsum over every assignment of every label: ref[o] = sum of
 * the products, mag[o] = sum of their magnitudes; *terms gets the number
 * of products per output element. Offsets of the operands (and of the
 * output, at n) move by step[l][k] when label l counts up. */
static void naive(const eb_instance *inst, const inputs *in, wide *ref,
                  double *mag, int64_t *terms)
{
    int L = inst->num_labels, n = inst->num_tensors;
    int64_t out_elems = tu_output_elems(inst), all = 1;
    for (int l = 0; l < L; l++)
        all *= inst->label_size[l];
    *terms = all / out_elems;
    for (int64_t o = 0; o < out_elems; o++) {
        ref[o] = 0;
        mag[o] = 0;
    }
    int64_t(*step)[16] = calloc((size_t)L, sizeof *step);
    for (int k = 0; k < n; k++)
        for (int a = 0; a < in->views[k].rank; a++)
            step[in->views[k].ids[a]][k] += in->views[k].stride[a];
    for (int a = inst->output.rank - 1, s = 1; a >= 0; a--) {
        step[inst->output.ids[a]][n] += s;
        s *= (int)inst->label_size[inst->output.ids[a]];
    }
    int64_t idx[64] = {0}, off[16] = {0};
    for (int64_t it = 0; it < all; it++) {
        double pr = 1, pi = 0, pm = 1;
        for (int k = 0; k < n; k++) {
            double xr = creal(in->w[k][off[k]]), xi = cimag(in->w[k][off[k]]);
            double t = pr * xr - pi * xi;
            pi = pr * xi + pi * xr;
            pr = t;
            pm *= in->mag[k][off[k]];
        }
        ref[off[n]] += pr + pi * I;
        mag[off[n]] += pm;
        for (int l = L - 1; l >= 0; l--) {
            for (int k = 0; k <= n; k++)
                off[k] += step[l][k];
            if (++idx[l] < inst->label_size[l])
                break;
            for (int k = 0; k <= n; k++)
                off[k] -= step[l][k] * inst->label_size[l];
            idx[l] = 0;
        }
    }
    free(step);
}

/* How one case runs: mode, and for trace whether fusion is forced. */
typedef struct {
    eb_mode mode;
    int force_fuse;
    const char *name;
} variant;

static const variant variants[] = {
    {EB_MODE_EAGER, 0, "eager"},
    {EB_MODE_TRACE, 0, "trace"},
    {EB_MODE_TRACE, 1, "trace+fuse"},
};

/* Worst error of one variant in units of its element bound (<= 1 passes);
 * -1 when the executor fails. */
static double run_variant(const eb_instance *inst, const eb_path *path,
                          const inputs *in, const wide *ref,
                          const double *mag, int64_t terms, const variant *va,
                          eb_exec_counters *cnt_out)
{
    eb_pool *pool = eb_pool_create();
    eb_fuse_opts fuse = eb_fuse_default_opts();
    fuse.force = va->force_fuse;
    fuse.solo_work = 0; /* small cases too run on the team (its splits) */
    eb_executor ex;
    eb_error err;
    double worst = -1;
    if (eb_exec_create(va->mode, inst, path, in->views, pool, tu_team, &fuse,
                       &ex, &err)) {
        fprintf(stderr, "create: %s\n", err.msg);
        eb_pool_destroy(pool);
        return -1;
    }
    int single = eb_dtype_real(inst->dt) == EB_F32;
    double eps = single ? 0x1.0p-23 : 0x1.0p-52;
    double c = 8 * eps * (double)(terms + inst->num_tensors);
    int64_t n = tu_output_elems(inst);
    for (int r = 0; r < 2; r++) { /* the second run reuses the buffers */
        const void *out;
        eb_exec_counters cnt = {0};
        if (ex.run(ex.ctx, &out, &cnt, &err)) {
            fprintf(stderr, "run: %s\n", err.msg);
            worst = -1;
            break;
        }
        worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = cabs(get(inst->dt, out, i) - ref[i]);
            double bound = c * mag[i] + 1e-300;
            if (!(e <= bound * 1e30)) { /* NaN or far off */
                worst = INFINITY;
                break;
            }
            if (e / bound > worst)
                worst = e / bound;
        }
        if (cnt_out)
            *cnt_out = cnt;
        ex.release(ex.ctx);
    }
    eb_exec_destroy(&ex);
    eb_pool_destroy(pool);
    return worst;
}

/* Trace's kernel kinds for inst in its dtype match float64's (own GEMM
 * kernels replaced by BLAS ones); returns the number of steps compared,
 * -1 on a mismatch. */
static int same_structure(const eb_instance *inst, const eb_instance *f64,
                          const eb_path *path, int *gemm_steps)
{
    int ns = path->num_steps ? path->num_steps : 1;
    eb_step_desc *d = calloc((size_t)ns, sizeof *d),
                 *d64 = calloc((size_t)ns, sizeof *d64);
    eb_fuse_opts fuse = eb_fuse_default_opts();
    int64_t arena, arena64;
    eb_error err;
    int ok = ns;
    if (eb_trace_describe(inst, path, &fuse, d, &arena, &err) ||
        eb_trace_describe(f64, path, &fuse, d64, &arena64, &err))
        ok = -1;
    for (int t = 0; t < ns && ok > 0; t++) {
        eb_kind k = d[t].plan.kind, k64 = d64[t].plan.kind;
        int own = k64 == EB_KIND_SMALL_GEMM || k64 == EB_KIND_VEC_GEMM;
        if (inst->dt == EB_F64 ? k != k64
            : own ? (k != EB_KIND_GEMM && k != EB_KIND_GEMV)
                  : k != k64 || k == EB_KIND_SMALL_GEMM ||
                        k == EB_KIND_VEC_GEMM) {
            fprintf(stderr, "step %d: %s in %s, %s in float64\n", t,
                    eb_kind_name(k), eb_dtype_name(inst->dt),
                    eb_kind_name(k64));
            ok = -1;
        }
        if (d[t].plan.dt != inst->dt)
            ok = -1;
        *gemm_steps += k == EB_KIND_GEMM;
    }
    free(d);
    free(d64);
    return ok;
}

/* Build inst in dtype dt from a format string and sizes. */
static eb_instance *build(const char *fs, int64_t (*size_of)(uint32_t, void *),
                          void *arg, eb_dtype dt)
{
    return tu_instance_dt(fs, size_of, arg, eb_dtype_name(dt));
}

/* Run one einsum and path in every dtype and variant. */
static void check_case(const char *fs, int64_t (*size_of)(uint32_t, void *),
                       void *arg, const eb_path *path, uint64_t seed,
                       int want_gemm, const char *what)
{
    eb_instance *f64 = build(fs, size_of, arg, EB_F64);
    EB_CHECK(f64 != NULL, "%s builds", fs);
    if (!f64)
        return;
    int64_t n = tu_output_elems(f64), terms = 0;
    wide *ref[2] = {malloc((size_t)n * sizeof(wide)),
                    malloc((size_t)n * sizeof(wide))};
    double *mag[2] = {malloc((size_t)n * sizeof(double)),
                      malloc((size_t)n * sizeof(double))};
    int have[2] = {0, 0};
    for (size_t q = 0; q < sizeof dtypes / sizeof dtypes[0]; q++) {
        eb_dtype dt = dtypes[q];
        eb_instance *inst = build(fs, size_of, arg, dt);
        if (!inst || inst->dt != dt) {
            EB_CHECK(0, "%s builds in %s", fs, eb_dtype_name(dt));
            eb_instance_destroy(inst);
            continue;
        }
        inputs in;
        inputs_make(inst, seed, &in);
        int cx = eb_dtype_is_complex(dt);
        if (!have[cx])
            naive(inst, &in, ref[cx], mag[cx], &terms);
        have[cx] = 1;
        int gemm_steps = 0;
        EB_CHECK(same_structure(inst, f64, path, &gemm_steps) > 0,
                 "%s %s (%s): trace's kernels are float64's", what,
                 eb_dtype_name(dt), fs);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            eb_exec_counters cnt = {0};
            double e = run_variant(inst, path, &in, ref[cx], mag[cx], terms,
                                   &variants[v], &cnt);
            EB_CHECK(e >= 0 && e <= 1, "%s %s %s %d thread(s) (%s): error "
                     "%.3g of the bound", what, eb_dtype_name(dt),
                     variants[v].name, eb_team_size(tu_team), fs, e);
            if (want_gemm && dt != EB_F64 && !variants[v].force_fuse)
                EB_CHECK(cnt.gemm_calls > 0 && gemm_steps > 0,
                         "%s %s %s (%s): BLAS GEMM ran (%lld calls)", what,
                         eb_dtype_name(dt), variants[v].name, fs,
                         (long long)cnt.gemm_calls);
        }
        inputs_free(&in);
        eb_instance_destroy(inst);
    }
    for (int c = 0; c < 2; c++) {
        free(ref[c]);
        free(mag[c]);
    }
    eb_instance_destroy(f64);
}

/* ---- chosen cases -------------------------------------------------------- */

typedef struct {
    const char *fs, *sizes;
    int gemm; /* a BLAS GEMM must run in the non-float64 dtypes */
} case_t;

static const case_t cases[] = {
    /* GEMM-sized: every operand layout, C row- and column-major. */
    {"ij,jk->ik", "i=64,j=64,k=64", 1},
    {"ij,kj->ik", "i=70,j=65,k=66", 1},
    {"ji,jk->ik", "i=66,j=64,k=71", 1},
    {"ji,kj->ki", "i=64,j=67,k=65", 1},
    {"ij,jk->ki", "i=65,j=64,k=64", 1},
    {"bij,bjk->bik", "b=3,i=64,j=64,k=64", 1},
    {"bij,bjk->ibk", "b=2,i=64,j=66,k=64", 1},
    /* float64's own kernels: small batched, short K, skinny, vector
     * batch; BLAS GEMM in the other dtypes. */
    {"bij,bjk->bik", "b=300,i=4,j=5,k=3", 1},
    {"ij,jk->ik", "i=40,j=9,k=37", 1},
    {"ij,jk->ik", "i=5,j=70,k=90", 1},
    {"ikw,kjw->ijw", "i=5,j=6,k=7,w=16", 1},
    /* Batches of small BLAS calls, split by batch element on two threads. */
    {"bij,bjk->bik", "b=1200,i=6,j=5,k=4", 1},
    {"bij,bj->bi", "b=500,i=10,j=20", 0},
    {"bi,bi->b", "b=700,i=100", 0},
    /* GEMV, DOT, MUL, OUTER, single operand. */
    {"ij,j->i", "i=50,j=70", 0},
    {"ji,j->i", "i=50,j=70", 0},
    {"j,jk->k", "j=50,k=70", 0},
    {"j,kj->k", "j=50,k=70", 0},
    {"i,i->", "i=1000", 0},
    {"bi,bi->b", "b=7,i=100", 0},
    {"bi,ib->b", "b=7,i=100", 0},
    {"ij,ij->ij", "i=37,j=29", 0},
    {"ij,ji->ij", "i=37,j=29", 0},
    {"i,j->ij", "i=37,j=29", 0},
    {"bi,bj->jib", "b=165,i=3,j=4", 0},
    {"ijk->kji", "i=5,j=6,k=7", 0},
    {"ijk->j", "i=5,j=6,k=7", 0},
    /* Sum-outs, hyperedges, diagonals, scalars. */
    {"ijk,jl->il", "i=9,j=8,k=7,l=6", 0},
    {"bi,bj,bk->ijk", "b=6,i=3,j=4,k=5", 0},
    {"bi,bj,bk->bijk", "b=6,i=3,j=4,k=5", 0},
    {"iij,jk->ik", "i=6,j=5,k=4", 0},
    {"ii->i", "i=9", 0},
    {"ii->", "i=9", 0},
    {"iji,jk->k", "i=5,j=4,k=3", 0},
    {",ij->ij", "i=5,j=4", 0},
    {"ij,ij->", "i=5,j=4", 0},
    {",->", "", 0},
    {"i,->i", "i=7", 0},
    /* A GEMM-sized step inside a chain with sum-outs and a diagonal. */
    {"aij,jk,kkl,lm->im", "a=2,i=64,j=64,k=4,l=8,m=8", 1},
};

static void test_cases(void)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_sizes sp = {cases[c].sizes};
        int n = 1;
        for (const char *p = cases[c].fs; *p != '-'; p++)
            n += *p == ',';
        eb_pair steps[8];
        eb_path path;
        tu_seq_path(&path, steps, n);
        check_case(cases[c].fs, tu_spec_size, &sp, &path, 100 + c, cases[c].gemm,
                   "case");
    }
}

/* ---- random einsums ------------------------------------------------------- */

typedef struct {
    int64_t size[8];
} rand_sizes;

static int64_t rand_size(uint32_t cp, void *arg)
{
    return ((rand_sizes *)arg)->size[cp - 'a'];
}

/* Random einsums over labels a..h (sizes 1 to 6, one large now and then
 * so that steps reach BLAS), with repeated labels, sum-outs, hyperedges
 * and scalars, on a random path. */
static int random_case(uint64_t *s, int idx)
{
    rand_sizes rs;
    int nl = 1 + tu_rnd(s, 8);
    for (int k = 0; k < 8; k++)
        rs.size[k] = 1 + tu_rnd(s, 6);
    if (tu_rnd(s, 4) == 0)
        rs.size[tu_rnd(s, nl)] = 40 + tu_rnd(s, 30);
    int n = 2 + tu_rnd(s, 4);
    char fs[256];
    size_t len = 0;
    int used[8] = {0};
    for (int k = 0; k < n; k++) {
        int rank = tu_rnd(s, 4);
        for (int a = 0; a < rank; a++) {
            int l = tu_rnd(s, nl);
            used[l] = 1;
            fs[len++] = (char)('a' + l);
        }
        fs[len++] = k + 1 < n ? ',' : '-';
    }
    fs[len++] = '>';
    for (int l = 0; l < nl; l++)
        if (used[l] && tu_rnd(s, 3) == 0)
            fs[len++] = (char)('a' + l);
    fs[len] = '\0';
    /* Keep the naive reference affordable. */
    int64_t all = 1;
    for (int l = 0; l < nl; l++)
        all *= used[l] ? rs.size[l] : 1;
    if (all > (1 << 16))
        return 0;
    eb_pair steps[8];
    eb_path path;
    tu_random_path(s, n, steps, &path);
    check_case(fs, rand_size, &rs, &path, (uint64_t)idx, 0, "random");
    return 1;
}

static void test_random(int count)
{
    uint64_t s = 4242;
    int tested = 0;
    for (int idx = 0; idx < count; idx++)
        tested += random_case(&s, idx);
    EB_CHECK(tested >= count * 3 / 4, "only %d of %d random cases small "
             "enough for the naive reference", tested, count);
    printf("random einsums: %d of %d tested\n", tested, count);
}

int main(void)
{
    /* Under a wrapper (valgrind: 50x slower) fewer random einsums. */
    const char *wrap = getenv("EB_WRAP");
    int few = wrap && *wrap;
    test_cases();
    test_random(few ? 60 : 400);
    /* Two engine threads: split kernels, BLAS dots in parallel, fused
     * groups run per thread. */
    eb_error err;
    if (eb_team_create(2, &tu_team, &err) == EB_OK) {
        test_cases();
        test_random(few ? 30 : 200);
        eb_team_destroy(tu_team);
        tu_team = NULL;
    }
    return eb_check_done("test_engine_dtype");
}
