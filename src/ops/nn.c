/* nn.c: the matrix ops, softmax and the loss: nn.dense (x * W^T, with its
 * weight packed into column panels by its layout hook and a register-tiled
 * GEMM schedule), nn.batch_matmul (numpy matmul, the same schedule with B
 * read in place), nn.softmax, nn.log_softmax and nn.hardmax (a chain of
 * reductions; softmax over a long last axis in a lane-parallel form with a
 * per-row schedule), nn.nll_loss and nn.nll_loss_weight (the unreduced
 * negative log-likelihood of a class target, and the weight of each
 * target; the ONNX converter reduces them).
 * Rows sharing a compute or schedule differ by `variant`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "ops.h"

/* Row variants. */
enum { MM_DENSE, MM_BATCH };
enum { SM_SOFTMAX, SM_LOG_SOFTMAX, SM_HARDMAX };
enum { NLL_LOSS, NLL_WEIGHT };

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema dense_attrs[] = {{"units", GA_INT, 0, NULL},
                                          {"weight_layout", GA_STR, 0, "\"NK\""},
                                          {"out_dtype", GA_STR, 0, NULL},
                                          {NULL, 0, 0, NULL}};
static const attr_schema batch_matmul_attrs[] = {{"transpose_a", GA_INT, 0, "0"},
                                                 {"transpose_b", GA_INT, 0, "0"},
                                                 {"out_dtype", GA_STR, 0, NULL},
                                                 {NULL, 0, 0, NULL}};
static const attr_schema softmax_attrs[] = {{"axis", GA_INT, 0, "-1"}, {NULL, 0, 0, NULL}};
/* ignore_index: absent, no target is ignored */
static const attr_schema nll_attrs[] = {{"ignore_index", GA_INT, 0, NULL}, {NULL, 0, 0, NULL}};

/* ---- nn.dense ------------------------------------------------------------------------ */

/* The column panel width of a dense weight layout: 0 for "NK" or "KN", x
 * for "NC[x]n" ([units/x, in, x]) and "NC[x]n[k]k" ([units/x, in/k, x,
 * k], the int8 panels of k-element dot products, k in *kp, else 0), -1
 * for anything else. */
static int dense_layout_k(const char *layout, int *kp) {
    *kp = 0;
    if (!layout)
        return -1;
    if (!strcmp(layout, "NK") || !strcmp(layout, "KN"))
        return 0;
    if (strncmp(layout, "NC", 2))
        return -1;
    char *end;
    long b = strtol(layout + 2, &end, 10);
    if (b < 1 || b > 4096 || *end != 'n')
        return -1;
    if (!end[1])
        return (int)b;
    long k = strtol(end + 1, &end, 10);
    if ((k != 2 && k != 4) || strcmp(end, "k"))
        return -1;
    *kp = (int)k;
    return (int)b;
}

static int dense_layout(const char *layout) {
    int kp;
    return dense_layout_k(layout, &kp);
}

rel_result ops_dense_rel(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                         gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *w = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!w)
        return r;
    /* weight_layout "NK" is Relay's [units, in]; "KN" is [in, units]; "NC[x]n"
       is [units/x, in, x], the panels AlterOpLayout packs constant weights into */
    const char *layout = graph_attr_str(call, "weight_layout", "NK");
    int kp, nr = dense_layout_k(layout, &kp);
    if (nr < 0)
        return ops_fail("weight_layout '%s' is not NK, KN, NC[x]n or NC[x]n[k]k", layout);
    int kn = nr == 0 && !strcmp(layout, "KN"), wnd = kp ? 4 : nr ? 3 : 2;
    if (x->ndim < 1 || w->ndim != wnd)
        return ops_fail("dense needs data of rank >= 1 and a %d-D weight (%s), got %d-D and %d-D",
                        wnd, layout, x->ndim, w->ndim);
    kiln_dtype acc;
    if (ops_accum_dtype(call, x, w, &acc) != REL_OK)
        return REL_ERROR;
    if (kp &&
        (acc != KILN_INT32 || x->dtype != KILN_UINT8 ||
         w->dtype != (kp == 4 ? KILN_INT8 : KILN_INT16) || w->dims[3].v != kp || w->dims[1].sym))
        return ops_fail("weight in %s must be [units/%d, in/%d, %d, %d] %s for uint8 data and "
                        "out_dtype int32",
                        layout, nr, kp, nr, kp, kp == 4 ? "int8" : "int16");
    if (nr && (w->dims[2].sym || w->dims[2].v != nr || w->dims[0].sym))
        return ops_fail("weight in %s must be [units/%d, in, %d]", layout, nr, nr);
    gdim kdim = w->dims[nr ? 1 : kn ? 0 : 1];
    if (kp)
        kdim.v *= kp;
    if (!gdim_equal(x->dims[x->ndim - 1], kdim)) {
        char a[64], b[64];
        ops_dim_str(x->dims[x->ndim - 1], a, sizeof a);
        ops_dim_str(kdim, b, sizeof b);
        return ops_fail("data has %s features but the weight expects %s", a, b);
    }
    gtensor_type res = *x;
    res.dtype = acc;
    res.dims[x->ndim - 1] = w->dims[kn ? 1 : 0];
    if (nr && !kiln_mul_ok(w->dims[0].v, nr, &res.dims[x->ndim - 1].v))
        return ops_fail("weight [%lld, ., %d] has too many units", (long long)w->dims[0].v, nr);
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *w;
    int nd, kn, nr, kp;
    kiln_expr k;
    kiln_dtype acc; /* out_dtype, or KILN_DTYPE_COUNT */
} dense_args;

static kiln_expr dense_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    dense_args *a = u;
    kiln_expr xi[KILN_MAX_NDIM];
    memcpy(xi, i, sizeof(kiln_expr) * (size_t)a->nd);
    xi[a->nd - 1] = a->k;
    kiln_expr n = i[a->nd - 1], w;
    if (a->kp) { /* int8 panels: a dot product of kp features per k step */
        kiln_expr xa[4], wb[4];
        for (int j = 0; j < a->kp; j++) {
            xi[a->nd - 1] = kiln_add(kiln_mul(a->k, ops_int(ctx, a->kp)), ops_int(ctx, j));
            kiln_expr wi[4] = {kiln_floordiv(n, ops_int(ctx, a->nr)), a->k,
                               kiln_floormod(n, ops_int(ctx, a->nr)), ops_int(ctx, j)};
            xa[j] = kiln_tensor_at(a->x, a->nd, xi);
            wb[j] = kiln_tensor_at(a->w, 4, wi);
        }
        return kiln_sum(kiln_dot(a->kp, xa, wb), 1, &a->k);
    }
    if (a->nr) {
        kiln_expr wi[3] = {kiln_floordiv(n, ops_int(ctx, a->nr)), a->k,
                           kiln_floormod(n, ops_int(ctx, a->nr))};
        w = kiln_tensor_at(a->w, 3, wi);
    } else {
        kiln_expr wi[2] = {a->kn ? a->k : n, a->kn ? n : a->k};
        w = kiln_tensor_at(a->w, 2, wi);
    }
    return kiln_sum(kiln_mul(ops_accum_operand(a->acc, kiln_tensor_at(a->x, a->nd, xi)),
                             ops_accum_operand(a->acc, w)),
                    1, &a->k);
}

kiln_status ops_dense_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                              kiln_tensor **out) {
    int64_t od[KILN_MAX_NDIM], wd[4];
    int nd = ops_out_shape(call, od);
    ops_shape(in[1], wd);
    const char *layout = graph_attr_str(call, "weight_layout", "NK");
    int kp, nr = dense_layout_k(layout, &kp), kn = nr == 0 && !strcmp(layout, "KN");
    dense_args a = {in[0],
                    in[1],
                    nd,
                    kn,
                    nr > 0 ? nr : 0,
                    kp,
                    kiln_reduce_axis(ctx, ops_int(ctx, 0),
                                     ops_int(ctx, wd[nr > 0 ? 1
                                                     : kn   ? 0
                                                            : 1]),
                                     "k"),
                    ops_out_dtype(call)};
    out[0] = ops_compute(ctx, call, "", nd, od, dense_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the dense schedule ---------------------------------------------------------------
 * The packed GEMM of bench/matmul_bench.c on the op (and on batch_matmul,
 * whose B is an activation read in place): the output is cut into
 * mr x nr tiles, column panels outermost and in parallel (with the batch
 * dims), each tile's accumulators in registers (the dense stage at the
 * tile, local scope) while k runs; per k step nr/lanes weight vectors and mr
 * broadcasts feed mr*nr/lanes multiply-adds. The epilogue (bias, GELU, the
 * residual add) is the output stage over the same tile. */

/* Whether a row tile of r rows of the row space e[0] x ... x e[n-1] (the
 * dims before the columns, row-major) is always a box: r divides the inner
 * dim, or the inner dim divides r and r / e[n-1] tiles the rest so. The
 * accumulator of a tile covers the box its rows span, so a tile that
 * straddles rows of the inner dim (r = 4 over [14, 14]) would compute more
 * than its rows, in more registers than the tile has. */
static int rows_box(int64_t r, const int64_t *e, int n) {
    int big = 0;
    for (int d = 0; d < n; d++)
        big += e[d] > 1;
    if (big <= 1)
        return 1; /* one row dim (the rest 1): any tile, the last one cut short */
    for (int d = n - 1; d >= 0; d--) {
        if (e[d] % r == 0)
            return 1;
        if (r % e[d])
            return 0;
        r /= e[d];
    }
    return r == 1;
}

/* The rows of a dense output od[0, nd) that its schedule tiles: with every
 * dim before the columns static, all of them as one row space (the weight
 * panel is then read once per column panel, not once per leading index:
 * [1, 14, 14, 384] x 384 -> 1536 ran 1.8x slower than [1, 196, 384] with
 * the leading dims outside); else the second-to-last dim (a symbolic one at
 * OPS_SYM_EXTENT_HINT) and the leading dims outer loops. Sets *rows to the
 * number of dims it folds (0 when it does not). */
static int64_t dense_rows(int nd, const int64_t *od, int *rows) {
    int64_t m = 1;
    *rows = 0;
    for (int d = 0; d + 1 < nd && nd >= 3; d++) {
        if (od[d] < 0 || !kiln_mul_ok(m, od[d], &m))
            return od[nd - 2] >= 0 ? od[nd - 2] : OPS_SYM_EXTENT_HINT;
    }
    if (nd >= 3) {
        *rows = nd - 1;
        return m;
    }
    return nd >= 2 && od[nd - 2] >= 0 ? od[nd - 2] : nd >= 2 ? OPS_SYM_EXTENT_HINT : 1;
}

/* The register tile of a dense/matmul output with m rows (over the row dims
 * rowdims[0, nrowdims) when they are folded), n columns and a reduction of
 * length k: *mr rows by *nr columns (a multiple of the vector lanes *vl: the
 * register's, or half or a quarter of it when n needs). mr is a box of the
 * row space (rows_box); it need not divide m over one row dim, the last
 * tile cut short. nr divides n, or with col_tail the last panel is cut
 * short; *nr is 0 if there is no usable width. */
static void dense_tile(int64_t m, const int64_t *rowdims, int nrowdims, int64_t n, int64_t k,
                       int col_tail, const kiln_target *target, int64_t *mr, int64_t *nr,
                       int64_t *vl) {
    int nregs = target->vector_regs;
    int64_t l1 = ops_cache_bytes(target, 1, 32 << 10), l2 = ops_cache_bytes(target, 2, 1 << 20);
    double best = -1e30;
    *mr = 1;
    *nr = 0;
    *vl = 0;
    /* whole registers if n allows, else half or quarter ones (n = 1000);
       with col_tail (an unpacked right-hand side), when n has no such
       divisor (attention's 197 keys), whole registers and a last panel
       cut short */
    for (int tail = 0; tail <= col_tail && !*nr; tail++)
        for (int64_t lanes = target_lanes(target); lanes >= 4 && !*nr; lanes /= 2) {
            if (tail && lanes != target_lanes(target))
                break;
            for (int64_t v = 1; v <= 6; v++) {
                if ((!tail && n % (v * lanes)) || (tail && v * lanes > n))
                    continue;
                /* a weight panel (k x nr floats) is read once per row tile: keep
                   it within half of L2, unless even one vector is wider */
                if (v > 1 && k * v * lanes * 4 > l2 / 2)
                    continue;
                for (int64_t r = 1; r <= m && r <= 16; r++) {
                    /* a box of the row space; over one row dim any r, a
                       last tile that does not fill cut short by a guard */
                    if (r * v + v + 1 > nregs || !rows_box(r, rowdims, nrowdims))
                        continue;
                    /* cycles per vector multiply-add: the FMA pipes (2 a cycle),
                       the loads (r + v per k step, 2 a cycle), the weight panel
                       re-read from L2 for every further r rows when it exceeds
                       L1 (a vector of weights, lanes * 4 bytes, per r
                       multiply-adds, at about 16 bytes a cycle: 4/r with 16
                       lanes, 2/r with 8; it was 4/r for both, which kept AVX2
                       at one-vector panels, 13 x 8, on BERT's K = 768: 59 % of
                       the AVX2 peak), and the r * v accumulators' dependency
                       chains (a multiply-add's latency of about 4 cycles: a GEMV
                       with one vector of columns waits on it at every k step) */
                    double loads = (double)(r + v) / (double)(r * v) / 2.0;
                    double reread = m > r && k * v * lanes * 4 > l1
                                        ? (double)(lanes * 4) / 16.0 / (double)r
                                        : 0.0;
                    double chain = 4.0 / (double)(r * v);
                    double cost = loads > 0.5 ? loads : 0.5;
                    if (reread > cost)
                        cost = reread;
                    if (chain > cost)
                        cost = chain;
                    cost *= (double)((m + r - 1) / r * r) / (double)m; /* the tail's idle rows */
                    int64_t w = v * lanes;
                    cost *= (double)((n + w - 1) / w * w) / (double)n; /* and idle columns */
                    double score = -cost + 1e-4 * (double)(r * v);
                    if (score > best) {
                        best = score;
                        *mr = r;
                        *nr = v * lanes;
                        *vl = lanes;
                    }
                }
            }
        }
}

/* Row fusion (op_rows_fn): a row of float32 scores at most this long (16
 * KB) is computed into a local buffer, which stays in L1 while the row op
 * (softmax) reads it. */
#define ROW_FUSE_MAX 4096

/* batch_matmul computes rows when it reads B's rows in place (not
 * transposed) and a row is static and short enough. */
static int rows_matmul(const gnode *call) {
    const gtensor_type *t = ops_node_type(call);
    return call->op->variant == MM_BATCH && t && t->dtype == KILN_FLOAT32 && t->ndim >= 2 &&
           !t->dims[t->ndim - 1].sym && t->dims[t->ndim - 1].v <= ROW_FUSE_MAX &&
           !graph_attr_int(call, "transpose_b", 0);
}

/* The register tile of a matmul output `acc` (batch_matmul, B read in
 * place) whose rows a later stage computes a tile at a time (row fusion):
 * dense_tile's mr x nr over its rows, columns and reduction. */
static void matmul_row_tile(kiln_tensor *acc, const kiln_target *target, int64_t *mr, int64_t *nr,
                            int64_t *vl) {
    int64_t od[KILN_MAX_NDIM], k = ops_reduce_extent(acc, 0);
    int nd = ops_shape(acc, od);
    *mr = 1;
    *nr = *vl = 0;
    if (nd >= 2 && od[nd - 1] > 0)
        dense_tile(od[nd - 2] > 0 ? od[nd - 2] : OPS_SYM_EXTENT_HINT, od, 0, od[nd - 1],
                   k > 0 ? k : 128, 1, target, mr, nr, vl);
}

/* Inside a row tile of a matmul computed at a later stage's row loop (row
 * fusion, the tile's mr rows by all columns in a local buffer): the
 * columns in panels of nr, each panel's mr x nr accumulators in registers
 * while k runs (their own slot copies: tir_promote_slots), rows and
 * vectors unrolled. A panel cut short runs guarded, its last vector
 * masked. */
static kiln_status schedule_matmul_row(kiln_schedule *s, kiln_tensor *acc,
                                       const kiln_target *target) {
    int64_t od[KILN_MAX_NDIM], mr, nr, vl;
    int nd = ops_shape(acc, od);
    kiln_stage *sc = kiln_schedule_stage(s, acc);
    matmul_row_tile(acc, target, &mr, &nr, &vl);
    if (!sc || nd < 2 || !nr)
        return KILN_OK;
    kiln_expr c[KILN_MAX_NDIM + 3], jo, jr, jn, jv;
    kiln_status st;
    if ((st = kiln_split(sc, kiln_tensor_axis(acc, nd - 1), nr, &jo, &jr)) != KILN_OK ||
        (st = kiln_split(sc, jr, vl, &jn, &jv)) != KILN_OK)
        return st;
    int k = 0;
    for (int d = 0; d + 2 < nd; d++)
        c[k++] = kiln_tensor_axis(acc, d);
    c[k++] = jo;
    c[k++] = kiln_tensor_reduce_axis(acc, 0);
    c[k++] = kiln_tensor_axis(acc, nd - 2);
    c[k++] = jn;
    c[k++] = jv;
    if ((st = kiln_reorder(sc, k, c)) != KILN_OK ||
        (st = kiln_unroll(sc, kiln_tensor_axis(acc, nd - 2))) != KILN_OK ||
        (st = kiln_unroll(sc, jn)) != KILN_OK)
        return st;
    return kiln_vectorize(sc, jv);
}

/* dense_tile's mr and nr as tuning knobs: rows 1-16 that make a box of
 * the row space, and panels of 1-6 vectors of vl lanes that tile the
 * columns (with col_tail, any up to n) and agree with a packed weight's
 * panel width pn; a tile past the register budget is invalid. */
static void dense_knobs(kiln_schedule *s, int64_t m, const int64_t *rowdims, int nrowdims,
                        int64_t n, int col_tail, int pn, int64_t vl, const kiln_target *target,
                        int64_t *mr, int64_t *nr) {
    int64_t c[16];
    int k = 0;
    for (int64_t r = 1; r <= m && r <= 16; r++)
        if (rows_box(r, rowdims, nrowdims))
            c[k++] = r;
    *mr = ops_knob(s, "dense.mr", *mr, k, c);
    k = 0;
    for (int64_t v = 1; v <= 6; v++) {
        int64_t w = v * vl;
        if ((col_tail ? w <= n : n % w == 0) && !(pn > 0 && pn % w && w % pn))
            c[k++] = w;
    }
    *nr = ops_knob(s, "dense.nr", *nr, k, c);
    int64_t v = *nr / vl;
    if (*mr * v + v + 1 > target->vector_regs)
        ops_knob_invalid(s);
}

static kiln_status schedule_dense(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                  kiln_tensor *out, const kiln_target *target) {
    if (!out) /* row fusion: attached by the row op already */
        return schedule_matmul_row(s, anchor, target);
    /* the columns must read the right-hand side contiguously: dense with
       packed or [in, units] weights, batch_matmul with B not transposed */
    int bmm = call->op->variant == MM_BATCH;
    const char *layout = bmm ? "KN" : graph_attr_str(call, "weight_layout", "NK");
    if (bmm && graph_attr_int(call, "transpose_b", 0))
        return KILN_OK;
    if (dense_layout(layout) <= 0 && strcmp(layout, "KN"))
        return KILN_OK;
    int64_t od[KILN_MAX_NDIM];
    int nd = ops_shape(out, od);
    if (nd < 1 || nd != kiln_tensor_ndim(anchor))
        return KILN_OK;
    /* a symbolic row count (a batch, or batch x sequence, bound at run
       time): tiles for the typical count OPS_SYM_EXTENT_HINT, the split's
       guarded tail taking the rows past the last whole tile (one-row tiles
       re-read the whole weight panel per row: BERT-base with a symbolic
       sequence ran 5.4x slower than bound); the leading dims are plain
       outer loops either way */
    int fold = 0;
    int64_t m = bmm ? (nd >= 2 && od[nd - 2] >= 0 ? od[nd - 2] : OPS_SYM_EXTENT_HINT)
                    : dense_rows(nd, od, &fold),
            mr, nr, vl;
    const gtensor_type *xt = &call->graph->nodes[call->in[0]]->type.t[0];
    gdim kd = xt->dims[xt->ndim - 1 - (bmm && graph_attr_int(call, "transpose_a", 0))];
    int64_t kext = kd.sym ? 128 : kd.v; /* a symbolic one: a typical length */
    if (od[nd - 1] < 0)                 /* symbolic columns: the default schedule */
        return KILN_OK;
    dense_tile(m, od, fold, od[nd - 1], kext, bmm, target, &mr, &nr, &vl);
    int pn = dense_layout(layout);
    if (!nr || (pn > 0 && pn % nr && nr % pn))
        return KILN_OK;
    dense_knobs(s, m, od, fold, od[nd - 1], bmm, pn, vl, target, &mr, &nr);
    kiln_tensor *acc = anchor;
    if (anchor == out && !(acc = kiln_cache_write(s, out, "local")))
        return KILN_ERR_INVALID;
    kiln_stage *so = kiln_schedule_stage(s, out), *sc = kiln_schedule_stage(s, acc);
    if (!so || !sc)
        return KILN_ERR_INVALID;
    kiln_status st = kiln_set_scope(sc, "local");
    if (st != KILN_OK)
        return st;
    kiln_expr ax[KILN_MAX_NDIM], mo = NULL, mi = NULL, no, ni, order[KILN_MAX_NDIM + 2];
    for (int d = 0; d < nd; d++)
        ax[d] = kiln_tensor_axis(out, d);
    if ((st = kiln_split(so, ax[nd - 1], nr, &no, &ni)) != KILN_OK)
        return st;
    kiln_expr row = nd >= 2 ? ax[nd - 2] : NULL;
    if (fold) { /* the dims before the columns, one row space */
        row = ax[0];
        for (int d = 1; d < fold; d++)
            if ((st = kiln_fuse(so, row, ax[d], &row)) != KILN_OK)
                return st;
    }
    if (nd >= 2 && (st = kiln_split(so, row, mr, &mo, &mi)) != KILN_OK)
        return st;
    int k = 0;
    for (int d = 0; d + 2 < nd && !fold; d++)
        order[k++] = ax[d];
    order[k++] = no;
    if (nd >= 2)
        order[k++] = mo;
    if (nd >= 2)
        order[k++] = mi;
    order[k++] = ni;
    if ((st = kiln_reorder(so, k, order)) != KILN_OK)
        return st;
    kiln_expr par = no; /* batch dims and column panels run in parallel */
    for (int d = nd - 3; d >= 0 && !fold; d--)
        if ((st = kiln_fuse(so, ax[d], par, &par)) != KILN_OK)
            return st;
    /* nr is a multiple of the lanes: whole vectors, unrolled */
    int64_t lanes = vl;
    kiln_expr nio, nii;
    if ((st = kiln_parallel(so, par)) != KILN_OK || (mi && (st = kiln_unroll(so, mi)) != KILN_OK) ||
        (st = kiln_split(so, ni, lanes, &nio, &nii)) != KILN_OK ||
        (st = kiln_unroll(so, nio)) != KILN_OK || (st = kiln_vectorize(so, nii)) != KILN_OK ||
        (st = kiln_compute_at(sc, so, nd >= 2 ? mo : no)) != KILN_OK)
        return st;
    kiln_expr c[KILN_MAX_NDIM + 2], cno, cni;
    if ((st = kiln_split(sc, kiln_tensor_axis(acc, nd - 1), lanes, &cno, &cni)) != KILN_OK)
        return st;
    /* the tile's rows (with folded rows, every dim before the columns: the
       tile's box) inside the reduction, unrolled */
    int first_row = fold ? 0 : nd - 2;
    k = 0;
    for (int d = 0; d < first_row; d++)
        c[k++] = kiln_tensor_axis(acc, d);
    c[k++] = kiln_tensor_reduce_axis(acc, 0);
    for (int d = first_row; d >= 0 && d < nd - 1; d++)
        c[k++] = kiln_tensor_axis(acc, d);
    c[k++] = cno;
    c[k++] = cni;
    if ((st = kiln_reorder(sc, k, c)) != KILN_OK)
        return st;
    for (int d = first_row; d >= 0 && d < nd - 1; d++)
        if ((st = kiln_unroll(sc, kiln_tensor_axis(acc, d))) != KILN_OK)
            return st;
    if ((st = kiln_unroll(sc, cno)) != KILN_OK || (st = kiln_vectorize(sc, cni)) != KILN_OK)
        return st;
    return KILN_OK;
}

/* The layout hook: a constant [units, in] weight packed into column panels
 * [units/nr, in, nr] (weight_layout="NC[nr]n", TVM's dense_pack), nr the
 * width of the register tile the dense schedule will use for the target,
 * so each k step of a tile loads whole contiguous weight vectors. When the
 * units have no such divisor the weight is only transposed to [in, units]. */
/* The column panel width of a packed [rows, cols] dense weight for data of
 * type xt (0: none), and the vector lanes in *vl: the tile width the dense
 * schedule will use, for the rows it will tile (a symbolic count at its
 * hint), so the panels are as wide as its tile (a panel of 96 under tiles of
 * 48 left every weight load a gather: BERT with a symbolic sequence, 100x). */
static int64_t weight_panel(const gtensor_type *xt, int64_t rows, int64_t cols,
                            const kiln_target *target, int64_t *vl) {
    int64_t xd[KILN_MAX_NDIM], mr, nr;
    for (int d = 0; d < xt->ndim; d++)
        xd[d] = xt->dims[d].sym ? -1 : xt->dims[d].v;
    int fold;
    int64_t m = dense_rows(xt->ndim, xd, &fold);
    dense_tile(m, xd, fold, rows, cols, 0, target, &mr, &nr, vl);
    return nr;
}

/* An int8 product (uint8 data, constant int8 [units, in] weight, out_dtype
 * int32: QnnCanonicalize's) packed into panels of k-element dot products,
 * [units/nr, in/k, nr, k] (weight_layout="NC[nr]n[k]k"), k and the
 * weight's dtype the target's (ops_int8_dot): each k step of a tile
 * multiplies k features of a row by nr/lanes vectors of k weights, one
 * vpdpbusd (or vpmaddwd) each. */
static int alter_dense_int8(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    const gnode *w = call->graph->nodes[call->in[1]];
    const gtensor_type *xt = ops_node_type(call->graph->nodes[call->in[0]]);
    if (w->kind != GN_CONST || kiln_ndarray_ndim(w->value) != 2 || !xt || xt->dtype != KILN_UINT8 ||
        kiln_ndarray_dtype(w->value) != KILN_INT8 || ops_out_dtype(call) != KILN_INT32)
        return 0;
    kiln_dtype wdt;
    int64_t k = ops_int8_dot(q->target, &wdt);
    int64_t rows = kiln_ndarray_dim(w->value, 0), cols = kiln_ndarray_dim(w->value, 1), vl;
    int64_t nr = weight_panel(xt, rows, cols, q->target, &vl);
    if (!nr || rows % nr || nr % vl || cols % k)
        return 0;
    int64_t dims[4] = {rows / nr, cols / k, nr, k};
    kiln_ndarray *t = kiln_ndarray_empty(wdt, 4, dims);
    if (!t)
        return -1;
    const int8_t *src = kiln_ndarray_data(w->value);
    for (int64_t n = 0; n < rows; n++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t at = ((n / nr * (cols / k) + c / k) * nr + n % nr) * k + c % k;
            if (wdt == KILN_INT16)
                ((int16_t *)kiln_ndarray_data(t))[at] = src[n * cols + c];
            else
                ((int8_t *)kiln_ndarray_data(t))[at] = src[n * cols + c];
        }
    static const char *const drop[] = {"weight_layout", NULL};
    rw->drop = drop;
    snprintf(rw->attrs, sizeof rw->attrs, "weight_layout=\"NC%dn%dk\"", (int)nr, (int)k);
    snprintf(rw->in[1].suffix, sizeof rw->in[1].suffix, ".NC%dn%dk", (int)nr, (int)k);
    rw->in[1].value = t;
    return 1;
}

static int alter_dense(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    if (strcmp(graph_attr_str(call, "weight_layout", "NK"), "NK"))
        return 0;
    /* packed panels of floats are for the float GEMM; an integer product
       (out_dtype) gets int8 panels where it can */
    if (ops_out_dtype(call) != KILN_DTYPE_COUNT)
        return alter_dense_int8(call, q, rw);
    const gnode *w = call->graph->nodes[call->in[1]];
    const gtensor_type *xt = ops_node_type(call->graph->nodes[call->in[0]]);
    if (w->kind != GN_CONST || kiln_ndarray_ndim(w->value) != 2 || !xt)
        return 0;
    int64_t rows = kiln_ndarray_dim(w->value, 0), cols = kiln_ndarray_dim(w->value, 1), vl;
    int64_t nr = weight_panel(xt, rows, cols, q->target, &vl);
    int64_t dims[3] = {nr ? rows / nr : cols, nr ? cols : rows, nr};
    /* the packed weight is w seen through strides, copied in tiles:
       packed[io][j][ii] = w[io * nr + ii][j], or [j][i] = w[i][j] */
    int64_t s0 = kiln_ndarray_stride(w->value, 0), s1 = kiln_ndarray_stride(w->value, 1);
    int64_t strides[3] = {nr ? nr * s0 : s1, nr ? s1 : s0, s0};
    kiln_ndarray *v =
        kiln_ndarray_view(w->value, nr ? 3 : 2, dims, strides, kiln_ndarray_byte_offset(w->value));
    kiln_ndarray *t =
        v ? ndarray_empty_uninit(kiln_ndarray_dtype(w->value), nr ? 3 : 2, dims) : NULL;
    kiln_status st = t ? kiln_ndarray_copy(t, v) : KILN_ERR_NOMEM;
    kiln_ndarray_free(v);
    if (st != KILN_OK) {
        kiln_ndarray_free(t);
        return -1;
    }
    static const char *const drop[] = {"weight_layout", NULL};
    rw->drop = drop;
    if (nr) {
        snprintf(rw->attrs, sizeof rw->attrs, "weight_layout=\"NC%dn\"", (int)nr);
        snprintf(rw->in[1].suffix, sizeof rw->in[1].suffix, ".NC%dn", (int)nr);
    } else {
        snprintf(rw->attrs, sizeof rw->attrs, "weight_layout=\"KN\"");
        snprintf(rw->in[1].suffix, sizeof rw->in[1].suffix, ".KN");
    }
    rw->in[1].value = t;
    return 1;
}

/* ---- nn.softmax, nn.log_softmax, nn.hardmax ------------------------------------------ */

static rel_result rel_softmax(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    rel_result r = ops_rel_float_unary(g, call, in, out);
    if (r != REL_OK)
        return r;
    int64_t axis = graph_attr_int(call, "axis", -1), nd = in[0]->t[0].ndim;
    if (axis < -nd || axis >= nd)
        return ops_fail("axis %lld is out of range", (long long)axis);
    return REL_OK;
}

typedef struct {
    kiln_tensor *x, *mx, *ex, *sum; /* hardmax: sum is the index of the max */
    int nd, axis;
    kiln_expr n; /* the axis' extent (an expression: it may be symbolic) */
    kiln_expr k1, k2;
} sm_args;

static void with_axis(const sm_args *s, const kiln_expr *i, kiln_expr k, kiln_expr *ix) {
    int j = 0;
    for (int d = 0; d < s->nd; d++)
        ix[d] = d == s->axis ? k : i[j++];
}

static kiln_expr sm_max(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    with_axis(s, i, s->k1, ix);
    return kiln_max_reduce(kiln_tensor_at(s->x, s->nd, ix), 1, &s->k1);
}

/* the reduced tensors drop the axis: index them without it */
static kiln_expr drop_axis_read(const sm_args *s, kiln_tensor *t, const kiln_expr *i) {
    kiln_expr ix[KILN_MAX_NDIM];
    int j = 0;
    for (int d = 0; d < s->nd; d++)
        if (d != s->axis)
            ix[j++] = i[d];
    return kiln_tensor_at(t, s->nd - 1, ix);
}

static kiln_expr sm_exp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    return kiln_exp(kiln_sub(kiln_tensor_at(s->x, s->nd, i), drop_axis_read(s, s->mx, i)));
}

static kiln_expr sm_sum(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    with_axis(s, i, s->k2, ix);
    return kiln_sum(kiln_tensor_at(s->ex, s->nd, ix), 1, &s->k2);
}

static kiln_expr sm_div(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    return kiln_div(kiln_tensor_at(s->ex, s->nd, i), drop_axis_read(s, s->sum, i));
}

/* log_softmax: x - max - log(sum) */
static kiln_expr sm_log(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr shifted = kiln_sub(kiln_tensor_at(s->x, s->nd, i), drop_axis_read(s, s->mx, i));
    return kiln_sub(shifted, kiln_log(drop_axis_read(s, s->sum, i)));
}

/* hardmax: the first index along the axis where x is the max; a NaN (the
 * max, when there is one) is found by x != x, as numpy's argmax finds it */
static kiln_expr hm_pick(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr ix[KILN_MAX_NDIM];
    with_axis(s, i, s->k2, ix);
    kiln_expr x = kiln_tensor_at(s->x, s->nd, ix);
    kiln_expr hit = kiln_or(kiln_eq(x, kiln_tensor_at(s->mx, s->nd - 1, i)), kiln_ne(x, x));
    return kiln_min_reduce(kiln_select(hit, s->k2, s->n), 1, &s->k2);
}

/* hardmax: 1 at the picked index, 0 elsewhere */
static kiln_expr hm_out(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_args *s = u;
    kiln_expr hit = kiln_eq(i[s->axis], drop_axis_read(s, s->sum, i));
    kiln_dtype dt = kiln_tensor_dtype(s->x);
    return kiln_select(hit, ops_const(ctx, dt, 1), ops_const(ctx, dt, 0));
}

/* Softmax over a last axis of K >= 2 * SM_LANES elements, in lane-parallel
 * form: max and sum first reduce over ko (the K / SM_LANES whole chunks of
 * a row) into SM_LANES partial results per row (contiguous reads, so they
 * vectorize), then over those lanes. Where SM_LANES does not divide K (ViT's
 * 197 tokens), the last lanes of the row (a chunk ending at K) are taken in
 * that second reduction: the max takes the whole chunk (overlapping the
 * one before does not change a max), the sum only its lanes past the last
 * whole chunk. (A chunk moved back inside the first reduction cost a
 * 16-lane 64-bit compare per chunk.) Only the order of the max and sum
 * reductions differs from the plain form. */
#define SM_LANES 16

typedef struct {
    kiln_tensor *x, *mxp, *mx, *ex, *smp, *sm;
    int nd;
    int64_t k; /* the axis' extent */
    kiln_expr ko, ki, ko2, ki2;
} smv_args;

/* t (rank nd-1+extra) at the row of output index i plus `last` */
static kiln_expr row_at(kiln_tensor *t, int nrow, const kiln_expr *i, kiln_expr last) {
    kiln_expr ix[KILN_MAX_NDIM];
    for (int d = 0; d < nrow; d++)
        ix[d] = i[d];
    if (last)
        ix[nrow] = last;
    return kiln_tensor_at(t, nrow + (last != NULL), ix);
}

/* lane l of whole chunk ko of t's row */
static kiln_expr chunk_lane(kiln_ctx *ctx, const smv_args *s, kiln_tensor *t, const kiln_expr *i,
                            kiln_expr ko, kiln_expr l) {
    return row_at(t, s->nd - 1, i, kiln_add(kiln_mul(ko, ops_int(ctx, SM_LANES)), l));
}

/* lane l of the row's last chunk, which ends at K */
static kiln_expr last_lane(kiln_ctx *ctx, const smv_args *s, kiln_tensor *t, const kiln_expr *i,
                           kiln_expr l) {
    return row_at(t, s->nd - 1, i, kiln_add(l, ops_int(ctx, s->k - SM_LANES)));
}

static kiln_expr smv_mxp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_max_reduce(chunk_lane(ctx, s, s->x, i, s->ko, i[s->nd - 1]), 1, &s->ko);
}
static kiln_expr smv_mx(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    kiln_expr v = row_at(s->mxp, s->nd - 1, i, s->ki);
    if (s->k % SM_LANES)
        v = kiln_max(v, last_lane(ctx, s, s->x, i, s->ki));
    return kiln_max_reduce(v, 1, &s->ki);
}
static kiln_expr smv_ex(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_exp(
        kiln_sub(row_at(s->x, s->nd - 1, i, i[s->nd - 1]), row_at(s->mx, s->nd - 1, i, NULL)));
}
static kiln_expr smv_smp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    return kiln_sum(chunk_lane(ctx, s, s->ex, i, s->ko2, i[s->nd - 1]), 1, &s->ko2);
}
static kiln_expr smv_sm(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    kiln_expr v = row_at(s->smp, s->nd - 1, i, s->ki2);
    int64_t rem = s->k % SM_LANES;
    if (rem) { /* the last chunk's lanes past the whole chunks */
        kiln_expr fresh = kiln_ge(s->ki2, ops_int(ctx, SM_LANES - rem));
        v = kiln_add(v, kiln_select(fresh, last_lane(ctx, s, s->ex, i, s->ki2),
                                    ops_const(ctx, kiln_tensor_dtype(s->ex), 0)));
    }
    return kiln_sum(v, 1, &s->ki2);
}
/* the numerators times the sum's reciprocal, as ONNX Runtime's MLAS does:
   one division per row, not per element */
static kiln_expr smv_out(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    smv_args *s = u;
    kiln_expr sum = row_at(s->sm, s->nd - 1, i, NULL);
    return kiln_mul(row_at(s->ex, s->nd - 1, i, i[s->nd - 1]),
                    kiln_div(ops_const(ctx, kiln_tensor_dtype(s->ex), 1), sum));
}

static int softmax_lanes_form(const gnode *call, int nd, const int64_t *od, int *axis) {
    int64_t a = graph_attr_int(call, "axis", -1);
    *axis = (int)(a < 0 ? a + nd : a);
    return call->op->variant == SM_SOFTMAX && *axis == nd - 1 && od[nd - 1] >= 2 * SM_LANES;
}

static kiln_status compute_softmax(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                   kiln_tensor **out) {
    /* any dim may be symbolic, the axis too, so the shapes are expressions
       (the lane-parallel form needs a constant last axis) */
    int64_t od[KILN_MAX_NDIM];
    kiln_expr oe[KILN_MAX_NDIM], rd[KILN_MAX_NDIM];
    int nd = ops_out_shape(call, od), axis;
    ops_out_dims(ctx, call, oe);
    if (softmax_lanes_form(call, nd, od, &axis)) {
        smv_args v;
        memset(&v, 0, sizeof v);
        v.x = in[0];
        v.nd = nd;
        v.k = od[nd - 1];
        for (int d = 0; d < nd - 1; d++)
            rd[d] = oe[d];
        rd[nd - 1] = ops_int(ctx, SM_LANES);
        kiln_expr ko_ext = ops_int(ctx, v.k / SM_LANES), l = ops_int(ctx, SM_LANES);
        v.ko = kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko");
        v.ko2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), ko_ext, "ko");
        v.ki = kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki");
        v.ki2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), l, "ki");
        v.mxp = ops_compute_e(ctx, call, ".maxp", nd, rd, smv_mxp, &v);
        v.mx = v.mxp ? ops_compute_e(ctx, call, ".max", nd - 1, rd, smv_mx, &v) : NULL;
        v.ex = v.mx ? ops_compute_e(ctx, call, ".exp", nd, oe, smv_ex, &v) : NULL;
        v.smp = v.ex ? ops_compute_e(ctx, call, ".sump", nd, rd, smv_smp, &v) : NULL;
        v.sm = v.smp ? ops_compute_e(ctx, call, ".sum", nd - 1, rd, smv_sm, &v) : NULL;
        out[0] = v.sm ? ops_compute_e(ctx, call, "", nd, oe, smv_out, &v) : NULL;
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    sm_args s;
    memset(&s, 0, sizeof s);
    s.x = in[0];
    s.nd = nd;
    s.axis = axis;
    int j = 0;
    for (int d = 0; d < s.nd; d++)
        if (d != s.axis)
            rd[j++] = oe[d];
    s.n = oe[s.axis];
    s.k1 = kiln_reduce_axis(ctx, ops_int(ctx, 0), s.n, "k");
    s.k2 = kiln_reduce_axis(ctx, ops_int(ctx, 0), s.n, "k");
    s.mx = ops_compute_e(ctx, call, ".max", s.nd - 1, rd, sm_max, &s);
    if (call->op->variant == SM_HARDMAX) {
        s.sum = s.mx ? ops_compute_e(ctx, call, ".pick", s.nd - 1, rd, hm_pick, &s) : NULL;
        out[0] = s.sum ? ops_compute_e(ctx, call, "", s.nd, oe, hm_out, &s) : NULL;
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    s.ex = s.mx ? ops_compute_e(ctx, call, ".exp", s.nd, oe, sm_exp, &s) : NULL;
    s.sum = s.ex ? ops_compute_e(ctx, call, ".sum", s.nd - 1, rd, sm_sum, &s) : NULL;
    int is_log = call->op->variant == SM_LOG_SOFTMAX;
    out[0] = s.sum ? ops_compute_e(ctx, call, "", s.nd, oe, is_log ? sm_log : sm_div, &s) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The schedule of the lane-parallel softmax: rows (the leading axes,
 * fused) in parallel; per row the partial max, the exponentials, the
 * partial sums and the output are vectors of SM_LANES, in local buffers
 * computed at the row. */
static kiln_status schedule_softmax(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                    kiln_tensor *out, const kiln_target *target) {
    int64_t od[KILN_MAX_NDIM];
    int nd = ops_shape(out, od), axis;
    if (nd < 2 || !softmax_lanes_form(call, nd, od, &axis))
        return KILN_OK;
    kiln_tensor *t[4], *ex, *sm, *smp, *mx, *mxp;
    if (kiln_tensor_inputs(out, t, 4) != 2)
        return KILN_OK;
    ex = t[0];
    sm = t[1];
    /* sum reads the partial sums (and, K not a multiple of the lanes, ex);
       max the partial maxima (and x) */
    int n = kiln_tensor_inputs(sm, t, 4);
    if (n < 1 || n > 2)
        return KILN_OK;
    smp = t[0];
    if (kiln_tensor_inputs(ex, t, 4) != 2)
        return KILN_OK;
    mx = t[1];
    n = kiln_tensor_inputs(mx, t, 4);
    if (n < 1 || n > 2)
        return KILN_OK;
    mxp = t[0];
    /* consumers first (compute_at needs a stage's other consumers placed
       inside the same loop already) */
    kiln_tensor *stages[5] = {sm, smp, ex, mx, mxp};
    static const ops_row_kind kinds[5] = {OPS_ROW_SCALAR, OPS_ROW_PARTIAL, OPS_ROW_VECTOR,
                                          OPS_ROW_SCALAR, OPS_ROW_PARTIAL};
    /* row fusion (anchor != out): the matmul's row too, before the epilogue
       that mxp and ex read inlined */
    int64_t mr = 1, nr, vl;
    if (anchor != out)
        matmul_row_tile(anchor, target, &mr, &nr, &vl);
    return ops_schedule_rows(s, out, SM_LANES, 5, stages, kinds, anchor != out ? anchor : NULL, mr);
}

/* Softmax ends a matmul's group (row fusion) over a static last axis in
 * the lane-parallel form, short enough to stay in L1. */
static int rows_softmax(const gnode *call) {
    const gtensor_type *t = ops_node_type(call);
    if (!t || t->dtype != KILN_FLOAT32 || t->ndim < 2 || t->dims[t->ndim - 1].sym)
        return 0;
    int64_t od[KILN_MAX_NDIM];
    int axis;
    for (int d = 0; d < t->ndim; d++)
        od[d] = t->dims[d].sym ? -1 : t->dims[d].v;
    return softmax_lanes_form(call, t->ndim, od, &axis) && od[t->ndim - 1] <= ROW_FUSE_MAX;
}

/* ---- nn.nll_loss, nn.nll_loss_weight --------------------------------------------------- */

/* Inputs: scores x [N, C, d1, ..., dk] (log-probabilities), class targets
 * [N, d1, ..., dk] and optionally per-class weights [C]. For each target
 * t = target[n, d..]: nn.nll_loss is -x[n, t, d..] * weight[t] and
 * nn.nll_loss_weight is weight[t] (1 without weights); both are 0 where t
 * is ignore_index. A target is read as an index of the C classes through a
 * checked index: one outside [0, C) that is not ignore_index is an error
 * when the code runs (no negative index counts from the end); an ignored
 * one is never used as an index. */
static rel_result rel_nll_loss(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *t = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!t)
        return r;
    if (x->dtype != KILN_FLOAT32 && x->dtype != KILN_FLOAT64 && x->dtype != KILN_FLOAT16)
        return ops_fail("needs float scores, not %s", kiln_dtype_name(x->dtype));
    if (x->ndim < 2)
        return ops_fail("the scores need at least 2 dims (N, C, ...), have %d", x->ndim);
    if (x->dims[1].sym || x->dims[1].v < 1)
        return ops_fail("the class dim (1) of the scores must be concrete and non-empty");
    if (!ops_is_index_dtype(t->dtype))
        return ops_fail("the targets must be integers, not %s", kiln_dtype_name(t->dtype));
    if (t->ndim != x->ndim - 1)
        return ops_fail("the targets have rank %d; the %d-D scores need %d", t->ndim, x->ndim,
                        x->ndim - 1);
    for (int d = 0; d < t->ndim; d++)
        if (!gdim_equal(t->dims[d], x->dims[d ? d + 1 : 0]))
            return ops_fail("dim %d of the targets differs from dim %d of the scores", d,
                            d ? d + 1 : 0);
    if (call->nin > 2) {
        const gtensor_type *w = ops_tensor_in(in[2], 2, &r);
        if (!w)
            return r;
        if (w->dtype != x->dtype)
            return ops_fail("the weights are %s, the scores %s", kiln_dtype_name(w->dtype),
                            kiln_dtype_name(x->dtype));
        if (w->ndim != 1 || !gdim_equal(w->dims[0], x->dims[1]))
            return ops_fail("the weights must be 1-D with one per class (%lld)",
                            (long long)x->dims[1].v);
    }
    gtensor_type res = *t;
    res.dtype = x->dtype;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *t, *w;
    int nd; /* of the targets */
    int64_t c;
    const gattr *ignore;
    int weight_only;
} nll_args;

static kiln_expr nll_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    nll_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->x);
    kiln_expr t = kiln_cast(KILN_INT64, kiln_tensor_at(a->t, a->nd, i));
    kiln_expr keep = a->ignore ? kiln_ne(t, ops_int(ctx, a->ignore->i)) : NULL;
    /* an ignored target reads class 0 (both sides of a select are evaluated) */
    kiln_expr c = ops_checked_index(ctx, keep ? kiln_select(keep, t, ops_int(ctx, 0)) : t, a->c, 0);
    kiln_expr w = a->w ? kiln_tensor_at(a->w, 1, &c) : ops_const(ctx, dt, 1);
    kiln_expr v = w;
    if (!a->weight_only) {
        kiln_expr ix[KILN_MAX_NDIM];
        ix[0] = i[0];
        ix[1] = c;
        for (int d = 1; d < a->nd; d++)
            ix[d + 1] = i[d];
        v = kiln_neg(kiln_tensor_at(a->x, a->nd + 1, ix));
        if (a->w)
            v = kiln_mul(v, w);
    }
    return keep ? kiln_select(keep, v, ops_const(ctx, dt, 0)) : v;
}

static kiln_status compute_nll_loss(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    nll_args a = {in[0],
                  in[1],
                  call->nin > 2 ? in[2] : NULL,
                  ops_out_shape(call, od),
                  0,
                  graph_attr(call, "ignore_index"),
                  call->op->variant == NLL_WEIGHT};
    ops_shape(in[0], xd);
    a.c = xd[1];
    out[0] = ops_compute(ctx, call, "", a.nd, od, nll_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- batch_matmul: numpy matmul with broadcast batch dims ---------------------- */

rel_result ops_bmm_rel(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                       gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *a = ops_tensor_in(in[0], 0, &r),
                       *b = a ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!b)
        return r;
    if (a->ndim < 2 || b->ndim < 2)
        return ops_fail("both inputs must have rank >= 2, got %d-D and %d-D", a->ndim, b->ndim);
    kiln_dtype acc;
    if (ops_accum_dtype(call, a, b, &acc) != REL_OK)
        return REL_ERROR;
    int ta = graph_attr_int(call, "transpose_a", 0) != 0,
        tb = graph_attr_int(call, "transpose_b", 0) != 0;
    gdim m = a->dims[a->ndim - 2 + ta], ka = a->dims[a->ndim - 1 - ta];
    gdim kb = b->dims[b->ndim - 2 + tb], n = b->dims[b->ndim - 1 - tb];
    if (!gdim_equal(ka, kb)) {
        char s1[64], s2[64];
        ops_dim_str(ka, s1, sizeof s1);
        ops_dim_str(kb, s2, sizeof s2);
        return ops_fail("the reduced dims differ: %s in input 0, %s in input 1", s1, s2);
    }
    gtensor_type ba = *a, bb = *b, res;
    ba.ndim -= 2;
    bb.ndim -= 2;
    const gtensor_type *ts[2] = {&ba, &bb};
    if ((r = ops_broadcast(2, ts, 0, &res)) != REL_OK)
        return r;
    if (res.ndim + 2 > KILN_MAX_NDIM)
        return ops_fail("too many dims");
    res.dims[res.ndim++] = m;
    res.dims[res.ndim++] = n;
    res.dtype = acc;
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *a, *b;
    int nd, na, nb, ta, tb;
    int64_t ad[KILN_MAX_NDIM], bd[KILN_MAX_NDIM];
    kiln_expr k;
    kiln_dtype acc; /* out_dtype, or KILN_DTYPE_COUNT */
} bmm_args;

/* The index of a rank-n operand with dims `dims`: batch dims right-aligned
 * (size 1 reads 0), then (row, col) or (col, row) when transposed. */
static void bmm_index(kiln_ctx *ctx, const bmm_args *a, int n, const int64_t *dims, int trans,
                      const kiln_expr *i, kiln_expr row, kiln_expr col, kiln_expr *ix) {
    for (int d = 0; d < n - 2; d++)
        ix[d] = dims[d] == 1 ? ops_int(ctx, 0) : i[d + (a->nd - 2) - (n - 2)];
    ix[n - 2] = trans ? col : row;
    ix[n - 1] = trans ? row : col;
}

static kiln_expr bmm_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    bmm_args *a = u;
    kiln_expr ai[KILN_MAX_NDIM], bi[KILN_MAX_NDIM];
    bmm_index(ctx, a, a->na, a->ad, a->ta, i, i[a->nd - 2], a->k, ai);
    bmm_index(ctx, a, a->nb, a->bd, a->tb, i, a->k, i[a->nd - 1], bi);
    return kiln_sum(kiln_mul(ops_accum_operand(a->acc, kiln_tensor_at(a->a, a->na, ai)),
                             ops_accum_operand(a->acc, kiln_tensor_at(a->b, a->nb, bi))),
                    1, &a->k);
}

kiln_status ops_bmm_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                            kiln_tensor **out) {
    bmm_args a;
    memset(&a, 0, sizeof a);
    int64_t od[KILN_MAX_NDIM];
    a.a = in[0];
    a.b = in[1];
    a.nd = ops_out_shape(call, od);
    a.na = ops_shape(in[0], a.ad);
    a.nb = ops_shape(in[1], a.bd);
    a.ta = graph_attr_int(call, "transpose_a", 0) != 0;
    a.tb = graph_attr_int(call, "transpose_b", 0) != 0;
    a.acc = ops_out_dtype(call);
    /* any dim may be symbolic (a sequence length), the reduced one too */
    kiln_expr oe[KILN_MAX_NDIM];
    ops_out_dims(ctx, call, oe);
    a.k = kiln_reduce_axis(ctx, ops_int(ctx, 0), kiln_tensor_dim(in[0], a.na - 1 - a.ta), "k");
    out[0] = ops_compute_e(ctx, call, "", a.nd, oe, bmm_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table --------------------------------------------------------------------- */

#define SOFTMAX(nm, kind, sched, rw, sum)                                                          \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = softmax_attrs, .rel = rel_softmax,          \
        .pattern = OP_OPAQUE, .compute = compute_softmax, .summary = sum, .schedule = sched,       \
        .variant = kind, .sym_dims = 1, .rows = rw                                                 \
    }

#define NLL(nm, kind, sum)                                                                         \
    {                                                                                              \
        .name = nm, .min_in = 2, .max_in = 3, .attrs = nll_attrs, .rel = rel_nll_loss,             \
        .pattern = OP_INJECTIVE, .compute = compute_nll_loss, .summary = sum, .variant = kind      \
    }

const kiln_op_def ops_nn_rows[] = {
    {.name = "nn.dense",
     .min_in = 2,
     .max_in = 2,
     .attrs = dense_attrs,
     .rel = ops_dense_rel,
     .pattern = OP_OUT_ELEMWISE_FUSABLE,
     .compute = ops_dense_compute,
     .summary = "x * W^T, W is [units, in] (weight_layout NK; KN and packed NC[x]n too)",
     .schedule = schedule_dense,
     .variant = MM_DENSE,
     .alter = alter_dense,
     .sym_dims = 1},
    {.name = "nn.batch_matmul",
     .min_in = 2,
     .max_in = 2,
     .attrs = batch_matmul_attrs,
     .rel = ops_bmm_rel,
     .pattern = OP_OUT_ELEMWISE_FUSABLE,
     .compute = ops_bmm_compute,
     .summary = "numpy matmul: [..., M, K] x [..., K, N], batch dims broadcast",
     .schedule = schedule_dense,
     .variant = MM_BATCH,
     .sym_dims = 1,
     .rows = rows_matmul},
    SOFTMAX("nn.softmax", SM_SOFTMAX, schedule_softmax, rows_softmax, "softmax over axis"),
    SOFTMAX("nn.log_softmax", SM_LOG_SOFTMAX, NULL, NULL, "log of softmax over axis"),
    SOFTMAX("nn.hardmax", SM_HARDMAX, NULL, NULL, "1 at the first max along axis, 0 elsewhere"),
    NLL("nn.nll_loss", NLL_LOSS,
        "-x[n, t, d..] * weight[t] for each target t = targets[n, d..] (0 if ignored)"),
    NLL("nn.nll_loss_weight", NLL_WEIGHT,
        "weight[t] (1 without weights) for each target t of nn.nll_loss (0 if ignored)"),
};

const int ops_nn_count = (int)(sizeof ops_nn_rows / sizeof ops_nn_rows[0]);
