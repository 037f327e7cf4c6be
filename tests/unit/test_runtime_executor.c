/* test_runtime_executor.c: packages and the graph executor. Graph A calls
 * one kernel built by the tensor-expression compiler three times with a
 * storage_id reused across nodes; graph B calls a hand-written module
 * (module_abi.h) with a symbolic size bound at load time and a two-output
 * kernel. Both run numerically; then every validation error of mod.json,
 * every malformed tar and every bad input is checked for its message.
 * Writes KILN_TEST_TMP/exec_model.tar and exec_inputs.npz for the CLI test. */
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check.h"
#include "kiln/runtime.h"
#include "package_util.h"
#include "te_util.h"

/* ---- graph A: y1 = x + b; y2 = y1 + y1; y3 = y2 + x (y3 reuses y1's buffer) ---- */

static const char *k_graph_a =
    "{\"nodes\": [\n"
    "  {\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"
    "  {\"op\": \"null\", \"name\": \"b\", \"inputs\": []},\n"
    "  {\"op\": \"tvm_op\", \"name\": \"y1\", \"attrs\": {\"func_name\": \"vadd\", "
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, "
    "\"inputs\": [[0, 0, 0], [1, 0, 0]]},\n"
    "  {\"op\": \"tvm_op\", \"name\": \"y2\", \"attrs\": {\"func_name\": \"vadd\", "
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, "
    "\"inputs\": [[2, 0, 0], [2, 0, 0]]},\n"
    "  {\"op\": \"tvm_op\", \"name\": \"y3\", \"attrs\": {\"func_name\": \"vadd\", "
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, "
    "\"inputs\": [[3, 0, 0], [0, 0, 0]]}],\n"
    " \"arg_nodes\": [0, 1],\n"
    " \"heads\": [[4, 0, 0], [3, 0, 0]],\n"
    " \"output_names\": [\"sum\", \"double\"],\n"
    " \"node_row_ptr\": [0, 1, 2, 3, 4, 5],\n"
    " \"attrs\": {\"shape\": [\"list_shape\", [[2, 8], [2, 8], [2, 8], [2, 8], [2, 8]]],\n"
    "   \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", \"float32\", "
    "\"float32\"]],\n"
    "   \"storage_id\": [\"list_int\", [0, 1, 2, 3, 2]]}}\n";

typedef struct {
    kiln_tensor *a, *b;
} pair;

static kiln_expr add_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    pair *p = u;
    return kiln_add(kiln_tensor_at(p->a, 2, i), kiln_tensor_at(p->b, 2, i));
}

/* Build vadd(A, B, C): float32[2, 8] with the TE compiler, once. */
static const char *te_module(void) {
    static int built;
    static char path[1024];
    if (built)
        return path;
    snprintf(path, sizeof path, "%s", test_tmp_path("exec_vadd.so"));
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr shape[2] = {kiln_int(ctx, 2), kiln_int(ctx, 8)};
    pair p = {kiln_placeholder(ctx, 2, shape, KILN_FLOAT32, "A"),
              kiln_placeholder(ctx, 2, shape, KILN_FLOAT32, "B")};
    kiln_tensor *C = kiln_compute(ctx, 2, shape, add_body, &p, "C");
    kiln_schedule *s = kiln_schedule_create(ctx, 1, &C);
    kiln_tensor *args[3] = {p.a, p.b, C};
    kiln_status st = kiln_build_save(s, 3, args, "vadd", NULL, path);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "%s\n", kiln_last_error());
    kiln_ctx_free(ctx);
    built = st == KILN_OK;
    return path;
}

static kiln_ndarray *arr28(float base) {
    int64_t shape[2] = {2, 8};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
    float *d = kiln_ndarray_data(a);
    for (int i = 0; i < 16; i++)
        d[i] = base + (float)i * (i % 2 ? -0.5f : 0.25f);
    return a;
}

static kiln_npz *params_a(void) {
    kiln_npz *z = kiln_npz_new();
    kiln_ndarray *b = arr28(1.0f);
    kiln_npz_add(z, "b", b);
    kiln_ndarray_free(b);
    return z;
}

static void check_graph_a(kiln_executor *e) {
    CHECK_EQ_INT(kiln_executor_num_inputs(e), 1);
    CHECK_EQ_STR(kiln_executor_input_name(e, 0), "x");
    CHECK_EQ_INT(kiln_executor_input_dtype(e, 0), KILN_FLOAT32);
    CHECK_EQ_INT(kiln_executor_input_ndim(e, 0), 2);
    CHECK_EQ_INT(kiln_executor_input_dim(e, 0, 1), 8);
    CHECK_EQ_INT(kiln_executor_input_dim(e, 0, 2), -1);
    CHECK(kiln_executor_input_name(e, 1) == NULL);
    CHECK_EQ_INT(kiln_executor_num_outputs(e), 2);
    CHECK_EQ_STR(kiln_executor_output_name(e, 0), "sum");
    CHECK_EQ_STR(kiln_executor_output_name(e, 1), "double");
    CHECK_EQ_INT(kiln_executor_num_kernels(e), 3);
    CHECK_EQ_STR(kiln_executor_kernel_name(e, 2), "y3");
    CHECK_EQ_STR(kiln_executor_kernel_func(e, 2), "vadd");
    kiln_ndarray *x = arr28(-2.0f), *b = arr28(1.0f);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", x), KILN_OK);
    for (int rep = 0; rep < 2; rep++) { /* runs repeat with the same result */
        CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
        const float *px = kiln_ndarray_data(x), *pb = kiln_ndarray_data(b);
        const float *sum = kiln_ndarray_data(kiln_executor_output(e, 0));
        const float *dbl = kiln_ndarray_data(kiln_executor_output(e, 1));
        for (int i = 0; i < 16; i++) {
            CHECK_NEAR(dbl[i], 2 * (px[i] + pb[i]), 1e-6);
            CHECK_NEAR(sum[i], 2 * (px[i] + pb[i]) + px[i], 1e-6);
        }
    }
    double t[3] = {-1, -1, -1};
    CHECK_EQ_INT(kiln_executor_run_profiled(e, t), KILN_OK);
    CHECK(t[0] >= 0 && t[1] >= 0 && t[2] >= 0 && t[0] + t[1] + t[2] > 0);
    CHECK(kiln_executor_run_profiled(e, NULL) != KILN_OK);
    kiln_ndarray_free(x);
    kiln_ndarray_free(b);
}

static void test_graph_a(void) {
    kiln_module *m = kiln_module_load(te_module());
    CHECK(m != NULL);
    kiln_npz *z = params_a();
    kiln_executor *e = kiln_executor_create(k_graph_a, strlen(k_graph_a), m, z);
    kiln_npz_free(z); /* params are copied */
    CHECK(e != NULL);
    if (!e)
        fprintf(stderr, "%s\n", kiln_last_error());
    if (e)
        check_graph_a(e);
    kiln_executor_free(e);
    kiln_module_free(m);
}

/* The package the CLI test uses, and its input file. */
static void test_package_roundtrip(void) {
    char tar[1024];
    snprintf(tar, sizeof tar, "%s", test_tmp_path("exec_model.tar"));
    kiln_npz *z = params_a();
    CHECK_EQ_INT(kiln_package_write(tar, k_graph_a, strlen(k_graph_a), te_module(), z), KILN_OK);
    kiln_npz_free(z);
    kiln_executor *e = kiln_executor_load(tar);
    CHECK(e != NULL);
    if (!e)
        fprintf(stderr, "%s\n", kiln_last_error());
    if (e)
        check_graph_a(e);
    kiln_executor_free(e);
    kiln_npz *in = kiln_npz_new();
    kiln_ndarray *x = arr28(-2.0f);
    kiln_npz_add(in, "x", x);
    CHECK_EQ_INT(kiln_npz_save(in, test_tmp_path("exec_inputs.npz"), 0), KILN_OK);
    kiln_npz_add(in, "bogus", x);
    CHECK_EQ_INT(kiln_npz_save(in, test_tmp_path("exec_inputs_bad.npz"), 0), KILN_OK);
    kiln_ndarray_free(x);
    kiln_npz_free(in);
    /* without params, b is an input too: for the CLI test of missing inputs */
    CHECK_EQ_INT(kiln_package_write(test_tmp_path("exec_two_inputs.tar"), k_graph_a,
                                    strlen(k_graph_a), te_module(), NULL),
                 KILN_OK);
    /* the writer checks its JSON and its files */
    CHECK_EQ_INT(kiln_package_write(tar, "{", 1, te_module(), NULL), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "mod.json:1:2");
    CHECK(kiln_package_write(tar, "{}", 2, "/nonexistent/x.so", NULL) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent/x.so");
    e = kiln_executor_load(tar); /* the failures left the package alone */
    CHECK(e != NULL);
    if (!e)
        fprintf(stderr, "%s\n", kiln_last_error());
    kiln_executor_free(e);
}

/* ---- graph B: a hand-written module ------------------------------------------- */

/* Built against the runtime's own module_abi.h (its ABI version and kernel
 * status bits). The status kernels copy X to Y and return: oom ENOMEM,
 * einx EINDEX, edivz EDIVZERO, eboth EINDEX | EDIVZERO | ENOMEM, ebad 64
 * (no KILN_KERNEL_* bit). */
static const char *k_hand_source =
    "#include \"module_abi.h\"\n"
    "int kiln_module_init(const kiln_module_api *api) {\n"
    "  return api->version != KILN_MODULE_ABI_VERSION;\n"
    "}\n"
    "const char kiln_module_meta[] = \"kiln-module 1\\n"
    "func relu 2 0\\narg X float32 1 16\\narg Y float32 1 16\\n"
    "func addn 3 1\\nvar n\\narg A float32 1 $0\\narg B float32 1 $0\\narg C float32 1 $0\\n"
    "func minmax 3 0\\narg X float32 1 16\\narg MN float32 0\\narg MX float32 0\\n"
    "func oom 2 0\\narg X float32 1 16\\narg Y float32 1 16\\n"
    "func einx 2 0\\narg X float32 1 16\\narg Y float32 1 16\\n"
    "func edivz 2 0\\narg X float32 1 16\\narg Y float32 1 16\\n"
    "func eboth 2 0\\narg X float32 1 16\\narg Y float32 1 16\\n"
    "func ebad 2 0\\narg X float32 1 16\\narg Y float32 1 16\\n"
    "end\\n\";\n"
    "static int32_t copy(void *const *a, int32_t status) {\n"
    "  const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < 16; i++) y[i] = x[i];\n"
    "  return status;\n"
    "}\n"
    "int32_t einx(void *const *a, const int64_t *v) { return copy(a, KILN_KERNEL_EINDEX); }\n"
    "int32_t edivz(void *const *a, const int64_t *v) { return copy(a, KILN_KERNEL_EDIVZERO); }\n"
    "int32_t eboth(void *const *a, const int64_t *v) {\n"
    "  return copy(a, KILN_KERNEL_EINDEX | KILN_KERNEL_EDIVZERO | KILN_KERNEL_ENOMEM);\n"
    "}\n"
    "int32_t ebad(void *const *a, const int64_t *v) { return copy(a, 64); }\n"
    "int32_t relu(void *const *a, const int64_t *v) {\n"
    "  const float *x = a[0]; float *y = a[1];\n"
    "  for (int i = 0; i < 16; i++) y[i] = x[i] > 0 ? x[i] : 0;\n"
    "  return 0;\n"
    "}\n"
    "int32_t addn(void *const *a, const int64_t *v) {\n"
    "  const float *x = a[0], *y = a[1]; float *z = a[2];\n"
    "  for (int64_t i = 0; i < v[0]; i++) z[i] = x[i] + y[i];\n"
    "  return 0;\n"
    "}\n"
    "int32_t minmax(void *const *a, const int64_t *v) {\n"
    "  const float *x = a[0]; float *mn = a[1], *mx = a[2];\n"
    "  *mn = *mx = x[0];\n"
    "  for (int i = 1; i < 16; i++) { if (x[i] < *mn) *mn = x[i]; if (x[i] > *mx) *mx = x[i]; }\n"
    "  return 0;\n"
    "}\n"
    "int32_t oom(void *const *a, const int64_t *v) { return KILN_KERNEL_ENOMEM; }\n";

/* x -> r = relu(x) -> s = addn(r, x) -> (mn, mx) = minmax(s); mn reuses r's buffer. */
static const char *k_graph_b =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"
    " {\"op\": \"tvm_op\", \"name\": \"r\", \"attrs\": {\"func_name\": \"relu\", "
    "\"num_inputs\": \"1\", \"num_outputs\": \"1\"}, \"inputs\": [[0, 0, 0]]},\n"
    " {\"op\": \"tvm_op\", \"name\": \"s\", \"attrs\": {\"func_name\": \"addn\", "
    "\"num_inputs\": 2, \"num_outputs\": 1}, \"inputs\": [[1, 0, 0], [0, 0]]},\n"
    " {\"op\": \"tvm_op\", \"name\": \"mm\", \"attrs\": {\"func_name\": \"minmax\", "
    "\"num_inputs\": \"1\", \"num_outputs\": \"2\"}, \"inputs\": [[2, 0, 0]]}],\n"
    " \"arg_nodes\": [0], \"heads\": [[2, 0, 0], [3, 0, 0], [3, 1, 0]],\n"
    " \"node_row_ptr\": [0, 1, 2, 3, 5],\n"
    " \"attrs\": {\"shape\": [\"list_shape\", [[16], [16], [16], [], []]],\n"
    "  \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", \"float32\", "
    "\"float32\"]],\n"
    "  \"storage_id\": [\"list_int\", [0, 1, 2, 1, 3]], \"device_index\": [\"list_int\", "
    "[1, 1, 1, 1, 1]]}}";

static const char *hand_module(void) {
    static char so[1024];
    if (so[0])
        return so;
    char c_path[1024], cmd[4096];
    snprintf(c_path, sizeof c_path, "%s", test_tmp_path("exec_hand.c"));
    snprintf(so, sizeof so, "%s", test_tmp_path("exec_hand.so"));
    FILE *f = fopen(c_path, "w");
    CHECK(f != NULL);
    if (!f)
        return so;
    fputs(k_hand_source, f);
    fclose(f);
    const char *src = getenv("KILN_SOURCE_DIR");
    snprintf(cmd, sizeof cmd, "cc -O2 -shared -fPIC -I'%s/src/runtime' -o '%s' '%s'",
             src ? src : ".", so, c_path);
    CHECK_EQ_INT(system(cmd), 0);
    return so;
}

static void test_graph_b(void) {
    kiln_module *m = kiln_module_load(hand_module());
    CHECK(m != NULL);
    kiln_executor *e = kiln_executor_create(k_graph_b, strlen(k_graph_b), m, NULL);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", kiln_last_error());
        kiln_module_free(m);
        return;
    }
    CHECK_EQ_STR(kiln_executor_output_name(e, 2), "output_2");
    CHECK_EQ_INT(kiln_ndarray_ndim(kiln_executor_output(e, 1)), 0);
    int64_t n = 16;
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    float *px = kiln_ndarray_data(x);
    for (int i = 0; i < 16; i++)
        px[i] = (float)(i - 6);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", x), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
    const float *s = kiln_ndarray_data(kiln_executor_output(e, 0));
    for (int i = 0; i < 16; i++)
        CHECK_NEAR(s[i], px[i] + (px[i] > 0 ? px[i] : 0), 0);
    CHECK_NEAR(*(const float *)kiln_ndarray_data(kiln_executor_output(e, 1)), -6, 0);
    CHECK_NEAR(*(const float *)kiln_ndarray_data(kiln_executor_output(e, 2)), 18, 0);
    /* a strided input is copied element by element */
    int64_t n2 = 32, stride = 2;
    kiln_ndarray *big = kiln_ndarray_empty(KILN_FLOAT32, 1, &n2);
    kiln_ndarray *view = kiln_ndarray_view(big, 1, &n, &stride, 0);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", view), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
    CHECK_NEAR(*(const float *)kiln_ndarray_data(kiln_executor_output(e, 2)), 0, 0);
    kiln_ndarray_free(view);
    kiln_ndarray_free(big);
    /* bad inputs */
    kiln_ndarray *wrong = kiln_ndarray_empty(KILN_FLOAT64, 1, &n);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", wrong), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "set_input 'x': expected float32[16], got float64[16]");
    kiln_ndarray_free(wrong);
    int64_t n8 = 8;
    wrong = kiln_ndarray_empty(KILN_FLOAT32, 1, &n8);
    CHECK_EQ_INT(kiln_executor_set_input(e, "x", wrong), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "got float32[8]");
    CHECK_EQ_INT(kiln_executor_set_input(e, "y", wrong), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "no input 'y' (its inputs: x)");
    CHECK_EQ_INT(kiln_executor_set_input(e, NULL, wrong), KILN_ERR_INVALID);
    kiln_ndarray_free(wrong);
    kiln_ndarray_free(x);
    kiln_executor_free(e);
    /* a kernel that fails names its node */
    char *j = strdup(k_graph_b);
    memcpy(strstr(j, "\"relu\""), "\"oom\" ", 6);
    e = kiln_executor_create(j, strlen(j), m, NULL);
    CHECK(e != NULL);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_NOMEM);
    CHECK_CONTAINS(kiln_last_error(), "node 1 'r' (function 'oom')");
    kiln_executor_free(e);
    free(j);
    kiln_module_free(m);
}

/* ---- validation of mod.json --------------------------------------------------- */

/* text with the first `from` replaced by `to` (malloc'd); NULL if absent. */
static char *replace(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    CHECK(at != NULL);
    if (!at)
        return NULL;
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

typedef struct {
    const char *from, *to, *msg;
} edit_case;

static void test_bad_plans(void) {
    static const edit_case cases[] = {
        {"{\"nodes\"", "[{\"nodes\"", "mod.json:14:1: expected ',' or ']'"},
        {"\"nodes\"", "\"nodez\"", "\"nodes\" must be a non-empty list"},
        {"[0, 1, 2, 3, 4, 5]", "[0, 1, 2, 3, 4]", "node_row_ptr"},
        {"[0, 1, 2, 3, 4, 5]", "[0, 1, 2, 3, 5, 5]", "num_outputs must be at least 1"},
        {"[0, 1, 2, 3, 4, 5]", "[1, 1, 2, 3, 4, 5]", "node_row_ptr[0]"},
        {"[[0, 0, 0], [1, 0, 0]]", "[[3, 0, 0], [1, 0, 0]]", "node 2 'y1': input 0 must be"},
        {"[[0, 0, 0], [1, 0, 0]]", "[[0, 1, 0], [1, 0, 0]]", "node 2 'y1': input 0 must be"},
        {"[[0, 0, 0], [1, 0, 0]]", "[[0, 0, 0], [-1, 0, 0]]", "input 1 must be"},
        {"[[0, 0, 0], [1, 0, 0]]", "[[0, 0, 0], [1, 0, \"v\"]]", "input 1 must be"},
        {"[0, 1, 2, 3, 2]", "[0, 1, 2, 3, 9]", "entry 4: storage_id must be an integer in [0, 5)"},
        {"[0, 1, 2, 3, 2]", "[0, 1, 2, 3, 3]",
         "node 4 'y3': its output shares storage_id 3 with an output of node 3 'y2'"},
        {"[0, 1, 2, 3, 2]", "[0, 1, 2, 3, 0]", "need their own storage"},
        {"[0, 1, 2, 3, 2]", "[0, 0, 2, 3, 4]", "node 1 'b': its output shares storage_id 0"},
        {"[0, 1, 2, 3, 2]", "[0, 1, 2, 2, 4]", "node 3 'y2': its output shares storage_id 2"},
        {"\"float32\", \"float32\"]]", "\"float33\", \"float32\"]]", "unknown dltype 'float33'"},
        {"\"float32\", \"float32\"]]", "\"handle\", \"float32\"]]", "unknown dltype 'handle'"},
        {"\"float32\", \"float32\"]]", "\"int32\", \"float32\"]]",
         "node 3 'y2': function 'vadd' argument 2 (output 0) is float32[2, 8], but the entry is "
         "int32[2, 8]"},
        {"[2, 8]]]", "[2, 4]]]",
         "argument 2 (output 0) is float32[2, 8], but the entry is "
         "float32[2, 4]"},
        {"[2, 8]]]", "[2, -8]]]", "entry 4: dim 1 is not a non-negative integer"},
        {"[2, 8]]]", "[2, 4000000000, 4000000000]]]", "entry 4: the shape is too large"},
        {"[2, 8]]]", "[2, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]]]", "at most 16 dims"},
        {"\"list_shape\"", "\"list_int\"", "attrs.shape must be [\"list_shape\", [...]]"},
        {"\"storage_id\"", "\"storage\"", "attrs has no \"storage_id\""},
        {"\"func_name\": \"vadd\", \"num_inputs\": \"2\", \"num_outputs\": \"1\", "
         "\"flatten_data\": \"0\"}, \"inputs\": [[2",
         "\"func_name\": \"nope\", \"num_inputs\": \"2\", \"num_outputs\": \"1\", "
         "\"flatten_data\": \"0\"}, \"inputs\": [[2",
         "node 3 'y2': "},
        {"\"func_name\": \"vadd\"", "\"func\": \"vadd\"",
         "node 2 'y1': attrs has no \"func_name\""},
        {"\"num_inputs\": \"2\"", "\"num_inputs\": \"3\"", "attrs.num_inputs must be the number"},
        {"\"num_inputs\": \"2\"", "\"num_inputs\": \"2x\"", "attrs.num_inputs"},
        {"\"op\": \"tvm_op\"", "\"op\": \"conv\"", "node 2 'y1': \"op\" must be"},
        {"\"name\": \"x\", ", "", "node 0 has no \"name\""},
        {"\"inputs\": []},\n  {\"op\": \"null\", \"name\": \"b\", \"inputs\": []}",
         "\"inputs\": []},\n  {\"op\": \"null\", \"name\": \"b\", \"inputs\": [[0, 0, 0]]}",
         "node 1 'b': a \"null\" node has no inputs"},
        {"\"arg_nodes\": [0, 1]", "\"arg_nodes\": [0]", "lists 1 nodes, but there are 2"},
        {"\"arg_nodes\": [0, 1]", "\"arg_nodes\": [0, 0]", "arg_nodes[1] must name"},
        {"\"arg_nodes\": [0, 1]", "\"arg_nodes\": [0, 2]", "arg_nodes[1] must name"},
        {"[[4, 0, 0], [3, 0, 0]]", "[[5, 0, 0], [3, 0, 0]]", "heads[0] must be"},
        {"[[4, 0, 0], [3, 0, 0]]", "[]", "\"heads\" must be a non-empty list"},
        {"[\"sum\", \"double\"]", "[\"sum\"]", "\"output_names\" must be a list of 2"},
        {"[\"sum\", \"double\"]", "[\"sum\", \"sum\"]", "'sum' appears twice"},
        {"[\"sum\", \"double\"]", "[\"sum\", 3]", "output_names[1] must be"},
        {"\"name\": \"b\"", "\"name\": \"x\"", "node 1 'x': two inputs have this name"},
    };
    kiln_module *m = kiln_module_load(te_module());
    kiln_npz *z = params_a();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = replace(k_graph_a, cases[i].from, cases[i].to);
        if (!j)
            continue;
        kiln_npz *p = strstr(cases[i].msg, "two inputs") ? NULL : z;
        kiln_executor *e = kiln_executor_create(j, strlen(j), m, p);
        CHECK(e == NULL);
        CHECK_CONTAINS(kiln_last_error(), cases[i].msg);
        if (e)
            fprintf(stderr, "  case %zu was accepted\n", i);
        kiln_executor_free(e);
        free(j);
    }
    /* a huge entry count is checked against the lists before anything is allocated */
    char *j1 = replace(k_graph_a, "[0, 1, 2, 3, 4, 5]", "[0, 1, 2, 3, 4, 2000000000]");
    char *j = replace(j1, "\"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[3",
                      "\"num_outputs\": \"1999999996\", \"flatten_data\": \"0\"}, \"inputs\": [[3");
    CHECK(kiln_executor_create(j, strlen(j), m, z) == NULL);
    CHECK_CONTAINS(kiln_last_error(),
                   "attrs.shape has 5 entries, but node_row_ptr says 2000000000");
    free(j1);
    free(j);
    /* the function must exist: the message lists what the module has */
    j = replace(k_graph_a, "\"vadd\"", "\"nope\"");
    CHECK(kiln_executor_create(j, strlen(j), m, z) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "node 2 'y1': ");
    CHECK_CONTAINS(kiln_last_error(), "no function 'nope' (it has: vadd)");
    free(j);
    /* params must match their entries; extra params are ignored */
    kiln_npz *bad = kiln_npz_new();
    int64_t n8 = 8;
    kiln_ndarray *b8 = kiln_ndarray_empty(KILN_FLOAT32, 1, &n8);
    kiln_npz_add(bad, "b", b8);
    CHECK(kiln_executor_create(k_graph_a, strlen(k_graph_a), m, bad) == NULL);
    CHECK_CONTAINS(kiln_last_error(),
                   "node 1 'b': mod.params has float32[8], but the graph says float32[2, 8]");
    kiln_npz_free(bad);
    kiln_npz_add(z, "unused", b8);
    kiln_executor *e = kiln_executor_create(k_graph_a, strlen(k_graph_a), m, z);
    CHECK(e != NULL);
    CHECK_EQ_INT(kiln_executor_set_input(e, "b", b8), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "'b' is a parameter");
    kiln_executor_free(e);
    /* without params, b is an input */
    e = kiln_executor_create(k_graph_a, strlen(k_graph_a), m, NULL);
    CHECK_EQ_INT(kiln_executor_num_inputs(e), 2);
    kiln_executor_free(e);
    kiln_ndarray_free(b8);
    /* symbolic sizes must agree across arguments */
    kiln_module *hm = kiln_module_load(hand_module());
    j = replace(k_graph_b, "[[16], [16], [16]", "[[16], [16], [8]");
    CHECK(kiln_executor_create(j, strlen(j), hm, NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "node 2 's': function 'addn' argument 2 (output 0) is "
                                      "float32[?], but the entry is float32[8]");
    free(j);
    /* every byte of the plan replaced by a few values: an error or a valid
     * plan that runs, never a crash */
    static const char subs[] = {'0', '1', '9', '-', ']', '"', ','};
    size_t n = strlen(k_graph_a);
    char *mut = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof subs; k++) {
            memcpy(mut, k_graph_a, n + 1);
            mut[i] = subs[k];
            e = kiln_executor_create(mut, n, hm, z);
            if (e)
                CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
            kiln_executor_free(e);
            e = kiln_executor_create(mut, n, m, z);
            if (e)
                CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
            kiln_executor_free(e);
        }
    free(mut);
    CHECK(kiln_executor_create(NULL, 0, m, NULL) == NULL);
    CHECK(kiln_executor_create("[]", 2, m, NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "the top level must be an object");
    kiln_module_free(hm);
    kiln_npz_free(z);
    kiln_module_free(m);
}

/* ---- kernel status ------------------------------------------------------------ */

/* Graph B with kernel r calling `func` (an executor, or NULL with an error). */
static kiln_executor *graph_b_with(kiln_module *m, const char *func) {
    char to[64];
    snprintf(to, sizeof to, "\"func_name\": \"%s\"", func);
    char *j = replace(k_graph_b, "\"func_name\": \"relu\"", to);
    kiln_executor *e = j ? kiln_executor_create(j, strlen(j), m, NULL) : NULL;
    CHECK(e != NULL);
    if (!e)
        fprintf(stderr, "%s\n", kiln_last_error());
    free(j);
    return e;
}

static void test_kernel_status(void) {
    kiln_module *m = kiln_module_load(hand_module());
    CHECK(m != NULL);
    if (!m)
        return;
    /* an index out of range: KILN_ERR_RANGE naming the node and the function */
    kiln_executor *e = graph_b_with(m, "einx");
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_RANGE);
    CHECK_CONTAINS(kiln_last_error(), "node 1 'r' (function 'einx'): index out of range");
    CHECK_EQ_STR(kiln_status_str(KILN_ERR_RANGE), "index out of range");
    CHECK_EQ_INT(kiln_executor_set_check_div_zero(e, 1), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_RANGE);
    kiln_executor_free(e);
    /* division by zero: the defined value unless the run asks */
    e = graph_b_with(m, "edivz");
    CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
    CHECK_EQ_INT(kiln_executor_set_check_div_zero(e, 1), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "node 1 'r' (function 'edivz'): integer division by zero");
    double t[3];
    CHECK_EQ_INT(kiln_executor_run_profiled(e, t), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_executor_set_check_div_zero(e, 0), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
    CHECK_EQ_INT(kiln_executor_set_check_div_zero(NULL, 1), KILN_ERR_INVALID);
    /* the same through kiln_model_run's flags */
    kiln_model *model = kiln_executor_model(e);
    int64_t n = 16;
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    kiln_ndarray *y = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    const kiln_ndarray *ins[1] = {x};
    kiln_ndarray *outs[3] = {y, NULL, NULL};
    CHECK_EQ_INT(kiln_model_run(model, ins, outs, 0), KILN_OK);
    CHECK_EQ_INT(kiln_model_run(model, ins, outs, KILN_RUN_CHECK_DIV_ZERO), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "function 'edivz'): integer division by zero");
    CHECK_EQ_INT(kiln_model_run(model, ins, outs, 2), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "model_run: unknown flags 0x2");
    kiln_executor_free(e);
    /* several bits: out of memory first, then the index */
    e = graph_b_with(m, "eboth");
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_NOMEM);
    CHECK_CONTAINS(kiln_last_error(), "function 'eboth'): the kernel could not allocate memory");
    kiln_executor_free(e);
    /* a bit the ABI does not define is an error too */
    e = graph_b_with(m, "ebad");
    CHECK_EQ_INT(kiln_executor_run(e), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "function 'ebad'): the kernel returned 64");
    kiln_executor_free(e);
    kiln_ndarray_free(x);
    kiln_ndarray_free(y);
    kiln_module_free(m);
    /* packages for the CLI test of --check-div-zero and of index errors */
    static const char *const funcs[2][2] = {{"edivz", "exec_divzero.tar"},
                                            {"einx", "exec_index.tar"}};
    for (int k = 0; k < 2; k++) {
        char to[64];
        snprintf(to, sizeof to, "\"func_name\": \"%s\"", funcs[k][0]);
        char *j = replace(k_graph_b, "\"func_name\": \"relu\"", to);
        CHECK_EQ_INT(
            kiln_package_write(test_tmp_path(funcs[k][1]), j, strlen(j), hand_module(), NULL),
            KILN_OK);
        free(j);
    }
    CHECK_EQ_STR(kiln_status_str(KILN_OK), "ok");
    CHECK_EQ_STR(kiln_status_str(KILN_ERR_NOMEM), "out of memory");
    CHECK_EQ_STR(kiln_status_str((kiln_status)99), "unknown status");
}

/* ---- missing weights: "param_names" -------------------------------------------- */

static void test_param_names(void) {
    kiln_module *m = kiln_module_load(te_module());
    kiln_npz *z = params_a();
    static const char *const anchor = " \"output_names\"";
    static const struct {
        const char *names, *msg; /* msg NULL: accepted */
        int with_params, ninputs;
    } cases[] = {
        {"[\"b\"]", NULL, 1, 1},
        {"[\"b\"]",
         "node 1 'b': the weight 'b' is missing from mod.params (\"param_names\" "
         "lists it)",
         0, 0},
        {"[\"b\", \"x\"]", "node 0 'x': the weight 'x' is missing from mod.params", 1, 0},
        {"[]", NULL, 1, 2}, /* b is an input although mod.params has it */
        {"[\"b\", \"zz\"]", "param_names[1] 'zz' names no \"null\" node", 1, 0},
        {"[\"b\", \"b\"]", "param_names lists 'b' twice", 1, 0},
        {"[\"b\", 3]", "param_names[1] must be a non-empty string", 1, 0},
        {"\"b\"", "\"param_names\" must be a list of strings", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char to[256];
        snprintf(to, sizeof to, " \"param_names\": %s,\n%s", cases[i].names, anchor);
        char *j = replace(k_graph_a, anchor, to);
        kiln_executor *e =
            j ? kiln_executor_create(j, strlen(j), m, cases[i].with_params ? z : NULL) : NULL;
        if (cases[i].msg) {
            CHECK(e == NULL);
            CHECK_CONTAINS(kiln_last_error(), cases[i].msg);
        } else {
            CHECK(e != NULL);
            CHECK_EQ_INT(kiln_executor_num_inputs(e), cases[i].ninputs);
            if (e && cases[i].ninputs == 1)
                check_graph_a(e);
        }
        kiln_executor_free(e);
        /* a package whose mod.params lacks a listed weight is refused, naming it */
        if (i == 1) {
            const char *tar = test_tmp_path("exec_no_weight.tar");
            CHECK_EQ_INT(kiln_package_write(tar, j, strlen(j), te_module(), NULL), KILN_OK);
            CHECK(kiln_model_load(tar) == NULL);
            CHECK_CONTAINS(kiln_last_error(), "exec_no_weight.tar: mod.json: node 1 'b': the "
                                              "weight 'b' is missing from mod.params");
        }
        free(j);
    }
    kiln_npz_free(z);
    kiln_module_free(m);
}

/* ---- models shared by executors and by kiln_model_run --------------------------- */

static void test_model_api(void) {
    kiln_module *m = kiln_module_load(te_module());
    kiln_npz *z = params_a();
    kiln_model *model = kiln_model_create(k_graph_a, strlen(k_graph_a), m, z);
    kiln_npz_free(z);
    CHECK(model != NULL);
    if (!model) {
        fprintf(stderr, "%s\n", kiln_last_error());
        kiln_module_free(m);
        return;
    }
    CHECK_EQ_INT(kiln_model_num_inputs(model), 1);
    CHECK_EQ_STR(kiln_model_input_name(model, 0), "x");
    CHECK_EQ_INT(kiln_model_input_dtype(model, 0), KILN_FLOAT32);
    CHECK_EQ_INT(kiln_model_input_ndim(model, 0), 2);
    CHECK_EQ_INT(kiln_model_input_dim(model, 0, 0), 2);
    CHECK_EQ_INT(kiln_model_input_dim(model, 0, 2), -1);
    CHECK(kiln_model_input_name(model, 1) == NULL);
    CHECK_EQ_INT(kiln_model_input_dtype(model, -1), KILN_DTYPE_COUNT);
    CHECK_EQ_INT(kiln_model_num_outputs(model), 2);
    CHECK_EQ_STR(kiln_model_output_name(model, 1), "double");
    CHECK_EQ_INT(kiln_model_output_dtype(model, 1), KILN_FLOAT32);
    CHECK_EQ_INT(kiln_model_output_ndim(model, 1), 2);
    CHECK_EQ_INT(kiln_model_output_dim(model, 1, 1), 8);
    CHECK_EQ_INT(kiln_model_output_ndim(model, 2), -1);
    /* two executors over one model: shared weights, inputs of their own */
    kiln_executor *e1 = kiln_executor_create_from_model(model);
    kiln_executor *e2 = kiln_executor_create_from_model(model);
    CHECK(e1 && e2 && kiln_executor_model(e1) == model);
    kiln_ndarray *x1 = arr28(-2.0f), *x2 = arr28(5.0f), *b = arr28(1.0f);
    CHECK_EQ_INT(kiln_executor_set_input(e1, "x", x1), KILN_OK);
    CHECK_EQ_INT(kiln_executor_set_input(e2, "x", x2), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e1), KILN_OK);
    CHECK_EQ_INT(kiln_executor_run(e2), KILN_OK);
    const float *s1 = kiln_ndarray_data(kiln_executor_output(e1, 0));
    const float *s2 = kiln_ndarray_data(kiln_executor_output(e2, 0));
    const float *p1 = kiln_ndarray_data(x1), *p2 = kiln_ndarray_data(x2);
    const float *pb = kiln_ndarray_data(b);
    for (int i = 0; i < 16; i++) {
        CHECK_NEAR(s1[i], 3 * p1[i] + 2 * pb[i], 1e-5);
        CHECK_NEAR(s2[i], 3 * p2[i] + 2 * pb[i], 1e-5);
    }
    /* kiln_model_run: outputs into the caller's arrays, any strides in */
    int64_t shape[2] = {2, 8}, big_shape[2] = {2, 16}, strides[2] = {16, 2};
    kiln_ndarray *sum = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
    kiln_ndarray *dbl = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
    kiln_ndarray *big = kiln_ndarray_empty(KILN_FLOAT32, 2, big_shape);
    kiln_ndarray *strided = kiln_ndarray_view(big, 2, shape, strides, 0);
    CHECK_EQ_INT(kiln_ndarray_copy(strided, x2), KILN_OK);
    const kiln_ndarray *ins[1] = {strided};
    kiln_ndarray *outs[2] = {sum, dbl};
    CHECK_EQ_INT(kiln_model_run(model, ins, outs, 0), KILN_OK);
    const float *ps = kiln_ndarray_data(sum), *pd = kiln_ndarray_data(dbl);
    for (int i = 0; i < 16; i++) {
        CHECK_NEAR(ps[i], s2[i], 0);
        CHECK_NEAR(pd[i], 2 * (p2[i] + pb[i]), 1e-5);
    }
    kiln_ndarray *only[2] = {NULL, dbl}; /* an output may be skipped */
    CHECK_EQ_INT(kiln_model_run(model, ins, only, 0), KILN_OK);
    /* bad arguments name the port */
    const kiln_ndarray *none[1] = {NULL};
    CHECK_EQ_INT(kiln_model_run(model, none, outs, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "model_run: no value for input 0 'x'");
    CHECK_EQ_INT(kiln_model_run(model, NULL, outs, 0), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_model_run(NULL, ins, outs, 0), KILN_ERR_INVALID);
    const kiln_ndarray *wrong_in[1] = {big};
    CHECK_EQ_INT(kiln_model_run(model, wrong_in, outs, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(),
                   "model_run: input 'x': expected float32[2, 8], got float32[2, 16]");
    kiln_ndarray *wrong_out[2] = {sum, big};
    CHECK_EQ_INT(kiln_model_run(model, ins, wrong_out, 0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "model_run: output 'double': expected float32[2, 8]");
    /* the model lives while an executor holds it */
    CHECK(kiln_model_retain(model) == model);
    kiln_model_free(model);
    kiln_model_free(model);
    CHECK_EQ_INT(kiln_executor_run(e1), KILN_OK);
    CHECK_NEAR(((const float *)kiln_ndarray_data(kiln_executor_output(e1, 0)))[3], s1[3], 0);
    kiln_executor_free(e1);
    CHECK_EQ_INT(kiln_executor_run(e2), KILN_OK);
    kiln_executor_free(e2);
    CHECK(kiln_executor_create_from_model(NULL) == NULL);
    CHECK(kiln_model_create(NULL, 0, m, NULL) == NULL);
    kiln_model_free(NULL);
    kiln_ndarray_free(strided);
    kiln_ndarray_free(big);
    kiln_ndarray_free(sum);
    kiln_ndarray_free(dbl);
    kiln_ndarray_free(x1);
    kiln_ndarray_free(x2);
    kiln_ndarray_free(b);
    kiln_module_free(m);
}

/* ---- malformed packages ------------------------------------------------------- */

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*len + 1);
    *len = fread(b, 1, *len, f);
    fclose(f);
    return b;
}

/* A tar with an `extra` member first, then the manifest, mod.so (real),
 * mod.json and mod.params (if with_params). */
static const char *write_tar(const char *name, const char *so_name, int with_params,
                             const char *extra_name, char extra_type) {
    static char path[1024];
    snprintf(path, sizeof path, "%s", test_tmp_path(name));
    size_t so_len = 0, p_len = 0;
    char *so = slurp(te_module(), &so_len);
    kiln_npz *z = params_a();
    kiln_npz_save(z, test_tmp_path("exec_p.npz"), 0);
    kiln_npz_free(z);
    char *params = slurp(test_tmp_path("exec_p.npz"), &p_len);
    FILE *f = fopen(path, "wb");
    if (extra_name)
        pkg_tar_add(f, extra_name, "evil", 4, extra_type);
    const char *names[3] = {"mod.so", "mod.json", "mod.params"};
    const void *data[3] = {so, k_graph_a, params};
    size_t lens[3] = {so_len, strlen(k_graph_a), p_len};
    pkg_tar_add_manifest(f, with_params ? 3 : 2, names, data, lens);
    pkg_tar_add(f, so_name, so, so_len, '0');
    pkg_tar_add(f, "mod.json", k_graph_a, strlen(k_graph_a), '0');
    if (with_params)
        pkg_tar_add(f, "./mod.params", params, p_len, '0');
    static const char zero[1024];
    fwrite(zero, 1, sizeof zero, f);
    fclose(f);
    free(so);
    free(params);
    return path;
}

/* The package of write_tar with its mod.so cut to pct percent of its bytes. */
static const char *write_cut_so_tar(const char *name, int pct) {
    static char path[1024];
    snprintf(path, sizeof path, "%s", test_tmp_path(name));
    size_t so_len = 0, p_len = 0;
    char *so = slurp(te_module(), &so_len);
    kiln_npz *z = params_a();
    kiln_npz_save(z, test_tmp_path("exec_p.npz"), 0);
    kiln_npz_free(z);
    char *params = slurp(test_tmp_path("exec_p.npz"), &p_len);
    FILE *f = fopen(path, "wb");
    const char *names[3] = {"mod.so", "mod.json", "mod.params"};
    const void *data[3] = {so, k_graph_a, params};
    size_t lens[3] = {so_len * (size_t)pct / 100, strlen(k_graph_a), p_len};
    pkg_tar_add_manifest(f, 3, names, data, lens); /* vouches for the cut mod.so */
    pkg_tar_add(f, "mod.so", so, so_len * (size_t)pct / 100, '0');
    pkg_tar_add(f, "mod.json", k_graph_a, strlen(k_graph_a), '0');
    pkg_tar_add(f, "mod.params", params, p_len, '0');
    static const char zero[1024];
    fwrite(zero, 1, sizeof zero, f);
    fclose(f);
    free(so);
    free(params);
    return path;
}

static void expect_load_error(const char *path, const char *msg) {
    kiln_executor *e = kiln_executor_load(path);
    CHECK(e == NULL);
    CHECK_CONTAINS(kiln_last_error(), msg);
    kiln_executor_free(e);
}

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_bad_packages(void) {
    /* extracted files go to a private folder under TMPDIR, removed on free */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", test_tmp_path("exec_tmpdir"));
    mkdir(tmp, 0700);
    setenv("TMPDIR", tmp, 1);
    /* names as GNU tar writes them (./mod.so, a ./ folder) are fine */
    const char *ok = write_tar("exec_gnu.tar", "./mod.so", 1, "./", '5');
    kiln_executor *e = kiln_executor_load(ok);
    CHECK(e != NULL);
    if (!e)
        fprintf(stderr, "%s\n", kiln_last_error());
    CHECK_EQ_INT(count_files(tmp), 0); /* mod.so is loaded from memory: no file, even now */
    kiln_executor_free(e);
    CHECK_EQ_INT(count_files(tmp), 0);
    expect_load_error(write_tar("exec_t1.tar", "mod.so", 1, "../evil", '0'),
                      "unsafe member name '../evil'");
    expect_load_error(write_tar("exec_t2.tar", "mod.so", 1, "/etc/evil", '0'),
                      "unsafe member name '/etc/evil'");
    expect_load_error(write_tar("exec_t3.tar", "mod.so", 1, "a/../../evil", '0'), "unsafe");
    expect_load_error(write_tar("exec_t4.tar", "mod.so", 1, "link", '2'),
                      "member 'link' has tar type '2': only regular files");
    expect_load_error(write_tar("exec_t5.tar", "mod.so", 0, NULL, 0),
                      "exec_t5.tar: no member 'mod.params'");
    expect_load_error(write_tar("exec_t6.tar", "mod.so", 1, "mod.json", '0'),
                      "member 'mod.json' appears twice");
    expect_load_error(write_tar("exec_t7.tar", "lib.so", 1, NULL, 0), "no member 'mod.so'");
    expect_load_error(test_tmp_path("exec_none.tar"), "cannot open");
    /* a corrupt mod.so or mod.params is reported with the package's name */
    const char *bad_so = test_tmp_path("exec_t8.tar");
    FILE *f = fopen(bad_so, "wb");
    const char *names[3] = {"mod.so", "mod.json", "mod.params"};
    const void *data[3] = {"not elf", "{}", "not a zip"};
    size_t lens[3] = {7, 2, 9};
    pkg_tar_add_manifest(f, 3, names, data, lens);
    pkg_tar_add(f, "mod.so", "not elf", 7, '0');
    pkg_tar_add(f, "mod.json", "{}", 2, '0');
    pkg_tar_add(f, "mod.params", "not a zip", 9, '0');
    fclose(f);
    expect_load_error(bad_so, "exec_t8.tar: mod.params");
    CHECK_EQ_INT(count_files(tmp), 0);
    /* a truncated mod.so is refused before dlopen (which died with SIGBUS);
     * exec_so50.tar and exec_so90.tar are also for the CLI test */
    expect_load_error(write_cut_so_tar("exec_so50.tar", 50), "exec_so50.tar: member mod.so (");
    CHECK_CONTAINS(kiln_last_error(), "is truncated or corrupt");
    expect_load_error(write_cut_so_tar("exec_so90.tar", 90), "exec_so90.tar: member mod.so (");
    CHECK_CONTAINS(kiln_last_error(), "is truncated or corrupt");
    for (int pct = 1; pct < 100; pct += 7) {
        char name[64];
        snprintf(name, sizeof name, "exec_so_cut%d.tar", pct);
        expect_load_error(write_cut_so_tar(name, pct), "member mod.so (");
    }
    kiln_executor *whole = kiln_executor_load(write_cut_so_tar("exec_so100.tar", 100));
    CHECK(whole != NULL); /* the uncut mod.so passes the check */
    kiln_executor_free(whole);
    CHECK_EQ_INT(count_files(tmp), 0);
    /* truncation at many lengths, header corruption, sizes past the end */
    const char *good = test_tmp_path("exec_model.tar"), *cut = test_tmp_path("exec_cut.tar");
    size_t len = 0;
    char *bytes = slurp(good, &len);
    CHECK(bytes != NULL && len > 4096);
    if (!bytes)
        return;
    for (size_t k = 0; k < len; k += k < 2048 || k + 2048 > len ? 61 : 4093) {
        f = fopen(cut, "wb");
        fwrite(bytes, 1, k, f);
        fclose(f);
        e = kiln_executor_load(cut);
        /* only the end marker (two zero blocks) may be cut, a whole block at a time */
        if (k < len - 1024 || (k % 512 && k < len - 512)) {
            CHECK(e == NULL);
            if (e)
                fprintf(stderr, "  cut at %zu of %zu loaded\n", k, len);
        }
        if (!e)
            CHECK(kiln_last_error()[0] != 0);
        kiln_executor_free(e);
    }
    for (size_t k = 512; k + 1024 < len; k += 512) { /* every header boundary */
        f = fopen(cut, "wb");
        fwrite(bytes, 1, k, f);
        fclose(f);
        e = kiln_executor_load(cut);
        CHECK(e == NULL);
        kiln_executor_free(e);
    }
    CHECK_EQ_INT(count_files(tmp), 0);
    char *copy = malloc(len);
    memcpy(copy, bytes, len);
    copy[3] ^= 1; /* inside the first name: the checksum no longer matches */
    f = fopen(cut, "wb");
    fwrite(copy, 1, len, f);
    fclose(f);
    expect_load_error(cut, "bad header checksum at byte 0");
    memcpy(copy, bytes, len);
    memcpy(copy + 124, "77777777777", 11); /* the manifest's size: far past the end */
    unsigned sum = 0;
    memset(copy + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += (unsigned char)copy[i];
    snprintf(copy + 148, 8, "%06o", sum);
    f = fopen(cut, "wb");
    fwrite(copy, 1, len, f);
    fclose(f);
    expect_load_error(cut, "member 'manifest.json' has a bad size or reaches past the end");
    f = fopen(cut, "wb");
    fputs("hello", f);
    fclose(f);
    expect_load_error(cut, "not a tar file (shorter than one header)");
    f = fopen(cut, "wb");
    fwrite(bytes, 1, 600, f);
    fclose(f);
    expect_load_error(cut, "reaches past the end"); /* the first member's data is cut */
    CHECK_EQ_INT(count_files(tmp), 0);
    free(copy);
    free(bytes);
    unsetenv("TMPDIR");
}

TEST_MAIN(TEST(test_graph_a), TEST(test_package_roundtrip), TEST(test_graph_b),
          TEST(test_bad_plans), TEST(test_kernel_status), TEST(test_param_names),
          TEST(test_model_api), TEST(test_bad_packages))
