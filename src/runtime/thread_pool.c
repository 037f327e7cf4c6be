/* thread_pool.c: the process-wide persistent pool behind kiln_parallel_for.
 * A loop is a job on its caller's stack, cut into a fixed number of chunks
 * that the caller and the workers it claims take one by one. A caller
 * claims free workers with a compare-and-swap on each one's flag, so
 * concurrent loops share the pool without a lock and without touching each
 * other's jobs; one that finds no free worker runs all its chunks itself.
 * Each worker has its own cache line holding the job generation it waits
 * on (spinning briefly with a pause instruction, then sleeping on its
 * condition variable). The pool grows to the wanted size and never
 * shrinks; workers past the wanted count are not claimed and sleep. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* One parallel loop, on its caller's stack. It lives until the caller has
 * seen every chunk done and every claimed worker let go of it (active). */
typedef struct {
    kiln_parallel_fn fn;
    void *closure;
    int64_t n;
    int chunks;
    atomic_int next;      /* the next chunk to take */
    atomic_int remaining; /* chunks not finished */
    atomic_int active;    /* claimed workers that may still touch the job */
    atomic_int result;    /* OR of the chunks' non-zero returns */
    atomic_int caller_sleeping;
    pthread_mutex_t mu; /* with cv: the caller's sleep until remaining is 0 */
    pthread_cond_t cv;
} job;

typedef struct {
    _Alignas(64) atomic_ullong gen; /* bumped by the claiming caller to hand over a job */
    atomic_int claimed;             /* 1 while a caller owns the worker */
    atomic_int sleeping;
    job *job; /* written by the claimer before it bumps gen */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
} worker;

/* Workers [0, g_nworkers) are running; each stays at its index until exit. */
static worker *g_workers[MAX_THREADS];
static atomic_int g_nworkers;
static pthread_mutex_t g_grow = PTHREAD_MUTEX_INITIALIZER; /* to start workers */
static atomic_int g_stop;
/* bumped by kiln_pool_quiet: spinning workers go to sleep at once */
static atomic_int g_quiet;

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

/* Step i of a spin wait: a pause, and every 256th step a yield of the
 * CPU, so that with more runnable threads than cores (concurrent callers)
 * the thread being waited for gets to run. Without them the yield returns
 * at once. */
static inline void spin_pause(int i) {
    if ((i & 255) == 255)
        sched_yield();
    else
        cpu_pause();
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

/* Take and run chunks of j until none is left. */
static void run_chunks(job *j) {
    int c;
    while ((c = atomic_fetch_add(&j->next, 1)) < j->chunks) {
        int64_t b, e;
        chunk_range(j->n, j->chunks, c, &b, &e);
        int r = j->fn(b, e, j->closure);
        if (r)
            atomic_fetch_or(&j->result, r);
        atomic_fetch_sub(&j->remaining, 1);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    unsigned long long seen = 0; /* gen starts at 0; a job may be posted before we run */
    t_in_parallel = 1;
    for (;;) {
        unsigned long long g = atomic_load(&w->gen);
        int64_t spin_start = now_ns();
        int quiet = atomic_load(&g_quiet);
        for (int i = 0; g == seen && !atomic_load(&g_stop); i++) {
            spin_pause(i);
            g = atomic_load(&w->gen);
            if ((i & 255) == 255 &&
                (now_ns() - spin_start > WORKER_SPIN_NS || atomic_load(&g_quiet) != quiet))
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
        job *j = w->job;
        run_chunks(j);
        /* free for the next caller; this thread reads no more of w->job */
        atomic_store(&w->claimed, 0);
        if (atomic_load(&j->remaining) == 0 && atomic_load(&j->caller_sleeping)) {
            pthread_mutex_lock(&j->mu);
            pthread_cond_signal(&j->cv);
            pthread_mutex_unlock(&j->mu);
        }
        atomic_fetch_sub(&j->active, 1); /* the last touch of j */
    }
    return NULL;
}

/* Start workers until there are `want` (fewer if thread creation fails).
 * Only one thread grows the pool; the others go on with what is running. */
static void pool_grow(int want) {
    if (atomic_load(&g_nworkers) >= want || pthread_mutex_trylock(&g_grow) != 0)
        return;
    for (int k = atomic_load(&g_nworkers); k < want && !atomic_load(&g_stop); k++) {
        worker *w = aligned_alloc(64, sizeof(worker));
        if (!w)
            break;
        memset(w, 0, sizeof *w);
        atomic_init(&w->gen, 0);
        atomic_init(&w->claimed, 0);
        atomic_init(&w->sleeping, 0);
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pthread_mutex_destroy(&w->mu);
            pthread_cond_destroy(&w->cv);
            free(w);
            break;
        }
        g_workers[k] = w;
        atomic_store(&g_nworkers, k + 1); /* publishes g_workers[k] */
    }
    pthread_mutex_unlock(&g_grow);
}

/* At exit or library unload: stop and join the workers, unless a loop is
 * running (exit called from a loop body, or while another thread runs one,
 * must not hang): every worker must be claimed here first. The workers'
 * memory stays (a caller may still read a worker's flag); claimed for good,
 * they are never handed a job again. */
__attribute__((destructor)) static void pool_shutdown(void) {
    if (pthread_mutex_trylock(&g_grow) != 0)
        return;
    int n = atomic_load(&g_nworkers), k = 0;
    for (; k < n; k++) {
        int free_ = 0;
        if (!atomic_compare_exchange_strong(&g_workers[k]->claimed, &free_, 1))
            break;
    }
    if (k < n) {
        while (k-- > 0)
            atomic_store(&g_workers[k]->claimed, 0);
        pthread_mutex_unlock(&g_grow);
        return;
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&g_workers[i]->mu);
        pthread_cond_signal(&g_workers[i]->cv);
        pthread_mutex_unlock(&g_workers[i]->mu);
    }
    for (int i = 0; i < n; i++)
        pthread_join(g_workers[i]->thread, NULL);
    pthread_mutex_unlock(&g_grow);
}

/* In a forked child the workers are gone: forget them (their memory too). */
static void pool_atfork_child(void) {
    int n = atomic_load(&g_nworkers);
    for (int i = 0; i < n; i++) {
        free(g_workers[i]);
        g_workers[i] = NULL;
    }
    atomic_store(&g_nworkers, 0);
    pthread_mutex_init(&g_grow, NULL);
}

kiln_status kiln_num_threads_parse(const char *s, int *out) {
    if (!s || !out)
        return kiln_set_error(KILN_ERR_INVALID, "num_threads_parse: NULL argument");
    int v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && v <= MAX_THREADS; p++)
        v = v * 10 + (*p - '0');
    if (p == s || *p || v < 1 || v > MAX_THREADS)
        return kiln_set_error(KILN_ERR_INVALID,
                              "the thread count '%s' is not a whole number from 1 to %d", s,
                              MAX_THREADS);
    *out = v;
    return KILN_OK;
}

/* The cores this process may run on. */
static int core_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c >= 1)
            return c < MAX_THREADS ? c : MAX_THREADS;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c >= 1 ? (c < MAX_THREADS ? (int)c : MAX_THREADS) : 1;
}

/* KILN_NUM_THREADS if set and valid (a bad value: one warning, then the
 * cores), else the cores. Unset and empty mean the same. */
static int default_threads(void) {
    const char *env = getenv("KILN_NUM_THREADS");
    int v;
    if (!env || !*env)
        return core_count();
    if (kiln_num_threads_parse(env, &v) == KILN_OK)
        return v;
    v = core_count();
    fprintf(stderr,
            "kiln: warning: KILN_NUM_THREADS='%s' is not a whole number from 1 to %d; using "
            "%d threads (the cores this process may run on)\n",
            env, MAX_THREADS, v);
    return v;
}

static void pool_init_once(void) {
    int expected = 0;
    atomic_compare_exchange_strong(&g_nthreads, &expected, default_threads());
    pthread_atfork(NULL, NULL, pool_atfork_child);
}

void kiln_pool_quiet(void) {
    atomic_fetch_add(&g_quiet, 1);
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
    atomic_store(&g_nthreads, n); /* the pool grows at the next parallel loop */
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

/* Claim up to `want` free workers among the first `limit` and hand each
 * the job; returns how many were claimed. */
static int claim_workers(job *j, int want, int limit) {
    int got = 0, n = atomic_load(&g_nworkers);
    if (n > limit)
        n = limit;
    for (int i = 0; i < n && got < want; i++) {
        worker *w = g_workers[i];
        int free_ = 0;
        if (atomic_load(&w->claimed) || !atomic_compare_exchange_strong(&w->claimed, &free_, 1))
            continue;
        got++;
        atomic_fetch_add(&j->active, 1);
        w->job = j;
        atomic_fetch_add(&w->gen, 1);
        if (atomic_load(&w->sleeping)) {
            pthread_mutex_lock(&w->mu);
            pthread_cond_signal(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
    }
    return got;
}

int kiln_parallel_for(int64_t n, kiln_parallel_fn fn, void *closure) {
    if (n <= 0)
        return 0;
    if (t_in_parallel)
        return fn(0, n, closure);
    int want = kiln_num_threads();
    int T = n < want ? (int)n : want;
    if (T <= 1)
        return run_serial(n, fn, closure);
    pool_grow(want - 1);
    job j;
    j.fn = fn;
    j.closure = closure;
    j.n = n;
    j.chunks = T;
    atomic_init(&j.next, 0);
    atomic_init(&j.remaining, T);
    atomic_init(&j.active, 0);
    atomic_init(&j.result, 0);
    atomic_init(&j.caller_sleeping, 0);
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    if (claim_workers(&j, T - 1, want - 1) == 0) {
        pthread_mutex_destroy(&j.mu);
        pthread_cond_destroy(&j.cv);
        /* every worker is busy with other loops: run the chunks here, cut
           as they would be on the pool */
        t_in_parallel = 1;
        run_chunks(&j);
        t_in_parallel = 0;
        return atomic_load(&j.result);
    }
    t_in_parallel = 1;
    run_chunks(&j);
    t_in_parallel = 0;
    int64_t spin_start = now_ns();
    for (int i = 0; atomic_load(&j.remaining) > 0; i++) {
        spin_pause(i);
        if ((i & 255) == 255 && now_ns() - spin_start > CALLER_SPIN_NS)
            break;
    }
    if (atomic_load(&j.remaining) > 0) {
        pthread_mutex_lock(&j.mu);
        atomic_store(&j.caller_sleeping, 1);
        while (atomic_load(&j.remaining) > 0)
            pthread_cond_wait(&j.cv, &j.mu);
        pthread_mutex_unlock(&j.mu);
    }
    /* a worker that took no chunk may not have looked at the job yet */
    for (int i = 0; atomic_load(&j.active) > 0; i++)
        spin_pause(i);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.cv);
    return atomic_load(&j.result);
}
