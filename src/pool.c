/* pool: best-fit reuse of page-touched, aligned buffers. */
#include "pool.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"

typedef struct {
    void *buf;
    int64_t cap; /* bytes */
    int in_use;
} entry;

struct eb_pool {
    entry *e;
    int n, cap;
    int64_t bytes;
    int64_t allocs;
};

eb_pool *eb_pool_create(void)
{
    return calloc(1, sizeof(eb_pool));
}

void eb_pool_destroy(eb_pool *pool)
{
    if (!pool)
        return;
    for (int k = 0; k < pool->n; k++)
        eb_mem_free(pool->e[k].buf);
    free(pool->e);
    free(pool);
}

void *eb_pool_get(eb_pool *pool, int64_t bytes)
{
    if (bytes < 1)
        bytes = 1;
    int best = -1;
    for (int k = 0; k < pool->n; k++)
        if (!pool->e[k].in_use && pool->e[k].cap >= bytes &&
            (best < 0 || pool->e[k].cap < pool->e[best].cap))
            best = k;
    if (best >= 0) {
        pool->e[best].in_use = 1;
        return pool->e[best].buf;
    }
    if (pool->n == pool->cap) {
        int cap = pool->cap ? 2 * pool->cap : 16;
        entry *p = realloc(pool->e, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        pool->e = p;
        pool->cap = cap;
    }
    /* Round to whole 4 KiB pages: the tail would be wasted anyway. */
    if (bytes > INT64_MAX - 4095 || (uint64_t)bytes > SIZE_MAX - 4095)
        return NULL;
    int64_t cap = (bytes + 4095) & ~(int64_t)4095;
    void *buf = eb_mem_alloc((size_t)cap);
    if (!buf)
        return NULL;
    /* Touch every page now, outside the samples that will reuse it. */
    memset(buf, 0, (size_t)cap);
    pool->e[pool->n++] = (entry){buf, cap, 1};
    pool->bytes += cap;
    pool->allocs++;
    return buf;
}

void eb_pool_put(eb_pool *pool, void *buf)
{
    if (!buf)
        return;
    for (int k = 0; k < pool->n; k++)
        if (pool->e[k].buf == buf) {
            pool->e[k].in_use = 0;
            return;
        }
}

int64_t eb_pool_bytes(const eb_pool *pool) { return pool->bytes; }
int64_t eb_pool_system_allocs(const eb_pool *pool) { return pool->allocs; }
