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

#include "kiln/graph.h"

/* Inputs past this are skipped: it bounds time and memory per input. */
#define FUZZ_MAX_INPUT (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort unless print(parse(print(g))) == print(g). */
static void check_round_trip(const kiln_graph *g, const char *stage) {
    char *t1 = kiln_graph_print(g);
    if (!t1)
        return; /* out of memory */
    kiln_graph *g2 = kiln_graph_parse(t1, NULL);
    if (!g2) {
        fprintf(stderr, "fuzz_graph_text: %s: printed text does not parse back: %s\n%s\n", stage,
                kiln_last_error(), t1);
        abort();
    }
    char *t2 = kiln_graph_print(g2);
    if (t2 && strcmp(t1, t2) != 0) {
        fprintf(stderr, "fuzz_graph_text: %s: print(parse(print(g))) differs:\n%s\n---\n%s\n",
                stage, t1, t2);
        abort();
    }
    free(t1);
    free(t2);
    kiln_graph_free(g2);
}

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
    check_round_trip(g, "as parsed");
    if (kiln_graph_infer_types(g) == KILN_OK)
        check_round_trip(g, "typed");
    kiln_graph_free(g);
    return 0;
}
