/* tensor: helpers for labelled strided views. */
#include "tensor.h"

void eb_view_compact(eb_view *v, double *data, const int *ids, int rank,
                     const int64_t *label_size)
{
    v->data = data;
    v->rank = rank;
    int64_t s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        v->ids[a] = ids[a];
        v->shape[a] = label_size[ids[a]];
        v->stride[a] = s;
        s *= v->shape[a];
    }
}

int64_t eb_view_elems(const eb_view *v)
{
    int64_t n = 1;
    for (int a = 0; a < v->rank; a++)
        n *= v->shape[a];
    return n;
}
