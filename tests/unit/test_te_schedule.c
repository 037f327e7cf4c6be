/* test_te_schedule.c: each schedule primitive, its lowered loop IR and its
 * errors; every scheduled build is compared with the naive schedule. */
#include "check.h"
#include "te_util.h"

/* ---- workloads ------------------------------------------------------------ */

typedef struct {
    kiln_tensor *a, *b;
} pair;

static kiln_expr add_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pair *p = u;
    return kiln_add(kiln_tensor_at(p->a, 1, i), kiln_tensor_at(p->b, 1, i));
}

typedef struct {
    kiln_ctx *ctx;
    kiln_expr n;
    kiln_tensor *A, *B, *C;
} vadd;

static vadd make_vadd(void) {
    vadd v;
    v.ctx = kiln_ctx_new();
    v.n = kiln_var(v.ctx, "n");
    v.A = kiln_placeholder(v.ctx, 1, &v.n, KILN_FLOAT32, "A");
    v.B = kiln_placeholder(v.ctx, 1, &v.n, KILN_FLOAT32, "B");
    pair p = {v.A, v.B};
    v.C = kiln_compute(v.ctx, 1, &v.n, add_body, &p, "C");
    return v;
}

typedef struct {
    kiln_ctx *ctx;
    kiln_tensor *A, *B, *C;
} mm;

static mm make_mm(int64_t M, int64_t N, int64_t K) {
    mm m;
    m.ctx = kiln_ctx_new();
    m.C = tu_matmul(m.ctx, M, N, K, &m.A, &m.B);
    return m;
}

/* Build s over (A, B, C) and the naive schedule, run both, compare. */
static double mm_compare(mm *m, kiln_schedule *s) {
    kiln_tensor *args[3] = {m->A, m->B, m->C};
    kiln_ndarray *x[3], *y[3];
    uint64_t seed = 42;
    for (int i = 0; i < 3; i++) {
        x[i] = tu_array_for(args[i], NULL, NULL);
        y[i] = tu_array_for(args[i], NULL, NULL);
        tu_fill(x[i], &seed);
        kiln_ndarray_copy(y[i], x[i]);
    }
    kiln_schedule *naive = kiln_schedule_create(m->ctx, 1, &m->C);
    double err = 1e30;
    if (!tu_build_run(s, 3, args, "mm", x, NULL) && !tu_build_run(naive, 3, args, "mm", y, NULL))
        err = tu_max_rel_err(x[2], y[2]);
    for (int i = 0; i < 3; i++) {
        kiln_ndarray_free(x[i]);
        kiln_ndarray_free(y[i]);
    }
    return err;
}

/* ---- golden IR: the seed's vector add split by 64 -------------------------- */

static void test_golden_vadd_split(void) {
    vadd v = make_vadd();
    kiln_schedule *s = kiln_schedule_create(v.ctx, 1, &v.C);
    kiln_stage *st = kiln_schedule_stage(s, v.C);
    kiln_expr xo, xi;
    CHECK_EQ_INT(kiln_split(st, kiln_tensor_axis(v.C, 0), 64, &xo, &xi), KILN_OK);
    kiln_tensor *args[3] = {v.A, v.B, v.C};
    char *ir = kiln_lower_to_string(s, 3, args, "myadd");
    CHECK_EQ_STR(
        ir, "primfn myadd(A: float32[n], B: float32[n], C: float32[n]) {\n"
            "  for (i.outer, 0, floordiv(n + 63, 64)) {\n"
            "    for (i.inner, 0, 64) {\n"
            "      if (i.outer*64 + i.inner < n) {\n"
            "        C[i.outer*64 + i.inner] = A[i.outer*64 + i.inner] + B[i.outer*64 + i.inner]\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
    free(ir);
    kiln_ctx_free(v.ctx);
}

static void test_golden_vadd_default(void) {
    vadd v = make_vadd();
    kiln_schedule *s = kiln_schedule_create(v.ctx, 1, &v.C);
    kiln_tensor *args[3] = {v.A, v.B, v.C};
    char *ir = kiln_lower_to_string(s, 3, args, "myadd");
    CHECK_EQ_STR(ir, "primfn myadd(A: float32[n], B: float32[n], C: float32[n]) {\n"
                     "  for (i, 0, n) {\n"
                     "    C[i] = A[i] + B[i]\n"
                     "  }\n"
                     "}\n");
    free(ir);
    kiln_ctx_free(v.ctx);
}

/* The split vector add runs correctly for sizes around the factor. */
static void test_vadd_split_runs(void) {
    vadd v = make_vadd();
    kiln_schedule *s = kiln_schedule_create(v.ctx, 1, &v.C);
    kiln_stage *st = kiln_schedule_stage(s, v.C);
    kiln_expr xo, xi;
    kiln_split(st, kiln_tensor_axis(v.C, 0), 64, &xo, &xi);
    kiln_vectorize(st, xi);
    kiln_parallel(st, xo);
    kiln_tensor *args[3] = {v.A, v.B, v.C};
    kiln_module *m = kiln_build(s, 3, args, "myadd", NULL);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        kiln_ctx_free(v.ctx);
        return;
    }
    kiln_function *f = kiln_module_get_function(m, "myadd");
    int64_t sizes[] = {1, 63, 64, 65, 1000, 4099};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        kiln_ndarray *a[3];
        uint64_t seed = 7;
        for (int i = 0; i < 3; i++) {
            a[i] = kiln_ndarray_empty(KILN_FLOAT32, 1, &sizes[t]);
            tu_fill(a[i], &seed);
        }
        CHECK_EQ_INT(kiln_function_call(f, 3, a), KILN_OK);
        int bad = 0;
        for (int64_t i = 0; i < sizes[t]; i++)
            bad += tu_get(a[2], i) != (double)((float)tu_get(a[0], i) + (float)tu_get(a[1], i));
        CHECK_EQ_INT(bad, 0);
        for (int i = 0; i < 3; i++)
            kiln_ndarray_free(a[i]);
    }
    kiln_module_free(m);
    kiln_ctx_free(v.ctx);
}

/* A vectorized split that does not divide: the tail runs the vector body
 * with its loads and stores masked to the lanes in range. Here the lanes
 * are the rows of C [n, 4], so the store scatters (stride 4) and the read
 * of A[3 i] gathers: both masked, at sizes below, at and around 16. */
typedef struct {
    kiln_tensor *A;
} strided_args;

static kiln_expr strided_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    strided_args *a = u;
    kiln_expr at = kiln_mul(i[0], kiln_const(ctx, KILN_INT64, 3));
    return kiln_add(kiln_tensor_at(a->A, 1, &at), kiln_cast(KILN_FLOAT32, i[1]));
}

static void test_masked_tail_strided(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n"), na = kiln_var(ctx, "na"); /* na = 3 n */
    kiln_tensor *A = kiln_placeholder(ctx, 1, &na, KILN_FLOAT32, "A");
    strided_args sa = {A};
    kiln_expr cs[2] = {n, kiln_const(ctx, KILN_INT64, 4)};
    kiln_tensor *C = kiln_compute(ctx, 2, cs, strided_body, &sa, "C");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_stage *st = kiln_schedule_stage(s, C);
    kiln_expr io, ii;
    CHECK_EQ_INT(kiln_split(st, kiln_tensor_axis(C, 0), 16, &io, &ii), KILN_OK);
    kiln_expr order[3] = {io, kiln_tensor_axis(C, 1), ii};
    CHECK_EQ_INT(kiln_reorder(st, 3, order), KILN_OK);
    CHECK_EQ_INT(kiln_vectorize(st, ii), KILN_OK);
    kiln_tensor *args[2] = {A, C};
    char *ir = kiln_lower_to_string(s, 2, args, "strided");
    CHECK(ir && strstr(ir, " where ")); /* the tail is masked, not serial */
    free(ir);
    kiln_module *m = kiln_build(s, 2, args, "strided", NULL);
    CHECK(m != NULL);
    if (!m)
        fprintf(stderr, "%s\n", kiln_last_error());
    kiln_function *f = m ? kiln_module_get_function(m, "strided") : NULL;
    static const int64_t sizes[] = {5, 16, 37};
    for (int t = 0; f && t < 3; t++) {
        int64_t len = 3 * sizes[t], nc[2] = {sizes[t], 4};
        kiln_ndarray *a[2] = {kiln_ndarray_empty(KILN_FLOAT32, 1, &len),
                              kiln_ndarray_empty(KILN_FLOAT32, 2, nc)};
        uint64_t seed = 11;
        tu_fill(a[0], &seed);
        float *c = kiln_ndarray_data(a[1]);
        for (int64_t i = 0; i < 4 * sizes[t]; i++)
            c[i] = -1.0f;
        CHECK_EQ_INT(kiln_function_call(f, 2, a), KILN_OK);
        const float *av = kiln_ndarray_data(a[0]);
        int bad = 0;
        for (int64_t i = 0; i < sizes[t]; i++)
            for (int j = 0; j < 4; j++)
                bad += c[i * 4 + j] != av[3 * i] + (float)j;
        CHECK_EQ_INT(bad, 0);
        kiln_ndarray_free(a[0]);
        kiln_ndarray_free(a[1]);
    }
    kiln_module_free(m);
    kiln_ctx_free(ctx);
}

/* compute_at checks the readers that reach a stage through inlined stages:
 * in a softmax (rowmax, exp, rowsum, out) with exp inlined, out reads
 * rowmax, so rowmax cannot be computed at rowsum (lowering would refuse the
 * schedule; the schedule fuzzer found that compute_at accepted it). */
typedef struct {
    kiln_tensor *a, *mx, *e, *sm;
    kiln_expr k1, k2;
} sm_t;

static kiln_expr smt_max(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_t *t = u;
    kiln_expr ix[2] = {i[0], t->k1};
    return kiln_max_reduce(kiln_tensor_at(t->a, 2, ix), 1, &t->k1);
}
static kiln_expr smt_exp(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_t *t = u;
    return kiln_exp(kiln_sub(kiln_tensor_at(t->a, 2, i), kiln_tensor_at(t->mx, 1, i)));
}
static kiln_expr smt_sum(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_t *t = u;
    kiln_expr ix[2] = {i[0], t->k2};
    return kiln_sum(kiln_tensor_at(t->e, 2, ix), 1, &t->k2);
}
static kiln_expr smt_out(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    sm_t *t = u;
    return kiln_div(kiln_tensor_at(t->e, 2, i), kiln_tensor_at(t->sm, 1, i));
}

static void test_compute_at_reader_through_inline(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr sh[2] = {kiln_const(ctx, KILN_INT64, 4), kiln_const(ctx, KILN_INT64, 8)};
    sm_t t;
    t.a = kiln_placeholder(ctx, 2, sh, KILN_FLOAT32, "A");
    t.k1 = kiln_reduce_axis(ctx, kiln_const(ctx, KILN_INT64, 0), sh[1], "k1");
    t.k2 = kiln_reduce_axis(ctx, kiln_const(ctx, KILN_INT64, 0), sh[1], "k2");
    t.mx = kiln_compute(ctx, 1, sh, smt_max, &t, "rowmax");
    t.e = kiln_compute(ctx, 2, sh, smt_exp, &t, "exp");
    t.sm = kiln_compute(ctx, 1, sh, smt_sum, &t, "rowsum");
    kiln_tensor *out = kiln_compute(ctx, 2, sh, smt_out, &t, "out");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &out);
    CHECK_EQ_INT(kiln_compute_inline(kiln_schedule_stage(s, t.e)), KILN_OK);
    kiln_status st = kiln_compute_at(kiln_schedule_stage(s, t.mx), kiln_schedule_stage(s, t.sm),
                                     kiln_tensor_axis(t.sm, 0));
    CHECK_EQ_INT(st, KILN_ERR_INVALID);
    CHECK(strstr(kiln_last_error(), "also read by 'out'") != NULL);
    /* the schedule as it stands still lowers */
    kiln_tensor *args[2] = {t.a, out};
    char *ir = kiln_lower_to_string(s, 2, args, "softmax");
    CHECK(ir != NULL);
    free(ir);
    kiln_ctx_free(ctx);
}

/* ---- primitives on matmul --------------------------------------------------- */

static void test_split_tile_reorder(void) {
    mm m = make_mm(37, 45, 29);
    kiln_schedule *s = kiln_schedule_create(m.ctx, 1, &m.C);
    kiln_stage *st = kiln_schedule_stage(s, m.C);
    kiln_expr yo, xo, yi, xi, ko, ki;
    CHECK_EQ_INT(kiln_tile(st, kiln_tensor_axis(m.C, 0), kiln_tensor_axis(m.C, 1), 8, 16, &yo, &xo,
                           &yi, &xi),
                 KILN_OK);
    CHECK_EQ_INT(kiln_split(st, kiln_tensor_reduce_axis(m.C, 0), 4, &ko, &ki), KILN_OK);
    kiln_expr order[6] = {yo, xo, ko, yi, ki, xi};
    CHECK_EQ_INT(kiln_reorder(st, 6, order), KILN_OK);
    kiln_expr leaves[8];
    CHECK_EQ_INT(kiln_stage_leaf_axes(st, leaves, 8), 6);
    CHECK(leaves[0] == yo && leaves[1] == xo && leaves[2] == ko && leaves[3] == yi &&
          leaves[4] == ki && leaves[5] == xi);
    kiln_vectorize(st, xi);
    kiln_unroll(st, ki);
    CHECK(mm_compare(&m, s) < 1e-5);
    kiln_ctx_free(m.ctx);
}

static void test_split_nparts_fuse_parallel(void) {
    mm m = make_mm(30, 20, 10);
    kiln_schedule *s = kiln_schedule_create(m.ctx, 1, &m.C);
    kiln_stage *st = kiln_schedule_stage(s, m.C);
    kiln_expr f, o, i;
    CHECK_EQ_INT(kiln_fuse(st, kiln_tensor_axis(m.C, 0), kiln_tensor_axis(m.C, 1), &f), KILN_OK);
    CHECK_EQ_INT(kiln_split_nparts(st, f, 7, &o, &i), KILN_OK);
    CHECK_EQ_INT(kiln_parallel(st, o), KILN_OK);
    CHECK(mm_compare(&m, s) < 1e-5);
    kiln_ctx_free(m.ctx);
}

static void test_cache_write_compute_at(void) {
    mm m = make_mm(32, 48, 20);
    kiln_schedule *s = kiln_schedule_create(m.ctx, 1, &m.C);
    kiln_tensor *CC = kiln_cache_write(s, m.C, "local");
    CHECK(CC != NULL);
    kiln_stage *sc = kiln_schedule_stage(s, m.C), *scc = kiln_schedule_stage(s, CC);
    kiln_expr yo, xo, yi, xi;
    kiln_tile(sc, kiln_tensor_axis(m.C, 0), kiln_tensor_axis(m.C, 1), 4, 16, &yo, &xo, &yi, &xi);
    CHECK_EQ_INT(kiln_compute_at(scc, sc, xo), KILN_OK);
    kiln_expr cy = kiln_tensor_axis(CC, 0), cx = kiln_tensor_axis(CC, 1);
    kiln_expr k = kiln_tensor_reduce_axis(CC, 0);
    kiln_expr order[3] = {k, cy, cx};
    CHECK_EQ_INT(kiln_reorder(scc, 3, order), KILN_OK);
    kiln_unroll(scc, cy);
    kiln_vectorize(scc, cx);
    kiln_tensor *args[3] = {m.A, m.B, m.C};
    char *ir = kiln_lower_to_string(s, 3, args, "mm");
    CHECK_CONTAINS(ir, "allocate C.local: float32[64], local");
    CHECK_CONTAINS(ir, "ramp(");
    free(ir);
    CHECK(mm_compare(&m, s) < 1e-5);
    kiln_ctx_free(m.ctx);
}

static void test_cache_read(void) {
    mm m = make_mm(16, 24, 12);
    kiln_schedule *s = kiln_schedule_create(m.ctx, 1, &m.C);
    kiln_tensor *AL = kiln_cache_read(s, m.A, "global", 1, &m.C);
    CHECK(AL != NULL);
    kiln_stage *sc = kiln_schedule_stage(s, m.C);
    kiln_expr yo, yi;
    kiln_split(sc, kiln_tensor_axis(m.C, 0), 4, &yo, &yi);
    CHECK_EQ_INT(kiln_compute_at(kiln_schedule_stage(s, AL), sc, yo), KILN_OK);
    kiln_tensor *args[3] = {m.A, m.B, m.C};
    char *ir = kiln_lower_to_string(s, 3, args, "mm");
    /* the cached rows of A for one yo: 4 rows x 12 */
    CHECK_CONTAINS(ir, "allocate A.global: float32[48], global");
    free(ir);
    CHECK(mm_compare(&m, s) < 1e-5);
    kiln_ctx_free(m.ctx);
}

/* ---- inline and root ------------------------------------------------------- */

typedef struct {
    kiln_tensor *t;
} one;

static kiln_expr relu_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    one *o = u;
    return kiln_max(kiln_tensor_at(o->t, 1, i), kiln_float(ctx, 0));
}

static kiln_expr twice_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    one *o = u;
    return kiln_mul(kiln_tensor_at(o->t, 1, i), kiln_float(ctx, 2));
}

static void test_inline_root(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_int(ctx, 100);
    kiln_tensor *A = kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A");
    one o1 = {A};
    kiln_tensor *R = kiln_compute(ctx, 1, &n, relu_body, &o1, "R");
    one o2 = {R};
    kiln_tensor *D = kiln_compute(ctx, 1, &n, twice_body, &o2, "D");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &D);
    kiln_tensor *args[2] = {A, D};
    char *ir = kiln_lower_to_string(s, 2, args, "f");
    CHECK_CONTAINS(ir, "allocate R: float32[100], global");
    free(ir);
    CHECK_EQ_INT(kiln_compute_inline(kiln_schedule_stage(s, R)), KILN_OK);
    ir = kiln_lower_to_string(s, 2, args, "f");
    CHECK_EQ_STR(ir, "primfn f(A: float32[100], D: float32[100]) {\n"
                     "  for (i, 0, 100) {\n"
                     "    D[i] = max(A[i], 0.0f)*2.0f\n"
                     "  }\n"
                     "}\n");
    free(ir);
    CHECK_EQ_INT(kiln_compute_root(kiln_schedule_stage(s, R)), KILN_OK);
    ir = kiln_lower_to_string(s, 2, args, "f");
    CHECK_CONTAINS(ir, "allocate R");
    free(ir);
    /* run: inline result equals the root result */
    kiln_ndarray *a[2];
    int64_t sh = 100;
    uint64_t seed = 3;
    a[0] = kiln_ndarray_empty(KILN_FLOAT32, 1, &sh);
    a[1] = kiln_ndarray_empty(KILN_FLOAT32, 1, &sh);
    tu_fill(a[0], &seed);
    CHECK_EQ_INT(tu_build_run(s, 2, args, "f", a, NULL), 0);
    int bad = 0;
    for (int i = 0; i < 100; i++) {
        float x = (float)tu_get(a[0], i);
        bad += tu_get(a[1], i) != (double)((x > 0 ? x : 0) * 2);
    }
    CHECK_EQ_INT(bad, 0);
    kiln_ndarray_free(a[0]);
    kiln_ndarray_free(a[1]);
    kiln_ctx_free(ctx);
}

/* ---- compute_at with a stage shared by two consumers ------------------------------
 * B = 2A is read by C = relu(B) and by D = C + B. B may be computed inside D
 * once C is: bound inference unions both consumers' reads. It may not while
 * C is computed elsewhere, nor at a deeper spot than C. */

typedef struct {
    kiln_tensor *a, *b;
} two;

static kiln_expr sum2_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    two *t = u;
    return kiln_add(kiln_tensor_at(t->a, 1, i), kiln_tensor_at(t->b, 1, i));
}

static void test_compute_at_siblings(void) {
    for (int variant = 0; variant < 3; variant++) {
        kiln_ctx *ctx = kiln_ctx_new();
        kiln_expr n = kiln_int(ctx, 64);
        kiln_tensor *A = kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A");
        one oa = {A};
        kiln_tensor *B = kiln_compute(ctx, 1, &n, twice_body, &oa, "B");
        one ob = {B};
        kiln_tensor *C = kiln_compute(ctx, 1, &n, relu_body, &ob, "C");
        two cd = {C, B};
        kiln_tensor *D = kiln_compute(ctx, 1, &n, sum2_body, &cd, "D");
        kiln_schedule *s = kiln_schedule_create(ctx, 1, &D);
        kiln_stage *sd = kiln_schedule_stage(s, D), *sc = kiln_schedule_stage(s, C),
                   *sb = kiln_schedule_stage(s, B);
        kiln_expr o, i, oo, oi;
        CHECK_EQ_INT(kiln_split(sd, kiln_tensor_axis(D, 0), 16, &o, &i), KILN_OK);
        CHECK_EQ_INT(kiln_split(sd, i, 4, &oo, &oi), KILN_OK);
        if (variant == 0) { /* C inside D at o, then B at o too: allowed */
            CHECK_EQ_INT(kiln_compute_at(sc, sd, o), KILN_OK);
            CHECK_EQ_INT(kiln_compute_at(sb, sd, o), KILN_OK);
            kiln_tensor *args[2] = {A, D};
            char *ir = kiln_lower_to_string(s, 2, args, "f");
            CHECK_CONTAINS(ir, "allocate B: float32[16]"); /* one tile of B */
            free(ir);
            kiln_ndarray *a[2];
            int64_t sh = 64;
            uint64_t seed = 9;
            a[0] = kiln_ndarray_empty(KILN_FLOAT32, 1, &sh);
            a[1] = kiln_ndarray_empty(KILN_FLOAT32, 1, &sh);
            tu_fill(a[0], &seed);
            CHECK_EQ_INT(tu_build_run(s, 2, args, "f", a, NULL), 0);
            int bad = 0;
            for (int k = 0; k < 64; k++) {
                float b = (float)tu_get(a[0], k) * 2;
                bad += tu_get(a[1], k) != (double)((b > 0 ? b : 0) + b);
            }
            CHECK_EQ_INT(bad, 0);
            kiln_ndarray_free(a[0]);
            kiln_ndarray_free(a[1]);
            /* set_scope: an unknown scope, and an output made local, are errors */
            CHECK_EQ_INT(kiln_set_scope(sb, "shared"), KILN_ERR_INVALID);
            CHECK_CONTAINS(kiln_last_error(), "scope 'shared'");
            CHECK_EQ_INT(kiln_set_scope(sd, "local"), KILN_ERR_INVALID);
            CHECK_CONTAINS(kiln_last_error(), "is an output");
            CHECK_EQ_INT(kiln_set_scope(NULL, "local"), KILN_ERR_INVALID);
        } else if (variant == 1) { /* C computed at the root: B cannot go inside D */
            CHECK_EQ_INT(kiln_compute_at(sb, sd, o), KILN_ERR_INVALID);
            CHECK_CONTAINS(kiln_last_error(), "also read by 'C'");
        } else { /* C at o, B deeper (at oo): C would read B before it exists */
            CHECK_EQ_INT(kiln_compute_at(sc, sd, o), KILN_OK);
            CHECK_EQ_INT(kiln_compute_at(sb, sd, oo), KILN_ERR_INVALID);
            CHECK_CONTAINS(kiln_last_error(), "at this axis or deeper");
        }
        kiln_ctx_free(ctx);
    }
}

/* ---- compute_at below a fused and split axis ------------------------------------------
 * C = relu(B), B = 2A over [3, 14, 14]; C's three axes fused into one and
 * split by F, B computed at the outer part. A tile of F that never
 * straddles a row of the inner dims is a box of F elements (F = 7 divides
 * 14; F = 28 is two whole rows), and B's buffer holds just that; F = 8
 * straddles rows, so no box of 8 holds a tile and B's buffer covers the
 * rows it touches. Every variant computes the same. */

static kiln_expr twice3_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    return kiln_mul(kiln_tensor_at(((one *)u)->t, 3, i), kiln_float(ctx, 2.0));
}

static kiln_expr relu3_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    return kiln_max(kiln_tensor_at(((one *)u)->t, 3, i), kiln_float(ctx, 0.0));
}

static void test_compute_at_fused(void) {
    static const struct {
        int64_t f;
        const char *alloc;
    } cases[] = {{7, "allocate B: float32[7]"},
                 {28, "allocate B: float32[28]"},
                 {8, "allocate B: float32["}};
    for (int c = 0; c < 3; c++) {
        kiln_ctx *ctx = kiln_ctx_new();
        kiln_expr dims[3] = {kiln_int(ctx, 3), kiln_int(ctx, 14), kiln_int(ctx, 14)};
        kiln_tensor *A = kiln_placeholder(ctx, 3, dims, KILN_FLOAT32, "A");
        one oa = {A};
        kiln_tensor *B = kiln_compute(ctx, 3, dims, twice3_body, &oa, "B");
        one ob = {B};
        kiln_tensor *C = kiln_compute(ctx, 3, dims, relu3_body, &ob, "C");
        kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
        kiln_stage *sc = kiln_schedule_stage(s, C), *sb = kiln_schedule_stage(s, B);
        kiln_expr f, o, i;
        CHECK_EQ_INT(kiln_fuse(sc, kiln_tensor_axis(C, 0), kiln_tensor_axis(C, 1), &f), KILN_OK);
        CHECK_EQ_INT(kiln_fuse(sc, f, kiln_tensor_axis(C, 2), &f), KILN_OK);
        CHECK_EQ_INT(kiln_split(sc, f, cases[c].f, &o, &i), KILN_OK);
        CHECK_EQ_INT(kiln_compute_at(sb, sc, o), KILN_OK);
        kiln_tensor *args[2] = {A, C};
        char *ir = kiln_lower_to_string(s, 2, args, "f");
        CHECK_CONTAINS(ir, cases[c].alloc);
        CHECK(cases[c].f != 8 || !strstr(ir, "allocate B: float32[8]"));
        free(ir);
        int64_t sh[3] = {3, 14, 14};
        uint64_t seed = 11;
        kiln_ndarray *a[2] = {kiln_ndarray_empty(KILN_FLOAT32, 3, sh),
                              kiln_ndarray_empty(KILN_FLOAT32, 3, sh)};
        tu_fill(a[0], &seed);
        CHECK_EQ_INT(tu_build_run(s, 2, args, "f", a, NULL), 0);
        int bad = 0;
        for (int k = 0; k < 3 * 14 * 14; k++) {
            float b = (float)tu_get(a[0], k) * 2;
            bad += tu_get(a[1], k) != (double)(b > 0 ? b : 0);
        }
        CHECK_EQ_INT(bad, 0);
        kiln_ndarray_free(a[0]);
        kiln_ndarray_free(a[1]);
        kiln_ctx_free(ctx);
    }
}

/* ---- bind: recorded, lowered, rejected by the CPU back end ------------------ */

static void test_bind(void) {
    vadd v = make_vadd();
    kiln_schedule *s = kiln_schedule_create(v.ctx, 1, &v.C);
    kiln_stage *st = kiln_schedule_stage(s, v.C);
    kiln_expr bx, tx;
    kiln_split(st, kiln_tensor_axis(v.C, 0), 64, &bx, &tx);
    CHECK_EQ_INT(kiln_bind(st, bx, "blockIdx.x"), KILN_OK);
    CHECK_EQ_INT(kiln_bind(st, tx, "threadIdx.x"), KILN_OK);
    CHECK_EQ_INT(kiln_bind(st, tx, "warp.z"), KILN_ERR_INVALID);
    kiln_tensor *args[3] = {v.A, v.B, v.C};
    char *ir = kiln_lower_to_string(s, 3, args, "myadd");
    CHECK_CONTAINS(ir, "launch_thread (i.outer: blockIdx.x, 0, floordiv(n + 63, 64))");
    CHECK_CONTAINS(ir, "launch_thread (i.inner: threadIdx.x, 0, 64)");
    free(ir);
    kiln_module *m = kiln_build(s, 3, args, "myadd", NULL);
    CHECK(m == NULL);
    CHECK_CONTAINS(kiln_last_error(), "blockIdx.x");
    CHECK_CONTAINS(kiln_last_error(), "CPU");
    kiln_ctx_free(v.ctx);
}

/* ---- invalid schedules -------------------------------------------------------- */

static void test_errors(void) {
    mm m = make_mm(16, 16, 16);
    kiln_schedule *s = kiln_schedule_create(m.ctx, 1, &m.C);
    kiln_stage *st = kiln_schedule_stage(s, m.C);
    kiln_expr i = kiln_tensor_axis(m.C, 0), j = kiln_tensor_axis(m.C, 1);
    kiln_expr k = kiln_tensor_reduce_axis(m.C, 0);
    kiln_expr o, in;
    CHECK_EQ_INT(kiln_split(st, i, 4, &o, &in), KILN_OK);
    /* splitting an axis already split */
    CHECK_EQ_INT(kiln_split(st, i, 2, NULL, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "already split");
    CHECK_EQ_INT(kiln_split(st, j, 0, NULL, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "must be >= 1");
    /* fusing non-adjacent axes, and a reduce axis with a data axis */
    CHECK_EQ_INT(kiln_fuse(st, o, j, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "not adjacent");
    CHECK_EQ_INT(kiln_fuse(st, j, k, NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "reduce axis and data axis");
    /* parallel on a reduce axis */
    CHECK_EQ_INT(kiln_parallel(st, k), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "reduce axis");
    /* reordering axes of different stages */
    mm m2 = make_mm(8, 8, 8);
    kiln_schedule *s2 = kiln_schedule_create(m2.ctx, 1, &m2.C);
    (void)s2;
    kiln_expr mixed[2] = {in, kiln_tensor_axis(m2.C, 1)};
    CHECK_EQ_INT(kiln_reorder(st, 2, mixed), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "does not belong to stage 'C'");
    kiln_expr dup[2] = {in, in};
    CHECK_EQ_INT(kiln_reorder(st, 2, dup), KILN_ERR_INVALID);
    /* compute_at into a stage that is not a consumer */
    kiln_tensor *CC = kiln_cache_write(s, m.C, "local");
    CHECK(CC == NULL); /* C was already split */
    CHECK_CONTAINS(kiln_last_error(), "before other primitives");
    kiln_tensor *AL = kiln_cache_read(s, m.A, "local", 1, &m.C);
    kiln_tensor *BL = kiln_cache_read(s, m.B, "local", 1, &m.C);
    CHECK(AL && BL);
    kiln_stage *sa = kiln_schedule_stage(s, AL), *sb = kiln_schedule_stage(s, BL);
    CHECK_EQ_INT(kiln_compute_at(sa, sb, kiln_tensor_axis(BL, 0)), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "not a consumer");
    CHECK_EQ_INT(kiln_compute_at(sa, sa, kiln_tensor_axis(AL, 0)), KILN_ERR_INVALID);
    /* compute_at to an axis of another stage */
    CHECK_EQ_INT(kiln_compute_at(sa, st, kiln_tensor_axis(AL, 0)), KILN_ERR_INVALID);
    /* inlining a reduction or an output */
    CHECK_EQ_INT(kiln_compute_inline(st), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "reduction");
    /* a bad scope */
    CHECK(kiln_cache_read(s, m.A, "shared.dyn", 1, &m.C) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "scope");
    /* placeholders have no stage */
    CHECK(kiln_schedule_stage(s, m.A) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "placeholder");
    /* missing arguments */
    kiln_tensor *args[2] = {m.A, m.C};
    CHECK(kiln_lower_to_string(s, 2, args, "mm") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "placeholder 'B'");
    kiln_tensor *args2[2] = {m.A, m.B};
    CHECK(kiln_lower_to_string(s, 2, args2, "mm") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "output 'C'");
    kiln_ctx_free(m2.ctx);
    kiln_ctx_free(m.ctx);
}

/* Wrong shapes and dtypes passed to a built function. */
static void test_call_errors(void) {
    vadd v = make_vadd();
    kiln_schedule *s = kiln_schedule_create(v.ctx, 1, &v.C);
    kiln_tensor *args[3] = {v.A, v.B, v.C};
    kiln_module *m = kiln_build(s, 3, args, "myadd", NULL);
    CHECK(m != NULL);
    if (!m)
        return;
    kiln_function *f = kiln_module_get_function(m, "myadd");
    int64_t n10 = 10, n11 = 11;
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 1, &n10);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_FLOAT32, 1, &n11);
    kiln_ndarray *c = kiln_ndarray_empty(KILN_INT32, 1, &n10);
    kiln_ndarray *d = kiln_ndarray_empty(KILN_FLOAT32, 1, &n10);
    kiln_ndarray *bad_shape[3] = {a, b, d};
    CHECK(kiln_function_call(f, 3, bad_shape) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "'B'");
    kiln_ndarray *bad_dtype[3] = {a, d, c};
    CHECK(kiln_function_call(f, 3, bad_dtype) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "int32");
    CHECK(kiln_function_call(f, 2, bad_dtype) != KILN_OK);
    CHECK(kiln_module_get_function(m, "nope") == NULL);
    kiln_ndarray_free(a);
    kiln_ndarray_free(b);
    kiln_ndarray_free(c);
    kiln_ndarray_free(d);
    kiln_module_free(m);
    kiln_ctx_free(v.ctx);
}

/* A failing compiler is a kiln error naming the generated source. */
static void test_toolchain_failure(void) {
    vadd v = make_vadd();
    kiln_schedule *s = kiln_schedule_create(v.ctx, 1, &v.C);
    kiln_tensor *args[3] = {v.A, v.B, v.C};
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "cflags", "-O2 -fthis-flag-does-not-exist"), KILN_OK);
    CHECK(kiln_build(s, 3, args, "myadd", o) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "myadd.c");
    CHECK_EQ_INT(kiln_build_options_set(o, "cc", "/nonexistent/cc"), KILN_OK);
    CHECK(kiln_build(s, 3, args, "myadd", o) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent/cc");
    CHECK_EQ_INT(kiln_build_options_set(o, "colour", "blue"), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "cuda"), KILN_ERR_UNSUPPORTED);
    kiln_build_options_free(o);
    kiln_ctx_free(v.ctx);
}

/* A chain of 20,000 computes, each reading the one before: the schedule's
 * walk from the output keeps its stack on the heap (it recursed with a
 * ~2 KiB frame per tensor and overflowed the C stack near 4,000). */
static kiln_expr chain_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    return kiln_add(kiln_tensor_at(u, 1, i), kiln_float(ctx, 1.0));
}

static void test_deep_chain(void) {
    enum { N = 20000 };
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_int(ctx, 4);
    kiln_tensor *first = kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A"), *t = first, *t1 = NULL;
    for (int k = 0; k < N && t; k++) {
        t = kiln_compute(ctx, 1, &n, chain_body, t, "T");
        if (k == 0)
            t1 = t;
    }
    CHECK(t != NULL);
    kiln_schedule *s = t ? kiln_schedule_create(ctx, 1, &t) : NULL;
    CHECK(s != NULL);
    if (!s)
        fprintf(stderr, "schedule: %s\n", kiln_last_error());
    /* every tensor has its stage, the first producer's among them */
    CHECK(s && kiln_schedule_stage(s, t1) != NULL);
    CHECK(s && kiln_schedule_stage(s, t) != NULL);
    kiln_ctx_free(ctx);
}

TEST_MAIN(TEST(test_golden_vadd_default), TEST(test_golden_vadd_split), TEST(test_vadd_split_runs),
          TEST(test_masked_tail_strided), TEST(test_compute_at_reader_through_inline),
          TEST(test_split_tile_reorder), TEST(test_split_nparts_fuse_parallel),
          TEST(test_cache_write_compute_at), TEST(test_cache_read), TEST(test_inline_root),
          TEST(test_compute_at_siblings), TEST(test_compute_at_fused), TEST(test_bind),
          TEST(test_errors), TEST(test_call_errors), TEST(test_toolchain_failure),
          TEST(test_deep_chain))
