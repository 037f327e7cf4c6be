/* test_codegen_c.c: the C renderer and toolchain driver. Small loop-IR
 * functions are built by hand, rendered, compiled with the system compiler,
 * loaded and called through the runtime, and compared with values computed
 * here; plus the rendered text and the error paths. */
#include <ctype.h>
#include <dirent.h>
#include <unistd.h>

#include "check.h"
#include "codegen/codegen.h"
#include "kiln/schedule.h"
#include "runtime/runtime_internal.h"

/* ---- building functions ------------------------------------------------------ */

typedef struct {
    kiln_ctx *ctx;
    tir_param params[32];
    tir_node shapes[32][4];
    int np;
    tir_node vars[4];
    int nv;
} fb;

static fb fb_new(kiln_ctx *ctx) {
    fb b;
    memset(&b, 0, sizeof b);
    b.ctx = ctx;
    return b;
}

static tir_node I(fb *b, int64_t v) {
    return tir_i64(b->ctx, v);
}
static tir_node F(fb *b, double v) {
    return tir_floatc(b->ctx, KILN_FLOAT32, v);
}

static tir_node size_var(fb *b, const char *name) {
    tir_node v = tir_var(b->ctx, name, KILN_INT64);
    b->vars[b->nv++] = v;
    return v;
}

/* A parameter of one dimension (d1 NULL) or two. */
static tir_node param(fb *b, const char *name, kiln_dtype dt, tir_node d0, tir_node d1) {
    KILN_ASSERT(b->np < 32);
    tir_param *p = &b->params[b->np];
    p->name = name;
    p->buf = tir_handle(b->ctx, name, dt);
    p->dtype = dt;
    p->ndim = d1 ? 2 : 1;
    b->shapes[b->np][0] = d0;
    b->shapes[b->np][1] = d1;
    p->shape = b->shapes[b->np];
    b->np++;
    return p->buf;
}

static tir_func func(fb *b, const char *name, tir_node body) {
    tir_func f = {name, b->np, b->params, b->nv, b->vars, body};
    return f;
}

static tir_node ld(fb *b, tir_node buf, tir_node idx) {
    return tir_load(b->ctx, buf, idx);
}
static tir_node loop(tir_node v, tir_node mn, tir_node ext, tir_node body) {
    return tir_for(v, mn, ext, TIR_FOR_SERIAL, NULL, body);
}
static tir_node vec(fb *b, tir_node base, int lanes) {
    return tir_ramp(base, I(b, 1), lanes);
}
static tir_node call1(fb *b, tir_intrin f, tir_node x) {
    return tir_call(b->ctx, f, (kiln_dtype)x->dtype, x->lanes, 1, &x);
}

/* ---- compiling, loading, calling ---------------------------------------------- */

/* The C name of the variable `hint` in src ("hint_<k>": a function numbers
 * its variables by first use; a promoted buffer's registers add "_r<j>"),
 * into out; "" if there is none. */
static const char *c_name(const char *src, const char *hint, char *out, size_t cap) {
    size_t n = strlen(hint);
    out[0] = 0;
    for (const char *p = src ? strstr(src, hint) : NULL; p; p = strstr(p + 1, hint)) {
        int starts = p == src || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        size_t k = n + 1;
        while (p[n] == '_' && isdigit((unsigned char)p[k]))
            k++;
        if (starts && k > n + 1) {
            snprintf(out, cap, "%.*s", (int)k, p);
            break;
        }
    }
    return out;
}

static kiln_module *build(int n, const tir_func *f, char **src_out) {
    char *src = codegen_render_c(n, f);
    CHECK(src != NULL);
    if (!src) {
        fprintf(stderr, "render: %s\n", kiln_last_error());
        return NULL;
    }
    kiln_target *host = kiln_target_host();
    codegen_toolchain tc = codegen_target_toolchain(host);
    char *so = NULL, *dir = NULL;
    kiln_status st = codegen_compile(src, f[0].name, &tc, &so, &dir);
    kiln_target_free(host);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "compile: %s\n", kiln_last_error());
    if (src_out)
        *src_out = src;
    else
        free(src);
    if (st)
        return NULL;
    kiln_module *m = kiln_module_load_owned(so, dir);
    CHECK(m != NULL);
    if (!m)
        fprintf(stderr, "load: %s\n", kiln_last_error());
    free(so);
    free(dir);
    return m;
}

static int call(kiln_module *m, const char *name, int nargs, kiln_ndarray **args) {
    kiln_function *f = m ? kiln_module_get_function(m, name) : NULL;
    CHECK(f != NULL);
    if (!f)
        return -1;
    kiln_status st = kiln_function_call(f, nargs, args);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "call %s: %s\n", name, kiln_last_error());
    return st;
}

static kiln_ndarray *arr1(kiln_dtype dt, int64_t n) {
    return kiln_ndarray_empty(dt, 1, &n);
}
static kiln_ndarray *arr2(kiln_dtype dt, int64_t n0, int64_t n1) {
    int64_t s[2] = {n0, n1};
    return kiln_ndarray_empty(dt, 2, s);
}
static float *fdat(kiln_ndarray *a) {
    return kiln_ndarray_data(a);
}

static void free_all(int n, kiln_ndarray **a) {
    for (int i = 0; i < n; i++)
        kiln_ndarray_free(a[i]);
}

/* ---- tests ------------------------------------------------------------------------ */

/* C[i] = A[i] + B[i] over a symbolic n, and the rendered text. */
static void test_vadd_symbolic(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node n = size_var(&b, "n");
    tir_node A = param(&b, "A", KILN_FLOAT32, n, NULL), B = param(&b, "B", KILN_FLOAT32, n, NULL);
    tir_node C = param(&b, "C", KILN_FLOAT32, n, NULL);
    tir_node i = tir_var(b.ctx, "i", KILN_INT64);
    tir_node body = loop(i, I(&b, 0), n, tir_store(C, i, tir_add(ld(&b, A, i), ld(&b, B, i))));
    tir_func f = func(&b, "vadd", body);
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    CHECK_CONTAINS(src, "/* Generated by kiln. Do not edit. */");
    CHECK_CONTAINS(src, "int32_t vadd(void *const *args, const int64_t *vars) {");
    CHECK_CONTAINS(src, "__attribute__((visibility(\"default\")))\nint32_t vadd(");
    CHECK_CONTAINS(src, "int kiln_module_init(const kiln_module_api *api)");
    CHECK_CONTAINS(src, "float *restrict A_");
    CHECK_CONTAINS(src, " = (float *)args[0];");
    CHECK_CONTAINS(src, "const int64_t n_");
    CHECK_CONTAINS(src, " = vars[0];");
    CHECK_CONTAINS(src, "const char kiln_module_meta[] =");
    CHECK_CONTAINS(src, "\"kiln-module 1\\n\"");
    CHECK_CONTAINS(src, "\"func vadd 3 1\\n\"");
    CHECK_CONTAINS(src, "\"var n\\n\"");
    CHECK_CONTAINS(src, "\"arg A float32 1 $0\\n\"");
    CHECK_CONTAINS(src, "\"arg C float32 1 $0\\n\"");
    CHECK_CONTAINS(src, "\"end\\n\";");
    CHECK(!strstr(src, "#include \"")); /* no kiln header */
    /* deterministic */
    char *again = codegen_render_c(1, &f);
    CHECK_EQ_STR(again, src);
    free(again);
    free(src);
    kiln_ndarray *a[3] = {arr1(KILN_FLOAT32, 37), arr1(KILN_FLOAT32, 37), arr1(KILN_FLOAT32, 37)};
    for (int k = 0; k < 37; k++) {
        fdat(a[0])[k] = (float)k * 0.5f;
        fdat(a[1])[k] = 1.0f - (float)k;
    }
    if (m && !call(m, "vadd", 3, a)) {
        int bad = 0;
        for (int k = 0; k < 37; k++)
            bad += fdat(a[2])[k] != (float)k * 0.5f + 1.0f - (float)k;
        CHECK_EQ_INT(bad, 0);
    }
    free_all(3, a);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* A 16-wide vector body with a scalar tail loop, plus gathers, scatters,
 * broadcast loads and a ramp value in a second function of the module. */
static void test_vector_tail_and_gather(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node n = size_var(&b, "n");
    tir_node A = param(&b, "A", KILN_FLOAT32, n, NULL), B = param(&b, "B", KILN_FLOAT32, n, NULL);
    tir_node C = param(&b, "C", KILN_FLOAT32, n, NULL);
    tir_node io = tir_var(b.ctx, "i.outer", KILN_INT64), i = tir_var(b.ctx, "i", KILN_INT64);
    tir_node nv = tir_bin(TIR_FLOORDIV, n, I(&b, 16)), done = tir_mul(nv, I(&b, 16));
    tir_node r = vec(&b, tir_mul(io, I(&b, 16)), 16);
    tir_node vbody = tir_store(
        C, r, tir_add(tir_mul(ld(&b, A, r), ld(&b, B, r)), tir_broadcast(F(&b, 2.0), 16)));
    tir_node tail = tir_store(C, i, tir_add(tir_mul(ld(&b, A, i), ld(&b, B, i)), F(&b, 2.0)));
    tir_node body = tir_seq2(loop(io, I(&b, 0), nv, vbody), loop(i, done, tir_sub(n, done), tail));
    tir_func fs[2];
    fs[0] = func(&b, "vmuladd", body);

    fb g = fb_new(b.ctx);
    tir_node GA = param(&g, "A", KILN_FLOAT32, I(&g, 64), NULL);
    tir_node E = param(&g, "E", KILN_FLOAT32, I(&g, 32), NULL);
    tir_node Fo = param(&g, "F", KILN_FLOAT32, I(&g, 64), NULL);
    tir_node G = param(&g, "G", KILN_FLOAT32, I(&g, 32), NULL);
    tir_node j = tir_var(b.ctx, "j", KILN_INT64);
    tir_node j8 = tir_mul(j, I(&g, 8)), j16 = tir_mul(j, I(&g, 16));
    tir_node even = tir_ramp(j16, I(&g, 2), 8), odd = tir_ramp(tir_add(j16, I(&g, 1)), I(&g, 2), 8);
    tir_node st[4] = {
        tir_store(E, vec(&g, j8, 8), ld(&g, GA, even)),
        tir_store(Fo, even, ld(&g, GA, odd)),
        tir_store(Fo, odd, ld(&g, GA, tir_broadcast(j, 8))),
        tir_store(G, vec(&g, j8, 8), tir_cast(KILN_FLOAT32, tir_ramp(j8, I(&g, 3), 8))),
    };
    fs[1] = func(&g, "strided", loop(j, I(&g, 0), I(&g, 4), tir_seq(b.ctx, 4, st)));
    char *src = NULL;
    kiln_module *m = build(2, fs, &src);
    CHECK_CONTAINS(src, "typedef float kiln_f32x16 __attribute__((vector_size(64)));");
    CHECK_CONTAINS(src, "kiln_vload_f32x16(");
    CHECK_CONTAINS(src, "kiln_gather_f32x8_i64(");
    CHECK_CONTAINS(src, "kiln_scatter_f32x8_i64(");
    CHECK_CONTAINS(src, "\"func strided 4 0\\n\"");
    CHECK_CONTAINS(src, "\"arg A float32 1 64\\n\"");
    free(src);
    for (int len = 0; len <= 45; len += 15) {
        kiln_ndarray *a[3] = {arr1(KILN_FLOAT32, len), arr1(KILN_FLOAT32, len),
                              arr1(KILN_FLOAT32, len)};
        for (int k = 0; k < len; k++) {
            fdat(a[0])[k] = (float)k * 0.5f;
            fdat(a[1])[k] = (float)(k % 7) - 3.0f;
        }
        if (m && !call(m, "vmuladd", 3, a)) {
            int bad = 0;
            for (int k = 0; k < len; k++)
                bad += fdat(a[2])[k] != (float)k * 0.5f * ((float)(k % 7) - 3.0f) + 2.0f;
            CHECK_EQ_INT(bad, 0);
        }
        free_all(3, a);
    }
    kiln_ndarray *s[4] = {arr1(KILN_FLOAT32, 64), arr1(KILN_FLOAT32, 32), arr1(KILN_FLOAT32, 64),
                          arr1(KILN_FLOAT32, 32)};
    for (int k = 0; k < 64; k++)
        fdat(s[0])[k] = (float)k + 0.25f;
    if (m && !call(m, "strided", 4, s)) {
        int bad = 0;
        for (int k = 0; k < 32; k++) {
            bad += fdat(s[1])[k] != fdat(s[0])[2 * k];
            bad += fdat(s[2])[2 * k] != fdat(s[0])[2 * k + 1];
            bad += fdat(s[2])[2 * k + 1] != fdat(s[0])[k / 8];
            bad += fdat(s[3])[k] != (float)((k / 8) * 8 + 3 * (k % 8));
        }
        CHECK_EQ_INT(bad, 0);
    }
    free_all(4, s);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* A parallel loop whose body allocates (heap: symbolic size; promoted
 * scalar: constant index) and reads a buffer allocated outside it; a nested
 * parallel loop runs serially. */
static void test_parallel_allocate(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node n = size_var(&b, "n");
    tir_node A = param(&b, "A", KILN_FLOAT32, I(&b, 8), n);
    tir_node B = param(&b, "B", KILN_FLOAT32, I(&b, 8), n);
    tir_node i = tir_var(b.ctx, "i", KILN_INT64), j = tir_var(b.ctx, "j", KILN_INT64);
    tir_node j2 = tir_var(b.ctx, "j", KILN_INT64), j3 = tir_var(b.ctx, "j", KILN_INT64);
    tir_node tmp = tir_handle(b.ctx, "tmp", KILN_FLOAT32),
             acc = tir_handle(b.ctx, "acc", KILN_FLOAT32);
    tir_node g = tir_handle(b.ctx, "g", KILN_FLOAT32);
    tir_node row = tir_mul(i, n), z = I(&b, 0);
    tir_node fill = tir_for(j, z, n, TIR_FOR_PARALLEL, NULL,
                            tir_store(tmp, j, tir_mul(ld(&b, A, tir_add(row, j)), F(&b, 2.0))));
    tir_node sum = loop(j2, z, n, tir_store(acc, z, tir_add(ld(&b, acc, z), ld(&b, tmp, j2))));
    tir_node out = loop(j3, z, n,
                        tir_store(B, tir_add(row, j3),
                                  tir_add(tir_add(ld(&b, tmp, j3), ld(&b, acc, z)), ld(&b, g, z))));
    tir_node s3[3] = {tir_store(acc, z, F(&b, 0)), sum, out};
    tir_node inner = tir_seq2(fill, tir_allocate(acc, I(&b, 1), "local", tir_seq(b.ctx, 3, s3)));
    tir_node par =
        tir_for(i, z, I(&b, 8), TIR_FOR_PARALLEL, NULL, tir_allocate(tmp, n, "local", inner));
    tir_node body = tir_allocate(g, I(&b, 4), "global", tir_seq2(tir_store(g, z, F(&b, 100)), par));
    tir_func f = func(&b, "par", body);
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    CHECK_CONTAINS(
        src, "static int par__par0(int64_t kiln__begin, int64_t kiln__end, void *kiln__closure)");
    CHECK_CONTAINS(src, "kiln__api->parallel_for(8, par__par0, &kiln__cl0)");
    CHECK(!strstr(src, "par__par1")); /* the nested parallel loop is serial */
    CHECK_CONTAINS(src, "kiln_alloc(n_");
    CHECK_CONTAINS(src, "acc_");
    CHECK(strstr(src, "_r0 = ") != NULL); /* acc promoted to a scalar */
    free(src);
    for (int len = 1; len <= 33; len += 32) {
        kiln_ndarray *a[2] = {arr2(KILN_FLOAT32, 8, len), arr2(KILN_FLOAT32, 8, len)};
        for (int k = 0; k < 8 * len; k++)
            fdat(a[0])[k] = (float)(k % 11);
        if (m && !call(m, "par", 2, a)) {
            int bad = 0;
            for (int r = 0; r < 8; r++) {
                float s = 0;
                for (int c = 0; c < len; c++)
                    s += 2.0f * fdat(a[0])[r * len + c];
                for (int c = 0; c < len; c++)
                    bad += fdat(a[1])[r * len + c] != 2.0f * fdat(a[0])[r * len + c] + s + 100.0f;
            }
            CHECK_EQ_INT(bad, 0);
        }
        free_all(2, a);
    }
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* Float constants are printed exactly, special values included. */
static void test_constants(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node Fo = param(&b, "F", KILN_FLOAT32, I(&b, 8), NULL);
    tir_node D = param(&b, "D", KILN_FLOAT64, I(&b, 2), NULL);
    tir_node L = param(&b, "L", KILN_INT64, I(&b, 2), NULL);
    float fv[8] = {INFINITY, -INFINITY, NAN, -2.5f, 1.4e-45f, 3.40282347e38f, 0.1f, 1.0f};
    tir_node st[12];
    for (int k = 0; k < 8; k++)
        st[k] = tir_store(Fo, I(&b, k), F(&b, fv[k]));
    st[8] = tir_store(D, I(&b, 0), tir_floatc(b.ctx, KILN_FLOAT64, 0.1));
    st[9] = tir_store(D, I(&b, 1), tir_floatc(b.ctx, KILN_FLOAT64, -1e300));
    st[10] = tir_store(L, I(&b, 0), I(&b, INT64_MIN));
    st[11] = tir_store(L, I(&b, 1), tir_add(I(&b, (int64_t)1 << 40), I(&b, 3)));
    tir_func f = func(&b, "consts", tir_seq(b.ctx, 12, st));
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    char fn[64], want[96];
    c_name(src, "F", fn, sizeof fn);
    CHECK(fn[0] != 0);
    snprintf(want, sizeof want, "%s[0] = (INFINITY);", fn);
    CHECK_CONTAINS(src, want);
    snprintf(want, sizeof want, "%s[3] = (-2.5f);", fn);
    CHECK_CONTAINS(src, want);
    snprintf(want, sizeof want, "%s[6] = 0.100000001f;", fn);
    CHECK_CONTAINS(src, want);
    snprintf(want, sizeof want, "%s[7] = 1.0f;", fn);
    CHECK_CONTAINS(src, want);
    free(src);
    kiln_ndarray *a[3] = {arr1(KILN_FLOAT32, 8), arr1(KILN_FLOAT64, 2), arr1(KILN_INT64, 2)};
    if (m && !call(m, "consts", 3, a)) {
        float *g = fdat(a[0]);
        CHECK(isnan(g[2]));
        g[2] = NAN;
        int bad = 0;
        for (int k = 0; k < 8; k++)
            bad += k != 2 && memcmp(&g[k], &fv[k], 4) != 0;
        CHECK_EQ_INT(bad, 0);
        double *d = kiln_ndarray_data(a[1]);
        int64_t *l = kiln_ndarray_data(a[2]);
        CHECK(d[0] == 0.1 && d[1] == -1e300);
        CHECK(l[0] == INT64_MIN && l[1] == ((int64_t)1 << 40) + 3);
    }
    free_all(3, a);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* An allocation failure inside an outlined parallel chunk returns
 * KILN_KERNEL_ENOMEM through parallel_for, freeing the caller's buffers. */
static void test_allocation_failure(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node n = size_var(&b, "n");
    tir_node A = param(&b, "A", KILN_FLOAT32, n, NULL);
    tir_node i = tir_var(b.ctx, "i", KILN_INT64), z = I(&b, 0);
    tir_node g = tir_handle(b.ctx, "g", KILN_FLOAT32), t = tir_handle(b.ctx, "t", KILN_FLOAT32);
    tir_node huge = tir_mul(n, I(&b, (int64_t)1 << 40)); /* 4 TiB per element of A */
    tir_node par = tir_for(
        i, z, n, TIR_FOR_PARALLEL, NULL,
        tir_allocate(t, huge, "local",
                     tir_seq2(tir_store(t, i, ld(&b, g, z)), tir_store(A, i, ld(&b, t, i)))));
    tir_node body = tir_allocate(g, I(&b, 1), "global", tir_seq2(tir_store(g, z, F(&b, 7)), par));
    tir_func f = func(&b, "oom", body);
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    char want[128], gn[64];
    c_name(src, "g", gn, sizeof gn);
    CHECK(gn[0] != 0);
    snprintf(want, sizeof want, "free(%s);\n                return kiln__r0;", gn);
    CHECK_CONTAINS(src, want);
    free(src);
#if !defined(__SANITIZE_ADDRESS__) /* ASan aborts on impossible allocations */
    kiln_ndarray *a[1] = {arr1(KILN_FLOAT32, 4)};
    kiln_function *fn = m ? kiln_module_get_function(m, "oom") : NULL;
    if (fn)
        CHECK(kiln_function_call(fn, 1, a) != KILN_OK);
    kiln_clear_error();
    free_all(1, a);
#endif
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* A guard if/else, select, boolean logic and a stack array read at a
 * variable index. */
static void test_guard_select_logic(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node n = size_var(&b, "n");
    tir_node A = param(&b, "A", KILN_FLOAT32, n, NULL);
    tir_node C = param(&b, "C", KILN_FLOAT32, I(&b, 20), NULL);
    tir_node D = param(&b, "D", KILN_FLOAT32, I(&b, 20), NULL);
    tir_node E = param(&b, "E", KILN_BOOL, I(&b, 20), NULL);
    tir_node i = tir_var(b.ctx, "i", KILN_INT64), i2 = tir_var(b.ctx, "i", KILN_INT64);
    tir_node s = tir_handle(b.ctx, "s", KILN_FLOAT32);
    tir_node a = ld(&b, A, i);
    tir_node sel = tir_select(tir_bin(TIR_GT, a, F(&b, 0)), a, tir_mul(F(&b, 0.5), a));
    tir_node guard =
        tir_if(tir_bin(TIR_LT, i, n), tir_store(C, i, sel), tir_store(C, i, F(&b, -1)));
    tir_node logic = tir_bin(
        TIR_OR,
        tir_bin(TIR_AND, tir_bin(TIR_GT, i, I(&b, 3)), tir_not(tir_bin(TIR_GT, i, I(&b, 10)))),
        tir_bin(TIR_EQ, i, I(&b, 15)));
    tir_node s1[3] = {guard, tir_store(s, i, tir_cast(KILN_FLOAT32, tir_mul(i, i))),
                      tir_store(E, i, logic)};
    tir_node l1 = loop(i, I(&b, 0), I(&b, 20), tir_seq(b.ctx, 3, s1));
    tir_node l2 = tir_for(i2, I(&b, 0), I(&b, 20), TIR_FOR_UNROLLED, NULL,
                          tir_store(D, i2, ld(&b, s, tir_sub(I(&b, 19), i2))));
    tir_func f = func(&b, "guard", tir_allocate(s, I(&b, 20), "local", tir_seq2(l1, l2)));
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    CHECK_CONTAINS(src, "__attribute__((aligned(64)));");
    CHECK_CONTAINS(src, "} else {");
    CHECK_CONTAINS(src, "#pragma GCC unroll 8\n    ");
    free(src);
    kiln_ndarray *x[4] = {arr1(KILN_FLOAT32, 13), arr1(KILN_FLOAT32, 20), arr1(KILN_FLOAT32, 20),
                          arr1(KILN_BOOL, 20)};
    for (int k = 0; k < 13; k++)
        fdat(x[0])[k] = (float)(k - 6);
    if (m && !call(m, "guard", 4, x)) {
        int bad = 0;
        uint8_t *e = kiln_ndarray_data(x[3]);
        for (int k = 0; k < 20; k++) {
            float v = (float)(k - 6), want = k < 13 ? (v > 0 ? v : 0.5f * v) : -1.0f;
            bad += fdat(x[1])[k] != want;
            bad += fdat(x[2])[k] != (float)((19 - k) * (19 - k));
            bad += e[k] != (uint8_t)((k > 3 && !(k > 10)) || k == 15);
        }
        CHECK_EQ_INT(bad, 0);
    }
    free_all(4, x);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

static uint16_t ref_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float ref_from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static const kiln_dtype g_cast_dts[] = {KILN_FLOAT16, KILN_BFLOAT16, KILN_INT8,   KILN_UINT8,
                                        KILN_INT32,   KILN_INT64,    KILN_BOOL,   KILN_FLOAT64,
                                        KILN_INT16,   KILN_UINT16,   KILN_UINT32, KILN_UINT64};
#define NCAST 12

/* The unsigned ones take |x|: a negative float to unsigned is undefined in C. */
static int cast_unsigned(int d) {
    kiln_dtype dt = g_cast_dts[d];
    return dt == KILN_UINT8 || dt == KILN_UINT16 || dt == KILN_UINT32 || dt == KILN_UINT64;
}

/* Reference for cast(f32, cast(dt, x)). */
static float ref_roundtrip(kiln_dtype dt, float x) {
    switch (dt) {
    case KILN_FLOAT16: return (float)(_Float16)x;
    case KILN_BFLOAT16: return ref_from_bf16(ref_bf16(x));
    case KILN_INT8: return (float)(int8_t)x;
    case KILN_UINT8: return (float)(uint8_t)x;
    case KILN_INT32: return (float)(int32_t)x;
    case KILN_INT64: return (float)(int64_t)x;
    case KILN_INT16: return (float)(int16_t)x;
    case KILN_UINT16: return (float)(uint16_t)x;
    case KILN_UINT32: return (float)(uint32_t)x;
    case KILN_UINT64: return (float)(uint64_t)x;
    case KILN_BOOL: return x != 0 ? 1.0f : 0.0f;
    default: return (float)(double)x;
    }
}

/* Every dtype: X -> cast -> store -> load -> cast back, scalar for the first
 * 8 elements and 8-lane vectors for the next 8; bfloat16 also with NaN, inf
 * and ties, and a select between bfloat16 values. */
static void test_dtype_roundtrip(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node X = param(&b, "X", KILN_FLOAT32, I(&b, 16), NULL);
    tir_node mid[NCAST], back[NCAST];
    tir_node stmts[2 * NCAST + 1];
    int ns = 0;
    char names[NCAST][2][16];
    for (int d = 0; d < NCAST; d++) {
        snprintf(names[d][0], 16, "M%d", d);
        snprintf(names[d][1], 16, "Y%d", d);
        mid[d] = param(&b, names[d][0], g_cast_dts[d], I(&b, 16), NULL);
        back[d] = param(&b, names[d][1], KILN_FLOAT32, I(&b, 16), NULL);
    }
    tir_node S = param(&b, "S", KILN_BFLOAT16, I(&b, 16), NULL);
    for (int d = 0; d < NCAST; d++) {
        tir_node i = tir_var(b.ctx, "i", KILN_INT64), k = tir_var(b.ctx, "k", KILN_INT64);
        tir_node r = vec(&b, tir_add(I(&b, 8), tir_mul(k, I(&b, 8))), 8);
        tir_node src = cast_unsigned(d) ? tir_call(b.ctx, TIR_ABS, KILN_FLOAT32, 1, 1,
                                                   (tir_node[]){ld(&b, X, i)})
                                        : ld(&b, X, i);
        tir_node vsrc = cast_unsigned(d) ? call1(&b, TIR_ABS, ld(&b, X, r)) : ld(&b, X, r);
        tir_node sc = tir_seq2(tir_store(mid[d], i, tir_cast(g_cast_dts[d], src)),
                               tir_store(back[d], i, tir_cast(KILN_FLOAT32, ld(&b, mid[d], i))));
        tir_node vc = tir_seq2(tir_store(mid[d], r, tir_cast(g_cast_dts[d], vsrc)),
                               tir_store(back[d], r, tir_cast(KILN_FLOAT32, ld(&b, mid[d], r))));
        stmts[ns++] = loop(i, I(&b, 0), I(&b, 8), sc);
        stmts[ns++] = loop(k, I(&b, 0), I(&b, 1), vc);
    }
    /* S[i] = i < 4 ? M1[i] : M1[15 - i] (bfloat16 select), vector for 8..16 */
    tir_node i = tir_var(b.ctx, "i", KILN_INT64);
    tir_node bsel = tir_select(tir_bin(TIR_LT, i, I(&b, 4)), ld(&b, mid[1], i),
                               ld(&b, mid[1], tir_sub(I(&b, 15), i)));
    tir_node vr = vec(&b, I(&b, 8), 8);
    tir_node vsel =
        tir_select(tir_bin(TIR_LT, tir_ramp(I(&b, 8), I(&b, 1), 8), tir_broadcast(I(&b, 12), 8)),
                   ld(&b, mid[1], vr), tir_broadcast(ld(&b, mid[1], I(&b, 0)), 8));
    stmts[ns++] =
        tir_seq2(loop(i, I(&b, 0), I(&b, 8), tir_store(S, i, bsel)), tir_store(S, vr, vsel));
    tir_func f = func(&b, "casts", tir_seq(b.ctx, ns, stmts));
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    CHECK_CONTAINS(src, "kiln_f32_to_bf16");
    CHECK_CONTAINS(src, "__builtin_convertvector(");
    CHECK_CONTAINS(src, "\"arg M1 bfloat16 1 16\\n\"");
    free(src);
    kiln_ndarray *a[2 * NCAST + 2];
    a[0] = arr1(KILN_FLOAT32, 16);
    for (int d = 0; d < NCAST; d++) {
        a[1 + 2 * d] = arr1(g_cast_dts[d], 16);
        a[2 + 2 * d] = arr1(KILN_FLOAT32, 16);
    }
    a[2 * NCAST + 1] = arr1(KILN_BFLOAT16, 16);
    static const float xs[16] = {0.0f,        -0.0f,       1.5f,  -2.75f, 100.4f, -100.6f,
                                 3.00390625f, 0.1f,        7.0f,  -1.0f,  0.0f,   65.5f,
                                 -127.0f,     1.00390625f, 1e-3f, 3.3f};
    memcpy(fdat(a[0]), xs, sizeof xs);
    if (m && !call(m, "casts", 2 * NCAST + 2, a)) {
        for (int d = 0; d < NCAST; d++) {
            int bad = 0;
            for (int k = 0; k < 16; k++) {
                float x = cast_unsigned(d) ? fabsf(xs[k]) : xs[k];
                float want = ref_roundtrip(g_cast_dts[d], x), got = fdat(a[2 + 2 * d])[k];
                if (memcmp(&want, &got, 4) != 0) {
                    bad++;
                    fprintf(stderr, "  %s[%d]: %.9g -> %.9g, want %.9g\n",
                            kiln_dtype_name(g_cast_dts[d]), k, x, got, want);
                }
            }
            CHECK_EQ_INT(bad, 0);
        }
        uint16_t *bs = kiln_ndarray_data(a[2 * NCAST + 1]), *bm = kiln_ndarray_data(a[3]);
        int bad = 0;
        for (int k = 0; k < 16; k++) {
            uint16_t want = k < 8 ? bm[k < 4 ? k : 15 - k] : (k < 12 ? bm[k] : bm[0]);
            bad += bs[k] != want;
        }
        CHECK_EQ_INT(bad, 0);
    }
    free_all(2 * NCAST + 2, a);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);

    /* bfloat16 specials: NaN stays NaN, inf stays inf, ties round to even */
    fb c = fb_new(kiln_ctx_new());
    tir_node Z = param(&c, "Z", KILN_FLOAT32, I(&c, 8), NULL);
    tir_node Zb = param(&c, "Zb", KILN_BFLOAT16, I(&c, 8), NULL);
    tir_node Zf = param(&c, "Zf", KILN_FLOAT32, I(&c, 8), NULL);
    tir_node v8 = vec(&c, I(&c, 0), 8);
    tir_node body = tir_seq2(tir_store(Zb, v8, tir_cast(KILN_BFLOAT16, ld(&c, Z, v8))),
                             tir_store(Zf, v8, tir_cast(KILN_FLOAT32, ld(&c, Zb, v8))));
    tir_func f2 = func(&c, "bf", body);
    m = build(1, &f2, NULL);
    kiln_ndarray *z[3] = {arr1(KILN_FLOAT32, 8), arr1(KILN_BFLOAT16, 8), arr1(KILN_FLOAT32, 8)};
    uint32_t bits[8] = {0x7fc00001u, 0xff800001u, 0x7f800000u, 0xff800000u,
                        0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x00000001u};
    memcpy(fdat(z[0]), bits, sizeof bits);
    if (m && !call(m, "bf", 3, z)) {
        uint16_t *zb = kiln_ndarray_data(z[1]);
        CHECK(isnan(fdat(z[2])[0]) && isnan(fdat(z[2])[1]));
        CHECK(isinf(fdat(z[2])[2]) && fdat(z[2])[2] > 0);
        CHECK(isinf(fdat(z[2])[3]) && fdat(z[2])[3] < 0);
        CHECK_EQ_INT(zb[4], 0x3f80); /* tie to even (down) */
        CHECK_EQ_INT(zb[5], 0x3f82); /* tie to even (up) */
        CHECK_EQ_INT(zb[6], 0x7f80); /* max float rounds to inf */
        CHECK_EQ_INT(zb[7], 0x0000);
    }
    free_all(3, z);
    kiln_module_free(m);
    kiln_ctx_free(c.ctx);
}

static int64_t ref_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* floordiv/floormod/div/mod on int64 (scalar and 8-lane), int32, float32. */
static void test_floordiv_floormod(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node P = param(&b, "P", KILN_INT64, I(&b, 16), NULL);
    tir_node Q = param(&b, "Q", KILN_INT64, I(&b, 16), NULL);
    tir_node O = param(&b, "O", KILN_INT64, I(&b, 64), NULL);
    tir_node P32 = param(&b, "P32", KILN_INT32, I(&b, 16), NULL);
    tir_node O32 = param(&b, "O32", KILN_INT32, I(&b, 32), NULL);
    tir_node PF = param(&b, "PF", KILN_FLOAT32, I(&b, 16), NULL);
    tir_node OF = param(&b, "OF", KILN_FLOAT32, I(&b, 32), NULL);
    static const tir_op ops[4] = {TIR_FLOORDIV, TIR_FLOORMOD, TIR_DIV, TIR_MOD};
    tir_node st[16];
    int ns = 0;
    tir_node i = tir_var(b.ctx, "i", KILN_INT64);
    tir_node vr = vec(&b, I(&b, 8), 8);
    for (int o = 0; o < 4; o++) {
        tir_node e = tir_bin(ops[o], ld(&b, P, i), ld(&b, Q, i));
        st[ns++] = tir_store(O, tir_add(i, I(&b, 16 * o)), e);
        tir_node ve = tir_bin(ops[o], ld(&b, P, vr), ld(&b, Q, vr));
        st[ns++] = tir_store(O, vec(&b, I(&b, 16 * o + 8), 8), ve);
    }
    tir_node two = tir_int(b.ctx, KILN_INT32, -3);
    st[ns++] = tir_store(O32, i, tir_bin(TIR_FLOORDIV, ld(&b, P32, i), two));
    st[ns++] = tir_store(O32, tir_add(i, I(&b, 16)), tir_bin(TIR_FLOORMOD, ld(&b, P32, i), two));
    st[ns++] = tir_store(OF, i, tir_bin(TIR_FLOORDIV, ld(&b, PF, i), F(&b, -1.5)));
    st[ns++] =
        tir_store(OF, tir_add(i, I(&b, 16)), tir_bin(TIR_FLOORMOD, ld(&b, PF, i), F(&b, 1.5)));
    tir_node scal = tir_seq(b.ctx, 4, (tir_node[]){st[0], st[2], st[4], st[6]});
    tir_node vecs = tir_seq(b.ctx, 4, (tir_node[]){st[1], st[3], st[5], st[7]});
    tir_node l1 = loop(i, I(&b, 0), I(&b, 8), scal);
    tir_node rest = tir_seq(b.ctx, 4, &st[8]);
    tir_node l2 = loop(i, I(&b, 0), I(&b, 16), rest);
    tir_func f = func(&b, "fdiv", tir_seq(b.ctx, 3, (tir_node[]){l1, vecs, l2}));
    kiln_module *m = build(1, &f, NULL);
    kiln_ndarray *a[7] = {arr1(KILN_INT64, 16),  arr1(KILN_INT64, 16), arr1(KILN_INT64, 64),
                          arr1(KILN_INT32, 16),  arr1(KILN_INT32, 32), arr1(KILN_FLOAT32, 16),
                          arr1(KILN_FLOAT32, 32)};
    int64_t *p = kiln_ndarray_data(a[0]), *q = kiln_ndarray_data(a[1]),
            *out = kiln_ndarray_data(a[2]);
    int32_t *p32 = kiln_ndarray_data(a[3]), *o32 = kiln_ndarray_data(a[4]);
    for (int k = 0; k < 16; k++) {
        p[k] = (k * 37 % 23) - 11;
        q[k] = (k % 2 ? 1 : -1) * (k % 5 + 1);
        p32[k] = k * 5 - 40;
        fdat(a[5])[k] = (float)k * 0.75f - 6.0f;
    }
    if (m && !call(m, "fdiv", 7, a)) {
        int bad = 0;
        for (int k = 0; k < 16; k++) {
            int64_t fd = ref_floordiv(p[k], q[k]);
            bad += out[k] != fd;
            bad += out[16 + k] != p[k] - fd * q[k];
            bad += out[32 + k] != p[k] / q[k];
            bad += out[48 + k] != p[k] % q[k];
            bad += o32[k] != (int32_t)ref_floordiv(p32[k], -3);
            bad += o32[16 + k] != (int32_t)(p32[k] - ref_floordiv(p32[k], -3) * -3);
            float x = fdat(a[5])[k];
            bad += fdat(a[6])[k] != floorf(x / -1.5f);
            float fm = fmodf(x, 1.5f);
            if (fm != 0 && fm < 0)
                fm += 1.5f;
            bad += fdat(a[6])[16 + k] != fm;
        }
        CHECK_EQ_INT(bad, 0);
    }
    free_all(7, a);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

static double ref_intrin(tir_intrin f, double x, int dbl) {
    if (dbl) {
        switch (f) {
        case TIR_EXP: return exp(x);
        case TIR_TANH: return tanh(x);
        default: return 0;
        }
    }
    float v = (float)x;
    switch (f) {
    case TIR_EXP: return expf(v);
    case TIR_LOG: return logf(v);
    case TIR_SQRT: return sqrtf(v);
    case TIR_RSQRT: return 1.0f / sqrtf(v);
    case TIR_TANH: return tanhf(v);
    case TIR_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case TIR_ERF: return erff(v);
    case TIR_POW: return powf(v, 1.5f);
    case TIR_FLOOR: return floorf(v);
    case TIR_CEIL: return ceilf(v);
    case TIR_ABS: return fabsf(v);
    case TIR_ROUND: return nearbyintf(v);
    case TIR_SIN: return sinf(v);
    case TIR_COS: return cosf(v);
    case TIR_TAN: return tanf(v);
    case TIR_ASIN: return asinf(v);
    case TIR_ACOS: return acosf(v);
    case TIR_ATAN: return atanf(v);
    case TIR_SINH: return sinhf(v);
    case TIR_COSH: return coshf(v);
    case TIR_ASINH: return asinhf(v);
    case TIR_ACOSH: return acoshf(v);
    case TIR_ATANH: return atanhf(v);
    default: return 0;
    }
}

/* The intrinsics of float operands: all but the shifts, which are last. */
enum { NF = TIR_SHL };

/* Every intrinsic against libm (scalar and 8-lane), float64 exp/tanh, int
 * abs, and NaN-propagating min/max. */
static void test_intrinsics(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node X = param(&b, "X", KILN_FLOAT32, I(&b, 16), NULL);
    tir_node Y = param(&b, "Y", KILN_FLOAT32, I(&b, 16 * NF), NULL);
    tir_node XD = param(&b, "XD", KILN_FLOAT64, I(&b, 16), NULL);
    tir_node YD = param(&b, "YD", KILN_FLOAT64, I(&b, 32), NULL);
    tir_node XI = param(&b, "XI", KILN_INT32, I(&b, 16), NULL);
    tir_node YI = param(&b, "YI", KILN_INT32, I(&b, 16), NULL);
    tir_node MM = param(&b, "MM", KILN_FLOAT32, I(&b, 64), NULL);
    tir_node st[2 * NF + 8];
    int ns = 0;
    tir_node i = tir_var(b.ctx, "i", KILN_INT64), vr = vec(&b, I(&b, 8), 8);
    for (int f = 0; f < NF; f++) {
        tir_node a[2] = {ld(&b, X, i), F(&b, 1.5)};
        tir_node va[2] = {ld(&b, X, vr), tir_broadcast(F(&b, 1.5), 8)};
        int na = f == TIR_POW ? 2 : 1;
        st[ns++] = tir_store(Y, tir_add(i, I(&b, 16 * f)),
                             tir_call(b.ctx, (tir_intrin)f, KILN_FLOAT32, 1, na, a));
        st[ns++] = tir_store(Y, vec(&b, I(&b, 16 * f + 8), 8),
                             tir_call(b.ctx, (tir_intrin)f, KILN_FLOAT32, 8, na, va));
    }
    tir_node j = tir_var(b.ctx, "j", KILN_INT64);
    tir_node xd = ld(&b, XD, j), xi = ld(&b, XI, j), xf = ld(&b, X, j);
    tir_node yf = ld(&b, X, tir_sub(I(&b, 15), j));
    tir_node nanv = tir_floatc(b.ctx, KILN_FLOAT32, NAN);
    tir_node sj[8] = {
        tir_store(YD, j, call1(&b, TIR_EXP, xd)),
        tir_store(YD, tir_add(j, I(&b, 16)), call1(&b, TIR_TANH, xd)),
        tir_store(YI, j, call1(&b, TIR_ABS, xi)),
        tir_store(MM, j, tir_bin(TIR_MIN, xf, yf)),
        tir_store(MM, tir_add(j, I(&b, 16)), tir_bin(TIR_MAX, xf, yf)),
        tir_store(MM, tir_add(j, I(&b, 32)), tir_bin(TIR_MIN, xf, nanv)),
        tir_store(MM, tir_add(j, I(&b, 48)), tir_bin(TIR_MAX, nanv, xf)),
        tir_nop(b.ctx),
    };
    tir_node ss[NF], vs[NF];
    for (int f = 0; f < NF; f++) {
        ss[f] = st[2 * f];
        vs[f] = st[2 * f + 1];
    }
    tir_node l1 = loop(i, I(&b, 0), I(&b, 8), tir_seq(b.ctx, NF, ss));
    tir_node l2 = loop(j, I(&b, 0), I(&b, 16), tir_seq(b.ctx, 8, sj));
    tir_func f = func(&b, "intr", tir_seq(b.ctx, 3, (tir_node[]){l1, tir_seq(b.ctx, NF, vs), l2}));
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    CHECK_CONTAINS(src, "nearbyintf(");
    CHECK_CONTAINS(src, "kiln_exp_f32x8(");
    /* float min/max propagate NaN without a short-circuit: a branch per
       call made gcc superlinear in the nesting of fused maxima */
    CHECK_CONTAINS(src, "((a > b) | (a != a))");
    CHECK(!strstr(src, "|| a != a"));
    free(src);
    kiln_ndarray *a[7] = {arr1(KILN_FLOAT32, 16), arr1(KILN_FLOAT32, 16 * NF),
                          arr1(KILN_FLOAT64, 16), arr1(KILN_FLOAT64, 32),
                          arr1(KILN_INT32, 16),   arr1(KILN_INT32, 16),
                          arr1(KILN_FLOAT32, 64)};
    static const float xs[16] = {0.5f,  1.5f,  2.5f,  0.1f, 3.7f, 1.0f, 2.0f,  0.25f,
                                 0.75f, 1.25f, 2.49f, 3.5f, 0.3f, 2.9f, 1.75f, 0.05f};
    memcpy(fdat(a[0]), xs, sizeof xs);
    double *xd_ = kiln_ndarray_data(a[2]), *yd_ = kiln_ndarray_data(a[3]);
    int32_t *xi_ = kiln_ndarray_data(a[4]), *yi_ = kiln_ndarray_data(a[5]);
    for (int k = 0; k < 16; k++) {
        xd_[k] = (k - 8) * 0.3;
        xi_[k] = k * 7 - 50;
    }
    if (m && !call(m, "intr", 7, a)) {
        int bad = 0;
        for (int fi = 0; fi < NF; fi++)
            for (int k = 0; k < 16; k++) {
                /* asin, acos, acosh, atanh: NaN outside their domains, atanh(1) inf */
                double want = ref_intrin((tir_intrin)fi, xs[k], 0), got = fdat(a[1])[16 * fi + k];
                if (!(fabs(got - want) <= 2e-7 * fabs(want) + 1e-30) && got != want &&
                    !(isnan(got) && isnan(want))) {
                    bad++;
                    fprintf(stderr, "  %s(%g) = %.9g, want %.9g\n", tir_intrin_name(fi), xs[k], got,
                            want);
                }
            }
        for (int k = 0; k < 16; k++) {
            bad += yd_[k] != exp(xd_[k]);
            bad += fabs(yd_[16 + k] - tanh(xd_[k])) > 1e-15;
            bad += yi_[k] != abs(xi_[k]);
            float x = xs[k], y = xs[15 - k], *mm = fdat(a[6]);
            bad += mm[k] != (x < y ? x : y);
            bad += mm[16 + k] != (x > y ? x : y);
            bad += !isnan(mm[32 + k]) + !isnan(mm[48 + k]);
        }
        CHECK_EQ_INT(bad, 0);
    }
    free_all(7, a);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* A 4x16 matmul micro-kernel whose accumulator tile lives in a promoted
 * "local" buffer of four 16-lane registers. */
static void test_promoted_accumulator(void) {
    enum { M = 4, N = 16, K = 37 };
    fb b = fb_new(kiln_ctx_new());
    tir_node A = param(&b, "A", KILN_FLOAT32, I(&b, M), I(&b, K));
    tir_node B = param(&b, "B", KILN_FLOAT32, I(&b, K), I(&b, N));
    tir_node C = param(&b, "C", KILN_FLOAT32, I(&b, M), I(&b, N));
    tir_node CC = tir_handle(b.ctx, "CC", KILN_FLOAT32);
    tir_node k = tir_var(b.ctx, "k", KILN_INT64);
    tir_node init[M], upd[M], out[M];
    tir_node bv = ld(&b, B, vec(&b, tir_mul(k, I(&b, N)), N));
    for (int r = 0; r < M; r++) {
        tir_node cr = vec(&b, I(&b, r * N), N);
        init[r] = tir_store(CC, cr, tir_broadcast(F(&b, 0), N));
        tir_node a = tir_broadcast(ld(&b, A, tir_add(I(&b, r * K), k)), N);
        upd[r] = tir_store(CC, cr, tir_add(ld(&b, CC, cr), tir_mul(a, bv)));
        out[r] = tir_store(C, vec(&b, I(&b, r * N), N), ld(&b, CC, cr));
    }
    tir_node body = tir_seq(b.ctx, 3,
                            (tir_node[]){tir_seq(b.ctx, M, init),
                                         loop(k, I(&b, 0), I(&b, K), tir_seq(b.ctx, M, upd)),
                                         tir_seq(b.ctx, M, out)});
    tir_func f = func(&b, "mk", tir_allocate(CC, I(&b, M * N), "local", body));
    char *src = NULL;
    kiln_module *m = build(1, &f, &src);
    char want[96], cn[64];
    c_name(src, "CC", cn, sizeof cn);
    CHECK(cn[0] != 0);
    snprintf(want, sizeof want, "kiln_f32x16 %s_r3 = {0};", cn);
    CHECK_CONTAINS(src, want);
    snprintf(want, sizeof want, "%s[", cn);
    CHECK(!strstr(src, want));
    free(src);
    kiln_ndarray *a[3] = {arr2(KILN_FLOAT32, M, K), arr2(KILN_FLOAT32, K, N),
                          arr2(KILN_FLOAT32, M, N)};
    for (int t = 0; t < M * K; t++)
        fdat(a[0])[t] = (float)(t % 5) - 2.0f;
    for (int t = 0; t < K * N; t++)
        fdat(a[1])[t] = (float)(t % 7) * 0.5f;
    if (m && !call(m, "mk", 3, a)) {
        int bad = 0;
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) {
                float s = 0;
                for (int t = 0; t < K; t++)
                    s += fdat(a[0])[r * K + t] * fdat(a[1])[t * N + c];
                bad += fdat(a[2])[r * N + c] != s; /* small integers and halves: exact */
            }
        CHECK_EQ_INT(bad, 0);
    }
    free_all(3, a);
    kiln_module_free(m);
    kiln_ctx_free(b.ctx);
}

/* Remove the folder a failed compile kept (named in the message). */
static void remove_kept(const char *msg) {
    const char *p = strstr(msg, "compiling ");
    if (!p)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s", p + 10);
    char *w = strstr(path, " with '");
    if (w)
        *w = 0;
    char *sl = strrchr(path, '/');
    if (!sl)
        return;
    *sl = 0;
    if (!strstr(path, "kiln-"))
        return;
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        char f[2048];
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') {
                snprintf(f, sizeof f, "%s/%s", path, e->d_name);
                unlink(f);
            }
        closedir(d);
    }
    rmdir(path);
}

static void test_errors(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node A = param(&b, "A", KILN_FLOAT32, I(&b, 8), NULL);
    tir_node i = tir_var(b.ctx, "i.outer", KILN_INT64);
    tir_node th =
        tir_for(i, I(&b, 0), I(&b, 8), TIR_FOR_THREAD, "blockIdx.x", tir_store(A, i, F(&b, 1)));
    tir_func f = func(&b, "gpu", th);
    CHECK(codegen_render_c(1, &f) == NULL);
    CHECK_CONTAINS(kiln_last_error(),
                   "loop 'i.outer' is bound to blockIdx.x, which the CPU back end cannot run; "
                   "remove the bind or use a GPU target");

    fb c = fb_new(b.ctx);
    tir_node H = param(&c, "H", KILN_BFLOAT16, I(&c, 8), NULL);
    tir_node j = tir_var(b.ctx, "j", KILN_INT64);
    tir_func g =
        func(&c, "bfadd",
             loop(j, I(&c, 0), I(&c, 8), tir_store(H, j, tir_add(ld(&c, H, j), ld(&c, H, j)))));
    CHECK(codegen_render_c(1, &g) == NULL);
    CHECK_CONTAINS(kiln_last_error(),
                   "bfloat16 arithmetic is not supported: cast to float32 first");

    tir_func bad = func(&c, "1bad-name", tir_nop(b.ctx));
    CHECK(codegen_render_c(1, &bad) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "not a valid C identifier");

    tir_node p = tir_var(b.ctx, "p", KILN_INT64);
    fb d = fb_new(b.ctx);
    param(&d, "Q", KILN_FLOAT32, p, NULL); /* p is not a size var of the function */
    tir_func h = func(&d, "undeclared", tir_nop(b.ctx));
    CHECK(codegen_render_c(1, &h) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "neither a constant nor a size variable");

    /* toolchain failures */
    char *so = NULL, *dir = NULL;
    codegen_toolchain tc = {"cc", "-O0 -Dbroken="};
    kiln_status st = codegen_compile("broken int x = ;\n", "broken", &tc, &so, &dir);
    CHECK_EQ_INT(st, KILN_ERR_TOOLCHAIN);
    CHECK_CONTAINS(kiln_last_error(), "/broken.c with 'cc -std=gnu11");
    CHECK_CONTAINS(kiln_last_error(), "failed (exit 1):\n");
    CHECK_CONTAINS(kiln_last_error(), "error");
    CHECK(so == NULL && dir == NULL);
    remove_kept(kiln_last_error());

    codegen_toolchain tf = {"false", ""};
    st = codegen_compile("int x;\n", "f", &tf, &so, &dir);
    CHECK_EQ_INT(st, KILN_ERR_TOOLCHAIN);
    CHECK_CONTAINS(kiln_last_error(), "f.c with 'false -std=gnu11");
    remove_kept(kiln_last_error());

    codegen_toolchain tm = {"/nonexistent/kiln-cc", "-O2"};
    st = codegen_compile("int x;\n", "m", &tm, &so, &dir);
    CHECK_EQ_INT(st, KILN_ERR_TOOLCHAIN);
    CHECK_CONTAINS(kiln_last_error(), "cannot run the C compiler '/nonexistent/kiln-cc'");

    /* a compiler command with arguments of its own */
    codegen_toolchain te = {"env LC_ALL=C cc", "-O1"};
    st = codegen_compile("int kiln_x(void) { return 1; }\n", "envcc", &te, &so, &dir);
    CHECK_EQ_INT(st, KILN_OK);
    if (!st) {
        CHECK(access(so, R_OK) == 0);
        kiln_module *m = kiln_module_load_owned(so, dir); /* no metadata: fails, folder stays */
        kiln_module_free(m);
        char f1[1200];
        const char *names[] = {"envcc.c", "envcc.so", "envcc.log"};
        for (int k = 0; k < 3; k++) {
            snprintf(f1, sizeof f1, "%s/%s", dir, names[k]);
            unlink(f1);
        }
        rmdir(dir);
    }
    free(so);
    free(dir);
    kiln_clear_error();
    kiln_ctx_free(b.ctx);
}

/* A module split into translation units compiled in parallel: part 0
 * holds the entry and the metadata, every part whole functions; the
 * linked module runs all of them. A part that fails to compile is named. */
static void test_parts(void) {
    fb b = fb_new(kiln_ctx_new());
    tir_node n = size_var(&b, "n");
    tir_node A = param(&b, "A", KILN_FLOAT32, n, NULL), C = param(&b, "C", KILN_FLOAT32, n, NULL);
    tir_node i = tir_var(b.ctx, "i", KILN_INT64);
    static const char *const names[3] = {"times1", "times2", "times3"};
    tir_func f[3];
    for (int k = 0; k < 3; k++)
        f[k] = func(&b, names[k],
                    loop(i, I(&b, 0), n, tir_store(C, i, tir_mul(ld(&b, A, i), F(&b, k + 1)))));
    char *parts[4] = {0};
    CHECK_EQ_INT(codegen_render_c_parts(3, f, 4, parts), 3); /* at most one per function */
    for (int k = 0; k < 3; k++)
        free(parts[k]);
    CHECK_EQ_INT(codegen_render_c_parts(3, f, 2, parts), 2);
    CHECK_CONTAINS(parts[0], "int kiln_module_init(");
    CHECK_CONTAINS(parts[0], "const char kiln_module_meta[]");
    CHECK_CONTAINS(parts[0], "\"func times3 2 1\\n\"");
    CHECK(strstr(parts[1], "kiln_module_init(") == NULL);
    CHECK(strstr(parts[1], "kiln_module_meta") == NULL);
    CHECK_CONTAINS(
        parts[1],
        "extern __attribute__((visibility(\"hidden\"))) const kiln_module_api *kiln__api;");
    int in0 = 0, in1 = 0;
    for (int k = 0; k < 3; k++) {
        char sig[64];
        snprintf(sig, sizeof sig, "int32_t %s(void", names[k]);
        in0 += strstr(parts[0], sig) != NULL;
        in1 += strstr(parts[1], sig) != NULL;
    }
    CHECK(in0 >= 1 && in1 >= 1 && in0 + in1 == 3);
    kiln_target *host = kiln_target_host();
    codegen_toolchain tc = codegen_target_toolchain(host);
    char *so = NULL, *dir = NULL;
    kiln_status st = codegen_compile_parts(2, (const char *const *)parts, "split", &tc, &so, &dir);
    CHECK_EQ_INT(st, KILN_OK);
    kiln_module *m = st ? NULL : kiln_module_load_owned(so, dir);
    CHECK(m != NULL);
    free(so);
    free(dir);
    kiln_ndarray *a[2] = {arr1(KILN_FLOAT32, 19), arr1(KILN_FLOAT32, 19)};
    for (int k = 0; k < 19; k++)
        fdat(a[0])[k] = (float)k - 3.0f;
    for (int k = 0; m && k < 3; k++) {
        if (call(m, names[k], 2, a))
            continue;
        int bad = 0;
        for (int j = 0; j < 19; j++)
            bad += fdat(a[1])[j] != ((float)j - 3.0f) * (float)(k + 1);
        CHECK_EQ_INT(bad, 0);
    }
    free_all(2, a);
    kiln_module_free(m);
    /* a broken second part: its file is named, the folder kept */
    char *broken = parts[1];
    parts[1] = "broken int x = ;\n";
    st = codegen_compile_parts(2, (const char *const *)parts, "split", &tc, &so, &dir);
    CHECK_EQ_INT(st, KILN_ERR_TOOLCHAIN);
    CHECK_CONTAINS(kiln_last_error(), "/split_1.c with '");
    CHECK(so == NULL && dir == NULL);
    remove_kept(kiln_last_error());
    kiln_clear_error();
    parts[1] = broken;
    for (int k = 0; k < 2; k++)
        free(parts[k]);
    kiln_target_free(host);
    kiln_ctx_free(b.ctx);
}

/* ---- integer division by 0 and -1 (base/intdiv.h's rule) ---------------------------- */

/* The rule, written out here independently of base/intdiv.h: x / 0 = 0,
 * x % 0 = 0, MIN / -1 = MIN (wraps), MIN % -1 = 0; otherwise TIR's div and
 * mod truncate and floordiv and floormod round down. `bits` is the width
 * of the dtype (the quotient wraps to it). */
static int64_t ref_intdiv(tir_op op, int64_t a, int64_t b, int bits) {
    if (b == 0)
        return 0;
    int64_t min = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    int mod = op == TIR_MOD || op == TIR_FLOORMOD;
    if (b == -1)
        return mod ? 0 : a == min ? min : -a;
    int64_t q = a / b, r = a % b;
    if ((op == TIR_FLOORDIV || op == TIR_FLOORMOD) && r != 0 && ((r < 0) != (b < 0))) {
        q -= 1;
        r += b;
    }
    return mod ? r : q;
}

static int64_t get_int(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_INT8: return ((const int8_t *)d)[i];
    case KILN_INT32: return ((const int32_t *)d)[i];
    default: return ((const int64_t *)d)[i];
    }
}

static void set_int(kiln_ndarray *a, int64_t i, int64_t v) {
    void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case KILN_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    default: ((int64_t *)d)[i] = v;
    }
}

/* Divisors that are not known constants may be 0 or -1 at run time: div,
 * mod, floordiv and floormod of int64, int32 and int8 arrays holding zeros
 * and MIN / -1, scalar and 8 lanes, and by the constants 0 and -1, run
 * without SIGFPE and follow the rule. A constant divisor otherwise stays
 * plain C division. */
static void test_int_division_rule(void) {
    static const kiln_dtype dts[3] = {KILN_INT64, KILN_INT32, KILN_INT8};
    static const tir_op ops[4] = {TIR_DIV, TIR_MOD, TIR_FLOORDIV, TIR_FLOORMOD};
    for (int d = 0; d < 3; d++) {
        kiln_dtype dt = dts[d];
        int bits = (int)kiln_dtype_size(dt) * 8;
        int64_t min = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        fb b = fb_new(kiln_ctx_new());
        /* A, B: 16 values; O: for each op, 16 results by B (8 scalar, 8 in one
           vector), then 16 by the constant 0 and 16 by the constant -1 */
        tir_node A = param(&b, "A", dt, I(&b, 16), NULL), B = param(&b, "B", dt, I(&b, 16), NULL);
        tir_node O = param(&b, "O", dt, I(&b, 4 * 48), NULL);
        tir_node i = tir_var(b.ctx, "i", KILN_INT64), vr = vec(&b, I(&b, 8), 8);
        tir_node zero = tir_int(b.ctx, dt, 0), mone = tir_int(b.ctx, dt, -1);
        tir_node byb[4], vecs[4], consts[8];
        for (int o = 0; o < 4; o++) {
            tir_node ai = ld(&b, A, i);
            byb[o] = tir_store(O, tir_add(i, I(&b, 48 * o)), tir_bin(ops[o], ai, ld(&b, B, i)));
            vecs[o] = tir_store(O, vec(&b, I(&b, 48 * o + 8), 8),
                                tir_bin(ops[o], ld(&b, A, vr), ld(&b, B, vr)));
            consts[2 * o] = tir_store(O, tir_add(i, I(&b, 48 * o + 16)), tir_bin(ops[o], ai, zero));
            consts[2 * o + 1] =
                tir_store(O, tir_add(i, I(&b, 48 * o + 32)), tir_bin(ops[o], ai, mone));
        }
        /* by B: elements 0..7 scalar, 8..15 as one vector; by the constants: all 16 */
        tir_node l1 = loop(i, I(&b, 0), I(&b, 8), tir_seq(b.ctx, 4, byb));
        tir_node l2 = loop(i, I(&b, 0), I(&b, 16), tir_seq(b.ctx, 8, consts));
        tir_func f =
            func(&b, "idiv", tir_seq(b.ctx, 3, (tir_node[]){l1, tir_seq(b.ctx, 4, vecs), l2}));
        char *src = NULL;
        kiln_module *m = build(1, &f, &src);
        CHECK_CONTAINS(src, codegen_intdiv_text);
        CHECK_CONTAINS(src, dt == KILN_INT64 ? "kiln_idiv_floor_i64(" : "kiln_idiv_floor_i32(");
        CHECK_CONTAINS(src, dt == KILN_INT64   ? "kiln_imod_trunc_i64x8("
                            : dt == KILN_INT32 ? "kiln_imod_trunc_i32x8("
                                               : "kiln_imod_trunc_i8x8(");
        free(src);
        kiln_ndarray *a[3] = {arr1(dt, 16), arr1(dt, 16), arr1(dt, 4 * 48)};
        static const int64_t av[8] = {0, 7, -7, 7, -7, 5, 1, 0},
                             bv[8] = {-1, 2, 2, -2, -2, 0, 0, 0};
        for (int k = 0; k < 16; k++) {
            set_int(a[0], k, k % 8 == 0 || k == 12 ? min : av[k % 8]);
            set_int(a[1], k, k == 12 ? -1 : bv[k % 8]);
        }
        if (m && !call(m, "idiv", 3, a)) {
            int bad = 0;
            for (int o = 0; o < 4; o++)
                for (int k = 0; k < 16; k++) {
                    int64_t x = get_int(a[0], k), y = get_int(a[1], k);
                    int64_t want[3] = {ref_intdiv(ops[o], x, y, bits), 0,
                                       ref_intdiv(ops[o], x, -1, bits)};
                    for (int c = 0; c < 3; c++) {
                        int64_t got = get_int(a[2], 48 * o + 16 * c + k);
                        if (got != want[c]) {
                            bad++;
                            fprintf(stderr, "%s %s: %lld by %lld (%s) = %lld, want %lld\n",
                                    kiln_dtype_name(dt), tir_op_name(ops[o]), (long long)x,
                                    c == 0   ? (long long)y
                                    : c == 1 ? 0LL
                                             : -1LL,
                                    c == 0 ? "array" : "constant", (long long)got,
                                    (long long)want[c]);
                        }
                    }
                }
            CHECK_EQ_INT(bad, 0);
        }
        free_all(3, a);
        kiln_module_free(m);
        kiln_ctx_free(b.ctx);
    }
    /* a constant divisor other than 0 and -1 stays plain C, and the module
       carries no division helpers */
    fb b = fb_new(kiln_ctx_new());
    tir_node A = param(&b, "A", KILN_INT32, I(&b, 16), NULL),
             C = param(&b, "C", KILN_INT32, I(&b, 16), NULL);
    tir_node i = tir_var(b.ctx, "i", KILN_INT64), vr = vec(&b, I(&b, 0), 8);
    tir_node k7 = tir_int(b.ctx, KILN_INT32, 7);
    tir_node s2[2] = {tir_store(C, i, tir_bin(TIR_DIV, ld(&b, A, i), k7)),
                      tir_store(C, vr, tir_bin(TIR_MOD, ld(&b, A, vr), tir_broadcast(k7, 8)))};
    tir_func f = func(&b, "cdiv", tir_seq2(loop(i, I(&b, 8), I(&b, 8), s2[0]), s2[1]));
    char *src = codegen_render_c(1, &f);
    CHECK(src != NULL);
    CHECK_CONTAINS(src, " / 7)");
    CHECK(src && !strstr(src, "kiln_idiv_") && !strstr(src, "kiln_imod_"));
    free(src);
    kiln_ctx_free(b.ctx);
}

typedef struct {
    kiln_tensor *a, *b;
    tir_op op;
} te_div_user;

static kiln_expr te_div_body(kiln_ctx *ctx, const kiln_expr *idx, void *user) {
    (void)ctx;
    const te_div_user *u = user;
    kiln_expr x = kiln_tensor_at(u->a, 1, idx), y = kiln_tensor_at(u->b, 1, idx);
    switch (u->op) {
    case TIR_DIV: return kiln_div(x, y);
    case TIR_MOD: return kiln_mod(x, y);
    case TIR_FLOORDIV: return kiln_floordiv(x, y);
    default: return kiln_floormod(x, y);
    }
}

/* The same rule through the public API: a TE kernel dividing int32 and
 * int64 arrays that hold zeros and MIN / -1, two of its four outputs
 * vectorized, built with kiln_build and called. */
static void test_te_int_division(void) {
    static const kiln_dtype dts[2] = {KILN_INT32, KILN_INT64};
    static const tir_op ops[4] = {TIR_DIV, TIR_MOD, TIR_FLOORDIV, TIR_FLOORMOD};
    for (int d = 0; d < 2; d++) {
        kiln_dtype dt = dts[d];
        int bits = (int)kiln_dtype_size(dt) * 8;
        int64_t min = bits == 64 ? INT64_MIN : INT32_MIN;
        kiln_ctx *ctx = kiln_ctx_new();
        kiln_expr n = kiln_var(ctx, "n");
        kiln_tensor *args[6];
        args[0] = kiln_placeholder(ctx, 1, &n, dt, "A");
        args[1] = kiln_placeholder(ctx, 1, &n, dt, "B");
        te_div_user u[4];
        for (int o = 0; o < 4; o++) {
            u[o] = (te_div_user){args[0], args[1], ops[o]};
            args[2 + o] = kiln_compute(ctx, 1, &n, te_div_body, &u[o], tir_op_name(ops[o]));
            CHECK(args[2 + o] != NULL);
        }
        kiln_schedule *s = kiln_schedule_create(ctx, 4, args + 2);
        for (int o = 0; o < 4; o += 2) {
            kiln_stage *st = kiln_schedule_stage(s, args[2 + o]);
            kiln_expr xo, xi;
            CHECK_EQ_INT(kiln_split(st, kiln_tensor_axis(args[2 + o], 0), 8, &xo, &xi), KILN_OK);
            CHECK_EQ_INT(kiln_vectorize(st, xi), KILN_OK);
        }
        kiln_module *m = kiln_build(s, 6, args, "te_idiv", NULL);
        CHECK(m != NULL);
        if (!m)
            fprintf(stderr, "build: %s\n", kiln_last_error());
        kiln_ndarray *a[6];
        for (int k = 0; k < 6; k++)
            a[k] = arr1(dt, 21);
        static const int64_t bv[7] = {0, -1, 3, -3, 0, -1, 2};
        for (int k = 0; k < 21; k++) {
            set_int(a[0], k, k % 3 == 0 ? min : k - 10);
            set_int(a[1], k, bv[k % 7]);
        }
        if (m && !call(m, "te_idiv", 6, a)) {
            int bad = 0;
            for (int o = 0; o < 4; o++)
                for (int k = 0; k < 21; k++) {
                    int64_t x = get_int(a[0], k), y = get_int(a[1], k);
                    bad += get_int(a[2 + o], k) != ref_intdiv(ops[o], x, y, bits);
                }
            CHECK_EQ_INT(bad, 0);
        }
        free_all(6, a);
        kiln_module_free(m);
        kiln_ctx_free(ctx);
    }
}

/* ---- the texts the generated C carries ------------------------------------------------ */

/* The file at KILN_SOURCE_DIR/rel (malloc'd), or NULL. */
static char *read_source(const char *rel) {
    const char *dir = getenv("KILN_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", rel);
    size_t len = 0;
    char *text = kiln_read_file(path, &len);
    CHECK(text != NULL);
    return text;
}

/* The lines strictly between the line holding `begin` and the one holding
 * `end` (malloc'd), or NULL. */
static char *between_lines(const char *text, const char *begin, const char *end) {
    const char *b = text ? strstr(text, begin) : NULL, *e = b ? strstr(b, end) : NULL;
    if (!b || !e)
        return NULL;
    b = strchr(b, '\n') + 1;
    while (e > b && e[-1] != '\n')
        e--;
    char *s = malloc((size_t)(e - b) + 1);
    memcpy(s, b, (size_t)(e - b));
    s[e - b] = 0;
    return s;
}

/* The module ABI and the division rule the generated C carries are the text
 * of their one definition in the headers the runtime and the interpreter
 * compile, and every rendered module carries the ABI. */
static void test_embedded_texts(void) {
    char *abi_h = read_source("src/runtime/module_abi.h");
    char *abi = between_lines(abi_h, "begin module ABI text", "end module ABI text");
    CHECK(abi != NULL);
    CHECK_EQ_STR(codegen_module_abi_text, abi);
    CHECK_CONTAINS(codegen_module_abi_text, "} kiln_module_api;");
    char *intdiv_h = read_source("src/base/intdiv.h");
    CHECK_EQ_STR(codegen_intdiv_text, intdiv_h);
    fb b = fb_new(kiln_ctx_new());
    tir_node A = param(&b, "A", KILN_FLOAT32, I(&b, 4), NULL);
    tir_func f = func(&b, "store1", tir_store(A, I(&b, 0), F(&b, 1)));
    char *parts[2] = {0};
    tir_func fs[2] = {f, f};
    fs[1].name = "store2";
    CHECK_EQ_INT(codegen_render_c_parts(2, fs, 2, parts), 2);
    for (int k = 0; k < 2; k++) {
        CHECK_CONTAINS(parts[k], codegen_module_abi_text);
        free(parts[k]);
    }
    free(abi_h);
    free(abi);
    free(intdiv_h);
    kiln_ctx_free(b.ctx);
}

TEST_MAIN(TEST(test_vadd_symbolic), TEST(test_parts), TEST(test_vector_tail_and_gather),
          TEST(test_parallel_allocate), TEST(test_allocation_failure),
          TEST(test_guard_select_logic), TEST(test_dtype_roundtrip), TEST(test_floordiv_floormod),
          TEST(test_intrinsics), TEST(test_promoted_accumulator), TEST(test_constants),
          TEST(test_errors), TEST(test_int_division_rule), TEST(test_te_int_division),
          TEST(test_embedded_texts))
