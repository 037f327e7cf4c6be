/* blas.c: the `blas` backend (kiln/byoc.h) on OpenBLAS's CBLAS: nn.dense
 * (with a following bias add, composite blas.dense_bias) and
 * nn.batch_matmul (numpy matmul, batch dims broadcast) in float32, each a
 * cblas_sgemm call (one per batch). The rest of a region's ops stay
 * kiln's: this backend takes only these. */
#include <stdlib.h>
#include <string.h>

#include "contrib.h"

#ifdef KILN_HAVE_OPENBLAS

static int dense_ok(const struct kiln_graph *g, const gnode *n) {
    const char *wl = graph_attr_str(n, "weight_layout", "NK");
    return (!strcmp(wl, "NK") || !strcmp(wl, "KN")) && contrib_static_f32_call(g, n);
}

static int matmul_ok(const struct kiln_graph *g, const gnode *n) {
    return contrib_static_f32_call(g, n);
}

static int blas_supported(const kiln_graph *g, int node, void *user) {
    (void)user;
    const gnode *n = g->nodes[node];
    if (!strcmp(n->op->name, "nn.dense"))
        return dense_ok(g, n);
    if (!strcmp(n->op->name, "nn.batch_matmul"))
        return matmul_ok(g, n);
    return 0;
}

/* add(dense, bias): a bias of the dense's units, broadcast along its last axis. */
static int dense_bias_ok(const kiln_graph *g, int node, void *user) {
    (void)user;
    const gnode *add = g->nodes[node];
    int d = g->nodes[add->in[0]]->kind == GN_CALL ? 0 : 1;
    const gnode *dense = g->nodes[add->in[d]], *bias = g->nodes[add->in[1 - d]];
    if (strcmp(dense->op->name, "nn.dense") || !dense_ok(g, dense) || !contrib_static_f32(bias) ||
        !contrib_static_f32(add) || !gtype_equal(&add->type, &dense->type))
        return 0;
    int64_t units = contrib_ty(dense)->dims[contrib_ty(dense)->ndim - 1].v;
    return contrib_numel(bias) == units && contrib_ty(bias)->ndim >= 1 &&
           contrib_ty(bias)->dims[contrib_ty(bias)->ndim - 1].v == units;
}

static const kiln_codegen_pattern k_patterns[] = {
    {"blas.dense_bias", "add(nn.dense(*, *), const)", dense_bias_ok},
};

/* y = x W^T (+ bias) for dense call `dense` of body b, y body node `out`. */
static void emit_dense(kstr *s, const contrib_fn *F, const struct kiln_graph *b, int out,
                       const gnode *dense, int x, int w, int bias) {
    const gtensor_type *xt = contrib_ty(b->nodes[x]);
    int64_t k = xt->dims[xt->ndim - 1].v;
    int64_t m = contrib_numel(b->nodes[x]) / (k ? k : 1);
    int64_t n = contrib_ty(b->nodes[out])->dims[contrib_ty(b->nodes[out])->ndim - 1].v;
    int kn = !strcmp(graph_attr_str(dense, "weight_layout", "NK"), "KN");
    kstr_printf(s, "    cblas_sgemm(CblasRowMajor, CblasNoTrans, %s, %lld, %lld, %lld, 1.0f, ",
                kn ? "CblasNoTrans" : "CblasTrans", (long long)m, (long long)n, (long long)k);
    contrib_buf(s, F, x);
    kstr_printf(s, ", %lld, ", (long long)k);
    contrib_buf(s, F, w);
    kstr_printf(s, ", %lld, 0.0f, ", (long long)(kn ? n : k));
    contrib_buf(s, F, out);
    kstr_printf(s, ", %lld);\n", (long long)n);
    if (bias < 0)
        return;
    kstr_puts(s, "    {\n        float *y = ");
    contrib_buf(s, F, out);
    kstr_puts(s, ";\n        const float *bias = ");
    contrib_buf(s, F, bias);
    kstr_printf(s,
                ";\n        for (int64_t i = 0; i < %lld; i++)\n"
                "            for (int64_t j = 0; j < %lld; j++) y[i * %lld + j] += bias[j];\n"
                "    }\n",
                (long long)m, (long long)n, (long long)n);
}

/* numpy matmul of a [..., M, K] and b [..., K, N] (either transposed by
 * its attribute), the batch dims broadcast: one sgemm per output batch. */
static void emit_matmul(kstr *s, const contrib_fn *F, const struct kiln_graph *b, int out,
                        const gnode *mm) {
    const gtensor_type *at = contrib_ty(b->nodes[mm->in[0]]), *bt = contrib_ty(b->nodes[mm->in[1]]),
                       *ot = contrib_ty(b->nodes[out]);
    int ta = (int)graph_attr_int(mm, "transpose_a", 0),
        tb = (int)graph_attr_int(mm, "transpose_b", 0);
    int64_t m = ot->dims[ot->ndim - 2].v, n = ot->dims[ot->ndim - 1].v;
    int64_t k = at->dims[at->ndim - (ta ? 2 : 1)].v;
    int nb = ot->ndim - 2;
    /* each output batch index's offsets into a and b, by broadcasting */
    int64_t batches = 1;
    for (int d = 0; d < nb; d++)
        batches *= ot->dims[d].v;
    kstr_printf(s, "    for (int64_t ob = 0; ob < %lld; ob++) {\n", (long long)batches);
    kstr_puts(s, "        int64_t rem = ob, ao = 0, bo = 0, idx;\n        (void)rem, (void)idx;\n");
    int64_t astride = m * k, bstride = k * n;
    for (int d = nb - 1; d >= 0; d--) {
        int da = d - (ot->ndim - at->ndim), db = d - (ot->ndim - bt->ndim);
        kstr_printf(s, "        idx = rem %% %lld; rem /= %lld;\n", (long long)ot->dims[d].v,
                    (long long)ot->dims[d].v);
        if (da >= 0 && at->dims[da].v != 1)
            kstr_printf(s, "        ao += idx * %lld;\n", (long long)astride);
        if (db >= 0 && bt->dims[db].v != 1)
            kstr_printf(s, "        bo += idx * %lld;\n", (long long)bstride);
        if (da >= 0)
            astride *= at->dims[da].v;
        if (db >= 0)
            bstride *= bt->dims[db].v;
    }
    kstr_printf(s, "        cblas_sgemm(CblasRowMajor, %s, %s, %lld, %lld, %lld, 1.0f, ",
                ta ? "CblasTrans" : "CblasNoTrans", tb ? "CblasTrans" : "CblasNoTrans",
                (long long)m, (long long)n, (long long)k);
    contrib_buf(s, F, mm->in[0]);
    kstr_printf(s, " + ao, %lld, ", (long long)(ta ? m : k));
    contrib_buf(s, F, mm->in[1]);
    kstr_printf(s, " + bo, %lld, 0.0f, ", (long long)(tb ? k : n));
    contrib_buf(s, F, out);
    kstr_printf(s, " + ob * %lld, %lld);\n    }\n", (long long)(m * n), (long long)n);
}

static char *blas_codegen(const kiln_graph *g, int node, const char *symbol, void *user) {
    (void)user;
    contrib_fn F;
    if (!contrib_fn_init(&F, g, g->nodes[node]))
        return NULL;
    const struct kiln_graph *b = F.body;
    kstr s;
    kstr_init(&s);
    kstr_puts(&s, "#include <cblas.h>\n");
    contrib_fn_open(&s, &F, symbol);
    int ok = 1;
    for (int id = 0; id < b->n && ok; id++) {
        const gnode *n = b->nodes[id];
        if (n->kind != GN_CALL)
            continue;
        const char *kind = contrib_call_kind(n);
        if (!strcmp(kind, "nn.dense")) {
            emit_dense(&s, &F, b, id, n, n->in[0], n->in[1], -1);
        } else if (!strcmp(kind, "nn.batch_matmul")) {
            emit_matmul(&s, &F, b, id, n);
        } else if (!strcmp(kind, "blas.dense_bias")) {
            const gnode *dense = contrib_inner(n, "nn.dense");
            const struct kiln_graph *cb = graph_attr_graph(n, "body");
            /* body variable v stands for the composite's argument n->in[v] */
            int x = -1, w = -1, bias = -1;
            for (int j = 0, v = 0; j < cb->n; j++)
                if (cb->nodes[j]->kind == GN_VAR) {
                    int arg = n->in[v++];
                    if (j == dense->in[0])
                        x = arg;
                    else if (j == dense->in[1])
                        w = arg;
                    else
                        bias = arg;
                }
            ok = x >= 0 && w >= 0 && bias >= 0;
            if (ok)
                emit_dense(&s, &F, b, id, dense, x, w, bias);
        } else {
            ok = 0;
        }
        if (!ok)
            kiln_set_error(KILN_ERR_UNSUPPORTED, "blas: cannot generate '%s' (node '%s')", kind,
                           n->name);
    }
    contrib_fn_close(&s, &F);
    contrib_fn_free(&F);
    if (!ok) {
        kstr_free(&s);
        return NULL;
    }
    return kstr_take(&s);
}

const kiln_codegen_spec contrib_blas = {
    .name = "blas",
    .summary = "OpenBLAS: dense, matmul and batch matmul in float32 through cblas_sgemm",
    .npatterns = (int)(sizeof k_patterns / sizeof k_patterns[0]),
    .patterns = k_patterns,
    .supported = blas_supported,
    .codegen = blas_codegen,
    .cflags = KILN_OPENBLAS_CFLAGS,
    .ldflags = KILN_OPENBLAS_LDFLAGS,
    .library = "libopenblas.so.0",
};
#endif
