/* test_te_scan.c: recurrent computes (scans, kiln/te.h): a compute whose
 * element reads its own earlier elements along a declared scan axis. A
 * prefix sum along the last axis and along the first (its other axis
 * vectorized and run in parallel), a first-order IIR filter, and a scan
 * whose reduction reads every earlier element (a reduce domain [0, t)),
 * each compiled and run against a C reference and the interpreter. Then
 * the errors: self-reads that break the rule, a scan read before it is
 * defined, and every schedule primitive that would break the order. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kiln/schedule.h"
#include "te/interp.h"
#include "te_util.h"

enum { ROWS = 3, LEN = 37 };

/* ---- the scans ------------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *y;
    int axis;     /* the scan axis */
    int mode;     /* 0 prefix sum, 1 IIR, 2 reduction over [0, t), then the malformed ones */
    kiln_expr q;  /* mode 2: the reduce axis */
    double a, b0; /* IIR: y[t] = b0 x[t] + a y[t-1] */
} scan_t;

/* y at idx with the scan axis moved by -1 (and, for the malformed bodies,
 * other offsets) */
static kiln_expr y_at(scan_t *s, const kiln_expr *i, int nd, kiln_expr scan_ix, kiln_expr other) {
    kiln_expr ix[2] = {i[0], nd > 1 ? i[1] : NULL};
    ix[s->axis] = scan_ix;
    if (other)
        ix[1 - s->axis] = other;
    return kiln_tensor_at(s->y, nd, ix);
}

static kiln_expr scan_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    scan_t *s = u;
    int nd = kiln_tensor_ndim(s->y);
    kiln_expr t = i[s->axis], one = kiln_int(ctx, 1);
    kiln_expr x = kiln_tensor_at(s->x, nd, i);
    kiln_expr prev = y_at(s, i, nd, kiln_sub(t, one), NULL);
    kiln_expr zero = kiln_float(ctx, 0), first = kiln_gt(t, kiln_int(ctx, 0));
    switch (s->mode) {
    case 0: return kiln_add(x, kiln_select(first, prev, zero));
    case 1:
        return kiln_add(kiln_mul(kiln_float(ctx, s->b0), x),
                        kiln_select(first, kiln_mul(kiln_float(ctx, s->a), prev), zero));
    case 2: { /* y[t] = sum over q < t of (y[q] + x[q]) */
        s->q = kiln_reduce_axis(ctx, kiln_int(ctx, 0), t, "q");
        kiln_expr xq[2] = {i[0], nd > 1 ? i[1] : NULL};
        xq[s->axis] = s->q;
        return kiln_sum(kiln_add(y_at(s, i, nd, s->q, NULL), kiln_tensor_at(s->x, nd, xq)), 1,
                        &s->q);
    }
    case 3: return kiln_add(x, y_at(s, i, nd, t, NULL)); /* its own element */
    case 4:                                              /* a later one */
        return kiln_add(x, kiln_select(first, y_at(s, i, nd, kiln_add(t, one), NULL), zero));
    case 5: /* an earlier one, but of another row */
        return kiln_add(
            x, kiln_select(first, y_at(s, i, nd, kiln_sub(t, one), kiln_int(ctx, 0)), zero));
    case 6: { /* a reduction over [0, t], one step too far */
        s->q = kiln_reduce_axis(ctx, kiln_int(ctx, 0), kiln_add(t, one), "q");
        return kiln_sum(y_at(s, i, nd, s->q, NULL), 1, &s->q);
    }
    case 7: /* an index read from data: not provably earlier */
        return kiln_add(x, y_at(s, i, nd, kiln_cast(KILN_INT64, x), NULL));
    case 8: return kiln_cast(KILN_INT32, x); /* the wrong dtype */
    default: {                               /* 9: a reduce domain that reads the scan */
        s->q = kiln_reduce_axis(ctx, kiln_int(ctx, 0), kiln_cast(KILN_INT64, prev), "q");
        kiln_expr xq[2] = {i[0], i[1]};
        xq[s->axis] = s->q;
        return kiln_sum(kiln_tensor_at(s->x, nd, xq), 1, &s->q);
    }
    }
}

/* x [ROWS, LEN] (axis 1) or [LEN, ROWS] (axis 0), float32 (int64 for mode 2),
 * and the scan y over it. NULL if define fails. */
static kiln_tensor *make_scan(kiln_ctx *ctx, scan_t *s, int axis, int mode) {
    kiln_dtype dt = mode == 2 ? KILN_INT64 : KILN_FLOAT32;
    kiln_expr sh[2] = {kiln_int(ctx, axis ? ROWS : LEN), kiln_int(ctx, axis ? LEN : ROWS)};
    memset(s, 0, sizeof *s);
    s->axis = axis;
    s->mode = mode;
    s->a = 0.75;
    s->b0 = 0.5;
    s->x = kiln_placeholder(ctx, 2, sh, dt, "x");
    s->y = kiln_scan_declare(ctx, 2, sh, dt, axis, "y");
    return kiln_scan_define(s->y, scan_body, s) == KILN_OK ? s->y : NULL;
}

/* The C reference along the scan axis, per other index. */
static void reference(const scan_t *s, const kiln_ndarray *x, double *out) {
    for (int r = 0; r < ROWS; r++) {
        double acc = 0, sum = 0; /* mode 2: sum of y[q] + x[q] so far */
        for (int t = 0; t < LEN; t++) {
            int64_t at = s->axis ? (int64_t)r * LEN + t : (int64_t)t * ROWS + r;
            double xv = tu_get(x, at);
            if (s->mode == 0)
                acc = (float)((float)xv + (float)acc);
            else if (s->mode == 1)
                acc = (float)((float)(s->b0 * xv) + (t ? (float)(s->a * acc) : 0.0f));
            else
                acc = sum;
            if (s->mode == 2)
                sum += acc + xv;
            out[at] = acc;
        }
    }
}

/* How many elements of got differ from scale times the reference of s on
 * x (relative tolerance tol). */
static int count_bad(const scan_t *s, const kiln_ndarray *x, const kiln_ndarray *got, double scale,
                     double tol) {
    double want[ROWS * LEN];
    reference(s, x, want);
    int bad = 0;
    for (int64_t k = 0; k < ROWS * LEN; k++)
        bad += !got || !(fabs(tu_get(got, k) - scale * want[k]) <= tol * (1 + fabs(want[k])));
    return bad;
}

/* Compile s's scan under `sched` (0: as created, 1: the other axis in
 * parallel, 2: the other axis split and vectorized, 3: the reduce axis
 * split), run it, and compare with the reference and the interpreter. */
static void check_scan(int axis, int mode, int sched) {
    kiln_ctx *ctx = kiln_ctx_new();
    scan_t s;
    kiln_tensor *y = make_scan(ctx, &s, axis, mode);
    CHECK(y != NULL);
    if (!y) {
        fprintf(stderr, "scan: %s\n", kiln_last_error());
        kiln_ctx_free(ctx);
        return;
    }
    CHECK_EQ_INT(kiln_tensor_scan_axis(y), axis);
    CHECK_EQ_INT(kiln_tensor_scan_axis(s.x), -1);
    kiln_tensor *ins[1];
    CHECK_EQ_INT(kiln_tensor_inputs(y, ins, 1), 1); /* x, not itself */
    kiln_schedule *sch = kiln_schedule_create(ctx, 1, &y);
    kiln_stage *st = kiln_schedule_stage(sch, y);
    kiln_expr other = kiln_tensor_axis(y, 1 - axis), o, in;
    if (sched == 1)
        CHECK_EQ_INT(kiln_parallel(st, other), KILN_OK);
    if (sched == 2) {
        CHECK_EQ_INT(kiln_split(st, other, 2, &o, &in), KILN_OK);
        CHECK_EQ_INT(kiln_vectorize(st, in), KILN_OK);
    }
    if (sched == 3) {
        CHECK_EQ_INT(kiln_split(st, s.q, 4, &o, &in), KILN_OK);
        CHECK_EQ_INT(kiln_unroll(st, kiln_tensor_axis(y, axis)), KILN_OK); /* keeps the order */
    }
    kiln_ndarray *arr[2] = {tu_array_for(s.x, NULL, NULL), tu_array_for(y, NULL, NULL)};
    uint64_t seed = 11 + (uint64_t)mode;
    tu_fill(arr[0], &seed);
    kiln_tensor *args[2] = {s.x, y};
    CHECK_EQ_INT(tu_build_run(sch, 2, args, "scan", arr, NULL), 0);
    kiln_ndarray *ref = NULL;
    CHECK_EQ_INT(te_eval(1, &y, 1, &s.x, (const kiln_ndarray *const *)arr, NULL, &ref), KILN_OK);
    int bad = count_bad(&s, arr[0], arr[1], 1, 1e-5) + count_bad(&s, arr[0], ref, 1, 1e-5);
    if (bad)
        fprintf(stderr, "scan axis %d mode %d schedule %d: %d elements differ\n", axis, mode, sched,
                bad);
    CHECK_EQ_INT(bad, 0);
    kiln_ndarray_free(ref);
    kiln_ndarray_free(arr[0]);
    kiln_ndarray_free(arr[1]);
    kiln_ctx_free(ctx);
}

static void test_prefix_sum(void) {
    for (int sched = 0; sched < 3; sched++) {
        check_scan(1, 0, sched);
        check_scan(0, 0, sched);
    }
}

static void test_iir(void) {
    check_scan(1, 1, 0);
    check_scan(0, 1, 2);
}

static void test_reduction_over_earlier(void) {
    check_scan(1, 2, 0);
    check_scan(0, 2, 1);
    check_scan(1, 2, 3);
}

/* A consumer of the scan, the scan inside a kernel of several stages:
 * z = y * 2 from a prefix sum, y materialized and z inlined into nothing. */
static kiln_tensor *g_y;
static kiln_expr twice_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    (void)u;
    return kiln_mul(kiln_tensor_at(g_y, 2, i), kiln_float(ctx, 2));
}

static void test_consumer(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    scan_t s;
    g_y = make_scan(ctx, &s, 1, 0);
    kiln_expr sh[2] = {kiln_int(ctx, ROWS), kiln_int(ctx, LEN)};
    kiln_tensor *z = kiln_compute(ctx, 2, sh, twice_body, NULL, "z");
    kiln_schedule *sch = kiln_schedule_create(ctx, 1, &z);
    CHECK(sch != NULL);
    kiln_stage *sy = kiln_schedule_stage(sch, g_y), *sz = kiln_schedule_stage(sch, z);
    CHECK(kiln_compute_inline(sy) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "is a scan");
    CHECK(kiln_compute_at(sy, sz, kiln_tensor_axis(z, 0)) != KILN_OK);
    kiln_ndarray *arr[2] = {tu_array_for(s.x, NULL, NULL), tu_array_for(z, NULL, NULL)};
    uint64_t seed = 5;
    tu_fill(arr[0], &seed);
    kiln_tensor *args[2] = {s.x, z};
    CHECK_EQ_INT(tu_build_run(sch, 2, args, "twice", arr, NULL), 0);
    CHECK_EQ_INT(count_bad(&s, arr[0], arr[1], 2, 1e-5), 0);
    kiln_ndarray_free(arr[0]);
    kiln_ndarray_free(arr[1]);
    kiln_ctx_free(ctx);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_bad_bodies(void) {
    static const char *const why[] = {
        "not provably before", "not provably before", "another index",        "not provably before",
        "not provably before", "declared float32",    "reads the scan itself"};
    for (int mode = 3; mode <= 9; mode++) {
        kiln_ctx *ctx = kiln_ctx_new();
        scan_t s;
        CHECK(make_scan(ctx, &s, 1, mode) == NULL);
        CHECK_CONTAINS(kiln_last_error(), why[mode - 3]);
        /* still declared: a schedule of it is refused, not a crash */
        CHECK(kiln_schedule_create(ctx, 1, &s.y) == NULL);
        CHECK_CONTAINS(kiln_last_error(), "not defined");
        kiln_ctx_free(ctx);
    }
}

static kiln_expr read_y_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    (void)ctx;
    return kiln_tensor_at(u, 2, i);
}

static void test_declare_errors(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr sh[2] = {kiln_int(ctx, ROWS), kiln_int(ctx, LEN)};
    CHECK(kiln_scan_declare(ctx, 2, sh, KILN_FLOAT32, 2, "y") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "scan axis 2");
    CHECK(kiln_scan_declare(ctx, 2, sh, KILN_FLOAT32, -1, "y") == NULL);
    kiln_tensor *y = kiln_scan_declare(ctx, 2, sh, KILN_FLOAT32, 1, "y");
    CHECK(y != NULL);
    /* another compute may not read it before it is defined (no cycle) */
    CHECK(kiln_compute(ctx, 2, sh, read_y_body, y, "z") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "not defined yet");
    CHECK(kiln_scan_define(NULL, scan_body, NULL) != KILN_OK);
    kiln_tensor *x = kiln_placeholder(ctx, 2, sh, KILN_FLOAT32, "x");
    CHECK(kiln_scan_define(x, scan_body, NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "not a scan");
    CHECK(kiln_scan_define(y, NULL, NULL) != KILN_OK);
    scan_t s = {x, y, 1, 0, NULL, 0, 0};
    CHECK_EQ_INT(kiln_scan_define(y, scan_body, &s), KILN_OK);
    CHECK(kiln_scan_define(y, scan_body, &s) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "defined already");
    CHECK(kiln_compute(ctx, 2, sh, read_y_body, y, "z") != NULL); /* now it may */
    kiln_ctx_free(ctx);
}

static void test_refused_primitives(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    scan_t s;
    kiln_tensor *y = make_scan(ctx, &s, 1, 2); /* axes i, j (scan), reduce q */
    kiln_schedule *sch = kiln_schedule_create(ctx, 1, &y);
    kiln_stage *st = kiln_schedule_stage(sch, y);
    kiln_expr i = kiln_tensor_axis(y, 0), t = kiln_tensor_axis(y, 1), a, b;
    CHECK(kiln_split(st, t, 4, &a, &b) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "is the scan axis");
    CHECK(kiln_split_nparts(st, t, 2, &a, &b) != KILN_OK);
    CHECK(kiln_fuse(st, i, t, &a) != KILN_OK);
    CHECK(kiln_parallel(st, t) != KILN_OK);
    CHECK(kiln_vectorize(st, t) != KILN_OK);
    CHECK(kiln_bind(st, t, "blockIdx.x") != KILN_OK);
    kiln_expr order[2] = {t, i};
    CHECK(kiln_reorder(st, 2, order) != KILN_OK);
    kiln_expr order2[2] = {s.q, i}; /* the reduce axis outside the scan axis */
    CHECK(kiln_reorder(st, 2, order2) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "outside the scan axis");
    CHECK(kiln_compute_inline(st) != KILN_OK);
    CHECK(kiln_cache_write(sch, y, "local") == NULL);
    CHECK(kiln_cache_read(sch, y, "local", 1, &y) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "for itself");
    /* what keeps the order is accepted, and the result is still right */
    CHECK_EQ_INT(kiln_parallel(st, i), KILN_OK);
    CHECK_EQ_INT(kiln_unroll(st, t), KILN_OK);
    kiln_ndarray *arr[2] = {tu_array_for(s.x, NULL, NULL), tu_array_for(y, NULL, NULL)};
    uint64_t seed = 3;
    tu_fill(arr[0], &seed);
    kiln_tensor *args[2] = {s.x, y};
    CHECK_EQ_INT(tu_build_run(sch, 2, args, "scan", arr, NULL), 0);
    CHECK_EQ_INT(count_bad(&s, arr[0], arr[1], 1, 0), 0);
    kiln_ndarray_free(arr[0]);
    kiln_ndarray_free(arr[1]);
    kiln_ctx_free(ctx);
}

TEST_MAIN({"prefix_sum", test_prefix_sum}, {"iir", test_iir},
          {"reduction_over_earlier", test_reduction_over_earlier}, {"consumer", test_consumer},
          {"bad_bodies", test_bad_bodies}, {"declare_errors", test_declare_errors},
          {"refused_primitives", test_refused_primitives})
