/* test_te_checks.c: indices from data are checked, never clamped, and
 * integer division by zero is reported (issue 11). kiln_checked_index
 * through the interpreter (an out-of-range index is KILN_ERR_RANGE, a lane a
 * select does not pick is not checked) and through compiled kernels under a
 * serial, a parallel and two vectorized schedules (kiln_function_call
 * returns KILN_ERR_RANGE, the output is still written everywhere and never
 * read out of bounds: ASan runs this); integer div, mod, floordiv and
 * floormod by zero return KILN_KERNEL_EDIVZERO with base/intdiv.h's values
 * and are no error for kiln_function_call; float kernels, and indices the
 * simplifier proves in range, carry no status code. Then a Gather of
 * constants by a bad constant index is a compile error naming the node (at
 * ONNX import, and in FoldConstant), and a Gather whose indices are a graph
 * input is a run error (tests/data/make_gather_models.py). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/intdiv.h"
#include "check.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_load.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "runtime/runtime_internal.h"
#include "te/interp.h"
#include "te_util.h"

#define ROWS 5 /* the indexed dim */

/* ---- take: out[i, j] = X[checked(I[i]), j] ------------------------------------------- */

typedef struct {
    kiln_tensor *x, *idx;
    int from_end, ncols, guarded;
} take_t;

static kiln_expr take_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    take_t *t = u;
    kiln_expr k = kiln_tensor_at(t->idx, 1, i);
    kiln_expr j = kiln_checked_index(k, kiln_int(ctx, ROWS), t->from_end);
    kiln_expr ix[2] = {j, t->ncols ? i[1] : NULL};
    kiln_expr v = kiln_tensor_at(t->x, t->ncols ? 2 : 1, ix);
    if (!t->guarded)
        return v;
    /* a select that does not pick the read where the index is bad: no check there */
    kiln_expr ok = kiln_and(kiln_ge(k, kiln_int(ctx, 0)), kiln_lt(k, kiln_int(ctx, ROWS)));
    return kiln_select(ok, v, kiln_float(ctx, -1));
}

/* out [nidx, ncols] (or [nidx] if ncols is 0) over X [ROWS, ncols] float32. */
static kiln_tensor *make_take(kiln_ctx *ctx, take_t *t, int nidx, int ncols, int from_end,
                              int guarded) {
    kiln_expr xs[2] = {kiln_int(ctx, ROWS), kiln_int(ctx, ncols)};
    kiln_expr is = kiln_int(ctx, nidx);
    t->x = kiln_placeholder(ctx, ncols ? 2 : 1, xs, KILN_FLOAT32, "X");
    t->idx = kiln_placeholder(ctx, 1, &is, KILN_INT64, "I");
    t->from_end = from_end;
    t->ncols = ncols;
    t->guarded = guarded;
    kiln_expr os[2] = {is, kiln_int(ctx, ncols)};
    return kiln_compute(ctx, ncols ? 2 : 1, os, take_body, t, "take");
}

static kiln_ndarray *arr(kiln_dtype dt, int nd, int64_t d0, int64_t d1) {
    int64_t sh[2] = {d0, d1};
    return kiln_ndarray_empty(dt, nd, sh);
}

static void fill_x(kiln_ndarray *x) {
    float *p = kiln_ndarray_data(x);
    for (int64_t i = 0; i < kiln_ndarray_numel(x); i++)
        p[i] = (float)(100 + i);
}

/* The row an index reads: itself normalized, or 0 (and *bad) out of range. */
static int64_t row_of(int64_t k, int from_end, int *bad) {
    if (k < ROWS && (k >= 0 || (from_end && k >= -ROWS)))
        return k < 0 ? k + ROWS : k;
    *bad = 1;
    return 0;
}

/* Every element of out is X at its index's row (row 0 where it is bad, or
 * -1 where the select guards it). */
static void check_take(const kiln_ndarray *out, const int64_t *idx, int nidx, int ncols,
                       int from_end, int guarded) {
    const float *o = kiln_ndarray_data(out);
    int w = ncols ? ncols : 1;
    for (int i = 0; i < nidx; i++) {
        int bad = 0;
        int64_t r = row_of(idx[i], from_end, &bad);
        if (guarded && (idx[i] < 0 || idx[i] >= ROWS)) {
            for (int j = 0; j < w; j++)
                CHECK_EQ_INT(o[i * w + j], -1);
            continue;
        }
        for (int j = 0; j < w; j++)
            CHECK_EQ_INT(o[i * w + j], 100 + r * w + j);
    }
}

static int any_bad(const int64_t *idx, int n, int from_end) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        row_of(idx[i], from_end, &bad);
    return bad;
}

/* ---- the interpreter ------------------------------------------------------------------- */

static kiln_status interp_take(const int64_t *idx, int nidx, int from_end, int guarded) {
    kiln_ctx *ctx = kiln_ctx_new();
    take_t t;
    kiln_tensor *out = make_take(ctx, &t, nidx, 3, from_end, guarded);
    kiln_ndarray *x = arr(KILN_FLOAT32, 2, ROWS, 3), *iv = arr(KILN_INT64, 1, nidx, 0), *res = NULL;
    fill_x(x);
    memcpy(kiln_ndarray_data(iv), idx, sizeof(int64_t) * (size_t)nidx);
    kiln_tensor *ph[2] = {t.x, t.idx};
    const kiln_ndarray *vals[2] = {x, iv};
    kiln_status st = te_eval(1, &out, 2, ph, vals, NULL, &res);
    if (st == KILN_OK)
        check_take(res, idx, nidx, 3, from_end, guarded);
    else
        CHECK(res == NULL);
    kiln_ndarray_free(res);
    kiln_ndarray_free(x);
    kiln_ndarray_free(iv);
    kiln_ctx_free(ctx);
    return st;
}

static void test_interp(void) {
    const int64_t good[6] = {0, 4, -1, -5, 2, 3};
    CHECK_EQ_INT(interp_take(good, 6, 1, 0), KILN_OK);
    const int64_t hi[3] = {0, 5, 1}, lo[3] = {1, -6, 0}, huge[2] = {INT64_MAX, INT64_MIN};
    CHECK_EQ_INT(interp_take(hi, 3, 1, 0), KILN_ERR_RANGE);
    CHECK_CONTAINS(kiln_last_error(), "index 5 is out of range for a dim of 5");
    CHECK_CONTAINS(kiln_last_error(), "compute 'take'");
    CHECK_EQ_INT(interp_take(lo, 3, 1, 0), KILN_ERR_RANGE);
    CHECK_CONTAINS(kiln_last_error(), "index -6 is out of range");
    CHECK_EQ_INT(interp_take(huge, 2, 1, 0), KILN_ERR_RANGE);
    /* without from_end, -1 is out of range too */
    const int64_t neg[2] = {0, -1};
    CHECK_EQ_INT(interp_take(neg, 2, 0, 0), KILN_ERR_RANGE);
    CHECK_CONTAINS(kiln_last_error(), "(valid: 0 to 4)");
    CHECK_EQ_INT(interp_take(good, 2, 0, 0), KILN_OK);
    /* lanes a select does not pick are not checked (as C's ?: in kernels) */
    const int64_t mixed[4] = {9, 1, -7, 4};
    CHECK_EQ_INT(interp_take(mixed, 4, 1, 1), KILN_OK);
}

static void test_builder_errors(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    CHECK(kiln_checked_index(kiln_int(ctx, 1), kiln_int(ctx, 0), 1) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "extent 0 must be positive");
    CHECK(kiln_checked_index(kiln_float(ctx, 1), kiln_int(ctx, 3), 1) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "must be an integer");
    CHECK(kiln_checked_index(NULL, kiln_int(ctx, 3), 1) == NULL);
    /* an int32 index is taken as int64 */
    kiln_expr j = kiln_checked_index(kiln_const(ctx, KILN_INT32, 2), kiln_int(ctx, 3), 0);
    CHECK(j != NULL);
    char buf[96];
    kiln_expr_print(j, buf, sizeof buf);
    CHECK_EQ_STR(buf, "checked_index(int64(2), 3)");
    kiln_ctx_free(ctx);
}

/* ---- compiled kernels ------------------------------------------------------------------ */

enum { SCHED_SERIAL, SCHED_PARALLEL, SCHED_VEC_COLS, SCHED_VEC_ROWS };

static kiln_module *build_take(kiln_ctx *ctx, take_t *t, kiln_tensor **out, int sched, int nidx,
                               int ncols, int from_end, char **src) {
    *out = make_take(ctx, t, nidx, ncols, from_end, 0);
    kiln_schedule *s = kiln_schedule_create(ctx, 1, out);
    kiln_stage *st = kiln_schedule_stage(s, *out);
    kiln_expr ax0 = kiln_tensor_axis(*out, 0), ax1 = kiln_tensor_axis(*out, 1);
    if (sched == SCHED_PARALLEL)
        CHECK_EQ_INT(kiln_parallel(st, ax0), KILN_OK);
    if (sched == SCHED_VEC_COLS) /* the check is the same on every lane: stays scalar */
        CHECK_EQ_INT(kiln_vectorize(st, ax1), KILN_OK);
    if (sched == SCHED_VEC_ROWS) /* a check per lane: the loop falls back to serial */
        CHECK_EQ_INT(kiln_vectorize(st, ax0), KILN_OK);
    kiln_tensor *args[3] = {t->x, t->idx, *out};
    *src = kiln_build_source(s, 3, args, "take_k", NULL);
    kiln_module *m = kiln_build(s, 3, args, "take_k", NULL);
    if (!m)
        fprintf(stderr, "build: %s\n", kiln_last_error());
    return m;
}

static void run_take(int sched, const int64_t *idx, int nidx, int ncols, int from_end) {
    kiln_ctx *ctx = kiln_ctx_new();
    take_t t;
    kiln_tensor *out;
    char *src = NULL;
    kiln_module *m = build_take(ctx, &t, &out, sched, nidx, ncols, from_end, &src);
    CHECK(m != NULL && src != NULL);
    if (src) {
        CHECK_CONTAINS(src, "kiln_check_index(");
        CHECK_CONTAINS(src, "return kiln__st;");
        if (sched == SCHED_PARALLEL)
            CHECK_CONTAINS(src, "__atomic_fetch_or(kiln__cl->kiln__st");
        if (sched == SCHED_VEC_COLS)
            CHECK_CONTAINS(src, "kiln_vstore_f32x");
    }
    free(src);
    kiln_function *f = m ? kiln_module_get_function(m, "take_k") : NULL;
    kiln_ndarray *x = arr(KILN_FLOAT32, ncols ? 2 : 1, ROWS, ncols);
    kiln_ndarray *iv = arr(KILN_INT64, 1, nidx, 0);
    kiln_ndarray *o = arr(KILN_FLOAT32, ncols ? 2 : 1, nidx, ncols);
    fill_x(x);
    memcpy(kiln_ndarray_data(iv), idx, sizeof(int64_t) * (size_t)nidx);
    float *op = kiln_ndarray_data(o);
    for (int64_t i = 0; i < kiln_ndarray_numel(o); i++)
        op[i] = NAN; /* every element must be written */
    kiln_ndarray *args[3] = {x, iv, o};
    kiln_status st = f ? kiln_function_call(f, 3, args) : KILN_ERR_INVALID;
    if (any_bad(idx, nidx, from_end)) {
        CHECK_EQ_INT(st, KILN_ERR_RANGE);
        CHECK_CONTAINS(kiln_last_error(), "index out of range");
    } else {
        CHECK_EQ_INT(st, KILN_OK);
    }
    if (f)
        check_take(o, idx, nidx, ncols, from_end, 0);
    kiln_ndarray_free(x);
    kiln_ndarray_free(iv);
    kiln_ndarray_free(o);
    kiln_module_free(m);
    kiln_ctx_free(ctx);
}

static void test_compiled_take(void) {
    CHECK_EQ_INT(kiln_set_num_threads(4), KILN_OK);
    int64_t good[64], hi[64], lo[64], huge[64];
    for (int i = 0; i < 64; i++)
        good[i] = hi[i] = lo[i] = huge[i] = (i * 3) % 10 - 5; /* -5 .. 4 */
    hi[61] = 5;                                               /* in the last chunk */
    lo[0] = -6;
    huge[30] = INT64_MAX;
    huge[31] = INT64_MIN;
    static const int scheds[4] = {SCHED_SERIAL, SCHED_PARALLEL, SCHED_VEC_COLS, SCHED_VEC_ROWS};
    for (int s = 0; s < 4; s++) {
        int n = scheds[s] == SCHED_VEC_ROWS ? 8 : 64, cols = scheds[s] == SCHED_VEC_ROWS ? 0 : 8;
        int64_t hi8[8] = {0, 1, 2, 3, 4, -1, 5, 2}, lo8[8] = {-6, 1, 2, 3, 4, -1, -5, 2};
        run_take(scheds[s], good, n, cols, 1);
        run_take(scheds[s], n == 8 ? hi8 : hi, n, cols, 1);
        run_take(scheds[s], n == 8 ? lo8 : lo, n, cols, 1);
        if (n == 64)
            run_take(scheds[s], huge, n, cols, 1);
    }
    /* without from_end a negative index is out of range */
    run_take(SCHED_SERIAL, good, 64, 8, 0);
    int64_t nonneg[4] = {0, 4, 3, 1};
    run_take(SCHED_PARALLEL, nonneg, 4, 8, 0);
}

/* An index the simplifier proves in range needs no check and no status. */
static kiln_expr const_take_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    kiln_tensor *x = u;
    kiln_expr ix[2] = {kiln_checked_index(kiln_int(ctx, -2), kiln_int(ctx, ROWS), 1), i[0]};
    return kiln_tensor_at(x, 2, ix);
}

static void test_proved_in_range(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr xs[2] = {kiln_int(ctx, ROWS), kiln_int(ctx, 4)};
    kiln_tensor *x = kiln_placeholder(ctx, 2, xs, KILN_FLOAT32, "X");
    kiln_tensor *out = kiln_compute(ctx, 1, xs + 1, const_take_body, x, "row");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &out);
    kiln_tensor *args[2] = {x, out};
    char *src = kiln_build_source(s, 2, args, "row_k", NULL);
    CHECK(src != NULL);
    if (src) {
        CHECK(strstr(src, "kiln_check_index") == NULL);
        CHECK(strstr(src, "kiln__st") == NULL);
    }
    free(src);
    kiln_ctx_free(ctx);
}

/* ---- integer division ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *a, *b;
    int op;
} div_t_;

static kiln_expr div_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    (void)ctx;
    div_t_ *d = u;
    kiln_expr a = kiln_tensor_at(d->a, 2, i), b = kiln_tensor_at(d->b, 2, i);
    switch (d->op) {
    case 0: return kiln_div(a, b);
    case 1: return kiln_mod(a, b);
    case 2: return kiln_floordiv(a, b);
    default: return kiln_floormod(a, b);
    }
}

static int64_t ref_div(int op, kiln_dtype dt, int64_t a, int64_t b) {
    if (dt == KILN_INT64)
        return op == 0   ? kiln_idiv_trunc_i64(a, b)
               : op == 1 ? kiln_imod_trunc_i64(a, b)
               : op == 2 ? kiln_idiv_floor_i64(a, b)
                         : kiln_imod_floor_i64(a, b);
    int32_t x = (int32_t)a, y = (int32_t)b;
    return op == 0   ? kiln_idiv_trunc_i32(x, y)
           : op == 1 ? kiln_imod_trunc_i32(x, y)
           : op == 2 ? kiln_idiv_floor_i32(x, y)
                     : kiln_imod_floor_i32(x, y);
}

/* div, mod, floordiv and floormod of A by B ([4, 8] of dt) in one function,
 * each stage vectorized over its 8 columns if vec; the kernel is called
 * directly for its bits. */
static void run_div(kiln_dtype dt, int vec, int zeros) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr sh[2] = {kiln_int(ctx, 4), kiln_int(ctx, 8)};
    div_t_ d[4];
    kiln_tensor *a = kiln_placeholder(ctx, 2, sh, dt, "A"),
                *b = kiln_placeholder(ctx, 2, sh, dt, "B");
    kiln_tensor *outs[4];
    for (int k = 0; k < 4; k++) {
        d[k] = (div_t_){a, b, k};
        outs[k] = kiln_compute(ctx, 2, sh, div_body, &d[k], "q");
    }
    kiln_schedule *s = kiln_schedule_create(ctx, 4, outs);
    for (int k = 0; k < 4 && vec; k++)
        CHECK_EQ_INT(kiln_vectorize(kiln_schedule_stage(s, outs[k]), kiln_tensor_axis(outs[k], 1)),
                     KILN_OK);
    kiln_tensor *args[6] = {a, b, outs[0], outs[1], outs[2], outs[3]};
    char *src = kiln_build_source(s, 6, args, "div_k", NULL);
    CHECK(src != NULL);
    if (src) {
        CHECK_CONTAINS(src, "kiln_divisor_");
        CHECK_CONTAINS(src, "return kiln__st;");
        /* vector code: 8 lanes, or 4 / 2 where the target's vectors are
           narrower (AVX2, SSE) */
        if (vec)
            CHECK(strstr(src, "x8(") || strstr(src, "x4(") || strstr(src, "x2("));
    }
    free(src);
    kiln_module *m = kiln_build(s, 6, args, "div_k", NULL);
    CHECK(m != NULL);
    kiln_function *f = m ? kiln_module_get_function(m, "div_k") : NULL;
    kiln_ndarray *v[6];
    for (int k = 0; k < 6; k++)
        v[k] = arr(dt, 2, 4, 8);
    int64_t big = dt == KILN_INT64 ? INT64_MIN : INT32_MIN;
    for (int i = 0; i < 32; i++) {
        int64_t x = i % 5 == 0 ? big : i * 7 - 100, y = (i % 7) - 3; /* y is 0 at i = 3, 10, ... */
        if (!zeros && y == 0)
            y = 2;
        if (dt == KILN_INT64) {
            ((int64_t *)kiln_ndarray_data(v[0]))[i] = x;
            ((int64_t *)kiln_ndarray_data(v[1]))[i] = y;
        } else {
            ((int32_t *)kiln_ndarray_data(v[0]))[i] = (int32_t)x;
            ((int32_t *)kiln_ndarray_data(v[1]))[i] = (int32_t)y;
        }
    }
    if (f) {
        void *ptrs[6];
        for (int k = 0; k < 6; k++)
            ptrs[k] = kiln_ndarray_data(v[k]);
        int32_t bits = kiln_function_kernel(f)(ptrs, NULL);
        CHECK_EQ_INT(bits, zeros ? KILN_KERNEL_EDIVZERO : 0);
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 32; i++) {
                int64_t x = tu_get(v[0], i) == (double)big ? big : (int64_t)tu_get(v[0], i);
                int64_t y = (int64_t)tu_get(v[1], i);
                int64_t got = dt == KILN_INT64 ? ((int64_t *)kiln_ndarray_data(v[2 + k]))[i]
                                               : ((int32_t *)kiln_ndarray_data(v[2 + k]))[i];
                CHECK_EQ_INT(got, ref_div(k, dt, x, y));
            }
        /* a zero divisor has a defined value: no error by default */
        CHECK_EQ_INT(kiln_function_call(f, 6, v), KILN_OK);
    }
    for (int k = 0; k < 6; k++)
        kiln_ndarray_free(v[k]);
    kiln_module_free(m);
    kiln_ctx_free(ctx);
}

static void test_int_division(void) {
    run_div(KILN_INT32, 0, 1);
    run_div(KILN_INT32, 1, 1);
    run_div(KILN_INT64, 0, 1);
    run_div(KILN_INT64, 1, 1);
    run_div(KILN_INT32, 0, 0);
    run_div(KILN_INT32, 1, 0);
}

/* ---- kernels with nothing to report carry no status ------------------------------------- */

typedef struct {
    kiln_tensor *a, *b;
    int by_const;
} fdiv_t_;

static kiln_expr fdiv_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    fdiv_t_ *d = u;
    kiln_expr a = kiln_tensor_at(d->a, 1, i);
    if (d->by_const)
        return kiln_add(kiln_div(a, kiln_const(ctx, kiln_tensor_dtype(d->a), 3)),
                        kiln_mod(a, kiln_const(ctx, kiln_tensor_dtype(d->a), -1)));
    return kiln_div(a, kiln_tensor_at(d->b, 1, i));
}

static void check_no_status(kiln_dtype dt, int by_const, int parallel) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_int(ctx, 64);
    fdiv_t_ d = {kiln_placeholder(ctx, 1, &n, dt, "A"), kiln_placeholder(ctx, 1, &n, dt, "B"),
                 by_const};
    kiln_tensor *out = kiln_compute(ctx, 1, &n, fdiv_body, &d, "fdiv");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &out);
    if (parallel)
        kiln_parallel(kiln_schedule_stage(s, out), kiln_tensor_axis(out, 0));
    kiln_tensor *args[3] = {d.a, d.b, out};
    char *src = kiln_build_source(s, 3, args, "fdiv_k", NULL);
    CHECK(src != NULL);
    if (src) {
        CHECK(strstr(src, "kiln__st") == NULL);
        CHECK(strstr(src, "kiln_divisor") == NULL);
        CHECK(strstr(src, "kiln_check_index") == NULL);
        CHECK(strstr(src, "KILN_KERNEL_EDIVZERO)") == NULL);
    }
    free(src);
    kiln_ctx_free(ctx);
}

static void test_no_status(void) {
    check_no_status(KILN_FLOAT32, 0, 0);
    check_no_status(KILN_FLOAT32, 0, 1);
    check_no_status(KILN_FLOAT64, 0, 0);
    check_no_status(KILN_INT32, 1, 0); /* constant divisors 3 and -1 are never 0 */
}

/* ---- graphs and ONNX ---------------------------------------------------------------------- */

/* take of a constant table by constant indices, one out of range: FoldConstant
 * fails naming the node (it used to read a clamped row). */
static void test_fold_constant(void) {
    kiln_graph *g = kiln_graph_new();
    kiln_ndarray *tab = arr(KILN_FLOAT32, 2, ROWS, 3), *ix = arr(KILN_INT64, 1, 2, 0);
    fill_x(tab);
    int64_t *iv = kiln_ndarray_data(ix);
    iv[0] = 1;
    iv[1] = 7;
    int64_t xd[2] = {2, 3};
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL);
    int c[2] = {kiln_graph_const(g, "table", tab), kiln_graph_const(g, "idx", ix)};
    int t = kiln_graph_call(g, "take", 2, c, "axis=0", "bad_take");
    int a[2] = {t, x};
    int y = kiln_graph_call(g, "add", 2, a, NULL, "add");
    CHECK_EQ_INT(kiln_graph_set_outputs(g, 1, &y, NULL), KILN_OK);
    CHECK(kiln_graph_compile(g, test_tmp_path("checks_fold.tar"), NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "FoldConstant");
    CHECK_CONTAINS(kiln_last_error(), "bad_take");
    CHECK_CONTAINS(kiln_last_error(), "index 7 is out of range for a dim of 5");
    kiln_graph_free(g);
    kiln_ndarray_free(tab);
    kiln_ndarray_free(ix);
}

static const char *data_path(const char *name) {
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", getenv("KILN_TEST_DATA"), name);
    return p;
}

static void test_onnx_constant_indices(void) {
    /* folded at import: the importer names the node */
    kiln_graph *g = kiln_onnx_import(data_path("gather_oob.onnx"), NULL);
    CHECK(g == NULL);
    CHECK_CONTAINS(kiln_last_error(), "bad_gather");
    CHECK_CONTAINS(kiln_last_error(), "out of range");
    kiln_graph_free(g);
    /* not folded at import (a cap of 1 element): FoldConstant names it */
    onnx_model *m = onnx_model_load(data_path("gather_oob.onnx"));
    CHECK(m != NULL);
    g = m ? onnx_import_model(m, data_path("gather_oob.onnx"), NULL, 1) : NULL;
    CHECK(g != NULL);
    if (g) {
        CHECK(kiln_graph_compile(g, test_tmp_path("checks_onnx_fold.tar"), NULL) != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), "FoldConstant");
        CHECK_CONTAINS(kiln_last_error(), "bad_gather");
        CHECK_CONTAINS(kiln_last_error(), "index 7 is out of range for a dim of 5");
    }
    kiln_graph_free(g);
    onnx_model_free(m);
}

static void test_onnx_runtime_indices(void) {
    kiln_graph *g = kiln_onnx_import(data_path("gather_indices.onnx"), NULL);
    CHECK(g != NULL);
    const char *pkg = test_tmp_path("checks_gather.tar");
    CHECK(g && kiln_graph_compile(g, pkg, NULL) == KILN_OK);
    kiln_graph_free(g);
    kiln_executor *ex = kiln_executor_load(pkg);
    CHECK(ex != NULL);
    kiln_ndarray *data = arr(KILN_FLOAT32, 2, ROWS, 3), *ix = arr(KILN_INT64, 1, 4, 0);
    fill_x(data);
    int64_t *iv = kiln_ndarray_data(ix);
    const int64_t good[4] = {4, -1, 0, -5}, bad[2][4] = {{0, 5, 1, 2}, {0, 1, -6, 2}};
    memcpy(iv, good, sizeof good);
    if (ex) {
        CHECK_EQ_INT(kiln_executor_set_input(ex, "data", data), KILN_OK);
        CHECK_EQ_INT(kiln_executor_set_input(ex, "idx", ix), KILN_OK);
        CHECK_EQ_INT(kiln_executor_run(ex), KILN_OK);
        check_take(kiln_executor_output(ex, 0), good, 4, 3, 1, 0);
        for (int k = 0; k < 2; k++) {
            memcpy(iv, bad[k], sizeof bad[k]);
            CHECK_EQ_INT(kiln_executor_set_input(ex, "idx", ix), KILN_OK);
            CHECK(kiln_executor_run(ex) != KILN_OK); /* never a clamped row */
        }
    }
    kiln_executor_free(ex);
    kiln_ndarray_free(data);
    kiln_ndarray_free(ix);
}

TEST_MAIN({"interp", test_interp}, {"builder_errors", test_builder_errors},
          {"compiled_take", test_compiled_take}, {"proved_in_range", test_proved_in_range},
          {"int_division", test_int_division}, {"no_status", test_no_status},
          {"fold_constant", test_fold_constant},
          {"onnx_constant_indices", test_onnx_constant_indices},
          {"onnx_runtime_indices", test_onnx_runtime_indices})
