/* kiln/plugin.h: adding an op from outside the core (as seed notes 002 and
 * 003 add GridSample and cumsum to TVM). An op is a kiln_op_spec: its name,
 * arity, attribute schema, type relation, compute (tensor expressions),
 * fusion pattern, and optionally its schedule and layout behaviour: the
 * same row a built-in op has. Register it directly with kiln_op_register, or put
 * registrations in a shared object that exports
 *     int kiln_plugin_init(void);   (returns 0 on success)
 * and load it with kiln_plugin_load (or `kiln compile --plugin lib.so`).
 * Registered ops can be used in hand-built graphs, in the text IR, and by
 * ONNX import: a node whose op type has no built-in converter and equals a
 * registered op's name is imported as that op, its ONNX attributes passed
 * through by name. A plugin op without a schedule gets the default CPU
 * schedule. */
#ifndef KILN_PLUGIN_H
#define KILN_PLUGIN_H

#include "kiln/schedule.h"
#include "kiln/target.h"
#include "kiln/te.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A call of the op, as its relation and compute see it. */
typedef struct kiln_op_call kiln_op_call;

KILN_API int kiln_op_call_num_inputs(const kiln_op_call *c);
KILN_API kiln_dtype kiln_op_call_input_dtype(const kiln_op_call *c, int i);
KILN_API int kiln_op_call_input_ndim(const kiln_op_call *c, int i);
/* Dim d of input i, or -1 if it is symbolic or out of range. */
KILN_API int64_t kiln_op_call_input_dim(const kiln_op_call *c, int i, int d);
/* Attribute values (the schema's default when the call does not set one). */
KILN_API int64_t kiln_op_call_attr_int(const kiln_op_call *c, const char *name, int64_t def);
KILN_API double kiln_op_call_attr_float(const kiln_op_call *c, const char *name, double def);
KILN_API const char *kiln_op_call_attr_str(const kiln_op_call *c, const char *name,
                                           const char *def);
/* The output type, from the relation (one output). */
KILN_API kiln_status kiln_op_call_set_output(kiln_op_call *c, kiln_dtype dt, int ndim,
                                             const int64_t *dims);
/* Report why the call is invalid (the caller adds node and op). */
KILN_API kiln_status kiln_op_call_error(kiln_op_call *c, const char *message);
/* In a compute: the output's concrete shape. */
KILN_API int kiln_op_call_output_ndim(const kiln_op_call *c);
KILN_API int64_t kiln_op_call_output_dim(const kiln_op_call *c, int d);

/* Fusion patterns (TVM's): how the op may fuse with its neighbours. */
typedef enum {
    KILN_OP_ELEMWISE = 0,
    KILN_OP_BROADCAST = 1,
    KILN_OP_INJECTIVE = 2,
    KILN_OP_COMM_REDUCE = 3,
    KILN_OP_OUT_ELEMWISE_FUSABLE = 4,
    KILN_OP_OPAQUE = 8
} kiln_op_pattern;

/* How the op meets AlterOpLayout's blocked layouts (NCHW[x]c). */
typedef enum {
    KILN_OP_LAYOUT_PLAIN = 0, /* needs its inputs in their plain layout (the default) */
    KILN_OP_LAYOUT_ANY = 1    /* elementwise: each output element reads each input at the
                                 same (broadcast) index and the op has no axis, so it runs in
                                 whatever layout its inputs are in */
} kiln_op_layout;

typedef struct {
    const char *name; /* e.g. "contrib.cumsum"; must be new */
    int min_inputs, max_inputs;
    /* "axis:int=0, exclusive:int=0, mode:str=\"sum\", scale:float, sizes:ints" —
       name:kind[=default]; kinds int, float, ints, floats, str; no default = required */
    const char *attrs;
    /* Set the output type with kiln_op_call_set_output, or fail with
       kiln_op_call_error. Inputs' types are known when it is called. */
    kiln_status (*relation)(kiln_op_call *call);
    /* Build the output from the inputs (tensors of the inputs' concrete
       types) in ctx; NULL with an error from the kiln_* builders. */
    kiln_tensor *(*compute)(kiln_ctx *ctx, const kiln_op_call *call, kiln_tensor *const *inputs);
    kiln_op_pattern pattern;
    const char *summary; /* one line */
    /* New fields go below, so a spec written for an older kiln, its tail
       zeroed, keeps working. */
    /* (optional) Schedule the kernel the op is fused into (the op is its
       anchor): `anchor` is the tensor compute returned, `out` the kernel's
       output (anchor itself, or an elementwise epilogue inlined into it),
       for `target` (kiln_target_vector_bits, ..._cache_bytes). Stages it
       leaves alone keep the default schedule; a schedule must not change
       results. NULL: the default CPU schedule. */
    kiln_status (*schedule)(kiln_schedule *s, const kiln_op_call *call, kiln_tensor *anchor,
                            kiln_tensor *out, const kiln_target *target);
    kiln_op_layout layout;
} kiln_op_spec;

/* Register an op (the spec is copied). Errors: a name in use, a bad schema.
 * kiln_op_register is a macro that passes the size of the kiln_op_spec this
 * header declares, so a plugin built against an older header (a shorter
 * struct, which calls the function of that name) is read only as far as
 * its struct goes: fields it does not have count as zero. */
KILN_API kiln_status kiln_op_register_sized(const kiln_op_spec *spec, size_t spec_size);
KILN_API kiln_status kiln_op_register(const kiln_op_spec *spec);
#define kiln_op_register(spec) kiln_op_register_sized((spec), sizeof(kiln_op_spec))
/* dlopen a plugin and call its kiln_plugin_init. */
KILN_API kiln_status kiln_plugin_load(const char *path);

#ifdef __cplusplus
}
#endif
#endif
