/* fuzz_onnx.c: libFuzzer target for the bottom of the ONNX frontend. The
 * input is a serialized ModelProto: onnx_model_parse checks it, then every
 * tensor it holds (graph initializers and tensor attributes such as
 * Constant's value, in nested graphs too) goes through onnx_tensor_to_ndarray.
 * External data is refused (dir NULL), so nothing is read from disk. Then
 * the importer converts the model (calls on constants fold through the
 * reference interpreter: division traps, overflowing shapes), and a graph
 * that imports runs through the optimizing pass pipeline at -O3 for the
 * host (type inference, FoldConstant, AlterOpLayout, ...): everything
 * `kiln compile` does before it schedules and generates code. */
#include <stddef.h>
#include <stdint.h>

#include "frontend/onnx_import.h"
#include "frontend/onnx_load.h"
#include "kiln/target.h"
#include "passes/passes.h"

/* Graphs past this many nodes are imported but not optimized, to keep the
 * executions per second up (deep graphs have seeds of their own). */
#define FUZZ_MAX_PASS_NODES 2048

/* Inputs past this are skipped: it bounds time and memory per input (a
 * tensor's array is never larger than the bytes that encode it). */
#define FUZZ_MAX_INPUT (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void convert(const onnx_model *m, const Onnx__TensorProto *t) {
    kiln_ndarray *a = t ? onnx_tensor_to_ndarray(m, t, "tensor") : NULL;
    if (a) {
        /* Read every byte of the result so ASan sees a short buffer. */
        const unsigned char *p = kiln_ndarray_data(a);
        size_t n = (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(kiln_ndarray_dtype(a));
        volatile unsigned char sum = 0;
        for (size_t i = 0; i < n; i++)
            sum = (unsigned char)(sum + p[i]);
        (void)sum;
    }
    kiln_ndarray_free(a);
}

static void walk_graph(const onnx_model *m, const Onnx__GraphProto *g, int depth) {
    if (!g || depth > ONNX_MAX_NESTING)
        return;
    for (size_t i = 0; i < g->n_initializer; i++)
        convert(m, g->initializer[i]);
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t j = 0; j < n->n_attribute; j++) {
            const Onnx__AttributeProto *at = n->attribute[j];
            convert(m, at->t);
            for (size_t k = 0; k < at->n_tensors; k++)
                convert(m, at->tensors[k]);
            walk_graph(m, at->g, depth + 1);
            for (size_t k = 0; k < at->n_graphs; k++)
                walk_graph(m, at->graphs[k], depth + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    onnx_model *m = onnx_model_parse(data, size, "fuzz.onnx", NULL);
    if (!m)
        return 0;
    walk_graph(m, onnx_model_proto(m)->graph, 0);
    /* the importer on the same model, folding only small constants */
    kiln_graph *g = onnx_import_model(m, "fuzz.onnx", NULL, 1 << 16);
    if (g && kiln_graph_num_nodes(g) <= FUZZ_MAX_PASS_NODES) {
        static kiln_target *host;
        if (!host)
            host = kiln_target_host();
        /* FoldConstant as small as the importer's folding: a fold of 2^24
           elements takes seconds under the sanitizers (a libFuzzer timeout),
           which is the fold's size, not a bug */
        pass_env env = {host, -1, 1 << 16};
        kiln_graph *opt = host ? pass_run_pipeline(g, 3, NULL, NULL, &env) : NULL;
        if (opt != g)
            kiln_graph_free(opt);
    }
    kiln_graph_free(g);
    onnx_model_free(m);
    return 0;
}
