/* interp_lanes.h: the interpreter's arithmetic on lanes of values
 * (interp_lanes.c), shared with interp.c only. A lane array holds
 * TE_LANES values in the canonical C type of a dtype's class: int64_t for
 * the integers and bool (wrapped to the dtype's width), float for float32,
 * float16 and bfloat16 (rounded to the dtype), double for float64. An
 * operand stride s is 1 for an array and 0 for a value uniform over the
 * lanes (only its lane 0 is read). */
#ifndef KILN_TE_INTERP_LANES_H
#define KILN_TE_INTERP_LANES_H

#include "interp.h"

#define TE_LANES 256
#define TE_LANE_BYTES 8

typedef enum { TE_K_I64, TE_K_F32, TE_K_F64 } te_vkind;

static inline te_vkind te_vkind_of(kiln_dtype dt) {
    switch (dt) {
    case KILN_FLOAT32:
    case KILN_FLOAT16:
    case KILN_BFLOAT16: return TE_K_F32;
    case KILN_FLOAT64: return TE_K_F64;
    default: return TE_K_I64;
    }
}

/* v wrapped to integer dtype dt (bool: v != 0). */
KILN_HIDDEN int64_t te_wrap_int(kiln_dtype dt, int64_t v);
/* x converted to integer dtype dt: truncated, saturating, NaN 0. */
KILN_HIDDEN int64_t te_float_to_int(double x, kiln_dtype dt);
/* Round float lanes to dt's precision (float16, bfloat16; else nothing). */
KILN_HIDDEN void te_round_lanes(kiln_dtype dt, float *r, int n);

/* r = a op b for ADD, SUB, MUL, DIV, MOD, FLOORDIV, FLOORMOD, MIN, MAX in
 * dtype dt (integer division by base/intdiv.h's rule). */
KILN_HIDDEN void te_lanes_arith(tir_op op, kiln_dtype dt, const void *a, int sa, const void *b,
                                int sb, void *r, int n);
/* r = a op b (0 or 1) for EQ..GE on operands of dtype dt. */
KILN_HIDDEN void te_lanes_compare(tir_op op, kiln_dtype dt, const void *a, int sa, const void *b,
                                  int sb, int64_t *r, int n);
/* r = f(a[, b]) in dtype dt; 0 if f is not defined on dt (on integers:
 * abs, floor, ceil, round and the shifts, which are only on integers). */
KILN_HIDDEN int te_lanes_call(tir_intrin f, kiln_dtype dt, const void *a, int sa, const void *b,
                              int sb, void *r, int n);
/* n lanes of dtype `from` converted to dtype `to` (a cast). */
KILN_HIDDEN void te_lanes_convert(kiln_dtype to, kiln_dtype from, const void *src, void *dst,
                                  int n);

/* r[i] = element off[i] of an array of dtype dt at data, for n lanes; if
 * masked, 0 where off[i] is negative. */
KILN_HIDDEN void te_lanes_gather(kiln_dtype dt, const char *data, const int64_t *off, int masked,
                                 void *r, int n);
/* Elements [start, start + n) of an array of dtype dt at data set from
 * the lanes v[i * sv]. */
KILN_HIDDEN void te_lanes_store(kiln_dtype dt, char *data, int64_t start, const void *v, int sv,
                                int n);

/* Lane i of acc set to the identity of combiner c in dtype dt (the one the
 * lowering starts a reduction from), and the binary op that combines. */
KILN_HIDDEN void te_reduce_identity(tir_combiner c, kiln_dtype dt, void *acc, int i);
KILN_HIDDEN tir_op te_combine_op(tir_combiner c);

#endif
