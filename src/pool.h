/*
 * pool: the buffer pool an execution scope owns (eager mode's allocator).
 *
 * eb_pool_get hands out a free buffer of at least n bytes (best fit), or
 * allocates a new 64-byte-aligned one and touches every page of it, so that
 * steady-state samples reuse memory and take no page faults. eb_pool_put
 * returns a buffer; its contents stay intact until it is handed out again
 * (the runner reads the last sample's output after releasing it). Buffers
 * are freed only by eb_pool_destroy.
 *
 * Ownership: the pool owns every buffer it hands out.
 */
#ifndef EB_POOL_H
#define EB_POOL_H

#include <stdint.h>

typedef struct eb_pool eb_pool;

eb_pool *eb_pool_create(void);
void eb_pool_destroy(eb_pool *pool);        /* NULL is fine */

/* A buffer of at least `bytes` bytes (the caller multiplies its element
 * count by the dtype's size); NULL only when the system is out of memory. */
void *eb_pool_get(eb_pool *pool, int64_t bytes);
void eb_pool_put(eb_pool *pool, void *buf);  /* NULL is fine */

int64_t eb_pool_bytes(const eb_pool *pool);   /* all buffers, in use or not */
int64_t eb_pool_system_allocs(const eb_pool *pool); /* allocations made */

#endif
