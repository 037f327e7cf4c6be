/* test_runtime_dynamic.c: plans with symbolic dims (dim expressions in
 * mod.json). The parser and evaluator of dim expressions on their own; then
 * a hand-written dynamic plan over three tensor-expression kernels built
 * with size variables into one module:
 *   x[n, 3] -> t = dup(x) [n*2, 3] -> y = t + w [n*2, 3] -> z = y * s [n*2, 3]
 * (s is a second input of shape [n*2], w a static weight, z reuses t's
 * storage), run at several n by kiln_model_run, kiln_model_run_alloc and
 * an executor, from two threads at once, against a reference computed
 * here; the errors of inconsistent inputs, unbound variables, malformed
 * expressions and per-run kernel checks; the same plan made static still
 * gets one arena. Writes KILN_TEST_TMP/dyn_model.tar (a package of it),
 * dyn_inputs.npz and dyn_inputs_bad.npz for the CLI test (cli/test_run.sh). */
#include <pthread.h>

#include "check.h"
#include "codegen/codegen.h"
#include "driver/driver_internal.h"
#include "runtime/dim_expr.h"
#include "runtime/graph_plan.h"
#include "te/te_internal.h"
#include "te_util.h"

/* ---- the dim expression parser and evaluator ----------------------------------- */

typedef struct {
    arena *ar;
    dim_vars vars;
} expr_env;

static const dim_expr *parse(expr_env *env, const char *text) {
    return dim_expr_parse(&env->vars, text, strlen(text));
}

/* Evaluate text with n = vals[0], k = vals[1] (interned first); -1 on an error. */
static int64_t eval(expr_env *env, const char *text, int64_t n, int64_t k) {
    const dim_expr *e = parse(env, text);
    int64_t vals[2] = {n, k}, out = -1;
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "  '%s': %s\n", text, kiln_last_error());
        return -1;
    }
    return dim_expr_eval(e, vals, &out) ? -1 : out;
}

static void expect_parse_error(expr_env *env, const char *text, const char *msg) {
    CHECK(parse(env, text) == NULL);
    CHECK_CONTAINS(kiln_last_error(), msg);
}

static void expect_eval_error(expr_env *env, const char *text, int64_t n, const char *msg) {
    CHECK_EQ_INT(eval(env, text, n, 0), -1);
    CHECK_CONTAINS(kiln_last_error(), msg);
}

static void test_dim_expr(void) {
    expr_env env = {arena_new(), {0}};
    env.vars.ar = env.ar;
    /* interning: n first, then k; a plain variable is marked */
    const dim_expr *n = parse(&env, "n");
    CHECK(n && n->var == 0 && env.vars.n == 1);
    const dim_expr *k2 = parse(&env, " k * 2 ");
    CHECK(k2 && k2->var == -1 && dim_expr_uses(k2, 1) && !dim_expr_uses(k2, 0));
    CHECK_EQ_STR(k2->text, " k * 2 ");
    CHECK_EQ_STR(env.vars.names[1], "k");
    CHECK(!dim_expr_is_const(k2) && dim_expr_is_const(parse(&env, "(3)")));
    /* precedence and grouping */
    CHECK_EQ_INT(eval(&env, "2+3*4", 0, 0), 14);
    CHECK_EQ_INT(eval(&env, "(2+3)*4", 0, 0), 20);
    CHECK_EQ_INT(eval(&env, "10-4-3", 0, 0), 3);
    CHECK_EQ_INT(eval(&env, "100//10//5", 0, 0), 2);
    CHECK_EQ_INT(eval(&env, "n*2+k%3", 5, 7), 11);
    CHECK_EQ_INT(eval(&env, "(n+1)//2", 6, 0), 3);
    CHECK_EQ_INT(eval(&env, "n - -2", 1, 0), 3);
    CHECK_EQ_INT(eval(&env, "min(n, 3) + max(n-10, 0)", 5, 0), 3);
    CHECK_EQ_INT(eval(&env, "max(min(n,k), 2*k)", 9, 4), 8);
    CHECK_EQ_INT(eval(&env, "007", 0, 0), 7);
    /* floor division and modulo of negatives (Python's rules) */
    CHECK_EQ_INT(eval(&env, "(0-7)//2 + 10", 0, 0), 6); /* -4 */
    CHECK_EQ_INT(eval(&env, "7//(0-2) + 10", 0, 0), 6); /* -4 */
    CHECK_EQ_INT(eval(&env, "(-7)//(-2)", 0, 0), 3);    /* 3 */
    CHECK_EQ_INT(eval(&env, "(n-7)%3", 0, 0), 2);       /* -7 % 3 */
    CHECK_EQ_INT(eval(&env, "7%(0-3) + 5", 0, 0), 3);   /* -2 */
    CHECK_EQ_INT(eval(&env, "-n//k + 10", 7, 2), 6);    /* unary minus binds tighter: (-7)//2 */
    CHECK_EQ_INT(eval(&env, "(0-9223372036854775807-1)%(0-1)", 0, 0), 0);
    CHECK_EQ_INT(eval(&env, "9223372036854775807", 0, 0), INT64_MAX);
    /* evaluation errors: never undefined behaviour */
    expect_eval_error(&env, "n*n", (int64_t)1 << 32, "'n*n' overflows int64");
    expect_eval_error(&env, "n+9223372036854775807", 1, "overflows int64");
    expect_eval_error(&env, "0-n-9223372036854775807", 2, "overflows int64");
    expect_eval_error(&env, "-(0-9223372036854775807-n)", 1, "overflows int64");
    expect_eval_error(&env, "(0-9223372036854775807-n)//(0-1)", 1, "overflows int64");
    expect_eval_error(&env, "n//(n-n)", 3, "'n//(n-n)' divides by zero");
    expect_eval_error(&env, "n%0", 3, "divides by zero");
    expect_eval_error(&env, "n-10", 5, "'n-10' is negative (-5)");
    /* malformed text */
    expect_parse_error(&env, "",
                       "dim expression '': expected a number, a name, '(' or '-' at the end");
    expect_parse_error(&env, "n*", "dim expression 'n*': expected a number");
    expect_parse_error(&env, "*n", "at byte 0 ('*')");
    expect_parse_error(&env, "n n", "expected an operator at byte 2 ('n')");
    expect_parse_error(&env, "2x", "expected an operator at byte 1 ('x')");
    expect_parse_error(&env, "1e3", "expected an operator");
    expect_parse_error(&env, "(n", "expected ')' at the end");
    expect_parse_error(&env, "n)", "expected an operator at byte 1 (')')");
    expect_parse_error(&env, "min(1)", "expected ','");
    expect_parse_error(&env, "max 1", "min and max take two arguments");
    expect_parse_error(&env, "min(1, 2, 3)", "expected ')'");
    expect_parse_error(&env, "n/2", "at byte 1 ('/')");
    expect_parse_error(&env, "n\t$", "at byte 2 ('$')");
    expect_parse_error(&env, "n\x01", "(0x01)");
    expect_parse_error(&env, "99999999999999999999", "the number does not fit int64");
    CHECK(dim_expr_parse(&env.vars, "n\0m", 3) == NULL); /* a NUL inside */
    CHECK_CONTAINS(kiln_last_error(), "no NUL");
    /* the length and the nesting are bounded */
    char text[600];
    memset(text, 'n', 257);
    text[257] = 0;
    expect_parse_error(&env, text, "at most 256 bytes");
    memset(text, 'n', 256);
    text[256] = 0;
    CHECK(parse(&env, text) != NULL); /* a long name is fine */
    for (int depth = 20; depth <= 40; depth += 20) {
        int len = 0;
        for (int i = 0; i < depth; i++)
            text[len++] = '(';
        text[len++] = 'n';
        for (int i = 0; i < depth; i++)
            text[len++] = ')';
        text[len] = 0;
        if (depth == 20)
            CHECK_EQ_INT(eval(&env, text, 4, 0), 4);
        else
            expect_parse_error(&env, text, "nested more than 32 levels deep");
        memset(text, '-', (size_t)depth);
        snprintf(text + depth, 8, "n+5");
        if (depth == 20)
            CHECK_EQ_INT(eval(&env, text, 4, 0), 9); /* - twenty times: n */
        else
            expect_parse_error(&env, text, "nested more than 32 levels deep");
    }
    for (int i = 0; i < 40; i++) /* min(1,min(1,...: 40 calls fit 256 bytes, but not 32 levels */
        memcpy(text + 6 * i, "min(1,", 6);
    text[6 * 40] = 0;
    expect_parse_error(&env, text, "nested more than 32 levels deep");
    /* many variables: the table grows and keeps them apart */
    for (int i = 0; i < 100; i++) {
        snprintf(text, sizeof text, "v%d + n", i);
        const dim_expr *e = parse(&env, text);
        CHECK(e && dim_expr_uses(e, env.vars.n - 1) && dim_expr_uses(e, 0));
    }
    CHECK_EQ_INT(env.vars.n, 2 + 100 + 1); /* n, k, the 256-byte name, v0..v99 */
    CHECK(parse(&env, "v57")->var == 3 + 57);
    arena_free(env.ar);
}

/* ---- the kernels: three TE functions with size variables, in one module ---------- */

typedef struct {
    kiln_tensor *a, *b;
    kiln_expr n;
} te_args;

/* dup: T[m, 3] = X[i mod n, j] + 1 (the plan gives m = n*2) */
static kiln_expr dup_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    te_args *p = u;
    kiln_expr idx[2] = {kiln_floormod(i[0], p->n), i[1]};
    return kiln_add(kiln_tensor_at(p->a, 2, idx), kiln_float(ctx, 1));
}

/* addw: Y[m, 3] = T[i, j] + W[j] */
static kiln_expr addw_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    te_args *p = u;
    (void)ctx;
    return kiln_add(kiln_tensor_at(p->a, 2, i), kiln_tensor_at(p->b, 1, &i[1]));
}

/* scale: Z[m, 3] = Y[i, j] * S[i] */
static kiln_expr scale_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    te_args *p = u;
    (void)ctx;
    return kiln_mul(kiln_tensor_at(p->a, 2, i), kiln_tensor_at(p->b, 1, i));
}

static tir_func lower_one(kiln_tensor *out, int nargs, kiln_tensor **args, const char *name,
                          int split) {
    kiln_schedule *s = kiln_schedule_create(out->ctx, 1, &out);
    if (split) { /* a split of a symbolic extent: a guarded tail */
        kiln_expr o, i;
        CHECK_EQ_INT(kiln_split(kiln_schedule_stage(s, out), kiln_tensor_axis(out, 0), 4, &o, &i),
                     KILN_OK);
    }
    tir_func *f = te_lower(s, nargs, args, name, 0);
    CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "lower %s: %s\n", name, kiln_last_error());
        return (tir_func){0};
    }
    return *f;
}

/* The module of dup, addw and scale, compiled once; its shared object is
 * copied to KILN_TEST_TMP/dyn_kernels.so for the package. */
static kiln_module *kernels(void) {
    static kiln_module *mod;
    static int tried;
    if (tried)
        return mod;
    tried = 1;
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n"), m = kiln_var(ctx, "m"), three = kiln_int(ctx, 3);
    kiln_expr xs[2] = {n, three}, ms[2] = {m, three};
    kiln_tensor *X = kiln_placeholder(ctx, 2, xs, KILN_FLOAT32, "X");
    te_args dup = {X, NULL, n};
    kiln_tensor *T = kiln_compute(ctx, 2, ms, dup_body, &dup, "T");
    kiln_tensor *T2 = kiln_placeholder(ctx, 2, ms, KILN_FLOAT32, "T");
    kiln_tensor *W = kiln_placeholder(ctx, 1, &three, KILN_FLOAT32, "W");
    te_args addw = {T2, W, n};
    kiln_tensor *Y = kiln_compute(ctx, 2, ms, addw_body, &addw, "Y");
    kiln_tensor *Y2 = kiln_placeholder(ctx, 2, ms, KILN_FLOAT32, "Y");
    kiln_tensor *S = kiln_placeholder(ctx, 1, &m, KILN_FLOAT32, "S");
    te_args scale = {Y2, S, n};
    kiln_tensor *Z = kiln_compute(ctx, 2, ms, scale_body, &scale, "Z");
    kiln_tensor *a1[2] = {X, T}, *a2[3] = {T2, W, Y}, *a3[3] = {Y2, S, Z};
    tir_func fs[3] = {lower_one(T, 2, a1, "dup", 0), lower_one(Y, 3, a2, "addw", 1),
                      lower_one(Z, 3, a3, "scale", 0)};
    kiln_target *host = driver_target(NULL); /* this machine, or $KILN_TARGET */
    char *src = host && fs[0].name && fs[1].name && fs[2].name ? codegen_render_c(3, fs) : NULL;
    char *so = NULL, *dir = NULL;
    kiln_status st = KILN_ERR_INVALID;
    if (src) {
        codegen_toolchain tc = codegen_target_toolchain(host);
        st = codegen_compile(src, "dyn", &tc, &so, &dir);
    }
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "build: %s\n", kiln_last_error());
    if (!st) {
        mod = kiln_module_load_owned(so, dir);
        CHECK(mod != NULL);
        CHECK_EQ_INT(kiln_module_save(mod, test_tmp_path("dyn_kernels.so")), KILN_OK);
    }
    free(src);
    free(so);
    free(dir);
    kiln_target_free(host);
    kiln_ctx_free(ctx);
    return mod;
}

/* ---- the plan ---------------------------------------------------------------------- */

static const char *k_plan =
    "{\"nodes\": [\n"
    "  {\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"
    "  {\"op\": \"null\", \"name\": \"w\", \"inputs\": []},\n"
    "  {\"op\": \"null\", \"name\": \"s\", \"inputs\": []},\n"
    "  {\"op\": \"tvm_op\", \"name\": \"t\", \"attrs\": {\"func_name\": \"dup\", "
    "\"num_inputs\": \"1\", \"num_outputs\": \"1\"}, \"inputs\": [[0, 0, 0]]},\n"
    "  {\"op\": \"tvm_op\", \"name\": \"y\", \"attrs\": {\"func_name\": \"addw\", "
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[3, 0, 0], [1, 0, 0]]},\n"
    "  {\"op\": \"tvm_op\", \"name\": \"z\", \"attrs\": {\"func_name\": \"scale\", "
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[4, 0, 0], [2, 0, 0]]}],\n"
    " \"arg_nodes\": [0, 1, 2],\n"
    " \"heads\": [[5, 0, 0], [4, 0, 0]],\n"
    " \"output_names\": [\"z\", \"y\"],\n"
    " \"param_names\": [\"w\"],\n"
    " \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6],\n"
    " \"attrs\": {\"shape\": [\"list_shape\", [[\"n\", 3], [3], [\"n*2\"], [\"n*2\", 3], "
    "[\"n*2\", 3], [\"n*2\", 3]]],\n"
    "   \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", \"float32\", "
    "\"float32\", \"float32\"]],\n"
    "   \"storage_id\": [\"list_int\", [0, 1, 2, 3, 4, 3]]}}\n";

static const float k_w[3] = {0.5f, -1.0f, 2.0f};

static kiln_npz *params(void) {
    kiln_npz *z = kiln_npz_new();
    int64_t three = 3;
    kiln_ndarray *w = kiln_ndarray_wrap((void *)k_w, KILN_FLOAT32, 1, &three, NULL, 0);
    kiln_npz_add(z, "w", w);
    kiln_ndarray_free(w);
    return z;
}

/* text with every `from` replaced by `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to) {
    kstr s;
    kstr_init(&s);
    const char *at;
    while ((at = strstr(text, from)) != NULL) {
        kstr_printf(&s, "%.*s%s", (int)(at - text), text, to);
        text = at + strlen(from);
    }
    kstr_puts(&s, text);
    return kstr_take(&s);
}

/* Inputs for n: x[n, 3] and s[2n], from a seed. */
static void make_inputs(int64_t n, uint64_t seed, kiln_ndarray **x, kiln_ndarray **s) {
    int64_t xs[2] = {n, 3}, ss = 2 * n;
    *x = kiln_ndarray_empty(KILN_FLOAT32, 2, xs);
    *s = kiln_ndarray_empty(KILN_FLOAT32, 1, &ss);
    tu_fill(*x, &seed);
    tu_fill(*s, &seed);
}

/* 1 if z and y are the plan's outputs for inputs x and s (computed here). */
static int outputs_ok(const kiln_ndarray *x, const kiln_ndarray *s, const kiln_ndarray *z,
                      const kiln_ndarray *y) {
    int64_t n = kiln_ndarray_dim(x, 0);
    if (!z || !y || kiln_ndarray_ndim(z) != 2 || kiln_ndarray_dim(z, 0) != 2 * n ||
        kiln_ndarray_dim(z, 1) != 3 || kiln_ndarray_dim(y, 0) != 2 * n)
        return 0;
    const float *px = kiln_ndarray_data(x), *ps = kiln_ndarray_data(s);
    const float *pz = kiln_ndarray_data(z), *py = kiln_ndarray_data(y);
    for (int64_t i = 0; i < 2 * n; i++)
        for (int j = 0; j < 3; j++) {
            float yy = px[(i % n) * 3 + j] + 1 + k_w[j];
            if (fabsf(py[i * 3 + j] - yy) > 1e-6f || fabsf(pz[i * 3 + j] - yy * ps[i]) > 1e-5f)
                return 0;
        }
    return 1;
}

/* Run m at n on inputs made from seed by kiln_model_run_alloc: 1 if it
 * succeeds with the right outputs (else the error is kiln_last_error). */
static int run_ok(kiln_model *m, int64_t n, uint64_t seed) {
    kiln_ndarray *x, *s, *out[2] = {NULL, NULL};
    make_inputs(n, seed, &x, &s);
    const kiln_ndarray *in[2] = {x, s};
    int ok = kiln_model_run_alloc(m, in, out, 0) == KILN_OK && outputs_ok(x, s, out[0], out[1]);
    kiln_ndarray_free(out[0]);
    kiln_ndarray_free(out[1]);
    kiln_ndarray_free(x);
    kiln_ndarray_free(s);
    return ok;
}

static kiln_model *load(const char *json, kiln_module *mod) {
    kiln_npz *z = params();
    kiln_model *m = kiln_model_create(json, strlen(json), mod, z);
    kiln_npz_free(z);
    return m;
}

/* ---- runs ------------------------------------------------------------------------- */

static void test_model_runs(void) {
    kiln_module *mod = kernels();
    kiln_model *m = mod ? load(k_plan, mod) : NULL;
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    CHECK(m->dynamic && m->vars.n == 1 && m->arena_bytes == 0);
    CHECK_EQ_INT(kiln_model_num_inputs(m), 2);
    CHECK_EQ_INT(kiln_model_input_dim(m, 0, 0), -1);
    CHECK_EQ_STR(kiln_model_input_dim_expr(m, 0, 0), "n");
    CHECK_EQ_INT(kiln_model_input_dim(m, 0, 1), 3);
    CHECK(kiln_model_input_dim_expr(m, 0, 1) == NULL);
    CHECK(kiln_model_input_dim_expr(m, 0, 2) == NULL);
    CHECK_EQ_STR(kiln_model_input_dim_expr(m, 1, 0), "n*2");
    CHECK_EQ_STR(kiln_model_output_dim_expr(m, 0, 0), "n*2");
    CHECK_EQ_INT(kiln_model_output_dim(m, 1, 1), 3);
    CHECK(kiln_model_output_dim_expr(m, 2, 0) == NULL);
    static const int64_t ns[] = {1, 5, 3, 5, 0, 8};
    for (size_t r = 0; r < sizeof ns / sizeof ns[0]; r++) {
        kiln_ndarray *x, *s, *out[2] = {NULL, NULL};
        make_inputs(ns[r], 7 + r, &x, &s);
        const kiln_ndarray *in[2] = {x, s};
        CHECK_EQ_INT(kiln_model_run_alloc(m, in, out, 0), KILN_OK);
        CHECK(outputs_ok(x, s, out[0], out[1]));
        /* kiln_model_run into arrays of this run's shapes */
        kiln_ndarray *z = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){2 * ns[r], 3});
        kiln_ndarray *y = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){2 * ns[r], 3});
        kiln_ndarray *outs[2] = {z, y};
        CHECK_EQ_INT(kiln_model_run(m, in, outs, 0), KILN_OK);
        CHECK(outputs_ok(x, s, z, y));
        kiln_ndarray_free(z);
        kiln_ndarray_free(y);
        for (int i = 0; i < 2; i++)
            kiln_ndarray_free(out[i]);
        kiln_ndarray_free(x);
        kiln_ndarray_free(s);
    }
    /* bad inputs and outputs name the port, the dim, the variable and the values */
    kiln_ndarray *x, *s, *s7, *out[2] = {NULL, NULL};
    make_inputs(5, 1, &x, &s);
    s7 = kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){7});
    const kiln_ndarray *bad[2] = {x, s7};
    CHECK_EQ_INT(kiln_model_run_alloc(m, bad, out, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "model_run_alloc: input 's' dim 0 is 7, but n*2 = 10 "
                                      "(n = 5, from input 'x' dim 0)");
    CHECK(out[0] == NULL && out[1] == NULL);
    kiln_ndarray *x4 = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){5, 4});
    const kiln_ndarray *bad2[2] = {x4, s};
    CHECK_EQ_INT(kiln_model_run_alloc(m, bad2, out, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(),
                   "model_run_alloc: input 'x': expected float32[n, 3], got float32[5, 4]");
    const kiln_ndarray *in[2] = {x, s};
    kiln_ndarray *z8 = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){8, 3});
    kiln_ndarray *outs[2] = {NULL, z8};
    CHECK_EQ_INT(kiln_model_run(m, in, outs, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "model_run: output 'y': expected float32[10, 3] in this run "
                                      "(float32[n*2, 3]), got float32[8, 3]");
    kiln_ndarray *z4 = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){10, 4});
    outs[1] = z4;
    CHECK_EQ_INT(kiln_model_run(m, in, outs, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "model_run: output 'y': expected float32[n*2, 3], got");
    CHECK_EQ_INT(kiln_model_run_alloc(m, in, NULL, 0), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_model_run_alloc(m, in, out, 2), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "unknown flags 0x2");
    CHECK_EQ_INT(kiln_model_run_alloc(m, in, out, KILN_RUN_CHECK_DIV_ZERO), KILN_OK);
    CHECK(outputs_ok(x, s, out[0], out[1]));
    kiln_ndarray_free(out[0]);
    kiln_ndarray_free(out[1]);
    kiln_ndarray_free(z8);
    kiln_ndarray_free(z4);
    kiln_ndarray_free(x4);
    kiln_ndarray_free(s7);
    kiln_ndarray_free(x);
    kiln_ndarray_free(s);
    kiln_model_free(m);
}

/* An executor: inputs set at one size then another; buffers grow, never
 * shrink, and a run at the same sizes moves nothing. */
static void test_executor(void) {
    kiln_module *mod = kernels();
    kiln_model *m = mod ? load(k_plan, mod) : NULL;
    kiln_executor *e = m ? kiln_executor_create_from_model(m) : NULL;
    kiln_model_free(m);
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK_EQ_STR(kiln_executor_input_dim_expr(e, 1, 0), "n*2");
    CHECK(kiln_executor_input_dim_expr(e, 0, 1) == NULL);
    CHECK(kiln_executor_output(e, 0) == NULL); /* no run yet */
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "executor_run: input 'x' (float32[n, 3]) has symbolic dims "
                                      "and no value yet");
    kiln_ndarray *x, *s;
    const void *z_data = NULL;
    static const int64_t ns[] = {5, 5, 3, 7, 7, 2};
    for (size_t r = 0; r < sizeof ns / sizeof ns[0]; r++) {
        make_inputs(ns[r], 100 + r, &x, &s);
        CHECK_EQ_INT(kiln_executor_set_input(e, "x", x), KILN_OK);
        CHECK_EQ_INT(kiln_executor_set_input(e, "s", s), KILN_OK);
        CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
        const kiln_ndarray *z = kiln_executor_output(e, 0), *y = kiln_executor_output(e, 1);
        CHECK(outputs_ok(x, s, z, y));
        /* z's buffer: the same at 5, 5, 3 (never shrunk); at 7 it grows, then stays */
        const void *zd = z ? kiln_ndarray_data(z) : NULL;
        if (r == 1 || r == 2 || r == 4 || r == 5)
            CHECK(zd == z_data);
        z_data = zd;
        double t[3] = {-1, -1, -1};
        CHECK_EQ_INT(kiln_executor_run_profiled(e, t), KILN_OK);
        CHECK(t[0] >= 0 && t[1] >= 0 && t[2] >= 0);
        kiln_ndarray_free(x);
        kiln_ndarray_free(s);
    }
    /* inputs of inconsistent sizes fail the run, naming both */
    make_inputs(4, 9, &x, &s);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", x), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "executor_run: input 's' dim 0 is 4, but n*2 = 8 (n = 4, "
                                      "from input 'x' dim 0)");
    CHECK_EQ_INT(kiln_executor_set_input(e, "s", s), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
    CHECK(outputs_ok(x, s, kiln_executor_output(e, 0), kiln_executor_output(e, 1)));
    kiln_ndarray *x43 = kiln_ndarray_empty(KILN_FLOAT32, 2, (int64_t[]){4, 4});
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", x43), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "set_input 'x': expected float32[n, 3], got float32[4, 4]");
    kiln_ndarray_free(x43);
    /* growing an input's buffer invalidates the outputs until the next run */
    kiln_ndarray *xb, *sb;
    make_inputs(40, 3, &xb, &sb);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", xb), KILN_OK);
    CHECK(kiln_executor_output(e, 0) == NULL);
    CHECK_EQ_INT(kiln_executor_set_input(e, "s", sb), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
    CHECK(outputs_ok(xb, sb, kiln_executor_output(e, 0), kiln_executor_output(e, 1)));
    kiln_ndarray_free(xb);
    kiln_ndarray_free(sb);
    kiln_ndarray_free(x);
    kiln_ndarray_free(s);
    kiln_executor_free(e);
}

/* ---- two threads, one model, different sizes ----------------------------------------- */

typedef struct {
    kiln_model *m;
    int64_t n;
    int bad;
} thread_job;

static void *run_many(void *arg) {
    thread_job *j = arg;
    for (int r = 0; r < 40; r++) /* sizes of its own, changing */
        j->bad += !run_ok(j->m, j->n + r % 3, (uint64_t)(j->n * 1000 + r));
    return NULL;
}

static void test_threads(void) {
    kiln_module *mod = kernels();
    kiln_model *m = mod ? load(k_plan, mod) : NULL;
    CHECK(m != NULL);
    if (!m)
        return;
    thread_job jobs[2] = {{m, 2, 0}, {m, 9, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, run_many, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ_INT(jobs[0].bad, 0);
    CHECK_EQ_INT(jobs[1].bad, 0);
    kiln_model_free(m);
}

/* ---- plans refused at load, and runs refused per binding ------------------------------ */

typedef struct {
    const char *from, *to, *msg;
} edit_case;

static void test_load_errors(void) {
    static const edit_case cases[] = {
        {"[\"n*2\", 3], [\"n*2\", 3], [\"n*2\", 3]", "[\"m*2\", 3], [\"m*2\", 3], [\"m*2\", 3]",
         "mod.json: dim variable 'm' (entry 3 dim 0: 'm*2') is bound by no input: a variable "
         "must be a dim of its own of some input"},
        {"[[\"n\", 3]", "[[\"n+0\", 3]", "dim variable 'n' (entry 0 dim 0: 'n+0') is bound by no"},
        {"[[\"n\", 3]", "[[\"n*\", 3]",
         "mod.json: entry 0: dim 0: dim expression 'n*': expected a number, a name, '(' or '-' "
         "at the end"},
        {"[[\"n\", 3]", "[[\"\", 3]", "entry 0: dim 0: dim expression ''"},
        {"[[\"n\", 3]", "[[\"n\\u0000\", 3]", "entry 0: dim 0: a dim expression has at most"},
        {"[[\"n\", 3]", "[[\"n\", \"2-5\"]", "mod.json: entry 0: dim 1: '2-5' is negative (-3)"},
        {"[[\"n\", 3]", "[[\"n\", \"1//0\"]", "entry 0: dim 1: '1//0' divides by zero"},
        {"[[\"n\", 3]", "[[\"n\", true]",
         "entry 0: dim 1 is not a non-negative integer or a dim expression"},
        {"[3], [\"n*2\"]", "[\"n\"], [\"n*2\"]",
         "node 1 'w': a parameter's shape must be static, but dim 0 is 'n' (mod.json shape "
         "float32[n])"},
        {"[3], [\"n*2\"]", "[4], [\"n*2\"]",
         "node 1 'w': mod.params has float32[3], but the graph says float32[4]"},
        /* kernels are checked at load as far as the constant dims go */
        {"[\"n*2\", 3], [\"n*2\", 3]]]", "[\"n*2\", 3], [\"n*2\", 4]]]",
         "mod.json: node 5 'z': function 'scale' argument 2 (output 0) is float32[?, 3], but the "
         "entry is float32[n*2, 4]"},
        /* storage sharing is checked as for a static plan */
        {"[0, 1, 2, 3, 4, 3]", "[0, 1, 2, 3, 3, 4]",
         "node 4 'y': its output shares storage_id 3 with an output of node 3 't'"},
    };
    kiln_module *mod = kernels();
    if (!mod)
        return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = replace_all(k_plan, cases[i].from, cases[i].to);
        CHECK(strcmp(j, k_plan) != 0);
        kiln_npz *z = params();
        if (strstr(cases[i].msg, "mod.params has"))
            CHECK_EQ_INT(kiln_npz_count(z), 1); /* w stays float32[3] */
        kiln_model *m = kiln_model_create(j, strlen(j), mod, z);
        CHECK(m == NULL);
        CHECK_CONTAINS(kiln_last_error(), cases[i].msg);
        if (m)
            fprintf(stderr, "  case %zu was accepted\n", i);
        kiln_model_free(m);
        kiln_npz_free(z);
        free(j);
    }
    /* a string without variables is a constant dim */
    char *j = replace_all(k_plan, "[[\"n\", 3]", "[[\"n\", \"(1+2)\"]");
    kiln_model *m = load(j, mod);
    CHECK(m != NULL);
    CHECK_EQ_INT(kiln_model_input_dim(m, 0, 1), 3);
    CHECK(kiln_model_input_dim_expr(m, 0, 1) == NULL);
    kiln_model_free(m);
    free(j);
}

/* The plan with `from` replaced by `to` run at n, with s of s_len floats,
 * fails with `want` and `msg`; then the model runs at good_n (a failed run
 * leaves its run state usable). */
typedef struct {
    const char *from, *to;
    int64_t n, s_len;
    kiln_status want;
    const char *msg;
    int64_t good_n;
} run_case;

static void expect_run_error(const run_case *c) {
    char *json = replace_all(k_plan, c->from, c->to);
    kiln_model *m = load(json, kernels());
    free(json);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    kiln_ndarray *x, *s, *out[2];
    make_inputs(c->n, 5, &x, &s);
    kiln_ndarray *s2 = kiln_ndarray_empty(KILN_FLOAT32, 1, &c->s_len);
    const kiln_ndarray *in[2] = {x, s2};
    CHECK_EQ_INT(kiln_model_run_alloc(m, in, out, 0), c->want);
    CHECK_CONTAINS(kiln_last_error(), c->msg);
    kiln_ndarray_free(x);
    kiln_ndarray_free(s);
    kiln_ndarray_free(s2);
    CHECK(run_ok(m, c->good_n, 6));
    kiln_model_free(m);
}

#define TZY "[\"n*2\", 3], [\"n*2\", 3], [\"n*2\", 3]" /* the shapes of t, y and z */

static void test_run_errors(void) {
    static const run_case cases[] = {
        /* a variable bound by s alone: the kernel 'scale' checks it against y per run */
        {"[3], [\"n*2\"]", "[3], [\"k\"]", 3, 5, KILN_ERR_INVALID,
         "model_run_alloc: node 5 'z': function 'scale' argument 1 (input 1) is float32[?], but "
         "the entry is float32[k] (float32[5] in this run)",
         3},
        /* a kernel's size met by a static dim and a symbolic one: checked per run */
        {"[3], [\"n*2\"]", "[3], [6]", 4, 6, KILN_ERR_INVALID,
         "model_run_alloc: node 5 'z': function 'scale' argument 1 (input 1) is float32[?], but "
         "the entry is float32[6]",
         3},
        /* an entry past 1 TiB, and an expression that overflows, name the entry */
        {TZY, "[\"n*2*(n//3*1099511627776+1)\", 3], [\"n*2\", 3], [\"n*2\", 3]", 3, 6,
         KILN_ERR_INVALID,
         "model_run_alloc: entry 3 (output 0 of node 3 't') is "
         "float32[n*2*(n//3*1099511627776+1), 3], float32[6597069766662, 3] in this run: more "
         "than 1 TiB",
         2},
        {TZY, "[\"n*2*(n//3*4611686018427387904+1)\", 3], [\"n*2\", 3], [\"n*2\", 3]", 6, 12,
         KILN_ERR_INVALID,
         "model_run_alloc: entry 3 (output 0 of node 3 't') dim 0: "
         "'n*2*(n//3*4611686018427387904+1)' overflows int64 (n = 6, from input 'x' dim 0)",
         2},
        {"[3], [\"n*2\"]", "[3], [\"n*2//(n-3)\"]", 3, 6, KILN_ERR_INVALID,
         "model_run_alloc: input 's' dim 0: 'n*2//(n-3)' divides by zero (n = 3, from input 'x' "
         "dim 0)",
         4},
        /* a run state's buffers are bounded when a test asks (below) */
        {TZY, TZY, 200, 400, KILN_ERR_NOMEM, "model_run_alloc: cannot allocate", 2},
    };
    if (!kernels())
        return;
    int64_t limit = graph_run_storage_limit;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        graph_run_storage_limit = cases[i].want == KILN_ERR_NOMEM ? 4096 : limit;
        expect_run_error(&cases[i]);
    }
    graph_run_storage_limit = limit;
}

/* Two inputs bound to one variable, and a kernel's constant dim meeting a
 * symbolic one: kernels of a module described by its metadata. */
static int32_t add2(void *const *a, const int64_t *v) {
    const float *x = a[0], *y = a[1];
    float *z = a[2];
    for (int64_t i = 0; i < v[0] * 3; i++)
        z[i] = x[i] + y[i];
    return 0;
}

static int32_t copy16(void *const *a, const int64_t *v) {
    (void)v;
    memcpy(a[1], a[0], 16 * sizeof(float));
    return 0;
}

static kiln_kernel_fn lookup(void *user, const char *name) {
    (void)user;
    if (strcmp(name, "f") == 0) /* test_bad_binders: never run */
        return copy16;
    return strcmp(name, "add2") == 0 ? add2 : strcmp(name, "copy16") == 0 ? copy16 : NULL;
}

/* c = add2(a, b), a and b both [n, 3] */
static const char *k_two_inputs =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"a\", \"inputs\": []},\n"
    " {\"op\": \"null\", \"name\": \"b\", \"inputs\": []},\n"
    " {\"op\": \"tvm_op\", \"name\": \"c\", \"attrs\": {\"func_name\": \"add2\", "
    "\"num_inputs\": 2, \"num_outputs\": 1}, \"inputs\": [[0, 0], [1, 0]]}],\n"
    " \"arg_nodes\": [0, 1], \"heads\": [[2, 0]], \"node_row_ptr\": [0, 1, 2, 3],\n"
    " \"attrs\": {\"shape\": [\"list_shape\", [[\"n\", 3], [\"n\", 3], [\"n\", 3]]],\n"
    "  \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\"]],\n"
    "  \"storage_id\": [\"list_int\", [0, 1, 2]]}}";

/* y = copy16(x), x and y [n]: the kernel wants 16 */
static const char *k_fixed =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"
    " {\"op\": \"tvm_op\", \"name\": \"y\", \"attrs\": {\"func_name\": \"copy16\", "
    "\"num_inputs\": 1, \"num_outputs\": 1}, \"inputs\": [[0, 0]]}],\n"
    " \"arg_nodes\": [0], \"heads\": [[1, 0]], \"node_row_ptr\": [0, 1, 2],\n"
    " \"attrs\": {\"shape\": [\"list_shape\", [[\"n\"], [\"n\"]]],\n"
    "  \"dltype\": [\"list_str\", [\"float32\", \"float32\"]],\n"
    "  \"storage_id\": [\"list_int\", [0, 1]]}}";

/* Run m on one input of n floats, or two of [n, 3] and [n2, 3]. */
static kiln_status run_floats(kiln_model *m, int64_t n, int64_t n2, kiln_ndarray **out) {
    int two = kiln_model_num_inputs(m) == 2;
    int64_t s1[2] = {n, 3}, s2[2] = {n2, 3};
    kiln_ndarray *in[2] = {kiln_ndarray_empty(KILN_FLOAT32, two ? 2 : 1, s1),
                           two ? kiln_ndarray_empty(KILN_FLOAT32, 2, s2) : NULL};
    uint64_t seed = 3;
    for (int i = 0; i < 1 + two; i++)
        tu_fill(in[i], &seed);
    kiln_status st = kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0);
    const float *a = kiln_ndarray_data(in[0]), *b = two ? kiln_ndarray_data(in[1]) : NULL;
    const float *c = st ? NULL : kiln_ndarray_data(out[0]);
    for (int64_t i = 0; c && i < kiln_ndarray_numel(in[0]); i++)
        CHECK_NEAR(c[i], two ? a[i] + b[i] : a[i], 0);
    kiln_ndarray_free(in[0]);
    kiln_ndarray_free(in[1]);
    kiln_ndarray_free(out[0]);
    return st;
}

static void test_meta_kernels(void) {
    kiln_module *mod = kiln_module_from_meta(
        "dyn-meta",
        "kiln-module 1\nfunc add2 3 1\nvar n\narg A float32 2 $0 3\narg B float32 2 $0 3\n"
        "arg C float32 2 $0 3\nfunc copy16 2 0\narg X float32 1 16\narg Y float32 1 16\nend\n",
        lookup, NULL);
    CHECK(mod != NULL);
    if (!mod)
        return;
    kiln_ndarray *out[1];
    /* two inputs bound to one variable must agree */
    kiln_model *m = kiln_model_create(k_two_inputs, strlen(k_two_inputs), mod, NULL);
    CHECK(m != NULL);
    CHECK_EQ_INT(run_floats(m, 4, 4, out), KILN_OK);
    CHECK_EQ_INT(run_floats(m, 4, 5, out), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(),
                   "model_run_alloc: input 'b' dim 0 is 5, but n = 4 (from input 'a' dim 0)");
    CHECK_EQ_INT(run_floats(m, 7, 7, out), KILN_OK);
    kiln_model_free(m);
    /* a kernel's fixed dim meets a symbolic one: checked per run */
    m = kiln_model_create(k_fixed, strlen(k_fixed), mod, NULL);
    CHECK(m != NULL);
    CHECK_EQ_INT(run_floats(m, 16, 0, out), KILN_OK);
    CHECK_EQ_INT(run_floats(m, 8, 0, out), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(),
                   "model_run_alloc: node 1 'y': function 'copy16' argument 0 (input 0) is "
                   "float32[16], but the entry is float32[n] (float32[8] in this run)");
    CHECK_EQ_INT(run_floats(m, 16, 0, out), KILN_OK);
    kiln_model_free(m);
    kiln_module_free(mod);
}

/* ---- the same plan, static, and as a package ------------------------------------------- */

static void test_static_and_package(void) {
    kiln_module *mod = kernels();
    if (!mod)
        return;
    char *j1 = replace_all(k_plan, "\"n*2\"", "8");
    char *j = replace_all(j1, "\"n\"", "4");
    kiln_model *m = load(j, mod);
    CHECK(m != NULL);
    if (m) {
        /* one arena: x 48 -> 64, s 32 -> 64, t and z 96 -> 128, y 96 -> 128 bytes */
        CHECK(!m->dynamic && m->vars.n == 0 && m->min_bytes == NULL);
        CHECK_EQ_INT(m->arena_bytes, 64 + 64 + 128 + 128);
        CHECK(run_ok(m, 4, 11));
    }
    kiln_model_free(m);
    free(j1);
    free(j);
    /* the dynamic plan as a package: loaded, run and inspected */
    const char *tar = test_tmp_path("dyn_model.tar");
    kiln_npz *z = params();
    CHECK_EQ_INT(
        kiln_package_write(tar, k_plan, strlen(k_plan), test_tmp_path("dyn_kernels.so"), z),
        KILN_OK);
    kiln_npz_free(z);
    m = kiln_model_load(tar);
    CHECK(m != NULL);
    CHECK(m && run_ok(m, 6, 12) && run_ok(m, 1, 13));
    kiln_model_free(m);
    /* inputs for the CLI test (tests/cli/test_run.sh): n = 3, and s too short */
    kiln_ndarray *x, *s, *s5 = kiln_ndarray_empty(KILN_FLOAT32, 1, (int64_t[]){5});
    make_inputs(3, 14, &x, &s);
    kiln_npz *in = kiln_npz_new(), *bad = kiln_npz_new();
    kiln_npz_add(in, "x", x);
    kiln_npz_add(in, "s", s);
    kiln_npz_add(bad, "x", x);
    kiln_npz_add(bad, "s", s5);
    CHECK_EQ_INT(kiln_npz_save(in, test_tmp_path("dyn_inputs.npz"), 0), KILN_OK);
    CHECK_EQ_INT(kiln_npz_save(bad, test_tmp_path("dyn_inputs_bad.npz"), 0), KILN_OK);
    kiln_npz_free(in);
    kiln_npz_free(bad);
    kiln_ndarray_free(x);
    kiln_ndarray_free(s);
    kiln_ndarray_free(s5);
    kiln_package_info *info = kiln_package_inspect(tar);
    CHECK(info != NULL);
    if (info) {
        const kiln_tensor_desc *xd = kiln_package_info_input(info, 0);
        const kiln_tensor_desc *sd = kiln_package_info_input(info, 1);
        const kiln_tensor_desc *zd = kiln_package_info_output(info, 0);
        CHECK(xd->shape[0] == -1 && xd->shape[1] == 3 && xd->dim_expr[1] == NULL);
        CHECK_EQ_STR(xd->dim_expr[0], "n");
        CHECK_EQ_STR(sd->dim_expr[0], "n*2");
        CHECK_EQ_STR(zd->dim_expr[0], "n*2");
        CHECK_EQ_INT(kiln_package_info_num_inputs(info), 2);
    }
    kiln_package_info_free(info);
}

/* A plan's binders are checked at load. */
static void test_bad_binders(void) {
    kiln_module *mod = kiln_module_from_meta(
        "binders", "kiln-module 1\nfunc f 2 0\narg X int64 1 2\narg Y int64 1 2\nend\n", lookup,
        NULL);
    CHECK(mod != NULL);
    if (!mod)
        return;
    static const char *const head =
        "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
        " {\"op\": \"tvm_op\", \"name\": \"b\", \"attrs\": {\"func_name\": \"f\", "
        "\"num_inputs\": \"1\", \"num_outputs\": \"1\", ";
    static const char *const tail =
        "}, \"inputs\": [[0, 0, 0]]}], \"arg_nodes\": [0], \"heads\": [[1, 0, 0]], "
        "\"node_row_ptr\": [0, 1, 2], \"attrs\": {\"dltype\": [\"list_str\", [\"int64\", "
        "\"%s\"]], \"storage_id\": [\"list_int\", [0, 1]], \"shape\": [\"list_shape\", [[%s], "
        "[%s]]]}}";
    struct {
        const char *binds, *dtype, *xshape, *oshape, *want;
    } cases[] = {
        {"\"binds\": []", "int64", "2", "2", "attrs.binds must be a list"},
        {"\"binds\": [\"a\", -3]", "int64", "2", "2",
         "attrs.binds[1] must be a variable name or a size"},
        {"\"binds\": [\"a\", 2.5]", "int64", "2", "2",
         "attrs.binds[1] must be a variable name or a size"},
        {"\"binds\": [\"a+1\"]", "int64", "1", "1", "attrs.binds[0] must be a variable"},
        {"\"binds\": [\"a\"]", "float32", "1", "1", "a binder's output must be one int64[1]"},
        {"\"binds\": [\"a\", \"b\"]", "int64", "3", "3", "int64[2]"},
        {"\"binds\": [\"a\", \"a\"]", "int64", "2", "2", "binds dim variable 'a' twice"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char fmt[2048], json[2048];
        snprintf(fmt, sizeof fmt, "%s%s%s", head, cases[k].binds, tail);
        snprintf(json, sizeof json, fmt, cases[k].dtype, cases[k].xshape, cases[k].oshape);
        kiln_model *m = kiln_model_create(json, strlen(json), mod, NULL);
        CHECK(m == NULL);
        kiln_model_free(m);
        CHECK_CONTAINS(kiln_last_error(), cases[k].want);
    }
    kiln_module_free(mod);
}

TEST_MAIN(TEST(test_dim_expr), TEST(test_model_runs), TEST(test_executor), TEST(test_threads),
          TEST(test_load_errors), TEST(test_run_errors), TEST(test_meta_kernels),
          TEST(test_bad_binders), TEST(test_static_and_package))
