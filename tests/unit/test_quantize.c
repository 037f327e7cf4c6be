/* test_quantize.c: kiln_onnx_quantize (post-training quantization into a
 * QDQ ONNX model) on the bundled digits CNN: what it quantizes, that the
 * quantized model keeps the float model's answers on the held-out set,
 * both calibration methods and per-tensor weights, and its errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"
#include "kiln/target.h"

static char g_model[4096], g_heldout[4096], g_tmp[4096];

/* A file's text (malloc'd), or NULL. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 22);
    size_t n = b ? fread(b, 1, (1 << 22) - 1, f) : 0;
    fclose(f);
    (void)n;
    return b;
}

static void paths(void) {
    const char *src = getenv("KILN_SOURCE_DIR"), *tmp = getenv("KILN_TEST_TMP");
    snprintf(g_model, sizeof g_model, "%s/models/digits/digits_cnn.onnx", src ? src : ".");
    snprintf(g_heldout, sizeof g_heldout, "%s/models/digits/heldout.npz", src ? src : ".");
    snprintf(g_tmp, sizeof g_tmp, "%s", tmp ? tmp : "/tmp");
}

/* The first n samples of the held-out set as calibration data. */
static kiln_npz *calibration(int64_t n) {
    kiln_npz *z = kiln_npz_load(g_heldout), *c = kiln_npz_new();
    const kiln_ndarray *x = kiln_npz_get(z, "input");
    int64_t dims[4] = {n, 1, 8, 8}, strides[4] = {64, 64, 8, 1};
    kiln_ndarray *v = x ? kiln_ndarray_view(x, 4, dims, strides, 0) : NULL;
    CHECK(v != NULL);
    kiln_npz_add(c, "input", v);
    kiln_ndarray_free(v);
    kiln_npz_free(z);
    return c;
}

/* Top-1 of each of the 360 held-out samples under the model at path. */
static int top1(const char *path, int *cls) {
    kiln_graph *g = kiln_onnx_import(path, "input:[360,1,8,8]");
    char pkg[4200];
    snprintf(pkg, sizeof pkg, "%s/quantize_top1.tar", g_tmp);
    kiln_status st = g ? kiln_graph_compile(g, pkg, NULL) : KILN_ERR_INVALID;
    kiln_graph_free(g);
    kiln_executor *e = st == KILN_OK ? kiln_executor_load(pkg) : NULL;
    kiln_npz *z = kiln_npz_load(g_heldout);
    int ok = e && z && kiln_executor_set_input(e, "input", kiln_npz_get(z, "input")) == KILN_OK &&
             kiln_executor_run(e) == KILN_OK;
    if (ok) {
        const float *y = kiln_ndarray_data(kiln_executor_output(e, 0));
        for (int i = 0; i < 360; i++) {
            cls[i] = 0;
            for (int k = 1; k < 10; k++)
                if (y[i * 10 + k] > y[i * 10 + cls[i]])
                    cls[i] = k;
        }
    } else {
        fprintf(stderr, "top1 %s: %s\n", path, kiln_last_error());
    }
    kiln_npz_free(z);
    kiln_executor_free(e);
    return ok;
}

static int count_op(const char *path, const char *op) {
    kiln_graph *g = kiln_onnx_import(path, NULL);
    int n = 0;
    for (int i = 0; g && i < kiln_graph_num_nodes(g); i++)
        n += !strcmp(kiln_graph_node_op(g, i), op);
    kiln_graph_free(g);
    return n;
}

/* The layout_transforms AlterOpLayout leaves in the model at path. */
static int layout_transforms(const char *path) {
    kiln_graph *g = kiln_onnx_import(path, NULL);
    kiln_graph *f = g ? kiln_graph_run_pass(g, "FoldConstant", NULL) : NULL;
    kiln_graph *a = f ? kiln_graph_run_pass(f, "AlterOpLayout", NULL) : NULL;
    int n = a ? 0 : -1;
    for (int i = 0; a && i < kiln_graph_num_nodes(a); i++)
        n += !strcmp(kiln_graph_node_op(a, i), "layout_transform");
    kiln_graph_free(a);
    kiln_graph_free(f);
    kiln_graph_free(g);
    return n;
}

static void test_quantize_digits(void) {
    paths();
    kiln_npz *c = calibration(96);
    char out[4200], *report = NULL;
    snprintf(out, sizeof out, "%s/digits_int8.onnx", g_tmp);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, NULL, &report), KILN_OK);
    CHECK_CONTAINS(report, "quantized 4 activations (uint8, min-max over 96 samples)");
    CHECK_CONTAINS(report, "4 weights (int8, per channel)");
    kiln_free(report);
    /* the QDQ model imports as QNN ops: a quantize and dequantize per
       activation, a dequantize per weight (kept for the passes: FoldConstant
       folds it into the float weight it stands for) */
    CHECK_EQ_INT(count_op(out, "qnn.quantize"), 4);
    CHECK_EQ_INT(count_op(out, "qnn.dequantize"), 8);
    int f[360], q[360], agree = 0;
    CHECK(top1(g_model, f) && top1(out, q));
    for (int i = 0; i < 360; i++)
        agree += f[i] == q[i];
    printf("digits: int8 (min-max, per channel) agrees with float on %d of 360\n", agree);
    CHECK(agree >= 357); /* 99 % */
    /* percentile calibration and per-tensor weights */
    kiln_quantize_options *o = kiln_quantize_options_new();
    CHECK_EQ_INT(kiln_quantize_options_set(o, "calibration", "percentile"), KILN_OK);
    CHECK_EQ_INT(kiln_quantize_options_set(o, "percentile", "99.9"), KILN_OK);
    CHECK_EQ_INT(kiln_quantize_options_set(o, "per-channel", "0"), KILN_OK);
    CHECK_EQ_INT(kiln_quantize_options_set(o, "max-samples", "64"), KILN_OK);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, o, &report), KILN_OK);
    CHECK_CONTAINS(report, "percentile over 64 samples");
    CHECK_CONTAINS(report, "(int8, per tensor)");
    kiln_free(report);
    agree = 0;
    CHECK(top1(out, q));
    for (int i = 0; i < 360; i++)
        agree += f[i] == q[i];
    printf("digits: int8 (percentile 99.9, per tensor) agrees with float on %d of 360\n", agree);
    CHECK(agree >= 350);
    kiln_quantize_options_free(o);
    kiln_npz_free(c);
}

/* Calibration data of one zero array `name` of n digit-shaped samples. */
static kiln_npz *one_array(const char *name, kiln_dtype dt, int64_t n) {
    kiln_npz *c = kiln_npz_new();
    int64_t d[4] = {n, 1, 8, 8};
    kiln_ndarray *a = kiln_ndarray_empty(dt, 4, d);
    kiln_npz_add(c, name, a);
    kiln_ndarray_free(a);
    return c;
}

/* Per-tensor quantize and dequantize run in the convolutions' blocked
 * layout: the narrow ResNet-50 (models/e2e) quantized has the float
 * model's layout transforms, none around its QDQ pairs. */
static void test_qdq_blocked_layout(void) {
    paths();
    char model[4200], out[4200];
    const char *src = getenv("KILN_SOURCE_DIR");
    snprintf(model, sizeof model, "%s/models/e2e/resnet50_narrow.onnx", src ? src : ".");
    snprintf(out, sizeof out, "%s/resnet50_narrow_int8.onnx", g_tmp);
    kiln_npz *c = kiln_npz_new();
    int64_t d[4] = {2, 3, 64, 64};
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 4, d);
    float *p = kiln_ndarray_data(x);
    for (int64_t i = 0; i < kiln_ndarray_numel(x); i++)
        p[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    kiln_npz_add(c, "input", x);
    kiln_ndarray_free(x);
    char *report = NULL;
    CHECK_EQ_INT(kiln_onnx_quantize(model, c, out, NULL, &report), KILN_OK);
    CHECK_CONTAINS(report, "per channel");
    kiln_free(report);
    kiln_npz_free(c);
    int lt = layout_transforms(model), lq = layout_transforms(out);
    printf("resnet50_narrow: %d layout transforms in float, %d quantized\n", lt, lq);
    CHECK(lt >= 0 && lt < 10);
    CHECK_EQ_INT(lq, lt);
}

/* A BERT encoder quantized: its linear layers (ONNX MatMul with constant
 * weights) become int8 dense panels through FakeQuantizationToInteger and
 * QnnCanonicalize, no QNN product left; the outputs stay near the float
 * model's (ONNX Runtime's run of the same QDQ model is 4.9e-4 away). */
static void test_bert_int8(void) {
    paths();
    char model[4200], io[4200], out[4200];
    const char *src = getenv("KILN_SOURCE_DIR");
    snprintf(model, sizeof model, "%s/models/e2e/bert_tiny_opset13.onnx", src ? src : ".");
    snprintf(io, sizeof io, "%s/models/e2e/bert_tiny_opset13_io.npz", src ? src : ".");
    snprintf(out, sizeof out, "%s/bert_tiny_int8.onnx", g_tmp);
    kiln_npz *c = kiln_npz_new();
    int64_t d[2] = {16, 32};
    kiln_ndarray *x = kiln_ndarray_empty(KILN_INT64, 2, d);
    int64_t *p = kiln_ndarray_data(x);
    for (int64_t i = 0; i < 16 * 32; i++)
        p[i] = (i * 7919) % 1000;
    kiln_npz_add(c, "input_ids", x);
    kiln_ndarray_free(x);
    CHECK_EQ_INT(kiln_onnx_quantize(model, c, out, NULL, NULL), KILN_OK);
    kiln_npz_free(c);
    kiln_graph *g = kiln_onnx_import(out, NULL);
    kiln_graph *f = g ? kiln_graph_run_pass(g, "FakeQuantizationToInteger", NULL) : NULL;
    kiln_graph *cn = f ? kiln_graph_run_pass(f, "QnnCanonicalize", NULL) : NULL;
    CHECK(cn != NULL);
    int idense = 0, qprod = 0;
    for (int i = 0; cn && i < kiln_graph_num_nodes(cn); i++) {
        const char *op = kiln_graph_node_op(cn, i);
        idense += !strcmp(op, "nn.dense") && kiln_graph_node_dtype(cn, i) == KILN_INT32;
        qprod += !strcmp(op, "qnn.batch_matmul") || !strcmp(op, "qnn.dense");
    }
    printf("bert_tiny int8: %d integer dense layers, %d QNN products left\n", idense, qprod);
    CHECK_EQ_INT(idense, 13); /* 2 layers x (q, k, v, out, 2 feed-forward) + the pooler */
    CHECK_EQ_INT(qprod, 0);
    /* compiled with the pass named (every target), against the float outputs */
    char pkg[4200];
    snprintf(pkg, sizeof pkg, "%s/bert_int8.tar", g_tmp);
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "pass", "FakeQuantizationToInteger"), KILN_OK);
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, o), KILN_OK);
    kiln_build_options_free(o);
    kiln_executor *e = kiln_executor_load(pkg);
    kiln_npz *z = kiln_npz_load(io);
    CHECK(e && z);
    if (e && z &&
        kiln_executor_set_input(e, "input_ids", kiln_npz_get(z, "input_ids")) == KILN_OK &&
        kiln_executor_run(e) == KILN_OK) {
        const kiln_ndarray *y = kiln_executor_output(e, 0),
                           *r = kiln_npz_get(z, "last_hidden_state");
        CHECK(y && r && kiln_ndarray_numel(y) == kiln_ndarray_numel(r));
        double md = 0, mr = 0;
        for (int64_t i = 0; y && r && i < kiln_ndarray_numel(r); i++) {
            double a = ((const float *)kiln_ndarray_data(y))[i],
                   b = ((const float *)kiln_ndarray_data(r))[i];
            md = fabs(a - b) > md ? fabs(a - b) : md;
            mr = fabs(b) > mr ? fabs(b) : mr;
        }
        printf("bert_tiny int8 vs float: max |diff| / max |float| = %.2e\n", md / mr);
        CHECK(mr > 0 && md / mr < 1e-2);
    } else {
        CHECK(0);
    }
    kiln_executor_free(e);
    kiln_npz_free(z);
    kiln_graph_free(cn);
    kiln_graph_free(f);
    kiln_graph_free(g);
}

/* FakeQuantizationToInteger on the QDQ model: integer convolutions and
 * dense layers, the same answers. */
static void test_fake_quantization(void) {
    paths();
    kiln_npz *c = calibration(96);
    char out[4200];
    snprintf(out, sizeof out, "%s/digits_int8_fq.onnx", g_tmp);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, NULL, NULL), KILN_OK);
    kiln_npz_free(c);
    kiln_graph *g = kiln_onnx_import(out, "input:[360,1,8,8]");
    kiln_graph *r = g ? kiln_graph_run_pass(g, "FakeQuantizationToInteger", NULL) : NULL;
    CHECK(r != NULL);
    int conv = 0, dense = 0, fconv = 0, fdense = 0, bias_i32 = 0;
    for (int i = 0; r && i < kiln_graph_num_nodes(r); i++) {
        const char *op = kiln_graph_node_op(r, i);
        conv += !strcmp(op, "qnn.conv2d");
        dense += !strcmp(op, "qnn.dense") || !strcmp(op, "qnn.batch_matmul");
        fconv += !strcmp(op, "nn.conv2d");
        fdense += !strcmp(op, "nn.dense") || !strcmp(op, "nn.batch_matmul");
        bias_i32 += !strcmp(op, "nn.bias_add") && kiln_graph_node_dtype(r, i) == KILN_INT32;
    }
    CHECK_EQ_INT(conv, 2);
    CHECK_EQ_INT(fconv, 0);
    CHECK_EQ_INT(bias_i32, 2); /* the convolutions' biases on the accumulators' grid */
    printf("FakeQuantizationToInteger: %d qnn.conv2d, %d integer matmuls, %d float ones\n", conv,
           dense, fdense);
    CHECK(dense + fdense == 2);
    /* QnnCanonicalize: plain integer products, no QNN op left but the
       quantizes (the requantizations folded into multiply-round-clip) */
    kiln_graph *cn = r ? kiln_graph_run_pass(r, "QnnCanonicalize", NULL) : NULL;
    CHECK(cn != NULL);
    int iconv = 0, qnn = 0;
    for (int i = 0; cn && i < kiln_graph_num_nodes(cn); i++) {
        const char *op = kiln_graph_node_op(cn, i);
        iconv += !strcmp(op, "nn.conv2d") && kiln_graph_node_dtype(cn, i) == KILN_INT32;
        qnn += !strncmp(op, "qnn.", 4) && strcmp(op, "qnn.quantize");
    }
    CHECK_EQ_INT(iconv, 2);
    CHECK_EQ_INT(qnn, 0);
    kiln_graph_free(cn);
    /* compiled by default (both passes run at opt level 3): int8 kernels,
       against the float model */
    char pkg[4200], dir[4200], path[4300];
    snprintf(pkg, sizeof pkg, "%s/quantize_fq.tar", g_tmp);
    snprintf(dir, sizeof dir, "%s/quantize_fq_dump", g_tmp);
    mkdir(dir, 0755);
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "dump-ir", dir), KILN_OK);
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, o), KILN_OK);
    kiln_build_options_free(o);
    snprintf(path, sizeof path, "%s/07_after_AlterOpLayout.txt", dir);
    char *text = read_text(path);
    CHECK(text != NULL);
    int kconv = 0;
    for (const char *t = text; t && (t = strstr(t, "nn.contrib_conv2d_NCHWc_int8(")); t++)
        kconv++;
    /* by default only where the target has an int8 dot product: elsewhere the
       QDQ model runs on float kernels */
    const char *tt = getenv("KILN_TARGET");
    kiln_target *target = tt && *tt ? kiln_target_parse(tt) : kiln_target_host();
    int fast =
        target && (kiln_target_has(target, "avx512vnni") || kiln_target_has(target, "avxvnni") ||
                   kiln_target_has(target, "dotprod") || kiln_target_has(target, "i8mm"));
    kiln_target_free(target);
    CHECK_EQ_INT(kconv, fast ? 2 : 0);
    printf("compiled: %d int8 convolution kernels, int8 dense panels: %s\n", kconv,
           text && (strstr(text, "4k\"") || strstr(text, "2k\"")) ? "yes" : "no");
    free(text);
    kiln_executor *e = kiln_executor_load(pkg);
    kiln_npz *z = kiln_npz_load(g_heldout);
    int f[360], agree = 0;
    CHECK(top1(g_model, f));
    if (e && z && kiln_executor_set_input(e, "input", kiln_npz_get(z, "input")) == KILN_OK &&
        kiln_executor_run(e) == KILN_OK) {
        const float *y = kiln_ndarray_data(kiln_executor_output(e, 0));
        for (int i = 0; i < 360; i++) {
            int best = 0;
            for (int k = 1; k < 10; k++)
                if (y[i * 10 + k] > y[i * 10 + best])
                    best = k;
            agree += best == f[i];
        }
    }
    printf("digits: integer convolutions agree with float on %d of 360\n", agree);
    CHECK(agree >= 357);
    kiln_executor_free(e);
    kiln_npz_free(z);
    kiln_graph_free(r);
    kiln_graph_free(g);
}

static void test_errors(void) {
    paths();
    char out[4200];
    snprintf(out, sizeof out, "%s/bad_int8.onnx", g_tmp);
    kiln_quantize_options *o = kiln_quantize_options_new();
    CHECK_EQ_INT(kiln_quantize_options_set(o, "calibration", "entropy"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "not minmax or percentile");
    CHECK_EQ_INT(kiln_quantize_options_set(o, "percentile", "101"), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_quantize_options_set(o, "batch", "0"), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_quantize_options_set(o, "colour", "red"), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "unknown quantize option 'colour'");
    /* calibration data without the model's input, of another dtype, or
       not filling the batches */
    kiln_npz *c = one_array("pixels", KILN_FLOAT32, 8);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, NULL, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no array 'input'");
    kiln_npz_free(c);
    c = one_array("input", KILN_INT32, 8);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, NULL, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "calibration array 'input' is int32");
    kiln_npz_free(c);
    c = one_array("input", KILN_FLOAT32, 9);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, NULL, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "do not fill batches of 8");
    CHECK_EQ_INT(kiln_quantize_options_set(o, "batch", "3"), KILN_OK);
    CHECK_EQ_INT(kiln_onnx_quantize(g_model, c, out, o, NULL), KILN_OK);
    CHECK_EQ_INT(kiln_onnx_quantize("/nonexistent/m.onnx", c, out, o, NULL), KILN_ERR_IO);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent/m.onnx");
    kiln_npz_free(c);
    kiln_quantize_options_free(o);
}

TEST_MAIN(TEST(test_quantize_digits), TEST(test_qdq_blocked_layout), TEST(test_fake_quantization),
          TEST(test_bert_int8), TEST(test_errors))
