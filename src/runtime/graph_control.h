/* graph_control.h: running a plan's control nodes (If, Loop, Scan) over
 * their bodies' plans (graph_control.c; docs/CONTROL_FLOW.md). */
#ifndef KILN_GRAPH_CONTROL_H
#define KILN_GRAPH_CONTROL_H

#include "graph_plan.h"

/* Run body model `body` on `in` (one value per input), making new arrays
 * out (one per output): the executor's kiln_model_run_alloc, handed in so
 * that this file calls nothing of the executor's. */
typedef kiln_status (*graph_body_fn)(kiln_model *body, const kiln_ndarray *const *in,
                                     kiln_ndarray **out, unsigned flags);

/* Run control node nid of m on its inputs' values `in` this run: new
 * arrays to out[0 .. noutputs) (the caller frees them; all NULL after an
 * error, which names the node). hint[o][d] is output o's dim d where it is
 * known before the node runs, else -1 (the dims of an output no iteration
 * made). */
KILN_HIDDEN kiln_status graph_control_run(const kiln_model *m, int nid,
                                          const kiln_ndarray *const *in,
                                          const int64_t (*hint)[KILN_MAX_NDIM], kiln_ndarray **out,
                                          graph_body_fn run, unsigned flags);

/* The most iterations one Loop or Scan node may run in a run: 2^31 (a
 * trip count's limit), unless a test or fuzzer lowers it; past it the run
 * fails with KILN_ERR_INVALID naming the node. */
KILN_HIDDEN extern int64_t graph_control_max_iterations;

#endif
