/* test_driver_views.c: concatenation without copies (ConcatViews:
 * src/driver/concat_views.c plans them, src/runtime/graph_views.c checks
 * them). Each graph is compiled four ways: the default (views), with
 * --disabled-pass ConcatViews (the copying concatenation), under the naive
 * schedule and with fuse=0 (views on in both); all must agree with the
 * reference interpreter run on the graph as built, and the views with the
 * copies bit for bit where the kernels compute the same (a view only moves
 * where bytes are written). The plan is read back from the package to see
 * which concatenations became "__view" nodes and which stayed kernels.
 * Cases: convolution branches concatenated along the channels at batch 1
 * in NCHW and in blocked NCHW[x]c, feeding a convolution (GoogLeNet) or a
 * batch norm and ReLU (DenseNet's block, where every concatenation is a
 * prefix of the next: one buffer); the cases that must keep the copy (a
 * graph input, a constant, a graph output or the same tensor twice among
 * the inputs, batch 2, symbolic dims, an input already placed elsewhere in
 * another order); and forged packages whose offsets or views are wrong,
 * refused with an error when loaded. */
#include <stdlib.h>
#include <string.h>

#include "base/base_internal.h"
#include "base/json.h"
#include "graph/graph_internal.h"
#include "graph_util.h"
#include "package_util.h"
#include "runtime/package.h"
#include "te_util.h"

static kiln_ndarray *filled(int nd, const int64_t *shape, uint64_t *seed) {
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
    tu_fill(a, seed);
    return a;
}

/* Arrays a graph's constants were copied from, freed at the end of a case. */
typedef struct {
    kiln_ndarray *a[64];
    int n;
} keep;

static int konst(kiln_graph *g, keep *k, const char *name, int nd, const int64_t *shape,
                 uint64_t *seed) {
    k->a[k->n] = filled(nd, shape, seed);
    return kiln_graph_const(g, name, k->a[k->n++]);
}

static void keep_free(keep *k) {
    for (int i = 0; i < k->n; i++)
        kiln_ndarray_free(k->a[i]);
    k->n = 0;
}

/* conv(x, a fresh weight of cout x cin x 3 x 3, padding 1), then relu. */
static int conv_relu(kiln_graph *g, keep *k, int x, int64_t cin, int64_t cout, uint64_t *seed,
                     const char *name) {
    int64_t ws[4] = {cout, cin, 3, 3};
    int in[2] = {x, konst(g, k, name, 4, ws, seed)};
    int y = kiln_graph_call(g, "nn.conv2d", 2, in, "padding=[1, 1, 1, 1]", name);
    return kiln_graph_call(g, "nn.relu", 1, &y, NULL, NULL);
}

/* relu(x * s + b), s and b fresh [c, 1, 1] constants: a batch norm folded. */
static int bn_relu(kiln_graph *g, keep *k, int x, int64_t c, uint64_t *seed) {
    int64_t ps[3] = {c, 1, 1};
    int m[2] = {x, konst(g, k, "s", 3, ps, seed)};
    int y = kiln_graph_call(g, "multiply", 2, m, NULL, NULL);
    int a[2] = {y, konst(g, k, "b", 3, ps, seed)};
    y = kiln_graph_call(g, "add", 2, a, NULL, NULL);
    return kiln_graph_call(g, "nn.relu", 1, &y, NULL, NULL);
}

/* What a compiled plan holds: its "__view" nodes, its kernels that
 * concatenate, and the largest rank of a view's output. */
typedef struct {
    int views, concat_kernels, view_rank;
} plan_info;

static char *read_plan(const char *pkg) {
    pkg_members m;
    if (pkg_read_file(pkg, &m)) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return NULL;
    }
    char *text = strdup((const char *)m.data[PKG_JSON]);
    pkg_members_free(&m);
    return text;
}

static plan_info plan_of(const char *pkg) {
    plan_info p = {0, 0, 0};
    char *text = read_plan(pkg);
    arena *ar = arena_new();
    const json *root = text ? json_parse(ar, text, strlen(text), "mod.json") : NULL;
    CHECK(root != NULL);
    const json *nodes = json_get(root, "nodes"), *rows = json_get(root, "node_row_ptr");
    const json *shapes = json_at(json_get(json_get(root, "attrs"), "shape"), 1);
    for (int i = 0; root && i < json_len(nodes); i++) {
        const char *f = json_str(json_get(json_get(json_at(nodes, i), "attrs"), "func_name"));
        if (f && !strcmp(f, "__view")) {
            int64_t row;
            p.views++;
            CHECK(json_int(json_at(rows, i), &row));
            int rank = json_len(json_at(shapes, (int)row));
            p.view_rank = rank > p.view_rank ? rank : p.view_rank;
        } else if (f && strstr(f, "concatenate")) {
            p.concat_kernels++;
        }
    }
    arena_free(ar);
    free(text);
    return p;
}

/* g compiled with the options kv (NULL-ended key, value pairs) and run on
 * xs (gu_compile_run): a copy of output 0 (NULL, printed, on an error);
 * *info gets the views of the plan, read back from the package. */
static kiln_ndarray *compile_run(kiln_graph *g, const char *const *kv, int nin,
                                 const kiln_ndarray *const *xs, plan_info *info) {
    kiln_build_options *o = kiln_build_options_new();
    for (int i = 0; kv && kv[i]; i += 2)
        CHECK_EQ_INT(kiln_build_options_set(o, kv[i], kv[i + 1]), KILN_OK);
    kiln_ndarray *r = gu_compile_run(g, o, nin, xs, NULL, NULL, 0);
    kiln_build_options_free(o);
    CHECK(r != NULL);
    char name[64]; /* the package gu_compile_run wrote */
    snprintf(name, sizeof name, "graph_util_%d.tar", (int)getpid());
    *info = r ? plan_of(test_tmp_path(name)) : (plan_info){0, 0, 0};
    return r;
}

static int same_bits(const kiln_ndarray *a, const kiln_ndarray *b) {
    return a && b && kiln_ndarray_numel(a) == kiln_ndarray_numel(b) &&
           !memcmp(kiln_ndarray_data(a), kiln_ndarray_data(b),
                   (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(kiln_ndarray_dtype(a)));
}

/* Compile and run g (freed) the four ways on xs and check them against the
 * interpreter (run on ref, freed, or if NULL on g) and each other; `nchw`
 * disables AlterOpLayout in all four. want_views: how many "__view" nodes
 * the default plan has, and the copy's none; rank: the views' output rank
 * wanted (0: any). Returns the default plan's info. */
static plan_info check_case(const char *what, kiln_graph *g, kiln_graph *ref_g, int nin,
                            const kiln_ndarray *const *xs, int nchw, int want_views, int rank) {
    const char *off = nchw ? "AlterOpLayout" : "";
    const char *const views[] = {"disabled-pass", off, NULL};
    const char *const no_views[] = {"disabled-pass",
                                    nchw ? "AlterOpLayout,ConcatViews" : "ConcatViews", NULL};
    const char *const naive[] = {"schedule", "naive", "disabled-pass", off, NULL};
    const char *const unfused[] = {"fuse", "0", "disabled-pass", off, NULL};
    plan_info pv, pc, pn, pf;
    kiln_ndarray *refs[2] = {NULL, NULL}; /* a graph here has one or two outputs */
    kiln_graph *rg = ref_g ? ref_g : g;
    if (kiln_graph_infer_types(rg) != KILN_OK || graph_eval(rg, nin, xs, 0, refs) != KILN_OK)
        fprintf(stderr, "%s: interpreter: %s\n", what, kiln_last_error());
    kiln_ndarray *ref = refs[0];
    kiln_ndarray_free(refs[1]);
    kiln_ndarray *v = compile_run(g, views, nin, xs, &pv);
    kiln_ndarray *c = compile_run(g, no_views, nin, xs, &pc);
    kiln_ndarray *n = compile_run(g, naive, nin, xs, &pn);
    kiln_ndarray *f = compile_run(g, unfused, nin, xs, &pf);
    CHECK(ref && v && c && n && f);
    if (ref && v && c && n && f) {
        double e[4] = {tu_max_rel_err(v, ref), tu_max_rel_err(c, ref), tu_max_rel_err(n, ref),
                       tu_max_rel_err(f, ref)};
        /* the e2e tolerance: a DenseNet block's float32 sums differ from the
           interpreter's by about 1e-4 in baseline x86-64 code, in every
           variant alike (views and copies are compared bit for bit below) */
        int ok = e[0] < 1e-3 && e[1] < 1e-3 && e[2] < 1e-3 && e[3] < 1e-3;
        CHECK(ok);
        CHECK(same_bits(v, c));
        if (!ok || !same_bits(v, c))
            fprintf(stderr,
                    "%s: against the interpreter: views %.2g, copies %.2g, naive %.2g, "
                    "fuse=0 %.2g; views and copies %s\n",
                    what, e[0], e[1], e[2], e[3], same_bits(v, c) ? "agree" : "differ");
    }
    CHECK_EQ_INT(pv.views, want_views);
    CHECK_EQ_INT(pn.views, pv.views); /* the schedule does not decide the plan */
    CHECK_EQ_INT(pc.views, 0);
    CHECK(pc.concat_kernels > 0);
    if (pv.views > 0)
        CHECK(pf.views > 0);
    if (rank)
        CHECK_EQ_INT(pv.view_rank, rank);
    if (pv.views != want_views)
        fprintf(stderr, "%s: %d views, %d concatenating kernels\n", what, pv.views,
                pv.concat_kernels);
    kiln_ndarray_free(ref);
    kiln_ndarray_free(v);
    kiln_ndarray_free(c);
    kiln_ndarray_free(n);
    kiln_ndarray_free(f);
    kiln_graph_free(g);
    kiln_graph_free(ref_g);
    return pv;
}

/* x [batch, cin, 6, 6] -> conv branches of couts[0..nb) channels -> concat
 * along the channels -> a 1x1 convolution (GoogLeNet) or a batch norm and
 * relu (DenseNet). */
static kiln_graph *branches(keep *k, int64_t batch, int64_t cin, const int64_t *couts, int nb,
                            int dense, kiln_ndarray **x) {
    uint64_t seed = 77 + (uint64_t)cin * 3 + (uint64_t)nb;
    int64_t xs[4] = {batch, cin, 6, 6};
    *x = filled(4, xs, &seed);
    kiln_graph *g = kiln_graph_new();
    int xin = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    int in[8], ctot = 0;
    for (int b = 0; b < nb; b++) {
        in[b] = conv_relu(g, k, xin, cin, couts[b], &seed, "w");
        ctot += (int)couts[b];
    }
    int cat = kiln_graph_call(g, "concatenate", nb, in, "axis=1", "cat");
    int y;
    if (dense) {
        y = bn_relu(g, k, cat, ctot, &seed);
    } else {
        int64_t ws[4] = {8, ctot, 1, 1};
        int ci[2] = {cat, konst(g, k, "w1", 4, ws, &seed)};
        y = kiln_graph_call(g, "nn.conv2d", 2, ci, NULL, "head");
    }
    kiln_graph_set_outputs(g, 1, &y, NULL);
    return g;
}

static void test_branches(void) {
    /* channel counts that no block divides, AlterOpLayout off: NCHW; multiples
       of 16: AlterOpLayout's blocked NCHW[x]c, along whole blocks */
    static const int64_t odd[3] = {3, 5, 2}, blk[3] = {16, 32, 16};
    static const struct {
        const char *what;
        int64_t cin;
        const int64_t *couts;
        int dense, nchw, rank;
    } cases[] = {
        {"NCHW into a conv", 4, odd, 0, 1, 4},
        {"NCHW into a batch norm", 4, odd, 1, 1, 4},
        {"blocked into a conv", 16, blk, 0, 0, 5},
        {"blocked into a batch norm", 16, blk, 1, 0, 5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        keep k = {0};
        kiln_ndarray *x;
        kiln_graph *g = branches(&k, 1, cases[c].cin, cases[c].couts, 3, cases[c].dense, &x);
        check_case(cases[c].what, g, NULL, 1, (const kiln_ndarray *const *)&x, cases[c].nchw, 1,
                   cases[c].rank);
        kiln_ndarray_free(x);
        keep_free(&k);
    }
}

/* DenseNet's block: x0 = conv(x); layer l concatenates x0 and every
 * feature so far (all l + 1 of them, as torchvision's export does), then a
 * batch norm, relu and a 3x3 conv make feature l + 1; the block ends with
 * the concatenation of all. Every concatenation is a view of the last. */
static kiln_graph *dense_block(keep *k, int layers, int64_t stem, int64_t growth,
                               kiln_ndarray **x) {
    uint64_t seed = 99;
    int64_t xs[4] = {1, 8, 6, 6};
    *x = filled(4, xs, &seed);
    kiln_graph *g = kiln_graph_new();
    int xin = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    int feats[16], nf = 0;
    feats[nf++] = conv_relu(g, k, xin, 8, stem, &seed, "stem");
    for (int l = 0; l < layers; l++) {
        int cat = kiln_graph_call(g, "concatenate", nf, feats, "axis=1", NULL);
        int64_t c = stem + growth * (nf - 1);
        int y = bn_relu(g, k, cat, c, &seed);
        feats[nf] = conv_relu(g, k, y, c, growth, &seed, "w");
        nf++;
    }
    int cat = kiln_graph_call(g, "concatenate", nf, feats, "axis=1", "last");
    int y = bn_relu(g, k, cat, stem + growth * (nf - 1), &seed);
    kiln_graph_set_outputs(g, 1, &y, NULL);
    return g;
}

static void test_dense_block(void) {
    keep k = {0};
    kiln_ndarray *x;
    check_case("dense block, blocked", dense_block(&k, 3, 16, 16, &x), NULL, 1,
               (const kiln_ndarray *const *)&x, 0, 4, 5);
    kiln_ndarray_free(x);
    keep_free(&k);
    check_case("dense block, NCHW", dense_block(&k, 3, 5, 3, &x), NULL, 1,
               (const kiln_ndarray *const *)&x, 1, 4, 4);
    kiln_ndarray_free(x);
    keep_free(&k);
    /* 5 + 3 channels: no block divides all, so the concatenations but the
       first (of the stem alone, in its blocked layout) run in NCHW between
       blocked convolutions. The last one's kernel computes the layout
       transform of its newest input, which only it reads, and its batch
       norm: a view would write that transform out and read it again, so it
       copies; the others are views, the second and third of one buffer */
    check_case("dense block, blocked convolutions", dense_block(&k, 3, 5, 3, &x), NULL, 1,
               (const kiln_ndarray *const *)&x, 0, 3, 0);
    kiln_ndarray_free(x);
    keep_free(&k);
}

/* The concatenations that must copy. */
static void test_keeps_copy(void) {
    keep k = {0};
    uint64_t seed = 5;
    int64_t xs[4] = {1, 4, 6, 6};
    kiln_ndarray *x = filled(4, xs, &seed);
    const kiln_ndarray *const *xp = (const kiln_ndarray *const *)&x;
    for (int c = 0; c < 5; c++) {
        kiln_graph *g = kiln_graph_new();
        int xin = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
        int a = conv_relu(g, &k, xin, 4, 3, &seed, "wa");
        int in[2] = {a, a}, outs[2];
        const char *what = "";
        if (c == 0) { /* a graph input */
            in[1] = xin;
            what = "a graph input";
        } else if (c == 1) { /* a constant */
            in[1] = konst(g, &k, "c", 4, xs, &seed);
            what = "a constant";
        } else if (c == 2) { /* the same tensor twice */
            what = "an input twice";
        } else { /* a graph output; c == 4: the concatenation itself is one */
            in[1] = conv_relu(g, &k, xin, 4, 5, &seed, "wb");
            what = c == 3 ? "an input that is a graph output" : "a graph output";
        }
        int cat = kiln_graph_call(g, "concatenate", 2, in, "axis=1", "cat");
        int y = kiln_graph_call(g, "nn.relu", 1, &cat, NULL, "y");
        outs[0] = c == 4 ? cat : y;
        outs[1] = c == 3 ? a : y;
        kiln_graph_set_outputs(g, c >= 3 ? 2 : 1, outs, NULL);
        check_case(what, g, NULL, 1, xp, 1, 0, 0);
        keep_free(&k);
    }
    /* batch 2: each input's slice is two pieces */
    static const int64_t co[2] = {3, 5};
    kiln_ndarray *x2;
    check_case("batch 2", branches(&k, 2, 4, co, 2, 0, &x2), NULL, 1,
               (const kiln_ndarray *const *)&x2, 1, 0, 0);
    kiln_ndarray_free(x2);
    keep_free(&k);
    /* one place per input: [a, b] after [b, a] keeps its copy, the later a view */
    kiln_graph *g = kiln_graph_new();
    int xin = kiln_graph_var(g, "x", KILN_FLOAT32, 4, xs, NULL);
    int a = conv_relu(g, &k, xin, 4, 3, &seed, "wa"), b = conv_relu(g, &k, xin, 4, 5, &seed, "wb");
    int ab[2] = {a, b}, ba[2] = {b, a};
    int c1 = kiln_graph_call(g, "concatenate", 2, ab, "axis=1", "ab");
    int r1 = kiln_graph_call(g, "nn.relu", 1, &c1, NULL, NULL);
    int c2 = kiln_graph_call(g, "concatenate", 2, ba, "axis=1", "ba");
    int s[2] = {r1, c2};
    int y = kiln_graph_call(g, "add", 2, s, NULL, "y");
    kiln_graph_set_outputs(g, 1, &y, NULL);
    plan_info p = check_case("two orders", g, NULL, 1, xp, 1, 1, 4);
    CHECK_EQ_INT(p.concat_kernels, 1);
    keep_free(&k);
    kiln_ndarray_free(x);
    /* symbolic dims: a dynamic plan keeps the copy, and runs right (the
       interpreter runs the same graph with the dim given) */
    kiln_graph *gs[2];
    for (int v = 0; v < 2; v++) {
        int64_t ds[3] = {1, 4, v ? 7 : -1};
        const char *names[3] = {NULL, NULL, "n"};
        gs[v] = kiln_graph_new();
        xin = kiln_graph_var(gs[v], "x", KILN_FLOAT32, 3, ds, v ? NULL : names);
        int e = kiln_graph_call(gs[v], "exp", 1, &xin, NULL, NULL);
        int t = kiln_graph_call(gs[v], "tanh", 1, &xin, NULL, NULL);
        int et[2] = {e, t};
        int cat = kiln_graph_call(gs[v], "concatenate", 2, et, "axis=1", "cat");
        y = kiln_graph_call(gs[v], "nn.relu", 1, &cat, NULL, "y");
        kiln_graph_set_outputs(gs[v], 1, &y, NULL);
    }
    int64_t cs[3] = {1, 4, 7};
    kiln_ndarray *x3 = filled(3, cs, &seed);
    check_case("symbolic dims", gs[0], gs[1], 1, (const kiln_ndarray *const *)&x3, 0, 0, 0);
    kiln_ndarray_free(x3);
}

/* ---- forged packages ---------------------------------------------------------- */

/* The list attrs.<key> of a plan as integers (at most cap), its count. */
static int plan_list(const char *text, const char *key, int64_t *out, int cap) {
    arena *ar = arena_new();
    const json *root = json_parse(ar, text, strlen(text), "mod.json");
    const json *l = json_at(json_get(json_get(root, "attrs"), key), 1);
    int n = json_len(l);
    for (int i = 0; i < n && i < cap; i++)
        CHECK(json_int(json_at(l, i), &out[i]));
    arena_free(ar);
    return n;
}

/* text with attrs.<key>'s list replaced by v[0, n) (malloc'd). */
static char *with_list(const char *text, const char *key, const int64_t *v, int n) {
    char head[64];
    snprintf(head, sizeof head, "\"%s\": [\"list_int\", [", key);
    const char *at = strstr(text, head);
    CHECK(at != NULL);
    if (!at)
        return strdup(text);
    at += strlen(head);
    const char *end = strchr(at, ']');
    size_t cap = strlen(text) + (size_t)n * 24 + 1;
    char *out = malloc(cap);
    size_t k = (size_t)snprintf(out, cap, "%.*s", (int)(at - text), text);
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)v[i]);
    snprintf(out + k, cap - k, "%s", end);
    return out;
}

/* Write pkg's members with mod.json replaced by plan to `name`, load it and
 * check the error (NULL: it must load and run). */
static void expect_forged(const pkg_members *m, const char *plan, const char *name,
                          const char *err) {
    const char *path = test_tmp_path(name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    const char *names[3] = {"mod.so", "mod.json", "mod.params"};
    const void *data[3] = {m->data[PKG_SO], plan, m->data[PKG_PARAMS]};
    size_t lens[3] = {m->len[PKG_SO], strlen(plan), m->len[PKG_PARAMS]};
    pkg_tar_add_manifest(f, 3, names, data, lens);
    for (int i = 0; i < 3; i++)
        pkg_tar_add(f, names[i], data[i], lens[i], '0');
    static const char zero[1024];
    fwrite(zero, 1, sizeof zero, f);
    fclose(f);
    kiln_executor *e = kiln_executor_load(path);
    if (!err) {
        CHECK(e != NULL);
        if (e)
            CHECK_EQ_INT(kiln_executor_run(e), KILN_OK);
        else
            fprintf(stderr, "%s\n", kiln_last_error());
    } else {
        CHECK(e == NULL);
        CHECK_CONTAINS(kiln_last_error(), err);
    }
    kiln_executor_free(e);
}

static void test_forged(void) {
    keep k = {0};
    kiln_ndarray *x;
    static const int64_t co[3] = {3, 5, 2};
    kiln_graph *g = branches(&k, 1, 4, co, 3, 0, &x);
    const char *path = test_tmp_path("views_forge.tar");
    kiln_build_options *o = kiln_build_options_new();
    CHECK_EQ_INT(kiln_build_options_set(o, "disabled-pass", "AlterOpLayout"), KILN_OK);
    CHECK_EQ_INT(kiln_graph_compile(g, path, o), KILN_OK);
    kiln_build_options_free(o);
    kiln_graph_free(g);
    keep_free(&k);
    kiln_ndarray_free(x);
    pkg_members m;
    CHECK_EQ_INT(pkg_read_file(path, &m), KILN_OK);
    const char *text = (const char *)m.data[PKG_JSON];
    int64_t off[256], sid[256], off2[256];
    int n = plan_list(text, "storage_offset", off, 256);
    CHECK(n > 0 && n <= 256 && plan_list(text, "storage_id", sid, 256) == n);
    if (n <= 0 || n > 256) {
        pkg_members_free(&m);
        return;
    }
    /* the three branches at 0, 3 * 36 * 4 and 8 * 36 * 4 bytes of one storage */
    int placed[3], np = 0;
    for (int i = 0; i < n; i++)
        if (off[i] && np < 3)
            placed[np++] = i;
    CHECK_EQ_INT(np, 2);
    if (np != 2) {
        pkg_members_free(&m);
        return;
    }
    CHECK_EQ_INT(off[placed[0]], 3 * 36 * 4);
    CHECK_EQ_INT(off[placed[1]], 8 * 36 * 4);
    expect_forged(&m, text, "views_f0.tar", NULL); /* written back unchanged: it loads */
    static const struct {
        int64_t value; /* the last placed entry's offset */
        const char *err;
    } bad[] = {
        {9 * 36 * 4, "lies past the end of storage_id"},
        {8 * 36 * 4 + 2, "must be a multiple of the element size (4)"},
        {8 * 36 * 4 - 4, "must be a kernel's output in its output's storage_id"},
        {-4, "storage_offset must be an integer in [0, 2^40]"},
        {(int64_t)1 << 41, "storage_offset must be an integer in [0, 2^40]"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        memcpy(off2, off, sizeof(int64_t) * (size_t)n);
        off2[placed[1]] = bad[c].value;
        char *j = with_list(text, "storage_offset", off2, n);
        char name[64];
        snprintf(name, sizeof name, "views_f%d.tar", (int)c + 1);
        expect_forged(&m, j, name, bad[c].err);
        free(j);
    }
    /* a list of the wrong length */
    char *j = with_list(text, "storage_offset", off, n - 1);
    expect_forged(&m, j, "views_len.tar", "attrs.storage_offset has");
    free(j);
    /* a graph input's entry (entry 0, "x") at an offset */
    memcpy(off2, off, sizeof(int64_t) * (size_t)n);
    off2[0] = 64;
    j = with_list(text, "storage_offset", off2, n);
    expect_forged(&m, j, "views_in.tar", "0 for a graph input or a weight");
    free(j);
    /* the last kernel's output in the view's storage while the view is live:
       the view's set holds its storage until its reader, that kernel, ran */
    memcpy(off2, sid, sizeof(int64_t) * (size_t)n);
    off2[n - 1] = sid[placed[1]];
    j = with_list(text, "storage_id", off2, n);
    expect_forged(&m, j, "views_live.tar", "that is still live");
    free(j);
    /* a view's input moved to a storage id of its own */
    int64_t sid2[256], top = 0;
    for (int i = 0; i < n; i++)
        top = sid[i] > top ? sid[i] : top;
    memcpy(sid2, sid, sizeof(int64_t) * (size_t)n);
    memcpy(off2, off, sizeof(int64_t) * (size_t)n);
    sid2[placed[1]] = top + 1;
    off2[placed[1]] = 0;
    j = with_list(text, "storage_id", sid2, n);
    char *j2 = with_list(j, "storage_offset", off2, n);
    expect_forged(&m, j2, "views_sid.tar", "'cat': input 2 of the \"__view\" (entry ");
    expect_forged(&m, j2, "views_sid.tar", "must be a kernel's output in its output's storage_id");
    free(j);
    free(j2);
    pkg_members_free(&m);
}

/* Plans written by hand over the kernels of views_forge.tar (run
 * test_forged first): a = conv0(x) (3 channels), b and c = conv1(x) (5
 * channels each), A = [a, b] and B = [a, Z] as views of storage id 3. With
 * Z = b both are the same bytes and the plan runs (c in a storage id of its
 * own: in 3, while A and B hold it, it is refused); with Z = c, b and c lie
 * at the same offset of 3 while both are live, which is refused; a dim
 * expression makes the plan dynamic, which has no views. */
#define HAND_PLAN                                                                                  \
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},\n"                          \
    " {\"op\": \"null\", \"name\": \"w0\", \"inputs\": []},\n"                                     \
    " {\"op\": \"null\", \"name\": \"w1\", \"inputs\": []},\n"                                     \
    " {\"op\": \"tvm_op\", \"name\": \"a\", \"attrs\": {\"func_name\": \"fused_conv2d_relu_0\", "  \
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]},\n"       \
    " {\"op\": \"tvm_op\", \"name\": \"b\", \"attrs\": {\"func_name\": \"fused_conv2d_relu_1\", "  \
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[0, 0, 0], [2, 0, 0]]},\n"       \
    " {\"op\": \"tvm_op\", \"name\": \"c\", \"attrs\": {\"func_name\": \"fused_conv2d_relu_1\", "  \
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[0, 0, 0], [2, 0, 0]]},\n"       \
    " {\"op\": \"tvm_op\", \"name\": \"A\", \"attrs\": {\"func_name\": \"__view\", "               \
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[3, 0, 0], [4, 0, 0]]},\n"       \
    " {\"op\": \"tvm_op\", \"name\": \"B\", \"attrs\": {\"func_name\": \"__view\", "               \
    "\"num_inputs\": \"2\", \"num_outputs\": \"1\"}, \"inputs\": [[3, 0, 0], [%s, 0, 0]]}],\n"     \
    " \"arg_nodes\": [0, 1, 2], \"heads\": [[6, 0, 0], [7, 0, 0]],\n"                              \
    " \"node_row_ptr\": [0, 1, 2, 3, 4, 5, 6, 7, 8],\n"                                            \
    " \"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", "             \
    "\"float32\", "                                                                                \
    "\"float32\", \"float32\", \"float32\", \"float32\"]],\n"                                      \
    "  \"storage_id\": [\"list_int\", [0, 1, 2, 3, 3, %s, 3, 3]],\n"                               \
    "  \"storage_offset\": [\"list_int\", [0, 0, 0, 0, 432, %s, 0, 0]],\n"                         \
    "  \"shape\": [\"list_shape\", [[1, 4, 6, %s], [3, 4, 3, 3], [5, 4, 3, 3], [1, 3, 6, 6], "     \
    "[1, 5, 6, 6], [1, 5, 6, 6], [1, 8, 6, 6], [1, 8, 6, 6]]]}}\n"

static void test_hand_plans(void) {
    pkg_members m;
    if (pkg_read_file(test_tmp_path("views_forge.tar"), &m) != KILN_OK) {
        CHECK(0 && "views_forge.tar");
        return;
    }
    const char *so = test_tmp_path("views_hand.so");
    FILE *f = fopen(so, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(m.data[PKG_SO], 1, m.len[PKG_SO], f);
        fclose(f);
    }
    pkg_members_free(&m);
    kiln_module *mod = kiln_module_load(so);
    CHECK(mod != NULL);
    if (!mod)
        return;
    static const struct {
        const char *z, *sid, *off, *x, *err; /* B's input 1, c's storage, x's dim 3 */
    } cases[] = {
        {"4", "4", "0", "6", NULL},
        {"4", "3", "0", "6",
         "node 5 'c': its output shares storage_id 3 with an output of node 3 'a' that is still "
         "live"},
        {"5", "3", "432", "6",
         "node 5 'c': its output overlaps entry 4 (output of node 4 'b') in storage_id 3 while "
         "both are live"},
        {"4", "4", "0", "\"n\"", "\"__view\" nodes and storage offsets need a static plan"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char j2[4096];
        snprintf(j2, sizeof j2, HAND_PLAN, cases[c].z, cases[c].sid, cases[c].off, cases[c].x);
        kiln_executor *e = kiln_executor_create(j2, strlen(j2), mod, NULL);
        if (cases[c].err) {
            CHECK(e == NULL);
            CHECK_CONTAINS(kiln_last_error(), cases[c].err);
        } else {
            CHECK(e != NULL);
            if (!e)
                fprintf(stderr, "%s\n", kiln_last_error());
            if (e && kiln_executor_run(e) == KILN_OK) { /* x and the weights are zero */
                const kiln_ndarray *a = kiln_executor_output(e, 0), *b = kiln_executor_output(e, 1);
                CHECK_EQ_INT(kiln_ndarray_numel(a), 288);
                CHECK(kiln_ndarray_data(a) == kiln_ndarray_data(b));
            } else if (e) {
                CHECK(0 && "the run");
            }
        }
        kiln_executor_free(e);
    }
    kiln_module_free(mod);
}

TEST_MAIN(TEST(test_branches), TEST(test_dense_block), TEST(test_keeps_copy), TEST(test_forged),
          TEST(test_hand_plans))
