/* broadcast.c: the binary broadcasting ops (add, multiply, comparisons,
 * logic, ...), where, and nn.bias_add. The binary ops and where are
 * scalars over their inputs' elements at the numpy-broadcast index
 * (op_elem_fn, one shared compute), fuse as OP_BROADCAST and follow a
 * blocked layout (LAYOUT_FOLLOWS). nn.bias_add reads its bias at the
 * channel axis; its layout hook turns it into an add of a blocked
 * constant, so the blocked layout flows through it. */
#include <stdio.h>
#include <string.h>

#include "ops.h"

#define ELEM(fn)                                                                                   \
    static kiln_expr fn(kiln_ctx *ctx, const gnode *call, kiln_dtype dt, const kiln_expr *x)

/* ---- attribute schemas ------------------------------------------------------------ */

static const attr_schema no_attrs[] = {{NULL, 0, 0, NULL}};
static const attr_schema bias_add_attrs[] = {{"axis", GA_INT, 0, "1"}, {NULL, 0, 0, NULL}};

/* ---- relations -------------------------------------------------------------------- */

/* n inputs broadcast together; inputs from same_dtype_from on share a
 * dtype; the output's is input first_value's, or `force` if >= 0. */
static rel_result broadcast_rel(const struct kiln_graph *g, int n, const gtype *const *in,
                                int first_value, int same_dtype_from, kiln_dtype force,
                                gtype *out) {
    OPS_REQUIRE_KNOWN(n);
    const gtensor_type *ts[8];
    rel_result r = REL_OK;
    for (int i = 0; i < n; i++)
        if (!(ts[i] = ops_tensor_in(in[i], i, &r)))
            return r;
    for (int i = same_dtype_from + 1; i < n; i++)
        if (ts[i]->dtype != ts[same_dtype_from]->dtype)
            return ops_fail("input %d is %s but input %d is %s", same_dtype_from,
                            kiln_dtype_name(ts[same_dtype_from]->dtype), i,
                            kiln_dtype_name(ts[i]->dtype));
    gtensor_type res;
    if ((r = ops_broadcast(n, ts, first_value, &res)) != REL_OK)
        return r;
    if ((int)force >= 0)
        res.dtype = force;
    return ops_set_out(g, out, &res);
}

static rel_result rel_broadcast(const struct kiln_graph *g, const gnode *call,
                                const gtype *const *in, gtype *out) {
    return broadcast_rel(g, 2, in, 0, 0, (kiln_dtype)-1, out);
}

static rel_result rel_compare(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                              gtype *out) {
    return broadcast_rel(g, 2, in, 0, 0, KILN_BOOL, out);
}

static rel_result rel_logic(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    for (int i = 0; i < 2; i++)
        if (!in[i]->is_tuple && in[i]->t[0].dtype != KILN_BOOL)
            return ops_fail("input %d must be bool, not %s", i, kiln_dtype_name(in[i]->t[0].dtype));
    return broadcast_rel(g, 2, in, 0, 0, KILN_BOOL, out);
}

/* mod, floor_mod: numbers (not bool) of one dtype */
static rel_result rel_mod(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                          gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    if (!in[0]->is_tuple && in[0]->t[0].dtype == KILN_BOOL)
        return ops_fail("needs numbers, not bool");
    return rel_broadcast(g, call, in, out);
}

/* left_shift, right_shift: integers (not bool) of one dtype */
static rel_result rel_shift(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    kiln_dtype dt = in[0]->is_tuple ? KILN_INT64 : in[0]->t[0].dtype;
    if (!ops_is_int_dtype(dt))
        return ops_fail("needs integers, not %s", kiln_dtype_name(dt));
    return rel_broadcast(g, call, in, out);
}

static rel_result rel_where(const struct kiln_graph *g, const gnode *call, const gtype *const *in,
                            gtype *out) {
    OPS_REQUIRE_KNOWN(3);
    if (!in[0]->is_tuple && in[0]->t[0].dtype != KILN_BOOL)
        return ops_fail("the condition must be bool, not %s", kiln_dtype_name(in[0]->t[0].dtype));
    return broadcast_rel(g, 3, in, 1, 1, (kiln_dtype)-1, out);
}

static rel_result rel_bias_add(const struct kiln_graph *g, const gnode *call,
                               const gtype *const *in, gtype *out) {
    OPS_REQUIRE_KNOWN(2);
    rel_result r = REL_OK;
    const gtensor_type *x = ops_tensor_in(in[0], 0, &r),
                       *b = x ? ops_tensor_in(in[1], 1, &r) : NULL;
    if (!b)
        return r;
    int64_t axis = graph_attr_int(call, "axis", 1);
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis >= x->ndim)
        return ops_fail("axis is out of range for a %d-D input", x->ndim);
    if (b->ndim != 1 || !gdim_equal(b->dims[0], x->dims[axis]))
        return ops_fail("bias must be 1-D with the size of axis %lld", (long long)axis);
    if (b->dtype != x->dtype)
        return ops_fail("bias dtype differs from data dtype");
    return ops_set_out(g, out, x);
}

/* ---- the scalars ------------------------------------------------------------------ */

/* clang-format off */
ELEM(add_elem) { return kiln_add(x[0], x[1]); }
ELEM(subtract_elem) { return kiln_sub(x[0], x[1]); }
ELEM(divide_elem) { return kiln_div(x[0], x[1]); }
ELEM(maximum_elem) { return kiln_max(x[0], x[1]); }
ELEM(minimum_elem) { return kiln_min(x[0], x[1]); }
ELEM(equal_elem) { return kiln_eq(x[0], x[1]); }
ELEM(less_elem) { return kiln_lt(x[0], x[1]); }
ELEM(greater_elem) { return kiln_gt(x[0], x[1]); }
ELEM(not_equal_elem) { return kiln_ne(x[0], x[1]); }
ELEM(less_equal_elem) { return kiln_le(x[0], x[1]); }
ELEM(greater_equal_elem) { return kiln_ge(x[0], x[1]); }
ELEM(logical_and_elem) { return kiln_and(x[0], x[1]); }
ELEM(logical_or_elem) { return kiln_or(x[0], x[1]); }
ELEM(logical_xor_elem) { return kiln_ne(x[0], x[1]); }
ELEM(mod_elem) { return kiln_mod(x[0], x[1]); }
ELEM(floor_mod_elem) { return kiln_floormod(x[0], x[1]); }
ELEM(left_shift_elem) { return kiln_shl(x[0], x[1]); }
ELEM(right_shift_elem) { return kiln_shr(x[0], x[1]); }
ELEM(where_elem) { return kiln_select(x[0], x[1], x[2]); }
/* clang-format on */

ELEM(power_elem) {
    if (dt == KILN_FLOAT32 || dt == KILN_FLOAT64)
        return kiln_pow(x[0], x[1]);
    /* integer powers through double: exact for results below 2^53 */
    return kiln_cast(dt, kiln_pow(kiln_cast(KILN_FLOAT64, x[0]), kiln_cast(KILN_FLOAT64, x[1])));
}

/* ---- nn.bias_add ------------------------------------------------------------------- */

typedef struct {
    kiln_tensor *x, *bias;
    int nd, axis;
} bias_args;

static kiln_expr bias_body(kiln_ctx *ctx, const kiln_expr *idx, void *u) {
    bias_args *b = u;
    return kiln_add(kiln_tensor_at(b->x, b->nd, idx), kiln_tensor_at(b->bias, 1, &idx[b->axis]));
}

static kiln_status compute_bias_add(kiln_ctx *ctx, const gnode *call, kiln_tensor *const *in,
                                    kiln_tensor **out) {
    int64_t dims[KILN_MAX_NDIM];
    bias_args b = {in[0], in[1], ops_out_shape(call, dims), 0};
    b.axis = ops_norm_axis(call, 1, b.nd);
    out[0] = ops_compute(ctx, call, "", b.nd, dims, bias_body, &b);
    return out[0] ? KILN_OK : KILN_ERR_INVALID;
}

/* The layout hook: on data in NCHW[x]c, the bias on the channels (a
 * constant [C]) becomes a blocked constant [1, C/x, 1, 1, x] and the op an
 * add, which keeps the block. */
static int alter_bias_add(const gnode *call, const layout_query *q, layout_rewrite *rw) {
    const struct kiln_graph *g = call->graph;
    const gnode *x = g->nodes[call->in[0]], *bias = g->nodes[call->in[1]];
    const gtensor_type *ot = ops_node_type(call), *xt = ops_node_type(x), *bt = ops_node_type(bias);
    int b = q->block[x->id];
    if (!ot || ot->ndim != 4 || !ops_all_known(ot, 1, 4) || !xt || xt->ndim != 4 || !b ||
        graph_attr_int(call, "axis", 1) != 1 || bias->kind != GN_CONST || !bt || bt->ndim != 1)
        return 0;
    int64_t d4[4] = {1, bt->dims[0].v, 1, 1};
    int bb;
    kiln_ndarray *v = ops_block_array(bias->value, d4, b, &bb);
    if (!v)
        return -1;
    static const char *const drop[] = {"axis", NULL};
    rw->op = "add";
    rw->drop = drop;
    rw->out_block = b;
    rw->in[0].block = b;
    rw->in[1].value = v;
    snprintf(rw->in[1].suffix, sizeof rw->in[1].suffix, ".NCHW%dc", bb);
    return 1;
}

/* ---- shape values (ops_values): integer arithmetic on sizes --------------------------
 * Constants fold (in checked int64, C's truncating division as kiln_div
 * has for integers); a size variable passes through what leaves it as it
 * is (v + 0, v * 1, v / 1, max(v, c <= 0), v == v, ...) and compares
 * unequal to a negative number, since a size is never negative. */

typedef enum { A_ADD, A_SUB, A_MUL, A_DIV, A_MAX, A_MIN, A_EQ, A_NE, A_LT, A_GT, A_LE, A_GE } arith;

static int arith_of(const char *name, arith *a) {
    static const char *const names[] = {"add",     "subtract", "multiply",   "divide",
                                        "maximum", "minimum",  "equal",      "not_equal",
                                        "less",    "greater",  "less_equal", "greater_equal"};
    for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++)
        if (!strcmp(name, names[k]))
            return *a = (arith)k, 1;
    return 0;
}

static int arith_const(arith op, int64_t a, int64_t b, int64_t *r) {
    switch (op) {
    case A_ADD: return kiln_add_ok(a, b, r);
    case A_SUB: return b != INT64_MIN && kiln_add_ok(a, -b, r);
    case A_MUL: return kiln_mul_ok(a, b, r);
    case A_DIV: return b != 0 && !(a == INT64_MIN && b == -1) && (*r = a / b, 1);
    case A_MAX: return *r = a > b ? a : b, 1;
    case A_MIN: return *r = a < b ? a : b, 1;
    case A_EQ: return *r = a == b, 1;
    case A_NE: return *r = a != b, 1;
    case A_LT: return *r = a < b, 1;
    case A_GT: return *r = a > b, 1;
    case A_LE: return *r = a <= b, 1;
    case A_GE: return *r = a >= b, 1;
    }
    return 0;
}

/* a op b where a or b (or both) is a size variable: 1 with *r, or 0. */
static int arith_sym(arith op, gdim a, gdim b, gdim *r) {
    int same = gdim_equal(a, b);
    int64_t c = a.sym ? b.v : a.v; /* the constant side, if one is */
    int csym = a.sym && b.sym;
    gdim v = a.sym ? a : b;
    switch (op) {
    case A_ADD: return !csym && c == 0 && (*r = v, 1);
    case A_SUB: return (same && (*r = (gdim){0, NULL}, 1)) || (!b.sym && b.v == 0 && (*r = a, 1));
    case A_MUL: return !csym && (c == 1 ? (*r = v, 1) : c == 0 ? (*r = (gdim){0, NULL}, 1) : 0);
    case A_DIV: return !b.sym && b.v == 1 && (*r = a, 1);
    case A_MAX: return (same || (!csym && c <= 0)) && (*r = v, 1);
    case A_MIN: return same && (*r = v, 1);
    case A_EQ:
    case A_NE:
        if (same)
            return *r = (gdim){op == A_EQ, NULL}, 1;
        return !csym && c < 0 && (*r = (gdim){op == A_NE, NULL}, 1);
    case A_LT:
    case A_GT:
    case A_LE:
    case A_GE: return 0;
    }
    return 0;
}

/* The element count of a broadcast of small values, each of n[i]
 * elements (1 broadcasts), or -1. */
static int values_count(int nin, const int *n, int cap) {
    int count = 1;
    for (int i = 0; i < nin; i++) {
        if (n[i] < 0)
            return -1;
        if (n[i] != 1 && count != 1 && n[i] != count)
            return -1;
        count = n[i] != 1 ? n[i] : count;
    }
    return count <= cap ? count : -1;
}

static int values_arith(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                        const int *nin, gval *out, int cap) {
    (void)g;
    arith op;
    int count = values_count(2, nin, cap);
    if (count < 0 || !arith_of(call->op->name, &op))
        return -1;
    for (int k = 0; k < count; k++) {
        gval a = in[0][nin[0] == 1 ? 0 : k], b = in[1][nin[1] == 1 ? 0 : k];
        gval_kind kind = ops_gval_weaker(a.kind, b.kind);
        out[k] = (gval){GVAL_UNKNOWN, {0, NULL}};
        if (kind == GVAL_UNKNOWN)
            continue;
        if (!a.d.sym && !b.d.sym) {
            int64_t r;
            if (arith_const(op, a.d.v, b.d.v, &r))
                out[k] = (gval){kind, {r, NULL}};
        } else if (arith_sym(op, a.d, b.d, &out[k].d)) {
            out[k].kind = kind;
        }
    }
    return count;
}

static int values_where(const struct kiln_graph *g, const gnode *call, const gval *const *in,
                        const int *nin, gval *out, int cap) {
    (void)g, (void)call;
    int count = values_count(3, nin, cap);
    if (count < 0)
        return -1;
    for (int k = 0; k < count; k++) {
        gval c = in[0][nin[0] == 1 ? 0 : k], a = in[1][nin[1] == 1 ? 0 : k],
             b = in[2][nin[2] == 1 ? 0 : k];
        if (c.kind != GVAL_UNKNOWN && !c.d.sym)
            out[k] = c.d.v ? a : b;
        else if (a.kind == GVAL_EXACT && b.kind == GVAL_EXACT && gdim_equal(a.d, b.d))
            out[k] = a;
        else
            out[k] = (gval){GVAL_UNKNOWN, {0, NULL}};
        if (c.kind == GVAL_ASSUMED && out[k].kind == GVAL_EXACT)
            out[k].kind = GVAL_ASSUMED;
    }
    return count;
}

/* ---- the table --------------------------------------------------------------------- */

#define BINARY(nm, relation, scalar, sum)                                                          \
    {                                                                                              \
        .name = nm, .min_in = 2, .max_in = 2, .attrs = no_attrs, .rel = relation,                  \
        .pattern = OP_BROADCAST, .compute = ops_compute_elemwise, .summary = sum, .elem = scalar,  \
        .layout = LAYOUT_FOLLOWS, .sym_dims = 1, .values = values_arith                            \
    }

const kiln_op_def ops_broadcast_rows[] = {
    BINARY("add", rel_broadcast, add_elem, "a + b"),
    BINARY("subtract", rel_broadcast, subtract_elem, "a - b"),
    BINARY("multiply", rel_broadcast, ops_elem_multiply, "a * b"),
    BINARY("divide", rel_broadcast, divide_elem, "a / b"),
    BINARY("power", rel_broadcast, power_elem, "a ^ b"),
    BINARY("maximum", rel_broadcast, maximum_elem, "max(a, b)"),
    BINARY("minimum", rel_broadcast, minimum_elem, "min(a, b)"),
    BINARY("equal", rel_compare, equal_elem, "a == b"),
    BINARY("less", rel_compare, less_elem, "a < b"),
    BINARY("greater", rel_compare, greater_elem, "a > b"),
    BINARY("not_equal", rel_compare, not_equal_elem, "a != b"),
    BINARY("less_equal", rel_compare, less_equal_elem, "a <= b"),
    BINARY("greater_equal", rel_compare, greater_equal_elem, "a >= b"),
    BINARY("logical_and", rel_logic, logical_and_elem, "a && b"),
    BINARY("logical_or", rel_logic, logical_or_elem, "a || b"),
    BINARY("logical_xor", rel_logic, logical_xor_elem, "a != b (bools)"),
    BINARY("mod", rel_mod, mod_elem, "a - trunc(a / b) * b: the sign of a (C's %, fmod)"),
    BINARY("floor_mod", rel_mod, floor_mod_elem, "a - floor(a / b) * b: the sign of b"),
    BINARY("left_shift", rel_shift, left_shift_elem, "a << b (0 past the width)"),
    BINARY("right_shift", rel_shift, right_shift_elem,
           "a >> b (arithmetic; past the width 0 or -1)"),
    {.name = "where",
     .min_in = 3,
     .max_in = 3,
     .attrs = no_attrs,
     .rel = rel_where,
     .pattern = OP_BROADCAST,
     .compute = ops_compute_elemwise,
     .summary = "cond ? a : b",
     .elem = where_elem,
     .layout = LAYOUT_FOLLOWS,
     .sym_dims = 1,
     .values = values_where},
    {.name = "nn.bias_add",
     .min_in = 2,
     .max_in = 2,
     .attrs = bias_add_attrs,
     .rel = rel_bias_add,
     .pattern = OP_BROADCAST,
     .compute = compute_bias_add,
     .summary = "x + bias on axis",
     .layout = LAYOUT_PLAIN,
     .alter = alter_bias_add,
     .sym_dims = 1},
};

const int ops_broadcast_count = (int)(sizeof ops_broadcast_rows / sizeof ops_broadcast_rows[0]);
