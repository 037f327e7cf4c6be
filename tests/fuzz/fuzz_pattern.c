/* fuzz_pattern.c: libFuzzer target for the pattern language (kiln/pattern.h).
 * The input's first line is a pattern in its text form, the rest a graph in
 * the graph IR's text. A pattern that parses is printed, and the text must
 * parse back and print the same. A graph that parses and types is matched
 * against the pattern at every node, then partitioned on it into composite
 * functions, whose printed text must parse back and print the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_round_trip.h"
#include "kiln/pattern.h"

/* Inputs past this are skipped: it bounds time and memory per input. */
#define FUZZ_MAX_INPUT (1u << 16)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_pattern(const kiln_pattern *p) {
    char *t1 = kiln_pattern_print(p);
    if (!t1)
        return;
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *q = s ? kiln_pattern_parse(s, t1) : NULL;
    if (!q) {
        fprintf(stderr, "fuzz_pattern: printed pattern does not parse back: %s\n%s\n",
                kiln_last_error(), t1);
        abort();
    }
    char *t2 = kiln_pattern_print(q);
    if (t2 && strcmp(t1, t2)) {
        fprintf(stderr, "fuzz_pattern: print(parse(print(p))) differs:\n%s\n%s\n", t1, t2);
        abort();
    }
    free(t1);
    free(t2);
    kiln_pattern_set_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *nl = strchr(text, '\n');
    if (nl)
        *nl = 0;
    kiln_pattern_set *s = kiln_pattern_set_new();
    kiln_pattern *p = s ? kiln_pattern_parse(s, text) : NULL;
    if (p)
        check_pattern(p);
    kiln_graph *g = p && nl ? kiln_graph_parse(nl + 1, NULL) : NULL;
    if (g && kiln_graph_infer_types(g) == KILN_OK) {
        for (int id = 0; id < kiln_graph_num_nodes(g); id++)
            kiln_match_free(kiln_pattern_match(p, g, id));
        kiln_graph *r = kiln_graph_partition(g, p, "Composite=\"fuzz\"", NULL, NULL);
        if (r)
            fuzz_graph_round_trip(r, "fuzz_pattern", "partitioned");
        kiln_graph_free(r);
    }
    kiln_graph_free(g);
    kiln_pattern_set_free(s);
    free(text);
    return 0;
}
