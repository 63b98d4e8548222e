/* plan_json: the schedule of each selected path as JSON for the peers. */
#include "plan_json.h"

#include <string.h>

#include "schedule.h"

int eb_strategy_selected(const char *list, const char *name)
{
    if (strcmp(list, "all") == 0)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list;; p++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (!e)
            return 0;
        p = e;
    }
}

/* "labels" and "shape" of a term, as members of the open object. */
static void term(eb_jw *w, const eb_instance *inst, const char *key,
                 const int *ids, int rank)
{
    char buf[EB_MAX_RANK * 4 + 1];
    eb_jw_obj_begin(w, key);
    eb_jw_str(w, "labels", eb_term_str(inst, ids, rank, buf, sizeof buf));
    eb_jw_arr_begin(w, "shape");
    for (int a = 0; a < rank; a++)
        eb_jw_int(w, NULL, inst->label_size[ids[a]]);
    eb_jw_arr_end(w);
    eb_jw_obj_end(w);
}

/* The labels of operand slot k: an input, or an earlier step's result. */
static void slot_term(const eb_instance *inst, const eb_schedule *s, int k,
                      const int **ids, int *rank)
{
    if (k < inst->num_tensors) {
        *ids = inst->inputs[k].ids;
        *rank = inst->inputs[k].rank;
    } else {
        *ids = s->steps[k - inst->num_tensors].out_ids;
        *rank = s->steps[k - inst->num_tensors].out_rank;
    }
}

static void path_json(eb_jw *w, const eb_instance *inst, const eb_path *path,
                      const eb_pathset *ps, const eb_schedule *s)
{
    char digest[17];
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "strategy", path->strategy);
    eb_jw_str(w, "path_source", ps->source);
    eb_jw_bool(w, "path_inline", ps->is_inline);
    eb_jw_str(w, "path_digest", eb_path_digest(path, digest));
    eb_jw_num(w, "flops", s->total_flops);
    eb_jw_num(w, "log10_flops", s->log10_flops);
    eb_jw_num(w, "log2_size", s->log2_size);
    if (path->log10_flops == path->log10_flops)
        eb_jw_num(w, "stored_log10_flops", path->log10_flops);
    else
        eb_jw_null(w, "stored_log10_flops");
    if (path->log2_size == path->log2_size)
        eb_jw_num(w, "stored_log2_size", path->log2_size);
    else
        eb_jw_null(w, "stored_log2_size");
    eb_jw_arr_begin(w, "steps");
    for (int t = 0; t < s->num_steps; t++) {
        const eb_sched_step *st = &s->steps[t];
        const int *ids;
        int rank;
        eb_jw_obj_begin(w, NULL);
        eb_jw_arr_begin_inline(w, "pair");
        eb_jw_int(w, NULL, st->pos_i);
        eb_jw_int(w, NULL, st->pos_j);
        eb_jw_arr_end(w);
        slot_term(inst, s, st->a, &ids, &rank);
        term(w, inst, "a", ids, rank);
        slot_term(inst, s, st->b, &ids, &rank);
        term(w, inst, "b", ids, rank);
        term(w, inst, "out", st->out_ids, st->out_rank);
        eb_jw_num(w, "flops", st->flops);
        eb_jw_obj_end(w);
    }
    eb_jw_arr_end(w);
    eb_jw_obj_end(w);
}

eb_status eb_plan_json(const eb_instance *inst, const eb_pathset *ps,
                       const char *strategies, eb_jw *w, eb_error *err)
{
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "type", "plan");
    eb_jw_str(w, "instance", inst->name);
    eb_jw_str(w, "instance_file", inst->file);
    eb_jw_str(w, "format_string", inst->format_string);
    eb_jw_str(w, "dtype", eb_dtype_name(inst->dt)); /* the run's */
    eb_jw_str(w, "file_dtype", inst->dtype);
    eb_jw_int(w, "num_tensors", inst->num_tensors);
    eb_jw_arr_begin(w, "inputs");
    for (int k = 0; k < inst->num_tensors; k++)
        term(w, inst, NULL, inst->inputs[k].ids, inst->inputs[k].rank);
    eb_jw_arr_end(w);
    term(w, inst, "output", inst->output.ids, inst->output.rank);
    eb_jw_arr_begin(w, "paths");
    int shown = 0;
    eb_status st = EB_OK;
    for (int k = 0; !st && k < ps->count; k++) {
        if (!eb_strategy_selected(strategies, ps->paths[k].strategy))
            continue;
        eb_schedule *s;
        st = eb_schedule_build(inst, &ps->paths[k], &s, err);
        if (st)
            break;
        path_json(w, inst, &ps->paths[k], ps, s);
        eb_schedule_destroy(s);
        shown++;
    }
    eb_jw_arr_end(w);
    eb_jw_obj_end(w);
    if (!st && !shown)
        st = eb_error_set(err, EB_ERR_INVALID, "%s: paths: no strategy '%s'",
                          inst->file, strategies);
    if (!st && !eb_jw_ok(w))
        st = eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    return st;
}
