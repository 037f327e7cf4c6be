/* ops.h: the op library. The op table (op_table.c) is data in one place:
 * one row per op with its arity, attribute schema, type relation, fusion
 * pattern and compute. Relations and computes live in one file per op
 * family (elemwise.c, nn.c, transform.c, reduce.c). */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "../graph/graph_internal.h"

/* The built-in ops, plus user ops loaded from plugins. */
KILN_HIDDEN kiln_op_registry *ops_default_registry(void);

/* Number of rows of the built-in table, and row i (for the completeness test). */
KILN_HIDDEN int ops_builtin_count(void);
KILN_HIDDEN const kiln_op_def *ops_builtin(int i);

/* Helpers shared by the relations and the computes (relations_more.c). */

/* The axes a reduction reduces (attributes axis, exclude) over an ndim-D
 * input: mask[d] = 1 if dim d is reduced. 0, or -1 with an error. */
KILN_HIDDEN int ops_reduce_mask(const gnode *call, int ndim, int *mask);

/* numpy/ONNX slicing of one dim of size n by begin b, end e, step s != 0:
 * the first index and the length. */
KILN_HIDDEN void ops_slice_axis(int64_t n, int64_t b, int64_t e, int64_t s, int64_t *start,
                                int64_t *len);

/* strided_slice over dims[nd] (attributes begin, end, strides, axes): per
 * dim the first index, step and length, numpy-clamped. 0, or -1 with an
 * error. */
KILN_HIDDEN int ops_slice_params(const gnode *call, int nd, const int64_t *dims, int64_t *start,
                                 int64_t *step, int64_t *len);

/* The channel block of a data layout: 0 for "NCHW", x for "NCHW[x]c"
 * (e.g. "NCHW16c"), -1 for anything else. */
KILN_HIDDEN int ops_layout_block(const char *layout);

/* The column panel width of a dense weight layout: 0 for "NK" or "KN", x
 * for "NC[x]n" ([units/x, in, x]), -1 for anything else. */
KILN_HIDDEN int ops_dense_layout(const char *layout);

/* The register tile of a dense/matmul output with m rows, n columns and a
 * reduction of length k: *mr rows by *nr columns (a multiple of the vector
 * lanes *vl: the register's, or half or a quarter of it when n needs), mr
 * dividing m and nr dividing n; *nr is 0 if n has no usable divisor. */
KILN_HIDDEN void ops_dense_tile(int64_t m, int64_t n, int64_t k, const kiln_target *target, int64_t *mr,
                                int64_t *nr, int64_t *vl);

/* A 2-value int attribute (one given value repeats), e.g. strides
 * (compute_nn.c). */
KILN_HIDDEN void ops_attr2(const gnode *call, const char *name, int64_t def, int64_t v[2]);
/* Winograd F(m x m, 3 x 3) kernel transform (compute_winograd.c): the
 * [O, I, 3, 3] float weights w, each output channel o times scale[o] (if
 * scale), into U [(m+2)^2, Op/ob, Ip/ib, ib, ob] at dst (zeroed: channels
 * past O and I, padding, stay zero). m is 2 or 4; 0 if not (or the blocks
 * do not divide the padded counts), else 1. */
KILN_HIDDEN int ops_winograd_weight(const float *w, int64_t O, int64_t I, int64_t Op, int64_t Ip,
                                    const float *scale, int m, int64_t ib, int64_t ob, float *dst);
/* Estimated time of a 3x3 stride-1 convolution of C -> O channels with an
 * oh x ow output: direct (m = 0) or Winograd F(m x m, 3 x 3), on a machine
 * with `lanes` float lanes per vector (compute_winograd.c). Only the
 * ratios mean anything; AlterOpLayout takes the cheapest. */
KILN_HIDDEN double ops_conv3x3_cost(int m, int64_t oh, int64_t ow, int64_t C, int64_t O, int lanes);
#endif
