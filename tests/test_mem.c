/* test_mem: the engine's buffers (mem.h): 64-byte alignment for every
 * size, 2 MiB alignment and the huge-page advice (the "hg" flag of the
 * mapping in /proc/self/smaps) from EB_MEM_HUGE_MIN_BYTES on, none below;
 * every byte writable; NULL freed quietly. Whether the kernel then backs
 * the advised range with huge pages depends on its free memory, so that
 * is not asserted. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mem.h"

/* 1 if the smaps mapping containing p carries VmFlags "hg", 0 if not, -1
 * if smaps cannot tell. */
static int advised_huge(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, found = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
            line[0] != 'V') {
            in = a >= lo && a < hi;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

static int thp_supported(void)
{
    return access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) == 0;
}

static void test_sizes(void)
{
    const size_t sizes[] = {1, 8, 4095, 4096, 100000,
                            EB_MEM_HUGE_MIN_BYTES - 8, EB_MEM_HUGE_MIN_BYTES,
                            EB_MEM_HUGE_MIN_BYTES + 12345, 15 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *p = eb_mem_alloc(n);
        EB_CHECK(p != NULL, "%zu bytes: allocated", n);
        if (!p)
            continue;
        int huge = n >= EB_MEM_HUGE_MIN_BYTES;
        uintptr_t align = huge ? (uintptr_t)2 << 20 : 64;
        EB_CHECK((uintptr_t)p % align == 0, "%zu bytes at %p: %lu-aligned", n,
                 (void *)p, (unsigned long)align);
        memset(p, 0xab, n);
        EB_CHECK(p[0] == 0xab && p[n - 1] == 0xab, "%zu bytes: writable", n);
        if (thp_supported() && n >= 4096) {
            int h = advised_huge(p);
            if (h >= 0)
                EB_CHECK(h == huge, "%zu bytes: huge-page advice %d, want %d",
                         n, h, huge);
        }
        eb_mem_free(p);
    }
    /* Zero bytes still gives a buffer that can be freed. */
    void *z = eb_mem_alloc(0);
    EB_CHECK(z != NULL, "0 bytes: a buffer");
    eb_mem_free(z);
    eb_mem_free(NULL);
}

int main(void)
{
    test_sizes();
    return eb_check_done("test_mem");
}
