/* qnn_canon.c: QnnCanonicalize (Relay's qnn canonicalization): QNN ops
 * lowered into plain integer and float arithmetic that the int8 kernels
 * and FuseOps take, as rules of the pattern language (rules.h).
 *
 *   qnn.conv2d(x, w, zx, 0, ...)  ->  nn.conv2d(x, w, out_dtype=int32,
 *                                      pad_value=zx) - zx * sum(w[o])
 *   qnn.dense(x, w, zx, 0, ...)   ->  nn.dense(x, w, out_dtype=int32)
 *                                      - zx * sum(w[u])
 *   qnn.dequantize(q, s, zp)      ->  float32(q - zp) * s (s, zp shaped
 *                                      to broadcast along the axis)
 *   qnn.requantize(q, s, zp, s2, zp2)  ->  clip(round(float32(q - zp) * (s / s2)) + zp2)
 *   with rounding TFLITE  ->  clip(fixed_point_multiply(q - zp, m0, shift) + zp2)
 *   quantize[TFLITE]([relu|clip](dequantize(acc, S, 0)), s2, zp)
 *                         ->  clip(fixed_point_multiply(acc, m0, shift) + zp)
 *   float32(acc) * c * d          ->  float32(acc) * (c * d)
 *   float32(acc) * c + d          ->  float32(acc + rint(d / c)) * c
 *   quantize([relu|clip](float32(acc) * S), s2, zp)
 *                                 ->  clip(round(float32(acc) * S / s2) + zp)
 *
 * sum((x - zx) * w) over a window is sum(x * w) - zx * sum(w): with the
 * window's padding at zx (the real 0), the second term is one constant per
 * output channel, computed here from the constant weight, so the
 * convolution multiplies the raw uint8 activations by the int8 weights,
 * which is what vpdpbusd does (nn.conv2d's layout hook makes the int8
 * kernel, src/ops/conv_int8.c). int8 activations are moved to uint8 first
 * (x + 128, the zero point with them): an elementwise op that fuses into
 * the producer. Weights must be constant with zero points all 0 (symmetric,
 * as ONNX Runtime's quantizer and TFLite make them); other products keep
 * their QNN reference computes. The dequantize's subtraction and multiply
 * fuse into the convolution's epilogue with the bias, the activation and
 * the next quantize.
 *
 * TFLite's requantization (rounding TFLITE) takes m0 and shift from
 * TFLite's QuantizeMultiplier of the float64 multiplier, computed here; an
 * accumulator of qnn.conv2d/dense/batch_matmul gets the multiplier from the
 * product's own scales, float64(sx) * float64(sw) / float64(s2), as TFLite's
 * kernels compute it, not from the float32 product S that its dequantize
 * holds.
 *
 * Runs at opt level 3 after FakeQuantizationToInteger (fake_quant.c), which
 * makes the QNN ops of a QDQ model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "../runtime/runtime_internal.h"
#include "passes.h"
#include "rules.h"

/* Element i of an integer array as int64 (int8, uint8, int32, int64). */
static int64_t int_at(const kiln_ndarray *a, int64_t i) {
    const void *p = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_INT8: return ((const int8_t *)p)[i];
    case KILN_UINT8: return ((const uint8_t *)p)[i];
    case KILN_INT32: return ((const int32_t *)p)[i];
    case KILN_INT64: return ((const int64_t *)p)[i];
    default: return 0;
    }
}

static int is_int_array(const kiln_ndarray *a) {
    kiln_dtype dt = kiln_ndarray_dtype(a);
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_INT32 || dt == KILN_INT64;
}

static int all_zero(const kiln_ndarray *a) {
    for (int64_t i = 0; i < kiln_ndarray_numel(a); i++)
        if (int_at(a, i))
            return 0;
    return 1;
}

/* A constant of n int32 values v shaped `ndim` dims (n, 1, ...), in post. */
static int const_i32(kiln_rewrite *rw, const int32_t *v, int64_t n, int ndim, const char *name) {
    int64_t dims[4] = {n, 1, 1, 1};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT32, ndim, dims);
    if (!a)
        return -1;
    memcpy(kiln_ndarray_data(a), v, (size_t)n * sizeof(int32_t));
    int id = kiln_graph_const(kiln_rewrite_post(rw), name, a);
    kiln_ndarray_free(a);
    return id;
}

/* The data of a product as uint8, and its zero point: int8 data + 128. */
static int data_u8(kiln_rewrite *rw, int x, kiln_dtype dt, int64_t *zx, const char *name) {
    if (dt == KILN_UINT8)
        return x;
    int32_t c = 128;
    int k = const_i32(rw, &c, 1, 0, "shift");
    int a = k < 0 ? -1 : rule_call(rw, "cast", 1, &x, "dtype=\"int32\"", name);
    int in[2] = {a, k};
    int b = a < 0 ? -1 : rule_call(rw, "add", 2, in, "", name);
    *zx += 128;
    return b < 0 ? -1 : rule_call(rw, "cast", 1, &b, "dtype=\"uint8\"", name);
}

/* An integer product of rule r's root: data %a, weight %b (int8, its
 * output channels along dim 0), zero points %c (data) and %d (weight).
 * `op` the plain op; corr_dims the correction's rank (broadcast against
 * the result). */
static int canon_product(kiln_rewrite *rw, const rule *r, const char *op, int corr_dims,
                         const kiln_ndarray *wt) {
    const gnode *n = rule_root(rw);
    const gnode *x = rule_pre(rw, r->x[0]);
    const gnode *zx = rule_pre(rw, r->x[2]), *zw = rule_pre(rw, r->x[3]);
    const gtensor_type *xt = ops_node_type(x);
    const kiln_ndarray *wv_ = wt ? wt : rule_pre(rw, r->x[1])->value;
    if (!xt || (xt->dtype != KILN_UINT8 && xt->dtype != KILN_INT8) ||
        kiln_ndarray_dtype(wv_) != KILN_INT8 || kiln_ndarray_ndim(wv_) < 2 ||
        !is_int_array(zx->value) || kiln_ndarray_numel(zx->value) != 1 ||
        !is_int_array(zw->value) || !all_zero(zw->value) ||
        strcmp(graph_attr_str(n, "out_dtype", "int32"), "int32"))
        return KILN_REWRITE_SKIP;
    int64_t z = int_at(zx->value, 0), O = kiln_ndarray_dim(wv_, 0);
    int64_t per = kiln_ndarray_numel(wv_) / (O ? O : 1);
    int xin = data_u8(rw, rule_post(rw, r->x[0]), xt->dtype, &z, n->name);
    if (xin < 0)
        return -1;
    static const char *const skip[] = {"out_dtype", "transpose_b", NULL};
    char extra[64];
    if (corr_dims > 1) /* a convolution: its padding is the real 0 */
        snprintf(extra, sizeof extra, "out_dtype=\"int32\", pad_value=%lld", (long long)z);
    else
        snprintf(extra, sizeof extra, "out_dtype=\"int32\"");
    char *attrs = pass_attrs_text(n, skip, extra);
    if (!attrs)
        return -1;
    int in[2] = {xin, wt ? kiln_graph_const(kiln_rewrite_post(rw), "weight", wt)
                         : rule_post(rw, r->x[1])};
    int y = in[1] < 0 ? -1 : rule_call(rw, op, 2, in, attrs, n->name);
    free(attrs);
    if (y < 0 || !z)
        return y;
    /* zx * sum(w) per output channel */
    int32_t *corr = malloc((size_t)O * sizeof(int32_t));
    if (!corr)
        return -1;
    const int8_t *wv = kiln_ndarray_data(wv_);
    for (int64_t o = 0; o < O; o++) {
        int64_t s = 0;
        for (int64_t i = 0; i < per; i++)
            s += wv[o * per + i];
        corr[o] = (int32_t)(s * z);
    }
    int c = const_i32(rw, corr, O, corr_dims, "zero_point_term");
    free(corr);
    int sub[2] = {y, c};
    return c < 0 ? -1 : rule_call(rw, "subtract", 2, sub, "", n->name);
}

static int canon_conv(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    const gnode *w = rule_pre(rw, r->x[1]);
    if (strcmp(graph_attr_str(n, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(n, "kernel_layout", "OIHW"), "OIHW") ||
        kiln_ndarray_ndim(w->value) != 4)
        return KILN_REWRITE_SKIP;
    return canon_product(rw, r, "nn.conv2d", 3, NULL);
}

static int canon_dense(kiln_rewrite *rw, const rule *r) {
    const gnode *w = rule_pre(rw, r->x[1]);
    if (kiln_ndarray_ndim(w->value) != 2)
        return KILN_REWRITE_SKIP;
    return canon_product(rw, r, "nn.dense", 1, NULL);
}

/* qnn.batch_matmul of data and a constant 2-D weight ([K, N], or [N, K]
 * with transpose_b): a dense over the weight as [N, K], so the int8 panels
 * take it (a BERT's linear layers, which ONNX writes as MatMul) */
static int canon_bmm(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    const kiln_ndarray *w = rule_pre(rw, r->x[1])->value;
    if (kiln_ndarray_ndim(w) != 2 || kiln_ndarray_dtype(w) != KILN_INT8)
        return KILN_REWRITE_SKIP;
    int tb = graph_attr_int(n, "transpose_b", 0) != 0;
    int64_t N = kiln_ndarray_dim(w, tb ? 0 : 1), K = kiln_ndarray_dim(w, tb ? 1 : 0);
    int64_t dims[2] = {N, K};
    kiln_ndarray *t = kiln_ndarray_empty(KILN_INT8, 2, dims);
    if (!t)
        return -1;
    int64_t s0 = kiln_ndarray_stride(w, 0), s1 = kiln_ndarray_stride(w, 1);
    const int8_t *src = (const int8_t *)kiln_ndarray_data(w);
    for (int64_t i = 0; i < N; i++)
        for (int64_t k = 0; k < K; k++)
            ((int8_t *)kiln_ndarray_data(t))[i * K + k] =
                src[tb ? i * s0 + k * s1 : k * s0 + i * s1];
    int st = canon_product(rw, r, "nn.dense", 1, t);
    kiln_ndarray_free(t);
    return st;
}

/* The rank that per-channel parameters of a rank-nd tensor along `axis`
 * take to broadcast ([C, 1, ...]: the dims from the axis on), 0 for a
 * per-tensor one (cnt 1); -1 where kiln does not canonicalize. */
static int param_rank(int64_t cnt, int64_t axis, int nd) {
    if (cnt == 1)
        return 0;
    if (axis < 0)
        axis += nd;
    return axis < 0 || axis >= nd || nd - axis > 4 ? -1 : (int)(nd - axis);
}

/* int32(q) - zp in post (zp the zero point shaped to `rank`); int32(q)
 * where zp is all 0. */
static int centered_i32(kiln_rewrite *rw, int q, const kiln_ndarray *zp, int rank,
                        const char *name) {
    q = q < 0 ? -1 : rule_call(rw, "cast", 1, &q, "dtype=\"int32\"", name);
    if (q < 0 || all_zero(zp))
        return q;
    int64_t nz = kiln_ndarray_numel(zp);
    int32_t *z = malloc((size_t)nz * sizeof(int32_t));
    if (!z)
        return -1;
    for (int64_t i = 0; i < nz; i++)
        z[i] = (int32_t)int_at(zp, i);
    int zid = const_i32(rw, z, nz, nz == 1 ? 0 : rank, "zero_point");
    free(z);
    int in[2] = {q, zid};
    return zid < 0 ? -1 : rule_call(rw, "subtract", 2, in, "", name);
}

/* float32(q - zp) in post (q the post node, zp the zero point constant
 * shaped to `rank`); float32(q) where zp is all 0. */
static int centered_f32(kiln_rewrite *rw, int q, const kiln_ndarray *zp, int rank,
                        const char *name) {
    if (!all_zero(zp))
        q = centered_i32(rw, q, zp, rank, name);
    return q < 0 ? -1 : rule_call(rw, "cast", 1, &q, "dtype=\"float32\"", name);
}

/* A float32 scale s shaped to `rank` ([C, 1, ...]). */
static kiln_ndarray *shaped_scale(const kiln_ndarray *s, int rank) {
    int64_t dims[4] = {kiln_ndarray_numel(s), 1, 1, 1};
    kiln_ndarray *sc = kiln_ndarray_empty(KILN_FLOAT32, rank, dims);
    if (sc)
        memcpy(kiln_ndarray_data(sc), kiln_ndarray_data(s), (size_t)dims[0] * sizeof(float));
    return sc;
}

/* Whether scale s and zero point zp are a per-tensor or per-channel pair. */
static int scale_zp(const kiln_ndarray *s, const kiln_ndarray *zp) {
    return kiln_ndarray_dtype(s) == KILN_FLOAT32 && is_int_array(zp) &&
           (kiln_ndarray_numel(zp) == kiln_ndarray_numel(s) || kiln_ndarray_numel(zp) == 1);
}

/* qnn.dequantize(q, s, zp) -> float32(q - zp) * s */
static int canon_dequantize(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    const gnode *s = rule_pre(rw, r->x[1]), *zp = rule_pre(rw, r->x[2]);
    const gtensor_type *qt = ops_node_type(rule_pre(rw, r->x[0]));
    int rank =
        qt ? param_rank(kiln_ndarray_numel(s->value), graph_attr_int(n, "axis", -1), qt->ndim) : -1;
    if (rank < 0 || !scale_zp(s->value, zp->value))
        return KILN_REWRITE_SKIP;
    kiln_ndarray *sc = shaped_scale(s->value, rank);
    if (!sc)
        return -1;
    int sid = kiln_graph_const(kiln_rewrite_post(rw), "scale", sc);
    kiln_ndarray_free(sc);
    int f = sid < 0 ? -1 : centered_f32(rw, rule_post(rw, r->x[0]), zp->value, rank, n->name);
    int in[2] = {f, sid};
    return f < 0 ? -1 : rule_call(rw, "multiply", 2, in, "", n->name);
}

/* A float32 scalar constant's value, or NaN. */
static double scalar_f32(const gnode *n) {
    if (!n || n->kind != GN_CONST || kiln_ndarray_dtype(n->value) != KILN_FLOAT32 ||
        kiln_ndarray_numel(n->value) != 1)
        return NAN;
    return *(const float *)kiln_ndarray_data(n->value);
}

/* Whether rule r's part %e is the int32 accumulator a dequantized product
 * starts from (the cast's source), and the cast (%b) and the multiply (%a)
 * are read only by the chain being folded: folding one reader of a value
 * that others read would compute it twice and keep FuseOps from fusing
 * either chain into the convolution. */
static int folds_alone(kiln_rewrite *rw, const rule *r, const kiln_pattern *acc) {
    const gtensor_type *t = ops_node_type(rule_pre(rw, acc));
    return t && t->dtype == KILN_INT32 && kiln_rewrite_uses(rw, rule_pre(rw, r->x[0])->id) == 1 &&
           kiln_rewrite_uses(rw, rule_pre(rw, r->x[1])->id) == 1;
}

/* TFLite's QuantizeMultiplier: m = m0 * 2^(shift - 31), m0 a 31-bit
 * fraction in [2^30, 2^31) (0 for m = 0 or a shift below -31). */
static void quantize_multiplier(double m, int32_t *m0, int32_t *shift) {
    int e = 0;
    if (!(m > 0) || !(m < 2147483648.0)) {
        *m0 = *shift = 0;
        return;
    }
    double f = frexp(m, &e);
    int64_t q = (int64_t)round(f * 2147483648.0);
    if (q == ((int64_t)1 << 31)) {
        q /= 2;
        e++;
    }
    if (e < -31)
        q = e = 0;
    *m0 = (int32_t)q;
    *shift = e;
}

/* cast(clip(fixed_point_multiply(c, m0, shift) + zp, lo, hi), odt) in post:
 * c an int32 value, m the n float64 multipliers shaped to `rank`. */
static int fixed_tail(kiln_rewrite *rw, int c, const double *m, int64_t n, int rank, int32_t zp,
                      double lo, double hi, kiln_dtype odt, const char *name) {
    int32_t *v = malloc((size_t)n * 2 * sizeof(int32_t));
    if (!v)
        return -1;
    for (int64_t k = 0; k < n; k++)
        quantize_multiplier(m[k], &v[k], &v[n + k]);
    int r = n == 1 ? 0 : rank;
    int in[3] = {c, const_i32(rw, v, n, r, "multiplier"), const_i32(rw, v + n, n, r, "shift")};
    free(v);
    int y = in[0] < 0 || in[1] < 0 || in[2] < 0
                ? -1
                : rule_call(rw, "fixed_point_multiply", 3, in, "rounding=\"TFLITE\"", name);
    int z = const_i32(rw, &zp, 1, 0, "zero_point");
    int sum[2] = {y, z};
    y = y < 0 || z < 0 ? -1 : rule_call(rw, "add", 2, sum, "", name);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "a_min=%g, a_max=%g", lo, hi);
    y = y < 0 ? -1 : rule_call(rw, "clip", 1, &y, attrs, name);
    snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(odt));
    return y < 0 ? -1 : rule_call(rw, "cast", 1, &y, attrs, name);
}

static int is_tflite(const gnode *n) {
    return !strcmp(graph_attr_str(n, "rounding", "TONEAREST"), "TFLITE");
}

/* qnn.requantize(q, s, zp, s2, zp2) with rounding TFLITE: TFLite's integer
 * requantization, clip(fixed_point_multiply(q - zp, m0, shift) + zp2), the
 * multipliers float64(s) / float64(s2). */
static int canon_requantize_tflite(kiln_rewrite *rw, const rule *r, int rank, double s2,
                                   kiln_dtype odt) {
    const gnode *n = rule_root(rw);
    const kiln_ndarray *s = rule_pre(rw, r->x[1])->value, *zp = rule_pre(rw, r->x[2])->value;
    int64_t cnt = kiln_ndarray_numel(s);
    double *m = malloc((size_t)cnt * sizeof(double));
    if (!m)
        return -1;
    for (int64_t k = 0; k < cnt; k++)
        m[k] = (double)((const float *)kiln_ndarray_data(s))[k] / s2;
    int c = centered_i32(rw, rule_post(rw, r->x[0]), zp, rank, n->name);
    int st =
        c < 0
            ? -1
            : fixed_tail(rw, c, m, cnt, rank, (int32_t)int_at(rule_pre(rw, r->x[4])->value, 0),
                         odt == KILN_UINT8 ? 0 : -128, odt == KILN_UINT8 ? 255 : 127, odt, n->name);
    free(m);
    return st;
}

/* The exact scales of the int32 accumulator acc (a pre node) whose
 * dequantize scales it by the n float32 values S: where acc is a quantized
 * product (through integer bias adds of constants) whose scales multiply
 * in float32 to S, float64(sx) * float64(sw[k]) (exact, as TFLite's kernels
 * take them); else S. */
static void acc_scales(const struct kiln_graph *g, const gnode *acc, const kiln_ndarray *S,
                       double *out) {
    int64_t n = kiln_ndarray_numel(S);
    const float *sv = kiln_ndarray_data(S);
    for (int64_t k = 0; k < n; k++)
        out[k] = sv[k];
    while (acc->kind == GN_CALL && acc->nin == 2 &&
           (!strcmp(acc->op->name, "nn.bias_add") || !strcmp(acc->op->name, "add")) &&
           g->nodes[acc->in[1]]->kind == GN_CONST)
        acc = g->nodes[acc->in[0]];
    if (acc->kind != GN_CALL || acc->nin != 6 || strncmp(acc->op->name, "qnn.", 4) ||
        (strcmp(acc->op->name, "qnn.conv2d") && strcmp(acc->op->name, "qnn.dense") &&
         strcmp(acc->op->name, "qnn.batch_matmul")))
        return;
    const gnode *sx = g->nodes[acc->in[4]], *sw = g->nodes[acc->in[5]];
    if (sx->kind != GN_CONST || sw->kind != GN_CONST ||
        kiln_ndarray_dtype(sx->value) != KILN_FLOAT32 ||
        kiln_ndarray_dtype(sw->value) != KILN_FLOAT32 || kiln_ndarray_numel(sx->value) != 1)
        return;
    int64_t nw = kiln_ndarray_numel(sw->value);
    if (nw != n && nw != 1)
        return;
    double x = *(const float *)kiln_ndarray_data(sx->value);
    const float *w = kiln_ndarray_data(sw->value);
    for (int64_t k = 0; k < n; k++)
        if ((float)(x * w[nw == 1 ? 0 : k]) != sv[k])
            return;
    for (int64_t k = 0; k < n; k++)
        out[k] = x * w[nw == 1 ? 0 : k];
}

/* The range of quantize node n's output (out_dtype int8 or uint8; 0 for
 * another) as the activation node a before it narrows it: nn.relu keeps q
 * >= zp; clip(a_min, a_max) keeps zp + round(a_min / s2) .. zp +
 * round(a_max / s2), rounded half to even in float64 as ONNX Runtime does,
 * or (tflite) in float32 half away from zero, as TFLite's
 * CalculateActivationRangeQuantized does; any other node leaves the
 * dtype's range. 0 as well if the range is empty. */
static int output_range(const gnode *n, const gnode *a, double s2, double zp, int tflite,
                        kiln_dtype *odt, double *lo, double *hi) {
    if (kiln_dtype_parse(graph_attr_str(n, "out_dtype", "int8"), odt) != KILN_OK ||
        (*odt != KILN_INT8 && *odt != KILN_UINT8))
        return 0;
    *lo = *odt == KILN_UINT8 ? 0 : -128;
    *hi = *odt == KILN_UINT8 ? 255 : 127;
    if (a->kind == GN_CALL && !strcmp(a->op->name, "nn.relu"))
        *lo = zp > *lo ? zp : *lo;
    if (a->kind == GN_CALL && !strcmp(a->op->name, "clip")) {
        double b[2] = {graph_attr_float(a, "a_min", -INFINITY),
                       graph_attr_float(a, "a_max", INFINITY)};
        for (int k = 0; k < 2; k++)
            b[k] = zp + (tflite ? roundf((float)b[k] / (float)s2) : rint(b[k] / s2));
        *lo = b[0] > *lo ? b[0] : *lo;
        *hi = b[1] < *hi ? b[1] : *hi;
    }
    return *lo <= *hi;
}

/* quantize[TFLITE]([relu | clip](dequantize(acc, S, zp)), s2, zp2) with acc
 * int32: TFLite's requantization of the accumulator, the activation
 * narrowing the output range as TFLite's CalculateActivationRangeQuantized
 * does (relu: q >= zp2; clip(a, b): zp2 + round(a / s2) .. zp2 + round(b /
 * s2), float32, half away from zero). Matched before the dequantize is
 * lowered, so the product's scales are still there (acc_scales). */
static int fold_tflite(kiln_rewrite *rw, const rule *r) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw), *dq = rule_pre(rw, r->x[0]), *acc = rule_pre(rw, r->x[1]);
    const gnode *S = rule_pre(rw, r->x[2]), *zp = rule_pre(rw, r->x[3]);
    const gnode *zp2 = rule_pre(rw, r->x[5]), *a = g->nodes[n->in[0]];
    const gtensor_type *at = ops_node_type(acc);
    double s2 = scalar_f32(rule_pre(rw, r->x[4])), lo, hi;
    kiln_dtype odt;
    int rank =
        at ? param_rank(kiln_ndarray_numel(S->value), graph_attr_int(dq, "axis", -1), at->ndim)
           : -1;
    if (!is_tflite(n) || rank < 0 || at->dtype != KILN_INT32 ||
        kiln_rewrite_uses(rw, dq->id) != 1 || kiln_rewrite_uses(rw, a->id) != 1 ||
        !scale_zp(S->value, zp->value) || !(s2 > 0) || !is_int_array(zp2->value) ||
        kiln_ndarray_numel(zp2->value) != 1)
        return KILN_REWRITE_SKIP;
    int32_t z2 = (int32_t)int_at(zp2->value, 0);
    if (!output_range(n, a, s2, z2, 1, &odt, &lo, &hi))
        return KILN_REWRITE_SKIP;
    int64_t cnt = kiln_ndarray_numel(S->value);
    double *m = malloc((size_t)cnt * sizeof(double));
    if (!m)
        return -1;
    acc_scales(g, acc, S->value, m);
    for (int64_t k = 0; k < cnt; k++)
        m[k] /= s2;
    int c = centered_i32(rw, rule_post(rw, r->x[1]), zp->value, rank, n->name);
    int st = c < 0 ? -1 : fixed_tail(rw, c, m, cnt, rank, z2, lo, hi, odt, n->name);
    free(m);
    return st;
}

/* A float32 scalar constant in post. */
static int const_f32(kiln_rewrite *rw, float v, const char *name) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 0, NULL);
    if (!a)
        return -1;
    *(float *)kiln_ndarray_data(a) = v;
    int id = kiln_graph_const(kiln_rewrite_post(rw), name, a);
    kiln_ndarray_free(a);
    return id;
}

/* cast(clip(round(v) + zp, lo, hi), odt) in post: a float value quantized. */
static int round_clip_cast(kiln_rewrite *rw, int v, double zp, double lo, double hi, kiln_dtype odt,
                           const char *name) {
    int zid = const_f32(rw, (float)zp, "zero_point");
    v = v < 0 || zid < 0 ? -1 : rule_call(rw, "round", 1, &v, "", name);
    int in[2] = {v, zid};
    v = v < 0 ? -1 : rule_call(rw, "add", 2, in, "", name);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "a_min=%g, a_max=%g", lo, hi);
    v = v < 0 ? -1 : rule_call(rw, "clip", 1, &v, attrs, name);
    snprintf(attrs, sizeof attrs, "dtype=\"%s\"", kiln_dtype_name(odt));
    return v < 0 ? -1 : rule_call(rw, "cast", 1, &v, attrs, name);
}

/* cast(clip(round(c * (S / s2)) + zp, lo, hi), odt) in post: c a float32
 * value, S a float32 constant shaped to broadcast against it, the
 * multiplier divided in float32 as qnn.requantize's compute does. */
static int requant_tail(kiln_rewrite *rw, int c, const kiln_ndarray *S, double s2, double zp,
                        double lo, double hi, kiln_dtype odt, const char *name) {
    int64_t dims[8];
    int nd = kiln_ndarray_ndim(S);
    if (nd > 8)
        return KILN_REWRITE_SKIP;
    for (int d = 0; d < nd; d++)
        dims[d] = kiln_ndarray_dim(S, d);
    kiln_ndarray *m = kiln_ndarray_empty(KILN_FLOAT32, nd, dims);
    if (!m)
        return -1;
    const float *sv = kiln_ndarray_data(S);
    for (int64_t i = 0; i < kiln_ndarray_numel(S); i++)
        ((float *)kiln_ndarray_data(m))[i] = sv[i] / (float)s2;
    int mid = kiln_graph_const(kiln_rewrite_post(rw), "requant_scale", m);
    kiln_ndarray_free(m);
    int in[2] = {c, mid};
    int v = mid < 0 || c < 0 ? -1 : rule_call(rw, "multiply", 2, in, "", name);
    return round_clip_cast(rw, v, zp, lo, hi, odt, name);
}

/* quantize([relu | clip](float32(acc) * S), s2, zp) with acc int32: the
 * requantization of the accumulator in one multiply, float32(acc) *
 * (S / s2), rounded, plus zp, clamped to the output range narrowed by the
 * activation (relu: q >= zp; clip(a, b): rint(a / s2) + zp .. rint(b /
 * s2) + zp): no division and no dequantized value, as ONNX Runtime's
 * QLinearConv requantizes. */
static int fold_requantize(kiln_rewrite *rw, const rule *r) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw), *acc = rule_pre(rw, r->x[2]);
    const gnode *S = rule_pre(rw, r->x[3]), *zpn = rule_pre(rw, r->x[5]);
    const gnode *cast = rule_pre(rw, r->x[1]), *a = g->nodes[n->in[0]];
    const gtensor_type *at = ops_node_type(acc);
    double s2 = scalar_f32(rule_pre(rw, r->x[4])), lo, hi;
    kiln_dtype odt;
    if (is_tflite(n) || !folds_alone(rw, r, r->x[2]) || kiln_rewrite_uses(rw, a->id) != 1 || !at ||
        strcmp(graph_attr_str(cast, "dtype", ""), "float32") ||
        kiln_ndarray_dtype(S->value) != KILN_FLOAT32 || !(s2 > 0) || !is_int_array(zpn->value) ||
        kiln_ndarray_numel(zpn->value) != 1)
        return KILN_REWRITE_SKIP;
    double zp = (double)int_at(zpn->value, 0);
    if (!output_range(n, a, s2, zp, 0, &odt, &lo, &hi))
        return KILN_REWRITE_SKIP;
    return requant_tail(rw, rule_post(rw, r->x[1]), S->value, s2, zp, lo, hi, odt, n->name);
}

/* qnn.requantize(q, s, zp, s2, zp2) with compute_dtype float32 (ONNX
 * Runtime's, the default) into an int8 or uint8: cast(clip(round(float32(q -
 * zp) * (s / s2)) + zp2)), exactly its compute, in ops that follow the
 * blocked layout and fuse (QLinearConv's per-channel requantize). */
static int canon_requantize(kiln_rewrite *rw, const rule *r) {
    const gnode *n = rule_root(rw);
    const gnode *s = rule_pre(rw, r->x[1]), *zp = rule_pre(rw, r->x[2]);
    const gnode *zp2 = rule_pre(rw, r->x[4]);
    const gtensor_type *qt = ops_node_type(rule_pre(rw, r->x[0]));
    double s2 = scalar_f32(rule_pre(rw, r->x[3]));
    kiln_dtype odt;
    int rank =
        qt ? param_rank(kiln_ndarray_numel(s->value), graph_attr_int(n, "axis", -1), qt->ndim) : -1;
    if (rank < 0 || !scale_zp(s->value, zp->value) || !(s2 > 0) || !is_int_array(zp2->value) ||
        kiln_ndarray_numel(zp2->value) != 1 ||
        kiln_dtype_parse(graph_attr_str(n, "out_dtype", "int8"), &odt) != KILN_OK ||
        (odt != KILN_INT8 && odt != KILN_UINT8))
        return KILN_REWRITE_SKIP;
    if (is_tflite(n))
        return canon_requantize_tflite(rw, r, rank, s2, odt);
    if (strcmp(graph_attr_str(n, "compute_dtype", "float32"), "float32"))
        return KILN_REWRITE_SKIP;
    kiln_ndarray *sc = shaped_scale(s->value, rank);
    if (!sc)
        return -1;
    int c = centered_f32(rw, rule_post(rw, r->x[0]), zp->value, rank, n->name);
    int st = c < 0 ? -1
                   : requant_tail(rw, c, sc, s2, (double)int_at(zp2->value, 0),
                                  odt == KILN_UINT8 ? 0 : -128, odt == KILN_UINT8 ? 255 : 127, odt,
                                  n->name);
    kiln_ndarray_free(sc);
    return st;
}

/* quantize([relu](add(dequantize(a, sa, za), dequantize(b, sb, zb))), sc,
 * zc): a QDQ Add (a residual connection) in QLinearAdd's form,
 * cast(clip(round(float32(a - za) * (sa / sc) + float32(b - zb) * (sb /
 * sc)) + zc, lo, hi)), relu narrowing lo to zc: two multiplies instead of
 * two dequantizes and a division per value. The ratios are float32, as
 * the other requantization folds take them; ONNX Runtime's kernels
 * (fixed-point multipliers, or a division) can differ by one step. Per-tensor
 * parameters; the add (and relu) must have no other reader, the
 * dequantizes may (they are cheap to compute again). */
static int fold_qadd(kiln_rewrite *rw, const rule *r) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw), *add = rule_pre(rw, r->x[0]);
    const gnode *act = g->nodes[n->in[0]];
    const gnode *da = rule_pre(rw, r->x[1]), *db = rule_pre(rw, r->x[2]);
    const gnode *za = g->nodes[da->in[2]], *zb = g->nodes[db->in[2]], *zc = g->nodes[n->in[2]];
    double sa = scalar_f32(g->nodes[da->in[1]]), sb = scalar_f32(g->nodes[db->in[1]]);
    double sc = scalar_f32(g->nodes[n->in[1]]), lo, hi;
    kiln_dtype odt;
    if (is_tflite(n) || !(sa > 0) || !(sb > 0) || !(sc > 0) || za->kind != GN_CONST ||
        zb->kind != GN_CONST || zc->kind != GN_CONST || kiln_rewrite_uses(rw, add->id) != 1 ||
        kiln_rewrite_uses(rw, act->id) != 1 || !is_int_array(za->value) ||
        kiln_ndarray_numel(za->value) != 1 || !is_int_array(zb->value) ||
        kiln_ndarray_numel(zb->value) != 1 || !is_int_array(zc->value) ||
        kiln_ndarray_numel(zc->value) != 1)
        return KILN_REWRITE_SKIP;
    double z = (double)int_at(zc->value, 0);
    if (!output_range(n, act, sc, z, 0, &odt, &lo, &hi))
        return KILN_REWRITE_SKIP;
    const char *name = n->name;
    int term[2];
    const int src[2] = {kiln_rewrite_post_of(rw, da->in[0]), kiln_rewrite_post_of(rw, db->in[0])};
    const gnode *zps[2] = {za, zb};
    const float ratio[2] = {(float)sa / (float)sc, (float)sb / (float)sc};
    for (int k = 0; k < 2; k++) {
        int mid = const_f32(rw, ratio[k], "ratio");
        int c = mid < 0 ? -1 : centered_f32(rw, src[k], zps[k]->value, 0, name);
        int in[2] = {c, mid};
        term[k] = c < 0 ? -1 : rule_call(rw, "multiply", 2, in, "", name);
        if (term[k] < 0)
            return -1;
    }
    int v = rule_call(rw, "add", 2, term, "", name);
    return round_clip_cast(rw, v, z, lo, hi, odt, name);
}

/* The float32 constant of c and d combined elementwise (op '*': c * d;
 * '/': rint(d / c) as int32), shaped as the larger; NULL if their shapes
 * are neither equal nor one a scalar, or a value does not fit. */
static kiln_ndarray *combine(const kiln_ndarray *c, const kiln_ndarray *d, char op) {
    if (kiln_ndarray_dtype(c) != KILN_FLOAT32 || kiln_ndarray_dtype(d) != KILN_FLOAT32)
        return NULL;
    int64_t nc = kiln_ndarray_numel(c), nd = kiln_ndarray_numel(d);
    const kiln_ndarray *big = nc >= nd ? c : d;
    if (nc != nd && nc != 1 && nd != 1)
        return NULL;
    if (nc == nd && kiln_ndarray_ndim(c) != kiln_ndarray_ndim(d))
        return NULL;
    int nd_ = kiln_ndarray_ndim(big);
    int64_t dims[8];
    if (nd_ > 8)
        return NULL;
    for (int i = 0; i < nd_; i++)
        dims[i] = kiln_ndarray_dim(big, i);
    kiln_ndarray *out = kiln_ndarray_empty(op == '*' ? KILN_FLOAT32 : KILN_INT32, nd_, dims);
    if (!out)
        return NULL;
    const float *cv = kiln_ndarray_data(c), *dv = kiln_ndarray_data(d);
    for (int64_t i = 0; i < kiln_ndarray_numel(big); i++) {
        float a = cv[nc == 1 ? 0 : i], b = dv[nd == 1 ? 0 : i];
        if (op == '*') {
            ((float *)kiln_ndarray_data(out))[i] = a * b;
            continue;
        }
        double q = rint((double)b / a);
        if (!(a != 0) || !(fabs(q) < 1073741824.0)) {
            kiln_ndarray_free(out);
            return NULL;
        }
        ((int32_t *)kiln_ndarray_data(out))[i] = (int32_t)q;
    }
    return out;
}

/* (float32(acc) * c) * d -> float32(acc) * (c * d): a batch norm's scale
 * after a quantized convolution joins the dequantization's */
static int fold_scales(kiln_rewrite *rw, const rule *r) {
    const gnode *c = rule_pre(rw, r->x[2]), *d = rule_pre(rw, r->x[3]);
    if (!folds_alone(rw, r, r->x[4]))
        return KILN_REWRITE_SKIP;
    kiln_ndarray *m = combine(c->value, d->value, '*');
    if (!m)
        return KILN_REWRITE_SKIP;
    int id = kiln_graph_const(kiln_rewrite_post(rw), "scale", m);
    kiln_ndarray_free(m);
    int in[2] = {rule_post(rw, r->x[1]), id};
    return id < 0 ? -1 : rule_call(rw, "multiply", 2, in, "", rule_root(rw)->name);
}

/* float32(acc) * c + d -> float32(acc + rint(d / c)) * c: a bias (or a
 * batch norm's shift) onto the accumulator's grid, as FakeQuantizationToInteger
 * puts nn.bias_add, so the requantization folds */
static int fold_shift(kiln_rewrite *rw, const rule *r) {
    const gnode *c = rule_pre(rw, r->x[2]), *d = rule_pre(rw, r->x[3]);
    if (!folds_alone(rw, r, r->x[4]))
        return KILN_REWRITE_SKIP;
    kiln_ndarray *q = combine(c->value, d->value, '/');
    if (!q)
        return KILN_REWRITE_SKIP;
    const char *name = rule_root(rw)->name;
    int id = kiln_graph_const(kiln_rewrite_post(rw), "bias_quantized", q);
    kiln_ndarray_free(q);
    int in[2] = {rule_post(rw, r->x[4]), id};
    int sum = id < 0 ? -1 : rule_call(rw, "add", 2, in, "", name);
    int f = sum < 0 ? -1 : rule_call(rw, "cast", 1, &sum, "dtype=\"float32\"", name);
    int m[2] = {f, rule_post(rw, r->x[2])};
    return f < 0 ? -1 : rule_call(rw, "multiply", 2, m, "", name);
}

/* Whether float node n holds integers: round(x), or round(x) plus an
 * integral constant. */
static int integral_f32(const struct kiln_graph *g, const gnode *n) {
    if (n->kind != GN_CALL)
        return 0;
    if (!strcmp(n->op->name, "round"))
        return 1;
    if (strcmp(n->op->name, "add") || n->nin != 2)
        return 0;
    const gnode *a = g->nodes[n->in[0]], *c = g->nodes[n->in[1]];
    double v = scalar_f32(c);
    return a->kind == GN_CALL && !strcmp(a->op->name, "round") && v == rint(v) &&
           fabs(v) < 16777216.0;
}

/* float32(int32(cast8(clip(v, lo, hi))) [- zp]) -> clip(v, lo, hi) [- zp]:
 * a value requantized to 8 bits and at once dequantized (a QDQ pair on a
 * convolution's output read by a float op, such as a QDQ Add) keeps its
 * float form. Exact: v holds integers (integral_f32), the clip's whole
 * bounds keep them in the 8-bit range, so the narrowing, the widening and
 * the int32
 * subtraction change nothing; the kernel saves four conversions a value.
 * Only where nothing else reads the 8-bit value: otherwise the float one
 * would be written out for this reader beside it. */
static int drop_roundtrip(kiln_rewrite *rw, const rule *r) {
    const struct kiln_graph *g = kiln_rewrite_pre(rw);
    const gnode *n = rule_root(rw), *narrow = rule_pre(rw, r->x[0]);
    const gnode *clip = rule_pre(rw, r->x[1]), *zp = r->x[2] ? rule_pre(rw, r->x[2]) : NULL;
    const gnode *wide = g->nodes[n->in[0]];
    kiln_dtype ndt, cdt;
    if (zp) /* the root is float32(subtract(int32(narrow), zp)) */
        wide = g->nodes[g->nodes[n->in[0]]->in[0]];
    const gtensor_type *ct = ops_node_type(clip);
    if (!ct || ct->dtype != KILN_FLOAT32 ||
        kiln_dtype_parse(graph_attr_str(n, "dtype", ""), &cdt) != KILN_OK || cdt != KILN_FLOAT32 ||
        kiln_dtype_parse(graph_attr_str(narrow, "dtype", ""), &ndt) != KILN_OK ||
        (ndt != KILN_UINT8 && ndt != KILN_INT8) || !integral_f32(g, g->nodes[clip->in[0]]) ||
        kiln_rewrite_uses(rw, narrow->id) != 1 ||
        (zp && (kiln_rewrite_uses(rw, wide->id) != 1 ||
                kiln_rewrite_uses(rw, g->nodes[n->in[0]]->id) != 1)))
        return KILN_REWRITE_SKIP;
    if (zp && (strcmp(graph_attr_str(wide, "dtype", ""), "int32") || !is_int_array(zp->value) ||
               kiln_ndarray_numel(zp->value) != 1 || kiln_ndarray_ndim(zp->value) != 0))
        return KILN_REWRITE_SKIP;
    double lo = graph_attr_float(clip, "a_min", -INFINITY),
           hi = graph_attr_float(clip, "a_max", INFINITY);
    /* whole bounds inside the 8-bit range (a fractional bound would make
       the clip's value fractional, which the cast truncates) */
    if (!(lo >= (ndt == KILN_UINT8 ? 0 : -128)) || !(hi <= (ndt == KILN_UINT8 ? 255 : 127)) ||
        lo != rint(lo) || hi != rint(hi))
        return KILN_REWRITE_SKIP;
    int v = rule_post(rw, r->x[1]);
    if (!zp)
        return v;
    int zid = const_f32(rw, (float)int_at(zp->value, 0), "zero_point");
    int in[2] = {v, zid};
    return zid < 0 ? -1 : rule_call(rw, "subtract", 2, in, "", n->name);
}

struct kiln_graph *pass_qnn_canonicalize(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    /* the QNN ops lowered, then the float chains they leave folded */
    rule early[] = {
        /* TFLite's requantization of an accumulator first, while its
           dequantize and product are there */
        {"qnn.quantize(nn.relu(%a=qnn.dequantize(%b, %c=const, %d=const)), %e=const, %f=const)",
         fold_tflite,
         NULL,
         {0}},
        {"qnn.quantize(clip(%a=qnn.dequantize(%b, %c=const, %d=const)), %e=const, %f=const)",
         fold_tflite,
         NULL,
         {0}},
        {"qnn.quantize(%a=qnn.dequantize(%b, %c=const, %d=const), %e=const, %f=const)",
         fold_tflite,
         NULL,
         {0}},
        /* a QDQ Add, as QLinearAdd */
        {"qnn.quantize(nn.relu(%a=add(%b=qnn.dequantize(*, const, const), "
         "%c=qnn.dequantize(*, const, const))), const, const)",
         fold_qadd,
         NULL,
         {0}},
        {"qnn.quantize(%a=add(%b=qnn.dequantize(*, const, const), "
         "%c=qnn.dequantize(*, const, const)), const, const)",
         fold_qadd,
         NULL,
         {0}},
    };
    rule lower[] = {
        {"qnn.conv2d(%a, %b=const, %c=const, %d=const, const, const)", canon_conv, NULL, {0}},
        {"qnn.dense(%a, %b=const, %c=const, %d=const, const, const)", canon_dense, NULL, {0}},
        {"qnn.batch_matmul(%a, %b=const, %c=const, %d=const, const, const)", canon_bmm, NULL, {0}},
        {"qnn.dequantize(%a, %b=const, %c=const)", canon_dequantize, NULL, {0}},
        {"qnn.requantize(%a, %b=const, %c=const, %d=const, %e=const)", canon_requantize, NULL, {0}},
    };
    rule fold[] = {
        {"qnn.quantize(nn.relu(%a=multiply(%b=cast(%c), %d=const)), %e=const, %f=const)",
         fold_requantize,
         NULL,
         {0}},
        {"qnn.quantize(clip(%a=multiply(%b=cast(%c), %d=const)), %e=const, %f=const)",
         fold_requantize,
         NULL,
         {0}},
        {"qnn.quantize(%a=multiply(%b=cast(%c), %d=const), %e=const, %f=const)",
         fold_requantize,
         NULL,
         {0}},
        {"multiply(%a=multiply(%b=cast(%e), %c=const), %d=const)", fold_scales, NULL, {0}},
        {"add(%a=multiply(%b=cast(%e), %c=const), %d=const)", fold_shift, NULL, {0}},
    };
    struct kiln_graph *e = rule_run(g, early, (int)(sizeof early / sizeof early[0]));
    if (!e)
        return NULL;
    struct kiln_graph *l = rule_run(e, lower, (int)(sizeof lower / sizeof lower[0]));
    if (e != g && l != e)
        kiln_graph_free(e);
    if (!l)
        return NULL;
    struct kiln_graph *f = rule_run(l, fold, (int)(sizeof fold / sizeof fold[0]));
    if (l != g && f != l)
        kiln_graph_free(l);
    if (!f)
        return NULL;
    /* then the requantize-dequantize round trips the folds leave */
    rule tidy[] = {
        {"cast(subtract(cast(%a=cast(%b=clip(*))), %c=const))", drop_roundtrip, NULL, {0}},
        {"cast(%a=cast(%b=clip(*)))", drop_roundtrip, NULL, {0}},
    };
    struct kiln_graph *t = rule_run(f, tidy, (int)(sizeof tidy / sizeof tidy[0]));
    if (f != g && t != f)
        kiln_graph_free(f);
    return t;
}
