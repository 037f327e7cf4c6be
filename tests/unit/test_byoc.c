/* test_byoc.c: bring your own codegen (kiln/byoc.h) through a backend
 * written here against the public API, "ccomp" (TVM's ccompiler example:
 * plain C loops for add, multiply and a multiply-add composite): the four
 * passes' graphs, the text IR of their functions, regions that merge and
 * ones that must not (a cycle), a region with two results, composites no
 * backend takes, the package's record of a backend's library and the
 * runtime's error when it is missing, registration errors, and the
 * built-in backends (dnnl, blas) on small graphs. Every compiled result is
 * compared with the graph compiled by kiln alone. */
#include "byoc_ccomp.h"
#include "check.h"
#include "graph_util.h"
#include "te_util.h"

/* ---- helpers ----------------------------------------------------------------------- */

static int count_op(const kiln_graph *g, const char *op) {
    int n = 0;
    for (int id = 0; id < kiln_graph_num_nodes(g); id++)
        n += !strcmp(kiln_graph_node_op(g, id), op);
    return n;
}

static int call2(kiln_graph *g, const char *op, int a, int b, const char *name) {
    int in[2] = {a, b};
    return kiln_graph_call(g, op, 2, in, NULL, name);
}

/* Compile g with `target` (NULL: kiln alone) and run it on xs. */
static kiln_ndarray *run_with(kiln_graph *g, const char *target, int nin,
                              const kiln_ndarray *const *xs, char *funcs, size_t cap) {
    kiln_build_options *o = kiln_build_options_new();
    if (target && kiln_build_options_set(o, "target", target) != KILN_OK) {
        fprintf(stderr, "target %s: %s\n", target, kiln_last_error());
        kiln_build_options_free(o);
        return NULL;
    }
    kiln_ndarray *r = gu_compile_run(g, o, nin, xs, NULL, funcs, cap);
    kiln_build_options_free(o);
    return r;
}

/* Whether b, compiled for target tb (NULL: kiln alone), gives the results
 * of a compiled by kiln alone on xs, within tol (funcs as run_with). */
static int same_results(kiln_graph *a, kiln_graph *b, const char *tb, int nin,
                        kiln_ndarray *const *xs, double tol, char *funcs, size_t cap) {
    const kiln_ndarray *const *in = (const kiln_ndarray *const *)xs;
    kiln_ndarray *ref = run_with(a, NULL, nin, in, NULL, 0);
    kiln_ndarray *got = run_with(b, tb, nin, in, funcs, cap);
    int same = ref && got && tu_max_rel_err(got, ref) < tol;
    kiln_ndarray_free(ref);
    kiln_ndarray_free(got);
    return same;
}

/* x, y [4, 8]: a = x * y + x (a mul_add); t = tanh(a) (kiln's); z = t + y;
 * w = z * a (reads the region of a through tanh: no merge with it). */
static kiln_graph *test_graph(kiln_ndarray **xs) {
    int64_t s[2] = {4, 8};
    uint64_t seed = 11;
    for (int i = 0; i < 2; i++) {
        xs[i] = kiln_ndarray_empty(KILN_FLOAT32, 2, s);
        tu_fill(xs[i], &seed);
    }
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, s, NULL);
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 2, s, NULL);
    int m = call2(g, "multiply", x, y, "m");
    int a = call2(g, "add", m, x, "a");
    int t = kiln_graph_call(g, "tanh", 1, &a, NULL, "t");
    int z = call2(g, "add", t, y, "z");
    int w = call2(g, "multiply", z, a, "w");
    kiln_graph_set_outputs(g, 1, &w, NULL);
    return g;
}

static void test_partition_passes(void) {
    kiln_codegen_spec spec = ccomp_spec("ccomp", NULL);
    CHECK_EQ_INT(kiln_codegen_register(&spec), KILN_OK);
    CHECK_CONTAINS(kiln_codegen_names(), "ccomp");
    kiln_ndarray *xs[2];
    kiln_graph *g = test_graph(xs);
    kiln_graph *p = kiln_graph_partition_for(g, "ccomp");
    CHECK(p != NULL);
    /* the mul_add is a composite in the first function; z and w merge into
       a second (a's region cannot take them: w reads a through tanh) */
    CHECK_EQ_INT(count_op(p, "external"), 2);
    CHECK_EQ_INT(count_op(p, "tanh"), 1);
    CHECK_EQ_INT(count_op(p, "annotation.compiler_begin"), 0);
    char *text = p ? kiln_graph_print(p) : NULL;
    CHECK_CONTAINS(text, "Compiler=\"ccomp\"");
    CHECK_CONTAINS(text, "global_symbol=\"tvmgen_default_ccomp_main_0\"");
    CHECK_CONTAINS(text, "global_symbol=\"tvmgen_default_ccomp_main_1\"");
    CHECK_CONTAINS(text, "Composite=\"ccomp.mul_add\"");
    CHECK_CONTAINS(text, "span=\"m\""); /* the source names stay */
    /* the text IR parses back to the same text */
    kiln_graph *p2 = text ? kiln_graph_parse(text, NULL) : NULL;
    char *text2 = p2 ? kiln_graph_print(p2) : NULL;
    CHECK_EQ_STR(text2, text);
    free(text2);
    kiln_graph_free(p2);
    free(text);
    /* the partitioned graph, compiled, gives kiln's results; so does the
       target "ccomp, llvm", whose kernels include the two functions */
    char funcs[4096];
    CHECK(same_results(g, p, NULL, 2, xs, 1e-6, funcs, sizeof funcs));
    CHECK_CONTAINS(funcs, "tvmgen_default_ccomp_main_0");
    CHECK(same_results(g, g, "ccomp, llvm", 2, xs, 1e-6, funcs, sizeof funcs));
    CHECK_CONTAINS(funcs, "tvmgen_default_ccomp_main_1");
    kiln_graph_free(p);
    kiln_graph_free(g);
    for (int i = 0; i < 2; i++)
        kiln_ndarray_free(xs[i]);
}

/* One region whose first result also feeds kiln's op: the function
 * returns both (a tuple), and the merge keeps everything in one region. */
static void test_two_results(void) {
    int64_t s[1] = {16};
    uint64_t seed = 5;
    kiln_ndarray *xs[2];
    for (int i = 0; i < 2; i++) {
        xs[i] = kiln_ndarray_empty(KILN_FLOAT32, 1, s);
        tu_fill(xs[i], &seed);
    }
    kiln_graph *g = kiln_graph_new();
    int x = kiln_graph_var(g, "x", KILN_FLOAT32, 1, s, NULL);
    int y = kiln_graph_var(g, "y", KILN_FLOAT32, 1, s, NULL);
    int a = call2(g, "add", x, y, "a");
    int b = call2(g, "multiply", a, y, "b");
    int e = kiln_graph_call(g, "exp", 1, &a, NULL, "e");
    int o = call2(g, "subtract", e, b, "o");
    kiln_graph_set_outputs(g, 1, &o, NULL);
    kiln_graph *p = kiln_graph_partition_for(g, "ccomp");
    CHECK(p && count_op(p, "external") == 1 && count_op(p, "tuple_get") == 2);
    CHECK(same_results(g, p, NULL, 2, xs, 1e-6, NULL, 0));
    kiln_graph_free(p);
    kiln_graph_free(g);
    for (int i = 0; i < 2; i++)
        kiln_ndarray_free(xs[i]);
}

/* A composite no backend takes compiles as its body (kiln's compute). */
static void test_composite_compiled(void) {
    kiln_ndarray *xs[2];
    kiln_graph *g = test_graph(xs);
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *pat = kiln_pattern_parse(s, "multiply(add(tanh, *), *)");
    kiln_graph *p = kiln_graph_partition(g, pat, "Composite=\"mine.tail\"", NULL, NULL);
    CHECK(p && count_op(p, "composite") == 1);
    CHECK(same_results(g, p, NULL, 2, xs, 1e-6, NULL, 0));
    kiln_graph_free(p);
    kiln_pattern_set_free(s);
    kiln_graph_free(g);
    for (int i = 0; i < 2; i++)
        kiln_ndarray_free(xs[i]);
}

/* The package names the backend's library; where it is missing, loading
 * the package says so. */
static void test_missing_library(void) {
    kiln_codegen_spec spec = ccomp_spec("ccomp_lib", "libkiln_no_such_backend.so.7");
    spec.npatterns = 0; /* (its composites would be named ccomp_lib.*) */
    CHECK_EQ_INT(kiln_codegen_register(&spec), KILN_OK);
    kiln_ndarray *xs[2];
    kiln_graph *g = test_graph(xs);
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "ccomp_lib, llvm"), KILN_OK);
    const char *pkg = test_tmp_path("byoc_missing_lib.tar");
    CHECK_EQ_INT(kiln_graph_compile(g, pkg, o), KILN_OK);
    kiln_clear_error();
    kiln_executor *ex = kiln_executor_load(pkg);
    CHECK(ex == NULL);
    CHECK_CONTAINS(kiln_last_error(), "ccomp_lib backend's library libkiln_no_such_backend.so.7");
    kiln_executor_free(ex);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    for (int i = 0; i < 2; i++)
        kiln_ndarray_free(xs[i]);
}

/* An external function written by hand in the text IR with a constant in
 * its body, or an unknown compiler: the build says so (no crash, no C
 * compiler error). */
static void test_bad_external(void) {
    const char *texts[2] = {
        "def @main(%x: Tensor[(4), float32]) {\n"
        "  %0 = external(%x, Compiler=\"ccomp\", global_symbol=\"f0\", body=fn (%a: "
        "Tensor[(4), float32]) {\n"
        "    %0 = add(%a, meta[relay.Constant][0]);\n"
        "    %0\n"
        "  });\n"
        "  %0\n"
        "}\n",
        "def @main(%x: Tensor[(4), float32]) {\n"
        "  %0 = external(%x, Compiler=\"nosuch\", global_symbol=\"f0\", body=fn (%a: "
        "Tensor[(4), float32]) {\n"
        "    %0 = add(%a, %a);\n"
        "    %0\n"
        "  });\n"
        "  %0\n"
        "}\n"};
    const char *msgs[2] = {"is not an argument or a call", "unknown external backend 'nosuch'"};
    int64_t four = 4;
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 1, &four);
    memset(kiln_ndarray_data(c), 0, 4 * sizeof(float));
    kiln_npz *z = kiln_npz_new();
    kiln_npz_add(z, "0", c);
    for (int i = 0; i < 2; i++) {
        kiln_graph *g = kiln_graph_parse(texts[i], z);
        CHECK(g != NULL);
        if (!g) {
            fprintf(stderr, "parse: %s\n", kiln_last_error());
            continue;
        }
        kiln_clear_error();
        CHECK(kiln_graph_compile(g, test_tmp_path("byoc_bad.tar"), NULL) != KILN_OK);
        CHECK_CONTAINS(kiln_last_error(), msgs[i]);
        kiln_graph_free(g);
    }
    kiln_npz_free(z);
    kiln_ndarray_free(c);
}

static void test_register_errors(void) {
    kiln_codegen_spec s = ccomp_spec("ccomp", NULL);
    CHECK_EQ_INT(kiln_codegen_register(&s), KILN_ERR_INVALID); /* registered already */
    CHECK_CONTAINS(kiln_last_error(), "exists already");
    s.name = "bad name";
    CHECK_EQ_INT(kiln_codegen_register(&s), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "not an identifier");
    s.name = "other";
    CHECK_EQ_INT(kiln_codegen_register(&s), KILN_ERR_INVALID); /* "ccomp.mul_add" */
    CHECK_CONTAINS(kiln_last_error(), "must start with 'other.'");
    kiln_codegen_pattern bad = {"other.x", "add(*", NULL};
    s.patterns = &bad;
    CHECK_EQ_INT(kiln_codegen_register(&s), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "pattern 'other.x'");
    s.codegen = NULL;
    CHECK_EQ_INT(kiln_codegen_register(&s), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "needs a codegen function");
    /* unknown backends, in a target and by hand */
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "target", "nosuch, llvm"), KILN_ERR_UNSUPPORTED);
    CHECK_CONTAINS(kiln_last_error(), "unknown external backend 'nosuch' (known:");
    kiln_build_options_free(o);
    kiln_graph *g = kiln_graph_new();
    CHECK(kiln_graph_partition_for(g, "nosuch") == NULL);
    kiln_graph_free(g);
}

/* The built-in backends this build has, on a convolution block and a
 * dense one: partitioned results equal kiln's. */
static void test_builtin_backends(void) {
    const char *names = kiln_codegen_names();
    uint64_t seed = 3;
    int64_t xs4[4] = {1, 8, 12, 12}, ws[4] = {16, 8, 3, 3}, bs[1] = {16}, ws2[4] = {16, 16, 1, 1};
    int64_t xd[2] = {6, 32}, wd[2] = {24, 32}, bd[1] = {24};
    kiln_ndarray *x4 = kiln_ndarray_empty(KILN_FLOAT32, 4, xs4),
                 *w = kiln_ndarray_empty(KILN_FLOAT32, 4, ws);
    kiln_ndarray *bias = kiln_ndarray_empty(KILN_FLOAT32, 1, bs),
                 *w2 = kiln_ndarray_empty(KILN_FLOAT32, 4, ws2);
    kiln_ndarray *x2 = kiln_ndarray_empty(KILN_FLOAT32, 2, xd),
                 *wdn = kiln_ndarray_empty(KILN_FLOAT32, 2, wd);
    kiln_ndarray *bdn = kiln_ndarray_empty(KILN_FLOAT32, 1, bd);
    kiln_ndarray *all[7] = {x4, w, bias, w2, x2, wdn, bdn};
    for (int i = 0; i < 7; i++)
        tu_fill(all[i], &seed);
    for (int which = 0; which < 2; which++) {
        const char *backend = which ? "blas" : "dnnl";
        if (!strstr(names, backend)) {
            printf("  (no %s backend in this build)\n", backend);
            continue;
        }
        /* conv -> bias -> relu -> conv 1x1 -> + the first (a sum): dnnl's
           post-ops and a blocked layout between the two convolutions */
        kiln_graph *g = kiln_graph_new();
        int x = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs4, NULL);
        int c1in[2] = {x, kiln_graph_const(g, "w", w)};
        int c1 = kiln_graph_call(g, "nn.conv2d", 2, c1in, "padding=[1, 1, 1, 1]", "c1");
        int b1 = call2(g, "nn.bias_add", c1, kiln_graph_const(g, "b", bias), "b1");
        int r1 = kiln_graph_call(g, "nn.relu", 1, &b1, NULL, "r1");
        int c2in[2] = {r1, kiln_graph_const(g, "w2", w2)};
        int c2 = kiln_graph_call(g, "nn.conv2d", 2, c2in, NULL, "c2");
        int s = call2(g, "add", c2, r1, "sum");
        int r2 = kiln_graph_call(g, "nn.relu", 1, &s, NULL, "r2");
        kiln_graph_set_outputs(g, 1, &r2, NULL);
        char target[64], funcs[4096], sym[64];
        snprintf(target, sizeof target, "%s, llvm", backend);
        snprintf(sym, sizeof sym, "tvmgen_default_%s_main_0", backend);
        CHECK(same_results(g, g, target, 1, &x4, 1e-4, funcs, sizeof funcs));
        if (which == 0) /* blas takes no convolution */
            CHECK_CONTAINS(funcs, sym);
        kiln_graph_free(g);
        /* dense + bias + relu, then a batch matmul of it with itself^T */
        g = kiln_graph_new();
        x = kiln_graph_var(g, "x", KILN_FLOAT32, 2, xd, NULL);
        int d = call2(g, "nn.dense", x, kiln_graph_const(g, "wd", wdn), "d");
        int db = call2(g, "add", d, kiln_graph_const(g, "bd", bdn), "db");
        int dr = kiln_graph_call(g, "nn.relu", 1, &db, NULL, "dr");
        int mm[2] = {dr, dr};
        int bm = kiln_graph_call(g, "nn.batch_matmul", 2, mm, "transpose_b=1", "bm");
        kiln_graph_set_outputs(g, 1, &bm, NULL);
        CHECK(same_results(g, g, target, 1, &x2, 1e-4, funcs, sizeof funcs));
        CHECK_CONTAINS(funcs, sym);
        kiln_graph_free(g);
    }
    for (int i = 0; i < 7; i++)
        kiln_ndarray_free(all[i]);
}

TEST_MAIN(TEST(test_partition_passes), TEST(test_two_results), TEST(test_composite_compiled),
          TEST(test_missing_library), TEST(test_bad_external), TEST(test_register_errors),
          TEST(test_builtin_backends))
