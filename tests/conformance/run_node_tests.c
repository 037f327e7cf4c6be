/* run_node_tests.c: the ONNX backend node-test conformance runner.
 *
 *   kiln_conformance [--data DIR] [--filter SUBSTR] [--sample N] [--expected FILE]
 *                    [--list-failures] [--jobs N] [--timeout SECONDS] [--leak-check]
 *
 * For every test folder DIR/test_* (sorted by name) it imports model.onnx
 * with the shapes of test_data_set_0/input_N.pb, compiles it to a temporary
 * package, runs it and compares every output with output_N.pb: shape and
 * dtype exactly, values within |got - exp| <= atol + rtol * |exp| (ONNX
 * Runtime's rtol 1e-3, atol 1e-5; NaN matches NaN; ints and bools exactly).
 * Each test runs in a forked child (its own process group, killed after the
 * timeout) so a crash or a hang is a failure, not the end of the run.
 *
 * --expected FILE lists known failures ("test_name  reason", '#' comments):
 * the exit status is 1 if a test not listed fails, or if the file names a
 * test that does not exist; listed tests that now pass are printed under
 * "UNEXPECTED PASSES:" (exit status 0). --list-failures writes the failures
 * in that format, grouped by reason, on stdout (the per-test lines then go to
 * stderr): `kiln_conformance --list-failures > expected_failures.txt`.
 * --sample N runs every Nth test (after --filter). --leak-check (for ASan
 * builds) makes a child that leaks fail. KILN_CONFORMANCE_FILTER in the
 * environment acts as --filter.
 *
 * The ONNX test data stores bfloat16 tensors as uint16 (numpy has no
 * bfloat16): a uint16 .pb whose graph input or output is declared bfloat16
 * is read as bfloat16, bit for bit. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frontend/onnx_load.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "kiln/schedule.h"

#define RTOL 1e-3
#define ATOL 1e-5
#define REASON_MAX 200 /* bytes of a reason, including the NUL */
#define MAX_INPUTS 64

/* ---- small helpers ------------------------------------------------------ */

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "kiln_conformance: out of memory\n");
        exit(2);
    }
    return p;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* A growable string. */
typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            fprintf(stderr, "kiln_conformance: out of memory\n");
            exit(2);
        }
        b->buf = nb;
        b->cap = cap;
    }
    vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

/* Replace every occurrence of `what` (if non-empty) in s with `with`, in place
 * (with is never longer than what). */
static void strip_all(char *s, const char *what, const char *with) {
    size_t wl = strlen(what), rl = strlen(with);
    if (!wl || rl > wl)
        return;
    char *p;
    while ((p = strstr(s, what)) != NULL) {
        memcpy(p, with, rl);
        memmove(p + rl, p + wl, strlen(p + wl) + 1);
    }
}

/* Make a one-line reason out of a (possibly multi-line) message: drop the
 * model path and the package path, join lines with spaces, collapse runs of
 * spaces and trim to fit the reason buffer. */
static void make_reason(char *out, size_t cap, const char *prefix, const char *msg,
                        const char *model_path, const char *pkg_path) {
    char *m = xstrdup(msg && *msg ? msg : "(no error message)");
    if (model_path && *model_path) {
        size_t ml = strlen(model_path) + 3;
        char *mp = xmalloc(ml);
        snprintf(mp, ml, "%s: ", model_path);
        strip_all(m, mp, "");
        strip_all(m, model_path, "model.onnx");
        free(mp);
    }
    if (pkg_path && *pkg_path)
        strip_all(m, pkg_path, "<package>");
    size_t o = 0;
    int space = 0;
    o += (size_t)snprintf(out, cap, "%s", prefix);
    if (o >= cap)
        o = cap - 1;
    for (const char *p = m; *p && o + 1 < cap; p++) {
        if (isspace((unsigned char)*p)) {
            space = 1;
            continue;
        }
        if (space && o > 0 && out[o - 1] != ' ')
            out[o++] = ' ';
        if (o + 1 >= cap)
            break;
        space = 0;
        out[o++] = *p;
    }
    out[o] = '\0';
    /* mark a trimmed message */
    if (o + 1 >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
    free(m);
}

/* ---- listing the tests -------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the folders DIR/test_* that hold a model.onnx, sorted. */
static char **list_tests(const char *dir, int *count) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "kiln_conformance: cannot open %s: %s\n", dir, strerror(errno));
        return NULL;
    }
    int n = 0, cap = 64;
    char **names = xmalloc(sizeof(char *) * (size_t)cap);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "test_", 5) != 0)
            continue;
        size_t pl = strlen(dir) + strlen(e->d_name) + 16;
        char *p = xmalloc(pl);
        snprintf(p, pl, "%s/%s/model.onnx", dir, e->d_name);
        struct stat st;
        int ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
        free(p);
        if (!ok)
            continue;
        if (n == cap) {
            cap *= 2;
            char **nn = realloc(names, sizeof(char *) * (size_t)cap);
            if (!nn) {
                fprintf(stderr, "kiln_conformance: out of memory\n");
                exit(2);
            }
            names = nn;
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    *count = n;
    return names;
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- comparing outputs -------------------------------------------------- */

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | man << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int is_float(kiln_dtype dt) {
    return dt == KILN_FLOAT32 || dt == KILN_FLOAT64 || dt == KILN_FLOAT16 || dt == KILN_BFLOAT16;
}

/* Element i of a contiguous array as a double (floats) or int64 (others). */
static double get_f(const void *data, kiln_dtype dt, int64_t i) {
    switch (dt) {
    case KILN_FLOAT32: return ((const float *)data)[i];
    case KILN_FLOAT64: return ((const double *)data)[i];
    case KILN_FLOAT16: return half_to_float(((const uint16_t *)data)[i]);
    case KILN_BFLOAT16: return bf16_to_float(((const uint16_t *)data)[i]);
    default: return 0;
    }
}

static int64_t get_i(const void *data, kiln_dtype dt, int64_t i) {
    switch (dt) {
    case KILN_INT8: return ((const int8_t *)data)[i];
    case KILN_UINT8: return ((const uint8_t *)data)[i];
    case KILN_INT32: return ((const int32_t *)data)[i];
    case KILN_INT64: return ((const int64_t *)data)[i];
    case KILN_INT16: return ((const int16_t *)data)[i];
    case KILN_UINT16: return ((const uint16_t *)data)[i];
    case KILN_UINT32: return ((const uint32_t *)data)[i];
    case KILN_UINT64: return (int64_t)((const uint64_t *)data)[i]; /* compared as bit patterns */
    case KILN_BOOL: return ((const uint8_t *)data)[i] != 0;
    default: return 0;
    }
}

static void shape_str(char *out, size_t cap, const kiln_ndarray *a) {
    size_t o = (size_t)snprintf(out, cap, "[");
    for (int d = 0; d < kiln_ndarray_ndim(a) && o < cap; d++)
        o += (size_t)snprintf(out + o, cap - o, "%s%lld", d ? "," : "",
                              (long long)kiln_ndarray_dim(a, d));
    if (o < cap)
        snprintf(out + o, cap - o, "]");
}

/* *a read as bfloat16 if it is uint16 and vi declares bfloat16 (see the top
 * comment); 0 if out of memory. */
static int bf16_as_declared(kiln_ndarray **a, const Onnx__ValueInfoProto *vi) {
    if (kiln_ndarray_dtype(*a) != KILN_UINT16 || !vi || !vi->type ||
        vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        vi->type->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16)
        return 1;
    int64_t dims[KILN_MAX_NDIM];
    int nd = kiln_ndarray_ndim(*a);
    for (int d = 0; d < nd; d++)
        dims[d] = kiln_ndarray_dim(*a, d);
    kiln_ndarray *b = kiln_ndarray_empty(KILN_BFLOAT16, nd, dims);
    if (!b)
        return 0;
    memcpy(kiln_ndarray_data(b), kiln_ndarray_data(*a), (size_t)kiln_ndarray_numel(*a) * 2);
    kiln_ndarray_free(*a);
    *a = b;
    return 1;
}

/* 1 if `got` matches `exp`; else 0 with a reason. */
static int compare(const kiln_ndarray *got, const kiln_ndarray *exp, int k, char *reason,
                   size_t cap) {
    kiln_dtype gd = kiln_ndarray_dtype(got), ed = kiln_ndarray_dtype(exp);
    if (gd != ed) {
        snprintf(reason, cap, "wrong dtype: output %d is %s, expected %s", k, kiln_dtype_name(gd),
                 kiln_dtype_name(ed));
        return 0;
    }
    int same = kiln_ndarray_ndim(got) == kiln_ndarray_ndim(exp);
    for (int d = 0; same && d < kiln_ndarray_ndim(got); d++)
        same = kiln_ndarray_dim(got, d) == kiln_ndarray_dim(exp, d);
    if (!same) {
        char gs[96], es[96];
        shape_str(gs, sizeof gs, got);
        shape_str(es, sizeof es, exp);
        snprintf(reason, cap, "wrong shape: output %d is %.60s, expected %.60s", k, gs, es);
        return 0;
    }
    if (!kiln_ndarray_is_contiguous(got) || !kiln_ndarray_is_contiguous(exp)) {
        snprintf(reason, cap, "output %d is not contiguous", k);
        return 0;
    }
    int64_t n = kiln_ndarray_numel(exp);
    const void *g = kiln_ndarray_data(got), *e = kiln_ndarray_data(exp);
    int64_t nbad = 0, worst = -1;
    double worst_err = -1;
    for (int64_t i = 0; i < n; i++) {
        if (is_float(ed)) {
            double gv = get_f(g, gd, i), ev = get_f(e, ed, i);
            if (gv == ev || (isnan(gv) && isnan(ev)))
                continue;
            double err = fabs(gv - ev);
            if (err <= ATOL + RTOL * fabs(ev))
                continue;
            if (isnan(err))
                err = INFINITY; /* NaN vs number, or inf vs -inf */
            nbad++;
            if (err > worst_err) {
                worst_err = err;
                worst = i;
            }
        } else {
            int64_t gv = get_i(g, gd, i), ev = get_i(e, ed, i);
            if (gv == ev)
                continue;
            double err = fabs((double)gv - (double)ev);
            nbad++;
            if (err > worst_err) {
                worst_err = err;
                worst = i;
            }
        }
    }
    if (nbad) {
        if (is_float(ed))
            snprintf(reason, cap,
                     "wrong values: max abs err %.3g at index %lld (got %.6g, expected %.6g; "
                     "%lld of %lld wrong, output %d)",
                     worst_err, (long long)worst, get_f(g, gd, worst), get_f(e, ed, worst),
                     (long long)nbad, (long long)n, k);
        else
            snprintf(reason, cap,
                     "wrong values: max abs err %.3g at index %lld (got %lld, expected %lld; "
                     "%lld of %lld wrong, output %d)",
                     worst_err, (long long)worst, (long long)get_i(g, gd, worst),
                     (long long)get_i(e, ed, worst), (long long)nbad, (long long)n, k);
        return 0;
    }
    return 1;
}

/* ---- running one test (in the child) ------------------------------------ */

/* Count files prefix0.pb, prefix1.pb, ... in dir. */
static int count_pb(const char *dir, const char *prefix) {
    int n = 0;
    for (;;) {
        char p[4200];
        snprintf(p, sizeof p, "%.4095s/%.64s%d.pb", dir, prefix, n);
        if (access(p, R_OK) != 0)
            return n;
        n++;
    }
}

/* Run test `name`; returns 1 on pass, else 0 with a reason. */
static int run_test(const char *data_dir, const char *name, const char *pkg, char *reason,
                    size_t cap) {
    char model[4096], set[4096];
    snprintf(model, sizeof model, "%s/%s/model.onnx", data_dir, name);
    snprintf(set, sizeof set, "%s/%s/test_data_set_0", data_dir, name);
    int pass = 0;
    onnx_model *m = NULL;
    kiln_graph *g = NULL;
    kiln_build_options *opts = NULL;
    kiln_executor *ex = NULL;
    kiln_ndarray *ins[MAX_INPUTS] = {0}, *outs[MAX_INPUTS] = {0};
    const char *in_names[MAX_INPUTS] = {0};
    const Onnx__ValueInfoProto *in_vis[MAX_INPUTS] = {0};
    int nin_files = count_pb(set, "input_"), nout_files = count_pb(set, "output_");
    int nin = 0;
    sbuf shapes = {0};

    /* the graph inputs that are not initializers, in order */
    m = onnx_model_load(model);
    if (!m) {
        make_reason(reason, cap, "cannot read model: ", kiln_last_error(), model, NULL);
        goto done;
    }
    const Onnx__GraphProto *gp = onnx_model_proto(m)->graph;
    for (size_t i = 0; gp && i < gp->n_input; i++) {
        int init = 0;
        for (size_t j = 0; j < gp->n_initializer && !init; j++)
            init = strcmp(gp->initializer[j]->name, gp->input[i]->name) == 0;
        if (init)
            continue;
        if (nin == MAX_INPUTS) {
            snprintf(reason, cap, "more than %d inputs", MAX_INPUTS);
            goto done;
        }
        in_vis[nin] = gp->input[i];
        in_names[nin++] = gp->input[i]->name;
    }
    /* kiln runs tensors only: say so before the .pb files fail to parse */
    for (int io = 0; gp && io < 2; io++) {
        size_t cnt = io ? gp->n_output : gp->n_input;
        for (size_t i = 0; i < cnt; i++) {
            const Onnx__ValueInfoProto *vi = io ? gp->output[i] : gp->input[i];
            int vc = vi->type ? (int)vi->type->value_case : 0;
            const char *kind = vc == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE   ? "a sequence"
                               : vc == ONNX__TYPE_PROTO__VALUE_MAP_TYPE      ? "a map"
                               : vc == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? "an optional"
                               : vc == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE
                                   ? "a sparse tensor"
                                   : NULL;
            if (kind) {
                snprintf(reason, cap,
                         "graph %s '%.60s' is %s, not a tensor (kiln runs tensors "
                         "only)",
                         io ? "output" : "input", vi->name, kind);
                goto done;
            }
        }
    }
    if (nin_files != nin) {
        snprintf(reason, cap, "the model has %d inputs but the test data %d", nin, nin_files);
        goto done;
    }
    if (nout_files > MAX_INPUTS) {
        snprintf(reason, cap, "more than %d outputs", MAX_INPUTS);
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/input_%d.pb", set, i);
        ins[i] = onnx_load_tensor_file(p, NULL);
        if (!ins[i] || !bf16_as_declared(&ins[i], in_vis[i])) {
            char pre[64];
            snprintf(pre, sizeof pre, "cannot read input_%d.pb: ", i);
            make_reason(reason, cap, pre, kiln_last_error(), p, NULL);
            goto done;
        }
        sb_printf(&shapes, "%s%s:[", i ? "," : "", in_names[i]);
        for (int d = 0; d < kiln_ndarray_ndim(ins[i]); d++)
            sb_printf(&shapes, "%s%lld", d ? "," : "", (long long)kiln_ndarray_dim(ins[i], d));
        sb_printf(&shapes, "]");
    }
    for (int i = 0; i < nout_files; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/output_%d.pb", set, i);
        outs[i] = onnx_load_tensor_file(p, NULL);
        if (!outs[i] ||
            !bf16_as_declared(&outs[i], (size_t)i < gp->n_output ? gp->output[i] : NULL)) {
            char pre[64];
            snprintf(pre, sizeof pre, "cannot read output_%d.pb: ", i);
            make_reason(reason, cap, pre, kiln_last_error(), p, NULL);
            goto done;
        }
    }

    g = kiln_onnx_import(model, shapes.buf);
    if (!g) {
        make_reason(reason, cap, "", kiln_last_error(), model, NULL);
        goto done;
    }
    opts = kiln_build_options_new();
    if (!opts || kiln_build_options_set(opts, "cflags", "-O1 -march=native") != KILN_OK) {
        make_reason(reason, cap, "build options: ", kiln_last_error(), NULL, NULL);
        goto done;
    }
    if (kiln_graph_compile(g, pkg, opts) != KILN_OK) {
        make_reason(reason, cap, "", kiln_last_error(), model, pkg);
        goto done;
    }
    ex = kiln_executor_load(pkg);
    if (!ex) {
        make_reason(reason, cap, "load: ", kiln_last_error(), model, pkg);
        goto done;
    }
    for (int i = 0; i < nin; i++)
        if (kiln_executor_set_input(ex, in_names[i], ins[i]) != KILN_OK) {
            make_reason(reason, cap, "set_input: ", kiln_last_error(), model, pkg);
            goto done;
        }
    if (kiln_executor_run(ex) != KILN_OK) {
        make_reason(reason, cap, "run: ", kiln_last_error(), model, pkg);
        goto done;
    }
    if (kiln_executor_num_outputs(ex) != nout_files) {
        snprintf(reason, cap, "wrong output count: %d, expected %d", kiln_executor_num_outputs(ex),
                 nout_files);
        goto done;
    }
    for (int i = 0; i < nout_files; i++)
        if (!compare(kiln_executor_output(ex, i), outs[i], i, reason, cap))
            goto done;
    pass = 1;
done:
    kiln_executor_free(ex);
    kiln_build_options_free(opts);
    kiln_graph_free(g);
    for (int i = 0; i < MAX_INPUTS; i++) {
        kiln_ndarray_free(ins[i]);
        kiln_ndarray_free(outs[i]);
    }
    free(shapes.buf);
    onnx_model_free(m);
    return pass;
}

/* ---- the scheduler (parent) --------------------------------------------- */

typedef struct {
    char *name;
    int done, pass;
    char reason[REASON_MAX];
} result;

typedef struct {
    pid_t pid;
    int fd;
    int test; /* index into the results */
    double start;
    char pkg[4096];
    char buf[REASON_MAX + 8];
    size_t len;
    int killed;
} slot;

/* --leak-check: children exit through exit(), so LeakSanitizer checks them,
 * and a child that exits non-zero after reporting its result fails. */
static int g_leak_check;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int start_child(slot *s, const char *data_dir, result *r, int test, const char *tmp) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return 0;
    snprintf(s->pkg, sizeof s->pkg, "%s/kiln_conf_%ld_%s.tar", tmp, (long)getpid(), r[test].name);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        setpgid(0, 0);
        close(fds[0]);
        /* the children share the cores: one thread each */
        kiln_set_num_threads(1);
        char reason[REASON_MAX] = "";
        int pass = run_test(data_dir, r[test].name, s->pkg, reason, sizeof reason);
        char msg[REASON_MAX + 4];
        int n = snprintf(msg, sizeof msg, "%c%s", pass ? 'P' : 'F', pass ? "" : reason);
        if (n > (int)sizeof msg - 1)
            n = (int)sizeof msg - 1;
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(fds[1], msg + off, (size_t)(n - off));
            if (w <= 0)
                break;
            off += w;
        }
        close(fds[1]);
        /* exit() runs LeakSanitizer in an ASan build; _exit() skips it */
        if (g_leak_check)
            exit(0);
        _exit(0);
    }
    setpgid(pid, pid); /* also here, against the race with the child's own call */
    close(fds[1]);
    s->pid = pid;
    s->fd = fds[0];
    s->test = test;
    s->start = now_s();
    s->len = 0;
    s->killed = 0;
    return 1;
}

/* The child has closed its pipe (or was killed): reap it and record the result. */
static void finish_child(slot *s, result *r) {
    int status = 0;
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR) {
    }
    /* the compiler it started may still be around if it was killed */
    if (s->killed || WIFSIGNALED(status))
        kill(-s->pid, SIGKILL);
    close(s->fd);
    unlink(s->pkg);
    result *res = &r[s->test];
    s->buf[s->len] = '\0';
    res->done = 1;
    if (s->killed) {
        res->pass = 0;
        snprintf(res->reason, sizeof res->reason, "timed out");
    } else if (WIFSIGNALED(status)) {
        res->pass = 0;
        snprintf(res->reason, sizeof res->reason, "crashed (signal %d)", WTERMSIG(status));
    } else if (s->len == 0) {
        res->pass = 0;
        snprintf(res->reason, sizeof res->reason, "crashed (exit status %d, no result)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (g_leak_check && WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        res->pass = 0;
        snprintf(res->reason, sizeof res->reason,
                 "exit status %d after the test (LeakSanitizer found a leak?); result was: %.100s",
                 WEXITSTATUS(status), s->buf[0] == 'P' ? "PASS" : s->buf + 1);
    } else {
        res->pass = s->buf[0] == 'P';
        snprintf(res->reason, sizeof res->reason, "%s", res->pass ? "" : s->buf + 1);
        if (!res->pass && !res->reason[0])
            snprintf(res->reason, sizeof res->reason, "failed");
    }
    s->pid = 0;
}

static void print_result(FILE *f, const result *r) {
    if (r->pass)
        fprintf(f, "PASS %s\n", r->name);
    else
        fprintf(f, "FAIL %s: %s\n", r->name, r->reason);
    fflush(f);
}

/* Run the tests with at most `jobs` children at once, printing the results
 * in order as they become known. */
static void run_all(const char *data_dir, result *r, int n, int jobs, double timeout, FILE *out) {
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    slot *slots = calloc((size_t)jobs, sizeof(slot));
    struct pollfd *pfds = calloc((size_t)jobs, sizeof(struct pollfd));
    int *pidx = calloc((size_t)jobs, sizeof(int));
    if (!slots || !pfds || !pidx) {
        fprintf(stderr, "kiln_conformance: out of memory\n");
        exit(2);
    }
    int next = 0, running = 0, printed = 0;
    while (next < n || running > 0) {
        for (int j = 0; j < jobs && next < n; j++) {
            if (slots[j].pid)
                continue;
            if (!start_child(&slots[j], data_dir, r, next, tmp)) {
                r[next].done = 1;
                r[next].pass = 0;
                snprintf(r[next].reason, sizeof r[next].reason, "cannot fork: %s", strerror(errno));
            } else {
                running++;
            }
            next++;
        }
        int np = 0;
        for (int j = 0; j < jobs; j++)
            if (slots[j].pid) {
                pfds[np].fd = slots[j].fd;
                pfds[np].events = POLLIN;
                pfds[np].revents = 0;
                pidx[np++] = j;
            }
        if (np) {
            int pr = poll(pfds, (nfds_t)np, 200);
            if (pr < 0 && errno != EINTR) {
                perror("kiln_conformance: poll");
                exit(2);
            }
            for (int k = 0; k < np && pr > 0; k++) {
                if (!pfds[k].revents)
                    continue;
                slot *s = &slots[pidx[k]];
                char tmpb[256];
                ssize_t rd = read(s->fd, tmpb, sizeof tmpb);
                if (rd > 0) {
                    size_t room = sizeof s->buf - 1 - s->len;
                    size_t c = (size_t)rd < room ? (size_t)rd : room;
                    memcpy(s->buf + s->len, tmpb, c);
                    s->len += c;
                } else if (rd == 0 || (rd < 0 && errno != EINTR && errno != EAGAIN)) {
                    finish_child(s, r);
                    running--;
                }
            }
        }
        double t = now_s();
        for (int j = 0; j < jobs; j++)
            if (slots[j].pid && !slots[j].killed && t - slots[j].start > timeout) {
                slots[j].killed = 1;
                kill(-slots[j].pid, SIGKILL);
                kill(slots[j].pid, SIGKILL);
            }
        while (printed < n && r[printed].done)
            print_result(out, &r[printed++]);
    }
    while (printed < n && r[printed].done)
        print_result(out, &r[printed++]);
    free(slots);
    free(pfds);
    free(pidx);
}

/* ---- expected failures and --list-failures ------------------------------ */

typedef struct {
    char *name;
    int seen; /* 1 if the test exists */
} expect;

static expect *read_expected(const char *path, int *count) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "kiln_conformance: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    int n = 0, cap = 64;
    expect *e = xmalloc(sizeof(expect) * (size_t)cap);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        char *q = p;
        while (*q && !isspace((unsigned char)*q))
            q++;
        *q = '\0';
        if (n == cap) {
            cap *= 2;
            expect *ne = realloc(e, sizeof(expect) * (size_t)cap);
            if (!ne) {
                fprintf(stderr, "kiln_conformance: out of memory\n");
                exit(2);
            }
            e = ne;
        }
        e[n].name = xstrdup(p);
        e[n].seen = 0;
        n++;
    }
    fclose(f);
    *count = n;
    return e;
}

static int find_name(char **names, int n, const char *name) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(names[mid], name);
        if (!c)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

/* Skip "node %N (op): " (a graph node in a compile error); the op into op. */
static const char *skip_graph_node(const char *p, char *op, size_t cap) {
    if (strncmp(p, "node %", 6) != 0)
        return p;
    const char *q = p + 6;
    while (isdigit((unsigned char)*q))
        q++;
    if (strncmp(q, " (", 2) != 0)
        return p;
    const char *e = strstr(q, "): ");
    if (!e)
        return p;
    if (op)
        snprintf(op, cap, "%.*s", (int)(e - q - 2), q + 2);
    return e + 3;
}

/* The category a failure is listed under: the unsupported ops, or the op and
 * the reason with quoted names, numbers and parentheses folded away. */
static void category(const char *reason, char *out, size_t cap) {
    const char *u = strstr(reason, "ops kiln does not support:");
    if (u) {
        /* "... support: Op (opset 13) at node 'x' Op2 (opset 13) at node 'y'" */
        const char *p = u + strlen("ops kiln does not support:");
        char seen[16][64];
        int ns = 0;
        for (;;) {
            while (*p == ' ')
                p++;
            if (!*p || *p == '.')
                break;
            const char *s0 = p;
            while (*p && *p != ' ')
                p++;
            char op[64];
            snprintf(op, sizeof op, "%.*s", (int)(p - s0), s0);
            int dup = 0;
            for (int i = 0; i < ns && !dup; i++)
                dup = strcmp(seen[i], op) == 0;
            if (!dup && ns < 16)
                snprintf(seen[ns++], sizeof seen[0], "%s", op);
            const char *nx = strstr(p, " at node '");
            if (!nx)
                break;
            nx = strchr(nx + 10, '\'');
            if (!nx)
                break;
            p = nx + 1;
        }
        qsort(seen, (size_t)ns, sizeof seen[0], cmp_cstr);
        sbuf b = {0};
        for (int i = 0; i < ns; i++)
            sb_printf(&b, "%s%s", i ? ", " : "", seen[i]);
        snprintf(out, cap, "unsupported op%s: %s", ns > 1 ? "s" : "", b.buf ? b.buf : "?");
        free(b.buf);
        return;
    }
    if (!strncmp(reason, "wrong values", 12) || !strncmp(reason, "wrong shape", 11) ||
        !strncmp(reason, "wrong dtype", 11)) {
        snprintf(out, cap, "%.12s", reason);
        return;
    }
    if (!strncmp(reason, "crashed", 7) || !strncmp(reason, "timed out", 9)) {
        snprintf(out, cap, "%s", reason);
        return;
    }
    char op[64] = "";
    const char *p = reason;
    const char *prefix = "";
    if (!strncmp(p, "cannot read ", 12)) {
        const char *c = strstr(p, ".pb: ");
        if (c) {
            p = c + 5;
            prefix = "test data: ";
        }
    }
    /* "node 'x' (Op, opset N): rest" */
    if (!strncmp(p, "node '", 6)) {
        const char *q = strchr(p + 6, '\'');
        const char *e = q ? strstr(q, "): ") : NULL;
        if (q && e && q[1] == ' ' && q[2] == '(') {
            const char *comma = memchr(q + 3, ',', (size_t)(e - q - 3));
            const char *end = comma ? comma : e;
            snprintf(op, sizeof op, "%.*s", (int)(end - q - 3), q + 3);
            p = e + 3;
        }
    }
    p = skip_graph_node(p, op[0] ? NULL : op, sizeof op);
    while (!strncmp(p, "compute '", 9)) {
        const char *e = strstr(p + 9, "': ");
        if (!e)
            break;
        p = e + 3;
    }
    size_t o = (size_t)snprintf(out, cap, "%s%s%s", prefix, op, op[0] ? ": " : "");
    if (o >= cap)
        o = cap - 1;
    int depth = 0;
    for (; *p && o + 3 < cap && o < 120; p++) {
        if (*p == '(') {
            depth++;
            continue;
        }
        if (*p == ')') {
            if (depth)
                depth--;
            continue;
        }
        if (depth)
            continue;
        if (*p == '\'') {
            const char *e = strchr(p + 1, '\'');
            if (e) {
                p = e;
                out[o++] = '\'';
                out[o++] = '\'';
                continue;
            }
        }
        if (isdigit((unsigned char)*p)) {
            /* digits after letters stay ("int16"); other numbers fold to N */
            const char *w = p;
            while (w > reason && isdigit((unsigned char)w[-1]))
                w--;
            if (w > reason && isalpha((unsigned char)w[-1])) {
                out[o++] = *p;
                continue;
            }
            if (o == 0 || out[o - 1] != 'N')
                out[o++] = 'N';
            continue;
        }
        if (*p == ' ' && o > 0 && out[o - 1] == ' ')
            continue;
        out[o++] = *p;
    }
    while (o > 0 &&
           (out[o - 1] == ' ' || out[o - 1] == ',' || out[o - 1] == ';' || out[o - 1] == ':'))
        o--;
    out[o] = '\0';
}

typedef struct {
    char cat[160];
    int idx; /* result index */
} fail_entry;

static int cmp_fail(const void *a, const void *b) {
    const fail_entry *x = a, *y = b;
    return strcmp(x->cat, y->cat);
}

static void list_failures(FILE *f, const result *r, int n, int npass, int total_run) {
    int nf = 0;
    fail_entry *fe = xmalloc(sizeof(fail_entry) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        if (!r[i].pass) {
            category(r[i].reason, fe[nf].cat, sizeof fe[nf].cat);
            fe[nf].idx = i;
            nf++;
        }
    /* group by category, biggest first; stable within by test name */
    int *count = xmalloc(sizeof(int) * (size_t)(nf ? nf : 1));
    qsort(fe, (size_t)nf, sizeof(fail_entry), cmp_fail);
    for (int i = 0; i < nf; i++) {
        int c = 0;
        for (int j = 0; j < nf; j++)
            c += strcmp(fe[i].cat, fe[j].cat) == 0;
        count[i] = c;
    }
    fprintf(f,
            "# ONNX backend node tests (Debian libonnx-testdata) that kiln fails, with\n"
            "# the reason for each, grouped by reason. The onnx_conformance test\n"
            "# (build/tests/kiln_conformance --expected THIS_FILE) fails if a test not\n"
            "# listed here fails, or if this file names a test that does not exist; it\n"
            "# lists tests that now pass under UNEXPECTED PASSES (remove them).\n"
            "# Regenerate with:\n"
            "#   build/tests/kiln_conformance --list-failures > "
            "tests/conformance/expected_failures.txt\n"
            "# Pass rate when generated: %d of %d (%.1f%%); %d failures.\n",
            npass, total_run, total_run ? 100.0 * npass / total_run : 0.0, nf);
    /* categories in order of size (then name) */
    int *printed = calloc((size_t)(nf ? nf : 1), sizeof(int));
    if (!printed)
        exit(2);
    for (;;) {
        int best = -1;
        for (int i = 0; i < nf; i++)
            if (!printed[i] && (best < 0 || count[i] > count[best] ||
                                (count[i] == count[best] && strcmp(fe[i].cat, fe[best].cat) < 0)))
                best = i;
        if (best < 0)
            break;
        fprintf(f, "\n# %s (%d)\n", fe[best].cat, count[best]);
        /* entries of this category, in test-name order (results are sorted) */
        for (int i = 0; i < n; i++) {
            if (r[i].pass)
                continue;
            for (int j = 0; j < nf; j++)
                if (fe[j].idx == i && !printed[j] && strcmp(fe[j].cat, fe[best].cat) == 0) {
                    fprintf(f, "%s  %s\n", r[i].name, r[i].reason);
                    printed[j] = 1;
                }
        }
    }
    free(printed);
    free(count);
    free(fe);
}

/* ---- main ---------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr, "usage: kiln_conformance [--data DIR] [--filter SUBSTR] [--sample N]\n"
                    "                        [--expected FILE] [--list-failures] [--jobs N]\n"
                    "                        [--timeout SECONDS] [--leak-check]\n");
}

int main(int argc, char **argv) {
    const char *data = "/usr/share/libonnx-testdata/data/node";
    const char *filter = getenv("KILN_CONFORMANCE_FILTER");
    const char *expected = NULL;
    int list = 0, sample = 1;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    double timeout = 60;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--data") && has) {
            data = argv[++i];
        } else if (!strcmp(a, "--filter") && has) {
            filter = argv[++i];
        } else if (!strcmp(a, "--expected") && has) {
            expected = argv[++i];
        } else if (!strcmp(a, "--leak-check")) {
            g_leak_check = 1;
        } else if (!strcmp(a, "--list-failures")) {
            list = 1;
        } else if (!strcmp(a, "--jobs") && has) {
            jobs = strtol(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--sample") && has) {
            sample = (int)strtol(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--timeout") && has) {
            timeout = strtod(argv[++i], NULL);
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        } else {
            fprintf(stderr, "kiln_conformance: unknown or incomplete option '%s'\n", a);
            usage();
            return 2;
        }
    }
    if (jobs < 1)
        jobs = 1;
    if (jobs > 256)
        jobs = 256;
    if (sample < 1)
        sample = 1;
    if (!(timeout > 0))
        timeout = 60;
    if (filter && !*filter)
        filter = NULL;

    int nall = 0;
    char **all = list_tests(data, &nall);
    if (!all)
        return 2;
    result *r = xmalloc(sizeof(result) * (size_t)(nall ? nall : 1));
    int n = 0, k = 0;
    for (int i = 0; i < nall; i++) {
        if (filter && !strstr(all[i], filter))
            continue;
        if (k++ % sample)
            continue;
        memset(&r[n], 0, sizeof r[n]);
        r[n++].name = all[i];
    }
    expect *ex = NULL;
    int nex = 0, status = 0;
    if (expected) {
        ex = read_expected(expected, &nex);
        if (!ex) {
            free(r);
            free_names(all, nall);
            return 2;
        }
    }

    double t0 = now_s();
    FILE *out = list ? stderr : stdout;
    run_all(data, r, n, (int)jobs, timeout, out);
    double secs = now_s() - t0;
    int npass = 0;
    for (int i = 0; i < n; i++)
        npass += r[i].pass;
    fprintf(out, "conformance: %d passed, %d failed of %d (%.1f%% pass rate) in %.0f s\n", npass,
            n - npass, n, n ? 100.0 * npass / n : 0.0, secs);

    if (expected) {
        int missing = 0;
        for (int i = 0; i < nex; i++) {
            ex[i].seen = find_name(all, nall, ex[i].name) >= 0;
            if (!ex[i].seen) {
                if (!missing++)
                    fprintf(out, "EXPECTED FAILURES NAMING NO TEST (in %s):\n", expected);
                fprintf(out, "  %s\n", ex[i].name);
            }
        }
        int nreg = 0, nunexp = 0;
        for (int i = 0; i < n; i++) {
            int listed = 0;
            for (int j = 0; j < nex && !listed; j++)
                listed = strcmp(ex[j].name, r[i].name) == 0;
            if (!r[i].pass && !listed) {
                if (!nreg++)
                    fprintf(out, "REGRESSIONS:\n");
                fprintf(out, "  %s: %s\n", r[i].name, r[i].reason);
            }
        }
        for (int i = 0; i < n; i++) {
            int listed = 0;
            for (int j = 0; j < nex && !listed; j++)
                listed = strcmp(ex[j].name, r[i].name) == 0;
            if (r[i].pass && listed) {
                if (!nunexp++)
                    fprintf(out, "UNEXPECTED PASSES:\n");
                fprintf(out, "  %s\n", r[i].name);
            }
        }
        fprintf(out,
                "expected failures: %d regressions, %d unexpected passes, %d unknown "
                "names\n",
                nreg, nunexp, missing);
        if (nreg || missing)
            status = 1;
        for (int i = 0; i < nex; i++)
            free(ex[i].name);
        free(ex);
    }
    if (list)
        list_failures(stdout, r, n, npass, n);
    free(r);
    free_names(all, nall);
    return status;
}
