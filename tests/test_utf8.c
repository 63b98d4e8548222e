/* test_utf8: strict UTF-8 decoding (RFC 3629) of einsum labels and the
 * matching encoder (src/utf8.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "utf8.h"

typedef struct {
    const char *what;
    const char *bytes;
    size_t n;          /* bytes offered to the decoder */
    size_t want_len;   /* 0: rejected */
    uint32_t want_cp;
} dec_case;

static const dec_case cases[] = {
    /* valid, 1 to 4 bytes, including each length's boundaries */
    {"'a'", "a", 1, 1, 'a'},
    {"'0'", "0", 1, 1, '0'},
    {"U+007F", "\x7f", 1, 1, 0x7F},
    {"NUL", "\0", 1, 1, 0},
    {"U+0080", "\xc2\x80", 2, 2, 0x80},
    {"e-diaeresis U+00EB", "\xc3\xab", 2, 2, 0xEB},
    {"alpha U+03B1", "\xce\xb1", 2, 2, 0x3B1},
    {"U+07FF", "\xdf\xbf", 2, 2, 0x7FF},
    {"U+0800", "\xe0\xa0\x80", 3, 3, 0x800},
    {"euro U+20AC", "\xe2\x82\xac", 3, 3, 0x20AC},
    {"U+D7FF", "\xed\x9f\xbf", 3, 3, 0xD7FF},
    {"U+E000", "\xee\x80\x80", 3, 3, 0xE000},
    {"U+FFFF", "\xef\xbf\xbf", 3, 3, 0xFFFF},
    {"U+10000", "\xf0\x90\x80\x80", 4, 4, 0x10000},
    {"G clef U+1D11E", "\xf0\x9d\x84\x9e", 4, 4, 0x1D11E},
    {"U+10FFFF", "\xf4\x8f\xbf\xbf", 4, 4, 0x10FFFF},
    /* only the first code point is consumed */
    {"'a' then more", "ab", 2, 1, 'a'},
    {"2-byte then more", "\xc3\xab" "x", 3, 2, 0xEB},
    {"4-byte then more", "\xf0\x9d\x84\x9e\xc3\xab", 6, 4, 0x1D11E},
    /* overlong */
    {"overlong NUL C0 80", "\xc0\x80", 2, 0, 0},
    {"overlong C1 BF", "\xc1\xbf", 2, 0, 0},
    {"overlong 3-byte '/'", "\xe0\x80\xaf", 3, 0, 0},
    {"overlong 3-byte U+07FF", "\xe0\x9f\xbf", 3, 0, 0},
    {"overlong 4-byte", "\xf0\x80\x80\x80", 4, 0, 0},
    {"overlong 4-byte U+FFFF", "\xf0\x8f\xbf\xbf", 4, 0, 0},
    /* surrogates */
    {"surrogate U+D800", "\xed\xa0\x80", 3, 0, 0},
    {"surrogate U+DBFF", "\xed\xaf\xbf", 3, 0, 0},
    {"surrogate U+DC00", "\xed\xb0\x80", 3, 0, 0},
    {"surrogate U+DFFF", "\xed\xbf\xbf", 3, 0, 0},
    /* above U+10FFFF, and lead bytes that cannot start a sequence */
    {"U+110000", "\xf4\x90\x80\x80", 4, 0, 0},
    {"F5 lead", "\xf5\x80\x80\x80", 4, 0, 0},
    {"F7 BF BF BF", "\xf7\xbf\xbf\xbf", 4, 0, 0},
    {"F8 5-byte lead", "\xf8\x88\x80\x80\x80", 5, 0, 0},
    {"FC 6-byte lead", "\xfc\x84\x80\x80\x80\x80", 6, 0, 0},
    {"FE", "\xfe", 1, 0, 0},
    {"FF", "\xff", 1, 0, 0},
    /* continuation bytes alone, or a bad continuation */
    {"lone 80", "\x80", 1, 0, 0},
    {"lone BF", "\xbf", 1, 0, 0},
    {"C3 then 'A'", "\xc3\x41", 2, 0, 0},
    {"E2 82 then 'A'", "\xe2\x82\x41", 3, 0, 0},
    {"F0 9D 84 then C3", "\xf0\x9d\x84\xc3", 4, 0, 0},
    {"C3 then C3 AB", "\xc3\xc3\xab", 3, 0, 0},
    /* truncated: the bytes exist in memory but n says they are not there */
    {"truncated C3 (n=1)", "\xc3\xab", 1, 0, 0},
    {"truncated E2 82 (n=2)", "\xe2\x82\xac", 2, 0, 0},
    {"truncated F0 9D 84 (n=3)", "\xf0\x9d\x84\x9e", 3, 0, 0},
    {"truncated F0 (n=1)", "\xf0\x9d\x84\x9e", 1, 0, 0},
    {"empty (n=0)", "a", 0, 0, 0},
};

static void test_decode(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const dec_case *c = &cases[k];
        uint32_t cp = 0xDEADBEEF;
        size_t len = eb_utf8_decode(c->bytes, c->n, &cp);
        EB_CHECK(len == c->want_len, "%s: length %zu (want %zu)", c->what, len,
                 c->want_len);
        if (c->want_len)
            EB_CHECK(cp == c->want_cp, "%s: U+%04X (want U+%04X)", c->what,
                     (unsigned)cp, (unsigned)c->want_cp);
    }
}

/* Every encodable code point encodes to the expected length and decodes
 * back; surrogates and values above U+10FFFF do not encode. */
static void test_round_trip(void)
{
    long bad = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        char buf[8];
        memset(buf, 0x55, sizeof buf);
        size_t n = eb_utf8_encode(cp, buf);
        int surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        size_t want = surrogate ? 0 : cp < 0x80 ? 1 : cp < 0x800 ? 2
                                  : cp < 0x10000 ? 3 : 4;
        if (n != want) {
            if (bad++ < 5)
                EB_CHECK(n == want, "U+%04X: %zu bytes (want %zu)",
                         (unsigned)cp, n, want);
            continue;
        }
        if (surrogate)
            continue;
        uint32_t back = 0xFFFFFFFF;
        size_t used = eb_utf8_decode(buf, n, &back);
        if (used != n || back != cp || buf[n] != '\0' ||
            (cp != 0 && strlen(buf) != n)) {
            if (bad++ < 5)
                EB_CHECK(0, "U+%04X: decoded %zu bytes as U+%04X",
                         (unsigned)cp, used, (unsigned)back);
        }
    }
    EB_CHECK(bad == 0, "%ld code points fail the round trip", bad);

    char buf[8];
    uint32_t too_big[] = {0x110000, 0x1FFFFF, 0x7FFFFFFF, 0xFFFFFFFF};
    for (size_t k = 0; k < sizeof too_big / sizeof too_big[0]; k++)
        EB_CHECK(eb_utf8_encode(too_big[k], buf) == 0, "0x%X encoded",
                 (unsigned)too_big[k]);
    EB_CHECK(eb_utf8_encode(0xD800, buf) == 0 &&
             eb_utf8_encode(0xDFFF, buf) == 0, "surrogate encoded");
    /* Exact bytes for a few. */
    EB_CHECK(eb_utf8_encode(0xEB, buf) == 2 && strcmp(buf, "\xc3\xab") == 0,
             "U+00EB");
    EB_CHECK(eb_utf8_encode(0x20AC, buf) == 3 &&
             strcmp(buf, "\xe2\x82\xac") == 0, "U+20AC");
    EB_CHECK(eb_utf8_encode(0x1D11E, buf) == 4 &&
             strcmp(buf, "\xf0\x9d\x84\x9e") == 0, "U+1D11E");
    EB_CHECK(eb_utf8_encode('z', buf) == 1 && strcmp(buf, "z") == 0, "'z'");
}

/* Walking a mixed string of labels, as the format-string parser does. */
static void test_walk(void)
{
    const char *s = "a\xc3\xab\xce\xb1\xe2\x82\xac\xf0\x9d\x84\x9e" "0";
    uint32_t want[] = {'a', 0xEB, 0x3B1, 0x20AC, 0x1D11E, '0'};
    size_t pos = 0, len = strlen(s);
    int k = 0;
    while (pos < len && k < 6) {
        uint32_t cp;
        size_t used = eb_utf8_decode(s + pos, len - pos, &cp);
        EB_CHECK(used > 0 && cp == want[k], "label %d: U+%04X", k,
                 (unsigned)cp);
        if (!used)
            break;
        pos += used;
        k++;
    }
    EB_CHECK(k == 6 && pos == len, "walked %d labels, %zu of %zu bytes", k,
             pos, len);
}

int main(void)
{
    test_decode();
    test_round_trip();
    test_walk();
    return eb_check_done("test_utf8");
}
