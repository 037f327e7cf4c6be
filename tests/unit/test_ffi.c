/* test_ffi.c: the global function registry (kiln/ffi.h) and the C API for
 * bindings around it: value lists of every kind (conversions, wrong kinds
 * and indices, borrowed and owned arrays and graphs: run under ASan, a
 * leak or a double free fails), packed functions and their references,
 * the registry (duplicates, override, lookup, listing, unregistering, two
 * threads at once), functions as values, kiln_error_raise and the trace of
 * the last error, the library's versions, and user passes: a global
 * function run by kiln_graph_run_pass and by the build option "pass"; and
 * the global functions kiln registers itself (kiln.version, kiln.call,
 * kiln.graph.run_pass, kiln.graph.print). */
#include <pthread.h>
#include <stdint.h>

#include "graph_util.h"
#include "kiln/ffi.h"

/* ---- helpers --------------------------------------------------------------------- */

/* A free_user callback: counts its calls in *(int *)user. */
static void count_free(void *user) {
    (*(int *)user)++;
}

static kiln_status fn_add1(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    return kiln_args_push_int(ret, kiln_args_int(in, 0) + 1);
}

/* Adds *(int64_t *)user to value 0. */
static kiln_status fn_add_user(const kiln_args *in, kiln_args *ret, void *user) {
    return kiln_args_push_int(ret, kiln_args_int(in, 0) + *(const int64_t *)user);
}

/* Returns how many values it got, then an int, a float, a string, none. */
static kiln_status fn_many(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    kiln_status st = kiln_args_push_int(ret, kiln_args_count(in));
    if (!st)
        st = kiln_args_push_float(ret, 0.25);
    if (!st)
        st = kiln_args_push_str(ret, "out");
    if (!st)
        st = kiln_args_push_none(ret);
    return st;
}

/* Fails without setting a message. */
static kiln_status fn_fail_silent(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)ret, (void)user;
    return KILN_ERR_UNSUPPORTED;
}

/* Fails with its own message, as a binding does. */
static kiln_status fn_fail_raise(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)ret, (void)user;
    return kiln_error_raise(KILN_ERR_RANGE, "custom boom");
}

/* Records the message it sees on entry (kiln_func_call clears it). */
static char g_seen_on_entry[256];
static kiln_status fn_record_error(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)ret, (void)user;
    snprintf(g_seen_on_entry, sizeof g_seen_on_entry, "[%s]", kiln_last_error());
    return KILN_OK;
}

/* A closure: a new function adding value 0 (an int) to its argument. */
static void free_closure(void *user) {
    free(user);
}
static kiln_status fn_make_adder(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    int64_t *k = malloc(sizeof *k);
    if (!k)
        return kiln_error_raise(KILN_ERR_NOMEM, "no memory");
    *k = kiln_args_int(in, 0);
    kiln_func *f = kiln_func_new(fn_add_user, k, free_closure);
    kiln_status st = kiln_args_push_func(ret, f);
    kiln_func_release(f); /* the list keeps its own reference */
    return st;
}

/* Calls value 0 (a function) on value 1. */
static kiln_status fn_apply(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    kiln_func *f = kiln_args_func(in, 0);
    if (!f)
        return KILN_ERR_INVALID;
    kiln_args *a = kiln_args_new();
    kiln_args_push_int(a, kiln_args_int(in, 1));
    kiln_status st = kiln_func_call(f, a, ret);
    kiln_args_free(a);
    return st;
}

static kiln_ndarray *vec(int64_t n, float v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    for (int64_t i = 0; a && i < n; i++)
        ((float *)kiln_ndarray_data(a))[i] = v + (float)i;
    return a;
}

/* x[2, 3] -> op1 -> op2 (op2 NULL: one call), the last call the output. */
static kiln_graph *chain(const char *op1, const char *op2) {
    kiln_graph *g = kiln_graph_new();
    int64_t xs[2] = {2, 3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xs, NULL);
    int a = kiln_graph_call(g, op1, 1, &x, NULL, "a");
    int out = op2 ? kiln_graph_call(g, op2, 1, &a, NULL, "b") : a;
    CHECK(x == 0 && a == 1 && out == (op2 ? 2 : 1));
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &out, NULL), KILN_OK);
    return g;
}

/* The ops of g's nodes, space-separated. */
static const char *ops_of(const kiln_graph *g) {
    static char buf[512];
    buf[0] = 0;
    for (int i = 0; g && i < kiln_graph_num_nodes(g); i++) {
        const char *op = kiln_graph_node_op(g, i);
        if (i)
            strncat(buf, " ", sizeof buf - strlen(buf) - 1);
        strncat(buf, op ? op : "?", sizeof buf - strlen(buf) - 1);
    }
    return buf;
}

/* ---- versions ---------------------------------------------------------------------- */

static void test_versions(void) {
    CHECK_EQ_STR(kiln_version(), KILN_VERSION);
    CHECK_EQ_INT(kiln_api_version(), KILN_API_VERSION);
    CHECK(KILN_API_VERSION >= 1);
    /* "MAJOR.MINOR.PATCH" */
    int maj = -1, min = -1, pat = -1;
    CHECK_EQ_INT(sscanf(kiln_version(), "%d.%d.%d", &maj, &min, &pat), 3);
    CHECK(maj >= 0 && min >= 0 && pat >= 0);
}

/* ---- value lists ------------------------------------------------------------------- */

static void test_args_scalars(void) {
    kiln_args *a = kiln_args_new();
    CHECK(a != NULL);
    CHECK_EQ_INT(kiln_args_count(a), 0);
    char s[16] = "hello";
    CHECK_EQ_INT(kiln_args_push_int(a, -42), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_float(a, 2.5), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_str(a, s), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_none(a), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_float(a, 3.0), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_int(a, INT64_MAX), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_str(a, ""), KILN_OK);
    CHECK_EQ_INT(kiln_args_count(a), 7);
    CHECK_EQ_INT(kiln_args_kind(a, 0), KILN_VALUE_INT);
    CHECK_EQ_INT(kiln_args_kind(a, 1), KILN_VALUE_FLOAT);
    CHECK_EQ_INT(kiln_args_kind(a, 2), KILN_VALUE_STR);
    CHECK_EQ_INT(kiln_args_kind(a, 3), KILN_VALUE_NONE);
    CHECK_EQ_INT(kiln_args_kind(a, 4), KILN_VALUE_FLOAT);
    CHECK_EQ_INT(kiln_args_kind(a, 7), KILN_VALUE_NONE);
    CHECK_EQ_INT(kiln_args_kind(a, -1), KILN_VALUE_NONE);

    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_int(a, 0), -42);
    CHECK_EQ_INT(kiln_args_int(a, 5), INT64_MAX);
    CHECK_NEAR(kiln_args_float(a, 1), 2.5, 0);
    CHECK_EQ_STR(kiln_args_str(a, 6), "");
    /* the string was copied */
    strcpy(s, "XXXXX");
    CHECK_EQ_STR(kiln_args_str(a, 2), "hello");
    CHECK(kiln_args_str(a, 2) != s);
    /* ints read as floats; a whole float reads as an int */
    CHECK_NEAR(kiln_args_float(a, 0), -42.0, 0);
    CHECK_EQ_INT(kiln_args_int(a, 4), 3);
    CHECK_EQ_STR(kiln_last_error(), ""); /* all of that was fine */

    /* a float with a fraction is not an int */
    CHECK_EQ_INT(kiln_args_int(a, 1), 0);
    CHECK_CONTAINS(kiln_last_error(), "value 1 is a float, not a int");
    /* wrong kinds give 0 / NULL and an error naming both kinds */
    kiln_clear_error();
    CHECK(kiln_args_str(a, 0) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "value 0 is a int, not a str");
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_int(a, 2), 0);
    CHECK_CONTAINS(kiln_last_error(), "value 2 is a str, not a int");
    kiln_clear_error();
    CHECK_NEAR(kiln_args_float(a, 3), 0, 0);
    CHECK_CONTAINS(kiln_last_error(), "value 3 is a none, not a float");
    kiln_clear_error();
    CHECK(kiln_args_array(a, 0) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "not a array");
    kiln_clear_error();
    CHECK(kiln_args_graph(a, 1) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "not a graph");
    kiln_clear_error();
    CHECK(kiln_args_func(a, 2) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "value 2 is a str, not a function");
    /* out of range */
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_int(a, 7), 0);
    CHECK_CONTAINS(kiln_last_error(), "no value 7 (the list has 7)");
    kiln_clear_error();
    CHECK(kiln_args_str(a, -1) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "no value -1");
    kiln_clear_error();
    CHECK_NEAR(kiln_args_float(a, 100), 0, 0);
    CHECK_CONTAINS(kiln_last_error(), "no value 100");
    kiln_args_free(a);

    /* floats that are whole but do not fit an int64, and NaN, are not ints */
    kiln_args *f = kiln_args_new();
    kiln_args_push_float(f, 9223372036854775808.0); /* 2^63 */
    kiln_args_push_float(f, 1e300);
    kiln_args_push_float(f, NAN);
    kiln_args_push_float(f, -INFINITY);
    kiln_args_push_float(f, -9223372036854775808.0); /* -2^63 fits */
    kiln_args_push_float(f, -0.0);
    for (int i = 0; i < 4; i++) {
        kiln_clear_error();
        CHECK_EQ_INT(kiln_args_int(f, i), 0);
        CHECK_CONTAINS(kiln_last_error(), "is a float, not a int");
    }
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_int(f, 4), INT64_MIN);
    CHECK_EQ_INT(kiln_args_int(f, 5), 0);
    CHECK_EQ_STR(kiln_last_error(), "");
    CHECK(isnan(kiln_args_float(f, 2)));
    kiln_args_free(f);

    /* a long list grows and keeps every value */
    kiln_args *l = kiln_args_new();
    for (int i = 0; i < 1000; i++) {
        char t[16];
        snprintf(t, sizeof t, "s%d", i);
        CHECK_EQ_INT(i % 2 ? kiln_args_push_str(l, t) : kiln_args_push_int(l, i * 7), KILN_OK);
    }
    CHECK_EQ_INT(kiln_args_count(l), 1000);
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        char t[16];
        snprintf(t, sizeof t, "s%d", i);
        const char *got = i % 2 ? kiln_args_str(l, i) : NULL;
        bad += i % 2 ? !got || strcmp(got, t) != 0 : kiln_args_int(l, i) != i * 7;
    }
    CHECK_EQ_INT(bad, 0);
    kiln_args_free(l);

    /* NULL lists and NULL strings */
    kiln_args_free(NULL);
    CHECK_EQ_INT(kiln_args_count(NULL), 0);
    CHECK_EQ_INT(kiln_args_kind(NULL, 0), KILN_VALUE_NONE);
    CHECK_EQ_INT(kiln_args_push_int(NULL, 1), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_args_push_none(NULL), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_args_push_float(NULL, 1), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_args_push_str(NULL, "x"), KILN_ERR_INVALID);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_int(NULL, 0), 0);
    CHECK_CONTAINS(kiln_last_error(), "no value 0 (the list has 0)");
    kiln_args *e = kiln_args_new();
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_push_str(e, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "NULL string");
    CHECK_EQ_INT(kiln_args_count(e), 0);
    kiln_args_free(e);
}

static void test_args_arrays(void) {
    /* borrowed: the list does not free it */
    kiln_ndarray *x = vec(4, 1);
    kiln_args *a = kiln_args_new();
    CHECK_EQ_INT(kiln_args_push_array(a, x, 0), KILN_OK);
    CHECK_EQ_INT(kiln_args_kind(a, 0), KILN_VALUE_ARRAY);
    CHECK(kiln_args_array(a, 0) == x);
    int owned = -1;
    CHECK(kiln_args_take_array(a, 0, &owned) == x);
    CHECK_EQ_INT(owned, 0); /* borrowed: still the caller's */
    kiln_args_free(a);
    CHECK_NEAR(((float *)kiln_ndarray_data(x))[3], 4.0, 0); /* x is alive (ASan) */

    /* owned: freed with the list (a leak fails under ASan) */
    a = kiln_args_new();
    CHECK_EQ_INT(kiln_args_push_array(a, x, 1), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_array(a, vec(2, 0), 1), KILN_OK);
    CHECK(kiln_args_array(a, 0) == x);
    CHECK_EQ_INT(kiln_ndarray_dim(kiln_args_array(a, 1), 0), 2);
    kiln_args_free(a);

    /* taken back: the list no longer frees it (a double free fails) */
    x = vec(3, 5);
    a = kiln_args_new();
    CHECK_EQ_INT(kiln_args_push_array(a, x, 1), KILN_OK);
    owned = -1;
    CHECK(kiln_args_take_array(a, 0, &owned) == x);
    CHECK_EQ_INT(owned, 1);
    /* a second take finds it no longer owned */
    owned = -1;
    CHECK(kiln_args_take_array(a, 0, &owned) == x);
    CHECK_EQ_INT(owned, 0);
    CHECK(kiln_args_take_array(a, 0, NULL) == x);
    /* wrong kind or index: NULL, not owned, an error */
    kiln_args_push_int(a, 3);
    owned = -1;
    kiln_clear_error();
    CHECK(kiln_args_take_array(a, 1, &owned) == NULL);
    CHECK_EQ_INT(owned, 0);
    CHECK_CONTAINS(kiln_last_error(), "value 1 is a int, not a array");
    owned = -1;
    kiln_clear_error();
    CHECK(kiln_args_take_array(a, 9, &owned) == NULL);
    CHECK_EQ_INT(owned, 0);
    CHECK_CONTAINS(kiln_last_error(), "no value 9");
    kiln_clear_error();
    CHECK(kiln_args_take_graph(a, 0, &owned) == NULL); /* an array is not a graph */
    CHECK_CONTAINS(kiln_last_error(), "value 0 is a array, not a graph");
    kiln_args_free(a);
    CHECK_NEAR(((float *)kiln_ndarray_data(x))[2], 7.0, 0);
    kiln_ndarray_free(x);

    /* NULL arrays are refused; an owned one handed to no list is freed */
    a = kiln_args_new();
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_push_array(a, NULL, 1), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "NULL array");
    CHECK_EQ_INT(kiln_args_count(a), 0);
    kiln_args_free(a);
    CHECK_EQ_INT(kiln_args_push_array(NULL, vec(2, 0), 1), KILN_ERR_INVALID); /* no leak */
}

static void test_args_graphs(void) {
    kiln_graph *g = chain("nn.relu", NULL);
    kiln_args *a = kiln_args_new();
    CHECK_EQ_INT(kiln_args_push_graph(a, g, 0), KILN_OK);
    CHECK_EQ_INT(kiln_args_kind(a, 0), KILN_VALUE_GRAPH);
    CHECK(kiln_args_graph(a, 0) == g);
    kiln_clear_error();
    CHECK(kiln_args_array(a, 0) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "value 0 is a graph, not a array");
    kiln_args_free(a);
    CHECK_EQ_INT(kiln_graph_num_nodes(g), 2); /* borrowed: alive */

    /* owned: freed with the list */
    a = kiln_args_new();
    CHECK_EQ_INT(kiln_args_push_graph(a, g, 1), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_graph(a, chain("exp", "nn.relu"), 1), KILN_OK);
    CHECK_EQ_INT(kiln_graph_num_nodes(kiln_args_graph(a, 1)), 3);
    kiln_args_free(a);

    /* taken back */
    g = chain("exp", NULL);
    a = kiln_args_new();
    kiln_args_push_graph(a, g, 1);
    int owned = -1;
    CHECK(kiln_args_take_graph(a, 0, &owned) == g);
    CHECK_EQ_INT(owned, 1);
    kiln_args_free(a);
    CHECK_EQ_STR(ops_of(g), "var exp");
    kiln_graph_free(g);

    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_push_graph(NULL, chain("exp", NULL), 1), KILN_ERR_INVALID); /* freed */
    a = kiln_args_new();
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_push_graph(a, NULL, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "NULL graph");
    kiln_args_free(a);
}

/* ---- functions ------------------------------------------------------------------- */

static void test_func_refs(void) {
    int freed = 0;
    kiln_func *f = kiln_func_new(fn_add1, &freed, count_free);
    CHECK(f != NULL);
    CHECK(kiln_func_retain(f) == f);
    CHECK(kiln_func_retain(f) == f);
    kiln_func_release(f);
    kiln_func_release(f);
    CHECK_EQ_INT(freed, 0);
    kiln_func_release(f); /* the last one */
    CHECK_EQ_INT(freed, 1);
    CHECK(kiln_func_retain(NULL) == NULL);
    kiln_func_release(NULL);

    /* no free_user: fine */
    f = kiln_func_new(fn_add1, &freed, NULL);
    kiln_func_release(f);
    CHECK_EQ_INT(freed, 1);

    kiln_clear_error();
    CHECK(kiln_func_new(NULL, &freed, count_free) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "no function");
    CHECK_EQ_INT(freed, 1);
}

static void test_func_call(void) {
    int64_t k = 10;
    kiln_func *f = kiln_func_new(fn_add_user, &k, NULL);
    kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
    kiln_args_push_int(in, 5);
    /* ret is emptied first, freeing what it owned (ASan checks) */
    kiln_args_push_str(ret, "stale");
    kiln_args_push_array(ret, vec(3, 0), 1);
    kiln_args_push_graph(ret, chain("exp", NULL), 1);
    CHECK_EQ_INT(kiln_func_call(f, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_count(ret), 1);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 15);
    k = -3; /* user is read at each call */
    CHECK_EQ_INT(kiln_func_call(f, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_count(ret), 1);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 2);
    kiln_func_release(f);

    /* several results; NULL args is an empty list */
    f = kiln_func_new(fn_many, NULL, NULL);
    CHECK_EQ_INT(kiln_func_call(f, NULL, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_count(ret), 4);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 0);
    CHECK_NEAR(kiln_args_float(ret, 1), 0.25, 0);
    CHECK_EQ_STR(kiln_args_str(ret, 2), "out");
    CHECK_EQ_INT(kiln_args_kind(ret, 3), KILN_VALUE_NONE);
    kiln_args_push_none(in);
    CHECK_EQ_INT(kiln_func_call(f, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 2);
    /* NULL function or result list */
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_call(f, in, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no result list");
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_call(NULL, in, ret), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no function");
    kiln_func_release(f);

    /* the function starts with no error left from before */
    f = kiln_func_new(fn_record_error, NULL, NULL);
    kiln_error_raise(KILN_ERR_IO, "old error");
    CHECK_EQ_INT(kiln_func_call(f, in, ret), KILN_OK);
    CHECK_EQ_STR(g_seen_on_entry, "[]");
    kiln_func_release(f);

    /* failing without a message: one is supplied, the old one is not kept */
    f = kiln_func_new(fn_fail_silent, NULL, NULL);
    kiln_error_raise(KILN_ERR_IO, "old error");
    CHECK_EQ_INT(kiln_func_call(f, in, ret), KILN_ERR_UNSUPPORTED);
    CHECK_CONTAINS(kiln_last_error(), "without a message");
    CHECK_CONTAINS(kiln_last_error(), kiln_status_str(KILN_ERR_UNSUPPORTED));
    CHECK(strstr(kiln_last_error(), "old error") == NULL);
    kiln_func_release(f);

    /* failing with kiln_error_raise: its message and status, and a trace */
    f = kiln_func_new(fn_fail_raise, NULL, NULL);
    kiln_clear_error();
    CHECK_EQ_STR(kiln_last_error_trace(), "");
    CHECK_EQ_INT(kiln_func_call(f, in, ret), KILN_ERR_RANGE);
    CHECK_EQ_STR(kiln_last_error(), "custom boom");
    const char *tr = kiln_last_error_trace();
    CHECK(tr && strlen(tr) > 0);
    CHECK(tr && strchr(tr, '\n') != NULL); /* one frame a line */
    CHECK(tr && tr[strlen(tr) - 1] == '\n');
    kiln_func_release(f);

    kiln_args_free(in);
    kiln_args_free(ret);
}

static void test_error_raise(void) {
    CHECK_EQ_INT(kiln_error_raise(KILN_ERR_IO, "a message"), KILN_ERR_IO);
    CHECK_EQ_STR(kiln_last_error(), "a message");
    CHECK(strlen(kiln_last_error_trace()) > 0);
    CHECK_EQ_INT(kiln_error_raise(KILN_OK, NULL), KILN_OK);
    CHECK_EQ_STR(kiln_last_error(), "");
    /* a long message is cut, not overflowed */
    size_t n = 10000;
    char *big = malloc(n + 1);
    memset(big, 'm', n);
    big[n] = 0;
    kiln_error_raise(KILN_ERR_INVALID, big);
    size_t got = strlen(kiln_last_error());
    CHECK(got > 1000 && got < n);
    CHECK_EQ_INT(strspn(kiln_last_error(), "m"), got);
    free(big);
    kiln_clear_error();
    CHECK_EQ_STR(kiln_last_error(), "");
    CHECK_EQ_STR(kiln_last_error_trace(), "");
}

/* ---- the registry -------------------------------------------------------------------- */

/* Whether `list` (kiln_func_list) is sorted with each name on a line, and
 * holds `name`. */
static int list_sorted(const char *list) {
    const char *prev = NULL;
    size_t prev_len = 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '\n');
        if (!e || e == p)
            return 0; /* every name ends with a newline and is not empty */
        size_t len = (size_t)(e - p);
        if (prev) {
            size_t m = len < prev_len ? len : prev_len;
            int c = memcmp(prev, p, m);
            if (c > 0 || (c == 0 && prev_len >= len))
                return 0;
        }
        prev = p;
        prev_len = len;
        p = e + 1;
    }
    return 1;
}

static int list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, '\n');
        if (!e)
            return 0;
        if ((size_t)(e - p) == n && !strncmp(p, name, n))
            return 1;
        p = e + 1;
    }
    return 0;
}

static void test_registry(void) {
    int freed1 = 0, freed2 = 0;
    kiln_func *f1 = kiln_func_new(fn_add1, &freed1, count_free);
    CHECK_EQ_INT(kiln_func_register("test.ffi.zeta", f1, 0), KILN_OK);
    CHECK_EQ_INT(kiln_func_register("test.ffi.alpha", f1, 0), KILN_OK); /* two names */
    kiln_func_release(f1); /* the registry keeps it alive */
    CHECK_EQ_INT(freed1, 0);

    kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
    kiln_args_push_int(in, 41);
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.zeta", in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 42);

    /* a duplicate is refused, naming it, and changes nothing */
    int64_t k = 100;
    kiln_func *f2 = kiln_func_new(fn_add_user, &k, NULL);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_register("test.ffi.zeta", f2, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "'test.ffi.zeta' is already registered");
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.zeta", in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 42);
    /* override replaces it */
    CHECK_EQ_INT(kiln_func_register("test.ffi.zeta", f2, 1), KILN_OK);
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.zeta", in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 141);
    CHECK_EQ_INT(freed1, 0); /* still "test.ffi.alpha" */
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.alpha", in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 42);
    /* override of a name that is not there registers it */
    CHECK_EQ_INT(kiln_func_register("test.ffi.mid", f2, 1), KILN_OK);
    kiln_func_release(f2);

    /* lookup: a new reference each */
    kiln_func *g = kiln_func_get("test.ffi.alpha", 0);
    CHECK(g != NULL);
    kiln_func *g2 = kiln_func_get("test.ffi.alpha", 1);
    CHECK(g == g2);
    kiln_func_release(g2);
    /* unknown: quiet leaves the error alone; not quiet names the function */
    kiln_error_raise(KILN_ERR_IO, "sentinel");
    CHECK(kiln_func_get("test.ffi.nope", 1) == NULL);
    CHECK_EQ_STR(kiln_last_error(), "sentinel");
    CHECK(kiln_func_get("test.ffi.nope", 0) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "'test.ffi.nope'");
    CHECK(kiln_func_get(NULL, 1) == NULL);
    CHECK(kiln_func_get("", 1) == NULL);

    /* the listing: sorted, one per line, malloc'd */
    char *list = kiln_func_list();
    CHECK(list != NULL);
    CHECK(list_sorted(list));
    CHECK(list_has(list, "test.ffi.alpha"));
    CHECK(list_has(list, "test.ffi.mid"));
    CHECK(list_has(list, "test.ffi.zeta"));
    CHECK(!list_has(list, "test.ffi.nope"));
    const char *pa = list ? strstr(list, "test.ffi.alpha\n") : NULL;
    const char *pm = list ? strstr(list, "test.ffi.mid\n") : NULL;
    const char *pz = list ? strstr(list, "test.ffi.zeta\n") : NULL;
    CHECK(pa && pm && pz && pa < pm && pm < pz);
    kiln_free(list);

    /* unregister: the name goes; the function lives while referenced */
    CHECK_EQ_INT(kiln_func_unregister("test.ffi.alpha"), KILN_OK);
    CHECK(kiln_func_get("test.ffi.alpha", 1) == NULL);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.alpha", in, ret), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "'test.ffi.alpha'");
    CHECK_EQ_INT(freed1, 0); /* g still holds it */
    CHECK_EQ_INT(kiln_func_call(g, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 42);
    kiln_func_release(g);
    CHECK_EQ_INT(freed1, 1);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_unregister("test.ffi.alpha"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no global function 'test.ffi.alpha'");
    CHECK_EQ_INT(kiln_func_unregister(NULL), KILN_ERR_INVALID);

    /* an override drops the registry's reference to the old function */
    kiln_func *f3 = kiln_func_new(fn_add1, &freed2, count_free);
    kiln_func_register("test.ffi.mid", f3, 1);
    kiln_func_release(f3);
    CHECK_EQ_INT(freed2, 0);
    kiln_func *f4 = kiln_func_new(fn_many, NULL, NULL);
    CHECK_EQ_INT(kiln_func_register("test.ffi.mid", f4, 1), KILN_OK);
    CHECK_EQ_INT(freed2, 1);
    /* re-registering the same function under its own name */
    CHECK_EQ_INT(kiln_func_register("test.ffi.mid", f4, 1), KILN_OK);
    kiln_func_release(f4);
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.mid", NULL, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_count(ret), 4);

    /* errors of a call by name are prefixed with the name */
    kiln_func *bad = kiln_func_new(fn_fail_raise, NULL, NULL);
    kiln_func_register("test.ffi.boom", bad, 0);
    kiln_func_release(bad);
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.boom", in, ret), KILN_ERR_RANGE);
    CHECK_EQ_STR(kiln_last_error(), "global function 'test.ffi.boom': custom boom");
    CHECK(strlen(kiln_last_error_trace()) > 0);
    kiln_func *silent = kiln_func_new(fn_fail_silent, NULL, NULL);
    kiln_func_register("test.ffi.silent", silent, 0);
    kiln_func_release(silent);
    CHECK_EQ_INT(kiln_func_call_name("test.ffi.silent", in, ret), KILN_ERR_UNSUPPORTED);
    CHECK_CONTAINS(kiln_last_error(), "global function 'test.ffi.silent': ");
    CHECK_CONTAINS(kiln_last_error(), "without a message");

    /* bad registrations */
    f1 = kiln_func_new(fn_add1, NULL, NULL);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_register(NULL, f1, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no name");
    CHECK_EQ_INT(kiln_func_register("", f1, 0), KILN_ERR_INVALID);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_func_register("test.ffi.null", NULL, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no function");
    CHECK(kiln_func_get("test.ffi.null", 1) == NULL);
    kiln_func_release(f1);

    const char *mine[] = {"test.ffi.zeta", "test.ffi.mid", "test.ffi.boom", "test.ffi.silent"};
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(kiln_func_unregister(mine[i]), KILN_OK);
    list = kiln_func_list();
    CHECK(list && list_sorted(list) && !strstr(list, "test.ffi."));
    kiln_free(list);
    kiln_args_free(in);
    kiln_args_free(ret);
}

/* ---- functions as values ---------------------------------------------------------- */

static void test_func_values(void) {
    int freed = 0;
    kiln_func *f = kiln_func_new(fn_add1, &freed, count_free);
    kiln_args *a = kiln_args_new();
    CHECK_EQ_INT(kiln_args_push_func(a, f), KILN_OK);
    CHECK_EQ_INT(kiln_args_push_func(a, f), KILN_OK);
    kiln_func_release(f); /* the list holds two references */
    CHECK_EQ_INT(freed, 0);
    CHECK_EQ_INT(kiln_args_kind(a, 0), KILN_VALUE_FUNC);
    CHECK(kiln_args_func(a, 1) == f);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_int(a, 0), 0);
    CHECK_CONTAINS(kiln_last_error(), "value 0 is a function, not a int");

    /* a function taking a function */
    kiln_args_push_int(a, 6);
    kiln_func *apply = kiln_func_new(fn_apply, NULL, NULL);
    kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
    kiln_args_push_func(in, kiln_args_func(a, 0));
    kiln_args_push_int(in, kiln_args_int(a, 2));
    CHECK_EQ_INT(kiln_func_call(apply, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 7);
    kiln_args_free(in); /* one reference fewer */
    CHECK_EQ_INT(freed, 0);
    kiln_args_free(a); /* the last two */
    CHECK_EQ_INT(freed, 1);

    /* a function returning a function (a closure with its own data) */
    kiln_func *make = kiln_func_new(fn_make_adder, NULL, NULL);
    in = kiln_args_new();
    kiln_args_push_int(in, 1000);
    CHECK_EQ_INT(kiln_func_call(make, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_kind(ret, 0), KILN_VALUE_FUNC);
    kiln_func *adder = kiln_func_retain(kiln_args_func(ret, 0));
    kiln_args_free(ret); /* the closure stays alive through our reference */
    ret = kiln_args_new();
    kiln_args *x = kiln_args_new();
    kiln_args_push_int(x, 5);
    CHECK_EQ_INT(kiln_func_call(adder, x, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 1005);
    /* ret emptied by the next call releases a function in it (ASan: no leak) */
    CHECK_EQ_INT(kiln_func_call(make, in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_func_call(make, in, ret), KILN_OK);
    kiln_func_release(adder); /* frees its int through free_closure */
    kiln_args_free(x);
    kiln_args_free(in);
    kiln_args_free(ret);
    kiln_func_release(make);
    kiln_func_release(apply);

    a = kiln_args_new();
    kiln_clear_error();
    CHECK_EQ_INT(kiln_args_push_func(a, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "NULL function");
    CHECK_EQ_INT(kiln_args_count(a), 0);
    kiln_args_free(a);
}

/* ---- user passes --------------------------------------------------------------------- */

static int g_pass_calls;

/* A copy of g (value 0) in which relu(relu(x)) is relu(x) and, when
 * user is non-NULL, every relu is negative; vars and unary calls only,
 * the last node the output. Returned owned (take=1). */
static kiln_status pass_rewrite(const kiln_args *in, kiln_args *ret, void *user) {
    g_pass_calls++;
    const kiln_graph *g = kiln_args_graph(in, 0);
    if (!g)
        return KILN_ERR_INVALID;
    int n = kiln_graph_num_nodes(g);
    int *map = calloc((size_t)n + 1, sizeof *map);
    kiln_graph *r = kiln_graph_new();
    if (!map || !r) {
        free(map);
        kiln_graph_free(r);
        return kiln_error_raise(KILN_ERR_NOMEM, "no memory");
    }
    for (int i = 0; i < n; i++) {
        const char *op = kiln_graph_node_op(g, i);
        if (!strcmp(op, "var")) {
            /* the pass gets a typed graph */
            int64_t dims[KILN_MAX_NDIM];
            int nd = kiln_graph_node_ndim(g, i);
            for (int d = 0; d < nd; d++)
                dims[d] = kiln_graph_node_dim(g, i, d);
            map[i] = kiln_graph_var(r, kiln_graph_node_name(g, i), kiln_graph_node_dtype(g, i), nd,
                                    dims, NULL);
            continue;
        }
        int src = kiln_graph_node_input(g, i, 0);
        if (!strcmp(op, "nn.relu") && !strcmp(kiln_graph_node_op(g, src), "nn.relu")) {
            map[i] = map[src];
            continue;
        }
        const char *nop = user && !strcmp(op, "nn.relu") ? "negative" : op;
        map[i] = kiln_graph_call(r, nop, 1, &map[src], NULL, kiln_graph_node_name(g, i));
    }
    int out = map[n - 1];
    free(map);
    if (kiln_graph_set_outputs(r, 1, &out, NULL) != KILN_OK) {
        kiln_graph_free(r);
        return KILN_ERR_INVALID;
    }
    return kiln_args_push_graph(ret, r, 1);
}

/* Returns its input, borrowed. */
static kiln_status pass_identity(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    g_pass_calls++;
    return kiln_args_push_graph(ret, kiln_args_graph(in, 0), 0);
}

/* Returns a graph it keeps (user), borrowed. */
static kiln_status pass_kept(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in;
    return kiln_args_push_graph(ret, user, 0);
}

static kiln_status pass_returns_int(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)user;
    return kiln_args_push_int(ret, 7);
}

static kiln_status pass_returns_nothing(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)ret, (void)user;
    return KILN_OK;
}

static kiln_status pass_fails(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)ret, (void)user;
    g_pass_calls++;
    return kiln_error_raise(KILN_ERR_UNSUPPORTED, "the pass gave up");
}

/* A graph whose types do not check: x[2, 3] + y[4, 5]. */
static kiln_status pass_ill_typed(const kiln_args *in, kiln_args *ret, void *user) {
    (void)in, (void)user;
    kiln_graph *r = kiln_graph_new();
    int64_t a[2] = {2, 3}, b[2] = {4, 5};
    int xy[2] = {kiln_graph_var(r, "x", KILN_FLOAT32, 2, a, NULL),
                 kiln_graph_var(r, "y", KILN_FLOAT32, 2, b, NULL)};
    int s = kiln_graph_call(r, "add", 2, xy, NULL, "s");
    kiln_graph_set_outputs(r, 1, &s, NULL);
    return kiln_args_push_graph(ret, r, 1);
}

static void reg(const char *name, kiln_packed_fn fn, void *user) {
    kiln_func *f = kiln_func_new(fn, user, NULL);
    CHECK_EQ_INT(kiln_func_register(name, f, 1), KILN_OK);
    kiln_func_release(f);
}

static void test_user_pass(void) {
    static int negate = 1;
    kiln_graph *kept = chain("exp", "sigmoid");
    reg("test.ffi.drop_double_relu", pass_rewrite, NULL);
    reg("test.ffi.relu_to_negative", pass_rewrite, &negate);
    reg("test.ffi.identity", pass_identity, NULL);
    reg("test.ffi.kept", pass_kept, kept);
    reg("test.ffi.returns_int", pass_returns_int, NULL);
    reg("test.ffi.returns_nothing", pass_returns_nothing, NULL);
    reg("test.ffi.fails", pass_fails, NULL);
    reg("test.ffi.ill_typed", pass_ill_typed, NULL);

    /* a new graph, owned by the result list */
    kiln_graph *g = chain("nn.relu", "nn.relu");
    g_pass_calls = 0;
    kiln_graph *r = kiln_graph_run_pass(g, "test.ffi.drop_double_relu", NULL);
    CHECK(r != NULL);
    if (!r)
        fprintf(stderr, "drop_double_relu: %s\n", kiln_last_error());
    CHECK_EQ_INT(g_pass_calls, 1);
    CHECK(r != g);
    CHECK_EQ_INT(kiln_graph_num_nodes(r), 2);
    CHECK_EQ_STR(ops_of(r), "var nn.relu");
    CHECK_EQ_INT(kiln_graph_node_input(r, 1, 0), 0);
    CHECK_EQ_INT(kiln_graph_node_dtype(r, 1), KILN_FLOAT32); /* typed after the pass */
    CHECK_EQ_INT(kiln_graph_node_dim(r, 1, 1), 3);
    CHECK_EQ_STR(ops_of(g), "var nn.relu nn.relu"); /* the input is untouched */
    kiln_graph_free(r);

    /* the input returned borrowed: the caller gets a copy of it */
    r = kiln_graph_run_pass(g, "test.ffi.identity", NULL);
    CHECK(r != NULL && r != g);
    CHECK_EQ_STR(ops_of(r), "var nn.relu nn.relu");
    kiln_graph_free(r); /* a double free if r were g (ASan) */
    CHECK_EQ_INT(kiln_graph_num_nodes(g), 3);

    /* a graph the pass keeps, returned borrowed: copied too */
    r = kiln_graph_run_pass(g, "test.ffi.kept", NULL);
    CHECK(r != NULL && r != kept);
    CHECK_EQ_STR(ops_of(r), "var exp sigmoid");
    kiln_graph_free(r);
    CHECK_EQ_STR(ops_of(kept), "var exp sigmoid");

    /* passes by name that fail */
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, "test.ffi.no_such_pass", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "pass test.ffi.no_such_pass");
    CHECK_CONTAINS(kiln_last_error(), "no pass 'test.ffi.no_such_pass'");
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, "test.ffi.returns_int", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "pass test.ffi.returns_int");
    CHECK_CONTAINS(kiln_last_error(), "returned no graph");
    CHECK_CONTAINS(kiln_last_error(), "value 0 is a int, not a graph");
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, "test.ffi.returns_nothing", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "returned no graph");
    g_pass_calls = 0;
    CHECK(kiln_graph_run_pass(g, "test.ffi.fails", NULL) == NULL);
    CHECK_EQ_INT(g_pass_calls, 1);
    CHECK_EQ_STR(kiln_last_error(), "pass test.ffi.fails: the pass gave up");
    CHECK(strlen(kiln_last_error_trace()) > 0);
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, "test.ffi.ill_typed", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "after pass test.ffi.ill_typed");
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(NULL, "InferType", NULL) == NULL);
    CHECK(kiln_last_error()[0] != 0);
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, NULL, NULL) == NULL);
    CHECK(kiln_last_error()[0] != 0);

    /* built-in passes by name */
    r = kiln_graph_run_pass(g, "InferType", NULL);
    CHECK(r != NULL && r != g);
    CHECK_EQ_STR(ops_of(r), "var nn.relu nn.relu");
    CHECK_EQ_INT(kiln_graph_node_ndim(r, 2), 2);
    kiln_graph_free(r);
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, "FuseOps", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "FuseOps");
    CHECK_CONTAINS(kiln_last_error(), "lowered");
    kiln_clear_error();
    CHECK(kiln_graph_run_pass(g, "ConcatViews", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "ConcatViews");
    kiln_graph_free(g);

    /* SimplifyInference folds a batch_norm of constants */
    g = kiln_graph_new();
    int64_t xs[4] = {1, 3, 4, 4};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    int bn_in[5] = {x};
    for (int i = 0; i < 4; i++) {
        kiln_ndarray *p = vec(3, i == 3 ? 1.0f : 0.5f);
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        bn_in[1 + i] = kiln_graph_const(g, nm, p);
        kiln_ndarray_free(p);
    }
    int bn = kiln_graph_call(g, "nn.batch_norm", 5, bn_in, NULL, "bn");
    int re = kiln_graph_call(g, "nn.relu", 1, &bn, NULL, "relu");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &re, NULL), KILN_OK);
    r = kiln_graph_run_pass(g, "SimplifyInference", NULL);
    CHECK(r != NULL);
    if (!r)
        fprintf(stderr, "SimplifyInference: %s\n", kiln_last_error());
    CHECK(strstr(ops_of(g), "nn.batch_norm") != NULL);
    CHECK(r && strstr(ops_of(r), "nn.batch_norm") == NULL);
    CHECK(r && strstr(ops_of(r), "multiply") != NULL);
    CHECK(r && strstr(ops_of(r), "add") != NULL);
    kiln_graph_free(r);
    kiln_graph_free(g);

    /* the build option "pass": each name must be known */
    kiln_build_options *o = kiln_build_options_new();
    kiln_clear_error();
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "unknown_pass"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "unknown pass 'unknown_pass'");
    kiln_clear_error();
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "test.ffi.identity,unknown_pass"),
                 KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "'unknown_pass'");
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "test.ffi.identity"), KILN_OK);
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "test.ffi.identity,SimplifyInference"), KILN_OK);
    CHECK_EQ_INT(kiln_build_options_set(o, "disabled-pass", "test.ffi.kept"), KILN_OK);
    kiln_build_options_free(o);

    /* ... and runs first in a compile: x -> relu compiled as x -> negative */
    o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "test.ffi.relu_to_negative"), KILN_OK);
    g = chain("nn.relu", NULL);
    int64_t shape[2] = {2, 3};
    kiln_ndarray *in = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
    for (int i = 0; i < 6; i++)
        ((float *)kiln_ndarray_data(in))[i] = (float)i - 3.0f; /* -3 .. 2 */
    const kiln_ndarray *ins[1] = {in};
    g_pass_calls = 0;
    kiln_ndarray *y = gu_compile_run(g, o, 1, ins, NULL, NULL, 0);
    CHECK(y != NULL);
    CHECK_EQ_INT(g_pass_calls, 1);
    for (int i = 0; y && i < 6; i++)
        CHECK_NEAR(((float *)kiln_ndarray_data(y))[i], 3.0f - (float)i, 0);
    kiln_ndarray_free(y);
    /* without the option: relu */
    y = gu_compile_run(g, NULL, 1, ins, NULL, NULL, 0);
    CHECK(y != NULL);
    for (int i = 0; y && i < 6; i++)
        CHECK_NEAR(((float *)kiln_ndarray_data(y))[i], i < 3 ? 0.0f : (float)i - 3.0f, 0);
    kiln_ndarray_free(y);
    kiln_ndarray_free(in);
    kiln_build_options_free(o);

    /* a failing user pass fails the compile with its message */
    o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "test.ffi.fails"), KILN_OK);
    kiln_clear_error();
    CHECK(kiln_graph_compile(g, test_tmp_path("test_ffi_fails.tar"), o) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "pass test.ffi.fails: the pass gave up");
    /* a user pass unregistered after the option was set: an error naming it */
    CHECK_EQ_INT(kiln_func_unregister("test.ffi.fails"), KILN_OK);
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "test.ffi.fails"), KILN_ERR_INVALID);
    kiln_clear_error();
    CHECK(kiln_graph_compile(g, test_tmp_path("test_ffi_fails.tar"), o) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "no pass 'test.ffi.fails'");
    kiln_build_options_free(o);
    kiln_graph_free(g);

    const char *mine[] = {"test.ffi.drop_double_relu", "test.ffi.relu_to_negative",
                          "test.ffi.identity",         "test.ffi.kept",
                          "test.ffi.returns_int",      "test.ffi.returns_nothing",
                          "test.ffi.ill_typed"};
    for (int i = 0; i < 7; i++)
        CHECK_EQ_INT(kiln_func_unregister(mine[i]), KILN_OK);
    kiln_graph_free(kept);
}

/* ---- the global functions kiln registers itself --------------------------------- */

static void test_builtins(void) {
    char *list = kiln_func_list();
    const char *names[] = {"kiln.call", "kiln.graph.print", "kiln.graph.run_pass", "kiln.version"};
    for (int i = 0; i < 4; i++)
        CHECK(list && list_has(list, names[i]));
    kiln_free(list);

    kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
    CHECK_EQ_INT(kiln_func_call_name("kiln.version", NULL, ret), KILN_OK);
    CHECK_EQ_STR(kiln_args_str(ret, 0), KILN_VERSION);

    /* kiln.call(f, args...): the other values passed on, of every kind */
    kiln_func *many = kiln_func_new(fn_many, NULL, NULL);
    kiln_args_push_func(in, many);
    kiln_func_release(many);
    kiln_args_push_int(in, 1);
    kiln_args_push_str(in, "s");
    kiln_args_push_array(in, vec(2, 0), 1);
    kiln_args_push_none(in);
    CHECK_EQ_INT(kiln_func_call_name("kiln.call", in, ret), KILN_OK);
    CHECK_EQ_INT(kiln_args_count(ret), 4);
    CHECK_EQ_INT(kiln_args_int(ret, 0), 4); /* fn_many counts what it got */
    CHECK_EQ_STR(kiln_args_str(ret, 2), "out");
    kiln_args_free(in);
    in = kiln_args_new();
    kiln_args_push_int(in, 1);
    kiln_clear_error();
    CHECK(kiln_func_call_name("kiln.call", in, ret) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "global function 'kiln.call': ");
    CHECK_CONTAINS(kiln_last_error(), "not a function");

    /* kiln.graph.run_pass(graph, name) and kiln.graph.print(graph) */
    kiln_graph *g = chain("nn.relu", "nn.relu");
    reg("test.ffi.drop_double_relu", pass_rewrite, NULL);
    kiln_args_free(in);
    in = kiln_args_new();
    kiln_args_push_graph(in, g, 0);
    kiln_args_push_str(in, "test.ffi.drop_double_relu");
    CHECK_EQ_INT(kiln_func_call_name("kiln.graph.run_pass", in, ret), KILN_OK);
    int owned = 0;
    kiln_graph *r = kiln_args_take_graph(ret, 0, &owned);
    CHECK(r != NULL && r != g);
    CHECK_EQ_INT(owned, 1);
    CHECK_EQ_STR(ops_of(r), "var nn.relu");
    kiln_args *pin = kiln_args_new();
    kiln_args_push_graph(pin, r, 1);
    CHECK_EQ_INT(kiln_func_call_name("kiln.graph.print", pin, ret), KILN_OK);
    const char *text = kiln_args_str(ret, 0);
    CHECK_CONTAINS(text, "nn.relu");
    CHECK(text && strstr(strstr(text, "nn.relu") + 1, "nn.relu") == NULL); /* one relu */
    kiln_args_free(pin);
    /* a pass that fails: the error names it */
    kiln_args_free(in);
    in = kiln_args_new();
    kiln_args_push_graph(in, g, 0);
    kiln_args_push_str(in, "test.ffi.no_such_pass");
    kiln_clear_error();
    CHECK(kiln_func_call_name("kiln.graph.run_pass", in, ret) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "global function 'kiln.graph.run_pass': ");
    CHECK_CONTAINS(kiln_last_error(), "no pass 'test.ffi.no_such_pass'");
    CHECK_EQ_INT(kiln_func_unregister("test.ffi.drop_double_relu"), KILN_OK);
    kiln_graph_free(g);
    kiln_args_free(in);
    kiln_args_free(ret);
}

/* ---- threads ------------------------------------------------------------------------ */

#define THREAD_NAMES 200

typedef struct {
    int id;
    int failures;
    char last_error[64];
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *t = p;
    kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
    char name[64];
    for (int i = 0; i < THREAD_NAMES; i++) {
        snprintf(name, sizeof name, "test.ffi.thread%d.%03d", t->id, i);
        kiln_func *f = kiln_func_new(fn_add1, NULL, NULL);
        t->failures += kiln_func_register(name, f, 0) != KILN_OK;
        kiln_func_release(f);
    }
    for (int i = 0; i < THREAD_NAMES; i++) {
        snprintf(name, sizeof name, "test.ffi.thread%d.%03d", t->id, i);
        kiln_args_free(in);
        in = kiln_args_new();
        kiln_args_push_int(in, i);
        t->failures +=
            kiln_func_call_name(name, in, ret) != KILN_OK || kiln_args_int(ret, 0) != i + 1;
        if (i % 50 == 0) {
            char *list = kiln_func_list();
            t->failures += !list || !list_has(list, name);
            kiln_free(list);
        }
    }
    for (int i = 0; i < THREAD_NAMES; i++) {
        snprintf(name, sizeof name, "test.ffi.thread%d.%03d", t->id, i);
        t->failures += kiln_func_unregister(name) != KILN_OK;
    }
    /* errors are per thread */
    char msg[32];
    snprintf(msg, sizeof msg, "thread %d", t->id);
    kiln_error_raise(KILN_ERR_INVALID, msg);
    snprintf(t->last_error, sizeof t->last_error, "%s", kiln_last_error());
    kiln_args_free(in);
    kiln_args_free(ret);
    return NULL;
}

static void test_threads(void) {
    kiln_error_raise(KILN_ERR_IO, "main thread");
    thread_arg args[2] = {{0, 0, ""}, {1, 0, ""}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(pthread_join(th[i], NULL), 0);
    CHECK_EQ_INT(args[0].failures, 0);
    CHECK_EQ_INT(args[1].failures, 0);
    CHECK_EQ_STR(args[0].last_error, "thread 0");
    CHECK_EQ_STR(args[1].last_error, "thread 1");
    CHECK_EQ_STR(kiln_last_error(), "main thread");
    char *list = kiln_func_list();
    CHECK(list && !strstr(list, "test.ffi.thread"));
    kiln_free(list);
}

/* ---- regressions of the review ------------------------------------------------ */

/* A destructor that uses the registry: it ran under the registry's lock when
 * an override dropped the last reference, and deadlocked. */
static void free_lists_registry(void *user) {
    char *list = kiln_func_list();
    *(int *)user += list != NULL;
    kiln_free(list);
}

static kiln_status pass_own_input(const kiln_args *in, kiln_args *ret, void *user) {
    (void)user;
    /* hands back the graph it was lent as if it were its own */
    return kiln_args_push_graph(ret, kiln_args_graph(in, 0), 1) == KILN_OK ? KILN_OK
                                                                           : KILN_ERR_INVALID;
}

static void test_review_regressions(void) {
    int listed = 0;
    kiln_func *a = kiln_func_new(fn_add1, &listed, free_lists_registry);
    CHECK_EQ_INT(kiln_func_register("test.ffi.regress", a, 0), KILN_OK);
    kiln_func_release(a);
    kiln_func *b = kiln_func_new(fn_add1, NULL, NULL);
    CHECK_EQ_INT(kiln_func_register("test.ffi.regress", b, 1), KILN_OK); /* no deadlock */
    CHECK_EQ_INT(listed, 1);
    kiln_func_release(b);
    CHECK_EQ_INT(kiln_func_unregister("test.ffi.regress"), KILN_OK);
    /* re-raising the current error keeps its text */
    kiln_error_raise(KILN_ERR_IO, "the original message");
    CHECK_EQ_INT(kiln_error_raise(KILN_ERR_INVALID, kiln_last_error()), KILN_ERR_INVALID);
    CHECK_EQ_STR(kiln_last_error(), "the original message");
    kiln_error_raise(KILN_ERR_IO, "xyz suffix");
    kiln_error_raise(KILN_ERR_IO, kiln_last_error() + 4);
    CHECK_EQ_STR(kiln_last_error(), "suffix");
    /* FuseOps and ConcatViews are not passes to run by name */
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "FuseOps"), KILN_ERR_INVALID);
    CHECK(strstr(kiln_last_error(), "FuseOps") != NULL);
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "InferType,ConcatViews"), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_build_options_set(o, "disabled-pass", "FuseOps"), KILN_OK);
    kiln_build_options_free(o);
    /* a pass that claims to hand over the graph it was lent gets a copy made */
    kiln_func *own = kiln_func_new(pass_own_input, NULL, NULL);
    CHECK_EQ_INT(kiln_func_register("test.ffi.own_input", own, 0), KILN_OK);
    kiln_func_release(own);
    kiln_graph *g = kiln_graph_new();
    int64_t dims[1] = {4};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, dims, NULL);
    int r = kiln_graph_call(g, "nn.relu", 1, &x, NULL, NULL);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &r, NULL), KILN_OK);
    kiln_graph *h = kiln_graph_run_pass(g, "test.ffi.own_input", NULL);
    CHECK(h != NULL && h != g);
    CHECK_EQ_INT(kiln_graph_num_nodes(h), kiln_graph_num_nodes(g));
    kiln_graph_free(h);
    kiln_graph_free(g); /* once: ASan would see a double free */
    CHECK_EQ_INT(kiln_func_unregister("test.ffi.own_input"), KILN_OK);
}

TEST_MAIN(TEST(test_versions), TEST(test_args_scalars), TEST(test_args_arrays),
          TEST(test_args_graphs), TEST(test_func_refs), TEST(test_func_call),
          TEST(test_error_raise), TEST(test_registry), TEST(test_func_values), TEST(test_user_pass),
          TEST(test_builtins), TEST(test_threads), TEST(test_review_regressions))
