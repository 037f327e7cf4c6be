/* test_runtime_npy.c: .npy and .npz files: numpy-written fixtures in
 * tests/data (see gen_runtime_fixtures.py there), round trips, and errors on
 * every truncation and on corrupted headers, dicts and archives. */
#define _GNU_SOURCE
#include <stdint.h>

#include <zlib.h>

#include "check.h"
#include "kiln/runtime.h"
#include "runtime/npy_internal.h"
#include "runtime/runtime_internal.h"

static const char *data_path(const char *name) {
    static char buf[4][1024];
    static int k;
    const char *d = getenv("KILN_TEST_DATA");
    char *b = buf[k++ & 3];
    snprintf(b, 1024, "%s/%s", d ? d : "tests/data", name);
    return b;
}

static unsigned char *read_data(const char *name, size_t *len) {
    FILE *f = fopen(data_path(name), "rb");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    unsigned char *b = malloc(1 << 16);
    *len = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

static void write_tmp(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    fwrite(b, 1, n, f);
    fclose(f);
}

static int shape_is(const kiln_ndarray *a, int ndim, const int64_t *shape) {
    if (!a || kiln_ndarray_ndim(a) != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (kiln_ndarray_dim(a, i) != shape[i])
            return 0;
    return kiln_ndarray_is_contiguous(a);
}

/* ---- .npy ------------------------------------------------------------------- */

static void test_npy_fixtures(void) {
    kiln_ndarray *a = kiln_npy_load(data_path("rt_f32_2x3.npy"));
    int64_t s23[2] = {2, 3};
    CHECK(shape_is(a, 2, s23));
    CHECK(a && kiln_ndarray_dtype(a) == KILN_FLOAT32);
    if (a) {
        const float *d = kiln_ndarray_data(a);
        for (int i = 0; i < 6; i++)
            CHECK(d[i] == 0.5f * (float)i);
    }
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_f64_fortran.npy")); /* Fortran order, converted */
    int64_t s34[2] = {3, 4};
    CHECK(shape_is(a, 2, s34));
    CHECK(a && kiln_ndarray_dtype(a) == KILN_FLOAT64);
    if (a) {
        const double *d = kiln_ndarray_data(a);
        for (int i = 0; i < 12; i++)
            CHECK(d[i] == (double)i);
    }
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_i8_fortran3d.npy"));
    int64_t s234[3] = {2, 3, 4};
    CHECK(shape_is(a, 3, s234));
    if (a) {
        const int8_t *d = kiln_ndarray_data(a);
        for (int i = 0; i < 24; i++)
            CHECK_EQ_INT(d[i], i);
    }
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_i64_scalar.npy"));
    CHECK(a && kiln_ndarray_ndim(a) == 0 && kiln_ndarray_dtype(a) == KILN_INT64);
    if (a)
        CHECK_EQ_INT(*(int64_t *)kiln_ndarray_data(a), -42);
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_bool.npy"));
    CHECK(a && kiln_ndarray_dtype(a) == KILN_BOOL && kiln_ndarray_numel(a) == 4);
    if (a)
        CHECK(memcmp(kiln_ndarray_data(a), "\1\0\1\1", 4) == 0);
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_u8.npy"));
    CHECK(a && kiln_ndarray_dtype(a) == KILN_UINT8 && kiln_ndarray_numel(a) == 3);
    if (a)
        CHECK(memcmp(kiln_ndarray_data(a), "\0\1\377", 3) == 0);
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_f16.npy"));
    CHECK(a && kiln_ndarray_dtype(a) == KILN_FLOAT16);
    if (a) {
        const uint16_t *h = kiln_ndarray_data(a);
        CHECK_EQ_INT(h[0], 0x3c00);
        CHECK_EQ_INT(h[1], 0xc100);
        CHECK_EQ_INT(h[2], 0x7bff);
    }
    kiln_ndarray_free(a);

    a = kiln_npy_load(data_path("rt_i32_empty.npy"));
    int64_t s03[2] = {0, 3};
    CHECK(shape_is(a, 2, s03));
    kiln_ndarray_free(a);

    const char *versions[2] = {"rt_i32_v2.npy", "rt_i32_v3.npy"};
    for (int v = 0; v < 2; v++) {
        a = kiln_npy_load(data_path(versions[v]));
        CHECK(a && kiln_ndarray_dtype(a) == KILN_INT32 && kiln_ndarray_numel(a) == 5);
        if (a) {
            const int32_t *d = kiln_ndarray_data(a);
            for (int i = 0; i < 5; i++)
                CHECK_EQ_INT(d[i], i - 2);
        }
        kiln_ndarray_free(a);
    }

    kiln_clear_error();
    CHECK(kiln_npy_load(data_path("rt_f32_be.npy")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "big-endian");
    CHECK_CONTAINS(kiln_last_error(), "rt_f32_be.npy");
    CHECK(kiln_npy_load(data_path("rt_object.npy")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "objects");
    CHECK(kiln_npy_load(data_path("no_such_file.npy")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "no_such_file.npy");
}

static void test_npy_round_trip(void) {
    kiln_dtype dts[] = {KILN_FLOAT32, KILN_FLOAT16, KILN_INT8,   KILN_UINT8,
                        KILN_INT32,   KILN_INT64,   KILN_BOOL,   KILN_FLOAT64,
                        KILN_INT16,   KILN_UINT16,  KILN_UINT32, KILN_UINT64};
    /* numpy's descr of each, as the header must spell it */
    const char *descr[] = {"'<f4'", "'<f2'", "'|i1'", "'|u1'", "'<i4'", "'<i8'",
                           "'|b1'", "'<f8'", "'<i2'", "'<u2'", "'<u4'", "'<u8'"};
    int64_t shape[3] = {3, 1, 5};
    const char *path = test_tmp_path("rt_round_trip.npy");
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        kiln_ndarray *a = kiln_ndarray_empty(dts[t], 3, shape);
        unsigned char *d = kiln_ndarray_data(a);
        size_t nb = 15 * kiln_dtype_size(dts[t]);
        for (size_t i = 0; i < nb; i++)
            d[i] = dts[t] == KILN_BOOL ? (unsigned char)(i % 3 == 0) : (unsigned char)(i * 37 + 1);
        CHECK_EQ_INT(kiln_npy_save(path, a), KILN_OK);
        char hdr[129] = {0};
        FILE *hf = fopen(path, "rb");
        CHECK(hf && fread(hdr, 1, 128, hf) == 128);
        if (hf)
            fclose(hf);
        CHECK_CONTAINS(hdr + 10, descr[t]);
        kiln_ndarray *b = kiln_npy_load(path);
        CHECK(shape_is(b, 3, shape));
        CHECK(b && kiln_ndarray_dtype(b) == dts[t]);
        if (b)
            CHECK(memcmp(kiln_ndarray_data(b), d, nb) == 0);
        kiln_ndarray_free(a);
        kiln_ndarray_free(b);
    }
    /* The header is padded so the data starts 64-byte aligned, as numpy does. */
    FILE *f = fopen(path, "rb");
    unsigned char hdr[10];
    CHECK(f && fread(hdr, 1, 10, f) == 10);
    if (f)
        fclose(f);
    CHECK_EQ_INT((10 + hdr[8] + 256 * hdr[9]) % 64, 0);

    /* A transposed view is written in C order. */
    float m[6] = {0, 1, 2, 3, 4, 5};
    int64_t sh[2] = {3, 2}, st[2] = {1, 3};
    kiln_ndarray *t = kiln_ndarray_wrap(m, KILN_FLOAT32, 2, sh, st, 0);
    CHECK_EQ_INT(kiln_npy_save(path, t), KILN_OK);
    kiln_ndarray *b = kiln_npy_load(path);
    CHECK(shape_is(b, 2, sh));
    if (b) {
        const float *d = kiln_ndarray_data(b);
        CHECK(d[0] == 0 && d[1] == 3 && d[2] == 1 && d[3] == 4 && d[4] == 2 && d[5] == 5);
    }
    kiln_ndarray_free(t);
    kiln_ndarray_free(b);

    /* Scalars and empty arrays. */
    double v = 2.5;
    kiln_ndarray *s = kiln_ndarray_wrap(&v, KILN_FLOAT64, 0, NULL, NULL, 0);
    CHECK_EQ_INT(kiln_npy_save(path, s), KILN_OK);
    b = kiln_npy_load(path);
    CHECK(b && kiln_ndarray_ndim(b) == 0 && *(double *)kiln_ndarray_data(b) == 2.5);
    kiln_ndarray_free(s);
    kiln_ndarray_free(b);
    int64_t e[3] = {2, 0, 7};
    kiln_ndarray *z = kiln_ndarray_empty(KILN_INT64, 3, e);
    CHECK_EQ_INT(kiln_npy_save(path, z), KILN_OK);
    b = kiln_npy_load(path);
    CHECK(shape_is(b, 3, e));
    kiln_ndarray_free(z);
    kiln_ndarray_free(b);

    /* bfloat16 has no numpy dtype. */
    int64_t one[1] = {4};
    kiln_ndarray *bf = kiln_ndarray_empty(KILN_BFLOAT16, 1, one);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_npy_save(path, bf), KILN_ERR_UNSUPPORTED);
    CHECK_CONTAINS(kiln_last_error(), "bfloat16");
    CHECK_EQ_INT(kiln_npy_save("/nonexistent-dir/x.npy", bf), KILN_ERR_UNSUPPORTED);
    kiln_ndarray_free(bf);
    int64_t two[1] = {2};
    kiln_ndarray *ok = kiln_ndarray_empty(KILN_INT32, 1, two);
    CHECK_EQ_INT(kiln_npy_save("/nonexistent-dir/x.npy", ok), KILN_ERR_IO);
    CHECK_CONTAINS(kiln_last_error(), "/nonexistent-dir/x.npy");
    kiln_ndarray_free(ok);
}

static void test_npy_truncated(void) {
    size_t len = 0;
    unsigned char *buf = read_data("rt_f32_2x3.npy", &len);
    if (!buf)
        return;
    CHECK_EQ_INT(len, 128 + 24);
    for (size_t n = 0; n < len; n++) {
        unsigned char *cut = malloc(n ? n : 1); /* exact size: ASan sees any over-read */
        memcpy(cut, buf, n);
        kiln_clear_error();
        kiln_ndarray *a = kiln_npy_parse(cut, n, "cut.npy");
        CHECK(a == NULL);
        CHECK_CONTAINS(kiln_last_error(), "cut.npy");
        kiln_ndarray_free(a);
        free(cut);
    }
    kiln_ndarray *a = kiln_npy_parse(buf, len, "whole.npy");
    CHECK(a != NULL);
    kiln_ndarray_free(a);
    /* Extra trailing bytes are ignored, as numpy does. */
    unsigned char *longer = calloc(1, len + 5);
    memcpy(longer, buf, len);
    a = kiln_npy_parse(longer, len + 5, "longer.npy");
    CHECK(a != NULL && kiln_ndarray_numel(a) == 6);
    kiln_ndarray_free(a);
    free(longer);
    const char *path = test_tmp_path("rt_cut.npy");
    write_tmp(path, buf, 100);
    CHECK(kiln_npy_load(path) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "rt_cut.npy");
    free(buf);
}

/* A version 1.0 .npy image with `header` and `ndata` zero data bytes. */
static size_t make_npy(unsigned char *out, const char *header, size_t ndata) {
    size_t h = strlen(header);
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (unsigned char)h;
    out[9] = (unsigned char)(h >> 8);
    memcpy(out + 10, header, h);
    memset(out + 10 + h, 0, ndata);
    return 10 + h + ndata;
}

static void test_npy_bad_headers(void) {
    static const struct {
        const char *header;
        size_t ndata;
        const char *error; /* NULL: parses */
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, NULL},
        {"{\"descr\": \"<i8\", \"shape\": (3L,), \"fortran_order\": True}", 24, NULL},
        {"{'descr':'|u1','fortran_order':False,'shape':()}", 1, NULL},
        {"{'descr': 'f8', 'fortran_order': False, 'shape': (1,)}", 8, NULL},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 23, "truncated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,)}", 0, "truncated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}", 0,
         "overflow"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 0,
         "too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12, "trailing ','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24, "unknown"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4, "repeated"},
        {"{'descr': '<f4', 'shape': (2,)}", 8, "missing"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", 8, "True or False"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}", 16, "unsupported .npy dtype"},
        {"{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}", 24, "unsupported .npy dtype"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", 8, "structured"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 16, "objects"},
        {"{'descr': '>i8', 'fortran_order': False, 'shape': (2,)}", 16, "big-endian"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", 8, "garbage"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", 8, "bad .npy header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8, "bad .npy header"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,-1)}", 8, "expected a dimension"},
        {"['descr', '<f4']", 8, "expected '{'"},
        {"", 8, "expected '{'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': "
         "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}",
         4, "more than 16"},
    };
    unsigned char buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = make_npy(buf, cases[i].header, cases[i].ndata);
        kiln_clear_error();
        kiln_ndarray *a = kiln_npy_parse(buf, n, "case.npy");
        if (cases[i].error) {
            CHECK(a == NULL);
            CHECK_CONTAINS(kiln_last_error(), cases[i].error);
            CHECK_CONTAINS(kiln_last_error(), "case.npy");
            if (a || !strstr(kiln_last_error(), cases[i].error))
                fprintf(stderr, "  case %zu: %s\n", i, cases[i].header);
        } else {
            CHECK(a != NULL);
            if (!a)
                fprintf(stderr, "  case %zu: %s: %s\n", i, cases[i].header, kiln_last_error());
        }
        kiln_ndarray_free(a);
    }
    /* Bad magic, bad version, header length past the end. */
    size_t n = make_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4);
    buf[1] = 'X';
    CHECK(kiln_npy_parse(buf, n, "m.npy") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "bad magic");
    buf[1] = 'N';
    buf[6] = 9;
    CHECK(kiln_npy_parse(buf, n, "m.npy") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "version 9");
    buf[6] = 1;
    buf[9] = 0x7f;
    CHECK(kiln_npy_parse(buf, n, "m.npy") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "past the end");
    buf[6] = 2; /* a version 2.0 length field read over the first header bytes */
    buf[9] = 0;
    CHECK(kiln_npy_parse(buf, n, "m.npy") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "m.npy");
}

/* ---- .npz ------------------------------------------------------------------- */

static void check_ab(const kiln_npz *z) {
    CHECK_EQ_INT(kiln_npz_count(z), 2);
    CHECK_EQ_STR(kiln_npz_name(z, 0), "a");
    CHECK_EQ_STR(kiln_npz_name(z, 1), "b");
    CHECK(kiln_npz_name(z, 2) == NULL);
    CHECK(kiln_npz_array(z, -1) == NULL);
    const kiln_ndarray *a = kiln_npz_get(z, "a"), *b = kiln_npz_get(z, "b");
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2};
    CHECK(shape_is(a, 2, s23) && kiln_ndarray_dtype(a) == KILN_FLOAT32);
    CHECK(shape_is(b, 2, s22) && kiln_ndarray_dtype(b) == KILN_INT64);
    CHECK(a == kiln_npz_array(z, 0));
    CHECK(kiln_npz_get(z, "c") == NULL);
    CHECK(kiln_npz_get(z, "a.npy") == NULL);
    if (a) {
        const float *d = kiln_ndarray_data(a);
        for (int i = 0; i < 6; i++)
            CHECK(d[i] == (float)i);
    }
    if (b) {
        const int64_t *d = kiln_ndarray_data(b);
        for (int i = 0; i < 4; i++)
            CHECK_EQ_INT(d[i], i + 1);
    }
}

static void test_npz_fixtures(void) {
    kiln_npz *z = kiln_npz_load(data_path("rt_stored.npz"));
    CHECK(z != NULL);
    if (z)
        check_ab(z);
    kiln_npz_free(z);
    z = kiln_npz_load(data_path("rt_deflated.npz"));
    CHECK(z != NULL);
    if (z)
        check_ab(z);
    kiln_npz_free(z);

    z = kiln_npz_load(data_path("rt_zip64.npz")); /* ZIP64 end records and extra fields */
    CHECK(z != NULL);
    if (z) {
        CHECK_EQ_INT(kiln_npz_count(z), 2);
        const kiln_ndarray *x = kiln_npz_get(z, "x"), *y = kiln_npz_get(z, "y");
        CHECK(x && kiln_ndarray_dtype(x) == KILN_FLOAT64 && kiln_ndarray_numel(x) == 4);
        CHECK(y && kiln_ndarray_dtype(y) == KILN_INT32 && kiln_ndarray_numel(y) == 3);
        if (x)
            CHECK(((double *)kiln_ndarray_data(x))[3] == 3.0);
        if (y)
            CHECK_EQ_INT(((int32_t *)kiln_ndarray_data(y))[2], 9);
    }
    kiln_npz_free(z);

    kiln_clear_error();
    CHECK(kiln_npz_load(data_path("rt_f32_2x3.npy")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "not a ZIP");
    CHECK(kiln_npz_load(data_path("missing.npz")) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "missing.npz");
}

static void test_npz_round_trip(void) {
    float m[6] = {0, 1, 2, 3, 4, 5};
    int64_t sh[2] = {3, 2}, st[2] = {1, 3}, s1[1] = {1000};
    kiln_ndarray *t = kiln_ndarray_wrap(m, KILN_FLOAT32, 2, sh, st, 0); /* transposed */
    kiln_ndarray *big = kiln_ndarray_empty(KILN_INT32, 1, s1);
    for (int i = 0; i < 1000; i++)
        ((int32_t *)kiln_ndarray_data(big))[i] = i % 10;
    int8_t sc = -3;
    kiln_ndarray *s = kiln_ndarray_wrap(&sc, KILN_INT8, 0, NULL, NULL, 0);
    kiln_npz *z = kiln_npz_new();
    CHECK_EQ_INT(kiln_npz_add(z, "trans", t), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "big", big), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "scalar", s), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "big", s), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "duplicate");
    CHECK_EQ_INT(kiln_npz_add(z, "", s), KILN_ERR_INVALID);
    m[0] = 99; /* the set holds a copy */
    for (int compress = 0; compress <= 1; compress++) {
        const char *path = test_tmp_path(compress ? "rt_rt_c.npz" : "rt_rt_s.npz");
        CHECK_EQ_INT(kiln_npz_save(z, path, compress), KILN_OK);
        kiln_npz *r = kiln_npz_load(path);
        CHECK(r != NULL);
        if (!r)
            continue;
        CHECK_EQ_INT(kiln_npz_count(r), 3);
        CHECK_EQ_STR(kiln_npz_name(r, 0), "trans");
        CHECK_EQ_STR(kiln_npz_name(r, 2), "scalar");
        const kiln_ndarray *a = kiln_npz_get(r, "trans");
        CHECK(shape_is(a, 2, sh));
        if (a) {
            const float *d = kiln_ndarray_data(a);
            CHECK(d[0] == 0 && d[1] == 3 && d[2] == 1 && d[5] == 5);
        }
        const kiln_ndarray *b = kiln_npz_get(r, "big");
        CHECK(b && memcmp(kiln_ndarray_data(b), kiln_ndarray_data(big), 4000) == 0);
        const kiln_ndarray *c = kiln_npz_get(r, "scalar");
        CHECK(c && kiln_ndarray_ndim(c) == 0 && *(int8_t *)kiln_ndarray_data(c) == -3);
        kiln_npz_free(r);
        /* Compression makes the repetitive member smaller. */
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        CHECK(compress ? size < 1500 : size > 4000);
    }
    /* An empty set. */
    kiln_npz *e = kiln_npz_new();
    const char *ep = test_tmp_path("rt_empty.npz");
    CHECK_EQ_INT(kiln_npz_save(e, ep, 0), KILN_OK);
    kiln_npz *er = kiln_npz_load(ep);
    CHECK(er && kiln_npz_count(er) == 0);
    kiln_npz_free(er);
    /* A member numpy cannot represent fails the save and leaves no file. */
    kiln_ndarray *bf = kiln_ndarray_empty(KILN_BFLOAT16, 1, s1);
    CHECK_EQ_INT(kiln_npz_add(e, "bf", bf), KILN_OK);
    const char *bp = test_tmp_path("rt_bf16.npz");
    kiln_clear_error();
    CHECK(kiln_npz_save(e, bp, 1) != KILN_OK);
    CHECK_CONTAINS(kiln_last_error(), "bfloat16");
    CHECK_CONTAINS(kiln_last_error(), "rt_bf16.npz");
    CHECK(fopen(bp, "rb") == NULL);
    kiln_ndarray_free(bf);
    kiln_npz_free(e);
    kiln_npz_free(z);
    kiln_ndarray_free(t);
    kiln_ndarray_free(big);
    kiln_ndarray_free(s);
}

/* Every truncation and every single-byte corruption of `name` loads without
 * crashing; truncations all fail naming the file. */
static void mangle_archive(const char *name) {
    size_t len = 0;
    unsigned char *buf = read_data(name, &len);
    if (!buf)
        return;
    const char *path = test_tmp_path("rt_mangled.npz");
    int failures = 0;
    for (size_t n = 0; n < len; n++) {
        write_tmp(path, buf, n);
        kiln_clear_error();
        kiln_npz *z = kiln_npz_load(path);
        CHECK(z == NULL);
        CHECK_CONTAINS(kiln_last_error(), "rt_mangled.npz");
        kiln_npz_free(z);
    }
    for (size_t i = 0; i < len; i++) {
        buf[i] ^= 0x5a;
        write_tmp(path, buf, len);
        kiln_npz *z = kiln_npz_load(path);
        failures += z == NULL;
        kiln_npz_free(z);
        buf[i] ^= 0x5a;
    }
    CHECK(failures > (int)len / 3); /* most bytes matter; none may crash */
    free(buf);
}

static void test_npz_truncated_and_corrupt(void) {
    mangle_archive("rt_deflated.npz");
    mangle_archive("rt_stored.npz");
    mangle_archive("rt_zip64.npz");
}

/* Offset of the first central directory entry of an archive image. */
static size_t central_at(const unsigned char *b, size_t len) {
    unsigned char *p = memmem(b, len, "PK\1\2", 4);
    return p ? (size_t)(p - b) : 0;
}

static void test_npz_specific_errors(void) {
    size_t len = 0;
    unsigned char *orig = read_data("rt_deflated.npz", &len), *b = malloc(len);
    if (!orig)
        return;
    size_t c = central_at(orig, len);
    CHECK(c > 0);
    const char *path = test_tmp_path("rt_bad.npz");
    struct {
        size_t at;
        unsigned char val[4];
        int nval;
        const char *error;
    } cases[] = {
        {c + 16, {1, 2, 3, 4}, 4, "CRC32"},
        {c + 10, {12, 0}, 2, "compression method 12"},
        {c + 24, {0, 0, 0, 0x7f}, 4, "impossible"},
        {c + 24, {0x10, 0, 0, 0}, 4, "more than 16 bytes"},
        {c + 24, {0, 1, 0, 0}, 4, "256 are declared"},
        {c + 42, {0, 0, 0, 0x10}, 4, "local header offset"},
        {c + 20, {0, 0, 0, 0x10}, 4, "past the end"},
        {c + 8, {1, 0}, 2, "encrypted"},
        {c, {'P', 'K', 9, 9}, 4, "central directory"},
        {len - 6, {0xff, 0xff, 0, 0}, 4, "outside the file"},
        {c - 20, {0x12, 0x34, 0x56, 0x78}, 4, "b.npy: "},
        {30 + orig[26] + orig[28], {0xff}, 1, "a.npy: corrupt deflate data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, orig, len);
        memcpy(b + cases[i].at, cases[i].val, (size_t)cases[i].nval);
        write_tmp(path, b, len);
        kiln_clear_error();
        kiln_npz *z = kiln_npz_load(path);
        CHECK(z == NULL);
        CHECK_CONTAINS(kiln_last_error(), cases[i].error);
        CHECK_CONTAINS(kiln_last_error(), "rt_bad.npz");
        kiln_npz_free(z);
    }
    free(b);
    free(orig);

    /* A stored member whose .npy is bad (CRC fixed up): the message names the
     * archive and the member. */
    orig = read_data("rt_stored.npz", &len);
    if (!orig)
        return;
    c = central_at(orig, len);
    size_t data = 30 + orig[26] + 256u * orig[27] + orig[28] + 256u * orig[29];
    size_t usize = orig[c + 24] + 256u * orig[c + 25];
    unsigned char *d = memmem(orig + data, usize, "'<f4'", 5);
    CHECK(d != NULL);
    if (d) {
        memcpy(d, "'<c8'", 5);
        uint32_t crc = (uint32_t)crc32(0, orig + data, (unsigned)usize);
        for (int i = 0; i < 4; i++)
            orig[c + 16 + i] = (unsigned char)(crc >> (8 * i));
        write_tmp(path, orig, len);
        kiln_clear_error();
        CHECK(kiln_npz_load(path) == NULL);
        CHECK_CONTAINS(kiln_last_error(), "rt_bad.npz: a.npy: unsupported .npy dtype '<c8'");
    }
    free(orig);
}

/* ---- arrays as views into the archive's image (npz_parse_take) ------------------ */

/* A malloc'd copy of buf[0, len), for npz_parse_take to take. */
static unsigned char *dup_image(const unsigned char *buf, size_t len) {
    unsigned char *c = malloc(len);
    memcpy(c, buf, len);
    return c;
}

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A ZIP local header for a stored member of n bytes named `name`. */
static size_t local_header(unsigned char *p, const char *name, const unsigned char *data,
                           size_t n) {
    size_t nl = strlen(name);
    memset(p, 0, 30);
    put_le(p, 0x04034b50u, 4);
    put_le(p + 4, 20, 2);
    put_le(p + 14, crc32(0, data, (uInt)n), 4);
    put_le(p + 18, n, 4);
    put_le(p + 22, n, 4);
    put_le(p + 26, nl, 2);
    memcpy(p + 30, name, nl);
    return 30 + nl;
}

/* The central directory entry for that member, its local header at `off`. */
static size_t central_entry(unsigned char *p, const char *name, const unsigned char *data, size_t n,
                            size_t off) {
    size_t nl = strlen(name);
    memset(p, 0, 46);
    put_le(p, 0x02014b50u, 4);
    put_le(p + 4, 20, 2);
    put_le(p + 6, 20, 2);
    put_le(p + 16, crc32(0, data, (uInt)n), 4);
    put_le(p + 20, n, 4);
    put_le(p + 24, n, 4);
    put_le(p + 28, nl, 2);
    put_le(p + 42, off, 4);
    memcpy(p + 46, name, nl);
    return 46 + nl;
}

static void test_npz_in_place(void) {
    /* kiln's own writer and numpy's: every stored member that needs no
       conversion becomes an aligned view into the image, with the values
       the copying parser gives; bools are copied (normalized) */
    int64_t s7[1] = {7}, s23[2] = {2, 3}, s5[1] = {5};
    kiln_ndarray *f = kiln_ndarray_empty(KILN_FLOAT32, 1, s7);
    kiln_ndarray *i64 = kiln_ndarray_empty(KILN_INT64, 2, s23);
    kiln_ndarray *bl = kiln_ndarray_empty(KILN_BOOL, 1, s5);
    for (int i = 0; i < 7; i++)
        ((float *)kiln_ndarray_data(f))[i] = 0.5f * (float)i;
    for (int i = 0; i < 6; i++)
        ((int64_t *)kiln_ndarray_data(i64))[i] = -i;
    ((unsigned char *)kiln_ndarray_data(bl))[2] = 1;
    kiln_npz *z = kiln_npz_new();
    CHECK_EQ_INT(kiln_npz_add(z, "f", f), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "a_longer_member_name", i64), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "bool", bl), KILN_OK);
    const char *path = test_tmp_path("rt_inplace.npz");
    CHECK_EQ_INT(kiln_npz_save(z, path, 0), KILN_OK);
    size_t len = 0;
    char *img = kiln_read_file(path, &len);
    kiln_npz *ref = img ? kiln_npz_parse(img, len, "x") : NULL;
    kiln_npz *v = img ? npz_parse_take(dup_image((unsigned char *)img, len), len, "x") : NULL;
    CHECK(ref && v);
    for (int k = 0; ref && v && k < kiln_npz_count(ref); k++) {
        const kiln_ndarray *r = kiln_npz_array(ref, k), *w = kiln_npz_array(v, k);
        CHECK_EQ_STR(kiln_npz_name(v, k), kiln_npz_name(ref, k));
        CHECK(kiln_ndarray_dtype(r) == kiln_ndarray_dtype(w));
        size_t nb = (size_t)kiln_ndarray_numel(r) * kiln_dtype_size(kiln_ndarray_dtype(r));
        CHECK(memcmp(kiln_ndarray_data(r), kiln_ndarray_data(w), nb) == 0);
        CHECK((uintptr_t)kiln_ndarray_data(w) % KILN_ALIGNMENT == 0);
        if (kiln_ndarray_dtype(r) == KILN_BOOL)
            CHECK(npz_blob_data(v, w) == NULL);
        else
            CHECK(npz_blob_data(v, w) == kiln_ndarray_data(w));
    }
    /* the image can change hands and outlive the set */
    size_t blen = 0;
    void *blob = v ? npz_take_blob(v, &blen) : NULL;
    CHECK(blob && blen == len);
    const kiln_ndarray *fv = v ? kiln_npz_get(v, "f") : NULL;
    const float *fd = fv ? kiln_ndarray_data(fv) : NULL;
    kiln_npz_free(v);
    CHECK(fd && fd[6] == 3.0f && (const unsigned char *)fd >= (unsigned char *)blob);
    free(blob);
    kiln_npz_free(ref);
    free(img);

    /* numpy's archive */
    unsigned char *np = read_data("rt_stored.npz", &len);
    kiln_npz *nz = np ? npz_parse_take(np, len, "rt_stored.npz") : NULL;
    CHECK(nz != NULL);
    if (nz) {
        check_ab(nz);
        CHECK(npz_blob_data(nz, kiln_npz_get(nz, "a")) != NULL);
    }
    kiln_npz_free(nz);

    /* a forged archive whose member "b" lies inside member "a"'s data: moving
       "a" down would corrupt "b", so both are copied, each with its values */
    unsigned char inner[256], bnpy[128], anpy[512], zip[2048];
    float bvals[3] = {1.5f, -2.0f, 7.25f};
    size_t bn = make_npy(bnpy, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12);
    memcpy(bnpy + bn - 12, bvals, 12);
    size_t il = local_header(inner, "b.npy", bnpy, bn);
    memcpy(inner + il, bnpy, bn);
    il += bn;
    char ahdr[128];
    snprintf(ahdr, sizeof ahdr, "{'descr': '|u1', 'fortran_order': False, 'shape': (%zu,), }", il);
    size_t an = make_npy(anpy, ahdr, il);
    memcpy(anpy + an - il, inner, il);
    size_t at = local_header(zip, "a.npy", anpy, an);
    memcpy(zip + at, anpy, an);
    size_t boff = at + (an - il); /* b's local header, inside a's data */
    at += an;
    size_t cd = at;
    at += central_entry(zip + at, "a.npy", anpy, an, 0);
    at += central_entry(zip + at, "b.npy", bnpy, bn, boff);
    memset(zip + at, 0, 22);
    put_le(zip + at, 0x06054b50u, 4);
    put_le(zip + at + 8, 2, 2);
    put_le(zip + at + 10, 2, 2);
    put_le(zip + at + 12, at - cd, 4);
    put_le(zip + at + 16, cd, 4);
    at += 22;
    kiln_npz *fz = npz_parse_take(dup_image(zip, at), at, "forged");
    CHECK(fz != NULL);
    const kiln_ndarray *ba = fz ? kiln_npz_get(fz, "b") : NULL,
                       *aa = fz ? kiln_npz_get(fz, "a") : NULL;
    CHECK(ba && memcmp(kiln_ndarray_data(ba), bvals, 12) == 0);
    CHECK(aa && memcmp(kiln_ndarray_data(aa), inner, il) == 0);
    CHECK(ba && npz_blob_data(fz, ba) == NULL && npz_blob_data(fz, aa) == NULL);
    kiln_npz_free(fz);

    /* a corrupt image is freed with the error */
    unsigned char *bad = dup_image(zip, at);
    bad[at - 22] = 'X';
    kiln_clear_error();
    CHECK(npz_parse_take(bad, at, "forged") == NULL);
    CHECK_CONTAINS(kiln_last_error(), "forged");
    kiln_npz_free(z);
    kiln_ndarray_free(f);
    kiln_ndarray_free(i64);
    kiln_ndarray_free(bl);
}

/* A sink into memory, for npz_write_sink; fails its put number fail_at. */
typedef struct {
    npz_sink base;
    unsigned char *buf;
    size_t len, cap;
    int puts, fail_at;
} test_sink;

static int test_put(npz_sink *k, const void *p, size_t n) {
    test_sink *t = (test_sink *)k;
    if (++t->puts == t->fail_at) {
        kiln_set_error(KILN_ERR_IO, "test sink: refused");
        return -1;
    }
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->buf = realloc(t->buf, t->cap);
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    return 0;
}

/* npz_write_sink (the package writer's mod.params, put straight from the
 * arrays) gives the bytes kiln_npz_save writes to a file, stored and
 * deflated, for members of several dtypes and ranks, a scalar, an empty
 * one and a long name; npz_stored_size counts them without writing, and a
 * sink that fails stops the archive with its error. */
static void test_npz_write_sink(void) {
    kiln_npz *z = kiln_npz_new();
    int64_t s2[2] = {37, 129}, s0[1] = {0}, s1[1] = {5};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, s2);
    kiln_ndarray *e = kiln_ndarray_empty(KILN_INT64, 1, s0);
    kiln_ndarray *c = kiln_ndarray_empty(KILN_FLOAT64, 0, NULL);
    kiln_ndarray *i8 = kiln_ndarray_empty(KILN_INT8, 1, s1);
    float *af = kiln_ndarray_data(a);
    for (int k = 0; k < 37 * 129; k++)
        af[k] = (float)(k % 17) * 0.25f;
    *(double *)kiln_ndarray_data(c) = 3.5;
    char longname[300];
    memset(longname, 'w', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_EQ_INT(kiln_npz_add(z, "weights", a), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "empty", e), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, "scalar", c), KILN_OK);
    CHECK_EQ_INT(kiln_npz_add(z, longname, i8), KILN_OK);
    for (int compress = 0; compress < 2; compress++) {
        const char *path = test_tmp_path("npz_buffer.npz");
        CHECK_EQ_INT(kiln_npz_save(z, path, compress), KILN_OK);
        size_t flen = 0;
        char *file = kiln_read_file(path, &flen);
        test_sink t = {{test_put, 0}, NULL, 0, 0, 0, 0};
        uint64_t size = 0, counted = 0;
        CHECK_EQ_INT(npz_write_sink(z, compress, &t.base, &size), KILN_OK);
        CHECK(file && t.buf && flen == t.len && size == t.len && !memcmp(file, t.buf, flen));
        if (!compress) {
            CHECK_EQ_INT(npz_stored_size(z, &counted), KILN_OK);
            CHECK(counted == size);
        }
        free(file);
        free(t.buf);
        unlink(path);
    }
    test_sink bad = {{test_put, 0}, NULL, 0, 0, 0, 3};
    uint64_t size = 0;
    CHECK_EQ_INT(npz_write_sink(z, 0, &bad.base, &size), KILN_ERR_IO);
    CHECK_CONTAINS(kiln_last_error(), "test sink: refused");
    free(bad.buf);
    kiln_npz_free(z);
    kiln_ndarray_free(a);
    kiln_ndarray_free(e);
    kiln_ndarray_free(c);
    kiln_ndarray_free(i8);
}

/* npz_add_shared (the compiler's mod.params): the member is the array's
 * storage, not a copy, and outlives the array; a non-contiguous array is
 * copied; a duplicate name is refused. */
static void test_npz_add_shared(void) {
    int64_t shape[2] = {3, 4};
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, 2, shape);
    float *d = kiln_ndarray_data(a);
    for (int i = 0; i < 12; i++)
        d[i] = (float)i;
    int64_t ts[2] = {4, 3}, tst[2] = {1, 4};
    kiln_ndarray *t = kiln_ndarray_view(a, 2, ts, tst, 0);
    kiln_npz *z = kiln_npz_new();
    CHECK_EQ_INT(npz_add_shared(z, "a", a), KILN_OK);
    CHECK_EQ_INT(npz_add_shared(z, "t", t), KILN_OK);
    CHECK_EQ_INT(npz_add_shared(z, "a", a), KILN_ERR_INVALID);
    CHECK(kiln_ndarray_data(kiln_npz_get(z, "a")) == (void *)d);
    const kiln_ndarray *tc = kiln_npz_get(z, "t");
    CHECK(tc && kiln_ndarray_data(tc) != (void *)d && kiln_ndarray_is_contiguous(tc));
    CHECK(tc && ((const float *)kiln_ndarray_data(tc))[1] == 4.0f);
    kiln_ndarray_free(t);
    kiln_ndarray_free(a);
    CHECK(((const float *)kiln_ndarray_data(kiln_npz_get(z, "a")))[11] == 11.0f);
    kiln_npz_free(z);
}

TEST_MAIN(TEST(test_npy_fixtures), TEST(test_npy_round_trip), TEST(test_npy_truncated),
          TEST(test_npy_bad_headers), TEST(test_npz_fixtures), TEST(test_npz_round_trip),
          TEST(test_npz_truncated_and_corrupt), TEST(test_npz_specific_errors),
          TEST(test_npz_in_place), TEST(test_npz_write_sink), TEST(test_npz_add_shared))
