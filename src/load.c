/* load: cJSON-based parsing and validation of instance and path files. */
#include "load.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "infile.h"
#include "utf8.h"

eb_status eb_load_read_file(const char *file, char **text, size_t *len,
                            eb_error *err)
{
    return eb_infile_read(file, EB_INFILE_MAX_BYTES, text, len, err);
}

/* cJSON turns "\u0000" into a C string that simply ends there ("x\u0000y"
 * is read as "x"). Before parsing, such escapes are rewritten in place to
 * "\u0001", which the tree check below rejects with the field's name; a raw
 * NUL byte anywhere is rejected here. Linear in the text. */
static eb_status expose_nul_escapes(const char *file, char *text, size_t len,
                                    eb_error *err)
{
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\0')
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: a NUL byte at byte %zu (not allowed)",
                                file, i);
        if (!in_string) {
            in_string = c == '"';
        } else if (c == '"') {
            in_string = 0;
        } else if (c == '\\' && i + 1 < len) {
            if (len - i >= 6 && memcmp(text + i + 1, "u0000", 5) == 0)
                text[i + 5] = '1';
            i++;
        }
    }
    return EB_OK;
}

/* A JSON string that is valid UTF-8 without control characters (C0, DEL,
 * C1): anything read from a file may end up on a terminal. */
static int clean_string(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t used = eb_utf8_decode(s + i, n - i, &cp);
        if (used == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
            return 0;
        i += used;
    }
    return 1;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append ".key" or "[k]" to a field name being built (truncating). */
static size_t field_push(char *field, size_t cap, size_t len, const char *key,
                         int index)
{
    int n = key ? snprintf(field + len, cap - len, "%s%s", len ? "." : "", key)
                : snprintf(field + len, cap - len, "[%d]", index);
    return n < 0 ? len : len + (size_t)n < cap ? len + (size_t)n : cap - 1;
}

/* DESIGN 3.3 on the whole tree: no object has a key twice, and no string
 * (key or value) holds a control character or invalid UTF-8. Duplicates are
 * found by sorting each object's keys: O(n log n) in the keys. */
static eb_status check_tree(const char *file, const cJSON *node, char *field,
                            size_t cap, size_t len, eb_error *err)
{
    if (cJSON_IsString(node) && !clean_string(node->valuestring))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: a NUL or control character or invalid "
                            "UTF-8 in a string (not allowed)", file,
                            len ? field : "(top level)");
    if (!cJSON_IsArray(node) && !cJSON_IsObject(node))
        return EB_OK;
    int n = 0;
    const cJSON *c;
    for (c = node->child; c; c = c->next)
        n++;
    const char **keys = NULL;
    if (cJSON_IsObject(node) && n > 1 &&
        !(keys = malloc((size_t)n * sizeof *keys)))
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    int k = 0;
    eb_status st = EB_OK;
    for (c = node->child; c && !st; c = c->next, k++) {
        int is_obj = cJSON_IsObject(node);
        if (is_obj && !clean_string(c->string)) {
            char shown[64];
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: %s: key '%s' has a NUL or control "
                              "character or invalid UTF-8 (not allowed)", file,
                              len ? field : "(top level)",
                              eb_utf8_shown(c->string, shown, sizeof shown));
            break;
        }
        if (keys)
            keys[k] = c->string;
        size_t l2 = field_push(field, cap, len, is_obj ? c->string : NULL, k);
        st = check_tree(file, c, field, cap, l2, err);
        field[len] = '\0';
    }
    if (!st && keys) {
        qsort(keys, (size_t)n, sizeof *keys, cmp_key);
        for (k = 1; k < n && !st; k++)
            if (strcmp(keys[k - 1], keys[k]) == 0) {
                size_t l2 = field_push(field, cap, len, keys[k], 0);
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: %s: key given twice (a duplicate key "
                                  "is not allowed)", file, field);
                (void)l2;
                field[len] = '\0';
            }
    }
    free(keys);
    return st;
}

/* Parse a file as JSON; the message gives the byte offset of the error. */
static eb_status parse_json(const char *file, cJSON **out, eb_error *err)
{
    char *text;
    size_t len;
    *out = NULL;
    eb_status st = eb_load_read_file(file, &text, &len, err);
    if (st)
        return st;
    if ((st = expose_nul_escapes(file, text, len, err))) {
        free(text);
        return st;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!root) {
        size_t off = end ? (size_t)(end - text) : 0;
        if (off > len)
            off = len;
        st = eb_error_set(err, EB_ERR_PARSE,
                          "%s: not valid JSON (error near byte %zu of %zu%s)",
                          file, off, len, off >= len ? ", truncated?" : "");
    } else if (!cJSON_IsObject(root)) {
        st = eb_error_set(err, EB_ERR_INVALID,
                          "%s: top level is not a JSON object", file);
    } else {
        char field[512] = "";
        st = check_tree(file, root, field, sizeof field, 0, err);
    }
    if (st) {
        cJSON_Delete(root);
        root = NULL;
    }
    free(text);
    *out = root;
    return st;
}

eb_file_kind eb_load_file_kind(const char *file)
{
    cJSON *root;
    if (parse_json(file, &root, NULL))
        return EB_FILE_BAD;
    eb_file_kind k = EB_FILE_OTHER;
    if (cJSON_GetObjectItemCaseSensitive(root, "format_string"))
        k = EB_FILE_INSTANCE;
    else if (cJSON_GetObjectItemCaseSensitive(root, "instance") &&
             cJSON_GetObjectItemCaseSensitive(root, "paths"))
        k = EB_FILE_PATHS;
    cJSON_Delete(root);
    return k;
}

static const char *type_name(const cJSON *v)
{
    if (!v)
        return "missing";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    return "invalid";
}

static eb_status get_string(const char *file, const cJSON *obj,
                            const char *key, int required, const char **out,
                            eb_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v && !required)
        return EB_OK;
    if (!cJSON_IsString(v) || !v->valuestring)
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: %s (expected a string)", file, key,
                            type_name(v));
    *out = v->valuestring;
    return EB_OK;
}

/* A JSON number that is an exact integer in [lo, hi]. */
static eb_status get_int(const char *file, const char *field, const cJSON *v,
                         double lo, double hi, int64_t *out, eb_error *err)
{
    if (!cJSON_IsNumber(v))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: %s (expected an integer)", file, field,
                            type_name(v));
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: %g is not an integer", file, field, d);
    /* %.15g: a huge value (1e300) is not printed as 301 digits. */
    if (d < lo || d > hi)
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: %.15g out of range (expected %.0f..%.0f)",
                            file, field, d, lo, hi);
    *out = (int64_t)d;
    return EB_OK;
}

/* Parse {"strategy": {"path": [[i,j],...], "log10_flops": x, ...}, ...}. */
static eb_status parse_pathset(const char *file, const char *prefix,
                               const cJSON *paths, int num_tensors,
                               eb_pathset **out, eb_error *err)
{
    *out = NULL;
    if (!cJSON_IsObject(paths))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: %s (expected an object of strategies)",
                            file, prefix, type_name(paths));
    eb_pathset *ps = calloc(1, sizeof *ps);
    int n = cJSON_GetArraySize(paths);
    if (ps)
        ps->paths = calloc((size_t)(n ? n : 1), sizeof *ps->paths);
    if (ps)
        ps->source = strdup(file);
    if (!ps || !ps->paths || !ps->source) {
        eb_pathset_destroy(ps);
        return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    }
    eb_status st = EB_OK;
    char field[512];
    const cJSON *strat;
    cJSON_ArrayForEach(strat, paths)
    {
        const char *bad = eb_name_problem(strat->string);
        if (bad) {
            char shown[EB_NAME_MAX_BYTES + 8];
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: %s: strategy key '%s' is not a valid name "
                              "(%s; expected letters, digits, '_-.+', not "
                              "starting with '.', at most %d bytes)", file,
                              prefix, eb_utf8_shown(strat->string, shown,
                                                    sizeof shown), bad,
                              EB_NAME_MAX_BYTES);
            break;
        }
        snprintf(field, sizeof field, "%s.%s", prefix, strat->string);
        eb_path *p = &ps->paths[ps->count++];
        p->log10_flops = NAN;
        p->log2_size = NAN;
        p->strategy = strdup(strat->string ? strat->string : "");
        if (!p->strategy) {
            st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
            break;
        }
        if (!cJSON_IsObject(strat)) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: %s: %s (expected an object with \"path\")",
                              file, field, type_name(strat));
            break;
        }
        /* A strategy given twice is a duplicate key: parse_json refused
         * the file already. */
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(strat, "path");
        if (!cJSON_IsArray(steps)) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: %s.path: %s (expected an array of [i, j] "
                              "pairs)", file, field, type_name(steps));
            break;
        }
        int ns = cJSON_GetArraySize(steps);
        p->steps = malloc((size_t)(ns ? ns : 1) * sizeof *p->steps);
        if (!p->steps) {
            st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
            break;
        }
        const cJSON *step;
        int s = 0;
        cJSON_ArrayForEach(step, steps)
        {
            char sf[600];
            snprintf(sf, sizeof sf, "%s.path[%d]", field, s);
            if (!cJSON_IsArray(step) || cJSON_GetArraySize(step) != 2) {
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: %s: %s (expected a pair [i, j])", file,
                                  sf, cJSON_IsArray(step)
                                          ? "an array of the wrong length"
                                          : type_name(step));
                break;
            }
            int64_t i, j;
            st = get_int(file, sf, step->child, -1e9, 1e9, &i, err);
            if (!st)
                st = get_int(file, sf, step->child->next, -1e9, 1e9, &j, err);
            if (st)
                break;
            p->steps[s].i = (int)i;
            p->steps[s].j = (int)j;
            s++;
        }
        if (st)
            break;
        p->num_steps = ns;
        const char *costs[2] = {"log10_flops", "log2_size"};
        double *dst[2] = {&p->log10_flops, &p->log2_size};
        for (int c = 0; c < 2 && !st; c++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(strat, costs[c]);
            if (!v || cJSON_IsNull(v))
                continue;
            if (!cJSON_IsNumber(v))
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: %s.%s: %s (expected a number)", file,
                                  field, costs[c], type_name(v));
            else
                *dst[c] = v->valuedouble;
        }
        if (!st)
            st = eb_path_validate(p, num_tensors, file, field, err);
        if (st)
            break;
    }
    if (st) {
        eb_pathset_destroy(ps);
        return st;
    }
    if (ps->count == 0) {
        eb_pathset_destroy(ps);
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: %s: no strategies", file, prefix);
    }
    *out = ps;
    return EB_OK;
}

static const char *base_name(const char *file)
{
    const char *b = strrchr(file, '/');
    return b ? b + 1 : file;
}

/* The optional column-major copy must be the row-major one reversed. */
static eb_status check_colmajor(const char *file, const cJSON *root,
                                const eb_instance *inst, int64_t *const *shapes,
                                eb_error *err)
{
    const cJSON *fs = cJSON_GetObjectItemCaseSensitive(root,
                                                       "format_string_colmajor");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(root, "shapes_colmajor");
    if (fs) {
        if (!cJSON_IsString(fs))
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: format_string_colmajor: %s (expected a "
                                "string)", file, type_name(fs));
        /* Build the expected string: each term's labels reversed. */
        size_t cap = strlen(inst->format_string) + 8;
        char *want = malloc(cap);
        if (!want)
            return eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
        size_t len = 0;
        char buf[EB_MAX_RANK * 4 + 1];
        for (int k = 0; k <= inst->num_tensors; k++) {
            const eb_term *t = k < inst->num_tensors ? &inst->inputs[k]
                                                      : &inst->output;
            int rev[EB_MAX_RANK];
            for (int a = 0; a < t->rank; a++)
                rev[a] = t->ids[t->rank - 1 - a];
            eb_term_str(inst, rev, t->rank, buf, sizeof buf);
            const char *sep = k + 1 < inst->num_tensors ? ","
                              : k + 1 == inst->num_tensors ? "->" : "";
            len += (size_t)snprintf(want + len, cap - len, "%s%s", buf, sep);
        }
        int same = strcmp(want, fs->valuestring) == 0;
        free(want);
        if (!same)
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: format_string_colmajor: not the reverse "
                                "of format_string", file);
    }
    if (sh) {
        if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != inst->num_tensors)
            return eb_error_set(err, EB_ERR_INVALID,
                                "%s: shapes_colmajor: expected an array of %d "
                                "shapes", file, inst->num_tensors);
        const cJSON *s = sh->child;
        for (int k = 0; k < inst->num_tensors; k++, s = s->next) {
            int r = inst->inputs[k].rank;
            int ok = cJSON_IsArray(s) && cJSON_GetArraySize(s) == r;
            const cJSON *v = ok ? s->child : NULL;
            for (int a = 0; ok && a < r; a++, v = v->next)
                ok = cJSON_IsNumber(v) &&
                     v->valuedouble == (double)shapes[k][r - 1 - a];
            if (!ok)
                return eb_error_set(err, EB_ERR_INVALID,
                                    "%s: shapes_colmajor[%d]: not the reverse "
                                    "of shapes[%d]", file, k, k);
        }
    }
    return EB_OK;
}

/* Read "shapes" into freshly allocated arrays. */
static eb_status read_shapes(const char *file, const cJSON *root,
                             int64_t ***shapes_out, int **ranks_out, int *n_out,
                             eb_error *err)
{
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(root, "shapes");
    if (!cJSON_IsArray(sh))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: shapes: %s (expected an array of int arrays)",
                            file, type_name(sh));
    int n = cJSON_GetArraySize(sh);
    int64_t **shapes = calloc((size_t)(n ? n : 1), sizeof *shapes);
    int *ranks = calloc((size_t)(n ? n : 1), sizeof *ranks);
    eb_status st = EB_OK;
    if (!shapes || !ranks)
        st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    const cJSON *s = sh->child;
    for (int k = 0; k < n && !st; k++, s = s->next) {
        if (!cJSON_IsArray(s)) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: shapes[%d]: %s (expected an array of "
                              "integers)", file, k, type_name(s));
            break;
        }
        int r = cJSON_GetArraySize(s);
        if (r > EB_MAX_RANK) {
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: shapes[%d]: rank %d (at most %d supported)", file, k, r,
                              EB_MAX_RANK);
            break;
        }
        ranks[k] = r;
        shapes[k] = malloc((size_t)(r ? r : 1) * sizeof(int64_t));
        if (!shapes[k]) {
            st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
            break;
        }
        const cJSON *v = s->child;
        for (int a = 0; a < r && !st; a++, v = v->next) {
            char field[64];
            snprintf(field, sizeof field, "shapes[%d][%d]", k, a);
            if (cJSON_IsNumber(v) && v->valuedouble < 1 &&
                v->valuedouble == floor(v->valuedouble))
                st = eb_error_set(err, EB_ERR_INVALID,
                                  "%s: %s: size %.15g (expected a positive "
                                  "integer)", file, field, v->valuedouble);
            else
                st = get_int(file, field, v, 1, (double)EB_MAX_ELEMS,
                             &shapes[k][a], err);
        }
    }
    if (st) {
        for (int k = 0; shapes && k < n; k++)
            free(shapes[k]);
        free(shapes);
        free(ranks);
        return st;
    }
    *shapes_out = shapes;
    *ranks_out = ranks;
    *n_out = n;
    return EB_OK;
}

static eb_status load_instance_json(const char *file, const cJSON *root,
                                    eb_instance **out, eb_error *err)
{
    const char *name, *fs, *dtype, *fs_row, *intent;
    eb_status st;
    if ((st = get_string(file, root, "name", 1, &name, err)) ||
        (st = get_string(file, root, "format_string", 1, &fs, err)) ||
        (st = get_string(file, root, "dtype", 1, &dtype, err)) ||
        (st = get_string(file, root, "format_string_rowmajor", 0, &fs_row,
                         err)) ||
        (st = get_string(file, root, "intent", 0, &intent, err)))
        return st;
    const char *notes;
    if ((st = get_string(file, root, "notes", 0, &notes, err)))
        return st;
    const char *bad = eb_name_problem(name);
    if (bad) {
        char shown[EB_NAME_MAX_BYTES + 8];
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: name: '%s' is not a valid name (%s; expected "
                            "letters, digits, '_-.+', not starting with '.', "
                            "at most %d bytes)", file,
                            eb_utf8_shown(name, shown, sizeof shown), bad,
                            EB_NAME_MAX_BYTES);
    }
    /* The name is the file name without ".json" (names may contain dots). */
    const char *base = base_name(file);
    size_t blen = strlen(base);
    if (blen > 5 && strcmp(base + blen - 5, ".json") == 0 &&
        (strlen(name) != blen - 5 || strncmp(name, base, blen - 5) != 0))
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: name: '%s' does not match the file name "
                            "(expected '%.*s')", file, name, (int)(blen - 5),
                            base);
    if (fs_row && strcmp(fs_row, fs) != 0)
        return eb_error_set(err, EB_ERR_INVALID,
                            "%s: format_string_rowmajor: differs from "
                            "format_string", file);
    int64_t num_tensors;
    if ((st = get_int(file, "num_tensors",
                      cJSON_GetObjectItemCaseSensitive(root, "num_tensors"), 1,
                      1e7, &num_tensors, err)))
        return st;
    int64_t **shapes = NULL;
    int *ranks = NULL, nshapes = 0;
    if ((st = read_shapes(file, root, &shapes, &ranks, &nshapes, err)))
        return st;
    eb_instance *inst = NULL;
    if (nshapes != num_tensors)
        st = eb_error_set(err, EB_ERR_INVALID,
                          "%s: shapes: %d shapes but num_tensors is %lld", file,
                          nshapes, (long long)num_tensors);
    if (!st)
        st = eb_instance_build(file, name, fs, dtype, (int)num_tensors, shapes,
                               ranks, &inst, err);
    if (!st)
        st = check_colmajor(file, root, inst, shapes, err);
    for (int k = 0; k < nshapes; k++)
        free(shapes[k]);
    free(shapes);
    free(ranks);
    if (!st && intent && !(inst->intent = strdup(intent)))
        st = eb_error_set(err, EB_ERR_NOMEM, "%s: out of memory", file);
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(root, "paths");
    if (!st && paths) {
        st = parse_pathset(file, "paths", paths, inst->num_tensors,
                           &inst->inline_paths, err);
        if (!st)
            inst->inline_paths->is_inline = 1;
    }
    if (st) {
        eb_instance_destroy(inst);
        return st;
    }
    *out = inst;
    return EB_OK;
}

eb_status eb_load_instance(const char *file, eb_instance **out, eb_error *err)
{
    *out = NULL;
    cJSON *root;
    eb_status st = parse_json(file, &root, err);
    if (st)
        return st;
    st = load_instance_json(file, root, out, err);
    cJSON_Delete(root);
    return st;
}

eb_status eb_load_pathfile(const char *file, const eb_instance *inst,
                           eb_pathset **out, eb_error *err)
{
    *out = NULL;
    cJSON *root;
    eb_status st = parse_json(file, &root, err);
    if (st)
        return st;
    const char *name;
    st = get_string(file, root, "instance", 1, &name, err);
    if (!st && strcmp(name, inst->name) != 0) {
        char shown[EB_NAME_MAX_BYTES + 8];
        st = eb_error_set(err, EB_ERR_INVALID,
                          "%s: instance: names '%s', not '%s'", file,
                          eb_utf8_shown(name, shown, sizeof shown),
                          inst->name);
    }
    if (!st) {
        const cJSON *paths = cJSON_GetObjectItemCaseSensitive(root, "paths");
        if (!paths)
            st = eb_error_set(err, EB_ERR_INVALID,
                              "%s: paths: missing (expected an object of "
                              "strategies)", file);
        else
            st = parse_pathset(file, "paths", paths, inst->num_tensors, out,
                               err);
    }
    cJSON_Delete(root);
    return st;
}

static eb_pathset *copy_pathset(const eb_pathset *src)
{
    eb_pathset *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    ps->paths = calloc((size_t)src->count, sizeof *ps->paths);
    ps->source = strdup(src->source);
    ps->is_inline = src->is_inline;
    if (!ps->paths || !ps->source) {
        eb_pathset_destroy(ps);
        return NULL;
    }
    for (int k = 0; k < src->count; k++) {
        const eb_path *s = &src->paths[k];
        eb_path *d = &ps->paths[k];
        ps->count++;
        *d = *s;
        d->strategy = strdup(s->strategy);
        d->steps = malloc((size_t)(s->num_steps ? s->num_steps : 1) *
                          sizeof *d->steps);
        if (!d->strategy || !d->steps) {
            eb_pathset_destroy(ps);
            return NULL;
        }
        memcpy(d->steps, s->steps, (size_t)s->num_steps * sizeof *d->steps);
    }
    return ps;
}

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

eb_status eb_load_find_paths(const eb_instance *inst,
                             const char *explicit_paths, eb_pathset **out,
                             eb_error *err)
{
    *out = NULL;
    size_t cap = strlen(inst->file) + strlen(inst->name) +
                 (explicit_paths ? strlen(explicit_paths) : 0) + 32;
    char *cand = malloc(cap);
    if (!cand)
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    eb_status st = EB_OK;
    if (explicit_paths) {
        if (is_dir(explicit_paths)) {
            snprintf(cand, cap, "%s/%s.json", explicit_paths, inst->name);
            if (is_file(cand)) {
                st = eb_load_pathfile(cand, inst, out, err);
                free(cand);
                return st;
            }
        } else {
            free(cand);
            return eb_load_pathfile(explicit_paths, inst, out, err);
        }
    }
    /* paths/<name>.json beside the instance's folder. */
    const char *slash = strrchr(inst->file, '/');
    if (slash)
        snprintf(cand, cap, "%.*s/../paths/%s.json",
                 (int)(slash - inst->file), inst->file, inst->name);
    else
        snprintf(cand, cap, "../paths/%s.json", inst->name);
    if (is_file(cand)) {
        st = eb_load_pathfile(cand, inst, out, err);
        free(cand);
        return st;
    }
    free(cand);
    if (inst->inline_paths) {
        *out = copy_pathset(inst->inline_paths);
        return *out ? EB_OK
                    : eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    return eb_error_set(err, EB_ERR_INVALID,
                        "%s: paths: no stored path (none inline, no "
                        "paths/%s.json beside the instance folder%s)",
                        inst->file, inst->name,
                        explicit_paths ? ", none in --paths" : "");
}
