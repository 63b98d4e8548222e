/* tensor: helpers for labelled strided views. */
#include "tensor.h"

#include <stdlib.h>

void eb_view_compact(eb_view *v, void *data, const int *ids, int rank,
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

eb_view *eb_views_without_data(const eb_instance *inst)
{
    eb_view *views = malloc((size_t)inst->num_tensors * sizeof *views);
    if (!views)
        return NULL;
    for (int k = 0; k < inst->num_tensors; k++)
        eb_view_compact(&views[k], NULL, inst->inputs[k].ids,
                        inst->inputs[k].rank, inst->label_size);
    return views;
}
