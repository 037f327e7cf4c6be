/* onnx_table.c: the ONNX converter table, one row per ONNX op type of the
 * default domain. This is the one place the importer maps ONNX ops.
 *
 * Adding a row. An ONNX op that is one kiln op taking the node's inputs in
 * the same order needs only its row:
 *
 *     {"HardSwish", 14, "nn.hard_swish", NULL, NULL},
 *
 * op_type; the first opset whose semantics the row handles (older models
 * are told the op is not supported); the kiln op (its row in src/ops); the
 * ONNX attributes passed on, as "onnx_name[:kiln_name]=default, ..." where
 * the default (text syntax) is ONNX's, used when the node omits the
 * attribute; NULL for the converter. Anything else (attributes turned into
 * other attributes or inputs, several kiln ops, inputs that must be
 * constant) is a converter function (imp_convert_fn, declared in
 * onnx_convert.h, in onnx_convert.c or onnx_convert_nn.c by family) named
 * in the last field, with NULL for the kiln op:
 *
 *     {"Gemm", 7, NULL, NULL, cvt_gemm},
 *
 * Rows are kept in the order of the families below. A call on constant
 * inputs folds as it is added, so no row needs a folding case. */
#include <stdio.h>
#include <string.h>

#include "onnx_convert.h"

static const imp_converter g_table[] = {
    /* unary elementwise */
    {"Relu", 1, "nn.relu", NULL, NULL},
    {"Sigmoid", 1, "sigmoid", NULL, NULL},
    {"Tanh", 1, "tanh", NULL, NULL},
    {"Exp", 1, "exp", NULL, NULL},
    {"Log", 1, "log", NULL, NULL},
    {"Sqrt", 1, "sqrt", NULL, NULL},
    {"Neg", 1, "negative", NULL, NULL},
    {"Abs", 1, "abs", NULL, NULL},
    {"Erf", 9, "erf", NULL, NULL},
    {"Floor", 1, "floor", NULL, NULL},
    {"Ceil", 1, "ceil", NULL, NULL},
    {"Round", 11, "round", NULL, NULL},
    {"Not", 1, "logical_not", NULL, NULL},
    {"Reciprocal", 6, "reciprocal", NULL, NULL},
    {"Sign", 9, "sign", NULL, NULL},
    {"Softplus", 1, "nn.softplus", NULL, NULL},
    {"Softsign", 1, "nn.softsign", NULL, NULL},
    {"LeakyRelu", 6, "nn.leaky_relu", "alpha=0.01", NULL},
    {"Elu", 6, "nn.elu", "alpha=1.0", NULL},
    {"Selu", 6, "nn.selu", "alpha=1.67326319217681884765625, gamma=1.05070102214813232421875",
     NULL},
    {"Clip", 6, NULL, NULL, cvt_clip},
    {"PRelu", 7, NULL, NULL, cvt_prelu},
    {"HardSigmoid", 6, NULL, NULL, cvt_hard_sigmoid},
    {"HardSwish", 14, "nn.hard_swish", NULL, NULL},
    {"Cast", 6, NULL, NULL, cvt_cast},
    {"Identity", 1, NULL, NULL, cvt_identity},
    {"Dropout", 7, NULL, NULL, cvt_identity},
    /* binary (numpy broadcasting) and variadic */
    {"Add", 7, "add", NULL, NULL},
    {"Sub", 7, "subtract", NULL, NULL},
    {"Mul", 7, "multiply", NULL, NULL},
    {"Div", 7, "divide", NULL, NULL},
    {"Equal", 7, "equal", NULL, NULL},
    {"Less", 7, "less", NULL, NULL},
    {"Greater", 7, "greater", NULL, NULL},
    {"LessOrEqual", 12, "less_equal", NULL, NULL},
    {"GreaterOrEqual", 12, "greater_equal", NULL, NULL},
    {"And", 7, "logical_and", NULL, NULL},
    {"Or", 7, "logical_or", NULL, NULL},
    {"Where", 9, "where", NULL, NULL},
    {"Pow", 7, NULL, NULL, cvt_power},
    {"Max", 8, NULL, NULL, cvt_variadic},
    {"Min", 8, NULL, NULL, cvt_variadic},
    {"Sum", 8, NULL, NULL, cvt_variadic},
    {"Mean", 8, NULL, NULL, cvt_mean},
    /* constants and shapes */
    {"Constant", 9, NULL, NULL, cvt_constant},
    {"Shape", 1, NULL, NULL, cvt_shape},
    {"Size", 1, NULL, NULL, cvt_size},
    {"ConstantOfShape", 9, NULL, NULL, cvt_constant_of_shape},
    {"Gather", 1, NULL, NULL, cvt_gather},
    {"Concat", 4, NULL, NULL, cvt_concat},
    {"Reshape", 5, NULL, NULL, cvt_reshape},
    {"Flatten", 1, NULL, NULL, cvt_flatten},
    {"Unsqueeze", 1, NULL, NULL, cvt_unsqueeze},
    {"Squeeze", 1, NULL, NULL, cvt_squeeze},
    {"Slice", 1, NULL, NULL, cvt_slice},
    {"Expand", 8, NULL, NULL, cvt_expand},
    {"Pad", 2, NULL, NULL, cvt_pad},
    {"Transpose", 1, NULL, NULL, cvt_transpose},
    {"Split", 2, NULL, NULL, cvt_split},
    /* reductions */
    {"ReduceSum", 1, NULL, NULL, cvt_reduce},
    {"ReduceMean", 1, NULL, NULL, cvt_reduce},
    {"ReduceMax", 1, NULL, NULL, cvt_reduce},
    {"ReduceMin", 1, NULL, NULL, cvt_reduce},
    {"ReduceProd", 1, NULL, NULL, cvt_reduce},
    {"ReduceL1", 1, NULL, NULL, cvt_reduce},
    {"ReduceL2", 1, NULL, NULL, cvt_reduce},
    {"ReduceLogSum", 1, NULL, NULL, cvt_reduce},
    {"ReduceLogSumExp", 1, NULL, NULL, cvt_reduce},
    {"ReduceSumSquare", 1, NULL, NULL, cvt_reduce},
    {"ArgMax", 1, NULL, NULL, cvt_arg_reduce},
    {"ArgMin", 1, NULL, NULL, cvt_arg_reduce},
    /* normalization */
    {"Softmax", 1, NULL, NULL, cvt_softmax},
    {"LogSoftmax", 1, NULL, NULL, cvt_softmax},
    {"LayerNormalization", 17, NULL, NULL, cvt_layer_norm},
    {"BatchNormalization", 7, NULL, NULL, cvt_batch_norm},
    /* convolution, pooling, matmul */
    {"Conv", 1, NULL, NULL, cvt_conv},
    {"MaxPool", 1, NULL, NULL, cvt_pool},
    {"AveragePool", 7, NULL, NULL, cvt_pool},
    {"GlobalAveragePool", 1, NULL, NULL, cvt_global_pool},
    {"GlobalMaxPool", 1, NULL, NULL, cvt_global_pool},
    {"Gemm", 7, NULL, NULL, cvt_gemm},
    {"MatMul", 1, NULL, NULL, cvt_matmul},
};

#define NROWS (sizeof g_table / sizeof g_table[0])

const imp_converter *imp_find_converter(const char *op_type) {
    for (size_t i = 0; i < NROWS; i++)
        if (strcmp(g_table[i].op_type, op_type) == 0)
            return &g_table[i];
    return NULL;
}

/* The attribute text of a plain row: each listed ONNX attribute under its
 * kiln name, the node's value or the row's default. */
static int row_attrs(imp *I, const Onnx__NodeProto *n, const char *spec, kstr *out) {
    for (const char *p = spec; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *eq = strchr(p, '='), *end = eq ? strchr(eq, ',') : NULL;
        if (!eq)
            return imp_fail(I, n, "internal: bad attribute list '%s' in the table", spec);
        if (!end)
            end = eq + strlen(eq);
        char onnx_name[64], kiln_name[64];
        const char *colon = memchr(p, ':', (size_t)(eq - p));
        int len = (int)((colon ? colon : eq) - p);
        snprintf(onnx_name, sizeof onnx_name, "%.*s", len, p);
        if (colon)
            snprintf(kiln_name, sizeof kiln_name, "%.*s", (int)(eq - colon - 1), colon + 1);
        else
            snprintf(kiln_name, sizeof kiln_name, "%s", onnx_name);
        const Onnx__AttributeProto *a = imp_attr(n, onnx_name);
        kstr_printf(out, "%s%s=", out->len ? ", " : "", kiln_name);
        if (a && a->has_f)
            kstr_printf(out, "%.9gf", a->f);
        else if (a && a->has_i)
            kstr_printf(out, "%lld", (long long)a->i);
        else if (a)
            return imp_fail(I, n, "attribute '%s' must be a float or an int", onnx_name);
        else
            kstr_printf(out, "%.*s", (int)(end - eq - 1), eq + 1);
        p = end;
    }
    return 0;
}

int imp_convert(imp *I, const Onnx__NodeProto *n, const imp_converter *c, int *outs) {
    if (c->convert)
        return c->convert(I, n, outs);
    int k = imp_ninputs(n), in[16];
    if (k > 16)
        return imp_fail(I, n, "too many inputs (%d)", k);
    for (int i = 0; i < k; i++)
        in[i] = imp_input(I, n, i);
    kstr a;
    kstr_init(&a);
    if (row_attrs(I, n, c->attrs, &a) < 0) {
        kstr_free(&a);
        return -1;
    }
    outs[0] = imp_call(I, n, c->op, k, in, a.buf);
    kstr_free(&a);
    return outs[0];
}
