/* relations.h: the type relations of the built-in ops (relations.c),
 * referenced by the op table. */
#ifndef KILN_OPS_RELATIONS_H
#define KILN_OPS_RELATIONS_H

#include "ops.h"

#define KILN_REL(name)                                                                       \
    KILN_HIDDEN rel_result name(const struct kiln_graph *g, const gnode *call,               \
                                const gtype *const *in, gtype *out)
KILN_REL(rel_identity);
KILN_REL(rel_float_unary);
KILN_REL(rel_broadcast);
KILN_REL(rel_compare);
KILN_REL(rel_logic);
KILN_REL(rel_where);
KILN_REL(rel_cast);
KILN_REL(rel_conv2d);
KILN_REL(rel_pool2d);
KILN_REL(rel_global_pool2d);
KILN_REL(rel_dense);
KILN_REL(rel_bias_add);
KILN_REL(rel_softmax);
KILN_REL(rel_batch_norm);
KILN_REL(rel_reshape);
KILN_REL(rel_transpose);
KILN_REL(rel_batch_flatten);
KILN_REL(rel_concatenate);
KILN_REL(rel_split);
/* relations_more.c: reductions, normalization, matmul and indexing */
KILN_REL(rel_reduce);
KILN_REL(rel_arg_reduce);
KILN_REL(rel_layer_norm);
KILN_REL(rel_batch_matmul);
KILN_REL(rel_strided_slice);
KILN_REL(rel_take);
KILN_REL(rel_broadcast_to);
KILN_REL(rel_pad);
/* compute_nchwc.c */
KILN_REL(rel_layout_transform);
KILN_REL(rel_conv2d_nchwc);
KILN_REL(rel_conv2d_winograd_nchwc);
#undef KILN_REL

/* Shared by the relation files (relations.c). */
/* Set an error message; returns REL_ERROR. */
KILN_HIDDEN rel_result ops_fail(const char *fmt, ...) KILN_PRINTF(1, 2);
/* The tensor type of input i, or NULL with *r = REL_ERROR for a tuple. */
KILN_HIDDEN const gtensor_type *ops_tensor_in(const gtype *t, int i, rel_result *r);
KILN_HIDDEN rel_result ops_set_out(const struct kiln_graph *g, gtype *out, const gtensor_type *t);
/* A dim as text: its size or its symbol. */
KILN_HIDDEN void ops_dim_str(gdim d, char *buf, size_t cap);
/* numpy broadcasting of n types into *res, with the dtype of ts[dt_from]. */
KILN_HIDDEN rel_result ops_broadcast(int n, const gtensor_type *const *ts, int dt_from,
                                     gtensor_type *res);
/* 1 if dims [from, to) of t are all concrete. */
KILN_HIDDEN int ops_all_known(const gtensor_type *t, int from, int to);

#endif
