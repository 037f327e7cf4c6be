/* conv_winograd.c: nn.contrib_conv2d_winograd_NCHWc, 3x3 stride-1 convolutions by Winograd's
 * minimal filtering, F(m x m, 3 x 3), in the blocked layout NCHW[x]c.
 *
 * Each m x m tile of the output comes from an (m+2) x (m+2) tile of the
 * input: V = B^T d B (input transform), U = G g G^T (kernel transform, done
 * once at compile time by AlterOpLayout), M = U .* V summed over input
 * channels, Y = A^T M A (output transform). The sum over input channels is
 * (m+2)^2 independent matrix products, one per position of the transformed
 * tile: [tiles x C] times [C x K]. F(4x4) does 36 multiply-adds per 16
 * outputs and channel pair where the direct convolution does 144; F(2x2)
 * does 16 per 4 where it does 36.
 *
 * Tensors (E = (m+2)^2 positions eps, nu; P = N * tiles):
 *   data     [N, C/x, H, W, x]        NCHW[x]c
 *   weight   [E, K/z, C/x, x, z]      U, packed like a 1x1 NCHW[x]c kernel per position;
 *                                     z is y or 2y (two output blocks side by side)
 *   V        [m+2, m+2, C/x, P, x]    the input transform
 *   M        [m+2, m+2, K/z, P, z]    the products
 *   out      [N, K/y, OH, OW, y]      NCHW[y]c
 * (C and K may include the zero padding of a last block.)
 * The transforms are written out term by term from the constant matrices,
 * selected by the tile position (eps, nu) or output position (i, j): the
 * schedule unrolls those loops, so the selects fold and only the non-zero
 * terms remain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* The matrices of F(2x2, 3x3) and F(4x4, 3x3) (Lavin and Gray, points 0,
 * +-1, +-2 and infinity), row-major: B^T is a x a, G is a x 3, A^T is m x a. */
static const double BT2[16] = {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
static const double G2[12] = {1, 0, 0, .5, .5, .5, .5, -.5, .5, 0, 0, 1};
static const double AT2[8] = {1, 1, 1, 0, 0, 1, -1, -1};
static const double BT4[36] = {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
                               0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1};
static const double G4[18] = {1.0 / 4,  0,         0,        -1.0 / 6, -1.0 / 6, -1.0 / 6,
                              -1.0 / 6, 1.0 / 6,   -1.0 / 6, 1.0 / 24, 1.0 / 12, 1.0 / 6,
                              1.0 / 24, -1.0 / 12, 1.0 / 6,  0,        0,        1};
static const double AT4[24] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0,
                               0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};

typedef struct {
    int m, a;
    const double *bt, *g, *at;
} wino_mats;

static int mats(int m, wino_mats *w) {
    if (m != 2 && m != 4)
        return 0;
    w->m = m;
    w->a = m + 2;
    w->bt = m == 2 ? BT2 : BT4;
    w->g = m == 2 ? G2 : G4;
    w->at = m == 2 ? AT2 : AT4;
    return 1;
}

int ops_winograd_weight(const float *w, int64_t O, int64_t I, int64_t Op, int64_t Ip, int m,
                        int64_t ib, int64_t ob, float *dst) {
    wino_mats W;
    if (!mats(m, &W) || Op % ob || Ip % ib || Op < O || Ip < I)
        return 0;
    int64_t a = W.a;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            const float *g = w + (o * I + i) * 9;
            double t[6][3];
            for (int e = 0; e < a; e++) /* t = G g */
                for (int c = 0; c < 3; c++)
                    t[e][c] =
                        W.g[e * 3] * g[c] + W.g[e * 3 + 1] * g[3 + c] + W.g[e * 3 + 2] * g[6 + c];
            for (int e = 0; e < a; e++) /* U = t G^T */
                for (int n = 0; n < a; n++) {
                    double u =
                        t[e][0] * W.g[n * 3] + t[e][1] * W.g[n * 3 + 1] + t[e][2] * W.g[n * 3 + 2];
                    int64_t at =
                        (((e * a + n) * (Op / ob) + o / ob) * (Ip / ib) + i / ib) * ib * ob;
                    dst[at + (i % ib) * ob + o % ob] = (float)u;
                }
        }
    return 1;
}

/* Non-zero terms of the two-sided transform with L (n x a): the sum of the
 * rows' non-zeros, squared (two_sided writes each output's terms out) */
static double transform_terms(const double *L, int n, int a) {
    int nz = 0;
    for (int i = 0; i < n * a; i++)
        nz += L[i] != 0;
    return (double)nz * nz;
}

/* The cost model (ops.h). Units: one multiply-add of one vector lane.
 * The direct convolution runs near the FMA peak (93-96% in ResNet-50); a
 * Winograd one does its tile products at about 1.5x the time per
 * multiply-add (the reductions are shorter, V and M go through memory:
 * 1.4-1.6x on ResNet-50's stages), plus its transforms, one vector
 * operation per term. Either is bound below by streaming its weights
 * from memory: about 0.115 bytes per multiply-add time with 16 lanes
 * (30 GB/s against 2 cores' 262 G multiply-adds/s), twice that per lane
 * at 8 lanes. Measured on ResNet-50 (2 threads): F(4x4) 0.47x the direct
 * time at 56x56x64 and 28x28x128, F(2x2) 0.65x at 14x14x256 (F(4x4)
 * 0.85x: 9.4 MB of weights), and the direct one best at 7x7x512. */
double ops_conv3x3_cost(int m, int64_t n, int64_t oh, int64_t ow, int64_t C, int64_t O, int lanes,
                        int64_t llc) {
    double bytes_per_mac = 0.115 * 16.0 / (lanes > 0 ? lanes : 16);
    double macs, bytes, imgs = n > 0 ? (double)n : 1.0;
    wino_mats W;
    if (!m) {
        macs = imgs * oh * ow * C * O * 9;
        bytes = 9.0 * C * O * 4;
    } else {
        if (!mats(m, &W))
            return 1e300;
        double a2 = (double)W.a * W.a;
        double tiles = imgs * (double)((oh + m - 1) / m) * (double)((ow + m - 1) / m);
        macs = tiles * (a2 * C * O * 1.5 + transform_terms(W.bt, W.a, W.a) * C +
                        transform_terms(W.at, W.m, W.a) * O);
        bytes = a2 * C * O * 4;
        /* V and M, the transformed tiles of the input and the products, go
           through memory between the three stages; past half the last-level
           cache they stream from DRAM, and the stages ran about 3x slower
           (ResNet-50 at batch 8, 56x56x64, Zen 5: 29 MB, F(4x4) 1.3x the
           direct time where batch 1's 3.6 MB gave 0.47x; 28x28x128's 14 MB
           still 0.63x) */
        double ws = a2 * tiles * (double)(C + O) * 4;
        if (llc > 0 && ws > (double)llc / 2)
            macs *= 3.0;
    }
    double mem = bytes / bytes_per_mac;
    return macs > mem ? macs : mem;
}

/* ---- attribute schema ----------------------------------------------------------------- */

static const attr_schema winograd_attrs[] = {{"tile_size", GA_INT, 1, NULL},
                                             {"strides", GA_INTS, 0, "[1, 1]"},
                                             {"padding", GA_INTS, 0, "[0, 0, 0, 0]"},
                                             {"dilation", GA_INTS, 0, "[1, 1]"},
                                             {"groups", GA_INT, 0, "1"},
                                             {"channels", GA_INT, 0, NULL},
                                             {"kernel_size", GA_INTS, 0, NULL},
                                             {"data_layout", GA_STR, 1, NULL},
                                             {"kernel_layout", GA_STR, 0, NULL},
                                             {"out_layout", GA_STR, 1, NULL},
                                             {NULL, 0, 0, NULL}};

/* ---- the relation ------------------------------------------------------------------- */

static rel_result rel_winograd(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w)
        return r;
    wino_mats W;
    int64_t m = graph_attr_int(call, "tile_size", 0);
    if (!mats((int)m, &W))
        return ops_fail("tile_size must be 2 or 4, got %lld", (long long)m);
    int ib = ops_layout_block(graph_attr_str(call, "data_layout", "NCHW"));
    int ob = ops_layout_block(graph_attr_str(call, "out_layout", "NCHW"));
    if (ib < 1 || ob < 1)
        return ops_fail("data_layout and out_layout must be NCHW[x]c");
    if (x->ndim != 5 || w->ndim != 5)
        return ops_fail("data must be 5-D (NCHW[x]c) and weight 5-D ([positions, O/y, I/x, x, y]), "
                        "got %d-D and %d-D",
                        x->ndim, w->ndim);
    if (x->dtype != KILN_FLOAT32 || w->dtype != KILN_FLOAT32)
        return ops_fail("data and weight must be float32, got %s and %s", kiln_dtype_name(x->dtype),
                        kiln_dtype_name(w->dtype));
    if (!ops_all_known(x, 0, 5) || !ops_all_known(w, 0, 5))
        return ops_fail("every dim must be known");
    if (x->dims[4].v != ib || w->dims[3].v != ib || w->dims[4].v % ob ||
        w->dims[0].v != W.a * W.a || w->dims[2].v != x->dims[1].v)
        return ops_fail("weight [%lld, %lld, %lld, %lld, %lld] does not match tile size %lld, data "
                        "[., %lld, ., ., %lld] and out_layout block %d (a multiple of it last)",
                        (long long)w->dims[0].v, (long long)w->dims[1].v, (long long)w->dims[2].v,
                        (long long)w->dims[3].v, (long long)w->dims[4].v, (long long)m,
                        (long long)x->dims[1].v, (long long)x->dims[4].v, ob);
    int64_t s[2], d[2], p[4];
    ops_attr2(call, "strides", 1, s);
    ops_attr2(call, "dilation", 1, d);
    ops_pad4(call, p);
    if (s[0] != 1 || s[1] != 1 || d[0] != 1 || d[1] != 1)
        return ops_fail("Winograd needs strides and dilation 1");
    if (p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0)
        return ops_fail("padding must be >= 0");
    gtensor_type res = *x;
    int64_t oc;
    if (__builtin_mul_overflow(w->dims[1].v, w->dims[4].v, &oc))
        return ops_fail("weight dims %lld x %lld overflow 64 bits", (long long)w->dims[1].v,
                        (long long)w->dims[4].v);
    res.dims[1] = (gdim){oc / ob, NULL};
    res.dims[4] = (gdim){ob, NULL};
    for (int i = 0; i < 2; i++) {
        int64_t span;
        if (__builtin_add_overflow(x->dims[2 + i].v, p[i], &span) ||
            __builtin_add_overflow(span, p[i + 2], &span))
            return ops_fail("the padded input overflows 64 bits");
        span -= 2;
        if (span < 1)
            return ops_fail("the 3x3 kernel is larger than the padded input");
        res.dims[2 + i] = (gdim){span, NULL};
    }
    return ops_set_out(g, out, &res);
}

/* ---- the compute ---------------------------------------------------------------------- */

typedef struct {
    wino_mats W;
    kiln_tensor *pad, *v, *u, *mm;
    int64_t th, tw; /* tiles per column and row */
    int64_t ob, wb; /* the output block; the weight's (and M's) channel block */
    kiln_expr rc, rci;
} wino_args;

/* sum of coef[k] * term[k] over the non-zero coefficients, adding and
 * subtracting where they are +-1 */
static kiln_expr linear(kiln_ctx *ctx, int n, const double *coef, const kiln_expr *term) {
    kiln_expr s = NULL;
    for (int k = 0; k < n; k++) {
        double c = coef[k];
        if (c == 0)
            continue;
        int neg = s && c < 0;
        double mag = neg ? -c : c;
        kiln_expr t = mag == 1 ? term[k] : kiln_mul(ops_const(ctx, KILN_FLOAT32, mag), term[k]);
        s = !s ? t : neg ? kiln_sub(s, t) : kiln_add(s, t);
    }
    return s ? s : ops_const(ctx, KILN_FLOAT32, 0);
}

/* select(r == 0, v[0], select(r == 1, v[1], ...)) for the row r of n choices */
static kiln_expr choose(kiln_ctx *ctx, kiln_expr r, int n, const kiln_expr *v) {
    kiln_expr e = v[n - 1];
    for (int k = n - 2; k >= 0; k--)
        e = kiln_select(kiln_eq(r, ops_int(ctx, k)), v[k], e);
    return e;
}

/* out[i][j] = sum over (k, l) of L[i][k] * L[j][l] * x[k][l] for a rows
 * of L (n x a), picked by (ri, rj) */
static kiln_expr two_sided(kiln_ctx *ctx, int n, int a, const double *L, kiln_expr ri, kiln_expr rj,
                           const kiln_expr *x) {
    kiln_expr rows[6] = {0};
    for (int i = 0; i < n; i++) {
        kiln_expr cols[6] = {0};
        for (int j = 0; j < n; j++) {
            double coef[36];
            for (int k = 0; k < a; k++)
                for (int l = 0; l < a; l++)
                    coef[k * a + l] = L[i * a + k] * L[j * a + l];
            cols[j] = linear(ctx, a * a, coef, x);
        }
        rows[i] = choose(ctx, rj, n, cols);
    }
    return choose(ctx, ri, n, rows);
}

/* V[eps, nu, cb, p, ci] = (B^T d B)[eps][nu] for tile p */
static kiln_expr v_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    wino_args *w = u;
    int64_t m = w->W.m, a = w->W.a, per = w->th * w->tw;
    kiln_expr n = kiln_floordiv(i[3], ops_int(ctx, per)),
              t = kiln_floormod(i[3], ops_int(ctx, per));
    kiln_expr h0 = kiln_mul(kiln_floordiv(t, ops_int(ctx, w->tw)), ops_int(ctx, m));
    kiln_expr w0 = kiln_mul(kiln_floormod(t, ops_int(ctx, w->tw)), ops_int(ctx, m));
    kiln_expr d[36];
    for (int k = 0; k < a; k++)
        for (int l = 0; l < a; l++) {
            kiln_expr ix[5] = {n, i[2], kiln_add(h0, ops_int(ctx, k)),
                               kiln_add(w0, ops_int(ctx, l)), i[4]};
            d[k * a + l] = kiln_tensor_at(w->pad, 5, ix);
        }
    return two_sided(ctx, (int)a, (int)a, w->W.bt, i[0], i[1], d);
}

/* M[eps, nu, kb, p, ki] = sum over input channels of V * U */
static kiln_expr m_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    wino_args *w = u;
    kiln_expr e = kiln_add(kiln_mul(i[0], ops_int(ctx, w->W.a)), i[1]);
    kiln_expr vi[5] = {i[0], i[1], w->rc, i[3], w->rci}, ui[5] = {e, i[2], w->rc, w->rci, i[4]};
    kiln_expr axes[2] = {w->rc, w->rci};
    return kiln_sum(kiln_mul(kiln_tensor_at(w->v, 5, vi), kiln_tensor_at(w->u, 5, ui)), 2, axes);
}

/* out[n, kb, h, w, ki] = (A^T M A)[h % m][w % m] of tile (n, h / m, w / m) */
static kiln_expr y_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    wino_args *w = u;
    kiln_expr m = ops_int(ctx, w->W.m);
    kiln_expr p =
        kiln_add(kiln_mul(kiln_add(kiln_mul(i[0], ops_int(ctx, w->th)), kiln_floordiv(i[2], m)),
                          ops_int(ctx, w->tw)),
                 kiln_floordiv(i[3], m));
    int a = w->W.a;
    kiln_expr kb = i[1], kc = i[4]; /* M's block of wb channels holds wb / y output blocks */
    if (w->wb != w->ob) {
        kiln_expr r = ops_int(ctx, w->wb / w->ob);
        kb = kiln_floordiv(i[1], r);
        kc = kiln_add(kiln_mul(kiln_floormod(i[1], r), ops_int(ctx, w->ob)), i[4]);
    }
    kiln_expr x[36];
    for (int k = 0; k < a; k++)
        for (int l = 0; l < a; l++) {
            kiln_expr ix[5] = {ops_int(ctx, k), ops_int(ctx, l), kb, p, kc};
            x[k * a + l] = kiln_tensor_at(w->mm, 5, ix);
        }
    return two_sided(ctx, w->W.m, a, w->W.at, kiln_floormod(i[2], m), kiln_floormod(i[3], m), x);
}

static kiln_status compute_winograd(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    wino_args w;
    memset(&w, 0, sizeof w);
    if (!mats((int)graph_attr_int(call, "tile_size", 0), &w.W))
        return kiln_set_error(KILN_ERR_INVALID, "winograd: tile_size must be 2 or 4");
    int64_t od[5], xd[5], wd[5], pad[4];
    ops_out_shape(call, od);
    ops_shape(in[0], xd);
    ops_shape(in[1], wd);
    ops_pad4(call, pad);
    int64_t m = w.W.m, a = w.W.a;
    w.th = (od[2] + m - 1) / m;
    w.tw = (od[3] + m - 1) / m;
    /* pad the bottom and right further so every tile reads inside */
    pad[2] = w.th * m + 2 - xd[2] - pad[0];
    pad[3] = w.tw * m + 2 - xd[3] - pad[1];
    w.pad = ops_pad_spatial(ctx, call, in[0], pad, 0);
    w.u = in[1];
    if (!w.pad)
        return KILN_ERR_INVALID;
    int64_t P = xd[0] * w.th * w.tw;
    w.ob = od[4];
    w.wb = wd[4];
    int64_t vd[5] = {a, a, xd[1], P, xd[4]}, md[5] = {a, a, wd[1], P, wd[4]};
    w.v = ops_compute(ctx, call, ".V", 5, vd, v_body, &w);
    if (!w.v)
        return KILN_ERR_INVALID;
    w.rc = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[1]), "rco");
    w.rci = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[4]), "rci");
    w.mm = ops_compute(ctx, call, ".M", 5, md, m_body, &w);
    if (!w.mm)
        return KILN_ERR_INVALID;
    out[0] = ops_compute(ctx, call, "", 5, od, y_body, &w);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the schedule ----------------------------------------------------------------------
 * Three loop nests, each parallel:
 *   V: per (input block, tile), all (m+2)^2 positions unrolled, x channels a
 *      vector: the selects on (eps, nu) fold to the terms of one position;
 *   M: per (position, output-block group), the register-blocked product of
 *      the direct convolution's schedule (ops_register_block: reg_n tiles by
 *      ocb output blocks of accumulators while the input channels reduce);
 *   out: per (batch, output block, tile row), each tile's m x m outputs
 *      unrolled (the selects on h % m, w % m fold) with the epilogue. */
static kiln_status schedule_winograd(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                     kiln_tensor *out, const kiln_target *target) {
    int64_t od[5], md[5];
    int m = (int)graph_attr_int(call, "tile_size", 0);
    kiln_tensor *ins[4];
    if (kiln_tensor_ndim(out) != 5 || ops_shape(out, od) != 5 || (m != 2 && m != 4) ||
        kiln_tensor_inputs(anchor, ins, 4) != 1)
        return KILN_OK;
    kiln_tensor *mt = ins[0], *vt = NULL;
    if (kiln_tensor_inputs(mt, ins, 4) != 2)
        return KILN_OK;
    vt = ins[0];
    ops_shape(mt, md);
    int lanes = target_lanes(target), nregs = target->vector_regs;
    int64_t vecs = (md[4] + lanes - 1) / lanes, reg_n, ocb;
    int pixels_inner;
    int64_t vd[5];
    ops_shape(vt, vd);
    int64_t block_bytes =
        vd[2] * vd[4] * md[4] * 4; /* one output block's weights at one position */
    ops_register_block_knobs(s, "winograd", md[3], md[2], vecs, nregs, 0, block_bytes,
                             ops_cache_bytes(target, 1, 32 << 10), &reg_n, &ocb, &pixels_inner);
    kiln_status st;
    kiln_expr ax[5], f;

    /* V */
    kiln_stage *sv = kiln_schedule_stage(s, vt);
    if (!sv)
        return KILN_ERR_INVALID;
    if ((st = kiln_compute_root(sv)) != KILN_OK)
        return st;
    for (int i = 0; i < 5; i++)
        ax[i] = kiln_tensor_axis(vt, i);
    kiln_expr vorder[5] = {ax[2], ax[3], ax[0], ax[1], ax[4]};
    if ((st = kiln_reorder(sv, 5, vorder)) != KILN_OK ||
        (st = kiln_fuse(sv, ax[2], ax[3], &f)) != KILN_OK ||
        (st = kiln_parallel(sv, f)) != KILN_OK || (st = kiln_unroll(sv, ax[0])) != KILN_OK ||
        (st = kiln_unroll(sv, ax[1])) != KILN_OK || (st = kiln_vectorize(sv, ax[4])) != KILN_OK)
        return st;

    /* M */
    kiln_tensor *ml = kiln_cache_write(s, mt, "local");
    if (!ml)
        return KILN_ERR_INVALID;
    kiln_stage *sm = kiln_schedule_stage(s, mt), *sl = kiln_schedule_stage(s, ml);
    if (!sm || !sl)
        return KILN_ERR_INVALID;
    if ((st = kiln_set_scope(sl, "local")) != KILN_OK)
        return st;
    for (int i = 0; i < 5; i++)
        ax[i] = kiln_tensor_axis(mt, i);
    kiln_expr po, pi, ko, ki;
    if ((st = kiln_split(sm, ax[3], reg_n, &po, &pi)) != KILN_OK ||
        (st = kiln_split(sm, ax[2], ocb, &ko, &ki)) != KILN_OK)
        return st;
    kiln_expr morder[7] = {ax[0], ax[1], ko, po, ki, pi, ax[4]};
    if ((st = kiln_reorder(sm, 7, morder)) != KILN_OK ||
        (st = kiln_fuse(sm, ax[0], ax[1], &f)) != KILN_OK ||
        (st = kiln_fuse(sm, f, ko, &f)) != KILN_OK || (st = kiln_parallel(sm, f)) != KILN_OK ||
        (st = kiln_unroll(sm, ki)) != KILN_OK || (st = kiln_unroll(sm, pi)) != KILN_OK ||
        (st = kiln_vectorize(sm, ax[4])) != KILN_OK ||
        (st = kiln_compute_at(sl, sm, po)) != KILN_OK)
        return st;
    if ((st = ops_schedule_accumulators(sl, ml, 2, 3, pixels_inner)) != KILN_OK)
        return st;

    /* out (the output transform inlined into the epilogue) */
    kiln_stage *so = kiln_schedule_stage(s, out);
    if (!so)
        return KILN_ERR_INVALID;
    if (anchor != out) {
        kiln_stage *sa = kiln_schedule_stage(s, anchor);
        if (!sa)
            return KILN_ERR_INVALID;
        if ((st = kiln_compute_inline(sa)) != KILN_OK)
            return st;
    }
    for (int i = 0; i < 5; i++)
        ax[i] = kiln_tensor_axis(out, i);
    kiln_expr ho, hi, wo, wi;
    if ((st = kiln_split(so, ax[2], m, &ho, &hi)) != KILN_OK ||
        (st = kiln_split(so, ax[3], m, &wo, &wi)) != KILN_OK)
        return st;
    kiln_expr oorder[7] = {ax[0], ax[1], ho, wo, hi, wi, ax[4]};
    if ((st = kiln_reorder(so, 7, oorder)) != KILN_OK ||
        (st = kiln_fuse(so, ax[0], ax[1], &f)) != KILN_OK ||
        (st = kiln_fuse(so, f, ho, &f)) != KILN_OK || (st = kiln_parallel(so, f)) != KILN_OK ||
        (st = kiln_unroll(so, hi)) != KILN_OK || (st = kiln_unroll(so, wi)) != KILN_OK)
        return st;
    return kiln_vectorize(so, ax[4]);
}

/* ---- the table ------------------------------------------------------------------------ */

const kiln_op_def ops_winograd_rows[] = {
    {.name = "nn.contrib_conv2d_winograd_NCHWc",
     .min_in = 2,
     .max_in = 2,
     .attrs = winograd_attrs,
     .rel = rel_winograd,
     .pattern = OP_OUT_ELEMWISE_FUSABLE,
     .compute = compute_winograd,
     .summary = "3x3 stride-1 convolution by Winograd F(m x m, 3 x 3), NCHW[x]c, kernel "
                "pre-transformed (nn.conv2d's layout hook makes it)",
     .schedule = schedule_winograd},
};

const int ops_winograd_count = (int)(sizeof ops_winograd_rows / sizeof ops_winograd_rows[0]);
