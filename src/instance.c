/* instance: format-string parsing, label table, shape and path validation. */
#include "instance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Growable label table used while parsing: code points by id, and an
 * open-addressing hash (code point -> id + 1, 0 = empty) so that a lookup
 * costs O(1) whatever the number of labels. */
typedef struct {
    int count, cap;
    uint32_t *cp;
    int *slot;          /* hash slots, nslots a power of two */
    size_t nslots;
} label_table;

static size_t label_hash(uint32_t cp, size_t nslots)
{
    return (size_t)((cp * 2654435761u) ^ (cp >> 16)) & (nslots - 1);
}

/* Rebuild the hash with nslots slots; -1 when out of memory. */
static int label_rehash(label_table *t, size_t nslots)
{
    int *slot = calloc(nslots, sizeof *slot);
    if (!slot)
        return -1;
    for (int i = 0; i < t->count; i++) {
        size_t h = label_hash(t->cp[i], nslots);
        while (slot[h])
            h = (h + 1) & (nslots - 1);
        slot[h] = i + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->nslots = nslots;
    return 0;
}

static int label_lookup(label_table *t, uint32_t cp, int add)
{
    if (t->nslots) {
        for (size_t h = label_hash(cp, t->nslots); t->slot[h];
             h = (h + 1) & (t->nslots - 1))
            if (t->cp[t->slot[h] - 1] == cp)
                return t->slot[h] - 1;
    }
    if (!add)
        return -1;
    if (t->count == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        uint32_t *p = realloc(t->cp, (size_t)cap * sizeof *p);
        if (!p)
            return -2;
        t->cp = p;
        t->cap = cap;
    }
    t->cp[t->count++] = cp;
    /* Keep the load factor at most 1/2. */
    if ((size_t)t->count * 2 > t->nslots) {
        if (label_rehash(t, t->nslots ? 2 * t->nslots : 128)) {
            t->count--;
            return -2;
        }
    } else {
        size_t h = label_hash(cp, t->nslots);
        while (t->slot[h])
            h = (h + 1) & (t->nslots - 1);
        t->slot[h] = t->count;
    }
    return t->count - 1;
}

/* Printable labels only: no C0/C1 controls, no bidirectional or other
 * invisible format characters that would make a printed term lie. */
static int valid_label(uint32_t cp)
{
    if (cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD ||
        (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
        (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF)
        return 0;
    return cp != ',' && cp != '-' && cp != '>' && cp != '.';
}

/* Parse the terms of one side ("ab,c" or "ab") into terms[], count in *n. */
static eb_status parse_terms(const char *file, const char *s, size_t len,
                             int is_output, label_table *t, eb_term **terms,
                             int *n, eb_error *err)
{
    int cap = 8, count = 0;
    eb_term *ts = calloc((size_t)cap, sizeof *ts);
    int ids[EB_MAX_RANK];
    int rank = 0;
    eb_status st = EB_OK;
    if (!ts)
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    size_t pos = 0;
    for (;;) {
        int end_term = pos == len || s[pos] == ',';
        if (end_term) {
            if (count == cap) {
                cap *= 2;
                eb_term *p = realloc(ts, (size_t)cap * sizeof *p);
                if (!p) {
                    st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
                    break;
                }
                ts = p;
            }
            ts[count].rank = rank;
            ts[count].ids = malloc((size_t)(rank ? rank : 1) * sizeof(int));
            if (!ts[count].ids) {
                st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
                break;
            }
            memcpy(ts[count].ids, ids, (size_t)rank * sizeof(int));
            count++;
            rank = 0;
            if (pos == len)
                break;
            if (is_output) {
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: format_string: ',' in the output term",
                                  file);
                break;
            }
            pos++;
            continue;
        }
        uint32_t cp;
        size_t used = eb_utf8_decode(s + pos, len - pos, &cp);
        if (used == 0) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: format_string: invalid UTF-8 at byte %zu",
                              file, pos);
            break;
        }
        if (!valid_label(cp)) {
            char b[8];
            if (cp >= 0x20 && cp < 0x7F)
                snprintf(b, sizeof b, "'%c'", (char)cp);
            else
                snprintf(b, sizeof b, "U+%04X", (unsigned)cp);
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: format_string: %s is not a valid label "
                              "(expected 'in,in,...->out' with letter labels)",
                              file, b);
            break;
        }
        if (rank == EB_MAX_RANK) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: format_string: term %d has more than %d labels",
                              file, count, EB_MAX_RANK);
            break;
        }
        int id = label_lookup(t, cp, !is_output);
        if (id == -2) {
            st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
            break;
        }
        if (id < 0) {
            char b[8];
            eb_utf8_encode(cp, b);
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: format_string: output label '%s' appears in "
                              "no input", file, b);
            break;
        }
        if (is_output) {
            for (int r = 0; r < rank; r++)
                if (ids[r] == id) {
                    char b[8];
                    eb_utf8_encode(cp, b);
                    st = eb_error_set(err, EB_ERR_INVALID,
                                      "%s: format_string: output label '%s' "
                                      "repeated", file, b);
                }
            if (st)
                break;
        }
        ids[rank++] = id;
        pos += used;
    }
    if (st) {
        for (int k = 0; k < count; k++)
            free(ts[k].ids);
        free(ts);
        return st;
    }
    *terms = ts;
    *n = count;
    return EB_OK;
}

static eb_status check_shapes(eb_instance *inst, int64_t *const *shapes,
                              const int *ranks, eb_error *err)
{
    const char *file = inst->file;
    int *first_op = malloc((size_t)inst->num_labels * 2 * sizeof(int));
    if (!first_op)
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    int *first_ax = first_op + inst->num_labels;
    for (int l = 0; l < inst->num_labels; l++)
        first_op[l] = -1;
    eb_status st = EB_OK;
    for (int k = 0; k < inst->num_tensors && !st; k++) {
        const eb_term *t = &inst->inputs[k];
        if (ranks[k] != t->rank) {
            char b[EB_MAX_RANK * 4 + 1];
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: shapes[%d]: has %d dimensions but term %d "
                              "of format_string ('%s') has %d labels", file, k,
                              ranks[k], k,
                              eb_term_str(inst, t->ids, t->rank, b, sizeof b),
                              t->rank);
            break;
        }
        int64_t elems = 1;
        for (int a = 0; a < t->rank; a++) {
            int64_t sz = shapes[k][a];
            int l = t->ids[a];
            char lb[8];
            if (sz < 1) {
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: shapes[%d][%d]: size %lld (expected a "
                                  "positive integer)", file, k, a, (long long)sz);
                break;
            }
            if (sz > EB_MAX_ELEMS || elems > EB_MAX_ELEMS / sz) {
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: shapes[%d]: more than 2^40 elements "
                                  "(size overflow)", file, k);
                break;
            }
            elems *= sz;
            if (first_op[l] < 0) {
                first_op[l] = k;
                first_ax[l] = a;
                inst->label_size[l] = sz;
            } else if (inst->label_size[l] != sz) {
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: shapes[%d][%d]: label '%s' has size %lld "
                                  "here but %lld at shapes[%d][%d]", file, k, a,
                                  eb_label_str(inst, l, lb), (long long)sz,
                                  (long long)inst->label_size[l], first_op[l],
                                  first_ax[l]);
                break;
            }
        }
    }
    free(first_op);
    return st;
}

eb_status eb_instance_build(const char *file, const char *name,
                            const char *format_string, const char *dtype,
                            int num_tensors, int64_t *const *shapes,
                            const int *ranks, eb_instance **out, eb_error *err)
{
    *out = NULL;
    const char *arrow = strstr(format_string, "->");
    if (!arrow)
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: format_string: no '->' (expected "
                            "'in,in,...->out')", file);
    if (strstr(arrow + 2, "->"))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: format_string: more than one '->'", file);
    eb_dtype dt;
    if (eb_dtype_parse(dtype, &dt) != 0)
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: dtype: '%s' is not a dtype (expected "
                            "float64, float32, complex128 or complex64)",
                            file, dtype);
    eb_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    inst->dt = dt;
    inst->file = strdup(file);
    inst->name = strdup(name);
    inst->format_string = strdup(format_string);
    inst->dtype = strdup(dtype);
    eb_status st = EB_OK;
    label_table t = {0};
    if (!inst->file || !inst->name || !inst->format_string || !inst->dtype) {
        st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
        goto fail;
    }
    int nterms = 0;
    st = parse_terms(file, format_string, (size_t)(arrow - format_string), 0,
                     &t, &inst->inputs, &nterms, err);
    if (st)
        goto fail;
    inst->num_tensors = nterms;
    if (nterms != num_tensors) {
        st = eb_error_set(err, EB_ERR_INVALID,
                          "%s: num_tensors: %d, but format_string has %d "
                          "operands", file, num_tensors, nterms);
        goto fail;
    }
    eb_term *outs = NULL;
    int nout = 0;
    st = parse_terms(file, arrow + 2, strlen(arrow + 2), 1, &t, &outs, &nout,
                     err);
    if (st)
        goto fail;
    inst->output = outs[0];
    free(outs);
    inst->num_labels = t.count;
    inst->label_cp = t.cp;
    t.cp = NULL;
    free(t.slot);
    t.slot = NULL;
    inst->label_size = calloc((size_t)(t.count ? t.count : 1), sizeof(int64_t));
    if (!inst->label_size) {
        st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
        goto fail;
    }
    st = check_shapes(inst, shapes, ranks, err);
    if (st)
        goto fail;
    int64_t out_elems = 1;
    for (int a = 0; a < inst->output.rank; a++) {
        int64_t sz = inst->label_size[inst->output.ids[a]];
        if (out_elems > EB_MAX_ELEMS / sz) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: format_string: output has more than 2^40 "
                              "elements", file);
            goto fail;
        }
        out_elems *= sz;
    }
    *out = inst;
    return EB_OK;
fail:
    free(t.cp);
    free(t.slot);
    eb_instance_destroy(inst);
    return st;
}

void eb_instance_destroy(eb_instance *inst)
{
    if (!inst)
        return;
    if (inst->inputs)
        for (int k = 0; k < inst->num_tensors; k++)
            free(inst->inputs[k].ids);
    free(inst->inputs);
    free(inst->output.ids);
    free(inst->label_cp);
    free(inst->label_size);
    free(inst->name);
    free(inst->file);
    free(inst->format_string);
    free(inst->dtype);
    free(inst->intent);
    eb_pathset_destroy(inst->inline_paths);
    free(inst);
}

int64_t eb_instance_operand_elems(const eb_instance *inst, int k)
{
    int64_t n = 1;
    for (int a = 0; a < inst->inputs[k].rank; a++)
        n *= inst->label_size[inst->inputs[k].ids[a]];
    return n;
}

const char *eb_label_str(const eb_instance *inst, int id, char *buf)
{
    if (eb_utf8_encode(inst->label_cp[id], buf) == 0)
        strcpy(buf, "?");
    return buf;
}

const char *eb_term_str(const eb_instance *inst, const int *ids, int rank,
                        char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int a = 0; a < rank; a++) {
        char b[8];
        size_t n = eb_utf8_encode(inst->label_cp[ids[a]], b);
        if (len + n + 1 > cap)
            break;
        memcpy(buf + len, b, n + 1);
        len += n;
    }
    return buf;
}

eb_status eb_path_validate(const eb_path *path, int num_tensors,
                           const char *file, const char *field, eb_error *err)
{
    if (path->num_steps != num_tensors - 1)
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s.path: %d steps, but %d operands need "
                            "exactly %d to end in one operand", file, field,
                            path->num_steps, num_tensors, num_tensors - 1);
    int live = num_tensors;
    for (int s = 0; s < path->num_steps; s++) {
        int i = path->steps[s].i, j = path->steps[s].j;
        if (i < 0 || i >= live || j < 0 || j >= live)
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: %s.path[%d]: index %d out of range (%d "
                                "live operands)", file, field, s,
                                (i < 0 || i >= live) ? i : j, live);
        if (i == j)
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: %s.path[%d]: both indices are %d (a step "
                                "contracts two different operands)", file,
                                field, s, i);
        live--;
    }
    return EB_OK;
}

/* k-th (1-based) set slot of a Fenwick tree of 0/1 counts over n slots. */
static int fenwick_find(const int *tree, int n, int top, int k)
{
    int pos = 0;
    for (int step = top; step > 0; step >>= 1)
        if (pos + step <= n && tree[pos + step] < k) {
            pos += step;
            k -= tree[pos];
        }
    return pos; /* 0-based slot */
}

static void fenwick_add(int *tree, int n, int slot, int delta)
{
    for (int x = slot + 1; x <= n; x += x & -x)
        tree[x] += delta;
}

int eb_path_slots(const eb_path *path, int num_tensors, eb_pair *slots)
{
    int n = num_tensors + path->num_steps;
    int *tree = calloc((size_t)n + 1, sizeof *tree);
    if (!tree)
        return -1;
    int top = 1;
    while (top * 2 <= n)
        top *= 2;
    for (int k = 0; k < num_tensors; k++)
        fenwick_add(tree, n, k, 1);
    for (int s = 0; s < path->num_steps; s++) {
        int a = fenwick_find(tree, n, top, path->steps[s].i + 1);
        int b = fenwick_find(tree, n, top, path->steps[s].j + 1);
        slots[s].i = a;
        slots[s].j = b;
        fenwick_add(tree, n, a, -1);
        fenwick_add(tree, n, b, -1);
        fenwick_add(tree, n, num_tensors + s, 1);
    }
    free(tree);
    return 0;
}

int eb_path_equal(const eb_path *a, const eb_path *b)
{
    if (a->num_steps != b->num_steps)
        return 0;
    for (int s = 0; s < a->num_steps; s++)
        if (a->steps[s].i != b->steps[s].i || a->steps[s].j != b->steps[s].j)
            return 0;
    return 1;
}

const char *eb_path_digest(const eb_path *path, char *buf)
{
    uint64_t h = 14695981039346656037ULL;
    for (int s = 0; s < path->num_steps; s++) {
        int v[2] = {path->steps[s].i, path->steps[s].j};
        for (int k = 0; k < 2; k++)
            for (int byte = 0; byte < 4; byte++) {
                h ^= (uint64_t)(((unsigned)v[k] >> (8 * byte)) & 0xFF);
                h *= 1099511628211ULL;
            }
    }
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
    return buf;
}

const eb_path *eb_pathset_find(const eb_pathset *ps, const char *strategy)
{
    if (!ps)
        return NULL;
    for (int k = 0; k < ps->count; k++)
        if (strcmp(ps->paths[k].strategy, strategy) == 0)
            return &ps->paths[k];
    return NULL;
}

const char *eb_name_problem(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return "empty";
    if (n > EB_NAME_MAX_BYTES)
        return "longer than 200 bytes";
    if (s[0] == '.')
        return "starts with a dot";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
              c == '+'))
            return "a character other than letters, digits, '_', '-', '.', "
                   "'+'";
    }
    return NULL;
}

void eb_path_free(eb_path *path)
{
    if (!path)
        return;
    free(path->strategy);
    free(path->steps);
    path->strategy = NULL;
    path->steps = NULL;
}

void eb_pathset_destroy(eb_pathset *ps)
{
    if (!ps)
        return;
    for (int k = 0; k < ps->count; k++)
        eb_path_free(&ps->paths[k]);
    free(ps->paths);
    free(ps->source);
    free(ps);
}
