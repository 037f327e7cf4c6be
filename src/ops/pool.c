/* pool.c: pooling: nn.max_pool2d/3d, nn.avg_pool2d/3d and nn.lp_pool2d/3d
 * (windows with strides, dilation, padding, ceil_mode; count_include_pad
 * for the average, the power p for the Lp norm (sum |x|^p)^(1/p)), in NCHW,
 * the blocked NCHW[x]c, or NCDHW; nn.max_pool2d/3d_with_argmax (the max and
 * the flat index of the first maximal element, ONNX's MaxPool Indices);
 * and the global pools (over all spatial dims). A 1-D pool is a 2-D one
 * with H = 1 (the ONNX importer reshapes). The layout hook of the 2-D pools
 * keeps a blocked input blocked (attribute layout); max pooling in NCHW[x]c
 * has a schedule that reads the input in place. The rows share the
 * computes and tell themselves apart by the variant: the kind and the
 * number of spatial dims. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

/* the kinds; POOL_ARGMAX is the max with its index */
enum { POOL_MAX, POOL_AVG, POOL_LP, POOL_ARGMAX };
/* A row's variant: its kind, and its spatial dims (0 for the global pools,
 * which take any). */
#define POOL_VARIANT(kind, nsp) ((kind) | (nsp) << 4)
#define POOL_KIND(call) ((call)->op->variant & 15)
#define POOL_NSP(call) ((call)->op->variant >> 4)

/* ---- attribute schemas ------------------------------------------------------------ */

#define POOL_SCHEMA(ones, zeros, extra, layout)                                                    \
    {"pool_size", GA_INTS, 1, NULL}, {"strides", GA_INTS, 0, ones},                                \
        {"padding", GA_INTS, 0, zeros}, {"dilation", GA_INTS, 0, ones},                            \
        {"ceil_mode", GA_INT, 0, "0"}, extra, {"layout", GA_STR, 0, layout}, {                     \
        NULL, 0, 0, NULL                                                                           \
    }
#define ONES2 "[1, 1]"
#define ZEROS2 "[0, 0, 0, 0]"
#define ONES3 "[1, 1, 1]"
#define ZEROS3 "[0, 0, 0, 0, 0, 0]"
#define COUNT_PAD                                                                                  \
    { "count_include_pad", GA_INT, 0, "0" }
#define LP_P                                                                                       \
    { "p", GA_INT, 0, "2" }
#define STORAGE_ORDER                                                                              \
    { "storage_order", GA_INT, 0, "0" }

static const attr_schema pool2d_attrs[] = {POOL_SCHEMA(ONES2, ZEROS2, COUNT_PAD, "\"NCHW\"")};
static const attr_schema pool3d_attrs[] = {POOL_SCHEMA(ONES3, ZEROS3, COUNT_PAD, "\"NCDHW\"")};
static const attr_schema lp_pool2d_attrs[] = {POOL_SCHEMA(ONES2, ZEROS2, LP_P, "\"NCHW\"")};
static const attr_schema lp_pool3d_attrs[] = {POOL_SCHEMA(ONES3, ZEROS3, LP_P, "\"NCDHW\"")};
static const attr_schema argmax2d_attrs[] = {POOL_SCHEMA(ONES2, ZEROS2, STORAGE_ORDER, "\"NCHW\"")};
static const attr_schema argmax3d_attrs[] = {
    POOL_SCHEMA(ONES3, ZEROS3, STORAGE_ORDER, "\"NCDHW\"")};
static const attr_schema global_pool_attrs[] = {{"layout", GA_STR, 0, "\"NCHW\""},
                                                {NULL, 0, 0, NULL}};
static const attr_schema global_lp_pool_attrs[] = {
    {"layout", GA_STR, 0, "\"NCHW\""}, LP_P, {NULL, 0, 0, NULL}};

/* ---- relations -------------------------------------------------------------------- */

/* The Lp pools: a float input and p >= 1. */
static int lp_ok(const gnode *call, const gtensor_type *x) {
    if (POOL_KIND(call) != POOL_LP)
        return 1;
    if (!ops_is_float_dtype(x->dtype))
        return ops_fail("Lp pooling needs a float input, not %s", kiln_dtype_name(x->dtype)), 0;
    int64_t p = graph_attr_int(call, "p", 2);
    if (p < 1)
        return ops_fail("p = %lld is not at least 1", (long long)p), 0;
    return 1;
}

/* The output type of pool `call` over x (2-D: NCHW or, if allow_blocked,
 * NCHW[x]c; 3-D: NCDHW) into *res. */
static rel_result pool_type(const gnode *call, const gtensor_type *x, int allow_blocked,
                            gtensor_type *res) {
    int nsp = POOL_NSP(call);
    const char *layout = graph_attr_str(call, "layout", "");
    int blk = nsp == 2 ? ops_layout_block(layout) : strcmp(layout, "NCDHW") ? -1 : 0;
    if (blk < 0 || (blk && !allow_blocked))
        return ops_fail("layout must be %s", nsp == 3        ? "NCDHW"
                                             : allow_blocked ? "NCHW or NCHW[x]c"
                                                             : "NCHW");
    int nd = 2 + nsp + (blk > 0);
    if (x->ndim != nd)
        return ops_fail("data must be %d-D %s, got %d-D", nd, blk ? "NCHW[x]c" : layout, x->ndim);
    if (blk && x->dims[nd - 1].v != blk)
        return ops_fail("data's last dim is not the block %d", blk);
    if (!ops_all_known(x, 2, 2 + nsp))
        return ops_fail("spatial dims must not be symbolic");
    int64_t k[OPS_MAX_SPATIAL], s[OPS_MAX_SPATIAL], d[OPS_MAX_SPATIAL], p[OPS_MAX_SPATIAL];
    if (!ops_attr_sp_checked(call, "pool_size", 1, 1, nsp, k) ||
        !ops_attr_sp_checked(call, "strides", 1, 1, nsp, s) ||
        !ops_attr_sp_checked(call, "dilation", 1, 1, nsp, d) || !ops_pad_sum(call, nsp, p) ||
        !lp_ok(call, x))
        return REL_ERROR;
    int ceil_mode = graph_attr_int(call, "ceil_mode", 0) != 0;
    *res = *x;
    for (int i = 0; i < nsp; i++) {
        int64_t o = ops_window_out(x->dims[2 + i].v, p[i], k[i], s[i], d[i], ceil_mode);
        if (o < 1)
            return ops_fail("the window is larger than the padded input");
        res->dims[2 + i] = (gdim){o, NULL};
    }
    return REL_OK;
}

/* The pools, and (the max, its int64 flat index) with POOL_ARGMAX. */
static rel_result rel_pool(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                           gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    gtensor_type res;
    int argmax = POOL_KIND(call) == POOL_ARGMAX;
    if (!x)
        return r;
    if ((r = pool_type(call, x, !argmax, &res)) != REL_OK)
        return r;
    if (!argmax)
        return ops_set_out(g, out, &res);
    int64_t order = graph_attr_int(call, "storage_order", 0);
    if (order != 0 && order != 1)
        return ops_fail("storage_order = %lld is not 0 (row major) or 1 (column major)",
                        (long long)order);
    gtensor_type t[2] = {res, res};
    t[1].dtype = KILN_INT64;
    return ops_set_tuple(g, out, 2, t);
}

static rel_result rel_global_pool(const struct kiln_graph *g, const gnode *call,
                                  const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(1);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r);
    if (!x)
        return r;
    if (x->ndim < 3)
        return ops_fail("data must be at least 3-D (N, C, spatial...), got %d-D", x->ndim);
    int blk = ops_layout_block(graph_attr_str(call, "layout", "NCHW"));
    if (blk < 0)
        return ops_fail("layout must be NCHW or NCHW[x]c");
    if (blk && (x->ndim != 5 || x->dims[4].v != blk))
        return ops_fail("data in NCHW%dc must be 5-D with the block last", blk);
    if (!lp_ok(call, x))
        return REL_ERROR;
    gtensor_type res = *x;
    for (int i = 2; i < x->ndim - (blk > 0); i++)
        res.dims[i] = (gdim){1, NULL};
    return ops_set_out(g, out, &res);
}

/* ---- computes ---------------------------------------------------------------------- */

/* The dtype an average of dt sums in: dt for floats; integers widen, so
 * the sum of a window cannot overflow (int8 and uint8: int32). */
static kiln_dtype avg_sum_dtype(kiln_dtype dt) {
    if (ops_is_float_dtype(dt))
        return dt;
    return kiln_dtype_size(dt) >= 4 ? KILN_INT64 : KILN_INT32;
}

/* What a window reduces: the max, the sum (wide for integers), or the sum
 * of |x|^p. */
static kiln_expr window_reduce(kiln_ctx *ctx, int kind, double p, kiln_dtype dt, kiln_expr v, int n,
                               const kiln_expr *axes) {
    if (kind == POOL_MAX || kind == POOL_ARGMAX)
        return kiln_max_reduce(v, n, axes);
    if (kind == POOL_LP)
        v = kiln_pow(kiln_abs(v), ops_const(ctx, dt, p));
    else if (avg_sum_dtype(dt) != dt)
        v = kiln_cast(avg_sum_dtype(dt), v);
    return kiln_sum(v, n, axes);
}

/* The average s / cnt of an integer window (s, cnt in s's wide dtype),
 * rounded half away from zero as TFLite's int8 AveragePool, in dtype out;
 * a float one divides. */
static kiln_expr average(kiln_ctx *ctx, kiln_expr s, kiln_expr cnt, kiln_dtype sum_dt,
                         kiln_dtype out) {
    if (ops_is_float_dtype(sum_dt))
        return kiln_div(s, cnt);
    kiln_expr half = kiln_floordiv(cnt, ops_const(ctx, sum_dt, 2));
    kiln_expr q = kiln_select(kiln_ge(s, ops_const(ctx, sum_dt, 0)),
                              kiln_div(kiln_add(s, half), cnt), kiln_div(kiln_sub(s, half), cnt));
    return kiln_cast(out, q);
}

typedef struct {
    kiln_tensor *p, *sum, *best, *first; /* sum: before the average's division or Lp's root */
    int64_t k[OPS_MAX_SPATIAL], s[OPS_MAX_SPATIAL], d[OPS_MAX_SPATIAL];
    int64_t pad[2 * OPS_MAX_SPATIAL], in_dims[KILN_MAX_NDIM];
    int kind, count_pad, nd, nsp; /* nd > 2 + nsp: NCHW[x]c, the channel block last */
    int overhang;                 /* a ceil_mode window ends past the padded input */
    int storage_order;
    double lp;
    kiln_expr r[OPS_MAX_SPATIAL];
} pool_args;

/* The padded input at output index i and the window position of the
 * reduce axes, into ix. */
static void window_index(kiln_ctx *ctx, const pool_args *a, const kiln_expr *i, kiln_expr *ix) {
    memcpy(ix, i, sizeof(kiln_expr) * (size_t)a->nd);
    for (int d = 0; d < a->nsp; d++)
        ix[2 + d] = kiln_add(kiln_mul(i[2 + d], ops_int(ctx, a->s[d])),
                             kiln_mul(a->r[d], ops_int(ctx, a->d[d])));
}

static kiln_expr pool_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    window_index(ctx, a, i, ix);
    return window_reduce(ctx, a->kind, a->lp, kiln_tensor_dtype(a->p),
                         kiln_tensor_at(a->p, a->nd, ix), a->nsp, a->r);
}

/* Average: divide the window sum by the number of the window's elements
 * inside the input, or with count_include_pad inside the padded input:
 * the window size, but where a ceil_mode window ends past the padded
 * input, what it covers of it (as ONNX Runtime and PyTorch count). Lp: the
 * p-th root of the sum. */
static kiln_expr finish_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->sum), out = kiln_tensor_dtype(a->p);
    kiln_expr s = kiln_tensor_at(a->sum, a->nd, i);
    if (a->kind == POOL_LP)
        return kiln_pow(s, ops_const(ctx, dt, 1.0 / a->lp));
    if (a->count_pad && !a->overhang) {
        int64_t size = 1;
        for (int d = 0; d < a->nsp; d++)
            size *= a->k[d];
        return average(ctx, s, ops_const(ctx, dt, (double)size), dt, out);
    }
    kiln_expr cnt = NULL;
    for (int d = 0; d < a->nsp; d++) {
        int64_t lo_bound = a->count_pad ? -a->pad[d] : 0, hi_bound = a->in_dims[2 + d];
        if (a->count_pad)
            hi_bound += a->pad[a->nsp + d];
        kiln_expr start =
            kiln_sub(kiln_mul(i[2 + d], ops_int(ctx, a->s[d])), ops_int(ctx, a->pad[d]));
        kiln_expr end = kiln_add(start, ops_int(ctx, (a->k[d] - 1) * a->d[d] + 1));
        kiln_expr lo = kiln_max(start, ops_int(ctx, lo_bound));
        kiln_expr hi = kiln_min(end, ops_int(ctx, hi_bound));
        /* elements of the dilated window inside [lo, hi) */
        kiln_expr first = kiln_add(
            start, kiln_mul(kiln_floordiv(kiln_add(kiln_sub(lo, start), ops_int(ctx, a->d[d] - 1)),
                                          ops_int(ctx, a->d[d])),
                            ops_int(ctx, a->d[d])));
        kiln_expr n = kiln_floordiv(kiln_add(kiln_sub(hi, first), ops_int(ctx, a->d[d] - 1)),
                                    ops_int(ctx, a->d[d]));
        n = kiln_max(n, ops_int(ctx, 1));
        cnt = cnt ? kiln_mul(cnt, n) : n;
    }
    return average(ctx, s, kiln_cast(dt, cnt), dt, out);
}

/* The lowest value of dt: max pooling's padding. */
static double lowest(kiln_dtype dt) {
    return ops_is_float_dtype(dt) ? -INFINITY : (double)kiln_dtype_int_min(dt);
}

/* The shared start of the windowed computes: attributes, the input padded
 * (the max with the lowest value, the others with 0), the reduce axes. */
static kiln_status pool_init(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                             const int64_t *od, pool_args *a) {
    static const char *const names[] = {"ru", "rv", "rw"};
    memset(a, 0, sizeof *a);
    a->nsp = POOL_NSP(call);
    a->kind = POOL_KIND(call);
    a->nd = ops_shape(in[0], a->in_dims);
    ops_attr_sp(call, "pool_size", 1, a->nsp, a->k);
    ops_attr_sp(call, "strides", 1, a->nsp, a->s);
    ops_attr_sp(call, "dilation", 1, a->nsp, a->d);
    ops_pad_sp(call, a->nsp, a->pad);
    a->count_pad = graph_attr_int(call, "count_include_pad", 0) != 0;
    a->lp = (double)graph_attr_int(call, "p", 2);
    a->storage_order = graph_attr_int(call, "storage_order", 0) != 0;
    /* ceil_mode windows may run past the padded input: pad the far side more */
    int64_t pad[2 * OPS_MAX_SPATIAL];
    memcpy(pad, a->pad, sizeof pad);
    for (int d = 0; d < a->nsp; d++) {
        int64_t need = (od[2 + d] - 1) * a->s[d] + (a->k[d] - 1) * a->d[d] + 1;
        int64_t have = a->in_dims[2 + d] + a->pad[d] + a->pad[d + a->nsp];
        if (need > have) {
            pad[d + a->nsp] += need - have;
            a->overhang = 1;
        }
    }
    double fill =
        a->kind == POOL_MAX || a->kind == POOL_ARGMAX ? lowest(kiln_tensor_dtype(in[0])) : 0;
    a->p = ops_pad_window(ctx, call, in[0], a->nsp, pad, fill);
    if (!a->p)
        return KILN_ERR_INVALID;
    for (int d = 0; d < a->nsp; d++)
        a->r[d] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a->k[d]),
                                   names[OPS_MAX_SPATIAL - a->nsp + d]);
    return KILN_OK;
}

/* The flat offset, within its image, of spatial position c (in_dims of a),
 * row major, or column major (the first spatial dim fastest). */
static kiln_expr spatial_offset(kiln_ctx *ctx, const pool_args *a, const kiln_expr *c,
                                int column_major) {
    kiln_expr off = NULL;
    for (int k = 0; k < a->nsp; k++) {
        int d = column_major ? a->nsp - 1 - k : k;
        off = off ? kiln_add(kiln_mul(off, ops_int(ctx, a->in_dims[2 + d])), c[d]) : c[d];
    }
    return off;
}

/* The row-major offset of the first window element (in the window's
 * row-major order) equal to the max (NaN: the first NaN), or `none` if
 * none is (a window over padding only). */
static kiln_expr first_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM], c[OPS_MAX_SPATIAL], z = ops_int(ctx, 0), inside = NULL;
    window_index(ctx, a, i, ix);
    for (int d = 0; d < a->nsp; d++) {
        c[d] = kiln_sub(ix[2 + d], ops_int(ctx, a->pad[d]));
        kiln_expr in = kiln_and(kiln_ge(c[d], z), kiln_lt(c[d], ops_int(ctx, a->in_dims[2 + d])));
        inside = inside ? kiln_and(inside, in) : in;
    }
    kiln_expr x = kiln_tensor_at(a->p, a->nd, ix), best = kiln_tensor_at(a->best, a->nd, i);
    kiln_expr hit = kiln_eq(x, best);
    if (ops_is_float_dtype(kiln_tensor_dtype(a->best)))
        hit = kiln_or(hit, kiln_and(kiln_ne(x, x), kiln_ne(best, best)));
    int64_t none = 1;
    for (int d = 0; d < a->nsp; d++)
        none *= a->in_dims[2 + d];
    return kiln_min_reduce(
        kiln_select(kiln_and(inside, hit), spatial_offset(ctx, a, c, 0), ops_int(ctx, none)),
        a->nsp, a->r);
}

/* The index of the first max in the whole input: (n * C + c) * the image
 * size + its offset in the image, row or column major; -1 if none. */
static kiln_expr index_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pool_args *a = u;
    int64_t size = 1;
    for (int d = 0; d < a->nsp; d++)
        size *= a->in_dims[2 + d];
    kiln_expr f = kiln_tensor_at(a->first, a->nd, i), off = f;
    if (a->storage_order) {
        kiln_expr c[OPS_MAX_SPATIAL], rest = f;
        for (int d = a->nsp - 1; d >= 0; d--) {
            kiln_expr n = ops_int(ctx, a->in_dims[2 + d]);
            c[d] = kiln_floormod(rest, n);
            rest = kiln_floordiv(rest, n);
        }
        off = spatial_offset(ctx, a, c, 1);
    }
    kiln_expr image = kiln_add(kiln_mul(i[0], ops_int(ctx, a->in_dims[1])), i[1]);
    kiln_expr flat = kiln_add(kiln_mul(image, ops_int(ctx, size)), off);
    return kiln_select(kiln_eq(f, ops_int(ctx, size)), ops_int(ctx, -1), flat);
}

/* (the max pool, the index of its first maximal element): the max, then a
 * second reduction over the window for the first element equal to it. */
static kiln_status pool_argmax(kiln_ctx *ctx, const gnode *call, const int64_t *od, pool_args *a,
                               kiln_tensor **out) {
    a->best = ops_compute(ctx, call, ".values", a->nd, od, pool_body, a);
    if (!a->best)
        return KILN_ERR_INVALID;
    for (int d = 0; d < a->nsp; d++) /* the second reduction's own axes */
        a->r[d] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a->k[d]), "rk");
    a->first = ops_compute(ctx, call, ".first", a->nd, od, first_body, a);
    out[0] = a->best;
    out[1] = a->first ? ops_compute(ctx, call, ".indices", a->nd, od, index_body, a) : NULL;
    return out[1] ? KILN_OK : KILN_ERR_INVALID;
}

static kiln_status compute_pool(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                kiln_tensor **out) {
    pool_args a;
    int64_t od[KILN_MAX_NDIM];
    ops_out_shape(call, od);
    if (pool_init(ctx, call, in, od, &a) != KILN_OK)
        return KILN_ERR_INVALID;
    if (a.kind == POOL_ARGMAX)
        return pool_argmax(ctx, call, od, &a, out);
    if (a.kind == POOL_MAX) {
        out[0] = ops_compute(ctx, call, "", a.nd, od, pool_body, &a);
    } else {
        a.sum = ops_compute(ctx, call, ".sum", a.nd, od, pool_body, &a);
        out[0] = a.sum ? ops_compute(ctx, call, "", a.nd, od, finish_body, &a) : NULL;
    }
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

typedef struct {
    kiln_tensor *x, *sum;
    int nd, nsp, kind; /* rank; spatial dims 2 .. 2+nsp (NCHW[x]c: the block is last) */
    int64_t count;
    double lp;
    kiln_expr r[KILN_MAX_NDIM];
} gpool_args;

static kiln_expr gsum_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    gpool_args *a = u;
    kiln_expr ix[KILN_MAX_NDIM];
    ix[0] = i[0];
    ix[1] = i[1];
    for (int d = 2; d < a->nd; d++)
        ix[d] = d < 2 + a->nsp ? a->r[d - 2] : i[d];
    return window_reduce(ctx, a->kind, a->lp, kiln_tensor_dtype(a->x),
                         kiln_tensor_at(a->x, a->nd, ix), a->nsp, a->r);
}

static kiln_expr gfinish_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    gpool_args *a = u;
    kiln_dtype dt = kiln_tensor_dtype(a->x), sdt = kiln_tensor_dtype(a->sum);
    kiln_expr s = kiln_tensor_at(a->sum, a->nd, i);
    if (a->kind == POOL_LP)
        return kiln_pow(s, ops_const(ctx, dt, 1.0 / a->lp));
    return average(ctx, s, ops_const(ctx, sdt, (double)a->count), sdt, dt);
}

static kiln_status compute_global_pool(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                       kiln_tensor **out) {
    gpool_args a;
    memset(&a, 0, sizeof a);
    int64_t xd[KILN_MAX_NDIM], od[KILN_MAX_NDIM];
    a.x = in[0];
    a.nd = ops_shape(in[0], xd);
    ops_out_shape(call, od);
    a.count = 1;
    a.nsp = a.nd - 2 - (ops_layout_block(graph_attr_str(call, "layout", "NCHW")) > 0);
    for (int d = 2; d < 2 + a.nsp; d++) {
        a.r[d - 2] = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, xd[d]), "r");
        a.count *= xd[d];
    }
    a.kind = POOL_KIND(call);
    a.lp = (double)graph_attr_int(call, "p", 2);
    if (a.kind == POOL_MAX) {
        out[0] = ops_compute(ctx, call, "", a.nd, od, gsum_body, &a);
        return out[0] ? KILN_OK : KILN_ERR_INVALID;
    }
    a.sum = ops_compute(ctx, call, ".sum", a.nd, od, gsum_body, &a);
    out[0] = a.sum ? ops_compute(ctx, call, "", a.nd, od, gfinish_body, &a) : NULL;
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the schedule ------------------------------------------------------------------
 * Max pooling in NCHW[x]c does one comparison per input value read, so a padded copy of
 * its input costs more than the pooling: the input is read in place (the
 * padding a select per load). Rows of (batch, channel block) run in
 * parallel; along a row, blocks of up to 8 output pixels at stride 1, 2
 * at larger strides (the largest divisor of the width) keep their maxima in
 * registers (the pool stage, or
 * a cache of the output when the pool is the kernel's output, computed at
 * the block) while the window is reduced, unrolled, with the x channels of
 * a block as one vector: neighbouring windows overlap, so the C compiler
 * loads each input vector once per block row. Before, an unfused pool
 * reduced into the output in memory (GoogLeNet's pools at 25 % of their
 * memory roof). Other pools keep the default schedule. */
static kiln_status schedule_pool2d_nchwc(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                         kiln_tensor *out, const kiln_target *target) {
    int64_t od[5];
    if (POOL_KIND(call) != POOL_MAX || kiln_tensor_ndim(out) != 5 || ops_shape(out, od) != 5 ||
        kiln_tensor_num_reduce_axes(anchor) != 2 || (od[4] & (od[4] - 1)) || od[4] < 4)
        return KILN_OK;
    kiln_status st;
    kiln_tensor *ins[4];
    if (kiln_tensor_inputs(anchor, ins, 4) >= 1 && kiln_tensor_axis(ins[0], 0)) {
        kiln_stage *sp = kiln_schedule_stage(s, ins[0]);
        if (!sp)
            return KILN_ERR_INVALID;
        if ((st = kiln_compute_inline(sp)) != KILN_OK)
            return st;
    }
    kiln_tensor *acc = anchor;
    if (anchor == out && !(acc = kiln_cache_write(s, out, "local")))
        return KILN_ERR_INVALID;
    kiln_stage *so = kiln_schedule_stage(s, out), *sa = kiln_schedule_stage(s, acc);
    if (!so || !sa)
        return KILN_ERR_INVALID;
    /* pixels per block: the largest divisor of the width up to 8, within the
       registers (one accumulator per pixel and vector, and a loaded input) */
    int lanes = target_lanes(target);
    int64_t vecs = (od[4] + lanes - 1) / lanes, r = 1, st2[2];
    ops_attr_sp(call, "strides", 1, 2, st2);
    /* measured on GoogLeNet's pools (Zen 5): stride 1 gains up to 8 pixels
       (70 -> 32 us), stride 2 only 2 (83 -> 63 us; 4 or 8 ran slower than 1) */
    int64_t rmax = st2[1] == 1 ? 8 : 2;
    for (int64_t c = rmax; c >= 1; c--)
        if (od[3] % c == 0 && (c + 1) * vecs <= target->vector_regs) {
            r = c;
            break;
        }
    kiln_expr ax[5], f, wo, wi;
    for (int i = 0; i < 5; i++)
        ax[i] = kiln_tensor_axis(out, i);
    if ((st = kiln_fuse(so, ax[0], ax[1], &f)) != KILN_OK ||
        (st = kiln_fuse(so, f, ax[2], &f)) != KILN_OK || (st = kiln_parallel(so, f)) != KILN_OK ||
        (st = kiln_split(so, ax[3], r, &wo, &wi)) != KILN_OK ||
        (st = kiln_unroll(so, wi)) != KILN_OK || (st = kiln_vectorize(so, ax[4])) != KILN_OK ||
        (st = kiln_compute_at(sa, so, wo)) != KILN_OK ||
        (st = kiln_set_scope(sa, "local")) != KILN_OK)
        return st;
    kiln_expr c[5];
    for (int i = 0; i < 5; i++)
        c[i] = kiln_tensor_axis(acc, i);
    kiln_expr rv = kiln_tensor_reduce_axis(acc, 0), rw = kiln_tensor_reduce_axis(acc, 1);
    kiln_expr corder[7] = {c[0], c[1], c[2], rv, rw, c[3], c[4]};
    if ((st = kiln_reorder(sa, 7, corder)) != KILN_OK || (st = kiln_unroll(sa, rw)) != KILN_OK ||
        (st = kiln_unroll(sa, c[3])) != KILN_OK)
        return st;
    return kiln_vectorize(sa, c[4]);
}

/* ---- the layout hook ------------------------------------------------------------------ */

/* An input in NCHW[x]c stays so: the pool runs with layout="NCHW[x]c". */
static int alter_pool(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    int b = q->block[call->in[0]];
    if (!b || strcmp(graph_attr_str(call, "layout", "NCHW"), "NCHW"))
        return 0;
    static const char *const drop[] = {"layout", NULL};
    rw->drop = drop;
    snprintf(rw->attrs, sizeof rw->attrs, "layout=\"NCHW%dc\"", b);
    rw->in[0].block = b;
    rw->out_block = b;
    return 1;
}

/* ---- the table ------------------------------------------------------------------------ */

#define POOL(nm, schema, relation, fn, kind, nsp, sched, hook, sum)                                \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = schema, .rel = relation,                    \
        .pattern = OP_OUT_ELEMWISE_FUSABLE, .compute = fn, .summary = sum, .schedule = sched,      \
        .variant = POOL_VARIANT(kind, nsp), .alter = hook, .sym_dims = 1                           \
    }
#define ARGMAX(nm, schema, nsp, sum)                                                               \
    {                                                                                              \
        .name = nm, .min_in = 1, .max_in = 1, .attrs = schema, .rel = rel_pool,                    \
        .pattern = OP_OPAQUE, .compute = compute_pool, .summary = sum,                             \
        .variant = POOL_VARIANT(POOL_ARGMAX, nsp)                                                  \
    }

const kiln_op_def ops_pool_rows[] = {
    POOL("nn.max_pool2d", pool2d_attrs, rel_pool, compute_pool, POOL_MAX, 2, schedule_pool2d_nchwc,
         alter_pool, "2-D max pooling"),
    POOL("nn.avg_pool2d", pool2d_attrs, rel_pool, compute_pool, POOL_AVG, 2, NULL, alter_pool,
         "2-D average pooling"),
    POOL("nn.lp_pool2d", lp_pool2d_attrs, rel_pool, compute_pool, POOL_LP, 2, NULL, alter_pool,
         "2-D Lp pooling: (sum |x|^p)^(1/p) over the window"),
    POOL("nn.max_pool3d", pool3d_attrs, rel_pool, compute_pool, POOL_MAX, 3, NULL, NULL,
         "3-D max pooling"),
    POOL("nn.avg_pool3d", pool3d_attrs, rel_pool, compute_pool, POOL_AVG, 3, NULL, NULL,
         "3-D average pooling"),
    POOL("nn.lp_pool3d", lp_pool3d_attrs, rel_pool, compute_pool, POOL_LP, 3, NULL, NULL,
         "3-D Lp pooling: (sum |x|^p)^(1/p) over the window"),
    ARGMAX("nn.max_pool2d_with_argmax", argmax2d_attrs, 2,
           "2-D max pooling and the flat int64 index of each max (row or column major)"),
    ARGMAX("nn.max_pool3d_with_argmax", argmax3d_attrs, 3,
           "3-D max pooling and the flat int64 index of each max (row or column major)"),
    POOL("nn.global_avg_pool2d", global_pool_attrs, rel_global_pool, compute_global_pool, POOL_AVG,
         0, NULL, alter_pool, "mean over the spatial dims"),
    POOL("nn.global_max_pool2d", global_pool_attrs, rel_global_pool, compute_global_pool, POOL_MAX,
         0, NULL, alter_pool, "max over the spatial dims"),
    POOL("nn.global_lp_pool2d", global_lp_pool_attrs, rel_global_pool, compute_global_pool, POOL_LP,
         0, NULL, alter_pool, "(sum |x|^p)^(1/p) over the spatial dims"),
};

const int ops_pool_count = (int)(sizeof ops_pool_rows / sizeof ops_pool_rows[0]);
