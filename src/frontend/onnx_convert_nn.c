/* onnx_convert_nn.c: the ONNX converters of reductions (Reduce*, ArgMax),
 * normalization (BatchNormalization, LayerNormalization, InstanceNormalization,
 * MeanVarianceNormalization), the losses (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss), Gemm, MatMul and MatMulInteger, Softmax,
 * Transpose and Split (convolutions and pooling are in onnx_convert_conv.c).
 * The converter table is in onnx_table.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_convert.h"

/* ---- reductions ------------------------------------------------------------------- */

/* Reduce*: sum, mean, max, min, prod, and the composites (L1, L2, LogSum,
 * LogSumExp, SumSquare) over constant axes; ReduceSum from opset 13 also
 * over axes known only when the package runs (reduce_sum_run_time). */
static int reduce_of(imp *I, const Onnx__NodeProto *n, const char *op, int x, const char *attrs) {
    return x < 0 ? -1 : imp_call(I, n, op, 1, &x, attrs);
}

/* ReduceSum over axes that are a value when the package runs (na >= 1 of
 * them, a length known at compile time): sum(x, bind_dims(reduce_dims(x,
 * axes))) gives the keepdims dims, and without keepdims a reshape to the
 * dims not reduced (a second binder; none are left when na is the rank).
 * Axes out of range or given twice fail the run, naming the binder. */
static int reduce_sum_run_time(imp *I, const Onnx__NodeProto *n, int x, int na, int ndim) {
    int in[2] = {x, imp_input(I, n, 1)};
    int keep = imp_attr_int(I, n, "keepdims", 1) != 0;
    int dims = cvt_bind_dims(I, n, imp_call(I, n, "reduce_dims", 2, in, "keepdims=1"));
    int kept = -1;
    if (!keep && na < ndim) {
        kept = cvt_bind_dims(I, n, imp_call(I, n, "reduce_dims", 2, in, "keepdims=0"));
    } else if (!keep) { /* every dim reduced: a scalar */
        int64_t zero = 0;
        kiln_ndarray *none = kiln_ndarray_empty(KILN_INT64, 1, &zero);
        kept = none ? imp_add_const(I, n->name, none) : imp_fail(I, n, "%s", kiln_last_error());
    }
    if (dims < 0 || (!keep && kept < 0))
        return -1;
    in[1] = dims;
    int y = imp_call(I, n, "sum", 2, in, "");
    if (keep || y < 0)
        return y;
    int args[2] = {y, kept};
    return imp_call(I, n, "reshape", 2, args, "");
}

int cvt_reduce(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t axes[MAXD];
    int na;
    if (!strcmp(n->op_type, "ReduceSum") && I->opset >= 13) {
        na = cvt_const_ints(I, n, 1, axes);
        const gtensor_type *at = na == -2 ? imp_type(I, imp_input(I, n, 1)) : NULL;
        if (na == -2 && (!at || at->ndim != 1 || at->dims[0].sym || at->dims[0].v > t->ndim))
            return imp_fail(I, n,
                            "the axes must be a constant or a vector of at most %d values "
                            "(the data's rank) of a length known at compile time",
                            t->ndim);
        if (na == -2 && at->dims[0].v > 0)
            return outs[0] = reduce_sum_run_time(I, n, x, (int)at->dims[0].v, t->ndim);
        if (na == -2)
            na = 0; /* no axes: a length of 0 needs no values */
    } else {
        na = imp_attr_ints(I, n, "axes", axes, MAXD);
    }
    if (na <= 0 && imp_attr_int(I, n, "noop_with_empty_axes", 0))
        return outs[0] = x;
    kstr a;
    kstr_init(&a);
    if (na > 0)
        cvt_ints_attr(&a, "axis", na, axes);
    kstr_printf(&a, "%skeepdims=%d", a.len ? ", " : "", imp_attr_int(I, n, "keepdims", 1) != 0);
    const char *ty = n->op_type + 6, *op = NULL;
    int y = -1;
    if (!strcmp(ty, "Sum"))
        op = "sum";
    else if (!strcmp(ty, "Mean"))
        op = "mean";
    else if (!strcmp(ty, "Max"))
        op = "max";
    else if (!strcmp(ty, "Min"))
        op = "min";
    else if (!strcmp(ty, "Prod"))
        op = "prod";
    if (op) {
        y = reduce_of(I, n, op, x, a.buf);
    } else if (!strcmp(ty, "SumSquare") || !strcmp(ty, "L2")) {
        y = reduce_of(I, n, "sum", cvt_binary_of(I, n, "multiply", x, x), a.buf);
        if (ty[0] == 'L')
            y = cvt_unary_of(I, n, "sqrt", y);
    } else if (!strcmp(ty, "L1")) {
        y = reduce_of(I, n, "sum", cvt_unary_of(I, n, "abs", x), a.buf);
    } else if (!strcmp(ty, "LogSum")) {
        y = cvt_unary_of(I, n, "log", reduce_of(I, n, "sum", x, a.buf));
    } else if (!strcmp(ty, "LogSumExp")) { /* log(sum(exp(x - m))) + m, m the max */
        kstr k1;
        kstr_init(&k1);
        if (na > 0)
            cvt_ints_attr(&k1, "axis", na, axes);
        kstr_printf(&k1, "%skeepdims=1", k1.len ? ", " : "");
        int m1 = reduce_of(I, n, "max", x, k1.buf);
        kstr_free(&k1);
        int m = imp_attr_int(I, n, "keepdims", 1) ? m1 : reduce_of(I, n, "max", x, a.buf);
        int e = cvt_unary_of(I, n, "exp", cvt_binary_of(I, n, "subtract", x, m1));
        y = cvt_binary_of(I, n, "add", cvt_unary_of(I, n, "log", reduce_of(I, n, "sum", e, a.buf)),
                          m);
    }
    kstr_free(&a);
    return outs[0] = y;
}

int cvt_arg_reduce(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis=%lld, keepdims=%d, select_last_index=%d",
             (long long)imp_attr_int(I, n, "axis", 0), imp_attr_int(I, n, "keepdims", 1) != 0,
             imp_attr_int(I, n, "select_last_index", 0) != 0);
    return outs[0] =
               imp_call(I, n, !strcmp(n->op_type, "ArgMax") ? "argmax" : "argmin", 1, &x, attrs);
}

/* LayerNormalization: nn.layer_norm, and the optional Mean and InvStdDev
 * outputs from mean, subtract and rsqrt. */
int cvt_layer_norm(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), k = imp_ninputs(n), in[3];
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t axis;
    if (cvt_axis_attr(I, n, -1, t->ndim, &axis) < 0)
        return -1;
    double eps = imp_attr_float(I, n, "epsilon", 1e-5f);
    for (int i = 0; i < 3; i++)
        in[i] = imp_input(I, n, i);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "axis=%lld, epsilon=%.9g", (long long)axis, eps);
    if ((outs[0] = imp_call(I, n, "nn.layer_norm", k > 3 ? 3 : k, in, attrs)) < 0)
        return -1;
    int want_mean = n->n_output > 1 && n->output[1][0],
        want_inv = n->n_output > 2 && n->output[2][0];
    if (!want_mean && !want_inv)
        return 0;
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "axis=[");
    for (int d = (int)axis; d < t->ndim; d++)
        kstr_printf(&a, "%s%d", d > axis ? ", " : "", d);
    kstr_puts(&a, "], keepdims=1");
    int m = reduce_of(I, n, "mean", x, a.buf);
    int c = cvt_binary_of(I, n, "subtract", x, m);
    int var = reduce_of(I, n, "mean", cvt_binary_of(I, n, "multiply", c, c), a.buf);
    kstr_free(&a);
    outs[1] = want_mean ? m : -1;
    if (want_inv)
        outs[2] = cvt_unary_of(
            I, n, "rsqrt", cvt_binary_of(I, n, "add", var, imp_scalar_const(I, n, t->dtype, eps)));
    return m < 0 || (want_inv && outs[2] < 0) ? -1 : 0;
}

/* InstanceNormalization: nn.layer_norm over the spatial dims (axis 2, the
 * same mean and variance per sample and channel), then scale and B per
 * channel, shaped [C, 1, ...] to broadcast from dim 1. */
int cvt_instance_norm(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    if (t->ndim < 3)
        return imp_fail(I, n, "the input needs at least 3 dims (N, C, D1, ...), has %d", t->ndim);
    if (t->dims[1].sym)
        return imp_fail(I, n, "the channel dim must not be symbolic");
    char attrs[64];
    snprintf(attrs, sizeof attrs, "axis=2, epsilon=%.9g", imp_attr_float(I, n, "epsilon", 1e-5f));
    int y = imp_call(I, n, "nn.layer_norm", 1, &x, attrs);
    int64_t dims[MAXD];
    dims[0] = t->dims[1].v;
    for (int d = 1; d < t->ndim - 1; d++)
        dims[d] = 1;
    for (int i = 1; i <= 2; i++) {
        const gtensor_type *p = imp_type(I, imp_input(I, n, i));
        if (!p || p->ndim != 1 || !gdim_equal(p->dims[0], t->dims[1]))
            return imp_fail(I, n, "input %d (%s) must be 1-D with one value per channel (%lld)", i,
                            i == 1 ? "scale" : "B", (long long)t->dims[1].v);
        int v = cvt_reshape_to(I, n, imp_input(I, n, i), t->ndim - 1, dims);
        y = cvt_binary_of(I, n, i == 1 ? "multiply" : "add", y, v);
    }
    return outs[0] = y;
}

/* MeanVarianceNormalization, as ONNX's function defines it: (x - E[x]) /
 * (sqrt(E[x^2] - E[x]^2) + 1e-9), the means over `axes` (default 0, 2, 3). */
int cvt_mvn(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t axes[MAXD] = {0, 2, 3};
    int na = imp_attr_ints(I, n, "axes", axes, MAXD);
    if (na == -2)
        return imp_fail(I, n, "attribute 'axes' has more than %d values", MAXD);
    kstr a;
    kstr_init(&a);
    cvt_ints_attr(&a, "axis", na < 0 ? 3 : na, axes);
    kstr_puts(&a, ", keepdims=1");
    int m = reduce_of(I, n, "mean", x, a.buf);
    int msq = reduce_of(I, n, "mean", cvt_binary_of(I, n, "multiply", x, x), a.buf);
    kstr_free(&a);
    int sd = cvt_unary_of(
        I, n, "sqrt", cvt_binary_of(I, n, "subtract", msq, cvt_binary_of(I, n, "multiply", m, m)));
    int den = x < 0 ? -1 : cvt_binary_of(I, n, "add", sd, cvt_float_const_like(I, n, x, 1e-9));
    return outs[0] = cvt_binary_of(I, n, "divide", cvt_binary_of(I, n, "subtract", x, m), den);
}

/* ---- losses --------------------------------------------------------------------------- */

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (the first on
 * log_softmax over the classes, axis 1, which is also the optional
 * log_prob output): nn.nll_loss gives the loss of each target; reduction
 * "sum" sums it, "mean" divides the sum by the count of targets, or, with
 * weights or an ignore_index, by the sum of the weights of the targets not
 * ignored (nn.nll_loss_weight), as ONNX defines it. */
int cvt_loss(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0), w = imp_input(I, n, 2), in[3];
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the scores have no tensor type");
    if (t->ndim < 2)
        return imp_fail(I, n, "the scores need at least 2 dims (N, C, ...), have %d", t->ndim);
    char buf[16];
    const char *red = imp_attr_str(I, n, "reduction", "mean", buf, sizeof buf);
    if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
        return imp_fail(I, n, "attribute 'reduction' = '%s' is not none, sum or mean", red);
    if (!strcmp(n->op_type, "SoftmaxCrossEntropyLoss")) {
        if ((x = imp_call(I, n, "nn.log_softmax", 1, &x, "axis=1")) < 0)
            return -1;
        if (n->n_output > 1 && n->output[1][0])
            outs[1] = x;
    }
    const Onnx__AttributeProto *ii =
        imp_attr(I, n, "ignore_index", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    char attrs[48] = "";
    if (ii)
        snprintf(attrs, sizeof attrs, "ignore_index=%lld", (long long)ii->i);
    int k = w >= 0 ? 3 : 2;
    in[0] = x;
    in[1] = imp_input(I, n, 1);
    in[2] = w;
    int loss = imp_call(I, n, "nn.nll_loss", k, in, attrs);
    if (loss < 0 || !strcmp(red, "none"))
        return outs[0] = loss;
    if (!strcmp(red, "mean") && w < 0 && !ii)
        return outs[0] = reduce_of(I, n, "mean", loss, "keepdims=0");
    int sum = reduce_of(I, n, "sum", loss, "keepdims=0");
    if (!strcmp(red, "sum"))
        return outs[0] = sum;
    int den = imp_call(I, n, "nn.nll_loss_weight", k, in, attrs);
    return outs[0] = cvt_binary_of(I, n, "divide", sum, reduce_of(I, n, "sum", den, "keepdims=0"));
}

/* ---- nn --------------------------------------------------------------------------- */

/* BatchNormalization: nn.batch_norm with the given statistics; in training
 * mode (opset 14 on) with the batch's own mean and (biased) variance over
 * every dim but the channels, and the optional running statistics
 * input_mean * momentum + batch_mean * (1 - momentum) (and the same for the
 * variance) as outputs 1 and 2. */
int cvt_batch_norm(imp *I, const Onnx__NodeProto *n, int *outs) {
    int train = imp_attr_int(I, n, "training_mode", 0) != 0;
    /* before opset 7, is_test (default 0: training) says which */
    if (I->opset < 7 && !imp_attr_int(I, n, "is_test", 0))
        return imp_fail(I, n, "is_test = 0 (training mode) is not supported before opset 7");
    if (imp_attr_int(I, n, "spatial", 1) != 1)
        return imp_fail(I, n, "attribute 'spatial' = 0 (statistics per element) is not supported");
    for (size_t k = 1; !train && k < n->n_output; k++)
        if (n->output[k][0])
            return imp_fail(
                I, n, "output %zu ('%s'), a statistic of training, is %s", k, n->output[k],
                I->opset < 14 ? "not supported before opset 14" : "only defined in training mode");
    int in[5];
    for (int i = 0; i < 5; i++)
        in[i] = imp_input(I, n, i);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "epsilon=%.9gf", imp_attr_float(I, n, "epsilon", 1e-5f));
    if (!train)
        return outs[0] = imp_call(I, n, "nn.batch_norm", 5, in, attrs);
    const gtensor_type *t = imp_type(I, in[0]);
    if (!t || t->ndim < 2 || t->dims[1].sym)
        return imp_fail(I, n,
                        "training mode needs an input of at least 2 dims, with a concrete "
                        "channel dim");
    int64_t c = t->dims[1].v;
    /* the batch's statistics, [1, C, 1, ...] to centre x, then [C] */
    int m = reduce_of(I, n, "mean", in[0], "axis=[1], exclude=1, keepdims=1");
    int d = cvt_binary_of(I, n, "subtract", in[0], m);
    int v = reduce_of(I, n, "mean", cvt_binary_of(I, n, "multiply", d, d),
                      "axis=[1], exclude=1, keepdims=1");
    int stats[2] = {cvt_reshape_to(I, n, m, 1, &c), cvt_reshape_to(I, n, v, 1, &c)};
    in[3] = stats[0];
    in[4] = stats[1];
    if ((outs[0] = imp_call(I, n, "nn.batch_norm", 5, in, attrs)) < 0)
        return -1;
    double mom = imp_attr_float(I, n, "momentum", 0.9f);
    for (int k = 1; k <= 2; k++) {
        if ((size_t)k >= n->n_output || !n->output[k][0])
            continue;
        int old = imp_input(I, n, k + 2);
        int kept = cvt_binary_of(I, n, "multiply", old, cvt_float_const_like(I, n, old, mom));
        int added = cvt_binary_of(I, n, "multiply", stats[k - 1],
                                  cvt_float_const_like(I, n, stats[k - 1], 1 - mom));
        if ((outs[k] = cvt_binary_of(I, n, "add", kept, added)) < 0)
            return -1;
    }
    return 0;
}

/* A dim as text: its size or its symbol. */
static const char *dim_text(gdim d, char *buf, size_t cap) {
    if (d.sym)
        snprintf(buf, cap, "%s", d.sym);
    else
        snprintf(buf, cap, "%lld", (long long)d.v);
    return buf;
}

/* dense(x, W) with W as [units, in]: a W given as [in, units] is
 * transposed (a constant one folds at import). */
static int dense_of(imp *I, const Onnx__NodeProto *n, int x, int w, int w_is_kn) {
    if (w_is_kn && (w = imp_call(I, n, "transpose", 1, &w, "axes=[1, 0]")) < 0)
        return -1;
    int in[2] = {x, w};
    return imp_call(I, n, "nn.dense", 2, in, NULL);
}

static int scaled(imp *I, const Onnx__NodeProto *n, int x, double s) {
    if (s == 1.0)
        return x;
    return cvt_binary_of(I, n, "multiply", x, cvt_float_const_like(I, n, x, s));
}

int cvt_gemm(imp *I, const Onnx__NodeProto *n, int *outs) {
    int a = imp_input(I, n, 0), b = imp_input(I, n, 1), c = imp_input(I, n, 2);
    const gtensor_type *at = imp_type(I, a), *bt = imp_type(I, b), *ct = imp_type(I, c);
    int ta = imp_attr_int(I, n, "transA", 0) != 0, tb = imp_attr_int(I, n, "transB", 0) != 0;
    if (!at || !bt || at->ndim != 2 || bt->ndim != 2)
        return imp_fail(I, n, "A and B must be 2-D, got %d-D and %d-D", at ? at->ndim : -1,
                        bt ? bt->ndim : -1);
    gdim ka = at->dims[ta ? 0 : 1], kb = bt->dims[tb ? 1 : 0], nb = bt->dims[tb ? 0 : 1];
    if (!gdim_equal(ka, kb)) {
        char s1[64], s2[64];
        return imp_fail(I, n, "the inner dims differ: %s in A (transA=%d), %s in B (transB=%d)",
                        dim_text(ka, s1, sizeof s1), ta, dim_text(kb, s2, sizeof s2), tb);
    }
    /* C broadcasts one way, onto [M, N]; before opset 7 only with
       broadcast=1, else it is [M, N] itself */
    gdim mn[2] = {at->dims[ta ? 1 : 0], nb};
    if (I->opset < 7 && ct && !imp_attr_int(I, n, "broadcast", 0) &&
        (ct->ndim != 2 || !gdim_equal(ct->dims[0], mn[0]) || !gdim_equal(ct->dims[1], mn[1])))
        return imp_fail(I, n, "C must be [M, N] when broadcast = 0 (before opset 7)");
    for (int d = 0; ct && d < ct->ndim; d++) {
        gdim cd = ct->dims[d], want = mn[d + 2 - ct->ndim];
        if (ct->ndim > 2 || (!(!cd.sym && cd.v == 1) && !gdim_equal(cd, want)))
            return imp_fail(I, n, "C (%d-D) does not broadcast to the [M, N] result", ct->ndim);
    }
    if (ta) {
        a = imp_call(I, n, "transpose", 1, &a, "axes=[1, 0]");
        if (a < 0)
            return -1;
    }
    int y = dense_of(I, n, a, b, !tb);
    if (y < 0)
        return -1;
    y = scaled(I, n, y, imp_attr_float(I, n, "alpha", 1.0f));
    if (y < 0 || c < 0)
        return outs[0] = y;
    int cs = scaled(I, n, c, imp_attr_float(I, n, "beta", 1.0f));
    int in[2] = {y, cs};
    return outs[0] = cs < 0 ? -1 : imp_call(I, n, "add", 2, in, NULL);
}

/* (onnx_convert.h) MatMul of a and b: nn.dense for a constant 2-D right side, else
 * nn.batch_matmul; a 1-D operand gets a unit dim that is dropped from the
 * result (numpy). */
int cvt_matmul_of(imp *I, const Onnx__NodeProto *n, int a, int b) {
    const gtensor_type *at = imp_type(I, a), *bt = imp_type(I, b);
    if (!at || !bt || at->ndim < 1 || bt->ndim < 1)
        return imp_fail(I, n, "both inputs need a tensor type of rank >= 1");
    if (bt->ndim == 2 && imp_const(I, b))
        return dense_of(I, n, a, b, 1);
    int ra = at->ndim, rb = bt->ndim;
    if (ra == 1) {
        int64_t d[2] = {1, at->dims[0].v};
        a = cvt_reshape_to(I, n, a, 2, d);
    }
    if (rb == 1) {
        int64_t d[2] = {bt->dims[0].v, 1};
        b = cvt_reshape_to(I, n, b, 2, d);
    }
    int in[2] = {a, b};
    int y = a < 0 || b < 0 ? -1 : imp_call(I, n, "nn.batch_matmul", 2, in, NULL);
    const gtensor_type *yt = imp_type(I, y);
    if (!yt || (ra > 1 && rb > 1))
        return y;
    int64_t dims[MAXD];
    int nd = 0;
    for (int d = 0; d < yt->ndim; d++)
        if (!((ra == 1 && d == yt->ndim - 2) || (rb == 1 && d == yt->ndim - 1)))
            dims[nd++] = yt->dims[d].v;
    return cvt_reshape_to(I, n, y, nd, dims);
}

int cvt_matmul(imp *I, const Onnx__NodeProto *n, int *outs) {
    return outs[0] = cvt_matmul_of(I, n, imp_input(I, n, 0), imp_input(I, n, 1));
}

/* MatMulInteger: the int32 product of A - a_zero_point (one, or one per
 * row of a 2-D A) by B - b_zero_point (one, or one per column). */
int cvt_matmul_integer(imp *I, const Onnx__NodeProto *n, int *outs) {
    int a = imp_input(I, n, 0), b = imp_input(I, n, 1);
    const gtensor_type *at = imp_type(I, a), *bt = imp_type(I, b);
    if (!at || !bt || at->ndim < 1 || bt->ndim < 1)
        return imp_fail(I, n, "both inputs need a tensor type of rank >= 1");
    gdim rows = at->ndim > 1 ? at->dims[at->ndim - 2] : (gdim){1, NULL};
    gdim cols = bt->ndim > 1 ? bt->dims[bt->ndim - 1] : (gdim){1, NULL};
    a = cvt_int_minus_zero(I, n, a, imp_input(I, n, 2), rows.sym ? 1 : rows.v, 2);
    b = a < 0 ? -1 : cvt_int_minus_zero(I, n, b, imp_input(I, n, 3), cols.sym ? 1 : cols.v, 1);
    return outs[0] = b < 0 ? -1 : cvt_matmul_of(I, n, a, b);
}

int cvt_softmax(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    const char *op = !strcmp(n->op_type, "LogSoftmax") ? "nn.log_softmax"
                     : !strcmp(n->op_type, "Hardmax")  ? "nn.hardmax"
                                                       : "nn.softmax";
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t axis;
    if (cvt_axis_attr(I, n, I->opset < 13 ? 1 : -1, t->ndim, &axis) < 0)
        return -1;
    char attrs[32];
    if (I->opset >= 13 || axis == t->ndim - 1) {
        snprintf(attrs, sizeof attrs, "axis=%lld", (long long)axis);
        return outs[0] = imp_call(I, n, op, 1, &x, attrs);
    }
    /* opset < 13: softmax over the flattened dims from axis on */
    int64_t a = 1, b = 1, orig[MAXD];
    for (int d = 0; d < t->ndim; d++) {
        if (t->dims[d].sym)
            return imp_fail(I, n, "symbolic dims are not supported here yet");
        orig[d] = t->dims[d].v;
        *(d < axis ? &a : &b) *= t->dims[d].v;
    }
    int64_t flat[2] = {a, b};
    int r = cvt_reshape_to(I, n, x, 2, flat);
    int s = r < 0 ? -1 : imp_call(I, n, op, 1, &r, "axis=1");
    return outs[0] = s < 0 ? -1 : cvt_reshape_to(I, n, s, t->ndim, orig);
}

int cvt_transpose(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    int64_t perm[MAXD];
    int np = imp_attr_ints(I, n, "perm", perm, MAXD);
    if (np == -1)
        return outs[0] = imp_call(I, n, "transpose", 1, &x, NULL);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    if (np != t->ndim)
        return imp_fail(I, n, "attribute 'perm' has %s%d values for a %d-D input",
                        np == -2 ? "more than " : "", np == -2 ? MAXD : np, t->ndim);
    int seen[MAXD] = {0};
    for (int i = 0; i < np; i++)
        if (perm[i] < 0 || perm[i] >= np || seen[perm[i]]++)
            return imp_fail(I, n,
                            "attribute 'perm' is not a permutation of 0..%d (perm[%d] = %lld)",
                            np - 1, i, (long long)perm[i]);
    kstr a;
    kstr_init(&a);
    kstr_puts(&a, "axes=[");
    for (int i = 0; i < np; i++)
        kstr_printf(&a, "%s%lld", i ? ", " : "", (long long)perm[i]);
    kstr_puts(&a, "]");
    outs[0] = imp_call(I, n, "transpose", 1, &x, a.buf);
    kstr_free(&a);
    return outs[0];
}

/* Split whose sizes are data: each output a slice (strided_slice's value
 * form) whose params split_params gives and whose dims a binder names. */
static int cvt_split_run_time(imp *I, const Onnx__NodeProto *n, int x, int sizes, int64_t axis,
                              int *outs) {
    const gtensor_type *t = imp_type(I, x), *st = imp_type(I, sizes);
    if (!st || st->ndim != 1 || st->dims[0].sym || st->dims[0].v != (int64_t)n->n_output)
        return imp_fail(I, n, "input 'split' must have one size per output (%zu)", n->n_output);
    for (size_t k = 0; k < n->n_output && k < 64; k++) {
        char attrs[96];
        int in[2] = {x, sizes};
        snprintf(attrs, sizeof attrs, "axis=%lld, index=%zu", (long long)axis, k);
        int params = imp_call(I, n, "split_params", 2, in, attrs);
        snprintf(attrs, sizeof attrs, "begin=[0], end=[%d]", t->ndim);
        int lens = params < 0 ? -1 : imp_call(I, n, "strided_slice", 1, &params, attrs);
        int args[3] = {x, params, cvt_bind_dims(I, n, lens)};
        if (args[2] < 0 || (outs[k] = imp_call(I, n, "strided_slice", 3, args, "")) < 0)
            return -1;
    }
    return 0;
}

int cvt_split(imp *I, const Onnx__NodeProto *n, int *outs) {
    int x = imp_input(I, n, 0);
    const gtensor_type *t = imp_type(I, x);
    if (!t)
        return imp_fail(I, n, "the input has no tensor type");
    int64_t axis, parts[64];
    if (cvt_axis_attr(I, n, 0, t->ndim, &axis) < 0)
        return -1;
    int np;
    if (I->opset < 13) {
        np = imp_attr_ints(I, n, "split", parts, 64);
        if (np == -2)
            return imp_fail(I, n, "attribute 'split' has more than 64 values");
    } else {
        int sid = imp_input(I, n, 1);
        const kiln_ndarray *c = sid >= 0 ? imp_const(I, sid) : NULL;
        if (sid >= 0 && !c)
            return cvt_split_run_time(I, n, x, sid, axis, outs);
        if (c && kiln_ndarray_numel(c) > 64)
            return imp_fail(I, n, "split has more than 64 values");
        np = c ? (int)kiln_ndarray_numel(c) : -1;
        for (int i = 0; i < np; i++)
            parts[i] = cvt_get_i(c, i);
    }
    if (np >= 0) {
        /* the sizes: one per output, none negative, summing to the axis */
        const char *what = I->opset < 13 ? "attribute 'split'" : "input 'split'";
        int64_t sum = 0;
        if (np != (int)n->n_output)
            return imp_fail(I, n, "%s has %d sizes for %zu outputs", what, np, n->n_output);
        for (int i = 0; i < np; i++)
            if (parts[i] < 0 || !kiln_add_ok(sum, parts[i], &sum))
                return imp_fail(I, n, "%s: size %d is %lld", what, i, (long long)parts[i]);
        if (t->dims[axis].sym || sum != t->dims[axis].v)
            return imp_fail(I, n, "%s sums to %lld, but the axis has %lld", what, (long long)sum,
                            (long long)t->dims[axis].v);
    }
    kstr a;
    kstr_init(&a);
    if (np < 0) {
        /* equal parts, one per output */
        int64_t len = t->dims[axis].v, k = (int64_t)n->n_output;
        if (t->dims[axis].sym || k < 1 || len % k)
            return kstr_free(&a),
                   imp_fail(I, n, "cannot split the axis into %lld equal parts", (long long)k);
        kstr_puts(&a, "indices_or_sections=[");
        for (int64_t i = 1; i < k; i++)
            kstr_printf(&a, "%s%lld", i > 1 ? ", " : "", (long long)(len / k * i));
        kstr_printf(&a, "], axis=%lld", (long long)axis);
    } else {
        kstr_puts(&a, "indices_or_sections=[");
        int64_t acc = 0;
        for (int i = 0; i + 1 < np; i++) {
            acc += parts[i];
            kstr_printf(&a, "%s%lld", i ? ", " : "", (long long)acc);
        }
        kstr_printf(&a, "], axis=%lld", (long long)axis);
    }
    int s = imp_call(I, n, "split", 1, &x, a.buf);
    kstr_free(&a);
    return cvt_tuple_outputs(I, n, s, outs);
}
