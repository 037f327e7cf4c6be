/* te_util.h: helpers for tests that build tensor-expression functions and
 * compare a scheduled build against the naive default schedule of the same
 * compute (invariant 1 in ARCHITECTURE.md). */
#ifndef KILN_TE_UTIL_H
#define KILN_TE_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime.h"
#include "kiln/schedule.h"

/* The matrix product the schedule tests use: C = A B, float32, A (M x K)
 * and B (K x N) new placeholders named "A" and "B" (*A, *B), C named "C"
 * with one reduce axis "k". */
typedef struct {
    kiln_tensor *A, *B;
    kiln_expr k;
} tu_mm_args;

static inline kiln_expr tu_mm_body(kiln_ctx *ctx, const kiln_expr *i, void *u) {
    (void)ctx;
    tu_mm_args *m = u;
    kiln_expr ia[2] = {i[0], m->k}, ib[2] = {m->k, i[1]};
    return kiln_sum(kiln_mul(kiln_tensor_at(m->A, 2, ia), kiln_tensor_at(m->B, 2, ib)), 1, &m->k);
}

static inline kiln_tensor *tu_matmul(kiln_ctx *ctx, int64_t M, int64_t N, int64_t K,
                                     kiln_tensor **A, kiln_tensor **B) {
    kiln_expr sa[2] = {kiln_int(ctx, M), kiln_int(ctx, K)};
    kiln_expr sb[2] = {kiln_int(ctx, K), kiln_int(ctx, N)};
    kiln_expr sc[2] = {kiln_int(ctx, M), kiln_int(ctx, N)};
    tu_mm_args m = {kiln_placeholder(ctx, 2, sa, KILN_FLOAT32, "A"),
                    kiln_placeholder(ctx, 2, sb, KILN_FLOAT32, "B"),
                    kiln_reduce_axis(ctx, kiln_int(ctx, 0), sa[1], "k")};
    *A = m.A;
    *B = m.B;
    return kiln_compute(ctx, 2, sc, tu_mm_body, &m, "C");
}

/* A deterministic generator (xorshift64*). */
static inline uint64_t tu_rand(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static inline double tu_uniform(uint64_t *s) {
    return (double)(tu_rand(s) >> 11) / 9007199254740992.0;
}

/* Fill an array with values in [-2, 2) (floats) or small ints. */
static inline void tu_fill(kiln_ndarray *a, uint64_t *seed) {
    int64_t n = kiln_ndarray_numel(a);
    void *d = kiln_ndarray_data(a);
    for (int64_t i = 0; i < n; i++) {
        double v = tu_uniform(seed) * 4 - 2;
        switch (kiln_ndarray_dtype(a)) {
        case KILN_FLOAT32: ((float *)d)[i] = (float)v; break;
        case KILN_FLOAT64: ((double *)d)[i] = v; break;
        case KILN_INT32: ((int32_t *)d)[i] = (int32_t)(v * 20); break;
        case KILN_INT64: ((int64_t *)d)[i] = (int64_t)(v * 20); break;
        case KILN_INT8: ((int8_t *)d)[i] = (int8_t)(v * 20); break;
        case KILN_UINT8: ((uint8_t *)d)[i] = (uint8_t)(v * 20 + 50); break;
        case KILN_INT16: ((int16_t *)d)[i] = (int16_t)(v * 20); break;
        case KILN_UINT16: ((uint16_t *)d)[i] = (uint16_t)(v * 20 + 50); break;
        case KILN_UINT32: ((uint32_t *)d)[i] = (uint32_t)(v * 20 + 50); break;
        case KILN_UINT64: ((uint64_t *)d)[i] = (uint64_t)(v * 20 + 50); break;
        case KILN_BOOL: ((uint8_t *)d)[i] = v > 0; break;
        default:
            memset((char *)d + i * (int64_t)kiln_dtype_size(kiln_ndarray_dtype(a)), 0,
                   kiln_dtype_size(kiln_ndarray_dtype(a)));
        }
    }
}

/* Element i as a double. */
static inline double tu_get(const kiln_ndarray *a, int64_t i) {
    const void *d = kiln_ndarray_data(a);
    switch (kiln_ndarray_dtype(a)) {
    case KILN_FLOAT32: return ((const float *)d)[i];
    case KILN_FLOAT64: return ((const double *)d)[i];
    case KILN_INT32: return ((const int32_t *)d)[i];
    case KILN_INT64: return (double)((const int64_t *)d)[i];
    case KILN_INT8: return ((const int8_t *)d)[i];
    case KILN_UINT8:
    case KILN_BOOL: return ((const uint8_t *)d)[i];
    case KILN_INT16: return ((const int16_t *)d)[i];
    case KILN_UINT16: return ((const uint16_t *)d)[i];
    case KILN_UINT32: return ((const uint32_t *)d)[i];
    case KILN_UINT64: return (double)((const uint64_t *)d)[i];
    default: return 0;
    }
}

/* Arrays for the arguments of a function with concrete shapes: the size
 * variables are given by `sizes` (name/value pairs, NULL-terminated names). */
static inline kiln_ndarray *tu_array_for(kiln_tensor *t, const char **names, const int64_t *vals) {
    int64_t shape[16];
    int nd = kiln_tensor_ndim(t);
    for (int d = 0; d < nd; d++) {
        char buf[64];
        kiln_expr_print(kiln_tensor_dim(t, d), buf, sizeof buf);
        char *end;
        long long v = strtoll(buf, &end, 10);
        if (*end) {
            v = -1;
            for (int k = 0; names && names[k]; k++)
                if (strcmp(names[k], buf) == 0)
                    v = vals[k];
        }
        shape[d] = v;
    }
    return kiln_ndarray_empty(kiln_tensor_dtype(t), nd, shape);
}

/* Build `s` and run it on `arrays`. Prints and returns non-zero on failure. */
static inline int tu_build_run(kiln_schedule *s, int nargs, kiln_tensor **args, const char *name,
                               kiln_ndarray **arrays, const kiln_build_options *opts) {
    kiln_module *m = kiln_build(s, nargs, args, name, opts);
    if (!m) {
        fprintf(stderr, "build of %s failed: %s\n", name, kiln_last_error());
        return 1;
    }
    kiln_function *f = kiln_module_get_function(m, name);
    kiln_status st = f ? kiln_function_call(f, nargs, arrays) : KILN_ERR_INVALID;
    if (st != KILN_OK)
        fprintf(stderr, "call of %s failed: %s\n", name, kiln_last_error());
    kiln_module_free(m);
    return st != KILN_OK;
}

/* Largest |a-b| / (1 + |b|) over all elements. */
static inline double tu_max_rel_err(const kiln_ndarray *a, const kiln_ndarray *b) {
    int64_t n = kiln_ndarray_numel(a);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = tu_get(a, i), y = tu_get(b, i);
        double e = x == y ? 0 : __builtin_fabs(x - y) / (1 + __builtin_fabs(y));
        if (e != e)
            e = 1e30;
        if (e > worst)
            worst = e;
    }
    return worst;
}

#endif
