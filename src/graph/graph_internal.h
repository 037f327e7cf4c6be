/* graph_internal.h: functions shared inside the graph layer and with the
 * layers above it (ops, passes, frontend, driver). */
#ifndef KILN_GRAPH_INTERNAL_H
#define KILN_GRAPH_INTERNAL_H

#include "graph.h"

/* An empty graph over `ops`. */
KILN_HIDDEN struct kiln_graph *graph_new(const kiln_op_registry *ops);

/* ---- the text syntax (text.c) ---------------------------------------------
 * A lexer shared by the attribute parser and the graph parser. */
typedef enum {
    TK_EOF,
    TK_IDENT,
    TK_INT,
    TK_FLOAT,
    TK_STRING,
    TK_LOCAL /* %name */,
    TK_GLOBAL /* @name */,
    TK_PUNCT,
    TK_COMMENT /* the text inside / * ... * / */,
    TK_ERROR
} tok_kind;

typedef struct {
    tok_kind kind;
    const char *start; /* into the source */
    int len;
    int64_t i;
    double f;
    int line, col;
} token;

typedef struct kiln_lexer {
    const char *src, *p;
    int line, col;
    token tok;        /* the current token */
    const char *what; /* for messages: "graph text" */
    /* the parser of a sub-graph attribute value (fn (...) { ... }), or NULL
       where the text cannot hold one: called at "fn", it leaves the lexer
       after the closing '}' */
    int (*parse_graph)(void *user, struct kiln_lexer *lx, struct kiln_graph **out);
    void *graph_user;
} lexer;

KILN_HIDDEN void lex_init(lexer *lx, const char *src, const char *what);
/* Advance to the next token (comments are returned as TK_COMMENT). */
KILN_HIDDEN void lex_next(lexer *lx);
/* 1 if the current token is punctuation c. */
KILN_HIDDEN int lex_is(const lexer *lx, char c);
/* Record "WHAT:LINE:COL: msg" as the error; returns 0. */
KILN_HIDDEN int lex_error(const lexer *lx, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Copy of the current token's text into the arena (strings unescaped). */
KILN_HIDDEN char *lex_text(const lexer *lx, arena *a);

/* Parse "name=value, name=value" (value: int, float with optional f,
 * [list], "string", or an identifier taken as a string) from the lexer's
 * current token until a token that is not an attribute. Returns the count
 * (attrs in the graph arena) or -1 with an error. */
KILN_HIDDEN int graph_parse_attr_list(struct kiln_graph *g, lexer *lx, gattr **out);
/* The same over a whole string. */
KILN_HIDDEN int graph_parse_attrs(struct kiln_graph *g, const char *text, gattr **out);
/* The parsed default of schema row s of op (cached), or NULL. */
KILN_HIDDEN const gattr *graph_default_attr(const kiln_op_def *op, const attr_schema *s);
/* Append "name=value" text for an attribute (a GA_GRAPH one as
 * name=fn(...), without its body: printer.c prints bodies whole). */
KILN_HIDDEN void graph_print_attr(kstr *out, const gattr *a);

/* Append a copy of node n (from another graph) to g with its inputs
 * renamed through map (old id -> new id); keeps name, attributes, type and
 * a constant shares its value. Returns the new id or -1. */
KILN_HIDDEN int graph_copy_node(struct kiln_graph *g, const gnode *n, const int *map);
/* A constant node owning `value` (taken, also on failure; NULL: -1, the
 * error already set), without the copy kiln_graph_const makes. */
KILN_HIDDEN int graph_const_take(struct kiln_graph *g, const char *name, kiln_ndarray *value);
/* Copy g's outputs into dst through map. */
KILN_HIDDEN kiln_status graph_copy_outputs(struct kiln_graph *dst, const struct kiln_graph *g,
                                           const int *map);

/* ---- types (infer.c) -------------------------------------------------------
 * Infer the type of node id from its inputs' types (kiln_graph_infer_types,
 * the InferType pass, does every node in order). */
KILN_HIDDEN kiln_status graph_infer_node(struct kiln_graph *g, int id);

/* ---- evaluation (eval.c) ----------------------------------------------------
 * Nodes computed on concrete values by the reference interpreter
 * (te/interp.h): the op's compute on placeholders of its inputs' types,
 * evaluated in C, with no compiler. What constant folding runs, and the
 * oracle tests compare compiled graphs against. max_elements caps the
 * elements one evaluation may hold (0: the interpreter's default). */

/* The outputs of call n (one per tensor of its type; the caller frees
 * them) given one value per input, which must match the inputs' types.
 * Errors name the node and its op. */
KILN_HIDDEN kiln_status graph_eval_call(const gnode *n, const kiln_ndarray *const *inputs,
                                        int64_t max_elements, kiln_ndarray **outs);
/* The same for node id of g, whose inputs are all constants. */
KILN_HIDDEN kiln_status graph_eval_node(const struct kiln_graph *g, int id, int64_t max_elements,
                                        kiln_ndarray **outs);
/* Turn call node id of g, whose inputs are all constants and whose type is
 * one tensor, into a constant holding its value: the same id, name and
 * type, so its consumers are unchanged (its inputs may become dead). */
KILN_HIDDEN kiln_status graph_fold_node(struct kiln_graph *g, int id, int64_t max_elements);
/* Every output of g given its inputs' values (inputs[i] for the i-th
 * variable node, in node order): a reference executor. Writes g->nout new
 * arrays to outs. */
KILN_HIDDEN kiln_status graph_eval(const struct kiln_graph *g, int nin,
                                   const kiln_ndarray *const *inputs, int64_t max_elements,
                                   kiln_ndarray **outs);

/* ---- printing and parsing whole graphs (printer.c, parser.c) --------------- */
KILN_HIDDEN char *graph_print(const struct kiln_graph *g);
KILN_HIDDEN struct kiln_graph *graph_parse(const char *text, const kiln_npz *constants,
                                           const kiln_op_registry *ops);

#endif
