/* ndarray_copy.c: the element copy behind kiln_ndarray_copy, for any
 * strides. The layout is simplified first: unit dims dropped, dims that
 * are contiguous in both arrays merged. Then one of three loops runs:
 * - rows contiguous in both arrays: one memcpy per row;
 * - a permutation (the destination's last dim is strided in the source,
 *   and another dim is the source's contiguous one): a transpose of those
 *   two dims in square tiles, so that both arrays are read and written a
 *   cache line at a time (a constant weight's transpose, a packed layout);
 * - anything else: element by element along the last dim.
 * The bytes written are the same whichever loop runs. */
#include <string.h>

#include "runtime_internal.h"

/* Tile edge in elements: a tile of 4-byte elements is 4 KiB per side. */
#define TILE 32

typedef struct {
    int nd;
    int64_t n[KILN_MAX_NDIM], ds[KILN_MAX_NDIM], ss[KILN_MAX_NDIM]; /* strides in bytes */
} walk;

/* The layout without unit dims, with neighbours contiguous in both merged. */
static void simplify(walk *w, int nd, const int64_t *shape, const int64_t *dst_strides,
                     const int64_t *src_strides, size_t es) {
    w->nd = 0;
    for (int k = 0; k < nd; k++) {
        if (shape[k] == 1)
            continue;
        int64_t ds = dst_strides[k] * (int64_t)es, ss = src_strides[k] * (int64_t)es;
        int j = w->nd - 1;
        if (j >= 0 && w->ds[j] == ds * shape[k] && w->ss[j] == ss * shape[k]) {
            w->n[j] *= shape[k];
            w->ds[j] = ds;
            w->ss[j] = ss;
            continue;
        }
        w->n[w->nd] = shape[k];
        w->ds[w->nd] = ds;
        w->ss[w->nd] = ss;
        w->nd++;
    }
}

/* Advance the counter idx over the dims of w other than skip1 and skip2
 * (last fastest), moving the offsets; 0 once it wraps around. */
static int next_index(const walk *w, int skip1, int skip2, int64_t *idx, int64_t *doff,
                      int64_t *soff) {
    for (int k = w->nd - 1; k >= 0; k--) {
        if (k == skip1 || k == skip2)
            continue;
        *doff += w->ds[k];
        *soff += w->ss[k];
        if (++idx[k] < w->n[k])
            return 1;
        *doff -= w->ds[k] * w->n[k];
        *soff -= w->ss[k] * w->n[k];
        idx[k] = 0;
    }
    return 0;
}

/* One element of es bytes; a constant size compiles to a move. */
static inline void copy_elem(unsigned char *d, const unsigned char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es); break;
    }
}

/* d[i * dp + j] = s[i + j * sq] (elements, strides in bytes) for i < np,
 * j < nq, in TILE x TILE tiles: the destination's rows are j, the source's i. */
#define TILE_LOOP(T)                                                                               \
    for (int64_t i0 = 0; i0 < np; i0 += TILE)                                                      \
        for (int64_t j0 = 0; j0 < nq; j0 += TILE) {                                                \
            int64_t i1 = i0 + TILE < np ? i0 + TILE : np, j1 = j0 + TILE < nq ? j0 + TILE : nq;    \
            for (int64_t i = i0; i < i1; i++) {                                                    \
                T *dr = (T *)(void *)(d + i * dp);                                                 \
                const unsigned char *sc = s + i * (int64_t)sizeof(T);                              \
                for (int64_t j = j0; j < j1; j++)                                                  \
                    memcpy(&dr[j], sc + j * sq, sizeof(T));                                        \
            }                                                                                      \
        }

static void transpose_tiles(unsigned char *d, int64_t dp, const unsigned char *s, int64_t sq,
                            int64_t np, int64_t nq, size_t es) {
    switch (es) {
    case 1: TILE_LOOP(uint8_t); break;
    case 2: TILE_LOOP(uint16_t); break;
    case 4: TILE_LOOP(uint32_t); break;
    case 8: TILE_LOOP(uint64_t); break;
    default:
        for (int64_t i0 = 0; i0 < np; i0 += TILE)
            for (int64_t j0 = 0; j0 < nq; j0 += TILE)
                for (int64_t i = i0; i < i0 + TILE && i < np; i++)
                    for (int64_t j = j0; j < j0 + TILE && j < nq; j++)
                        copy_elem(d + i * dp + j * (int64_t)es, s + i * (int64_t)es + j * sq, es);
        break;
    }
}

void ndarray_copy_strided(unsigned char *d, const int64_t *dst_strides, const unsigned char *s,
                          const int64_t *src_strides, int nd, const int64_t *shape, size_t es) {
    walk w;
    simplify(&w, nd, shape, dst_strides, src_strides, es);
    if (w.nd == 0) {
        copy_elem(d, s, es);
        return;
    }
    int q = w.nd - 1, p = -1;
    int64_t idx[KILN_MAX_NDIM] = {0}, doff = 0, soff = 0;
    if (w.ds[q] == (int64_t)es && w.ss[q] == (int64_t)es) { /* rows */
        do
            memcpy(d + doff, s + soff, (size_t)w.n[q] * es);
        while (next_index(&w, q, q, idx, &doff, &soff));
        return;
    }
    if (w.ds[q] == (int64_t)es)
        for (int k = 0; k < q && p < 0; k++)
            if (w.ss[k] == (int64_t)es)
                p = k;
    if (p >= 0) { /* a transpose of dims p and q for each index of the others */
        do
            transpose_tiles(d + doff, w.ds[p], s + soff, w.ss[q], w.n[p], w.n[q], es);
        while (next_index(&w, p, q, idx, &doff, &soff));
        return;
    }
    do
        for (int64_t i = 0; i < w.n[q]; i++)
            copy_elem(d + doff + i * w.ds[q], s + soff + i * w.ss[q], es);
    while (next_index(&w, q, q, idx, &doff, &soff));
}
