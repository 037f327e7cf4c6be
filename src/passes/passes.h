/* passes.h: graph passes, one file each. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "../graph/graph_internal.h"

/* FuseOps: assign each call node a group (other nodes get -1). Groups are
 * convex chains: a call joins the group of an input call whose only
 * consumer it is, when the patterns allow it (TVM's rules: an
 * out-elemwise-fusable op absorbs following elementwise and broadcast ops;
 * injective and lighter ops fuse with each other; opaque ops never fuse;
 * multi-output ops stay alone). Writes group ids to group[g->n]; returns
 * the group count. Within a group, the node with the largest id is its
 * output. */
KILN_HIDDEN int pass_fuse_ops(const struct kiln_graph *g, int *group);

#endif
