/* error.c: the per-thread last-error message and the assertion failure path.
 * Bad input returns a status and records a message here; only broken
 * internal invariants reach kiln_assert_fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"

#define ERRBUF 4096
static _Thread_local char g_err[ERRBUF];

const char *kiln_last_error(void) {
    return g_err;
}

void kiln_clear_error(void) {
    g_err[0] = 0;
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
