/* test_runtime_module.c: built modules: a hand-written module that follows
 * module_abi.h is compiled with cc, loaded and called; every argument check,
 * save/load, owned temporary folders and malformed modules are exercised. */
#include <stdint.h>
#include <sys/stat.h>

#include "check.h"
#include "kiln/runtime.h"
#include "runtime/module_abi.h"
#include "runtime/runtime_internal.h"

/* The module, with @META@ replaced by the metadata string literal. It
 * includes the runtime's own module_abi.h, as a module of another compiler
 * would. */
static const char *k_source = "#include \"module_abi.h\"\n"
                              "static const kiln_module_api *g_api;\n"
                              "static int g_chunks;\n"
                              "int kiln_module_init(const kiln_module_api *api) {\n"
                              "    if (api->version != INIT_VERSION) return 1;\n"
                              "    g_api = api;\n"
                              "    return 0;\n"
                              "}\n"
                              "const char kiln_module_meta[] = @META@;\n"
                              "typedef struct { const float *a, *b; float *c; } add_args;\n"
                              "static int add_chunk(int64_t b, int64_t e, void *p) {\n"
                              "    add_args *x = p;\n"
                              "    __atomic_fetch_add(&g_chunks, 1, __ATOMIC_SEQ_CST);\n"
                              "    for (int64_t i = b; i < e; i++) x->c[i] = x->a[i] + x->b[i];\n"
                              "    return 0;\n"
                              "}\n"
                              "int32_t myadd(void *const *args, const int64_t *vars) {\n"
                              "    add_args x = {args[0], args[1], args[2]};\n"
                              "    g_chunks = 0;\n"
                              "    return g_api->parallel_for(vars[0], add_chunk, &x);\n"
                              "}\n"
                              "int32_t twice(void *const *args, const int64_t *vars) {\n"
                              "    const int32_t *x = args[0];\n"
                              "    int32_t *y = args[1];\n"
                              "    for (int64_t i = 0; i < 3 * vars[0]; i++) y[i] = 2 * x[i];\n"
                              "    return 0;\n"
                              "}\n"
                              "int32_t oom(void *const *args, const int64_t *vars) { return 1; }\n"
                              "int32_t last_chunks(void *const *args, const int64_t *vars) {\n"
                              "    *(int64_t *)args[0] = g_chunks;\n"
                              "    return 0;\n"
                              "}\n";

#define GOOD_META                                                                                  \
    "kiln-module 1\\n"                                                                             \
    "func myadd 3 1\\nvar n\\narg A float32 1 $0\\narg B float32 1 $0\\narg C float32 1 $0\\n"     \
    "func twice 2 1\\nvar m\\narg X int32 2 3 $0\\narg Y int32 2 3 $0\\n"                          \
    "func oom 1 0\\narg Z float64 0\\n"                                                            \
    "func last_chunks 1 0\\narg R int64 0\\n"                                                      \
    "end\\n"

/* Compile the module with metadata `meta` (a C string literal's contents) to
 * KILN_TEST_TMP/name.so; returns the path or NULL. */
static const char *build_module(const char *name, const char *meta, int init_version) {
    static char so[8][1024];
    static int k;
    char c_path[1024], cmd[4096];
    snprintf(c_path, sizeof c_path, "%s.c", test_tmp_path(name));
    char *out = so[k++ & 7];
    snprintf(out, 1024, "%s.so", test_tmp_path(name));
    FILE *f = fopen(c_path, "w");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    const char *at = strstr(k_source, "@META@");
    fprintf(f, "#define INIT_VERSION %d\n%.*s\"%s\"%s", init_version, (int)(at - k_source),
            k_source, meta, at + 6);
    fclose(f);
    const char *src = getenv("KILN_SOURCE_DIR");
    snprintf(cmd, sizeof cmd, "cc -O2 -shared -fPIC -I'%s/src/runtime' -o '%s' '%s'",
             src ? src : ".", out, c_path);
    int rc = system(cmd);
    CHECK_EQ_INT(rc, 0);
    return rc == 0 ? out : NULL;
}

static kiln_ndarray *vec(kiln_dtype dt, int64_t n) {
    return kiln_ndarray_empty(dt, 1, &n);
}

static void test_load_and_call(void) {
    const char *so = build_module("rt_mod_good", GOOD_META, KILN_MODULE_ABI_VERSION);
    if (!so)
        return;
    kiln_module *m = kiln_module_load(so);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "  %s\n", kiln_last_error());
        return;
    }
    CHECK_EQ_INT(kiln_module_function_count(m), 4);
    kiln_function *f = kiln_module_get_function(m, "myadd");
    CHECK(f != NULL && f == kiln_module_function_at(m, 0));
    CHECK(kiln_module_function_at(m, 4) == NULL);
    CHECK_EQ_STR(kiln_function_name(f), "myadd");
    CHECK_EQ_INT(kiln_function_num_args(f), 3);
    kiln_clear_error();
    CHECK(kiln_module_get_function(m, "nope") == NULL);
    CHECK_CONTAINS(kiln_last_error(),
                   "no function 'nope' (it has: myadd, twice, oom, last_chunks)");

    CHECK_EQ_INT(kiln_set_num_threads(2), KILN_OK);
    int64_t n = 1000;
    kiln_ndarray *A = vec(KILN_FLOAT32, n), *B = vec(KILN_FLOAT32, n), *C = vec(KILN_FLOAT32, n);
    float *a = kiln_ndarray_data(A), *b = kiln_ndarray_data(B), *c = kiln_ndarray_data(C);
    for (int i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)i;
    }
    kiln_ndarray *args[3] = {A, B, C};
    CHECK_EQ_INT(kiln_function_call(f, 3, args), KILN_OK);
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= c[i] == 1.5f * (float)i;
    CHECK(ok);
    /* The kernel's parallel loop went through the pool: one chunk per thread. */
    kiln_ndarray *R = kiln_ndarray_empty(KILN_INT64, 0, NULL);
    kiln_function *lc = kiln_module_get_function(m, "last_chunks");
    CHECK_EQ_INT(kiln_function_call(lc, 1, &R), KILN_OK);
    CHECK_EQ_INT(*(int64_t *)kiln_ndarray_data(R), 2);

    /* Fixed and symbolic dims together. */
    int64_t s35[2] = {3, 5};
    kiln_ndarray *X = kiln_ndarray_empty(KILN_INT32, 2, s35);
    kiln_ndarray *Y = kiln_ndarray_empty(KILN_INT32, 2, s35);
    for (int i = 0; i < 15; i++)
        ((int32_t *)kiln_ndarray_data(X))[i] = i;
    kiln_ndarray *xy[2] = {X, Y};
    kiln_function *tw = kiln_module_get_function(m, "twice");
    CHECK_EQ_INT(kiln_function_call(tw, 2, xy), KILN_OK);
    CHECK_EQ_INT(((int32_t *)kiln_ndarray_data(Y))[14], 28);

    /* A kernel that reports an allocation failure. */
    kiln_ndarray *Z = kiln_ndarray_empty(KILN_FLOAT64, 0, NULL);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_function_call(kiln_module_get_function(m, "oom"), 1, &Z), KILN_ERR_NOMEM);
    CHECK_CONTAINS(kiln_last_error(), "oom: kernel could not allocate memory");

    /* Save, then load the copy. */
    const char *copy = test_tmp_path("rt_mod_copy.so");
    CHECK_EQ_INT(kiln_module_save(m, copy), KILN_OK);
    CHECK_EQ_INT(kiln_module_save(m, so), KILN_OK); /* onto itself: a no-op */
    kiln_module *m2 = kiln_module_load(copy);
    CHECK(m2 != NULL);
    if (m2) {
        memset(c, 0, (size_t)n * sizeof(float));
        CHECK_EQ_INT(kiln_function_call(kiln_module_get_function(m2, "myadd"), 3, args), KILN_OK);
        CHECK(c[999] == 1.5f * 999);
    }
    kiln_module_free(m2);
    CHECK_EQ_INT(kiln_module_save(m, "/nonexistent-dir/m.so"), KILN_ERR_IO);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent-dir/m.so");

    kiln_ndarray_free(A);
    kiln_ndarray_free(B);
    kiln_ndarray_free(C);
    kiln_ndarray_free(R);
    kiln_ndarray_free(X);
    kiln_ndarray_free(Y);
    kiln_ndarray_free(Z);
    kiln_module_free(m);
    kiln_module_free(NULL);
}

static void expect_call_error(kiln_function *f, int nargs, kiln_ndarray **args, const char *msg) {
    kiln_clear_error();
    CHECK_EQ_INT(kiln_function_call(f, nargs, args), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), msg);
}

static void test_call_validation(void) {
    const char *so = build_module("rt_mod_good2", GOOD_META, KILN_MODULE_ABI_VERSION);
    kiln_module *m = so ? kiln_module_load(so) : NULL;
    CHECK(m != NULL);
    if (!m)
        return;
    kiln_function *f = kiln_module_get_function(m, "myadd");
    kiln_ndarray *A = vec(KILN_FLOAT32, 128), *B = vec(KILN_FLOAT32, 128);
    kiln_ndarray *C = vec(KILN_FLOAT32, 128), *Bi = vec(KILN_INT32, 128);
    kiln_ndarray *C100 = vec(KILN_FLOAT32, 100);
    int64_t s2[2] = {128, 1};
    kiln_ndarray *B2 = kiln_ndarray_empty(KILN_FLOAT32, 2, s2);
    int64_t half[1] = {64}, st2[1] = {2};
    kiln_ndarray *big = vec(KILN_FLOAT32, 256);
    kiln_ndarray *strided = kiln_ndarray_view(big, 1, half, st2, 0);
    kiln_ndarray *A64 = vec(KILN_FLOAT32, 64), *C64 = vec(KILN_FLOAT32, 64);

    kiln_ndarray *args[3] = {A, B, C};
    expect_call_error(f, 2, args, "myadd: expected 3 arguments, got 2");
    expect_call_error(f, 3, NULL, "myadd: the argument array is NULL");
    kiln_ndarray *wrong_dtype[3] = {A, Bi, C};
    expect_call_error(f, 3, wrong_dtype, "myadd: argument 1 'B': expected float32, got int32");
    kiln_ndarray *wrong_rank[3] = {A, B2, C};
    expect_call_error(f, 3, wrong_rank, "myadd: argument 1 'B': expected 1 dimensions, got 2");
    kiln_ndarray *wrong_n[3] = {A, B, C100};
    expect_call_error(f, 3, wrong_n,
                      "myadd: argument 2 'C' dim 0 is 100, but n = 128 from argument 0 'A'");
    kiln_ndarray *with_null[3] = {A, NULL, C};
    expect_call_error(f, 3, with_null, "myadd: argument 1 'B' is NULL");
    kiln_ndarray *non_contig[3] = {A64, strided, C64};
    expect_call_error(f, 3, non_contig, "myadd: argument 1 'B' is not contiguous; copy it first");
    /* After a copy it works. */
    kiln_ndarray *B64 = vec(KILN_FLOAT32, 64);
    CHECK_EQ_INT(kiln_ndarray_copy(B64, strided), KILN_OK);
    kiln_ndarray *copied[3] = {A64, B64, C64};
    CHECK_EQ_INT(kiln_function_call(f, 3, copied), KILN_OK);

    kiln_function *tw = kiln_module_get_function(m, "twice");
    int64_t s45[2] = {4, 5}, s35[2] = {3, 5}, s36[2] = {3, 6};
    kiln_ndarray *X45 = kiln_ndarray_empty(KILN_INT32, 2, s45);
    kiln_ndarray *X35 = kiln_ndarray_empty(KILN_INT32, 2, s35);
    kiln_ndarray *Y36 = kiln_ndarray_empty(KILN_INT32, 2, s36);
    kiln_ndarray *fixed_bad[2] = {X45, X35};
    expect_call_error(tw, 2, fixed_bad, "twice: argument 0 'X' dim 0 is 4, expected 3");
    kiln_ndarray *sym_bad[2] = {X35, Y36};
    expect_call_error(tw, 2, sym_bad,
                      "twice: argument 1 'Y' dim 1 is 6, but m = 5 from argument 0 'X'");
    /* Zero-size symbolic dims are fine. */
    kiln_ndarray *E0 = vec(KILN_FLOAT32, 0);
    kiln_ndarray *empty3[3] = {E0, E0, E0};
    CHECK_EQ_INT(kiln_function_call(f, 3, empty3), KILN_OK);
    CHECK_EQ_INT(kiln_function_call(NULL, 0, NULL), KILN_ERR_INVALID);

    kiln_ndarray *all[] = {A, B, C, Bi, C100, B2, strided, big, A64, C64, B64, X45, X35, Y36, E0};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        kiln_ndarray_free(all[i]);
    kiln_module_free(m);
}

static void test_owned_tmpdir(void) {
    const char *so = build_module("rt_mod_good3", GOOD_META, KILN_MODULE_ABI_VERSION);
    if (!so)
        return;
    kiln_module *m = kiln_module_load(so);
    if (!m)
        return;
    const char *dir = test_tmp_path("rt_owned_dir");
    char inner[1100], extra[1100];
    mkdir(dir, 0755);
    snprintf(inner, sizeof inner, "%s/lib.so", dir);
    snprintf(extra, sizeof extra, "%s/source.c", dir);
    CHECK_EQ_INT(kiln_module_save(m, inner), KILN_OK);
    kiln_module_free(m);
    FILE *f = fopen(extra, "w");
    if (f)
        fclose(f);
    kiln_module *o = kiln_module_load_owned(inner, dir);
    CHECK(o != NULL);
    struct stat st;
    CHECK_EQ_INT(stat(dir, &st), 0);
    CHECK(o && kiln_module_get_function(o, "twice") != NULL);
    kiln_module_free(o);
    CHECK(stat(dir, &st) != 0); /* the folder and its files are gone */
}

static void test_bad_modules(void) {
    /* A shared object that is not a kiln module. */
    char c_path[1100], so_path[1100], cmd[2400];
    snprintf(c_path, sizeof c_path, "%s", test_tmp_path("rt_not_kiln.c"));
    snprintf(so_path, sizeof so_path, "%s", test_tmp_path("rt_not_kiln.so"));
    FILE *f = fopen(c_path, "w");
    if (f) {
        fputs("int foo(void) { return 1; }\n", f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", so_path, c_path);
    CHECK_EQ_INT(system(cmd), 0);
    kiln_clear_error();
    CHECK(kiln_module_load(so_path) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "rt_not_kiln.so: not a kiln module (no kiln_module_meta)");

    /* Not a shared object at all, and a missing file. */
    CHECK(kiln_module_load(c_path) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "rt_not_kiln.c: cannot load module");
    CHECK(kiln_module_load(test_tmp_path("rt_missing.so")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "rt_missing.so");
    CHECK(kiln_module_load(NULL) == NULL);

    /* A module that wants another ABI version. */
    const char *so = build_module("rt_mod_abi", GOOD_META, 7);
    CHECK(so && kiln_module_load(so) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "ABI version 3");

    static const struct {
        const char *meta, *error;
    } cases[] = {
        {"kiln-module 2\\nend\\n", "line 1: unsupported metadata version"},
        {"kiln module 1\\nend\\n", "line 1: expected 'kiln-module 1'"},
        {"", "line 1: expected 'kiln-module 1'"},
        {"kiln-module 1\\nfunc myadd 1 3\\nvar n\\narg A float32 1 $0\\n",
         "line 4: expected 'var' (got 'arg')"},
        {"kiln-module 1\\nfunc myadd 2 1\\nvar n\\narg A float32 1 $0\\n",
         "line 4: unexpected end of metadata"},
        {"kiln-module 1\\nfunc myadd 1 1\\nvar n\\narg A float32 1 $0\\n", "missing 'end'"},
        {"kiln-module 1\\nfunc myadd 1 1\\nvar n\\narg A float33 1 $0\\nend\\n",
         "line 4: unknown dtype (got 'float33')"},
        {"kiln-module 1\\nfunc myadd 1 1\\nvar n\\narg A float32 1 $1\\nend\\n",
         "line 4: symbolic dim names no declared var (got '$1')"},
        {"kiln-module 1\\nfunc myadd 1 1\\nvar n\\narg A  float32 1 $0\\nend\\n",
         "line 4: empty field"},
        {"kiln-module 1\\nfunc myadd 1 1\\nvar n\\narg A float32 2 $0\\nend\\n",
         "line 4: the number of dims does not match NDIM"},
        {"kiln-module 1\\nfunc myadd 1 1\\nvar n\\narg A float32 1 -3\\nend\\n",
         "line 4: bad dim (got '-3')"},
        {"kiln-module 1\\nfunc myadd 1 1\\narg A float32 1 $0\\nend\\n",
         "line 3: expected 'var' (got 'arg')"},
        {"kiln-module 1\\nfunc myadd x 1\\nend\\n", "line 2: expected 'func NAME NARGS NVARS'"},
        {"kiln-module 1\\nfunk myadd 1 0\\nend\\n", "line 2: expected 'func' or 'end'"},
        {"kiln-module 1\\nfunc ghost 0 0\\nend\\n", "function 'ghost' is listed but not exported"},
        {"kiln-module 1\\nfunc oom 0 0\\nfunc oom 0 0\\nend\\n", "line 3: duplicate function"},
        {"kiln-module 1\\nfunc oom 1 1\\nvar k\\narg Z float64 0\\nend\\n",
         "line 4: var is not the size of any argument dim (got 'k')"},
        {"kiln-module 1\\nend\\nfunc oom 0 0\\n", "line 3: text after 'end'"},
        {"kiln-module 1\\nfunc oom 1 0\\narg Z handle 0\\nend\\n", "line 3: unknown dtype"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "rt_mod_bad%zu", i);
        so = build_module(name, cases[i].meta, KILN_MODULE_ABI_VERSION);
        if (!so)
            continue;
        kiln_clear_error();
        kiln_module *m = kiln_module_load(so);
        CHECK(m == NULL);
        CHECK_CONTAINS(kiln_last_error(), cases[i].error);
        CHECK_CONTAINS(kiln_last_error(), name);
        kiln_module_free(m);
    }
    /* The smallest valid module: no functions. */
    so = build_module("rt_mod_empty", "kiln-module 1\\nend\\n", KILN_MODULE_ABI_VERSION);
    kiln_module *m = so ? kiln_module_load(so) : NULL;
    CHECK(m != NULL && kiln_module_function_count(m) == 0);
    kiln_module_free(m);
}

/* ---- modules without a shared object, packages read in memory ---- */

static int32_t k_double_calls;
static int32_t k_double(void *const *args, const int64_t *vars) {
    const float *x = args[0];
    float *y = args[1];
    for (int64_t i = 0; i < vars[0]; i++)
        y[i] = 2 * x[i];
    k_double_calls++;
    return 0;
}

static kiln_kernel_fn lookup_double(void *user, const char *name) {
    (void)user;
    return strcmp(name, "dbl") == 0 ? k_double : NULL;
}

#define DBL_META "kiln-module 1\nfunc dbl 2 1\nvar n\narg X float32 1 $0\narg Y float32 1 $0\nend\n"

/* kiln_module_from_meta: the metadata is checked as strictly as a loaded
 * module's, each function's kernel comes from the lookup, calls are checked
 * against the signature, and there is no shared object to save. */
static void test_module_from_meta(void) {
    kiln_module *m = kiln_module_from_meta("in-process", DBL_META, lookup_double, NULL);
    CHECK(m != NULL);
    kiln_function *f = m ? kiln_module_get_function(m, "dbl") : NULL;
    CHECK(f != NULL);
    kiln_ndarray *a[2] = {vec(KILN_FLOAT32, 5), vec(KILN_FLOAT32, 5)};
    for (int i = 0; i < 5; i++)
        ((float *)kiln_ndarray_data(a[0]))[i] = (float)i;
    k_double_calls = 0;
    if (f)
        CHECK_EQ_INT(kiln_function_call(f, 2, a), KILN_OK);
    CHECK_EQ_INT(k_double_calls, 1);
    CHECK(((float *)kiln_ndarray_data(a[1]))[4] == 8.0f);
    kiln_ndarray *bad[2] = {a[0], vec(KILN_FLOAT32, 4)};
    if (f)
        CHECK(kiln_function_call(f, 2, bad) != KILN_OK); /* n = 5 from X, 4 from Y */
    CHECK_EQ_INT(kiln_module_save(m, test_tmp_path("rt_from_meta.so")), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "in-process: the module has no shared object to save");
    kiln_ndarray_free(bad[1]);
    kiln_ndarray_free(a[0]);
    kiln_ndarray_free(a[1]);
    kiln_module_free(m);
    CHECK(kiln_module_from_meta("x", "kiln-module 1\nfunc other 0 0\nend\n", lookup_double, NULL) ==
          NULL);
    CHECK_CONTAINS(kiln_last_error(), "x: function 'other' is listed but not exported");
    CHECK(kiln_module_from_meta("x", "kiln-module 1\nfunc dbl 1 1\nvar n\nend\n", lookup_double,
                                NULL) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "x: module metadata line 4: expected 'arg' (got 'end')");
    CHECK(kiln_module_from_meta("x", DBL_META, NULL, NULL) == NULL);
    kiln_clear_error();
}

/* kiln_package_parse reads the members of a package image without loading
 * mod.so; a truncated image or one without mod.json is an error. */
static void test_package_parse(void) {
    const char *so = test_tmp_path("rt_pkg_meta.txt");
    FILE *f = fopen(so, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(DBL_META, f);
    fclose(f);
    kiln_npz *z = kiln_npz_new();
    kiln_ndarray *w = vec(KILN_INT32, 3);
    CHECK_EQ_INT(kiln_npz_add(z, "w", w), KILN_OK);
    const char *json = "{\"nodes\": []}";
    const char *tar = test_tmp_path("rt_pkg.tar");
    CHECK_EQ_INT(kiln_package_write(tar, json, strlen(json), so, z), KILN_OK);
    size_t len = 0;
    char *img = kiln_read_file(tar, &len);
    CHECK(img != NULL && len > 2048);
    char *text = NULL;
    unsigned char *sob = NULL;
    size_t text_len = 0, so_len = 0;
    kiln_npz *params = NULL;
    CHECK_EQ_INT(kiln_package_parse(img, len, "img", &text, &text_len, &sob, &so_len, &params),
                 KILN_OK);
    CHECK_EQ_STR(text, json);
    CHECK_EQ_INT(text_len, strlen(json));
    CHECK(so_len == strlen(DBL_META) && sob && memcmp(sob, DBL_META, so_len) == 0);
    CHECK(params && kiln_npz_count(params) == 1 && kiln_npz_get(params, "w") != NULL);
    free(text);
    free(sob);
    kiln_npz_free(params);
    /* cut inside mod.params' data (its last 512-byte block before the two
       that end the archive); then only the first member */
    CHECK(kiln_package_parse(img, len - 1024 - 412, "img", &text, &text_len, &sob, &so_len,
                             &params) == KILN_ERR_IO);
    CHECK(text == NULL && sob == NULL && params == NULL);
    size_t mlen = (size_t)strtoull(img + 124, NULL, 8); /* manifest.json comes first */
    size_t first = 512 + (mlen + 511) / 512 * 512 + 512 + (strlen(DBL_META) + 511) / 512 * 512;
    CHECK(kiln_package_parse(img, first, "img", &text, &text_len, &sob, &so_len, &params) ==
          KILN_ERR_IO);
    CHECK_CONTAINS(kiln_last_error(), "img: no member 'mod.json'");
    CHECK(kiln_package_parse(img, 0, "img", &text, &text_len, &sob, &so_len, &params) ==
          KILN_ERR_IO);
    kiln_clear_error();
    free(img);
    kiln_ndarray_free(w);
    kiln_npz_free(z);
}

TEST_MAIN(TEST(test_load_and_call), TEST(test_call_validation), TEST(test_owned_tmpdir),
          TEST(test_bad_modules), TEST(test_module_from_meta), TEST(test_package_parse))
