/*
 * instance: the in-memory form of an einsum benchmark instance and of its
 * stored contraction paths (DESIGN 3.1, 3.2), and the validation rules that do
 * not depend on JSON (DESIGN 3.3).
 *
 * Labels are Unicode code points. On load every distinct label gets a dense id
 * 0..num_labels-1 in order of first appearance in the format string; all
 * later code works with ids and looks up the code point only to print.
 *
 * Ownership: an eb_instance owns every array it points to, including its
 * inline path set; eb_instance_destroy frees it all (NULL is fine). An
 * eb_pathset owns its paths. Nothing here is shared.
 */
#ifndef EB_INSTANCE_H
#define EB_INSTANCE_H

#include <stdint.h>

#include "dtype.h"

#include "status.h"

enum { EB_MAX_RANK = 64 };

/* Largest element count of any single tensor the tool accepts (2^40 doubles
 * = 8 TiB): far above this machine, far below int64 overflow. */
#define EB_MAX_ELEMS ((int64_t)1 << 40)

typedef struct {
    int rank;
    int *ids; /* rank label ids, in row-major axis order */
} eb_term;

typedef struct { int i, j; } eb_pair;

typedef struct {
    char *strategy;         /* free-form key, e.g. "opt_flops" */
    int num_steps;
    eb_pair *steps;
    double log10_flops;     /* stored label, NAN when absent */
    double log2_size;       /* stored label, NAN when absent */
} eb_path;

typedef struct {
    int count;
    eb_path *paths;
    char *source;           /* file the paths came from */
    int is_inline;          /* 1: the instance's own "paths" object */
} eb_pathset;

typedef struct {
    char *name;
    char *file;             /* where it was loaded from (for messages) */
    char *format_string;
    char *dtype;            /* as the file spells it */
    eb_dtype dt;            /* the same, parsed */
    char *intent;           /* NULL when absent */
    int num_tensors;
    eb_term *inputs;        /* num_tensors operands */
    eb_term output;
    int num_labels;
    uint32_t *label_cp;     /* code point of each label id */
    int64_t *label_size;    /* size of each label id */
    eb_pathset *inline_paths; /* NULL when the instance has none */
} eb_instance;

/*
 * Build an instance from its parts, validating everything: the format string
 * (UTF-8 labels, one term per operand, "->" present, no repeated or unknown
 * output label), operand count, ranks, sizes (>= 1, each tensor at most
 * EB_MAX_ELEMS elements), one size per label. shapes[k] has the rank of
 * operand k as written in the format string; ranks[k] is what the file gave.
 * Messages name `file` and the field. On success *out owns a new instance.
 */
eb_status eb_instance_build(const char *file, const char *name,
                            const char *format_string, const char *dtype,
                            int num_tensors, int64_t *const *shapes,
                            const int *ranks, eb_instance **out,
                            eb_error *err);

void eb_instance_destroy(eb_instance *inst);

/* Elements of operand k (product of its label sizes; 1 for a scalar). */
int64_t eb_instance_operand_elems(const eb_instance *inst, int k);

/* Write the label of `id` as UTF-8 into buf (>= 5 bytes); returns buf. */
const char *eb_label_str(const eb_instance *inst, int id, char *buf);

/* Write a term as UTF-8 (e.g. "bij") into buf of cap bytes; returns buf. */
const char *eb_term_str(const eb_instance *inst, const int *ids, int rank,
                        char *buf, size_t cap);

/*
 * Check a linear path against an instance with num_tensors operands:
 * num_tensors - 1 steps, every index in range of the live list, i != j.
 * `field` prefixes messages, e.g. "paths.opt_flops".
 */
eb_status eb_path_validate(const eb_path *path, int num_tensors,
                           const char *file, const char *field,
                           eb_error *err);

/*
 * The operand slots of each step of a valid linear path: inputs are slots
 * 0..num_tensors-1, the result of step s is slot num_tensors + s. The live
 * list is always in ascending slot order (results are appended), so
 * position p is the (p+1)-th live slot: found in O(log n) with a Fenwick
 * tree, O(steps log n) in all (a list with memmove is O(n^2)).
 * slots[s] = {slot at position i, slot at position j}. Returns 0, or -1
 * when out of memory.
 */
int eb_path_slots(const eb_path *path, int num_tensors, eb_pair *slots);

/* Same path (same steps) as another? */
int eb_path_equal(const eb_path *a, const eb_path *b);

/* 16 hex digits of a 64-bit FNV-1a digest of the steps, into buf[17]. */
const char *eb_path_digest(const eb_path *path, char *buf);

/* Find a strategy by name; NULL when absent. */
const eb_path *eb_pathset_find(const eb_pathset *ps, const char *strategy);

/*
 * Names and strategy keys (DESIGN 3.3): a non-empty run of ASCII letters,
 * digits and '_', '-', '.', '+', not starting with a dot, at most
 * EB_NAME_MAX_BYTES bytes. Such a name is safe in a file name (no '/', never
 * "." or "..") and on a terminal. Returns NULL for a valid name, else what is
 * wrong with it.
 */
enum { EB_NAME_MAX_BYTES = 200 };
const char *eb_name_problem(const char *s);

void eb_path_free(eb_path *path);       /* frees contents, not path itself */
void eb_pathset_destroy(eb_pathset *ps); /* NULL is fine */

#endif
