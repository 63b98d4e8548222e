/* test_jsonw: the JSON writer (src/jsonw.c): escaping, nesting, compact and
 * pretty layout, inline regions, non-finite numbers as null, number
 * formats, error state, and the one-fwrite line output. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jsonw.h"

#define EXPECT_TEXT(w, want, what)                                            \
    EB_CHECK(strcmp(eb_jw_text(w), (want)) == 0 &&                           \
             eb_jw_len(w) == strlen(want),                                   \
             "%s:\n got: %s\nwant: %s", (what), eb_jw_text(w), (want))

static void test_empty(void)
{
    eb_jw *w = eb_jw_create(0);
    EB_CHECK(w != NULL, "create");
    EB_CHECK(strcmp(eb_jw_text(w), "") == 0 && eb_jw_len(w) == 0, "empty");
    EB_CHECK(eb_jw_ok(w), "empty writer is ok");
    eb_jw_obj_begin(w, NULL);
    eb_jw_obj_end(w);
    EXPECT_TEXT(w, "{}", "empty object");
    eb_jw_destroy(w);
    eb_jw_destroy(NULL);

    w = eb_jw_create(2);
    eb_jw_arr_begin(w, NULL);
    eb_jw_arr_end(w);
    EXPECT_TEXT(w, "[]", "empty array, pretty");
    eb_jw_destroy(w);
}

static void test_escaping(void)
{
    eb_jw *w = eb_jw_create(0);
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "quote\"key", "a\"b\\c/d");
    eb_jw_str(w, "ctl", "\n\r\t\b\f\x01\x1f");
    eb_jw_str(w, "utf8", "\xc3\xab\xce\xb1\xe2\x82\xac\xf0\x9d\x84\x9e");
    eb_jw_str(w, "del", "\x7f~");
    eb_jw_str(w, "empty", "");
    eb_jw_str(w, "none", NULL);
    eb_jw_obj_end(w);
    EXPECT_TEXT(w,
                "{\"quote\\\"key\":\"a\\\"b\\\\c/d\","
                "\"ctl\":\"\\n\\r\\t\\u0008\\u000c\\u0001\\u001f\","
                "\"utf8\":\"\xc3\xab\xce\xb1\xe2\x82\xac\xf0\x9d\x84\x9e\","
                "\"del\":\"\x7f~\",\"empty\":\"\",\"none\":null}",
                "escaping");
    EB_CHECK(eb_jw_ok(w), "ok");
    eb_jw_destroy(w);
}

static void test_values(void)
{
    eb_jw *w = eb_jw_create(0);
    eb_jw_arr_begin(w, NULL);
    eb_jw_num(w, NULL, NAN);
    eb_jw_num(w, NULL, INFINITY);
    eb_jw_num(w, NULL, -INFINITY);
    eb_jw_fixed(w, NULL, NAN, 3);
    eb_jw_fixed(w, NULL, -INFINITY, 3);
    eb_jw_num(w, NULL, 0.1);
    eb_jw_num(w, NULL, 1.5);
    eb_jw_num(w, NULL, -0.0);
    eb_jw_num(w, NULL, 1e300);
    eb_jw_num(w, NULL, 5e-324);
    eb_jw_fixed(w, NULL, 1.23456, 3);
    eb_jw_fixed(w, NULL, 2.0, 0);
    eb_jw_int(w, NULL, 0);
    eb_jw_int(w, NULL, INT64_MIN);
    eb_jw_int(w, NULL, INT64_MAX);
    eb_jw_bool(w, NULL, 1);
    eb_jw_bool(w, NULL, 0);
    eb_jw_null(w, NULL);
    eb_jw_arr_end(w);
    EXPECT_TEXT(w,
                "[null,null,null,null,null,0.10000000000000001,1.5,-0,"
                "1.0000000000000001e+300,4.9406564584124654e-324,1.235,2,0,"
                "-9223372036854775808,9223372036854775807,true,false,null]",
                "values");
    eb_jw_destroy(w);

    /* %.17g round-trips every double exactly. */
    double vals[] = {0.1, 1.0 / 3, 2.0 / 3e-200, 123456789.123456789,
                     -7.25e-5, 9007199254740993.0};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        w = eb_jw_create(0);
        eb_jw_num(w, NULL, vals[k]);
        EB_CHECK(strtod(eb_jw_text(w), NULL) == vals[k], "%.17g -> %s",
                 vals[k], eb_jw_text(w));
        eb_jw_destroy(w);
    }
}

/* One document written compact and pretty. */
static void build_doc(eb_jw *w)
{
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "type", "measurement");
    eb_jw_int(w, "n", 3);
    eb_jw_arr_begin(w, "samples");
    eb_jw_int(w, NULL, 10);
    eb_jw_int(w, NULL, 20);
    eb_jw_arr_end(w);
    eb_jw_obj_begin(w, "check");
    eb_jw_num(w, "max_rel_err", 0.5);
    eb_jw_obj_begin(w, "deep");
    eb_jw_arr_begin(w, "empty");
    eb_jw_arr_end(w);
    eb_jw_obj_end(w);
    eb_jw_obj_end(w);
    eb_jw_obj_begin(w, "none");
    eb_jw_obj_end(w);
    eb_jw_null(w, "error");
    eb_jw_obj_end(w);
}

static void test_layout(void)
{
    eb_jw *w = eb_jw_create(0);
    build_doc(w);
    EXPECT_TEXT(w,
                "{\"type\":\"measurement\",\"n\":3,\"samples\":[10,20],"
                "\"check\":{\"max_rel_err\":0.5,\"deep\":{\"empty\":[]}},"
                "\"none\":{},\"error\":null}",
                "compact");
    EB_CHECK(eb_jw_ok(w), "compact ok");
    EB_CHECK(strchr(eb_jw_text(w), '\n') == NULL, "compact has a newline");
    eb_jw_destroy(w);

    w = eb_jw_create(2);
    build_doc(w);
    EXPECT_TEXT(w,
                "{\n"
                "  \"type\": \"measurement\",\n"
                "  \"n\": 3,\n"
                "  \"samples\": [\n"
                "    10,\n"
                "    20\n"
                "  ],\n"
                "  \"check\": {\n"
                "    \"max_rel_err\": 0.5,\n"
                "    \"deep\": {\n"
                "      \"empty\": []\n"
                "    }\n"
                "  },\n"
                "  \"none\": {},\n"
                "  \"error\": null\n"
                "}",
                "pretty, indent 2");
    EB_CHECK(eb_jw_ok(w), "pretty ok");
    eb_jw_destroy(w);

    w = eb_jw_create(4);
    eb_jw_obj_begin(w, NULL);
    eb_jw_int(w, "a", 1);
    eb_jw_obj_end(w);
    EXPECT_TEXT(w, "{\n    \"a\": 1\n}", "pretty, indent 4");
    eb_jw_destroy(w);
}

/* A path file's layout: pretty, with each [i, j] pair on one line. */
static void test_inline(void)
{
    eb_jw *w = eb_jw_create(2);
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "instance", "x");
    eb_jw_obj_begin(w, "paths");
    eb_jw_obj_begin(w, "opt_flops");
    eb_jw_arr_begin(w, "path");
    eb_jw_arr_begin_inline(w, NULL);
    eb_jw_int(w, NULL, 0);
    eb_jw_int(w, NULL, 1);
    eb_jw_arr_end(w);
    eb_jw_arr_begin_inline(w, NULL);
    eb_jw_int(w, NULL, 0);
    eb_jw_int(w, NULL, 2);
    eb_jw_arr_end(w);
    eb_jw_arr_end(w);
    eb_jw_num(w, "log10_flops", 2.5);
    eb_jw_obj_end(w);
    eb_jw_obj_end(w);
    /* An inline region holding nested arrays and an object. */
    eb_jw_arr_begin_inline(w, "nested");
    eb_jw_arr_begin(w, NULL);
    eb_jw_int(w, NULL, 1);
    eb_jw_arr_end(w);
    eb_jw_obj_begin(w, NULL);
    eb_jw_int(w, "k", 2);
    eb_jw_obj_end(w);
    eb_jw_arr_end(w);
    eb_jw_bool(w, "after", 1);
    eb_jw_obj_end(w);
    EXPECT_TEXT(w,
                "{\n"
                "  \"instance\": \"x\",\n"
                "  \"paths\": {\n"
                "    \"opt_flops\": {\n"
                "      \"path\": [\n"
                "        [0, 1],\n"
                "        [0, 2]\n"
                "      ],\n"
                "      \"log10_flops\": 2.5\n"
                "    }\n"
                "  },\n"
                "  \"nested\": [[1], {\"k\": 2}],\n"
                "  \"after\": true\n"
                "}",
                "inline regions");
    EB_CHECK(eb_jw_ok(w), "inline ok");
    eb_jw_destroy(w);
}

static void test_errors_and_reset(void)
{
    eb_jw *w = eb_jw_create(0);
    eb_jw_obj_begin(w, NULL);
    EB_CHECK(!eb_jw_ok(w), "unclosed object is ok");
    EB_CHECK(eb_jw_write_line(w, stderr) != 0, "unbalanced record written");
    eb_jw_obj_end(w);
    EB_CHECK(eb_jw_ok(w), "balanced again");
    eb_jw_obj_end(w); /* one end too many */
    EB_CHECK(!eb_jw_ok(w), "extra end is ok");
    eb_jw_reset(w);
    EB_CHECK(eb_jw_ok(w) && eb_jw_len(w) == 0 &&
             strcmp(eb_jw_text(w), "") == 0, "reset");
    eb_jw_arr_begin(w, NULL);
    eb_jw_int(w, NULL, 1);
    eb_jw_arr_end(w);
    EXPECT_TEXT(w, "[1]", "after reset");
    eb_jw_reset(w);
    eb_jw_int(w, NULL, 2);
    EXPECT_TEXT(w, "2", "after second reset");
    /* Nesting past the writer's depth limit fails rather than overflowing. */
    eb_jw_reset(w);
    for (int k = 0; k < 100; k++)
        eb_jw_arr_begin(w, NULL);
    for (int k = 0; k < 100; k++)
        eb_jw_arr_end(w);
    EB_CHECK(!eb_jw_ok(w), "100 levels accepted");
    eb_jw_reset(w);
    for (int k = 0; k < 40; k++)
        eb_jw_arr_begin(w, NULL);
    for (int k = 0; k < 40; k++)
        eb_jw_arr_end(w);
    EB_CHECK(eb_jw_ok(w) && eb_jw_len(w) == 80, "40 levels");
    eb_jw_destroy(w);

    /* A long document grows the buffer. */
    w = eb_jw_create(0);
    eb_jw_arr_begin(w, NULL);
    for (int k = 0; k < 10000; k++)
        eb_jw_int(w, NULL, k);
    eb_jw_arr_end(w);
    EB_CHECK(eb_jw_ok(w) && eb_jw_len(w) == strlen(eb_jw_text(w)) &&
             strncmp(eb_jw_text(w), "[0,1,2,", 7) == 0 &&
             strcmp(eb_jw_text(w) + eb_jw_len(w) - 6, ",9999]") == 0,
             "long array");
    eb_jw_destroy(w);
}

static void test_write_line(void)
{
    FILE *f = tmpfile();
    EB_CHECK(f != NULL, "tmpfile");
    if (!f)
        return;
    eb_jw *w = eb_jw_create(0);
    eb_jw_obj_begin(w, NULL);
    eb_jw_str(w, "type", "run");
    eb_jw_obj_end(w);
    EB_CHECK(eb_jw_write_line(w, f) == 0, "write_line");
    eb_jw_reset(w);
    eb_jw_arr_begin(w, NULL);
    eb_jw_arr_end(w);
    EB_CHECK(eb_jw_write_line(w, f) == 0, "second line");
    eb_jw_reset(w);
    eb_jw_arr_begin(w, NULL); /* unbalanced: nothing is written */
    EB_CHECK(eb_jw_write_line(w, f) != 0, "unbalanced written");
    rewind(f);
    char buf[128];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    EB_CHECK(strcmp(buf, "{\"type\":\"run\"}\n[]\n") == 0, "file '%s'", buf);
    fclose(f);
    eb_jw_destroy(w);
}

int main(void)
{
    test_empty();
    test_escaping();
    test_values();
    test_layout();
    test_inline();
    test_errors_and_reset();
    test_write_line();
    return eb_check_done("test_jsonw");
}
