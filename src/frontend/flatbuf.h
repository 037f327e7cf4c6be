/* flatbuf.h: a verifying FlatBuffers reader. Every access checks its
 * offsets and lengths against the buffer before it reads, and reads
 * through memcpy (no alignment is assumed), so a malformed buffer gives an
 * error, never a read outside it. Nothing is cached: a table, vector or
 * string is a position in the buffer, checked when it is made. Shared and
 * overlapping vtables are legal FlatBuffers and harmless here (nothing is
 * written); a cycle cannot loop, because the reader follows only the
 * fixed structure of the schema it is used with (tflite_load.c), never
 * offsets found in the data for as long as they lead somewhere. */
#ifndef KILN_FRONTEND_FLATBUF_H
#define KILN_FRONTEND_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

#include "../base/base_internal.h"

/* Buffers of 2 GiB or more are refused: FlatBuffers' offsets are 32-bit. */
#define FB_MAX_SIZE ((size_t)0x7fffffff)

typedef struct {
    const uint8_t *data;
    size_t len;
} fb_buf;

/* A table: its position and its vtable's, with both lengths checked. */
typedef struct {
    const fb_buf *b;
    size_t pos, vt;
    uint16_t vtlen, tlen;
} fb_table;

/* A vector: the position of its first element and its element count;
 * n * elem bytes lie inside the buffer. */
typedef struct {
    const fb_buf *b;
    size_t pos;
    uint32_t n;
    size_t elem;
} fb_vec;

/* The root table of b, after checking the file identifier (4 bytes at 4,
 * NULL: not checked); 0, or -1 with an error saying what is wrong. */
KILN_HIDDEN int fb_root(const fb_buf *b, const char *ident, fb_table *out);

/* Scalars of field `slot` (the field's index in the schema, a union's
 * type and value counting as two) of t, or def when the field is absent;
 * -1 in *bad (left alone otherwise) when the field lies outside its table. */
KILN_HIDDEN int64_t fb_int(const fb_table *t, int slot, int size, int is_signed, int64_t def,
                           int *bad);
KILN_HIDDEN float fb_float(const fb_table *t, int slot, float def, int *bad);

/* Sub-table, vector (of elem-byte elements) and string fields: 1 and *out,
 * 0 if the field is absent, -1 with an error if it is malformed. */
KILN_HIDDEN int fb_field_table(const fb_table *t, int slot, fb_table *out);
KILN_HIDDEN int fb_field_vec(const fb_table *t, int slot, size_t elem, fb_vec *out);
/* A string: *s points into the buffer (not NUL-terminated there if the
 * buffer is malformed: use *n), *n its byte length. */
KILN_HIDDEN int fb_field_str(const fb_table *t, int slot, const char **s, size_t *n);

/* Element i (< v->n) of a vector of scalars, of tables (0, or -1 with an
 * error) and of strings. */
KILN_HIDDEN int64_t fb_vec_int(const fb_vec *v, uint32_t i, int is_signed);
KILN_HIDDEN float fb_vec_float(const fb_vec *v, uint32_t i);
KILN_HIDDEN int fb_vec_table(const fb_vec *v, uint32_t i, fb_table *out);

#endif
