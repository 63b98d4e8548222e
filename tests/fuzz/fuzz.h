/*
 * fuzz.h: shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c) and the
 * replay driver (replay.c). The loaders read files by name, so each input
 * goes into one memfd and is read back as /proc/self/fd/N: a regular file,
 * no disk traffic, no temporary names.
 */
#ifndef EB_FUZZ_H
#define EB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A file name holding exactly data[0..size): the same memfd each call
 * (slot 0 or 1, so a harness can hold two files). NULL on failure. */
static inline const char *eb_fuzz_file(int slot, const uint8_t *data,
                                       size_t size)
{
    static int fd[2] = {-1, -1};
    static char name[2][64];
    if (fd[slot] < 0) {
        fd[slot] = memfd_create("eb-fuzz", MFD_CLOEXEC);
        if (fd[slot] < 0)
            return NULL;
        snprintf(name[slot], sizeof name[slot], "/proc/self/fd/%d", fd[slot]);
    }
    if (ftruncate(fd[slot], 0) != 0 ||
        (size && pwrite(fd[slot], data, size, 0) != (ssize_t)size))
        return NULL;
    return name[slot];
}

#endif
