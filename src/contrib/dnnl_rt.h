/* dnnl_rt.h: the C that every external function the dnnl backend writes
 * carries (dnnl.c pastes it in, once per translation unit): oneDNN's
 * engine and a stream per thread, and one operation (convolution, inner
 * product or matmul with its post-ops) made once, with the reorders
 * between the layouts its neighbours hold and the ones it wants. Built
 * against oneDNN 2.x's C API. This file is text for generated code: it is
 * never compiled into kiln itself. */
#ifndef KILN_DNNL_RT
#define KILN_DNNL_RT
#include <dnnl.h>
#include <pthread.h>
#include <stdio.h>

static dnnl_engine_t kiln_dnnl_eng;
static pthread_once_t kiln_dnnl_eng_once = PTHREAD_ONCE_INIT;

static void kiln_dnnl_eng_make(void) {
    if (dnnl_engine_create(&kiln_dnnl_eng, dnnl_cpu, 0) != dnnl_success)
        kiln_dnnl_eng = NULL;
}

static dnnl_engine_t kiln_dnnl_engine(void) {
    pthread_once(&kiln_dnnl_eng_once, kiln_dnnl_eng_make);
    return kiln_dnnl_eng;
}

/* A stream for one call of a function (threads may call it at once). */
static dnnl_stream_t kiln_dnnl_stream(void) {
    dnnl_stream_t s = NULL;
    if (kiln_dnnl_engine() &&
        dnnl_stream_create(&s, kiln_dnnl_engine(), dnnl_stream_default_flags) != dnnl_success)
        s = NULL;
    return s;
}

/* At unload (dlclose of the package's module): the engine goes. */
__attribute__((destructor)) static void kiln_dnnl_eng_free(void) {
    if (kiln_dnnl_eng)
        dnnl_engine_destroy(kiln_dnnl_eng);
    kiln_dnnl_eng = NULL;
}

static int kiln_dnnl_fail(const char *fn, const char *what, dnnl_status_t st) {
    fprintf(stderr, "kiln: %s: oneDNN failed to %s (status %d)\n", fn, what, (int)st);
    return 1;
}

/* md in tag `tag` ("plain": a, ab, abc, ... by rank; or any) */
static dnnl_memory_desc_t kiln_dnnl_md(int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag) {
    dnnl_memory_desc_t md;
    if (tag == dnnl_format_tag_undef) {
        static const dnnl_format_tag_t plain[7] = {
            dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
        tag = plain[nd];
    }
    dnnl_memory_desc_init_by_tag(&md, nd, dims, dnnl_f32, tag);
    return md;
}

typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t src, wei, bias, dst;             /* as the primitive takes them */
    dnnl_memory_desc_t src_in, wei_in, dst_out, sum_in; /* as its neighbours hold them */
    dnnl_primitive_t re_src, re_wei, re_dst, re_sum;    /* NULL: the same layout */
    void *wei_cache;                                    /* a constant weight, reordered once */
    int has_bias, has_sum, wei_const;
} kiln_dnnl_op;

/* A reorder from a to b, or NULL when they are one layout. */
static int kiln_dnnl_reorder(const char *fn, dnnl_primitive_t *r, const dnnl_memory_desc_t *a,
                             const dnnl_memory_desc_t *b) {
    *r = NULL;
    if (dnnl_memory_desc_equal(a, b))
        return 0;
    dnnl_primitive_desc_t pd;
    dnnl_status_t st =
        dnnl_reorder_primitive_desc_create(&pd, a, kiln_dnnl_engine(), b, kiln_dnnl_engine(), NULL);
    if (st != dnnl_success)
        return kiln_dnnl_fail(fn, "make a reorder", st);
    st = dnnl_primitive_create(r, pd);
    dnnl_primitive_desc_destroy(pd);
    return st != dnnl_success ? kiln_dnnl_fail(fn, "make a reorder", st) : 0;
}

static int kiln_dnnl_exec(const char *fn, dnnl_stream_t s, dnnl_primitive_t p, int n,
                          const int *kinds, const dnnl_memory_desc_t *const *mds,
                          void *const *ptrs) {
    dnnl_memory_t mem[6];
    dnnl_exec_arg_t args[6];
    dnnl_status_t st = s ? dnnl_success : dnnl_runtime_error;
    int made = 0;
    for (; made < n && st == dnnl_success; made++) {
        st = dnnl_memory_create(&mem[made], mds[made], kiln_dnnl_engine(), ptrs[made]);
        args[made].arg = kinds[made];
        args[made].memory = mem[made];
        if (st != dnnl_success)
            break;
    }
    if (st == dnnl_success)
        st = dnnl_primitive_execute(p, s, n, args);
    if (st == dnnl_success)
        st = dnnl_stream_wait(s);
    for (int i = 0; i < made && i < n; i++)
        dnnl_memory_destroy(mem[i]);
    return st != dnnl_success ? kiln_dnnl_fail(fn, "run a primitive", st) : 0;
}

static int kiln_dnnl_move(const char *fn, dnnl_stream_t s, dnnl_primitive_t r,
                          const dnnl_memory_desc_t *a, void *pa, const dnnl_memory_desc_t *b,
                          void *pb) {
    int kinds[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    const dnnl_memory_desc_t *mds[2] = {a, b};
    void *ptrs[2] = {pa, pb};
    return kiln_dnnl_exec(fn, s, r, 2, kinds, mds, ptrs);
}

/* What make created (at unload). */
static void kiln_dnnl_op_free(kiln_dnnl_op *op) {
    dnnl_primitive_t *ps[5] = {&op->prim, &op->re_src, &op->re_wei, &op->re_dst, &op->re_sum};
    for (int i = 0; i < 5; i++)
        if (*ps[i]) {
            dnnl_primitive_destroy(*ps[i]);
            *ps[i] = NULL;
        }
    free(op->wei_cache);
    op->wei_cache = NULL;
}

/* Make op's primitive from descriptor d with post-ops po (taken), and the
 * reorders from src_in, wei_in and sum_in, and to dst_out (set before; a
 * dst_out with format_kind any becomes the primitive's dst). The constant
 * weight w (when wei_const) is reordered now. */
static int kiln_dnnl_make(const char *fn, kiln_dnnl_op *op, const_dnnl_op_desc_t d,
                          dnnl_post_ops_t po, void *w) {
    dnnl_primitive_attr_t attr;
    dnnl_status_t st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success && po)
        st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (po)
        dnnl_post_ops_destroy(po);
    dnnl_primitive_desc_t pd = NULL;
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(&pd, d, attr, kiln_dnnl_engine(), NULL);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success)
        return kiln_dnnl_fail(fn, "make a primitive descriptor", st);
    op->src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    op->wei = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (op->has_bias)
        op->bias = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
    op->dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    st = dnnl_primitive_create(&op->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return kiln_dnnl_fail(fn, "make a primitive", st);
    if (op->dst_out.format_kind == dnnl_format_kind_any)
        op->dst_out = op->dst;
    if (kiln_dnnl_reorder(fn, &op->re_src, &op->src_in, &op->src) ||
        kiln_dnnl_reorder(fn, &op->re_wei, &op->wei_in, &op->wei) ||
        kiln_dnnl_reorder(fn, &op->re_dst, &op->dst, &op->dst_out) ||
        (op->has_sum && kiln_dnnl_reorder(fn, &op->re_sum, &op->sum_in, &op->dst)))
        return 1;
    if (op->wei_const && op->re_wei) {
        dnnl_stream_t s = kiln_dnnl_stream();
        op->wei_cache = malloc(dnnl_memory_desc_get_size(&op->wei));
        int bad = !s || !op->wei_cache ||
                  kiln_dnnl_move(fn, s, op->re_wei, &op->wei_in, w, &op->wei, op->wei_cache);
        if (s)
            dnnl_stream_destroy(s);
        return bad;
    }
    return 0;
}

/* Run op: src in src_in's layout, weight w (as wei_in), bias, the summand
 * (as sum_in) and dst (dst_out's layout). */
static int kiln_dnnl_run(const char *fn, dnnl_stream_t strm, kiln_dnnl_op *op, void *src, void *w,
                         void *bias, void *sum, void *dst) {
    void *s = src, *wt = op->wei_cache ? op->wei_cache : w, *d = dst;
    void *tmp[3] = {NULL, NULL, NULL};
    int bad = 0;
    if (op->re_src) {
        tmp[0] = s = kiln__api->workspace_alloc(dnnl_memory_desc_get_size(&op->src));
        bad = !s || kiln_dnnl_move(fn, strm, op->re_src, &op->src_in, src, &op->src, s);
    }
    if (!bad && op->re_wei && !op->wei_cache) {
        tmp[1] = wt = kiln__api->workspace_alloc(dnnl_memory_desc_get_size(&op->wei));
        bad = !wt || kiln_dnnl_move(fn, strm, op->re_wei, &op->wei_in, w, &op->wei, wt);
    }
    if (!bad && op->re_dst) {
        tmp[2] = d = kiln__api->workspace_alloc(dnnl_memory_desc_get_size(&op->dst));
        bad = !d;
    }
    if (!bad && op->has_sum) {
        if (op->re_sum)
            bad = kiln_dnnl_move(fn, strm, op->re_sum, &op->sum_in, sum, &op->dst, d);
        else if (sum != d)
            memcpy(d, sum, dnnl_memory_desc_get_size(&op->dst));
    }
    if (!bad) {
        int kinds[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
        const dnnl_memory_desc_t *mds[4] = {&op->src, &op->wei, &op->dst, &op->bias};
        void *ptrs[4] = {s, wt, d, bias};
        bad = kiln_dnnl_exec(fn, strm, op->prim, op->has_bias ? 4 : 3, kinds, mds, ptrs);
    }
    if (!bad && op->re_dst)
        bad = kiln_dnnl_move(fn, strm, op->re_dst, &op->dst, d, &op->dst_out, dst);
    for (int i = 0; i < 3; i++)
        if (tmp[i])
            kiln__api->workspace_free(tmp[i]);
    return bad;
}
#endif
