/* test_frontend_onnx_import.c: ONNX models become graphs: the bundled
 * digits CNN matches PyTorch's logits end to end, a dynamic batch
 * type-checks and compiles once given a shape, unsupported ops are all
 * listed at once, and bad input gets clear errors. Calls on constants
 * fold at import (by the reference interpreter): integer division on
 * int64 constants never traps (INT64_MIN / -1, x / 0), an overflowing
 * shape is an error naming the node, and a transformer's shape
 * sub-graphs (ViT at opset 14) become constants. A Conv or Pool window
 * with a stride, dilation or kernel size below 1 is an error, not a crash. */
#include <math.h>

#include "check.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_load.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "onnx_util.h"
#include "te_util.h"

static const char *model_path(const char *rel) {
    static char buf[4][1024];
    static int k;
    const char *root = getenv("KILN_SOURCE_DIR");
    char *b = buf[k++ & 3];
    snprintf(b, 1024, "%s/%s", root ? root : "..", rel);
    return b;
}

/* Run the digits package at the first n held-out images (n <= 8) and
 * compare with PyTorch's logits. */
static void check_digits(const char *pkg, int64_t n) {
    kiln_model *m = kiln_model_load(pkg);
    kiln_npz *held = kiln_npz_load(model_path("models/digits/heldout.npz"));
    kiln_npz *ref = kiln_npz_load(model_path("models/digits/reference_logits.npz"));
    CHECK(m && held && ref);
    if (m && held && ref) {
        int64_t shape[4] = {n, 1, 8, 8};
        kiln_ndarray *x = kiln_ndarray_wrap(kiln_ndarray_data(kiln_npz_get(held, "input")),
                                            KILN_FLOAT32, 4, shape, NULL, 0);
        kiln_ndarray *y = NULL;
        const kiln_ndarray *ins[1] = {x};
        CHECK_EQ_INT(kiln_model_run_alloc(m, ins, &y, 0), KILN_OK);
        CHECK_EQ_STR(kiln_model_output_name(m, 0), "logits");
        if (y) {
            CHECK_EQ_INT(kiln_ndarray_dim(y, 0), n);
            const float *got = kiln_ndarray_data(y);
            const float *want = kiln_ndarray_data(kiln_npz_get(ref, "logits"));
            double worst = 0, scale = 0;
            for (int i = 0; i < 10 * n; i++) {
                worst = fmax(worst, fabs(got[i] - want[i]));
                scale = fmax(scale, fabs(want[i]));
            }
            /* rtol 1e-3 / atol 1e-4 relative to the output's scale */
            CHECK(worst <= 1e-4 * scale + 1e-4);
        }
        kiln_ndarray_free(y);
        kiln_ndarray_free(x);
    }
    kiln_model_free(m);
    kiln_npz_free(held);
    kiln_npz_free(ref);
}

static void test_digits_end_to_end(void) {
    char onnx[4096]; /* (model_path's buffer is reused by check_digits) */
    snprintf(onnx, sizeof onnx, "%s", model_path("models/digits/digits_cnn.onnx"));
    /* the batch is a dim_param: it stays symbolic, and one package runs any batch */
    kiln_graph *g = kiln_onnx_import(onnx, NULL);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char *counts = kiln_graph_op_counts(g);
    CHECK_CONTAINS(counts, "input: Tensor[(batch, 1, 8, 8), float32]");
    CHECK_CONTAINS(counts, "nn.conv2d                2");
    free(counts);
    const char *dyn = test_tmp_path("digits_any.tar");
    CHECK_EQ_INT(kiln_graph_compile(g, dyn, NULL), KILN_OK);
    kiln_graph_free(g);
    check_digits(dyn, 8);
    check_digits(dyn, 3);
    check_digits(dyn, 1);

    /* with a batch of 8: compile, run, compare with PyTorch */
    g = kiln_onnx_import(onnx, "input:[8,1,8,8]");
    CHECK(g != NULL);
    const char *pkg = test_tmp_path("digits8.tar");
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_graph_free(g);
    check_digits(pkg, 8);
}

static void test_unsupported_listed(void) {
    const char *dir = getenv("KILN_ONNX_TESTDATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/test_dft/model.onnx",
             dir ? dir : "/usr/share/libonnx-testdata/data/node");
    CHECK(kiln_onnx_import(path, NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "ops kiln does not support");
    CHECK_CONTAINS(kiln_last_error(), "DFT (opset");
    CHECK_CONTAINS(kiln_last_error(), "at node");
    CHECK_CONTAINS(kiln_last_error(), "test_dft/model.onnx");
}

static void test_bad_input(void) {
    const char *onnx = model_path("models/digits/digits_cnn.onnx");
    CHECK(kiln_onnx_import("/nonexistent/model.onnx", NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent/model.onnx");
    CHECK(kiln_onnx_import(onnx, "data:[1,1,8,8]") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "no input 'data'");
    CHECK_CONTAINS(kiln_last_error(), "'input'");
    CHECK(kiln_onnx_import(onnx, "input:[1,1,8") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "--input-shapes");
    /* a given shape replaces the declared one, rank included: a 3-D image
       is then refused by the convolution that reads it, by name */
    CHECK(kiln_onnx_import(onnx, "input:[1,8,8]") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "(Conv, opset");
    /* ONNX's CastLike bfloat16 tests declare `like` [3, 4] and feed it as
       [1]: the given shape is the input's */
    const char *dir = getenv("KILN_ONNX_TESTDATA");
    if (dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/test_castlike_BFLOAT16_to_FLOAT/model.onnx", dir);
        kiln_graph *g = kiln_onnx_import(path, "input:[3,4],like:[1]");
        CHECK(g != NULL);
        char *text = g ? kiln_graph_print(g) : NULL;
        CHECK(text != NULL);
        if (text)
            CHECK_CONTAINS(text, "%like: Tensor[(1,), float32]");
        free(text);
        kiln_graph_free(g);
    }
    /* a dimension past INT64_MAX is refused, not read as INT64_MAX */
    CHECK(kiln_onnx_import(onnx, "input:[99999999999999999999999,1,8,8]") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "--input-shapes: input 'input': dimension "
                                      "'99999999999999999999999' is out of range");
    /* the CLI's check is the importer's parser */
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("input:[99999999999999999999999,1,8,8]"),
                 KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "is out of range");
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("a:[1, 3,224,224],b:[],c:[0]"), KILN_OK);
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("a:[-1]"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "input 'a': dimension '-1' is negative");
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("a:[4294967296,4294967296]"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "overflow");
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("a:[1x]"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "'1x' is not a whole number or a name");
    /* a name leaves the dim symbolic; one past 63 characters is refused */
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("a:[N, 3, seq_len],b:[N]"), KILN_OK);
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("a:[n-1]"), KILN_ERR_INVALID);
    /* 17 dims, numbers or names: refused before the 17th is stored */
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("y:[0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,0,8]"),
                 KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "past the most dimensions");
    CHECK_EQ_INT(kiln_onnx_check_input_shapes("y:[a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q]"),
                 KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "more than 16 dimensions");
    char longname[128] = "a:[";
    memset(longname + 3, 'n', 70);
    strcpy(longname + 73, "]");
    CHECK_EQ_INT(kiln_onnx_check_input_shapes(longname), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "longer than 63 characters");
    kiln_graph *sym = kiln_onnx_import(onnx, "input:[n,1,8,8]");
    CHECK(sym != NULL);
    if (sym) {
        char *counts = kiln_graph_op_counts(sym);
        CHECK_CONTAINS(counts, "input: Tensor[(n, 1, 8, 8), float32]");
        free(counts);
        kiln_graph_free(sym);
    }
    /* a shape that does not fit the weights is a type error naming the node */
    CHECK(kiln_onnx_import(onnx, "input:[1,3,8,8]") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "Conv");
    /* truncated models */
    size_t len;
    FILE *f = fopen(onnx, "rb");
    CHECK(f != NULL);
    if (!f)
        return;
    static unsigned char buf[1 << 17];
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *cut = test_tmp_path("truncated.onnx");
    for (size_t keep = 0; keep < len; keep += len / 37 + 1) {
        FILE *o = fopen(cut, "wb");
        fwrite(buf, 1, keep, o);
        fclose(o);
        kiln_graph *g = kiln_onnx_import(cut, NULL);
        CHECK(g == NULL);
        kiln_graph_free(g);
        CHECK_CONTAINS(kiln_last_error(), "truncated.onnx");
    }
}

/* Malformed models (tests/data/malformed/make_malformed.py): each error
 * names the file, and the node where there is one. */
static void test_malformed_models(void) {
    static const struct {
        const char *file, *expect1, *expect2;
    } cases[] = {
        {"dangling", "node 'relu0' (Relu, opset 13)", "input 'nowhere' is not produced"},
        {"cycle", "node 'add_a' (Add, opset 13)", "input 'b' is not produced"},
        {"missing_initializer", "node 'mm' (MatMul", "input 'w' is not produced"},
        {"missing_output", "graph output 'y'", "not produced"},
        {"short_initializer", "initializer 'w'", "raw_data"},
        {"huge_dims", "input 'x'", "more than 2^48 elements"},
        {"new_opset", "opset 18", "1 to 17"},
        {"old_dropout", "Dropout (opset 6) at node 'drop0'", "ops kiln does not support"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/malformed/%s.onnx", getenv("KILN_TEST_DATA"),
                 cases[i].file);
        kiln_graph *g = kiln_onnx_import(path, NULL);
        CHECK(g == NULL);
        kiln_graph_free(g);
        if (!strstr(kiln_last_error(), cases[i].expect1) ||
            !strstr(kiln_last_error(), cases[i].expect2))
            fprintf(stderr, "%s: %s\n", cases[i].file, kiln_last_error());
        CHECK_CONTAINS(kiln_last_error(), cases[i].expect1);
        CHECK_CONTAINS(kiln_last_error(), cases[i].expect2);
        CHECK_CONTAINS(kiln_last_error(), cases[i].file);
    }
}

/* Import tests/data/FILE, which must succeed (the error on stderr if not). */
static kiln_graph *import_test_data(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", getenv("KILN_TEST_DATA"), file);
    kiln_graph *g = kiln_onnx_import(path, NULL);
    CHECK(g != NULL);
    if (!g)
        fprintf(stderr, "%s\n", kiln_last_error());
    return g;
}

/* Model-local functions are inlined, nested calls and attribute references
 * included (tests/data/make_function_model.py): y = relu(x) * 0.5. */
static void test_local_functions(void) {
    kiln_graph *g = import_test_data("local_function.onnx");
    if (!g)
        return;
    char *text = kiln_graph_print(g);
    CHECK_CONTAINS(text, "span=\"sr/ScaledRelu#0/relu\"");
    free(text);
    const char *pkg = test_tmp_path("local_function.tar");
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_graph_free(g);
    kiln_executor *ex = kiln_executor_load(pkg);
    CHECK(ex != NULL);
    if (!ex)
        return;
    int64_t sh[2] = {2, 3};
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 2, sh);
    float *px = kiln_ndarray_data(x);
    for (int i = 0; i < 6; i++)
        px[i] = (float)(i - 3);
    CHECK_EQ_INT(kiln_executor_set_input(ex, "x", x), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
    const float *y = kiln_ndarray_data(kiln_executor_output(ex, 0));
    for (int i = 0; i < 6; i++)
        CHECK(y[i] == (px[i] > 0 ? px[i] * 0.5f : 0.0f));
    kiln_ndarray_free(x);
    kiln_executor_free(ex);
}

/* tests/data/make_fold_models.py: q = [INT64_MIN, 7, -7, 5] / [-1, 0, 2, -1]
 * folds to [INT64_MIN, 0, -3, -5] (this crashed the importer with SIGFPE
 * before it folded through the interpreter), and a Reshape whose shape is
 * computed with the same divisions gets [2, 3]. */
static void test_fold_int64_division(void) {
    kiln_graph *g = import_test_data("fold_int64_div.onnx");
    if (!g)
        return;
    const gnode *q = graph_node(g, g->outs[1]), *y = graph_node(g, g->outs[0]);
    CHECK(q && q->kind == GN_CONST);
    if (q && q->kind == GN_CONST) {
        const int64_t *v = kiln_ndarray_data(q->value);
        CHECK(v[0] == INT64_MIN);
        CHECK_EQ_INT(v[1], 0);
        CHECK_EQ_INT(v[2], -3);
        CHECK_EQ_INT(v[3], -5);
    }
    /* the shape sub-graph folded: y is a reshape of x to [2, 3] */
    CHECK(y && y->kind == GN_CALL && !strcmp(y->op->name, "reshape"));
    CHECK(y && y->type.known && y->type.t[0].ndim == 2 && y->type.t[0].dims[1].v == 3);
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        CHECK(n->kind != GN_CALL || !strcmp(n->op->name, "reshape"));
    }
    kiln_graph_free(g);
}

/* tests/data/make_fold_models.py, fold_sym_chunk.onnx: PyTorch's attention
 * chunks q, k and v off its packed projection with Slices whose ends are
 * Shape(x)[-1] arithmetic; with the batch symbolic, Shape(x) is not a
 * constant, but the dim it reads is, so the ends are numbers and each Slice
 * a plain strided_slice of type [N, 2] (the run-time form, slice_params and
 * a binder, failed: it takes no symbolic dim). One package runs any batch. */
static void test_symbolic_batch_chunks(void) {
    kiln_graph *g = import_test_data("fold_sym_chunk.onnx");
    if (!g)
        return;
    for (int k = 0; k < 3; k++) {
        const gnode *y = graph_node(g, g->outs[k]);
        CHECK(y && y->kind == GN_CALL && !strcmp(y->op->name, "strided_slice") && y->nin == 1);
        CHECK(y && y->type.known && y->type.t[0].ndim == 2 && y->type.t[0].dims[0].sym &&
              !strcmp(y->type.t[0].dims[0].sym, "N") && y->type.t[0].dims[1].v == 2);
    }
    char *counts = kiln_graph_op_counts(g);
    CHECK(strstr(counts, "slice_params") == NULL);
    CHECK(strstr(counts, "bind_dims") == NULL);
    free(counts);
    const char *pkg = test_tmp_path("sym_chunk.tar");
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, NULL), KILN_OK);
    kiln_graph_free(g);
    kiln_model *m = kiln_model_load(pkg);
    CHECK(m != NULL);
    for (int64_t n = 1; m && n <= 3; n += 2) {
        int64_t sh[2] = {n, 6};
        kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 2, sh), *y[3] = {NULL, NULL, NULL};
        float *px = kiln_ndarray_data(x);
        for (int i = 0; i < 6 * n; i++)
            px[i] = (float)i;
        const kiln_ndarray *ins[1] = {x};
        CHECK_EQ_INT(kiln_model_run_alloc(m, ins, y, 0), KILN_OK);
        for (int k = 0; k < 3 && y[k]; k++) {
            CHECK_EQ_INT(kiln_ndarray_dim(y[k], 0), n);
            const float *py = kiln_ndarray_data(y[k]);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < 2; j++)
                    CHECK(py[2 * i + j] == px[6 * i + 2 * k + j]);
        }
        for (int k = 0; k < 3; k++)
            kiln_ndarray_free(y[k]);
        kiln_ndarray_free(x);
    }
    kiln_model_free(m);
}

/* The importer's fold cap is the one given to onnx_import_model: with a cap
 * of 2 elements the 4-element q of fold_int64_div.onnx stays a call (its
 * 2-element shape sub-graph still folds), by default it folds. */
static void test_fold_cap_given(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/fold_int64_div.onnx", getenv("KILN_TEST_DATA"));
    onnx_model *m = onnx_model_load(path);
    CHECK(m != NULL);
    if (!m)
        return;
    for (int cap = 0; cap < 2; cap++) {
        kiln_graph *g = onnx_import_model(m, path, NULL, 2 * cap);
        CHECK(g != NULL);
        if (!g) {
            fprintf(stderr, "%s\n", kiln_last_error());
            continue;
        }
        const gnode *q = graph_node(g, g->outs[1]);
        CHECK(q && q->kind == (cap ? GN_CALL : GN_CONST));
        kiln_graph_free(g);
    }
    onnx_model_free(m);
}

static void test_fold_shape_overflow(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/fold_shape_overflow.onnx", getenv("KILN_TEST_DATA"));
    CHECK(kiln_onnx_import(path, NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "node 'huge_fill' (ConstantOfShape, opset 14)");
    CHECK_CONTAINS(kiln_last_error(), "element count overflows int64");
}

/* torchvision's ViT exported at opset 14 (models/e2e/vit_tiny_opset14.onnx;
 * tests/e2e compiles it and compares with ONNX Runtime): the class token's
 * Expand takes its shape from ConstantOfShape -> Mul -> Equal -> Where, and
 * each attention's Slices from Shape -> Gather -> Add -> Div -> Mul. All of
 * it folds at import: no op of the graph reads only constants. */
static void test_vit_shape_subgraphs(void) {
    kiln_graph *g = kiln_onnx_import(model_path("models/e2e/vit_tiny_opset14.onnx"), NULL);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    int live_calls = 0;
    for (int id = 0; id < g->n; id++) {
        const gnode *n = g->nodes[id];
        if (n->kind != GN_CALL)
            continue;
        int all_const = 1;
        for (int i = 0; i < n->nin; i++)
            all_const &= g->nodes[n->in[i]]->kind == GN_CONST;
        if (all_const && n->op->pattern <= OP_COMM_REDUCE)
            fprintf(stderr, "not folded: %s (%s)\n", n->name, n->op->name);
        CHECK(!all_const || n->op->pattern > OP_COMM_REDUCE);
        live_calls++;
    }
    char *counts = kiln_graph_op_counts(g);
    CHECK_CONTAINS(counts, "take                     1"); /* x[:, 0]; not the shapes' */
    CHECK(strstr(counts, "where") == NULL);               /* the Expand's shape */
    CHECK(strstr(counts, "equal") == NULL);
    CHECK_CONTAINS(counts, "strided_slice            6"); /* q, k, v of the packed projection */
    free(counts);
    CHECK(live_calls > 50);
    kiln_graph_free(g);
}

/* ---- models built here ---------------------------------------------------- */

/* y = op(x[1, 1, 5, 5] (, w[1, 1, 3, 3])) at opset 13 with the attributes
 * auto_pad (NULL: none) and one ints attribute per name (2 values each),
 * written to a file of the test's tmp folder; returns its path. */
static const char *window_model(const char *op, const char *auto_pad, int nints,
                                const char *const *names, const int64_t (*vals)[2]) {
    int conv = !strcmp(op, "Conv");
    Onnx__AttributeProto at[5], *ats[5];
    size_t nat = 0;
    for (int k = 0; k < nints && k < 4; k++, nat++) {
        Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
        at[nat] = a;
        at[nat].name = (char *)names[k];
        at[nat].has_type = 1;
        at[nat].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        at[nat].n_ints = 2;
        at[nat].ints = (int64_t *)vals[k];
        ats[nat] = &at[nat];
    }
    if (auto_pad) {
        Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT;
        at[nat] = a;
        at[nat].name = "auto_pad";
        at[nat].has_type = 1;
        at[nat].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        at[nat].has_s = 1;
        at[nat].s.data = (uint8_t *)auto_pad;
        at[nat].s.len = strlen(auto_pad);
        ats[nat] = &at[nat];
        nat++;
    }
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    char *in[2] = {"x", "w"}, *out[1] = {"y"};
    node.name = "win";
    node.op_type = (char *)op;
    node.n_input = conv ? 2 : 1;
    node.input = in;
    node.n_output = 1;
    node.output = out;
    node.n_attribute = nat;
    node.attribute = ats;
    /* x: float [1, 1, 5, 5] */
    Onnx__TensorShapeProto__Dimension dim[4], *dims[4];
    static const int64_t xd[4] = {1, 1, 5, 5};
    for (int d = 0; d < 4; d++) {
        Onnx__TensorShapeProto__Dimension z = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        dim[d] = z;
        dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dim[d].dim_value = xd[d];
        dims[d] = &dim[d];
    }
    Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 4;
    shape.dim = dims;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1;
    tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt.shape = &shape;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type.tensor_type = &tt;
    Onnx__ValueInfoProto xv = ONNX__VALUE_INFO_PROTO__INIT, *inputs[1] = {&xv};
    xv.name = "x";
    xv.type = &type;
    Onnx__ValueInfoProto yv = ONNX__VALUE_INFO_PROTO__INIT, *outs[1] = {&yv};
    yv.name = "y";
    /* w: float [1, 1, 3, 3] of ones */
    float wdata[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int64_t wd[4] = {1, 1, 3, 3};
    Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT, *inits[1] = {&w};
    w.name = "w";
    w.has_data_type = 1;
    w.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    w.n_dims = 4;
    w.dims = wd;
    w.n_float_data = 9;
    w.float_data = wdata;
    return ou_write_model(13, &node, conv ? 1 : 0, inits, 1, inputs, 1, outs, "window.onnx");
}

/* A Conv or Pool window with a stride, dilation or kernel size below 1 is
 * an error naming the node (a stride of 0 with auto_pad SAME_UPPER killed
 * the importer with SIGFPE); a good one imports. */
static void test_bad_windows(void) {
    static const struct {
        const char *op, *auto_pad, *name;
        int64_t v[2];
        const char *expect;
    } cases[] = {
        {"Conv", "SAME_UPPER", "strides", {0, 0}, "stride 0 is not at least 1"},
        {"Conv", "SAME_LOWER", "strides", {1, 0}, "stride 0 is not at least 1"},
        {"Conv", NULL, "strides", {0, 0}, "stride 0 is not at least 1"},
        {"Conv", "SAME_UPPER", "dilations", {0, 0}, "dilation 0 is not at least 1"},
        {"MaxPool", "SAME_UPPER", "strides", {0, 0}, "stride 0 is not at least 1"},
        {"AveragePool", "SAME_UPPER", "strides", {-1, -1}, "stride -1 is not at least 1"},
        {"MaxPool", "SAME_UPPER", "kernel_shape", {0, 0}, "kernel size 0 is not at least 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *names[2] = {cases[i].name, "kernel_shape"};
        const int64_t vals[2][2] = {{cases[i].v[0], cases[i].v[1]}, {2, 2}};
        int pool = strcmp(cases[i].op, "Conv") != 0;
        int nints = pool && strcmp(cases[i].name, "kernel_shape") ? 2 : 1;
        const char *path = window_model(cases[i].op, cases[i].auto_pad, nints, names, vals);
        kiln_graph *g = kiln_onnx_import(path, NULL);
        CHECK(g == NULL);
        kiln_graph_free(g);
        char node[64];
        snprintf(node, sizeof node, "node 'win' (%s, opset 13)", cases[i].op);
        if (!strstr(kiln_last_error(), node) || !strstr(kiln_last_error(), cases[i].expect))
            fprintf(stderr, "case %zu: %s\n", i, kiln_last_error());
        CHECK_CONTAINS(kiln_last_error(), node);
        CHECK_CONTAINS(kiln_last_error(), cases[i].expect);
    }
    /* the same models with good windows import */
    const char *names[2] = {"strides", "kernel_shape"};
    const int64_t vals[2][2] = {{2, 2}, {2, 2}};
    kiln_graph *g = kiln_onnx_import(window_model("Conv", "SAME_UPPER", 1, names, vals), NULL);
    if (!g)
        fprintf(stderr, "%s\n", kiln_last_error());
    CHECK(g != NULL);
    kiln_graph_free(g);
    g = kiln_onnx_import(window_model("MaxPool", "SAME_UPPER", 2, names, vals), NULL);
    if (!g)
        fprintf(stderr, "%s\n", kiln_last_error());
    CHECK(g != NULL);
    kiln_graph_free(g);
}

/* ONNX names each value once: a second definition of a node output, a graph
 * input or an initializer is refused, naming it (tests/data/make_dup_models.py). */
static void test_duplicate_names(void) {
    static const struct {
        const char *file, *msg;
    } cases[] = {
        {"dup_output", "node 'second' (Relu, opset 13): output 'y' is already defined"},
        {"dup_input", "graph input 'x' is listed twice"},
        {"dup_initializer", "initializer 'w' is listed twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.onnx", getenv("KILN_TEST_DATA"), cases[i].file);
        kiln_graph *g = kiln_onnx_import(path, NULL);
        CHECK(g == NULL);
        kiln_graph_free(g);
        CHECK_CONTAINS(kiln_last_error(), cases[i].msg);
        CHECK_CONTAINS(kiln_last_error(), cases[i].file);
        kiln_clear_error();
    }
}

/* Each bad_attr model breaks one documented rule of a node (tests/data/
 * make_bad_attr_models.py): a wrong attribute type, a repeated, unknown or
 * missing attribute, too many inputs or outputs, or a shape constraint.
 * Each is refused with an error naming the file, the node, its op and
 * opset, and the attribute or input; before these checks each imported
 * (with a default or a guess) or crashed. The nearest valid models import. */
static void test_bad_attr_models(void) {
    static const struct {
        const char *file, *node, *msg;
    } cases[] = {
        /* attribute types, values, repeats, unknown and required ones */
        {"bad_elu_alpha_int", "'elu' (Elu, opset 13)", "attribute 'alpha' must be FLOAT, not INT"},
        {"bad_softmax_axis_string", "'sm' (Softmax, opset 13)",
         "attribute 'axis' must be INT, not STRING"},
        {"bad_transpose_perm_floats", "'tr' (Transpose, opset 13)",
         "attribute 'perm' must be INTS, not FLOATS"},
        {"bad_flatten_axis_ints", "'fl' (Flatten, opset 13)",
         "attribute 'axis' must be INT, not INTS"},
        {"bad_conv_group_string", "'conv' (Conv, opset 13)",
         "attribute 'group' must be INT, not STRING"},
        {"bad_leakyrelu_alpha_string", "'lrelu' (LeakyRelu, opset 13)",
         "attribute 'alpha' must be FLOAT, not STRING"},
        {"bad_clip_min_string", "'clip' (Clip, opset 10)",
         "attribute 'min' must be FLOAT, not STRING"},
        {"bad_elu_alpha_no_value", "'elu' (Elu, opset 13)",
         "attribute 'alpha' is of type FLOAT but has no value"},
        {"bad_dup_attr", "'lrelu' (LeakyRelu, opset 13)", "attribute 'alpha' is given twice"},
        {"bad_unknown_attr", "'relu' (Relu, opset 13)",
         "attribute 'alpha' is not an attribute of Relu at opset 13"},
        {"bad_clip_min_attr_opset13", "'clip' (Clip, opset 13)",
         "attribute 'min' is not an attribute of Clip at opset 13"},
        {"bad_cast_no_to", "'cast' (Cast, opset 13)",
         "the required attribute 'to' (INT) is missing"},
        /* arity */
        {"bad_relu_outputs", "'relu' (Relu, opset 13)", "has 3 outputs; Relu takes at most 1"},
        {"bad_add_inputs", "'add' (Add, opset 13)", "has 3 inputs; Add takes at most 2"},
        {"bad_gemm_empty_b", "'gemm' (Gemm, opset 13)", "input 1 is required"},
        /* Conv and pools */
        {"bad_conv_kernel_shape", "'conv' (Conv, opset 13)",
         "attribute 'kernel_shape' [5, 5] disagrees with the weight's spatial dims [3, 3]"},
        {"bad_conv_group_channels", "'conv' (Conv, opset 13)",
         "groups=2 must divide input channels 3"},
        {"bad_conv_pads_length", "'conv' (Conv, opset 13)", "attribute 'pads' must have 4 values"},
        {"bad_conv_strides_length", "'conv' (Conv, opset 13)",
         "attribute 'strides' has 1 values; the input has 2 spatial dims"},
        {"bad_conv_dilations_length", "'conv' (Conv, opset 13)",
         "attribute 'dilations' has more than 2 values"},
        {"bad_maxpool_kernel_length", "'pool' (MaxPool, opset 13)",
         "attribute 'kernel_shape' has 1 values"},
        {"bad_conv_6d", "'conv' (Conv, opset 13)",
         "only 1-D, 2-D and 3-D windows (3-D to 5-D tensors) are supported"},
        {"bad_maxpool_storage_order", "'pool' (MaxPool, opset 12)",
         "attribute 'storage_order' = 2 is not 0 or 1"},
        {"bad_maxpool_storage_order_opset7", "'pool' (MaxPool, opset 7)",
         "attribute 'storage_order' is not an attribute of MaxPool at opset 7"},
        {"bad_lppool_p", "'pool' (LpPool, opset 13)", "attribute 'p' = 0 is not at least 1"},
        {"bad_maxunpool_float_indices", "'unpool' (MaxUnpool, opset 13)", "I be int64 of X's rank"},
        {"bad_maxunpool_output_shape_small", "'unpool' (MaxUnpool, opset 13)",
         "output_shape[3] = 3 is smaller than the unpooled size 4"},
        {"bad_maxunpool_output_shape_length", "'unpool' (MaxUnpool, opset 13)",
         "output_shape has 3 values for a 4-D input"},
        {"bad_convtranspose_output_shape_length", "'convt' (ConvTranspose, opset 13)",
         "attribute 'output_shape' has 1 values; the input has 2 spatial dims"},
        {"bad_convtranspose_output_padding", "'convt' (ConvTranspose, opset 13)",
         "output padding -1 is not at least 0"},
        {"bad_convtranspose_group", "'convt' (ConvTranspose, opset 13)",
         "groups=2 must divide the input channels 3"},
        {"bad_convtranspose_empty", "'convt' (ConvTranspose, opset 13)",
         "padding (3, 3) is empty or overflows"},
        {"bad_convtranspose_stride_overflow", "'convt' (ConvTranspose, opset 13)",
         "stride 4611686018427387904, dilation 1, output padding 0 and padding (0, 0) is empty or "
         "overflows"},
        {"bad_convinteger_float", "'convi' (ConvInteger, opset 13)",
         "the inputs must be int8 or uint8, not float32"},
        {"bad_convinteger_zero_point", "'convi' (ConvInteger, opset 13)",
         "a zero point has 2 elements, not 1 or 3"},
        /* BatchNormalization, Gemm, MatMul */
        {"bad_batchnorm_scale_length", "'bn' (BatchNormalization, opset 13)",
         "input 1 (scale) must be 1-D with the channel count 2"},
        {"bad_batchnorm_spatial", "'bn' (BatchNormalization, opset 7)", "attribute 'spatial' = 0"},
        {"bad_batchnorm_stats_opset9", "'bn' (BatchNormalization, opset 9)",
         "output 1 ('m2'), a statistic of training, is not supported before opset 14"},
        /* losses, normalizations, Dropout */
        {"bad_nllloss_reduction", "'nll' (NegativeLogLikelihoodLoss, opset 13)",
         "attribute 'reduction' = 'avg' is not none, sum or mean"},
        {"bad_sce_target_rank", "'sce' (SoftmaxCrossEntropyLoss, opset 13)",
         "the targets have rank 2; the 2-D scores need 1"},
        {"bad_instancenorm_rank", "'in' (InstanceNormalization, opset 13)",
         "the input needs at least 3 dims (N, C, D1, ...), has 2"},
        {"bad_lrn_size_zero", "'lrn' (LRN, opset 13)", "size 0 must be 1 to 2^48"},
        {"bad_mvn_axes", "'mvn' (MeanVarianceNormalization, opset 13)",
         "axis 5 is out of range for a 2-D input"},
        {"bad_dropout_ratio", "'drop' (Dropout, opset 13)", "ratio 1.5 is not in [0, 1)"},
        {"bad_gemm_inner", "'gemm' (Gemm, opset 13)",
         "the inner dims differ: 3 in A (transA=0), 4 in B (transB=1)"},
        {"bad_matmul_inner", "'mm' (MatMul, opset 13)", "the reduced dims differ"},
        /* axes */
        {"bad_gather_axis", "'gather' (Gather, opset 13)",
         "attribute 'axis' = 2 is out of range for a 2-D input"},
        {"bad_concat_axis", "'cat' (Concat, opset 13)",
         "attribute 'axis' = 2 is out of range for a 2-D input"},
        {"bad_softmax_axis", "'sm' (Softmax, opset 13)",
         "attribute 'axis' = 3 is out of range for a 2-D input"},
        {"bad_flatten_axis", "'fl' (Flatten, opset 13)",
         "attribute 'axis' = -3 is out of range for a 2-D input"},
        /* Reshape, Concat, Transpose, Split, Clip, Pad */
        {"bad_reshape_two_neg", "'reshape' (Reshape, opset 14)", "more than one -1 in the shape"},
        {"bad_reshape_count", "'reshape' (Reshape, opset 14)",
         "the shape (input 'shape') has 16 elements, the data 6"},
        {"bad_reshape_allowzero", "'reshape' (Reshape, opset 14)",
         "both 0 and -1, which attribute 'allowzero' = 1 forbids"},
        {"bad_concat_dims", "'cat' (Concat, opset 13)", "input 1 differs from input 0 in dim 0"},
        {"bad_concat_rank", "'cat' (Concat, opset 13)", "input 1 has rank 3"},
        {"bad_transpose_repeat", "'tr' (Transpose, opset 13)",
         "attribute 'perm' is not a permutation"},
        {"bad_transpose_length", "'tr' (Transpose, opset 13)",
         "attribute 'perm' has 3 values for a 2-D input"},
        {"bad_split_sum", "'split' (Split, opset 13)",
         "input 'split' sums to 2, but the axis has 3"},
        {"bad_split_count", "'split' (Split, opset 13)", "input 'split' has 2 sizes for 3 outputs"},
        {"bad_clip_min_tensor", "'clip' (Clip, opset 13)",
         "input 'min' (lo) must be a scalar, not of rank 1"},
        {"bad_pad_length", "'pad' (Pad, opset 13)", "input 'pads' needs 4 values"},
        {"bad_pad_mode", "'pad' (Pad, opset 13)",
         "attribute 'mode' = 'wrap' is not constant, reflect or edge"},
        /* Mod, BitShift, Celu, Hardmax, Max before opset 8 */
        {"bad_mod_float_fmod0", "'mod' (Mod, opset 13)",
         "a float32 input needs attribute 'fmod' = 1"},
        {"bad_mod_fmod2", "'mod' (Mod, opset 13)", "attribute 'fmod' = 2 must be 0 or 1"},
        {"bad_bitshift_direction", "'shift' (BitShift, opset 13)",
         "attribute 'direction' = 'UP' is not LEFT or RIGHT"},
        {"bad_celu_alpha_zero", "'celu' (Celu, opset 13)", "attribute alpha must not be 0"},
        {"bad_hardmax_axis", "'hm' (Hardmax, opset 13)",
         "attribute 'axis' = -3 is out of range for a 2-D input"},
        {"bad_max_broadcast_opset6", "'max' (Max, opset 6)",
         "input 1's shape differs from input 0's (opset 6 does not broadcast"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024], node[128];
        snprintf(path, sizeof path, "%s/bad_attr/%s.onnx", getenv("KILN_TEST_DATA"), cases[i].file);
        snprintf(node, sizeof node, ": node %s: ", cases[i].node);
        const char *parts[3] = {cases[i].file, node, cases[i].msg};
        ou_expect_import_error(path, 3, parts);
    }
    static const char *const good[] = {
        "good_conv_kernel_shape", "good_clip_min_1",      "good_untyped_alpha", "good_split_sizes",
        "good_reshape_zero",      "good_mod_float_fmod1", "good_max_opset6"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/bad_attr/%s.onnx", getenv("KILN_TEST_DATA"), good[i]);
        kiln_graph *g = kiln_onnx_import(path, NULL);
        if (!g)
            fprintf(stderr, "%s: %s\n", good[i], kiln_last_error());
        CHECK(g != NULL);
        kiln_graph_free(g);
    }
}

TEST_MAIN(TEST(test_digits_end_to_end), TEST(test_unsupported_listed), TEST(test_bad_input),
          TEST(test_malformed_models), TEST(test_local_functions), TEST(test_fold_int64_division),
          TEST(test_symbolic_batch_chunks), TEST(test_fold_cap_given),
          TEST(test_fold_shape_overflow), TEST(test_vit_shape_subgraphs), TEST(test_bad_windows),
          TEST(test_duplicate_names), TEST(test_bad_attr_models))
