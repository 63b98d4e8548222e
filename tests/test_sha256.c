/* test_sha256: the FIPS 180-4 test vectors, block-boundary lengths fed in
 * odd pieces, and files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sha256.h"

static void digest(const char *msg, size_t n, size_t piece, char hex[65])
{
    eb_sha256 s;
    eb_sha256_init(&s);
    for (size_t k = 0; k < n; k += piece)
        eb_sha256_update(&s, msg + k, n - k < piece ? n - k : piece);
    eb_sha256_hex(&s, hex);
}

int main(void)
{
    char hex[65];
    digest("", 0, 1, hex);
    EB_CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
                         "95991b7852b855") == 0, "empty: %s", hex);
    digest("abc", 3, 1, hex);
    EB_CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb4"
                         "10ff61f20015ad") == 0, "abc: %s", hex);
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    for (size_t piece = 1; piece <= 64; piece += 7) {
        digest(two, strlen(two), piece, hex);
        EB_CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff21"
                             "67f6ecedd419db06c1") == 0, "448 bits, pieces "
                 "of %zu: %s", piece, hex);
    }
    static char million[1000000];
    memset(million, 'a', sizeof million);
    digest(million, sizeof million, 4099, hex);
    EB_CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e04"
                         "6d39ccc7112cd0") == 0, "a million a: %s", hex);

    char file[] = "/tmp/test_sha256.XXXXXX";
    int fd = mkstemp(file);
    EB_CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) {
        EB_CHECK(write(fd, "abc", 3) == 3, "write");
        close(fd);
        EB_CHECK(eb_sha256_file(file, hex) == 0 &&
                     strncmp(hex, "ba7816bf", 8) == 0, "file: %s", hex);
        unlink(file);
    }
    EB_CHECK(eb_sha256_file("/nonexistent/x", hex) == -1 && !hex[0],
             "missing file");
    return eb_check_done("test_sha256");
}
