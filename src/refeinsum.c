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
