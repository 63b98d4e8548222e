/*
 * cmd_gen: `einsum-bench gen lm ...`, the instance generator command.
 *
 * Parses the options, builds the network with lmgen and writes the instance
 * JSON to stdout, or with -o to FILE atomically (FILE.tmp, then rename), so
 * an interrupted or failed run never leaves half a file. Messages go to
 * stderr prefixed "einsum-bench: ". Exit: 0 ok, 1 the file could not be
 * written, 2 usage error or parameters out of range.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "jsonw.h"
#include "lmgen.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* "einsum-bench: gen lm: ...", pointing to --help for usage errors. */
#define gen_error(code, ...)                                                 \
    eb_arg_fail((code), "gen lm", (code) == EXIT_USAGE ? "gen" : NULL,       \
                __VA_ARGS__)

static const char gen_usage[] =
    "usage: einsum-bench gen lm --depth D --hidden H --vocab V --batch B\n"
    "                           [--dtype DTYPE] [--name NAME] [-o FILE]\n"
    "\n"
    "Writes a language-model likelihood instance (DESIGN 3.1): the squared\n"
    "amplitude of a MERA-like tree tensor network evaluated on a batch of\n"
    "token windows, as in the public lm_batch_likelihood_* instances.\n"
    "\n"
    "  --depth D    levels of the network, 1..8 (the public set's\n"
    "               lm_batch_likelihood_<data>_<D+1>_<H>d)\n"
    "  --hidden H   size of every internal leg\n"
    "  --vocab V    size of every observable (token) leg; 11 is 'sentence',\n"
    "               7 is 'brackets'\n"
    "  --batch B    size of the batch label (token windows)\n"
    "  --dtype T    float64 (default), float32, complex128 or complex64: the\n"
    "               same network; complex128 gives the public set's\n"
    "               lm_batch_likelihood_<data>_<D+1>_<H>c instances\n"
    "  --name NAME  instance name (default: the public set's naming rule,\n"
    "               plus _b<B> when B is not the public batch size)\n"
    "  -o FILE      write to FILE (named NAME.json) instead of stdout\n"
    "\n"
    "Operands: 2 * (2^(D+2) - D - 3) network tensors plus 2 * 2^(D+1) token\n"
    "matrices. Limits: 2 GiB per operand and 4 GiB of inputs in all.\n"
    "Example: einsum-bench gen lm --depth 2 --hidden 12 --vocab 11 "
    "--batch 1100\n";



static int parse_i64(const char *opt, const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end)
        return gen_error(EXIT_USAGE, "%s: '%s' is not an integer", opt, v);
    if (errno == ERANGE)
        return gen_error(EXIT_USAGE, "%s: '%s' out of range", opt, v);
    *out = x;
    return 0;
}

typedef struct {
    eb_lm_params p;
    int given[4];
    const char *name;
    const char *out;
} gen_opts;

static const char *const param_names[4] = {"--depth", "--hidden", "--vocab",
                                           "--batch"};

/* Store parameter k (an index into param_names) from its text. */
static int set_param(gen_opts *g, int k, const char *v)
{
    int64_t x = 0;
    if (!*v)
        return gen_error(EXIT_USAGE, "%s: missing value", param_names[k]);
    if (parse_i64(param_names[k], v, &x))
        return EXIT_USAGE;
    if (k == 0 && (x < INT_MIN || x > INT_MAX))
        return gen_error(EXIT_USAGE, "--depth: %s out of range (expected "
                         "1..%d)", v, EB_LM_MAX_DEPTH);
    if (k == 0)
        g->p.depth = (int)x;
    else
        *(k == 1 ? &g->p.hidden : k == 2 ? &g->p.vocab : &g->p.batch) = x;
    g->given[k] = 1;
    return 0;
}

static int parse_gen(int argc, char **argv, gen_opts *g)
{
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        int k = 0;
        for (; k < 4 && !(v = eb_arg_value(argc, argv, &i, param_names[k])); k++)
            ;
        if (v) {
            if (set_param(g, k, v))
                return EXIT_USAGE;
            continue;
        }
        if ((v = eb_arg_value(argc, argv, &i, "--dtype"))) {
            if (eb_dtype_parse(v, &g->p.dt) != 0)
                return gen_error(EXIT_USAGE, "--dtype: '%s' is not a dtype "
                                 "(expected float64, float32, complex128 or "
                                 "complex64)", v);
            continue;
        }
        if ((v = eb_arg_value(argc, argv, &i, "--name")))
            g->name = v;
        else if ((v = eb_arg_value(argc, argv, &i, "-o")))
            g->out = v;
        else
            return gen_error(EXIT_USAGE, "unknown option '%s'", arg);
        if (!*v)
            return gen_error(EXIT_USAGE, "%s: missing value", arg);
    }
    for (int k = 0; k < 4; k++)
        if (!g->given[k])
            return gen_error(EXIT_USAGE, "%s is required", param_names[k]);
    return 0;
}

/* The loader insists that an instance file is named <name>.json. */
static int check_file_name(const char *file, const char *name)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n < 5 || strcmp(base + n - 5, ".json") != 0)
        return 0;
    if (n - 5 == strlen(name) && strncmp(base, name, n - 5) == 0)
        return 0;
    return gen_error(EXIT_USAGE,
                     "-o: file name '%s' does not match the instance name "
                     "'%s' (an instance file is <name>.json: use --name or "
                     "-o %s.json)", base, name, name);
}

/* Write the document atomically; 0 or the exit status of the failure. */
static int write_atomic(const char *file, const eb_jw *w)
{
    eb_error err;
    if (eb_jw_write_file(w, file, &err))
        return gen_error(EXIT_FAIL, "%s", err.msg);
    return 0;
}

static int emit(const eb_lm_network *net, const char *out)
{
    eb_jw *w = eb_jw_create(2);
    if (!w)
        return gen_error(EXIT_FAIL, "out of memory");
    eb_lm_write_json(net, w);
    int rc = 0;
    if (!eb_jw_ok(w))
        rc = gen_error(EXIT_FAIL, "out of memory");
    else if (!out || strcmp(out, "-") == 0)
        rc = eb_jw_write_line(w, stdout)
                 ? gen_error(EXIT_FAIL, "cannot write to stdout")
                 : 0;
    else
        rc = write_atomic(out, w);
    if (!rc && out && strcmp(out, "-") != 0)
        fprintf(stderr, "einsum-bench: gen lm: %s: %d operands, %.1f MiB of "
                "inputs -> %s\n", net->name, net->num_tensors,
                (double)net->input_bytes / (1024.0 * 1024.0), out);
    eb_jw_destroy(w);
    return rc;
}

int eb_cmd_gen(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(gen_usage, stdout);
            return 0;
        }
    if (argc < 2)
        return gen_error(EXIT_USAGE, "no generator given (expected 'lm')");
    if (strcmp(argv[1], "lm") != 0)
        return gen_error(EXIT_USAGE, "unknown generator '%s' (expected 'lm')",
                         argv[1]);
    gen_opts g = {0};
    if (parse_gen(argc, argv, &g))
        return EXIT_USAGE;
    eb_lm_network *net;
    eb_error err;
    eb_status st = eb_lm_build(&g.p, g.name, &net, &err);
    if (st)
        return gen_error(st == EB_ERR_NOMEM ? EXIT_FAIL : EXIT_USAGE, "%s",
                         err.msg);
    int rc = g.out && strcmp(g.out, "-") != 0
                 ? check_file_name(g.out, net->name)
                 : 0;
    if (!rc)
        rc = emit(net, g.out);
    eb_lm_network_destroy(net);
    return rc;
}
