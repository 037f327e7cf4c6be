/* op_util.h: one op of the library called on graph inputs, in the tests of
 * the op families (test_ops_index.c, test_ops_image.c). */
#ifndef KILN_OP_UTIL_H
#define KILN_OP_UTIL_H

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"

/* A tensor type: dtype, rank, dims. */
typedef struct {
    kiln_dtype dt;
    int nd;
    int64_t d[KILN_MAX_NDIM];
} ot_type;

/* Types written inline: T(F32(3, 4), I64(2)), SCALAR(KILN_INT32). */
#define T(...) ((const ot_type[]){__VA_ARGS__})
#define OT_TYPE(dt, ...)                                                                           \
    {                                                                                              \
        dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, {                                                \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#define F32(...) OT_TYPE(KILN_FLOAT32, __VA_ARGS__)
#define I32(...) OT_TYPE(KILN_INT32, __VA_ARGS__)
#define I64(...) OT_TYPE(KILN_INT64, __VA_ARGS__)
#define SCALAR(dt)                                                                                 \
    {                                                                                              \
        dt, 0, {                                                                                   \
            0                                                                                      \
        }                                                                                          \
    }

/* op on graph inputs of types ts (named in0, in1, ...; at most 8): the
 * call's id, or -1 with the error. */
static inline int ot_call_on_vars(kiln_graph *g, const char *op, const char *attrs, int nin,
                                  const ot_type *ts) {
    int ids[8];
    for (int i = 0; i < nin && i < 8; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "in%d", i);
        ids[i] = kiln_graph_var(g, nm, ts[i].dt, ts[i].nd, ts[i].d, NULL);
    }
    return kiln_graph_call(g, op, nin, ids, attrs, op);
}

/* CHECK that op on inputs of types ts is refused (by the call or its
 * relation) with an error containing msg; the error is printed if not. */
static inline void ot_expect_error(const char *op, const char *attrs, int nin, const ot_type *ts,
                                   const char *msg) {
    kiln_graph *g = kiln_graph_new();
    int c = ot_call_on_vars(g, op, attrs, nin, ts);
    CHECK(c < 0 || graph_infer_node(g, c) == KILN_ERR_INVALID);
    if (!strstr(kiln_last_error(), msg))
        fprintf(stderr, "%s (%s): %s\n", op, attrs ? attrs : "", kiln_last_error());
    CHECK_CONTAINS(kiln_last_error(), msg);
    kiln_graph_free(g);
}

#endif
