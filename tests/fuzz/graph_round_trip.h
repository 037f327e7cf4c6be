/* graph_round_trip.h: the fuzz targets' check of the graph IR's printer
 * and parser (printer.c promises the parser reads all of its output). */
#ifndef KILN_FUZZ_GRAPH_ROUND_TRIP_H
#define KILN_FUZZ_GRAPH_ROUND_TRIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/graph.h"

/* Abort (naming `who` and `stage`) unless print(parse(print(g))) == print(g). */
static void fuzz_graph_round_trip(const kiln_graph *g, const char *who, const char *stage) {
    char *t1 = kiln_graph_print(g);
    if (!t1)
        return; /* out of memory */
    kiln_graph *g2 = kiln_graph_parse(t1, NULL);
    if (!g2) {
        fprintf(stderr, "%s: %s: printed text does not parse back: %s\n%s\n", who, stage,
                kiln_last_error(), t1);
        abort();
    }
    char *t2 = kiln_graph_print(g2);
    if (t2 && strcmp(t1, t2) != 0) {
        fprintf(stderr, "%s: %s: print(parse(print(g))) differs:\n%s\n---\n%s\n", who, stage, t1,
                t2);
        abort();
    }
    free(t1);
    free(t2);
    kiln_graph_free(g2);
}

#endif
