/*
 * fuse: blocked execution of a step together with the steps that make its
 * operands, along some of its output labels, for trace mode.
 *
 * Some steps write an intermediate far larger than the caches only for the
 * next step to read it once (on lm_batch_likelihood_sentence_3_12d: a
 * 15 MB output of a GEMM and of a short-K product, both read by one batched
 * product; on gm_queen5_5_3: a 1 GB output of a skinny GEMM read by a
 * batched GEMM). When labels of the consumer's output run through its
 * producers' outputs too, the group can run block by block: for each
 * block, every producer computes its slice of the intermediate into a
 * small buffer that stays in cache, and the consumer turns the slices into
 * its slice of the output. What goes is the round trip of the
 * intermediates through memory, at the price of re-reading the operands
 * that lack a blocked label once per block along it.
 *
 * Blocks: one index at a time along each blocked label but the last, bw
 * indices of the last (one label when that is enough: dims of 3 need
 * several). The labels are chosen (eb_fuse_plan) until a block of the
 * intermediates live at once fits opts->block_bytes (a chain's earlier
 * blocks are dead by its later members, and trace lays the members'
 * buffers out by lifetime: eb_fuse_last_use): first those whose blocks
 * make no large operand be read again, among them the consumer's batch
 * labels first (its matrices keep their sides). A group whose block
 * cannot fit opts->cache_bytes, or whose blocks save less than they read
 * again or than their members' plans on blocks move beyond the whole
 * steps', is not made. When the blocked labels are the outermost of the
 * consumer's output, a block of it is one contiguous piece and the
 * consumer writes it in place; otherwise it writes the block compact and
 * a permutation (permute.h) puts it in place.
 *
 * The numbers are those of the same kernels on the blocks: each output
 * element is the same sum, though a block's plan may pick another kernel
 * (summation order) than the whole step's.
 *
 * Planning (eb_fuse_plan) is pure: it reads the program's steps and plans
 * each member again on views sliced to a block (and to the tail block),
 * with the same kernel planner as every step. Execution (eb_fuse_exec)
 * only walks the blocks and calls eb_contract_exec (and eb_perm_exec).
 *
 * Ownership: eb_fuse_plan returns an array of groups the caller frees with
 * free(); groups hold no pointers.
 */
#ifndef EB_FUSE_H
#define EB_FUSE_H

#include "contract.h"
#include "permute.h"
#include "tensor.h"

/* Steps of a group (a consumer, at most two producers, then the steps of
 * a chain that use its output); parts that run blocks at once. */
enum { EB_FUSE_MAX = 8, EB_FUSE_MAX_PARTS = 8 };

enum { EB_FUSE_PF_PREP = 1, EB_FUSE_PF_EW = 2 };

/* The default of eb_fuse_opts.solo_work. Waking the team's sleeping
 * worker costs the caller a system call and the worker comes 10-120 us
 * later (team.c); a slice of data that the other core wrote is read at
 * about half speed; a run of less than 2^20 multiply-adds takes 20-50 us
 * on one thread and gains nothing from a second (nary_matmul_chain_64,
 * two products of 2^18: 11 us on one thread, 14-15 split over two). */
#define EB_SOLO_WORK 1048576.0

/* Trace's compile options: when to fuse, and when not to split. */
typedef struct {
    int64_t min_bytes;   /* a producer's output at least this large */
    int64_t block_bytes; /* target size of one block's intermediates */
    int64_t cache_bytes; /* an operand this small stays in cache from
                            block to block (read again for free); a
                            block of intermediates larger than this is
                            not worth a group */
    double max_intensity; /* no group of steps doing more flops per byte
                             than this (0: no limit) */
    int force;           /* fuse wherever the structure allows, whatever
                            the cost (tests: small shapes, many blocks) */
    int64_t prefetch_bytes; /* an operand from outside the group at least
                               this large (not in the caches) has its next
                               block prefetched while a block runs */
    double solo_work;    /* a program doing less work than this
                            (multiply-adds plus elements written) runs on
                            the caller alone, OpenBLAS at one thread
                            (0: always on the team; trace.c) */
    int64_t unit_min_bytes; /* min_bytes for a step whose output is read
                               inside its own concurrent unit (lanes.h,
                               eb_fuse_step.shared), when smaller (0: as
                               min_bytes) */
} eb_fuse_opts;

/* The defaults: outputs past 4 MiB (beyond the L2 cache and a good part of
 * a shared L3), past 1 MiB inside a concurrent unit (the units running
 * side by side share the L3 and the memory bandwidth: two units of the
 * batch-likelihood networks, each writing intermediates of 1-4 MiB, ran
 * 8-13% faster with those fused; the same steps fused on one thread, 3-4%
 * slower by the median of 10 pairs: docs/bench.md, "Thirtieth round");
 * blocks of intermediates of about 1 MiB (twice this machine
 * class's 512 KiB L2, well inside its L3), and no group whose blocks are
 * larger; operands up to 1 MiB read again per block for free; no group
 * past 4 flops a byte; outside operands of 8 MiB or more prefetched;
 * programs of less than 2^20 multiply-adds and elements on one thread.
 * (gm_queen's groups over dims of 3 ran faster in most rounds with 1 MiB
 * blocks than with 256 KiB ones, which made 4-5 times as many blocks of
 * tiny kernels: docs/bench.md, "gm_queen, third round".) */
eb_fuse_opts eb_fuse_default_opts(void);

/* One step of the program as fuse sees it. */
typedef struct {
    const eb_plan *plan;  /* the step's plan on whole operands */
    int nops;             /* 1 or 2 */
    eb_view op[2];        /* operand layouts (data ignored) */
    int producer[2];      /* step that makes operand q, -1: an input */
    int shared;           /* 1: the step and the one that reads its output
                             run in one unit beside other units (lanes.h):
                             its output counts against unit_min_bytes */
} eb_fuse_step;

typedef struct {
    eb_dtype dt;              /* the instance's: element size of all bytes */
    int nmem;
    int mem[EB_FUSE_MAX];     /* steps in path order; the last consumes */
    /* Blocked labels, the block loop's outermost first: each but the last
     * one index at a time, the last (label, w long) in blocks of bw. */
    int nlab;
    int labels[EB_MAX_RANK];
    int64_t lsize[EB_MAX_RANK];
    int label;                /* labels[nlab - 1] */
    int64_t w, bw;            /* its size, block length */
    int64_t nblocks;          /* blocks of the whole group */
    double gain;              /* bytes of memory traffic saved, net of
                                 operands read again */
    /* Operand q of member i: the member that makes it inside the group, or
     * -1 when it comes from outside (then at offset sum of the block's
     * first index along labels[k] times wstride[i][q][k]). */
    int internal[EB_FUSE_MAX][2];
    int64_t wstride[EB_FUSE_MAX][2][EB_MAX_RANK];
    int64_t out_wstride[EB_MAX_RANK]; /* the labels' strides in the
                                         consumer's output */
    /* Outside operands prefetched a block ahead (opts.prefetch_bytes):
     * EB_FUSE_PF_PREP where the member permutes operand q first (its
     * preparation's reads), EB_FUSE_PF_EW where its elementwise multiply
     * or outer product reads it as source q; 0: not prefetched. */
    signed char pf[EB_FUSE_MAX][2];
    /* scatter: a block of the output is not one contiguous piece of it
     * (blocked labels other than its outermost): the consumer writes it
     * compact, in the order its planner likes, at put_at elements into its
     * tmp buffer, and put[] (full block, tail) copies it into place. */
    int scatter;
    int64_t put_at;
    eb_perm put[2];
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

/* The last member of g that reads member i's block (i itself when none
 * does: the consumer). A member's scratch is needed only while it runs, a
 * block of an intermediate from its producer to this member. */
int eb_fuse_last_use(const eb_fuse_group *g, int i);

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
