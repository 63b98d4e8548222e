/* lmgen: structure, labels, limits and JSON of the language-model networks. */
#include "lmgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* The label alphabet, in creation order: ASCII letters, then further Unicode
 * letters (no digits, punctuation or symbols such as U+00D7 and U+00F7). */
static const struct { uint32_t lo, hi; } label_ranges[] = {
    {'a', 'z'},       {'A', 'Z'},       {0x00C0, 0x00D6}, {0x00D8, 0x00F6},
    {0x00F8, 0x024F}, {0x0391, 0x03A1}, {0x03A3, 0x03A9}, {0x03B1, 0x03C9},
    {0x0410, 0x044F}, {0x4E00, 0x9FFF},
};

uint32_t eb_lm_label_cp(int k)
{
    if (k < 0)
        return 0;
    for (size_t r = 0; r < sizeof label_ranges / sizeof *label_ranges; r++) {
        int n = (int)(label_ranges[r].hi - label_ranges[r].lo + 1);
        if (k < n)
            return label_ranges[r].lo + (uint32_t)k;
        k -= n;
    }
    return 0;
}

int eb_lm_tensors_per_copy(int depth) { return (4 << depth) - depth - 3; }
int eb_lm_observables(int depth) { return 2 << depth; }
int eb_lm_labels_per_copy(int depth) { return (8 << depth) - 2 * depth - 6; }

int eb_lm_num_operands(int depth)
{
    return 2 * eb_lm_tensors_per_copy(depth) + 2 * eb_lm_observables(depth);
}

/* a * b, saturating at INT64_MAX (all arguments are >= 0). */
static int64_t mul_sat(int64_t a, int64_t b)
{
    if (a != 0 && b > INT64_MAX / a)
        return INT64_MAX;
    return a * b;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static const char *human_bytes(int64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                        "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    if (bytes == INT64_MAX)
        snprintf(buf, cap, "more than 8 EiB");
    else
        snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}

/* The operand kinds of one copy (DESIGN of issue 4), with their counts, so
 * the limits are checked before anything is allocated. */
typedef struct {
    const char *shape;
    int64_t count;
    int64_t elems;
} lm_kind;

static int lm_kinds(const eb_lm_params *p, lm_kind *k)
{
    int64_t h = p->hidden, v = p->vocab, d2 = (int64_t)1 << p->depth;
    int64_t hh = mul_sat(h, h);
    lm_kind kinds[] = {
        {"[H, H]", 1, hh},
        {"[H, H, H]", 2 * d2 - 4, mul_sat(hh, h)},
        {"[H, V, H]", 2, mul_sat(hh, v)},
        {"[H, H, H, H]", d2 - p->depth - 1, mul_sat(hh, hh)},
        {"[H, H, V, V]", d2 - 1, mul_sat(hh, mul_sat(v, v))},
        {"[B, V]", 2 * d2, mul_sat(p->batch, v)},
    };
    memcpy(k, kinds, sizeof kinds);
    return (int)(sizeof kinds / sizeof *kinds);
}

static eb_status check_range(const char *opt, int64_t v, int64_t hi,
                             eb_error *err)
{
    if (v < 1 || v > hi)
        return eb_error_set(err, EB_ERR_USAGE,
                            "%s: %lld out of range (expected 1..%lld)", opt,
                            (long long)v, (long long)hi);
    return EB_OK;
}

eb_status eb_lm_validate(const eb_lm_params *p, eb_error *err)
{
    eb_status st;
    if ((st = check_range("--depth", p->depth, EB_LM_MAX_DEPTH, err)) ||
        (st = check_range("--hidden", p->hidden, EB_LM_MAX_EXTENT, err)) ||
        (st = check_range("--vocab", p->vocab, EB_LM_MAX_EXTENT, err)) ||
        (st = check_range("--batch", p->batch, EB_LM_MAX_EXTENT, err)))
        return st;
    if ((unsigned)p->dt >= EB_DTYPE_COUNT)
        return eb_error_set(err, EB_ERR_USAGE, "--dtype: not a dtype");
    lm_kind k[8];
    int nk = lm_kinds(p, k);
    int64_t total = 0, elem = (int64_t)eb_dtype_size(p->dt);
    char b1[32], b2[32];
    for (int i = 0; i < nk; i++) {
        if (k[i].count <= 0)
            continue;
        int64_t bytes = mul_sat(k[i].elems, elem);
        if (bytes > EB_LM_MAX_OPERAND_BYTES)
            return eb_error_set(
                err, EB_ERR_INVALID,
                "--hidden %lld --vocab %lld --batch %lld: a %s operand would "
                "take %s (limit of gen lm: %s per operand)",
                (long long)p->hidden, (long long)p->vocab, (long long)p->batch,
                k[i].shape, human_bytes(bytes, b1, sizeof b1),
                human_bytes(EB_LM_MAX_OPERAND_BYTES, b2, sizeof b2));
        total = add_sat(total, mul_sat(2 * k[i].count, bytes));
    }
    if (total > EB_LM_MAX_INPUT_BYTES)
        return eb_error_set(
            err, EB_ERR_INVALID,
            "--depth %d --hidden %lld --vocab %lld --batch %lld: the inputs "
            "would take %s in all (limit of gen lm: %s)", p->depth,
            (long long)p->hidden, (long long)p->vocab, (long long)p->batch,
            human_bytes(total, b1, sizeof b1),
            human_bytes(EB_LM_MAX_INPUT_BYTES, b2, sizeof b2));
    return EB_OK;
}

const char *eb_lm_default_name(const eb_lm_params *p, char *buf, int cap)
{
    static const struct { int64_t vocab; int levels; int64_t batch; } pub[] = {
        {11, 3, 1100}, {11, 4, 1900}, {11, 5, 3500}, {7, 3, 1196}, {7, 4, 1996},
    };
    char data[32];
    if (p->vocab == 11)
        snprintf(data, sizeof data, "sentence");
    else if (p->vocab == 7)
        snprintf(data, sizeof data, "brackets");
    else
        snprintf(data, sizeof data, "v%lld", (long long)p->vocab);
    int public_batch = 0;
    for (size_t i = 0; i < sizeof pub / sizeof *pub; i++)
        if (pub[i].vocab == p->vocab && pub[i].levels == p->depth + 1 &&
            pub[i].batch == p->batch)
            public_batch = 1;
    int n = snprintf(buf, (size_t)cap, "lm_batch_likelihood_%s_%d_%lld%c",
                     data, p->depth + 1, (long long)p->hidden,
                     eb_dtype_is_complex(p->dt) ? 'c' : 'd');
    if (!public_batch && n > 0 && n < cap)
        n += snprintf(buf + n, (size_t)(cap - n), "_b%lld",
                      (long long)p->batch);
    /* The public set has float64 and complex128 lm instances only. */
    if (p->dt != EB_F64 && p->dt != EB_C128 && n > 0 && n < cap)
        snprintf(buf + n, (size_t)(cap - n), "_%s", eb_dtype_name(p->dt));
    return buf;
}

/* One operand as label creation numbers (rank <= 4). */
typedef struct {
    int rank;
    int ids[4];
} lm_term;

/*
 * Build one copy into t[0..tensors-1] with labels base, base+1, ... in
 * creation order; row is scratch for 2^(depth+1) legs. Returns the next
 * free label.
 */
static int build_copy(int depth, int base, lm_term *t, int *row, int *row2)
{
    int next = base, nt = 0, width = 2;
    row[0] = next++;
    row[1] = next++;
    t[nt++] = (lm_term){2, {row[0], row[1], 0, 0}};
    for (int level = 1; level <= depth; level++) {
        for (int x = 0; x < width; x++) {
            int y = next++, z = next++;
            t[nt++] = (lm_term){3, {row[x], y, z, 0}};
            row2[2 * x] = y;
            row2[2 * x + 1] = z;
        }
        width *= 2;
        /* Pairs (p, p+1), p odd, join two different 3rd-order tensors; the
         * first and last leg of the row stay single. */
        for (int p = 1; p + 1 < width - 1; p += 2) {
            int u = next++, v = next++;
            t[nt++] = (lm_term){4, {row2[p], row2[p + 1], u, v}};
            row2[p] = u;
            row2[p + 1] = v;
        }
        memcpy(row, row2, (size_t)width * sizeof *row);
    }
    return next;
}

/* Lay out the whole instance as terms: copy 1, its tokens, copy 2, its
 * tokens. sizes[l] gets each label's extent. Returns the label count. */
static int layout_terms(const eb_lm_params *p, lm_term *terms, int *row,
                        int *row2, int *count, int64_t *sizes)
{
    int d = p->depth, T = eb_lm_tensors_per_copy(d);
    int N = eb_lm_observables(d), L = eb_lm_labels_per_copy(d);
    build_copy(d, 0, terms, row, row2);
    memset(count, 0, (size_t)L * sizeof *count);
    for (int k = 0; k < T; k++)
        for (int a = 0; a < terms[k].rank; a++)
            count[terms[k].ids[a]]++;
    int batch = L, nt = T;
    for (int l = 0; l < L; l++)
        if (count[l] == 1)
            terms[nt++] = (lm_term){2, {batch, l, 0, 0}};
    for (int k = 0; k < T + N; k++) {
        lm_term c = terms[k];
        for (int a = 0; a < c.rank; a++)
            if (c.ids[a] != batch)
                c.ids[a] += L + 1;
        terms[T + N + k] = c;
    }
    for (int l = 0; l < L; l++) {
        sizes[l] = count[l] == 1 ? p->vocab : p->hidden;
        sizes[L + 1 + l] = sizes[l];
    }
    sizes[batch] = p->batch;
    return 2 * L + 1;
}

static char *format_terms(const lm_term *terms, int n, int batch)
{
    size_t cap = (size_t)n * (4 * 4 + 1) + 16, len = 0;
    char *fs = malloc(cap);
    if (!fs)
        return NULL;
    for (int k = 0; k < n; k++) {
        for (int a = 0; a < terms[k].rank; a++)
            len += eb_utf8_encode(eb_lm_label_cp(terms[k].ids[a]), fs + len);
        fs[len++] = k + 1 < n ? ',' : '-';
    }
    fs[len++] = '>';
    len += eb_utf8_encode(eb_lm_label_cp(batch), fs + len);
    fs[len] = '\0';
    return fs;
}

static eb_status fill_network(const eb_lm_params *p, eb_lm_network *net,
                              eb_error *err)
{
    int d = p->depth, n = eb_lm_num_operands(d), L = eb_lm_labels_per_copy(d);
    int width = eb_lm_observables(d);
    lm_term *terms = malloc((size_t)n * sizeof *terms);
    int *row = malloc((size_t)width * 2 * sizeof *row);
    int *count = malloc((size_t)L * sizeof *count);
    int64_t *sizes = malloc((size_t)(2 * L + 1) * sizeof *sizes);
    net->ranks = calloc((size_t)n, sizeof *net->ranks);
    net->shapes = calloc((size_t)n, sizeof *net->shapes);
    eb_status st = EB_OK;
    if (!terms || !row || !count || !sizes || !net->ranks || !net->shapes) {
        st = eb_error_set(err, EB_ERR_NOMEM, "gen lm: out of memory");
        goto done;
    }
    net->num_tensors = n;
    net->num_labels = layout_terms(p, terms, row, row + width, count, sizes);
    for (int k = 0; k < n && !st; k++) {
        net->ranks[k] = terms[k].rank;
        net->shapes[k] = malloc(4 * sizeof(int64_t));
        if (!net->shapes[k]) {
            st = eb_error_set(err, EB_ERR_NOMEM, "gen lm: out of memory");
            break;
        }
        int64_t elems = 1;
        for (int a = 0; a < terms[k].rank; a++) {
            net->shapes[k][a] = sizes[terms[k].ids[a]];
            elems = mul_sat(elems, net->shapes[k][a]);
        }
        int64_t bytes = mul_sat(elems, (int64_t)eb_dtype_size(p->dt));
        net->input_bytes = add_sat(net->input_bytes, bytes);
        if (bytes > net->max_operand_bytes)
            net->max_operand_bytes = bytes;
    }
    if (!st && !(net->format_string = format_terms(terms, n, L)))
        st = eb_error_set(err, EB_ERR_NOMEM, "gen lm: out of memory");
done:
    free(terms);
    free(row);
    free(count);
    free(sizes);
    return st;
}

static eb_status describe(const eb_lm_params *p, const char *name,
                          eb_lm_network *net, eb_error *err)
{
    char buf[512], nb[256];
    if (!name)
        name = eb_lm_default_name(p, nb, sizeof nb);
    net->name = strdup(name);
    snprintf(buf, sizeof buf,
             "Language-model likelihood: squared amplitude of a MERA-like tree "
             "tensor network (depth %d, hidden %lld, vocabulary %lld, %s) on "
             "a batch of %lld token windows, in the structure of the public "
             "einsum benchmark's lm_batch_likelihood instances",
             p->depth, (long long)p->hidden, (long long)p->vocab,
             eb_dtype_name(p->dt), (long long)p->batch);
    net->intent = strdup(buf);
    snprintf(buf, sizeof buf,
             "generated by einsum-bench gen lm --depth %d --hidden %lld "
             "--vocab %lld --batch %lld%s%s; %d operands: 2 copies of %d "
             "network tensors, each followed by %d [batch, vocab] token "
             "matrices", p->depth, (long long)p->hidden, (long long)p->vocab,
             (long long)p->batch, p->dt ? " --dtype " : "",
             p->dt ? eb_dtype_name(p->dt) : "", eb_lm_num_operands(p->depth),
             eb_lm_tensors_per_copy(p->depth), eb_lm_observables(p->depth));
    net->notes = strdup(buf);
    if (!net->name || !net->intent || !net->notes)
        return eb_error_set(err, EB_ERR_NOMEM, "gen lm: out of memory");
    return EB_OK;
}

eb_status eb_lm_build(const eb_lm_params *p, const char *name,
                      eb_lm_network **out, eb_error *err)
{
    *out = NULL;
    eb_status st = eb_lm_validate(p, err);
    if (st)
        return st;
    if (name && !name[0])
        return eb_error_set(err, EB_ERR_USAGE, "--name: empty name");
    eb_lm_network *net = calloc(1, sizeof *net);
    if (!net)
        return eb_error_set(err, EB_ERR_NOMEM, "gen lm: out of memory");
    net->dt = p->dt;
    st = describe(p, name, net, err);
    if (!st)
        st = fill_network(p, net, err);
    if (st) {
        eb_lm_network_destroy(net);
        return st;
    }
    *out = net;
    return EB_OK;
}

void eb_lm_network_destroy(eb_lm_network *net)
{
    if (!net)
        return;
    if (net->shapes)
        for (int k = 0; k < net->num_tensors; k++)
            free(net->shapes[k]);
    free(net->shapes);
    free(net->ranks);
    free(net->format_string);
    free(net->name);
    free(net->intent);
    free(net->notes);
    free(net);
}

eb_status eb_lm_to_instance(const eb_lm_network *net, const char *file,
                            eb_instance **out, eb_error *err)
{
    eb_status st = eb_instance_build(file, net->name, net->format_string,
                                     eb_dtype_name(net->dt), net->num_tensors,
                                     net->shapes,
                                     net->ranks, out, err);
    if (st)
        return st;
    if (!((*out)->intent = strdup(net->intent))) {
        eb_instance_destroy(*out);
        *out = NULL;
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    }
    return EB_OK;
}

void eb_lm_write_json(const eb_lm_network *net, eb_jw *w)
{
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "name", net->name);
    eb_jw_str(w, "intent", net->intent);
    eb_jw_str(w, "notes", net->notes);
    eb_jw_str(w, "format_string", net->format_string);
    eb_jw_arr_begin(w, "shapes");
    for (int k = 0; k < net->num_tensors; k++) {
        eb_jw_arr_begin_inline(w, NULL);
        for (int a = 0; a < net->ranks[k]; a++)
            eb_jw_int(w, NULL, net->shapes[k][a]);
        eb_jw_arr_end(w);
    }
    eb_jw_arr_end(w);
    eb_jw_str(w, "dtype", eb_dtype_name(net->dt));
    eb_jw_int(w, "num_tensors", net->num_tensors);
    eb_jw_obj_end(w);
}
