/* test_pattern.c: the graph pattern language (kiln/pattern.h): every
 * constructor matching and not matching, the text form both ways, a
 * rewrite that needs several rounds to settle, and partitioning with
 * overlapping matches and inner nodes used outside. */
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/pattern.h"

static kiln_ndarray *vec(int64_t n, float v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    for (int64_t i = 0; i < n; i++)
        ((float *)kiln_ndarray_data(a))[i] = v + (float)i;
    return a;
}

static int konst(kiln_graph *g, const char *name, int64_t n, float v) {
    kiln_ndarray *a = vec(n, v);
    int id = kiln_graph_const(g, name, a);
    kiln_ndarray_free(a);
    return id;
}

static int call1(kiln_graph *g, const char *op, int a, const char *attrs, const char *name) {
    return kiln_graph_call(g, op, 1, &a, attrs, name);
}

static int call2(kiln_graph *g, const char *op, int a, int b, const char *name) {
    int in[2] = {a, b};
    return kiln_graph_call(g, op, 2, in, NULL, name);
}

/* The node ids of the test graph. */
enum { X, W, C, DENSE, BIAS, RELU, EXP, MEAN, SUB, Y, MEANY, SUBY, TR, SIG, NNODES };

/* x[2, 8]; dense(x, w) + c -> relu -> exp; x - mean(x); x - mean(y);
 * transpose(exp) -> sigmoid. */
static kiln_graph *test_graph(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xs[2] = {2, 8};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xs, NULL);
    int64_t ws[2] = {8, 8};
    kiln_ndarray *wv = kiln_ndarray_empty(KILN_FLOAT32, 2, ws);
    memset(kiln_ndarray_data(wv), 0, 64 * sizeof(float));
    int w = kiln_graph_const(g, "w", wv);
    kiln_ndarray_free(wv);
    int c = konst(g, "c", 8, 1);
    int d = call2(g, "nn.dense", x, w, "dense");
    int b = call2(g, "add", c, d, "bias"); /* constant first: add commutes */
    int r = call1(g, "nn.relu", b, NULL, "relu");
    int e = call1(g, "exp", r, NULL, "exp");
    int m = call1(g, "mean", x, "axis=[-1], keepdims=1", "mean");
    int s = call2(g, "subtract", x, m, "sub");
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 2, xs, NULL);
    int my = call1(g, "mean", y, "axis=[-1], keepdims=1", "mean_y");
    int sy = call2(g, "subtract", x, my, "sub_y");
    int t = call1(g, "transpose", e, "axes=[1, 0]", "tr");
    int sg = call1(g, "sigmoid", t, NULL, "sig");
    int outs[4] = {sg, s, sy, e};
    CHECK(x == X && w == W && c == C && d == DENSE && b == BIAS && r == RELU && e == EXP &&
          m == MEAN && s == SUB && y == Y && my == MEANY && sy == SUBY && t == TR && sg == SIG);
    CHECK(kiln_graph_set_outputs(g, 4, outs, NULL) == KILN_OK);
    CHECK(kiln_graph_infer_types(g) == KILN_OK);
    return g;
}

/* Whether text's pattern matches node id of g. */
static int matches(kiln_pattern_set *s, const char *text, const kiln_graph *g, int id) {
    kiln_pattern *p = kiln_pattern_parse(s, text);
    if (!p) {
        fprintf(stderr, "parse '%s': %s\n", text, kiln_last_error());
        return -1;
    }
    kiln_match *m = kiln_pattern_match(p, g, id);
    kiln_match_free(m);
    return m != NULL;
}

static void test_constructors(void) {
    kiln_graph *g = test_graph();
    kiln_pattern_set *s = kiln_pattern_set_new();
    /* wildcard and constant */
    CHECK_EQ_INT(matches(s, "*", g, X), 1);
    CHECK_EQ_INT(matches(s, "const", g, C), 1);
    CHECK_EQ_INT(matches(s, "const", g, X), 0);
    /* op by name, with and without arguments */
    CHECK_EQ_INT(matches(s, "nn.relu", g, RELU), 1);
    CHECK_EQ_INT(matches(s, "nn.relu", g, EXP), 0);
    CHECK_EQ_INT(matches(s, "nn.relu(add(nn.dense(*, const), const))", g, RELU), 1);
    CHECK_EQ_INT(matches(s, "nn.relu(add(nn.dense(*, *), *, *))", g, RELU), 0); /* arity */
    CHECK_EQ_INT(matches(s, "nn.relu(add(nn.dense(const, *), *))", g, RELU), 0);
    /* commutative: the constant is the first argument of the bias add */
    CHECK_EQ_INT(matches(s, "add(nn.dense, const)", g, BIAS), 1);
    CHECK_EQ_INT(matches(s, "subtract(mean, *)", g, SUB), 0); /* subtract does not commute */
    /* op class */
    CHECK_EQ_INT(matches(s, "@elemwise(@broadcast(@fusable, const))", g, RELU), 1);
    CHECK_EQ_INT(matches(s, "@elemwise", g, TR), 0);
    CHECK_EQ_INT(matches(s, "@injective", g, TR), 1);
    CHECK_EQ_INT(matches(s, "@opaque", g, DENSE), 1);
    CHECK_EQ_INT(matches(s, "@opaque", g, X), 0);
    /* alternation */
    CHECK_EQ_INT(matches(s, "exp | nn.relu", g, RELU), 1);
    CHECK_EQ_INT(matches(s, "exp | sigmoid", g, RELU), 0);
    /* attributes: set, defaulted, wrong */
    CHECK_EQ_INT(matches(s, "mean[keepdims=1, axis=[-1]]", g, MEAN), 1);
    CHECK_EQ_INT(matches(s, "mean[exclude=0](*)", g, MEAN), 1);
    CHECK_EQ_INT(matches(s, "mean[keepdims=0]", g, MEAN), 0);
    CHECK_EQ_INT(matches(s, "(*)[axes=[1, 0]]", g, TR), 1);
    CHECK_EQ_INT(matches(s, "(*)[axes=[1, 0]]", g, X), 0);
    /* type */
    CHECK_EQ_INT(matches(s, "* : float32[2, 8]", g, X), 1);
    CHECK_EQ_INT(matches(s, "* : [_, 8]", g, RELU), 1);
    CHECK_EQ_INT(matches(s, "* : int32", g, X), 0);
    CHECK_EQ_INT(matches(s, "* : [8, _]", g, X), 0);
    CHECK_EQ_INT(matches(s, "mean : [2, 1]", g, MEAN), 1);
    /* optional: with and without the op */
    CHECK_EQ_INT(matches(s, "nn.relu?(add(nn.dense, const))", g, RELU), 1);
    CHECK_EQ_INT(matches(s, "nn.relu?(add(nn.dense, const))", g, BIAS), 1);
    CHECK_EQ_INT(matches(s, "nn.relu?(add(nn.dense, const))", g, DENSE), 0);
    /* the same sub-pattern bound twice */
    CHECK_EQ_INT(matches(s, "subtract(%x, mean(%x))", g, SUB), 1);
    CHECK_EQ_INT(matches(s, "subtract(%z, mean(%z))", g, SUBY), 0);
    CHECK_EQ_INT(matches(s, "subtract(*, mean(*))", g, SUBY), 1);
    /* dominator: dense, then elementwise ops only */
    CHECK_EQ_INT(matches(s, "dom(nn.dense, @broadcast(*, *) | @elemwise(*), @elemwise)", g, EXP),
                 1);
    CHECK_EQ_INT(matches(s, "dom(nn.dense, @broadcast, @elemwise)", g, EXP), 1);
    CHECK_EQ_INT(matches(s, "dom(nn.dense, @elemwise(*), @elemwise)", g, EXP), 0); /* the add */
    CHECK_EQ_INT(matches(s, "dom(nn.conv2d, @broadcast, @elemwise)", g, EXP), 0);  /* no conv */
    CHECK_EQ_INT(matches(s, "dom(nn.dense, @broadcast, @elemwise)", g, SIG), 0);   /* transpose */
    /* the bound nodes */
    kiln_pattern *p = kiln_pattern_parse(s, "nn.relu(%b=add(%d=nn.dense(%in, *), *))");
    kiln_match *m = p ? kiln_pattern_match(p, g, RELU) : NULL;
    CHECK(m != NULL);
    CHECK_EQ_INT(kiln_match_node(m, kiln_pattern_named(s, "d")), DENSE);
    CHECK_EQ_INT(kiln_match_node(m, kiln_pattern_named(s, "in")), X);
    CHECK_EQ_INT(kiln_match_node(m, kiln_pattern_named(s, "b")), BIAS);
    CHECK_EQ_INT(kiln_match_node(m, p), RELU);
    kiln_match_free(m);
    /* the C constructors give the same */
    kiln_pattern *wc = kiln_pattern_wildcard(s), *cst = kiln_pattern_constant(s);
    kiln_pattern *dargs[2] = {wc, cst};
    kiln_pattern *dense = kiln_pattern_op(s, "nn.dense", 2, dargs);
    kiln_pattern *bargs[2] = {
        dense, kiln_pattern_type(s, kiln_pattern_constant(s), KILN_FLOAT32, 1, (int64_t[]){8})};
    kiln_pattern *bias = kiln_pattern_op(s, "add", 2, bargs);
    kiln_pattern *top = kiln_pattern_optional(s, "nn.relu", bias);
    m = kiln_pattern_match(top, g, RELU);
    CHECK(m && kiln_match_node(m, dense) == DENSE && kiln_match_node(m, cst) == W);
    kiln_match_free(m);
    char *text = kiln_pattern_print(top);
    CHECK_EQ_STR(text, "nn.relu?(add(nn.dense(*, const), const : float32[8]))");
    free(text);
    kiln_pattern_set_free(s);
    kiln_graph_free(g);
}

/* Text printed, parsed and printed again is the same. */
static void test_text(void) {
    const char *cases[] = {
        "*",
        "const",
        "nn.conv2d(*, const)",
        "nn.conv2d[groups=1, data_layout=\"NCHW\"](*, const)",
        "nn.relu?(add(nn.conv2d, const))",
        "exp | nn.relu | sigmoid",
        "exp | (nn.relu | sigmoid)",
        "(exp | sigmoid) : float32[1, _, 3]",
        "subtract(%x, mean[axis=[-1]](%x))",
        "dom(nn.dense, @elemwise(*), @elemwise)",
        "@injective(%a=nn.relu(*), %a)",
        "(* | const)[axes=[1, 0]]",
        "* : [_, _]",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_pattern_set *s = kiln_pattern_set_new();
        kiln_pattern *p = kiln_pattern_parse(s, cases[i]);
        CHECK(p != NULL);
        char *t = p ? kiln_pattern_print(p) : NULL;
        CHECK_EQ_STR(t, cases[i]);
        kiln_pattern_set *s2 = kiln_pattern_set_new();
        kiln_pattern *p2 = t ? kiln_pattern_parse(s2, t) : NULL;
        char *t2 = p2 ? kiln_pattern_print(p2) : NULL;
        CHECK_EQ_STR(t2, cases[i]);
        free(t);
        free(t2);
        kiln_pattern_set_free(s);
        kiln_pattern_set_free(s2);
    }
    /* a C pattern object used twice prints as one name */
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *w = kiln_pattern_wildcard(s);
    kiln_pattern *args[2] = {w, w};
    char *t = kiln_pattern_print(kiln_pattern_op(s, "add", 2, args));
    CHECK(t && strstr(t, "add(%_") && strchr(strchr(t, '%') + 1, '%'));
    free(t);
    /* errors name the place and the problem */
    struct {
        const char *text, *msg;
    } bad[] = {
        {"nn.nope(*)", "unknown op 'nn.nope'"},
        {"@light(*)", "unknown op class '@light'"},
        {"nn.relu(*", "expected ','"},
        {"* : [1, x]", "expected a dim"},
        {"* : float99", "unknown dtype"},
        {"nn.relu?(*, *)", "takes one argument"},
        {"dom(*, *)", "dom takes"},
        {"* *", "unexpected text"},
        {"%q=* | %q=const", "defined already"},
        {"", "expected a pattern"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiln_clear_error();
        CHECK(kiln_pattern_parse(s, bad[i].text) == NULL);
        CHECK_CONTAINS(kiln_last_error(), bad[i].msg);
        CHECK_CONTAINS(kiln_last_error(), "pattern:1:");
    }
    kiln_pattern_set_free(s);
}

/* add(add(x, c1), c2) -> add(x, c1 + c2): on a chain of four constant
 * adds one round leaves two adds, the second round one. */
typedef struct {
    kiln_pattern *x, *c1, *c2;
    int calls;
} fold_adds;

static int fold_cb(kiln_rewrite *rw, void *user) {
    fold_adds *F = user;
    F->calls++;
    const kiln_graph *pre = kiln_rewrite_pre(rw);
    const kiln_ndarray *a = kiln_graph_node_value(pre, kiln_rewrite_pre_node(rw, F->c1));
    const kiln_ndarray *b = kiln_graph_node_value(pre, kiln_rewrite_pre_node(rw, F->c2));
    if (kiln_ndarray_numel(a) != kiln_ndarray_numel(b))
        return KILN_REWRITE_SKIP;
    kiln_ndarray *sum = kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){kiln_ndarray_numel(a)});
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
        ((float *)kiln_ndarray_data(sum))[i] =
            ((const float *)kiln_ndarray_data(a))[i] + ((const float *)kiln_ndarray_data(b))[i];
    kiln_graph *post = kiln_rewrite_post(rw);
    int c = kiln_graph_const(post, "sum", sum);
    kiln_ndarray_free(sum);
    int in[2] = {kiln_rewrite_post_node(rw, F->x), c};
    return kiln_graph_call(post, "add", 2, in, NULL,
                           kiln_graph_node_name(pre, kiln_rewrite_root(rw)));
}

static int count_op(const kiln_graph *g, const char *op) {
    int n = 0;
    for (int id = 0; id < kiln_graph_num_nodes(g); id++)
        n += !strcmp(kiln_graph_node_op(g, id), op);
    return n;
}

static void test_rewrite(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xs[1] = {4};
    int v = kiln_graph_var(g, "x", KILN_FLOAT32, 1, xs, NULL);
    for (int k = 0; k < 4; k++) {
        char nm[8];
        snprintf(nm, sizeof nm, "c%d", k);
        v = call2(g, "add", v, konst(g, nm, 4, (float)(10 * k)), nm);
    }
    kiln_graph_set_outputs(g, 1, &v, NULL);
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *p = kiln_pattern_parse(s, "add(add(%x, %c1=const), %c2=const)");
    fold_adds F = {kiln_pattern_named(s, "x"), kiln_pattern_named(s, "c1"),
                   kiln_pattern_named(s, "c2"), 0};
    kiln_graph *r = kiln_graph_rewrite(g, p, fold_cb, &F);
    CHECK(r != NULL);
    CHECK_EQ_INT(F.calls, 4); /* three in the first round, one in the second */
    CHECK_EQ_INT(count_op(r, "add"), 1);
    CHECK_EQ_INT(count_op(r, "const"), 1); /* the replaced constants are gone */
    int out = kiln_graph_num_nodes(r) - 1;
    const kiln_ndarray *c = kiln_graph_node_value(r, kiln_graph_node_input(r, out, 1));
    CHECK(c && ((const float *)kiln_ndarray_data(c))[0] == 60.0f &&
          ((const float *)kiln_ndarray_data(c))[3] == 72.0f);
    CHECK_EQ_STR(kiln_graph_node_name(r, out), "c3");
    kiln_graph_free(r);
    kiln_pattern_set_free(s);
    kiln_graph_free(g);
}

/* subtract(a, b) -> subtract(b, a): every round matches again. */
static int flip_cb(kiln_rewrite *rw, void *user) {
    kiln_pattern **ab = user;
    kiln_graph *post = kiln_rewrite_post(rw);
    int in[2] = {kiln_rewrite_post_node(rw, ab[1]), kiln_rewrite_post_node(rw, ab[0])};
    return kiln_graph_call(post, "subtract", 2, in, NULL, "s");
}

static void test_rewrite_no_fixed_point(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t xs[1] = {4};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, xs, NULL);
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 1, xs, NULL);
    int n = call2(g, "subtract", x, y, "s");
    kiln_graph_set_outputs(g, 1, &n, NULL);
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *p = kiln_pattern_parse(s, "subtract(%a, %b)");
    kiln_pattern *ab[2] = {kiln_pattern_named(s, "a"), kiln_pattern_named(s, "b")};
    kiln_clear_error();
    kiln_graph *r = kiln_graph_rewrite(g, p, flip_cb, ab);
    CHECK(r == NULL);
    CHECK_CONTAINS(kiln_last_error(), "still matching after 100 rounds");
    /* one round: flipped once, and what the callback made is not matched again */
    r = kiln_graph_rewrite_once(g, p, flip_cb, ab);
    CHECK(r != NULL);
    char *t = r ? kiln_graph_print(r) : NULL;
    CHECK_CONTAINS(t, "subtract(%y, %x)");
    free(t);
    kiln_graph_free(r);
    /* the attributes a call sets, as text */
    int c = kiln_graph_call(g, "clip", 1, &x, "a_min=0.5f, a_max=6f", "c");
    char *at = kiln_graph_node_attrs(g, c);
    CHECK_CONTAINS(at, "a_min=0.5");
    CHECK_CONTAINS(at, "a_max=6");
    free(at);
    at = kiln_graph_node_attrs(g, x);
    CHECK(at && !*at);
    free(at);
    kiln_pattern_set_free(s);
    kiln_graph_free(g);
}

static void test_partition(void) {
    /* three adds in a chain: add(add(*, *), *) takes the last two (largest
       first from the outputs); the first stays, since the matches may not
       overlap */
    kiln_graph *g = kiln_graph_new();
    int64_t xs[1] = {4};
    int v = kiln_graph_var(g, "x", KILN_FLOAT32, 1, xs, NULL);
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 1, xs, NULL);
    for (int k = 0; k < 3; k++)
        v = call2(g, "add", v, y, k == 0 ? "a0" : k == 1 ? "a1" : "a2");
    kiln_graph_set_outputs(g, 1, &v, NULL);
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *p = kiln_pattern_parse(s, "add(add(*, *), *)");
    kiln_graph *r = kiln_graph_partition(g, p, "Composite=\"adds\"", NULL, NULL);
    CHECK(r != NULL);
    CHECK_EQ_INT(count_op(r, "composite"), 1);
    CHECK_EQ_INT(count_op(r, "add"), 1);
    char *t = r ? kiln_graph_print(r) : NULL;
    CHECK_CONTAINS(t, "Composite=\"adds\"");
    CHECK_CONTAINS(t, "%FunctionVar_0");
    /* the text IR parses back */
    kiln_graph *r2 = t ? kiln_graph_parse(t, NULL) : NULL;
    CHECK(r2 != NULL);
    char *t2 = r2 ? kiln_graph_print(r2) : NULL;
    CHECK_EQ_STR(t2, t);
    free(t);
    free(t2);
    kiln_graph_free(r2);
    kiln_graph_free(r);
    kiln_graph_free(g);
    /* an inner node used outside the match: not partitioned */
    g = test_graph();
    p = kiln_pattern_parse(s, "transpose(exp)"); /* exp is an output too */
    r = kiln_graph_partition(g, p, "Composite=\"x\"", NULL, NULL);
    CHECK(r && count_op(r, "composite") == 0);
    kiln_graph_free(r);
    p = kiln_pattern_parse(s, "nn.relu?(add(nn.dense(*, const), const))");
    r = kiln_graph_partition(g, p, "Composite=\"dense_bias_relu\"", NULL, NULL);
    CHECK(r && count_op(r, "composite") == 1 && count_op(r, "nn.dense") == 0);
    kiln_graph_free(r);
    /* Composite is required */
    kiln_clear_error();
    CHECK(kiln_graph_partition(g, p, "", NULL, NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "Composite");
    kiln_graph_free(g);
    kiln_pattern_set_free(s);
}

TEST_MAIN(TEST(test_constructors), TEST(test_text), TEST(test_rewrite),
          TEST(test_rewrite_no_fixed_point), TEST(test_partition))
