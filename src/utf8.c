/* utf8: strict decoding (RFC 3629) of einsum labels. */
#include "utf8.h"

size_t eb_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0)
        return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t len;
    uint32_t c, min;
    if ((u[0] & 0xE0) == 0xC0) {
        len = 2, c = u[0] & 0x1F, min = 0x80;
    } else if ((u[0] & 0xF0) == 0xE0) {
        len = 3, c = u[0] & 0x0F, min = 0x800;
    } else if ((u[0] & 0xF8) == 0xF0) {
        len = 4, c = u[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (u[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

size_t eb_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    size_t len;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        len = 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        len = 2;
    } else if (cp < 0x10000) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            return 0;
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        len = 3;
    } else if (cp <= 0x10FFFF) {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        len = 4;
    } else {
        return 0;
    }
    out[len] = '\0';
    return len;
}

const char *eb_utf8_shown(const char *s, char *out, size_t cap)
{
    size_t n = 0, len = 0;
    while (s[n])
        n++;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t used = eb_utf8_decode(s + i, n - i, &cp);
        int ok = used > 0 && cp >= 0x20 && !(cp >= 0x7F && cp <= 0x9F);
        size_t w = ok ? used : 4;
        /* Invariant: len <= cap - 4, room for "..." and the NUL. */
        if (len + w + 4 > cap) {
            for (int d = 0; d < 3 && cap >= 4; d++)
                out[len++] = '.';
            break;
        }
        if (ok) {
            for (size_t b = 0; b < used; b++)
                out[len++] = s[i + b];
            i += used;
        } else {
            static const char hex[] = "0123456789abcdef";
            unsigned char c = (unsigned char)s[i++];
            out[len++] = '\\';
            out[len++] = 'x';
            out[len++] = hex[c >> 4];
            out[len++] = hex[c & 15];
        }
    }
    if (cap)
        out[cap >= 4 ? len : 0] = '\0';
    return out;
}
