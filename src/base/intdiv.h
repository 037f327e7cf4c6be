/* intdiv.h: kiln's one rule for integer division and remainder, the same at
 * compile time (the reference interpreter, constant folding) and at run time
 * (generated kernels). C leaves x / 0 and INT_MIN / -1 undefined (a SIGFPE on
 * x86); kiln defines them as numpy computes them:
 *
 *     x / 0 = 0,  x % 0 = 0               (truncating and floor forms alike)
 *     INT_MIN / -1 = INT_MIN (it wraps),  INT_MIN % -1 = 0
 *
 * Everything else is C's truncating division (trunc) or Python's floor
 * division (floor), whose remainder has the divisor's sign. The helpers
 * need only <stdint.h> and have no dependency on the rest of kiln, so
 * generated C can carry the same text. Narrower types (int8, uint8, bool)
 * divide in the 32-bit helpers and wrap back to their width; uint32 and
 * uint64 divide in the unsigned 64-bit ones (floor and truncating division
 * agree on unsigned values). */
#ifndef KILN_INTDIV_H
#define KILN_INTDIV_H

#include <stdint.h>

static inline int64_t kiln_idiv_trunc_i64(int64_t a, int64_t b) {
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0u - (uint64_t)a); /* INT64_MIN wraps to itself */
    return a / b;
}

static inline int64_t kiln_imod_trunc_i64(int64_t a, int64_t b) {
    if (b == 0 || b == -1)
        return 0;
    return a % b;
}

static inline int64_t kiln_idiv_floor_i64(int64_t a, int64_t b) {
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0u - (uint64_t)a);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t kiln_imod_floor_i64(int64_t a, int64_t b) {
    if (b == 0 || b == -1)
        return 0;
    int64_t m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

static inline int32_t kiln_idiv_trunc_i32(int32_t a, int32_t b) {
    if (b == 0)
        return 0;
    if (b == -1)
        return (int32_t)(0u - (uint32_t)a);
    return a / b;
}

static inline int32_t kiln_imod_trunc_i32(int32_t a, int32_t b) {
    if (b == 0 || b == -1)
        return 0;
    return a % b;
}

static inline int32_t kiln_idiv_floor_i32(int32_t a, int32_t b) {
    if (b == 0)
        return 0;
    if (b == -1)
        return (int32_t)(0u - (uint32_t)a);
    int32_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int32_t kiln_imod_floor_i32(int32_t a, int32_t b) {
    if (b == 0 || b == -1)
        return 0;
    int32_t m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

static inline uint64_t kiln_udiv_u64(uint64_t a, uint64_t b) {
    return b == 0 ? 0 : a / b;
}

static inline uint64_t kiln_umod_u64(uint64_t a, uint64_t b) {
    return b == 0 ? 0 : a % b;
}

#endif
