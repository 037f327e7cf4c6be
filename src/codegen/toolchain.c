/* toolchain.c: compiling a rendered C source into a shared object with the
 * system C compiler. The source goes to a fresh $TMPDIR/kiln-XXXXXX folder;
 * the compiler runs via fork/execvp with its output in NAME.log there (its
 * --version, for the cache key, via posix_spawnp). On
 * failure the folder is kept so the user can inspect NAME.c and NAME.log. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen.h"
#include "compile_cache.h"

/* Flags always passed before the user's: GNU C11 (vector extensions), and
 * no errno from libm so sqrt and friends inline. No -ffast-math: results
 * must match the naive schedule and NaN semantics must hold. */
static const char *const g_pre_flags[] = {"-std=gnu11", "-fno-math-errno"};

codegen_toolchain codegen_target_toolchain(const kiln_target *t) {
    codegen_toolchain tc = {kiln_target_cc(t), kiln_target_cflags(t), -1, NULL, NULL};
    return tc;
}

typedef struct {
    char **v;
    int n, cap;
} argv_t;

static void argv_push(argv_t *a, const char *s, size_t len) {
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->v = realloc(a->v, (size_t)a->cap * sizeof(char *));
        KILN_ASSERT(a->v);
    }
    char *c = malloc(len + 1);
    KILN_ASSERT(c);
    memcpy(c, s, len);
    c[len] = 0;
    a->v[a->n++] = c;
    a->v[a->n] = NULL;
}

/* Split on whitespace (no quoting). */
static void argv_split(argv_t *a, const char *s) {
    while (s && *s) {
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        const char *b = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n')
            s++;
        if (s > b)
            argv_push(a, b, (size_t)(s - b));
    }
}

static void argv_free(argv_t *a) {
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
}

/* Remove a folder and the plain files in it. */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[4096 + 512];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* The first `maxlines` lines of a file (malloc'd; "" if unreadable). */
static char *log_head(const char *path, int maxlines) {
    kstr s;
    kstr_init(&s);
    FILE *f = fopen(path, "r");
    if (f) {
        int lines = 0, c;
        while (lines < maxlines && (c = fgetc(f)) != EOF) {
            kstr_putc(&s, (char)c);
            if (c == '\n')
                lines++;
        }
        if (lines == maxlines && fgetc(f) != EOF)
            kstr_puts(&s, "...\n");
        fclose(f);
    }
    return kstr_take(&s);
}

/* One compiler process: its command line, its log, and the pipe on which
 * the child reports a failed exec. It runs in the build folder on names
 * relative to it, so that neither its command line (part of its cache key)
 * nor its output (an object names its source) depends on the folder. */
typedef struct {
    argv_t av;
    char src[4096 + 512], log[4096 + 512], out[4096 + 512]; /* absolute */
    const char *cwd;
    pid_t pid;
    int logfd, errpipe, running;
    int hit;                               /* its output came from the cache */
    unsigned char key[KILN_SHA256_BYTES];  /* with a cache: what decides its output */
    unsigned char made[KILN_SHA256_BYTES]; /* the digest of its output */
} job;

/* cc, the fixed flags and the user's; a compiler named by a relative path
 * is made absolute, as the job runs in another folder */
static void job_command(job *j, const char *cc, const codegen_toolchain *tc, int compile_only) {
    argv_split(&j->av, cc);
    if (!j->av.n)
        argv_split(&j->av, "cc");
    char *abs = strchr(j->av.v[0], '/') && j->av.v[0][0] != '/' ? realpath(j->av.v[0], NULL) : NULL;
    if (abs) {
        free(j->av.v[0]);
        j->av.v[0] = abs;
    }
    if (compile_only)
        for (size_t i = 0; i < sizeof g_pre_flags / sizeof g_pre_flags[0]; i++)
            argv_push(&j->av, g_pre_flags[i], strlen(g_pre_flags[i]));
    argv_split(&j->av, tc->cflags);
}

static void job_arg(job *j, const char *a) {
    argv_push(&j->av, a, strlen(a));
}

static char *job_text(const job *j) {
    kstr cmd;
    kstr_init(&cmd);
    for (int i = 0; i < j->av.n; i++)
        kstr_printf(&cmd, "%s%s", i ? " " : "", j->av.v[i]);
    return kstr_take(&cmd);
}

static kiln_status job_start(job *j) {
    int p[2] = {-1, -1};
    j->pid = -1;
    j->errpipe = -1;
    j->logfd = open(j->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (j->logfd < 0 || pipe2(p, O_CLOEXEC) != 0)
        return kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", j->log, strerror(errno));
    j->pid = fork();
    if (j->pid < 0) {
        close(p[0]);
        close(p[1]);
        return kiln_set_error(KILN_ERR_TOOLCHAIN, "cannot start the C compiler: %s",
                              strerror(errno));
    }
    if (j->pid == 0) {
        dup2(j->logfd, 1);
        dup2(j->logfd, 2);
        int fd0 = open("/dev/null", O_RDONLY);
        if (fd0 >= 0)
            dup2(fd0, 0);
        if (chdir(j->cwd) == 0)
            execvp(j->av.v[0], j->av.v);
        int e = errno;
        ssize_t w = write(p[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(p[1]);
    j->errpipe = p[0];
    j->running = 1;
    return KILN_OK;
}

/* A finished job's outcome from its wait status: KILN_OK, or an error
 * (*no_exec set if the compiler could not be run at all). */
static kiln_status job_result(job *j, int status, int *no_exec) {
    kiln_status st = KILN_OK;
    int exec_errno = 0;
    ssize_t got;
    do
        got = read(j->errpipe, &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    j->running = 0;
    if (got == (ssize_t)sizeof exec_errno) {
        *no_exec = 1;
        st = kiln_set_error(KILN_ERR_TOOLCHAIN,
                            "cannot run the C compiler '%s': %s (set KILN_CC, the build option cc "
                            "or kiln compile --cross-compiler)",
                            j->av.v[0], strerror(exec_errno));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char how[64];
        if (WIFSIGNALED(status))
            snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
        else
            snprintf(how, sizeof how, "exit %d", WEXITSTATUS(status));
        char *head = log_head(j->log, 20), *cmd = job_text(j);
        st = kiln_set_error(KILN_ERR_TOOLCHAIN, "compiling %s with '%s' failed (%s):\n%s", j->src,
                            cmd ? cmd : "?", how, head ? head : "");
        free(head);
        free(cmd);
    }
    return st;
}

static void job_free(job *j) {
    if (j->logfd >= 0)
        close(j->logfd);
    if (j->errpipe >= 0)
        close(j->errpipe);
    argv_free(&j->av);
}

/* Wait for the running jobs among n; the first error is returned (*keep:
 * the compiler failed on its input). With a progress callback each job
 * that ends is reported, and every quarter second that none does (so a
 * display's clock goes on): the jobs are polled, first every millisecond,
 * then less often up to every 20 ms. Without one, each is waited for in
 * turn. */
static kiln_status wait_jobs(job *jobs, int n, const codegen_toolchain *tc, const char *phase,
                             int *done, int total, int *no_exec, int *keep) {
    kiln_status st = KILN_OK;
    long nap_ns = 1000 * 1000;
    double told = kiln_now_s();
    for (;;) {
        int left = 0, ended = 0;
        for (int k = 0; k < n; k++) {
            if (!jobs[k].running)
                continue;
            int status = 0;
            pid_t r;
            do
                r = waitpid(jobs[k].pid, &status, tc->progress ? WNOHANG : 0);
            while (r < 0 && errno == EINTR && !tc->progress);
            if (r == 0 || (r < 0 && errno == EINTR)) {
                left++;
                continue;
            }
            ended++;
            kiln_status s = job_result(&jobs[k], status, no_exec);
            if (s && !st)
                st = s, *keep = 1;
            ++*done;
            if (tc->progress) {
                tc->progress(tc->progress_user, phase, *done, total, NULL);
                told = kiln_now_s();
            }
        }
        if (!left)
            return st;
        if (ended) {
            nap_ns = 1000 * 1000;
            continue;
        }
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
        nap_ns = nap_ns * 2 < 20 * 1000 * 1000 ? nap_ns * 2 : 20 * 1000 * 1000;
        if (kiln_now_s() - told >= 0.25) {
            tc->progress(tc->progress_user, phase, *done, total, NULL);
            told = kiln_now_s();
        }
    }
}

/* ---- cache keys ------------------------------------------------------------ */

/* The output of `argv --version` (at most cap - 1 bytes), "" if it fails.
 * Spawned (vfork-like), not forked: this runs on every compile, cached ones
 * too, when the process may hold a model's weights, whose page tables a
 * fork would copy. */
static void compiler_version(const argv_t *cmd, char *out, size_t cap) {
    out[0] = 0;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return;
    char *av[64];
    int n = 0;
    for (; n < cmd->n && n < 62; n++)
        av[n] = cmd->v[n];
    av[n++] = (char *)"--version";
    av[n] = NULL;
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;
    if (posix_spawn_file_actions_init(&fa) == 0) {
        if (posix_spawn_file_actions_adddup2(&fa, p[1], 1) == 0 &&
            posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) == 0 &&
            posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) == 0 &&
            posix_spawnp(&pid, av[0], &fa, NULL, av, environ) != 0)
            pid = -1;
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t r;
    while (pid > 0 && len + 1 < cap &&
           ((r = read(p[0], out + len, cap - 1 - len)) > 0 || (r < 0 && errno == EINTR)))
        len += r > 0 ? (size_t)r : 0;
    out[len] = 0;
    close(p[0]);
    while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

static void hash_str(kiln_sha256 *h, const char *tag, const char *s) {
    kiln_sha256_update(h, tag, strlen(tag) + 1);
    kiln_sha256_update(h, s ? s : "", strlen(s ? s : "") + 1);
}

/* What every job's key starts with: the compiler (its program's resolved
 * path, size and time, and its --version), the environment variables GCC
 * reads for headers and programs, and the CPU when a flag says "native". */
static void key_base(kiln_sha256 *h, const job *j) {
    kiln_sha256_init(h);
    hash_str(h, "kiln kernel cache", "1");
    argv_t cc = {0};
    for (int i = 0; i < j->av.n && strcmp(j->av.v[i], g_pre_flags[0]); i++)
        argv_push(&cc, j->av.v[i], strlen(j->av.v[i]));
    char *path = NULL;
    if (strchr(cc.v[0], '/')) {
        path = realpath(cc.v[0], NULL);
    } else {
        const char *dirs = getenv("PATH");
        for (const char *d = dirs ? dirs : ""; *d && !path;) {
            size_t n = strcspn(d, ":");
            char cand[4096];
            snprintf(cand, sizeof cand, "%.*s/%s", (int)n, d, cc.v[0]);
            if (access(cand, X_OK) == 0)
                path = realpath(cand, NULL);
            d += n + (d[n] == ':');
        }
    }
    struct stat sb;
    char id[4600];
    if (path && stat(path, &sb) == 0)
        snprintf(id, sizeof id, "%s %lld %lld.%09ld", path, (long long)sb.st_size,
                 (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
    else
        snprintf(id, sizeof id, "%s", cc.v[0]);
    free(path);
    hash_str(h, "compiler", id);
    char version[4096];
    compiler_version(&cc, version, sizeof version);
    hash_str(h, "version", version);
    argv_free(&cc);
    static const char *const env[] = {"CPATH",         "C_INCLUDE_PATH", "GCC_EXEC_PREFIX",
                                      "COMPILER_PATH", "LIBRARY_PATH",   "SOURCE_DATE_EPOCH"};
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
        hash_str(h, env[i], getenv(env[i]));
    int native = 0;
    for (int i = 0; i < j->av.n; i++)
        native |= strstr(j->av.v[i], "native") != NULL;
    if (native) {
        char cpu[1024];
        target_host_cpu_id(cpu, sizeof cpu);
        hash_str(h, "cpu", cpu);
    }
}

/* A job's key: the base, its command line, and its inputs' text. */
static void job_key(job *j, const kiln_sha256 *base, int ninputs, const void *const *inputs,
                    const size_t *lens) {
    kiln_sha256 h = *base;
    for (int i = 0; i < j->av.n; i++)
        hash_str(&h, "arg", j->av.v[i]);
    for (int i = 0; i < ninputs; i++) {
        char len[32];
        snprintf(len, sizeof len, "%zu", lens[i]);
        hash_str(&h, "input", len);
        kiln_sha256_update(&h, inputs[i], lens[i]);
    }
    kiln_sha256_final(&h, j->key);
}

/* ---- compiling ---------------------------------------------------------------- */

kiln_status codegen_compile(const char *source, const char *name, const codegen_toolchain *tc,
                            char **so_path, char **tmpdir) {
    return codegen_compile_parts(1, &source, name, tc, so_path, tmpdir);
}

static void report(const codegen_toolchain *tc, const char *phase, int done, int total,
                   const char *note) {
    if (tc->progress)
        tc->progress(tc->progress_user, phase, done, total, note);
}

kiln_status codegen_compile_parts(int n, const char *const *sources, const char *name,
                                  const codegen_toolchain *tc, char **so_path, char **tmpdir) {
    *so_path = NULL;
    *tmpdir = NULL;
    if (!name || !*name || strchr(name, '/') || strlen(name) > 200)
        return kiln_set_error(KILN_ERR_INVALID, "bad module name '%s'", name ? name : "(null)");
    if (n < 1 || n > 256)
        return kiln_set_error(KILN_ERR_INVALID, "%d source parts (1 to 256)", n);
    if (!tc || !tc->cc || !*tc->cc)
        return kiln_set_error(KILN_ERR_INVALID, "compile %s: no C compiler given", name);
    const char *cc = tc->cc;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char dir[4096], so[4096 + 256];
    snprintf(dir, sizeof dir, "%s/kiln-XXXXXX", tmp);
    if (!mkdtemp(dir))
        return kiln_set_error(KILN_ERR_IO, "cannot create a temporary folder in %s: %s", tmp,
                              strerror(errno));
    snprintf(so, sizeof so, "%s/%s.so", dir, name);
    codegen_cache *cache = codegen_cache_open(tc->cache);
    /* one job compiling and linking the only part; else one compiling each
       part to an object, and a last one linking them */
    int njobs = n == 1 ? 1 : n + 1;
    job *jobs = calloc((size_t)njobs, sizeof(job));
    KILN_ASSERT(jobs);
    for (int k = 0; k < njobs; k++) {
        jobs[k].logfd = jobs[k].errpipe = -1;
        jobs[k].cwd = dir;
    }
    kiln_sha256 base;
    kiln_status st = KILN_OK;
    int no_exec = 0, keep = 0, done = 0, hits = 0;
    report(tc, "compile C", 0, n, NULL);
    for (int k = 0; k < n && !st; k++) {
        job *j = &jobs[k];
        char src[300], obj[300];
        if (n == 1) {
            snprintf(src, sizeof src, "%s.c", name);
            snprintf(j->log, sizeof j->log, "%s/%s.log", dir, name);
            snprintf(j->out, sizeof j->out, "%s", so);
        } else {
            snprintf(src, sizeof src, "%s_%d.c", name, k);
            snprintf(obj, sizeof obj, "%s_%d.o", name, k);
            snprintf(j->log, sizeof j->log, "%s/%s_%d.log", dir, name, k);
            snprintf(j->out, sizeof j->out, "%s/%s", dir, obj);
        }
        snprintf(j->src, sizeof j->src, "%s/%s", dir, src);
        job_command(j, cc, tc, 1);
        if (n == 1) {
            static const char *const post[] = {"-shared", "-fPIC", "-o"};
            for (size_t i = 0; i < 3; i++)
                job_arg(j, post[i]);
            snprintf(obj, sizeof obj, "%s.so", name);
            job_arg(j, obj);
            job_arg(j, src);
            job_arg(j, "-lm");
            argv_split(&j->av, tc->ldflags);
        } else {
            job_arg(j, "-fPIC");
            job_arg(j, "-c");
            job_arg(j, "-o");
            job_arg(j, obj);
            job_arg(j, src);
        }
        if (cache) {
            if (k == 0)
                key_base(&base, j);
            size_t len = strlen(sources[k]);
            job_key(j, &base, 1, (const void *const *)&sources[k], &len);
            j->hit = codegen_cache_get(cache, j->key, j->out, j->made);
            if (j->hit) {
                hits++;
                report(tc, "compile C", ++done, n, NULL);
                continue;
            }
        }
        st = kiln_write_file(j->src, sources[k], strlen(sources[k]));
    }
    /* the compilers of the parts the cache lacks, all at once; every
       started one is waited for */
    for (int k = 0; k < n && !st; k++)
        if (!jobs[k].hit)
            st = job_start(&jobs[k]);
    keep = st != KILN_OK;
    kiln_status s = wait_jobs(jobs, n, tc, "compile C", &done, n, &no_exec, &keep);
    if (!st)
        st = s;
    for (int k = 0; k < n && !st && cache; k++)
        if (!jobs[k].hit)
            codegen_cache_put(cache, jobs[k].key, jobs[k].out, jobs[k].made);
    if (!st) {
        char note[96];
        snprintf(note, sizeof note, "%d part%s, %d from the cache", n, n == 1 ? "" : "s", hits);
        report(tc, "compile C", n, n, cache ? note : NULL);
    }
    if (!st && n > 1) {
        job *l = &jobs[n];
        snprintf(l->src, sizeof l->src, "%s/%s_*.o", dir, name);
        snprintf(l->log, sizeof l->log, "%s/%s.log", dir, name);
        snprintf(l->out, sizeof l->out, "%s", so);
        job_command(l, cc, tc, 0);
        static const char *const post[] = {"-shared", "-fPIC", "-o"};
        for (size_t i = 0; i < 3; i++)
            job_arg(l, post[i]);
        char obj[300];
        snprintf(obj, sizeof obj, "%s.so", name);
        job_arg(l, obj);
        for (int k = 0; k < n; k++) {
            snprintf(obj, sizeof obj, "%s_%d.o", name, k);
            job_arg(l, obj);
        }
        job_arg(l, "-lm");
        argv_split(&l->av, tc->ldflags);
        report(tc, "link", 0, 0, NULL);
        if (cache) { /* the objects by their digests */
            const void *in[256];
            size_t lens[256];
            for (int k = 0; k < n; k++) {
                in[k] = jobs[k].made;
                lens[k] = KILN_SHA256_BYTES;
            }
            job_key(l, &base, n, in, lens);
            l->hit = codegen_cache_get(cache, l->key, l->out, l->made);
        }
        if (!l->hit) {
            st = job_start(l);
            int ld = 0;
            if (!st)
                st = wait_jobs(l, 1, tc, "link", &ld, 0, &no_exec, &keep);
            if (!st && cache)
                codegen_cache_put(cache, l->key, l->out, l->made);
        }
        keep = st != KILN_OK;
    }
    codegen_cache_close(cache);
    for (int k = 0; k < njobs; k++)
        job_free(&jobs[k]);
    free(jobs);
    if (!st) {
        *so_path = kiln_strdup(so);
        *tmpdir = kiln_strdup(dir);
        if (!*so_path || !*tmpdir) {
            free(*so_path);
            free(*tmpdir);
            *so_path = *tmpdir = NULL;
            st = KILN_ERR_NOMEM;
        }
    }
    /* the folder stays for the user to inspect when the compiler failed on
       the source, not when it could not run */
    if (st && (!keep || no_exec))
        remove_dir(dir);
    return st;
}
