/* pass_manager.c: the graph pass pipeline. Passes are rows of one table
 * with a name and the opt level that turns them on; they run in table
 * order, each producing a new graph from the last. --disabled-pass drops
 * one by name; --dump-ir writes the graph before the first pass and after
 * each pass. User passes (global functions of kiln/ffi.h from graph to
 * graph, "pass" build option) run first, in the order given. Also the small passes:
 * DeadCodeElimination, EliminateCommonSubexpr and SimplifyInference. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/runtime_internal.h"
#include "kiln/ffi.h"
#include "passes.h"

/* ---- DeadCodeElimination ---------------------------------------------------- */

static struct kiln_graph *pass_dce(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return pass_dead_code(g);
}

/* ---- EliminateCommonSubexpr ---------------------------------------------------- */

static int same_attrs(const gnode *a, const gnode *b) {
    if (a->nattr != b->nattr)
        return 0;
    for (int i = 0; i < a->nattr; i++) {
        const gattr *x = &a->attrs[i], *y = graph_attr(b, x->name);
        if (!y || x->kind != y->kind || x->n != y->n)
            return 0;
        switch (x->kind) {
        case GA_INT:
            if (x->i != y->i)
                return 0;
            break;
        case GA_FLOAT:
            if (memcmp(&x->f, &y->f, sizeof x->f))
                return 0;
            break;
        case GA_STR:
            if (strcmp(x->s, y->s))
                return 0;
            break;
        case GA_INTS:
            if (x->n && memcmp(x->ints, y->ints, sizeof(int64_t) * (size_t)x->n))
                return 0;
            break;
        case GA_FLOATS:
            if (x->n && memcmp(x->floats, y->floats, sizeof(double) * (size_t)x->n))
                return 0;
            break;
        case GA_GRAPH: /* the same body (a body is never compared by content) */
            if (x->graph != y->graph)
                return 0;
            break;
        }
    }
    return 1;
}

/* Calls (and tuple-gets) with the same op, inputs and attributes are one.
 * The nodes already in the new graph sit in an open-addressing table keyed
 * by kind, op, index and inputs, so the pass is linear in the graph (a
 * scan of every earlier node made a 50,000-op Sum take seconds here). */
typedef struct {
    int *slot; /* new-graph node ids, -1 empty */
    size_t cap;
    int indexed; /* r->nodes[0 .. indexed) are in the table */
} cse_table;

static uint64_t cse_hash(const gnode *n, const int *in, const int *map) {
    uint64_t h = 1469598103934665603ull;
    uint64_t k[4] = {(uint64_t)n->kind, (uint64_t)(uintptr_t)n->op, (uint64_t)n->index,
                     (uint64_t)n->nin};
    for (int i = 0; i < 4 + n->nin; i++) {
        uint64_t v = i < 4 ? k[i] : (uint64_t)(map ? map[in[i - 4]] : in[i - 4]);
        h = (h ^ v) * 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static int cse_keyed(const gnode *n) {
    return n->kind == GN_CALL || n->kind == GN_TUPLE_GET;
}

static void cse_insert(cse_table *t, const struct kiln_graph *r, int id) {
    size_t j = cse_hash(r->nodes[id], r->nodes[id]->in, NULL) & (t->cap - 1);
    while (t->slot[j] >= 0)
        j = (j + 1) & (t->cap - 1);
    t->slot[j] = id;
}

static int merge_same(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                      const int *map, void *user) {
    (void)g;
    cse_table *t = user;
    for (; t->indexed < r->n; t->indexed++)
        if (cse_keyed(r->nodes[t->indexed]))
            cse_insert(t, r, t->indexed);
    if (!cse_keyed(n))
        return REBUILD_COPY;
    for (size_t j = cse_hash(n, n->in, map) & (t->cap - 1); t->slot[j] >= 0;
         j = (j + 1) & (t->cap - 1)) {
        const gnode *m = r->nodes[t->slot[j]];
        if (m->kind != n->kind || m->op != n->op || m->nin != n->nin || m->index != n->index)
            continue;
        int same = 1;
        for (int i = 0; i < n->nin && same; i++)
            same = m->in[i] == map[n->in[i]];
        if (same && same_attrs(n, m))
            return t->slot[j];
    }
    return REBUILD_COPY;
}

static struct kiln_graph *pass_cse(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    cse_table t = {NULL, 16, 0};
    while (t.cap < 2 * (size_t)g->n + 2)
        t.cap *= 2; /* the new graph has at most g->n nodes: load <= 1/2 */
    t.slot = malloc(sizeof(int) * t.cap);
    if (!t.slot) {
        kiln_set_error(KILN_ERR_NOMEM, "EliminateCommonSubexpr: out of memory");
        return NULL;
    }
    memset(t.slot, 0xff, sizeof(int) * t.cap);
    struct kiln_graph *r = pass_rebuild(g, merge_same, &t);
    free(t.slot);
    return r;
}

/* ---- the pipeline ------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int opt_level; /* runs when the opt level is at least this */
    struct kiln_graph *(*run)(struct kiln_graph *g, const pass_env *env);
    int byoc; /* runs only for a target with external backends (kiln/byoc.h) */
} pass_row;

static struct kiln_graph *run_merge_composite(struct kiln_graph *g, const pass_env *env) {
    return pass_merge_composite(g, env->nbyoc, env->byoc);
}

static struct kiln_graph *run_annotate_target(struct kiln_graph *g, const pass_env *env) {
    return pass_annotate_target(g, env->nbyoc, env->byoc);
}

static struct kiln_graph *run_merge_regions(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return pass_merge_compiler_regions(g);
}

static struct kiln_graph *run_partition_graph(struct kiln_graph *g, const pass_env *env) {
    (void)env;
    return pass_partition_graph(g);
}

/* The order of TVM's x86 pipeline, restricted to the passes kiln has.
 * FuseOps is not here: it partitions the graph at lowering (driver) and
 * only reads the flags below; nor is ConcatViews, the memory planner's
 * placing of concatenations (src/driver/concat_views.c). */
/* The BYOC passes run after the graph is simplified and before
 * AlterOpLayout, so the backends see plain layouts and kiln lays out only
 * what stays its own. */
static const pass_row k_passes[] = {
    {"SimplifyInference", 0, pass_simplify_inference, 0},
    /* a QDQ model's integer form, before FoldConstant dequantizes its weights */
    {"FakeQuantizationToInteger", 3, pass_fake_quantization, 0},
    {"QnnCanonicalize", 3, pass_qnn_canonicalize, 0},
    {"EliminateCommonSubexpr", 3, pass_cse, 0},
    {"FoldConstant", 2, pass_fold_constant, 0},
    {"SimplifyExpr", 3, pass_simplify_expr, 0},
    {"MergeComposite", 0, run_merge_composite, 1},
    {"AnnotateTarget", 0, run_annotate_target, 1},
    {"MergeCompilerRegions", 0, run_merge_regions, 1},
    {"PartitionGraph", 0, run_partition_graph, 1},
    {"AlterOpLayout", 3, pass_alter_op_layout, 0},
    {"DeadCodeElimination", 1, pass_dce, 0},
};
#define NPASSES (int)(sizeof k_passes / sizeof k_passes[0])

int pass_graph_to_graph(const char *name) {
    return strcmp(name, "FuseOps") && strcmp(name, "ConcatViews");
}

int pass_known(const char *name) {
    if (!strcmp(name, "FuseOps") || !strcmp(name, "InferType") || !strcmp(name, "ConcatViews"))
        return 1;
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(k_passes[i].name, name))
            return 1;
    return 0;
}

/* The two lists of the pass table, made from it once: names ("InferType,
 * SimplifyInference, ..., FuseOps, ConcatViews") and name:level pairs. */
static char g_names[1024], g_levels[1024];
static pthread_once_t g_lists_once = PTHREAD_ONCE_INIT;

static void make_lists(void) {
    size_t a = (size_t)snprintf(g_names, sizeof g_names, "InferType");
    size_t b = (size_t)snprintf(g_levels, sizeof g_levels, "InferType:0");
    for (int i = 0; i < NPASSES; i++) {
        a += (size_t)snprintf(g_names + a, sizeof g_names - a, ", %s", k_passes[i].name);
        b += (size_t)snprintf(g_levels + b, sizeof g_levels - b, ",%s:%d", k_passes[i].name,
                              k_passes[i].opt_level);
    }
    snprintf(g_names + a, sizeof g_names - a, ", FuseOps, ConcatViews");
}

const char *pass_names(void) {
    pthread_once(&g_lists_once, make_lists);
    return g_names;
}

const char *kiln_pass_list(void) {
    pthread_once(&g_lists_once, make_lists);
    return g_levels;
}

/* A user pass: the global function `name` called with g; a new graph. */
static struct kiln_graph *run_user_pass(struct kiln_graph *g, const char *name) {
    kiln_func *f = kiln_func_get(name, 1);
    if (!f) {
        kiln_set_error(KILN_ERR_INVALID,
                       "no pass '%s': neither built in (%s) nor a registered global function "
                       "(kiln/ffi.h; a plugin registers it)",
                       name, pass_names());
        return NULL;
    }
    kiln_args *in = kiln_args_new(), *ret = kiln_args_new();
    struct kiln_graph *out = NULL;
    if (in && ret && kiln_args_push_graph(in, g, 0) == KILN_OK &&
        kiln_func_call(f, in, ret) == KILN_OK) {
        int owned = 0;
        struct kiln_graph *r = kiln_args_take_graph(ret, 0, &owned);
        if (!r)
            kiln_error_prefix("the function returned no graph");
        else if (owned && r != g)
            out = r;
        else /* the pass returned a graph it keeps (maybe its input): copy it */
            out = pass_rebuild(r, NULL, NULL);
    }
    kiln_args_free(in);
    kiln_args_free(ret);
    kiln_func_release(f);
    return out;
}

struct kiln_graph *pass_run_one(struct kiln_graph *g, const char *name, const pass_env *env) {
    if (kiln_graph_infer_types(g) != KILN_OK)
        return NULL;
    struct kiln_graph *out = NULL;
    if (!strcmp(name, "InferType")) {
        out = pass_rebuild(g, NULL, NULL);
    } else if (!pass_graph_to_graph(name)) {
        kiln_set_error(KILN_ERR_INVALID,
                       "pass %s runs when the graph is lowered, not on its own: it is "
                       "on in every build of opt level 1 or more",
                       name);
        return NULL;
    } else {
        int i = 0;
        while (i < NPASSES && strcmp(k_passes[i].name, name))
            i++;
        pass_env named = *env;
        named.named = 1;
        out = i < NPASSES ? k_passes[i].run(g, &named) : run_user_pass(g, name);
    }
    if (!out) {
        kiln_error_prefix("pass %s", name);
        return NULL;
    }
    if (kiln_graph_infer_types(out) != KILN_OK) {
        kiln_error_prefix("after pass %s", name);
        kiln_graph_free(out);
        return NULL;
    }
    return out;
}

static int disabled(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static kiln_status dump(const char *dir, int step, const char *when, const char *pass,
                        const struct kiln_graph *g) {
    if (!dir)
        return KILN_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/%02d_%s_%s.txt", dir, step, when, pass);
    char *text = graph_print(g);
    if (!text)
        return KILN_ERR_NOMEM;
    kiln_status st = kiln_write_file(path, text, strlen(text));
    free(text);
    return st;
}

struct kiln_graph *pass_run_pipeline(struct kiln_graph *g, int opt_level, const char *disabled_list,
                                     const char *dump_dir, const pass_env *env) {
    if (kiln_graph_infer_types(g) != KILN_OK)
        return NULL;
    struct kiln_graph *cur = g;
    int step = 0;
    if (dump(dump_dir, step++, "input", "graph", cur) != KILN_OK)
        return NULL;
    for (const char *p = env->user_passes; p && *p;) {
        const char *e = strchr(p, ',');
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
        p = e ? e + 1 : NULL;
        if (!name[0] || disabled(disabled_list, name))
            continue;
        if (env->progress) {
            char phase[300];
            snprintf(phase, sizeof phase, "pass %s", name);
            env->progress(env->progress_user, phase, 0, 0, NULL);
        }
        struct kiln_graph *next = pass_run_one(cur, name, env);
        if (cur != g)
            kiln_graph_free(cur);
        if (!next || dump(dump_dir, step++, "after", name, next) != KILN_OK) {
            kiln_graph_free(next);
            return NULL;
        }
        cur = next;
    }
    for (int i = 0; i < NPASSES; i++) {
        const pass_row *p = &k_passes[i];
        if (opt_level < p->opt_level || disabled(disabled_list, p->name) ||
            (p->byoc && env->nbyoc == 0))
            continue;
        if (env->progress) {
            char phase[96];
            snprintf(phase, sizeof phase, "pass %s", p->name);
            env->progress(env->progress_user, phase, 0, 0, NULL);
        }
        struct kiln_graph *next = p->run(cur, env);
        if (!next) {
            kiln_error_prefix("pass %s", p->name);
            if (cur != g)
                kiln_graph_free(cur);
            return NULL;
        }
        if (cur != g)
            kiln_graph_free(cur);
        cur = next;
        if (kiln_graph_infer_types(cur) != KILN_OK ||
            dump(dump_dir, step++, "after", p->name, cur) != KILN_OK) {
            if (cur != g)
                kiln_graph_free(cur);
            return NULL;
        }
    }
    return cur;
}
