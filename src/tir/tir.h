/* tir.h: the one node type of kiln's expression and loop IR.
 *
 * Every expression and statement is a `kiln_node`: an op, a dtype with a
 * lane count, a few payload fields and an array of sources. Nodes are
 * immutable and hash-consed in their context's arena, so structurally equal
 * nodes are the same pointer and equality is `==`. Variables are unique by
 * id (`ival`), so two variables with one name are still distinct.
 *
 * The same nodes serve three stages:
 *   tensor expressions  TENSOR_READ, REDUCE over index VARs;
 *   lowered loop nests  FOR, PROVIDE, IF, SEQ, ALLOCATE (multi-dim, pre-flatten);
 *   flat loop IR        LOAD/STORE on HANDLE vars, RAMP/BROADCAST vectors. */
#ifndef KILN_TIR_H
#define KILN_TIR_H

#include "../base/base_internal.h"
#include "kiln/te.h"

typedef enum {
    /* leaves */
    TIR_INT,   /* ival; dtype any integer or bool */
    TIR_FLOAT, /* fval; dtype float */
    TIR_VAR,   /* name, ival = unique id; a HANDLE var is a buffer pointer whose
                  element dtype is `aux`. An iteration axis made by te has
                  aux = 1 (data) or 2 (reduce) and ptr = its te_dom. */
    /* binary: src[0] op src[1]; operands have the node's dtype and lanes,
       except comparisons and logic, whose dtype is BOOL */
    TIR_ADD,
    TIR_SUB,
    TIR_MUL,
    TIR_DIV, /* float division; C truncating division for integers */
    TIR_MOD, /* C truncating remainder */
    TIR_FLOORDIV,
    TIR_FLOORMOD,
    TIR_MIN,
    TIR_MAX,
    TIR_EQ,
    TIR_NE,
    TIR_LT,
    TIR_LE,
    TIR_GT,
    TIR_GE,
    TIR_AND,
    TIR_OR,
    TIR_NOT,         /* src[0] */
    TIR_SELECT,      /* src[0] ? src[1] : src[2] */
    TIR_CAST,        /* src[0] converted to the node's dtype */
    TIR_CALL,        /* aux = tir_intrin; src = arguments */
    TIR_TENSOR_READ, /* ptr = kiln_tensor*, name = its name; src = indices */
    TIR_REDUCE,      /* aux = tir_combiner; src[0] = source; src[1..] = the
                        reduce axis VARs (each var's ptr is its te_dom) */
    TIR_LOAD,        /* src[0] = HANDLE var, src[1] = flat index (with the node's
                        lanes); dtype = the element dtype; optional src[2] = a
                        BOOL mask of the same lanes: lanes it clears are not
                        read (their value is unspecified) */
    TIR_RAMP,        /* src[0] base, src[1] stride (scalars); lanes */
    TIR_BROADCAST,   /* src[0] scalar; lanes */
    TIR_CHECK,       /* a checked index: src[0] index, src[1] extent n (int64
                        scalars); ival = 1 if a negative index counts from the
                        end. Its value is the index normalized into [0, n);
                        outside [-n, n-1] (or [0, n-1]) it is 0, so reads
                        stay in bounds, and the kernel reports
                        KILN_KERNEL_EINDEX (the interpreter: an error) */
    /* statements (dtype is HANDLE and unused) */
    TIR_FOR,      /* src: var, min, extent, body; aux = tir_for_kind; name =
                     thread tag when aux is TIR_FOR_THREAD */
    TIR_STORE,    /* src: HANDLE var, flat index, value; optional src[3] = a BOOL
                     mask of the index's lanes: lanes it clears are not written */
    TIR_PROVIDE,  /* ptr = kiln_tensor*, name = its name; src[0] = value,
                     src[1..] = indices */
    TIR_ALLOCATE, /* src: HANDLE var, element count, body; name = scope
                     ("global" or "local"); the var's aux is the element dtype */
    TIR_IF,       /* src: cond, then, optional else */
    TIR_SEQ,      /* src: statements in order; zero sources is a no-op */
    TIR_OP_COUNT
} tir_op;

typedef enum {
    TIR_EXP,
    TIR_LOG,
    TIR_SQRT,
    TIR_RSQRT,
    TIR_TANH,
    TIR_SIGMOID,
    TIR_ERF,
    TIR_POW,
    TIR_FLOOR,
    TIR_CEIL,
    TIR_ABS,
    TIR_ROUND,
    TIR_SIN,
    TIR_COS,
    TIR_TAN,
    TIR_ASIN,
    TIR_ACOS,
    TIR_ATAN,
    TIR_SINH,
    TIR_COSH,
    TIR_ASINH,
    TIR_ACOSH,
    TIR_ATANH,
    TIR_SHL, /* integers: a << b, 0 for b outside [0, bits) (numpy's left_shift) */
    TIR_SHR, /* integers: a >> b (arithmetic), past the width 0 or -1 (numpy's right_shift) */
    /* horizontal reductions: the scalar sum, max or min of a vector's lanes
       (tir_horizontal makes them; max and min propagate NaN, as TIR_MAX) */
    TIR_HSUM,
    TIR_HMAX,
    TIR_HMIN,
    /* integer dot products, the int8 kernels' multiply-add (ops' kernels
       build them; the C renderer maps them onto vpdpbusd, vpmaddwd): the
       int32 sum of int32(a_j) * int32(b_j) over the k pairs, arguments
       a_0 .. a_k-1, b_0 .. b_k-1 (each an integer of at most 16 bits) */
    TIR_DOT2,
    TIR_DOT4,
    TIR_INTRIN_COUNT
} tir_intrin;

typedef enum { TIR_RSUM, TIR_RMAX, TIR_RMIN, TIR_RPROD, TIR_COMBINER_COUNT } tir_combiner;

typedef enum {
    TIR_FOR_SERIAL,
    TIR_FOR_PARALLEL,
    TIR_FOR_VECTORIZED,
    TIR_FOR_UNROLLED,
    TIR_FOR_THREAD
} tir_for_kind;

typedef const struct kiln_node *tir_node;

struct kiln_node {
    kiln_ctx *ctx;
    uint8_t op;    /* tir_op */
    uint8_t dtype; /* kiln_dtype */
    uint16_t lanes;
    uint32_t aux;
    uint32_t nsrc;
    uint32_t hash;
    int64_t ival;
    double fval;
    const char *name; /* interned in the context: compare by pointer */
    void *ptr;
    tir_node src[];
};

/* ---- the context -------------------------------------------------------
 * Owns the arena (every node, tensor and schedule lives in it), the
 * hash-consing table and interned strings. */
struct kiln_ctx {
    arena *arena;
    const struct kiln_node **table; /* open addressing, power-of-two cap */
    size_t cap, count;
    const char **strs; /* interned strings */
    size_t scap, scount;
    struct kiln_node *scratch; /* the lookup key being built */
    size_t scratch_cap;
    int64_t next_id;     /* variable ids */
    tir_node *size_vars; /* tir_size_var's, one per name (in the arena) */
    int nsize_vars, size_vars_cap;
};
/* The arena of the context (every node, tensor and schedule lives in it). */
KILN_HIDDEN arena *tir_arena(kiln_ctx *ctx);
/* Intern a string in the context. */
KILN_HIDDEN const char *tir_intern(kiln_ctx *ctx, const char *s);

/* ---- constructing ------------------------------------------------------ */
/* The one constructor: returns the unique node with these fields. */
KILN_HIDDEN tir_node tir_make(kiln_ctx *ctx, tir_op op, kiln_dtype dt, int lanes, uint32_t aux,
                              int64_t ival, double fval, const char *name, void *ptr, int nsrc,
                              const tir_node *src);
/* Copy of n with new sources (same count or not); n itself if unchanged. */
KILN_HIDDEN tir_node tir_with_src(tir_node n, int nsrc, const tir_node *src);

KILN_HIDDEN tir_node tir_int(kiln_ctx *ctx, kiln_dtype dt, int64_t v);
KILN_HIDDEN tir_node tir_i64(kiln_ctx *ctx, int64_t v);
KILN_HIDDEN tir_node tir_floatc(kiln_ctx *ctx, kiln_dtype dt, double v);
/* A constant of dtype dt (int or float), broadcast to `lanes` if > 1. */
KILN_HIDDEN tir_node tir_const(kiln_ctx *ctx, kiln_dtype dt, int lanes, double v);
/* A fresh variable (new id). HANDLE vars pass their element dtype in elem. */
KILN_HIDDEN tir_node tir_var(kiln_ctx *ctx, const char *name, kiln_dtype dt);
/* The context's one int64 size variable called name (made on first use), so
 * every tensor of a graph's symbolic dim "n" shares one variable. */
KILN_HIDDEN tir_node tir_size_var(kiln_ctx *ctx, const char *name);
KILN_HIDDEN tir_node tir_handle(kiln_ctx *ctx, const char *name, kiln_dtype elem);
/* Binary node; dtype/lanes from a (BOOL for comparisons and logic). No
 * checking: callers pass matching operands. */
KILN_HIDDEN tir_node tir_bin(tir_op op, tir_node a, tir_node b);
KILN_HIDDEN tir_node tir_add(tir_node a, tir_node b);
KILN_HIDDEN tir_node tir_sub(tir_node a, tir_node b);
KILN_HIDDEN tir_node tir_mul(tir_node a, tir_node b);
KILN_HIDDEN tir_node tir_not(tir_node a);
KILN_HIDDEN tir_node tir_select(tir_node c, tir_node a, tir_node b);
KILN_HIDDEN tir_node tir_cast(kiln_dtype dt, tir_node a);
KILN_HIDDEN tir_node tir_call(kiln_ctx *ctx, tir_intrin f, kiln_dtype dt, int lanes, int nargs,
                              const tir_node *args);
KILN_HIDDEN tir_node tir_load(kiln_ctx *ctx, tir_node buf, tir_node index);
/* A vector load or store of the lanes where mask (BOOL, the index's lanes) holds. */
KILN_HIDDEN tir_node tir_load_masked(kiln_ctx *ctx, tir_node buf, tir_node index, tir_node mask);
KILN_HIDDEN tir_node tir_store_masked(tir_node buf, tir_node index, tir_node value, tir_node mask);
KILN_HIDDEN tir_node tir_ramp(tir_node base, tir_node stride, int lanes);
KILN_HIDDEN tir_node tir_broadcast(tir_node v, int lanes);
/* The checked index of TIR_CHECK (index and extent int64 scalars). */
KILN_HIDDEN tir_node tir_check(tir_node index, tir_node extent, int from_end);

KILN_HIDDEN tir_node tir_for(tir_node var, tir_node min, tir_node extent, tir_for_kind kind,
                             const char *thread_tag, tir_node body);
KILN_HIDDEN tir_node tir_store(tir_node buf, tir_node index, tir_node value);
KILN_HIDDEN tir_node tir_allocate(tir_node buf, tir_node count, const char *scope, tir_node body);
KILN_HIDDEN tir_node tir_if(tir_node cond, tir_node then_s, tir_node else_s /* or NULL */);
KILN_HIDDEN tir_node tir_seq(kiln_ctx *ctx, int n, const tir_node *stmts); /* flattens nested */
KILN_HIDDEN tir_node tir_seq2(tir_node a, tir_node b);
KILN_HIDDEN tir_node tir_nop(kiln_ctx *ctx);

/* ---- inspecting -------------------------------------------------------- */
KILN_HIDDEN int tir_is_stmt(tir_node n);
KILN_HIDDEN int tir_is_int_dtype(kiln_dtype dt); /* int8..int64, uint8, bool */
KILN_HIDDEN int tir_is_float_dtype(kiln_dtype dt);
/* 1 and *v set if n is a scalar integer constant. */
KILN_HIDDEN int tir_const_int(tir_node n, int64_t *v);
KILN_HIDDEN int tir_is_const(tir_node n); /* INT or FLOAT, scalar */
KILN_HIDDEN const char *tir_op_name(tir_op op);
KILN_HIDDEN const char *tir_intrin_name(tir_intrin f);
/* The argument count of intrinsic f: 2 for pow and the shifts, else 1. */
KILN_HIDDEN int tir_intrin_nargs(tir_intrin f);
/* The pairs of a dot product intrinsic (2 or 4), 0 for the others. */
KILN_HIDDEN int tir_dot_pairs(tir_intrin f);
/* 1 if var v occurs anywhere in n. */
KILN_HIDDEN int tir_uses_var(tir_node n, tir_node v);

/* ---- node sets ------------------------------------------------------------
 * Expressions are DAGs (hash-consing shares equal subtrees), so a walk that
 * recurses into every source revisits shared nodes and can take time
 * exponential in the depth (a chain x2 = x1 + x0, x3 = x2 + x1, ...). Walks
 * that collect or check something keep the nodes they have seen in a set.
 * Zero-initialize; tir_set_free releases it. */
typedef struct {
    tir_node *keys;
    size_t cap, count;
} tir_set;
/* Add n; returns 1 if it was already in the set, else 0. */
KILN_HIDDEN int tir_set_add(tir_set *s, tir_node n);
/* 1 if n is in the set. */
KILN_HIDDEN int tir_set_has(const tir_set *s, tir_node n);
KILN_HIDDEN void tir_set_free(tir_set *s);

/* A map from nodes to nodes (a walk's memo: what it made of each shared
 * node). Zero-initialize; tir_map_free releases it. */
typedef struct {
    tir_node *keys, *vals;
    size_t cap, count;
} tir_map;
/* n's value, or NULL if n has none. */
KILN_HIDDEN tir_node tir_map_get(const tir_map *m, tir_node n);
KILN_HIDDEN void tir_map_put(tir_map *m, tir_node n, tir_node value);
KILN_HIDDEN void tir_map_free(tir_map *m);

/* ---- rewriting ----------------------------------------------------------
 * A post-order rebuild: fn sees each node after its sources were rebuilt
 * and returns the replacement (or the node itself). Shared subtrees are
 * visited once (memoized per call). */
typedef tir_node (*tir_rewrite_fn)(tir_node n, void *user);
KILN_HIDDEN tir_node tir_rewrite(tir_node root, tir_rewrite_fn fn, void *user);
/* Replace each vars[i] by values[i]. */
KILN_HIDDEN tir_node tir_substitute(tir_node root, int n, const tir_node *vars,
                                    const tir_node *values);

/* ---- simplification (simplify.c) ------------------------------------------
 * Known constant bounds of integer variables, used to prove conditions and to
 * drop floordiv/floormod whose operand range is known. */
typedef struct tir_analyzer tir_analyzer;
KILN_HIDDEN tir_analyzer *tir_analyzer_new(kiln_ctx *ctx);
KILN_HIDDEN void tir_analyzer_free(tir_analyzer *an);
/* Record lo <= v <= hi (inclusive). A later bind of v replaces it. */
KILN_HIDDEN void tir_analyzer_bind(tir_analyzer *an, tir_node v, int64_t lo, int64_t hi);
KILN_HIDDEN void tir_analyzer_unbind(tir_analyzer *an, tir_node v);
/* v is a loop variable in [0, ext) for a symbolic extent ext: tir_prove
 * then proves v < e and floordiv(v, c) < e where ext is at most e (c * e). */
KILN_HIDDEN void tir_analyzer_bind_extent(tir_analyzer *an, tir_node v, tir_node ext);
/* Constant bounds of an integer expression (INT64_MIN/INT64_MAX if unknown). */
KILN_HIDDEN void tir_const_bound(tir_analyzer *an, tir_node e, int64_t *lo, int64_t *hi);
/* 1 if cond is provably true. */
KILN_HIDDEN int tir_prove(tir_analyzer *an, tir_node cond);
/* Rewrite to a fixed point with the rule table; an may be NULL. */
KILN_HIDDEN tir_node tir_simplify(tir_analyzer *an, tir_node e);
/* Simplify every expression of a statement, binding loop variables to their
 * ranges, dropping provably true/false ifs, empty loops and no-op seqs, and
 * replacing extent-1 loops by their variable's value. */
KILN_HIDDEN tir_node tir_simplify_stmt(tir_analyzer *an, tir_node s);

/* ---- printing (printer.c) ---------------------------------------------- */
KILN_HIDDEN void tir_print_expr(kstr *out, tir_node e);
KILN_HIDDEN void tir_print_stmt(kstr *out, tir_node s, int indent);

/* ---- a lowered function ------------------------------------------------ */
typedef struct {
    const char *name; /* tensor name */
    tir_node buf;     /* HANDLE var for its data */
    kiln_dtype dtype;
    int ndim;
    const tir_node *shape; /* TIR_INT or int64 TIR_VAR each */
} tir_param;

typedef struct {
    const char *name;
    int nparams;
    tir_param *params;
    int nvars; /* symbolic sizes, in the order they are passed */
    const tir_node *vars;
    tir_node body; /* flat loop IR */
    /* a function a bring-your-own-codegen backend wrote (src/contrib): its
       whole C definition, which the C renderer prints in place of a body
       (params still describe its arguments), or NULL */
    const char *extern_text;
} tir_func;

/* "primfn name(A: float32[n], ...) {\n body }" */
KILN_HIDDEN void tir_print_func(kstr *out, const tir_func *f);

/* ---- loop passes (passes.c) -------------------------------------------- */
/* Turn vectorized loops of constant extent into RAMP/BROADCAST vector code;
 * loops it cannot vectorize become serial. */
KILN_HIDDEN tir_node tir_vectorize(kiln_ctx *ctx, tir_node s);
/* Split vector stores wider than max_bytes into register-wide pieces
 * (max_bytes <= 0: leave them). */
KILN_HIDDEN tir_node tir_legalize_lanes(kiln_ctx *ctx, tir_node s, int max_bytes);
/* Unroll unrolled loops of constant extent (others become serial). */
KILN_HIDDEN tir_node tir_unroll(kiln_ctx *ctx, tir_node s);
/* Unswitch guards a loop body does not change: the body runs under their
 * conjunction with each guard true, else as it was (passes.c). */
KILN_HIDDEN tir_node tir_unswitch(kiln_ctx *ctx, tir_node s);
/* Loops that read and write a local buffer at fixed slots (indices the
 * loop does not change) work on a register copy of each slot, copied in
 * before and out after: the accumulators of a row that other code reads
 * by a variable index (promote.c). */
KILN_HIDDEN tir_node tir_promote_slots(kiln_ctx *ctx, tir_node s);
/* A serial loop of L (a vector width) steps that folds an expression of
 * its variable into one scalar with +, max or min becomes that expression
 * as an L-lane vector and a horizontal reduction (TIR_HSUM, TIR_HMAX,
 * TIR_HMIN): softmax's and layer norm's sums over their partial lanes
 * were 16 dependent scalar steps. The sum's order of additions changes
 * (a tree); max and min give the same value. */
KILN_HIDDEN tir_node tir_horizontal(kiln_ctx *ctx, tir_node s);
/* floordiv/floormod by a positive constant of a provably non-negative
 * integer become C's / and % (the last pass: the simplifier's rules match
 * the floor forms). */
KILN_HIDDEN tir_node tir_truncate_divmod(kiln_ctx *ctx, tir_node s);

#endif
