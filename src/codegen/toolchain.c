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

codegen_toolchain codegen_default_toolchain(void) {
    codegen_toolchain tc;
    const char *cc = getenv("KILN_CC"), *fl = getenv("KILN_CFLAGS");
    tc.cc = cc && *cc ? cc : "cc";
    tc.cflags = fl ? fl : "-O3 -march=native";
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
            char p[4096];
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

kiln_status codegen_compile(const char *source, const char *name, const codegen_toolchain *tc,
                            char **so_path, char **tmpdir) {
    *so_path = NULL;
    *tmpdir = NULL;
    if (!name || !*name || strchr(name, '/') || strlen(name) > 200)
        return kiln_set_error(KILN_ERR_INVALID, "bad module name '%s'", name ? name : "(null)");
    codegen_toolchain dflt = codegen_default_toolchain();
    if (!tc)
        tc = &dflt;
    const char *cc = tc->cc && *tc->cc ? tc->cc : dflt.cc;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    char dir[4096], src[4096 + 256], so[4096 + 256], logp[4096 + 256];
    snprintf(dir, sizeof dir, "%s/kiln-XXXXXX", tmp);
    if (!mkdtemp(dir))
        return kiln_set_error(KILN_ERR_IO, "cannot create a temporary folder in %s: %s", tmp,
                              strerror(errno));
    snprintf(src, sizeof src, "%s/%s.c", dir, name);
    snprintf(so, sizeof so, "%s/%s.so", dir, name);
    snprintf(logp, sizeof logp, "%s/%s.log", dir, name);
    kiln_status st = kiln_write_file(src, source, strlen(source));
    if (st) {
        remove_dir(dir);
        return st;
    }

    argv_t av = {0};
    argv_split(&av, cc);
    if (!av.n)
        argv_split(&av, "cc");
    for (size_t i = 0; i < sizeof g_pre_flags / sizeof g_pre_flags[0]; i++)
        argv_push(&av, g_pre_flags[i], strlen(g_pre_flags[i]));
    argv_split(&av, tc->cflags);
    static const char *const post[] = {"-shared", "-fPIC", "-o"};
    for (size_t i = 0; i < 3; i++)
        argv_push(&av, post[i], strlen(post[i]));
    argv_push(&av, so, strlen(so));
    argv_push(&av, src, strlen(src));
    argv_push(&av, "-lm", 3);
    kstr cmd;
    kstr_init(&cmd);
    for (int i = 0; i < av.n; i++)
        kstr_printf(&cmd, "%s%s", i ? " " : "", av.v[i]);

    int errpipe[2] = {-1, -1};
    int logfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (logfd < 0 || pipe2(errpipe, O_CLOEXEC) != 0) {
        st = kiln_set_error(KILN_ERR_IO, "cannot create %s: %s", logp, strerror(errno));
        goto done_keep;
    }
    pid_t pid = fork();
    if (pid < 0) {
        st = kiln_set_error(KILN_ERR_TOOLCHAIN, "cannot start the C compiler: %s", strerror(errno));
        goto done_keep;
    }
    if (pid == 0) {
        dup2(logfd, 1);
        dup2(logfd, 2);
        int fd0 = open("/dev/null", O_RDONLY);
        if (fd0 >= 0)
            dup2(fd0, 0);
        execvp(av.v[0], av.v);
        int e = errno;
        ssize_t w = write(errpipe[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(errpipe[1]);
    errpipe[1] = -1;
    int exec_errno = 0;
    ssize_t got;
    do
        got = read(errpipe[0], &exec_errno, sizeof exec_errno);
    while (got < 0 && errno == EINTR);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got == (ssize_t)sizeof exec_errno) {
        st = kiln_set_error(KILN_ERR_TOOLCHAIN,
                            "cannot run the C compiler '%s': %s (set KILN_CC or pass a toolchain)",
                            av.v[0], strerror(exec_errno));
        close(logfd);
        logfd = -1;
        remove_dir(dir);
        goto done;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char how[64];
        if (WIFSIGNALED(status))
            snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
        else
            snprintf(how, sizeof how, "exit %d", WEXITSTATUS(status));
        char *head = log_head(logp, 20);
        st = kiln_set_error(KILN_ERR_TOOLCHAIN, "compiling %s with '%s' failed (%s):\n%s", src,
                            cmd.buf, how, head ? head : "");
        free(head);
        goto done_keep;
    }
    *so_path = kiln_strdup(so);
    *tmpdir = kiln_strdup(dir);
    if (!*so_path || !*tmpdir) {
        free(*so_path);
        free(*tmpdir);
        *so_path = *tmpdir = NULL;
        st = KILN_ERR_NOMEM;
        remove_dir(dir);
    }
    goto done;
done_keep: /* the folder stays for the user to inspect */
done:
    if (logfd >= 0)
        close(logfd);
    if (errpipe[0] >= 0)
        close(errpipe[0]);
    if (errpipe[1] >= 0)
        close(errpipe[1]);
    kstr_free(&cmd);
    argv_free(&av);
    return st;
}
