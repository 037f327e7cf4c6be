/* test_graph_types.c: the op table is complete, graphs built by hand
 * type-check (with a symbolic batch), and bad graphs get errors that name
 * the node, the op and the reason. */
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "ops/ops.h"

/* 1 if the schema has an attribute called name. */
static int has_attr(const kiln_op_def *d, const char *name) {
    for (const attr_schema *s = d->attrs; s->name; s++)
        if (!strcmp(s->name, name))
            return 1;
    return 0;
}

static void test_table_complete(void) {
    int n = ops_builtin_count();
    CHECK(n >= 40);
    CHECK(ops_builtin(n) == NULL && ops_builtin(-1) == NULL);
    for (int i = 0; i < n; i++) {
        const kiln_op_def *d = ops_builtin(i);
        /* a control op's bodies are compiled as graphs, an external function
           by its backend: neither has a compute */
        CHECK(d->name && *d->name && d->rel && d->attrs && d->summary &&
              (d->compute != NULL) != (d->control != OP_CONTROL_NONE || d->external));
        if (!d->compute && !d->control && !d->external)
            fprintf(stderr, "op %s has no compute\n", d->name);
        CHECK(d->min_in >= 0 && d->max_in >= d->min_in);
        CHECK(d->plugin == NULL);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(d->name, ops_builtin(j)->name) != 0);
        /* every default parses and has the schema's kind */
        for (const attr_schema *s = d->attrs; s->name; s++) {
            if (!s->def)
                continue;
            const gattr *a = graph_default_attr(d, s);
            CHECK(a != NULL);
            if (a)
                CHECK(a->kind == s->kind);
        }
        /* an elementwise scalar goes with the compute that uses it, and only
           on elementwise and broadcasting ops */
        CHECK((d->elem != NULL) == (d->compute == ops_compute_elemwise));
        if (d->elem)
            CHECK(d->pattern <= OP_BROADCAST && d->max_in <= LAYOUT_MAX_IN);
        /* the layout: a known kind; following a blocked layout needs an op
           that reads every input at its own index: no axis, no shape */
        CHECK(d->layout == LAYOUT_PLAIN || d->layout == LAYOUT_FOLLOWS);
        if (d->layout == LAYOUT_FOLLOWS) {
            CHECK(d->pattern <= OP_BROADCAST);
            CHECK(!has_attr(d, "axis") && !has_attr(d, "shape"));
            if (has_attr(d, "axis"))
                fprintf(stderr, "op %s follows layouts but has an axis\n", d->name);
        }
        /* (an op with a layout hook may take more than LAYOUT_MAX_IN inputs,
           as concatenate does: AlterOpLayout leaves such calls in NCHW
           without asking the hook) */
        CHECK(d->pattern <= OP_OUT_ELEMWISE_FUSABLE || d->pattern == OP_OPAQUE);
        /* no two rows are the same definition under two names: what an op
           does is in its row (relation, compute, scalar, variant, schedule,
           layout hook), never chosen by its name */
        for (int j = 0; j < i; j++) {
            const kiln_op_def *e = ops_builtin(j);
            int same = d->rel == e->rel && d->compute == e->compute && d->elem == e->elem &&
                       d->variant == e->variant && d->schedule == e->schedule &&
                       d->alter == e->alter;
            CHECK(!same);
            if (same)
                fprintf(stderr, "ops %s and %s have the same row\n", e->name, d->name);
        }
    }
    CHECK(op_registry_find(ops_default_registry(), "nn.conv2d") != NULL);
}

static const char *type_of(kiln_graph *g, int id, char *buf, size_t cap) {
    kstr s;
    kstr_init(&s);
    gtype_print(&s, &graph_node(g, id)->type);
    snprintf(buf, cap, "%s", s.buf ? s.buf : "");
    kstr_free(&s);
    return buf;
}

static kiln_ndarray *zeros(int nd, const int64_t *shape) {
    return kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
}

/* A small CNN with a symbolic batch: conv -> bias -> relu -> pool -> flatten -> dense -> softmax.
 */
static void test_cnn_types(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t dims[4] = {-1, 1, 8, 8};
    const char *syms[4] = {"batch", NULL, NULL, NULL};
    int x = kiln_graph_var(g, "input", KILN_FLOAT32, 4, dims, syms);
    int64_t ws[4] = {8, 1, 3, 3}, bs[1] = {8}, ds[2] = {10, 128}, dbs[1] = {10};
    kiln_ndarray *w = zeros(4, ws), *b = zeros(1, bs), *dw = zeros(2, ds), *db = zeros(1, dbs);
    int cw = kiln_graph_const(g, "conv.weight", w), cb = kiln_graph_const(g, "conv.bias", b);
    int in2[2] = {x, cw};
    int c = kiln_graph_call(g, "nn.conv2d", 2, in2, "padding=[1, 1, 1, 1], channels=8", "Conv_0");
    int in3[2] = {c, cb};
    int ba = kiln_graph_call(g, "nn.bias_add", 2, in3, NULL, "Conv_0.bias");
    int r = kiln_graph_call(g, "nn.relu", 1, &ba, "", "Relu_1");
    int p = kiln_graph_call(g, "nn.max_pool2d", 1, &r, "pool_size=[2, 2], strides=[2, 2]", "Pool");
    int f = kiln_graph_call(g, "nn.batch_flatten", 1, &p, NULL, "Flatten");
    int dwid = kiln_graph_const(g, "fc.weight", dw), dbid = kiln_graph_const(g, "fc.bias", db);
    int in4[2] = {f, dwid};
    int d = kiln_graph_call(g, "nn.dense", 2, in4, NULL, "Gemm");
    int in5[2] = {d, dbid};
    int db2 = kiln_graph_call(g, "add", 2, in5, NULL, "Gemm.bias");
    int sm = kiln_graph_call(g, "nn.softmax", 1, &db2, "axis=1", "Softmax");
    CHECK(sm >= 0);
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &sm, NULL), KILN_OK);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char buf[256];
    CHECK_EQ_STR(type_of(g, c, buf, sizeof buf), "Tensor[(batch, 8, 8, 8), float32]");
    CHECK_EQ_STR(type_of(g, p, buf, sizeof buf), "Tensor[(batch, 8, 4, 4), float32]");
    CHECK_EQ_STR(type_of(g, f, buf, sizeof buf), "Tensor[(batch, 128), float32]");
    CHECK_EQ_STR(type_of(g, sm, buf, sizeof buf), "Tensor[(batch, 10), float32]");
    kiln_ndarray_free(w);
    kiln_ndarray_free(b);
    kiln_ndarray_free(dw);
    kiln_ndarray_free(db);
    kiln_graph_free(g);
}

static void test_split_tuple_types(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t dims[2] = {4, 6};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, dims, NULL);
    int s = kiln_graph_call(g, "split", 1, &x, "indices_or_sections=[1, 4], axis=1", "Split");
    int t1 = kiln_graph_tuple_get(g, s, 1, NULL), t2 = kiln_graph_tuple_get(g, s, 2, NULL);
    int pair[2] = {t1, t2};
    int cat = kiln_graph_call(g, "concatenate", 2, pair, "axis=1", NULL);
    int tup = kiln_graph_tuple(g, 2, pair, NULL);
    CHECK(cat >= 0 && tup >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char buf[256];
    CHECK_EQ_STR(type_of(g, s, buf, sizeof buf),
                 "(Tensor[(4, 1), float32], Tensor[(4, 3), float32], Tensor[(4, 2), float32])");
    CHECK_EQ_STR(type_of(g, cat, buf, sizeof buf), "Tensor[(4, 5), float32]");
    /* reshape with 0 and -1, transpose, compare -> bool, where */
    int rs = kiln_graph_call(g, "reshape", 1, &x, "newshape=[0, -1, 2]", NULL);
    int tr = kiln_graph_call(g, "transpose", 1, &rs, "axes=[2, 0, 1]", NULL);
    int two[2] = {x, x};
    int lt = kiln_graph_call(g, "less", 2, two, NULL, NULL);
    int three[3] = {lt, x, x};
    int wh = kiln_graph_call(g, "where", 3, three, NULL, NULL);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    CHECK_EQ_STR(type_of(g, tr, buf, sizeof buf), "Tensor[(2, 4, 3), float32]");
    CHECK_EQ_STR(type_of(g, lt, buf, sizeof buf), "Tensor[(4, 6), bool]");
    CHECK_EQ_STR(type_of(g, wh, buf, sizeof buf), "Tensor[(4, 6), float32]");
    kiln_graph_free(g);
}

static void test_errors(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t dims[4] = {1, 3, 8, 8}, wd[4] = {4, 2, 3, 3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, dims, NULL);
    int w = kiln_graph_var(g, "w", KILN_FLOAT32, 4, wd, NULL);
    int in[2] = {x, w};
    /* builder errors */
    CHECK_EQ_INT(kiln_graph_call(g, "nn.conv3000d", 2, in, NULL, "C"), -1);
    CHECK_CONTAINS(kiln_last_error(), "unknown op 'nn.conv3000d'");
    CHECK_EQ_INT(kiln_graph_call(g, "nn.relu", 2, in, NULL, "R"), -1);
    CHECK_CONTAINS(kiln_last_error(), "takes 1 inputs, got 2");
    CHECK_EQ_INT(kiln_graph_call(g, "nn.conv2d", 2, in, "stride=[2, 2]", "C"), -1);
    CHECK_CONTAINS(kiln_last_error(), "unknown attribute 'stride'");
    CHECK_EQ_INT(kiln_graph_call(g, "nn.conv2d", 2, in, "strides=\"two\"", "C"), -1);
    CHECK_CONTAINS(kiln_last_error(), "must be a int list");
    CHECK_EQ_INT(kiln_graph_call(g, "nn.conv2d", 2, in, "strides=[2, 2", "C"), -1);
    CHECK_CONTAINS(kiln_last_error(), "attributes");
    CHECK_EQ_INT(kiln_graph_call(g, "clip", 1, &x, "a_min=0", "Clip"), -1);
    CHECK_CONTAINS(kiln_last_error(), "required attribute 'a_max'");
    int bad[1] = {99};
    CHECK_EQ_INT(kiln_graph_call(g, "nn.relu", 1, bad, NULL, "R"), -1);
    CHECK_CONTAINS(kiln_last_error(), "does not exist");
    /* type errors name node and op */
    int c = kiln_graph_call(g, "nn.conv2d", 2, in, NULL, "Conv_7");
    CHECK(c >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "node 'Conv_7' (nn.conv2d)");
    CHECK_CONTAINS(kiln_last_error(), "input channels");
    kiln_graph_free(g);

    g = kiln_graph_new();
    int64_t a[2] = {3, 4}, b[2] = {5, 4};
    int xa = kiln_graph_var(g, "a", KILN_FLOAT32, 2, a, NULL);
    int xb = kiln_graph_var(g, "b", KILN_FLOAT32, 2, b, NULL);
    int ab[2] = {xa, xb};
    CHECK(kiln_graph_call(g, "add", 2, ab, NULL, "Add_3") >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "node 'Add_3' (add)");
    CHECK_CONTAINS(kiln_last_error(), "cannot broadcast");
    kiln_graph_free(g);

    g = kiln_graph_new();
    int xi = kiln_graph_var(g, "i", KILN_INT64, 2, a, NULL);
    CHECK(kiln_graph_call(g, "exp", 1, &xi, NULL, "Exp") >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "float");
    CHECK_EQ_INT(kiln_graph_var(g, "", KILN_FLOAT32, 0, NULL, NULL), -1);
    int64_t neg[1] = {-1};
    CHECK_EQ_INT(kiln_graph_var(g, "v", KILN_FLOAT32, 1, neg, NULL), -1);
    CHECK_CONTAINS(kiln_last_error(), "symbolic but has no name");
    kiln_graph_free(g);
}

/* Every type stays under 2^48 elements (GRAPH_MAX_ELEMENTS), so the
 * relations' arithmetic on dims never overflows; windows that would end past
 * int64 are errors, not undefined behaviour. */
static void test_size_limits(void) {
    kiln_graph *g = kiln_graph_new();
    int64_t big[2] = {(int64_t)1 << 24, ((int64_t)1 << 24) + 1}, edge[2] = {1 << 24, 1 << 24};
    CHECK_EQ_INT(kiln_graph_var(g, "big", KILN_FLOAT32, 2, big, NULL), -1);
    CHECK_CONTAINS(kiln_last_error(), "graph var 'big'");
    CHECK_CONTAINS(kiln_last_error(), "2^48");
    int64_t zero_huge[2] = {0, (int64_t)1 << 60};
    CHECK_EQ_INT(kiln_graph_var(g, "zh", KILN_FLOAT32, 2, zero_huge, NULL), -1);
    CHECK_CONTAINS(kiln_last_error(), "2^48");
    /* exactly 2^48 is allowed; doubling it by concatenation is not */
    int e = kiln_graph_var(g, "e", KILN_FLOAT32, 2, edge, NULL);
    CHECK(e >= 0);
    int ee[2] = {e, e};
    CHECK(kiln_graph_call(g, "concatenate", 2, ee, "axis=0", "Cat") >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "node 'Cat' (concatenate)");
    CHECK_CONTAINS(kiln_last_error(), "2^48");
    kiln_graph_free(g);

    /* a ceil_mode window whose end is past int64 */
    g = kiln_graph_new();
    int64_t xd[4] = {1, 1, 4, 4};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xd, NULL);
    CHECK(kiln_graph_call(g, "nn.max_pool2d", 1, &x,
                          "pool_size=[1, 1], strides=[9223372036854775807, 1], ceil_mode=1",
                          "Pool") >= 0);
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "node 'Pool'");
    kiln_graph_free(g);
}

TEST_MAIN(TEST(test_table_complete), TEST(test_cnn_types), TEST(test_split_tuple_types),
          TEST(test_errors), TEST(test_size_limits))
