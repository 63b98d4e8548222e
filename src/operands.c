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

/* Value i (0-based) of operand k's stream. */
static double random_value(uint64_t base, int64_t i)
{
    uint64_t v = mix64(base + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ULL);
    return (double)(v >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

static uint64_t random_base(uint64_t seed, int k)
{
    return mix64(seed + 0x632BE59BD9B4E019ULL * (uint64_t)(k + 1));
}

void eb_fill_random(double *dst, int64_t n, uint64_t seed, int k)
{
    uint64_t base = random_base(seed, k);
    for (int64_t i = 0; i < n; i++)
        dst[i] = random_value(base, i);
}

void eb_fill_random_dt(void *dst, eb_dtype dt, int64_t n, uint64_t seed,
                       int k)
{
    /* A complex element is two consecutive values (real, imaginary). */
    int64_t vals = eb_dtype_is_complex(dt) ? 2 * n : n;
    if (eb_dtype_real(dt) == EB_F64) {
        eb_fill_random(dst, vals, seed, k);
        return;
    }
    float *out = dst;
    uint64_t base = random_base(seed, k);
    for (int64_t i = 0; i < vals; i++)
        out[i] = (float)random_value(base, i);
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
                          void *buf, int64_t n, eb_error *err)
{
    if (fill->kind == EB_FILL_ZEROS) {
        /* All-zero bytes are 0.0 in every dtype; touches every page. */
        memset(buf, 0, (size_t)n * eb_dtype_size(inst->dt));
        return EB_OK;
    }
    if (fill->kind == EB_FILL_RANDOM) {
        eb_fill_random_dt(buf, inst->dt, n, fill->seed, k);
        return EB_OK;
    }
    char file[4096], what[32];
    snprintf(file, sizeof file, "%s/%d.npy", fill->dir, k);
    snprintf(what, sizeof what, "operand %d", k);
    int64_t shape[EB_MAX_RANK];
    const eb_term *t = &inst->inputs[k];
    for (int a = 0; a < t->rank; a++)
        shape[a] = inst->label_size[t->ids[a]];
    return eb_npy_read(file, shape, t->rank, inst->dt, buf, what, err);
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
    size_t esize = eb_dtype_size(inst->dt);
    for (int k = 0; k < n; k++) {
        int64_t elems = eb_instance_operand_elems(inst, k);
        void *buf = NULL;
        if ((uint64_t)elems > SIZE_MAX / esize ||
            !(buf = eb_mem_alloc((size_t)elems * esize))) {
            eb_operands_destroy(ops);
            return eb_error_set(err, EB_ERR_NOMEM,
                                "%s: out of memory for operand %d (%" PRId64
                                " elements)", inst->file, k, elems);
        }
        ops->bufs[k] = buf;
        ops->bytes += elems * (int64_t)esize;
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
