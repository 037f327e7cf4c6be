/* test_codegen_cache.c: what makes kernels the same (codegen_func_key: the
 * code, not the names) and the kernel cache's store (compile_cache.c): a
 * hit gives back the bytes stored, an entry changed or cut short is
 * refused and removed, the cache off stores nothing, eviction removes the
 * least recently used first, and builds storing and reading one key at
 * once never see a partial entry. The command-line side (a hit gives the
 * same package) is tests/cli/test_compile_cache.sh. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "codegen/codegen.h"
#include "codegen/compile_cache.h"
#include "kiln/schedule.h"
#include "te/te_internal.h"

/* ---- keys ---------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *a;
    double c;
} scale_args;

static kiln_expr scale_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    scale_args *s = u;
    return kiln_mul(kiln_tensor_at(s->a, 1, i), kiln_float(ctx, s->c));
}

/* C = A * c over [n] float32, tensors and function named as given;
 * `split` vectorizes by 16. The key of the lowered function into key. */
static void scale_key(int64_t n, double c, const char *an, const char *cn, const char *fname,
                      int split, unsigned char key[32]) {
    kiln_ctx *ctx = kiln_ctx_new();
    kiln_expr ne = kiln_int(ctx, n);
    scale_args s = {kiln_placeholder(ctx, 1, &ne, KILN_FLOAT32, an), c};
    kiln_tensor *C = kiln_compute(ctx, 1, &ne, scale_body, &s, cn);
    kiln_schedule *sc = kiln_schedule_create(ctx, 1, &C);
    if (split) {
        kiln_expr xo, xi;
        kiln_split(kiln_schedule_stage(sc, C), kiln_tensor_axis(C, 0), 16, &xo, &xi);
        kiln_vectorize(kiln_schedule_stage(sc, C), xi);
    }
    kiln_tensor *args[2] = {s.a, C};
    tir_func *f = te_lower(sc, 2, args, fname, 64);
    CHECK(f != NULL);
    memset(key, 0, 32);
    if (f)
        CHECK_EQ_INT(codegen_func_key(f, key), KILN_OK);
    kiln_ctx_free(ctx);
}

static void test_func_key(void) {
    unsigned char k0[32], k[32];
    scale_key(64, 2.0, "A", "C", "f_one", 1, k0);
    /* other names of the function, its tensors (so of its variables) */
    scale_key(64, 2.0, "in0", "layer7_out", "f_two", 1, k);
    CHECK(!memcmp(k, k0, 32));
    /* another constant, shape or schedule: other code */
    scale_key(64, 3.0, "A", "C", "f_one", 1, k);
    CHECK(memcmp(k, k0, 32));
    scale_key(128, 2.0, "A", "C", "f_one", 1, k);
    CHECK(memcmp(k, k0, 32));
    scale_key(64, 2.0, "A", "C", "f_one", 0, k);
    CHECK(memcmp(k, k0, 32));
}

/* ---- the store ----------------------------------------------------------------- */

static char g_home[1024];

/* A fresh cache home of this test's own. */
static void fresh_home(const char *tag) {
    snprintf(g_home, sizeof g_home, "%s/cache-unit-%s-%d", test_tmp_path(""), tag, (int)getpid());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_home);
    CHECK_EQ_INT(system(cmd), 0);
    setenv("XDG_CACHE_HOME", g_home, 1);
    unsetenv("KILN_CACHE");
    unsetenv("KILN_CACHE_SIZE");
}

/* Remove this test's cache home. */
static void drop_home(void) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_home);
    CHECK_EQ_INT(system(cmd), 0);
    unsetenv("XDG_CACHE_HOME");
}

static void key_of(const char *s, unsigned char key[32]) {
    kiln_sha256 h;
    kiln_sha256_init(&h);
    kiln_sha256_update(&h, s, strlen(s));
    kiln_sha256_final(&h, key);
}

static void entry_file(const unsigned char key[32], char *out, size_t cap) {
    char hex[KILN_SHA256_HEX];
    kiln_sha256_to_hex(key, hex);
    snprintf(out, cap, "%s/kiln/%.2s/%s", g_home, hex, hex + 2);
}

static void write_text(const char *path, const char *s) {
    CHECK_EQ_INT(kiln_write_file(path, s, strlen(s)), KILN_OK);
}

/* 1 if the file at path holds exactly s. */
static int holds(const char *path, const char *s) {
    size_t len;
    char *d = kiln_read_file(path, &len);
    int ok = d && len == strlen(s) && !memcmp(d, s, len);
    free(d);
    kiln_clear_error();
    return ok;
}

static void test_store(void) {
    fresh_home("store");
    const char *obj = test_tmp_path("cache_unit_obj.bin"),
               *got = test_tmp_path("cache_unit_got.bin");
    const char *content = "an object file's bytes\n\001\002\003";
    write_text(obj, content);
    unsigned char key[32], d_put[32], d_get[32], want[32];
    key_of("job one", key);
    key_of(content, want);
    codegen_cache *c = codegen_cache_open(1);
    CHECK(c != NULL);
    CHECK_EQ_INT(codegen_cache_get(c, key, got, d_get), 0); /* a miss */
    CHECK_EQ_INT(codegen_cache_put(c, key, obj, d_put), 1);
    CHECK(!memcmp(d_put, want, 32));
    unlink(got);
    CHECK_EQ_INT(codegen_cache_get(c, key, got, d_get), 1);
    CHECK(holds(got, content));
    CHECK(!memcmp(d_get, want, 32));
    /* one byte changed, cut short, a broken header: refused and removed */
    char ep[1400];
    entry_file(key, ep, sizeof ep);
    for (int damage = 0; damage < 3; damage++) {
        CHECK_EQ_INT(codegen_cache_put(c, key, obj, d_put), 1);
        size_t len;
        char *e = kiln_read_file(ep, &len);
        CHECK(e != NULL && len > 10);
        if (!e)
            break;
        if (damage == 0)
            e[len - 2] ^= 1;
        else if (damage == 1)
            len -= 3;
        else
            e[3] = '?';
        CHECK_EQ_INT(kiln_write_file(ep, e, len), KILN_OK);
        free(e);
        write_text(got, "untouched");
        CHECK_EQ_INT(codegen_cache_get(c, key, got, d_get), 0);
        struct stat sb;
        CHECK(stat(ep, &sb) != 0); /* removed */
        CHECK(holds(got, "untouched"));
    }
    codegen_cache_close(c);
    /* off: by the setting, or by $KILN_CACHE when the setting defers */
    CHECK(codegen_cache_open(0) == NULL);
    setenv("KILN_CACHE", "0", 1);
    CHECK(codegen_cache_open(-1) == NULL);
    c = codegen_cache_open(1); /* the build option wins */
    CHECK(c != NULL);
    codegen_cache_close(c);
    unsetenv("KILN_CACHE");
    /* a folder others may write is not used */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/kiln", g_home);
    CHECK_EQ_INT(chmod(dir, 0777), 0);
    CHECK(codegen_cache_open(1) == NULL);
    CHECK_EQ_INT(chmod(dir, 0700), 0);
    unlink(obj);
    unlink(got);
    drop_home();
}

/* Entries of about 1 KiB each under a 3.5 KiB limit: storing a fifth
 * evicts the least recently used, which a hit renews. */
static void test_eviction(void) {
    fresh_home("evict");
    setenv("KILN_CACHE_SIZE", "3584", 1);
    const char *obj = test_tmp_path("cache_unit_evict.bin"),
               *got = test_tmp_path("cache_unit_e.bin");
    char big[1001];
    unsigned char key[5][32], d[32];
    char ep[5][1400];
    codegen_cache *c = codegen_cache_open(1);
    CHECK(c != NULL);
    for (int i = 0; i < 4; i++) {
        memset(big, 'a' + i, 1000);
        big[1000] = 0;
        write_text(obj, big);
        char name[16];
        snprintf(name, sizeof name, "job %d", i);
        key_of(name, key[i]);
        CHECK_EQ_INT(codegen_cache_put(c, key[i], obj, d), 1);
        entry_file(key[i], ep[i], sizeof ep[i]);
        /* entry i last used i hours ago... in order 0 oldest */
        struct timespec t[2] = {{time(NULL) - 3600 * (10 - i), 0},
                                {time(NULL) - 3600 * (10 - i), 0}};
        CHECK_EQ_INT(utimensat(AT_FDCWD, ep[i], t, 0), 0);
    }
    codegen_cache_close(c); /* 4 x ~1 KiB > 3.5 KiB: the oldest, 0, goes */
    struct stat sb;
    CHECK(stat(ep[0], &sb) != 0);
    CHECK(stat(ep[1], &sb) == 0 && stat(ep[2], &sb) == 0 && stat(ep[3], &sb) == 0);
    c = codegen_cache_open(1);
    CHECK_EQ_INT(codegen_cache_get(c, key[1], got, d), 1); /* 1 is used now */
    memset(big, 'e', 1000);
    write_text(obj, big);
    key_of("job 4", key[4]);
    entry_file(key[4], ep[4], sizeof ep[4]);
    CHECK_EQ_INT(codegen_cache_put(c, key[4], obj, d), 1);
    codegen_cache_close(c); /* 2 is now the least recently used */
    CHECK(stat(ep[1], &sb) == 0);
    CHECK(stat(ep[2], &sb) != 0);
    CHECK(stat(ep[3], &sb) == 0 && stat(ep[4], &sb) == 0);
    unsetenv("KILN_CACHE_SIZE");
    unlink(obj);
    unlink(got);
    drop_home();
}

/* Four processes store and read one key 200 times each, with contents
 * that differ by writer: every hit is one whole content, never a mix. */
static void test_concurrent(void) {
    fresh_home("concurrent");
    unsigned char key[32];
    key_of("shared job", key);
    pid_t kids[4];
    for (int w = 0; w < 4; w++) {
        kids[w] = fork();
        if (kids[w] == 0) {
            char obj[1100], got[1100], body[4097];
            snprintf(obj, sizeof obj, "%s", test_tmp_path(""));
            snprintf(got, sizeof got, "%s", obj);
            snprintf(obj + strlen(obj), sizeof obj - strlen(obj), "cache_unit_w%d.bin", w);
            snprintf(got + strlen(got), sizeof got - strlen(got), "cache_unit_r%d.bin", w);
            memset(body, 'A' + w, 4096);
            body[4096] = 0;
            if (kiln_write_file(obj, body, 4096) != KILN_OK)
                _exit(2);
            int bad = 0;
            for (int i = 0; i < 200; i++) {
                codegen_cache *c = codegen_cache_open(1);
                unsigned char d[32];
                if (!c)
                    _exit(3);
                if (i % 2)
                    codegen_cache_put(c, key, obj, d);
                else if (codegen_cache_get(c, key, got, d)) {
                    size_t len;
                    char *r = kiln_read_file(got, &len);
                    bad |= !r || len != 4096;
                    for (size_t k = 1; r && k < len; k++)
                        bad |= r[k] != r[0];
                    free(r);
                }
                codegen_cache_close(c);
            }
            unlink(obj);
            unlink(got);
            _exit(bad);
        }
    }
    for (int w = 0; w < 4; w++) {
        int st = -1;
        CHECK(kids[w] > 0 && waitpid(kids[w], &st, 0) == kids[w]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    drop_home();
}

TEST_MAIN(TEST(test_func_key), TEST(test_store), TEST(test_eviction), TEST(test_concurrent))
