/*
 * sha256: the SHA-256 digest (FIPS 180-4) of a file, so that a record
 * names the exact bytes of the instance and path file it measured.
 */
#ifndef EB_SHA256_H
#define EB_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char buf[64];
    size_t used;
} eb_sha256;

void eb_sha256_init(eb_sha256 *s);
void eb_sha256_update(eb_sha256 *s, const void *data, size_t n);
/* 64 lowercase hex digits and a NUL into hex[65]. */
void eb_sha256_hex(eb_sha256 *s, char hex[65]);

/* Digest of a whole file into hex[65]; -1 (hex "") when it cannot be
 * read. */
int eb_sha256_file(const char *file, char hex[65]);

#endif
