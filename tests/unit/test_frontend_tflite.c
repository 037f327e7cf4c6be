/* test_frontend_tflite.c: the TFLite frontend on the hand-made models of
 * tests/data/tflite (make_tflite_tests.py): the valid ones import with the
 * types and ops expected, and one compiles and runs; every malformed or
 * inconsistent one (bad_*.tflite) is rejected with an error naming the
 * file (under ASan in CI: no read outside the buffer); the unsupported
 * operators are listed all at once; every prefix and every byte flip of a
 * valid model imports or fails cleanly. */
#include <dirent.h>
#include <stdint.h>

#include "base/base_internal.h"
#include "check.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "kiln/tflite.h"

static const char *data_path(const char *file) {
    static char buf[4][1024];
    static int k;
    const char *d = getenv("KILN_TEST_DATA");
    char *b = buf[k++ & 3];
    snprintf(b, 1024, "%s/tflite/%s", d ? d : "tests/data", file);
    return b;
}

/* How many calls of op the graph has. */
static int count_op(const kiln_graph *g, const char *op) {
    int n = 0;
    for (int i = 0; i < kiln_graph_num_nodes(g); i++)
        n += !strcmp(kiln_graph_node_op(g, i), op);
    return n;
}

/* The node id of the graph's (single) output: the last node. */
static int last(const kiln_graph *g) {
    return kiln_graph_num_nodes(g) - 1;
}

static void test_conv_float(void) {
    kiln_graph *g = kiln_tflite_import(data_path("ok_conv_float.tflite"), NULL);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    CHECK_EQ_INT(count_op(g, "nn.conv2d"), 1);
    CHECK_EQ_INT(count_op(g, "nn.dense"), 1);
    CHECK_EQ_INT(count_op(g, "nn.softmax"), 1);
    CHECK_EQ_INT(count_op(g, "clip"), 1); /* the fused RELU6 */
    int out = last(g);
    CHECK_EQ_INT(kiln_graph_node_ndim(g, out), 2);
    CHECK_EQ_INT(kiln_graph_node_dim(g, out, 1), 3);
    /* SAME padding, stride 2, 5x5 -> 3x3: padding 1 on each side */
    for (int i = 0; i < kiln_graph_num_nodes(g); i++)
        if (!strcmp(kiln_graph_node_op(g, i), "nn.conv2d")) {
            char *a = kiln_graph_node_attrs(g, i);
            CHECK_CONTAINS(a, "padding=[1, 1, 1, 1]");
            CHECK_CONTAINS(a, "strides=[2, 2]");
            kiln_free(a);
        }
    /* compile and run: a softmax of 3, each in (0, 1), summing to 1 */
    const char *pkg = test_tmp_path("tflite_conv_float.tar");
    CHECK(kiln_graph_compile(g, pkg, NULL) == KILN_OK);
    kiln_executor *ex = kiln_executor_load(pkg);
    CHECK(ex != NULL);
    if (ex) {
        int64_t shape[4] = {1, 5, 5, 2};
        kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 4, shape);
        float *v = kiln_ndarray_data(x);
        for (int i = 0; i < 50; i++)
            v[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
        CHECK(kiln_executor_set_input(ex, "input", x) == KILN_OK);
        CHECK(kiln_executor_run(ex) == KILN_OK);
        const kiln_ndarray *y = kiln_executor_output(ex, 0);
        const float *p = kiln_ndarray_data(y);
        float sum = 0;
        for (int i = 0; i < 3; i++) {
            CHECK(p[i] > 0 && p[i] < 1);
            sum += p[i];
        }
        CHECK_NEAR(sum, 1.0, 1e-5);
        kiln_ndarray_free(x);
        kiln_executor_free(ex);
    }
    remove(pkg);
    kiln_graph_free(g);
}

static void test_int8(void) {
    kiln_graph *g = kiln_tflite_import(data_path("ok_int8.tflite"), NULL);
    CHECK(g != NULL);
    if (!g)
        return;
    /* activations quantized after each op, weights and bias dequantized */
    CHECK(count_op(g, "qnn.quantize") >= 4);
    CHECK(count_op(g, "qnn.dequantize") >= 5);
    CHECK_EQ_INT(count_op(g, "nn.conv2d"), 2);
    /* both filters are transposed to OIHW as int8 and dequantized after,
       per channel along dim 0: the convolution's [3, 2, 1, 1] (its scales
       on TFLite's dim 0) and the depthwise [3, 1, 3, 3] (TFLite's dim 3) */
    int per_channel = 0;
    for (int i = 0; i < kiln_graph_num_nodes(g); i++) {
        if (strcmp(kiln_graph_node_op(g, i), "qnn.dequantize") ||
            kiln_graph_node_attr_int(g, i, "axis", -1) != 0)
            continue;
        int w = kiln_graph_node_input(g, i, 0);
        CHECK_EQ_INT(kiln_graph_node_ndim(g, w), 4);
        CHECK_EQ_INT(kiln_graph_node_dim(g, w, 0), 3);
        CHECK_EQ_INT(kiln_graph_node_dtype(g, w), KILN_INT8);
        per_channel++;
    }
    CHECK_EQ_INT(per_channel, 2);
    /* activations stay NCHW between the operators: one transpose in (the
       NHWC input) and one out (the NHWC output) */
    CHECK_EQ_INT(count_op(g, "transpose"), 2);
    int out = last(g);
    CHECK_EQ_INT(kiln_graph_node_dtype(g, out), KILN_FLOAT32);
    CHECK_EQ_INT(kiln_graph_node_dim(g, out, 3), 3);
    kiln_graph_free(g);

    /* KILN_TFLITE_REFERENCE_KERNELS: every quantize rounds as TFLite's
       reference kernels; an unknown flag bit is an error naming the file */
    g = kiln_tflite_import_flags(data_path("ok_int8.tflite"), NULL, KILN_TFLITE_REFERENCE_KERNELS);
    CHECK(g != NULL);
    int tflite = 0;
    for (int i = 0; g && i < kiln_graph_num_nodes(g); i++)
        if (!strcmp(kiln_graph_node_op(g, i), "qnn.quantize"))
            tflite += !strcmp(kiln_graph_node_attr_str(g, i, "rounding", ""), "TFLITE") ? 1 : -100;
    CHECK(tflite >= 4);
    kiln_graph_free(g);
    CHECK(kiln_tflite_import_flags(data_path("ok_int8.tflite"), NULL, 4) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "ok_int8.tflite: unknown TFLite import flags 0x4");
}

static void test_fp16_and_shapes(void) {
    kiln_graph *g = kiln_tflite_import(data_path("ok_fp16.tflite"), NULL);
    CHECK(g != NULL);
    if (g) {
        /* the float16 weight's DEQUANTIZE folded into a float32 constant */
        CHECK_EQ_INT(count_op(g, "cast"), 0);
        CHECK_EQ_INT(kiln_graph_node_dim(g, last(g), 1), 2);
        kiln_graph_free(g);
    }
    g = kiln_tflite_import(data_path("ok_shapes.tflite"), NULL);
    CHECK(g != NULL);
    if (g) {
        int out = last(g);
        CHECK_EQ_INT(kiln_graph_node_ndim(g, out), 3);
        CHECK_EQ_INT(kiln_graph_node_dim(g, out, 0), 2);
        CHECK_EQ_INT(kiln_graph_node_dim(g, out, 2), 5);
        kiln_graph_free(g);
    } else {
        fprintf(stderr, "%s\n", kiln_last_error());
    }
    /* a vtable shared by two tables is legal */
    g = kiln_tflite_import(data_path("ok_shared_vtable.tflite"), NULL);
    CHECK(g != NULL);
    kiln_graph_free(g);
}

static void test_input_shapes(void) {
    kiln_graph *g = kiln_tflite_import(data_path("ok_conv_float.tflite"), "input:[1,9,9,2]");
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(kiln_graph_node_dim(g, 0, 1), 9);
        CHECK_EQ_INT(kiln_graph_node_dim(g, last(g), 1), 3);
        kiln_graph_free(g);
    }
    CHECK(!kiln_tflite_import(data_path("ok_conv_float.tflite"), "nosuch:[1,2]"));
    CHECK_CONTAINS(kiln_last_error(), "nosuch");
    CHECK(!kiln_tflite_import(data_path("ok_conv_float.tflite"), "input:[1,x"));
}

static void test_unsupported(void) {
    const char *path = data_path("unsupported_ops.tflite");
    CHECK(!kiln_tflite_import(path, NULL));
    const char *e = kiln_last_error();
    CHECK_CONTAINS(e, path);
    CHECK_CONTAINS(e, "3 unsupported operator types");
    CHECK_CONTAINS(e, "CUSTOM 'MyOp' (operators 1, 3)");
    CHECK_CONTAINS(e, "LSTM (operator 2)");
    CHECK_CONTAINS(e, "WHILE (operator 4)");
}

/* Every bad_*.tflite is rejected with an error naming the file; some say
 * what is wrong. */
static void test_bad_models(void) {
    static const struct {
        const char *file, *says;
    } expect[] = {
        {"bad_wrong_identifier.tflite", "TFL3"},
        {"bad_vector_length_huge.tflite", "vector longer than the buffer"},
        {"bad_vtable_cyclic.tflite", "bad vtable length"},
        {"bad_negative_shape.tflite", "negative dim"},
        {"bad_op_tensor_out_of_range.tflite", "tensor index 7 of 2"},
        {"bad_opcode_out_of_range.tflite", "opcode index 5"},
        {"bad_buffer_size_mismatch.tflite", "buffer of 7 bytes"},
        {"bad_written_twice.tflite", "operator 1 (RELU): tensor 1 'b' is written twice"},
        {"bad_read_before_written.tflite", "read before an operator writes it"},
        {"bad_scale_count_mismatch.tflite", "3 scales"},
        {"bad_conv_filter_3d.tflite", "operator 0 (CONV_2D)"},
        {"bad_conv_stride_zero.tflite", "strides"},
    };
    const char *dir = getenv("KILN_TEST_DATA");
    char dpath[1024];
    snprintf(dpath, sizeof dpath, "%s/tflite", dir ? dir : "tests/data");
    DIR *d = opendir(dpath);
    CHECK(d != NULL);
    if (!d)
        return;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "bad_", 4))
            continue;
        const char *path = data_path(de->d_name);
        kiln_graph *g = kiln_tflite_import(path, NULL);
        if (g)
            fprintf(stderr, "%s imported\n", de->d_name);
        CHECK(g == NULL);
        kiln_graph_free(g);
        CHECK_CONTAINS(kiln_last_error(), path);
        for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
            if (!strcmp(expect[i].file, de->d_name))
                CHECK_CONTAINS(kiln_last_error(), expect[i].says);
        n++;
    }
    closedir(d);
    CHECK(n >= 40);
}

/* Every prefix and every single-byte change of a valid model: an import or
 * an error, never a crash (ASan checks the reads). */
static void test_prefixes_and_flips(void) {
    size_t len = 0;
    unsigned char *p = (unsigned char *)kiln_read_file(data_path("ok_int8.tflite"), &len);
    CHECK(p && len > 100);
    if (!p)
        return;
    int ok = 0;
    for (size_t n = 0; n < len; n++) {
        kiln_graph *g = kiln_tflite_import_bytes(p, n, "prefix", NULL);
        ok += g != NULL;
        if (!g)
            CHECK(*kiln_last_error());
        kiln_graph_free(g);
    }
    CHECK_EQ_INT(ok, 0); /* no proper prefix is a whole model */
    for (size_t i = 0; i < len; i++) {
        unsigned char save = p[i];
        p[i] = (unsigned char)(save ^ (i % 3 ? 0x80 : 0xff));
        kiln_graph_free(kiln_tflite_import_bytes(p, len, "flip", NULL));
        p[i] = save;
    }
    CHECK(!kiln_tflite_import_bytes(NULL, 0, NULL, NULL));
    CHECK_CONTAINS(kiln_last_error(), "<memory>");
    CHECK(kiln_tflite_is_model(p, len));
    CHECK(!kiln_tflite_is_model(p, 7));
    CHECK(!kiln_tflite_is_model("12345678", 8));
    kiln_free(p);
    CHECK(!kiln_tflite_import(data_path("no_such_file.tflite"), NULL));
}

TEST_MAIN(TEST(test_conv_float), TEST(test_int8), TEST(test_fp16_and_shapes),
          TEST(test_input_shapes), TEST(test_unsupported), TEST(test_bad_models),
          TEST(test_prefixes_and_flips))
