/* pathfind: greedy trials plus subtree reconfiguration over contraction trees. */
#include "pathfind.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

enum {
    PF_DEFAULT_SUBTREE = 8,
    PF_TRIAL_SUBTREE = 5,   /* cheap reconfiguration of every trial */
    PF_DEFAULT_KEEP = 4,
    PF_MAX_PASSES = 16,
    PF_WORDS = EB_PATHFIND_MAX_SUBTREE * EB_MAX_RANK / 64,
};

#define PF_DEFAULT_SEED 0x5eed1e55a11ce5ULL

void eb_pathfind_opts_default(eb_pathfind_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->minimize = EB_MINIMIZE_FLOPS;
}

int eb_minimize_parse(const char *s, eb_minimize *out)
{
    if (strcmp(s, "flops") == 0)
        *out = EB_MINIMIZE_FLOPS;
    else if (strcmp(s, "size") == 0)
        *out = EB_MINIMIZE_SIZE;
    else
        return -1;
    return 0;
}

const char *eb_minimize_str(eb_minimize m)
{
    return m == EB_MINIMIZE_SIZE ? "size" : "flops";
}

/* ---- instance view and contraction trees ------------------------------ */

/* What every search needs from the instance: label sizes, output flags and
 * each input's distinct labels, sorted. */
typedef struct {
    int n, num_labels;
    eb_minimize minimize;
    double *lsize;
    unsigned char *in_output;
} pf_ctx;

/* A binary contraction tree: leaves 0..n-1 are the inputs, internal nodes
 * n..2n-2; legs are each node's labels (sorted ids) by the kept-label rule. */
typedef struct {
    int n, num_nodes, root;
    int *left, *right, *parent, *rank;
    int *legs;          /* num_nodes * EB_MAX_RANK */
    double *size;       /* elements of each node */
} pf_tree;

typedef struct {
    double flops;
    double max_size;
} pf_cost;

static int *node_legs(const pf_tree *t, int x)
{
    return t->legs + (size_t)x * EB_MAX_RANK;
}

static void tree_free(pf_tree *t)
{
    if (!t)
        return;
    free(t->left);
    free(t->legs);
    free(t->size);
    free(t);
}

static pf_tree *tree_alloc(int n)
{
    pf_tree *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->n = n;
    t->num_nodes = 2 * n - 1;
    size_t nn = (size_t)t->num_nodes;
    t->left = malloc(4 * nn * sizeof(int));
    t->legs = malloc(nn * EB_MAX_RANK * sizeof(int));
    t->size = malloc(nn * sizeof(double));
    if (!t->left || !t->legs || !t->size) {
        tree_free(t);
        return NULL;
    }
    t->right = t->left + nn;
    t->parent = t->right + nn;
    t->rank = t->parent + nn;
    for (size_t x = 0; x < nn; x++)
        t->left[x] = t->right[x] = t->parent[x] = -1;
    return t;
}

static void tree_copy(pf_tree *dst, const pf_tree *src)
{
    size_t nn = (size_t)src->num_nodes;
    dst->root = src->root;
    memcpy(dst->left, src->left, 4 * nn * sizeof(int));
    memcpy(dst->legs, src->legs, nn * EB_MAX_RANK * sizeof(int));
    memcpy(dst->size, src->size, nn * sizeof(double));
}

static double legs_size(const pf_ctx *c, const int *ids, int rank)
{
    double s = 1;
    for (int a = 0; a < rank; a++)
        s *= c->lsize[ids[a]];
    return s;
}

/* Leaves: each input's distinct labels, sorted. */
static void tree_set_leaves(const pf_ctx *c, const eb_instance *inst,
                            pf_tree *t)
{
    for (int k = 0; k < c->n; k++) {
        int *ids = node_legs(t, k);
        int r = eb_unique_labels(inst->inputs[k].ids, inst->inputs[k].rank,
                                 ids);
        for (int i = 1; i < r; i++) /* insertion sort: r <= 64 */
            for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
                int tmp = ids[j];
                ids[j] = ids[j - 1];
                ids[j - 1] = tmp;
            }
        t->rank[k] = r;
        t->size[k] = legs_size(c, ids, r);
    }
}

/* Cost of internal node x (DESIGN 3.2): product of the sizes of all labels
 * of both children, times 2 if a label is summed away. */
static double node_flops(const pf_ctx *c, const pf_tree *t, int x)
{
    int a = t->left[x], b = t->right[x];
    const int *ia = node_legs(t, a), *ib = node_legs(t, b);
    int na = t->rank[a], nb = t->rank[b], i = 0, j = 0, nu = 0;
    double s = 1;
    while (i < na || j < nb) {
        int l;
        if (j == nb || (i < na && ia[i] < ib[j]))
            l = ia[i++];
        else if (i == na || ib[j] < ia[i])
            l = ib[j++];
        else
            l = ia[i++], j++;
        s *= c->lsize[l];
        nu++;
    }
    return nu > t->rank[x] ? 2 * s : s;
}

static pf_cost tree_cost(const pf_ctx *c, const pf_tree *t)
{
    pf_cost k = {0, 0};
    for (int x = t->n; x < t->num_nodes; x++) {
        k.flops += node_flops(c, t, x);
        if (t->size[x] > k.max_size)
            k.max_size = t->size[x];
    }
    return k;
}

/* a strictly better than b (beyond rounding) under the objective. */
static int cost_better(eb_minimize m, pf_cost a, pf_cost b)
{
    const double eps = 1e-9;
    double a1 = m == EB_MINIMIZE_SIZE ? a.max_size : a.flops;
    double b1 = m == EB_MINIMIZE_SIZE ? b.max_size : b.flops;
    double a2 = m == EB_MINIMIZE_SIZE ? a.flops : a.max_size;
    double b2 = m == EB_MINIMIZE_SIZE ? b.flops : b.max_size;
    if (a1 < b1 * (1 - eps))
        return 1;
    if (a1 > b1 * (1 + eps))
        return 0;
    return a2 < b2 * (1 - eps);
}

/* ---- greedy ------------------------------------------------------------ */

typedef struct {
    double score;
    int a, b;
} pf_cand;

typedef struct {
    pf_cand *v;
    int len, cap;
} pf_heap;

static int cand_less(const pf_cand *x, const pf_cand *y)
{
    if (x->score != y->score)
        return x->score < y->score;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

static int heap_push(pf_heap *h, pf_cand c)
{
    if (h->len == h->cap) {
        int cap = h->cap ? 2 * h->cap : 256;
        pf_cand *p = realloc(h->v, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        h->v = p;
        h->cap = cap;
    }
    int i = h->len++;
    while (i > 0 && cand_less(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
    return 0;
}

static pf_cand heap_pop(pf_heap *h)
{
    pf_cand top = h->v[0], last = h->v[--h->len];
    int i = 0;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= h->len)
            break;
        if (k + 1 < h->len && cand_less(&h->v[k + 1], &h->v[k]))
            k++;
        if (!cand_less(&h->v[k], &last))
            break;
        h->v[i] = h->v[k];
        i = k;
    }
    if (h->len > 0)
        h->v[i] = last;
    return top;
}

/* Live state of one greedy run. Label lists hold the live nodes carrying
 * each non-output label: the candidate pairs are the pairs that share one. */
typedef struct {
    const pf_ctx *c;
    pf_tree *t;
    int next;
    unsigned char *live;
    int *refcount;      /* live nodes holding the label, +1 if in output */
    int **lab_nodes;
    int *lab_len, *lab_cap;
    int *stamp, cur_stamp;
    pf_heap heap;
    double costmod, temperature;
    uint64_t rng;
    int oom;
} pf_greedy;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) * 0x1.0p-53;
}

/* Kept labels of contracting a and b (ids may be NULL); returns the result
 * size and sets *rank, which may exceed EB_MAX_RANK (then ids is untouched
 * past EB_MAX_RANK entries). */
static double pair_result(const pf_greedy *g, int a, int b, int *ids,
                          int *rank)
{
    const pf_tree *t = g->t;
    const int *ia = node_legs(t, a), *ib = node_legs(t, b);
    int na = t->rank[a], nb = t->rank[b], i = 0, j = 0, r = 0;
    double s = 1;
    while (i < na || j < nb) {
        int l, in_both = 0;
        if (j == nb || (i < na && ia[i] < ib[j]))
            l = ia[i++];
        else if (i == na || ib[j] < ia[i])
            l = ib[j++];
        else
            l = ia[i++], j++, in_both = 1;
        if (g->refcount[l] - 1 - in_both > 0) {
            if (ids && r < EB_MAX_RANK)
                ids[r] = l;
            r++;
            s *= g->c->lsize[l];
        }
    }
    *rank = r;
    return s;
}

static double pair_score(pf_greedy *g, int a, int b, int *ok)
{
    int r;
    double sab = pair_result(g, a, b, NULL, &r);
    *ok = r <= EB_MAX_RANK && isfinite(sab);
    double s = sab - g->costmod * (g->t->size[a] + g->t->size[b]);
    if (g->temperature <= 0)
        return s;
    /* Signed log so the temperature does not depend on the tensor scale;
     * Gumbel noise turns the minimum into a Boltzmann sample. */
    double ls = s >= 0 ? log1p(s) : -log1p(-s);
    return ls - g->temperature * -log(-log(uniform01(&g->rng)));
}

/* Push x's best partner among the live nodes sharing a non-output label. */
static void push_best(pf_greedy *g, int x)
{
    const int *ids = node_legs(g->t, x);
    pf_cand best = {INFINITY, -1, -1};
    g->cur_stamp++;
    g->stamp[x] = g->cur_stamp;
    for (int q = 0; q < g->t->rank[x]; q++) {
        int l = ids[q];
        if (g->c->in_output[l])
            continue;
        for (int k = 0; k < g->lab_len[l]; k++) {
            int y = g->lab_nodes[l][k], ok;
            if (g->stamp[y] == g->cur_stamp)
                continue;
            g->stamp[y] = g->cur_stamp;
            double s = pair_score(g, x, y, &ok);
            pf_cand cand = {s, x, y};
            if (ok && (best.a < 0 || cand_less(&cand, &best)))
                best = cand;
        }
    }
    if (best.a >= 0 && heap_push(&g->heap, best))
        g->oom = 1;
}

static void lab_add(pf_greedy *g, int l, int x)
{
    if (g->lab_len[l] == g->lab_cap[l]) {
        int cap = g->lab_cap[l] ? 2 * g->lab_cap[l] : 4;
        int *p = realloc(g->lab_nodes[l], (size_t)cap * sizeof *p);
        if (!p) {
            g->oom = 1;
            return;
        }
        g->lab_nodes[l] = p;
        g->lab_cap[l] = cap;
    }
    g->lab_nodes[l][g->lab_len[l]++] = x;
}

static void lab_remove(pf_greedy *g, int l, int x)
{
    for (int k = 0; k < g->lab_len[l]; k++)
        if (g->lab_nodes[l][k] == x) {
            g->lab_nodes[l][k] = g->lab_nodes[l][--g->lab_len[l]];
            return;
        }
}

/* Make x (a new node whose legs are set) or a leaf live. */
static void node_enter(pf_greedy *g, int x)
{
    const int *ids = node_legs(g->t, x);
    g->live[x] = 1;
    for (int q = 0; q < g->t->rank[x]; q++) {
        g->refcount[ids[q]]++;
        if (!g->c->in_output[ids[q]])
            lab_add(g, ids[q], x);
    }
}

static void node_leave(pf_greedy *g, int x)
{
    const int *ids = node_legs(g->t, x);
    g->live[x] = 0;
    for (int q = 0; q < g->t->rank[x]; q++) {
        g->refcount[ids[q]]--;
        if (!g->c->in_output[ids[q]])
            lab_remove(g, ids[q], x);
    }
}

/* Contract live a and b into the next internal node; -1 if the result would
 * have more than EB_MAX_RANK labels. */
static int contract(pf_greedy *g, int a, int b)
{
    pf_tree *t = g->t;
    int x = g->next, r;
    double s = pair_result(g, a, b, node_legs(t, x), &r);
    if (r > EB_MAX_RANK)
        return -1;
    g->next++;
    t->left[x] = a;
    t->right[x] = b;
    t->parent[a] = t->parent[b] = x;
    t->rank[x] = r;
    t->size[x] = s;
    node_leave(g, a);
    node_leave(g, b);
    node_enter(g, x);
    return x;
}

/* Join what is left (no shared non-output label): the two smallest first. */
static int join_rest(pf_greedy *g)
{
    int n = g->t->n;
    for (;;) {
        int a = -1, b = -1;
        for (int x = 0; x < g->next; x++) {
            if (!g->live[x])
                continue;
            double s = g->t->size[x];
            if (a < 0 || s < g->t->size[a]) {
                b = a;
                a = x;
            } else if (b < 0 || s < g->t->size[b]) {
                b = x;
            }
        }
        if (b < 0) {
            g->t->root = a;
            return 0;
        }
        if (contract(g, a < b ? a : b, a < b ? b : a) < 0 || g->next > 2 * n)
            return -1;
    }
}

/* One greedy run into g->t (leaves already set); 0, or -1 when no tree
 * within EB_MAX_RANK labels was found, -2 when out of memory. */
static int greedy_run(pf_greedy *g)
{
    int n = g->t->n;
    g->next = n;
    g->heap.len = 0;
    memset(g->refcount, 0, (size_t)g->c->num_labels * sizeof *g->refcount);
    memset(g->lab_len, 0, (size_t)g->c->num_labels * sizeof *g->lab_len);
    memset(g->live, 0, (size_t)g->t->num_nodes);
    for (int l = 0; l < g->c->num_labels; l++)
        g->refcount[l] = g->c->in_output[l];
    for (int x = 0; x < n; x++)
        node_enter(g, x);
    for (int x = 0; x < n; x++)
        push_best(g, x);
    while (g->heap.len > 0 && !g->oom) {
        pf_cand c = heap_pop(&g->heap);
        int la = g->live[c.a], lb = g->live[c.b];
        if (la && lb) {
            int x = contract(g, c.a, c.b);
            if (x >= 0)
                push_best(g, x);
        } else if (la || lb) {
            push_best(g, la ? c.a : c.b);
        }
    }
    if (g->oom)
        return -2;
    return join_rest(g);
}

static void greedy_free(pf_greedy *g)
{
    if (g->lab_nodes)
        for (int l = 0; l < g->c->num_labels; l++)
            free(g->lab_nodes[l]);
    free(g->lab_nodes);
    free(g->lab_len);
    free(g->refcount);
    free(g->stamp);
    free(g->live);
    free(g->heap.v);
}

static int greedy_init(pf_greedy *g, const pf_ctx *c, pf_tree *t)
{
    memset(g, 0, sizeof *g);
    g->c = c;
    g->t = t;
    size_t nl = (size_t)(c->num_labels ? c->num_labels : 1);
    g->lab_nodes = calloc(nl, sizeof *g->lab_nodes);
    g->lab_len = calloc(2 * nl, sizeof *g->lab_len);
    g->refcount = calloc(nl, sizeof *g->refcount);
    g->stamp = calloc((size_t)t->num_nodes, sizeof *g->stamp);
    g->live = calloc((size_t)t->num_nodes, 1);
    if (!g->lab_nodes || !g->lab_len || !g->refcount || !g->stamp || !g->live)
        return -1;
    g->lab_cap = g->lab_len + nl;
    return 0;
}

/* ---- subtree reconfiguration -------------------------------------------- */

typedef uint64_t pf_bits[PF_WORDS];

/* Scratch of the subset dynamic program (1 << EB_PATHFIND_MAX_SUBTREE). */
typedef struct {
    int k, nw, nlocal;
    int items[EB_PATHFIND_MAX_SUBTREE];
    int inner[EB_PATHFIND_MAX_SUBTREE];
    int ninner;
    int local[EB_PATHFIND_MAX_SUBTREE * EB_MAX_RANK]; /* local -> label id */
    int *lmap;          /* label id -> local index, -1 elsewhere */
    pf_bits *uni, *legs;
    double *size, *flops, *maxs, *puni, *pint;
    int *rank, *split, *nuni, *nint;
    unsigned char *dirty; /* per tree node: region changed since visited */
} pf_dp;

static void dp_free(pf_dp *d)
{
    free(d->lmap);
    free(d->dirty);
    free(d->uni);
    free(d->legs);
    free(d->size);
    free(d->rank);
}

static int dp_init(pf_dp *d, int num_labels, int num_nodes)
{
    memset(d, 0, sizeof *d);
    size_t ns = (size_t)1 << EB_PATHFIND_MAX_SUBTREE;
    d->lmap = malloc((size_t)(num_labels ? num_labels : 1) * sizeof(int));
    d->dirty = malloc((size_t)num_nodes);
    d->uni = malloc(ns * sizeof *d->uni);
    d->legs = malloc(ns * sizeof *d->legs);
    d->size = malloc(5 * ns * sizeof(double));
    d->rank = malloc(4 * ns * sizeof(int));
    if (!d->lmap || !d->dirty || !d->uni || !d->legs || !d->size || !d->rank)
        return -1;
    d->flops = d->size + ns;
    d->maxs = d->flops + ns;
    d->puni = d->maxs + ns;
    d->pint = d->puni + ns;
    d->split = d->rank + ns;
    d->nuni = d->split + ns;
    d->nint = d->nuni + ns;
    for (int l = 0; l < num_labels; l++)
        d->lmap[l] = -1;
    return 0;
}

/* Grow the subtree under x to at most kmax frontier items, expanding first
 * the internal item with the most flops (by_size: the largest). Returns the
 * item count. */
static int dp_gather(const pf_ctx *c, const pf_tree *t, int x, int kmax,
                     int by_size, pf_dp *d)
{
    d->k = 2;
    d->items[0] = t->left[x];
    d->items[1] = t->right[x];
    d->inner[0] = x;
    d->ninner = 1;
    while (d->k < kmax) {
        int pick = -1;
        double best = -1;
        for (int i = 0; i < d->k; i++) {
            int y = d->items[i];
            if (y < t->n)
                continue;
            double f = by_size ? t->size[y] : node_flops(c, t, y);
            if (f > best) {
                best = f;
                pick = i;
            }
        }
        if (pick < 0)
            break;
        int y = d->items[pick];
        d->inner[d->ninner++] = y;
        d->items[pick] = t->left[y];
        d->items[d->k++] = t->right[y];
    }
    return d->k;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Number the labels of the items locally (sorted by id); returns the root's
 * legs as local bits. */
static void dp_number(const pf_tree *t, int x, pf_dp *d, uint64_t *root)
{
    int nl = 0;
    for (int i = 0; i < d->k; i++)
        for (int q = 0; q < t->rank[d->items[i]]; q++) {
            int l = node_legs(t, d->items[i])[q];
            if (d->lmap[l] < 0) {
                d->lmap[l] = 0;
                d->local[nl++] = l;
            }
        }
    qsort(d->local, (size_t)nl, sizeof(int), cmp_int);
    for (int i = 0; i < nl; i++)
        d->lmap[d->local[i]] = i;
    d->nlocal = nl;
    d->nw = (nl + 63) / 64;
    memset(root, 0, sizeof(pf_bits));
    for (int q = 0; q < t->rank[x]; q++) {
        int i = d->lmap[node_legs(t, x)[q]];
        root[i / 64] |= (uint64_t)1 << (i % 64);
    }
    memset(d->uni[0], 0, sizeof(pf_bits));
    for (int s = 1; s < 1 << d->k; s++) {
        int low = __builtin_ctz((unsigned)s);
        memcpy(d->uni[s], d->uni[s & (s - 1)], sizeof(pf_bits));
        int y = d->items[low];
        for (int q = 0; q < t->rank[y]; q++) {
            int i = d->lmap[node_legs(t, y)[q]];
            d->uni[s][i / 64] |= (uint64_t)1 << (i % 64);
        }
    }
    for (int i = 0; i < nl; i++)
        d->lmap[d->local[i]] = -1;
}

/* Per subset s: its legs (labels also outside s or on the root; a single
 * item keeps all its labels, as a leaf may hold labels found nowhere else),
 * their count and size, and the count and size of all its labels (uni) and
 * of its internal ones (uni minus legs), so that joins cost O(1). */
static void dp_subsets(const pf_ctx *c, const pf_tree *t, int x, pf_dp *d)
{
    pf_bits root;
    dp_number(t, x, d, root);
    int full = (1 << d->k) - 1;
    for (int s = 1; s <= full; s++) {
        int r = 0, nu = 0;
        double sz = 1, pu = 1;
        for (int w = 0; w < d->nw; w++) {
            uint64_t v = d->uni[s][w];
            if (s & (s - 1))
                v &= d->uni[full ^ s][w] | root[w];
            d->legs[s][w] = v;
            r += __builtin_popcountll(v);
            nu += __builtin_popcountll(d->uni[s][w]);
            for (uint64_t u = d->uni[s][w]; u; u &= u - 1) {
                double ls = c->lsize[d->local[64 * w + __builtin_ctzll(u)]];
                pu *= ls;
                if (v & u & -u)
                    sz *= ls;
            }
        }
        d->rank[s] = r;
        d->size[s] = sz;
        d->nuni[s] = nu;
        d->puni[s] = pu;
        d->nint[s] = nu - r;
        d->pint[s] = pu / sz;
    }
}

/* Flops of joining disjoint subsets s1 and s2 into s = s1 | s2: the labels
 * of both are those of s minus the ones internal to s1 or to s2. */
static double dp_join_flops(const pf_ctx *c, const pf_dp *d, int s1, int s2)
{
    int s = s1 | s2;
    double f = d->puni[s] / (d->pint[s1] * d->pint[s2]);
    int nu = d->nuni[s] - d->nint[s1] - d->nint[s2];
    if (!isfinite(d->puni[s])) { /* past double range: multiply it out */
        f = 1;
        for (int w = 0; w < d->nw; w++)
            for (uint64_t v = d->legs[s1][w] | d->legs[s2][w]; v; v &= v - 1)
                f *= c->lsize[d->local[64 * w + __builtin_ctzll(v)]];
    }
    return nu > d->rank[s] ? 2 * f : f;
}

/* Is joining s1 and s2 into s better than the best so far? Bounds that
 * need no join flops are tried first: most splits fail them. */
static int dp_try(const pf_ctx *c, pf_dp *d, int s, int s1, int s2)
{
    pf_cost cur = {d->flops[s], d->maxs[s]};
    double lb = d->flops[s1] + d->flops[s2];
    double mx = d->maxs[s1] > d->maxs[s2] ? d->maxs[s1] : d->maxs[s2];
    if (d->size[s] > mx)
        mx = d->size[s];
    if (isfinite(cur.flops)) {
        if (c->minimize == EB_MINIMIZE_FLOPS && lb > cur.flops)
            return 0;
        if (c->minimize == EB_MINIMIZE_SIZE && mx > cur.max_size)
            return 0;
    }
    pf_cost cand = {lb + dp_join_flops(c, d, s1, s2), mx};
    if (isfinite(cur.flops) && !cost_better(c->minimize, cand, cur))
        return 0;
    d->flops[s] = cand.flops;
    d->maxs[s] = cand.max_size;
    d->split[s] = s1;
    return 1;
}

/* The best order of the items under the objective; returns its cost. */
static pf_cost dp_solve(const pf_ctx *c, pf_dp *d)
{
    int full = (1 << d->k) - 1;
    for (int s = 1; s <= full; s++) {
        d->flops[s] = (s & (s - 1)) ? INFINITY : 0;
        d->maxs[s] = 0;
        if (!(s & (s - 1)) || d->rank[s] > EB_MAX_RANK)
            continue;
        /* Each unordered split once: s1 holds the lowest item of s. */
        int low = s & -s, rest = s ^ low;
        for (int sub = 0; sub != rest; sub = (sub - rest) & rest) {
            int s1 = low | sub, s2 = rest ^ sub;
            if (isfinite(d->flops[s1]) && isfinite(d->flops[s2]))
                dp_try(c, d, s, s1, s2);
        }
    }
    return (pf_cost){d->flops[full], d->maxs[full]};
}

/* Rebuild subset s as a subtree; internal ids come from d->inner. */
static int dp_rebuild(pf_tree *t, pf_dp *d, int s, int full, int *next_inner)
{
    if (!(s & (s - 1)))
        return d->items[__builtin_ctz((unsigned)s)];
    int a = dp_rebuild(t, d, d->split[s], full, next_inner);
    int b = dp_rebuild(t, d, s ^ d->split[s], full, next_inner);
    int x = s == full ? d->inner[0] : d->inner[(*next_inner)++];
    t->left[x] = a < b ? a : b;
    t->right[x] = a < b ? b : a;
    t->parent[a] = t->parent[b] = x;
    int r = 0;
    for (int w = 0; w < d->nw; w++)
        for (uint64_t v = d->legs[s][w]; v; v &= v - 1)
            node_legs(t, x)[r++] = d->local[64 * w + __builtin_ctzll(v)];
    t->rank[x] = r;
    t->size[x] = d->size[s];
    return x;
}

/* Re-optimize the subtree under x; 1 if it improved. */
static int reconf_node(const pf_ctx *c, pf_tree *t, int x, int kmax,
                       int by_size, pf_dp *d)
{
    if (dp_gather(c, t, x, kmax, by_size, d) < 3)
        return 0;
    pf_cost old = {0, 0};
    for (int i = 0; i < d->ninner; i++) {
        old.flops += node_flops(c, t, d->inner[i]);
        old.max_size = fmax(old.max_size, t->size[d->inner[i]]);
    }
    dp_subsets(c, t, x, d);
    pf_cost best = dp_solve(c, d);
    if (!isfinite(best.flops) || !cost_better(c->minimize, best, old))
        return 0;
    int next_inner = 1;
    dp_rebuild(t, d, (1 << d->k) - 1, (1 << d->k) - 1, &next_inner);
    /* Whose subtree may now differ: the rebuilt nodes and the ancestors
     * whose region (descendants within kmax - 1 levels) reaches them. */
    for (int i = 0; i < d->ninner; i++)
        d->dirty[d->inner[i]] = 1;
    for (int up = 1, p = t->parent[x]; up < kmax && p >= 0; up++)
        d->dirty[p] = 1, p = t->parent[p];
    return 1;
}

/* Passes over the dirty nodes until neither subtree choice improves. */
static void reconfigure(const pf_ctx *c, pf_tree *t, int kmax, pf_dp *d)
{
    int by_size = 0, idle = 0;
    memset(d->dirty, 1, (size_t)t->num_nodes);
    for (int pass = 0; pass < PF_MAX_PASSES && idle < 2; pass++) {
        int improved = 0;
        for (int x = t->n; x < t->num_nodes; x++) {
            if (!d->dirty[x])
                continue;
            d->dirty[x] = 0;
            improved |= reconf_node(c, t, x, kmax, by_size, d);
        }
        if (!improved) {
            idle++;
            by_size = !by_size;
            memset(d->dirty, 1, (size_t)t->num_nodes);
        } else {
            idle = 0;
        }
    }
}

/* ---- from tree to linear path --------------------------------------------- */

/* Internal nodes in an order where children come first, smallest id first
 * among the ready ones (the greedy order where nothing was reconfigured). */
static int tree_order(const pf_tree *t, int *order)
{
    int n = t->n, m = t->num_nodes - n, len = 0, cnt = 0;
    int *pending = calloc((size_t)(m ? m : 1), sizeof *pending);
    int *heap = malloc((size_t)(m ? m : 1) * sizeof *heap);
    if (!pending || !heap) {
        free(pending);
        free(heap);
        return -1;
    }
    for (int x = n; x < t->num_nodes; x++) {
        pending[x - n] = (t->left[x] >= n) + (t->right[x] >= n);
        if (!pending[x - n]) {
            int i = len++;
            for (; i > 0 && heap[(i - 1) / 2] > x; i = (i - 1) / 2)
                heap[i] = heap[(i - 1) / 2];
            heap[i] = x;
        }
    }
    while (len > 0) {
        int x = heap[0], last = heap[--len], i = 0;
        for (int k; (k = 2 * i + 1) < len; i = k) {
            if (k + 1 < len && heap[k + 1] < heap[k])
                k++;
            if (heap[k] >= last)
                break;
            heap[i] = heap[k];
        }
        heap[i] = last;
        order[cnt++] = x;
        int p = t->parent[x];
        if (p >= 0 && --pending[p - n] == 0) {
            int j = len++;
            for (; j > 0 && heap[(j - 1) / 2] > p; j = (j - 1) / 2)
                heap[j] = heap[(j - 1) / 2];
            heap[j] = p;
        }
    }
    free(pending);
    free(heap);
    return cnt == m ? 0 : -1;
}

static int list_remove(int *live, int *nlive, int node)
{
    for (int i = 0; i < *nlive; i++)
        if (live[i] == node) {
            memmove(live + i, live + i + 1,
                    (size_t)(*nlive - i - 1) * sizeof *live);
            (*nlive)--;
            return i;
        }
    return -1;
}

/* The linear steps of a tree (DESIGN 3.2), pairs sorted i < j. */
static int tree_to_steps(const pf_tree *t, eb_pair *steps)
{
    int n = t->n, m = n - 1, nlive = n;
    int *order = malloc((size_t)(m ? m : 1) * sizeof *order);
    int *live = malloc((size_t)n * sizeof *live);
    int rc = order && live ? tree_order(t, order) : -1;
    for (int k = 0; k < n && !rc; k++)
        live[k] = k;
    for (int s = 0; s < m && !rc; s++) {
        int x = order[s];
        /* Positions are taken before either operand is removed. */
        int pa = -1, pb = -1;
        for (int i = 0; i < nlive; i++) {
            if (live[i] == t->left[x])
                pa = i;
            if (live[i] == t->right[x])
                pb = i;
        }
        if (pa < 0 || pb < 0) {
            rc = -1;
            break;
        }
        steps[s].i = pa < pb ? pa : pb;
        steps[s].j = pa < pb ? pb : pa;
        list_remove(live, &nlive, t->left[x]);
        list_remove(live, &nlive, t->right[x]);
        live[nlive++] = x;
    }
    free(order);
    free(live);
    return rc;
}

/* ---- the search ----------------------------------------------------------- */

/* The search: the trials' best trees (best first), the work tree of the
 * greedy runs, and the reconfiguration scratch. */
typedef struct {
    const pf_ctx *c;
    int keep, kmax, nkept;
    pf_tree **kept;     /* keep + 1 trees; kept[keep] is the work tree */
    pf_cost *cost;
    pf_dp dp;
} pf_search;

static int auto_trials(int n)
{
    if (n <= 128)
        return 256;
    if (n <= 256)
        return 64;
    if (n <= 1024)
        return 16;
    return 4;
}

/* Keep a copy of the work tree if it is among the best `keep`. */
static void keep_work(pf_search *s, pf_cost k)
{
    int pos = s->nkept;
    while (pos > 0 && cost_better(s->c->minimize, k, s->cost[pos - 1]))
        pos--;
    if (pos >= s->keep)
        return;
    int last = s->nkept < s->keep ? s->nkept++ : s->keep - 1;
    pf_tree *spare = s->kept[last];
    for (int i = last; i > pos; i--) {
        s->kept[i] = s->kept[i - 1];
        s->cost[i] = s->cost[i - 1];
    }
    s->kept[pos] = spare;
    s->cost[pos] = k;
    tree_copy(spare, s->kept[s->keep]);
}

/* Greedy trials, each polished by a cheap reconfiguration (a tree's raw
 * greedy cost predicts its polished cost poorly). Trial 0 is the plain
 * greedy; the others draw costmod log-uniform in [0.5, 16] and the
 * temperature log-uniform in [0.001, 1]. */
static eb_status run_trials(pf_search *s, const eb_pathfind_opts *o,
                            eb_error *err)
{
    pf_greedy g;
    pf_tree *work = s->kept[s->keep];
    if (greedy_init(&g, s->c, work)) {
        greedy_free(&g);
        return eb_error_set(err, EB_ERR_NOMEM, "path: out of memory");
    }
    int trials = o->trials > 0 ? o->trials : auto_trials(s->c->n);
    uint64_t seed = o->seed ? o->seed : PF_DEFAULT_SEED;
    eb_status st = EB_OK;
    for (int trial = 0; trial < trials && !st; trial++) {
        g.rng = seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(trial + 1));
        g.costmod = 1;
        g.temperature = 0;
        if (trial > 0) {
            g.costmod = 0.5 * pow(32, uniform01(&g.rng));
            g.temperature = pow(10, -3 + 3 * uniform01(&g.rng));
        }
        int rc = greedy_run(&g);
        if (rc == -2)
            st = eb_error_set(err, EB_ERR_NOMEM, "path: out of memory");
        if (rc != 0)
            continue;
        if (s->kmax >= 3)
            reconfigure(s->c, work, PF_TRIAL_SUBTREE, &s->dp);
        keep_work(s, tree_cost(s->c, work));
    }
    greedy_free(&g);
    if (!st && s->nkept == 0)
        st = eb_error_set(err, EB_ERR_UNSUPPORTED,
                          "path: found no contraction order whose "
                          "intermediates stay within %d labels", EB_MAX_RANK);
    return st;
}

/* Reconfigure the kept trees with full-size subtrees; index of the best. */
static int improve_kept(pf_search *s)
{
    int best = 0;
    for (int i = 0; i < s->nkept; i++) {
        if (s->kmax >= 3) {
            reconfigure(s->c, s->kept[i], s->kmax, &s->dp);
            s->cost[i] = tree_cost(s->c, s->kept[i]);
        }
        if (cost_better(s->c->minimize, s->cost[i], s->cost[best]))
            best = i;
    }
    return best;
}

static eb_status ctx_init(pf_ctx *c, const eb_instance *inst, eb_minimize m)
{
    c->n = inst->num_tensors;
    c->num_labels = inst->num_labels;
    c->minimize = m;
    size_t nl = (size_t)(inst->num_labels ? inst->num_labels : 1);
    c->lsize = malloc(nl * sizeof *c->lsize);
    c->in_output = calloc(nl, 1);
    if (!c->lsize || !c->in_output)
        return EB_ERR_NOMEM;
    for (int l = 0; l < inst->num_labels; l++)
        c->lsize[l] = (double)inst->label_size[l];
    for (int a = 0; a < inst->output.rank; a++)
        c->in_output[inst->output.ids[a]] = 1;
    return EB_OK;
}

static int search_init(pf_search *s, const pf_ctx *c, const eb_instance *inst,
                       const eb_pathfind_opts *o)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    s->keep = o->keep > 0 ? o->keep : PF_DEFAULT_KEEP;
    s->kmax = o->subtree > 0 ? o->subtree : PF_DEFAULT_SUBTREE;
    if (s->kmax > EB_PATHFIND_MAX_SUBTREE)
        s->kmax = EB_PATHFIND_MAX_SUBTREE;
    s->kept = calloc((size_t)s->keep + 1, sizeof *s->kept);
    s->cost = calloc((size_t)s->keep, sizeof *s->cost);
    int ok = s->kept && s->cost && !dp_init(&s->dp, c->num_labels, 2 * c->n - 1);
    for (int i = 0; ok && i <= s->keep; i++) {
        ok = (s->kept[i] = tree_alloc(c->n)) != NULL;
        if (ok)
            tree_set_leaves(c, inst, s->kept[i]);
    }
    return ok ? 0 : -1;
}

/* Search for the best tree; *out is one of the kept trees (caller frees). */
static eb_status search(const pf_ctx *c, const eb_instance *inst,
                        const eb_pathfind_opts *o, pf_tree **out, eb_error *err)
{
    pf_search s;
    eb_status st = EB_OK;
    if (search_init(&s, c, inst, o))
        st = eb_error_set(err, EB_ERR_NOMEM, "path: out of memory");
    if (!st)
        st = run_trials(&s, o, err);
    int best = st ? -1 : improve_kept(&s);
    for (int i = 0; s.kept && i <= s.keep; i++)
        if (i != best)
            tree_free(s.kept[i]);
    *out = best >= 0 ? s.kept[best] : NULL;
    free(s.kept);
    free(s.cost);
    dp_free(&s.dp);
    return st;
}

/* Recompute the costs with the schedule and cross-check the tree's own. */
static eb_status finish_path(const pf_ctx *c, const eb_instance *inst,
                             const pf_tree *t, eb_path *out, eb_error *err)
{
    eb_schedule *s;
    eb_status st = eb_schedule_build(inst, out, &s, err);
    if (st)
        return st;
    out->log10_flops = s->log10_flops;
    out->log2_size = s->log2_size;
    pf_cost k = t ? tree_cost(c, t) : (pf_cost){0, 0};
    if (fabs(s->total_flops - k.flops) > 1e-9 * fmax(1, k.flops))
        st = eb_error_set(err, EB_ERR_INTERNAL,
                          "path: the path finder's flops (%g) disagree with "
                          "the schedule's (%g)", k.flops, s->total_flops);
    eb_schedule_destroy(s);
    return st;
}

eb_status eb_pathfind(const eb_instance *inst, const eb_pathfind_opts *opts,
                      const char *strategy, eb_path *out, eb_error *err)
{
    eb_pathfind_opts dflt;
    if (!opts) {
        eb_pathfind_opts_default(&dflt);
        opts = &dflt;
    }
    memset(out, 0, sizeof *out);
    pf_ctx c = {0};
    pf_tree *best = NULL;
    int n = inst->num_tensors;
    eb_status st = ctx_init(&c, inst, opts->minimize);
    out->strategy = strdup(strategy);
    out->steps = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *out->steps);
    if (st || !out->strategy || !out->steps)
        st = eb_error_set(err, EB_ERR_NOMEM, "path: out of memory");
    if (!st && n > 1)
        st = search(&c, inst, opts, &best, err);
    if (!st && n > 1 && tree_to_steps(best, out->steps))
        st = eb_error_set(err, EB_ERR_INTERNAL,
                          "path: contraction tree is not a tree");
    if (!st) {
        out->num_steps = n - 1;
        st = finish_path(&c, inst, best, out, err);
    }
    tree_free(best);
    free(c.lsize);
    free(c.in_output);
    if (st)
        eb_path_free(out);
    return st;
}
