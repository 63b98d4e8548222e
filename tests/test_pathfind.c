/* test_pathfind: the contraction path finder (issue 4).
 *
 * Small instances against brute force over every linear path (the finder
 * re-optimizes up to 8 operands exactly, so it must hit the optimum),
 * awkward shapes (one operand, disconnected operands, traces, hyperedges,
 * labels summed out of one operand), determinism, the flops bound on
 * lm_batch_likelihood_sentence_3_12d, valid paths on every reference
 * instance, and the shipped paths/ files.
 *
 * EB_PATHFIND_TABLE=1 build/tests/test_pathfind prints the table of
 * docs/pathfinder.md (default options, every reference instance).
 * Run from the repository root (tests/run-all does). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "lmgen.h"
#include "load.h"
#include "pathfind.h"
#include "schedule.h"

#define REFDIR "instances"
#define SENTENCE_3_BOUND 9.2389 /* 10% above the stored opt_flops path */

/* Build an instance from a format string and a size per distinct label
 * (in order of first appearance). */
static eb_instance *make(const char *fs, const int64_t *sizes)
{
    int64_t *shapes[16];
    int ranks[16], n = 0, r = 0;
    char seen[128] = {0};
    int64_t size_of[128];
    int next = 0;
    shapes[0] = malloc(16 * sizeof(int64_t));
    for (const char *p = fs; *p && *p != '-'; p++) {
        if (*p == ',') {
            ranks[n++] = r;
            r = 0;
            shapes[n] = malloc(16 * sizeof(int64_t));
            continue;
        }
        if (!seen[(int)*p]) {
            seen[(int)*p] = 1;
            size_of[(int)*p] = sizes[next++];
        }
        shapes[n][r++] = size_of[(int)*p];
    }
    ranks[n++] = r;
    eb_instance *inst = NULL;
    eb_error err;
    if (eb_instance_build("test", "test", fs, "float64", n, shapes, ranks,
                          &inst, &err))
        EB_CHECK(0, "%s: %s", fs, err.msg);
    for (int k = 0; k < n; k++)
        free(shapes[k]);
    return inst;
}

/* Check a found path: valid, complete, costs equal to the schedule's. */
static void check_path(const eb_instance *inst, const eb_path *p,
                       const char *what)
{
    eb_error err;
    EB_CHECK(p->num_steps == inst->num_tensors - 1, "%s: %d steps", what,
             p->num_steps);
    EB_CHECK(eb_path_validate(p, inst->num_tensors, inst->file, "x", &err) ==
                 EB_OK, "%s: %s", what, err.msg);
    int sorted = 1;
    for (int s = 0; s < p->num_steps; s++)
        sorted &= p->steps[s].i < p->steps[s].j;
    EB_CHECK(sorted, "%s: pairs are sorted i < j", what);
    eb_schedule *s;
    if (eb_schedule_build(inst, p, &s, &err)) {
        EB_CHECK(0, "%s: %s", what, err.msg);
        return;
    }
    EB_CHECK(s->log10_flops == p->log10_flops &&
                 s->log2_size == p->log2_size,
             "%s: costs are the schedule's", what);
    eb_schedule_destroy(s);
}

static int find(const eb_instance *inst, eb_minimize m, int trials,
                eb_path *out)
{
    eb_pathfind_opts o;
    eb_pathfind_opts_default(&o);
    o.minimize = m;
    o.trials = trials;
    eb_error err;
    eb_status st = eb_pathfind(inst, &o, m ? "opt_size" : "opt_flops", out,
                               &err);
    EB_CHECK(st == EB_OK, "%s: %s", inst->name, err.msg);
    return st;
}

/* Minimum flops and minimum largest intermediate over every linear path. */
static void brute(const eb_instance *inst, eb_path *p, int depth, int nlive,
                  double *min_flops, double *min_size)
{
    if (nlive == 1) {
        eb_schedule *s;
        if (eb_schedule_build(inst, p, &s, NULL) == EB_OK) {
            *min_flops = fmin(*min_flops, s->total_flops);
            *min_size = fmin(*min_size, s->log2_size);
            eb_schedule_destroy(s);
        }
        return;
    }
    for (int i = 0; i < nlive; i++)
        for (int j = i + 1; j < nlive; j++) {
            p->steps[depth] = (eb_pair){i, j};
            brute(inst, p, depth + 1, nlive - 1, min_flops, min_size);
        }
}

static void test_small(void)
{
    static const struct { const char *fs; int64_t sizes[12]; } cases[] = {
        {"ab,bc,cd,de,ef->af", {30, 35, 15, 5, 10, 20}},
        {"ab,bc,cd,de,ef,fg->", {7, 30, 2, 40, 3, 50, 4}},
        {"bi,bij,bjk,bk->b", {64, 8, 8, 8}},
        {"ij,jk,ki->", {20, 30, 40}},
        {"ii,ij,jk->k", {9, 10, 11}},
        {"ijx,jk,kl,xm->ilm", {6, 7, 50, 8, 9, 3}},
        {"i,j,k->ijk", {3, 4, 5}},
        {"ab,cd->", {5, 6, 7, 8}},
        {"ab,ab,ab,bc->ac", {10, 20, 30}},
        {"abc,cd,de,ebf,fa->", {4, 5, 6, 7, 8, 9}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        eb_instance *inst = make(cases[c].fs, cases[c].sizes);
        if (!inst)
            continue;
        eb_path steps = {.steps = malloc(16 * sizeof(eb_pair)),
                         .num_steps = inst->num_tensors - 1};
        double best_f = INFINITY, best_s = INFINITY;
        brute(inst, &steps, 0, inst->num_tensors, &best_f, &best_s);
        free(steps.steps);
        for (int m = 0; m < 2; m++) {
            eb_path p;
            if (find(inst, (eb_minimize)m, 0, &p))
                continue;
            check_path(inst, &p, cases[c].fs);
            if (m == EB_MINIMIZE_FLOPS)
                EB_CHECK(fabs(pow(10, p.log10_flops) - best_f) <=
                             1e-9 * best_f,
                         "%s: flops %.6g, optimum %.6g", cases[c].fs,
                         pow(10, p.log10_flops), best_f);
            else
                EB_CHECK(p.log2_size <= best_s + 1e-12,
                         "%s: log2_size %.4f, optimum %.4f", cases[c].fs,
                         p.log2_size, best_s);
            eb_path_free(&p);
        }
        eb_instance_destroy(inst);
    }
    /* One operand: no steps. */
    int64_t sz[2] = {3, 4};
    eb_instance *one = make("ij->i", sz);
    eb_path p;
    if (one && !find(one, EB_MINIMIZE_FLOPS, 0, &p)) {
        EB_CHECK(p.num_steps == 0 && p.log10_flops == 0, "one operand");
        eb_path_free(&p);
    }
    eb_instance_destroy(one);
}

/* Option corners: reconfiguration off (subtree 2), oversized subtree
 * (clamped), one trial, one kept tree; all give valid paths, and the exact
 * settings still reach the optimum of a 6-operand chain. */
static void test_options(void)
{
    int64_t sz[7] = {7, 30, 2, 40, 3, 50, 4};
    eb_instance *inst = make("ab,bc,cd,de,ef,fg->", sz);
    static const int settings[][3] = {{2, 1, 1}, {3, 1, 1}, {99, 1, 1},
                                      {8, 0, 0}, {10, 2, 3}};
    for (size_t i = 0; inst && i < sizeof settings / sizeof *settings; i++) {
        eb_pathfind_opts o;
        eb_pathfind_opts_default(&o);
        o.subtree = settings[i][0];
        o.trials = settings[i][1];
        o.keep = settings[i][2];
        eb_path p;
        eb_error err;
        if (eb_pathfind(inst, &o, "x", &p, &err)) {
            EB_CHECK(0, "settings %zu: %s", i, err.msg);
            continue;
        }
        check_path(inst, &p, "options");
        if (o.subtree >= 6)
            EB_CHECK(fabs(pow(10, p.log10_flops) - 1940) < 1e-6,
                     "settings %zu: flops %g (optimum 1940)", i,
                     pow(10, p.log10_flops));
        eb_path_free(&p);
    }
    eb_instance_destroy(inst);
}

static eb_instance *sentence_3_12d(void)
{
    eb_lm_params prm = {2, 12, 11, 1100, EB_F64};
    eb_lm_network *net;
    eb_instance *inst = NULL;
    eb_error err;
    if (eb_lm_build(&prm, NULL, &net, &err) ||
        eb_lm_to_instance(net, "generated", &inst, &err))
        EB_CHECK(0, "%s", err.msg);
    eb_lm_network_destroy(net);
    return inst;
}

/* The bar: at most 10% above the public stored opt_flops path. */
static void test_bound_and_determinism(void)
{
    eb_instance *inst = sentence_3_12d();
    eb_path a, b;
    if (!inst || find(inst, EB_MINIMIZE_FLOPS, 0, &a)) {
        eb_instance_destroy(inst);
        return;
    }
    check_path(inst, &a, "sentence_3_12d");
    EB_CHECK(a.log10_flops <= SENTENCE_3_BOUND, "sentence_3_12d: log10_flops "
             "%.4f above %.4f", a.log10_flops, SENTENCE_3_BOUND);
    if (!find(inst, EB_MINIMIZE_FLOPS, 0, &b)) {
        EB_CHECK(eb_path_equal(&a, &b), "same input, same path");
        eb_path_free(&b);
    }
    eb_pathfind_opts o;
    eb_pathfind_opts_default(&o);
    o.seed = 12345;
    o.trials = 8;
    eb_error err;
    if (eb_pathfind(inst, &o, "x", &b, &err) == EB_OK) {
        check_path(inst, &b, "sentence_3_12d seed 12345");
        eb_path_free(&b);
    }
    eb_path_free(&a);
    eb_instance_destroy(inst);
}

/* Every *.json instance in the reference folder, sorted by name. */
static int list_refs(char names[][256], int cap)
{
    DIR *d = opendir(REFDIR);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        size_t len = strlen(e->d_name);
        /* gen_*: the project's own generated instances, not public ones. */
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 &&
            strncmp(e->d_name, "gen_", 4) != 0)
            snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

/* Few trials keep this quick (also under valgrind); the table uses the
 * defaults. */
static void test_references(void)
{
    char names[64][256];
    int n = list_refs(names, 64);
    if (n < 0) {
        printf("note: %s absent; reference checks skipped\n", REFDIR);
        return;
    }
    EB_CHECK(n == 19, "%d reference instances (expected 19)", n);
    for (int k = 0; k < n; k++) {
        char file[512];
        snprintf(file, sizeof file, REFDIR "/%.255s", names[k]);
        eb_instance *inst;
        eb_error err;
        if (eb_load_instance(file, &inst, &err)) {
            EB_CHECK(0, "%s", err.msg);
            continue;
        }
        for (int m = 0; m < 2; m++) {
            eb_path p;
            if (find(inst, (eb_minimize)m, 4, &p))
                continue;
            check_path(inst, &p, inst->name);
            if (strcmp(inst->name, "lm_batch_likelihood_sentence_3_12d") == 0)
                EB_CHECK(p.log10_flops <= SENTENCE_3_BOUND, "%s: %.4f",
                         inst->name, p.log10_flops);
            eb_path_free(&p);
        }
        eb_instance_destroy(inst);
    }
}

/* The shipped paths/ files: loadable, both strategies, labels that match
 * the recomputed costs, and the sentence_3_12d bound. */
static void test_shipped(void)
{
    static const char *const names[] = {
        "gen_lm_sentence_3_12d",
        "gen_lm_sentence_4_4d",
        "gen_lm_tiny_2_3d",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char ifile[256], pfile[256];
        snprintf(ifile, sizeof ifile, "instances/%s.json", names[i]);
        snprintf(pfile, sizeof pfile, "paths/%s.json", names[i]);
        eb_instance *inst = NULL;
        eb_pathset *ps = NULL;
        eb_error err;
        if (eb_load_instance(ifile, &inst, &err) ||
            eb_load_pathfile(pfile, inst, &ps, &err)) {
            EB_CHECK(0, "%s", err.msg);
            eb_instance_destroy(inst);
            continue;
        }
        for (int m = 0; m < 2; m++) {
            const eb_path *p = eb_pathset_find(ps, m ? "opt_size" : "opt_flops");
            eb_schedule *s;
            EB_CHECK(p != NULL, "%s: strategy missing", pfile);
            if (!p || eb_schedule_build(inst, p, &s, &err))
                continue;
            EB_CHECK(fabs(s->log10_flops - p->log10_flops) < 6e-5 &&
                         fabs(s->log2_size - p->log2_size) < 6e-5,
                     "%s: %s: stored costs are not the recomputed ones",
                     pfile, p->strategy);
            if (i == 0 && m == 0)
                EB_CHECK(s->log10_flops <= SENTENCE_3_BOUND, "%s: %.4f",
                         pfile, s->log10_flops);
            eb_schedule_destroy(s);
        }
        eb_pathset_destroy(ps);
        eb_instance_destroy(inst);
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One table row: the finder's costs with the default options next to the
 * stored strategy's label and its recomputed costs. */
static void table_row(const eb_instance *inst, eb_minimize m)
{
    const char *strat = m ? "opt_size" : "opt_flops";
    const eb_path *st = eb_pathset_find(inst->inline_paths, strat);
    eb_schedule *s = NULL;
    eb_path p;
    double t0 = now_s();
    if (find(inst, m, 0, &p))
        return;
    double t1 = now_s();
    if (st && eb_schedule_build(inst, st, &s, NULL))
        s = NULL;
    printf("| %s | %d | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f |\n",
           inst->name, inst->num_tensors, p.log10_flops, p.log2_size,
           st ? st->log10_flops : NAN, s ? s->log10_flops : NAN,
           st ? st->log2_size : NAN, s ? s->log2_size : NAN, t1 - t0);
    eb_schedule_destroy(s);
    eb_path_free(&p);
}

static void print_table(void)
{
    char names[64][256];
    int n = list_refs(names, 64);
    for (int m = 0; m < 2 && n > 0; m++) {
        printf("\n--minimize %s (strategy %s)\n\n", m ? "size" : "flops",
               m ? "opt_size" : "opt_flops");
        printf("| instance | operands | log10_flops | log2_size | stored "
               "log10_flops | recomputed | stored log2_size | recomputed | "
               "seconds |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int k = 0; k < n; k++) {
            char file[512];
            snprintf(file, sizeof file, REFDIR "/%.255s", names[k]);
            eb_instance *inst;
            if (eb_load_instance(file, &inst, NULL) == EB_OK)
                table_row(inst, (eb_minimize)m);
            eb_instance_destroy(inst);
        }
    }
}

int main(void)
{
    if (getenv("EB_PATHFIND_TABLE")) {
        print_table();
        return 0;
    }
    test_small();
    test_options();
    test_bound_and_determinism();
    test_references();
    test_shipped();
    return eb_check_done("test_pathfind");
}
