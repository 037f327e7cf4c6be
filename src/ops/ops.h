/* ops.h: the op library, one file per op family. Each op's whole
 * definition is a row of its family's table (struct kiln_op_def,
 * src/graph/graph.h): name, arity, attribute schema, type relation,
 * compute, fusion pattern, layout behaviour and default schedule.
 *
 *   ops_common.c     what the families share: relation, compute and
 *                    schedule helpers (it calls no family)
 *   elemwise.c       unary elementwise ops: relu, exp, clip, cast, ...
 *   broadcast.c      binary broadcasting ops, where, nn.bias_add
 *   nn.c             nn.dense, nn.batch_matmul, nn.softmax, nn.log_softmax,
 *                    nn.hardmax, nn.nll_loss, nn.nll_loss_weight
 *   conv_winograd.c  nn.contrib_conv2d_winograd_NCHWc
 *   qnn.c            the quantized ops: qnn.quantize, qnn.dequantize,
 *                    qnn.requantize, qnn.add, qnn.mul, qnn.conv2d, qnn.dense,
 *                    qnn.batch_matmul, qnn.concatenate, fixed_point_multiply
 *                    (TFLite's integer requantization) (their products and
 *                    concatenation are conv.c's, nn.c's and transform.c's
 *                    relations and computes over centered operands)
 *   conv.c           nn.conv2d, nn.contrib_conv2d_NCHWc (its layout hook
 *                    picks Winograd: it calls conv_winograd.c), nn.conv3d,
 *                    nn.conv2d_transpose, nn.conv3d_transpose
 *   pool.c           nn.max_pool2d/3d, nn.avg_pool2d/3d, nn.lp_pool2d/3d,
 *                    nn.max_pool2d/3d_with_argmax, the global pools
 *   reduce.c         sum, mean, max, min, prod, argmax, argmin
 *   index.c          gather_elements, gather_nd, scatter_elements,
 *                    scatter_nd, one_hot, reverse_sequence, trilu,
 *                    eye_like, arange, random_uniform_like, cumsum, topk
 *   norm.c           nn.layer_norm, nn.batch_norm, nn.lrn
 *   transform.c      reshape, transpose, concatenate, split, strided_slice,
 *                    take, broadcast_to, nn.pad, tile
 *   layout.c         layout_transform (NCHW <-> NCHW[x]c)
 *   depth_space.c    depth_to_space, space_to_depth
 *   image.c          image.resize (any rank), image.grid_sample,
 *                    image.roi_align
 *   text.c           text.tfidf (ONNX TfIdfVectorizer)
 *   linalg.c         det
 *   signal.c         window (ONNX's Hann, Hamming and Blackman windows)
 *   compress.c       nonzero, compress, unique: outputs sized by the data
 *   vision.c         vision.non_max_suppression (ONNX NonMaxSuppression,
 *                    through scans) and its shape function nms_dims
 *   shape.c          shapes known only at run time: bind_dims (the binder
 *                    whose values later types use as dims) and the shape
 *                    functions that compute them (reshape_dims, ...)
 *   control.c        if, loop, scan: control flow over bodies (sub-graph
 *                    attributes) that the driver compiles and the
 *                    executor runs; no compute (docs/CONTROL_FLOW.md)
 *   op_table.c       the registry: the families' tables, concatenated
 *   plugin.c         user ops (kiln/plugin.h) as rows of the same kind
 * Files call downward only: families call ops_common.c (and conv.c calls
 * conv_winograd.c; qnn.c calls the relations and computes of conv.c, nn.c
 * and transform.c below), op_table.c reads the families' tables.
 *
 * Adding an op. In its family's file, in this order:
 *   1. its attribute schema: a static attr_schema[] (name, kind, required,
 *      default in the text syntax), ended by a NULL row;
 *   2. its type relation (op_rel_fn): the output type from the inputs'
 *      types, REL_INCOMPLETE while one is unknown (OPS_REQUIRE_KNOWN),
 *      ops_fail(...) with the reason on bad input;
 *   3. its compute (op_compute_fn) building tensor expressions; an
 *      elementwise or broadcasting op gives only its scalar (op_elem_fn,
 *      e.g. `return kiln_exp(args[0]);`) and uses ops_compute_elemwise;
 *      ops sharing one compute tell themselves apart by the row's
 *      `variant`, never by name;
 *   4. its layout behaviour: LAYOUT_FOLLOWS if it reads every input at its
 *      own output index (no axis attribute), and/or an alter hook that
 *      rewrites the call for the target (op_alter_fn);
 *   5. its default schedule (op_schedule_fn), reading the target's
 *      vector_bytes, vector_regs and cache[] rather than guessing, and
 *      whether it takes part in row fusion (op_rows_fn);
 * then one row in the family's table at the bottom of the file, and a row
 * in the frontend's converter table if ONNX has the op. Nothing picks an
 * op's behaviour by its name: the compiler reaches it through its row.
 * (Graph rewrites still name the ops they build or match: the converters,
 * the layout_transform AlterOpLayout inserts, SimplifyInference's
 * batch-norm and layer-norm matchers, until the pattern language.) The
 * completeness test (tests/unit/test_graph_types.c) checks the row. */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "../graph/graph_internal.h"

/* ---- the registry (op_table.c) -------------------------------------------- */

/* The built-in ops, plus user ops loaded from plugins. */
KILN_HIDDEN kiln_op_registry *ops_default_registry(void);

/* Number of rows of the built-in table, and row i (for the completeness test). */
KILN_HIDDEN int ops_builtin_count(void);
KILN_HIDDEN const kiln_op_def *ops_builtin(int i);

/* Each family's rows. */
#define OPS_FAMILY(fam)                                                                            \
    KILN_HIDDEN extern const kiln_op_def ops_##fam##_rows[];                                       \
    KILN_HIDDEN extern const int ops_##fam##_count
OPS_FAMILY(elemwise);
OPS_FAMILY(broadcast);
OPS_FAMILY(nn);
OPS_FAMILY(conv);
OPS_FAMILY(conv_nchwc);
OPS_FAMILY(conv_int8);
OPS_FAMILY(winograd);
OPS_FAMILY(pool);
OPS_FAMILY(reduce);
OPS_FAMILY(norm);
OPS_FAMILY(transform);
OPS_FAMILY(layout);
OPS_FAMILY(depth_space);
OPS_FAMILY(index);
OPS_FAMILY(image);
OPS_FAMILY(text);
OPS_FAMILY(linalg);
OPS_FAMILY(shape);
OPS_FAMILY(signal);
OPS_FAMILY(compress);
OPS_FAMILY(vision);
OPS_FAMILY(control);
OPS_FAMILY(qnn);
#undef OPS_FAMILY

/* The size a schedule assumes for a symbolic extent when it picks a
 * blocking (a batch of a few, a sequence of tens): the driver's parallel
 * loops and nn.dense's row tile. It never assumes divisibility. */
#define OPS_SYM_EXTENT_HINT 8

/* A row whose relation, compute and schedule take symbolic (run-time) dims
 * (docs/DYNAMIC_SHAPES.md), of variant `var` (OPS_SYM_ROW: variant 0). */
#define OPS_SYM_ROW_VALS(nm, nmin, nmax, schema, relation, fn, pat, var, vals, sum)                \
    {                                                                                              \
        .name = nm, .min_in = nmin, .max_in = nmax, .attrs = schema, .rel = relation,              \
        .pattern = pat, .compute = fn, .summary = sum, .variant = var, .sym_dims = 1,              \
        .values = vals                                                                             \
    }
#define OPS_SYM_ROW_V(nm, nmin, nmax, schema, relation, fn, pat, var, sum)                         \
    OPS_SYM_ROW_VALS(nm, nmin, nmax, schema, relation, fn, pat, var, NULL, sum)
#define OPS_SYM_ROW(nm, nmin, nmax, schema, relation, fn, pat, sum)                                \
    OPS_SYM_ROW_V(nm, nmin, nmax, schema, relation, fn, pat, 0, sum)

/* ---- relations (ops_common.c) ---------------------------------------------- */

/* In a relation: REL_INCOMPLETE until the first n inputs' types are known. */
#define OPS_REQUIRE_KNOWN(n)                                                                       \
    for (int i_ = 0; i_ < (n); i_++)                                                               \
        if (!in[i_]->known)                                                                        \
    return REL_INCOMPLETE

/* Set an error message; returns REL_ERROR (the caller adds node and op). */
KILN_HIDDEN rel_result ops_fail(const char *fmt, ...) KILN_PRINTF(1, 2);
/* The tensor type of input i, or NULL with *r = REL_ERROR for a tuple. */
KILN_HIDDEN const gtensor_type *ops_tensor_in(const gtype *t, int i, rel_result *r);
KILN_HIDDEN rel_result ops_set_out(const struct kiln_graph *g, gtype *out, const gtensor_type *t);
/* Matmul-like calls (nn.conv2d, nn.dense, nn.batch_matmul) accumulate in
 * their "out_dtype" attribute's dtype when they have one (Relay's: int8 or
 * uint8 operands, each of its own, summed in int32), else in their
 * operands' common dtype. Sets *acc, or fails naming the dtypes. */
KILN_HIDDEN rel_result ops_accum_dtype(const gnode *call, const gtensor_type *a,
                                       const gtensor_type *b, kiln_dtype *acc);
/* The call's out_dtype, or KILN_DTYPE_COUNT when it has none (in a compute). */
KILN_HIDDEN kiln_dtype ops_out_dtype(const gnode *call);
/* An operand of the product: cast to acc unless acc is KILN_DTYPE_COUNT. */
KILN_HIDDEN kiln_expr ops_accum_operand(kiln_dtype acc, kiln_expr x);
/* The output is a tuple of the n tensor types t[] (copied into the graph). */
KILN_HIDDEN rel_result ops_set_tuple(const struct kiln_graph *g, gtype *out, int n,
                                     const gtensor_type *t);
/* A dim as text: its size or its symbol. */
KILN_HIDDEN void ops_dim_str(gdim d, char *buf, size_t cap);
/* numpy broadcasting of n types into *res, with the dtype of ts[dt_from]. */
KILN_HIDDEN rel_result ops_broadcast(int n, const gtensor_type *const *ts, int dt_from,
                                     gtensor_type *res);
/* The shape values of node id (graph.h, gval): a constant's values, a
 * binder's variables, or what the ops' `values` functions tell of a call
 * from its inputs'. Returns the element count (at most cap), or -1 if id
 * is not a 0-D or 1-D integer (int64, int32, bool) value of at most cap
 * elements, or nothing is known of it. */
KILN_HIDDEN int ops_values(const struct kiln_graph *g, int id, gval *out, int cap);
/* The weaker of two shape-value kinds, UNKNOWN < ASSUMED < EXACT: what a
 * value computed from both is. */
KILN_HIDDEN gval_kind ops_gval_weaker(gval_kind a, gval_kind b);
/* The values of input i of the call, a 0-D or 1-D int64 or int32 tensor,
 * as dims when the graph knows them before it runs (every one of its
 * ops_values GVAL_EXACT): a constant's values, the size variables a
 * binder call (a row with `binds`) names, or a shape computation over
 * symbolic dims (Shape -> Gather -> Concat). Returns their count (at most
 * cap), or -1 if they are known only as data. */
KILN_HIDDEN int ops_value_dims(const struct kiln_graph *g, const gnode *call, int i, gdim *out,
                               int cap);
/* The sizes binder call v (of a row with `binds`) names, one per value of
 * its output: entry k of its `names` attribute (comma-separated: a size
 * variable, a size, or empty), an empty one "<prefix>_k". Their count (at
 * most cap), or -1 if v is not a binder. */
KILN_HIDDEN int ops_bound_dims(const struct kiln_graph *g, const gnode *v, gdim *out, int cap);
/* The same for binder call v (typed or not) of n values: n, or -1 if its
 * attributes do not name n sizes. */
KILN_HIDDEN int ops_binder_names(const struct kiln_graph *g, const gnode *v, int n, gdim *out);
/* 1 if dims [from, to) of t are all concrete. */
KILN_HIDDEN int ops_all_known(const gtensor_type *t, int from, int to);
/* The output has input 0's type; with _float, input 0 must be a float. */
KILN_HIDDEN rel_result ops_rel_identity(const struct kiln_graph *g, const gnode *call,
                                        const gtype *const *in, gtype *out);
KILN_HIDDEN rel_result ops_rel_float_unary(const struct kiln_graph *g, const gnode *call,
                                           const gtype *const *in, gtype *out);
/* 1 if dt is an integer dtype an index may have: every one but bool and
 * uint64 (int64 holds each value of the others exactly). */
KILN_HIDDEN int ops_is_index_dtype(kiln_dtype dt);
/* 1 for the integer dtypes other than bool, signed and unsigned. */
KILN_HIDDEN int ops_is_int_dtype(kiln_dtype dt);
/* 1 for float16, bfloat16, float32 and float64. */
KILN_HIDDEN int ops_is_float_dtype(kiln_dtype dt);

/* ---- shared with qnn.c: the plain products and concatenation ------------------- */

/* nn.conv2d's relation and compute (conv.c): the call's variant is its
 * spatial rank; with an out_dtype attribute the sum is in that dtype. */
KILN_HIDDEN rel_result ops_conv_rel(const struct kiln_graph *g, const gnode *call,
                                    const gtype *const *in, gtype *out);
KILN_HIDDEN kiln_status ops_conv_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                         kiln_tensor **out);
/* The blocked convolution's register-blocked schedule (conv_nchwc.c), shared
 * by nn.contrib_conv2d_NCHWc and its int8 form. */
KILN_HIDDEN kiln_status ops_schedule_conv2d_nchwc(kiln_schedule *s, const gnode *call,
                                                  kiln_tensor *anchor, kiln_tensor *out,
                                                  const kiln_target *target);
/* The layout rewrite into the blocked convolution `op` (conv_nchwc.c):
 * its packed weight pw (named after the weight plus suffix), the input
 * blocked by ib, the output by ob, the call's attributes but its layouts
 * and groups, plus `extra`. Returns 1 (the hook's "rewrite"). */
KILN_HIDDEN int ops_blocked_conv(const char *op, kiln_ndarray *pw, const char *suffix, int64_t ib,
                                 int64_t ob, const char *extra, layout_rewrite *rw);
/* A blocked convolution's operands (conv_nchwc.c): data x 5-D and weight
 * w of wdims dims (its layout named wlayout in the message), only the
 * batch dim symbolic, the blocks of the data_layout and out_layout
 * attributes in *ib, *ob. */
KILN_HIDDEN rel_result ops_nchwc_operands(const gnode *call, const gtype *const *in, int wdims,
                                          const char *wlayout, const gtensor_type **x,
                                          const gtensor_type **w, int *ib, int *ob);
/* A blocked convolution's output type (conv_nchwc.c): data x [N, C/x, H, W, x]
 * and weight w (dims 0, 2, 3: output blocks, KH, KW), output blocks of ob,
 * dtype dt; strides, dilation and padding from the call. */
KILN_HIDDEN rel_result ops_nchwc_result(const struct kiln_graph *g, const gnode *call,
                                        const gtensor_type *x, const gtensor_type *w, int64_t ob,
                                        kiln_dtype dt, gtype *out);
/* The input row and column a blocked convolution's output index i (n, c,
 * oh, ow, ...) reads at tap (kh, kw), with strides s and dilation d. */
KILN_HIDDEN void ops_nchwc_window(kiln_ctx *ctx, const kiln_expr *i, const int64_t s[2],
                                  const int64_t d[2], kiln_expr kh, kiln_expr kw, kiln_expr *h,
                                  kiln_expr *w);
/* The int8 kernels' dot product on target t: its pairs k (the return
 * value) and the packed weights' dtype. k = 4 int8 (vpdpbusd) where the
 * target has VNNI, and where it has no x86 dot product at all (an exact
 * loop); k = 2 int16 (vpmaddwd) on AVX2 without VNNI, where vpmaddubsw's
 * int16 sums of two uint8 x int8 products could saturate. */
KILN_HIDDEN int ops_int8_dot(const kiln_target *t, kiln_dtype *wdt);
/* Whether target t has an int8 dot product instruction (VNNI, AVX-VNNI,
 * aarch64 dotprod or i8mm): where int8 kernels beat float ones, so a QDQ
 * model is made integer by default (FakeQuantizationToInteger). */
KILN_HIDDEN int ops_int8_fast(const kiln_target *t);
/* nn.conv2d's layout hook for uint8 data and a constant int8 kernel
 * (conv_int8.c): nn.contrib_conv2d_NCHWc_int8 where it applies. */
KILN_HIDDEN int ops_alter_conv2d_int8(const gnode *call, const layout_query *q, layout_rewrite *rw);
/* nn.dense's and nn.batch_matmul's (nn.c), over inputs 0 and 1. */
KILN_HIDDEN rel_result ops_dense_rel(const struct kiln_graph *g, const gnode *call,
                                     const gtype *const *in, gtype *out);
KILN_HIDDEN kiln_status ops_dense_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                          kiln_tensor **out);
KILN_HIDDEN rel_result ops_bmm_rel(const struct kiln_graph *g, const gnode *call,
                                   const gtype *const *in, gtype *out);
KILN_HIDDEN kiln_status ops_bmm_compute(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                        kiln_tensor **out);
/* concatenate's of the first n inputs, along the call's `axis` (transform.c). */
KILN_HIDDEN rel_result ops_concat_rel(const struct kiln_graph *g, const gnode *call, int n,
                                      const gtype *const *in, gtype *out);
KILN_HIDDEN kiln_status ops_concat_compute(kiln_ctx *ctx, const gnode *call, int n,
                                           kiln_tensor *const *in, kiln_tensor **out);

/* ---- shape functions (ops_common.c): the building blocks of the ops that
 * compute dims as int64 vectors (shape.c, and image.c's resize_dims) ---- */

/* What a shape function computes, per output dim (at most 3 per data dim:
 * slice_params' lengths, starts and steps). */
typedef struct {
    int n;
    kiln_expr dim[3 * KILN_MAX_NDIM];
} ops_dims_fn;
/* The call's output, an int64[f->n] of the dims f computed (n >= 1). */
KILN_HIDDEN kiln_status ops_dims_out(kiln_ctx *ctx, const gnode *call, ops_dims_fn *f,
                                     kiln_tensor **out);
/* Element k of a 0-D or 1-D tensor, in dtype dt; ops_elem_i64: as int64. */
KILN_HIDDEN kiln_expr ops_elem_as(kiln_ctx *ctx, kiln_tensor *t, int k, kiln_dtype dt);
KILN_HIDDEN kiln_expr ops_elem_i64(kiln_ctx *ctx, kiln_tensor *t, int k);
/* The relation of a shape function: input v is a 1-D integer (or, with
 * is_float, float) vector of known length, the output an int64 vector of
 * `len` dims (len < 0: the vector's length). */
KILN_HIDDEN rel_result ops_dims_rel(const struct kiln_graph *g, const gtensor_type *v,
                                    const char *what, int is_float, int64_t len, gtype *out);

/* ---- attributes (ops_common.c) ------------------------------------------------ */

/* Attribute `axis` (default def) of an nd-D input, negative counted from the end. */
KILN_HIDDEN int ops_norm_axis(const gnode *call, int64_t def, int nd);
/* In a relation: int attribute `name` (default def) as an axis of an nd-D
 * input, negative counted from the end, into *axis; 0 with an error if it
 * is out of range. */
KILN_HIDDEN int ops_attr_axis(const gnode *call, const char *name, int64_t def, int nd, int *axis);
/* The position of string attribute `name` (default def) in names
 * (NULL-ended), or -1 with an error listing them. */
KILN_HIDDEN int ops_attr_choice(const gnode *call, const char *name, const char *def,
                                const char *const *names);
/* The spatial attributes of a window over dims 2 .. 2+nsp of an
 * N, C, spatial... tensor (nsp 1 to OPS_MAX_SPATIAL). An int attribute of
 * one value per spatial dim, e.g. strides (one given value repeats;
 * absent: def); in a relation (_checked) 0 with an error unless it has 1
 * or nsp values >= minv. ops_attr2 and ops_attr2_checked are the 2-D ones. */
#define OPS_MAX_SPATIAL 3
KILN_HIDDEN void ops_attr_sp(const gnode *call, const char *name, int64_t def, int nsp, int64_t *v);
KILN_HIDDEN int ops_attr_sp_checked(const gnode *call, const char *name, int64_t def, int64_t minv,
                                    int nsp, int64_t *v);
KILN_HIDDEN void ops_attr2(const gnode *call, const char *name, int64_t def, int64_t v[2]);
KILN_HIDDEN int ops_attr2_checked(const gnode *call, const char *name, int64_t def, int64_t minv,
                                  int64_t v[2]);
/* Attribute padding: 1 value (every side), nsp (both sides of each dim)
 * or 2 * nsp (the begins, then the ends) as 2 * nsp values p, begins then
 * ends (2-D: top, left, bottom, right; ops_pad4). In a relation:
 * ops_pad_sp_checked, 0 with an error if malformed or, unless
 * allow_negative, negative; ops_pad_sum, the sum per dim into p[nsp] (0
 * with an error if malformed, negative or overflowing). */
KILN_HIDDEN void ops_pad_sp(const gnode *call, int nsp, int64_t *p);
KILN_HIDDEN void ops_pad4(const gnode *call, int64_t p[4]);
KILN_HIDDEN int ops_pad_sp_checked(const gnode *call, int nsp, int allow_negative, int64_t *p);
KILN_HIDDEN int ops_pad_sum(const gnode *call, int nsp, int64_t *p);
/* The output size of a window: floor((in + pad - dil*(k-1) - 1) / stride) + 1
 * (ceil with ceil_mode), or -1 if the window does not fit. */
KILN_HIDDEN int64_t ops_window_out(int64_t in, int64_t pad, int64_t k, int64_t stride, int64_t dil,
                                   int ceil_mode);
/* The extent of a transposed window (ConvTranspose before its padding is
 * cropped): stride * (in - 1) + dil * (k - 1) + 1 + extra (the output
 * padding), or -1 if it overflows or in, k, stride, dil < 1 or extra < 0. */
KILN_HIDDEN int64_t ops_window_span(int64_t in, int64_t k, int64_t stride, int64_t dil,
                                    int64_t extra);
/* The channel block of a data layout: 0 for "NCHW", x for "NCHW[x]c"
 * (e.g. "NCHW16c"), -1 for anything else. */
KILN_HIDDEN int ops_layout_block(const char *layout);

/* ---- computes (ops_common.c) -------------------------------------------------- */

/* The int64 constant v, and the constant v in dtype dt. */
KILN_HIDDEN kiln_expr ops_int(kiln_ctx *ctx, int64_t v);
KILN_HIDDEN kiln_expr ops_const(kiln_ctx *ctx, kiln_dtype dt, double v);
/* An index read from data (Gather, Scatter, OneHot, ...) into a dim of n > 0
 * elements: as int64, a negative one counted from the end if from_end; one
 * out of range is reported when the code runs (the interpreter: an error;
 * a kernel: KILN_KERNEL_EINDEX) and reads element 0 (kiln_checked_index),
 * never clamped silently. */
KILN_HIDDEN kiln_expr ops_checked_index(kiln_ctx *ctx, kiln_expr index, int64_t n, int from_end);
/* The dims of a tensor; a symbolic (run-time) dim is -1, which only an op
 * whose row sets sym_dims ever sees (the driver refuses the others). */
KILN_HIDDEN int ops_shape(const kiln_tensor *t, int64_t *dims);
/* The dims of the call's (first) output type, -1 for a symbolic one;
 * returns the rank. */
KILN_HIDDEN int ops_out_shape(const gnode *call, int64_t *dims);
/* A type's dim as an expression: its constant, or its size variable. */
KILN_HIDDEN kiln_expr ops_dim(kiln_ctx *ctx, gdim d);
/* The dims of the call's (first) output type as expressions; the rank. */
KILN_HIDDEN int ops_out_dims(kiln_ctx *ctx, const gnode *call, kiln_expr *dims);
/* t read at output index idx of an out_nd-D result (numpy broadcasting,
 * right-aligned: dims of size 1 read index 0). */
KILN_HIDDEN kiln_expr ops_bcast_read(kiln_ctx *ctx, kiln_tensor *t, int out_nd,
                                     const kiln_expr *idx);
/* A compute over `ndim` dims of `shape` named after the call plus suffix;
 * a -1 in shape is the call's output dim of the same index, symbolic. */
KILN_HIDDEN kiln_tensor *ops_compute(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                                     const int64_t *shape, kiln_compute_fn fn, void *user);
/* The same over dims given as expressions (symbolic ones as size variables). */
KILN_HIDDEN kiln_tensor *ops_compute_e(kiln_ctx *ctx, const gnode *call, const char *suffix,
                                       int ndim, const kiln_expr *shape, kiln_compute_fn fn,
                                       void *user);
/* A scan (kiln/te.h) of dtype dt over the constant dims of `shape` along
 * `axis`, named like ops_compute's: declared into *self (which fn reads),
 * then defined by fn. NULL with an error. */
KILN_HIDDEN kiln_tensor *ops_scan(kiln_ctx *ctx, const gnode *call, const char *suffix, int ndim,
                                  const int64_t *shape, kiln_dtype dt, int axis, kiln_compute_fn fn,
                                  void *user, kiln_tensor **self);
/* The compute of an op with an `elem` scalar: each output element is
 * call->op->elem of its inputs' elements at the broadcast index. */
KILN_HIDDEN kiln_status ops_compute_elemwise(kiln_ctx *ctx, const gnode *call,
                                             kiln_tensor *const *in, kiln_tensor **out);
/* The scalar of `multiply` (broadcast.c's row; conv.c's layout hook
 * recognizes a multiply by it when folding a scale into weights). */
KILN_HIDDEN kiln_expr ops_elem_multiply(kiln_ctx *ctx, const gnode *call, kiln_dtype dt,
                                        const kiln_expr *args);
/* x (N, C, nsp spatial dims, then any others, e.g. NCHW[x]c's block)
 * padded on the spatial dims by pad (2 * nsp: the begins, then the ends)
 * with `fill`; x itself without padding. ops_pad_spatial is the 2-D one
 * (pad: top, left, bottom, right). */
KILN_HIDDEN kiln_tensor *ops_pad_window(kiln_ctx *ctx, const gnode *call, kiln_tensor *x, int nsp,
                                        const int64_t *pad, double fill);
KILN_HIDDEN kiln_tensor *ops_pad_spatial(kiln_ctx *ctx, const gnode *call, kiln_tensor *x,
                                         const int64_t pad[4], double fill);

/* ---- schedules (ops_common.c) ----------------------------------------------------- */

/* The target's level-`level` data cache in bytes (1: L1d, 2: L2, per
 * core), or def where the target does not know it. */
KILN_HIDDEN int64_t ops_cache_bytes(const kiln_target *t, int level, int64_t def);

/* The row schedule the lane-parallel softmax and layer norm share. out's
 * leading axes are fused into rows run in parallel, its last axis
 * vectorized by `lanes`; each of `stages` (consumers before producers) is
 * computed per row in a local buffer: a per-row scalar as is, a partial
 * result (last axis of `lanes`, one reduce axis) reducing outside the
 * vectorized lanes, a row-long vector split and vectorized. `producer`
 * (row fusion, op_rows_fn; or NULL), read by the stages, is computed per
 * tile of producer_rows rows of out's second-to-last axis (the last tile
 * cut short), in a local buffer its own op tiles; the stages then run per
 * row inside the tile. */
typedef enum { OPS_ROW_SCALAR, OPS_ROW_PARTIAL, OPS_ROW_VECTOR } ops_row_kind;
KILN_HIDDEN kiln_status ops_schedule_rows(kiln_schedule *s, kiln_tensor *out, int64_t lanes, int n,
                                          kiln_tensor *const *stages, const ops_row_kind *kinds,
                                          kiln_tensor *producer, int64_t producer_rows);
/* The constant extent of reduce axis i of t, or -1. */
KILN_HIDDEN int64_t ops_reduce_extent(const kiln_tensor *t, int i);
/* The register block of a convolution-like product: reg_n divides ow
 * (output pixels), ocb divides occ (output-channel blocks); accumulators
 * plus operands fit nregs vector registers of `vecs` registers per block;
 * block_bytes is one output block's weights, l1 the L1 data cache;
 * *pixels_inner: broadcast inputs, not weight vectors, are innermost. */
KILN_HIDDEN void ops_register_block(int64_t ow, int64_t occ, int64_t vecs, int64_t nregs, int dw,
                                    int64_t block_bytes, int64_t l1, int64_t *reg_n, int64_t *ocb,
                                    int *pixels_inner);
/* A tuning knob of schedule s (docs/tuning.md): `name` (per op class,
 * "conv.reg_n"), its analytic default and its n legal values; returns the
 * value to use: def unless a tuning config applies another. */
KILN_HIDDEN int64_t ops_knob(kiln_schedule *s, const char *name, int64_t def, int n,
                             const int64_t *cands);
/* Mark s's tuning config as one whose values do not go together here (the
 * tuner records it as invalid, never measures it). */
KILN_HIDDEN void ops_knob_invalid(kiln_schedule *s);
/* ops_register_block's choice as knobs `prefix`.reg_n, .ocb and
 * .pixels_inner: every block within the register budget is legal, the
 * model's the default. */
KILN_HIDDEN void ops_register_block_knobs(kiln_schedule *s, const char *prefix, int64_t ow,
                                          int64_t occ, int64_t vecs, int64_t nregs, int dw,
                                          int64_t block_bytes, int64_t l1, int64_t *reg_n,
                                          int64_t *ocb, int *pixels_inner);
/* The accumulators of a register block: the 5-D local stage computed at
 * its consumer's block loop, lanes last. Its other axes outermost, then
 * its reductions, then the channel-block axis `chan` and the pixel axis
 * `pix` (pixels innermost when pixels_inner, as ops_register_block chose),
 * both unrolled, and the lanes vectorized. */
KILN_HIDDEN kiln_status ops_schedule_accumulators(kiln_stage *sl, kiln_tensor *local, int chan,
                                                  int pix, int pixels_inner);

/* ---- layouts (ops_common.c) ------------------------------------------------------ */

/* A node's tensor type, or NULL while unknown or for a tuple. */
KILN_HIDDEN const gtensor_type *ops_node_type(const gnode *n);

/* A constant of logical shape d4 ([n, C or 1, h, w]) as a blocked
 * [n, C/b or 1, h, w, b or 1] array, the last block padded with zeros;
 * *bb gets the block used (1 when C is 1). NULL with an error. */
KILN_HIDDEN kiln_ndarray *ops_block_array(const kiln_ndarray *c, const int64_t d4[4], int b,
                                          int *bb);

/* ---- exported by one family to another or to another layer -------------------- */

/* transform.c: numpy/ONNX slicing of one dim of size n by begin b, end e,
 * step s != 0: the first index and the length (the ONNX importer too). */
KILN_HIDDEN void ops_slice_axis(int64_t n, int64_t b, int64_t e, int64_t s, int64_t *start,
                                int64_t *len);

/* conv_winograd.c, for conv.c's layout hook: the Winograd F(m x m, 3 x 3)
 * kernel transform of [O, I, 3, 3] float weights w into
 * U [(m+2)^2, Op/ob, Ip/ib, ib, ob] at dst
 * (zeroed: channels past O and I, padding, stay zero). m is 2 or 4; 0 if
 * not (or the blocks do not divide the padded counts), else 1. */
KILN_HIDDEN int ops_winograd_weight(const float *w, int64_t O, int64_t I, int64_t Op, int64_t Ip,
                                    int m, int64_t ib, int64_t ob, float *dst);
/* Estimated time of a 3x3 stride-1 convolution of C -> O channels with an
 * oh x ow output, for a batch of n: direct (m = 0) or Winograd F(m x m,
 * 3 x 3), on a machine with `lanes` float lanes per vector and a last-level
 * cache of llc bytes (0: unknown). Only the ratios mean anything; the
 * layout hook takes the cheapest. */
KILN_HIDDEN double ops_conv3x3_cost(int m, int64_t n, int64_t oh, int64_t ow, int64_t C, int64_t O,
                                    int lanes, int64_t llc);

#endif
