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

eb_status eb_ref_einsum(const eb_instance *inst, const eb_view *inputs,
                        double *out, eb_error *err)
{
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
    memset(out, 0, (size_t)out_elems * sizeof(double));
    for (;;) {
        double prod = 1;
        for (int k = 0; k < n; k++)
            prod *= inputs[k].data[off[k]];
        out[off[n]] += prod;
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

/* out (compact, labels out_ids) = sum over the other labels of a * b.
 * Innermost label in its own loop; the rest by an odometer. */
static void ref_pair(const eb_instance *inst, const ref_operand *a,
                     const ref_operand *b, const int *out_ids, int out_rank,
                     double *out, int64_t out_elems)
{
    int u[2 * EB_MAX_RANK], nu = 0;
    int64_t sa[2 * EB_MAX_RANK] = {0}, sb[2 * EB_MAX_RANK] = {0},
            so[2 * EB_MAX_RANK] = {0}, size[2 * EB_MAX_RANK];
    const ref_operand *ops[2] = {a, b};
    for (int k = 0; k < 2; k++)
        for (int x = 0; x < ops[k]->rank; x++) {
            int l = ops[k]->ids[x], q = 0;
            while (q < nu && u[q] != l)
                q++;
            if (q == nu) {
                u[nu] = l;
                size[nu++] = inst->label_size[l];
            }
            (k ? sb : sa)[q] += ops[k]->stride[x];
        }
    int64_t st = 1;
    for (int x = out_rank - 1; x >= 0; x--) {
        for (int q = 0; q < nu; q++)
            if (u[q] == out_ids[x])
                so[q] = st;
        st *= inst->label_size[out_ids[x]];
    }
    /* The longest label runs innermost: fewer odometer turns. */
    for (int q = 0; q + 1 < nu; q++)
        if (size[q] > size[nu - 1]) {
            int64_t *arr[4] = {sa, sb, so, size};
            for (int k = 0; k < 4; k++) {
                int64_t t = arr[k][q];
                arr[k][q] = arr[k][nu - 1];
                arr[k][nu - 1] = t;
            }
        }
    memset(out, 0, (size_t)out_elems * sizeof(double));
    if (nu == 0) {
        out[0] = a->data[0] * b->data[0];
        return;
    }
    int in = nu - 1;
    int64_t idx[2 * EB_MAX_RANK] = {0}, oa = 0, ob = 0, oo = 0;
    for (;;) {
        for (int64_t i = 0; i < size[in]; i++)
            out[oo + i * so[in]] += a->data[oa + i * sa[in]] *
                                    b->data[ob + i * sb[in]];
        int q = in - 1;
        for (; q >= 0; q--) {
            oa += sa[q], ob += sb[q], oo += so[q];
            if (++idx[q] < size[q])
                break;
            oa -= sa[q] * size[q], ob -= sb[q] * size[q], oo -= so[q] * size[q];
            idx[q] = 0;
        }
        if (q < 0)
            break;
    }
}

eb_status eb_ref_pairwise(const eb_instance *inst, const eb_schedule *sched,
                          const eb_view *inputs, double *out, eb_error *err)
{
    int n = sched->num_inputs, ns = sched->num_steps;
    if (ns == 0)
        return eb_ref_einsum(inst, inputs, out, err);
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
        buf[t] = s->is_final ? out : malloc((size_t)elems * sizeof(double));
        if (!buf[t]) {
            st = eb_error_set(err, EB_ERR_NOMEM, "out of memory for a "
                              "reference step of %lld elements",
                              (long long)elems);
            break;
        }
        ref_pair(inst, &op[0], &op[1], s->out_ids, s->out_rank, buf[t],
                 elems);
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
    double max_ref = 0, max_err = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) || isnan(ref[i]))
            return INFINITY;
        double e = fabs(x[i] - ref[i]);
        if (e > max_err)
            max_err = e;
        if (fabs(ref[i]) > max_ref)
            max_ref = fabs(ref[i]);
    }
    return max_ref > 0 ? max_err / max_ref : max_err;
}
