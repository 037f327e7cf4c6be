/* npy.c: numpy's .npy format: a magic string, a version, a Python-literal
 * header dict ('descr', 'fortran_order', 'shape') and the raw data. Reads
 * versions 1.0 to 3.0 defensively (every length is checked against the bytes
 * present) and writes version 1.0, or 2.0 when the header is too long. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host"
#endif

static const unsigned char k_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* numpy's descr codes (without the byte-order character) of the dtypes kiln
 * can store. bfloat16 has no numpy dtype. */
static const struct {
    const char *code;
    kiln_dtype dt;
} k_descr[] = {
    {"f4", KILN_FLOAT32}, {"f2", KILN_FLOAT16}, {"f8", KILN_FLOAT64}, {"i1", KILN_INT8},
    {"u1", KILN_UINT8},   {"i4", KILN_INT32},   {"i8", KILN_INT64},   {"b1", KILN_BOOL},
    {"i2", KILN_INT16},   {"u2", KILN_UINT16},  {"u4", KILN_UINT32},  {"u8", KILN_UINT64},
};

/* ---- header parsing ---- */

typedef struct {
    const char *s, *end, *start;
    const char *name; /* file name for messages */
} hparser;

static kiln_status herr(hparser *p, const char *what) {
    return kiln_set_error(KILN_ERR_IO, "%s: bad .npy header: %s at column %d", p->name, what,
                          (int)(p->s - p->start));
}

static void skip_ws(hparser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

/* A quoted Python string without escapes, copied into out[cap]. */
static kiln_status parse_str(hparser *p, char *out, size_t cap) {
    if (p->s >= p->end || (*p->s != '\'' && *p->s != '"'))
        return herr(p, "expected a string");
    char q = *p->s++;
    size_t n = 0;
    while (p->s < p->end && *p->s != q) {
        if (*p->s == '\\' || (unsigned char)*p->s < 0x20 || n + 1 >= cap)
            return herr(p, "unsupported string");
        out[n++] = *p->s++;
    }
    if (p->s >= p->end)
        return herr(p, "unterminated string");
    p->s++;
    out[n] = 0;
    return KILN_OK;
}

static int match_word(hparser *p, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n) != 0)
        return 0;
    p->s += n;
    return 1;
}

/* A tuple of non-negative decimal integers: (), (3,), (2, 3) or (2, 3,). */
static kiln_status parse_shape(hparser *p, int *ndim, int64_t *shape) {
    if (p->s >= p->end || *p->s != '(')
        return herr(p, "expected '(' for the shape");
    p->s++;
    int n = 0, comma = 0;
    for (;;) {
        skip_ws(p);
        if (p->s < p->end && *p->s == ')')
            break;
        if (p->s >= p->end || *p->s < '0' || *p->s > '9')
            return herr(p, "expected a dimension");
        int64_t v = 0;
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
            if (!kiln_mul_ok(v, 10, &v) || !kiln_add_ok(v, *p->s - '0', &v))
                return herr(p, "dimension too large");
            p->s++;
        }
        if (p->s < p->end && *p->s == 'L')
            p->s++; /* Python 2 long */
        if (n >= KILN_MAX_NDIM)
            return kiln_set_error(KILN_ERR_IO, "%s: .npy array has more than %d dimensions",
                                  p->name, KILN_MAX_NDIM);
        shape[n++] = v;
        skip_ws(p);
        comma = p->s < p->end && *p->s == ',';
        if (comma) {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == ')')
            break;
        return herr(p, "expected ',' or ')' in the shape");
    }
    /* "(3)" is an int, not a tuple, in Python; numpy never writes it. */
    if (n == 1 && !comma)
        return herr(p, "one-element shape without a trailing ','");
    p->s++;
    *ndim = n;
    return KILN_OK;
}

static kiln_status descr_to_dtype(const char *name, const char *d, kiln_dtype *dt) {
    char order = 0;
    const char *code = d;
    if (*d == '<' || *d == '>' || *d == '|' || *d == '=')
        order = *code++;
    if (strcmp(code, "O") == 0 || strcmp(code, "O8") == 0)
        return kiln_set_error(KILN_ERR_UNSUPPORTED,
                              "%s: .npy holds Python objects (dtype '%s'), which kiln cannot read",
                              name, d);
    for (size_t i = 0; i < sizeof k_descr / sizeof k_descr[0]; i++) {
        if (strcmp(code, k_descr[i].code) != 0)
            continue;
        if (order == '>' && kiln_dtype_size(k_descr[i].dt) > 1)
            return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                  "%s: big-endian dtype '%s' is not supported; "
                                  "convert it with arr.astype(arr.dtype.newbyteorder('<'))",
                                  name, d);
        *dt = k_descr[i].dt;
        return KILN_OK;
    }
    return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: unsupported .npy dtype '%s'", name, d);
}

/* Parse the header dict; fills dtype, fortran order and shape. */
static kiln_status parse_header(hparser *p, kiln_dtype *dt, int *fortran, int *ndim,
                                int64_t *shape) {
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    char key[64], descr[64];
    skip_ws(p);
    if (p->s >= p->end || *p->s != '{')
        return herr(p, "expected '{'");
    p->s++;
    for (;;) {
        skip_ws(p);
        if (p->s < p->end && *p->s == '}')
            break;
        if (parse_str(p, key, sizeof key))
            return KILN_ERR_IO;
        skip_ws(p);
        if (p->s >= p->end || *p->s != ':')
            return herr(p, "expected ':'");
        p->s++;
        skip_ws(p);
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if (p->s < p->end && *p->s == '[')
                return kiln_set_error(KILN_ERR_UNSUPPORTED,
                                      "%s: structured .npy dtypes are not supported", p->name);
            if (parse_str(p, descr, sizeof descr))
                return KILN_ERR_IO;
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0 && !have_fortran) {
            if (match_word(p, "True"))
                *fortran = 1;
            else if (match_word(p, "False"))
                *fortran = 0;
            else
                return herr(p, "expected True or False");
            have_fortran = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if (parse_shape(p, ndim, shape))
                return KILN_ERR_IO;
            have_shape = 1;
        } else {
            return herr(p, "unknown or repeated key");
        }
        skip_ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == '}')
            break;
        return herr(p, "expected ',' or '}'");
    }
    p->s++;
    skip_ws(p);
    while (p->s < p->end && *p->s == 0)
        p->s++; /* tolerate NUL padding */
    if (p->s != p->end)
        return herr(p, "garbage after the dict");
    if (!have_descr || !have_fortran || !have_shape)
        return kiln_set_error(KILN_ERR_IO,
                              "%s: bad .npy header: missing 'descr', 'fortran_order' or 'shape'",
                              p->name);
    return descr_to_dtype(p->name, descr, dt);
}

static uint32_t rd_le(const unsigned char *b, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

kiln_status kiln_npy_header(const void *buf, size_t len, const char *name, npy_layout *out) {
    const unsigned char *b = buf;
    if (len < 10 || memcmp(b, k_magic, 6) != 0)
        return kiln_set_error(KILN_ERR_IO, "%s: not a .npy file (bad magic)", name);
    int major = b[6], minor = b[7];
    size_t hl_size;
    if (major == 1)
        hl_size = 2;
    else if (major == 2 || major == 3)
        hl_size = 4;
    else
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: unsupported .npy format version %d.%d",
                              name, major, minor);
    if (len < 8 + hl_size)
        return kiln_set_error(KILN_ERR_IO, "%s: truncated .npy header", name);
    size_t hlen = rd_le(b + 8, (int)hl_size), hstart = 8 + hl_size;
    if (hlen > len - hstart)
        return kiln_set_error(
            KILN_ERR_IO, "%s: .npy header length %zu runs past the end of the file", name, hlen);
    out->dtype = KILN_FLOAT32;
    out->fortran = 0;
    out->ndim = 0;
    hparser p = {(const char *)b + hstart, (const char *)b + hstart + hlen,
                 (const char *)b + hstart, name};
    if (parse_header(&p, &out->dtype, &out->fortran, &out->ndim, out->shape))
        return KILN_ERR_IO;

    int64_t numel = 1, nbytes;
    for (int i = 0; i < out->ndim; i++)
        if (!kiln_mul_ok(numel, out->shape[i], &numel))
            return kiln_set_error(KILN_ERR_IO, "%s: .npy shape product overflows", name);
    size_t es = kiln_dtype_size(out->dtype), avail = len - hstart - hlen;
    if (!kiln_mul_ok(numel, (int64_t)es, &nbytes) || (uint64_t)nbytes > avail)
        return kiln_set_error(KILN_ERR_IO,
                              "%s: .npy data is truncated: the shape needs %lld elements but only "
                              "%zu bytes are present",
                              name, (long long)numel, avail);
    out->numel = numel;
    out->nbytes = nbytes;
    out->data_offset = hstart + hlen;
    return KILN_OK;
}

kiln_ndarray *kiln_npy_parse(const void *buf, size_t len, const char *name) {
    npy_layout l;
    if (kiln_npy_header(buf, len, name, &l))
        return NULL;
    kiln_dtype dt = l.dtype;
    int ndim = l.ndim, fortran = l.fortran;
    const int64_t *shape = l.shape;
    int64_t numel = l.numel, nbytes = l.nbytes;
    const unsigned char *data = (const unsigned char *)buf + l.data_offset;
    kiln_ndarray *a = kiln_ndarray_empty(dt, ndim, shape);
    if (!a) {
        kiln_error_prefix("%s", name);
        return NULL;
    }
    if (numel == 0) {
        /* nothing to copy; and with a zero dim the other dims may be
           anything, so Fortran strides are not computed from them */
    } else if (!fortran || ndim < 2) {
        memcpy(kiln_ndarray_data(a), data, (size_t)nbytes);
    } else {
        /* numel > 0 elements fit in the file, so these products fit too */
        int64_t fstrides[KILN_MAX_NDIM], s = 1;
        for (int i = 0; i < ndim; i++) {
            fstrides[i] = s;
            s *= shape[i];
        }
        kiln_ndarray *src = kiln_ndarray_wrap((void *)data, dt, ndim, shape, fstrides, 0);
        if (!src || kiln_ndarray_copy(a, src)) {
            kiln_error_prefix("%s", name);
            kiln_ndarray_free(src);
            kiln_ndarray_free(a);
            return NULL;
        }
        kiln_ndarray_free(src);
    }
    if (dt == KILN_BOOL) { /* numpy bools are 0 or 1; keep C's _Bool well defined */
        unsigned char *d = kiln_ndarray_data(a);
        for (int64_t i = 0; i < numel; i++)
            d[i] = d[i] != 0;
    }
    return a;
}

kiln_ndarray *kiln_npy_load(const char *path) {
    size_t len = 0;
    char *buf = kiln_read_file(path, &len);
    if (!buf)
        return NULL;
    kiln_ndarray *a = kiln_npy_parse(buf, len, path);
    free(buf);
    return a;
}

/* ---- writing ---- */

static const char *dtype_descr(kiln_dtype dt) {
    switch (dt) {
    case KILN_FLOAT32: return "<f4";
    case KILN_FLOAT16: return "<f2";
    case KILN_FLOAT64: return "<f8";
    case KILN_INT8: return "|i1";
    case KILN_UINT8: return "|u1";
    case KILN_INT32: return "<i4";
    case KILN_INT64: return "<i8";
    case KILN_BOOL: return "|b1";
    case KILN_INT16: return "<i2";
    case KILN_UINT16: return "<u2";
    case KILN_UINT32: return "<u4";
    case KILN_UINT64: return "<u8";
    default: return NULL;
    }
}

kiln_status npy_header(const kiln_ndarray *a, unsigned char out[NPY_HEADER_MAX], size_t *len) {
    if (!a)
        return kiln_set_error(KILN_ERR_INVALID, "npy: NULL array");
    kiln_dtype dt = kiln_ndarray_dtype(a);
    const char *descr = dtype_descr(dt);
    if (!descr)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "npy: dtype %s has no numpy equivalent",
                              kiln_dtype_name(dt));
    int ndim = kiln_ndarray_ndim(a);
    char dict[64 + KILN_MAX_NDIM * 24];
    int n =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)kiln_ndarray_dim(a, i));
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", ndim == 1 ? "," : "");
    /* Pad with spaces and a final '\n' so the data starts 64-byte aligned. */
    size_t pre = 10, hlen = ((size_t)n + 1 + pre + 63) / 64 * 64 - pre;
    if (hlen > 65535) { /* version 2.0: a 4-byte header length */
        pre = 12;
        hlen = ((size_t)n + 1 + pre + 63) / 64 * 64 - pre;
    }
    KILN_ASSERT(pre + hlen <= NPY_HEADER_MAX);
    memcpy(out, k_magic, 6);
    out[6] = pre == 10 ? 1 : 2;
    out[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        out[8 + i] = (unsigned char)(hlen >> (8 * i));
    memset(out + pre, ' ', hlen);
    memcpy(out + pre, dict, (size_t)n);
    out[pre + hlen - 1] = '\n';
    *len = pre + hlen;
    return KILN_OK;
}

kiln_status kiln_npy_serialize(const kiln_ndarray *a, unsigned char **buf, size_t *len) {
    unsigned char hdr[NPY_HEADER_MAX];
    size_t hlen;
    kiln_status st = npy_header(a, hdr, &hlen);
    if (st)
        return st;
    kiln_dtype dt = kiln_ndarray_dtype(a);
    int ndim = kiln_ndarray_ndim(a);
    int64_t shape[KILN_MAX_NDIM];
    for (int i = 0; i < ndim; i++)
        shape[i] = kiln_ndarray_dim(a, i);
    size_t nbytes = (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(dt);
    unsigned char *out = kiln_malloc(hlen + nbytes);
    if (!out)
        return KILN_ERR_NOMEM;
    memcpy(out, hdr, hlen);
    kiln_ndarray *dst = kiln_ndarray_wrap(out + hlen, dt, ndim, shape, NULL, 0);
    st = dst ? kiln_ndarray_copy(dst, a) : KILN_ERR_INVALID;
    kiln_ndarray_free(dst);
    if (st) {
        free(out);
        return st;
    }
    *buf = out;
    *len = hlen + nbytes;
    return KILN_OK;
}

kiln_status kiln_npy_save(const char *path, const kiln_ndarray *a) {
    size_t len = 0;
    unsigned char *buf = NULL;
    kiln_status st = kiln_npy_serialize(a, &buf, &len);
    if (st) {
        kiln_error_prefix("%s", path);
        return st;
    }
    st = kiln_write_file(path, buf, len);
    free(buf);
    return st;
}
