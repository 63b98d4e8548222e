/* test_fuse: trace mode's fused groups (fuse.h) compute what the steps
 * compute one by one: small hand-made chains and generated lm networks,
 * fused wherever the structure allows with blocks from 1 to all of w (so
 * tails and one-element blocks occur), at one, two and three engine
 * threads (blocks claimed one at a time), against the naive reference
 * einsum (chains) or eager mode (networks); and
 * the cost model's choice on the shipped lm instance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "check.h"
#include "einsum_util.h"
#include "fuse.h"
#include "lmgen.h"
#include "load.h"
#include "pathfind.h"
#include "trace.h"

static eb_fuse_opts forced(int64_t block_bytes)
{
    return (eb_fuse_opts){.min_bytes = 0, .block_bytes = block_bytes,
                          .force = 1};
}

/* Groups trace forms for these options, and the steps they cover. */
static int count_groups(const eb_instance *inst, const eb_path *path,
                        const eb_fuse_opts *opts, int *fused_steps)
{
    int n = path->num_steps ? path->num_steps : 1, groups = 0;
    eb_step_desc *d = malloc((size_t)n * sizeof *d);
    int64_t arena;
    eb_error err;
    *fused_steps = 0;
    if (eb_trace_describe(inst, path, opts, d, &arena, &err) == EB_OK)
        for (int s = 0; s < n; s++) {
            groups += d[s].fused_at == s;
            *fused_steps += d[s].fused_at >= 0;
        }
    free(d);
    return groups;
}

/* Trace with these options on seeded random inputs, run twice (the second
 * run reuses the arena); relative error against the naive reference einsum
 * (naive = 1) or eager mode (whose steps are tested against it elsewhere;
 * for networks too large for the naive loop), or a negative number when
 * something failed. */
static double fused_vs_ref(const eb_instance *inst, const eb_path *path,
                           const eb_fuse_opts *opts, eb_team *team,
                           uint64_t seed, int naive)
{
    eb_fill fill = {.kind = EB_FILL_RANDOM, .seed = seed};
    eb_operands *ops;
    eb_error err;
    if (eb_operands_create(inst, &fill, &ops, &err))
        return -1;
    int64_t n = tu_output_elems(inst);
    double *ref = malloc((size_t)n * sizeof *ref);
    eb_pool *pool = eb_pool_create();
    double e = -2;
    eb_executor ex;
    eb_status st = EB_OK;
    if (naive) {
        st = eb_ref_einsum(inst, ops->views, ref, &err);
    } else if (!(st = eb_exec_create(EB_MODE_EAGER, inst, path, ops->views,
                                     pool, NULL, NULL, &ex, &err))) {
        const void *out;
        eb_exec_counters cnt = {0};
        st = ex.run(ex.ctx, &out, &cnt, &err);
        if (!st)
            memcpy(ref, out, (size_t)n * sizeof *ref);
        eb_exec_destroy(&ex);
    }
    if (!st &&
        !(st = eb_trace_create(inst, path, ops->views, team, opts, &ex,
                               &err))) {
        e = tu_run_twice(&ex, ref, n, NULL);
        eb_exec_destroy(&ex);
    }
    if (st)
        fprintf(stderr, "fused_vs_ref: %s\n", err.msg);
    eb_pool_destroy(pool);
    free(ref);
    eb_operands_destroy(ops);
    return e;
}

/* Forced fusion with each of the block sizes, at one, two and three
 * threads, against the naive reference. */
static void forced_vs_naive(const eb_instance *inst, const eb_path *path,
                            const int64_t *blocks, size_t nblocks,
                            eb_team **teams, uint64_t seed, const char *name)
{
    for (size_t b = 0; b < nblocks; b++)
        for (int t = 0; t < 3; t++) {
            eb_fuse_opts o = forced(blocks[b]);
            double e = fused_vs_ref(inst, path, &o, teams[t], seed, 1);
            EB_CHECK(e >= 0 && e < 1e-12,
                     "%s, blocks of %lld bytes, %d threads: rel err %g", name,
                     (long long)blocks[b], t + 1, e);
        }
}

static int64_t size_w13(uint32_t cp, void *arg)
{
    (void)arg;
    return cp == 'w' ? 13 : 2 + (int64_t)(cp % 5);
}

/* Chains whose last step starts its output with w: both operands made by
 * producers, a producer whose operands carry w in different places, w free
 * on one side of the consumer (its other operand read whole per block), and
 * a producer with a repeated label. */
static void test_chains(eb_team **teams)
{
    static const struct {
        const char *fs;
        int nsteps;
        eb_pair steps[4];
        int groups; /* with forced fusion */
    } cases[] = {
        {"wi,ij,wk,kj->wj", 3, {{0, 1}, {0, 1}, {0, 1}}, 1},
        {"aiw,ij,kw,kj->wj", 3, {{0, 1}, {0, 1}, {0, 1}}, 1},
        {"wia,ab,wb->wi", 2, {{0, 1}, {0, 1}}, 1},
        {"wa,ab,bc->wc", 2, {{0, 1}, {0, 1}}, 1},
        {"wa,ab,bc,cd->wd", 3, {{0, 1}, {0, 2}, {0, 1}}, 1},
        {"wab,bc,wc->wa", 2, {{0, 1}, {0, 1}}, 1},
        {"aa,wa,wb->wb", 2, {{0, 1}, {0, 1}}, 1},
    };
    static const int64_t blocks[] = {1, 40, 300, 1 << 20};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        eb_instance *inst = tu_instance(cases[c].fs, size_w13, NULL);
        if (!inst) {
            EB_CHECK(0, "%s builds", cases[c].fs);
            continue;
        }
        eb_pair steps[4];
        memcpy(steps, cases[c].steps, sizeof steps);
        eb_path path = {.strategy = "test", .num_steps = cases[c].nsteps,
                        .steps = steps};
        eb_fuse_opts o = forced(1);
        int fused;
        int g = count_groups(inst, &path, &o, &fused);
        EB_CHECK(g == cases[c].groups, "%s: %d groups (expected %d)",
                 cases[c].fs, g, cases[c].groups);
        forced_vs_naive(inst, &path, blocks, sizeof blocks / sizeof *blocks,
                        teams, 7 + c, cases[c].fs);
        eb_instance_destroy(inst);
    }
}

/* Generated lm networks with greedy paths: whatever groups trace forms,
 * the numbers are those of eager mode. */
static void test_lm_networks(eb_team **teams)
{
    static const eb_lm_params params[] = {
        {1, 3, 4, 9, EB_F64}, {2, 2, 3, 17, EB_F64}, {2, 3, 5, 11, EB_F64},
        {3, 2, 3, 6, EB_F64}, {2, 4, 7, 100, EB_F64},
    };
    int total_groups = 0;
    for (size_t k = 0; k < sizeof params / sizeof *params; k++) {
        eb_lm_network *net;
        eb_instance *inst;
        eb_error err;
        if (eb_lm_build(&params[k], "test", &net, &err) ||
            eb_lm_to_instance(net, "test.json", &inst, &err)) {
            EB_CHECK(0, "lm network %zu: %s", k, err.msg);
            continue;
        }
        eb_pathfind_opts po;
        eb_pathfind_opts_default(&po);
        po.seed = 1 + k;
        eb_path path;
        if (eb_pathfind(inst, &po, "greedy", &path, &err)) {
            EB_CHECK(0, "lm network %zu path: %s", k, err.msg);
        } else {
            eb_fuse_opts o = forced(64);
            int fused;
            total_groups += count_groups(inst, &path, &o, &fused);
            for (int t = 0; t < 3; t++) {
                double e = fused_vs_ref(inst, &path, &o, teams[t], 3 + k, 0);
                EB_CHECK(e >= 0 && e < 1e-12,
                         "lm network %zu, %d threads: rel err %g", k, t + 1,
                         e);
            }
            eb_path_free(&path);
        }
        eb_instance_destroy(inst);
        eb_lm_network_destroy(net);
    }
    EB_CHECK(total_groups > 0, "fused groups formed in lm networks: %d",
             total_groups);
}

/* The default cost model on lm_batch_likelihood_sentence_3_12d: the two
 * short-K products that write 15 MB run with their consumers; the GEMMs
 * whose other operand (2 MB) would be packed again per block do not. */
static void test_default_choice(void)
{
    eb_instance *inst;
    eb_pathset *ps;
    eb_error err;
    if (eb_load_instance("instances/gen_lm_sentence_3_12d.json",
                         &inst, &err) ||
        eb_load_find_paths(inst, NULL, &ps, &err)) {
        EB_CHECK(0, "shipped lm instance loads: %s", err.msg);
        return;
    }
    const eb_path *path = eb_pathset_find(ps, "opt_flops");
    eb_fuse_opts o = eb_fuse_default_opts();
    int fused = 0;
    int g = path ? count_groups(inst, path, &o, &fused) : -1;
    EB_CHECK(g == 2 && fused == 4, "2 groups of 2 steps: %d groups, %d steps",
             g, fused);
    eb_pathset_destroy(ps);
    eb_instance_destroy(inst);
}

/* The group trace forms at consumer step c (its description), or -1. */
static int group_at(const eb_instance *inst, const eb_path *path,
                    const eb_fuse_opts *opts, int c, eb_step_desc *d)
{
    int64_t arena;
    eb_error err;
    if (eb_trace_describe(inst, path, opts, d, &arena, &err) != EB_OK)
        return -1;
    return d[c].fused_at == c ? d[c].fuse_nlab : -1;
}

/*
 * Blocks along several labels: intermediates whose consumer's output
 * starts with a label the intermediate lacks (e: a block is not one piece
 * of the output and is scattered into it), with other labels than the
 * blocked ones, or with the blocked labels themselves (written in place);
 * odd sizes, so the last label's blocks leave tails. Forced fusion with
 * 700-byte blocks blocks along two labels; blocks from 1 byte up cover
 * one-element blocks; the default cost model scaled down to 512-byte
 * blocks makes what it makes. Results against the naive reference at one,
 * two and three threads.
 */
static void test_multi_label(eb_team **teams)
{
    static const char *cases[] = {
        "abcx,xd,bcde->eabc",
        "abcx,xd,bcde->abce",
        "abcx,xd,bcde->bcae",
        "abcx,xd,dbec->ecab",
    };
    tu_sizes sp = {"a=5,b=3,c=7,d=4,x=6,e=3"};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        eb_instance *inst = tu_instance(cases[k], tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", cases[k]);
        if (!inst)
            continue;
        eb_pair steps[2] = {{0, 1}, {0, 1}};
        eb_path path = {.strategy = "test", .num_steps = 2, .steps = steps};
        eb_fuse_opts o = forced(700);
        eb_step_desc d[2];
        int nlab = group_at(inst, &path, &o, 1, d);
        EB_CHECK(nlab == 2, "%s: blocked along %d labels", cases[k], nlab);
        static const int64_t blocks[] = {1, 100, 700, 3000};
        forced_vs_naive(inst, &path, blocks, sizeof blocks / sizeof *blocks,
                        teams, 13 + k, cases[k]);
        o = (eb_fuse_opts){.min_bytes = 0, .block_bytes = 512,
                           .cache_bytes = 512};
        double e = fused_vs_ref(inst, &path, &o, teams[1], 11 + k, 1);
        EB_CHECK(e >= 0 && e < 1e-12, "%s, cost model: rel err %g", cases[k],
                 e);
        eb_instance_destroy(inst);
    }
}

/*
 * A group extended along a chain (fuse.c, extend_group): a product whose
 * output is multiplied, step after step, by smaller factors (gm_queen's
 * product of two 43 M-element intermediates and the five products by 3 x 3
 * factors after it). Every factor has the blocked label w, so each longer
 * group saves more: forced fusion puts all steps in one group run at the
 * last; where the third step is a GEMM the group stops before it. Odd
 * sizes, blocks of 1 byte to all, results against the naive reference at
 * one, two and three threads.
 */
static void test_extended_chain(eb_team **teams)
{
    static const struct {
        const char *fs, *sizes;
        int fused; /* steps in the group run at the last step */
    } cases[] = {
        {"wa,wb,wab,wb,w->wab", "w=13,a=6,b=7", 4},
        {"wa,wb,wab,wb,w->bwa", "w=17,a=5,b=9", 4},
        {"wa,wb,wab,bc->wac", "w=13,a=6,b=7,c=5", 2},
    };
    static const int64_t blocks[] = {1, 100, 1000, 1 << 20};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tu_sizes sp = {cases[k].sizes};
        eb_instance *inst = tu_instance(cases[k].fs, tu_spec_size, &sp);
        EB_CHECK(inst != NULL, "%s builds", cases[k].fs);
        if (!inst)
            continue;
        /* The product first, then the intermediate (last) with the next
         * operand (first). */
        int n = inst->num_tensors - 1;
        eb_pair steps[4] = {{0, 1}};
        for (int s = 1; s < n; s++)
            steps[s] = (eb_pair){0, inst->num_tensors - s - 1};
        eb_path path = {.strategy = "test", .num_steps = n, .steps = steps};
        eb_fuse_opts o = forced(100);
        eb_step_desc d[4];
        int64_t arena;
        eb_error err;
        int in_last = 0;
        if (eb_trace_describe(inst, &path, &o, d, &arena, &err) == EB_OK)
            for (int s = 0; s < n; s++)
                in_last += d[s].fused_at == cases[k].fused - 1;
        EB_CHECK(in_last == cases[k].fused,
                 "%s: %d steps in the group at step %d, want %d", cases[k].fs,
                 in_last, cases[k].fused - 1, cases[k].fused);
        forced_vs_naive(inst, &path, blocks, sizeof blocks / sizeof *blocks,
                        teams, 23 + k, cases[k].fs);
        eb_instance_destroy(inst);
    }
}

/*
 * Which operands from outside a group are prefetched a block ahead
 * (fuse.c, mark_prefetch): those a member's permutation reads (here the
 * outer product wa x wb that starts the chain, then each multiply's
 * outside factor: wab, wb, w) whose elements over all blocks take at
 * least prefetch_bytes, whatever the block length; never an operand made
 * inside the group. Thresholds on both sides of each operand's bytes.
 */
static void test_prefetch_marks(void)
{
    tu_sizes sp = {"w=13,a=6,b=7"};
    eb_instance *inst = tu_instance("wa,wb,wab,wb,w->wab", tu_spec_size, &sp);
    EB_CHECK(inst != NULL, "prefetch marks: instance builds");
    if (!inst)
        return;
    eb_pair steps[4] = {{0, 1}, {0, 3}, {0, 2}, {0, 1}};
    eb_path path = {.strategy = "test", .num_steps = 4, .steps = steps};
    /* Blocks of 100 bytes fuse all four steps at step 3 (as in
     * test_extended_chain), of 16 steps 0-1 at 1 and 2-3 at 3: the step
     * each runs at, and the bytes of its operands A and B from outside
     * its group (0: made inside). */
    static const int fused_at[2][4] = {{1, 1, 3, 3}, {3, 3, 3, 3}};
    static const int64_t bytes[2][4][2] = {
        {{624, 728}, {4368, 0}, {728, 4368}, {104, 0}},
        {{624, 728}, {4368, 0}, {728, 0}, {104, 0}}};
    static const int64_t thresholds[] = {0, 103, 104, 105, 624, 625, 728, 729,
                                         4368, 4369, INT64_MAX};
    static const int64_t blocks[] = {16, 100};
    for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++)
        for (size_t k = 0; k < sizeof thresholds / sizeof *thresholds; k++) {
            eb_fuse_opts o = forced(blocks[b]);
            o.prefetch_bytes = thresholds[k];
            eb_step_desc d[4];
            int64_t arena;
            eb_error err;
            int ok = eb_trace_describe(inst, &path, &o, d, &arena, &err) ==
                     EB_OK, bad = -1;
            for (int s = 0; ok && s < 4; s++) {
                int want = 0;
                for (int q = 0; q < 2; q++)
                    want |= (bytes[b][s][q] && bytes[b][s][q] >= thresholds[k])
                            << q;
                if (d[s].fused_at != fused_at[b][s] || d[s].fuse_pf != want)
                    ok = 0, bad = s;
            }
            EB_CHECK(ok, "prefetch marks, blocks of %lld bytes, threshold "
                     "%lld: step %d marked %d", (long long)blocks[b],
                     (long long)thresholds[k], bad,
                     bad >= 0 ? d[bad].fuse_pf : -1);
        }
    eb_instance_destroy(inst);
}

/*
 * A skinny GEMM whose short side (b c, 27) is among its consumer's batch
 * labels (gm_queen5_5_3's steps 147/148 in small): trace lays the
 * intermediate out short side first, so the producer writes C as it
 * computes it (nothing permuted) and the consumer reads it in place as
 * batches. Results against the naive reference in both modes, fused and
 * not.
 */
static void test_short_side_first(eb_team **teams)
{
    tu_sizes sp = {"a=3,h=4,x=37,k=5,b=3,c=9,j=2"};
    eb_instance *inst = tu_instance("ahxk,kbc,abcjh->ajbcx", tu_spec_size,
                                    &sp);
    EB_CHECK(inst != NULL, "short-side chain builds");
    if (!inst)
        return;
    eb_pair steps[2] = {{0, 1}, {0, 1}};
    eb_path path = {.strategy = "test", .num_steps = 2, .steps = steps};
    eb_step_desc d[2];
    int64_t arena;
    eb_error err;
    EB_CHECK(eb_trace_describe(inst, &path, NULL, d, &arena, &err) == EB_OK,
             "short-side chain: trace compiles");
    const eb_plan *p = &d[0].plan;
    EB_CHECK(p->kind == EB_KIND_SMALL_GEMM && !p->prep[0] && !p->prep[1] &&
                 !p->post && !d[1].plan.prep[0] && !d[1].plan.prep[1],
             "short side first: producer %s, %d + %d preparations, post %d; "
             "consumer %d + %d preparations",
             eb_kind_name(p->kind), p->prep[0], p->prep[1], p->post,
             d[1].plan.prep[0], d[1].plan.prep[1]);
    for (int m = 0; m < EB_MODE_COUNT; m++) {
        double e = tu_mode_vs_naive(inst, &path, 5, (eb_mode)m, NULL);
        EB_CHECK(e >= 0 && e <= 1e-12, "short-side chain %s: rel err %g",
                 eb_mode_name((eb_mode)m), e);
    }
    eb_fuse_opts o = forced(64);
    for (int t = 0; t < 3; t++) {
        double e = fused_vs_ref(inst, &path, &o, teams[t], 9, 1);
        EB_CHECK(e >= 0 && e < 1e-12,
                 "short-side chain fused, %d threads: rel err %g", t + 1, e);
    }
    eb_instance_destroy(inst);
}

/* The default cost model on shipped instances: gm_queen5_5_3's skinny
 * GEMM and its consumer (a 1 GB intermediate, dims of 3) run blocked
 * along several labels, blocks of 1 MiB at most (on average); its chain
 * of 8 steps in blocks whose 7 intermediates take more than 1 MiB, of
 * which those live at once (3) take less (trace.c lays the chain's
 * buffers out by lifetime); its multiply whose operands come from two
 * outer products in rows of 3 (slow kernels: only the reads of their
 * outputs would be saved, less than the scatter of the blocks costs)
 * runs whole; the MERA network's flop-bound steps form no group. */
static void test_default_shipped(void)
{
    static const struct {
        const char *file;
        int consumer; /* step whose group to find, -1: none at all */
        int alone;    /* a step in no group (-1: none checked) */
        int chain;    /* consumer of a chain sized by its live blocks */
    } cases[] = {
        {"instances/gm_queen5_5_3.wcsp.json", 148, 76, 83},
        {"instances/str_nw_mera_closed_120.json", -1, -1, -1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        eb_instance *inst;
        eb_pathset *ps;
        eb_error err;
        if (eb_load_instance(cases[k].file, &inst, &err) ||
            eb_load_find_paths(inst, NULL, &ps, &err)) {
            EB_CHECK(0, "%s loads: %s", cases[k].file, err.msg);
            continue;
        }
        const eb_path *path = eb_pathset_find(ps, "opt_flops");
        eb_fuse_opts o = eb_fuse_default_opts();
        int n = path ? path->num_steps : 0, fused = 0;
        eb_step_desc *d = malloc((size_t)(n ? n : 1) * sizeof *d);
        int64_t arena;
        int g = path ? count_groups(inst, path, &o, &fused) : -1;
        if (cases[k].consumer < 0) {
            EB_CHECK(g == 0, "%s: %d groups (expected none)", cases[k].file,
                     g);
        } else if (d && path &&
                   eb_trace_describe(inst, path, &o, d, &arena, &err) ==
                       EB_OK) {
            const eb_step_desc *c = &d[cases[k].consumer];
            double block = 0; /* bytes of intermediates, per block */
            for (int s = 0; s < n; s++)
                if (d[s].fused_at == cases[k].consumer &&
                    s != cases[k].consumer)
                    block += 8.0 * (double)d[s].plan.out_elems /
                             (double)c->fuse_blocks;
            EB_CHECK(c->fused_at == cases[k].consumer && c->fuse_nlab > 1 &&
                         block <= (double)o.cache_bytes,
                     "%s step %d: fused %d along %d labels, %g-byte blocks",
                     cases[k].file, cases[k].consumer, c->fused_at,
                     c->fuse_nlab, block);
            /* The chain's blocks are sized by the intermediates live at
             * once (at most 1 MiB), not by all of them (more). */
            int ch = cases[k].chain;
            double all = 0;
            for (int s = 0; ch >= 0 && s < n; s++)
                if (d[s].fused_at == ch && s != ch)
                    all += 8.0 * (double)d[s].plan.out_elems /
                           (double)d[ch].fuse_blocks;
            EB_CHECK(ch < 0 || (d[ch].fused_at == ch &&
                                all > (double)o.cache_bytes &&
                                all <= 3.0 * (double)o.block_bytes),
                     "%s step %d: a chain's blocks of %g bytes of "
                     "intermediates in all", cases[k].file, ch, all);
            int a = cases[k].alone;
            EB_CHECK(a < 0 || (a < n && d[a].fused_at < 0),
                     "%s step %d runs whole (fused at %d)", cases[k].file, a,
                     a >= 0 && a < n ? d[a].fused_at : -2);
        } else {
            EB_CHECK(0, "%s: trace describes", cases[k].file);
        }
        free(d);
        eb_pathset_destroy(ps);
        eb_instance_destroy(inst);
    }
}

int main(void)
{
    eb_blas_set_threads(1);
    eb_team *teams[3] = {NULL, NULL, NULL};
    eb_error err;
    for (int t = 1; t < 3; t++)
        if (eb_team_create(t + 1, &teams[t], &err))
            EB_CHECK(0, "team: %s", err.msg);
    test_chains(teams);
    test_lm_networks(teams);
    test_default_choice();
    test_short_side_first(teams);
    test_multi_label(teams);
    test_extended_chain(teams);
    test_prefetch_marks();
    test_default_shipped();
    eb_team_destroy(teams[1]);
    eb_team_destroy(teams[2]);
    return eb_check_done("test_fuse");
}
