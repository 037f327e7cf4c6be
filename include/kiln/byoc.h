/* kiln/byoc.h: bring your own codegen. A backend (oneDNN, a BLAS, an
 * accelerator's library) takes the sub-graphs it supports; kiln compiles
 * the rest. The graph goes through TVM's four passes:
 *   MergeComposite       each backend pattern's matches become composite
 *                        functions (Composite="dnnl.conv2d_bias_relu");
 *   AnnotateTarget       supported calls and composites are wrapped in
 *                        annotation.compiler_begin / compiler_end;
 *   MergeCompilerRegions neighbouring regions of one backend merge, where
 *                        that makes no cycle;
 *   PartitionGraph       each region becomes an `external` call of a
 *                        function with Compiler="dnnl" and a global symbol
 *                        (tvmgen_default_dnnl_main_0); composites left
 *                        outside regions are inlined back.
 * The backend's codegen then writes each external function as C that calls
 * its library, with the signature and module ABI of kiln's own kernels
 * (runtime/module_abi.h: int32_t f(void *const *args, const int64_t *vars),
 * its arguments first, its outputs last), compiled into the package's
 * mod.so and linked with the backend's library. A package records the
 * libraries it needs; the runtime names a missing one when it loads.
 *
 * Pick backends with a composite target: `--target "dnnl, llvm"` (the
 * last part is kiln's own target for the rest), or the build option
 * "byoc" = "dnnl,blas". Built in: dnnl (oneDNN, libdnnl-dev) and blas
 * (OpenBLAS, libopenblas-dev), where kiln was built with them. Plugins
 * (kiln/plugin.h) register more with kiln_codegen_register. */
#ifndef KILN_BYOC_H
#define KILN_BYOC_H

#include "kiln/graph.h"
#include "kiln/pattern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row of a backend's pattern table: matches of `pattern` (text form,
 * kiln/pattern.h) that `check` accepts (may be NULL; it gets the match's
 * root node) become composites named `name`, which should start with the
 * backend's name and a dot ("dnnl.conv2d_bias_relu"). Earlier rows win. */
typedef struct {
    const char *name;
    const char *pattern;
    kiln_pattern_pred check;
} kiln_codegen_pattern;

typedef struct kiln_codegen_spec {
    const char *name;    /* the Compiler name: "dnnl"; a C identifier */
    const char *summary; /* one line */
    int npatterns;
    const kiln_codegen_pattern *patterns;
    /* (optional) whether the backend takes call `node` of g on its own,
       outside any composite: 1 yes */
    int (*supported)(const kiln_graph *g, int node, void *user);
    /* The C definition of
           int32_t SYMBOL(void *const *args, const int64_t *vars)
       computing external call `node` of g (its Compiler is this backend):
       args are the call's inputs (compact row-major, their types those of
       the call's inputs), then its outputs. kiln_graph_node_op(g, input)
       is "const" for an input that is a constant of the graph (a weight).
       The text may #include the library's headers, may use the module's
       `kiln__api` (kiln_module_api: workspace_alloc, parallel_for), and
       returns 0 or KILN_KERNEL_ENOMEM. The body is the call's attribute
       "body": read it with kiln_graph_node_body. Malloc'd; NULL with an
       error (kiln_codegen_error). */
    char *(*codegen)(const kiln_graph *g, int node, const char *symbol, void *user);
    const char *cflags;  /* added to the module's compile (-I...), or NULL */
    const char *ldflags; /* added to its link ("-ldnnl"), or NULL */
    const char *library; /* the shared library the module then needs ("libdnnl.so.2") */
    void *user;
} kiln_codegen_spec;

/* Register a backend (copied; its name must be new). Sized as
 * kiln_op_register is, so older plugins keep working. */
KILN_API kiln_status kiln_codegen_register_sized(const kiln_codegen_spec *spec, size_t size);
#define kiln_codegen_register(spec) kiln_codegen_register_sized((spec), sizeof(kiln_codegen_spec))
/* The same, one piece at a time through an opaque handle, for bindings in
 * other languages that cannot lay out kiln_codegen_spec (the Python
 * package). Set what the spec has, then register: on success the builder
 * becomes the registry's and lives as long as the process; on an error it
 * is freed. Keys of _set: "summary", "cflags", "ldflags", "library". */
typedef struct kiln_codegen_builder kiln_codegen_builder;
KILN_API kiln_codegen_builder *kiln_codegen_builder_new(const char *name);
KILN_API void kiln_codegen_builder_free(kiln_codegen_builder *b);
KILN_API kiln_status kiln_codegen_builder_set(kiln_codegen_builder *b, const char *key,
                                              const char *value);
KILN_API kiln_status kiln_codegen_builder_add_pattern(kiln_codegen_builder *b, const char *name,
                                                      const char *pattern, kiln_pattern_pred check);
KILN_API kiln_status kiln_codegen_builder_set_supported(kiln_codegen_builder *b,
                                                        int (*supported)(const kiln_graph *g,
                                                                         int node, void *user));
KILN_API kiln_status kiln_codegen_builder_set_codegen(kiln_codegen_builder *b,
                                                      char *(*codegen)(const kiln_graph *g,
                                                                       int node, const char *symbol,
                                                                       void *user));
/* Register the backend; user goes to every callback. */
KILN_API kiln_status kiln_codegen_builder_register(kiln_codegen_builder *b, void *user);
/* The backends kiln knows, comma-separated ("dnnl, blas"). */
KILN_API const char *kiln_codegen_names(void);
/* Set an error for a codegen callback to return NULL with. */
KILN_API void kiln_codegen_error(const char *message);
/* The function body of a composite or external call, or NULL. */
KILN_API const kiln_graph *kiln_graph_node_body(const kiln_graph *g, int node);
/* The graph's outputs: count, and output k's node. */
KILN_API int kiln_graph_num_outputs(const kiln_graph *g);
KILN_API int kiln_graph_output(const kiln_graph *g, int k);

/* The four passes by hand (kiln_graph_compile runs them for a target's
 * backends): a new graph each, or NULL with an error. `backends` names
 * registered backends, comma-separated. */
KILN_API kiln_graph *kiln_graph_partition_for(const kiln_graph *g, const char *backends);

#ifdef __cplusplus
}
#endif
#endif
