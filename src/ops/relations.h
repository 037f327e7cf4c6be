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
#undef KILN_REL

#endif
