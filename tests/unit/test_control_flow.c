/* test_control_flow.c: If, Loop and Scan (src/ops/control.c), whose
 * bodies are sub-graphs. Graphs written in the text IR print, parse back
 * and print the same (bodies nested, their constants in the one meta
 * order); the relations type them and refuse malformed bodies by name; and
 * compiled packages run at several trip counts and both conditions against
 * values computed here, with the run-time errors (a negative trip count, a
 * carried value changing shape) named. */
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "ops/ops.h"
#include "runtime/runtime_internal.h"

/* x doubled or squared, as c says. */
static const char *k_if = "def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                          "  %0 = if(%c, %x, then_branch=fn (%x: Tensor[(3), float32]) {\n"
                          "      %0 = add(%x, %x);\n"
                          "      %0\n"
                          "    }, else_branch=fn (%y: Tensor[(3), float32]) {\n"
                          "      %0 = multiply(%y, %y);\n"
                          "      %0\n"
                          "    }, prefix=\"_c\");\n"
                          "  %0\n"
                          "}\n";

/* Bodies in bodies, over a symbolic dim (the fuzz_graph_text seed
 * control_flow.txt). */
static const char *k_mixed =
    "def @main(%c: Tensor[(1), bool], %m: Tensor[(), int64], %x: Tensor[(n, 2), float32]) {\n"
    "  %0 = if(%c, %c, %m, %x, then_branch=fn (%cc: Tensor[(1), bool], %k: Tensor[(), int64], %y: "
    "Tensor[(n, 2), float32]) {\n"
    "      %0 = loop(%k, %cc, %y, body=fn (%i: Tensor[(), int64], %b: Tensor[(), bool], %v: "
    "Tensor[(n, 2), float32]) {\n"
    "          %0 = add(%v, %v);\n"
    "          (%b, %0, %0)\n"
    "        }, num_carried=1, prefix=\"_L\");\n"
    "      %1 = %0.0;\n"
    "      %1\n"
    "    }, else_branch=fn (%cc: Tensor[(1), bool], %k: Tensor[(), int64], %y: Tensor[(n, 2), "
    "float32]) {\n"
    "      %0 = scan(%y, %y, body=fn (%a: Tensor[(n, 2), float32], %s: Tensor[(2), float32]) {\n"
    "          %0 = negative(%a);\n"
    "          (%0, %s)\n"
    "        }, num_carried=1, num_scan_inputs=1, scan_output_directions=[1]);\n"
    "      %1 = %0.0;\n"
    "      %1\n"
    "    }, prefix=\"_c\");\n"
    "  %0\n"
    "}\n";

static kiln_graph *parse(const char *text) {
    kiln_graph *g = kiln_graph_parse(text, NULL);
    if (!g)
        fprintf(stderr, "parse: %s\n", kiln_last_error());
    return g;
}

static void round_trip(const char *text) {
    kiln_graph *g = parse(text);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char *t1 = kiln_graph_print(g);
    kiln_npz *z = kiln_graph_constants(g);
    kiln_graph *g2 = t1 ? kiln_graph_parse(t1, z) : NULL;
    char *t2 = g2 ? kiln_graph_print(g2) : NULL;
    CHECK(t1 && t2);
    if (t1 && t2)
        CHECK_EQ_STR(t1, t2);
    free(t1);
    free(t2);
    kiln_npz_free(z);
    kiln_graph_free(g2);
    kiln_graph_free(g);
}

static void test_text_round_trip(void) {
    round_trip(k_if);
    round_trip(k_mixed);
}

static kiln_model *compile_graph(kiln_graph *g, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cf_%s.tar",
             getenv("KILN_TEST_TMP") ? getenv("KILN_TEST_TMP") : "/tmp", name);
    if (kiln_graph_compile(g, path, NULL) != KILN_OK) {
        fprintf(stderr, "compile %s: %s\n", name, kiln_last_error());
        return NULL;
    }
    kiln_model *m = kiln_model_load(path);
    if (!m)
        fprintf(stderr, "load %s: %s\n", name, kiln_last_error());
    return m;
}

/* Compile text to a package and load it; NULL with a message on failure. */
static kiln_model *compile_text(const char *text, const char *name) {
    kiln_graph *g = parse(text);
    kiln_model *m = g ? compile_graph(g, name) : NULL;
    kiln_graph_free(g);
    return m;
}

static kiln_ndarray *flag(int v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_BOOL, 1, (const int64_t[]){1});
    *(uint8_t *)kiln_ndarray_data(a) = (uint8_t)v;
    return a;
}

static kiln_ndarray *vec(int n, const float *v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 1, (const int64_t[]){n});
    memcpy(kiln_ndarray_data(a), v, sizeof(float) * (size_t)n);
    return a;
}

static void test_if_runs(void) {
    kiln_model *m = compile_text(k_if, "if");
    CHECK(m != NULL);
    if (!m)
        return;
    const float x[3] = {1, -2, 3};
    for (int c = 0; c < 2; c++) {
        kiln_ndarray *in[2] = {flag(c), vec(3, x)}, *out[1] = {NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        if (out[0]) {
            const float *y = kiln_ndarray_data(out[0]);
            for (int i = 0; i < 3; i++)
                CHECK(y[i] == (c ? x[i] + x[i] : x[i] * x[i]));
        } else {
            fprintf(stderr, "run: %s\n", kiln_last_error());
        }
        kiln_ndarray_free(in[0]);
        kiln_ndarray_free(in[1]);
        kiln_ndarray_free(out[0]);
    }
    kiln_model_free(m);
}

/* acc carried from x: acc += w * i in iteration i, stacked into s; the
 * condition becomes i < lim; w is a constant of the body (meta[0]). */
static const char *k_loop =
    "def @main(%m: Tensor[(), int64], %c: Tensor[(1), bool], %x: Tensor[(2), float32], "
    "%lim: Tensor[(), int64]) {\n"
    "  %0 = loop(%m, %c, %x, %lim, body=fn (%i: Tensor[(), int64], %cin: Tensor[(), bool], "
    "%acc: Tensor[(2), float32], %l: Tensor[(), int64]) {\n"
    "      %0 = cast(%i, dtype=\"float32\");\n"
    "      %1 = multiply(meta[relay.Constant][0], %0);\n"
    "      %2 = add(%acc, %1);\n"
    "      %3 = less(%i, %l);\n"
    "      (%3, %2, %2)\n"
    "    }, num_carried=1, prefix=\"_L\");\n"
    "  %1 = %0.0;\n"
    "  %2 = %0.1;\n"
    "  (%1, %2)\n"
    "}\n";

static const float k_w[2] = {0.5f, -2.0f};

static kiln_npz *loop_consts(void) {
    kiln_npz *z = kiln_npz_new();
    kiln_ndarray *w = vec(2, k_w);
    kiln_npz_add(z, "0", w);
    kiln_ndarray_free(w);
    return z;
}

static kiln_ndarray *i64(int64_t v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT64, 0, NULL);
    *(int64_t *)kiln_ndarray_data(a) = v;
    return a;
}

/* Run the loop at trip count m, condition c, limit lim; compare with C. */
static void check_loop(kiln_model *model, int64_t m, int c, int64_t lim) {
    const float x[2] = {1, 2};
    kiln_ndarray *in[4] = {i64(m), flag(c), vec(2, x), i64(lim)}, *out[2] = {NULL, NULL};
    kiln_status st = kiln_model_run_alloc(model, (const kiln_ndarray *const *)in, out, 0);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "loop m=%lld c=%d: %s\n", (long long)m, c, kiln_last_error());
    float acc[2] = {x[0], x[1]}, s[64][2];
    int64_t t = 0;
    for (int cond = c; t < m && cond; t++) {
        for (int k = 0; k < 2; k++)
            acc[k] += k_w[k] * (float)t;
        s[t][0] = acc[0];
        s[t][1] = acc[1];
        cond = t < lim;
    }
    if (!st) {
        const float *y = kiln_ndarray_data(out[0]), *z = kiln_ndarray_data(out[1]);
        CHECK(y[0] == acc[0] && y[1] == acc[1]);
        CHECK_EQ_INT(kiln_ndarray_ndim(out[1]), 2);
        CHECK_EQ_INT(kiln_ndarray_dim(out[1], 0), t);
        CHECK_EQ_INT(kiln_ndarray_dim(out[1], 1), 2);
        for (int64_t i = 0; i < t && kiln_ndarray_dim(out[1], 0) == t; i++)
            CHECK(z[2 * i] == s[i][0] && z[2 * i + 1] == s[i][1]);
    }
    for (int i = 0; i < 4; i++)
        kiln_ndarray_free(in[i]);
    kiln_ndarray_free(out[0]);
    kiln_ndarray_free(out[1]);
}

static void test_loop_runs(void) {
    kiln_npz *z = loop_consts();
    kiln_graph *g = kiln_graph_parse(k_loop, z);
    if (!g)
        fprintf(stderr, "parse: %s\n", kiln_last_error());
    CHECK(g != NULL);
    kiln_npz_free(z);
    if (!g)
        return;
    /* the scan output's length is the iteration count, a size variable */
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char *text = kiln_graph_print(g);
    CHECK_CONTAINS(text, "Tensor[(_L_0, 2), float32]");
    /* the body's constant prints in the one meta order and reads back */
    kiln_npz *z2 = kiln_graph_constants(g);
    CHECK(z2 && kiln_npz_count(z2) == 1);
    kiln_graph *g2 = kiln_graph_parse(text, z2);
    char *text2 = g2 ? kiln_graph_print(g2) : NULL;
    CHECK(text2 && !strcmp(text, text2));
    free(text);
    free(text2);
    kiln_graph_free(g2);
    kiln_npz_free(z2);
    kiln_model *m = compile_graph(g, "loop");
    kiln_graph_free(g);
    CHECK(m != NULL);
    if (!m)
        return;
    CHECK_EQ_INT(kiln_model_output_dim(m, 1, 0), -1);
    CHECK_EQ_STR(kiln_model_output_dim_expr(m, 1, 0), "_L_0");
    /* trip counts 0, 1, 5; the condition false at the start; a limit that
       stops it early; runs after a longer one reuse the state */
    check_loop(m, 0, 1, 100);
    check_loop(m, 1, 1, 100);
    check_loop(m, 5, 1, 100);
    check_loop(m, 5, 0, 100);
    check_loop(m, 5, 1, 2);
    check_loop(m, 1, 1, 100);
    check_loop(m, 40, 1, 100);
    /* a trip count out of [0, 2^31] is an error naming the node */
    const float x[2] = {1, 2};
    int64_t bad[2] = {-1, ((int64_t)1 << 31) + 1};
    for (int k = 0; k < 2; k++) {
        kiln_ndarray *in[4] = {i64(bad[k]), flag(1), vec(2, x), i64(3)}, *out[2] = {NULL, NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0),
                     KILN_ERR_INVALID);
        CHECK_CONTAINS(kiln_last_error(), "trip count");
        CHECK_CONTAINS(kiln_last_error(), "(loop)");
        CHECK(out[0] == NULL && out[1] == NULL);
        for (int i = 0; i < 4; i++)
            kiln_ndarray_free(in[i]);
    }
    check_loop(m, 3, 1, 100); /* and the model still runs */
    kiln_model_free(m);
}

/* A carried value whose shape the body decides at run time (a tile by
 * repeats given as data) must keep its shape: repeats of 1 keep it, 2 is
 * an error naming the node and the iteration. */
static const char *k_grow =
    "def @main(%m: Tensor[(), int64], %c: Tensor[(), bool], %x: Tensor[(4), float32], "
    "%s: Tensor[(1), int64]) {\n"
    "  %0 = loop(%m, %c, %x, %s, body=fn (%i: Tensor[(), int64], %cin: Tensor[(), bool], "
    "%v: Tensor[(4), float32], %shape: Tensor[(1), int64]) {\n"
    "      %0 = tile_dims(%v, %shape);\n"
    "      %1 = bind_dims(%0, prefix=\"_in\");\n"
    "      %2 = tile(%v, %1);\n"
    "      (%cin, %2)\n"
    "    }, num_carried=1);\n"
    "  %0\n"
    "}\n";

static void test_loop_carried_shape(void) {
    kiln_model *m = compile_text(k_grow, "grow");
    CHECK(m != NULL);
    if (!m)
        return;
    const float x[4] = {1, 2, 3, 4};
    int64_t shapes[2] = {1, 2};
    for (int k = 0; k < 2; k++) {
        kiln_ndarray *s = kiln_ndarray_empty(KILN_INT64, 1, (const int64_t[]){1});
        *(int64_t *)kiln_ndarray_data(s) = shapes[k];
        kiln_ndarray *c = kiln_ndarray_empty(KILN_BOOL, 0, NULL);
        *(uint8_t *)kiln_ndarray_data(c) = 1;
        kiln_ndarray *in[4] = {i64(3), c, vec(4, x), s}, *out[1] = {NULL};
        kiln_status st = kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0);
        CHECK_EQ_INT(st, k ? KILN_ERR_INVALID : KILN_OK);
        if (k)
            CHECK_CONTAINS(kiln_last_error(), "carried value 0 is float32[4] as it enters but "
                                              "float32[8] in iteration 0");
        if (out[0])
            CHECK(!memcmp(kiln_ndarray_data(out[0]), x, sizeof x));
        kiln_ndarray_free(out[0]);
        for (int i = 0; i < 4; i++)
            kiln_ndarray_free(in[i]);
    }
    kiln_model_free(m);
}

/* Malformed bodies are refused by the relation, naming the problem. */
static void expect_type_error(const char *text, const char *msg) {
    kiln_graph *g = kiln_graph_parse(text, NULL);
    if (g) {
        CHECK(kiln_graph_infer_types(g) != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), msg);
    } else {
        CHECK_CONTAINS(kiln_last_error(), msg);
    }
    kiln_graph_free(g);
}

static void test_malformed(void) {
    /* a branch with the wrong number of parameters */
    expect_type_error("def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                      "  %0 = if(%c, %x, then_branch=fn () { %0 = zeros_like_missing(); %0 },"
                      " else_branch=fn (%y: Tensor[(3), float32]) { %y });\n"
                      "  %0\n}\n",
                      "unknown op");
    expect_type_error("def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                      "  %0 = if(%c, %x, then_branch=fn (%a: Tensor[(3), float32], %b: "
                      "Tensor[(3), float32]) { %a }, else_branch=fn (%y: Tensor[(3), float32]) "
                      "{ %y });\n  %0\n}\n",
                      "body 'then_branch' has 2 parameters, but the op captures 1 values");
    /* a parameter of the wrong type */
    expect_type_error("def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                      "  %0 = if(%c, %x, then_branch=fn (%a: Tensor[(3), int32]) { %a }, "
                      "else_branch=fn (%y: Tensor[(3), float32]) { %y });\n  %0\n}\n",
                      "parameter 0 (the captured value)");
    /* branches that disagree on dtype */
    expect_type_error("def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                      "  %0 = if(%c, %x, then_branch=fn (%a: Tensor[(3), float32]) { %0 = "
                      "cast(%a, dtype=\"int32\"); %0 }, else_branch=fn (%y: Tensor[(3), "
                      "float32]) { %y });\n  %0\n}\n",
                      "output 0 is Tensor[(3,), int32] in then_branch");
    /* a condition that is not bool */
    expect_type_error("def @main(%c: Tensor[(1), int32], %x: Tensor[(3), float32]) {\n"
                      "  %0 = if(%c, %x, then_branch=fn (%a: Tensor[(3), float32]) { %a }, "
                      "else_branch=fn (%y: Tensor[(3), float32]) { %y });\n  %0\n}\n",
                      "condition must be a bool");
    /* a body given as a number */
    expect_type_error("def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                      "  %0 = if(%c, %x, then_branch=3, else_branch=fn (%y: Tensor[(3), "
                      "float32]) { %y });\n  %0\n}\n",
                      "must be a graph");
    /* a loop whose carried value changes type */
    expect_type_error("def @main(%m: Tensor[(), int64], %c: Tensor[(), bool], %x: Tensor[(2), "
                      "float32]) {\n  %0 = loop(%m, %c, %x, body=fn (%i: Tensor[(), int64], "
                      "%b: Tensor[(), bool], %v: Tensor[(2), float32]) { %0 = cast(%v, "
                      "dtype=\"int32\"); (%b, %0) }, num_carried=1);\n  %0\n}\n",
                      "carried value 0 enters as Tensor[(2,), float32]");
    /* a loop whose body does not take the iteration number */
    expect_type_error("def @main(%m: Tensor[(), int64], %c: Tensor[(), bool], %x: Tensor[(2), "
                      "float32]) {\n  %0 = loop(%m, %c, %x, body=fn (%v: Tensor[(2), float32]) "
                      "{ %v }, num_carried=1);\n  %0\n}\n",
                      "has 1 parameters, but the op passes it 3");
    expect_type_error("def @main(%m: Tensor[(), int64], %c: Tensor[(), bool], %x: Tensor[(2), "
                      "float32]) {\n  %0 = loop(%m, %c, %x, body=fn (%i: Tensor[(), int64], "
                      "%b: Tensor[(), bool], %v: Tensor[(2), float32]) { (%b, %v) }, "
                      "num_carried=5);\n  %0\n}\n",
                      "num_carried is 5");
    /* a scan whose scan axis is out of range */
    expect_type_error("def @main(%s: Tensor[(2), float32], %x: Tensor[(3, 2), float32]) {\n"
                      "  %0 = scan(%s, %x, body=fn (%a: Tensor[(2), float32], %b: Tensor[(2), "
                      "float32]) { %0 = add(%a, %b); (%0, %0) }, num_carried=1, "
                      "num_scan_inputs=1, scan_input_axes=[2]);\n  %1 = %0.0;\n  %1\n}\n",
                      "scan_input_axes[0] is 2");
}

/* Scan over axis 1, the output reversed, against C. */
static const char *k_scan =
    "def @main(%s: Tensor[(2), float32], %x: Tensor[(2, 4), float32]) {\n"
    "  %0 = scan(%s, %x, body=fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32]) {\n"
    "      %0 = add(%a, %b);\n"
    "      %1 = multiply(%0, %b);\n"
    "      (%0, %1)\n"
    "    }, num_carried=1, num_scan_inputs=1, scan_input_axes=[-1], scan_output_axes=[1], "
    "scan_output_directions=[1]);\n"
    "  %1 = %0.0;\n"
    "  %2 = %0.1;\n"
    "  (%1, %2)\n"
    "}\n";

static void test_scan_runs(void) {
    kiln_model *m = compile_text(k_scan, "scan");
    CHECK(m != NULL);
    if (!m)
        return;
    const float s0[2] = {1, -1}, x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    kiln_ndarray *xa = kiln_ndarray_empty(KILN_FLOAT32, 2, (const int64_t[]){2, 4});
    memcpy(kiln_ndarray_data(xa), x, sizeof x);
    kiln_ndarray *in[2] = {vec(2, s0), xa}, *out[2] = {NULL, NULL};
    CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
    float acc[2] = {s0[0], s0[1]}, y[2][4];
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 2; k++) {
            acc[k] += x[k * 4 + t];
            y[k][3 - t] = acc[k] * x[k * 4 + t];
        }
    if (out[0] && out[1]) {
        const float *a = kiln_ndarray_data(out[0]), *b = kiln_ndarray_data(out[1]);
        CHECK(a[0] == acc[0] && a[1] == acc[1]);
        CHECK_EQ_INT(kiln_ndarray_dim(out[1], 0), 2);
        CHECK_EQ_INT(kiln_ndarray_dim(out[1], 1), 4);
        CHECK(!memcmp(b, y, sizeof y));
    }
    for (int i = 0; i < 2; i++) {
        kiln_ndarray_free(in[i]);
        kiln_ndarray_free(out[i]);
    }
    kiln_model_free(m);
}

/* Branches of different lengths: the output's dim is a size the run binds,
 * which the op after it takes. */
static const char *k_if_sizes =
    "def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
    "  %0 = if(%c, %x, then_branch=fn (%a: Tensor[(3), float32]) {\n"
    "      %0 = concatenate(%a, %a, axis=0);\n"
    "      %0\n"
    "    }, else_branch=fn (%b: Tensor[(3), float32]) { %b }, prefix=\"_d\");\n"
    "  %1 = negative(%0);\n"
    "  %1\n"
    "}\n";

/* A loop inside a branch: c ? x * 2^m : -x. */
static const char *k_nested =
    "def @main(%c: Tensor[(1), bool], %m: Tensor[(), int64], %x: Tensor[(2), float32]) {\n"
    "  %0 = if(%c, %c, %m, %x, then_branch=fn (%cc: Tensor[(1), bool], %n: Tensor[(), int64], "
    "%y: Tensor[(2), float32]) {\n"
    "      %0 = loop(%n, %cc, %y, body=fn (%i: Tensor[(), int64], %b: Tensor[(), bool], "
    "%v: Tensor[(2), float32]) {\n"
    "          %0 = add(%v, %v);\n"
    "          (%b, %0)\n"
    "        }, num_carried=1);\n"
    "      %0\n"
    "    }, else_branch=fn (%cc: Tensor[(1), bool], %n: Tensor[(), int64], "
    "%y: Tensor[(2), float32]) {\n"
    "      %0 = negative(%y);\n"
    "      %0\n"
    "    });\n"
    "  %0\n"
    "}\n";

static void test_if_sizes_and_nesting(void) {
    kiln_model *m = compile_text(k_if_sizes, "if_sizes");
    CHECK(m != NULL);
    const float x[3] = {1, -2, 3};
    for (int c = 0; m && c < 2; c++) {
        kiln_ndarray *in[2] = {flag(c), vec(3, x)}, *out[1] = {NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        CHECK(out[0] && kiln_ndarray_dim(out[0], 0) == (c ? 6 : 3));
        for (int i = 0; out[0] && i < kiln_ndarray_dim(out[0], 0); i++)
            CHECK(((const float *)kiln_ndarray_data(out[0]))[i] == -x[i % 3]);
        kiln_ndarray_free(in[0]);
        kiln_ndarray_free(in[1]);
        kiln_ndarray_free(out[0]);
    }
    CHECK(m && kiln_model_output_dim_expr(m, 0, 0) &&
          !strcmp(kiln_model_output_dim_expr(m, 0, 0), "_d_0"));
    kiln_model_free(m);
    m = compile_text(k_nested, "nested");
    CHECK(m != NULL);
    const float y[2] = {1.5f, -3};
    for (int k = 0; m && k < 6; k++) {
        int c = k % 2;
        int64_t n = k / 2 * 2; /* 0, 2, 4 */
        kiln_ndarray *in[3] = {flag(c), i64(n), vec(2, y)}, *out[1] = {NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        for (int i = 0; out[0] && i < 2; i++)
            CHECK(((const float *)kiln_ndarray_data(out[0]))[i] ==
                  (c ? y[i] * (float)(1 << n) : -y[i]));
        for (int i = 0; i < 3; i++)
            kiln_ndarray_free(in[i]);
        kiln_ndarray_free(out[0]);
    }
    kiln_model_free(m);
    /* bodies in bodies over a symbolic n: c ? x * 2^m : x * (-1)^n */
    m = compile_text(k_mixed, "mixed");
    CHECK(m != NULL);
    for (int k = 0; m && k < 4; k++) {
        int c = k % 2;
        int64_t rows = 2 + k / 2, shape[2] = {rows, 2};
        kiln_ndarray *xa = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
        float *xp = kiln_ndarray_data(xa);
        for (int i = 0; i < rows * 2; i++)
            xp[i] = (float)i - 1.5f;
        kiln_ndarray *in[3] = {flag(c), i64(3), xa}, *out[1] = {NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        CHECK(out[0] && kiln_ndarray_dim(out[0], 0) == rows);
        for (int i = 0; out[0] && i < rows * 2; i++)
            CHECK(((const float *)kiln_ndarray_data(out[0]))[i] == (c          ? xp[i] * 8
                                                                    : rows % 2 ? -xp[i]
                                                                               : xp[i]));
        for (int i = 0; i < 3; i++)
            kiln_ndarray_free(in[i]);
        kiln_ndarray_free(out[0]);
    }
    kiln_model_free(m);
}

/* text with the first `from` replaced by `to` (malloc'd); NULL if absent. */
static char *replace(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    if (!at)
        return NULL;
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *r = malloc(n);
    snprintf(r, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return r;
}

/* The loop package's plan, edited, is refused at load with msg (never a
 * crash): the nested plans get the checks a plan gets. */
/* An If whose then-branch is an If, `depth` bodies deep: the innermost
 * doubles x, every else-branch negates it. */
static void nested_if(char *buf, size_t cap, int depth) {
    size_t n = (size_t)snprintf(buf, cap,
                                "def @main(%%c: Tensor[(1), bool], %%x: Tensor[(3), "
                                "float32]) {\n");
    for (int d = 0; d < depth && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n,
                              "%%0 = if(%%c, %%c, %%x, then_branch=fn (%%c: Tensor[(1), bool], "
                              "%%x: Tensor[(3), float32]) {\n");
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%%0 = add(%%x, %%x);\n%%0\n");
    for (int d = 0; d < depth && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n,
                              "}, else_branch=fn (%%c: Tensor[(1), bool], %%y: Tensor[(3), "
                              "float32]) {\n%%0 = negative(%%y);\n%%0\n}, prefix=\"_d%d\");\n%%0\n",
                              d);
    if (n < cap)
        snprintf(buf + n, cap - n, "}\n");
}

/* GRAPH_MAX_BODY_DEPTH (16) bodies in one another parse, compile, load
 * (the plan nests them in its JSON) and run; one more is refused. */
static void test_deep_nesting(void) {
    static char text[32768];
    nested_if(text, sizeof text, 16);
    kiln_model *m = compile_text(text, "deep");
    CHECK(m != NULL);
    const float x[3] = {1, -2, 3};
    for (int c = 0; m && c < 2; c++) {
        kiln_ndarray *in[2] = {flag(c), vec(3, x)}, *out[1] = {NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        for (int i = 0; out[0] && i < 3; i++)
            CHECK(((const float *)kiln_ndarray_data(out[0]))[i] == (c ? 2 * x[i] : -x[i]));
        kiln_ndarray_free(in[0]);
        kiln_ndarray_free(in[1]);
        kiln_ndarray_free(out[0]);
    }
    kiln_model_free(m);
    nested_if(text, sizeof text, 17);
    CHECK(kiln_graph_parse(text, NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "bodies nest more than 16 deep");
}

static void test_malformed_plans(void) {
    char path[4096], *text = NULL;
    size_t len = 0;
    kiln_module *mod = NULL;
    kiln_npz *params = NULL;
    snprintf(path, sizeof path, "%s/cf_loop.tar",
             getenv("KILN_TEST_TMP") ? getenv("KILN_TEST_TMP") : "/tmp");
    if (kiln_package_read(path, &text, &len, &mod, &params) != KILN_OK) {
        fprintf(stderr, "%s: %s\n", path, kiln_last_error());
        CHECK(0);
        return;
    }
    kiln_model *ok = kiln_model_create(text, len, mod, params);
    CHECK(ok != NULL);
    kiln_model_free(ok);
    static const char *const cases[][3] = {
        {"\"control\": \"loop\"", "\"control\": \"while\"", "attrs.control must be"},
        {"\"bodies\": [{", "\"bodies\": [7, {", "attrs.bodies must be a list of 1 plans"},
        {"\"bodies\": [{", "\"bodies\": [{\"nodes\": 3}, {", "attrs.bodies must be a list"},
        {"\"bodies\": [", "\"nobodies\": [", "attrs.bodies must be a list of 1 plans"},
        {"\"num_carried\": 1", "\"num_carried\": 9", "attrs.num_carried must be"},
        {"\"op\": \"control\"", "\"op\": \"loops\"", "\"op\" must be"},
        /* the body's iteration number made float */
        {"\"dltype\": [\"list_str\", [\"int64\"", "\"dltype\": [\"list_str\", [\"float32\"",
         "body 0"},
        /* a body's binder of its own plan broken: the nested plan's checks */
        {"\"arg_nodes\": [0, 1, 2, 3]", "\"arg_nodes\": [0, 1, 2]", "arg_nodes"},
        {"\"binds\": [\"_L_0\"]", "\"binds\": [\"zz\"]", "no dim of the control node's outputs"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *bad = replace(text, cases[k][0], cases[k][1]);
        CHECK(bad != NULL);
        if (!bad) {
            fprintf(stderr, "case %zu: no '%s' in the plan\n", k, cases[k][0]);
            continue;
        }
        kiln_model *m = kiln_model_create(bad, strlen(bad), mod, params);
        CHECK(m == NULL);
        CHECK_CONTAINS(kiln_last_error(), cases[k][2]);
        kiln_model_free(m);
        free(bad);
    }
    free(text);
    kiln_module_free(mod);
    kiln_npz_free(params);
}

TEST_MAIN(TEST(test_text_round_trip), TEST(test_deep_nesting), TEST(test_if_runs),
          TEST(test_loop_runs), TEST(test_loop_carried_shape), TEST(test_malformed),
          TEST(test_scan_runs), TEST(test_malformed_plans), TEST(test_if_sizes_and_nesting))
