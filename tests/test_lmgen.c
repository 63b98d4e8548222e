/* test_lmgen: the language-model instance generator (issue 4).
 *
 * Structure counts for depths 1..4 (and the largest depth), label
 * uniqueness and sizes, parameter validation, default names, the JSON
 * round trip through the loader, the three public lm instances (against
 * instances/, and against the stored canonical format strings below), and
 * the generated gen_lm_* files shipped in instances/, and --dtype: the
 * public complex128 lm instances (lm_batch_likelihood_*_<H>c) are the
 * float64 networks with complex entries (the public set's metadata:
 * sentence_4_<H>c has 84 tensors and 105 labels of sizes 11..1900,
 * sentence_5_<H>c 178 and 229 of sizes 11..3500, dtype complex128).
 * Run from the repository root (tests/run-all does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "jsonw.h"
#include "lmgen.h"
#include "load.h"
#include "utf8.h"

#define REFDIR "instances/"

/* The public instances' format strings with labels renamed in order of
 * first appearance to a..z, A..Z, U+00C0...: the structure the generator
 * must reproduce (checked against the reference files when present). */
static const char canon_d2[] =
    "ab,acd,bef,degh,cij,gkl,hmn,fop,jkqr,lmst,nouv,wi,wp,wq,wr,ws,wt,wu,wv,"
    "xy,xzA,yBC,ABDE,zFG,DHI,EJK,CLM,GHNO,IJPQ,KLRS,wF,wM,wN,wO,wP,wQ,wR,wS"
    "->w";
static const char canon_d3[] =
    "ab,acd,bef,degh,cij,gkl,hmn,fop,jkqr,lmst,nouv,iwx,qyz,rAB,sCD,tEF,uGH,"
    "vIJ,pKL,xyMN,zAOP,BCQR,DEST,FGUV,HIWX,JKYZ,Àw,ÀL,ÀM,ÀN,ÀO,ÀP,ÀQ,ÀR,ÀS,"
    "ÀT,ÀU,ÀV,ÀW,ÀX,ÀY,ÀZ,ÁÂ,ÁÃÄ,ÂÅÆ,ÄÅÇÈ,ÃÉÊ,ÇËÌ,ÈÍÎ,ÆÏÐ,ÊËÑÒ,ÌÍÓÔ,ÎÏÕÖ,"
    "ÉØÙ,ÑÚÛ,ÒÜÝ,ÓÞß,Ôàá,Õâã,Öäå,Ðæç,ÙÚèé,ÛÜêë,ÝÞìí,ßàîï,áâðñ,ãäòó,åæôõ,ÀØ,"
    "Àç,Àè,Àé,Àê,Àë,Àì,Àí,Àî,Àï,Àð,Àñ,Àò,Àó,Àô,Àõ->À";

static const struct {
    const char *name;
    eb_lm_params p;
    const char *canon;
} publics[] = {
    {"lm_batch_likelihood_sentence_3_12d", {2, 12, 11, 1100, EB_F64}, canon_d2},
    {"lm_batch_likelihood_sentence_4_4d", {3, 4, 11, 1900, EB_F64}, canon_d3},
    {"lm_batch_likelihood_brackets_4_4d", {3, 4, 7, 1996, EB_F64}, canon_d3},
};

static eb_instance *build_instance(const eb_lm_params *p, const char *name)
{
    eb_lm_network *net;
    eb_instance *inst = NULL;
    eb_error err;
    if (eb_lm_build(p, name, &net, &err)) {
        EB_CHECK(0, "build: %s", err.msg);
        return NULL;
    }
    if (eb_lm_to_instance(net, "generated", &inst, &err))
        EB_CHECK(0, "to_instance: %s", err.msg);
    eb_lm_network_destroy(net);
    return inst;
}

/* The format string with labels renamed in order of first appearance (the
 * instance's label ids) to the generator's alphabet. Caller frees. */
static char *canonical(const eb_instance *inst)
{
    size_t cap = strlen(inst->format_string) * 2 + 16, len = 0;
    char *s = malloc(cap);
    for (int k = 0; k <= inst->num_tensors; k++) {
        const eb_term *t = k < inst->num_tensors ? &inst->inputs[k]
                                                  : &inst->output;
        for (int a = 0; a < t->rank; a++)
            len += eb_utf8_encode(eb_lm_label_cp(t->ids[a]), s + len);
        if (k + 1 < inst->num_tensors)
            s[len++] = ',';
        else if (k + 1 == inst->num_tensors)
            s[len++] = '-', s[len++] = '>';
    }
    s[len] = '\0';
    return s;
}

/* Same operand count, ranks and shapes, and one bijective renaming of
 * labels that maps a's format string onto b's. */
static int same_structure(const eb_instance *a, const eb_instance *b)
{
    if (a->num_tensors != b->num_tensors || a->num_labels != b->num_labels)
        return 0;
    int n = a->num_labels, ok = 1;
    int *ab = malloc((size_t)n * sizeof *ab), *ba = malloc((size_t)n * sizeof *ba);
    for (int l = 0; l < n; l++)
        ab[l] = ba[l] = -1;
    for (int k = 0; k <= a->num_tensors && ok; k++) {
        const eb_term *ta = k < a->num_tensors ? &a->inputs[k] : &a->output;
        const eb_term *tb = k < b->num_tensors ? &b->inputs[k] : &b->output;
        ok = ta->rank == tb->rank;
        for (int x = 0; ok && x < ta->rank; x++) {
            int la = ta->ids[x], lb = tb->ids[x];
            if (ab[la] < 0 && ba[lb] < 0)
                ab[la] = lb, ba[lb] = la;
            ok = ab[la] == lb && ba[lb] == la &&
                 a->label_size[la] == b->label_size[lb];
        }
    }
    free(ab);
    free(ba);
    return ok;
}

static void test_alphabet(void)
{
    int maxl = 2 * eb_lm_labels_per_copy(EB_LM_MAX_DEPTH) + 1;
    EB_CHECK(eb_lm_label_cp(0) == 'a' && eb_lm_label_cp(25) == 'z' &&
                 eb_lm_label_cp(26) == 'A' && eb_lm_label_cp(51) == 'Z',
             "ASCII letters first");
    EB_CHECK(eb_lm_label_cp(52) == 0xC0, "then Latin-1 letters");
    int bad = 0;
    for (int k = 0; k < maxl; k++) {
        uint32_t cp = eb_lm_label_cp(k);
        char buf[8];
        if (cp <= 0x20 || cp == ',' || cp == '-' || cp == '>' || cp == '.' ||
            (cp >= '0' && cp <= '9') || cp == 0xD7 || cp == 0xF7 ||
            eb_utf8_encode(cp, buf) == 0)
            bad++;
        /* Increasing code points after the ASCII letters: all distinct. */
        if (k > 52 && cp <= eb_lm_label_cp(k - 1))
            bad++;
    }
    EB_CHECK(bad == 0, "%d labels of %d are invalid or repeated", bad, maxl);
    EB_CHECK(eb_lm_label_cp(1 << 20) == 0, "past the alphabet: 0");
}

/* Roles: every label but the batch label occurs in exactly two operands of
 * its copy's block; size V iff one of them is a token matrix. */
static void check_roles(const eb_instance *inst, const eb_lm_params *p)
{
    int d = p->depth, T = eb_lm_tensors_per_copy(d), N = eb_lm_observables(d);
    int L = inst->num_labels, bad = 0, nobs = 0;
    int *cnt = calloc((size_t)L, sizeof *cnt), *tok = calloc((size_t)L, sizeof *tok);
    int *block = malloc((size_t)L * sizeof *block);
    for (int l = 0; l < L; l++)
        block[l] = -1;
    for (int k = 0; k < inst->num_tensors; k++) {
        int blk = k / (T + N), is_tok = k % (T + N) >= T;
        for (int a = 0; a < inst->inputs[k].rank; a++) {
            int l = inst->inputs[k].ids[a];
            cnt[l]++;
            tok[l] += is_tok;
            if (is_tok && a == 0)
                continue; /* the batch label */
            if (block[l] >= 0 && block[l] != blk)
                bad++;
            block[l] = blk;
        }
    }
    int batch = inst->output.ids[0];
    for (int l = 0; l < L; l++) {
        if (l == batch) {
            bad += cnt[l] != 2 * N || inst->label_size[l] != p->batch;
            continue;
        }
        nobs += tok[l] == 1;
        bad += cnt[l] != 2 || tok[l] > 1;
        bad += inst->label_size[l] != (tok[l] ? p->vocab : p->hidden);
    }
    EB_CHECK(bad == 0, "depth %d: %d label role violations", d, bad);
    EB_CHECK(nobs == 2 * N, "depth %d: %d observables (expected %d)", d, nobs,
             2 * N);
    free(cnt);
    free(tok);
    free(block);
}

static void test_counts(void)
{
    static const int tensors[5] = {0, 4, 11, 26, 57};
    static const int operands[5] = {0, 16, 38, 84, 178};
    for (int d = 1; d <= 4; d++) {
        EB_CHECK(eb_lm_tensors_per_copy(d) == tensors[d], "depth %d", d);
        EB_CHECK(eb_lm_num_operands(d) == operands[d], "depth %d", d);
        EB_CHECK(eb_lm_num_operands(d) == 2 * ((4 << d) - d - 3) + 2 * (2 << d),
                 "depth %d: issue's operand formula", d);
    }
    for (int d = 1; d <= EB_LM_MAX_DEPTH; d++) {
        if (d > 4 && d < EB_LM_MAX_DEPTH)
            continue;
        eb_lm_params p = {d, 2, 3, 5, EB_F64};
        eb_instance *inst = build_instance(&p, NULL);
        if (!inst)
            continue;
        EB_CHECK(inst->num_tensors == eb_lm_num_operands(d), "depth %d: %d "
                 "operands", d, inst->num_tensors);
        /* Every distinct label made it into the string as a distinct one. */
        EB_CHECK(inst->num_labels == 2 * eb_lm_labels_per_copy(d) + 1,
                 "depth %d: %d labels (expected %d)", d, inst->num_labels,
                 2 * eb_lm_labels_per_copy(d) + 1);
        EB_CHECK(inst->output.rank == 1, "depth %d: output is the batch", d);
        char *c = canonical(inst);
        EB_CHECK(strcmp(c, inst->format_string) == 0,
                 "depth %d: labels are in creation order", d);
        free(c);
        check_roles(inst, &p);
        eb_instance_destroy(inst);
    }
}

static void expect_error(eb_lm_params p, eb_status want, const char *needle)
{
    eb_error err;
    eb_error_clear(&err);
    eb_status st = eb_lm_validate(&p, &err);
    EB_CHECK(st == want && strstr(err.msg, needle),
             "d=%d H=%lld V=%lld B=%lld: status %d, message '%s' (want '%s')",
             p.depth, (long long)p.hidden, (long long)p.vocab,
             (long long)p.batch, st, err.msg, needle);
}

static void test_validation(void)
{
    expect_error((eb_lm_params){0, 4, 11, 10, EB_F64}, EB_ERR_USAGE,
                 "--depth: 0 out of range (expected 1..8)");
    expect_error((eb_lm_params){9, 4, 11, 10, EB_F64}, EB_ERR_USAGE, "--depth: 9");
    expect_error((eb_lm_params){2, 0, 11, 10, EB_F64}, EB_ERR_USAGE, "--hidden: 0");
    expect_error((eb_lm_params){2, 4, -3, 10, EB_F64}, EB_ERR_USAGE, "--vocab: -3");
    expect_error((eb_lm_params){2, 4, 11, (int64_t)1 << 40, EB_F64}, EB_ERR_USAGE,
                 "--batch");
    expect_error((eb_lm_params){3, 200, 11, 10, EB_F64}, EB_ERR_INVALID,
                 "per operand");
    expect_error((eb_lm_params){8, 40, 11, 100, EB_F64}, EB_ERR_INVALID, "in all");
    expect_error((eb_lm_params){1, 1 << 30, 1 << 30, 1 << 30, EB_F64}, EB_ERR_INVALID,
                 "limit");
    eb_lm_params ok = {2, 12, 11, 1100, EB_F64};
    EB_CHECK(eb_lm_validate(&ok, NULL) == EB_OK, "public parameters pass");
    eb_lm_network *net;
    eb_error err;
    EB_CHECK(eb_lm_build(&ok, "", &net, &err) == EB_ERR_USAGE, "empty name");
}

static void test_names(void)
{
    char buf[128];
    for (size_t i = 0; i < sizeof publics / sizeof *publics; i++)
        EB_CHECK(strcmp(eb_lm_default_name(&publics[i].p, buf, sizeof buf),
                        publics[i].name) == 0, "%s: got %s", publics[i].name,
                 buf);
    eb_lm_params p = {3, 12, 11, 1900, EB_F64};
    EB_CHECK(strcmp(eb_lm_default_name(&p, buf, sizeof buf),
                    "lm_batch_likelihood_sentence_4_12d") == 0, "%s", buf);
    p = (eb_lm_params){1, 3, 5, 8, EB_F64};
    EB_CHECK(strcmp(eb_lm_default_name(&p, buf, sizeof buf),
                    "lm_batch_likelihood_v5_2_3d_b8") == 0, "%s", buf);
}

static void test_publics(void)
{
    int have_ref = access(REFDIR, R_OK) == 0;
    if (!have_ref)
        printf("note: %s absent; checking the stored structure only\n",
               REFDIR);
    for (size_t i = 0; i < sizeof publics / sizeof *publics; i++) {
        eb_instance *mine = build_instance(&publics[i].p, NULL);
        if (!mine)
            continue;
        char *c = canonical(mine);
        EB_CHECK(strcmp(c, publics[i].canon) == 0, "%s: structure differs "
                 "from the stored expectation", publics[i].name);
        free(c);
        EB_CHECK(strcmp(mine->name, publics[i].name) == 0, "%s", mine->name);
        check_roles(mine, &publics[i].p);
        char file[512];
        snprintf(file, sizeof file, REFDIR "%s.json", publics[i].name);
        eb_instance *ref = NULL;
        eb_error err;
        if (have_ref && eb_load_instance(file, &ref, &err) == EB_OK) {
            EB_CHECK(same_structure(mine, ref), "%s: operands, shapes or "
                     "labels differ from the reference", publics[i].name);
            char *rc = canonical(ref);
            EB_CHECK(strcmp(rc, publics[i].canon) == 0, "%s: stored "
                     "expectation is not the reference's", publics[i].name);
            free(rc);
        } else if (have_ref) {
            EB_CHECK(0, "%s", err.msg);
        }
        eb_instance_destroy(ref);
        eb_instance_destroy(mine);
    }
}

/* Write the JSON, read it back with the loader: same instance. */
static void test_roundtrip(void)
{
    char dir[] = "/tmp/eb_lmgen_XXXXXX";
    if (!mkdtemp(dir)) {
        EB_CHECK(0, "mkdtemp failed");
        return;
    }
    eb_lm_params p = {3, 4, 7, 1996, EB_F64};
    eb_lm_network *net;
    eb_error err;
    EB_CHECK(eb_lm_build(&p, NULL, &net, &err) == EB_OK, "%s", err.msg);
    char file[256];
    snprintf(file, sizeof file, "%s/%s.json", dir, net->name);
    eb_jw *w = eb_jw_create(2);
    eb_lm_write_json(net, w);
    FILE *f = fopen(file, "wb");
    EB_CHECK(f && eb_jw_write_line(w, f) == 0, "write %s", file);
    if (f)
        fclose(f);
    eb_instance *a = NULL, *b = NULL;
    EB_CHECK(eb_load_instance(file, &a, &err) == EB_OK, "%s", err.msg);
    EB_CHECK(eb_lm_to_instance(net, file, &b, &err) == EB_OK, "%s", err.msg);
    if (a && b) {
        EB_CHECK(strcmp(a->format_string, net->format_string) == 0, "fs");
        EB_CHECK(same_structure(a, b), "loaded instance differs");
        EB_CHECK(a->intent && strstr(a->intent, "tree tensor network"),
                 "intent says what it is");
    }
    EB_CHECK(net->input_bytes == 2 * (16 + 12 * 64 + 2 * 112 + 4 * 256 +
                                      7 * 784 + 16 * 1996 * 7) * 8,
             "input bytes %lld", (long long)net->input_bytes);
    eb_instance_destroy(a);
    eb_instance_destroy(b);
    eb_jw_destroy(w);
    eb_lm_network_destroy(net);
    remove(file);
    rmdir(dir);
}

/* The shipped instances are what the generator makes today. */
static void test_shipped(void)
{
    static const struct { const char *file; eb_lm_params p; const char *name; }
        shipped[] = {
            {"instances/gen_lm_sentence_3_12d.json",
             {2, 12, 11, 1100, EB_F64}, "gen_lm_sentence_3_12d"},
            {"instances/gen_lm_sentence_4_4d.json",
             {3, 4, 11, 1900, EB_F64}, "gen_lm_sentence_4_4d"},
            {"instances/gen_lm_tiny_2_3d.json", {1, 3, 5, 8, EB_F64},
             "gen_lm_tiny_2_3d"},
        };
    for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
        eb_instance *file = NULL, *gen = build_instance(&shipped[i].p,
                                                        shipped[i].name);
        eb_error err;
        EB_CHECK(eb_load_instance(shipped[i].file, &file, &err) == EB_OK,
                 "%s", err.msg);
        if (file && gen) {
            EB_CHECK(strcmp(file->format_string, gen->format_string) == 0 &&
                         same_structure(file, gen) &&
                         strcmp(file->name, gen->name) == 0,
                     "%s: differs from gen lm's output", shipped[i].file);
        }
        eb_instance_destroy(file);
        eb_instance_destroy(gen);
    }
}

static void size_range(const eb_instance *inst, int64_t *lo, int64_t *hi)
{
    *lo = INT64_MAX, *hi = 0;
    for (int l = 0; l < inst->num_labels; l++) {
        if (inst->label_size[l] < *lo)
            *lo = inst->label_size[l];
        if (inst->label_size[l] > *hi)
            *hi = inst->label_size[l];
    }
}

static void test_dtypes(void)
{
    static const struct {
        eb_lm_params p;
        const char *name;
        int tensors, labels;
        int64_t largest;
    } pub_c[] = {
        {{3, 14, 11, 1900, EB_C128}, "lm_batch_likelihood_sentence_4_14c", 84,
         105, 1900},
        {{3, 16, 11, 1900, EB_C128}, "lm_batch_likelihood_sentence_4_16c", 84,
         105, 1900},
        {{3, 18, 11, 1900, EB_C128}, "lm_batch_likelihood_sentence_4_18c", 84,
         105, 1900},
        {{3, 20, 11, 1900, EB_C128}, "lm_batch_likelihood_sentence_4_20c", 84,
         105, 1900},
        {{4, 14, 11, 3500, EB_C128}, "lm_batch_likelihood_sentence_5_14c", 178,
         229, 3500},
        {{4, 16, 11, 3500, EB_C128}, "lm_batch_likelihood_sentence_5_16c", 178,
         229, 3500},
        {{4, 18, 11, 3500, EB_C128}, "lm_batch_likelihood_sentence_5_18c", 178,
         229, 3500},
    };
    for (size_t i = 0; i < sizeof pub_c / sizeof *pub_c; i++) {
        eb_lm_params real = pub_c[i].p;
        real.dt = EB_F64;
        eb_instance *c = build_instance(&pub_c[i].p, NULL);
        eb_instance *d = build_instance(&real, NULL);
        if (!c || !d) {
            eb_instance_destroy(c);
            eb_instance_destroy(d);
            continue;
        }
        const char *name = pub_c[i].name;
        int64_t lo, hi;
        size_range(c, &lo, &hi);
        EB_CHECK(strcmp(c->name, name) == 0, "%s: got %s", name, c->name);
        EB_CHECK(c->dt == EB_C128 && strcmp(c->dtype, "complex128") == 0,
                 "%s: dtype %s", name, c->dtype);
        EB_CHECK(c->num_tensors == pub_c[i].tensors &&
                     c->num_labels == pub_c[i].labels && lo == 11 &&
                     hi == pub_c[i].largest,
                 "%s: %d tensors, %d labels, sizes %lld..%lld", name,
                 c->num_tensors, c->num_labels, (long long)lo, (long long)hi);
        EB_CHECK(same_structure(c, d) &&
                     strcmp(c->format_string, d->format_string) == 0,
                 "%s: the float64 network's structure", name);
        if (pub_c[i].p.depth == 3) {
            char *canon = canonical(c);
            EB_CHECK(strcmp(canon, canon_d3) == 0, "%s: the public structure",
                     name);
            free(canon);
        }
        eb_instance_destroy(c);
        eb_instance_destroy(d);
    }
    /* The other dtypes: names, bytes, the file's dtype through the loader
     * (it reads a float64 file here; other dtypes once it accepts them). */
    static const struct { eb_dtype dt; const char *name; } other[] = {
        {EB_F64, "lm_batch_likelihood_v5_2_3d_b8"},
        {EB_F32, "lm_batch_likelihood_v5_2_3d_b8_float32"},
        {EB_C128, "lm_batch_likelihood_v5_2_3c_b8"},
        {EB_C64, "lm_batch_likelihood_v5_2_3c_b8_complex64"},
    };
    int64_t f64_bytes = 0;
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        eb_lm_params p = {1, 3, 5, 8, other[i].dt};
        eb_lm_network *net;
        eb_error err;
        if (eb_lm_build(&p, NULL, &net, &err)) {
            EB_CHECK(0, "%s: %s", other[i].name, err.msg);
            continue;
        }
        if (other[i].dt == EB_F64)
            f64_bytes = net->input_bytes;
        EB_CHECK(strcmp(net->name, other[i].name) == 0, "got %s", net->name);
        EB_CHECK(net->input_bytes * 8 ==
                     f64_bytes * (int64_t)eb_dtype_size(other[i].dt),
                 "%s: input bytes %lld", net->name,
                 (long long)net->input_bytes);
        eb_jw *w = eb_jw_create(0);
        eb_lm_write_json(net, w);
        char *f = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&f, &len);
        eb_jw_write_line(w, mem);
        fclose(mem);
        char want[64];
        snprintf(want, sizeof want, "\"dtype\":\"%s\"",
                 eb_dtype_name(other[i].dt));
        EB_CHECK(f && strstr(f, want) &&
                     (other[i].dt == EB_F64) == !strstr(f, "--dtype"),
                 "%s: JSON names the dtype: %s", net->name, f ? f : "");
        free(f);
        eb_jw_destroy(w);
        eb_lm_network_destroy(net);
    }
    /* The limits count the dtype's bytes: 200^4 elements are 11.9 GiB of
     * float64, 23.8 GiB of complex128. */
    expect_error((eb_lm_params){3, 200, 11, 10, EB_C128}, EB_ERR_INVALID,
                 "would take 23.8 GiB");
    expect_error((eb_lm_params){3, 200, 11, 10, EB_F64}, EB_ERR_INVALID,
                 "would take 11.9 GiB");
    expect_error((eb_lm_params){1, 3, 5, 8, EB_DTYPE_COUNT}, EB_ERR_USAGE,
                 "--dtype");
}

int main(void)
{
    test_alphabet();
    test_counts();
    test_validation();
    test_names();
    test_publics();
    test_roundtrip();
    test_shipped();
    test_dtypes();
    return eb_check_done("test_lmgen");
}
