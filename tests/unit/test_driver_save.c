/* test_driver_save.c: kiln_build_save writes a module to a file without
 * loading it (the cross-compiling path). The file it writes here,
 * KILN_TEST_TMP/saved_add.so, is loaded by tests/standalone/load_saved.c,
 * a program linked with libkiln_runtime alone. */
#include "check.h"
#include "te_util.h"

typedef struct {
    kiln_tensor *a, *b;
} pair;

static kiln_expr body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pair *p = u;
    return kiln_add(kiln_mul(kiln_tensor_at(p->a, 1, i), kiln_float(ctx, 2)),
                    kiln_tensor_at(p->b, 1, i));
}

static void test_save(void) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr n = kiln_var(ctx, "n");
    pair p = {kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "A"),
              kiln_placeholder(ctx, 1, &n, KILN_FLOAT32, "B")};
    kiln_tensor *C = kiln_compute(ctx, 1, &n, body, &p, "C");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_expr o, i;
    kiln_split(kiln_schedule_stage(s, C), kiln_tensor_axis(C, 0), 8, &o, &i);
    kiln_vectorize(kiln_schedule_stage(s, C), i);
    kiln_tensor *args[3] = {p.a, p.b, C};
    const char *path = test_tmp_path("saved_add.so");
    CHECK_EQ_INT(kiln_build_save(s, 3, args, "axpy", NULL, path), KILN_OK);
    /* and it loads and runs here too */
    kiln_module *m = kiln_module_load(path);
    CHECK(m != NULL);
    CHECK_EQ_INT(kiln_module_function_count(m), 1);
    kiln_module_free(m);
    /* errors: no path, a source-only target */
    CHECK_EQ_INT(kiln_build_save(s, 3, args, "axpy", NULL, ""), KILN_ERR_INVALID);
    kiln_build_options *opts = kiln_build_options_new();
    kiln_build_options_set(opts, "target", "c");
    CHECK(kiln_build_save(s, 3, args, "axpy", opts, path) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "source only");
    char *src = kiln_build_source(s, 3, args, "axpy", opts);
    CHECK_CONTAINS(src, "int32_t axpy(void *const *args, const int64_t *vars)");
    free(src);
    /* a narrower target width splits the vector code into 128-bit pieces */
    CHECK_EQ_INT(kiln_build_options_set(opts, "vector-bits", "128"), KILN_OK);
    src = kiln_build_source(s, 3, args, "axpy", opts);
    CHECK_CONTAINS(src, "f32x4");
    free(src);
    CHECK_EQ_INT(kiln_build_options_set(opts, "vector-bits", "100"), KILN_ERR_INVALID);
    kiln_build_options_free(opts);
    kiln_ctx_free(ctx);
}

TEST_MAIN(TEST(test_save))
