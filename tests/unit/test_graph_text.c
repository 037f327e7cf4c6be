/* test_graph_text.c: the graph IR's text form. A small graph prints to an
 * exact golden text; graphs with symbolic dims, named constants, every
 * attribute kind, tuples, odd names and several outputs print, parse back
 * and print to the same text; bad text gets an error with line:column, and
 * truncated or mutated text never crashes the parser. */
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "ops/ops.h"

static const int64_t S_1[] = {1};

static kiln_ndarray *filled(int ndim, const int64_t *shape, float base) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, ndim, shape);
    float *p = kiln_ndarray_data(a);
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
        p[i] = base + (float)i;
    return a;
}

static int add_const(kiln_graph *g, const char *name, int ndim, const int64_t *shape, float base) {
    kiln_ndarray *a = filled(ndim, shape, base);
    int id = kiln_graph_const(g, name, a);
    kiln_ndarray_free(a);
    return id;
}

/* Set node id's type to one tensor type, dims < 0 being "batch". */
static void set_type(kiln_graph *g, int id, int ndim, const int64_t *dims) {
    gdim d[KILN_MAX_NDIM];
    for (int i = 0; i < ndim; i++)
        d[i] = (gdim){dims[i], dims[i] < 0 ? "batch" : NULL};
    g->nodes[id]->type = gtype_tensor(g, KILN_FLOAT32, ndim, d);
}

static int same_arrays(const kiln_npz *a, const kiln_npz *b) {
    if (kiln_npz_count(a) != kiln_npz_count(b))
        return 0;
    for (int i = 0; i < kiln_npz_count(a); i++) {
        const kiln_ndarray *x = kiln_npz_array(a, i), *y = kiln_npz_get(b, kiln_npz_name(a, i));
        if (!y || kiln_ndarray_numel(x) != kiln_ndarray_numel(y) ||
            kiln_ndarray_dtype(x) != kiln_ndarray_dtype(y) ||
            memcmp(kiln_ndarray_data(x), kiln_ndarray_data(y),
                   (size_t)kiln_ndarray_numel(x) * kiln_dtype_size(kiln_ndarray_dtype(x))) != 0)
            return 0;
    }
    return 1;
}

/* Print g, parse it back over the same ops, print again: same text and
 * constants. Returns the text (malloc'd). */
static char *round_trip(const kiln_graph *g) {
    char *t1 = kiln_graph_print(g);
    kiln_npz *z1 = kiln_graph_constants(g);
    CHECK(t1 && z1);
    kiln_graph *g2 = graph_parse(t1, z1, g->ops);
    if (!g2)
        fprintf(stderr, "parse error: %s\n--- text\n%s", kiln_last_error(), t1);
    CHECK(g2 != NULL);
    char *t2 = g2 ? kiln_graph_print(g2) : NULL;
    kiln_npz *z2 = g2 ? kiln_graph_constants(g2) : NULL;
    CHECK_EQ_STR(t2, t1);
    CHECK(z2 && same_arrays(z1, z2));
    free(t2);
    kiln_npz_free(z1);
    kiln_npz_free(z2);
    kiln_graph_free(g2);
    return t1;
}

static const char *GOLDEN =
    "def @main(%data: Tensor[(batch, 3, 8, 8), float32]) {\n"
    "  %0 = nn.conv2d(%data, meta[relay.Constant][0] /* ty=Tensor[(4, 3, 3, 3), float32], "
    "span=\"conv1.weight\" */, strides=[1, 1], padding=[1, 1, 1, 1], channels=4, "
    "kernel_size=[3, 3]) /* ty=Tensor[(batch, 4, 8, 8), float32], span=\"Conv_0\" */;\n"
    "  %1 = nn.relu(%0) /* ty=Tensor[(batch, 4, 8, 8), float32] */;\n"
    "  %1 /* outputs=[\"y\"] */\n"
    "}\n";

static void test_golden(void) {
    kiln_graph *g = kiln_graph_new();
    static const int64_t x_dims[] = {-1, 3, 8, 8}, w_dims[] = {4, 3, 3, 3},
                         y_dims[] = {-1, 4, 8, 8};
    static const char *const syms[] = {"batch", NULL, NULL, NULL};
    int x = kiln_graph_var(g, "data", KILN_FLOAT32, 4, x_dims, syms);
    int w = add_const(g, "conv1.weight", 4, w_dims, 0);
    int c = kiln_graph_call(g, "nn.conv2d", 2, (int[]){x, w},
                            "strides=[1, 1], padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]",
                            "Conv_0");
    int r = kiln_graph_call(g, "nn.relu", 1, &c, NULL, NULL);
    CHECK(r == 3);
    set_type(g, c, 4, y_dims);
    set_type(g, r, 4, y_dims);
    const char *names[] = {"y"};
    CHECK(kiln_graph_set_outputs(g, 1, &r, names) == KILN_OK);
    char *t = round_trip(g);
    CHECK_EQ_STR(t, GOLDEN);
    /* the parsed graph keeps names, types and the constant */
    kiln_npz *z = kiln_graph_constants(g);
    kiln_graph *g2 = kiln_graph_parse(t, z);
    CHECK(g2 && g2->n == 4 && g2->nout == 1);
    if (g2 && g2->n == 4) {
        CHECK_EQ_STR(g2->nodes[1]->name, "conv1.weight");
        CHECK_EQ_STR(g2->nodes[2]->name, "Conv_0");
        CHECK_EQ_STR(g2->out_names[0], "y");
        CHECK(gtype_equal(&g2->nodes[3]->type, &g->nodes[3]->type));
        CHECK(g2->nodes[3]->type.t[0].dims[0].sym && g2->nodes[2]->type.known);
        CHECK(g2->nodes[1]->value && same_arrays(z, z));
    }
    kiln_graph_free(g2);
    kiln_npz_free(z);
    free(t);
    kiln_graph_free(g);
}

/* Types from InferType print, parse back, and infer again to the same text. */
static void test_inferred(void) {
    kiln_graph *g = kiln_graph_new();
    static const int64_t x_dims[] = {-1, 3, 8, 8}, w_dims[] = {4, 3, 3, 3};
    static const char *const syms[] = {"batch", NULL, NULL, NULL};
    int x = kiln_graph_var(g, "data", KILN_FLOAT32, 4, x_dims, syms);
    int w = add_const(g, "w", 4, w_dims, 0);
    int c = kiln_graph_call(g, "nn.conv2d", 2, (int[]){x, w}, "padding=[1, 1, 1, 1]", "Conv");
    int sp = kiln_graph_call(g, "split", 1, &c, "indices_or_sections=[1], axis=1", NULL);
    int a0 = kiln_graph_tuple_get(g, sp, 0, NULL), a1 = kiln_graph_tuple_get(g, sp, 1, NULL);
    int cat = kiln_graph_call(g, "concatenate", 2, (int[]){a1, a0}, "axis=1", NULL);
    int sm = kiln_graph_call(g, "nn.softmax", 1, &cat, "axis=1", NULL);
    CHECK(kiln_graph_set_outputs(g, 2, (int[]){sm, c}, NULL) == KILN_OK);
    CHECK(kiln_graph_infer_types(g) == KILN_OK);
    char *t = round_trip(g);
    CHECK_CONTAINS(t, "%2 = %1.0 /* ty=Tensor[(batch, 1, 8, 8), float32] */;");
    kiln_npz *z = kiln_graph_constants(g);
    kiln_graph *g2 = kiln_graph_parse(t, z);
    CHECK(g2 && kiln_graph_infer_types(g2) == KILN_OK);
    char *t2 = g2 ? kiln_graph_print(g2) : NULL;
    CHECK_EQ_STR(t2, t);
    free(t2);
    kiln_graph_free(g2);
    kiln_npz_free(z);
    free(t);
    kiln_graph_free(g);
}

/* A test op with one attribute of every kind. */
static rel_result rel_none(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    return REL_INCOMPLETE;
}
static const attr_schema all_attrs[] = {{"i", GA_INT, 0, NULL},   {"f", GA_FLOAT, 0, NULL},
                                        {"is", GA_INTS, 0, NULL}, {"fs", GA_FLOATS, 0, NULL},
                                        {"s", GA_STR, 0, NULL},   {NULL, 0, 0, NULL}};
static const kiln_op_def all_op = {"test.all", 0, 8, all_attrs, rel_none, OP_OPAQUE, NULL, "x"};

static kiln_op_registry *test_registry(void) {
    static kiln_op_registry r;
    if (!r.n) {
        const kiln_op_registry *d = ops_default_registry();
        for (int i = 0; i < d->n; i++)
            CHECK(op_registry_add(&r, d->ops[i]) == KILN_OK);
        CHECK(op_registry_add(&r, &all_op) == KILN_OK);
    }
    return &r;
}

static void test_attributes(void) {
    kiln_graph *g = graph_new(test_registry());
    static const int64_t dims[] = {-1, 7};
    static const char *const syms[] = {"n", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, syms);
    int a = kiln_graph_call(g, "test.all", 1, &x,
                            "i=-42, f=0.125, is=[1, -2, 3], fs=[0.5, -1e-05, 3e+20], "
                            "s=\"q\\\"uote\\\\ */ /* tab\\there\"",
                            "all");
    int b = kiln_graph_call(g, "test.all", 2, (int[]){x, a}, "s=ident, is=[], fs=[1, 2], f=3", "");
    int c = kiln_graph_call(g, "test.all", 0, NULL, "fs=[], i=9223372036854775807", "zero");
    int d = kiln_graph_call(g, "test.all", 0, NULL, NULL, NULL);
    CHECK(a >= 0 && b >= 0 && c >= 0 && d >= 0);
    CHECK(kiln_graph_set_outputs(g, 4, (int[]){a, b, c, d}, NULL) == KILN_OK);
    char *t = round_trip(g);
    CHECK_CONTAINS(t, "%0 = test.all(%x, i=-42, f=0.125f, is=[1, -2, 3], fs=[0.5f, -1e-05f, "
                      "3e+20f], s=\"q\\\"uote\\\\ */ /* tab\there\") /* span=\"all\" */;");
    CHECK_CONTAINS(t, "%1 = test.all(%x, %0, s=\"ident\", is=[], fs=[1f, 2f], f=3f);");
    CHECK_CONTAINS(t, "%2 = test.all(fs=[], i=9223372036854775807) /* span=\"zero\" */;");
    CHECK_CONTAINS(t, "%3 = test.all();");
    CHECK_CONTAINS(t, "(%0, %1, %2, %3) /* outputs=[\"output0\", \"output1\", \"output2\", "
                      "\"output3\"] */");
    free(t);
    kiln_graph_free(g);
}

static void test_tuples_and_outputs(void) {
    kiln_graph *g = kiln_graph_new();
    static const int64_t dims[] = {-1, 4}, half[] = {-1, 2}, cdims[] = {2, 2};
    static const char *const syms[] = {"batch", NULL};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, syms);
    int sp = kiln_graph_call(g, "split", 1, &x, "indices_or_sections=[2], axis=1", "Split_3");
    int t0 = kiln_graph_tuple_get(g, sp, 0, "Split_3:0");
    int t1 = kiln_graph_tuple_get(g, sp, 1, NULL);
    int w = add_const(g, "shared", 2, cdims, 1);
    int m0 = kiln_graph_call(g, "multiply", 2, (int[]){t0, w}, NULL, "m0");
    int m1 = kiln_graph_call(g, "multiply", 2, (int[]){w, t1}, NULL, "m1");
    int cat = kiln_graph_call(g, "concatenate", 3, (int[]){m0, m1, m0}, "axis=1", NULL);
    int tup = kiln_graph_tuple(g, 2, (int[]){cat, w}, "pair");
    int one = kiln_graph_tuple(g, 1, &m1, NULL);
    int none = kiln_graph_tuple(g, 0, NULL, NULL);
    int tg = kiln_graph_tuple_get(g, tup, 1, NULL);
    CHECK_EQ_INT(tg, w); /* an element of a tuple built here is that element */
    CHECK_EQ_INT(kiln_graph_tuple_get(g, tup, 2, NULL), -1);
    CHECK_CONTAINS(kiln_last_error(), "index 2 of a tuple of 2");
    add_const(g, "unused", 1, S_1, 0); /* not printed: not in the text */
    /* types: split is a tuple of two, the 1-tuple and the empty tuple */
    gdim hd[2] = {{-1, "batch"}, {2, NULL}};
    g->nodes[sp]->type = (gtype){1, 1, 2, arena_alloc(g->arena, 2 * sizeof(gtensor_type))};
    g->nodes[sp]->type.t[0] = *gtype_tensor(g, KILN_FLOAT32, 2, hd).t;
    g->nodes[sp]->type.t[1] = *gtype_tensor(g, KILN_INT64, 2, hd).t;
    set_type(g, t0, 2, half);
    g->nodes[one]->type = gtype_tensor(g, KILN_FLOAT32, 2, hd);
    g->nodes[one]->type.is_tuple = 1;
    g->nodes[none]->type = (gtype){1, 1, 0, NULL};
    const char *names[] = {"out \"a\"", "b", "weight", "", "x"};
    CHECK(kiln_graph_set_outputs(g, 5, (int[]){tup, tg, w, one, x}, names) == KILN_OK);
    char *t = round_trip(g);
    CHECK_CONTAINS(t, "%0 = split(%x, indices_or_sections=[2], axis=1) /* ty=(Tensor[(batch, 2), "
                      "float32], Tensor[(batch, 2), int64]), span=\"Split_3\" */;\n"
                      "  %1 = %0.0 /* ty=Tensor[(batch, 2), float32], span=\"Split_3:0\" */;\n"
                      "  %2 = %0.1;\n"
                      "  %3 = multiply(%1, meta[relay.Constant][0] /* ty=Tensor[(2, 2), float32], "
                      "span=\"shared\" */) /* span=\"m0\" */;\n"
                      "  %4 = multiply(meta[relay.Constant][0] /* ty=Tensor[(2, 2), float32], "
                      "span=\"shared\" */, %2) /* span=\"m1\" */;\n"
                      "  %5 = concatenate(%3, %4, %3, axis=1);\n");
    CHECK_CONTAINS(t, "%6 = (%5, meta[relay.Constant][0] /* ty=Tensor[(2, 2), float32], "
                      "span=\"shared\" */) /* span=\"pair\" */;\n"
                      "  %7 = (%4,) /* ty=(Tensor[(batch, 2), float32],) */;\n"
                      "  %8 = () /* ty=() */;\n"
                      "  (%6, meta[relay.Constant][0] /* ty=Tensor[(2, 2), float32], "
                      "span=\"shared\" */, meta[relay.Constant][0] /* ty=Tensor[(2, 2), float32], "
                      "span=\"shared\" */, %7, %x) /* outputs=[\"out \\\"a\\\"\", \"b\", "
                      "\"weight\", \"\", \"x\"] */\n}\n");
    kiln_npz *z = kiln_graph_constants(g);
    CHECK(z && kiln_npz_count(z) == 1);
    kiln_npz_free(z);
    free(t);
    kiln_graph_free(g);
}

static void test_names(void) {
    kiln_graph *g = kiln_graph_new();
    static const int64_t d[] = {2};
    int a = kiln_graph_var(g, "input:0", KILN_FLOAT32, 1, d, NULL);
    int b = kiln_graph_var(g, "x", KILN_INT64, 0, NULL, NULL);
    int c = kiln_graph_var(g, "x", KILN_FLOAT32, 1, d, NULL);  /* a repeat */
    int e = kiln_graph_var(g, "v0", KILN_FLOAT32, 1, d, NULL); /* looks generated */
    int f = kiln_graph_var(g, "0abc", KILN_FLOAT32, 1, d, NULL);
    int h = kiln_graph_var(g, "a.b_c.1", KILN_FLOAT32, 1, d, NULL);
    int k = graph_add(g, GN_VAR, NULL, 0, NULL, 0, NULL, ""); /* no name, no type */
    int s = kiln_graph_call(g, "add", 2, (int[]){a, c}, NULL, "we*/ird \"na\\me\"\nline");
    int t2 = kiln_graph_call(g, "add", 2, (int[]){e, h}, NULL, "*/");
    int u = kiln_graph_tuple(g, 3, (int[]){f, k, b}, NULL);
    int v = kiln_graph_tuple_get(g, h, 3, NULL); /* a tuple-get of a var with a dotted name */
    CHECK(a >= 0 && s >= 0 && t2 >= 0 && u >= 0 && v >= 0);
    CHECK(kiln_graph_set_outputs(g, 1, &s, (const char *[]){"a*/b"}) == KILN_OK);
    char *t = round_trip(g);
    CHECK_CONTAINS(t, "def @main(%v0: Tensor[(2,), float32] /* span=\"input:0\" */, "
                      "%x: Tensor[(), int64], %v2: Tensor[(2,), float32] /* span=\"x\" */, "
                      "%v3: Tensor[(2,), float32] /* span=\"v0\" */, "
                      "%v4: Tensor[(2,), float32] /* span=\"0abc\" */, "
                      "%a.b_c.1: Tensor[(2,), float32], %v6 /* span=\"\" */) {\n");
    CHECK_CONTAINS(t, "%0 = add(%v0, %v2) /* span=\"we*\\/ird \\\"na\\\\me\\\"\\nline\" */;\n"
                      "  %1 = add(%v3, %a.b_c.1) /* span=\"*\\/\" */;\n"
                      "  %2 = (%v4, %v6, %x);\n"
                      "  %3 = %a.b_c.1.3;\n"
                      "  %0 /* outputs=[\"a*\\/b\"] */\n");
    kiln_graph *g2 = kiln_graph_parse(t, NULL);
    CHECK(g2 && g2->n == g->n);
    for (int i = 0; g2 && i < g->n && i < g2->n; i++)
        CHECK_EQ_STR(g2->nodes[i]->name, g->nodes[i]->name);
    if (g2)
        CHECK_EQ_STR(g2->out_names[0], "a*/b");
    kiln_graph_free(g2);
    free(t);
    kiln_graph_free(g);
    /* no outputs at all */
    g = kiln_graph_new();
    char *e0 = round_trip(g);
    CHECK_EQ_STR(e0, "def @main() {\n  ()\n}\n");
    free(e0);
    kiln_graph_free(g);
}

/* Parse `text` (constants z) expecting an error that contains `msg`. */
static void expect_error(const char *text, const kiln_npz *z, const char *msg) {
    kiln_clear_error();
    kiln_graph *g = kiln_graph_parse(text, z);
    CHECK(g == NULL);
    CHECK_CONTAINS(kiln_last_error(), msg);
    kiln_graph_free(g);
}

#define HEAD "def @main(%x: Tensor[(2, 3), float32]) {\n"

static void test_errors(void) {
    kiln_npz *z = kiln_npz_new();
    kiln_ndarray *w = filled(1, S_1, 1);
    CHECK(kiln_npz_add(z, "0", w) == KILN_OK);
    kiln_ndarray_free(w);
    expect_error(HEAD "  %0 = nn.relu(%y);\n  %0\n}\n", NULL, "graph text:2:16: undefined %y");
    expect_error(HEAD "  %0 = nn.frob(%x);\n  %0\n}\n", NULL,
                 "graph text:2:8: unknown op 'nn.frob'");
    expect_error(HEAD "  %0 = add(%x);\n  %0\n}\n", NULL,
                 "graph text:2:8: add '': takes 2 inputs, got 1");
    expect_error(HEAD "  %0 = nn.softmax(%x, axis=\"a\");\n  %0\n}\n", NULL,
                 "graph text:2:8: nn.softmax '': attribute 'axis' must be a int, not a string");
    expect_error(HEAD "  %0 = nn.softmax(%x, colour=1) /* span=\"S\" */;\n  %0\n}\n", NULL,
                 "graph text:2:8: nn.softmax 'S': unknown attribute 'colour'");
    expect_error(HEAD "  %0 = nn.softmax(%x, axis=);\n  %0\n}\n", NULL,
                 "graph text:2:28: attribute 'axis': expected a value");
    expect_error(HEAD "  %0 = add(%x, meta[relay.Constant][1]);\n  %0\n}\n", z,
                 "graph text:2:16: meta[relay.Constant][1]: the constants have no array \"1\"");
    expect_error(HEAD "  %0 = add(%x, meta[relay.Constant][0]);\n  %0\n}\n", NULL,
                 "no array \"0\"");
    expect_error(HEAD "  %0 = add(%x, meta[relay.Constant][0] /* ty=Tensor[(2,), float32] */);\n"
                      "  %0\n}\n",
                 z, "graph text:2:16: meta[relay.Constant][0]: ty= does not match");
    expect_error(HEAD "  %0 = nn.relu(%x);\n  %0 = nn.relu(%x);\n  %0\n}\n", NULL,
                 "graph text:3:3: %0 is defined twice");
    expect_error("def @main(%x: Tensor[(2), float32], %x: Tensor[(2), float32]) {\n  %x\n}\n", NULL,
                 "graph text:1:37: %x is defined twice");
    expect_error(HEAD "  %0 = nn.relu(%x) /* ty=Tensor[(2, 3), float33] */;\n  %0\n}\n", NULL,
                 "graph text:2:41: unknown dtype 'float33'");
    expect_error(HEAD "  %0 = nn.relu(%x) /* ty=Tensor[(-2, 3), float32] */;\n  %0\n}\n", NULL,
                 "graph text:2:34: a dim -2 is out of range");
    expect_error(HEAD "  %0 = nn.relu(%x) /* colour=1 */;\n  %0\n}\n", NULL,
                 "graph text:2:23: expected ty=, span= or outputs=");
    expect_error(HEAD "  %0 = nn.relu(%x);\n  %0 /* outputs=[\"a\", \"b\"] */\n}\n", NULL,
                 "1 outputs but 2 output names");
    expect_error(HEAD "  %0 = %x.1.;\n  %0\n}\n", NULL, "expected a call, a tuple or %tuple.INDEX");
    expect_error(HEAD "  %0 = %y.1;\n  %0\n}\n", NULL, "graph text:2:8: undefined %y");
    expect_error(HEAD "  %0 = nn.relu(%x);\n  %0\n}\nextra", NULL,
                 "graph text:5:1: unexpected text after the function");
    expect_error(HEAD "  %0 = nn.relu(%x) /* span=\"a */;\n", NULL,
                 "graph text:2:28: unterminated string");
    expect_error(HEAD "  %0 = nn.relu(%x) /* ty=Tensor[(2, 3), float32] ;\n", NULL,
                 "graph text:2:20: unterminated comment");
    expect_error("", NULL, "graph text:1:1: expected 'def @main('");
    expect_error(NULL, NULL, "NULL");
    kiln_npz_free(z);
}

/* A text with every construct, for truncation and mutation. */
static char *sample_text(kiln_npz **z) {
    kiln_graph *g = kiln_graph_new();
    static const int64_t dims[] = {-1, 4}, cdims[] = {4};
    static const char *const syms[] = {"batch", NULL};
    int x = kiln_graph_var(g, "in:0", KILN_FLOAT32, 2, dims, syms);
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 2, dims, syms);
    int c = add_const(g, "bias", 1, cdims, 0);
    int a = kiln_graph_call(g, "add", 2, (int[]){x, c}, NULL, "Add_1");
    int sp = kiln_graph_call(g, "split", 1, &a, "indices_or_sections=[1, 3], axis=1", "Split");
    int t0 = kiln_graph_tuple_get(g, sp, 0, NULL);
    int t2 = kiln_graph_tuple_get(g, sp, 2, NULL);
    int cat = kiln_graph_call(g, "concatenate", 2, (int[]){t0, t2}, "axis=1", NULL);
    int sm = kiln_graph_call(g, "nn.softmax", 1, &cat, "axis=-1", "Softmax");
    int cl = kiln_graph_call(g, "clip", 1, &y, "a_min=0.5, a_max=6", NULL);
    int tup = kiln_graph_tuple(g, 2, (int[]){sm, cl}, NULL);
    set_type(g, a, 2, dims);
    set_type(g, sm, 2, dims);
    CHECK(kiln_graph_set_outputs(g, 3, (int[]){tup, c, sm}, (const char *[]){"t", "c", "s"}) ==
          KILN_OK);
    char *t = round_trip(g);
    *z = kiln_graph_constants(g);
    kiln_graph_free(g);
    return t;
}

static void test_truncated(void) {
    kiln_npz *z;
    char *t = sample_text(&z);
    size_t n = strlen(t);
    char *buf = malloc(n + 1);
    int parsed = 0;
    for (size_t len = 0; len <= n; len++) {
        memcpy(buf, t, len);
        buf[len] = 0;
        kiln_clear_error();
        kiln_graph *g = kiln_graph_parse(buf, z);
        if (g)
            parsed++;
        else
            CHECK(strncmp(kiln_last_error(), "graph text:", 11) == 0);
        kiln_graph_free(g);
    }
    CHECK(parsed >= 1 && parsed <= 3); /* the whole text, maybe less a newline */
    free(buf);
    free(t);
    kiln_npz_free(z);
}

static void test_mutated(void) {
    kiln_npz *z;
    char *t = sample_text(&z);
    size_t n = strlen(t);
    char *buf = malloc(n + 1);
    static const char special[] = "%@()[]{},;:=./*\"\\-0123456789ef \n";
    uint64_t s = 12345;
    int parsed = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(buf, t, n + 1);
        if (iter % 5 == 4) { /* cut a span out */
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(s >> 33) % n, len = (size_t)(s >> 8) % 16;
            if (pos + len > n)
                len = n - pos;
            memmove(buf + pos, buf + pos + len, n + 1 - pos - len);
        }
        int edits = iter % 5;
        for (int e = 0; e < edits; e++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(s >> 33) % n;
            unsigned r = (unsigned)(s >> 20) & 0xff;
            buf[pos] = (iter & 1) ? special[r % (sizeof special - 1)] : (char)(r ? r : 1);
        }
        kiln_graph *g = kiln_graph_parse(buf, (iter % 7) ? z : NULL);
        if (g) {
            parsed++;
            char *p = kiln_graph_print(g); /* whatever parsed prints */
            CHECK(p != NULL);
            free(p);
        }
        kiln_graph_free(g);
    }
    CHECK(parsed < 4000);
    free(buf);
    free(t);
    kiln_npz_free(z);
}

TEST_MAIN(TEST(test_golden), TEST(test_inferred), TEST(test_attributes),
          TEST(test_tuples_and_outputs), TEST(test_names), TEST(test_errors), TEST(test_truncated),
          TEST(test_mutated))
