/* flatbuf.c: the verifying FlatBuffers reader (flatbuf.h). A FlatBuffer
 * is little-endian: a table starts with a signed 32-bit offset back to its
 * vtable (u16 vtable length, u16 table length, one u16 offset per field,
 * 0 for an absent one); offsets to tables, vectors and strings are
 * unsigned 32-bit, relative to where they are stored; a vector is a u32
 * count and its elements, a string a vector of bytes and a NUL. */
#include "flatbuf.h"

#include <stdio.h>
#include <string.h>

static uint32_t rd_u32(const fb_buf *b, size_t pos) {
    uint32_t v;
    memcpy(&v, b->data + pos, 4);
    return v;
}

static uint16_t rd_u16(const fb_buf *b, size_t pos) {
    uint16_t v;
    memcpy(&v, b->data + pos, 2);
    return v;
}

/* 1 if n bytes from pos lie inside b. */
static int inside(const fb_buf *b, size_t pos, size_t n) {
    return pos <= b->len && n <= b->len - pos;
}

static int fail(const char *what, size_t pos) {
    kiln_set_error(KILN_ERR_IO, "malformed FlatBuffer: %s at byte %zu", what, pos);
    return -1;
}

/* The table at pos, with its vtable checked. */
static int table_at(const fb_buf *b, size_t pos, fb_table *out) {
    if (!inside(b, pos, 4))
        return fail("table offset past the end", pos);
    if (pos % 4)
        return fail("misaligned table", pos);
    int32_t so;
    uint32_t u = rd_u32(b, pos);
    memcpy(&so, &u, 4);
    int64_t vt = (int64_t)pos - (int64_t)so;
    if (vt < 0 || !inside(b, (size_t)vt, 4))
        return fail("vtable outside the buffer", pos);
    if (vt % 2)
        return fail("misaligned vtable", (size_t)vt);
    uint16_t vtlen = rd_u16(b, (size_t)vt), tlen = rd_u16(b, (size_t)vt + 2);
    if (vtlen < 4 || vtlen % 2 || !inside(b, (size_t)vt, vtlen))
        return fail("bad vtable length", (size_t)vt);
    if (tlen < 4 || !inside(b, pos, tlen))
        return fail("bad table length", pos);
    *out = (fb_table){b, pos, (size_t)vt, vtlen, tlen};
    return 0;
}

int fb_root(const fb_buf *b, const char *ident, fb_table *out) {
    if (!b->data || b->len < 8)
        return fail("buffer shorter than a header", 0);
    if (b->len > FB_MAX_SIZE)
        return fail("buffer of 2 GiB or more", 0);
    if (ident && memcmp(b->data + 4, ident, 4))
        return fail("wrong file identifier", 4);
    return table_at(b, rd_u32(b, 0), out);
}

/* The position of field slot's value of size bytes inside t, 0 if absent
 * (a field never sits at offset 0: that is the vtable offset), -1 if it
 * does not fit in the table. */
static int64_t field_pos(const fb_table *t, int slot, size_t size) {
    if (slot < 0 || 4 + 2 * (size_t)slot + 2 > t->vtlen)
        return 0;
    uint16_t off = rd_u16(t->b, t->vt + 4 + 2 * (size_t)slot);
    if (!off)
        return 0;
    if (off < 4 || (size_t)off + size > t->tlen)
        return -1;
    return (int64_t)(t->pos + off);
}

static int64_t load_int(const fb_buf *b, size_t pos, int size, int is_signed) {
    switch (size) {
    case 1: return is_signed ? (int64_t)(int8_t)b->data[pos] : (int64_t)b->data[pos];
    case 2: {
        uint16_t u = rd_u16(b, pos);
        int16_t s;
        memcpy(&s, &u, 2);
        return is_signed ? (int64_t)s : (int64_t)u;
    }
    case 4: {
        uint32_t u = rd_u32(b, pos);
        int32_t s;
        memcpy(&s, &u, 4);
        return is_signed ? (int64_t)s : (int64_t)u;
    }
    default: {
        int64_t s;
        memcpy(&s, b->data + pos, 8);
        return s; /* a u64 past INT64_MAX reads negative: callers range-check */
    }
    }
}

int64_t fb_int(const fb_table *t, int slot, int size, int is_signed, int64_t def, int *bad) {
    int64_t p = field_pos(t, slot, (size_t)size);
    if (p < 0) {
        *bad = -1;
        return def;
    }
    return p ? load_int(t->b, (size_t)p, size, is_signed) : def;
}

float fb_float(const fb_table *t, int slot, float def, int *bad) {
    int64_t p = field_pos(t, slot, 4);
    if (p < 0) {
        *bad = -1;
        return def;
    }
    float f = def;
    if (p)
        memcpy(&f, t->b->data + p, 4);
    return f;
}

/* Follow the uoffset stored at pos; the target position, or -1. */
static int64_t follow(const fb_buf *b, size_t pos) {
    if (!inside(b, pos, 4))
        return -1;
    uint64_t target = (uint64_t)pos + rd_u32(b, pos);
    return target < b->len ? (int64_t)target : -1;
}

/* The target of offset field slot: 1 and *target, 0 absent, -1 error. */
static int field_target(const fb_table *t, int slot, size_t *target) {
    int64_t p = field_pos(t, slot, 4);
    if (!p)
        return 0;
    int64_t tg = p < 0 ? -1 : follow(t->b, (size_t)p);
    if (tg < 0)
        return fail("offset field outside the buffer", t->pos);
    *target = (size_t)tg;
    return 1;
}

int fb_field_table(const fb_table *t, int slot, fb_table *out) {
    size_t tg;
    int r = field_target(t, slot, &tg);
    if (r <= 0)
        return r;
    return table_at(t->b, tg, out) ? -1 : 1;
}

static int vec_at(const fb_buf *b, size_t pos, size_t elem, fb_vec *out) {
    if (!inside(b, pos, 4) || pos % 4)
        return fail("bad vector offset", pos);
    uint32_t n = rd_u32(b, pos);
    if ((uint64_t)n * elem > b->len - pos - 4)
        return fail("vector longer than the buffer", pos);
    *out = (fb_vec){b, pos + 4, n, elem};
    return 0;
}

int fb_field_vec(const fb_table *t, int slot, size_t elem, fb_vec *out) {
    size_t tg;
    int r = field_target(t, slot, &tg);
    if (r <= 0)
        return r;
    return vec_at(t->b, tg, elem, out) ? -1 : 1;
}

int fb_field_str(const fb_table *t, int slot, const char **s, size_t *n) {
    fb_vec v;
    int r = fb_field_vec(t, slot, 1, &v);
    if (r <= 0)
        return r;
    if (!inside(t->b, v.pos, (size_t)v.n + 1) || t->b->data[v.pos + v.n])
        return fail("string without its terminating NUL", v.pos);
    *s = (const char *)t->b->data + v.pos;
    *n = v.n;
    return 1;
}

int64_t fb_vec_int(const fb_vec *v, uint32_t i, int is_signed) {
    KILN_ASSERT(i < v->n);
    return load_int(v->b, v->pos + (size_t)i * v->elem, (int)v->elem, is_signed);
}

float fb_vec_float(const fb_vec *v, uint32_t i) {
    KILN_ASSERT(i < v->n && v->elem == 4);
    float f;
    memcpy(&f, v->b->data + v->pos + (size_t)i * 4, 4);
    return f;
}

int fb_vec_table(const fb_vec *v, uint32_t i, fb_table *out) {
    KILN_ASSERT(i < v->n && v->elem == 4);
    int64_t tg = follow(v->b, v->pos + (size_t)i * 4);
    if (tg < 0)
        return fail("table offset outside the buffer", v->pos + (size_t)i * 4);
    return table_at(v->b, (size_t)tg, out);
}
