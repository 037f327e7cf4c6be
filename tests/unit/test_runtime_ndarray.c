/* test_runtime_ndarray.c: arrays: creation and its errors, views and their
 * bounds checks, contiguity and strided copies in every layout (the tiled
 * transposes too), storage taken over. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "kiln/runtime.h"
#include "runtime/runtime_internal.h"

static void test_empty(void) {
    int64_t shape[3] = {2, 3, 5};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 3, shape);
    CHECK(a != NULL);
    CHECK_EQ_INT(kiln_ndarray_dtype(a), KILN_FLOAT32);
    CHECK_EQ_INT(kiln_ndarray_ndim(a), 3);
    CHECK_EQ_INT(kiln_ndarray_dim(a, 2), 5);
    CHECK_EQ_INT(kiln_ndarray_dim(a, 3), -1);
    CHECK_EQ_INT(kiln_ndarray_dim(a, -1), -1);
    CHECK_EQ_INT(kiln_ndarray_stride(a, 0), 15);
    CHECK_EQ_INT(kiln_ndarray_stride(a, 1), 5);
    CHECK_EQ_INT(kiln_ndarray_stride(a, 2), 1);
    CHECK_EQ_INT(kiln_ndarray_stride(a, 7), 0);
    CHECK_EQ_INT(kiln_ndarray_numel(a), 30);
    CHECK_EQ_INT(kiln_ndarray_byte_offset(a), 0);
    CHECK(kiln_ndarray_is_contiguous(a));
    CHECK_EQ_INT((uintptr_t)kiln_ndarray_data(a) % KILN_ALIGNMENT, 0);
    const float *d = kiln_ndarray_data(a);
    int zero = 1;
    for (int i = 0; i < 30; i++)
        zero &= d[i] == 0.0f;
    CHECK(zero);
    kiln_ndarray_free(a);
    kiln_ndarray_free(NULL);

    kiln_ndarray *s = kiln_ndarray_empty(KILN_INT64, 0, NULL); /* a scalar */
    CHECK(s != NULL);
    CHECK_EQ_INT(kiln_ndarray_numel(s), 1);
    CHECK(kiln_ndarray_is_contiguous(s));
    *(int64_t *)kiln_ndarray_data(s) = 7;
    kiln_ndarray_free(s);

    int64_t z[2] = {0, 4};
    kiln_ndarray *e = kiln_ndarray_empty(KILN_BOOL, 2, z);
    CHECK(e != NULL);
    CHECK_EQ_INT(kiln_ndarray_numel(e), 0);
    CHECK(kiln_ndarray_data(e) != NULL);
    kiln_ndarray_free(e);
}

static void test_empty_errors(void) {
    int64_t shape[KILN_MAX_NDIM + 1];
    for (int i = 0; i <= KILN_MAX_NDIM; i++)
        shape[i] = 1;
    kiln_clear_error();
    CHECK(kiln_ndarray_empty(KILN_FLOAT32, KILN_MAX_NDIM + 1, shape) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "rank 17");
    CHECK(kiln_ndarray_empty(KILN_FLOAT32, -1, shape) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "rank -1");
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, KILN_MAX_NDIM, shape);
    CHECK(a != NULL);
    kiln_ndarray_free(a);

    int64_t neg[2] = {3, -2};
    CHECK(kiln_ndarray_empty(KILN_FLOAT32, 2, neg) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "negative");
    CHECK(kiln_ndarray_empty((kiln_dtype)99, 1, neg) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "invalid dtype");
    CHECK(kiln_ndarray_empty(KILN_HANDLE, 1, neg) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "invalid dtype");

    int64_t big[2] = {INT64_C(1) << 40, INT64_C(1) << 30};
    CHECK(kiln_ndarray_empty(KILN_FLOAT32, 2, big) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "overflow");
    int64_t big2[1] = {INT64_C(1) << 62};
    CHECK(kiln_ndarray_empty(KILN_FLOAT64, 1, big2) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "overflow");
}

static void test_wrap_and_view(void) {
    float buf[24];
    for (int i = 0; i < 24; i++)
        buf[i] = (float)i;
    int64_t shape[2] = {4, 6};
    kiln_ndarray *w = kiln_ndarray_wrap(buf, KILN_FLOAT32, 2, shape, NULL, 0);
    CHECK(w != NULL);
    CHECK(kiln_ndarray_data(w) == buf);
    CHECK(kiln_ndarray_is_contiguous(w));

    /* The transpose: 6x4 with strides (1, 6). */
    int64_t tshape[2] = {6, 4}, tstr[2] = {1, 6};
    kiln_ndarray *t = kiln_ndarray_view(w, 2, tshape, tstr, 0);
    CHECK(t != NULL);
    CHECK(!kiln_ndarray_is_contiguous(t));
    CHECK_EQ_INT(kiln_ndarray_stride(t, 1), 6);

    /* Rows 1..2, columns 2..4: offset (1*6+2)*4 bytes. */
    int64_t sshape[2] = {2, 3}, sstr[2] = {6, 1};
    kiln_ndarray *s = kiln_ndarray_view(w, 2, sshape, sstr, 8 * 4);
    CHECK(s != NULL);
    CHECK_EQ_INT(kiln_ndarray_byte_offset(s), 32);
    CHECK(*(float *)kiln_ndarray_data(s) == 8.0f);
    CHECK(!kiln_ndarray_is_contiguous(s));

    /* A view reaching one element past the end fails. */
    kiln_clear_error();
    CHECK(kiln_ndarray_view(w, 2, sshape, sstr, (2 * 6 + 4) * 4) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "outside the storage");
    int64_t all[1] = {25};
    CHECK(kiln_ndarray_view(w, 1, all, NULL, 0) == NULL);
    int64_t neg_off_shape[1] = {2};
    CHECK(kiln_ndarray_view(w, 1, neg_off_shape, NULL, -4) == NULL);
    CHECK(kiln_ndarray_view(w, 1, neg_off_shape, NULL, 2) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "multiple");
    /* A reversed view: negative stride, offset at the last element. */
    int64_t rshape[1] = {24}, rstr[1] = {-1};
    kiln_ndarray *r = kiln_ndarray_view(w, 1, rshape, rstr, 23 * 4);
    CHECK(r != NULL);
    CHECK(*(float *)kiln_ndarray_data(r) == 23.0f);
    CHECK(kiln_ndarray_view(w, 1, rshape, rstr, 22 * 4) == NULL);
    /* Size-1 dims may have any stride and stay contiguous. */
    int64_t oshape[3] = {1, 4, 6}, ostr[3] = {999, 6, 1};
    kiln_ndarray *o = kiln_ndarray_view(w, 3, oshape, ostr, 0);
    CHECK(o != NULL && kiln_ndarray_is_contiguous(o));
    /* An empty view may sit anywhere. */
    int64_t eshape[1] = {0};
    kiln_ndarray *e = kiln_ndarray_view(w, 1, eshape, NULL, 1000 * 4);
    CHECK(e != NULL);
    /* A view of a view checks against the original storage. */
    int64_t vshape[1] = {3};
    kiln_ndarray *vv = kiln_ndarray_view(s, 1, vshape, NULL, 21 * 4);
    CHECK(vv != NULL);
    CHECK(kiln_ndarray_view(s, 1, vshape, NULL, 22 * 4) == NULL);
    int64_t huge[2] = {INT64_C(1) << 40, 2}, hstr[2] = {INT64_C(1) << 40, 1};
    CHECK(kiln_ndarray_view(w, 2, huge, hstr, 0) == NULL);
    CHECK(kiln_ndarray_view(NULL, 1, vshape, NULL, 0) == NULL);

    kiln_ndarray_free(vv);
    kiln_ndarray_free(e);
    kiln_ndarray_free(o);
    kiln_ndarray_free(r);
    kiln_ndarray_free(s);
    kiln_ndarray_free(t);
    kiln_ndarray_free(w);

    /* Views of owned storage. */
    int64_t s2[2] = {3, 4};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_INT32, 2, s2);
    int64_t col[1] = {3}, colstr[1] = {4};
    kiln_ndarray *c = kiln_ndarray_view(a, 1, col, colstr, 3 * 4);
    CHECK(c != NULL);
    CHECK(kiln_ndarray_view(a, 1, col, colstr, 4 * 4) == NULL);
    kiln_ndarray_free(c);
    kiln_ndarray_free(a);

    CHECK(kiln_ndarray_wrap(NULL, KILN_FLOAT32, 2, shape, NULL, 0) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "NULL");
}

/* Fill a (int32, any layout) so element with flat row-major index i is i. */
static void fill_iota(kiln_ndarray *a) {
    int nd = kiln_ndarray_ndim(a);
    int64_t idx[KILN_MAX_NDIM] = {0}, n = kiln_ndarray_numel(a);
    int32_t *d = kiln_ndarray_data(a);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < nd; k++)
            off += idx[k] * kiln_ndarray_stride(a, k);
        d[off] = (int32_t)i;
        for (int k = nd - 1; k >= 0; k--) {
            if (++idx[k] < kiln_ndarray_dim(a, k))
                break;
            idx[k] = 0;
        }
    }
}

/* 1 if a's element with flat index i equals i for all i. */
static int is_iota(const kiln_ndarray *a) {
    int nd = kiln_ndarray_ndim(a);
    int64_t idx[KILN_MAX_NDIM] = {0}, n = kiln_ndarray_numel(a);
    const int32_t *d = kiln_ndarray_data(a);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < nd; k++)
            off += idx[k] * kiln_ndarray_stride(a, k);
        if (d[off] != (int32_t)i)
            return 0;
        for (int k = nd - 1; k >= 0; k--) {
            if (++idx[k] < kiln_ndarray_dim(a, k))
                break;
            idx[k] = 0;
        }
    }
    return 1;
}

static void test_copy_strided(void) {
    /* Storage big enough for every layout below. */
    int32_t sbuf[4096], dbuf[4096];
    int64_t shape[4] = {3, 4, 2, 5};
    int64_t layouts[4][4] = {
        {40, 10, 5, 1},   /* compact */
        {1, 3, 12, 24},   /* Fortran */
        {80, 20, 10, 2},  /* every other element */
        {-40, 10, -5, 1}, /* some negative strides */
    };
    int64_t offs[4] = {0, 0, 0, (2 * 40 + 5) * 4};
    for (int si = 0; si < 4; si++) {
        for (int di = 0; di < 4; di++) {
            memset(sbuf, 0xff, sizeof sbuf);
            memset(dbuf, 0xff, sizeof dbuf);
            kiln_ndarray *s = kiln_ndarray_wrap(sbuf, KILN_INT32, 4, shape, layouts[si], offs[si]);
            kiln_ndarray *d = kiln_ndarray_wrap(dbuf, KILN_INT32, 4, shape, layouts[di], offs[di]);
            CHECK(s && d);
            fill_iota(s);
            CHECK_EQ_INT(kiln_ndarray_copy(d, s), KILN_OK);
            CHECK(is_iota(d));
            kiln_ndarray_free(s);
            kiln_ndarray_free(d);
        }
    }
    /* Other element sizes: float64 transpose and int8 strided rows. */
    double m[6] = {0, 1, 2, 3, 4, 5}, mt[6];
    int64_t sh[2] = {3, 2}, tst[2] = {1, 3};
    kiln_ndarray *ms = kiln_ndarray_wrap(m, KILN_FLOAT64, 2, sh, tst, 0);
    kiln_ndarray *md = kiln_ndarray_wrap(mt, KILN_FLOAT64, 2, sh, NULL, 0);
    CHECK_EQ_INT(kiln_ndarray_copy(md, ms), KILN_OK);
    CHECK(mt[0] == 0 && mt[1] == 3 && mt[2] == 1 && mt[3] == 4 && mt[4] == 2 && mt[5] == 5);
    kiln_ndarray_free(ms);
    kiln_ndarray_free(md);

    int8_t b[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, bo[5] = {0};
    int64_t bs[1] = {5}, bst[1] = {2};
    kiln_ndarray *bsrc = kiln_ndarray_wrap(b, KILN_INT8, 1, bs, bst, 1);
    kiln_ndarray *bdst = kiln_ndarray_wrap(bo, KILN_INT8, 1, bs, NULL, 0);
    CHECK_EQ_INT(kiln_ndarray_copy(bdst, bsrc), KILN_OK);
    CHECK(bo[0] == 1 && bo[2] == 5 && bo[4] == 9);
    kiln_ndarray_free(bsrc);
    kiln_ndarray_free(bdst);

    /* Scalars and empty arrays. */
    int64_t v = 5, w2 = 0;
    kiln_ndarray *sv = kiln_ndarray_wrap(&v, KILN_INT64, 0, NULL, NULL, 0);
    kiln_ndarray *sw = kiln_ndarray_wrap(&w2, KILN_INT64, 0, NULL, NULL, 0);
    CHECK_EQ_INT(kiln_ndarray_copy(sw, sv), KILN_OK);
    CHECK_EQ_INT(w2, 5);
    kiln_ndarray_free(sv);
    kiln_ndarray_free(sw);
    int64_t es[2] = {0, 3};
    kiln_ndarray *e1 = kiln_ndarray_empty(KILN_FLOAT32, 2, es);
    kiln_ndarray *e2 = kiln_ndarray_empty(KILN_FLOAT32, 2, es);
    CHECK_EQ_INT(kiln_ndarray_copy(e1, e2), KILN_OK);
    kiln_ndarray_free(e1);
    kiln_ndarray_free(e2);
}

/* The element of a (any strides) at index idx, as bytes into out. */
static void elem_at(const kiln_ndarray *a, const int64_t *idx, unsigned char *out) {
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(a));
    int64_t off = 0;
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        off += idx[d] * kiln_ndarray_stride(a, d);
    memcpy(out, (const unsigned char *)kiln_ndarray_data(a) + off * (int64_t)es, es);
}

/* Whether d equals s element by element, walked index by index. */
static int same_elements(const kiln_ndarray *d, const kiln_ndarray *s) {
    int nd = kiln_ndarray_ndim(s);
    size_t es = kiln_dtype_size(kiln_ndarray_dtype(s));
    int64_t idx[KILN_MAX_NDIM] = {0}, n = kiln_ndarray_numel(s);
    for (int64_t k = 0; k < n; k++) {
        unsigned char a[8], b[8];
        elem_at(d, idx, a);
        elem_at(s, idx, b);
        if (memcmp(a, b, es))
            return 0;
        for (int q = nd - 1; q >= 0 && ++idx[q] == kiln_ndarray_dim(s, q); q--)
            idx[q] = 0;
    }
    return 1;
}

/* The tiled copy (a transpose, a packed layout: ndarray_copy.c) against an
 * element-by-element walk: every permutation of ranks 2 to 4 with extents
 * below, at and above the 32-element tile and odd, for 1-, 2-, 4- and
 * 8-byte elements, from a compact source and from one that skips every
 * other element of its last dim (no contiguous dim: the plain loop). */
static void test_copy_permuted(void) {
    static const int64_t dims[4][4] = {
        {33, 70, 1, 1}, {5, 3, 67, 1}, {1, 40, 7, 9}, {2, 33, 3, 35}};
    static const int ranks[4] = {2, 3, 3, 4};
    static const kiln_dtype dts[4] = {KILN_INT8, KILN_FLOAT16, KILN_FLOAT32, KILN_INT64};
    uint32_t seed = 12345;
    for (int c = 0; c < 4; c++) {
        int nd = ranks[c];
        int perm[4] = {0, 1, 2, 3};
        for (int np = 0; np < 24; np++) {
            /* the permutations in lexicographic order, the first nd! of them */
            if (np) {
                int i = nd - 2;
                while (i >= 0 && perm[i] > perm[i + 1])
                    i--;
                if (i < 0)
                    break;
                int j = nd - 1;
                while (perm[j] < perm[i])
                    j--;
                int t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
                for (int a = i + 1, b = nd - 1; a < b; a++, b--)
                    t = perm[a], perm[a] = perm[b], perm[b] = t;
            }
            for (int di = 0; di < 4; di++)
                for (int skip = 1; skip <= 2; skip++) {
                    int64_t shape[4], big[4];
                    for (int d = 0; d < nd; d++)
                        shape[d] = big[d] = dims[c][d];
                    big[nd - 1] *= skip;
                    kiln_ndarray *base = kiln_ndarray_empty(dts[di], nd, big);
                    size_t es = kiln_dtype_size(dts[di]);
                    unsigned char *bb = kiln_ndarray_data(base);
                    for (int64_t k = 0; k < kiln_ndarray_numel(base) * (int64_t)es; k++)
                        bb[k] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
                    int64_t vs[4], ps[4], pst[4];
                    for (int d = 0; d < nd; d++)
                        vs[d] = kiln_ndarray_stride(base, d) * (d == nd - 1 ? skip : 1);
                    for (int d = 0; d < nd; d++) {
                        ps[d] = shape[perm[d]];
                        pst[d] = vs[perm[d]];
                    }
                    kiln_ndarray *src = kiln_ndarray_view(base, nd, ps, pst, 0);
                    kiln_ndarray *dst = ndarray_empty_uninit(dts[di], nd, ps);
                    CHECK(src && dst);
                    if (!src || !dst)
                        return;
                    CHECK_EQ_INT(kiln_ndarray_copy(dst, src), KILN_OK);
                    CHECK(same_elements(dst, src));
                    kiln_ndarray_free(src);
                    kiln_ndarray_free(dst);
                    kiln_ndarray_free(base);
                }
        }
    }
}

/* Storage taken over (an ONNX initializer's protobuf block): the elements
 * start at the offset, the array owns the block and frees it. */
static void test_adopt(void) {
    unsigned char *block = NULL;
    CHECK(posix_memalign((void **)&block, KILN_ALIGNMENT, 64 + 6 * sizeof(float)) == 0);
    float *v = (float *)(void *)(block + 64);
    for (int i = 0; i < 6; i++)
        v[i] = (float)i * 1.5f;
    int64_t shape[2] = {2, 3};
    kiln_ndarray *a = ndarray_adopt(block, 64, KILN_FLOAT32, 2, shape);
    CHECK(a && kiln_ndarray_data(a) == (void *)v && kiln_ndarray_is_contiguous(a));
    kiln_ndarray *c = ndarray_clone(a);
    CHECK(c && ((float *)kiln_ndarray_data(c))[5] == 7.5f);
    int64_t bad[1] = {-1};
    CHECK(ndarray_adopt(block, 64, KILN_FLOAT32, 1, bad) == NULL);
    kiln_ndarray_free(a); /* frees block */
    kiln_ndarray_free(c);
}

static void test_copy_errors(void) {
    int64_t s1[2] = {2, 3}, s2[2] = {3, 2}, s3[1] = {6};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, s1);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_FLOAT32, 2, s2);
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT32, 1, s3);
    kiln_ndarray *d = kiln_ndarray_empty(KILN_INT32, 2, s1);
    CHECK_EQ_INT(kiln_ndarray_copy(a, b), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "shapes differ");
    CHECK_EQ_INT(kiln_ndarray_copy(a, c), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_ndarray_copy(a, d), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "dtype");
    CHECK_EQ_INT(kiln_ndarray_copy(a, NULL), KILN_ERR_INVALID);
    kiln_ndarray_free(a);
    kiln_ndarray_free(b);
    kiln_ndarray_free(c);
    kiln_ndarray_free(d);
}

/* Shared storage (graph constants copied between passes): it outlives
 * the array it was shared from, and is freed with the last one; a shared
 * array's storage cannot be taken over, and a non-owning view is copied. */
static void test_share(void) {
    int64_t shape[2] = {3, 5};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
    float *d = kiln_ndarray_data(a);
    for (int i = 0; i < 15; i++)
        d[i] = (float)i;
    kiln_ndarray *b = ndarray_share(a), *c = ndarray_share(b);
    CHECK(b && c);
    CHECK(kiln_ndarray_data(b) == d && kiln_ndarray_data(c) == d);
    CHECK(ndarray_take_data(b) == NULL);
    kiln_ndarray_free(a);
    kiln_ndarray_free(c);
    CHECK_EQ_INT(kiln_ndarray_dim(b, 1), 5);
    CHECK(((float *)kiln_ndarray_data(b))[14] == 14.0f);
    void *taken = ndarray_take_data(b); /* the last owner may take it */
    CHECK(taken == d);
    kiln_ndarray_free(b);
    float ext[4] = {1, 2, 3, 4};
    int64_t s4[1] = {4};
    kiln_ndarray *v = kiln_ndarray_wrap(ext, KILN_FLOAT32, 1, s4, NULL, 0);
    kiln_ndarray *vc = ndarray_share(v);
    CHECK(vc && kiln_ndarray_data(vc) != (void *)ext);
    CHECK(vc && ((float *)kiln_ndarray_data(vc))[3] == 4.0f);
    kiln_ndarray_free(v);
    kiln_ndarray_free(vc);
    free(taken);
}

TEST_MAIN(TEST(test_empty), TEST(test_share), TEST(test_empty_errors), TEST(test_wrap_and_view),
          TEST(test_copy_strided), TEST(test_copy_permuted), TEST(test_adopt),
          TEST(test_copy_errors))
