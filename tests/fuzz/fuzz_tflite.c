/* fuzz_tflite.c: libFuzzer target for the TFLite frontend. The input is a
 * .tflite FlatBuffer: the verifying reader and the schema layer
 * (tflite_model_load) check it, the importer converts it (calls on
 * constants fold through the reference interpreter), and a graph that
 * imports runs through the optimizing pass pipeline at -O3 for the host,
 * as `kiln compile` does before it generates code. The seeds are
 * tests/data/tflite's hand-made models, valid and malformed
 * (make_tflite_tests.py). */
#include <stddef.h>
#include <stdint.h>

#include "frontend/tflite_load.h"
#include "kiln/target.h"
#include "kiln/tflite.h"
#include "passes/passes.h"

/* Graphs past this many nodes are imported but not optimized. */
#define FUZZ_MAX_PASS_NODES 2048

/* Inputs past this are skipped: it bounds time and memory per input. */
#define FUZZ_MAX_INPUT (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    /* the reader alone first: every buffer it accepts lies in the input */
    tfl_model *m = tfl_model_load(data, size, "fuzz.tflite");
    if (m) {
        volatile unsigned char sum = 0;
        for (int i = 0; i < m->nbuffers; i++)
            for (size_t k = 0; k < m->buffers[i].size; k++)
                sum = (unsigned char)(sum + m->buffers[i].data[k]);
        (void)sum;
        tfl_model_free(m);
    }
    kiln_graph *g = kiln_tflite_import_bytes(data, size, "fuzz.tflite", NULL);
    if (g && kiln_graph_num_nodes(g) <= FUZZ_MAX_PASS_NODES) {
        static kiln_target *host;
        if (!host)
            host = kiln_target_host();
        pass_env env = {host, -1, 1 << 16};
        kiln_graph *opt = host ? pass_run_pipeline(g, 3, NULL, NULL, &env) : NULL;
        if (opt != g)
            kiln_graph_free(opt);
    }
    kiln_graph_free(g);
    return 0;
}
