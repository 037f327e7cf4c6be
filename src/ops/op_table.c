/* op_table.c: the op table, data in one place. One row per op: its
 * Relay-style name, arity, attribute schema, type relation and fusion
 * pattern. Computes are added by the op library as it grows; a row whose
 * compute is NULL type-checks but cannot be lowered yet, and lowering says
 * so by name. The registry starts from this table; plugins add rows to it
 * through the same struct. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"
#include "relations.h"

#define MAXIN 4096

/* ---- attribute schemas ----------------------------------------------------- */

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};

/* the rows every convolution has */
#define CONV_ATTRS                                                                            \
    {"strides", GA_INTS, 0, "[1, 1]"}, {"padding", GA_INTS, 0, "[0, 0, 0, 0]"},                 \
        {"dilation", GA_INTS, 0, "[1, 1]"}, {"groups", GA_INT, 0, "1"},                        \
        {"channels", GA_INT, 0, NULL}, {"kernel_size", GA_INTS, 0, NULL}
/* ... and the blocked ones' layouts */
#define CONV_NCHWC_ATTRS                                                                      \
    CONV_ATTRS, {"data_layout", GA_STR, 1, NULL}, {"kernel_layout", GA_STR, 0, NULL},          \
        {"out_layout", GA_STR, 1, NULL}

static const attr_schema conv2d_attrs[] = {CONV_ATTRS,
                                           {"data_layout", GA_STR, 0, "\"NCHW\""},
                                           {"kernel_layout", GA_STR, 0, "\"OIHW\""},
                                           {NULL, 0, 0, NULL}};

static const attr_schema conv2d_nchwc_attrs[] = {CONV_NCHWC_ATTRS, {NULL, 0, 0, NULL}};

static const attr_schema conv2d_winograd_attrs[] = {
    {"tile_size", GA_INT, 1, NULL}, CONV_NCHWC_ATTRS, {NULL, 0, 0, NULL}};

static const attr_schema layout_transform_attrs[] = {{"src_layout", GA_STR, 1, NULL},
                                                     {"dst_layout", GA_STR, 1, NULL},
                                                     {"channels", GA_INT, 0, "0"},
                                                     {NULL, 0, 0, NULL}};

static const attr_schema pool2d_attrs[] = {
    {"pool_size", GA_INTS, 1, NULL},
    {"strides", GA_INTS, 0, "[1, 1]"},
    {"padding", GA_INTS, 0, "[0, 0, 0, 0]"},
    {"dilation", GA_INTS, 0, "[1, 1]"},
    {"ceil_mode", GA_INT, 0, "0"},
    {"count_include_pad", GA_INT, 0, "0"},
    {"layout", GA_STR, 0, "\"NCHW\""},
    {NULL, 0, 0, NULL}};

static const attr_schema global_pool_attrs[] = {{"layout", GA_STR, 0, "\"NCHW\""},
                                                {NULL, 0, 0, NULL}};
static const attr_schema dense_attrs[] = {{"units", GA_INT, 0, NULL},
                                          {"weight_layout", GA_STR, 0, "\"NK\""},
                                          {NULL, 0, 0, NULL}};
static const attr_schema axis1_attrs[] = {{"axis", GA_INT, 0, "1"}, {NULL, 0, 0, NULL}};
static const attr_schema axis0_attrs[] = {{"axis", GA_INT, 0, "0"}, {NULL, 0, 0, NULL}};
static const attr_schema softmax_attrs[] = {{"axis", GA_INT, 0, "-1"}, {NULL, 0, 0, NULL}};
static const attr_schema batch_norm_attrs[] = {{"axis", GA_INT, 0, "1"},
                                               {"epsilon", GA_FLOAT, 0, "1e-05"},
                                               {"center", GA_INT, 0, "1"},
                                               {"scale", GA_INT, 0, "1"},
                                               {NULL, 0, 0, NULL}};
static const attr_schema clip_attrs[] = {{"a_min", GA_FLOAT, 1, NULL},
                                         {"a_max", GA_FLOAT, 1, NULL},
                                         {NULL, 0, 0, NULL}};
static const attr_schema leaky_attrs[] = {{"alpha", GA_FLOAT, 0, "0.01"}, {NULL, 0, 0, NULL}};
static const attr_schema cast_attrs[] = {{"dtype", GA_STR, 1, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema reshape_attrs[] = {{"newshape", GA_INTS, 1, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema transpose_attrs[] = {{"axes", GA_INTS, 0, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema split_attrs[] = {{"indices_or_sections", GA_INTS, 1, NULL},
                                          {"axis", GA_INT, 0, "0"},
                                          {NULL, 0, 0, NULL}};

static const attr_schema reduce_attrs[] = {{"axis", GA_INTS, 0, NULL},
                                           {"keepdims", GA_INT, 0, "0"},
                                           {"exclude", GA_INT, 0, "0"},
                                           {NULL, 0, 0, NULL}};
static const attr_schema arg_reduce_attrs[] = {{"axis", GA_INT, 0, "0"},
                                               {"keepdims", GA_INT, 0, "1"},
                                               {"select_last_index", GA_INT, 0, "0"},
                                               {NULL, 0, 0, NULL}};
static const attr_schema layer_norm_attrs[] = {{"axis", GA_INT, 0, "-1"},
                                               {"epsilon", GA_FLOAT, 0, "1e-05"},
                                               {NULL, 0, 0, NULL}};
static const attr_schema batch_matmul_attrs[] = {{"transpose_a", GA_INT, 0, "0"},
                                                 {"transpose_b", GA_INT, 0, "0"},
                                                 {NULL, 0, 0, NULL}};
static const attr_schema strided_slice_attrs[] = {{"begin", GA_INTS, 1, NULL},
                                                  {"end", GA_INTS, 1, NULL},
                                                  {"strides", GA_INTS, 0, NULL},
                                                  {"axes", GA_INTS, 0, NULL},
                                                  {NULL, 0, 0, NULL}};
static const attr_schema broadcast_to_attrs[] = {{"shape", GA_INTS, 1, NULL}, {NULL, 0, 0, NULL}};
static const attr_schema pad_attrs[] = {{"pad_width", GA_INTS, 1, NULL},
                                        {"pad_value", GA_FLOAT, 0, "0"},
                                        {"pad_mode", GA_STR, 0, "\"constant\""},
                                        {NULL, 0, 0, NULL}};
static const attr_schema elu_attrs[] = {{"alpha", GA_FLOAT, 0, "1"}, {NULL, 0, 0, NULL}};
static const attr_schema selu_attrs[] = {{"alpha", GA_FLOAT, 0, "1.67326319"},
                                         {"gamma", GA_FLOAT, 0, "1.05070102"},
                                         {NULL, 0, 0, NULL}};

/* ---- the table ------------------------------------------------------------- */

#define UNARY(nm, rel, sum) {nm, 1, 1, no_attrs, rel, OP_ELEMWISE, compute_unary, sum}
#define BINARY(nm, rel, sum) {nm, 2, 2, no_attrs, rel, OP_BROADCAST, compute_binary, sum}
#define REDUCE(nm, sum) {nm, 1, 1, reduce_attrs, rel_reduce, OP_COMM_REDUCE, compute_reduce, sum}

static const kiln_op_def g_table[] = {
    /* elementwise */
    UNARY("nn.relu", rel_identity, "max(x, 0)"),
    UNARY("negative", rel_identity, "-x"),
    UNARY("abs", rel_identity, "|x|"),
    UNARY("exp", rel_float_unary, "e^x"),
    UNARY("log", rel_float_unary, "natural logarithm"),
    UNARY("sqrt", rel_float_unary, "square root"),
    UNARY("rsqrt", rel_float_unary, "1 / sqrt(x)"),
    UNARY("sigmoid", rel_float_unary, "1 / (1 + e^-x)"),
    UNARY("tanh", rel_float_unary, "hyperbolic tangent"),
    UNARY("erf", rel_float_unary, "error function"),
    UNARY("floor", rel_float_unary, "round down"),
    UNARY("ceil", rel_float_unary, "round up"),
    UNARY("round", rel_float_unary, "round half to even"),
    UNARY("logical_not", rel_logic, "!x"),
    UNARY("reciprocal", rel_float_unary, "1 / x"),
    UNARY("sign", rel_identity, "-1, 0 or 1"),
    UNARY("nn.softplus", rel_float_unary, "log(1 + e^x)"),
    UNARY("nn.softsign", rel_float_unary, "x / (1 + |x|)"),
    {"nn.elu", 1, 1, elu_attrs, rel_float_unary, OP_ELEMWISE, compute_unary, "x <= 0 ? alpha*(e^x - 1) : x"},
    {"nn.selu", 1, 1, selu_attrs, rel_float_unary, OP_ELEMWISE, compute_unary,
     "gamma * (x <= 0 ? alpha*(e^x - 1) : x)"},
    {"clip", 1, 1, clip_attrs, rel_identity, OP_ELEMWISE, compute_unary, "min(max(x, a_min), a_max)"},
    {"nn.leaky_relu", 1, 1, leaky_attrs, rel_identity, OP_ELEMWISE, compute_unary, "x < 0 ? alpha*x : x"},
    {"cast", 1, 1, cast_attrs, rel_cast, OP_ELEMWISE, compute_unary, "convert to dtype"},
    /* broadcasting */
    BINARY("add", rel_broadcast, "a + b"),
    BINARY("subtract", rel_broadcast, "a - b"),
    BINARY("multiply", rel_broadcast, "a * b"),
    BINARY("divide", rel_broadcast, "a / b"),
    BINARY("power", rel_broadcast, "a ^ b"),
    BINARY("maximum", rel_broadcast, "max(a, b)"),
    BINARY("minimum", rel_broadcast, "min(a, b)"),
    BINARY("equal", rel_compare, "a == b"),
    BINARY("less", rel_compare, "a < b"),
    BINARY("greater", rel_compare, "a > b"),
    BINARY("not_equal", rel_compare, "a != b"),
    BINARY("less_equal", rel_compare, "a <= b"),
    BINARY("greater_equal", rel_compare, "a >= b"),
    BINARY("logical_and", rel_logic, "a && b"),
    BINARY("logical_or", rel_logic, "a || b"),
    {"where", 3, 3, no_attrs, rel_where, OP_BROADCAST, compute_where, "cond ? a : b"},
    {"nn.bias_add", 2, 2, axis1_attrs, rel_bias_add, OP_BROADCAST, compute_bias_add, "x + bias on axis"},
    /* nn */
    {"nn.conv2d", 2, 2, conv2d_attrs, rel_conv2d, OP_OUT_ELEMWISE_FUSABLE, compute_conv2d,
     "2-D convolution, NCHW x OIHW"},
    {"nn.contrib_conv2d_NCHWc", 2, 2, conv2d_nchwc_attrs, rel_conv2d_nchwc,
     OP_OUT_ELEMWISE_FUSABLE, compute_conv2d_nchwc,
     "2-D convolution in NCHW[x]c x OIHW[x]i[y]o (AlterOpLayout makes it)", NULL,
     schedule_conv2d_nchwc},
    {"nn.contrib_conv2d_winograd_NCHWc", 2, 2, conv2d_winograd_attrs, rel_conv2d_winograd_nchwc,
     OP_OUT_ELEMWISE_FUSABLE, compute_conv2d_winograd_nchwc,
     "3x3 stride-1 convolution by Winograd F(m x m, 3 x 3), NCHW[x]c, kernel pre-transformed "
     "(AlterOpLayout makes it)",
     NULL, schedule_conv2d_winograd},
    {"nn.dense", 2, 2, dense_attrs, rel_dense, OP_OUT_ELEMWISE_FUSABLE, compute_dense,
     "x * W^T, W is [units, in] (weight_layout NK; KN and packed NC[x]n too)", NULL,
     schedule_dense},
    {"nn.max_pool2d", 1, 1, pool2d_attrs, rel_pool2d, OP_OUT_ELEMWISE_FUSABLE, compute_pool2d,
     "2-D max pooling", NULL, schedule_pool2d_nchwc},
    {"nn.avg_pool2d", 1, 1, pool2d_attrs, rel_pool2d, OP_OUT_ELEMWISE_FUSABLE, compute_pool2d,
     "2-D average pooling"},
    {"nn.global_avg_pool2d", 1, 1, global_pool_attrs, rel_global_pool2d, OP_OUT_ELEMWISE_FUSABLE,
     compute_global_pool2d, "mean over the spatial dims"},
    {"nn.global_max_pool2d", 1, 1, global_pool_attrs, rel_global_pool2d, OP_OUT_ELEMWISE_FUSABLE,
     compute_global_pool2d, "max over the spatial dims"},
    {"nn.softmax", 1, 1, softmax_attrs, rel_softmax, OP_OPAQUE, compute_softmax, "softmax over axis",
     NULL, schedule_softmax},
    {"nn.log_softmax", 1, 1, softmax_attrs, rel_softmax, OP_OPAQUE, compute_softmax,
     "log of softmax over axis"},
    {"nn.batch_matmul", 2, 2, batch_matmul_attrs, rel_batch_matmul, OP_OUT_ELEMWISE_FUSABLE,
     compute_batch_matmul, "numpy matmul: [..., M, K] x [..., K, N], batch dims broadcast",
     NULL, schedule_dense},
    {"nn.layer_norm", 1, 3, layer_norm_attrs, rel_layer_norm, OP_OPAQUE, compute_layer_norm,
     "normalize over dims axis.. (data, gamma, beta)", NULL, schedule_layer_norm},
    {"nn.batch_norm", 5, 5, batch_norm_attrs, rel_batch_norm, OP_OPAQUE, compute_batch_norm,
     "inference batch norm (data, gamma, beta, mean, var)"},
    /* layout */
    {"reshape", 1, 1, reshape_attrs, rel_reshape, OP_INJECTIVE, compute_reshape, "new shape (0 copies, -1 infers)"},
    {"layout_transform", 1, 1, layout_transform_attrs, rel_layout_transform, OP_INJECTIVE,
     compute_layout_transform, "NCHW <-> NCHW[x]c; a last block past `channels` is zeros"},
    {"transpose", 1, 1, transpose_attrs, rel_transpose, OP_INJECTIVE, compute_transpose, "permute axes"},
    {"nn.batch_flatten", 1, 1, no_attrs, rel_batch_flatten, OP_INJECTIVE, compute_reshape,
     "[N, ...] -> [N, rest]"},
    {"concatenate", 1, MAXIN, axis0_attrs, rel_concatenate, OP_INJECTIVE, compute_concatenate,
     "join along axis"},
    {"split", 1, 1, split_attrs, rel_split, OP_INJECTIVE, compute_split, "split along axis (a tuple)"},
    {"strided_slice", 1, 1, strided_slice_attrs, rel_strided_slice, OP_INJECTIVE,
     compute_strided_slice, "x[begin:end:strides] on axes (numpy clamping)"},
    {"take", 2, 2, axis0_attrs, rel_take, OP_INJECTIVE, compute_take,
     "gather along axis; negative indices count from the end"},
    {"broadcast_to", 1, 1, broadcast_to_attrs, rel_broadcast_to, OP_BROADCAST, compute_broadcast_to,
     "broadcast to shape"},
    {"nn.pad", 1, 1, pad_attrs, rel_pad, OP_INJECTIVE, compute_pad,
     "pad_width [before0, after0, ...]; constant, edge or reflect"},
    /* reductions */
    REDUCE("sum", "sum over axis"),
    REDUCE("mean", "mean over axis"),
    REDUCE("max", "max over axis"),
    REDUCE("min", "min over axis"),
    REDUCE("prod", "product over axis"),
    {"argmax", 1, 1, arg_reduce_attrs, rel_arg_reduce, OP_COMM_REDUCE, compute_arg_reduce,
     "index of the max along axis (int64)"},
    {"argmin", 1, 1, arg_reduce_attrs, rel_arg_reduce, OP_COMM_REDUCE, compute_arg_reduce,
     "index of the min along axis (int64)"},
};

int ops_builtin_count(void) { return (int)(sizeof g_table / sizeof g_table[0]); }

const kiln_op_def *ops_builtin(int i) {
    return i >= 0 && i < ops_builtin_count() ? &g_table[i] : NULL;
}

/* ---- the registry ---------------------------------------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static kiln_op_registry g_registry;

static void registry_init(void) {
    for (int i = 0; i < ops_builtin_count(); i++)
        KILN_ASSERT(op_registry_add(&g_registry, &g_table[i]) == KILN_OK);
}

kiln_op_registry *ops_default_registry(void) {
    pthread_once(&g_once, registry_init);
    return &g_registry;
}

kiln_graph *kiln_graph_new(void) { return graph_new(ops_default_registry()); }

kiln_graph *kiln_graph_parse(const char *text, const kiln_npz *constants) {
    if (!text) {
        kiln_set_error(KILN_ERR_INVALID, "graph text is NULL");
        return NULL;
    }
    return graph_parse(text, constants, ops_default_registry());
}
