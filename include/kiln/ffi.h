/* kiln/ffi.h: the global function registry (TVM's PackedFunc and
 * register_func). A packed function takes a list of values and returns a
 * list of values, all through opaque handles, so any language that can
 * call C (Python's ctypes, a C plugin) can register functions and call the
 * ones others registered, by name:
 *
 *     static kiln_status add1(const kiln_args *in, kiln_args *ret, void *user) {
 *         return kiln_args_push_int(ret, kiln_args_int(in, 0) + 1);
 *     }
 *     kiln_func *f = kiln_func_new(add1, NULL, NULL);
 *     kiln_func_register("demo.add1", f, 0);
 *     kiln_func_release(f);              (the registry holds its own reference)
 *
 * Values are ints (int64), floats (double), strings (copied), arrays
 * (kiln_ndarray), graphs (kiln_graph) and functions (kiln_func), or none.
 * An array or a graph is borrowed unless pushed with take=1, when the list
 * owns it and frees it with itself (kiln_args_take_* hands it back).
 *
 * Errors: a packed function returns a status and leaves its message in
 * kiln_last_error() (kiln_error_raise sets one from outside C); the caller
 * of kiln_func_call gets both, and kiln_last_error_trace() has the stack
 * of the C code that raised it. Threads: the registry may be used from any
 * thread; a function object may be called from several threads when its
 * code allows it. */
#ifndef KILN_FFI_H
#define KILN_FFI_H

#include "kiln/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    KILN_VALUE_NONE = 0,
    KILN_VALUE_INT = 1,
    KILN_VALUE_FLOAT = 2,
    KILN_VALUE_STR = 3,
    KILN_VALUE_ARRAY = 4,
    KILN_VALUE_GRAPH = 5,
    KILN_VALUE_FUNC = 6
} kiln_value_kind;

typedef struct kiln_args kiln_args;
typedef struct kiln_func kiln_func;
struct kiln_ndarray;
struct kiln_graph;

/* ---- value lists ------------------------------------------------------------ */
KILN_API kiln_args *kiln_args_new(void);
/* Free the list, the strings in it, the arrays and graphs it owns, and its
 * references to functions. NULL is a no-op. */
KILN_API void kiln_args_free(kiln_args *a);
KILN_API int kiln_args_count(const kiln_args *a);
/* The kind of value i; KILN_VALUE_NONE for an index out of range too. */
KILN_API kiln_value_kind kiln_args_kind(const kiln_args *a, int i);
KILN_API kiln_status kiln_args_push_none(kiln_args *a);
KILN_API kiln_status kiln_args_push_int(kiln_args *a, int64_t v);
KILN_API kiln_status kiln_args_push_float(kiln_args *a, double v);
KILN_API kiln_status kiln_args_push_str(kiln_args *a, const char *s);
/* take: 1 to hand the array (graph) to the list, 0 to lend it. */
KILN_API kiln_status kiln_args_push_array(kiln_args *a, struct kiln_ndarray *arr, int take);
KILN_API kiln_status kiln_args_push_graph(kiln_args *a, struct kiln_graph *g, int take);
/* The list takes a reference to f. */
KILN_API kiln_status kiln_args_push_func(kiln_args *a, kiln_func *f);
/* Value i. A wrong kind or index gives 0, NULL, and an error: ints read as
 * floats, a whole float reads as an int. */
KILN_API int64_t kiln_args_int(const kiln_args *a, int i);
KILN_API double kiln_args_float(const kiln_args *a, int i);
KILN_API const char *kiln_args_str(const kiln_args *a, int i);
KILN_API struct kiln_ndarray *kiln_args_array(const kiln_args *a, int i);
KILN_API struct kiln_graph *kiln_args_graph(const kiln_args *a, int i);
/* Borrowed: kiln_func_retain it to keep it past the list. */
KILN_API kiln_func *kiln_args_func(const kiln_args *a, int i);
/* Value i handed to the caller: an owned array or graph is no longer freed
 * by the list (a borrowed one is returned as it is; the caller does not
 * own it then): *owned says which. NULL with an error on a wrong kind. */
KILN_API struct kiln_ndarray *kiln_args_take_array(kiln_args *a, int i, int *owned);
KILN_API struct kiln_graph *kiln_args_take_graph(kiln_args *a, int i, int *owned);

/* ---- functions -------------------------------------------------------------- */
/* The code of a packed function: reads `args`, pushes its results on `ret`
 * (empty when called), returns KILN_OK or a status with kiln_last_error()
 * set (kiln_error_raise). */
typedef kiln_status (*kiln_packed_fn)(const kiln_args *args, kiln_args *ret, void *user);
/* A function object with one reference; free_user(user) (may be NULL)
 * runs when the last reference goes. */
KILN_API kiln_func *kiln_func_new(kiln_packed_fn fn, void *user, void (*free_user)(void *));
KILN_API kiln_func *kiln_func_retain(kiln_func *f);
KILN_API void kiln_func_release(kiln_func *f);
/* Call f. ret must be a list (it is emptied first). A function that fails
 * without a message gets one naming its status (kiln_func_call_name also
 * prefixes the function's name to any error). */
KILN_API kiln_status kiln_func_call(kiln_func *f, const kiln_args *args, kiln_args *ret);

/* ---- the global registry ---------------------------------------------------- */
/* Register f under `name` (the registry takes a reference). An existing
 * name is an error unless override is 1. */
KILN_API kiln_status kiln_func_register(const char *name, kiln_func *f, int override);
/* Remove a name (KILN_ERR_INVALID if there is none). */
KILN_API kiln_status kiln_func_unregister(const char *name);
/* The function registered as `name`, with a new reference for the caller,
 * or NULL (with an error naming it when `quiet` is 0). */
KILN_API kiln_func *kiln_func_get(const char *name, int quiet);
/* Call the function registered as `name`. */
KILN_API kiln_status kiln_func_call_name(const char *name, const kiln_args *args, kiln_args *ret);
/* The registered names, sorted, one per line; malloc'd (kiln_free). */
KILN_API char *kiln_func_list(void);

#ifdef __cplusplus
}
#endif
#endif
