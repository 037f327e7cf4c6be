/* error.c: the per-thread last-error message and the assertion failure path.
 * Bad input returns a status and records a message here; only broken
 * internal invariants reach kiln_assert_fail. */
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"

#define ERRBUF 4096
static _Thread_local char g_err[ERRBUF];
/* The stack where the last error was raised: raw frames, symbolized only
 * when kiln_last_error_trace asks. */
#define TRACE_FRAMES 32
static _Thread_local void *g_frames[TRACE_FRAMES];
static _Thread_local int g_nframes;
static _Thread_local char g_trace[ERRBUF];

const char *kiln_last_error(void) {
    return g_err;
}

void kiln_clear_error(void) {
    g_err[0] = 0;
    g_nframes = 0;
}

const char *kiln_version(void) {
    return KILN_VERSION;
}

int kiln_api_version(void) {
    return KILN_API_VERSION;
}

void kiln_free(void *p) {
    free(p);
}

__attribute__((noinline)) static void take_trace(void) {
    g_nframes = backtrace(g_frames, TRACE_FRAMES);
}

kiln_status kiln_error_raise(kiln_status st, const char *message) {
    if (!message)
        message = "";
    if (message >= g_err && message < g_err + sizeof g_err) /* raising the current error */
        memmove(g_err, message, strnlen(message, (size_t)(g_err + sizeof g_err - message)) + 1);
    else
        snprintf(g_err, sizeof g_err, "%s", message);
    take_trace();
    return st;
}

const char *kiln_last_error_trace(void) {
    g_trace[0] = 0;
    if (g_nframes <= 1)
        return g_trace;
    char **sym = backtrace_symbols(g_frames + 1, g_nframes - 1); /* frame 0 is take_trace */
    if (!sym)
        return g_trace;
    size_t used = 0;
    for (int i = 0; i < g_nframes - 1 && used + 2 < sizeof g_trace; i++) {
        int n = snprintf(g_trace + used, sizeof g_trace - used, "%s\n", sym[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (used >= sizeof g_trace)
        used = sizeof g_trace - 1;
    g_trace[used] = 0;
    free(sym);
    return g_trace;
}

const char *kiln_status_str(kiln_status st) {
    switch (st) {
    case KILN_OK: return "ok";
    case KILN_ERR_INVALID: return "invalid argument";
    case KILN_ERR_IO: return "input/output error";
    case KILN_ERR_TOOLCHAIN: return "the C compiler failed";
    case KILN_ERR_NOMEM: return "out of memory";
    case KILN_ERR_UNSUPPORTED: return "unsupported";
    case KILN_ERR_RANGE: return "index out of range";
    }
    return "unknown status";
}

kiln_status kiln_set_error(kiln_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    take_trace();
    return st;
}

void kiln_error_prefix(const char *fmt, ...) {
    char old[ERRBUF], pre[ERRBUF];
    memcpy(old, g_err, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    size_t np = strlen(pre), no = strlen(old);
    if (np > ERRBUF - 3)
        np = ERRBUF - 3;
    if (no > ERRBUF - 3 - np)
        no = ERRBUF - 3 - np;
    memcpy(g_err, pre, np);
    memcpy(g_err + np, ": ", 2);
    memcpy(g_err + np + 2, old, no);
    g_err[np + 2 + no] = 0;
}

_Noreturn void kiln_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "kiln: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
    abort();
}
