/* replay.c: runs a fuzz target's corpus without libFuzzer, so normal builds
 * (gcc, with or without ASan) check every saved input on each test run.
 * Linked with one fuzz_<name>.c; the arguments are files or folders (walked
 * recursively, in sorted order). Each input runs under a time limit; a crash
 * or an abort in the target ends the run, naming the input first. Prints
 * "N passed, 0 failed" and exits 0 when every input ran. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Seconds one input may take before the run fails (ASan builds are slow). */
#define REPLAY_TIMEOUT_S 60

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int passed, failed;
static const char *current; /* the input being run, for the alarm handler */

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "replay: an input ran past the time limit: ";
    (void)!write(2, msg, sizeof msg - 1);
    if (current)
        (void)!write(2, current, strlen(current));
    (void)!write(2, "\n", 1);
    _exit(1);
}

static void run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        failed++;
        return;
    }
    size_t cap = 4096, len = 0, n;
    unsigned char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            unsigned char *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "replay: %s: cannot read\n", path);
        free(buf);
        failed++;
        return;
    }
    /* An exact-size copy, so ASan catches a read past the input's end. */
    unsigned char *data = malloc(len ? len : 1);
    if (!data) {
        free(buf);
        failed++;
        return;
    }
    memcpy(data, buf, len);
    free(buf);
    current = path;
    alarm(REPLAY_TIMEOUT_S);
    LLVMFuzzerTestOneInput(data, len);
    alarm(0);
    current = NULL;
    free(data);
    passed++;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: no such file or folder\n", path);
        failed++;
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open folder\n", path);
        failed++;
        return;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", hidden files */
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[count] = malloc(len)))
            break;
        snprintf(names[count++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (count)
        qsort(names, count, sizeof *names, cmp_str);
    for (size_t i = 0; i < count; i++) {
        run_path(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    for (int i = 1; i < argc; i++)
        run_path(argv[i]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed || passed == 0 ? 1 : 0;
}
