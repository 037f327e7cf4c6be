/* test_tir_printer.c: the text form of loop-IR expressions, statements and
 * functions, compared as exact strings. */
#include <math.h>

#include "check.h"
#include "tir/tir.h"

static kiln_ctx *ctx;

/* printed expression (a rotating static buffer, so no frees in tests) */
static const char *P(tir_node e) {
    static char bufs[8][4096];
    static int k;
    char *b = bufs[k++ & 7];
    kiln_expr_print(e, b, sizeof bufs[0]);
    return b;
}

static const char *S(tir_node st, int indent) {
    static char bufs[4][8192];
    static int k;
    char *b = bufs[k++ & 3];
    kstr s;
    kstr_init(&s);
    tir_print_stmt(&s, st, indent);
    snprintf(b, sizeof bufs[0], "%s", s.buf ? s.buf : "");
    kstr_free(&s);
    return b;
}

static tir_node I(int64_t v) {
    return tir_i64(ctx, v);
}
static tir_node F(double v) {
    return tir_floatc(ctx, KILN_FLOAT32, v);
}
static tir_node V(const char *name) {
    return tir_var(ctx, name, KILN_INT64);
}
static tir_node B(tir_op op, tir_node a, tir_node b) {
    return tir_bin(op, a, b);
}

static void test_constants(void) {
    CHECK_EQ_STR(P(I(42)), "42");
    CHECK_EQ_STR(P(I(-7)), "-7");
    CHECK_EQ_STR(P(tir_int(ctx, KILN_INT8, -128)), "-128");
    CHECK_EQ_STR(P(tir_int(ctx, KILN_UINT8, 255)), "255");
    CHECK_EQ_STR(P(tir_int(ctx, KILN_UINT64, -1)), "18446744073709551615");
    CHECK_EQ_STR(P(tir_int(ctx, KILN_BOOL, 1)), "True");
    CHECK_EQ_STR(P(tir_int(ctx, KILN_BOOL, 0)), "False");
    CHECK_EQ_STR(P(F(1)), "1.0f");
    CHECK_EQ_STR(P(F(0.5)), "0.5f");
    CHECK_EQ_STR(P(F(-2)), "-2.0f");
    CHECK_EQ_STR(P(F(1e20)), "1e+20f");
    CHECK_EQ_STR(P(F((double)(float)0.1)), "0.100000001f");
    CHECK_EQ_STR(P(F(100000000.0)), "100000000.0f");
    CHECK_EQ_STR(P(F(INFINITY)), "inff");
    CHECK_EQ_STR(P(F(-INFINITY)), "-inff");
    CHECK_EQ_STR(P(tir_floatc(ctx, KILN_FLOAT16, 1.5)), "float16(1.5)");
    CHECK_EQ_STR(P(tir_floatc(ctx, KILN_FLOAT64, 0.1)), "float64(0.1)");
    CHECK_EQ_STR(P(tir_floatc(ctx, KILN_FLOAT64, 1.0 / 3)), "float64(0.3333333333333333)");
}

static void test_precedence(void) {
    tir_node a = V("a"), b = V("b"), c = V("c"), d = V("d");
    CHECK_EQ_STR(P(B(TIR_ADD, B(TIR_ADD, a, b), c)), "a + b + c");
    CHECK_EQ_STR(P(B(TIR_ADD, a, B(TIR_ADD, b, c))), "a + (b + c)");
    CHECK_EQ_STR(P(B(TIR_SUB, a, B(TIR_SUB, b, c))), "a - (b - c)");
    CHECK_EQ_STR(P(B(TIR_MUL, B(TIR_ADD, a, b), c)), "(a + b)*c");
    CHECK_EQ_STR(P(B(TIR_ADD, B(TIR_MUL, a, I(64)), b)), "a*64 + b");
    CHECK_EQ_STR(P(B(TIR_MUL, a, I(-1))), "a*-1");
    CHECK_EQ_STR(P(B(TIR_DIV, a, B(TIR_MUL, b, c))), "a / (b*c)");
    CHECK_EQ_STR(P(B(TIR_MOD, B(TIR_MUL, a, b), c)), "a*b % c");
    CHECK_EQ_STR(P(B(TIR_LT, B(TIR_ADD, a, b), c)), "a + b < c");
    tir_node lt = B(TIR_LT, a, b), ge = B(TIR_GE, c, d);
    CHECK_EQ_STR(P(B(TIR_AND, lt, ge)), "a < b && c >= d");
    CHECK_EQ_STR(P(B(TIR_AND, B(TIR_OR, lt, ge), lt)), "(a < b || c >= d) && a < b");
    CHECK_EQ_STR(P(B(TIR_OR, lt, B(TIR_AND, ge, lt))), "a < b || c >= d && a < b");
    CHECK_EQ_STR(P(B(TIR_EQ, lt, ge)), "(a < b) == (c >= d)");
    CHECK_EQ_STR(P(tir_not(lt)), "!(a < b)");
    CHECK_EQ_STR(P(tir_not(tir_not(lt))), "!!(a < b)");
    CHECK_EQ_STR(P(B(TIR_NE, a, b)), "a != b");
    CHECK_EQ_STR(P(B(TIR_LE, a, b)), "a <= b");
    CHECK_EQ_STR(P(B(TIR_GT, a, b)), "a > b");
}

static void test_calls(void) {
    tir_node a = V("a"), b = V("b");
    CHECK_EQ_STR(P(B(TIR_FLOORDIV, B(TIR_ADD, a, b), I(4))), "floordiv(a + b, 4)");
    CHECK_EQ_STR(P(B(TIR_FLOORMOD, a, I(4))), "floormod(a, 4)");
    CHECK_EQ_STR(P(B(TIR_MIN, a, b)), "min(a, b)");
    CHECK_EQ_STR(P(B(TIR_MAX, a, B(TIR_MUL, b, I(2)))), "max(a, b*2)");
    CHECK_EQ_STR(P(tir_select(B(TIR_LT, a, b), a, b)), "select(a < b, a, b)");
    CHECK_EQ_STR(P(tir_cast(KILN_FLOAT32, a)), "float32(a)");
    tir_node x = tir_var(ctx, "x", KILN_FLOAT32);
    CHECK_EQ_STR(P(tir_call(ctx, TIR_EXP, KILN_FLOAT32, 1, 1, &x)), "exp(x)");
    tir_node args[2] = {x, F(2)};
    CHECK_EQ_STR(P(tir_call(ctx, TIR_POW, KILN_FLOAT32, 1, 2, args)), "pow(x, 2.0f)");
    /* the unnamed var prints by id */
    tir_node anon = tir_make(ctx, TIR_VAR, KILN_INT64, 1, 0, 999, 0, NULL, NULL, 0, NULL);
    CHECK_EQ_STR(P(anon), "v999");
}

static void test_tensors_and_vectors(void) {
    tir_node i = V("i"), j = V("j"), k = V("k"), l = V("l");
    tir_node idx[2] = {i, B(TIR_ADD, j, I(1))};
    tir_node rd = tir_make(ctx, TIR_TENSOR_READ, KILN_FLOAT32, 1, 0, 0, 0, "A", NULL, 2, idx);
    CHECK_EQ_STR(P(rd), "A[i, j + 1]");
    tir_node rs[7] = {rd, k, I(0), I(16), l, I(0), I(8)};
    tir_node red = tir_make(ctx, TIR_REDUCE, KILN_FLOAT32, 1, TIR_RSUM, 0, 0, NULL, NULL, 7, rs);
    CHECK_EQ_STR(P(red), "sum(A[i, j + 1], axis=[k, l])");
    tir_node rm = tir_make(ctx, TIR_REDUCE, KILN_FLOAT32, 1, TIR_RMAX, 0, 0, NULL, NULL, 4, rs);
    CHECK_EQ_STR(P(rm), "max(A[i, j + 1], axis=[k])");
    tir_node A = tir_handle(ctx, "A", KILN_FLOAT32);
    CHECK_EQ_STR(P(tir_load(ctx, A, B(TIR_MUL, i, I(4)))), "A[i*4]");
    tir_node r = tir_ramp(B(TIR_MUL, i, I(16)), I(1), 16);
    CHECK_EQ_STR(P(r), "ramp(i*16, 1, 16)");
    CHECK_EQ_STR(P(tir_load(ctx, A, r)), "A[ramp(i*16, 1, 16)]");
    CHECK_EQ_STR(P(tir_broadcast(F(0), 8)), "x8(0.0f)");
    CHECK_EQ_STR(P(tir_add(r, tir_broadcast(j, 16))), "ramp(i*16, 1, 16) + x16(j)");
}

static void test_statements(void) {
    tir_node io = V("i.outer"), ii = V("i.inner"), n = V("n");
    tir_node C = tir_handle(ctx, "C", KILN_FLOAT32), A = tir_handle(ctx, "A", KILN_FLOAT32);
    tir_node idx = B(TIR_ADD, B(TIR_MUL, io, I(64)), ii);
    tir_node st = tir_store(C, idx, B(TIR_MUL, tir_load(ctx, A, idx), F(2)));
    tir_node guarded = tir_if(B(TIR_LT, idx, n), st, NULL);
    tir_node inner = tir_for(ii, I(0), I(64), TIR_FOR_VECTORIZED, NULL, guarded);
    tir_node outer = tir_for(io, I(0), B(TIR_FLOORDIV, B(TIR_ADD, n, I(63)), I(64)),
                             TIR_FOR_PARALLEL, NULL, inner);
    CHECK_EQ_STR(S(outer, 0), "parallel (i.outer, 0, floordiv(n + 63, 64)) {\n"
                              "  vectorized (i.inner, 0, 64) {\n"
                              "    if (i.outer*64 + i.inner < n) {\n"
                              "      C[i.outer*64 + i.inner] = A[i.outer*64 + i.inner]*2.0f\n"
                              "    }\n"
                              "  }\n"
                              "}\n");
    CHECK_EQ_STR(S(tir_for(ii, I(0), I(4), TIR_FOR_SERIAL, NULL, st), 1),
                 "  for (i.inner, 0, 4) {\n"
                 "    C[i.outer*64 + i.inner] = A[i.outer*64 + i.inner]*2.0f\n"
                 "  }\n");
    CHECK_EQ_STR(S(tir_for(ii, I(0), I(4), TIR_FOR_UNROLLED, NULL, tir_nop(ctx)), 0),
                 "unrolled (i.inner, 0, 4) {\n}\n");
    tir_node bx = V("bx");
    CHECK_EQ_STR(S(tir_for(bx, I(0), n, TIR_FOR_THREAD, "blockIdx.x", st), 0),
                 "launch_thread (bx: blockIdx.x, 0, n) {\n"
                 "  C[i.outer*64 + i.inner] = A[i.outer*64 + i.inner]*2.0f\n"
                 "}\n");
    tir_node ite = tir_if(B(TIR_LT, ii, I(3)), tir_store(C, ii, F(1)), tir_store(C, ii, F(0.5)));
    CHECK_EQ_STR(S(ite, 0), "if (i.inner < 3) {\n"
                            "  C[i.inner] = 1.0f\n"
                            "} else {\n"
                            "  C[i.inner] = 0.5f\n"
                            "}\n");
    tir_node buf = tir_handle(ctx, "T_local", KILN_FLOAT32);
    tir_node seq2 = tir_seq2(tir_store(buf, ii, F(0)), tir_store(C, ii, tir_load(ctx, buf, ii)));
    CHECK_EQ_STR(S(tir_allocate(buf, I(64), "local", seq2), 0),
                 "allocate T_local: float32[64], local {\n"
                 "  T_local[i.inner] = 0.0f\n"
                 "  C[i.inner] = T_local[i.inner]\n"
                 "}\n");
    CHECK_EQ_STR(S(tir_nop(ctx), 0), "");
    tir_node pidx[3] = {F(3), io, ii};
    tir_node prov = tir_make(ctx, TIR_PROVIDE, KILN_HANDLE, 1, 0, 0, 0, "C", NULL, 3, pidx);
    CHECK_EQ_STR(S(prov, 2), "    C[i.outer, i.inner] = 3.0f\n");
}

static void test_func(void) {
    tir_node n = V("n");
    tir_node shA[1] = {n}, shB[2] = {n, I(3)};
    tir_node A = tir_handle(ctx, "A", KILN_FLOAT32), Bh = tir_handle(ctx, "B", KILN_FLOAT32);
    tir_param ps[2] = {{"A", A, KILN_FLOAT32, 1, shA}, {"B", Bh, KILN_FLOAT32, 2, shB}};
    tir_node i = V("i");
    tir_node body = tir_for(i, I(0), n, TIR_FOR_SERIAL, NULL,
                            tir_store(Bh, B(TIR_MUL, i, I(3)), tir_load(ctx, A, i)));
    tir_func f = {"copy", 2, ps, 1, &n, body};
    kstr s;
    kstr_init(&s);
    tir_print_func(&s, &f);
    CHECK_EQ_STR(s.buf, "primfn copy(A: float32[n], B: float32[n, 3]) {\n"
                        "  for (i, 0, n) {\n"
                        "    B[i*3] = A[i]\n"
                        "  }\n"
                        "}\n");
    kstr_free(&s);
}

static void test_expr_print_api(void) {
    tir_node e = B(TIR_ADD, V("x"), I(12345));
    char buf[6];
    CHECK_EQ_INT(kiln_expr_print(e, buf, sizeof buf), 9); /* "x + 12345" */
    CHECK_EQ_STR(buf, "x + 1");
    CHECK_EQ_INT(kiln_expr_print(e, NULL, 0), 9);
    char big[32];
    CHECK_EQ_INT(kiln_expr_print(e, big, sizeof big), 9);
    CHECK_EQ_STR(big, "x + 12345");
    CHECK_EQ_INT(kiln_expr_print(NULL, big, sizeof big), 6);
    CHECK_EQ_STR(big, "(null)");
}

static void setup(void) {
    ctx = kiln_ctx_new();
}
static void teardown(void) {
    kiln_ctx_free(ctx);
}

#define WITH_CTX(fn)                                                                               \
    static void fn##_ctx(void) {                                                                   \
        setup();                                                                                   \
        fn();                                                                                      \
        teardown();                                                                                \
    }
WITH_CTX(test_constants)
WITH_CTX(test_precedence)
WITH_CTX(test_calls)
WITH_CTX(test_tensors_and_vectors)
WITH_CTX(test_statements)
WITH_CTX(test_func)
WITH_CTX(test_expr_print_api)

TEST_MAIN(TEST(test_constants_ctx), TEST(test_precedence_ctx), TEST(test_calls_ctx),
          TEST(test_tensors_and_vectors_ctx), TEST(test_statements_ctx), TEST(test_func_ctx),
          TEST(test_expr_print_api_ctx))
