/*
 * replay: runs a fuzz harness over its regression corpus with the normal
 * build (gcc, no libFuzzer), as `make test` does: every file of
 * tests/fuzz/<NAME>/ (or of the folders given) once. A crash or a
 * sanitizer report under `make sanitize` fails the test; otherwise it
 * prints "<name>: N passed, 0 failed" (N inputs replayed).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#ifndef EB_FUZZ_NAME
#error "build with -DEB_FUZZ_NAME=\"instance\" (the corpus folder)"
#endif

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *p = realloc(buf, cap *= 2);
            if (!p)
                free(buf);
            buf = p;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int replay_dir(const char *dir, int *count)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort), bad = n < 0;
    for (int k = 0; k < n; k++) {
        char path[4096];
        if (list[k]->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, list[k]->d_name);
            if (replay_file(path) == 0)
                (*count)++;
            else
                bad = 1;
        }
        free(list[k]);
    }
    free(n >= 0 ? list : NULL);
    return bad;
}

int main(int argc, char **argv)
{
    int count = 0, bad = 0;
    if (argc < 2)
        bad = replay_dir("tests/fuzz/" EB_FUZZ_NAME, &count);
    for (int a = 1; a < argc; a++)
        bad |= replay_dir(argv[a], &count);
    printf("test_fuzz_%s: %d passed, %d failed\n", EB_FUZZ_NAME, count,
           bad);
    return bad;
}
