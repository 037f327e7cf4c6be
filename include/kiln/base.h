/* kiln/base.h: types shared by every layer of the public API: dtypes,
 * status codes and the last-error message. Plain C, no struct layouts. */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/* Element types. KILN_HANDLE is internal: a pointer-typed loop-IR variable.
 * The values are stored in packages: new dtypes are appended after it. */
typedef enum {
    KILN_FLOAT32 = 0,
    KILN_FLOAT16,
    KILN_BFLOAT16,
    KILN_INT8,
    KILN_UINT8,
    KILN_INT32,
    KILN_INT64,
    KILN_BOOL,
    KILN_FLOAT64,
    KILN_HANDLE,
    KILN_UINT16,
    KILN_UINT32,
    KILN_UINT64,
    KILN_INT16,
    KILN_DTYPE_COUNT
} kiln_dtype;

/* kiln's version, and the version of its C API. The API version changes
 * whenever a public function changes meaning or signature; bindings in
 * other languages (the Python package) check it when they load libkiln. */
#define KILN_VERSION "0.1.0"
#define KILN_API_VERSION 1
/* The version of the library actually loaded ("0.1.0"; KILN_VERSION). */
KILN_API const char *kiln_version(void);
/* The C API version of the library actually loaded (KILN_API_VERSION). */
KILN_API int kiln_api_version(void);

/* Status codes returned by fallible calls. 0 is success. */
typedef enum {
    KILN_OK = 0,
    KILN_ERR_INVALID = 1,   /* bad argument, shape, dtype or schedule */
    KILN_ERR_IO = 2,        /* file cannot be read or written, or is malformed */
    KILN_ERR_TOOLCHAIN = 3, /* the C compiler failed */
    KILN_ERR_NOMEM = 4,     /* allocation failed */
    KILN_ERR_UNSUPPORTED = 5,
    KILN_ERR_RANGE = 6 /* a value out of range at run time: an index from data (Gather,
                          Scatter) past its axis */
} kiln_status;

/* A short description of `st` ("ok", "index out of range", ...), for
 * messages; an unknown value gives "unknown status". */
KILN_API const char *kiln_status_str(kiln_status st);

/* The message of the last error raised on this thread ("" if none). */
KILN_API const char *kiln_last_error(void);
/* Forget the last error of this thread. */
KILN_API void kiln_clear_error(void);
/* Set this thread's last error to `message` and return st: for a callback
 * written outside C (a Python function registered with kiln/ffi.h) to fail
 * with its own message (and its own stack trace in it). */
KILN_API kiln_status kiln_error_raise(kiln_status st, const char *message);
/* The C call stack where the last error was raised, one frame per line
 * ("libkiln.so.0(kiln_graph_compile+0x53) [0x7f...]"; hidden functions as
 * an offset in their library, for addr2line), or "" if none was taken. */
KILN_API const char *kiln_last_error_trace(void);
/* Free memory that a kiln function returned as malloc'd (text, lists). */
KILN_API void kiln_free(void *p);

/* Size in bytes of one element of `dt` (bool is 1 byte). */
KILN_API size_t kiln_dtype_size(kiln_dtype dt);
/* Name of `dt` as numpy and TVM spell it: "float32", "int64", "bool", ... */
KILN_API const char *kiln_dtype_name(kiln_dtype dt);
/* Parse a dtype name; returns KILN_OK and sets *out, or KILN_ERR_INVALID. */
KILN_API kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out);

#ifdef __cplusplus
}
#endif
#endif
