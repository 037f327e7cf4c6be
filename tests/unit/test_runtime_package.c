/* test_runtime_package.c: package format 2 (include/kiln/runtime.h). The
 * manifest is checked before anything of a package is used: missing, not
 * first, of another format, version or ABI, a member listed twice, missing,
 * unlisted or extra, a size or a SHA-256 that disagrees; each gets an error
 * naming the package and the member. mod.so is loaded from memory, so
 * nothing is written to $TMPDIR; two packages loaded at once stay distinct.
 * kiln_package_inspect describes a package without loading mod.so: a
 * module whose ELF constructor writes a file is inspected and the file
 * never appears (loading it, as a control, runs the constructor).
 * Leaves pkg_good.tar, pkg_ctor.tar, pkg_nomanifest.tar, pkg_digest.tar and
 * pkg_inputs.npz for tests/cli/test_package.sh. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base_internal.h"
#include "check.h"
#include "kiln/runtime.h"
#include "package_util.h"
#include "runtime/runtime_internal.h"

/* ---- a module and its plan: y = f(x, w), float32[4] ---------------------------- */

/* The C source of a module with one function `fn` computing y = x * w + add;
 * with `ctor`, an ELF constructor that aborts if $KILN_CTOR_ABORT is set and
 * creates the file $KILN_CTOR_MARK (tests/cli/test_package.sh uses both). */
static void module_source(char *out, size_t cap, const char *fn, int add, int ctor) {
    snprintf(out, cap,
             "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
             "typedef struct { int version; void *parallel_for; } kiln_module_api;\n"
             "int kiln_module_init(const kiln_module_api *api) { return api->version != %d; }\n"
             "const char kiln_module_meta[] = \"kiln-module 1\\nfunc %s 3 0\\n"
             "arg X float32 1 4\\narg W float32 1 4\\narg Y float32 1 4\\nend\\n\";\n"
             "int32_t %s(void *const *a, const int64_t *v) {\n"
             "  const float *x = a[0], *w = a[1]; float *y = a[2];\n"
             "  for (int i = 0; i < 4; i++) y[i] = x[i] * w[i] + %d;\n"
             "  return 0;\n}\n"
             "%s",
             KILN_MODULE_ABI_VERSION, fn, fn, add,
             ctor ? "__attribute__((constructor)) static void mark(void) {\n"
                    "  if (getenv(\"KILN_CTOR_ABORT\")) abort();\n"
                    "  const char *p = getenv(\"KILN_CTOR_MARK\");\n"
                    "  FILE *f = p ? fopen(p, \"w\") : NULL;\n"
                    "  if (f) fclose(f);\n}\n"
                  : "");
}

/* Build the module (cached by name); its path. */
static const char *build(const char *name, const char *fn, int add, int ctor) {
    static char so[4][1024];
    static int k;
    char *out = so[k++ & 3], c_path[1024], cmd[3200], src[2048];
    snprintf(c_path, sizeof c_path, "%s.c", test_tmp_path(name));
    snprintf(out, 1024, "%s.so", test_tmp_path(name));
    module_source(src, sizeof src, fn, add, ctor);
    FILE *f = fopen(c_path, "w");
    CHECK(f != NULL);
    if (!f)
        return out;
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -O1 -shared -fPIC -o '%s' '%s'", out, c_path);
    CHECK_EQ_INT(system(cmd), 0);
    return out;
}

static void plan_json(char *out, size_t cap, const char *fn) {
    snprintf(out, cap,
             "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"
             " {\"op\": \"null\", \"name\": \"w\", \"inputs\": []},\n"
             " {\"op\": \"tvm_op\", \"name\": \"y\", \"attrs\": {\"func_name\": \"%s\", "
             "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, "
             "\"inputs\": [[0, 0, 0], [1, 0, 0]]}],\n"
             " \"arg_nodes\": [0, 1], \"heads\": [[2, 0, 0]], \"output_names\": [\"y\"],\n"
             " \"node_row_ptr\": [0, 1, 2, 3],\n"
             " \"attrs\": {\"shape\": [\"list_shape\", [[4], [4], [4]]],\n"
             "  \"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\"]],\n"
             "  \"storage_id\": [\"list_int\", [0, 1, 2]]},\n"
             " \"target\": {\"str\": \"llvm -test\", \"features\": []}}\n",
             fn);
}

static kiln_npz *params_w(void) {
    int64_t n = 4;
    kiln_ndarray *w = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    for (int i = 0; i < 4; i++)
        ((float *)kiln_ndarray_data(w))[i] = (float)(i + 1);
    kiln_npz *z = kiln_npz_new();
    kiln_npz_add(z, "w", w);
    kiln_ndarray_free(w);
    return z;
}

/* Write package `name` with kiln_package_write; its path. */
static const char *write_package(const char *name, const char *so, const char *fn) {
    static char path[2][1024];
    static int k;
    char *out = path[k++ & 1], json[2048];
    snprintf(out, 1024, "%s", test_tmp_path(name));
    plan_json(json, sizeof json, fn);
    kiln_npz *z = params_w();
    CHECK_EQ_INT(kiln_package_write(out, json, strlen(json), so, z), KILN_OK);
    kiln_npz_free(z);
    return out;
}

/* Run the package's executor on x = 1, 1, 1, 1 and return y[3], or -1. */
static float run_y3(kiln_executor *e) {
    int64_t n = 4;
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    for (int i = 0; i < 4; i++)
        ((float *)kiln_ndarray_data(x))[i] = 1;
    float y = -1;
    if (e && kiln_executor_set_input(e, "x", x) == KILN_OK && kiln_executor_run(e) == KILN_OK)
        y = ((const float *)kiln_ndarray_data(kiln_executor_output(e, 0)))[3];
    kiln_ndarray_free(x);
    return y;
}

/* ---- hand-made archives --------------------------------------------------------- */

typedef struct {
    const char *name;
    const void *data;
    size_t len;
} member;

/* The members of a good package (manifest excluded), read from `tar`. */
typedef struct {
    char *so, *json, *params;
    size_t so_len, json_len, params_len;
} parts;

static parts read_parts(const char *tar) {
    parts p = {0};
    char *so_text = NULL;
    unsigned char *so = NULL;
    size_t len = 0;
    char *img = kiln_read_file(tar, &len);
    kiln_npz *z = NULL;
    CHECK(img &&
          kiln_package_parse(img, len, tar, &so_text, &p.json_len, &so, &p.so_len, &z) == KILN_OK);
    p.json = so_text;
    p.so = (char *)so;
    kiln_npz_save(z, test_tmp_path("pkg_parts.npz"), 0);
    p.params = kiln_read_file(test_tmp_path("pkg_parts.npz"), &p.params_len);
    kiln_npz_free(z);
    free(img);
    return p;
}

static void free_parts(parts *p) {
    free(p->so);
    free(p->json);
    free(p->params);
}

/* Write the members in order; manifest_text NULL: none, "" : the manifest
 * of `listed` members (names, data) first. */
static const char *write_archive(const char *name, const char *manifest, const member *m, int n) {
    static char path[1024];
    snprintf(path, sizeof path, "%s", test_tmp_path(name));
    FILE *f = fopen(path, "wb");
    if (manifest)
        pkg_tar_add(f, "manifest.json", manifest, strlen(manifest), '0');
    for (int i = 0; i < n; i++)
        pkg_tar_add(f, m[i].name, m[i].data, m[i].len, '0');
    static const char zero[1024];
    fwrite(zero, 1, sizeof zero, f);
    fclose(f);
    return path;
}

/* The manifest of the three members as kiln writes it. */
static void good_manifest(char *out, size_t cap, const parts *p) {
    const char *names[3] = {"mod.so", "mod.json", "mod.params"};
    const void *data[3] = {p->so, p->json, p->params};
    size_t lens[3] = {p->so_len, p->json_len, p->params_len};
    pkg_manifest(out, cap, 3, names, data, lens);
}

static void expect_refused(const char *path, const char *msg1, const char *msg2) {
    kiln_clear_error();
    kiln_executor *e = kiln_executor_load(path);
    CHECK(e == NULL);
    CHECK_CONTAINS(kiln_last_error(), path);
    CHECK_CONTAINS(kiln_last_error(), msg1);
    if (msg2)
        CHECK_CONTAINS(kiln_last_error(), msg2);
    kiln_executor_free(e);
    /* inspect verifies the same manifest */
    kiln_package_info *p = kiln_package_inspect(path);
    CHECK(p == NULL);
    CHECK_CONTAINS(kiln_last_error(), msg1);
    kiln_package_info_free(p);
}

static void test_manifest(void) {
    const char *good = write_package("pkg_good.tar", build("pkg_mul", "mul", 0, 0), "mul");
    kiln_executor *e = kiln_executor_load(good);
    CHECK(e != NULL);
    CHECK_NEAR(run_y3(e), 4, 0);
    kiln_executor_free(e);
    /* the manifest is the first member, listing the others */
    size_t len = 0;
    char *img = kiln_read_file(good, &len);
    CHECK(img && strcmp(img, "manifest.json") == 0);
    CHECK(img && strstr(img + 512, "{\"format\": \"kiln-package\", \"version\": 2, \"abi\": "));
    free(img);
    kiln_npz *in = kiln_npz_new(); /* x for tests/cli/test_package.sh */
    int64_t four = 4;
    kiln_ndarray *x = kiln_ndarray_empty(KILN_FLOAT32, 1, &four);
    CHECK_EQ_INT(kiln_npz_add(in, "x", x), KILN_OK);
    CHECK_EQ_INT(kiln_npz_save(in, test_tmp_path("pkg_inputs.npz"), 0), KILN_OK);
    kiln_ndarray_free(x);
    kiln_npz_free(in);

    parts p = read_parts(good);
    char man[2048], bad[2048];
    good_manifest(man, sizeof man, &p);
    member three[3] = {{"mod.so", p.so, p.so_len},
                       {"mod.json", p.json, p.json_len},
                       {"mod.params", p.params, p.params_len}};
    /* the same members by hand load: the helpers write what kiln writes */
    e = kiln_executor_load(write_archive("pkg_hand.tar", man, three, 3));
    CHECK(e != NULL);
    kiln_executor_free(e);

    /* no manifest: a package of format 1, written before this one */
    expect_refused(write_archive("pkg_nomanifest.tar", NULL, three, 3), "no manifest.json",
                   "written by an older kiln");
    CHECK_CONTAINS(kiln_last_error(), "rebuild it with this kiln (`kiln compile` again)");
    /* the manifest after mod.so */
    member late[4] = {three[0], {"manifest.json", man, strlen(man)}, three[1], three[2]};
    expect_refused(write_archive("pkg_late.tar", NULL, late, 4),
                   "manifest.json is not the first member", NULL);
    /* one byte of mod.so changed: its digest no longer matches */
    p.so[p.so_len / 2] ^= 0x40;
    expect_refused(write_archive("pkg_digest.tar", man, three, 3),
                   "member mod.so does not match its SHA-256 in the manifest", NULL);
    p.so[p.so_len / 2] ^= 0x40;
    /* mod.json one byte shorter than the manifest says */
    member shorter[3] = {three[0], {"mod.json", p.json, p.json_len - 1}, three[2]};
    expect_refused(write_archive("pkg_size.tar", man, shorter, 3), "member mod.json is ",
                   "but the manifest says");
    /* an extra member, after or before the package's own */
    member extra[4] = {three[0], three[1], three[2], {"notes.txt", "hi", 2}};
    expect_refused(write_archive("pkg_extra.tar", man, extra, 4),
                   "member 'notes.txt' is not part of a kiln package", NULL);
    /* the manifest must list each member once, and only members */
    const char *names[4] = {"mod.so", "mod.json", "mod.params", "mod.so"};
    const void *data[4] = {p.so, p.json, p.params, p.so};
    size_t lens[4] = {p.so_len, p.json_len, p.params_len, p.so_len};
    pkg_manifest(bad, sizeof bad, 4, names, data, lens);
    expect_refused(write_archive("pkg_twice.tar", bad, three, 3),
                   "manifest.json: lists member 'mod.so' twice", NULL);
    pkg_manifest(bad, sizeof bad, 2, names, data, lens);
    expect_refused(write_archive("pkg_unlisted.tar", bad, three, 3),
                   "manifest.json: does not list member 'mod.params'", NULL);
    names[3] = "evil.so";
    pkg_manifest(bad, sizeof bad, 4, names, data, lens);
    expect_refused(write_archive("pkg_unknown.tar", bad, three, 3), "lists 'evil.so', which is not",
                   NULL);
    /* another version, ABI or format */
    static const struct {
        const char *from, *to, *msg;
    } edits[] = {
        {"\"version\": 2", "\"version\": 3",
         "package format version 3, but this kiln reads version 2"},
        {"\"version\": 2", "\"version\": \"2\"", "\"version\" must be an integer"},
        {"\"abi\": ", "\"abi\": 9", "module ABI 9"},
        {"kiln-package", "tvm-package", "\"format\" is not \"kiln-package\""},
        {"\"sha256\": \"", "\"sha256\": \"X", "members[0] must be"},
        {"{\"format\"", "[\"format\"", "manifest.json:1:"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        const char *at = strstr(man, edits[i].from);
        CHECK(at != NULL);
        if (!at)
            continue;
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - man), man, edits[i].to,
                 at + strlen(edits[i].from));
        expect_refused(write_archive("pkg_edit.tar", bad, three, 3), edits[i].msg, NULL);
    }
    free_parts(&p);
    kiln_clear_error();
}

/* ---- loading from memory ---------------------------------------------------------- */

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_load_from_memory(void) {
    const char *so_mul = build("pkg_mul", "mul", 0, 0), *so_add = build("pkg_add", "muladd", 10, 0);
    char a[1024], b[1024], tmp[1024];
    snprintf(a, sizeof a, "%s", write_package("pkg_a.tar", so_mul, "mul"));
    snprintf(b, sizeof b, "%s", write_package("pkg_b.tar", so_add, "muladd"));
    snprintf(tmp, sizeof tmp, "%s", test_tmp_path("pkg_tmpdir"));
    mkdir(tmp, 0700);
    CHECK_EQ_INT(count_entries(tmp), 0);
    char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmp, 1);
    for (int fallback = 0; fallback < 2; fallback++) {
        kiln_module_image_no_memfd = fallback; /* 1: an O_TMPFILE file in $TMPDIR */
        kiln_executor *ea = kiln_executor_load(a);
        kiln_executor *eb = kiln_executor_load(b);
        CHECK(ea != NULL && eb != NULL);
        if (!ea || !eb)
            fprintf(stderr, "%s\n", kiln_last_error());
        CHECK_EQ_INT(count_entries(tmp), 0); /* nothing in TMPDIR while loaded */
        /* two modules from memory at once stay two modules */
        CHECK_NEAR(run_y3(ea), 4, 0);
        CHECK_NEAR(run_y3(eb), 14, 0);
        kiln_executor_free(ea);
        kiln_executor *ea2 = kiln_executor_load(a); /* reuses a's descriptor number */
        CHECK_NEAR(run_y3(ea2), 4, 0);
        CHECK_NEAR(run_y3(eb), 14, 0);
        kiln_executor_free(ea2);
        kiln_executor_free(eb);
        CHECK_EQ_INT(count_entries(tmp), 0);
    }
    kiln_module_image_no_memfd = 0;
    if (old) {
        setenv("TMPDIR", old, 1);
        free(old);
    } else {
        unsetenv("TMPDIR");
    }
    /* an image that is not a shared object is an error naming it */
    CHECK(kiln_module_load_image("junk", 4, "t.tar: mod.so") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "t.tar: mod.so: cannot load module");
    kiln_clear_error();
}

/* ---- inspect never runs package code ---------------------------------------------- */

static void test_inspect(void) {
    const char *so = build("pkg_ctor", "mul", 0, 1);
    const char *pkg = write_package("pkg_ctor.tar", so, "mul");
    char mark[1024];
    snprintf(mark, sizeof mark, "%s", test_tmp_path("pkg_ctor.mark"));
    unlink(mark);
    setenv("KILN_CTOR_MARK", mark, 1);
    struct stat st;
    kiln_package_info *p = kiln_package_inspect(pkg);
    CHECK(p != NULL);
    if (!p)
        fprintf(stderr, "%s\n", kiln_last_error());
    CHECK(stat(mark, &st) != 0); /* the constructor did not run */
    CHECK_EQ_INT(kiln_package_info_num_inputs(p), 1);
    const kiln_tensor_desc *x = kiln_package_info_input(p, 0);
    CHECK(x && strcmp(x->name, "x") == 0 && x->dtype == KILN_FLOAT32 && x->ndim == 1 &&
          x->shape[0] == 4);
    CHECK_EQ_INT(kiln_package_info_num_outputs(p), 1);
    const kiln_tensor_desc *y = kiln_package_info_output(p, 0);
    CHECK(y && strcmp(y->name, "y") == 0 && y->ndim == 1 && y->shape[0] == 4);
    CHECK(kiln_package_info_input(p, 1) == NULL && kiln_package_info_output(p, -1) == NULL);
    CHECK_EQ_INT(kiln_package_info_num_kernels(p), 1);
    CHECK_EQ_STR(kiln_package_info_kernel_name(p, 0), "y");
    CHECK_EQ_STR(kiln_package_info_kernel_func(p, 0), "mul");
    CHECK_EQ_STR(kiln_package_info_target(p), "llvm -test");
    CHECK_EQ_INT(kiln_package_info_abi(p), KILN_MODULE_ABI_VERSION);
    CHECK_CONTAINS(kiln_package_info_functions(p), "func mul 3 0\narg X float32 1 4\n");
    CHECK_EQ_INT(kiln_package_info_num_members(p), 3);
    const char *name = NULL, *sha = NULL;
    int64_t size = 0;
    CHECK(kiln_package_info_member(p, 0, &name, &size, &sha));
    CHECK_EQ_STR(name, "mod.so");
    char hex[KILN_SHA256_HEX];
    size_t so_len = 0;
    char *so_bytes = kiln_read_file(so, &so_len);
    kiln_sha256_hex(so_bytes, so_len, hex);
    CHECK(size == (int64_t)so_len && sha && strcmp(sha, hex) == 0);
    free(so_bytes);
    CHECK(!kiln_package_info_member(p, 3, &name, &size, &sha));
    kiln_package_info_free(p);
    /* the control: loading it runs the constructor, so the check above can fail */
    kiln_executor *e = kiln_executor_load(pkg);
    CHECK(e != NULL);
    CHECK_EQ_INT(stat(mark, &st), 0);
    kiln_executor_free(e);
    unsetenv("KILN_CTOR_MARK");
    CHECK(kiln_package_inspect(test_tmp_path("pkg_missing.tar")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "pkg_missing.tar: cannot open");
    kiln_clear_error();
}

/* ---- writing over a package ------------------------------------------------------ */

/* Whether the files at a and b hold the same bytes. */
static int same_file(const char *a, const char *b) {
    size_t la = 0, lb = 0;
    char *da = kiln_read_file(a, &la), *db = kiln_read_file(b, &lb);
    int same = da && db && la == lb && !memcmp(da, db, la);
    free(da);
    free(db);
    return same;
}

static ino_t inode_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_ino : 0;
}

/* Package `path` with weight w[3] = w3, written with kiln_package_write;
 * also written afresh to `fresh` (which did not exist) to compare with. */
static void rewrite(const char *path, const char *fresh, const char *so, float w3) {
    char json[2048];
    plan_json(json, sizeof json, "mul");
    kiln_npz *z = params_w();
    ((float *)kiln_ndarray_data(npz_get_mutable(z, "w")))[3] = w3;
    CHECK_EQ_INT(kiln_package_write(path, json, strlen(json), so, z), KILN_OK);
    unlink(fresh);
    CHECK_EQ_INT(kiln_package_write(fresh, json, strlen(json), so, z), KILN_OK);
    CHECK(same_file(path, fresh));
    kiln_npz_free(z);
}

/* Writing a package where one already is (a recompile). The same bytes
 * leave it in place (the same file), its modification time renewed; other
 * bytes of the same size replace it, as a package written afresh: a weight
 * changed, or only the manifest (a damaged digest, which then loads
 * again). A symbolic link at the path is replaced, not written through.
 * Each package runs. (The comparison needs the old package's pages in
 * memory; a package just written has them.) */
static void test_rewrite(void) {
    const char *so = build("pkg_mul", "mul", 0, 0);
    char path[1024], fresh[1024], target[1024], link_path[1024];
    snprintf(path, sizeof path, "%s", test_tmp_path("pkg_rewrite.tar"));
    snprintf(fresh, sizeof fresh, "%s", test_tmp_path("pkg_rewrite_fresh.tar"));
    unlink(path);
    rewrite(path, fresh, so, 4);
    ino_t first = inode_of(path);
    struct timespec past[2] = {{1000, 0}, {1000, 0}};
    CHECK_EQ_INT(utimensat(AT_FDCWD, path, past, 0), 0);
    rewrite(path, fresh, so, 4); /* unchanged */
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_mtime > 1000);
    CHECK(inode_of(path) == first);
    rewrite(path, fresh, so, 99); /* a weight changed */
    CHECK(inode_of(path) != first);
    kiln_executor *e = kiln_executor_load(path);
    CHECK(run_y3(e) == 99.0f);
    kiln_executor_free(e);

    /* the manifest alone: a digest damaged */
    size_t len = 0;
    char *img = kiln_read_file(path, &len);
    char *d = img && len > 1024 ? strstr(img + 512, "\"mod.params\"") : NULL; /* the manifest */
    d = d ? strstr(d, "\"sha256\": \"") : NULL;
    CHECK(d != NULL);
    if (d) {
        d += strlen("\"sha256\": \"");
        *d = *d == '0' ? '1' : '0';
        FILE *f = fopen(path, "r+b");
        CHECK(f && fwrite(img, 1, len, f) == len);
        if (f)
            fclose(f);
        expect_refused(path, "mod.params", "does not match its SHA-256");
        first = inode_of(path);
        rewrite(path, fresh, so, 99);
        CHECK(inode_of(path) != first);
        e = kiln_executor_load(path);
        CHECK(run_y3(e) == 99.0f);
        kiln_executor_free(e);
    }
    free(img);

    /* a symbolic link to another file */
    snprintf(target, sizeof target, "%s", test_tmp_path("pkg_rewrite_target.tar"));
    snprintf(link_path, sizeof link_path, "%s", test_tmp_path("pkg_rewrite_link.tar"));
    unlink(link_path);
    unlink(target);
    rewrite(target, fresh, so, 4);
    size_t tlen = 0;
    char *before = kiln_read_file(target, &tlen);
    CHECK_EQ_INT(symlink(target, link_path), 0);
    rewrite(link_path, fresh, so, 4); /* the same bytes as the target's */
    CHECK(lstat(link_path, &st) == 0 && S_ISREG(st.st_mode));
    size_t alen = 0;
    char *after = kiln_read_file(target, &alen);
    CHECK(before && after && tlen == alen && !memcmp(before, after, tlen));
    free(before);
    free(after);
    unlink(link_path);
    unlink(target);
    unlink(fresh);
}

TEST_MAIN(TEST(test_manifest), TEST(test_load_from_memory), TEST(test_inspect), TEST(test_rewrite))
