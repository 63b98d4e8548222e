/* refeinsum: naive odometer einsum and the error measure of checks. */
#include "refeinsum.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double eb_ref_cost(const eb_instance *inst)
{
    double it = 1;
    for (int l = 0; l < inst->num_labels; l++)
        it *= (double)inst->label_size[l];
    return it * (inst->num_tensors > 1 ? inst->num_tensors : 1);
}

eb_dtype eb_ref_dtype(eb_dtype run)
{
    return eb_dtype_is_complex(run) ? EB_C128 : EB_F64;
}

/* The reference computes in float64 or complex128 only. */
static eb_status ref_dtype_ok(const eb_instance *inst, eb_error *err)
{
    if (inst->dt == EB_F64 || inst->dt == EB_C128)
        return EB_OK;
    return eb_error_set(err, EB_ERR_INTERNAL, "%s: the reference einsum "
                        "runs in float64 or complex128, not %s", inst->file,
                        eb_dtype_name(inst->dt));
}

/* The product of every operand's element at off[0..n) added to out[off[n]]
 * (complex: interleaved pairs, offsets in elements). */
static void ref_accumulate(const eb_view *inputs, int n, int cplx,
                           const int64_t *off, double *out)
{
    if (!cplx) {
        double prod = 1;
        for (int k = 0; k < n; k++)
            prod *= ((const double *)inputs[k].data)[off[k]];
        out[off[n]] += prod;
        return;
    }
    double pr = 1, pi = 0;
    for (int k = 0; k < n; k++) {
        const double *x = (const double *)inputs[k].data + 2 * off[k];
        double r = pr * x[0] - pi * x[1];
        pi = pr * x[1] + pi * x[0];
        pr = r;
    }
    out[2 * off[n]] += pr;
    out[2 * off[n] + 1] += pi;
}

eb_status eb_ref_einsum(const eb_instance *inst, const eb_view *inputs,
                        void *out_buf, eb_error *err)
{
    eb_status bad = ref_dtype_ok(inst, err);
    if (bad)
        return bad;
    int cplx = inst->dt == EB_C128;
    double *out = out_buf;
    int L = inst->num_labels, n = inst->num_tensors;
    /* step[l * (n + 1) + k]: offset change of operand k (k == n: output)
     * when label l advances by one. */
    int64_t *step = calloc((size_t)L * (size_t)(n + 1) + 1, sizeof(int64_t));
    int64_t *off = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t *idx = calloc((size_t)L + 1, sizeof(int64_t));
    if (!step || !off || !idx) {
        free(step);
        free(off);
        free(idx);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    for (int k = 0; k < n; k++)
        for (int a = 0; a < inputs[k].rank; a++)
            step[(size_t)inputs[k].ids[a] * (size_t)(n + 1) + (size_t)k] +=
                inputs[k].stride[a];
    int64_t os = 1, out_elems = 1;
    for (int a = inst->output.rank - 1; a >= 0; a--) {
        step[(size_t)inst->output.ids[a] * (size_t)(n + 1) + (size_t)n] = os;
        os *= inst->label_size[inst->output.ids[a]];
    }
    out_elems = os;
    memset(out, 0, (size_t)out_elems * eb_dtype_size(inst->dt));
    for (;;) {
        ref_accumulate(inputs, n, cplx, off, out);
        int l = L - 1;
        for (; l >= 0; l--) {
            int64_t *s = step + (size_t)l * (size_t)(n + 1);
            for (int k = 0; k <= n; k++)
                off[k] += s[k];
            if (++idx[l] < inst->label_size[l])
                break;
            for (int k = 0; k <= n; k++)
                off[k] -= s[k] * inst->label_size[l];
            idx[l] = 0;
        }
        if (l < 0)
            break;
    }
    free(step);
    free(off);
    free(idx);
    return EB_OK;
}

/* One operand of a pairwise step: data, labels and strides. */
typedef struct {
    const double *data;
    int rank;
    const int *ids;
    const int64_t *stride;
} ref_operand;

double eb_ref_pairwise_cost(const eb_instance *inst, const eb_schedule *sched)
{
    (void)inst;
    double c = 0;
    for (int t = 0; t < sched->num_steps; t++)
        c += sched->steps[t].flops; /* >= the step's iterations */
    return c;
}

/* One dimension of a strided copy: its size and its step in the source
 * and in the destination (0 in the destination: summed into place). */
typedef struct {
    int64_t size, src, dst;
} ref_dim;

/* dst[...] += src[...] over every index of dims[0..nd) (odometer, the last
 * dimension innermost): gathers, sums out and scatters. */
static void ref_copy(const ref_dim *dims, int nd, const double *src,
                     double *dst)
{
    if (nd == 0) {
        dst[0] += src[0];
        return;
    }
    int64_t idx[2 * EB_MAX_RANK] = {0}, os = 0, od = 0;
    const ref_dim *in = &dims[nd - 1];
    for (;;) {
        for (int64_t i = 0; i < in->size; i++)
            dst[od + i * in->dst] += src[os + i * in->src];
        int q = nd - 2;
        for (; q >= 0; q--) {
            os += dims[q].src, od += dims[q].dst;
            if (++idx[q] < dims[q].size)
                break;
            os -= dims[q].src * dims[q].size, od -= dims[q].dst * dims[q].size;
            idx[q] = 0;
        }
        if (q < 0)
            break;
    }
}

enum { REF_KB = 128, REF_JB = 512 };

/* One batch, c[M][N] += a[M][K] * b[K][N]: i-k-j over blocks of k and j
 * with the contiguous j loop innermost (the compiler vectorizes it). */
static void ref_gemm_ikj(int64_t m, int64_t n, int64_t k,
                         const double *restrict a, const double *restrict b,
                         double *restrict c)
{
    for (int64_t j0 = 0; j0 < n; j0 += REF_JB) {
        int64_t j1 = j0 + REF_JB < n ? j0 + REF_JB : n;
        for (int64_t k0 = 0; k0 < k; k0 += REF_KB) {
            int64_t k1 = k0 + REF_KB < k ? k0 + REF_KB : k;
            for (int64_t i = 0; i < m; i++) {
                double *restrict ci = c + i * n;
                for (int64_t kk = k0; kk < k1; kk++) {
                    const double aik = a[i * k + kk];
                    const double *restrict bk = b + kk * n;
                    for (int64_t j = j0; j < j1; j++)
                        ci[j] += aik * bk[j];
                }
            }
        }
    }
}

/* One batch, c[M][N] += a[M][K] . bt[N][K] (dot products, k innermost, four
 * partial sums): for narrow M and N, where the i-k-j inner run is short. */
static void ref_gemm_dot(int64_t m, int64_t n, int64_t k,
                         const double *restrict a, const double *restrict bt,
                         double *restrict c)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            const double *ai = a + i * k, *bj = bt + j * k;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            int64_t kk = 0;
            for (; kk + 4 <= k; kk += 4) {
                s0 += ai[kk] * bj[kk];
                s1 += ai[kk + 1] * bj[kk + 1];
                s2 += ai[kk + 2] * bj[kk + 2];
                s3 += ai[kk + 3] * bj[kk + 3];
            }
            for (; kk < k; kk++)
                s0 += ai[kk] * bj[kk];
            c[i * n + j] += (s0 + s1) + (s2 + s3);
        }
}

/* Label roles in one step: kept in both, free in a or b only (kept),
 * contracted (both, not kept), summed out of a or b alone. */
enum { R_BATCH, R_FREE_A, R_FREE_B, R_CONTR, R_SUM_A, R_SUM_B, R_NONE };

/* One label of a step: size, steps in a, b and the output, role. */
typedef struct {
    int64_t size, step[3];
    int role;
} ref_label;

/* Copy dims for one compact layout: first the labels of sum_role (summed,
 * outermost), then those of roles[0..nr) in that order, the last varying
 * fastest; `from` picks the strided side (0 a, 1 b, 2 output). Returns the
 * compact size. */
static int64_t ref_layout(const ref_label *lab, int nu, int from,
                          const int *roles, int nr, int sum_role,
                          ref_dim *dims, int *nd)
{
    int n = 0;
    for (int q = 0; q < nu; q++)
        if (lab[q].role == sum_role)
            dims[n++] = (ref_dim){lab[q].size, lab[q].step[from], 0};
    int first = n;
    for (int r = 0; r < nr; r++)
        for (int q = 0; q < nu; q++)
            if (lab[q].role == roles[r])
                dims[n++] = (ref_dim){lab[q].size, lab[q].step[from], 0};
    int64_t kept = 1;
    for (int x = n - 1; x >= first; x--) {
        dims[x].dst = kept;
        kept *= dims[x].size;
    }
    *nd = n;
    return kept;
}

static int64_t role_size(const ref_label *lab, int nu, int role)
{
    int64_t s = 1;
    for (int q = 0; q < nu; q++)
        if (lab[q].role == role)
            s *= lab[q].size;
    return s;
}

/* c[t] += x[t] * y[t] for each of nb batches of the gathered layouts. */
static void ref_multiply(int dot, int64_t nb, int64_t rows, int64_t cols,
                         int64_t k, const double *gx, const double *gy,
                         double *gc)
{
    for (int64_t t = 0; t < nb; t++)
        (dot ? ref_gemm_dot : ref_gemm_ikj)(rows, cols, k, gx + t * rows * k,
                                            gy + t * cols * k,
                                            gc + t * rows * cols);
}

/* Complex (interleaved) operands: each side is gathered as two real
 * planes (real parts, then imaginary parts: the same copy with the
 * source's strides doubled, from offset 0 and 1), multiplied as
 * cr = xr yr - xi yi, ci = xr yi + xi yr with the real loops (xi negated
 * in place for the last product), and both planes scattered back. */
static void ref_pair_complex(const ref_dim *dx, int ndx, const double *x,
                             const ref_dim *dy, int ndy, const double *y,
                             const ref_dim *dc, int ndc, int dot, int64_t nb,
                             int64_t rows, int64_t cols, int64_t k,
                             double *gx, double *gy, double *gc, double *out)
{
    ref_dim d2[2 * EB_MAX_RANK];
    int64_t ex = nb * rows * k, ey = nb * cols * k, ec = nb * rows * cols;
    memcpy(d2, dx, (size_t)ndx * sizeof *d2);
    for (int q = 0; q < ndx; q++)
        d2[q].src *= 2;
    ref_copy(d2, ndx, x, gx);
    ref_copy(d2, ndx, x + 1, gx + ex);
    memcpy(d2, dy, (size_t)ndy * sizeof *d2);
    for (int q = 0; q < ndy; q++)
        d2[q].src *= 2;
    ref_copy(d2, ndy, y, gy);
    ref_copy(d2, ndy, y + 1, gy + ey);
    ref_multiply(dot, nb, rows, cols, k, gx, gy, gc);
    ref_multiply(dot, nb, rows, cols, k, gx, gy + ey, gc + ec);
    ref_multiply(dot, nb, rows, cols, k, gx + ex, gy, gc + ec);
    for (int64_t i = 0; i < ex; i++)
        gx[ex + i] = -gx[ex + i];
    ref_multiply(dot, nb, rows, cols, k, gx + ex, gy + ey, gc);
    memcpy(d2, dc, (size_t)ndc * sizeof *d2);
    for (int q = 0; q < ndc; q++)
        d2[q].dst *= 2;
    ref_copy(d2, ndc, gc, out);
    ref_copy(d2, ndc, gc + ec, out + 1);
}

/* out (compact, labels out_ids) = sum over the other labels of a * b:
 * gather each operand compact as [batch][free][contracted] (labels only
 * one operand has and the output lacks are summed in the gather), multiply
 * batch by batch, scatter into the output's layout. Own loops only. */
static eb_status ref_pair(const eb_instance *inst, const ref_operand *a,
                          const ref_operand *b, const int *out_ids,
                          int out_rank, double *out, int64_t out_elems,
                          eb_error *err)
{
    int cplx = inst->dt == EB_C128;
    size_t w = cplx ? 2 : 1; /* doubles per element */
    ref_label lab[2 * EB_MAX_RANK];
    int u[2 * EB_MAX_RANK], in[2 * EB_MAX_RANK] = {0}, nu = 0;
    const ref_operand *ops[2] = {a, b};
    memset(lab, 0, sizeof lab);
    for (int k = 0; k < 2; k++)
        for (int x = 0; x < ops[k]->rank; x++) {
            int l = ops[k]->ids[x], q = 0;
            while (q < nu && u[q] != l)
                q++;
            if (q == nu) {
                u[nu] = l;
                lab[nu++].size = inst->label_size[l];
            }
            lab[q].step[k] += ops[k]->stride[x];
            in[q] |= 1 << k;
        }
    int64_t st = 1;
    for (int x = out_rank - 1; x >= 0; x--) {
        for (int q = 0; q < nu; q++)
            if (u[q] == out_ids[x]) {
                lab[q].step[2] = st;
                in[q] |= 4;
            }
        st *= inst->label_size[out_ids[x]];
    }
    static const int role_of[8] = {R_NONE, R_SUM_A, R_SUM_B, R_CONTR,
                                   R_NONE, R_FREE_A, R_FREE_B, R_BATCH};
    for (int q = 0; q < nu; q++)
        lab[q].role = role_of[in[q]];
    int64_t nb = role_size(lab, nu, R_BATCH), m = role_size(lab, nu, R_FREE_A),
            n = role_size(lab, nu, R_FREE_B), k = role_size(lab, nu, R_CONTR);
    /* x: the operand whose free labels are the rows of c. The i-k-j loop
     * wants the wider free side innermost; two narrow sides take dots. */
    int dot = m < 16 && n < 16, x = !dot && n < m;
    int fx = x ? R_FREE_B : R_FREE_A, fy = x ? R_FREE_A : R_FREE_B;
    int64_t rows = x ? n : m, cols = x ? m : n;
    const int rx[3] = {R_BATCH, fx, R_CONTR},
              ry[3] = {R_BATCH, dot ? fy : R_CONTR, dot ? R_CONTR : fy},
              rc[3] = {R_BATCH, fx, fy};
    ref_dim dx[2 * EB_MAX_RANK], dy[2 * EB_MAX_RANK], dc[2 * EB_MAX_RANK];
    int ndx, ndy, ndc;
    int64_t ex = ref_layout(lab, nu, x, rx, 3, x ? R_SUM_B : R_SUM_A, dx, &ndx);
    int64_t ey = ref_layout(lab, nu, !x, ry, 3, x ? R_SUM_A : R_SUM_B, dy,
                            &ndy);
    int64_t ec = ref_layout(lab, nu, 2, rc, 3, R_NONE, dc, &ndc);
    for (int q = 0; q < ndc; q++) { /* scatter: compact c to out */
        int64_t t = dc[q].src;
        dc[q].src = dc[q].dst;
        dc[q].dst = t;
    }
    double *gx = calloc((size_t)ex * w, sizeof *gx),
           *gy = calloc((size_t)ey * w, sizeof *gy),
           *gc = calloc((size_t)ec * w, sizeof *gc);
    if (!gx || !gy || !gc) {
        free(gx);
        free(gy);
        free(gc);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory for a "
                            "reference step");
    }
    memset(out, 0, (size_t)out_elems * w * sizeof(double));
    if (cplx) {
        ref_pair_complex(dx, ndx, ops[x]->data, dy, ndy, ops[!x]->data, dc,
                         ndc, dot, nb, rows, cols, k, gx, gy, gc, out);
    } else {
        ref_copy(dx, ndx, ops[x]->data, gx);
        ref_copy(dy, ndy, ops[!x]->data, gy);
        ref_multiply(dot, nb, rows, cols, k, gx, gy, gc);
        ref_copy(dc, ndc, gc, out);
    }
    free(gx);
    free(gy);
    free(gc);
    return EB_OK;
}

eb_status eb_ref_pairwise(const eb_instance *inst, const eb_schedule *sched,
                          const eb_view *inputs, void *out, eb_error *err)
{
    int n = sched->num_inputs, ns = sched->num_steps;
    if (ns == 0)
        return eb_ref_einsum(inst, inputs, out, err);
    eb_status bad = ref_dtype_ok(inst, err);
    if (bad)
        return bad;
    double **buf = calloc((size_t)ns, sizeof *buf);
    int64_t (*strides)[EB_MAX_RANK] = malloc((size_t)ns * sizeof *strides);
    eb_status st = buf && strides ? EB_OK
                   : eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    for (int t = 0; t < ns && !st; t++) {
        const eb_sched_step *s = &sched->steps[t];
        ref_operand op[2];
        int slot[2] = {s->a, s->b};
        for (int k = 0; k < 2; k++) {
            if (slot[k] < n) {
                const eb_view *v = &inputs[slot[k]];
                op[k] = (ref_operand){v->data, v->rank, v->ids, v->stride};
            } else {
                const eb_sched_step *p = &sched->steps[slot[k] - n];
                op[k] = (ref_operand){buf[slot[k] - n], p->out_rank,
                                      p->out_ids, strides[slot[k] - n]};
            }
        }
        int64_t elems = 1;
        for (int x = s->out_rank - 1; x >= 0; x--) {
            strides[t][x] = elems;
            elems *= inst->label_size[s->out_ids[x]];
        }
        buf[t] = s->is_final ? out
                             : malloc((size_t)elems * eb_dtype_size(inst->dt));
        if (!buf[t]) {
            st = eb_error_set(err, EB_ERR_NOMEM, "out of memory for a "
                              "reference step of %lld elements",
                              (long long)elems);
            break;
        }
        st = ref_pair(inst, &op[0], &op[1], s->out_ids, s->out_rank, buf[t],
                      elems, err);
        for (int k = 0; k < 2; k++)
            if (slot[k] >= n) {
                free(buf[slot[k] - n]);
                buf[slot[k] - n] = NULL;
            }
    }
    for (int t = 0; buf && t < ns; t++)
        if (buf[t] != out)
            free(buf[t]);
    free(buf);
    free(strides);
    return st;
}

double eb_ref_rel_err(const double *x, const double *ref, int64_t n)
{
    return eb_ref_rel_err_dt(EB_F64, x, ref, n);
}

double eb_ref_rel_err_dt(eb_dtype dt, const void *xv, const void *refv,
                         int64_t n)
{
    const double *x = xv, *ref = refv;
    int w = dt == EB_C128 ? 2 : 1;
    double max_ref = 0, max_err = 0;
    for (int64_t i = 0; i < n * w; i += w) {
        double xi = w == 2 ? x[i + 1] : 0, ri = w == 2 ? ref[i + 1] : 0;
        if (isnan(x[i]) || isnan(ref[i]) || isnan(xi) || isnan(ri))
            return INFINITY;
        double e = hypot(x[i] - ref[i], xi - ri), r = hypot(ref[i], ri);
        if (e > max_err)
            max_err = e;
        if (r > max_ref)
            max_ref = r;
    }
    return max_ref > 0 ? max_err / max_ref : max_err;
}
