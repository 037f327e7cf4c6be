/* test_runtime_pool.c: the thread pool: chunking, results against a serial
 * loop, nesting, error propagation, resizing and calls from several threads. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "kiln/runtime.h"

typedef struct {
    const int64_t *x;
    int64_t partial[64]; /* by chunk begin: written once per chunk */
    atomic_int calls;
    atomic_llong covered;
    int64_t begins[64], ends[64];
} sum_job;

static int sum_chunk(int64_t b, int64_t e, void *c) {
    sum_job *j = c;
    int k = atomic_fetch_add(&j->calls, 1);
    int64_t s = 0;
    for (int64_t i = b; i < e; i++)
        s += j->x[i];
    if (k < 64) {
        j->partial[k] = s;
        j->begins[k] = b;
        j->ends[k] = e;
    }
    atomic_fetch_add(&j->covered, e - b);
    return 0;
}

static int64_t run_sum(const int64_t *x, int64_t n, sum_job *j) {
    memset(j, 0, sizeof *j);
    j->x = x;
    CHECK_EQ_INT(kiln_parallel_for(n, sum_chunk, j), 0);
    int64_t s = 0;
    int calls = atomic_load(&j->calls);
    for (int k = 0; k < calls && k < 64; k++)
        s += j->partial[k];
    return s;
}

static void test_sum(void) {
    enum { N = 100003 };
    static int64_t x[N];
    int64_t serial = 0;
    for (int i = 0; i < N; i++)
        serial += x[i] = (i * 7919) % 1000 - 500;
    sum_job j;
    int threads[] = {1, 2, 3, 4, 7};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        CHECK_EQ_INT(kiln_set_num_threads(threads[t]), KILN_OK);
        CHECK_EQ_INT(kiln_num_threads(), threads[t]);
        for (int rep = 0; rep < 50; rep++) {
            CHECK_EQ_INT(run_sum(x, N, &j), serial);
            CHECK_EQ_INT(atomic_load(&j.covered), N);
            CHECK_EQ_INT(atomic_load(&j.calls), threads[t]);
        }
        /* Chunks are contiguous, cover [0, N) and differ in size by at most 1. */
        int calls = atomic_load(&j.calls);
        int64_t mn = N, mx = 0, total = 0;
        for (int k = 0; k < calls; k++) {
            int64_t len = j.ends[k] - j.begins[k];
            mn = len < mn ? len : mn;
            mx = len > mx ? len : mx;
            total += len;
            int touches = 0;
            for (int q = 0; q < calls; q++)
                touches += j.ends[q] == j.begins[k];
            CHECK(j.begins[k] == 0 || touches == 1);
        }
        CHECK_EQ_INT(total, N);
        CHECK(mx - mn <= 1);
    }
}

static void test_small_n(void) {
    static int64_t x[5] = {1, 2, 3, 4, 5};
    sum_job j;
    CHECK_EQ_INT(kiln_set_num_threads(4), KILN_OK);
    for (int64_t n = 1; n <= 5; n++) {
        CHECK_EQ_INT(run_sum(x, n, &j), n * (n + 1) / 2);
        CHECK_EQ_INT(atomic_load(&j.calls), n < 4 ? n : 4);
        for (int k = 0; k < atomic_load(&j.calls); k++)
            CHECK_EQ_INT(j.ends[k] - j.begins[k], 1 + (n == 5 && j.begins[k] == 0));
    }
    run_sum(x, 0, &j);
    CHECK_EQ_INT(atomic_load(&j.calls), 0);
    run_sum(x, -3, &j);
    CHECK_EQ_INT(atomic_load(&j.calls), 0);
}

typedef struct {
    atomic_int inner_calls;
    atomic_int inner_full; /* inner calls that got the whole range at once */
} nest_job;

static int inner_chunk(int64_t b, int64_t e, void *c) {
    nest_job *j = c;
    atomic_fetch_add(&j->inner_calls, 1);
    if (b == 0 && e == 10)
        atomic_fetch_add(&j->inner_full, 1);
    return 0;
}

static int outer_chunk(int64_t b, int64_t e, void *c) {
    for (int64_t i = b; i < e; i++)
        if (kiln_parallel_for(10, inner_chunk, c) != 0)
            return 1;
    return 0;
}

static void test_nested(void) {
    CHECK_EQ_INT(kiln_set_num_threads(4), KILN_OK);
    nest_job j;
    atomic_init(&j.inner_calls, 0);
    atomic_init(&j.inner_full, 0);
    CHECK_EQ_INT(kiln_parallel_for(8, outer_chunk, &j), 0);
    /* Every nested call runs serially: one chunk with the whole range. */
    CHECK_EQ_INT(atomic_load(&j.inner_calls), 8);
    CHECK_EQ_INT(atomic_load(&j.inner_full), 8);
    /* Outside a region, the pool is used again. */
    atomic_store(&j.inner_calls, 0);
    CHECK_EQ_INT(kiln_parallel_for(10, inner_chunk, &j), 0);
    CHECK_EQ_INT(atomic_load(&j.inner_calls), 4);
}

static int fail_chunk(int64_t b, int64_t e, void *c) {
    int64_t bad = *(int64_t *)c;
    return bad >= b && bad < e ? 42 : 0;
}

static void test_errors(void) {
    CHECK_EQ_INT(kiln_set_num_threads(3), KILN_OK);
    for (int64_t bad = 0; bad < 9; bad++)
        CHECK_EQ_INT(kiln_parallel_for(9, fail_chunk, &bad), 42);
    int64_t none = -1;
    CHECK_EQ_INT(kiln_parallel_for(9, fail_chunk, &none), 0);
    kiln_clear_error();
    CHECK_EQ_INT(kiln_set_num_threads(0), KILN_ERR_INVALID);
    CHECK_CONTAINS(kiln_last_error(), "set_num_threads");
    CHECK_EQ_INT(kiln_set_num_threads(-5), KILN_ERR_INVALID);
    CHECK_EQ_INT(kiln_num_threads(), 3);
}

typedef struct {
    const int64_t *x;
    int64_t n, expect;
    int ok;
} thread_arg;

static void *user_thread(void *p) {
    thread_arg *a = p;
    sum_job *j = malloc(sizeof *j);
    a->ok = 1;
    for (int rep = 0; rep < 300; rep++) {
        memset(j, 0, sizeof *j);
        j->x = a->x;
        if (kiln_parallel_for(a->n, sum_chunk, j) != 0)
            a->ok = 0;
        int64_t s = 0;
        for (int k = 0; k < atomic_load(&j->calls) && k < 64; k++)
            s += j->partial[k];
        if (s != a->expect || atomic_load(&j->covered) != a->n)
            a->ok = 0;
    }
    free(j);
    return NULL;
}

static void test_concurrent_callers(void) {
    enum { N = 20000 };
    static int64_t x[N];
    int64_t s = 0;
    for (int i = 0; i < N; i++)
        s += x[i] = i % 13;
    CHECK_EQ_INT(kiln_set_num_threads(3), KILN_OK);
    thread_arg args[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (thread_arg){x, N, s, 0};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, user_thread, &args[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].ok);
    }
}

static int count_chunk(int64_t b, int64_t e, void *c) {
    atomic_fetch_add((atomic_llong *)c, e - b);
    return 0;
}

static void test_many_small_loops(void) {
    /* Back-to-back tiny loops stress the hand-over between caller and workers. */
    CHECK_EQ_INT(kiln_set_num_threads(2), KILN_OK);
    atomic_llong total;
    atomic_init(&total, 0);
    int64_t expect = 0;
    for (int i = 0; i < 20000; i++) {
        int64_t n = 1 + i % 7;
        expect += n;
        kiln_parallel_for(n, count_chunk, &total);
    }
    CHECK_EQ_INT(atomic_load(&total), expect);
}

/* Run kiln_num_threads in a child process with KILN_NUM_THREADS=env. */
static int threads_with_env(const char *env) {
    pid_t pid = fork();
    if (pid == 0) {
        if (env)
            setenv("KILN_NUM_THREADS", env, 1);
        else
            unsetenv("KILN_NUM_THREADS");
        _exit(kiln_num_threads());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_env(void) {
    /* Runs first: the variable is read once, so each case uses a fresh child. */
    cpu_set_t set;
    CHECK_EQ_INT(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = CPU_COUNT(&set);
    CHECK_EQ_INT(threads_with_env(NULL), cpus);
    CHECK_EQ_INT(threads_with_env("3"), 3);
    CHECK_EQ_INT(threads_with_env("1"), 1);
    CHECK_EQ_INT(threads_with_env("0"), cpus);
    CHECK_EQ_INT(threads_with_env("-2"), cpus);
    CHECK_EQ_INT(threads_with_env("4x"), cpus);
    CHECK_EQ_INT(threads_with_env("abc"), cpus);
    CHECK_EQ_INT(threads_with_env(""), cpus);
}

static void test_fork_child(void) {
    /* A forked child can use the pool although the parent's workers are gone. */
    CHECK_EQ_INT(kiln_set_num_threads(3), KILN_OK);
    atomic_llong total;
    atomic_init(&total, 0);
    kiln_parallel_for(10, count_chunk, &total);
    pid_t pid = fork();
    if (pid == 0) {
        atomic_store(&total, 0);
        int r = kiln_parallel_for(30, count_chunk, &total);
        _exit(r == 0 && atomic_load(&total) == 30 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_MAIN(TEST(test_env), TEST(test_sum), TEST(test_small_n), TEST(test_nested), TEST(test_errors),
          TEST(test_concurrent_callers), TEST(test_many_small_loops), TEST(test_fork_child))
