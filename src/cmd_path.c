/*
 * cmd_path: `einsum-bench path ...`, compute a contraction path for an
 * instance with pathfind and write it as a path file (DESIGN 3.2).
 *
 * Without -o the path file (this one strategy) goes to stdout. With -o FILE
 * an existing FILE must be a valid path file for the same instance: its
 * other strategies are kept in their order and this one is replaced or
 * appended; the result is written atomically (FILE.tmp, then rename).
 * Messages go to stderr prefixed "einsum-bench: ". Exit: 0 ok, 1 the file
 * could not be written (or an internal failure), 2 usage or input error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "jsonw.h"
#include "load.h"
#include "pathfind.h"

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

#define path_error(code, ...) eb_arg_fail((code), "path", NULL, __VA_ARGS__)
/* A bad command line: the message, then where usage is. */
#define usage_error(...) eb_arg_fail(EXIT_USAGE, "path", "path", __VA_ARGS__)

static const char path_usage[] =
    "usage: einsum-bench path [--minimize flops|size] [--strategy NAME]\n"
    "                         [--trials N] [--seed N] INSTANCE [-o FILE]\n"
    "\n"
    "Finds a contraction path for INSTANCE (randomized greedy trials, each\n"
    "polished by exact re-optimization of small subtrees) and writes it as a\n"
    "path file (DESIGN 3.2) with recomputed log10_flops and log2_size.\n"
    "\n"
    "  --minimize flops|size  total flops first, or largest intermediate\n"
    "                         first (default flops)\n"
    "  --strategy NAME        key of the path (default opt_flops for flops,\n"
    "                         opt_size for size)\n"
    "  --trials N             greedy trials (default: by operand count)\n"
    "  --seed N               seed of the randomized trials (default fixed)\n"
    "  -o FILE                write FILE, keeping its other strategies if it\n"
    "                         is already a path file of this instance;\n"
    "                         without -o the path file goes to stdout\n"
    "\n"
    "The search is deterministic: same instance and options, same path.\n"
    "Example: einsum-bench path --minimize size instances/x.json "
    "-o paths/x.json\n";



/* Exit status of a failed library call: bad input is 2, the rest 1. */
static int status_exit(eb_status st)
{
    return st == EB_ERR_NOMEM || st == EB_ERR_INTERNAL ? EXIT_FAIL
                                                        : EXIT_USAGE;
}


typedef struct {
    eb_pathfind_opts find;
    const char *strategy;
    const char *instance;
    const char *out;
} path_opts;

static int parse_count(const char *opt, const char *v, unsigned long long hi,
                       unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || *v == '-' || errno == ERANGE || x > hi)
        return usage_error("%s: '%s' is not an integer in 0..%llu", opt, v,
                           hi);
    *out = x;
    return 0;
}

/* One option at argv[*i] that takes a value; 1 if it was not one. */
static int parse_valued(int argc, char **argv, int *i, path_opts *o)
{
    const char *arg = argv[*i], *v;
    unsigned long long x;
    if ((v = eb_arg_value(argc, argv, i, "--minimize"))) {
        if (eb_minimize_parse(v, &o->find.minimize))
            return usage_error("--minimize: '%s' is not flops or size", v);
    } else if ((v = eb_arg_value(argc, argv, i, "--strategy"))) {
        o->strategy = v;
    } else if ((v = eb_arg_value(argc, argv, i, "--trials"))) {
        if (parse_count("--trials", v, 1000000, &x))
            return EXIT_USAGE;
        o->find.trials = (int)x;
    } else if ((v = eb_arg_value(argc, argv, i, "--seed"))) {
        if (parse_count("--seed", v, UINT64_MAX, &x))
            return EXIT_USAGE;
        o->find.seed = x;
    } else if ((v = eb_arg_value(argc, argv, i, "-o"))) {
        o->out = v;
    } else {
        return 1;
    }
    if (!*v)
        return usage_error("%s: missing value", arg);
    return 0;
}

static int parse_path(int argc, char **argv, path_opts *o)
{
    eb_pathfind_opts_default(&o->find);
    for (int i = 1; i < argc; i++) {
        int rc = parse_valued(argc, argv, &i, o);
        if (rc == EXIT_USAGE)
            return rc;
        if (rc == 0)
            continue;
        if (argv[i][0] == '-' && argv[i][1])
            return usage_error("unknown option '%s'", argv[i]);
        if (o->instance)
            return usage_error("more than one instance ('%s' and '%s')",
                               o->instance, argv[i]);
        o->instance = argv[i];
    }
    if (!o->instance)
        return usage_error("no instance given");
    if (!o->strategy)
        o->strategy = o->find.minimize == EB_MINIMIZE_SIZE ? "opt_size"
                                                            : "opt_flops";
    if (!*o->strategy)
        return usage_error("--strategy: empty name");
    return 0;
}

static void write_path(eb_jw *w, const eb_path *p)
{
    eb_jw_obj_begin(w, p->strategy);
    eb_jw_arr_begin(w, "path");
    for (int s = 0; s < p->num_steps; s++) {
        eb_jw_arr_begin_inline(w, NULL);
        eb_jw_int(w, NULL, p->steps[s].i);
        eb_jw_int(w, NULL, p->steps[s].j);
        eb_jw_arr_end(w);
    }
    eb_jw_arr_end(w);
    eb_jw_fixed(w, "log10_flops", p->log10_flops, 4);
    eb_jw_fixed(w, "log2_size", p->log2_size, 4);
    eb_jw_obj_end(w);
}

/* The path file: old's strategies in order, fresh replacing its namesake
 * or appended. */
static void write_pathfile(eb_jw *w, const char *instance,
                           const eb_pathset *old, const eb_path *fresh)
{
    int replaced = 0;
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "instance", instance);
    eb_jw_obj_begin(w, "paths");
    for (int k = 0; old && k < old->count; k++) {
        const eb_path *p = &old->paths[k];
        int same = strcmp(p->strategy, fresh->strategy) == 0;
        write_path(w, same ? fresh : p);
        replaced |= same;
    }
    if (!replaced)
        write_path(w, fresh);
    eb_jw_obj_end(w);
    eb_jw_obj_end(w);
}

/* Write the document atomically; 0 or the exit status of the failure. */
static int write_atomic(const char *file, const eb_jw *w)
{
    eb_error err;
    if (eb_jw_write_file(w, file, &err))
        return path_error(EXIT_FAIL, "%s", err.msg);
    return 0;
}

/* The existing -o file's strategies, or NULL when there is no such file. */
static int load_old(const char *file, const eb_instance *inst,
                    eb_pathset **old)
{
    struct stat sb;
    eb_error err;
    *old = NULL;
    if (stat(file, &sb) != 0 && errno == ENOENT)
        return 0;
    eb_status st = eb_load_pathfile(file, inst, old, &err);
    if (st)
        return path_error(status_exit(st), "%s (not updating it; remove it "
                          "or choose another -o)", err.msg);
    return 0;
}

static int emit(const path_opts *o, const eb_instance *inst,
                const eb_pathset *old, const eb_path *p)
{
    eb_jw *w = eb_jw_create(2);
    if (!w)
        return path_error(EXIT_FAIL, "out of memory");
    write_pathfile(w, inst->name, old, p);
    int rc = 0, to_file = o->out && strcmp(o->out, "-") != 0;
    if (!eb_jw_ok(w))
        rc = path_error(EXIT_FAIL, "out of memory");
    else if (!to_file)
        rc = eb_jw_write_line(w, stdout)
                 ? path_error(EXIT_FAIL, "cannot write to stdout")
                 : 0;
    else
        rc = write_atomic(o->out, w);
    eb_jw_destroy(w);
    if (!rc)
        fprintf(stderr, "einsum-bench: path: %s: %s (minimize %s): "
                "log10_flops %.4f, log2_size %.4f, %d steps%s%s\n",
                inst->name, p->strategy, eb_minimize_str(o->find.minimize),
                p->log10_flops, p->log2_size, p->num_steps,
                to_file ? " -> " : "", to_file ? o->out : "");
    return rc;
}

int eb_cmd_path(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(path_usage, stdout);
            return 0;
        }
    path_opts o = {0};
    if (parse_path(argc, argv, &o))
        return EXIT_USAGE;
    eb_instance *inst = NULL;
    eb_pathset *old = NULL;
    eb_path p = {0};
    eb_error err;
    eb_status st = eb_load_instance(o.instance, &inst, &err);
    int rc = st ? path_error(status_exit(st), "%s", err.msg) : 0;
    if (!rc && o.out && strcmp(o.out, "-") != 0)
        rc = load_old(o.out, inst, &old);
    if (!rc && (st = eb_pathfind(inst, &o.find, o.strategy, &p, &err)))
        rc = path_error(status_exit(st), "%s", err.msg);
    if (!rc)
        rc = emit(&o, inst, old, &p);
    eb_path_free(&p);
    eb_pathset_destroy(old);
    eb_instance_destroy(inst);
    return rc;
}
