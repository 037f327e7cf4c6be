/* passes.h: graph passes, one file each. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "../graph/graph_internal.h"
#include "kiln/schedule.h"

/* What a pass may need to know of the target. */
typedef struct {
    const kiln_target *target; /* what the code is for (never NULL) */
    int winograd;     /* 3x3 convolutions: -1 AlterOpLayout decides, 0 never, 2 or 4 the tile */
    int64_t fold_max; /* FoldConstant evaluates calls of at most this many elements
                         (0: the interpreter's cap, TE_EVAL_MAX_ELEMENTS) */
    kiln_build_progress_fn progress; /* told "pass NAME" as each pass starts; may be NULL */
    void *progress_user;
    layout_knobs *knobs; /* AlterOpLayout's hooks' knobs (docs/tuning.md), or NULL */
    int nbyoc;           /* the backends that take sub-graphs first (kiln/byoc.h) */
    const struct kiln_codegen_spec *const *byoc;
    const char *user_passes; /* global functions (kiln/ffi.h) run first, comma-separated */
    int named;               /* 1 while a pass runs because it was named (pass_run_one):
                                a pass that the pipeline runs only on some targets runs */
} pass_env;

/* Returned by a rebuild callback: copy the node unchanged, or leave it out. */
enum { REBUILD_COPY = -2, REBUILD_DROP = -3 };

/* ---- rebuilding and rewriting (pattern.c) -----------------------------------
 * pass_rebuild makes a new graph from g node by node: fn gets each node of
 * g in order with the new graph and the map old id -> new id so far, and
 * returns the new id for the node, REBUILD_COPY, REBUILD_DROP, or -1 on an
 * error; fn NULL copies every node (a copy of g). NULL with an error. */
typedef int (*rebuild_fn)(struct kiln_graph *r, const struct kiln_graph *g, const gnode *n,
                          const int *map, void *user);
KILN_HIDDEN struct kiln_graph *pass_rebuild(const struct kiln_graph *g, rebuild_fn fn, void *user);
/* DeadCodeElimination: g without the nodes no output needs (variables stay). */
KILN_HIDDEN struct kiln_graph *pass_dead_code(const struct kiln_graph *g);

struct kiln_pattern;
struct kiln_rewrite;
typedef int (*pattern_rewrite_fn)(struct kiln_rewrite *rw, void *user);
/* kiln_graph_rewrite with n patterns, tried in order at each node (the
 * first whose callback rewrites it wins), to a fixed point; g typed. */
KILN_HIDDEN struct kiln_graph *pattern_rewrite_all(const struct kiln_graph *g, int n,
                                                   const struct kiln_pattern *const *pats,
                                                   const pattern_rewrite_fn *fns,
                                                   void *const *users);
/* A call of function op `op` ("composite", "external") in r whose body is
 * the nodes `members` of g (increasing ids) with results outs[0..nout)
 * (tensors; more than one makes the call a tuple): the members' inputs from
 * outside become the body's variables and the call's arguments (through
 * map into r), in order of first use. Its attributes are `attrs` plus
 * body. Returns its id in r, or -1. */
KILN_HIDDEN int pattern_make_function(struct kiln_graph *r, const struct kiln_graph *g,
                                      const int *members, int nmembers, const int *outs, int nout,
                                      const int *map, const char *op, const gattr *attrs, int nattr,
                                      const char *name);

/* ---- bring your own codegen (byoc.c; kiln/byoc.h) ---------------------------- */
struct kiln_codegen_spec;
/* MergeComposite: each backend's pattern rows, in order. */
KILN_HIDDEN struct kiln_graph *pass_merge_composite(const struct kiln_graph *g, int nb,
                                                    const struct kiln_codegen_spec *const *b);
/* AnnotateTarget: calls a backend takes (its composites, its supported
 * ops) wrapped in compiler_begin on each input and compiler_end. */
KILN_HIDDEN struct kiln_graph *pass_annotate_target(const struct kiln_graph *g, int nb,
                                                    const struct kiln_codegen_spec *const *b);
KILN_HIDDEN struct kiln_graph *pass_merge_compiler_regions(const struct kiln_graph *g);
/* PartitionGraph: regions become external calls named
 * tvmgen_default_<compiler>_main_<k>; composites outside them are inlined. */
KILN_HIDDEN struct kiln_graph *pass_partition_graph(const struct kiln_graph *g);

/* A call's attributes as text (the graph text syntax), leaving out those
 * named in skip (a NULL-terminated list, or NULL), then `extra`; malloc'd
 * (alter_layout.c). */
KILN_HIDDEN char *pass_attrs_text(const gnode *n, const char *const *skip, const char *extra);

/* FuseOps: assign each call node a group (other nodes get -1). Groups are
 * convex chains: a call joins the group of an input call whose only
 * consumer it is, when the patterns allow it (TVM's rules: an
 * out-elemwise-fusable op absorbs following elementwise and broadcast ops;
 * injective and lighter ops fuse with each other; opaque ops never fuse;
 * multi-output ops stay alone). Writes group ids to group[g->n]; returns
 * the group count. Within a group, the node with the largest id is its
 * output. A call whose alone[id] is set (alone may be NULL) is a group of
 * its own: the memory planner makes it a view (src/driver/concat_views.c). */
KILN_HIDDEN int pass_fuse_ops(const struct kiln_graph *g, const char *alone, int *group);

/* Union-find: the representative of x in rep (halving the path). */
KILN_HIDDEN int pass_find(int *rep, int x);

/* The graph pipeline (pass_manager.c): InferType, then the passes the opt
 * level turns on minus those named in disabled_list (comma-separated),
 * dumping the graph to dump_dir (may be NULL) before and after each pass.
 * Returns the final graph: g itself if no pass ran, else a new graph the
 * caller frees. NULL with an error. */
KILN_HIDDEN struct kiln_graph *pass_run_pipeline(struct kiln_graph *g, int opt_level,
                                                 const char *disabled_list, const char *dump_dir,
                                                 const pass_env *env);
/* 1 if `name` is a pass kiln knows; the list for messages. */
KILN_HIDDEN int pass_known(const char *name);
/* 0 for the passes that run only when a graph is lowered (FuseOps, ConcatViews). */
KILN_HIDDEN int pass_graph_to_graph(const char *name);
/* One pass by name (built in, InferType, or a user pass: a global function
 * from graph to graph) on g, typed: a new graph, or NULL with an error. */
KILN_HIDDEN struct kiln_graph *pass_run_one(struct kiln_graph *g, const char *name,
                                            const pass_env *env);
KILN_HIDDEN const char *pass_names(void);

/* SimplifyInference and SimplifyExpr (simplify.c): pattern rewrites. */
KILN_HIDDEN struct kiln_graph *pass_simplify_inference(struct kiln_graph *g, const pass_env *env);
KILN_HIDDEN struct kiln_graph *pass_simplify_expr(struct kiln_graph *g, const pass_env *env);

/* FoldConstant (fold_constant.c): a new graph, or NULL with an error. */
KILN_HIDDEN struct kiln_graph *pass_fold_constant(struct kiln_graph *g, const pass_env *env);
/* FakeQuantizationToInteger (fake_quant.c): QDQ sub-graphs into QNN ops. */
KILN_HIDDEN struct kiln_graph *pass_fake_quantization(struct kiln_graph *g, const pass_env *env);
/* QnnCanonicalize (qnn_canon.c): QNN products and dequantize into integer
 * and float arithmetic the int8 kernels take. */
KILN_HIDDEN struct kiln_graph *pass_qnn_canonicalize(struct kiln_graph *g, const pass_env *env);

/* AlterOpLayout (alter_layout.c): convolutions to NCHW[x]c with packed
 * weights, dense weights transposed; a new graph, or NULL with an error. */
KILN_HIDDEN struct kiln_graph *pass_alter_op_layout(struct kiln_graph *g, const pass_env *env);

#endif
