/* compute.h: the tensor-expression computes of the built-in ops, referenced
 * by the op table. Each builds its outputs from input tensors whose shapes
 * are concrete (the graph is typed before lowering). */
#ifndef KILN_OPS_COMPUTE_H
#define KILN_OPS_COMPUTE_H

#include "ops.h"

#define KILN_COMPUTE(name)                                                                   \
    KILN_HIDDEN kiln_status name(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,   \
                                 kiln_tensor **out)
/* compute_elemwise.c */
KILN_COMPUTE(compute_unary);
KILN_COMPUTE(compute_binary);
KILN_COMPUTE(compute_where);
KILN_COMPUTE(compute_bias_add);
KILN_COMPUTE(compute_batch_norm);
KILN_COMPUTE(compute_reshape);
KILN_COMPUTE(compute_transpose);
KILN_COMPUTE(compute_concatenate);
KILN_COMPUTE(compute_split);
/* compute_nn.c */
KILN_COMPUTE(compute_conv2d);
KILN_COMPUTE(compute_dense);
KILN_COMPUTE(compute_pool2d);
KILN_COMPUTE(compute_global_pool2d);
KILN_COMPUTE(compute_softmax);
KILN_COMPUTE(compute_batch_matmul);
/* compute_reduce.c */
KILN_COMPUTE(compute_reduce);
KILN_COMPUTE(compute_arg_reduce);
KILN_COMPUTE(compute_layer_norm);
/* compute_transform.c */
KILN_COMPUTE(compute_strided_slice);
KILN_COMPUTE(compute_take);
KILN_COMPUTE(compute_broadcast_to);
KILN_COMPUTE(compute_pad);
/* compute_nchwc.c */
KILN_COMPUTE(compute_layout_transform);
KILN_COMPUTE(compute_conv2d_nchwc);
/* compute_winograd.c */
KILN_COMPUTE(compute_conv2d_winograd_nchwc);
#undef KILN_COMPUTE

/* compute_nn.c: the packed GEMM schedule of nn.dense */
KILN_HIDDEN kiln_status schedule_dense(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                       kiln_tensor *out, const kiln_target *target);
/* compute_reduce.c: the row schedule the lane-parallel softmax and layer
 * norm share. out's leading axes are fused into rows run in parallel, its
 * last axis vectorized by `lanes`; each of `stages` (consumers before
 * producers) is computed per row in a local buffer: a per-row scalar as is,
 * a partial result (last axis of `lanes`, one reduce axis) reducing outside
 * the vectorized lanes, a row-long vector split and vectorized. */
typedef enum { OPS_ROW_SCALAR, OPS_ROW_PARTIAL, OPS_ROW_VECTOR } ops_row_kind;
KILN_HIDDEN kiln_status ops_schedule_rows(kiln_schedule *s, kiln_tensor *out, int64_t lanes, int n,
                                          kiln_tensor *const *stages, const ops_row_kind *kinds);
KILN_HIDDEN kiln_status schedule_layer_norm(kiln_schedule *s, const gnode *call,
                                            kiln_tensor *anchor, kiln_tensor *out,
                                            const kiln_target *target);
KILN_HIDDEN kiln_status schedule_softmax(kiln_schedule *s, const gnode *call, kiln_tensor *anchor,
                                         kiln_tensor *out, const kiln_target *target);
/* compute_nchwc.c: the blocked layout NCHW[x]c */
KILN_HIDDEN kiln_status schedule_conv2d_nchwc(kiln_schedule *s, const gnode *call,
                                              kiln_tensor *anchor, kiln_tensor *out,
                                              const kiln_target *target);

/* The register block of a convolution-like product (compute_nchwc.c):
 * reg_n divides ow (output pixels), ocb divides occ (output-channel
 * blocks); accumulators plus operands fit nregs vector registers of `vecs`
 * registers per block; block_bytes is one output block's weights;
 * *pixels_inner: broadcast inputs, not weight vectors, are innermost. */
KILN_HIDDEN void ops_register_block(int64_t ow, int64_t occ, int64_t vecs, int64_t nregs, int dw,
                                    int64_t block_bytes, int64_t *reg_n, int64_t *ocb,
                                    int *pixels_inner);
/* The accumulators of a register block (compute_nchwc.c): the 5-D local
 * stage computed at its consumer's block loop, lanes last. Its other axes
 * outermost, then its reductions, then the channel-block axis `chan` and
 * the pixel axis `pix` (pixels innermost when pixels_inner, as
 * ops_register_block chose), both unrolled, and the lanes vectorized. */
KILN_HIDDEN kiln_status ops_schedule_accumulators(kiln_stage *sl, kiln_tensor *local, int chan,
                                                  int pix, int pixels_inner);
/* compute_winograd.c: the three loop nests of a Winograd convolution */
KILN_HIDDEN kiln_status schedule_conv2d_winograd(kiln_schedule *s, const gnode *call,
                                                 kiln_tensor *anchor, kiln_tensor *out,
                                                 const kiln_target *target);
KILN_HIDDEN kiln_status schedule_pool2d_nchwc(kiln_schedule *s, const gnode *call,
                                              kiln_tensor *anchor, kiln_tensor *out,
                                              const kiln_target *target);

/* compute_nn.c helpers (ops_attr2 is in ops.h): 4-value
 * padding (top, left, bottom, right), and x (NCHW or NCHW[x]c) padded on
 * H and W with `fill` (x itself without padding). */
KILN_HIDDEN void ops_pad4(const gnode *call, int64_t p[4]);
KILN_HIDDEN kiln_tensor *ops_pad_spatial(kiln_ctx *ctx, const gnode *call, kiln_tensor *x,
                                         const int64_t pad[4], double fill);

/* Shared by the compute files: the int64 constant v. */
KILN_HIDDEN kiln_expr ops_int(kiln_ctx *ctx, int64_t v);
/* Constant v in dtype dt. */
KILN_HIDDEN kiln_expr ops_const(kiln_ctx *ctx, kiln_dtype dt, double v);
/* The concrete dims of a tensor (all dims are constants after typing). */
KILN_HIDDEN int ops_shape(const kiln_tensor *t, int64_t *dims);
/* The dims of the call's (first) output type; returns the rank. */
KILN_HIDDEN int ops_out_shape(const gnode *call, int64_t *dims);
/* t read at output index idx of an out_nd-D result (numpy broadcasting,
 * right-aligned: dims of size 1 read index 0). */
KILN_HIDDEN kiln_expr ops_bcast_read(kiln_ctx *ctx, kiln_tensor *t, int out_nd, const kiln_expr *idx);
/* A compute over `ndim` dims of `shape` named after the call. */
KILN_HIDDEN kiln_tensor *ops_compute(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                                     const int64_t *shape, kiln_compute_fn fn, void *user);

#endif
