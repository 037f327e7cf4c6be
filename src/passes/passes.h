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
} pass_env;

/* Returned by a rebuild callback (pass_manager.c): copy the node unchanged,
 * or leave it out. */
enum { REBUILD_COPY = -2, REBUILD_DROP = -3 };

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
KILN_HIDDEN const char *pass_names(void);

/* FoldConstant (fold_constant.c): a new graph, or NULL with an error. */
KILN_HIDDEN struct kiln_graph *pass_fold_constant(struct kiln_graph *g, const pass_env *env);

/* AlterOpLayout (alter_layout.c): convolutions to NCHW[x]c with packed
 * weights, dense weights transposed; a new graph, or NULL with an error. */
KILN_HIDDEN struct kiln_graph *pass_alter_op_layout(struct kiln_graph *g, const pass_env *env);

#endif
