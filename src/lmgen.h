/*
 * lmgen: the language-model (tensor-network likelihood) instance generator
 * behind `einsum-bench gen lm` (issue 4).
 *
 * The public einsum benchmark's lm_batch_likelihood_* instances are the
 * squared amplitude of a MERA-like tree tensor network evaluated on a batch
 * of token windows. One copy of the network is built level by level: level 0
 * is a matrix with two hidden legs; each of the `depth` levels puts a
 * 3rd-order tensor on every dangling leg (it takes the leg, emits two), then a
 * 4th-order tensor on every adjacent pair of new legs that come from
 * different 3rd-order tensors, skipping the first and last leg of the row (it
 * takes the two legs, emits two). The 2^(depth+1) legs left dangling are the
 * observables (size vocab); every other leg has size hidden. The instance is:
 * copy 1, one [batch, vocab] token matrix per observable of copy 1 in label
 * creation order, copy 2 (fresh labels, same structure), its token matrices,
 * and the output: the batch label.
 *
 * The dtype (float64 by default) changes nothing in that structure: the
 * public complex128 instances (lm_batch_likelihood_<data>_<L>_<H>c) are the
 * float64 ones' networks with complex entries. It sets the file's "dtype",
 * the name's last letter ('d' for the real dtypes, 'c' for the complex
 * ones; float32 and complex64 add "_float32" / "_complex64", names the
 * public set does not have) and the bytes the memory limits count.
 *
 * Labels are assigned in creation order: a..z, A..Z, then further Unicode
 * letters (Latin-1 and Latin Extended, Greek, Cyrillic, CJK ideographs), so
 * the format string names its labels in order of first appearance.
 *
 * Ownership: eb_lm_build returns a network the caller destroys with
 * eb_lm_network_destroy (NULL is fine); it owns all its arrays.
 */
#ifndef EB_LMGEN_H
#define EB_LMGEN_H

#include <stdint.h>

#include "dtype.h"
#include "instance.h"
#include "jsonw.h"
#include "status.h"

enum { EB_LM_MAX_DEPTH = 8 };

/* Ranges checked before the size limits (each in 1..EB_LM_MAX_EXTENT). */
#define EB_LM_MAX_EXTENT ((int64_t)1 << 31)
/* Memory limits of `gen lm`: no single operand above 2 GiB and all inputs
 * together at most 4 GiB in the instance's dtype (the runner holds every
 * input at once). */
#define EB_LM_MAX_OPERAND_BYTES ((int64_t)1 << 31)
#define EB_LM_MAX_INPUT_BYTES ((int64_t)1 << 32)

typedef struct {
    int depth;       /* levels after level 0, 1..EB_LM_MAX_DEPTH */
    int64_t hidden;  /* H: size of every internal leg */
    int64_t vocab;   /* V: size of every observable leg */
    int64_t batch;   /* B: size of the batch label */
    eb_dtype dt;     /* element type of the file (0: float64) */
} eb_lm_params;

typedef struct {
    char *name;
    char *intent;
    char *notes;
    char *format_string;    /* UTF-8, "in,in,...->out" */
    int num_tensors;
    int num_labels;
    int *ranks;             /* rank of each operand */
    int64_t **shapes;       /* shapes[k][a], row-major */
    eb_dtype dt;
    int64_t input_bytes;    /* bytes of all inputs in dt */
    int64_t max_operand_bytes;
} eb_lm_network;

/* Structure counts for a depth (no validation; depth >= 1). */
int eb_lm_tensors_per_copy(int depth);  /* 2^(depth+2) - depth - 3 */
int eb_lm_observables(int depth);       /* 2^(depth+1) */
int eb_lm_labels_per_copy(int depth);   /* 2^(depth+3) - 2*depth - 6 */
int eb_lm_num_operands(int depth);      /* 2*tensors + 2*observables */

/* Code point of the label created k-th (0-based); 0 if k is past the end of
 * the label alphabet. */
uint32_t eb_lm_label_cp(int k);

/*
 * Check the parameters: ranges (messages name the option, e.g. "--depth: 0
 * out of range (expected 1..8)"), arithmetic overflow, and the memory limits
 * above. Returns EB_ERR_USAGE for out-of-range values and EB_ERR_INVALID for
 * instances over a limit.
 */
eb_status eb_lm_validate(const eb_lm_params *p, eb_error *err);

/* The public set's name for these parameters, into buf of cap bytes:
 * lm_batch_likelihood_<data>_<depth+1>_<H><d|c>, with data "sentence" for
 * V = 11, "brackets" for V = 7 and "v<V>" otherwise, 'd' for a real and 'c'
 * for a complex dtype, plus "_b<B>" when B is not the public batch size for
 * that data and depth, plus "_float32" or "_complex64" for those dtypes. */
const char *eb_lm_default_name(const eb_lm_params *p, char *buf, int cap);

/* Validate and build the network; name NULL means the default name. */
eb_status eb_lm_build(const eb_lm_params *p, const char *name,
                      eb_lm_network **out, eb_error *err);
void eb_lm_network_destroy(eb_lm_network *net);

/* The network as a validated eb_instance (file names it in messages). */
eb_status eb_lm_to_instance(const eb_lm_network *net, const char *file,
                            eb_instance **out, eb_error *err);

/* Write the instance JSON (DESIGN 3.1) as one pretty document into w. */
void eb_lm_write_json(const eb_lm_network *net, eb_jw *w);

#endif
