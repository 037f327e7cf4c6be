/* thread_pool.c: the process-wide persistent pool behind kiln_parallel_for.
 * Each worker has its own cache line holding a job generation it waits on
 * (spinning briefly with a pause instruction, then sleeping on its condition
 * variable); the caller runs chunk 0 itself and waits for the others. One
 * parallel region runs at a time; nested or concurrent calls run serially. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

#define MAX_THREADS 1024
/* How long a worker spins for the next job before it sleeps, and the caller
 * for the workers to finish. Kernels run back to back (a graph is many
 * small kernels), and waking a sleeping thread costs tens of microseconds
 * on a VM, so both spin for milliseconds, as OpenMP runtimes do. */
#define WORKER_SPIN_NS 5000000LL
#define CALLER_SPIN_NS 5000000LL

typedef struct {
    _Alignas(64) atomic_ullong gen; /* bumped by the caller to hand over a job */
    atomic_int sleeping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int id;
} worker;

/* Held for the whole of a parallel region, and to create or stop the pool. */
static pthread_mutex_t g_dispatch = PTHREAD_MUTEX_INITIALIZER;
static worker *g_workers; /* g_nworkers of them; worker i runs chunk i + 1 */
static int g_nworkers;
static atomic_int g_stop;

/* The current job; written before the workers' generations are bumped. */
static kiln_parallel_fn g_fn;
static void *g_closure;
static int64_t g_n;
static int g_chunks;
static atomic_int g_result;
static atomic_int g_remaining; /* worker chunks not finished */
static atomic_int g_caller_sleeping;
static pthread_mutex_t g_done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;

static atomic_int g_nthreads; /* wanted thread count, 0 until resolved */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_in_parallel;

static inline void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Chunk i of T over [0, n): sizes differ by at most one. */
static inline void chunk_range(int64_t n, int T, int i, int64_t *b, int64_t *e) {
    int64_t q = n / T, r = n % T;
    *b = i * q + (i < r ? i : r);
    *e = *b + q + (i < r);
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void record_result(int r) {
    int zero = 0;
    if (r)
        atomic_compare_exchange_strong(&g_result, &zero, r);
}

static void *worker_main(void *arg) {
    worker *w = arg;
    unsigned long long seen = 0; /* gen starts at 0; a job may be posted before we run */
    t_in_parallel = 1;
    for (;;) {
        unsigned long long g = atomic_load(&w->gen);
        int64_t spin_start = now_ns();
        for (int i = 0; g == seen && !atomic_load(&g_stop); i++) {
            cpu_pause();
            g = atomic_load(&w->gen);
            if ((i & 255) == 255 && now_ns() - spin_start > WORKER_SPIN_NS)
                break;
        }
        if (g == seen && !atomic_load(&g_stop)) {
            pthread_mutex_lock(&w->mu);
            atomic_store(&w->sleeping, 1);
            while ((g = atomic_load(&w->gen)) == seen && !atomic_load(&g_stop))
                pthread_cond_wait(&w->cv, &w->mu);
            atomic_store(&w->sleeping, 0);
            pthread_mutex_unlock(&w->mu);
        }
        if (g == seen)
            break; /* stopped with no job pending */
        seen = g;
        int64_t b, e;
        chunk_range(g_n, g_chunks, w->id, &b, &e);
        record_result(g_fn(b, e, g_closure));
        if (atomic_fetch_sub(&g_remaining, 1) == 1 && atomic_load(&g_caller_sleeping)) {
            pthread_mutex_lock(&g_done_mu);
            pthread_cond_signal(&g_done_cv);
            pthread_mutex_unlock(&g_done_mu);
        }
    }
    return NULL;
}

/* Stop and join every worker. Called with g_dispatch held. */
static void pool_stop(void) {
    if (!g_workers)
        return;
    atomic_store(&g_stop, 1);
    for (int i = 0; i < g_nworkers; i++) {
        pthread_mutex_lock(&g_workers[i].mu);
        pthread_cond_signal(&g_workers[i].cv);
        pthread_mutex_unlock(&g_workers[i].mu);
    }
    for (int i = 0; i < g_nworkers; i++) {
        pthread_join(g_workers[i].thread, NULL);
        pthread_mutex_destroy(&g_workers[i].mu);
        pthread_cond_destroy(&g_workers[i].cv);
    }
    free(g_workers);
    g_workers = NULL;
    g_nworkers = 0;
    atomic_store(&g_stop, 0);
}

/* Start nthreads - 1 workers (fewer if thread creation fails). Called with
 * g_dispatch held and no pool running. */
static void pool_start(int nthreads) {
    int n = nthreads - 1;
    if (n <= 0)
        return;
    g_workers = aligned_alloc(64, (size_t)n * sizeof(worker));
    if (!g_workers)
        return;
    int k = 0;
    for (; k < n; k++) {
        worker *w = &g_workers[k];
        atomic_init(&w->gen, 0);
        atomic_init(&w->sleeping, 0);
        w->id = k + 1;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pthread_mutex_destroy(&w->mu);
            pthread_cond_destroy(&w->cv);
            break;
        }
    }
    g_nworkers = k;
    if (k == 0) {
        free(g_workers);
        g_workers = NULL;
    }
}

/* At exit or library unload: stop the workers unless a parallel region is
 * still running (exit called from inside a loop body must not hang). */
__attribute__((destructor)) static void pool_shutdown(void) {
    if (pthread_mutex_trylock(&g_dispatch) != 0)
        return;
    pool_stop();
    pthread_mutex_unlock(&g_dispatch);
}

/* In a forked child the workers are gone: forget them. */
static void pool_atfork_child(void) {
    free(g_workers);
    g_workers = NULL;
    g_nworkers = 0;
    pthread_mutex_init(&g_dispatch, NULL);
    pthread_mutex_init(&g_done_mu, NULL);
    pthread_cond_init(&g_done_cv, NULL);
}

static int default_threads(void) {
    const char *env = getenv("KILN_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == 0 && v >= 1 && v <= MAX_THREADS)
            return (int)v;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c >= 1)
            return c < MAX_THREADS ? c : MAX_THREADS;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c >= 1 ? (c < MAX_THREADS ? (int)c : MAX_THREADS) : 1;
}

static void pool_init_once(void) {
    int expected = 0;
    atomic_compare_exchange_strong(&g_nthreads, &expected, default_threads());
    pthread_atfork(NULL, NULL, pool_atfork_child);
}

int kiln_num_threads(void) {
    pthread_once(&g_once, pool_init_once);
    return atomic_load(&g_nthreads);
}

kiln_status kiln_set_num_threads(int n) {
    if (n < 1 || n > MAX_THREADS)
        return kiln_set_error(KILN_ERR_INVALID, "set_num_threads: %d is outside [1, %d]", n,
                              MAX_THREADS);
    pthread_once(&g_once, pool_init_once);
    atomic_store(&g_nthreads, n); /* the pool is resized by the next parallel loop */
    return KILN_OK;
}

/* Run the whole range on this thread, as a parallel region. */
static int run_serial(int64_t n, kiln_parallel_fn fn, void *closure) {
    int was = t_in_parallel;
    t_in_parallel = 1;
    int r = fn(0, n, closure);
    t_in_parallel = was;
    return r;
}

int kiln_parallel_for(int64_t n, kiln_parallel_fn fn, void *closure) {
    if (n <= 0)
        return 0;
    if (t_in_parallel)
        return fn(0, n, closure);
    int want = kiln_num_threads();
    if (want <= 1 || n == 1 || pthread_mutex_trylock(&g_dispatch) != 0)
        return run_serial(n, fn, closure);
    if (g_nworkers + 1 != want) {
        pool_stop();
        pool_start(want);
    }
    int T = g_nworkers + 1;
    if (n < T)
        T = (int)n;
    if (T <= 1) {
        pthread_mutex_unlock(&g_dispatch);
        return run_serial(n, fn, closure);
    }
    g_fn = fn;
    g_closure = closure;
    g_n = n;
    g_chunks = T;
    atomic_store(&g_result, 0);
    atomic_store(&g_remaining, T - 1);
    for (int i = 1; i < T; i++) {
        worker *w = &g_workers[i - 1];
        atomic_fetch_add(&w->gen, 1);
        if (atomic_load(&w->sleeping)) {
            pthread_mutex_lock(&w->mu);
            pthread_cond_signal(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
    }
    int64_t b, e;
    chunk_range(n, T, 0, &b, &e);
    t_in_parallel = 1;
    record_result(fn(b, e, closure));
    t_in_parallel = 0;
    int64_t spin_start = now_ns();
    for (int i = 0; atomic_load(&g_remaining) > 0; i++) {
        cpu_pause();
        if ((i & 255) == 255 && now_ns() - spin_start > CALLER_SPIN_NS)
            break;
    }
    if (atomic_load(&g_remaining) > 0) {
        pthread_mutex_lock(&g_done_mu);
        atomic_store(&g_caller_sleeping, 1);
        while (atomic_load(&g_remaining) > 0)
            pthread_cond_wait(&g_done_cv, &g_done_mu);
        atomic_store(&g_caller_sleeping, 0);
        pthread_mutex_unlock(&g_done_mu);
    }
    int r = atomic_load(&g_result);
    pthread_mutex_unlock(&g_dispatch);
    return r;
}
