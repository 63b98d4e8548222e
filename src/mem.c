/* mem: aligned large buffers with transparent-huge-page advice. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1 /* madvise, when built without -D_GNU_SOURCE */
#endif
#include "mem.h"

#include <stdlib.h>
#include <sys/mman.h>

enum { HUGE_PAGE_BYTES = 2 << 20 };

void *eb_mem_alloc(size_t bytes)
{
    if (bytes < 1)
        bytes = 1;
    int huge = bytes >= EB_MEM_HUGE_MIN_BYTES;
    void *buf = NULL;
    if (posix_memalign(&buf, huge ? HUGE_PAGE_BYTES : 64, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Only whole huge pages: the tail stays in small pages. Advice that
     * the kernel refuses (no THP support) leaves small pages: not an
     * error. */
    if (huge)
        (void)madvise(buf, bytes & ~(size_t)(HUGE_PAGE_BYTES - 1),
                      MADV_HUGEPAGE);
#endif
    return buf;
}

void eb_mem_free(void *buf) { free(buf); }
