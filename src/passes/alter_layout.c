/* alter_layout.c: AlterOpLayout, TVM's x86 layout rewrite.
 *
 * Convolutions (any groups; depthwise as its own case) with constant float32 weights
 * become nn.contrib_conv2d_NCHWc: data in NCHW[x]c, weights packed here at
 * compile time into OIHW[x]i[y]o, output in NCHW[y]c. The block fits one
 * vector register (16 floats with AVX-512, 8 with AVX2): see channel_block.
 *
 * The blocked layout then flows as far as it can, so transforms stay rare:
 * elementwise and broadcasting ops (relu, add, multiply, ..., and
 * nn.bias_add) keep it, with constant per-channel operands re-laid out
 * here and others transformed; pooling keeps it (layout="NCHW[x]c"). Every
 * other consumer, and every graph output, gets NCHW back through one
 * layout_transform per tensor.
 *
 * A per-channel constant multiply right after such a convolution (a batch
 * norm's scale, once SimplifyInference split it) is folded into the packed
 * weights, as TVM's FoldScaleAxis does.
 *
 * nn.dense with a constant [units, in] weight gets it packed into column
 * panels [units/nr, in, nr] (weight_layout="NC[nr]n", TVM's dense_pack),
 * so the dense schedule's register tile reads whole weight vectors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "passes.h"

typedef struct {
    const struct kiln_graph *g;
    struct kiln_graph *r;
    int lanes;
    const kiln_target *target;
    int winograd; /* pass_env's: -1 decide, 0 never, 2 or 4 always where it applies */
    int *map;   /* old id -> new id, in the layout blk says */
    int *blk;   /* old id -> its new node's channel block (0: plain) */
    int *plain; /* old id -> a plain (NCHW) version, or -1 until asked */
    int *alt;   /* old id -> a version blocked by alt_b, or -1 */
    int *alt_b;
    int *folded; /* old id of a multiply folded into its convolution -> that conv, else -1 */
} alter;

/* A call in the new graph, typed. */
static int call(alter *A, const char *op, int nin, const int *in, const char *attrs,
                const char *name) {
    int id = kiln_graph_call(A->r, op, nin, in, attrs, name);
    if (id < 0 || graph_infer_node(A->r, id) != KILN_OK) return -1;
    return id;
}

static const char *layout_name(char *buf, size_t cap, int b) {
    if (b) snprintf(buf, cap, "NCHW%dc", b);
    else snprintf(buf, cap, "NCHW");
    return buf;
}

static const gtensor_type *type_of(const gnode *n) {
    return n->type.known && !n->type.is_tuple && n->type.n == 1 ? &n->type.t[0] : NULL;
}

static int transform(alter *A, int id, int from, int to) {
    char attrs[160], s1[32], s2[32], nm[600];
    const gtensor_type *t = type_of(A->g->nodes[id]);
    /* the logical channels, for a blocked source whose last block is padded */
    long long c = from && t && t->ndim == 4 ? (long long)t->dims[1].v : 0;
    snprintf(attrs, sizeof attrs, "src_layout=\"%s\", dst_layout=\"%s\", channels=%lld",
             layout_name(s1, sizeof s1, from), layout_name(s2, sizeof s2, to), c);
    snprintf(nm, sizeof nm, "%s.%s", A->g->nodes[id]->name, s2);
    int in = A->map[id];
    return call(A, "layout_transform", 1, &in, attrs, nm);
}

/* Old node id in plain NCHW (its usual form). */
static int as_plain(alter *A, int id) {
    if (!A->blk[id]) return A->map[id];
    if (A->plain[id] < 0) A->plain[id] = transform(A, id, A->blk[id], 0);
    return A->plain[id];
}

/* Old node id (4-D NCHW) blocked by b. */
static int as_blocked(alter *A, int id, int b) {
    if (A->blk[id] == b) return A->map[id];
    if (A->alt[id] >= 0 && A->alt_b[id] == b) return A->alt[id];
    int t = transform(A, id, A->blk[id], b);
    A->alt[id] = t;
    A->alt_b[id] = b;
    return t;
}

/* The channel block for n channels: the widest power of two dividing n
 * that fits a register (a whole or half vector beats an odd width the
 * code generator must split, e.g. 24 channels: 3 blocks of 8, not 2 of
 * 12), else TVM's choice, the largest divisor that fits. Where `pad` allows
 * and that block is narrower than a register, a whole register with the
 * last block padded with zeros, if the padding is at most a third of n:
 * ShuffleNetV2's 116 channels were 29 blocks of 4, a quarter of each
 * AVX-512 multiply-add, and become 8 blocks of 16 (128 channels); 24 and
 * 40 channels become 2 and 3 blocks of 16 (MobileNetV2 2 % faster,
 * EfficientNet-B0 even, in interleaved runs; an eighth, which left them
 * at 8, and a half measured no better). */
static int64_t channel_block(int64_t n, int64_t lanes, int pad) {
    int64_t b = 1;
    for (int64_t p = lanes; p >= 4 && b == 1; p /= 2)
        if (n % p == 0) b = p;
    for (int64_t d = lanes < n ? lanes : n; d > 1 && b == 1; d--)
        if (n % d == 0) b = d;
    if (pad && b < lanes && n > lanes && (n + lanes - 1) / lanes * lanes - n <= n / 3) b = lanes;
    return b;
}


static int all_static(const gtensor_type *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->dims[d].sym) return 0;
    return 1;
}

/* The call's attributes as text, leaving out those named in skip (a
 * NULL-terminated list), then `extra`. */
static char *attrs_text(const gnode *n, const char *const *skip, const char *extra) {
    kstr s;
    kstr_init(&s);
    for (int i = 0; i < n->nattr; i++) {
        int drop = 0;
        for (const char *const *k = skip; *k; k++) drop |= !strcmp(*k, n->attrs[i].name);
        if (drop) continue;
        if (s.len) kstr_puts(&s, ", ");
        graph_print_attr(&s, &n->attrs[i]);
    }
    if (extra && *extra) {
        if (s.len) kstr_puts(&s, ", ");
        kstr_puts(&s, extra);
    }
    return kstr_take(&s);
}

/* The Winograd tile for a convolution of C -> O channels, or 0 for the
 * direct convolution: the cheapest by ops_conv3x3_cost, or the build
 * option's. Only 3x3, stride 1, dilation 1, ungrouped. */
static int winograd_tile(const alter *A, const gnode *n, int64_t O, int64_t C, int64_t KH,
                         int64_t KW, int64_t groups, const gtensor_type *ot) {
    int64_t s[2], d[2];
    ops_attr2(n, "strides", 1, s);
    ops_attr2(n, "dilation", 1, d);
    if (A->winograd == 0 || KH != 3 || KW != 3 || groups != 1 || s[0] != 1 || s[1] != 1 ||
        d[0] != 1 || d[1] != 1)
        return 0;
    if (A->winograd > 0) return A->winograd;
    int64_t oh = ot->dims[2].v, ow = ot->dims[3].v;
    int best = 0;
    double cost = ops_conv3x3_cost(0, oh, ow, C, O, A->lanes);
    for (int m = 2; m <= 4; m += 2) {
        double c = ops_conv3x3_cost(m, oh, ow, C, O, A->lanes);
        if (c < cost) cost = c, best = m;
    }
    return best;
}

/* ---- conv2d -> nn.contrib_conv2d_NCHWc ----------------------------------------------- */

/* The blocked convolution `op` replacing n: its packed weight pw (taken)
 * named wname, n's input blocked by ib, output blocked by ob, n's other
 * attributes plus `extra`; mul, if not NULL, is the multiply folded into
 * pw. */
static int blocked_conv(alter *A, const gnode *n, const char *op, kiln_ndarray *pw,
                        const char *wname, int64_t ib, int64_t ob, const char *extra,
                        const gnode *mul) {
    int wid = graph_const_take(A->r, wname, pw);
    int xin = wid < 0 ? -1 : as_blocked(A, n->in[0], (int)ib);
    if (xin < 0) return -1;
    static const char *const skip[] = {"data_layout", "kernel_layout", "out_layout", "groups",
                                       NULL};
    char *at = attrs_text(n, skip, extra);
    if (!at) return -1;
    int in[2] = {xin, wid};
    int id = call(A, op, 2, in, at, n->name);
    free(at);
    A->blk[n->id] = (int)ob;
    if (mul) A->folded[mul->id] = n->id;
    return id;
}

/* conv n as nn.contrib_conv2d_winograd_NCHWc with tile m: the kernel
 * transformed here (times the folded scale, if any) */
static int winograd_conv(alter *A, const gnode *n, const gnode *w, const float *src,
                         const float *scale, const gnode *mul, int m, int64_t ib, int64_t ob) {
    int64_t O = kiln_ndarray_dim(w->value, 0), I = kiln_ndarray_dim(w->value, 1);
    int64_t Op = (O + ob - 1) / ob * ob, Ip = (I + ib - 1) / ib * ib; /* padded */
    /* the weight's output channels in blocks of two vectors where they
       pair up: the product's register block then reads one stream of
       weights, not two 16 KB apart whose lines evict each other in L1 */
    int64_t wb = (Op / ob) % 2 == 0 ? 2 * ob : ob;
    int64_t dims[5] = {(m + 2) * (m + 2), Op / wb, Ip / ib, ib, wb};
    kiln_ndarray *u = kiln_ndarray_empty(KILN_FLOAT32, 5, dims);
    if (!u) return -1;
    if (!ops_winograd_weight(src, O, I, Op, Ip, scale, m, ib, wb, kiln_ndarray_data(u))) {
        kiln_ndarray_free(u);
        kiln_set_error(KILN_ERR_INVALID, "AlterOpLayout: no Winograd tile %d for %s", m, n->name);
        return -1;
    }
    char nm[600], extra[256];
    snprintf(nm, sizeof nm, "%s.winograd%d", w->name, m);
    snprintf(extra, sizeof extra,
             "tile_size=%d, groups=1, data_layout=\"NCHW%dc\", kernel_layout=\"EOI%di%do\", "
             "out_layout=\"NCHW%dc\"",
             m, (int)ib, (int)ib, (int)wb, (int)ob);
    return blocked_conv(A, n, "nn.contrib_conv2d_winograd_NCHWc", u, nm, ib, ob, extra,
                        scale ? mul : NULL);
}

static int alter_conv(alter *A, const gnode *n) {
    const struct kiln_graph *g = A->g;
    const gnode *x = g->nodes[n->in[0]], *w = g->nodes[n->in[1]];
    const gtensor_type *xt = type_of(x), *ot = type_of(n);
    if (w->kind != GN_CONST || !xt || !ot || xt->dtype != KILN_FLOAT32 || xt->ndim != 4 ||
        !all_static(xt) || !all_static(ot) || kiln_ndarray_dtype(w->value) != KILN_FLOAT32 ||
        kiln_ndarray_ndim(w->value) != 4 ||
        strcmp(graph_attr_str(n, "data_layout", "NCHW"), "NCHW") ||
        strcmp(graph_attr_str(n, "kernel_layout", "OIHW"), "OIHW"))
        return REBUILD_COPY;
    int64_t O = kiln_ndarray_dim(w->value, 0), I = kiln_ndarray_dim(w->value, 1);
    int64_t KH = kiln_ndarray_dim(w->value, 2), KW = kiln_ndarray_dim(w->value, 3);
    int64_t C = xt->dims[1].v, groups = graph_attr_int(n, "groups", 1);
    int dw = groups > 1 && groups == C && O == C && I == 1;
    if (groups < 1 || C % groups || O % groups || I * groups != C) return REBUILD_COPY;
    /* the input's block: keep the producer's when it divides the channels
       of a group (no block may straddle two groups; without groups, or
       depthwise, the last block may be padded) */
    int pad = groups == 1 || dw;
    int64_t icg = dw ? C : C / groups, ocg = O / groups; /* depthwise: blocks span channels */
    int64_t ib = A->blk[x->id] && (pad || icg % A->blk[x->id] == 0)
                     ? A->blk[x->id]
                     : channel_block(icg, A->lanes, pad);
    int64_t ob = dw ? ib : channel_block(ocg, A->lanes, pad);
    /* packed weight: [O/ob, I/ib, KH, KW, ib, ob] (I: a group's input channels; output
       block o reads input blocks of its group); depthwise [C/b, 1, KH, KW, 1, b]; the
       padded channels' weights are zeros */
    int64_t Ob = (O + ob - 1) / ob, ibw = dw ? 1 : ib, Ic = dw ? 1 : (I + ib - 1) / ib;
    int64_t dims[6] = {Ob, Ic, KH, KW, ibw, ob};
    /* FoldScaleAxis: a per-channel constant multiply that is the conv's only
       consumer (a batch norm's scale) goes into the packed weights */
    const gnode *mul = NULL;
    const float *scale = NULL;
    for (int c = n->id + 1, uses = 0; c < g->n && uses <= 1; c++) {
        const gnode *u = g->nodes[c];
        int reads = 0;
        for (int i = 0; i < u->nin; i++) reads |= u->in[i] == n->id;
        if (!reads) continue;
        uses++;
        mul = uses == 1 ? u : NULL;
    }
    for (int k = 0; mul && k < g->nout; k++)
        if (g->outs[k] == n->id) mul = NULL;
    if (mul && mul->kind == GN_CALL && !strcmp(mul->op->name, "multiply") && mul->nin == 2) {
        const gnode *sc = g->nodes[mul->in[mul->in[0] == n->id ? 1 : 0]];
        const gtensor_type *st = type_of(sc);
        int per_channel = sc->kind == GN_CONST && st && st->dtype == KILN_FLOAT32 &&
                          st->ndim >= 3 && st->ndim <= 4 && st->dims[st->ndim - 3].v == O &&
                          mul->in[0] != mul->in[1];
        for (int d = 0; per_channel && d < st->ndim; d++)
            per_channel = d == st->ndim - 3 || st->dims[d].v == 1;
        if (per_channel) scale = kiln_ndarray_data(sc->value);
    }
    const float *src = kiln_ndarray_data(w->value);
    int wm = dw ? 0 : winograd_tile(A, n, O, C, KH, KW, groups, ot);
    if (wm) return winograd_conv(A, n, w, src, scale, mul, wm, ib, ob);
    if (dw) groups = Ob * ob; /* the padded channels are groups of their own */
    kiln_ndarray *pw = kiln_ndarray_empty(KILN_FLOAT32, 6, dims);
    if (!pw) return -1;
    float *dst = kiln_ndarray_data(pw);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++)
            for (int64_t h = 0; h < KH; h++)
                for (int64_t k = 0; k < KW; k++) {
                    int64_t oc = o / ob, ocb = o % ob, icc = dw ? 0 : i / ib, icb = dw ? 0 : i % ib;
                    dst[((((oc * Ic + icc) * KH + h) * KW + k) * ibw + icb) * ob + ocb] =
                        src[((o * I + i) * KH + h) * KW + k] * (scale ? scale[o] : 1.0f);
                }
    char nm[600], extra[256];
    snprintf(nm, sizeof nm, "%s.OIHW%di%do", w->name, (int)ibw, (int)ob);
    snprintf(extra, sizeof extra,
             "groups=%lld, data_layout=\"NCHW%dc\", kernel_layout=\"OIHW%di%do\", "
             "out_layout=\"NCHW%dc\"",
             (long long)groups, (int)ib, (int)ibw, (int)ob, (int)ob);
    return blocked_conv(A, n, "nn.contrib_conv2d_NCHWc", pw, nm, ib, ob, extra, scale ? mul : NULL);
}

/* ---- ops that keep the blocked layout ------------------------------------------------- */

static int is_pool(const gnode *n) {
    const char *o = n->op->name;
    return !strcmp(o, "nn.max_pool2d") || !strcmp(o, "nn.avg_pool2d") ||
           !strcmp(o, "nn.global_avg_pool2d") || !strcmp(o, "nn.global_max_pool2d");
}

static int alter_pool(alter *A, const gnode *n) {
    int b = A->blk[n->in[0]];
    if (!b || strcmp(graph_attr_str(n, "layout", "NCHW"), "NCHW")) return REBUILD_COPY;
    char extra[64];
    snprintf(extra, sizeof extra, "layout=\"NCHW%dc\"", b);
    static const char *const skip[] = {"layout", NULL};
    char *at = attrs_text(n, skip, extra);
    if (!at) return -1;
    int in = A->map[n->in[0]];
    int id = call(A, n->op->name, 1, &in, at, n->name);
    free(at);
    A->blk[n->id] = b;
    return id;
}

/* Elementwise and broadcasting ops with no axis or shape: each element of
 * the output depends on the same element of each input, whatever the
 * layout. */
static int layout_agnostic(const gnode *n) {
    if (n->op->pattern != OP_ELEMWISE && n->op->pattern != OP_BROADCAST) return 0;
    for (const attr_schema *a = n->op->attrs; a && a->name; a++)
        if (!strcmp(a->name, "axis") || !strcmp(a->name, "shape")) return 0;
    return 1;
}

/* A constant of logical shape dims4 (right-aligned to [n, C or 1, h, w]) as
 * a blocked [n, C/b or 1, h, w, b or 1] constant. */
static int block_const(alter *A, const gnode *c, const int64_t *d4, int b) {
    int64_t C = d4[1], bb = C == 1 ? 1 : b;
    int64_t dims[5] = {d4[0], (C + bb - 1) / bb, d4[2], d4[3], bb}; /* padding: zeros */
    kiln_ndarray *t = kiln_ndarray_empty(kiln_ndarray_dtype(c->value), 5, dims);
    if (!t) return -1;
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(c->value));
    const char *src = kiln_ndarray_data(c->value);
    char *dst = kiln_ndarray_data(t);
    for (int64_t n = 0; n < d4[0]; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t h = 0; h < d4[2]; h++)
                for (int64_t w = 0; w < d4[3]; w++) {
                    int64_t s = ((n * C + ch) * d4[2] + h) * d4[3] + w;
                    int64_t o = ((((n * dims[1] + ch / bb) * d4[2] + h) * d4[3]) + w) * bb + ch % bb;
                    memcpy(dst + o * (int64_t)es, src + s * (int64_t)es, es);
                }
    char nm[600];
    snprintf(nm, sizeof nm, "%s.NCHW%dc", c->name, (int)bb);
    return graph_const_take(A->r, nm, t);
}

/* Input `id` of an op whose output is blocked by b with logical channels
 * C, in a form that broadcasts against [N, C/b, H, W, b]. -2 if there is
 * none (the op then stays in NCHW). */
static int operand(alter *A, int id, int b, int64_t C) {
    const gnode *p = A->g->nodes[id];
    if (A->blk[id] == b) return A->map[id];
    const gtensor_type *t = type_of(p);
    if (!t || t->ndim > 4 || !all_static(t)) return -2;
    int64_t d4[4] = {1, 1, 1, 1};
    for (int d = 0; d < t->ndim; d++) d4[4 - t->ndim + d] = t->dims[d].v;
    if (A->blk[id]) return t->ndim == 4 && d4[1] == C ? as_blocked(A, id, b) : -2;
    if (d4[1] != C && d4[1] != 1) return -2;
    if (p->kind == GN_CONST) return block_const(A, p, d4, b);
    int src = A->map[id];
    char nm[600], attrs[160];
    if (d4[1] == 1) { /* [.., 1, h, w] -> [n, 1, h, w, 1] */
        snprintf(attrs, sizeof attrs, "newshape=[%lld, 1, %lld, %lld, 1]", (long long)d4[0],
                 (long long)d4[2], (long long)d4[3]);
        snprintf(nm, sizeof nm, "%s.5d", p->name);
        return call(A, "reshape", 1, &src, attrs, nm);
    }
    if (t->ndim < 4) {
        snprintf(attrs, sizeof attrs, "newshape=[%lld, %lld, %lld, %lld]", (long long)d4[0],
                 (long long)d4[1], (long long)d4[2], (long long)d4[3]);
        snprintf(nm, sizeof nm, "%s.4d", p->name);
        int r4 = call(A, "reshape", 1, &src, attrs, nm);
        if (r4 < 0) return -1;
        char s2[32];
        snprintf(attrs, sizeof attrs, "src_layout=\"NCHW\", dst_layout=\"%s\"",
                 layout_name(s2, sizeof s2, b));
        snprintf(nm, sizeof nm, "%s.%s", p->name, s2);
        return call(A, "layout_transform", 1, &r4, attrs, nm);
    }
    return as_blocked(A, id, b);
}

static int alter_elemwise(alter *A, const gnode *n) {
    const gtensor_type *ot = type_of(n);
    int bias = !strcmp(n->op->name, "nn.bias_add");
    if (!ot || ot->ndim != 4 || !all_static(ot)) return REBUILD_COPY;
    if (bias && graph_attr_int(n, "axis", 1) != 1) return REBUILD_COPY;
    if (!bias && !layout_agnostic(n)) return REBUILD_COPY;
    int b = 0;
    for (int i = 0; i < n->nin && !b; i++) {
        const gtensor_type *t = type_of(A->g->nodes[n->in[i]]);
        if (A->blk[n->in[i]] && t && t->ndim == 4) b = A->blk[n->in[i]];
    }
    if (!b) return REBUILD_COPY;
    int in[8];
    if (n->nin > 8) return REBUILD_COPY;
    for (int i = 0; i < n->nin; i++) {
        int src = n->in[i];
        if (bias && i == 1) { /* bias [C] reads as [1, C, 1, 1] */
            const gnode *p = A->g->nodes[src];
            const gtensor_type *t = type_of(p);
            if (p->kind != GN_CONST || !t || t->ndim != 1) return REBUILD_COPY;
            int64_t d4[4] = {1, t->dims[0].v, 1, 1};
            in[i] = block_const(A, p, d4, b);
        } else {
            in[i] = operand(A, src, b, ot->dims[1].v);
        }
        if (in[i] == -2) return REBUILD_COPY;
        if (in[i] < 0) return -1;
    }
    static const char *const skip[] = {"axis", NULL};
    char *at = attrs_text(n, skip, NULL);
    if (!at) return -1;
    int id = call(A, bias ? "add" : n->op->name, n->nin, in, at, n->name);
    free(at);
    A->blk[n->id] = b;
    return id;
}

/* ---- nn.dense: weight [units, in] -> panels [units/nr, in, nr] --------------------------
 * nr is the width of the register tile the dense schedule will use (a
 * multiple of the vector lanes), so each k step of a tile loads whole
 * contiguous weight vectors. When the units have no such divisor the
 * weight is only transposed to [in, units]. */

static int alter_dense(alter *A, const gnode *n, const int *in) {
    if (strcmp(graph_attr_str(n, "weight_layout", "NK"), "NK")) return REBUILD_COPY;
    const gnode *w = A->g->nodes[n->in[1]];
    const gtensor_type *xt = type_of(A->g->nodes[n->in[0]]);
    if (w->kind != GN_CONST || kiln_ndarray_ndim(w->value) != 2 || !xt) return REBUILD_COPY;
    int64_t rows = kiln_ndarray_dim(w->value, 0), cols = kiln_ndarray_dim(w->value, 1);
    int64_t m = xt->ndim >= 2 && !xt->dims[xt->ndim - 2].sym ? xt->dims[xt->ndim - 2].v : 1, mr, nr,
            vl;
    ops_dense_tile(m, rows, cols, A->target, &mr, &nr, &vl);
    int64_t dims[3] = {nr ? rows / nr : cols, nr ? cols : rows, nr};
    kiln_ndarray *t = kiln_ndarray_empty(kiln_ndarray_dtype(w->value), nr ? 3 : 2, dims);
    if (!t) return -1;
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(w->value));
    const char *src = kiln_ndarray_data(w->value);
    char *dst = kiln_ndarray_data(t);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            int64_t o = nr ? ((i / nr) * cols + j) * nr + i % nr : j * rows + i;
            memcpy(dst + o * (int64_t)es, src + (i * cols + j) * (int64_t)es, es);
        }
    char nm[600], attrs[64];
    if (nr) snprintf(attrs, sizeof attrs, "weight_layout=\"NC%dn\"", (int)nr);
    else snprintf(attrs, sizeof attrs, "weight_layout=\"KN\"");
    snprintf(nm, sizeof nm, "%s.%s", w->name, nr ? attrs + 15 : "KN");
    if (nr) nm[strlen(nm) - 1] = 0; /* drop the closing quote */
    int wt = graph_const_take(A->r, nm, t);
    if (wt < 0) return -1;
    int args[2] = {in[0], wt};
    return call(A, "nn.dense", 2, args, attrs, n->name);
}

/* ---- the pass --------------------------------------------------------------------------- */

struct kiln_graph *pass_alter_op_layout(struct kiln_graph *g, const pass_env *env) {
    alter A = {.g = g, .r = graph_new(g->ops), .winograd = -1};
    A.target = env->target;
    A.lanes = target_lanes(env->target);
    A.winograd = env->winograd;
    size_t n = (size_t)(g->n ? g->n : 1);
    A.map = malloc(sizeof(int) * n);
    A.blk = calloc(n, sizeof(int));
    A.plain = malloc(sizeof(int) * n);
    A.alt = malloc(sizeof(int) * n);
    A.alt_b = calloc(n, sizeof(int));
    A.folded = malloc(sizeof(int) * n);
    int *pin = malloc(sizeof(int) * n); /* old id -> plain new id, for copies */
    int ok = A.r && A.map && A.blk && A.plain && A.alt && A.alt_b && A.folded && pin;
    for (int id = 0; ok && id < g->n; id++)
        A.map[id] = A.plain[id] = A.alt[id] = pin[id] = A.folded[id] = -1;
    for (int id = 0; ok && id < g->n; id++) {
        const gnode *node = g->nodes[id];
        int v = REBUILD_COPY;
        if (A.folded[id] >= 0) { /* the scale is in the convolution's weights */
            A.map[id] = A.map[A.folded[id]];
            A.blk[id] = A.blk[A.folded[id]];
            continue;
        }
        if (node->kind == GN_CALL) {
            const char *op = node->op->name;
            if (!strcmp(op, "nn.conv2d")) v = alter_conv(&A, node);
            else if (is_pool(node)) v = alter_pool(&A, node);
            else v = alter_elemwise(&A, node);
        }
        if (v == REBUILD_COPY) {
            A.blk[id] = 0;
            for (int i = 0; i < node->nin && v != -1; i++)
                if ((pin[node->in[i]] = as_plain(&A, node->in[i])) < 0) v = -1;
            if (v != -1 && node->kind == GN_CALL && !strcmp(node->op->name, "nn.dense"))
                v = alter_dense(&A, node, (int[]){pin[node->in[0]], -1});
            if (v == REBUILD_COPY) v = graph_copy_node(A.r, node, pin);
        }
        if (v < 0) ok = 0;
        else A.map[id] = v;
    }
    for (int k = 0; ok && k < g->nout; k++)
        if ((pin[g->outs[k]] = as_plain(&A, g->outs[k])) < 0) ok = 0;
    if (ok && graph_copy_outputs(A.r, g, pin) != KILN_OK) ok = 0;
    free(A.map);
    free(A.blk);
    free(A.plain);
    free(A.alt);
    free(A.alt_b);
    free(A.folded);
    free(pin);
    if (!ok) {
        kiln_graph_free(A.r);
        return NULL;
    }
    return A.r;
}
