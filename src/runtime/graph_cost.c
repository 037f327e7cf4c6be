/* graph_cost.c: a kernel node's cost per call in mod.json (attrs.flops and
 * attrs.bytes, written by the driver from tir/cost.h), for the roofline
 * profile (docs/PROFILING.md). Each is optional: a package without them
 * loads and profiles, its counts unknown. Present, each must be a
 * non-negative integer or a dim expression (dim_expr.h) over the size
 * variables of the node's function, by their names in the module. */
#include <stdio.h>
#include <string.h>

#include "../base/json.h"
#include "graph_plan.h"

static const char *const cost_keys[2] = {"flops", "bytes"};

/* The function's size variables, interned in order into v (so variable k
 * of an expression is the kernel's vars[k]). */
static kiln_status intern_vars(const kiln_function *f, dim_vars *v) {
    for (int k = 0; k < kiln_function_num_vars(f); k++) {
        const char *name = kiln_function_var_name(f, k);
        if (!dim_expr_parse(v, name, strlen(name)) || v->n != k + 1)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "the function's size variable '%s' cannot be named in a "
                                  "dim expression",
                                  name);
    }
    return KILN_OK;
}

kiln_status graph_cost_read(kiln_model *m, int nid) {
    plan_node *n = &m->nodes[nid];
    dim_vars *vars = NULL;
    for (int i = 0; i < 2; i++) {
        const json *j = n->cost_json[i];
        const char *text = json_str(j);
        n->cost[i] = -1;
        n->cost_e[i] = NULL;
        if (!j)
            continue;
        if (!text) {
            int64_t v;
            if (!json_int(j, &v) || v < 0) {
                char got[64];
                if (j->type == JSON_INT || j->type == JSON_DOUBLE)
                    snprintf(got, sizeof got, "%.6g", j->d);
                else
                    snprintf(got, sizeof got, "%s", json_type_name(j->type));
                return kiln_set_error(KILN_ERR_INVALID,
                                      "attrs.%s must be a non-negative integer or a dim "
                                      "expression string, got %s",
                                      cost_keys[i], got);
            }
            n->cost[i] = v;
            continue;
        }
        if (!vars) {
            vars = arena_alloc(m->ar, sizeof *vars);
            *vars = (dim_vars){.ar = m->ar};
            kiln_status st = intern_vars(n->f, vars);
            if (st)
                return st;
        }
        int known = vars->n;
        const dim_expr *e = dim_expr_parse(vars, text, strlen(text));
        if (!e) {
            kiln_error_prefix("attrs.%s", cost_keys[i]);
            return KILN_ERR_INVALID;
        }
        if (vars->n != known)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "attrs.%s '%.64s' names '%s', which is no size variable of "
                                  "function '%s'",
                                  cost_keys[i], text, vars->names[known], n->func);
        if (m->dynamic) {
            n->cost_e[i] = e;
            continue;
        }
        if (dim_expr_eval(e, n->vars, &n->cost[i])) {
            kiln_error_prefix("attrs.%s", cost_keys[i]);
            return KILN_ERR_INVALID;
        }
    }
    return KILN_OK;
}

void graph_cost_eval(const kiln_model *m, int nid, const int64_t *vars, double out[2]) {
    const plan_node *n = &m->nodes[nid];
    for (int i = 0; i < 2; i++) {
        int64_t v = -1;
        if (n->cost_e[i] && vars) {
            int bound = 1;
            for (int k = 0; n->f && k < kiln_function_num_vars(n->f); k++)
                bound &= vars[k] >= 0 || !dim_expr_uses(n->cost_e[i], k);
            if (!bound)
                v = -1; /* not bound before the first run */
            else if (dim_expr_eval(n->cost_e[i], vars, &v)) {
                v = -1; /* an overflow: unknown */
                kiln_clear_error();
            }
        } else {
            v = n->cost[i];
        }
        out[i] = (double)v;
    }
}
