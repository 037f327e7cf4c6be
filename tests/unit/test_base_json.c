/* test_base_json.c: the strict JSON parser: values and accessors, escapes
 * and UTF-8, integer/double boundaries, every rejection with its line:column,
 * the depth limit, truncations at every length and byte mutations (each in
 * an exact-size buffer, so ASan sees any over-read), and the string writer. */
#include "base/json.h"
#include "check.h"

static const json *parse(arena *a, const char *text) {
    return json_parse(a, text, strlen(text), "t.json");
}

static void test_values(void) {
    arena *a = arena_new();
    const json *v = parse(a, " {\"a\": [1, -2, 3.5, true, false, null], \"b\": {\"c\": \"x\"},"
                             " \"\": 0}\n");
    CHECK(v != NULL);
    CHECK(json_is(v, JSON_OBJECT));
    CHECK_EQ_INT(json_len(v), 3);
    const json *arr = json_get(v, "a");
    CHECK_EQ_INT(json_len(arr), 6);
    int64_t x = 0;
    CHECK(json_int(json_at(arr, 0), &x) && x == 1);
    CHECK(json_int(json_at(arr, 1), &x) && x == -2);
    CHECK(!json_int(json_at(arr, 2), &x));
    CHECK(json_is(json_at(arr, 2), JSON_DOUBLE) && json_at(arr, 2)->d == 3.5);
    CHECK(json_is(json_at(arr, 3), JSON_BOOL) && json_at(arr, 3)->i == 1);
    CHECK(json_is(json_at(arr, 4), JSON_BOOL) && json_at(arr, 4)->i == 0);
    CHECK(json_is(json_at(arr, 5), JSON_NULL));
    CHECK(json_at(arr, 6) == NULL && json_at(arr, -1) == NULL);
    CHECK_EQ_STR(json_str(json_get(json_get(v, "b"), "c")), "x");
    CHECK(json_get(v, "") != NULL);
    CHECK(json_get(v, "zz") == NULL);
    /* accessors accept NULL and wrong types */
    CHECK(json_get(NULL, "a") == NULL && json_get(arr, "a") == NULL);
    CHECK_EQ_INT(json_len(NULL), -1);
    CHECK_EQ_INT(json_len(json_at(arr, 0)), -1);
    CHECK(json_str(arr) == NULL && json_str(NULL) == NULL);
    CHECK(!json_int(NULL, &x) && !json_is(NULL, JSON_NULL));
    CHECK_EQ_STR(json_type_name(JSON_OBJECT), "object");
    CHECK_EQ_STR(json_type_name(JSON_INT), "integer");
    CHECK(json_at(v, 1) == json_get(v, "b")); /* object items in source order */
    /* scalars at the top level, empty containers */
    CHECK(json_is(parse(a, "\"s\""), JSON_STRING));
    CHECK_EQ_INT(json_len(parse(a, "[]")), 0);
    CHECK_EQ_INT(json_len(parse(a, "{ }")), 0);
    CHECK(json_is(parse(a, "null"), JSON_NULL));
    arena_free(a);
}

static void test_numbers(void) {
    arena *a = arena_new();
    int64_t x = 0;
    CHECK(json_int(parse(a, "9223372036854775807"), &x) && x == INT64_MAX);
    CHECK(json_int(parse(a, "-9223372036854775808"), &x) && x == INT64_MIN);
    CHECK(json_int(parse(a, "-0"), &x) && x == 0);
    const json *big = parse(a, "9223372036854775808");
    CHECK(json_is(big, JSON_DOUBLE) && big->d == 9223372036854775808.0);
    const json *nbig = parse(a, "-9223372036854775809");
    CHECK(json_is(nbig, JSON_DOUBLE) && nbig->d < -9.2e18);
    CHECK(json_is(parse(a, "100000000000000000000000000000"), JSON_DOUBLE));
    CHECK(json_is(parse(a, "1e3"), JSON_DOUBLE) && parse(a, "1e3")->d == 1000);
    CHECK(parse(a, "-1.25E-2")->d == -0.0125);
    CHECK(parse(a, "1e-400") != NULL); /* underflow to 0 is fine */
    CHECK(parse(a, "0.5")->d == 0.5);
    arena_free(a);
}

static void test_strings(void) {
    arena *a = arena_new();
    const json *s = parse(a, "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\"");
    CHECK_EQ_STR(json_str(s), "q\" b\\ s/ \b\f\n\r\t");
    CHECK_EQ_STR(json_str(parse(a, "\"\\u00e9\\u20AC\"")), "\xc3\xa9\xe2\x82\xac");
    CHECK_EQ_STR(json_str(parse(a, "\"\\ud83d\\ude00\"")), "\xf0\x9f\x98\x80");
    CHECK_EQ_STR(json_str(parse(a, "\"\xc3\xa9\xf0\x9f\x98\x80\"")), "\xc3\xa9\xf0\x9f\x98\x80");
    const json *nul = parse(a, "\"a\\u0000b\"");
    CHECK(nul && nul->slen == 3 && memcmp(nul->s, "a\0b", 3) == 0);
    /* keys that differ only after an embedded NUL are distinct */
    CHECK(parse(a, "{\"a\\u0000b\": 1, \"a\\u0000c\": 2}") != NULL);
    arena_free(a);
}

typedef struct {
    const char *text, *msg;
} bad_case;

static void test_errors(void) {
    static const bad_case cases[] = {
        {"", "1:1: unexpected end of input"},
        {"   ", "1:4: unexpected end of input"},
        {"{\n  \"a\": 1,\n}", "3:1: expected a key string"},
        {"[1, 2,]", "1:7: unexpected character"},
        {"[1 2]", "1:4: expected ',' or ']'"},
        {"{\"a\" 1}", "1:6: expected ':'"},
        {"{\"a\": 1 \"b\": 2}", "expected ',' or '}'"},
        {"01", "leading zero"},
        {"1.", "digit after '.'"},
        {".5", "unexpected character"},
        {"+1", "unexpected character"},
        {"1e", "digit in the exponent"},
        {"-", "invalid number"},
        {"NaN", "unexpected character"},
        {"tru", "unexpected character"},
        {"[1] 2", "1:5: unexpected text after the value"},
        {"\"abc", "1:1: unterminated string"},
        {"\"a\\x\"", "invalid escape"},
        {"\"\\u12\"", "four hex digits"},
        {"\"\\u12g4\"", "four hex digits"},
        {"\"\\ud800\"", "without a low surrogate"},
        {"\"\\ud800\\u0041\"", "without a low surrogate"},
        {"\"\\udc00\"", "unpaired low surrogate"},
        {"\"a\nb\"", "control character"},
        {"\"\xff\"", "invalid UTF-8"},
        {"\"\xc0\xaf\"", "invalid UTF-8"},         /* overlong '/' */
        {"\"\xe0\x80\xaf\"", "invalid UTF-8"},     /* overlong, 3 bytes */
        {"\"\xed\xa0\x80\"", "invalid UTF-8"},     /* an encoded surrogate */
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8"}, /* past U+10FFFF */
        {"\"\xc3\"", "invalid UTF-8"},             /* cut sequence */
        {"{\"a\": 1, \"b\": 2, \"a\": 3}", "1:18: duplicate key \"a\""},
        {"1e999", "out of range"},
        {"[1]\x01", "unexpected text"},
        {"// c\n1", "unexpected character"},
    };
    arena *a = arena_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_clear_error();
        const json *v = parse(a, cases[i].text);
        CHECK(v == NULL);
        if (v)
            fprintf(stderr, "  accepted: %s\n", cases[i].text);
        CHECK_CONTAINS(kiln_last_error(), cases[i].msg);
        CHECK_CONTAINS(kiln_last_error(), "t.json:");
    }
    CHECK(json_parse(a, NULL, 3, "x") == NULL);
    CHECK(json_parse(a, "1", JSON_MAX_SIZE + 1, "x") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "limit");
    arena_free(a);
}

static void test_depth(void) {
    char buf[300];
    arena *a = arena_new();
    for (int depth = 63; depth <= 66; depth++) {
        int n = 0;
        for (int i = 0; i < depth; i++)
            buf[n++] = '[';
        for (int i = 0; i < depth; i++)
            buf[n++] = ']';
        const json *v = json_parse(a, buf, (size_t)n, "deep");
        CHECK_EQ_INT(v != NULL, depth <= JSON_MAX_DEPTH);
        if (!v)
            CHECK_CONTAINS(kiln_last_error(), "deeper than 64");
    }
    /* very deep input fails fast without recursing further */
    static char deep[100000];
    memset(deep, '[', sizeof deep);
    CHECK(json_parse(a, deep, sizeof deep, "deep") == NULL);
    arena_free(a);
}

static const char *k_doc =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\\u00e9\", \"inputs\": []},\n"
    " {\"op\": \"tvm_op\", \"attrs\": {\"num_inputs\": \"1\"}, \"inputs\": [[0, 0, 0]]}],\n"
    " \"v\": [-1.5e-3, 12345678901234, true, false, null, \"\\ud83d\\ude00\\n\"]}";

/* Parse text[0..len) from a buffer of exactly len bytes. */
static const json *parse_exact(arena *a, const char *text, size_t len) {
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    const json *v = json_parse(a, copy, len, "cut");
    free(copy);
    return v;
}

static void test_truncated_and_mutated(void) {
    size_t n = strlen(k_doc);
    arena *a = arena_new();
    CHECK(parse_exact(a, k_doc, n) != NULL);
    for (size_t k = 0; k < n; k++) {
        const json *v = parse_exact(a, k_doc, k);
        CHECK(v == NULL);
        if (v)
            fprintf(stderr, "  prefix of %zu bytes parsed\n", k);
        CHECK(kiln_last_error()[0] != 0);
    }
    arena_free(a);
    /* every byte replaced by a few interesting values: no crash, no hang */
    static const char subs[] = {'"', '\\', '[', ']', '{', '}', ',', ':', 0, '\x80', 'u', '0'};
    char *buf = malloc(n);
    for (size_t k = 0; k < n; k++)
        for (size_t s = 0; s < sizeof subs; s++) {
            arena *b = arena_new();
            memcpy(buf, k_doc, n);
            buf[k] = subs[s];
            (void)json_parse(b, buf, n, "mut");
            arena_free(b);
        }
    free(buf);
    CHECK(1);
}

static void test_writer(void) {
    const char *raw = "a\"b\\c\n\t\r\x01 \xc3\xa9/";
    kstr s;
    kstr_init(&s);
    json_write_string(&s, raw);
    CHECK_EQ_STR(s.buf, "\"a\\\"b\\\\c\\n\\t\\r\\u0001 \xc3\xa9/\"");
    arena *a = arena_new();
    CHECK_EQ_STR(json_str(json_parse(a, s.buf, s.len, "w")), raw); /* round trip */
    arena_free(a);
    kstr_free(&s);
}

TEST_MAIN(TEST(test_values), TEST(test_numbers), TEST(test_strings), TEST(test_errors),
          TEST(test_depth), TEST(test_truncated_and_mutated), TEST(test_writer))
