/*
 * schedule: the kept-label rule of DESIGN 3.2 applied to a whole linear path,
 * and the opt_einsum cost convention.
 *
 * Operands are numbered by slot: inputs 0..n-1, then the result of step s is
 * slot n+s. A step keeps the labels of its pair that still appear in the
 * output or in another live operand; the rest are summed. The label *set* of
 * each result is fixed by the path; its *order* here is canonical (labels of
 * a in order of first appearance, then new labels of b; the final step uses
 * the output order). Executors may choose another order.
 *
 * Cost: a step costs the product of the sizes of all labels of both operands,
 * times 2 if any label is summed away; log2_size is the largest step output
 * in elements.
 *
 * Ownership: eb_schedule_build returns an object the caller destroys.
 */
#ifndef EB_SCHEDULE_H
#define EB_SCHEDULE_H

#include "instance.h"

typedef struct {
    int a, b;          /* operand slots */
    int pos_i, pos_j;  /* the path's own positions in the live list */
    int out_rank;
    const int *out_ids; /* canonical order, points into the schedule */
    double flops;
    double out_elems;
    int is_final;
} eb_sched_step;

typedef struct {
    int num_inputs;
    int num_steps;
    eb_sched_step *steps;
    double total_flops;
    double log10_flops;   /* log10(total_flops); 0 for no steps */
    double log2_size;     /* log2 of the largest step output; 0 for no steps */
    int *ids_pool_;       /* storage for out_ids */
} eb_schedule;

eb_status eb_schedule_build(const eb_instance *inst, const eb_path *path,
                            eb_schedule **out, eb_error *err);
void eb_schedule_destroy(eb_schedule *s);

/*
 * The kept-label rule for one step, for callers that track live operands
 * themselves (eager mode, the path finder). refcount[l] is the number of live
 * operands that contain label l (counted once per operand) plus 1 if l is in
 * the output, *including* a and b. Writes the kept labels in canonical order
 * into out_ids (room for a_rank + b_rank labels) and returns their count; *summed is set to 1 if any label of
 * the pair is summed away. Does not change refcount.
 */
int eb_keep_labels(const int *a_ids, int a_rank, const int *b_ids, int b_rank,
                   const int *refcount, int *out_ids, int *summed);

/* Distinct labels of a term in order of first appearance; returns count. */
int eb_unique_labels(const int *ids, int rank, int *out);

#endif
