/* test_runtime_threads.c: one loaded model serves many threads (issue 11).
 * A ResNet-50 (models/e2e/resnet50_narrow.onnx) is compiled and loaded once;
 * 8 threads then run it a few hundred times in all, through kiln_model_run
 * and through executors made from the model, each on distinct inputs, and
 * every output must be bitwise equal to a single-threaded run on the same
 * input. The thread pool must let concurrent loops take free workers
 * without waiting for each other, and run a loop on its caller when none is
 * free; KILN_NUM_THREADS is parsed strictly. The compiled package also must
 * list its weights ("param_names"), so one taken out of mod.params is
 * refused by name. Runs under ThreadSanitizer in scripts/test.sh. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "kiln/runtime.h"

#define NTHREADS 8
#define NINPUTS 12
#define RUNS_PER_THREAD 40 /* 320 runs in all */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the shared model ------------------------------------------------------------ */

typedef struct {
    kiln_model *m;
    kiln_ndarray *in[NINPUTS];
    kiln_ndarray **ref; /* NINPUTS x noutputs: the single-threaded outputs */
    int nout;
} shared;

typedef struct {
    shared *sh;
    int id, runs, mismatches, failures;
    char error[512];
} worker_arg;

static kiln_ndarray *new_output(const kiln_model *m, int k) {
    int64_t shape[KILN_MAX_NDIM];
    int nd = kiln_model_output_ndim(m, k);
    for (int d = 0; d < nd; d++)
        shape[d] = kiln_model_output_dim(m, k, d);
    return kiln_ndarray_empty(kiln_model_output_dtype(m, k), nd, shape);
}

static size_t nbytes(const kiln_ndarray *a) {
    return (size_t)kiln_ndarray_numel(a) * kiln_dtype_size(kiln_ndarray_dtype(a));
}

static int same_bits(const kiln_ndarray *a, const kiln_ndarray *b) {
    return nbytes(a) == nbytes(b) &&
           memcmp(kiln_ndarray_data(a), kiln_ndarray_data(b), nbytes(a)) == 0;
}

/* Even threads call kiln_model_run with outputs of their own; odd threads
 * run executors made from the model. Run r uses input (id * 7 + r) % NINPUTS. */
static void *run_worker(void *p) {
    worker_arg *w = p;
    shared *sh = w->sh;
    kiln_ndarray *outs[8] = {0};
    kiln_executor *e = w->id % 2 ? kiln_executor_create_from_model(sh->m) : NULL;
    for (int k = 0; k < sh->nout; k++)
        outs[k] = new_output(sh->m, k);
    for (int r = 0; r < w->runs; r++) {
        int i = (w->id * 7 + r) % NINPUTS;
        kiln_status st;
        if (e) {
            st = kiln_executor_set_input(e, kiln_model_input_name(sh->m, 0), sh->in[i]);
            if (!st)
                st = kiln_executor_run(e);
        } else {
            const kiln_ndarray *ins[1] = {sh->in[i]};
            st = kiln_model_run(sh->m, ins, outs, 0);
        }
        if (st) {
            w->failures++;
            snprintf(w->error, sizeof w->error, "%s", kiln_last_error());
            continue;
        }
        for (int k = 0; k < sh->nout; k++) {
            const kiln_ndarray *got = e ? kiln_executor_output(e, k) : outs[k];
            w->mismatches += !same_bits(got, sh->ref[i * sh->nout + k]);
        }
    }
    for (int k = 0; k < sh->nout; k++)
        kiln_ndarray_free(outs[k]);
    kiln_executor_free(e);
    return NULL;
}

/* Input i: a deterministic pattern that differs from input to input. */
static kiln_ndarray *make_input(const kiln_model *m, int i) {
    int64_t shape[KILN_MAX_NDIM];
    int nd = kiln_model_input_ndim(m, 0);
    for (int d = 0; d < nd; d++)
        shape[d] = kiln_model_input_dim(m, 0, d);
    kiln_ndarray *a = kiln_ndarray_empty(KILN_FLOAT32, nd, shape);
    float *x = kiln_ndarray_data(a);
    uint32_t s = 2463534242u + 977u * (uint32_t)i;
    for (int64_t k = 0; k < kiln_ndarray_numel(a); k++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x[k] = (float)(s >> 8) / 16777216.0f * 2 - 1;
    }
    return a;
}

static const char *resnet_package(void) {
    static char pkg[1024];
    static int state; /* 0 not built, 1 built, -1 failed */
    if (state)
        return state > 0 ? pkg : NULL;
    char onnx[1024];
    const char *src = getenv("KILN_SOURCE_DIR");
    snprintf(onnx, sizeof onnx, "%s/models/e2e/resnet50_narrow.onnx", src ? src : ".");
    snprintf(pkg, sizeof pkg, "%s", test_tmp_path("threads_resnet50.tar"));
    double t0 = now_s();
    kiln_graph *g = kiln_onnx_import(onnx, NULL);
    kiln_status st = g ? kiln_graph_compile(g, pkg, NULL) : KILN_ERR_INVALID;
    kiln_graph_free(g);
    CHECK_EQ_INT(st, KILN_OK);
    if (st)
        fprintf(stderr, "%s\n", kiln_last_error());
    else
        printf("compiled %s in %.1f s\n", onnx, now_s() - t0);
    state = st ? -1 : 1;
    return state > 0 ? pkg : NULL;
}

static void test_resnet_many_threads(void) {
    const char *pkg = resnet_package();
    if (!pkg)
        return;
    shared sh = {0};
    sh.m = kiln_model_load(pkg);
    CHECK(sh.m != NULL);
    if (!sh.m) {
        fprintf(stderr, "%s\n", kiln_last_error());
        return;
    }
    CHECK_EQ_INT(kiln_model_num_inputs(sh.m), 1);
    sh.nout = kiln_model_num_outputs(sh.m);
    CHECK(sh.nout >= 1 && sh.nout <= 8);
    if (kiln_model_num_inputs(sh.m) != 1 || sh.nout < 1 || sh.nout > 8) {
        kiln_model_free(sh.m);
        return;
    }
    /* the reference: one thread, one pool thread, one input at a time */
    int threads = kiln_num_threads();
    CHECK_EQ_INT(kiln_set_num_threads(1), KILN_OK);
    sh.ref = calloc((size_t)(NINPUTS * sh.nout), sizeof *sh.ref);
    for (int i = 0; i < NINPUTS; i++) {
        sh.in[i] = make_input(sh.m, i);
        for (int k = 0; k < sh.nout; k++)
            sh.ref[i * sh.nout + k] = new_output(sh.m, k);
        const kiln_ndarray *ins[1] = {sh.in[i]};
        CHECK_EQ_INT(kiln_model_run(sh.m, ins, sh.ref + i * sh.nout, 0), KILN_OK);
    }
    CHECK(!same_bits(sh.ref[0], sh.ref[sh.nout])); /* the inputs lead to distinct outputs */
    /* 8 threads at once, with the pool at its usual size (at least 2) */
    CHECK_EQ_INT(kiln_set_num_threads(threads > 2 ? threads : 2), KILN_OK);
    worker_arg args[NTHREADS];
    pthread_t th[NTHREADS];
    double t0 = now_s();
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (worker_arg){&sh, t, RUNS_PER_THREAD, 0, 0, ""};
        CHECK_EQ_INT(pthread_create(&th[t], NULL, run_worker, &args[t]), 0);
    }
    int runs = 0, mismatches = 0, failures = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        runs += args[t].runs;
        mismatches += args[t].mismatches;
        failures += args[t].failures;
        if (args[t].failures)
            fprintf(stderr, "thread %d: %s\n", t, args[t].error);
    }
    printf("%d runs on %d threads (pool of %d) in %.2f s: %d outputs differ, %d runs failed\n",
           runs, NTHREADS, kiln_num_threads(), now_s() - t0, mismatches, failures);
    CHECK_EQ_INT(mismatches, 0);
    CHECK_EQ_INT(failures, 0);
    CHECK_EQ_INT(kiln_set_num_threads(threads), KILN_OK);
    for (int i = 0; i < NINPUTS; i++) {
        kiln_ndarray_free(sh.in[i]);
        for (int k = 0; k < sh.nout; k++)
            kiln_ndarray_free(sh.ref[i * sh.nout + k]);
    }
    free(sh.ref);
    kiln_model_free(sh.m);
}

/* ---- a compiled package lists its weights ---------------------------------------- */

/* Member `name` of the ustar archive buf[0, len) (malloc'd, *n bytes), or NULL. */
static char *tar_member(const unsigned char *buf, size_t len, const char *name, size_t *n) {
    for (size_t at = 0; at + 512 <= len && buf[at];) {
        const char *h = (const char *)buf + at;
        size_t size = (size_t)strtoull(h + 124, NULL, 8);
        const char *mn = strncmp(h, "./", 2) == 0 ? h + 2 : h;
        if (at + 512 + size > len)
            return NULL;
        if (strncmp(mn, name, 100) == 0) {
            char *out = malloc(size + 1);
            memcpy(out, buf + at + 512, size);
            out[size] = 0;
            *n = size;
            return out;
        }
        at += 512 + (size + 511) / 512 * 512;
    }
    return NULL;
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    *len = fread(b, 1, *len, f);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void test_compiled_missing_weight(void) {
    const char *pkg = resnet_package();
    if (!pkg)
        return;
    size_t len = 0, json_len = 0, so_len = 0, p_len = 0;
    unsigned char *tar = slurp(pkg, &len);
    char *json = tar ? tar_member(tar, len, "mod.json", &json_len) : NULL;
    char *so = tar ? tar_member(tar, len, "mod.so", &so_len) : NULL;
    char *params = tar ? tar_member(tar, len, "mod.params", &p_len) : NULL;
    CHECK(json && so && params);
    if (!json || !so || !params)
        goto done;
    CHECK_CONTAINS(json, "\"param_names\": [\"p0\", \"p1\", ");
    const char *so_path = test_tmp_path("threads_mod.so"), *p_path = test_tmp_path("threads.npz");
    spit(so_path, so, so_len);
    spit(p_path, params, p_len);
    kiln_npz *all = kiln_npz_load(p_path), *fewer = kiln_npz_new();
    CHECK(all != NULL);
    const char *dropped = all ? kiln_npz_name(all, kiln_npz_count(all) / 2) : NULL;
    char name[64];
    snprintf(name, sizeof name, "%s", dropped ? dropped : "?");
    for (int i = 0; all && i < kiln_npz_count(all); i++)
        if (strcmp(kiln_npz_name(all, i), name) != 0)
            CHECK_EQ_INT(kiln_npz_add(fewer, kiln_npz_name(all, i), kiln_npz_array(all, i)),
                         KILN_OK);
    const char *cut = test_tmp_path("threads_no_weight.tar");
    CHECK_EQ_INT(kiln_package_write(cut, json, json_len, so_path, fewer), KILN_OK);
    kiln_model *m = kiln_model_load(cut);
    CHECK(m == NULL);
    char want[256];
    snprintf(want, sizeof want, "'%s': the weight '%s' is missing from mod.params", name, name);
    CHECK_CONTAINS(kiln_last_error(), want);
    kiln_model_free(m);
    /* with every weight, the same files load */
    CHECK_EQ_INT(kiln_package_write(cut, json, json_len, so_path, all), KILN_OK);
    m = kiln_model_load(cut);
    CHECK(m != NULL);
    kiln_model_free(m);
    kiln_npz_free(all);
    kiln_npz_free(fewer);
done:
    free(json);
    free(so);
    free(params);
    free(tar);
}

/* ---- the thread pool under concurrent callers ------------------------------------- */

typedef struct {
    atomic_int started, release, timed_out;
} hold_job;

/* Each chunk waits (at most 10 s) until the test releases it. */
static int hold_chunk(int64_t b, int64_t e, void *c) {
    hold_job *h = c;
    atomic_fetch_add(&h->started, 1);
    double t0 = now_s();
    while (!atomic_load(&h->release)) {
        if (now_s() - t0 > 10) {
            atomic_store(&h->timed_out, 1);
            break;
        }
        sched_yield();
    }
    return 0;
}

static void *hold_thread(void *p) {
    kiln_parallel_for(2, hold_chunk, p);
    return NULL;
}

typedef struct {
    atomic_int calls;
    int rendezvous; /* each chunk waits (at most 10 s) until both have started */
    atomic_int timed_out;
    pthread_t who[16];
} who_job;

static int who_chunk(int64_t b, int64_t e, void *c) {
    who_job *w = c;
    int k = atomic_fetch_add(&w->calls, 1);
    if (k < 16)
        w->who[k] = pthread_self();
    for (double t0 = now_s(); w->rendezvous && atomic_load(&w->calls) < 2;) {
        if (now_s() - t0 > 10) {
            atomic_store(&w->timed_out, 1);
            break;
        }
        sched_yield();
    }
    return 0;
}

/* Threads among who[0, n) distinct from each other. */
static int distinct_threads(const who_job *w, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int k = 0; k < i; k++)
            seen |= pthread_equal(w->who[i], w->who[k]);
        d += !seen;
    }
    return d;
}

/* While one loop holds a worker, another loop takes the free one instead of
 * waiting or running alone; when none is free it runs on its caller, cut in
 * the same chunks. */
static void test_pool_concurrent_loops(void) {
    for (int pool = 3; pool >= 2; pool--) {
        CHECK_EQ_INT(kiln_set_num_threads(pool), KILN_OK);
        hold_job h;
        atomic_init(&h.started, 0);
        atomic_init(&h.release, 0);
        atomic_init(&h.timed_out, 0);
        pthread_t holder;
        CHECK_EQ_INT(pthread_create(&holder, NULL, hold_thread, &h), 0);
        for (double t0 = now_s(); atomic_load(&h.started) < 2 && now_s() - t0 < 10;)
            sched_yield();
        CHECK_EQ_INT(atomic_load(&h.started), 2); /* its caller and one worker */
        who_job w;
        memset(&w, 0, sizeof w);
        atomic_init(&w.calls, 0);
        atomic_init(&w.timed_out, 0);
        w.rendezvous = pool == 3;
        CHECK_EQ_INT(kiln_parallel_for(2, who_chunk, &w), 0);
        int calls = atomic_load(&w.calls);
        CHECK_EQ_INT(calls, 2);
        if (pool == 3) {
            /* the free worker ran one chunk while this thread ran the other */
            CHECK_EQ_INT(atomic_load(&w.timed_out), 0);
            CHECK_EQ_INT(distinct_threads(&w, calls), 2);
        } else {
            /* no free worker: both chunks on this thread */
            CHECK_EQ_INT(distinct_threads(&w, calls), 1);
            CHECK(pthread_equal(w.who[0], pthread_self()));
        }
        CHECK_EQ_INT(atomic_load(&h.timed_out), 0); /* finished while the other loop held */
        atomic_store(&h.release, 1);
        pthread_join(holder, NULL);
    }
}

static int bits_chunk(int64_t b, int64_t e, void *c) {
    return b == 0 ? 1 : b == 1 ? 2 : 0;
}

static void test_pool_result_bits(void) {
    /* the chunks' non-zero returns add up (a kernel's KILN_KERNEL_* bits) */
    CHECK_EQ_INT(kiln_set_num_threads(3), KILN_OK);
    for (int rep = 0; rep < 50; rep++)
        CHECK_EQ_INT(kiln_parallel_for(3, bits_chunk, NULL), 3);
    CHECK_EQ_INT(kiln_set_num_threads(1), KILN_OK);
    CHECK_EQ_INT(kiln_parallel_for(3, bits_chunk, NULL), 1); /* one chunk: [0, 3) */
}

/* ---- KILN_NUM_THREADS -------------------------------------------------------------- */

static void test_parse_threads(void) {
    static const char *const good[] = {"1", "8", "1024", "007"};
    static const int want[] = {1, 8, 1024, 7};
    for (int i = 0; i < 4; i++) {
        int v = -1;
        CHECK_EQ_INT(kiln_num_threads_parse(good[i], &v), KILN_OK);
        CHECK_EQ_INT(v, want[i]);
    }
    static const char *const bad[] = {"0", "1025", "-1", "+2", " 2",  "2 ",
                                      "",  "abc",  "4x", "2.", "1e3", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int v = -1;
        CHECK_EQ_INT(kiln_num_threads_parse(bad[i], &v), KILN_ERR_INVALID);
        CHECK_EQ_INT(v, -1);
        CHECK_CONTAINS(kiln_last_error(), "is not a whole number from 1 to 1024");
    }
    CHECK_EQ_INT(kiln_num_threads_parse(NULL, NULL), KILN_ERR_INVALID);
}

/* In a child with KILN_NUM_THREADS=env and stderr to a file: the thread count
 * after two calls and a parallel loop; *warnings counts the lines of
 * stderr that name the variable. */
static int child_threads(const char *env, int *warnings) {
    const char *log = test_tmp_path("threads_env.log");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stderr))
            _exit(255);
        setenv("KILN_NUM_THREADS", env, 1);
        int n = kiln_num_threads();
        kiln_parallel_for(4, bits_chunk, NULL);
        fflush(stderr);
        _exit(n == kiln_num_threads() ? n : 254);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    *warnings = 0;
    FILE *f = fopen(log, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        *warnings += strstr(line, "KILN_NUM_THREADS=") != NULL;
    if (f)
        fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_env_strict(void) {
    cpu_set_t set;
    CHECK_EQ_INT(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = CPU_COUNT(&set), warnings = -1;
    CHECK_EQ_INT(child_threads("3", &warnings), 3);
    CHECK_EQ_INT(warnings, 0);
    CHECK_EQ_INT(child_threads("", &warnings), cpus); /* empty: unset */
    CHECK_EQ_INT(warnings, 0);
    static const char *const bad[] = {"abc", "0", "+3", " 3", "1025", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(child_threads(bad[i], &warnings), cpus);
        CHECK_EQ_INT(warnings, 1); /* once, however often it is read */
    }
}

TEST_MAIN(TEST(test_parse_threads), TEST(test_env_strict), TEST(test_pool_result_bits),
          TEST(test_pool_concurrent_loops), TEST(test_resnet_many_threads),
          TEST(test_compiled_missing_weight))
