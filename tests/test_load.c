/* test_load: instance and path-file loading (src/load.c) and the validation
 * rules of src/instance.c (DESIGN 3.1-3.3).
 *
 * Run from the repository root (tests/run-all does). The 19 public
 * instances are read from instances/ (where the project ships them), or
 * from $EB_REFERENCE_INSTANCES. Every other fixture is written to a mkdtemp folder that is
 * removed at the end. */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "instance.h"
#include "load.h"

static char tmpdir[256];

/* ---- helpers ------------------------------------------------------------ */

/* tmpdir/rel into buf (PATH_BYTES); rel is at most REL_BYTES. */
enum { PATH_BYTES = 1024, REL_BYTES = 256 };
static const char *tpath(char *buf, const char *rel)
{
    snprintf(buf, PATH_BYTES, "%s/%s", tmpdir, rel);
    return buf;
}

static void write_text(const char *file, const char *text)
{
    FILE *f = fopen(file, "wb");
    if (!f) {
        perror(file);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static void make_dir(const char *rel)
{
    char p[PATH_BYTES];
    mkdir(tpath(p, rel), 0777);
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* An instance's JSON text: the good template 'ij,jk->ik' 4x5x6 with inline
 * path [[0, 1]], with any field replaced by raw JSON text (NULL: keep the
 * default; "-": leave the field out). `extra` is appended raw (or NULL). */
typedef struct {
    const char *name, *format_string, *shapes, *dtype, *num_tensors, *paths,
        *extra;
} fields;

static void inst_json(char *buf, size_t cap, const char *name, fields f)
{
    const char *keys[6] = {"name", "format_string", "shapes", "dtype",
                           "num_tensors", "paths"};
    char quoted[256];
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    const char *vals[6] = {
        f.name ? f.name : quoted,
        f.format_string ? f.format_string : "\"ij,jk->ik\"",
        f.shapes ? f.shapes : "[[4, 5], [5, 6]]",
        f.dtype ? f.dtype : "\"float64\"",
        f.num_tensors ? f.num_tensors : "2",
        f.paths ? f.paths : "{\"opt_flops\": {\"path\": [[0, 1]]}}"};
    size_t len = (size_t)snprintf(buf, cap, "{");
    const char *sep = "";
    for (int k = 0; k < 6; k++) {
        if (strcmp(vals[k], "-") == 0)
            continue;
        len += (size_t)snprintf(buf + len, cap - len, "%s\"%s\": %s", sep,
                                keys[k], vals[k]);
        sep = ", ";
    }
    if (f.extra)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", sep, f.extra);
    snprintf(buf + len, cap - len, "}\n");
}

/* Write tmpdir/<dir>/<name>.json from the template; file path into out. */
static const char *write_inst(char *out, const char *dir, const char *name,
                              fields f)
{
    char text[4096], rel[REL_BYTES];
    inst_json(text, sizeof text, name, f);
    snprintf(rel, sizeof rel, "%s/%s.json", dir, name);
    tpath(out, rel);
    write_text(out, text);
    return out;
}

/* Does err name the file and contain `field`? */
static int names(const eb_error *err, const char *file, const char *field)
{
    return strstr(err->msg, file) && strstr(err->msg, field);
}

/* ---- reference instances -------------------------------------------------- */

typedef struct {
    const char *name;
    int num_tensors, num_labels, out_rank, non_ascii; /* labels > U+007F */
    uint32_t max_cp;
    int total_rank;       /* sum of the operands' ranks */
    int same_paths;       /* opt_flops and opt_size are the same path */
    uint32_t first_cp;    /* label id 0 */
    int64_t first_size;
} ref_case;

/* Counted independently (Python over the JSON files). */
static const ref_case ref_cases[] = {
    {"bin_batched_matmul_b32_m128_n128_k128", 2, 4, 3, 0, 0x6B, 6, 1, 'b', 32},
    {"bin_batched_matmul_b32_m64_n64_k64", 2, 4, 3, 0, 0x6B, 6, 1, 'b', 32},
    {"bin_batched_outer_product_compact_j16_k16_o64_t64", 2, 4, 4, 0, 0x74, 5,
     1, 't', 64},
    {"bin_batched_outer_product_noncompact_j16_k16_o64_t64", 2, 4, 4, 0, 0x74,
     5, 1, 't', 64},
    {"bin_elementwise_mul_2048x2048", 2, 2, 2, 0, 0x6A, 4, 1, 'i', 2048},
    {"bin_matmul_1024", 2, 3, 2, 0, 0x6B, 4, 1, 'i', 1024},
    {"bin_matmul_256", 2, 3, 2, 0, 0x6B, 4, 1, 'i', 256},
    {"bin_outer_product_4096", 2, 2, 2, 0, 0x6A, 2, 1, 'i', 4096},
    {"gm_queen5_5_3.wcsp", 160, 25, 0, 0, 0x79, 320, 0, 'a', 3},
    {"lm_batch_likelihood_brackets_4_4d", 84, 105, 1, 52, 0xF3, 240, 0, 'a', 4},
    {"lm_batch_likelihood_sentence_3_12d", 38, 45, 1, 0, 0x7A, 104, 0, 'a', 12},
    {"lm_batch_likelihood_sentence_4_4d", 84, 105, 1, 52, 0xF3, 240, 0, 'a', 4},
    {"nary_matmul_chain_64", 3, 4, 2, 0, 0x6C, 6, 1, 'i', 64},
    {"str_matrix_chain_multiplication_100", 100, 101, 2, 49, 0xF0, 200, 0,
     0xE7, 303},
    {"str_mps_varying_inner_product_200", 200, 298, 0, 246, 0x1B5, 596, 0, 'a',
     11},
    {"str_nw_mera_closed_120", 120, 176, 0, 124, 0x13B, 352, 0, 'a', 52},
    {"str_nw_mera_open_26", 26, 45, 9, 7, 0xC9, 81, 0, 'a', 13},
    {"tensornetwork_permutation_focus_step409_316", 316, 159, 18, 113, 0x46B,
     517, 1, 'b', 2},
    {"tensornetwork_permutation_light_415", 415, 196, 0, 140, 0x46B, 675, 1,
     'a', 2},
};

/* The format string rebuilt from the parsed terms (malloc'd). */
static char *rebuild_format(const eb_instance *inst)
{
    size_t cap = strlen(inst->format_string) + 64;
    char *s = malloc(cap), term[EB_MAX_RANK * 4 + 1];
    size_t len = 0;
    for (int k = 0; k <= inst->num_tensors; k++) {
        const eb_term *t = k < inst->num_tensors ? &inst->inputs[k]
                                                  : &inst->output;
        eb_term_str(inst, t->ids, t->rank, term, sizeof term);
        const char *sep = k + 1 < inst->num_tensors ? ","
                          : k + 1 == inst->num_tensors ? "->" : "";
        len += (size_t)snprintf(s + len, cap - len, "%s%s", term, sep);
    }
    return s;
}

static void check_ref_instance(const char *dir, const ref_case *rc)
{
    char file[PATH_BYTES];
    snprintf(file, sizeof file, "%s/%s.json", dir, rc->name);
    eb_instance *inst = NULL;
    eb_error err = {0};
    eb_status st = eb_load_instance(file, &inst, &err);
    EB_CHECK(st == EB_OK && inst, "%s: %s", rc->name, err.msg);
    if (st)
        return;
    EB_CHECK(eb_load_file_kind(file) == EB_FILE_INSTANCE, "%s", rc->name);
    EB_CHECK(strcmp(inst->name, rc->name) == 0, "%s", inst->name);
    EB_CHECK(strcmp(inst->file, file) == 0, "%s", inst->file);
    EB_CHECK(strcmp(inst->dtype, "float64") == 0, "%s", inst->dtype);
    EB_CHECK(inst->num_tensors == rc->num_tensors, "%s: %d tensors", rc->name,
             inst->num_tensors);
    EB_CHECK(inst->num_labels == rc->num_labels, "%s: %d labels", rc->name,
             inst->num_labels);
    EB_CHECK(inst->output.rank == rc->out_rank, "%s: output rank %d",
             rc->name, inst->output.rank);
    int non_ascii = 0, total_rank = 0;
    uint32_t max_cp = 0;
    for (int l = 0; l < inst->num_labels; l++) {
        non_ascii += inst->label_cp[l] > 0x7F;
        if (inst->label_cp[l] > max_cp)
            max_cp = inst->label_cp[l];
        EB_CHECK(inst->label_size[l] >= 1, "%s: label %d size %lld", rc->name,
                 l, (long long)inst->label_size[l]);
    }
    for (int k = 0; k < inst->num_tensors; k++)
        total_rank += inst->inputs[k].rank;
    EB_CHECK(non_ascii == rc->non_ascii, "%s: %d non-ASCII labels", rc->name,
             non_ascii);
    EB_CHECK(max_cp == rc->max_cp, "%s: max code point U+%04X", rc->name,
             (unsigned)max_cp);
    EB_CHECK(total_rank == rc->total_rank, "%s: total rank %d", rc->name,
             total_rank);
    EB_CHECK(inst->label_cp[0] == rc->first_cp && inst->label_size[0] ==
             rc->first_size, "%s: label 0 is U+%04X size %lld", rc->name,
             (unsigned)inst->label_cp[0], (long long)inst->label_size[0]);
    char *again = rebuild_format(inst);
    EB_CHECK(strcmp(again, inst->format_string) == 0,
             "%s: terms rebuild '%.60s...'", rc->name, again);
    free(again);
    /* Inline paths: opt_flops and opt_size, complete and valid. */
    const eb_pathset *ps = inst->inline_paths;
    EB_CHECK(ps && ps->count == 2 && ps->is_inline, "%s: inline paths",
             rc->name);
    if (ps) {
        const eb_path *f = eb_pathset_find(ps, "opt_flops");
        const eb_path *z = eb_pathset_find(ps, "opt_size");
        EB_CHECK(f && z, "%s: both strategies", rc->name);
        EB_CHECK(strcmp(ps->source, file) == 0, "%s", ps->source);
        if (f && z) {
            EB_CHECK(f->num_steps == rc->num_tensors - 1 &&
                     z->num_steps == rc->num_tensors - 1, "%s: %d/%d steps",
                     rc->name, f->num_steps, z->num_steps);
            EB_CHECK(eb_path_equal(f, z) == rc->same_paths,
                     "%s: paths equal %d", rc->name, eb_path_equal(f, z));
            EB_CHECK(!eb_path_validate(f, inst->num_tensors, file,
                                       "paths.opt_flops", &err), "%s",
                     err.msg);
            char d1[17], d2[17];
            eb_path_digest(f, d1);
            eb_path_digest(z, d2);
            EB_CHECK((strcmp(d1, d2) == 0) == rc->same_paths,
                     "%s: digests %s %s", rc->name, d1, d2);
        }
    }
    eb_pathset *found = NULL;
    st = eb_load_find_paths(inst, NULL, &found, &err);
    EB_CHECK(st == EB_OK && found && found->count >= 1, "%s: find_paths: %s",
             rc->name, err.msg);
    eb_pathset_destroy(found);
    eb_instance_destroy(inst);
}

/* Specific labels: Latin-1 in the LM network, Greek in the tensor network,
 * a digit as batch label. */
static void check_ref_labels(const char *dir)
{
    char file[PATH_BYTES];
    eb_instance *inst = NULL;
    eb_error err;
    snprintf(file, sizeof file, "%s/lm_batch_likelihood_sentence_4_4d.json",
             dir);
    if (eb_load_instance(file, &inst, &err) == EB_OK) {
        const eb_term *t = &inst->inputs[42]; /* "ëê", shape [4, 4] */
        EB_CHECK(t->rank == 2 && inst->label_cp[t->ids[0]] == 0xEB &&
                 inst->label_cp[t->ids[1]] == 0xEA, "term 42 is not U+00EB "
                 "U+00EA");
        EB_CHECK(eb_instance_operand_elems(inst, 42) == 16, "elems %lld",
                 (long long)eb_instance_operand_elems(inst, 42));
        char b[8];
        EB_CHECK(strcmp(eb_label_str(inst, t->ids[0], b), "\xc3\xab") == 0,
                 "label '%s'", b);
        EB_CHECK(inst->output.rank == 1 &&
                 inst->label_cp[inst->output.ids[0]] == '0', "output not '0'");
        /* '0' is on 33 operands (a hyperedge) plus the output. */
        int on = 0;
        for (int k = 0; k < inst->num_tensors; k++)
            for (int a = 0; a < inst->inputs[k].rank; a++)
                on += inst->label_cp[inst->inputs[k].ids[a]] == '0';
        EB_CHECK(on >= 17, "'0' on %d operands", on);
    }
    EB_CHECK(inst != NULL, "%s", err.msg);
    eb_instance_destroy(inst);
    inst = NULL;
    snprintf(file, sizeof file, "%s/tensornetwork_permutation_light_415.json",
             dir);
    if (eb_load_instance(file, &inst, &err) == EB_OK) {
        const eb_term *t = &inst->inputs[1]; /* "aυ", shape [2, 2] */
        EB_CHECK(t->rank == 2 && inst->label_cp[t->ids[0]] == 'a' &&
                 inst->label_cp[t->ids[1]] == 0x3C5, "term 1 is not a U+03C5");
    }
    EB_CHECK(inst != NULL, "%s", err.msg);
    eb_instance_destroy(inst);
}

static void test_reference_instances(void)
{
    const char *dir = getenv("EB_REFERENCE_INSTANCES");
    if (!dir)
        dir = "instances";
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        printf("note: %s absent; reference instances not tested\n", dir);
        return;
    }
    size_t n = sizeof ref_cases / sizeof ref_cases[0];
    EB_CHECK(n == 19, "%zu cases", n);
    for (size_t k = 0; k < n; k++)
        check_ref_instance(dir, &ref_cases[k]);
    check_ref_labels(dir);
}

/* ---- path lookup order ----------------------------------------------------- */

static const char *strategy_of(const eb_pathset *ps)
{
    return ps && ps->count == 1 ? ps->paths[0].strategy : "(none)";
}

/* Lookup with explicit `ex`: the single strategy found ("(error)" on
 * failure) into strategy, the source (or the message) into source
 * (EB_ERROR_MSG_BYTES). */
static const char *lookup(const eb_instance *inst, const char *ex,
                          char *strategy, char *source, int *is_inline)
{
    eb_pathset *ps = NULL;
    eb_error err;
    if (eb_load_find_paths(inst, ex, &ps, &err)) {
        strcpy(strategy, "(error)");
        snprintf(source, EB_ERROR_MSG_BYTES, "%s", err.msg);
        return strategy;
    }
    strcpy(strategy, strategy_of(ps));
    snprintf(source, EB_ERROR_MSG_BYTES, "%s", ps->source);
    *is_inline = ps->is_inline;
    eb_pathset_destroy(ps);
    return strategy;
}

static void test_lookup_order(void)
{
    char file[PATH_BYTES], p[PATH_BYTES], ex_dir[PATH_BYTES],
        ex_file[PATH_BYTES], empty_dir[PATH_BYTES], beside[PATH_BYTES];
    make_dir("lk");
    make_dir("lk/inst");
    make_dir("lk/paths");
    make_dir("lk/ex");
    make_dir("lk/empty");
    write_inst(file, "lk/inst", "x",
               (fields){.paths = "{\"inline_s\": {\"path\": [[0, 1]]}}"});
    write_text(tpath(beside, "lk/paths/x.json"),
               "{\"instance\": \"x\", \"paths\": "
               "{\"beside_s\": {\"path\": [[1, 0]]}}}");
    write_text(tpath(p, "lk/ex/x.json"),
               "{\"instance\": \"x\", \"paths\": "
               "{\"dir_s\": {\"path\": [[0, 1]], \"log10_flops\": 2.5}}}");
    write_text(tpath(ex_file, "lk/ex_file.json"),
               "{\"instance\": \"x\", \"paths\": "
               "{\"file_s\": {\"path\": [[1, 0]], \"log2_size\": 4.5}}}");
    tpath(ex_dir, "lk/ex");
    tpath(empty_dir, "lk/empty");
    eb_instance *inst = NULL;
    eb_error err;
    EB_CHECK(eb_load_instance(file, &inst, &err) == EB_OK, "%s", err.msg);
    if (!inst)
        return;
    char s[64], src[EB_ERROR_MSG_BYTES];
    int inl = -1;
    EB_CHECK(strcmp(lookup(inst, ex_file, s, src, &inl), "file_s") == 0 &&
             strcmp(src, ex_file) == 0 && inl == 0, "explicit file: %s %s",
             s, src);
    EB_CHECK(strcmp(lookup(inst, ex_dir, s, src, &inl), "dir_s") == 0 &&
             strstr(src, "lk/ex/x.json") && inl == 0, "explicit dir: %s %s", s,
             src);
    EB_CHECK(strcmp(lookup(inst, empty_dir, s, src, &inl), "beside_s") == 0,
             "explicit dir without x.json falls through: %s %s", s, src);
    EB_CHECK(strcmp(lookup(inst, NULL, s, src, &inl), "beside_s") == 0 &&
             strstr(src, "paths/x.json") && inl == 0, "beside: %s %s", s,
             src);
    remove(beside);
    EB_CHECK(strcmp(lookup(inst, NULL, s, src, &inl), "inline_s") == 0 &&
             strcmp(src, file) == 0 && inl == 1, "inline: %s %s", s, src);
    EB_CHECK(strcmp(lookup(inst, empty_dir, s, src, &inl), "inline_s") == 0,
             "empty dir, no beside: %s %s", s, src);
    /* The stored costs are read; absent ones are NaN. */
    eb_pathset *ps = NULL;
    EB_CHECK(eb_load_find_paths(inst, ex_dir, &ps, &err) == EB_OK, "%s",
             err.msg);
    if (ps)
        EB_CHECK(ps->paths[0].log10_flops == 2.5 &&
                 ps->paths[0].log2_size != ps->paths[0].log2_size,
                 "costs %g %g", ps->paths[0].log10_flops,
                 ps->paths[0].log2_size);
    eb_pathset_destroy(ps);
    /* An explicit file that is missing or names another instance. */
    tpath(p, "lk/nowhere.json");
    ps = NULL;
    eb_status st = eb_load_find_paths(inst, p, &ps, &err);
    EB_CHECK(st == EB_ERR_IO && !ps && strstr(err.msg, p), "%d %s", st,
             err.msg);
    write_text(tpath(p, "lk/other.json"),
               "{\"instance\": \"y\", \"paths\": "
               "{\"s\": {\"path\": [[0, 1]]}}}");
    st = eb_load_find_paths(inst, p, &ps, &err);
    EB_CHECK(st == EB_ERR_INVALID && !ps && names(&err, p, "instance"),
             "%d %s", st, err.msg);
    eb_instance_destroy(inst);

    /* Relative instance path without a folder: paths/ is ../paths. */
    char cwd[PATH_BYTES], rel_inline[PATH_BYTES];
    write_inst(rel_inline, "lk/inst", "z",
               (fields){.paths = "{\"inline_s\": {\"path\": [[0, 1]]}}"});
    write_text(tpath(p, "lk/paths/z.json"),
               "{\"instance\": \"z\", \"paths\": "
               "{\"beside_s\": {\"path\": [[0, 1]]}}}");
    if (getcwd(cwd, sizeof cwd) && chdir(tpath(p, "lk/inst")) == 0) {
        inst = NULL;
        EB_CHECK(eb_load_instance("z.json", &inst, &err) == EB_OK, "%s",
                 err.msg);
        if (inst)
            EB_CHECK(strcmp(lookup(inst, NULL, s, src, &inl), "beside_s") ==
                     0, "relative: %s %s", s, src);
        eb_instance_destroy(inst);
        EB_CHECK(chdir(cwd) == 0, "chdir back to %s", cwd);
    }

    /* No path anywhere. */
    write_inst(file, "lk/inst", "w", (fields){.paths = "-"});
    inst = NULL;
    EB_CHECK(eb_load_instance(file, &inst, &err) == EB_OK, "%s", err.msg);
    if (inst) {
        ps = NULL;
        st = eb_load_find_paths(inst, NULL, &ps, &err);
        EB_CHECK(st == EB_ERR_INVALID && !ps && names(&err, file, "paths"),
                 "%d %s", st, err.msg);
        st = eb_load_find_paths(inst, empty_dir, &ps, &err);
        EB_CHECK(st == EB_ERR_INVALID && !ps && names(&err, file, "--paths"),
                 "%d %s", st, err.msg);
    }
    eb_instance_destroy(inst);
}

/* ---- validation (DESIGN 3.3) ---------------------------------------------- */

typedef struct {
    const char *name;     /* file tmp/v/<name>.json */
    fields f;
    eb_status want;
    const char *field;    /* must appear in the message */
} bad_case;

static const bad_case bad_cases[] = {
    /* missing fields and wrong types */
    {"no_name", {.name = "-"}, EB_ERR_INVALID, "name: missing"},
    {"no_format", {.format_string = "-"}, EB_ERR_INVALID, "format_string"},
    {"no_shapes", {.shapes = "-"}, EB_ERR_INVALID, "shapes: missing"},
    {"no_dtype", {.dtype = "-"}, EB_ERR_INVALID, "dtype: missing"},
    {"no_num_tensors", {.num_tensors = "-"}, EB_ERR_INVALID, "num_tensors"},
    {"name_number", {.name = "7"}, EB_ERR_INVALID, "name: a number"},
    {"format_number", {.format_string = "42"}, EB_ERR_INVALID,
     "format_string: a number"},
    {"format_null", {.format_string = "null"}, EB_ERR_INVALID,
     "format_string: null"},
    {"dtype_array", {.dtype = "[\"float64\"]"}, EB_ERR_INVALID,
     "dtype: an array"},
    {"shapes_string", {.shapes = "\"4x5,5x6\""}, EB_ERR_INVALID,
     "shapes: a string"},
    {"shapes_object", {.shapes = "{\"a\": 1}"}, EB_ERR_INVALID,
     "shapes: an object"},
    {"shape_number", {.shapes = "[4, [5, 6]]"}, EB_ERR_INVALID, "shapes[0]"},
    {"num_tensors_string", {.num_tensors = "\"2\""}, EB_ERR_INVALID,
     "num_tensors: a string"},
    {"num_tensors_fraction", {.num_tensors = "2.5"}, EB_ERR_INVALID,
     "num_tensors"},
    {"num_tensors_zero", {.num_tensors = "0"}, EB_ERR_INVALID, "num_tensors"},
    {"num_tensors_negative", {.num_tensors = "-2"}, EB_ERR_INVALID,
     "num_tensors"},
    {"dim_fraction", {.shapes = "[[4, 2.5], [5, 6]]"}, EB_ERR_INVALID,
     "shapes[0][1]"},
    {"dim_string", {.shapes = "[[4, \"5\"], [5, 6]]"}, EB_ERR_INVALID,
     "shapes[0][1]"},
    {"dim_bool", {.shapes = "[[4, 5], [true, 6]]"}, EB_ERR_INVALID,
     "shapes[1][0]"},
    {"dim_null", {.shapes = "[[4, 5], [5, null]]"}, EB_ERR_INVALID,
     "shapes[1][1]"},
    /* counts that disagree */
    {"num_tensors_vs_format", {.num_tensors = "3",
                               .shapes = "[[4, 5], [5, 6], [6]]"},
     EB_ERR_INVALID, "num_tensors"},
    {"num_tensors_vs_shapes", {.shapes = "[[4, 5]]"}, EB_ERR_INVALID,
     "shapes"},
    {"rank_vs_format", {.shapes = "[[4, 5, 3], [5, 6]]"}, EB_ERR_INVALID,
     "shapes[0]"},
    {"rank_short", {.shapes = "[[4, 5], [5]]"}, EB_ERR_INVALID, "shapes[1]"},
    /* sizes */
    {"label_two_sizes", {.shapes = "[[4, 5], [7, 6]]"}, EB_ERR_INVALID,
     "shapes[1][0]"},
    {"dim_zero", {.shapes = "[[0, 5], [5, 6]]"}, EB_ERR_INVALID,
     "shapes[0][0]"},
    {"dim_negative", {.shapes = "[[4, 5], [5, -6]]"}, EB_ERR_INVALID,
     "shapes[1][1]"},
    {"dim_1e30", {.shapes = "[[1e30, 5], [5, 6]]"}, EB_ERR_INVALID,
     "shapes[0][0]"},
    {"dim_2p63", {.shapes = "[[9223372036854775808, 5], [5, 6]]"},
     EB_ERR_INVALID, "shapes[0][0]"},
    {"dim_product", {.shapes = "[[4, 1099511627776], "
                               "[1099511627776, 1099511627776]]"},
     EB_ERR_INVALID, "shapes[0]"},
    {"dim_product_2p41", {.shapes = "[[2097152, 1048576], [1048576, 1]]"},
     EB_ERR_INVALID, "shapes[0]"},
    {"output_product", {.format_string = "\"ij,kl->ijkl\"",
                        .shapes = "[[1048576, 1048576], [1048576, 1048576]]"},
     EB_ERR_INVALID, "format_string"},
    /* format string */
    {"no_arrow", {.format_string = "\"ij,jk\""}, EB_ERR_INVALID,
     "format_string: no '->'"},
    {"two_arrows", {.format_string = "\"ij,jk->ik->i\""}, EB_ERR_INVALID,
     "format_string"},
    {"output_unknown", {.format_string = "\"ij,jk->iz\""}, EB_ERR_INVALID,
     "format_string: output label 'z'"},
    {"output_repeated", {.format_string = "\"ij,jk->ii\""}, EB_ERR_INVALID,
     "format_string: output label 'i' repeated"},
    {"output_comma", {.format_string = "\"ij,jk->i,k\""}, EB_ERR_INVALID,
     "format_string"},
    {"label_space", {.format_string = "\"i j,jk->ik\""}, EB_ERR_INVALID,
     "format_string"},
    {"label_ellipsis", {.format_string = "\"...j,jk->ik\""}, EB_ERR_INVALID,
     "format_string"},
    {"rowmajor_differs", {.extra = "\"format_string_rowmajor\": "
                                   "\"ij,jk->ki\""},
     EB_ERR_INVALID, "format_string_rowmajor"},
    {"colmajor_wrong", {.extra = "\"format_string_colmajor\": "
                                 "\"ij,jk->ik\""},
     EB_ERR_INVALID, "format_string_colmajor"},
    {"colmajor_shapes_wrong", {.extra = "\"shapes_colmajor\": "
                                        "[[4, 5], [6, 5]]"},
     EB_ERR_INVALID, "shapes_colmajor[0]"},
    {"intent_number", {.extra = "\"intent\": 3"}, EB_ERR_INVALID, "intent"},
    /* dtype: the four of dtype.h load (test_dtypes); nothing else does */
    {"dtype_float16", {.dtype = "\"float16\""}, EB_ERR_INVALID,
     "dtype: 'float16' is not a dtype (expected float64, float32, "
     "complex128 or complex64)"},
    {"dtype_upper", {.dtype = "\"Float64\""}, EB_ERR_INVALID,
     "dtype: 'Float64' is not a dtype"},
    {"dtype_empty", {.dtype = "\"\""}, EB_ERR_INVALID,
     "dtype: '' is not a dtype"},
    {"dtype_descr", {.dtype = "\"<c16\""}, EB_ERR_INVALID,
     "dtype: '<c16' is not a dtype"},
    {"dtype_number", {.dtype = "64"}, EB_ERR_INVALID,
     "dtype: a number (expected a string)"},
    /* inline paths */
    {"paths_array", {.paths = "[[0, 1]]"}, EB_ERR_INVALID, "paths: an array"},
    {"paths_empty", {.paths = "{}"}, EB_ERR_INVALID, "paths"},
    {"strategy_number", {.paths = "{\"opt_flops\": 3}"}, EB_ERR_INVALID,
     "paths.opt_flops"},
    {"strategy_twice", {.paths = "{\"s\": {\"path\": [[0, 1]]}, "
                                 "\"s\": {\"path\": [[0, 1]]}}"},
     EB_ERR_INVALID, "paths.s"},
    {"path_missing", {.paths = "{\"opt_flops\": {\"steps\": [[0, 1]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path"},
    {"path_object", {.paths = "{\"opt_flops\": {\"path\": {\"a\": 1}}}"},
     EB_ERR_INVALID, "paths.opt_flops.path"},
    {"step_triple", {.paths = "{\"opt_flops\": {\"path\": [[0, 1, 2]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"step_number", {.paths = "{\"opt_flops\": {\"path\": [1]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"step_fraction", {.paths = "{\"opt_flops\": {\"path\": [[0, 0.5]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"step_string", {.paths = "{\"opt_flops\": {\"path\": [[\"0\", 1]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"step_huge", {.paths = "{\"opt_flops\": {\"path\": [[0, 1e12]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"index_range", {.paths = "{\"opt_flops\": {\"path\": [[0, 7]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]: index 7 out of range"},
    {"index_negative", {.paths = "{\"opt_flops\": {\"path\": [[-1, 1]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"index_same", {.paths = "{\"opt_flops\": {\"path\": [[1, 1]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path[0]"},
    {"index_range_later", {.format_string = "\"ij,jk,kl->il\"",
                           .num_tensors = "3",
                           .shapes = "[[4, 5], [5, 6], [6, 2]]",
                           .paths = "{\"opt_size\": {\"path\": "
                                    "[[0, 1], [0, 2]]}}"},
     EB_ERR_INVALID, "paths.opt_size.path[1]: index 2 out of range"},
    {"path_short", {.format_string = "\"ij,jk,kl->il\"", .num_tensors = "3",
                    .shapes = "[[4, 5], [5, 6], [6, 2]]",
                    .paths = "{\"opt_flops\": {\"path\": [[0, 1]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path"},
    {"path_long", {.paths = "{\"opt_flops\": {\"path\": [[0, 1], [0, 1]]}}"},
     EB_ERR_INVALID, "paths.opt_flops.path"},
    {"path_empty", {.paths = "{\"opt_flops\": {\"path\": []}}"},
     EB_ERR_INVALID, "paths.opt_flops.path"},
    {"cost_string", {.paths = "{\"opt_flops\": {\"path\": [[0, 1]], "
                              "\"log10_flops\": \"big\"}}"},
     EB_ERR_INVALID, "paths.opt_flops.log10_flops"},
    {"second_strategy_bad", {.paths = "{\"opt_flops\": {\"path\": [[0, 1]]}, "
                                      "\"opt_size\": {\"path\": [[0, 2]]}}"},
     EB_ERR_INVALID, "paths.opt_size.path[0]"},
};

static void test_bad_instances(void)
{
    make_dir("v");
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    for (size_t k = 0; k < n; k++) {
        const bad_case *c = &bad_cases[k];
        char file[PATH_BYTES];
        write_inst(file, "v", c->name, c->f);
        eb_instance *inst = (eb_instance *)&inst; /* must be reset */
        eb_error err = {0};
        eb_status st = eb_load_instance(file, &inst, &err);
        EB_CHECK(st == c->want, "%s: status %d (want %d): %s", c->name, st,
                 c->want, err.msg);
        EB_CHECK(inst == NULL, "%s: *out set on failure", c->name);
        EB_CHECK(names(&err, file, c->field), "%s: message '%s' lacks the "
                 "file or '%s'", c->name, err.msg, c->field);
        EB_CHECK(strchr(err.msg, '\n') == NULL, "%s: multi-line message",
                 c->name);
        if (st == EB_OK)
            eb_instance_destroy(inst);
    }
}

/* Files that are not well-formed JSON objects, and a name/file mismatch. */
static void test_bad_files(void)
{
    struct {
        const char *rel, *text;
        eb_status want;
        const char *field;
    } cases[] = {
        {"v/not_json.json", "this is not JSON\n", EB_ERR_PARSE,
         "not valid JSON"},
        {"v/truncated.json", "{\"name\": \"truncated\", \"shapes\": [[4, 5]",
         EB_ERR_PARSE, "truncated"},
        {"v/empty.json", "", EB_ERR_PARSE, "not valid JSON"},
        {"v/trailing.json", "{\"name\": \"trailing\"} {", EB_ERR_PARSE,
         "not valid JSON"},
        {"v/top_array.json", "[1, 2]", EB_ERR_INVALID, "top level"},
        {"v/top_string.json", "\"x\"", EB_ERR_INVALID, "top level"},
        {"v/bad_utf8.json", "{\"name\": \"bad_utf8\", \"format_string\": "
         "\"i\xff,jk->ik\", \"shapes\": [[4, 5], [5, 6]], \"dtype\": "
         "\"float64\", \"num_tensors\": 2}", EB_ERR_INVALID, "format_string"},
        {"v/name_other.json", "{\"name\": \"another\", \"format_string\": "
         "\"ij,jk->ik\", \"shapes\": [[4, 5], [5, 6]], \"dtype\": "
         "\"float64\", \"num_tensors\": 2}", EB_ERR_INVALID, "name"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char file[PATH_BYTES];
        write_text(tpath(file, cases[k].rel), cases[k].text);
        eb_instance *inst = NULL;
        eb_error err = {0};
        eb_status st = eb_load_instance(file, &inst, &err);
        EB_CHECK(st == cases[k].want && !inst, "%s: status %d: %s",
                 cases[k].rel, st, err.msg);
        EB_CHECK(names(&err, file, cases[k].field), "%s: '%s'", cases[k].rel,
                 err.msg);
    }
    char file[PATH_BYTES];
    eb_instance *inst = NULL;
    eb_error err;
    eb_status st = eb_load_instance(tpath(file, "v/missing.json"), &inst,
                                    &err);
    EB_CHECK(st == EB_ERR_IO && !inst && names(&err, file, "cannot open"),
             "%d %s", st, err.msg);
    st = eb_load_instance(tpath(file, "v"), &inst, &err);
    EB_CHECK(st == EB_ERR_IO && !inst && names(&err, file, "directory"),
             "%d %s", st, err.msg);
}

/* Each dtype of dtype.h loads, spelled and parsed. */
static void test_dtypes(void)
{
    make_dir("dt");
    for (int t = 0; t < EB_DTYPE_COUNT; t++) {
        const char *name = eb_dtype_name((eb_dtype)t);
        char file[PATH_BYTES], quoted[32], inst_name[32];
        snprintf(quoted, sizeof quoted, "\"%s\"", name);
        snprintf(inst_name, sizeof inst_name, "dt_%s", name);
        write_inst(file, "dt", inst_name, (fields){.dtype = quoted});
        eb_instance *inst = NULL;
        eb_error err = {0};
        eb_status st = eb_load_instance(file, &inst, &err);
        EB_CHECK(st == EB_OK && inst, "%s: %s", name, err.msg);
        if (st)
            continue;
        EB_CHECK(inst->dt == (eb_dtype)t && strcmp(inst->dtype, name) == 0,
                 "%s: parsed as %s ('%s')", name, eb_dtype_name(inst->dt),
                 inst->dtype);
        eb_instance_destroy(inst);
    }
}

/* Path files (eb_load_pathfile). */
static void test_bad_pathfiles(void)
{
    char file[PATH_BYTES];
    eb_instance *inst = NULL;
    eb_error err;
    make_dir("pf");
    write_inst(file, "pf", "p", (fields){.paths = "-"});
    EB_CHECK(eb_load_instance(file, &inst, &err) == EB_OK, "%s", err.msg);
    if (!inst)
        return;
    EB_CHECK(inst->inline_paths == NULL, "inline paths without \"paths\"");
    struct {
        const char *rel, *text;
        eb_status want;
        const char *field;
    } cases[] = {
        {"pf/other.json", "{\"instance\": \"q\", \"paths\": {\"s\": "
         "{\"path\": [[0, 1]]}}}", EB_ERR_INVALID, "instance: names 'q'"},
        {"pf/no_instance.json", "{\"paths\": {\"s\": {\"path\": [[0, 1]]}}}",
         EB_ERR_INVALID, "instance"},
        {"pf/instance_number.json", "{\"instance\": 1, \"paths\": {}}",
         EB_ERR_INVALID, "instance"},
        {"pf/no_paths.json", "{\"instance\": \"p\"}", EB_ERR_INVALID,
         "paths"},
        {"pf/range.json", "{\"instance\": \"p\", \"paths\": {\"s\": "
         "{\"path\": [[0, 2]]}}}", EB_ERR_INVALID, "paths.s.path[0]"},
        {"pf/same.json", "{\"instance\": \"p\", \"paths\": {\"s\": "
         "{\"path\": [[0, 0]]}}}", EB_ERR_INVALID, "paths.s.path[0]"},
        {"pf/long.json", "{\"instance\": \"p\", \"paths\": {\"s\": "
         "{\"path\": [[0, 1], [0, 1]]}}}", EB_ERR_INVALID, "paths.s.path"},
        {"pf/garbage.json", "{\"instance\": \"p\", \"paths\": ", EB_ERR_PARSE,
         "not valid JSON"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_text(tpath(file, cases[k].rel), cases[k].text);
        eb_pathset *ps = (eb_pathset *)&ps;
        eb_status st = eb_load_pathfile(file, inst, &ps, &err);
        EB_CHECK(st == cases[k].want && !ps, "%s: status %d: %s",
                 cases[k].rel, st, err.msg);
        EB_CHECK(names(&err, file, cases[k].field), "%s: '%s'", cases[k].rel,
                 err.msg);
    }
    /* A good one with two strategies. */
    write_text(tpath(file, "pf/good.json"),
               "{\"instance\": \"p\", \"paths\": {\"opt_flops\": {\"path\": "
               "[[0, 1]], \"log10_flops\": 2.38, \"log2_size\": 4.58}, "
               "\"opt_size\": {\"path\": [[1, 0]]}}}");
    eb_pathset *ps = NULL;
    EB_CHECK(eb_load_pathfile(file, inst, &ps, &err) == EB_OK && ps, "%s",
             err.msg);
    if (ps) {
        EB_CHECK(ps->count == 2 && !ps->is_inline &&
                 strcmp(ps->source, file) == 0, "count %d", ps->count);
        const eb_path *f = eb_pathset_find(ps, "opt_flops");
        const eb_path *z = eb_pathset_find(ps, "opt_size");
        EB_CHECK(f && z && !eb_pathset_find(ps, "opt"), "find");
        if (f && z) {
            EB_CHECK(f->log10_flops == 2.38 && f->log2_size == 4.58,
                     "costs %g %g", f->log10_flops, f->log2_size);
            EB_CHECK(z->num_steps == 1 && z->steps[0].i == 1 &&
                     z->steps[0].j == 0, "opt_size steps");
            EB_CHECK(!eb_path_equal(f, z), "[[0,1]] equals [[1,0]]");
        }
    }
    EB_CHECK(eb_pathset_find(NULL, "x") == NULL, "find in NULL");
    eb_pathset_destroy(ps);
    eb_instance_destroy(inst);
}

/* ---- accepted instances ----------------------------------------------------- */

static eb_instance *load_ok(const char *name, fields f)
{
    char file[PATH_BYTES];
    make_dir("ok");
    write_inst(file, "ok", name, f);
    eb_instance *inst = NULL;
    eb_error err = {0};
    eb_status st = eb_load_instance(file, &inst, &err);
    EB_CHECK(st == EB_OK && inst, "%s: %s", name, err.msg);
    return inst;
}

static void test_good_instances(void)
{
    /* A label repeated inside one operand (a diagonal) is accepted. */
    eb_instance *inst = load_ok("diag", (fields){
        .format_string = "\"ii->i\"", .num_tensors = "1",
        .shapes = "[[3, 3]]", .paths = "{\"s\": {\"path\": []}}"});
    if (inst) {
        EB_CHECK(inst->num_labels == 1 && inst->inputs[0].rank == 2 &&
                 inst->inputs[0].ids[0] == 0 && inst->inputs[0].ids[1] == 0 &&
                 inst->output.rank == 1 && inst->label_size[0] == 3,
                 "diagonal parse");
        EB_CHECK(eb_instance_operand_elems(inst, 0) == 9, "elems");
    }
    eb_instance_destroy(inst);
    inst = load_ok("trace_pair", (fields){
        .format_string = "\"iij,jk->k\"", .shapes = "[[2, 2, 5], [5, 6]]"});
    EB_CHECK(inst && inst->num_labels == 3, "iij,jk->k");
    eb_instance_destroy(inst);
    /* Scalar output, scalar operand, label summed out of one operand. */
    inst = load_ok("scalar_out", (fields){.format_string = "\"ij,ij->\"",
                                          .shapes = "[[4, 5], [4, 5]]"});
    EB_CHECK(inst && inst->output.rank == 0, "scalar output");
    eb_instance_destroy(inst);
    inst = load_ok("scalar_in", (fields){.format_string = "\"i,->i\"",
                                         .shapes = "[[3], []]"});
    EB_CHECK(inst && inst->inputs[1].rank == 0 &&
             eb_instance_operand_elems(inst, 1) == 1, "scalar operand");
    eb_instance_destroy(inst);
    inst = load_ok("sum_out", (fields){.format_string = "\"ijm,jk->i\"",
                                       .shapes = "[[4, 5, 2], [5, 6]]"});
    EB_CHECK(inst && inst->num_labels == 4 && inst->label_size[2] == 2,
             "summed-out label");
    eb_instance_destroy(inst);
    /* Names may contain dots; optional fields that agree; 2^40 elements. */
    inst = load_ok("a.b.c", (fields){.extra = "\"format_string_rowmajor\": "
                                              "\"ij,jk->ik\", "
                                              "\"format_string_colmajor\": "
                                              "\"ji,kj->ki\", "
                                              "\"shapes_colmajor\": "
                                              "[[5, 4], [6, 5]], "
                                              "\"intent\": \"x\", "
                                              "\"notes\": \"y\""});
    EB_CHECK(inst && strcmp(inst->name, "a.b.c") == 0 && inst->intent &&
             strcmp(inst->intent, "x") == 0, "dotted name, optional fields");
    eb_instance_destroy(inst);
    inst = load_ok("big", (fields){.format_string = "\"ij,j->i\"",
                                   .shapes = "[[1048576, 1048576], "
                                             "[1048576]]"});
    EB_CHECK(inst && eb_instance_operand_elems(inst, 0) == EB_MAX_ELEMS,
             "2^40 elements accepted");
    eb_instance_destroy(inst);
    /* Multi-byte labels: Greek and a 4-byte code point. */
    inst = load_ok("greek", (fields){.format_string =
                                         "\"\xce\xb1\xce\xb2,\xce\xb2"
                                         "\xf0\x9d\x84\x9e->\xce\xb1"
                                         "\xf0\x9d\x84\x9e\""});
    if (inst) {
        EB_CHECK(inst->num_labels == 3 && inst->label_cp[0] == 0x3B1 &&
                 inst->label_cp[1] == 0x3B2 && inst->label_cp[2] == 0x1D11E,
                 "code points");
        char b[EB_MAX_RANK * 4 + 1];
        EB_CHECK(strcmp(eb_term_str(inst, inst->output.ids, 2, b, sizeof b),
                        "\xce\xb1\xf0\x9d\x84\x9e") == 0, "term '%s'", b);
        /* A buffer too small for the term is cut at a label boundary. */
        eb_term_str(inst, inst->output.ids, 2, b, 5);
        EB_CHECK(strcmp(b, "\xce\xb1") == 0, "cut term '%s'", b);
    }
    eb_instance_destroy(inst);
}

/* eb_instance_build directly (no JSON). */
static void test_build(void)
{
    int64_t s0[2] = {3, 3}, s1[2] = {3, 4};
    int64_t *shapes[2] = {s0, s1};
    int ranks[2] = {2, 2};
    eb_instance *inst = NULL;
    eb_error err;
    eb_status st = eb_instance_build("direct.json", "direct", "ii,ij->j",
                                     "float64", 2, shapes, ranks, &inst, &err);
    EB_CHECK(st == EB_OK && inst && inst->num_labels == 2, "%s", err.msg);
    eb_instance_destroy(inst);
    inst = NULL;
    st = eb_instance_build("direct.json", "direct", "ii,ij", "float64", 2,
                           shapes, ranks, &inst, &err);
    EB_CHECK(st == EB_ERR_INVALID && !inst &&
             names(&err, "direct.json", "format_string: no '->'"), "%s",
             err.msg);
    st = eb_instance_build("direct.json", "direct", "ii,ij->jj", "float64", 2,
                           shapes, ranks, &inst, &err);
    EB_CHECK(st == EB_ERR_INVALID && !inst &&
             names(&err, "direct.json", "repeated"), "%s", err.msg);
    /* ii with a non-square shape: one label, two sizes. */
    int64_t *shapes2[2] = {s1, s1};
    st = eb_instance_build("direct.json", "direct", "ii,ij->j", "float64", 2,
                           shapes2, ranks, &inst, &err);
    EB_CHECK(st == EB_ERR_INVALID && !inst &&
             names(&err, "direct.json", "shapes[0][1]"), "%s", err.msg);
    st = eb_instance_build("direct.json", "direct", "ii,ij->j", "float64", 3,
                           shapes, ranks, &inst, &err);
    EB_CHECK(st == EB_ERR_INVALID && !inst &&
             names(&err, "direct.json", "num_tensors"), "%s", err.msg);
    /* A term longer than EB_MAX_RANK labels. */
    char fs[EB_MAX_RANK * 4 + 16];
    size_t len = 0;
    for (int a = 0; a <= EB_MAX_RANK; a++)
        len += (size_t)snprintf(fs + len, sizeof fs - len, "\xce%c",
                                (char)(0x80 + a % 48));
    snprintf(fs + len, sizeof fs - len, "->");
    int64_t one[EB_MAX_RANK + 1];
    for (int a = 0; a <= EB_MAX_RANK; a++)
        one[a] = 1;
    int64_t *shapes3[1] = {one};
    int rank3[1] = {EB_MAX_RANK + 1};
    st = eb_instance_build("direct.json", "direct", fs, "float64", 1, shapes3,
                           rank3, &inst, &err);
    EB_CHECK(st != EB_OK && !inst && names(&err, "direct.json",
                                           "format_string"), "%s", err.msg);
}

/* ---- paths: validate, equal, digest ----------------------------------------- */

static eb_path mkpath(eb_pair *steps, int n)
{
    eb_path p = {0};
    p.strategy = "t";
    p.steps = steps;
    p.num_steps = n;
    return p;
}

/* 64-bit FNV-1a over the steps' i, j as 4 little-endian bytes each (the
 * tool's digest, mirrored by scripts/ebpeer.py); the empty path pins the
 * offset basis. */
static uint64_t fnv1a(const eb_pair *steps, int n)
{
    uint64_t h = 14695981039346656037ULL;
    for (int s = 0; s < n; s++) {
        uint32_t v[2] = {(uint32_t)steps[s].i, (uint32_t)steps[s].j};
        for (int k = 0; k < 2; k++)
            for (int b = 0; b < 4; b++) {
                h ^= (v[k] >> (8 * b)) & 0xFF;
                h *= 1099511628211ULL;
            }
    }
    return h;
}

static void test_paths(void)
{
    eb_error err;
    eb_pair good4[3] = {{0, 1}, {0, 2}, {0, 1}};
    eb_path p = mkpath(good4, 3);
    EB_CHECK(eb_path_validate(&p, 4, "f.json", "paths.a", &err) == EB_OK,
             "%s", err.msg);
    /* Step 2 has two live operands: index 2 is out of range there. */
    eb_pair late[3] = {{0, 1}, {0, 1}, {0, 2}};
    p = mkpath(late, 3);
    EB_CHECK(eb_path_validate(&p, 4, "f.json", "paths.a", &err) ==
             EB_ERR_INVALID && names(&err, "f.json", "paths.a.path[2]") &&
             strstr(err.msg, "index 2") && strstr(err.msg, "2 live"),
             "%s", err.msg);
    eb_pair same[3] = {{0, 1}, {2, 2}, {0, 1}};
    p = mkpath(same, 3);
    EB_CHECK(eb_path_validate(&p, 4, "f.json", "paths.a", &err) ==
             EB_ERR_INVALID && names(&err, "f.json", "paths.a.path[1]"),
             "%s", err.msg);
    eb_pair neg[1] = {{0, -3}};
    p = mkpath(neg, 1);
    EB_CHECK(eb_path_validate(&p, 2, "f.json", "paths.a", &err) ==
             EB_ERR_INVALID && names(&err, "f.json", "index -3"), "%s",
             err.msg);
    p = mkpath(good4, 2);
    EB_CHECK(eb_path_validate(&p, 4, "f.json", "paths.a", &err) ==
             EB_ERR_INVALID && names(&err, "f.json", "paths.a.path"), "%s",
             err.msg);
    p = mkpath(good4, 3);
    EB_CHECK(eb_path_validate(&p, 3, "f.json", "paths.a", &err) ==
             EB_ERR_INVALID, "too long: %s", err.msg);
    /* One operand: the empty path is complete. */
    p = mkpath(NULL, 0);
    EB_CHECK(eb_path_validate(&p, 1, "f.json", "paths.a", &err) == EB_OK,
             "%s", err.msg);

    /* eb_path_equal and eb_path_digest. */
    eb_pair a[2] = {{0, 1}, {0, 1}}, b[2] = {{0, 1}, {0, 1}},
            c[2] = {{1, 0}, {0, 1}}, d[1] = {{0, 1}};
    eb_path pa = mkpath(a, 2), pb = mkpath(b, 2), pc = mkpath(c, 2),
            pd = mkpath(d, 1), pe = mkpath(NULL, 0);
    EB_CHECK(eb_path_equal(&pa, &pb) && !eb_path_equal(&pa, &pc) &&
             !eb_path_equal(&pa, &pd) && !eb_path_equal(&pd, &pa) &&
             eb_path_equal(&pe, &pe), "eb_path_equal");
    char da[17], db[17], dc[17], dd[17], de[17], want[17];
    eb_path_digest(&pa, da);
    eb_path_digest(&pb, db);
    eb_path_digest(&pc, dc);
    eb_path_digest(&pd, dd);
    eb_path_digest(&pe, de);
    EB_CHECK(strlen(da) == 16 && strspn(da, "0123456789abcdef") == 16,
             "digest '%s'", da);
    EB_CHECK(strcmp(da, db) == 0, "same steps, digests %s %s", da, db);
    EB_CHECK(strcmp(da, dc) != 0 && strcmp(da, dd) != 0 &&
             strcmp(dc, dd) != 0 && strcmp(dd, de) != 0, "digests collide");
    snprintf(want, sizeof want, "%016llx", (unsigned long long)fnv1a(a, 2));
    EB_CHECK(strcmp(da, want) == 0, "digest %s, FNV-1a %s", da, want);
    EB_CHECK(strcmp(de, "cbf29ce484222325") == 0, "empty digest %s", de);
    eb_pair wide[3] = {{0, 1}, {2, 0}, {300, 1}};
    eb_path pw = mkpath(wide, 3);
    snprintf(want, sizeof want, "%016llx", (unsigned long long)fnv1a(wide, 3));
    EB_CHECK(strcmp(eb_path_digest(&pw, dd), want) == 0, "digest %s, FNV-1a %s",
             dd, want);
    /* Stable: a second call, and the strategy name plays no part. */
    pb.strategy = "other";
    EB_CHECK(strcmp(eb_path_digest(&pb, db), da) == 0, "not stable");
}

/* ---- file kinds and reading ---------------------------------------------- */

static void test_file_kind(void)
{
    char f[PATH_BYTES];
    make_dir("kind");
    write_inst(f, "kind", "inst", (fields){0});
    EB_CHECK(eb_load_file_kind(f) == EB_FILE_INSTANCE, "instance");
    write_text(tpath(f, "kind/p.json"),
               "{\"instance\": \"inst\", \"paths\": {}}");
    EB_CHECK(eb_load_file_kind(f) == EB_FILE_PATHS, "paths");
    write_text(tpath(f, "kind/README.json"), "{\"title\": \"readme\"}");
    EB_CHECK(eb_load_file_kind(f) == EB_FILE_OTHER, "other");
    write_text(tpath(f, "kind/bad.json"), "{\"title\": ");
    EB_CHECK(eb_load_file_kind(f) == EB_FILE_BAD, "bad");
    EB_CHECK(eb_load_file_kind(tpath(f, "kind/none.json")) == EB_FILE_BAD,
             "missing");

    char *text = NULL;
    size_t len = 0;
    eb_error err;
    write_text(tpath(f, "kind/r.txt"), "hello\n");
    EB_CHECK(eb_load_read_file(f, &text, &len, &err) == EB_OK && text &&
             len == 6 && strcmp(text, "hello\n") == 0, "read_file");
    free(text);
    /* Larger than the first 4 KiB buffer. */
    char *big = malloc(20001);
    memset(big, 'x', 20000);
    big[20000] = '\0';
    write_text(tpath(f, "kind/big.txt"), big);
    EB_CHECK(eb_load_read_file(f, &text, &len, &err) == EB_OK && len == 20000 &&
             text && strcmp(text, big) == 0, "big read_file");
    free(text);
    free(big);
    EB_CHECK(eb_load_read_file(tpath(f, "kind"), &text, &len, &err) ==
             EB_ERR_IO && !text, "directory");
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/test_load.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_reference_instances();
    test_lookup_order();
    test_bad_instances();
    test_dtypes();
    test_bad_files();
    test_bad_pathfiles();
    test_good_instances();
    test_build();
    test_paths();
    test_file_kind();
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return eb_check_done("test_load");
}
