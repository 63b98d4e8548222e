/* schedule: path simulation with the kept-label rule, and path costs. */
#include "schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int contains(const int *ids, int n, int l)
{
    for (int k = 0; k < n; k++)
        if (ids[k] == l)
            return 1;
    return 0;
}

int eb_unique_labels(const int *ids, int rank, int *out)
{
    int n = 0;
    for (int a = 0; a < rank; a++)
        if (!contains(out, n, ids[a]))
            out[n++] = ids[a];
    return n;
}

int eb_keep_labels(const int *a_ids, int a_rank, const int *b_ids, int b_rank,
                   const int *refcount, int *out_ids, int *summed)
{
    int ua[EB_MAX_RANK], ub[EB_MAX_RANK];
    int na = eb_unique_labels(a_ids, a_rank, ua);
    int nb = eb_unique_labels(b_ids, b_rank, ub);
    int n = 0;
    *summed = 0;
    for (int k = 0; k < na; k++) {
        int l = ua[k];
        int others = refcount[l] - 1 - contains(ub, nb, l);
        if (others > 0)
            out_ids[n++] = l;
        else
            *summed = 1;
    }
    for (int k = 0; k < nb; k++) {
        int l = ub[k];
        if (contains(ua, na, l))
            continue;
        if (refcount[l] - 1 > 0)
            out_ids[n++] = l;
        else
            *summed = 1;
    }
    return n;
}

eb_status eb_schedule_build(const eb_instance *inst, const eb_path *path,
                            eb_schedule **out, eb_error *err)
{
    *out = NULL;
    int n = inst->num_tensors;
    eb_status st = eb_path_validate(path, n, inst->file, path->strategy, err);
    if (st)
        return st;
    eb_schedule *s = calloc(1, sizeof *s);
    int nslots = n + path->num_steps;
    /* Each step's operand slots, O(steps log n) (instance.h). */
    eb_pair *live = malloc((size_t)(path->num_steps ? path->num_steps : 1) *
                           sizeof *live);
    int *refcount = calloc((size_t)(inst->num_labels ? inst->num_labels : 1),
                           sizeof *refcount);
    /* slot -> (rank, ids) */
    int *slot_rank = malloc((size_t)nslots * sizeof *slot_rank);
    const int **slot_ids = malloc((size_t)nslots * sizeof *slot_ids);
    if (s) {
        s->steps = calloc((size_t)(path->num_steps ? path->num_steps : 1),
                          sizeof *s->steps);
        s->ids_pool_ = malloc((size_t)(path->num_steps ? path->num_steps : 1) *
                              EB_MAX_RANK * sizeof(int));
    }
    if (!s || !live || !refcount || !slot_rank || !slot_ids || !s->steps ||
        !s->ids_pool_ || eb_path_slots(path, n, live) != 0) {
        st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
        goto done;
    }
    s->num_inputs = n;
    s->num_steps = path->num_steps;
    for (int k = 0; k < n; k++) {
        int u[EB_MAX_RANK];
        int nu = eb_unique_labels(inst->inputs[k].ids, inst->inputs[k].rank, u);
        for (int q = 0; q < nu; q++)
            refcount[u[q]]++;
        slot_rank[k] = inst->inputs[k].rank;
        slot_ids[k] = inst->inputs[k].ids;
    }
    for (int q = 0; q < inst->output.rank; q++)
        refcount[inst->output.ids[q]]++;
    double max_elems = 0;
    for (int t = 0; t < path->num_steps; t++) {
        int pi = path->steps[t].i, pj = path->steps[t].j;
        int a = live[t].i, b = live[t].j;
        eb_sched_step *st_ = &s->steps[t];
        int *ids = s->ids_pool_ + (size_t)t * EB_MAX_RANK;
        int kept[2 * EB_MAX_RANK];
        int summed;
        int r = eb_keep_labels(slot_ids[a], slot_rank[a], slot_ids[b],
                               slot_rank[b], refcount, kept, &summed);
        if (r > EB_MAX_RANK) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: paths.%s.path[%d]: the step's result has %d "
                              "labels (at most %d supported)", inst->file,
                              path->strategy, t, r, EB_MAX_RANK);
            goto done;
        }
        memcpy(ids, kept, (size_t)r * sizeof(int));
        st_->is_final = t == path->num_steps - 1;
        if (st_->is_final) {
            /* Kept labels are exactly the output labels; use output order. */
            r = inst->output.rank;
            memcpy(ids, inst->output.ids, (size_t)r * sizeof(int));
        }
        /* Flops: product over the union of both operands' labels. */
        int uni[2 * EB_MAX_RANK];
        int nu = eb_unique_labels(slot_ids[a], slot_rank[a], uni);
        for (int q = 0; q < slot_rank[b]; q++)
            if (!contains(uni, nu, slot_ids[b][q]))
                uni[nu++] = slot_ids[b][q];
        double size = 1, oel = 1;
        for (int q = 0; q < nu; q++)
            size *= (double)inst->label_size[uni[q]];
        for (int q = 0; q < r; q++)
            oel *= (double)inst->label_size[ids[q]];
        if (oel > (double)EB_MAX_ELEMS) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: paths.%s.path[%d]: the step's result has "
                              "2^%.1f elements (at most 2^40)", inst->file,
                              path->strategy, t, log2(oel));
            goto done;
        }
        st_->a = a;
        st_->b = b;
        st_->pos_i = pi;
        st_->pos_j = pj;
        st_->out_rank = r;
        st_->out_ids = ids;
        st_->flops = size * (summed ? 2 : 1);
        st_->out_elems = oel;
        s->total_flops += st_->flops;
        if (oel > max_elems)
            max_elems = oel;
        /* Labels of the live operands: a and b go, the result comes. */
        int ua[EB_MAX_RANK];
        int na = eb_unique_labels(slot_ids[a], slot_rank[a], ua);
        for (int q = 0; q < na; q++)
            refcount[ua[q]]--;
        na = eb_unique_labels(slot_ids[b], slot_rank[b], ua);
        for (int q = 0; q < na; q++)
            refcount[ua[q]]--;
        for (int q = 0; q < r; q++)
            refcount[ids[q]]++;
        int slot = n + t;
        slot_rank[slot] = r;
        slot_ids[slot] = ids;
    }
    s->log10_flops = s->total_flops > 0 ? log10(s->total_flops) : 0;
    s->log2_size = max_elems > 0 ? log2(max_elems) : 0;
    *out = s;
    s = NULL;
done:
    /* On failure s is destroyed below; on success it was handed out. */
    eb_schedule_destroy(s);
    free(live);
    free(refcount);
    free(slot_rank);
    free(slot_ids);
    return st;
}

void eb_schedule_destroy(eb_schedule *s)
{
    if (!s)
        return;
    free(s->steps);
    free(s->ids_pool_);
    free(s);
}
