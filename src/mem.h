/*
 * mem: the engine's large buffers (operands, the eager pool, the trace
 * arena). Every buffer is 64-byte aligned; one of EB_MEM_HUGE_MIN_BYTES or
 * more is aligned to 2 MiB and advised to the kernel as transparent huge
 * pages (madvise MADV_HUGEPAGE, what NumPy does for its large arrays on
 * Linux), so that the strided reads of a 15 MB intermediate miss the TLB
 * once per 2 MiB instead of once per 4 KiB page. Where the kernel's THP
 * mode is "never" the advice changes nothing; the records give the mode
 * (sysinfo "thp"). Callers still touch every page before timing (STYLE 7).
 *
 * Ownership: the caller owns what eb_mem_alloc returns and gives it back
 * with eb_mem_free (NULL is fine).
 */
#ifndef EB_MEM_H
#define EB_MEM_H

#include <stddef.h>

enum { EB_MEM_HUGE_MIN_BYTES = 4 << 20 };

/* A buffer of at least bytes (0 counts as 1); NULL when out of memory. */
void *eb_mem_alloc(size_t bytes);
void eb_mem_free(void *buf);

#endif
