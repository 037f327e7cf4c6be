/* json.h: a small strict JSON parser (RFC 8259) that builds a tree in an
 * arena, with accessors that accept NULL and wrong types (so a caller can
 * chain them and check once), and string escaping for writers.
 * Limits: nesting depth JSON_MAX_DEPTH, input size JSON_MAX_SIZE. */
#ifndef KILN_JSON_H
#define KILN_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "base_internal.h"

#define JSON_MAX_DEPTH 128 /* a plan with bodies nested 16 deep needs about 90 */
#define JSON_MAX_SIZE ((size_t)1 << 30)

typedef enum {
    JSON_NULL,
    JSON_BOOL,
    JSON_INT,    /* an integral number that fits int64 (no '.', 'e') */
    JSON_DOUBLE, /* any other number */
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json json;
struct json {
    json_type type;
    int line, col;     /* where the value starts, 1-based */
    int64_t i;         /* JSON_INT, JSON_BOOL (0/1) */
    double d;          /* JSON_DOUBLE, and JSON_INT as a double */
    const char *s;     /* JSON_STRING: NUL-terminated UTF-8 (may hold \u0000) */
    size_t slen;       /* JSON_STRING: bytes, without the NUL */
    int n;             /* JSON_ARRAY/JSON_OBJECT: number of items */
    json **items;      /* the items (object values, in source order) */
    const char **keys; /* JSON_OBJECT: the keys; unique */
    json *next;        /* parser scratch */
};

/* Parse text[0..len) as one JSON value. `what` names the input in errors
 * ("mod.json:3:14: expected ','"). NULL (with an error) on bad input. */
KILN_HIDDEN json *json_parse(arena *a, const char *text, size_t len, const char *what);

/* Name of a type, for messages: "null", "boolean", "integer", "number", ... */
KILN_HIDDEN const char *json_type_name(json_type t);
/* The value of `key` in object v, or NULL (v NULL or not an object). */
KILN_HIDDEN const json *json_get(const json *v, const char *key);
/* Items of an array or object, or -1 if v is neither (or NULL). */
KILN_HIDDEN int json_len(const json *v);
/* Item i of an array or object, or NULL. */
KILN_HIDDEN const json *json_at(const json *v, int i);
/* 1 and *out if v is an integer, else 0. */
KILN_HIDDEN int json_int(const json *v, int64_t *out);
/* The string if v is a string, else NULL. */
KILN_HIDDEN const char *json_str(const json *v);
/* 1 if v is not NULL and has type t. */
KILN_HIDDEN int json_is(const json *v, json_type t);

/* Append s as a quoted JSON string (escaping '"', '\\' and control
 * characters; other bytes pass through). */
KILN_HIDDEN void json_write_string(kstr *out, const char *s);

#endif
