/* onnx_load.c: ONNX files in, checked protobuf messages and kiln arrays out.
 * Hostile input is bounded three ways before protobuf-c sees it: files over
 * 2 GiB are refused, a wire pre-scan refuses messages nested deeper than
 * ONNX_MAX_NESTING (protobuf-c recurses per level), and a capped allocator
 * (4x the input + 64 MiB) stops length fields from exhausting memory. Tensor
 * data is copied only after its size matches the dims exactly, and external
 * data must resolve (after realpath) to a regular file inside the model folder.
 * Large models cost memory traffic more than anything: the file is mapped,
 * not read into a buffer, and protobuf-c's copy of a large raw_data is made
 * aligned so that the initializer's array can take it (the model's weights
 * are copied once, from the page cache into their arrays). As with any
 * mapped file, truncating the model while it is parsed faults the process. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../runtime/runtime_internal.h"
#include "onnx_load.h"

/* Bytes before each allocation: its total size and this header's own size
 * (the last 16 bytes of it); 16 keeps malloc's alignment. */
#define PB_HEADER 16
/* From this size on, a block is KILN_ALIGNMENT-aligned behind a header of
 * KILN_ALIGNMENT bytes: an array may take it (onnx_tensor_take_ndarray). */
#define PB_LARGE ((size_t)64 << 10)
/* Files under this size are read; larger ones are mapped. */
#define MAP_MIN_BYTES ((size_t)1 << 20)

/* A protobuf-c allocator that refuses to hand out more than `cap` bytes. */
typedef struct {
    ProtobufCAllocator base;
    size_t used, cap;
    int capped; /* an allocation was refused */
} pb_alloc;

struct onnx_model {
    Onnx__ModelProto *proto;
    pb_alloc alloc; /* owns every part of proto */
    char *path;     /* for messages */
    char *dir;      /* realpath of the folder for external data, or NULL */
};

/* The name put in place of an absent string; the allocator never frees it. */
static char g_empty[1] = "";

/* ---- the capped allocator -------------------------------------------------- */

static void *pb_alloc_fn(void *ud, size_t n) {
    pb_alloc *a = ud;
    size_t head = n >= PB_LARGE ? KILN_ALIGNMENT : PB_HEADER;
    if (n > a->cap || n + head > a->cap - a->used) {
        a->capped = 1;
        return NULL;
    }
    void *mem = NULL;
    if (head == PB_HEADER)
        mem = malloc(n + head);
    else if (posix_memalign(&mem, KILN_ALIGNMENT, n + head) != 0)
        mem = NULL;
    if (!mem)
        return NULL;
    unsigned char *p = (unsigned char *)mem + head;
    size_t total = n + head;
    memcpy(p - 16, &total, sizeof total);
    memcpy(p - 8, &head, sizeof head);
    a->used += total;
    return p;
}

/* The header of block ptr: its total size and header size. */
static void pb_block(const void *ptr, size_t *total, size_t *head) {
    const unsigned char *p = ptr;
    memcpy(total, p - 16, sizeof *total);
    memcpy(head, p - 8, sizeof *head);
}

static void pb_free_fn(void *ud, void *ptr) {
    pb_alloc *a = ud;
    if (!ptr || ptr == (void *)g_empty)
        return;
    size_t total, head;
    pb_block(ptr, &total, &head);
    a->used -= total;
    free((unsigned char *)ptr - head);
}

static void pb_alloc_init(pb_alloc *a, size_t input_len) {
    a->base.alloc = pb_alloc_fn;
    a->base.free = pb_free_fn;
    a->base.allocator_data = a;
    a->used = 0;
    a->cap = 4 * input_len + ((size_t)64 << 20);
    a->capped = 0;
}

/* ---- the wire pre-scan ------------------------------------------------------ */

static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (*p >= end)
            return 0;
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

enum { SCAN_OK = 1, SCAN_MALFORMED = 0, SCAN_TOO_DEEP = -1, SCAN_DUPLICATE = -2 };

/* Walk the message in [p, end) of type d: SCAN_OK if it is well-formed, nested
 * at most ONNX_MAX_NESTING deep and sets no singular message field twice
 * (protobuf-c merges such repeats, which costs quadratic time). On
 * SCAN_DUPLICATE, *dup names the field. */
static int pb_scan(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                   int depth, const ProtobufCFieldDescriptor **dup) {
    uint64_t seen = 0; /* singular message fields met, by field index */
    if (depth > ONNX_MAX_NESTING)
        return SCAN_TOO_DEEP;
    while (p < end) {
        uint64_t key, len;
        if (!pb_varint(&p, end, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
            return 0;
        switch (key & 7) {
        case 0:
            if (!pb_varint(&p, end, &len))
                return 0;
            break;
        case 1:
            if (end - p < 8)
                return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return 0;
            p += 4;
            break;
        case 2: {
            if (!pb_varint(&p, end, &len) || len > (uint64_t)(end - p))
                return 0;
            const ProtobufCFieldDescriptor *f =
                d ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                size_t idx = (size_t)(f - d->fields);
                if (f->label != PROTOBUF_C_LABEL_REPEATED && idx < 64) {
                    if (seen >> idx & 1) {
                        *dup = f;
                        return SCAN_DUPLICATE;
                    }
                    seen |= (uint64_t)1 << idx;
                }
                int r = pb_scan(f->descriptor, p, p + len, depth + 1, dup);
                if (r != SCAN_OK)
                    return r;
            }
            p += len;
            break;
        }
        default: return 0; /* groups (3, 4) and unknown wire types */
        }
    }
    return 1;
}

/* Unpack a message of type d from buf, with the pre-scan and allocator a.
 * NULL with "NAME: not a valid WHAT (...)" on failure. */
static ProtobufCMessage *pb_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *buf,
                                   size_t len, pb_alloc *a, const char *name, const char *what) {
    if ((int64_t)len > ONNX_MAX_FILE_BYTES) {
        kiln_set_error(KILN_ERR_IO, "%s: %zu bytes; %s files over 2 GiB are not supported", name,
                       len, what);
        return NULL;
    }
    const ProtobufCFieldDescriptor *dup = NULL;
    int r = pb_scan(d, buf, buf + len, 0, &dup);
    if (r == SCAN_TOO_DEEP) {
        kiln_set_error(KILN_ERR_IO, "%s: not a valid %s (messages nested deeper than %d levels)",
                       name, what, ONNX_MAX_NESTING);
        return NULL;
    }
    if (r == SCAN_DUPLICATE) {
        kiln_set_error(KILN_ERR_IO, "%s: not a valid %s (singular field '%s' appears twice)", name,
                       what, dup->name);
        return NULL;
    }
    ProtobufCMessage *msg = r == SCAN_OK ? protobuf_c_message_unpack(d, &a->base, len, buf) : NULL;
    if (!msg && a->capped)
        kiln_set_error(KILN_ERR_IO,
                       "%s: not a valid %s (protobuf parse needs more than %zu MiB for %zu bytes)",
                       name, what, a->cap >> 20, len);
    else if (!msg)
        kiln_set_error(KILN_ERR_IO, "%s: not a valid %s (protobuf parse failed)", name, what);
    return msg;
}

/* ---- reading files ----------------------------------------------------------- */

/* A file's bytes in memory: mapped (then `mapped`) or read into a buffer. */
typedef struct {
    uint8_t *data;
    size_t len;
    int mapped;
} file_bytes;

static void file_bytes_free(file_bytes *f) {
    if (f->mapped)
        munmap(f->data, f->len);
    else
        free(f->data);
    f->data = NULL;
}

/* Read a regular file of at most 2 GiB into *f: a large one mapped (its
 * pages are the page cache's; nothing is copied), a small one or one that
 * cannot be mapped read into a buffer. 0, or -1 with an error. */
static int file_bytes_load(const char *path, file_bytes *f) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        kiln_set_error(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        kiln_set_error(KILN_ERR_IO, "%s: not a regular file", path);
        return -1;
    }
    if ((int64_t)st.st_size > ONNX_MAX_FILE_BYTES) {
        close(fd);
        kiln_set_error(KILN_ERR_IO,
                       "%s: %lld bytes; ONNX files over 2 GiB are not supported (store large "
                       "weights as external data)",
                       path, (long long)st.st_size);
        return -1;
    }
    size_t n = (size_t)st.st_size, got = 0;
    *f = (file_bytes){NULL, n, 0};
    if (n >= MAP_MIN_BYTES) {
        void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (m != MAP_FAILED) {
            close(fd);
            f->data = m;
            f->mapped = 1;
            return 0;
        }
    }
    f->data = kiln_malloc(n ? n : 1);
    if (!f->data) {
        close(fd);
        return -1;
    }
    while (got < n) {
        ssize_t r = read(fd, f->data + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            close(fd);
            file_bytes_free(f);
            kiln_set_error(KILN_ERR_IO, "%s: read error", path);
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    return 0;
}

/* The folder part of `path` ("." if none), malloc'd. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        return kiln_strdup(".");
    if (slash == path)
        return kiln_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = kiln_malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = 0;
    }
    return d;
}

/* ---- model checks -------------------------------------------------------------- */

static void fix_str(char **s) {
    if (!*s)
        *s = g_empty;
}

static kiln_status check_graph(onnx_model *m, Onnx__GraphProto *g, const char *where);

static kiln_status check_attribute(onnx_model *m, Onnx__AttributeProto *a, const char *node,
                                   const char *where) {
    fix_str(&a->name);
    fix_str(&a->ref_attr_name);
    if (!a->name[0])
        return kiln_set_error(KILN_ERR_IO, "%s: %s: node '%s' has an attribute with no name",
                              m->path, where, node);
    if (a->t)
        fix_str(&a->t->name);
    for (size_t i = 0; i < a->n_tensors; i++)
        fix_str(&a->tensors[i]->name);
    char sub[512];
    snprintf(sub, sizeof sub, "%s > node '%s' attribute '%s'", where, node, a->name);
    if (a->g && check_graph(m, a->g, sub))
        return KILN_ERR_IO;
    for (size_t i = 0; i < a->n_graphs; i++)
        if (check_graph(m, a->graphs[i], sub))
            return KILN_ERR_IO;
    return KILN_OK;
}

static kiln_status check_values(onnx_model *m, size_t n, Onnx__ValueInfoProto **v, const char *kind,
                                const char *where) {
    for (size_t i = 0; i < n; i++) {
        fix_str(&v[i]->name);
        if (kind && !v[i]->name[0])
            return kiln_set_error(KILN_ERR_IO, "%s: %s: %s %zu has no name", m->path, where, kind,
                                  i);
    }
    return KILN_OK;
}

/* Fill absent names with "" and check what must be present, recursively. */
static kiln_status check_graph(onnx_model *m, Onnx__GraphProto *g, const char *where) {
    fix_str(&g->name);
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *nd = g->node[i];
        fix_str(&nd->name);
        fix_str(&nd->op_type);
        fix_str(&nd->domain);
        if (!nd->op_type[0])
            return kiln_set_error(KILN_ERR_IO, "%s: %s: node %zu ('%s') has no op_type", m->path,
                                  where, i, nd->name);
        if (onnx_model_opset(m, nd->domain) < 0)
            return kiln_set_error(KILN_ERR_IO,
                                  "%s: %s: node %zu ('%s', %s) uses domain '%s', which the model "
                                  "does not import (opset_import)",
                                  m->path, where, i, nd->name, nd->op_type,
                                  nd->domain[0] ? nd->domain : "ai.onnx");
        for (size_t k = 0; k < nd->n_attribute; k++)
            if (check_attribute(m, nd->attribute[k], nd->name[0] ? nd->name : nd->op_type, where))
                return KILN_ERR_IO;
    }
    for (size_t i = 0; i < g->n_initializer; i++) {
        fix_str(&g->initializer[i]->name);
        if (!g->initializer[i]->name[0])
            return kiln_set_error(KILN_ERR_IO, "%s: %s: initializer %zu has no name", m->path,
                                  where, i);
    }
    if (check_values(m, g->n_input, g->input, "input", where) ||
        check_values(m, g->n_output, g->output, "output", where) ||
        check_values(m, g->n_value_info, g->value_info, NULL, where))
        return KILN_ERR_IO;
    return KILN_OK;
}

static int is_default_domain(const char *d) {
    return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

static kiln_status check_model(onnx_model *m) {
    Onnx__ModelProto *p = m->proto;
    if (!p->has_ir_version || p->ir_version < 1)
        return kiln_set_error(KILN_ERR_IO, "%s: not a valid ONNX model (no ir_version)", m->path);
    if (!p->graph)
        return kiln_set_error(KILN_ERR_IO, "%s: not a valid ONNX model (no graph)", m->path);
    if (p->n_opset_import == 0)
        return kiln_set_error(KILN_ERR_IO, "%s: not a valid ONNX model (no opset_import)", m->path);
    for (size_t i = 0; i < p->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = p->opset_import[i];
        fix_str(&o->domain);
        if (!o->has_version || o->version < 1)
            return kiln_set_error(KILN_ERR_IO,
                                  "%s: opset_import of domain '%s' has no valid version", m->path,
                                  o->domain);
    }
    return check_graph(m, p->graph, "graph");
}

/* ---- models ---------------------------------------------------------------------- */

onnx_model *onnx_model_parse(const void *buf, size_t len, const char *name, const char *dir) {
    if (!name)
        name = "<memory>";
    if (!buf && len) {
        kiln_set_error(KILN_ERR_INVALID, "%s: no buffer", name);
        return NULL;
    }
    onnx_model *m = kiln_calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->path = kiln_strdup(name);
    if (!m->path)
        goto fail;
    if (dir) {
        m->dir = realpath(dir, NULL);
        if (!m->dir) {
            kiln_set_error(KILN_ERR_IO, "%s: model folder '%s': %s", name, dir, strerror(errno));
            goto fail;
        }
    }
    pb_alloc_init(&m->alloc, len);
    m->proto =
        (Onnx__ModelProto *)pb_unpack(&onnx__model_proto__descriptor, buf ? buf : (const void *)"",
                                      len, &m->alloc, name, "ONNX model");
    if (!m->proto || check_model(m))
        goto fail;
    return m;
fail:
    onnx_model_free(m);
    return NULL;
}

onnx_model *onnx_model_load(const char *path) {
    file_bytes f;
    if (file_bytes_load(path, &f) != 0)
        return NULL;
    char *dir = dir_of(path);
    onnx_model *m = dir ? onnx_model_parse(f.data, f.len, path, dir) : NULL;
    free(dir);
    file_bytes_free(&f);
    return m;
}

void onnx_model_free(onnx_model *m) {
    if (!m)
        return;
    if (m->proto)
        protobuf_c_message_free_unpacked(&m->proto->base, &m->alloc.base);
    free(m->path);
    free(m->dir);
    free(m);
}

const Onnx__ModelProto *onnx_model_proto(const onnx_model *m) {
    return m ? m->proto : NULL;
}

const char *onnx_model_path(const onnx_model *m) {
    return m ? m->path : "";
}

int64_t onnx_model_opset(const onnx_model *m, const char *domain) {
    int64_t best = -1;
    if (!m || !m->proto)
        return -1;
    int want_default = is_default_domain(domain);
    for (size_t i = 0; i < m->proto->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->proto->opset_import[i];
        int match = want_default ? is_default_domain(o->domain) : strcmp(o->domain, domain) == 0;
        if (match && o->version > best)
            best = o->version;
    }
    return best;
}

/* ---- dtypes -------------------------------------------------------------------- */

enum { F_NONE, F_INT32, F_INT64, F_FLOAT, F_DOUBLE, F_UINT64 };

/* Per TensorProto.DataType: ONNX's name, kiln's dtype (-1: none) and the typed
 * field that carries it when raw_data is absent. */
static const struct {
    const char *name;
    int kiln;
    int field;
} k_dtypes[] = {
    {"undefined", -1, F_NONE},
    {"float", KILN_FLOAT32, F_FLOAT},
    {"uint8", KILN_UINT8, F_INT32},
    {"int8", KILN_INT8, F_INT32},
    {"uint16", KILN_UINT16, F_INT32},
    {"int16", KILN_INT16, F_INT32},
    {"int32", KILN_INT32, F_INT32},
    {"int64", KILN_INT64, F_INT64},
    {"string", -1, F_NONE},
    {"bool", KILN_BOOL, F_INT32},
    {"float16", KILN_FLOAT16, F_INT32},
    {"double", KILN_FLOAT64, F_DOUBLE},
    {"uint32", KILN_UINT32, F_UINT64},
    {"uint64", KILN_UINT64, F_UINT64},
    {"complex64", -1, F_NONE},
    {"complex128", -1, F_NONE},
    {"bfloat16", KILN_BFLOAT16, F_INT32},
};
#define N_DTYPES ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

const char *onnx_dtype_name(int t) {
    return t >= 0 && t < N_DTYPES ? k_dtypes[t].name : "invalid";
}

int onnx_dtype_to_kiln(int t, kiln_dtype *out) {
    if (t < 0 || t >= N_DTYPES || k_dtypes[t].kiln < 0)
        return 0;
    if (out)
        *out = (kiln_dtype)k_dtypes[t].kiln;
    return 1;
}

/* ---- tensors ------------------------------------------------------------------- */

typedef struct {
    const char *file; /* message prefix, may be NULL */
    const char *dir;  /* realpath of the folder for external data, or NULL */
    const char *what;
} tensor_src;

static kiln_status terr(const tensor_src *s, kiln_status st, const char *fmt, ...)
    KILN_PRINTF(3, 4);
static kiln_status terr(const tensor_src *s, kiln_status st, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->file)
        return kiln_set_error(st, "%s: %s: %s", s->file, s->what, msg);
    return kiln_set_error(st, "%s: %s", s->what, msg);
}

static const char *dims_str(const Onnx__TensorProto *t, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < t->n_dims && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
    return buf;
}

static int is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Turn n little-endian elements of esize bytes at p into host order. */
static void le_to_host(void *p, size_t n, size_t esize) {
    if (esize == 1 || is_little_endian())
        return;
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++, b += esize)
        for (size_t j = 0; j < esize / 2; j++) {
            unsigned char c = b[j];
            b[j] = b[esize - 1 - j];
            b[esize - 1 - j] = c;
        }
}

static int parse_i64(const char *s, int64_t *out) {
    int64_t v = 0;
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
            return 0;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 1;
}

/* Does relative path `loc` have a ".." component? */
static int has_dotdot(const char *loc) {
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 1;
        p += n;
        while (*p == '/')
            p++;
    }
    return 0;
}

/* Open t's external data file and check that [offset, offset + nbytes) lies in
 * it. Returns the fd (and *offset) or -1 with an error. */
static int external_open(const tensor_src *s, const Onnx__TensorProto *t, int64_t nbytes,
                         int64_t *offset) {
    const char *loc = NULL;
    int64_t off = 0, len = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
        if (strcmp(k, "location") == 0) {
            loc = v;
        } else if (strcmp(k, "offset") == 0) {
            if (!parse_i64(v, &off))
                return terr(s, KILN_ERR_IO, "external data offset '%s' is not a number", v), -1;
        } else if (strcmp(k, "length") == 0) {
            if (!parse_i64(v, &len))
                return terr(s, KILN_ERR_IO, "external data length '%s' is not a number", v), -1;
        }
    }
    if (!loc || !loc[0])
        return terr(s, KILN_ERR_IO, "external data has no location"), -1;
    if (!s->dir)
        return terr(s, KILN_ERR_IO,
                    "external data '%s' refused: the model was not loaded from a folder", loc),
               -1;
    if (loc[0] == '/')
        return terr(s, KILN_ERR_IO,
                    "external data location '%s' is an absolute path (it must be relative to "
                    "the model folder)",
                    loc),
               -1;
    if (has_dotdot(loc))
        return terr(s, KILN_ERR_IO,
                    "external data location '%s' leaves the model folder ('..' is refused)", loc),
               -1;
    size_t dn = strlen(s->dir);
    char *joined = kiln_malloc(dn + strlen(loc) + 2);
    if (!joined)
        return -1;
    sprintf(joined, "%s/%s", s->dir, loc);
    char *real = realpath(joined, NULL);
    int err = errno;
    free(joined);
    if (!real)
        return terr(s, KILN_ERR_IO, "external data file '%s' cannot be opened: %s", loc,
                    strerror(err)),
               -1;
    int inside = (dn == 1 && s->dir[0] == '/') ||
                 (strncmp(real, s->dir, dn) == 0 && (real[dn] == '/' || real[dn] == 0));
    if (!inside) {
        terr(s, KILN_ERR_IO, "external data file '%s' resolves outside the model folder", loc);
        free(real);
        return -1;
    }
    int fd = open(real, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    err = errno;
    free(real);
    if (fd < 0)
        return terr(s, KILN_ERR_IO, "external data file '%s' cannot be opened: %s", loc,
                    strerror(err)),
               -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return terr(s, KILN_ERR_IO, "external data file '%s' is not a regular file", loc), -1;
    }
    int64_t size = (int64_t)st.st_size;
    const char *why = NULL;
    if (off > size)
        why = "offset is past the end of";
    else if (len >= 0 && len > size - off)
        why = "offset + length is past the end of";
    if (why) {
        close(fd);
        return terr(s, KILN_ERR_IO,
                    "external data %s '%s' (offset %lld, length %lld, file %lld bytes)", why, loc,
                    (long long)off, (long long)len, (long long)size),
               -1;
    }
    if (len < 0)
        len = size - off;
    if (len != nbytes) {
        char dims[256];
        close(fd);
        return terr(s, KILN_ERR_IO,
                    "external data in '%s' has %lld bytes but dims %s of %s need %lld", loc,
                    (long long)len, dims_str(t, dims, sizeof dims), onnx_dtype_name(t->data_type),
                    (long long)nbytes),
               -1;
    }
    *offset = off;
    return fd;
}

static kiln_status external_read(const tensor_src *s, int fd, int64_t off, void *dst,
                                 int64_t nbytes) {
    unsigned char *p = dst;
    int64_t got = 0;
    while (got < nbytes) {
        size_t want = (size_t)(nbytes - got > (1 << 30) ? (1 << 30) : nbytes - got);
        ssize_t r = pread(fd, p + got, want, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return terr(s, KILN_ERR_IO, "external data file: read error");
        got += r;
    }
    return KILN_OK;
}

/* The typed-field count for field kind f. */
static size_t typed_count(const Onnx__TensorProto *t, int f) {
    switch (f) {
    case F_INT32: return t->n_int32_data;
    case F_INT64: return t->n_int64_data;
    case F_FLOAT: return t->n_float_data;
    case F_DOUBLE: return t->n_double_data;
    case F_UINT64: return t->n_uint64_data;
    default: return 0;
    }
}

static const char *k_field_names[] = {"",           "int32_data",  "int64_data",
                                      "float_data", "double_data", "uint64_data"};

/* Copy int32_data into dst of dtype dt, checking each value's range. */
static kiln_status copy_int32_data(const tensor_src *s, const Onnx__TensorProto *t, kiln_dtype dt,
                                   void *dst) {
    int32_t lo = INT32_MIN, hi = INT32_MAX;
    if (dt == KILN_INT8)
        lo = -128, hi = 127;
    if (dt == KILN_UINT8)
        lo = 0, hi = 255;
    if (dt == KILN_INT16)
        lo = INT16_MIN, hi = INT16_MAX;
    if (dt == KILN_UINT16)
        lo = 0, hi = UINT16_MAX;
    if (dt == KILN_FLOAT16 || dt == KILN_BFLOAT16)
        lo = -32768, hi = 65535;
    for (size_t i = 0; i < t->n_int32_data; i++) {
        int32_t v = t->int32_data[i];
        if (dt != KILN_BOOL && (v < lo || v > hi))
            return terr(s, KILN_ERR_IO, "int32_data value %d at index %zu is out of range for %s",
                        (int)v, i, kiln_dtype_name(dt));
        switch (dt) {
        case KILN_INT8: ((int8_t *)dst)[i] = (int8_t)v; break;
        case KILN_UINT8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
        case KILN_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
        case KILN_INT16: ((int16_t *)dst)[i] = (int16_t)v; break;
        case KILN_UINT16:
        case KILN_FLOAT16:
        case KILN_BFLOAT16: ((uint16_t *)dst)[i] = (uint16_t)(v & 0xffff); break;
        default: ((int32_t *)dst)[i] = v; break;
        }
    }
    return KILN_OK;
}

/* Copy uint64_data into dst of dtype uint32, checking each value's range. */
static kiln_status copy_uint64_data_u32(const tensor_src *s, const Onnx__TensorProto *t,
                                        void *dst) {
    for (size_t i = 0; i < t->n_uint64_data; i++) {
        uint64_t v = t->uint64_data[i];
        if (v > UINT32_MAX)
            return terr(s, KILN_ERR_IO,
                        "uint64_data value %llu at index %zu is out of range for "
                        "uint32",
                        (unsigned long long)v, i);
        ((uint32_t *)dst)[i] = (uint32_t)v;
    }
    return KILN_OK;
}

/* A new array over t's raw_data block, which it takes from allocator a (t
 * is left without raw_data), if the block is a large one (PB_LARGE); else
 * NULL, with no error unless out of memory. t's size is checked. */
static kiln_ndarray *take_raw(pb_alloc *a, Onnx__TensorProto *t, kiln_dtype dt) {
    size_t total, head;
    pb_block(t->raw_data.data, &total, &head);
    if (head != KILN_ALIGNMENT)
        return NULL;
    kiln_ndarray *arr =
        ndarray_adopt(t->raw_data.data - head, (int64_t)head, dt, (int)t->n_dims, t->dims);
    if (arr) {
        a->used -= total;
        t->raw_data.data = NULL;
        t->raw_data.len = 0;
    }
    return arr;
}

/* t's values as a new array; with `take` (t itself, writable, and the
 * allocator that made it) a large raw_data becomes the array's storage
 * instead of being copied. */
static kiln_ndarray *tensor_convert(const tensor_src *s, const Onnx__TensorProto *t,
                                    Onnx__TensorProto *take, pb_alloc *take_alloc) {
    char dims[256];
    if (!t)
        return terr(s, KILN_ERR_INVALID, "no tensor"), NULL;
    int odt = t->has_data_type ? t->data_type : 0;
    kiln_dtype dt;
    if (odt <= 0 || odt >= N_DTYPES)
        return terr(s, KILN_ERR_IO, "invalid data_type %d", odt), NULL;
    if (!onnx_dtype_to_kiln(odt, &dt))
        return terr(s, KILN_ERR_UNSUPPORTED, "unsupported dtype %s", onnx_dtype_name(odt)), NULL;
    if (t->segment)
        return terr(s, KILN_ERR_UNSUPPORTED, "segmented tensors are not supported"), NULL;
    if (t->n_dims > KILN_MAX_NDIM)
        return terr(s, KILN_ERR_IO, "has %zu dims; at most %d are supported", t->n_dims,
                    KILN_MAX_NDIM),
               NULL;
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++)
        if (t->dims[i] < 0)
            return terr(s, KILN_ERR_IO, "dim %zu is negative (dims %s)", i,
                        dims_str(t, dims, sizeof dims)),
                   NULL;
    for (size_t i = 0; i < t->n_dims; i++)
        if (!kiln_mul_ok(numel, t->dims[i], &numel) || numel > ONNX_MAX_NUMEL)
            return terr(s, KILN_ERR_IO, "dims %s have more than 2^34 elements",
                        dims_str(t, dims, sizeof dims)),
                   NULL;
    size_t esize = kiln_dtype_size(dt);
    int64_t nbytes = numel * (int64_t)esize;
    int loc = t->has_data_location ? (int)t->data_location : 0;
    if (loc != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT &&
        loc != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return terr(s, KILN_ERR_IO, "invalid data_location %d", loc), NULL;

    /* check that the data is there and has the right size, then allocate */
    int fd = -1, field = k_dtypes[odt].field;
    int64_t off = 0;
    if (loc == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if ((fd = external_open(s, t, nbytes, &off)) < 0)
            return NULL;
    } else if (t->has_raw_data) {
        if ((int64_t)t->raw_data.len != nbytes)
            return terr(s, KILN_ERR_IO, "raw_data has %zu bytes but dims %s of %s need %lld",
                        t->raw_data.len, dims_str(t, dims, sizeof dims), onnx_dtype_name(odt),
                        (long long)nbytes),
                   NULL;
    } else {
        for (int f = F_INT32; f <= F_UINT64; f++)
            if (f != field && typed_count(t, f))
                return terr(s, KILN_ERR_IO, "dtype %s cannot hold its values in %s",
                            onnx_dtype_name(odt), k_field_names[f]),
                       NULL;
        size_t have = typed_count(t, field);
        if ((int64_t)have != numel) {
            if (have == 0)
                return terr(s, KILN_ERR_IO, "has no data (dims %s need %lld values)",
                            dims_str(t, dims, sizeof dims), (long long)numel),
                       NULL;
            return terr(s, KILN_ERR_IO, "%s has %zu values but dims %s need %lld",
                        k_field_names[field], have, dims_str(t, dims, sizeof dims),
                        (long long)numel),
                   NULL;
        }
    }
    kiln_ndarray *a = NULL;
    if (take && t->has_raw_data && (size_t)nbytes >= PB_LARGE &&
        (a = take_raw(take_alloc, take, dt)) != NULL) {
        void *own = kiln_ndarray_data(a);
        le_to_host(own, (size_t)numel, esize);
        if (dt == KILN_BOOL)
            for (int64_t i = 0; i < numel; i++)
                ((uint8_t *)own)[i] = ((uint8_t *)own)[i] != 0;
        return a;
    }
    a = ndarray_empty_uninit(dt, (int)t->n_dims, t->dims); /* every byte is written below */
    if (!a) {
        if (fd >= 0)
            close(fd);
        kiln_error_prefix("%s%s%s", s->file ? s->file : "", s->file ? ": " : "", s->what);
        return NULL;
    }
    void *dst = kiln_ndarray_data(a);
    kiln_status st = KILN_OK;
    if (fd >= 0) {
        st = external_read(s, fd, off, dst, nbytes);
        close(fd);
        le_to_host(dst, (size_t)numel, esize);
    } else if (t->has_raw_data) {
        if (nbytes)
            memcpy(dst, t->raw_data.data, (size_t)nbytes);
        le_to_host(dst, (size_t)numel, esize);
    } else if (field == F_INT32) {
        st = copy_int32_data(s, t, dt, dst);
    } else if (dt == KILN_UINT32) {
        st = copy_uint64_data_u32(s, t, dst);
    } else if (nbytes) {
        const void *src = field == F_INT64    ? (const void *)t->int64_data
                          : field == F_FLOAT  ? (const void *)t->float_data
                          : field == F_UINT64 ? (const void *)t->uint64_data
                                              : (const void *)t->double_data;
        memcpy(dst, src, (size_t)nbytes);
    }
    if (st == KILN_OK && dt == KILN_BOOL) {
        uint8_t *b = dst;
        for (int64_t i = 0; i < numel; i++)
            b[i] = b[i] != 0;
    }
    if (st != KILN_OK) {
        kiln_ndarray_free(a);
        return NULL;
    }
    return a;
}

kiln_ndarray *onnx_tensor_to_ndarray(const onnx_model *m, const Onnx__TensorProto *t,
                                     const char *what) {
    tensor_src s = {m ? m->path : NULL, m ? m->dir : NULL, what ? what : "tensor"};
    return tensor_convert(&s, t, NULL, NULL);
}

kiln_ndarray *onnx_tensor_take_ndarray(onnx_model *m, Onnx__TensorProto *t, const char *what) {
    tensor_src s = {m->path, m->dir, what ? what : "tensor"};
    return tensor_convert(&s, t, t, &m->alloc);
}

kiln_ndarray *onnx_load_tensor_file(const char *path, char **name_out) {
    if (name_out)
        *name_out = NULL;
    file_bytes f;
    if (file_bytes_load(path, &f) != 0)
        return NULL;
    pb_alloc a;
    pb_alloc_init(&a, f.len);
    Onnx__TensorProto *t = (Onnx__TensorProto *)pb_unpack(&onnx__tensor_proto__descriptor, f.data,
                                                          f.len, &a, path, "ONNX tensor");
    file_bytes_free(&f);
    if (!t)
        return NULL;
    kiln_ndarray *arr = NULL;
    char *dir = dir_of(path), *real = dir ? realpath(dir, NULL) : NULL;
    const char *nm = t->name ? t->name : "";
    char what[300];
    if (nm[0])
        snprintf(what, sizeof what, "tensor '%.256s'", nm);
    else
        snprintf(what, sizeof what, "tensor");
    tensor_src s = {path, real, what};
    if (dir)
        arr = tensor_convert(&s, t, NULL, NULL);
    if (arr && name_out && !(*name_out = kiln_strdup(nm))) {
        kiln_ndarray_free(arr);
        arr = NULL;
    }
    free(real);
    free(dir);
    protobuf_c_message_free_unpacked(&t->base, &a.base);
    return arr;
}
