/* concat_views.h: ConcatViews (concat_views.c), which concatenations the
 * memory planner makes views of their inputs, and where each placed
 * tensor lies. */
#ifndef KILN_CONCAT_VIEWS_H
#define KILN_CONCAT_VIEWS_H

#include "kiln/runtime.h"

struct kiln_graph;

typedef struct {
    char *view;   /* per node: a concatenation that runs nothing (a FuseOps group of its own) */
    int *root;    /* per node: the view whose buffer holds its tensor (itself for that view), or
                     -1 where it has a buffer of its own */
    int64_t *off; /* per node with a root: its tensor's byte offset in the root's buffer */
    int nviews;
} driver_views;

/* Decide the views of g (typed, after the passes; fuse: FuseOps will
 * group it); with `enabled` 0, or a plan that is not static, none. The
 * caller frees v. */
KILN_HIDDEN kiln_status driver_plan_views(const struct kiln_graph *g, int enabled, int fuse,
                                          driver_views *v);
/* A placed tensor's buffer is its root's: every group whose output node
 * has a root gets the last use (last_use[k], a group index) of the latest
 * of that root's groups, so the buffer lives from its first producer to
 * its last reader. group_out[k]: group k's output node. */
KILN_HIDDEN kiln_status driver_views_join_lifetimes(const driver_views *v, int ngroups,
                                                    const int *group_out, int *last_use,
                                                    int nnodes);
KILN_HIDDEN void driver_views_free(driver_views *v);

#endif
