/* driver_internal.h: what the build pipelines share (build.c for
 * tensor-expression functions, compile.c for graphs). */
#ifndef KILN_DRIVER_INTERNAL_H
#define KILN_DRIVER_INTERNAL_H

#include "../codegen/codegen.h"
#include "../graph/graph.h"
#include "../target/target.h"
#include "../te/te_internal.h"
#include "kiln/schedule.h"
#include "tune_records.h"

struct kiln_graph;

struct kiln_build_options {
    char *cc;
    char *cflags;
    kiln_target *target; /* NULL: $KILN_TARGET, else this machine ("host") */
    int vector_bytes;    /* 0: the target's */
    int no_fuse;         /* graphs: one kernel per op (opt level 0) */
    int naive;           /* graphs: the naive schedule (every stage inlined, nothing else) */
    int winograd;        /* graphs: -1 auto, 0 off, 2 or 4 Winograd tile for every eligible conv */
    int opt_level;       /* graphs: 0-3, -1 for the default (3) */
    char *disabled;      /* graphs: comma-separated pass names */
    char *passes;        /* graphs: user passes run first (global functions), comma-separated */
    char *dump_dir;      /* graphs: where to write the IR around each pass */
    char *records;       /* graphs: a tuning-records file (docs/tuning.md), or NULL */
    int cache;           /* the kernel cache: 1 on, 0 off, -1 as $KILN_CACHE says (on) */
    kiln_build_progress_fn progress; /* NULL: no progress reports */
    void *progress_user;
};

/* Report progress to the options' callback, if any. */
KILN_HIDDEN void driver_progress(const kiln_build_options *opts, const char *phase, int done,
                                 int total, const char *note);
/* The toolchain of target t with the options' cache and progress. */
KILN_HIDDEN codegen_toolchain driver_toolchain(const kiln_build_options *opts,
                                               const kiln_target *t);

/* The target of opts (its "target", else $KILN_TARGET, else this machine)
 * with opts' vector width, cc and cflags applied; NULL with an error. The
 * caller frees it. */
KILN_HIDDEN kiln_target *driver_target(const kiln_build_options *opts);
/* KILN_OK if the shared object `so` holds code for t's architecture, else
 * an error naming the compiler that built it. */
KILN_HIDDEN kiln_status driver_check_arch(const char *so, const kiln_target *t);
/* The key of the fused group of g with these members (node ids,
 * increasing) and inputs (kernel_key.c): groups with the same key lower to
 * the same kernel. 0 when the group gets none (a plugin op, a sub-graph
 * attribute), else 1 with the key. */
KILN_HIDDEN int driver_group_key(const struct kiln_graph *g, const int *members, int nmembers,
                                 const int *in, int nin, unsigned char key[32]);
/* Remove a build folder and the files in it. */
KILN_HIDDEN void driver_remove_dir(const char *dir);

struct gnode;

/* The default CPU schedule of a group's kernel (default_schedule.c): outs are
 * its outputs and out_node the node of the last; anchor_node and anchor its
 * out-elemwise-fusable op and that op's tensor (NULL if none), whose row's
 * schedule places them first (with a row op ending the group, op_rows_fn,
 * that op's schedule first); `naive` inlines everything but padding and
 * does nothing else. */
KILN_HIDDEN kiln_status driver_default_schedule(kiln_schedule *s, int nout, kiln_tensor **outs,
                                                const struct gnode *out_node,
                                                const struct gnode *anchor_node,
                                                kiln_tensor *anchor, int naive,
                                                const kiln_target *target);

/* ---- layout knobs (layout_knobs.c; docs/tuning.md) ---------------------------
 * What AlterOpLayout's hooks ask (layout_knobs, graph.h) answered for a
 * build or a tuning session: record each knob once per layout key (the
 * call's own key) with its default and legal values, apply the best
 * record for the key, or force one value wherever it is legal. */
enum { DRIVER_LK_RECORD, DRIVER_LK_APPLY, DRIVER_LK_FORCE };
typedef struct {
    unsigned char key[32]; /* the call's layout key */
    char call[160];        /* its node's name, which the rewritten call keeps */
    char op[64];
    te_knob knob; /* its name, default (first) and legal values */
    int count;    /* calls with the key */
} driver_layout_task;
typedef struct {
    layout_knobs base;
    int mode;
    const driver_records *records; /* apply */
    char force_name[TE_KNOB_NAME]; /* force: this knob */
    int64_t force;                 /* to this value */
    int applied;                   /* apply: knobs a record set */
    int ntasks, cap;               /* record */
    driver_layout_task *tasks;
} driver_layout_knobs;
KILN_HIDDEN void driver_layout_knobs_init(driver_layout_knobs *k, int mode, const driver_records *R,
                                          const char *force_name, int64_t force);
KILN_HIDDEN void driver_layout_knobs_free(driver_layout_knobs *k);

/* ---- tuning sessions (compile.c; docs/tuning.md) ----------------------------
 * A graph through the passes and grouped as a build would be, kept so that
 * the tuner can lower any group again under a config. A task is a
 * distinct fused-group key of the top-level graph (bodies of control ops
 * are not tuned). */
typedef struct {
    unsigned char key[32];
    int group;       /* the first group with the key */
    int count;       /* the groups with the key */
    int nout;        /* its outputs: the kernel's last nout arguments */
    uint64_t consts; /* bit i: input i (of the first 64) is a constant of the graph */
    char ops[200];   /* its ops, "nn.contrib_conv2d_NCHWc+add+nn.relu" */
    char shape[96];  /* its output's shape, "1x4x56x56x16" */
} driver_task;
typedef struct driver_session driver_session;
/* NULL with an error (the graph's own: a bad shape, an unsupported op).
 * lk (or NULL) answers AlterOpLayout's knobs. */
KILN_HIDDEN driver_session *
driver_session_open(struct kiln_graph *g, const kiln_build_options *opts, driver_layout_knobs *lk);
/* The group of the session's graph with a member named `name`: its task,
 * or -1. */
KILN_HIDDEN int driver_session_task_of(const driver_session *S, const char *name);
KILN_HIDDEN void driver_session_close(driver_session *S);
KILN_HIDDEN int driver_session_tasks(const driver_session *S, const driver_task **tasks);
KILN_HIDDEN const kiln_target *driver_session_target(const driver_session *S);
/* Task `task`'s kernel, called `name`, lowered in ctx with knobs (NULL:
 * the default schedule); NULL with an error. */
KILN_HIDDEN tir_func *driver_session_lower(driver_session *S, int task, kiln_ctx *ctx,
                                           te_knobs *knobs, const char *name);

/* ---- external functions (external.c; kiln/byoc.h) ------------------------- */
struct kiln_codegen_spec;
/* The index in list (n of at most cap) of backend `name`, added if it is
 * not there; -1 with an error if kiln has no such backend. */
KILN_HIDDEN int driver_backend(const struct kiln_codegen_spec **list, int *n, int cap,
                               const char *name);
/* The kernel of external call n of g (its inputs in[0..nin), then its
 * outputs), named `name`: the C backend b writes. NULL with an error. */
KILN_HIDDEN tir_func *driver_external_func(kiln_ctx *ctx, const struct kiln_graph *g,
                                           const struct gnode *n, const char *name, int nin,
                                           const int *in, const struct kiln_codegen_spec *b);
/* The ops call n computes: its body's calls (composites' counted through
 * their bodies), or 1 without a body. */
KILN_HIDDEN int driver_body_ops(const struct gnode *n);
/* mod.json's target.external: the backends that compiled funcs[k] > 0
 * functions, with the library each needs where the package runs (nothing
 * when there are none). */
KILN_HIDDEN void driver_external_json(kstr *js, int n, const struct kiln_codegen_spec *const *b,
                                      const int *funcs);
/* tc's cflags plus the used backends' (into cflags) and their ldflags;
 * the caller frees both strings after compiling. */
KILN_HIDDEN void driver_external_flags(codegen_toolchain *tc, kstr *cflags, kstr *ldflags, int n,
                                       const struct kiln_codegen_spec *const *b, const int *funcs);

#endif
