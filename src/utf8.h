/*
 * utf8: einsum labels are Unicode code points, stored as UTF-8 in files.
 */
#ifndef EB_UTF8_H
#define EB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decode one code point from s (at most n bytes). Returns the number of bytes
 * consumed (1..4) and stores the code point in *cp, or returns 0 for an
 * invalid, overlong, surrogate or truncated sequence. */
size_t eb_utf8_decode(const char *s, size_t n, uint32_t *cp);

/* Encode cp into out (at least 5 bytes, NUL-terminated). Returns bytes
 * written, not counting the NUL; 0 for a code point that cannot be encoded. */
size_t eb_utf8_encode(uint32_t cp, char *out);

/* Copy s into out (cap bytes, NUL-terminated) for a message or a table:
 * valid UTF-8 other than control characters (C0, DEL, C1) passes, every
 * other byte becomes "\\xNN"; a copy that does not fit ends in "...".
 * Returns out. */
const char *eb_utf8_shown(const char *s, char *out, size_t cap);

#endif
