/* contrib.h: the bring-your-own-codegen backends (kiln/byoc.h): their
 * registry, and the built-in ones, each in its own file (blas.c on
 * OpenBLAS, dnnl.c on oneDNN), compiled in where CMake found the library. */
#ifndef KILN_CONTRIB_H
#define KILN_CONTRIB_H

#include "../passes/passes.h"
#include "kiln/byoc.h"

/* The backend named `name`, or NULL with an error saying why: unknown
 * (with the known ones), or built in but left out of this build. */
KILN_HIDDEN const kiln_codegen_spec *contrib_find(const char *name);
/* The target's external backends (up to TGT_MAX_EXTERNAL), in order;
 * KILN_OK, or an error naming a missing one. */
KILN_HIDDEN kiln_status contrib_backends(const kiln_target *t, int *n,
                                         const kiln_codegen_spec **out);

/* The built-in backends: defined where the build found their library. */
#ifdef KILN_HAVE_OPENBLAS
KILN_HIDDEN extern const kiln_codegen_spec contrib_blas;
#endif
#ifdef KILN_HAVE_DNNL
KILN_HIDDEN extern const kiln_codegen_spec contrib_dnnl;
#endif

/* ---- what the backends' code generators share (emit.c) ------------------- */
/* A node's (first) tensor type. */
static inline const gtensor_type *contrib_ty(const gnode *n) {
    return &n->type.t[0];
}
/* 1 if n is one float32 tensor of static shape, the only kind the built-in
 * backends take; contrib_static_f32_call: call n and each of its inputs. */
KILN_HIDDEN int contrib_static_f32(const gnode *n);
KILN_HIDDEN int contrib_static_f32_call(const struct kiln_graph *g, const gnode *n);
/* The composite or op call n of body b, as the backend sees it: "nn.dense",
 * or the Composite name of a composite call. */
KILN_HIDDEN const char *contrib_call_kind(const gnode *n);
/* The node inside a composite's body (or n itself) whose op is `op`, or NULL. */
KILN_HIDDEN const gnode *contrib_inner(const gnode *n, const char *op);
/* The elements of a node's (tensor) type. */
KILN_HIDDEN int64_t contrib_numel(const gnode *n);
/* A C expression for the buffer of body node id: args[k] for the body's
 * variable k, its output for the function's result k, else a scratch
 * buffer "t<id>" the generated code allocates. The function-level
 * bookkeeping: which body node is which argument. */
typedef struct {
    const struct kiln_graph *body;
    int nin;       /* the call's inputs: args[0 .. nin) */
    int *var_arg;  /* body node -> its argument index, or -1 */
    int *out_arg;  /* body node -> the output argument it writes, or -1 */
    char *scratch; /* body node -> 1: needs a scratch buffer */
} contrib_fn;
/* Fill F for external call `call` of g; 0 with an error if the body's
 * tensors are not float32 with static shapes. */
KILN_HIDDEN int contrib_fn_init(contrib_fn *F, const struct kiln_graph *g, const gnode *call);
KILN_HIDDEN void contrib_fn_free(contrib_fn *F);
/* "((float *)args[3])" or "t12" for body node id. */
KILN_HIDDEN void contrib_buf(kstr *out, const contrib_fn *F, int id);
/* The function's opening (signature, scratch allocations) and closing. */
KILN_HIDDEN void contrib_fn_open(kstr *out, const contrib_fn *F, const char *symbol);
KILN_HIDDEN void contrib_fn_close(kstr *out, const contrib_fn *F);

#endif
