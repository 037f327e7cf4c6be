/* toolchain.c: compiling a rendered C source into a shared object with the
 * system C compiler. The source goes to a fresh $TMPDIR/kiln-XXXXXX folder;
 * the compiler runs via fork/execvp with its output in NAME.log there. On
 * failure the folder is kept so the user can inspect NAME.c and NAME.log. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen.h"

/* Flags always passed before the user's: GNU C11 (vector extensions), and
 * no errno from libm so sqrt and friends inline. No -ffast-math: results
 * must match the naive schedule and NaN semantics must hold. */
static const char *const g_pre_flags[] = {"-std=gnu11", "-fno-math-errno"};

codegen_toolchain codegen_target_toolchain(const kiln_target *t) {
    codegen_toolchain tc = {kiln_target_cc(t), kiln_target_cflags(t)};
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
 * the child reports a failed exec. */
typedef struct {
    argv_t av;
    char src[4096 + 256], log[4096 + 256];
    pid_t pid;
    int logfd, errpipe;
} job;

/* cc, the fixed flags and the user's */
static void job_command(job *j, const char *cc, const codegen_toolchain *tc, int compile_only) {
    argv_split(&j->av, cc);
    if (!j->av.n)
        argv_split(&j->av, "cc");
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
        execvp(j->av.v[0], j->av.v);
        int e = errno;
        ssize_t w = write(p[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(p[1]);
    j->errpipe = p[0];
    return KILN_OK;
}

/* Wait for a started job: KILN_OK, or an error (*no_exec set if the
 * compiler could not be run at all). */
static kiln_status job_wait(job *j, int *no_exec) {
    kiln_status st = KILN_OK;
    int exec_errno = 0, status = 0;
    ssize_t got;
    do
        got = read(j->errpipe, &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR) {
    }
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

kiln_status codegen_compile(const char *source, const char *name, const codegen_toolchain *tc,
                            char **so_path, char **tmpdir) {
    return codegen_compile_parts(1, &source, name, tc, so_path, tmpdir);
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
    /* one job compiling and linking the only part; else one compiling each
       part to an object, and a last one linking them */
    int njobs = n == 1 ? 1 : n + 1;
    job *jobs = calloc((size_t)njobs, sizeof(job));
    KILN_ASSERT(jobs);
    for (int k = 0; k < njobs; k++)
        jobs[k].logfd = jobs[k].errpipe = -1;
    kiln_status st = KILN_OK;
    int no_exec = 0, keep = 0;
    for (int k = 0; k < n && !st; k++) {
        job *j = &jobs[k];
        if (n == 1) {
            snprintf(j->src, sizeof j->src, "%s/%s.c", dir, name);
            snprintf(j->log, sizeof j->log, "%s/%s.log", dir, name);
        } else {
            snprintf(j->src, sizeof j->src, "%s/%s_%d.c", dir, name, k);
            snprintf(j->log, sizeof j->log, "%s/%s_%d.log", dir, name, k);
        }
        st = kiln_write_file(j->src, sources[k], strlen(sources[k]));
        if (st)
            break;
        job_command(j, cc, tc, 1);
        if (n == 1) {
            static const char *const post[] = {"-shared", "-fPIC", "-o"};
            for (size_t i = 0; i < 3; i++)
                job_arg(j, post[i]);
            job_arg(j, so);
            job_arg(j, j->src);
            job_arg(j, "-lm");
        } else {
            char obj[4096 + 256];
            snprintf(obj, sizeof obj, "%s/%s_%d.o", dir, name, k);
            job_arg(j, "-fPIC");
            job_arg(j, "-c");
            job_arg(j, "-o");
            job_arg(j, obj);
            job_arg(j, j->src);
        }
    }
    /* all compilers at once; every started one is waited for */
    int started = 0;
    for (int k = 0; k < n && !st; k++, started++)
        st = job_start(&jobs[k]);
    keep = st != KILN_OK;
    for (int k = 0; k < started; k++) {
        kiln_status s = job_wait(&jobs[k], &no_exec);
        if (s && !st)
            st = s, keep = 1;
    }
    if (!st && n > 1) {
        job *l = &jobs[n];
        snprintf(l->src, sizeof l->src, "%s/%s_*.o", dir, name);
        snprintf(l->log, sizeof l->log, "%s/%s.log", dir, name);
        job_command(l, cc, tc, 0);
        static const char *const post[] = {"-shared", "-fPIC", "-o"};
        for (size_t i = 0; i < 3; i++)
            job_arg(l, post[i]);
        job_arg(l, so);
        for (int k = 0; k < n; k++) {
            char obj[4096 + 256];
            snprintf(obj, sizeof obj, "%s/%s_%d.o", dir, name, k);
            job_arg(l, obj);
        }
        job_arg(l, "-lm");
        st = job_start(l);
        if (!st)
            st = job_wait(l, &no_exec);
        keep = st != KILN_OK;
    }
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
