/*
 * fuse: blocked execution of a step together with the steps that make its
 * operands, along a batch label, for trace mode.
 *
 * Some steps write an intermediate far larger than the caches only for the
 * next step to read it once (on lm_batch_likelihood_sentence_3_12d: a
 * 15 MB output of a GEMM and of a short-K product, both read by one batched
 * product). When the consumer's output starts with a batch label w that
 * runs through its producers too, the group can run block by block along
 * w: for each block of bw values of w, every producer computes its slice of
 * the intermediate into a small buffer that stays in cache, and the
 * consumer turns the slices into its slice of the output. The numbers are
 * those of the unfused steps (each output element is the same sum in the
 * same order); what goes is the round trip of the intermediates through
 * memory, at the price of re-reading the operands that do not carry w once
 * per block.
 *
 * Planning (eb_fuse_plan) is pure: it reads the program's steps and plans
 * each member again on views sliced to bw (and to the tail block), with the
 * same kernel planner as every step. Execution (eb_fuse_exec) only walks
 * the blocks and calls eb_contract_exec.
 *
 * Ownership: eb_fuse_plan returns an array of groups the caller frees with
 * free(); groups hold no pointers.
 */
#ifndef EB_FUSE_H
#define EB_FUSE_H

#include "contract.h"
#include "tensor.h"

/* A consumer and at most two producers; parts that run blocks at once. */
enum { EB_FUSE_MAX = 3, EB_FUSE_MAX_PARTS = 8 };

/* When to fuse. */
typedef struct {
    int64_t min_bytes;   /* a producer's output at least this large */
    int64_t block_bytes; /* target size of one block's intermediates */
    int force;           /* fuse wherever the structure allows, whatever
                            the cost (tests: small shapes, many blocks) */
} eb_fuse_opts;

/* The defaults: outputs past 4 MiB (beyond the L2 cache and a good part of
 * a shared L3); blocks of intermediates of about 256 KiB, half of this
 * machine class's 512 KiB L2, so that a block stays in L2 between its
 * producer and its consumer. (On lm_batch_likelihood_sentence_3_12d, at
 * 2 threads the fused step took 2.2-2.6 ms with 256 KiB blocks against
 * 3.1-3.2 ms with 2 MiB; at 1 thread 4.3-4.6 ms either way.) */
eb_fuse_opts eb_fuse_default_opts(void);

/* One step of the program as fuse sees it. */
typedef struct {
    const eb_plan *plan;  /* the step's plan on whole operands */
    int nops;             /* 1 or 2 */
    eb_view op[2];        /* operand layouts (data ignored) */
    int producer[2];      /* step that makes operand q, -1: an input */
} eb_fuse_step;

typedef struct {
    eb_dtype dt;              /* the instance's: element size of all bytes */
    int nmem;
    int mem[EB_FUSE_MAX];     /* steps in path order; the last consumes */
    int label;                /* w */
    int64_t w, bw;            /* size of w, block length */
    /* Operand q of member i: the member that makes it inside the group, or
     * -1 when it comes from outside (then at offset w0 * wstride). */
    int internal[EB_FUSE_MAX][2];
    int64_t wstride[EB_FUSE_MAX][2];
    int64_t out_wstride;      /* stride of w in the consumer's output */
    eb_plan plan[2][EB_FUSE_MAX]; /* [0]: blocks of bw, [1]: the tail */
    /* Buffers per member, for either plan: prep0, prep1, tmp and, for a
     * producer, its block of output (elements). */
    int64_t buf_elems[EB_FUSE_MAX][4];
} eb_fuse_group;

/*
 * Find the groups worth fusing among steps[0..n-1] (a step is in at most
 * one group) and plan them. *groups (NULL when none) and *ngroups are set.
 */
eb_status eb_fuse_plan(const eb_instance *inst, const eb_fuse_step *steps,
                       int n, const eb_fuse_opts *opts,
                       eb_fuse_group **groups, int *ngroups, eb_error *err);

/* Where a group's data lives at run time. */
typedef struct {
    const void *ext[EB_FUSE_MAX][2];   /* member i's operand q from outside
                                          (whole tensor), NULL otherwise */
    int nparts;                        /* 1..EB_FUSE_MAX_PARTS */
    void *buf[EB_FUSE_MAX_PARTS][EB_FUSE_MAX][4]; /* per part: member
                                          i's buffers (buf_elems) */
    void *out;                         /* the consumer's whole output */
} eb_fuse_bind;

/*
 * Run a group, block by block. With a team of n > 1 threads and nparts
 * >= n, each thread runs a contiguous share of the blocks through the
 * whole group on its own buffers, with every kernel single-threaded (BLAS
 * is set to one thread for the group and set back after it): no thread
 * waits for another until the group ends, and the team's budget is what
 * runs. When the blocks do not share out evenly (the busiest thread would
 * get more than 10% over an even share, e.g. 3 blocks on 2 threads), the
 * blocks run one after another on part 0's buffers and each member step
 * splits its own kernels over the team.
 */
void eb_fuse_exec(const eb_fuse_group *g, const eb_fuse_bind *b,
                  struct eb_team *team, eb_exec_counters *cnt);

#endif
