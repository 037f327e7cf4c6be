/* kernel_key.c: the key of a fused group before it is lowered, so that a
 * group like an earlier one (DenseNet's and ResNet's repeated blocks) reuses
 * that one's lowered kernel instead of being composed, scheduled and
 * lowered again. What the kernel of a group is made from: each member's op,
 * attributes and type and where its inputs come from (an earlier member, or
 * the group's k-th input), and the types of the group's inputs, which
 * become its placeholders; the small constants among them (at most
 * KEY_CONST_MAX elements: a shape, axes, a scalar) by value too, in case a
 * compute reads one. The target and the build options are the build's,
 * the same for every group. Names are left out: they only name things.
 * A group with a plugin op or a sub-graph attribute gets no key (a user's
 * compute may read anything); its kernel is still merged after lowering
 * when its code is the same (codegen_func_key). */
#include <string.h>

#include "../base/sha256.h"
#include "../graph/graph_internal.h"
#include "driver_internal.h"

#define KEY_CONST_MAX 64

static void put_type(kstr *s, const gtype *t) {
    kstr_printf(s, " type %d %d %d", t->known, t->is_tuple, t->n);
    for (int k = 0; t->known && k < t->n; k++) {
        kstr_printf(s, " %s[", kiln_dtype_name(t->t[k].dtype));
        for (int d = 0; d < t->t[k].ndim; d++) {
            const gdim *dd = &t->t[k].dims[d];
            if (dd->sym)
                kstr_printf(s, "%s$%s", d ? "," : "", dd->sym);
            else
                kstr_printf(s, "%s%lld", d ? "," : "", (long long)dd->v);
        }
        kstr_putc(s, ']');
    }
}

int driver_group_key(const struct kiln_graph *g, const int *members, int nmembers, const int *in,
                     int nin, unsigned char key[32]) {
    kstr s;
    kstr_init(&s);
    kstr_printf(&s, "group %d %d\n", nmembers, nin);
    int ok = 1;
    for (int i = 0; i < nin && ok; i++) {
        const gnode *n = g->nodes[in[i]];
        kstr_printf(&s, "in %d", (int)n->kind);
        put_type(&s, &n->type);
        if (n->kind == GN_CONST && n->value && kiln_ndarray_numel(n->value) <= KEY_CONST_MAX) {
            const unsigned char *b = kiln_ndarray_data(n->value);
            size_t len = (size_t)kiln_ndarray_numel(n->value) *
                         kiln_dtype_size(kiln_ndarray_dtype(n->value));
            kstr_puts(&s, " value ");
            for (size_t k = 0; k < len; k++)
                kstr_printf(&s, "%02x", b[k]);
        }
        kstr_putc(&s, '\n');
    }
    for (int m = 0; m < nmembers && ok; m++) {
        const gnode *n = g->nodes[members[m]];
        if (n->kind != GN_CALL || n->op->plugin) {
            ok = 0;
            break;
        }
        kstr_printf(&s, "op %s", n->op->name);
        for (int a = 0; a < n->nattr && ok; a++) {
            if (n->attrs[a].kind == GA_GRAPH) {
                ok = 0;
                break;
            }
            kstr_putc(&s, ' ');
            graph_print_attr(&s, &n->attrs[a]);
        }
        put_type(&s, &n->type);
        kstr_puts(&s, " from");
        for (int i = 0; i < n->nin; i++) {
            int src = n->in[i], where = -1;
            for (int k = 0; k < m && where < 0; k++)
                if (members[k] == src)
                    where = k;
            if (where >= 0) {
                kstr_printf(&s, " m%d", where);
                continue;
            }
            for (int k = 0; k < nin && where < 0; k++)
                if (in[k] == src)
                    where = k;
            if (where < 0) /* neither: not a group this key describes */
                ok = 0;
            kstr_printf(&s, " i%d", where);
        }
        kstr_putc(&s, '\n');
    }
    ok = ok && !s.oom;
    if (ok) {
        kiln_sha256 h;
        kiln_sha256_init(&h);
        kiln_sha256_update(&h, s.buf, s.len);
        kiln_sha256_final(&h, key);
    }
    kstr_free(&s);
    return ok;
}
