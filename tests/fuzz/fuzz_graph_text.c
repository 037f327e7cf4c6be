/* fuzz_graph_text.c: libFuzzer target for the graph IR's text parser. The
 * input, NUL-terminated, goes through kiln_graph_parse (no constants, so
 * meta[...] references are errors). A graph that parses is printed, and the
 * text must parse back and print the same (printer.c promises the parser
 * reads all of its output); then its types are inferred and the same round
 * trip is checked on the typed text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_round_trip.h"

/* Inputs past this are skipped: it bounds time and memory per input. */
#define FUZZ_MAX_INPUT (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    kiln_graph *g = kiln_graph_parse(text, NULL);
    free(text);
    if (!g)
        return 0;
    fuzz_graph_round_trip(g, "fuzz_graph_text", "as parsed");
    if (kiln_graph_infer_types(g) == KILN_OK)
        fuzz_graph_round_trip(g, "fuzz_graph_text", "typed");
    kiln_graph_free(g);
    return 0;
}
