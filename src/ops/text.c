/* text.c: the ops on token sequences.
 *
 *   text.tfidf   ONNX TfIdfVectorizer of integer tokens: how often each
 *                n-gram of a pool occurs in each row of the input, with
 *                skips, weighted as TF, IDF or TF-IDF
 *
 * The pool comes as data, not attributes: the ONNX converter checks the
 * node's attributes and lays its n-grams out as constants, so every
 * lookup is a read of a tensor (an expression cannot index an attribute
 * list by a loop variable):
 *
 *   grams   int64 [J, 1 + L]: row j is an n-gram, its length n (1 to L;
 *           any other length never matches) then its n tokens (the rest
 *           of the row unused); the rows are in the order of the output
 *           index they count for
 *   starts  int64 [O + 1]: output c counts the rows starts[c] to
 *           starts[c + 1] - 1 (none when equal)
 *   weights float32 [O] (optional): the weight of output c
 *
 * An n-gram of length n >= 2 occurs at position i with skip distance
 * d + 1 (d = 0 .. max_skip_count, ONNX's skips) when the tokens at i,
 * i + (d + 1), ..., i + (n - 1)(d + 1) are its tokens; a 1-gram is counted
 * once per position, whatever the skips, as ONNX Runtime and ONNX's
 * reference count. The row of grams an output reads comes from starts,
 * that is from data, so it goes through ops_checked_index. */
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define MAXD KILN_MAX_NDIM

enum { TFIDF_TF, TFIDF_IDF, TFIDF_TFIDF };
static const char *const g_tfidf_modes[] = {"TF", "IDF", "TFIDF", NULL};

static const attr_schema tfidf_attrs[] = {{"max_skip_count", GA_INT, 0, "0"},
                                          {"max_per_index", GA_INT, 0, "1"},
                                          {"mode", GA_STR, 0, "\"TF\""},
                                          {NULL, 0, 0, NULL}};

/* ---- text.tfidf ---------------------------------------------------------------------- */

static rel_result rel_tfidf(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(call->nin);
    rel_result r = REL_OK;
    const gtensor_type *t[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < call->nin; i++)
        if (!(t[i] = ops_tensor_in(in[i], i, &r)))
            return r;
    const gtensor_type *x = t[0], *grams = t[1], *starts = t[2];
    for (int i = 0; i < call->nin; i++)
        if (!ops_all_known(t[i], 0, t[i]->ndim))
            return ops_fail("symbolic dims are not supported by text.tfidf yet (input %d)", i);
    if ((x->ndim != 1 && x->ndim != 2) || (x->dtype != KILN_INT32 && x->dtype != KILN_INT64))
        return ops_fail("needs int32 or int64 tokens [C] or [N, C], not %d-D %s", x->ndim,
                        kiln_dtype_name(x->dtype));
    if (grams->ndim != 2 || grams->dtype != KILN_INT64 || grams->dims[0].v < 1 ||
        grams->dims[1].v < 2)
        return ops_fail("the n-grams must be int64 [J >= 1, 1 + L >= 2] (length, then tokens)");
    if (starts->ndim != 1 || starts->dtype != KILN_INT64 || starts->dims[0].v < 1)
        return ops_fail("the starts must be int64 [O + 1] (the first n-gram of each output)");
    int64_t o = starts->dims[0].v - 1, c = x->dims[x->ndim - 1].v, span;
    if (call->nin == 4 && (t[3]->ndim != 1 || t[3]->dtype != KILN_FLOAT32 || t[3]->dims[0].v != o))
        return ops_fail("the weights must be float32 [%lld], one per output", (long long)o);
    if (!kiln_mul_ok(grams->dims[1].v, c, &span))
        return ops_fail("n-grams of %lld tokens over rows of %lld overflow int64",
                        (long long)grams->dims[1].v - 1, (long long)c);
    int64_t skip = graph_attr_int(call, "max_skip_count", 0),
            per = graph_attr_int(call, "max_per_index", 1);
    if (skip < 0)
        return ops_fail("max_skip_count = %lld must not be negative", (long long)skip);
    if (per < 1 || per > grams->dims[0].v)
        return ops_fail("max_per_index = %lld must be 1 to the n-gram count %lld", (long long)per,
                        (long long)grams->dims[0].v);
    if (ops_attr_choice(call, "mode", "TF", g_tfidf_modes) < 0)
        return REL_ERROR;
    gtensor_type res = *x;
    res.dtype = KILN_FLOAT32;
    res.dims[x->ndim - 1] = (gdim){o, NULL};
    return ops_set_out(g, out, &res);
}

typedef struct {
    kiln_tensor *x, *grams, *starts, *weights, *count;
    int nd, mode;
    int64_t c, j, len; /* tokens per row, n-grams, the longest n-gram */
    kiln_expr r, d, i; /* reduce axes: slot of the output, skip, position */
} tfidf_args;

/* x at position p of the row of output index o (its batch index, if any). */
static kiln_expr token_at(tfidf_args *a, const kiln_expr *o, kiln_expr p) {
    kiln_expr idx[2] = {o[0], p};
    return kiln_cast(KILN_INT64, kiln_tensor_at(a->x, a->nd, a->nd == 2 ? idx : idx + 1));
}

static kiln_expr gram_at(kiln_ctx *ctx, tfidf_args *a, kiln_expr row, int64_t col) {
    kiln_expr idx[2] = {row, ops_int(ctx, col)};
    return kiln_tensor_at(a->grams, 2, idx);
}

/* count[.., c] = the occurrences of the n-grams of output c */
static kiln_expr tfidf_count_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    tfidf_args *a = u;
    kiln_expr c = o[a->nd - 1], one = ops_int(ctx, 1), zero = ops_int(ctx, 0);
    kiln_expr s0 = kiln_tensor_at(a->starts, 1, &c);
    kiln_expr c1 = kiln_add(c, one);
    kiln_expr have = kiln_lt(a->r, kiln_sub(kiln_tensor_at(a->starts, 1, &c1), s0));
    kiln_expr row = ops_checked_index(ctx, kiln_select(have, kiln_add(s0, a->r), zero), a->j, 0);
    kiln_expr n = gram_at(ctx, a, row, 0), dist = kiln_add(a->d, one);
    /* n in 1 .. L; a 1-gram only at distance 1; the last token in the row:
       (n - 1) * dist <= c - 1 - i, without a product that could overflow */
    kiln_expr ok = kiln_and(have, kiln_and(kiln_ge(n, one), kiln_le(n, ops_int(ctx, a->len))));
    ok = kiln_and(ok, kiln_or(kiln_gt(n, one), kiln_eq(a->d, zero)));
    ok = kiln_and(
        ok, kiln_le(kiln_sub(n, one), kiln_div(kiln_sub(ops_int(ctx, a->c - 1), a->i), dist)));
    for (int64_t k = 0; k < a->len; k++) {
        kiln_expr p =
            kiln_min(kiln_add(a->i, kiln_mul(ops_int(ctx, k), dist)), ops_int(ctx, a->c - 1));
        kiln_expr same = kiln_eq(token_at(a, o, p), gram_at(ctx, a, row, 1 + k));
        ok = kiln_and(ok, k ? kiln_or(kiln_le(n, ops_int(ctx, k)), same) : same);
    }
    kiln_expr axes[3] = {a->r, a->d, a->i};
    return kiln_sum(kiln_select(ok, one, zero), 3, axes);
}

static kiln_expr tfidf_out_body(kiln_ctx *ctx, const kiln_expr *o, void *u) {
    tfidf_args *a = u;
    kiln_expr f0 = ops_const(ctx, KILN_FLOAT32, 0);
    if (!a->count) /* empty rows: nothing occurs */
        return f0;
    kiln_expr count = kiln_tensor_at(a->count, a->nd, o);
    kiln_expr w =
        a->weights ? kiln_tensor_at(a->weights, 1, &o[a->nd - 1]) : ops_const(ctx, KILN_FLOAT32, 1);
    kiln_expr tf = kiln_cast(KILN_FLOAT32, count);
    if (a->mode == TFIDF_TF)
        return tf;
    if (a->mode == TFIDF_IDF)
        return kiln_select(kiln_gt(count, ops_int(ctx, 0)), w, f0);
    return a->weights ? kiln_mul(tf, w) : tf;
}

/* Cost: N * O * max_per_index * (skips + 1) * C * L compares for N rows
 * of C tokens and O outputs; the skips are at most C - 2 (a longer one
 * fits no 2-gram). */
static kiln_status compute_tfidf(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                 kiln_tensor **out) {
    int64_t xd[MAXD], gd[2], od[MAXD];
    tfidf_args a;
    memset(&a, 0, sizeof a);
    a.x = in[0];
    a.grams = in[1];
    a.starts = in[2];
    a.weights = call->nin == 4 ? in[3] : NULL;
    a.nd = ops_shape(in[0], xd);
    ops_shape(in[1], gd);
    ops_out_shape(call, od);
    a.c = xd[a.nd - 1];
    a.j = gd[0];
    a.len = gd[1] - 1;
    if ((a.mode = ops_attr_choice(call, "mode", "TF", g_tfidf_modes)) < 0)
        return KILN_ERR_INVALID;
    int64_t skip = graph_attr_int(call, "max_skip_count", 0);
    /* distances 1 .. skip + 1, of which at most C - 1 fit a 2-gram */
    int64_t dists = a.c >= 2 ? (skip < a.c - 2 ? skip : a.c - 2) + 1 : 1;
    int64_t per = graph_attr_int(call, "max_per_index", 1);
    if (a.c > 0) {
        a.r = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, per), "r");
        a.d = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, dists), "d");
        a.i = kiln_reduce_axis(ctx, ops_int(ctx, 0), ops_int(ctx, a.c), "i");
        a.count = ops_compute(ctx, call, ".count", a.nd, od, tfidf_count_body, &a);
        if (!a.count)
            return KILN_ERR_INVALID;
    }
    out[0] = ops_compute(ctx, call, "", a.nd, od, tfidf_out_body, &a);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* ---- the table ------------------------------------------------------------------------ */

const kiln_op_def ops_text_rows[] = {
    {.name = "text.tfidf",
     .min_in = 3,
     .max_in = 4,
     .attrs = tfidf_attrs,
     .rel = rel_tfidf,
     .pattern = OP_OPAQUE,
     .compute = compute_tfidf,
     .summary = "n-gram counts of int tokens [C] or [N, C] (ONNX TfIdfVectorizer): n-grams "
                "[J, 1 + L], output starts [O + 1], weights [O]; TF, IDF or TFIDF"},
};

const int ops_text_count = (int)(sizeof ops_text_rows / sizeof ops_text_rows[0]);
