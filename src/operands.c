/* operands: input allocation and the seeded, reproducible fill. */
#include "operands.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "npy.h"

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void eb_fill_random(double *dst, int64_t n, uint64_t seed, int k)
{
    uint64_t base = mix64(seed + 0x632BE59BD9B4E019ULL * (uint64_t)(k + 1));
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = mix64(base + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
        dst[i] = (double)(v >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    }
}

int eb_fill_parse(const char *s, eb_fill *fill)
{
    memset(fill, 0, sizeof *fill);
    if (strcmp(s, "zeros") == 0) {
        fill->kind = EB_FILL_ZEROS;
        return 0;
    }
    if (strncmp(s, "random", 6) != 0)
        return -1;
    fill->kind = EB_FILL_RANDOM;
    fill->seed = 1;
    if (s[6] == '\0')
        return 0;
    if (s[6] != ':' || s[7] == '\0' || s[7] == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s + 7, &end, 10);
    if (errno || *end)
        return -1;
    fill->seed = v;
    return 0;
}

void eb_operands_destroy(eb_operands *ops)
{
    if (!ops)
        return;
    for (int k = 0; ops->bufs && k < ops->count; k++)
        eb_mem_free(ops->bufs[k]);
    free(ops->bufs);
    free(ops->views);
    free(ops);
}

static eb_status fill_one(const eb_instance *inst, const eb_fill *fill, int k,
                          double *buf, int64_t n, eb_error *err)
{
    if (fill->kind == EB_FILL_ZEROS) {
        memset(buf, 0, (size_t)n * sizeof(double)); /* touches every page */
        return EB_OK;
    }
    if (fill->kind == EB_FILL_RANDOM) {
        eb_fill_random(buf, n, fill->seed, k);
        return EB_OK;
    }
    char file[4096], what[32];
    snprintf(file, sizeof file, "%s/%d.npy", fill->dir, k);
    snprintf(what, sizeof what, "operand %d", k);
    int64_t shape[EB_MAX_RANK];
    const eb_term *t = &inst->inputs[k];
    for (int a = 0; a < t->rank; a++)
        shape[a] = inst->label_size[t->ids[a]];
    return eb_npy_read(file, shape, t->rank, buf, what, err);
}

eb_status eb_operands_create(const eb_instance *inst, const eb_fill *fill,
                             eb_operands **out, eb_error *err)
{
    *out = NULL;
    eb_operands *ops = calloc(1, sizeof *ops);
    int n = inst->num_tensors;
    if (ops) {
        ops->bufs = calloc((size_t)n, sizeof *ops->bufs);
        ops->views = calloc((size_t)n, sizeof *ops->views);
    }
    if (!ops || !ops->bufs || !ops->views) {
        eb_operands_destroy(ops);
        return eb_error_set(err, EB_ERR_NOMEM, "out of memory");
    }
    ops->count = n;
    for (int k = 0; k < n; k++) {
        int64_t elems = eb_instance_operand_elems(inst, k);
        void *buf = NULL;
        if ((uint64_t)elems > SIZE_MAX / sizeof(double) ||
            !(buf = eb_mem_alloc((size_t)elems * sizeof(double)))) {
            eb_operands_destroy(ops);
            return eb_error_set(err, EB_ERR_NOMEM,
                                "%s: out of memory for operand %d (%" PRId64
                                " elements)", inst->file, k, elems);
        }
        ops->bufs[k] = buf;
        ops->bytes += elems * (int64_t)sizeof(double);
        eb_status st = fill_one(inst, fill, k, buf, elems, err);
        if (st) {
            eb_operands_destroy(ops);
            return st;
        }
        eb_view_compact(&ops->views[k], buf, inst->inputs[k].ids,
                        inst->inputs[k].rank, inst->label_size);
    }
    *out = ops;
    return EB_OK;
}
