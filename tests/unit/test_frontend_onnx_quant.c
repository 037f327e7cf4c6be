/* test_frontend_onnx_quant.c: the ONNX quantization converters
 * (src/frontend/onnx_convert_quant.c) past what the Debian node tests
 * reach, on one-node models built here: QuantizeLinear rounds half to even
 * before it adds the zero point and saturates to int8 and uint8 (uint8
 * without a zero point); a negative axis picks the per-axis dim for
 * QuantizeLinear and DequantizeLinear; DynamicQuantizeLinear of an
 * all-zero input has scale 1 and zero point 0; QLinearMatMul with
 * per-row and per-column parameters and an int8 output; QLinearConv with
 * a per-channel weight scale and a bias; and the
 * importer's errors for bad scales, zero points and axes. */
#include <math.h>

#include "check.h"
#include "graph_util.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "onnx_util.h"
#include "te_util.h"

#define NO_AXIS INT64_MIN
#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define F64 ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE
#define I8 ONNX__TENSOR_PROTO__DATA_TYPE__INT8
#define U8 ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
#define I32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32

/* ---- models built here ---------------------------------------------------- */

/* An input of the node: the graph input (v NULL) or a constant
 * initializer holding v; an empty name is an absent optional input. */
typedef struct {
    const char *name;
    int type; /* an ONNX TensorProto data type */
    int nd;
    int64_t dims[4];
    const double *v;
} q_tensor;

#define MAXQ 9

/* The model y = op(ts...) at opset `ver` with attribute axis (unless
 * NO_AXIS) and nout outputs (y0, y1, ...), graph output `first` listed
 * first, written to the test's tmp folder; returns its path. */
static const char *quant_model(const char *op, int ver, int nin, const q_tensor *ts, int64_t axis,
                               int nout, int first) {
    Onnx__AttributeProto at = ONNX__ATTRIBUTE_PROTO__INIT, *ats[1] = {&at};
    at.name = "axis";
    at.has_type = 1;
    at.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    at.has_i = 1;
    at.i = axis;
    char *in[MAXQ], *out[3] = {"y0", "y1", "y2"};
    Onnx__NodeProto node = ONNX__NODE_PROTO__INIT;
    node.name = "q";
    node.op_type = (char *)op;
    node.n_input = (size_t)nin;
    node.input = in;
    node.n_output = (size_t)nout;
    node.output = out;
    node.n_attribute = axis == NO_AXIS ? 0 : 1;
    node.attribute = ats;
    Onnx__TensorProto inits[MAXQ], *initp[MAXQ];
    int32_t idata[MAXQ][16];
    float fdata[MAXQ][16];
    double ddata[MAXQ][16];
    Onnx__TensorShapeProto__Dimension dim[4], *dims[4];
    Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    Onnx__ValueInfoProto xv = ONNX__VALUE_INFO_PROTO__INIT, *inputs[1] = {&xv};
    size_t ninit = 0;
    for (int i = 0; i < nin; i++) {
        const q_tensor *t = &ts[i];
        in[i] = (char *)t->name;
        if (!t->name[0])
            continue;
        if (!t->v) { /* the graph input */
            for (int d = 0; d < t->nd; d++) {
                Onnx__TensorShapeProto__Dimension z = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
                dim[d] = z;
                dim[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dim[d].dim_value = t->dims[d];
                dims[d] = &dim[d];
            }
            shape.n_dim = (size_t)t->nd;
            shape.dim = dims;
            tt.has_elem_type = 1;
            tt.elem_type = t->type;
            tt.shape = &shape;
            type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
            type.tensor_type = &tt;
            xv.name = (char *)t->name;
            xv.type = &type;
            continue;
        }
        Onnx__TensorProto z = ONNX__TENSOR_PROTO__INIT, *w = &inits[ninit];
        *w = z;
        initp[ninit++] = w;
        w->name = (char *)t->name;
        w->has_data_type = 1;
        w->data_type = t->type;
        w->n_dims = (size_t)t->nd;
        w->dims = (int64_t *)t->dims;
        size_t cnt = 1;
        for (int d = 0; d < t->nd; d++)
            cnt *= (size_t)t->dims[d];
        for (size_t k = 0; k < cnt && k < 16; k++) {
            idata[i][k] = (int32_t)t->v[k];
            fdata[i][k] = (float)t->v[k];
            ddata[i][k] = t->v[k];
        }
        if (t->type == F32) {
            w->n_float_data = cnt;
            w->float_data = fdata[i];
        } else if (t->type == F64) {
            w->n_double_data = cnt;
            w->double_data = ddata[i];
        } else {
            w->n_int32_data = cnt;
            w->int32_data = idata[i];
        }
    }
    Onnx__ValueInfoProto yv[3], *outs[3];
    for (int k = 0; k < nout; k++) {
        Onnx__ValueInfoProto z = ONNX__VALUE_INFO_PROTO__INIT;
        yv[k] = z;
        yv[k].name = out[k];
    }
    for (int k = 0; k < nout; k++)
        outs[k] = &yv[k == 0 ? first : k == first ? 0 : k];
    return ou_write_model(ver, &node, ninit, initp, 1, inputs, (size_t)nout, outs, "quant.onnx");
}

/* ---- running them ------------------------------------------------------------ */

/* Import the model at path, run it on x (ts[0], holding xv) and check
 * that its first graph output is want[n] exactly, of dtype dt. */
static void expect_run(const char *path, const q_tensor *x, const double *xv, kiln_dtype dt,
                       int64_t n, const double *want, const char *what) {
    kiln_graph *g = kiln_onnx_import(path, NULL);
    if (!g)
        fprintf(stderr, "%s: %s\n", what, kiln_last_error());
    CHECK(g != NULL);
    if (!g)
        return;
    kiln_dtype xdt = x->type == F32  ? KILN_FLOAT32
                     : x->type == I8 ? KILN_INT8
                     : x->type == U8 ? KILN_UINT8
                                     : KILN_INT32;
    kiln_ndarray *a = kiln_ndarray_empty(xdt, x->nd, x->dims);
    void *d = kiln_ndarray_data(a);
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++) {
        if (xdt == KILN_FLOAT32)
            ((float *)d)[i] = (float)xv[i];
        else if (xdt == KILN_INT8)
            ((int8_t *)d)[i] = (int8_t)xv[i];
        else if (xdt == KILN_UINT8)
            ((uint8_t *)d)[i] = (uint8_t)xv[i];
        else
            ((int32_t *)d)[i] = (int32_t)xv[i];
    }
    const kiln_ndarray *xs[1] = {a};
    kiln_ndarray *r = gu_compile_run(g, NULL, 1, xs, NULL, NULL, 0);
    kiln_ndarray_free(a);
    kiln_graph_free(g);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_INT(kiln_ndarray_dtype(r), dt);
    CHECK_EQ_INT(kiln_ndarray_numel(r), n);
    for (int64_t i = 0; i < n && i < kiln_ndarray_numel(r); i++) {
        double got = tu_get(r, i);
        if (got != want[i]) {
            fprintf(stderr, "%s[%lld] = %g, want %g\n", what, (long long)i, got, want[i]);
            CHECK(got == want[i]);
            break;
        }
    }
    kiln_ndarray_free(r);
}

/* Importing the model at path fails with msg, naming node q and op. */
static void expect_error(const char *path, const char *op, const char *msg) {
    char node[96];
    snprintf(node, sizeof node, "node 'q' (%s): ", op);
    const char *parts[2] = {node, msg};
    ou_expect_import_error(path, 2, parts);
}

/* ---- values ------------------------------------------------------------------------ */

static void test_quantize_rounding(void) {
    /* int8, zero point 0: ties to even, saturation at both ends */
    static const double xv[8] = {0.5, 1.5, 2.5, -0.5, -1.5, 300, -300, 127.5};
    static const double one[1] = {1}, zero[1] = {0}, zp1[1] = {1};
    q_tensor ts[3] = {{"x", F32, 1, {8}, NULL}, {"s", F32, 0, {0}, one}, {"z", I8, 0, {0}, zero}};
    static const double want_i8[8] = {0, 2, 2, 0, -2, 127, -128, 127};
    expect_run(quant_model("QuantizeLinear", 13, 3, ts, NO_AXIS, 1, 0), &ts[0], xv, KILN_INT8, 8,
               want_i8, "int8");
    /* uint8, zero point 1: rounded first, then 1 added (2.5 -> 2 + 1) */
    ts[2] = (q_tensor){"z", U8, 1, {1}, zp1};
    static const double want_u8[8] = {1, 3, 3, 1, 0, 255, 0, 129};
    expect_run(quant_model("QuantizeLinear", 10, 3, ts, NO_AXIS, 1, 0), &ts[0], xv, KILN_UINT8, 8,
               want_u8, "uint8 zp 1");
    /* no zero point: uint8, zero point 0; scale 0.5 */
    static const double half[1] = {0.5};
    ts[1] = (q_tensor){"s", F32, 0, {0}, half};
    static const double want_none[8] = {1, 3, 5, 0, 0, 255, 0, 255};
    expect_run(quant_model("QuantizeLinear", 13, 2, ts, NO_AXIS, 1, 0), &ts[0], xv, KILN_UINT8, 8,
               want_none, "no zero point");
    /* an int32 x */
    static const double xi[4] = {-7, 5, 1000, 3};
    static const double two[1] = {2};
    q_tensor ti[3] = {{"x", I32, 1, {4}, NULL}, {"s", F32, 0, {0}, two}, {"z", I8, 0, {0}, zero}};
    static const double want_i32[4] = {-4, 2, 127, 2};
    expect_run(quant_model("QuantizeLinear", 13, 3, ti, NO_AXIS, 1, 0), &ti[0], xi, KILN_INT8, 4,
               want_i32, "int32 x");
}

static void test_per_axis(void) {
    static const double xv[6] = {1, 2, 3, 4, 5, 6};
    static const double s3[3] = {1, 2, 4}, z3[3] = {0, 10, 20};
    /* axis -1 of [2, 3]: per column */
    q_tensor ts[3] = {{"x", F32, 2, {2, 3}, NULL}, {"s", F32, 1, {3}, s3}, {"z", U8, 1, {3}, z3}};
    static const double want_q[6] = {1, 11, 21, 4, 12, 22};
    expect_run(quant_model("QuantizeLinear", 13, 3, ts, -1, 1, 0), &ts[0], xv, KILN_UINT8, 6,
               want_q, "quantize axis -1");
    /* DequantizeLinear, axis -2 of [3, 2]: per row */
    static const double qv[6] = {-1, 2, 3, -4, 127, -128};
    static const double zr[3] = {1, 0, -1};
    q_tensor td[3] = {{"x", I8, 2, {3, 2}, NULL}, {"s", F32, 1, {3}, s3}, {"z", I8, 1, {3}, zr}};
    static const double want_d[6] = {-2, 1, 6, -8, 512, -508};
    expect_run(quant_model("DequantizeLinear", 13, 3, td, -2, 1, 0), &td[0], qv, KILN_FLOAT32, 6,
               want_d, "dequantize axis -2");
}

static void test_dynamic_zero(void) {
    static const double xv[4] = {0, 0, 0, 0};
    q_tensor ts[1] = {{"x", F32, 1, {4}, NULL}};
    static const double want_y[4] = {0, 0, 0, 0}, want_s[1] = {1}, want_z[1] = {0};
    expect_run(quant_model("DynamicQuantizeLinear", 11, 1, ts, NO_AXIS, 3, 0), &ts[0], xv,
               KILN_UINT8, 4, want_y, "all-zero y");
    expect_run(quant_model("DynamicQuantizeLinear", 11, 1, ts, NO_AXIS, 3, 1), &ts[0], xv,
               KILN_FLOAT32, 1, want_s, "all-zero scale");
    expect_run(quant_model("DynamicQuantizeLinear", 11, 1, ts, NO_AXIS, 3, 2), &ts[0], xv,
               KILN_UINT8, 1, want_z, "all-zero zero point");
    /* only negative values: the range is [min, 0], zero point 255 */
    static const double neg[2] = {-2.55, -1};
    static const double want_n[2] = {0, 155};
    ts[0] = (q_tensor){"x", F32, 1, {2}, NULL};
    expect_run(quant_model("DynamicQuantizeLinear", 11, 1, ts, NO_AXIS, 3, 0), &ts[0], neg,
               KILN_UINT8, 2, want_n, "negative y");
}

/* QLinearMatMul of a [2, 2] by b [2, 2], a's and y's scales per row, b's
 * per column, an int8 y: (a - za)(b - zb) * sa * sb / sy + zy. */
static void test_qlinear_matmul_per_row(void) {
    static const double av[4] = {3, 4, 5, 6};
    static const double sa[2] = {1, 2}, za[2] = {1, 2}, b[4] = {1, 2, 3, 4}, sb[2] = {1, 0.5},
                        zb[2] = {0, 2}, sy[2] = {2, 4}, zy[2] = {-1, 1};
    q_tensor ts[8] = {{"a", U8, 2, {2, 2}, NULL}, {"sa", F32, 1, {2}, sa}, {"za", U8, 1, {2}, za},
                      {"b", U8, 2, {2, 2}, b},    {"sb", F32, 1, {2}, sb}, {"zb", U8, 1, {2}, zb},
                      {"sy", F32, 1, {2}, sy},    {"zy", I8, 1, {2}, zy}};
    /* a - za = [[2, 3], [3, 4]]; b - zb = [[1, 0], [3, 2]]; C = [[11, 6], [15, 8]];
     * multipliers [[1/2, 1/4], [1/2, 1/4]]: [[5.5, 1.5], [7.5, 2]] + zy
     * [[-1], [1]] = [[4.5, 0.5], [8.5, 3]], rounded to even */
    static const double want[4] = {4, 0, 8, 3};
    expect_run(quant_model("QLinearMatMul", 10, 8, ts, NO_AXIS, 1, 0), &ts[0], av, KILN_INT8, 4,
               want, "qlinearmatmul per row");
}

/* QLinearConv, 1-D, of x [1, 1, 3] by w [2, 1, 1] with w's scale per
 * output channel and a bias: (conv(x - zx, w - zw) + B) * sx * sw / sy
 * + zy, with two ties. */
static void test_qlinear_conv_per_channel(void) {
    static const double xv[3] = {10, 20, 30};
    static const double sx[1] = {0.5}, zx[1] = {10}, w[2] = {1, -2}, sw[2] = {1, 0.5},
                        zw[2] = {0, 0}, sy[1] = {2}, zy[1] = {100}, b[2] = {4, -4};
    q_tensor ts[9] = {
        {"x", U8, 3, {1, 1, 3}, NULL}, {"sx", F32, 0, {0}, sx}, {"zx", U8, 0, {0}, zx},
        {"w", I8, 3, {2, 1, 1}, w},    {"sw", F32, 1, {2}, sw}, {"zw", I8, 1, {2}, zw},
        {"sy", F32, 0, {0}, sy},       {"zy", U8, 0, {0}, zy},  {"b", I32, 1, {2}, b}};
    /* x - zx = [0, 10, 20]; channel 0: ([0, 10, 20] + 4) / 4 + 100 = [101, 103.5, 106];
     * channel 1: (-2 [0, 10, 20] - 4) / 8 + 100 = [99.5, 97, 94.5] */
    static const double want[6] = {101, 104, 106, 100, 97, 94};
    expect_run(quant_model("QLinearConv", 10, 9, ts, NO_AXIS, 1, 0), &ts[0], xv, KILN_UINT8, 6,
               want, "qlinearconv per channel");
    /* x's scale per channel is not allowed */
    ts[1] = (q_tensor){"sx", F32, 1, {2}, sw};
    ts[2] = (q_tensor){"zx", U8, 1, {2}, zw};
    expect_error(quant_model("QLinearConv", 10, 9, ts, NO_AXIS, 1, 0), "QLinearConv, opset 10",
                 "a scale must have one element, not 2");
}

/* ---- errors ---------------------------------------------------------------------- */

static void test_errors(void) {
    static const double one[1] = {1}, s2[2] = {1, 2}, z2[2] = {0, 0}, zero[1] = {0};
    q_tensor ts[3] = {{"x", F32, 2, {2, 3}, NULL}, {"s", F32, 1, {2}, s2}, {"z", U8, 1, {2}, z2}};
    expect_error(quant_model("QuantizeLinear", 13, 3, ts, 1, 1, 0), "QuantizeLinear, opset 13",
                 "the scale has 2 elements; dim 1 of x must have as many");
    expect_error(quant_model("QuantizeLinear", 13, 3, ts, 2, 1, 0), "QuantizeLinear, opset 13",
                 "attribute 'axis' = 2 is out of range for a 2-D input");
    expect_error(quant_model("QuantizeLinear", 13, 3, ts, -3, 1, 0), "QuantizeLinear, opset 13",
                 "attribute 'axis' = -3 is out of range for a 2-D input");
    expect_error(quant_model("QuantizeLinear", 10, 3, ts, NO_AXIS, 1, 0),
                 "QuantizeLinear, opset 10", "the scale must have one element before opset 13");
    ts[2] = (q_tensor){"z", U8, 0, {0}, zero};
    expect_error(quant_model("QuantizeLinear", 13, 3, ts, 0, 1, 0), "QuantizeLinear, opset 13",
                 "the zero point has 1 elements; its scale has 2");
    ts[1] = (q_tensor){"s", F64, 0, {0}, one};
    expect_error(quant_model("QuantizeLinear", 13, 3, ts, NO_AXIS, 1, 0),
                 "QuantizeLinear, opset 13", "a scale must be float32, not float64");
    ts[1] = (q_tensor){"s", F32, 0, {0}, one};
    ts[2] = (q_tensor){"z", I32, 0, {0}, zero};
    expect_error(quant_model("QuantizeLinear", 13, 3, ts, NO_AXIS, 1, 0),
                 "QuantizeLinear, opset 13", "the zero point must be int8 or uint8, not int32");
    ts[1] = (q_tensor){"s", F32, 2, {1, 1}, one};
    expect_error(quant_model("QuantizeLinear", 13, 2, ts, NO_AXIS, 1, 0),
                 "QuantizeLinear, opset 13", "the scale must be a scalar or a 1-D tensor");
    q_tensor td[3] = {{"x", I8, 1, {3}, NULL}, {"s", F32, 0, {0}, one}, {"z", U8, 0, {0}, zero}};
    expect_error(quant_model("DequantizeLinear", 13, 3, td, NO_AXIS, 1, 0),
                 "DequantizeLinear, opset 13", "the zero point must be int8 like x");
    td[0] = (q_tensor){"x", F32, 1, {3}, NULL};
    expect_error(quant_model("DequantizeLinear", 13, 2, td, NO_AXIS, 1, 0),
                 "DequantizeLinear, opset 13", "x must be int8, uint8 or int32, not float32");
    q_tensor tq[1] = {{"x", I8, 1, {3}, NULL}};
    expect_error(quant_model("DynamicQuantizeLinear", 11, 1, tq, NO_AXIS, 3, 0),
                 "DynamicQuantizeLinear, opset 11", "x must be float32, not int8");
    /* QLinearMatMul: b's zero point per row instead of per column */
    static const double z3[3] = {0, 0, 0}, s3[3] = {1, 1, 1}, b6[6] = {0};
    q_tensor tm[8] = {{"a", U8, 2, {2, 3}, NULL}, {"sa", F32, 0, {0}, one},
                      {"za", U8, 0, {0}, zero},   {"b", U8, 2, {3, 2}, b6},
                      {"sb", F32, 1, {3}, s3},    {"zb", U8, 1, {3}, z3},
                      {"sy", F32, 0, {0}, one},   {"zy", U8, 0, {0}, zero}};
    expect_error(quant_model("QLinearMatMul", 10, 8, tm, NO_AXIS, 1, 0), "QLinearMatMul, opset 10",
                 "a scale has 3 elements, not 1 or 2");
}

TEST_MAIN(TEST(test_quantize_rounding), TEST(test_per_axis), TEST(test_dynamic_zero),
          TEST(test_qlinear_matmul_per_row), TEST(test_qlinear_conv_per_channel), TEST(test_errors))
