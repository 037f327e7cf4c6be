/* measure.c: the local builder and runner (tune_internal.h).
 *
 * Builder: each candidate's C source is compiled by its own forked process
 * (which runs the compiler through the toolchain), up to `jobs` at once;
 * the path of the shared object comes back through shared memory.
 *
 * Runner: each measurement runs in a forked process, so that a kernel that
 * crashes or hangs costs that process only. The child loads the module,
 * fills the inputs with the same seeded random values every time, runs
 * the kernel once, compares its outputs with the default kernel's (kept in
 * shared memory: the begin_task run writes them), then times `repeat`
 * rounds of `number` calls, number chosen so that a round takes at least
 * min_repeat_ms. The parent waits up to timeout_s, then kills it. The
 * tuning process itself never runs a kernel, so it starts no threads and
 * forking it is safe. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln/runtime.h"
#include "tune_internal.h"

/* Wait for child pid up to timeout_s (<= 0: forever): 0 exited with
 * status 0, 1 failed (*sig the signal or 0), 2 timed out (killed). */
static int wait_child(pid_t pid, double timeout_s, int *sig) {
    double t0 = kiln_now_s();
    *sig = 0;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
        if (r == pid) {
            if (WIFSIGNALED(status))
                *sig = WTERMSIG(status);
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
        }
        if (r < 0 && errno != EINTR)
            return 1;
        if (timeout_s > 0 && kiln_now_s() - t0 > timeout_s) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return 2;
        }
        struct timespec ts = {0, 2000000}; /* 2 ms */
        nanosleep(&ts, NULL);
    }
}

/* ---- the builder ------------------------------------------------------------------ */

typedef struct {
    int ok;
    char so[4096];
    char dir[4096];
    char msg[256];
} build_slot;

static void local_build(tune_builder *b, int n, char *const *sources, const char *const *names,
                        char **sos, char **dirs, char (*msgs)[256]) {
    if (n < 1)
        return;
    build_slot *slots = mmap(NULL, sizeof(build_slot) * (size_t)n, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < n; i++) { /* an entry with no source keeps the caller's message */
        sos[i] = dirs[i] = NULL;
        if (sources[i])
            snprintf(msgs[i], 256, "not built");
    }
    if (slots == MAP_FAILED) {
        for (int i = 0; i < n; i++)
            snprintf(msgs[i], 256, "cannot map shared memory: %s", strerror(errno));
        return;
    }
    memset(slots, 0, sizeof(build_slot) * (size_t)n);
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    int next = 0, running = 0, jobs = b->jobs > 0 ? b->jobs : 1;
    fflush(NULL);
    while (pids && (next < n || running > 0)) {
        while (next < n && running < jobs) {
            if (!sources[next]) { /* nothing to build (lowering failed) */
                next++;
                continue;
            }
            pid_t pid = fork();
            if (pid == 0) {
                char *so = NULL, *dir = NULL;
                build_slot *sl = &slots[next];
                if (codegen_compile(sources[next], names[next], &b->tc, &so, &dir) == KILN_OK) {
                    snprintf(sl->so, sizeof sl->so, "%s", so);
                    snprintf(sl->dir, sizeof sl->dir, "%s", dir);
                    sl->ok = 1;
                } else {
                    snprintf(sl->msg, sizeof sl->msg, "%s", kiln_last_error());
                    if (dir)
                        snprintf(sl->dir, sizeof sl->dir, "%s", dir);
                }
                _exit(0);
            }
            if (pid < 0) {
                snprintf(slots[next].msg, sizeof slots[next].msg, "fork: %s", strerror(errno));
                next++;
                continue;
            }
            pids[next++] = pid;
            running++;
        }
        int status;
        pid_t done = wait(&status);
        if (done < 0 && errno != EINTR)
            break;
        for (int i = 0; done > 0 && i < n; i++)
            if (pids[i] == done) {
                pids[i] = 0;
                running--;
                if (!slots[i].ok && !slots[i].msg[0])
                    snprintf(slots[i].msg, sizeof slots[i].msg, "the compiler job died");
            }
    }
    for (int i = 0; i < n; i++) {
        if (slots[i].ok) {
            sos[i] = kiln_strdup(slots[i].so);
            msgs[i][0] = 0;
        } else if (slots[i].msg[0]) {
            snprintf(msgs[i], 256, "%s", slots[i].msg);
        }
        if (slots[i].dir[0])
            dirs[i] = kiln_strdup(slots[i].dir);
    }
    free(pids);
    munmap(slots, sizeof(build_slot) * (size_t)n);
}

void tune_local_builder(tune_builder *b, const codegen_toolchain *tc, int jobs) {
    memset(b, 0, sizeof *b);
    b->build = local_build;
    b->tc = *tc;
    b->jobs = jobs;
}

/* ---- the runner -------------------------------------------------------------------- */

typedef struct {
    tune_result res;
    int have_reference; /* the outputs below are the default kernel's */
} run_shared;

typedef struct {
    run_shared *sh; /* followed by the reference outputs */
    size_t map_bytes;
} local_state;

/* At most this many copies of a kernel's weights (small weights then stay
 * in the cache, as they may in a model) */
#define COLD_COPIES_MAX 64

/* Seeded values for an input: floats in [-1, 1), integers 0 (a safe index) */
static void fill(kiln_ndarray *a, int arg) {
    uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t)(arg + 1) * 0x100000001B3ull;
    int64_t n = kiln_ndarray_numel(a);
    kiln_dtype dt = kiln_ndarray_dtype(a);
    if (dt == KILN_FLOAT32) {
        float *p = kiln_ndarray_data(a);
        for (int64_t i = 0; i < n; i++)
            p[i] = (float)((double)(kiln_xorshift64(&s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    } else if (dt == KILN_FLOAT64) {
        double *p = kiln_ndarray_data(a);
        for (int64_t i = 0; i < n; i++)
            p[i] = (double)(kiln_xorshift64(&s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
    } else {
        memset(kiln_ndarray_data(a), 0, (size_t)n * kiln_dtype_size(dt));
    }
}

static size_t param_bytes(const tir_param *p) {
    size_t b = kiln_dtype_size(p->dtype);
    for (int d = 0; d < p->ndim; d++) {
        int64_t v = 0;
        tir_const_int(p->shape[d], &v);
        b *= (size_t)(v > 0 ? v : 0);
    }
    return b;
}

/* An array for parameter p (its constant shape) in argument slot `slot`, its data starting
 * slot * 17 cache lines past a page boundary (mod the page). Arrays from
 * kiln_ndarray_empty are page-sized allocations that all start at one
 * offset within their page, so a kernel's input, residual and output rows
 * at equal indices share their low 12 address bits: the loads then wait on
 * the stores they seem to alias (4 KiB aliasing) and the rows compete for
 * the same L1 sets. A model's tensors, packed by the memory planner, sit at
 * unrelated offsets, and so do these. (This was written when ResNet-50's
 * 1x1 256 -> 1024 convolution with its residual add measured 815 us alone
 * against 480 us in the model, on Zen 4; the gap came back in a later run
 * with the stagger, so it was the VM's noise, which tune.c's confirmation
 * handles, not aliasing. The stagger stays: it keeps kernels measured alone
 * from a layout no model gives them.) The memory is the measuring child's
 * and goes with it. */
static kiln_ndarray *staggered_empty(const tir_param *p, int slot) {
    int64_t shape[KILN_MAX_NDIM];
    for (int d = 0; d < p->ndim; d++)
        tir_const_int(p->shape[d], &shape[d]);
    size_t bytes = param_bytes(p);
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, bytes + 4096)) {
        kiln_set_error(KILN_ERR_NOMEM, "tune: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    size_t off = ((size_t)slot * 17 * 64) % 4096;
    return kiln_ndarray_wrap((char *)mem + off, p->dtype, p->ndim, shape, NULL, 0);
}

/* 1 if the outputs agree: floats within 1e-3 of the reference's largest
 * magnitude (a schedule changes no summation order the outputs depend on
 * much; NaN where the reference has a number is a mismatch), other types
 * bit for bit. */
static int outputs_agree(const tune_kernel *k, kiln_ndarray *const *arr, const unsigned char *ref,
                         char *msg, size_t cap) {
    size_t off = 0;
    for (int i = k->nargs - k->nout; i < k->nargs; i++) {
        const tir_param *p = &k->params[i];
        size_t bytes = param_bytes(p);
        const void *got = kiln_ndarray_data(arr[i]);
        if (p->dtype == KILN_FLOAT32) {
            const float *a = got, *r = (const float *)(ref + off);
            size_t n = bytes / 4;
            double scale = 0;
            for (size_t j = 0; j < n; j++)
                if (isfinite(r[j]) && fabs(r[j]) > scale)
                    scale = fabs(r[j]);
            double tol = 1e-3 * (scale > 1 ? scale : 1);
            for (size_t j = 0; j < n; j++) {
                int bad = isnan(r[j]) ? !isnan(a[j])
                                      : !(fabs((double)a[j] - (double)r[j]) <= tol) &&
                                            !(isinf(r[j]) && a[j] == r[j]);
                if (bad) {
                    snprintf(msg, cap, "output %s[%zu] is %g, the default kernel's %g", p->name, j,
                             (double)a[j], (double)r[j]);
                    return 0;
                }
            }
        } else if (memcmp(got, ref + off, bytes)) {
            snprintf(msg, cap, "output %s differs from the default kernel's", p->name);
            return 0;
        }
        off += bytes;
    }
    return 1;
}

/* The child: measure k into sh (reference: write the outputs instead of
 * comparing them). */
static void child_run(const tune_runner *r, const tune_kernel *k, run_shared *sh, int reference,
                      int fault) {
    tune_result *res = &sh->res;
    unsigned char *ref = (unsigned char *)(sh + 1);
    if (fault == 1)
        raise(SIGSEGV);
    if (fault == 2)
        for (;;)
            pause();
    kiln_module *m = kiln_module_load(k->so);
    kiln_function *f = m ? kiln_module_get_function(m, k->func) : NULL;
    kiln_ndarray *arr[256] = {0};
    res->error = REC_RUNTIME_ERROR;
    if (!f || k->nargs > 256 || k->nargs < 1) {
        snprintf(res->msg, sizeof res->msg, "%s", f ? "too many arguments" : kiln_last_error());
        return;
    }
    size_t wbytes = 0;
    for (int i = 0; i < k->nargs; i++) {
        if (!(arr[i] = staggered_empty(&k->params[i], i))) {
            snprintf(res->msg, sizeof res->msg, "%s", kiln_last_error());
            return;
        }
        fill(arr[i], i);
        if (i < 64 && k->consts >> i & 1)
            wbytes += param_bytes(&k->params[i]);
    }
    /* copies of the weights to rotate through: ncopy sets of arguments */
    int ncopy = 1;
    if (wbytes > 0 && r->cold_bytes > 0) {
        int64_t want = r->cold_bytes / (int64_t)wbytes + 1;
        ncopy = want > COLD_COPIES_MAX ? COLD_COPIES_MAX : (int)want;
    }
    size_t nset = (size_t)ncopy * (size_t)(k->nargs & 255);
    kiln_ndarray **sets = calloc(nset ? nset : 1, sizeof *sets);
    if (!sets) {
        snprintf(res->msg, sizeof res->msg, "out of memory");
        return;
    }
    for (int c = 0; c < ncopy; c++)
        for (int i = 0; i < k->nargs; i++) {
            kiln_ndarray **slot = &sets[(size_t)c * (size_t)k->nargs + (size_t)i];
            *slot = arr[i];
            if (c > 0 && i < 64 && k->consts >> i & 1) {
                *slot = staggered_empty(&k->params[i], c * k->nargs + i);
                if (!*slot) {
                    snprintf(res->msg, sizeof res->msg, "%s", kiln_last_error());
                    return;
                }
                memcpy(kiln_ndarray_data(*slot), kiln_ndarray_data(arr[i]),
                       param_bytes(&k->params[i]));
            }
        }
    if (kiln_function_call(f, k->nargs, arr) != KILN_OK) {
        snprintf(res->msg, sizeof res->msg, "%s", kiln_last_error());
        return;
    }
    if (reference) {
        size_t off = 0;
        for (int i = k->nargs - k->nout; i < k->nargs; i++) {
            size_t b = param_bytes(&k->params[i]);
            memcpy(ref + off, kiln_ndarray_data(arr[i]), b);
            off += b;
        }
        sh->have_reference = 1;
    } else if (!outputs_agree(k, arr, ref, res->msg, sizeof res->msg)) {
        res->error = REC_WRONG_ANSWER;
        return;
    }
    /* warm up for warmup_ms, which also gives the calls per round (a round
       of at least min_repeat_ms): a fresh process's first tens of
       milliseconds ran a 210 us ResNet-50 convolution at 420 us on the 2-core
       VM (the second core's worker joins late), so 5 ms of warm-up made the
       default look twice as slow as it runs in a model */
    double t0 = kiln_now_s(), one;
    int64_t warm = 0;
    do {
        kiln_function_call(f, k->nargs, sets + (size_t)(warm % ncopy) * (size_t)k->nargs);
        warm++;
        one = (kiln_now_s() - t0) / (double)warm;
    } while (kiln_now_s() - t0 < r->warmup_ms * 1e-3 && warm < 100000);
    int64_t number = one > 0 ? (int64_t)ceil(r->min_repeat_ms * 1e-3 / one) : 1;
    if (number < 1)
        number = 1;
    if (number > 100000)
        number = 100000;
    int rep = r->repeat < 1 ? 1 : r->repeat > TUNE_MAX_COSTS ? TUNE_MAX_COSTS : r->repeat;
    for (int q = 0; q < rep; q++) {
        t0 = kiln_now_s();
        for (int64_t c = 0; c < number; c++)
            if (kiln_function_call(f, k->nargs, sets + (size_t)(c % ncopy) * (size_t)k->nargs) !=
                KILN_OK) {
                snprintf(res->msg, sizeof res->msg, "%s", kiln_last_error());
                return;
            }
        res->costs[q] = (kiln_now_s() - t0) / (double)number;
    }
    res->ncosts = rep;
    res->error = REC_OK;
}

static void measure(tune_runner *r, const tune_kernel *k, tune_result *res, int reference) {
    local_state *L = r->state;
    memset(res, 0, sizeof *res);
    if (!L || !L->sh) {
        res->error = REC_RUNTIME_ERROR;
        snprintf(res->msg, sizeof res->msg, "no task begun");
        return;
    }
    memset(&L->sh->res, 0, sizeof L->sh->res);
    L->sh->res.error = REC_RUNTIME_ERROR;
    snprintf(L->sh->res.msg, sizeof L->sh->res.msg, "the measuring process died");
    r->runs++;
    int fault = r->fault && r->runs == r->fault_at ? r->fault : 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        child_run(r, k, L->sh, reference, fault);
        _exit(0);
    }
    if (pid < 0) {
        res->error = REC_RUNTIME_ERROR;
        snprintf(res->msg, sizeof res->msg, "fork: %s", strerror(errno));
        return;
    }
    int sig = 0, w = wait_child(pid, r->timeout_s, &sig);
    *res = L->sh->res;
    if (w == 2) {
        res->error = REC_RUN_TIMEOUT;
        res->ncosts = 0;
        snprintf(res->msg, sizeof res->msg, "no result within %.1f s: killed", r->timeout_s);
    } else if (w == 1) {
        res->error = REC_RUNTIME_ERROR;
        res->ncosts = 0;
        snprintf(res->msg, sizeof res->msg, "the measuring process died%s%s",
                 sig ? " of signal " : "", sig ? strsignal(sig) : "");
    }
}

static void local_end(tune_runner *r) {
    local_state *L = r->state;
    if (L && L->sh)
        munmap(L->sh, L->map_bytes);
    free(L);
    r->state = NULL;
}

static kiln_status local_begin(tune_runner *r, const tune_kernel *ref, tune_result *res) {
    local_end(r);
    size_t out = 0;
    for (int i = ref->nargs - ref->nout; i < ref->nargs; i++)
        out += param_bytes(&ref->params[i]);
    local_state *L = kiln_calloc(1, sizeof *L);
    if (!L)
        return KILN_ERR_NOMEM;
    L->map_bytes = sizeof(run_shared) + out;
    L->sh = mmap(NULL, L->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (L->sh == MAP_FAILED) {
        free(L);
        return kiln_set_error(KILN_ERR_NOMEM, "tune: cannot map %zu bytes of shared memory", out);
    }
    r->state = L;
    measure(r, ref, res, 1);
    if (res->error != REC_OK || !L->sh->have_reference)
        return kiln_set_error(KILN_ERR_INVALID, "the default kernel %s: %s", ref->func,
                              res->msg[0] ? res->msg : "no result");
    return KILN_OK;
}

static void local_run(tune_runner *r, const tune_kernel *k, tune_result *res) {
    measure(r, k, res, 0);
}

void tune_local_runner(tune_runner *r, double timeout_s, int repeat) {
    memset(r, 0, sizeof *r);
    r->begin_task = local_begin;
    r->run = local_run;
    r->end_task = local_end;
    r->timeout_s = timeout_s;
    r->repeat = repeat;
    r->min_repeat_ms = 20;
    r->warmup_ms = 50;
}
