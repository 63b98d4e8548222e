/*
 * tensor: a labelled, non-owning, row-major strided view of data of the
 * run's dtype (dtype.h; the view does not say which: the instance does).
 *
 * A view never owns its data. Strides are in elements. Axes of size 1 may
 * carry any stride. Labels are instance label ids (see instance.h); a label
 * may repeat inside a view (a diagonal) until the contraction planner merges
 * it.
 */
#ifndef EB_TENSOR_H
#define EB_TENSOR_H

#include <stdint.h>

#include "instance.h"

typedef struct {
    void *data;
    int rank;
    int ids[EB_MAX_RANK];
    int64_t shape[EB_MAX_RANK];
    int64_t stride[EB_MAX_RANK];
} eb_view;

/* A compact row-major view of `data` with the given labels and sizes. */
void eb_view_compact(eb_view *v, void *data, const int *ids, int rank,
                     const int64_t *label_size);

/* Compact views of every input of inst with no data (data NULL), for
 * planning without executing; the caller frees the array. NULL on OOM. */
eb_view *eb_views_without_data(const eb_instance *inst);

/* Product of the shape (1 for rank 0). */
int64_t eb_view_elems(const eb_view *v);

#endif
