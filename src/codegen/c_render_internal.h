/* c_render_internal.h: what the files of the C renderer share. The renderer
 * is a C-like base that a CUDA or OpenCL C renderer can reuse piece by piece:
 *   c_base.c    the dtype table, the renderer state (errors, the registry of
 *               static inline helpers), names and constants, scalar operators,
 *               vector types and the generic vector helpers;
 *   c_render.c  the tree walk: expressions, statements, loops, allocations;
 *   c_module.c  the kernel wrapper, the metadata and the prelude (the module
 *               ABI, from runtime/module_abi.h), split into translation units;
 *   c_vmath.c   the float32 vector math library (exp, log, tanh, sigmoid,
 *               erf) and the vector blends it is built on.
 * Every generated helper is added once, under a key, in first-use order, so
 * the output is deterministic. */
#ifndef KILN_C_RENDER_INTERNAL_H
#define KILN_C_RENDER_INTERNAL_H

#include "codegen.h"

/* C type, short tag ("f32", used in helper names) and libm suffix (floats;
   NULL for integers) of each dtype. */
typedef struct {
    const char *c, *tag, *fsuffix;
} cg_type;

KILN_HIDDEN extern const cg_type cg_types[KILN_DTYPE_COUNT];
/* The C operator of a binary TIR op ("+", "<=", ...), NULL for the others. */
KILN_HIDDEN extern const char *const cg_binop_c[TIR_OP_COUNT];

typedef struct {
    char *key, *text;
} cg_helper;

typedef struct {
    tir_node buf;
    int promoted; /* rendered as variables NAME_r<k> of `lanes` lanes each */
    int lanes;
    int heap; /* must be freed on every exit */
} cg_alloc;

typedef struct {
    kiln_status st;
    cg_helper *helpers;
    int nh, caph;
    kstr pre;          /* closure structs and outlined functions of the current function */
    const char *fname; /* the current tir_func's name */
    int npar;          /* outlined functions so far in this function */
    int in_par;        /* rendering inside an outlined parallel body */
    cg_alloc *allocs;
    int na, capa;
    int exit_base;          /* allocs below this index belong to an enclosing C function */
    struct cg_share *share; /* the shared sub-expressions of the store being rendered, bound
                               to local constants (c_render.c); NULL between stores */
    int nshare;             /* constants bound so far in this function, for unique names */
    int status;             /* the current C function keeps a kernel status, int32_t kiln__st, that
                               checked indices and integer divisions of data OR their
                               KILN_KERNEL_* bits into (cg_uses_status) */
    int canon;              /* name variables by their order of first use in the function
                               (v0, v1, ...) instead of by name and id: the text then says
                               what the function does, not what it is called
                               (codegen_func_key) */
    struct cg_names *names; /* canon: the index of each variable named so far */
} cg_render;

static inline int cg_is_float(kiln_dtype dt) {
    return tir_is_float_dtype(dt);
}
/* Types C promotes to int in arithmetic: the result needs a cast back. */
static inline int cg_is_narrow(kiln_dtype dt) {
    return dt == KILN_INT8 || dt == KILN_UINT8 || dt == KILN_BOOL || dt == KILN_FLOAT16 ||
           dt == KILN_INT16 || dt == KILN_UINT16;
}

/* The aux of an integer div, mod, floordiv or floormod (in cg_scalar_text and
 * cg_lane_call) whose divisor may be 0 or -1 at run time: it is rendered
 * under base/intdiv.h's rule (x / 0 = 0, INT_MIN / -1 wraps), whose helpers
 * the module then carries. Without it the division is plain C. */
#define CG_DIV_GUARDED 1u

/* ---- c_base.c ---- */

/* Whether the renderer handles `lanes` lanes internally (index vectors
 * included; wider than what codegen_vector_ok promises for data). */
KILN_HIDDEN int cg_lanes_ok(int lanes);
/* Record the first error (later ones are dropped); rendering goes on with
 * placeholder text that is never compiled. */
KILN_HIDDEN void cg_fail(cg_render *r, kiln_status st, const char *fmt, ...) KILN_PRINTF(3, 4);
/* A malloc'd formatted string (aborts on out-of-memory: the renderer's
 * strings are small). */
KILN_HIDDEN char *cg_sfmt(const char *fmt, ...) KILN_PRINTF(1, 2);
KILN_HIDDEN char *cg_sdup(const char *s);
/* Whether a helper is registered under `key`. */
KILN_HIDDEN int cg_have_helper(cg_render *r, const char *key);
/* Register a helper (takes ownership of text; a second one under the same
 * key is dropped). Dependencies must be added first. */
KILN_HIDDEN void cg_add_helper(cg_render *r, const char *key, char *text);
/* The innermost allocation of buf in scope, or NULL. */
KILN_HIDDEN cg_alloc *cg_find_alloc(cg_render *r, tir_node buf);
/* "<sanitized name>_<k>" of the k-th variable the current function names:
 * unique in it, never a C keyword, and the same whatever the functions
 * rendered before (so a function's text depends on it alone); with
 * r->canon, "v<k>". */
KILN_HIDDEN char *cg_var_name(cg_render *r, tir_node v);
/* Forget the function-local names of r->canon (between functions). */
KILN_HIDDEN void cg_names_reset(cg_render *r);
/* Exact C text of an integer or float constant of dtype dt. */
KILN_HIDDEN char *cg_const_int(kiln_dtype dt, int64_t v);
KILN_HIDDEN char *cg_const_float(kiln_dtype dt, double v);
/* The C type of dt at `lanes` into out (declaring the vector typedef). */
KILN_HIDDEN void cg_vtype(cg_render *r, char out[48], kiln_dtype dt, int lanes);
/* Text of a scalar cast of text a from `from` to `to`. */
KILN_HIDDEN char *cg_cast_text(cg_render *r, kiln_dtype to, kiln_dtype from, const char *a);
/* Vector a (L lanes of from) converted to to (neither bool nor bfloat16):
 * __builtin_convertvector, or for 8-bit results of float32 and int32 a
 * helper that narrows through int32 with packs where gcc would go lane by
 * lane. */
KILN_HIDDEN char *cg_vector_cast(cg_render *r, kiln_dtype to, kiln_dtype from, int L,
                                 const char *a);
/* Text of a scalar op (the kind of TIR op/aux) with result dtype dt on
 * operand texts a[] whose dtype is odt. */
KILN_HIDDEN char *cg_scalar_text(cg_render *r, int op, uint32_t aux, kiln_dtype dt, kiln_dtype odt,
                                 char **a);
/* A vector helper applying the op to `nargs` vectors of `lanes` lanes (the
 * vector math library's where it has one, else per lane); returns the call. */
KILN_HIDDEN char *cg_lane_call(cg_render *r, const char *opname, int op, uint32_t aux,
                               kiln_dtype dt, int lanes, kiln_dtype odt, int nargs,
                               const kiln_dtype *adt, char **args);
/* The base name of base/intdiv.h's helper for a div-like op ("idiv_trunc"
 * for TIR_DIV: kiln_idiv_trunc_i32 and _i64); NULL for other ops. */
KILN_HIDDEN const char *cg_intdiv_name(int op);
/* Text b (freed), a divisor of `lanes` x dt, wrapped in the helper that ORs
 * KILN_KERNEL_EDIVZERO into the kernel status when a lane of it is 0. */
KILN_HIDDEN char *cg_divisor(cg_render *r, kiln_dtype dt, int lanes, char *b);
/* The call of the checked-index helper on index and extent texts. */
KILN_HIDDEN char *cg_check_index(cg_render *r, const char *j, const char *n, int from_end);
/* Text a (freed) broadcast to `lanes` lanes. */
KILN_HIDDEN char *cg_splat(cg_render *r, kiln_dtype dt, int lanes, char *a);
/* The name of a memory helper: kind "vload", "vstore", "gather" or
 * "scatter" (idt: the index vector's dtype), or the masked "mload",
 * "mstore", "mgather" and "mscatter", whose last argument but the stored
 * value is a BOOL vector of the lanes to move; valid until the next call. */
KILN_HIDDEN const char *cg_mem_helper(cg_render *r, const char *kind, kiln_dtype dt, int lanes,
                                      kiln_dtype idt);
/* Append one line of text indented by `ind` levels. */
KILN_HIDDEN void cg_line(kstr *o, int ind, const char *fmt, ...) KILN_PRINTF(3, 4);

/* ---- c_render.c ---- */

/* Whether statement s needs a kernel status: it has a checked index
 * (TIR_CHECK: KILN_KERNEL_EINDEX) or an integer division or remainder whose
 * divisor reads data or is the constant 0 (KILN_KERNEL_EDIVZERO). Float
 * code and index arithmetic never need one. A kernel that has one returns
 * it; a parallel closure ORs its bits into the kernel's atomically. */
KILN_HIDDEN int cg_uses_status(tir_node s);

/* Render statement s at indent `ind` into o (outlined parallel bodies go
 * to r->pre). */
KILN_HIDDEN void cg_stmt(cg_render *r, kstr *o, tir_node s, int ind);
/* The helper (c_dot.c) that computes dot product call e (TIR_DOT2,
 * TIR_DOT4: vectorized, its operands loads of two buffers in the int8
 * kernels' shape) as acc + e from pointers: its name, with op[0..3] set to
 * the first operand's buffer and index and the second's; NULL for any
 * other shape (then e is the lanes' sum of products). */
KILN_HIDDEN const char *cg_dot_fast(cg_render *r, tir_node e, tir_node op[4]);

/* ---- c_vmath.c ---- */

/* Add the helper `name` for op/aux on `lanes` x dt (odt: the operands')
 * when the vector math library has a vector form of it (exp, log, tanh,
 * sigmoid and erf of float32; NaN-propagating float min/max; a select by a
 * bool vector); returns whether it did. */
KILN_HIDDEN int cg_vmath_helper(cg_render *r, const char *name, int op, uint32_t aux, kiln_dtype dt,
                                int lanes, kiln_dtype odt, int nargs, const kiln_dtype *adt);

#endif
