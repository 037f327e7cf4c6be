/* module_abi.h: the contract between generated code and the runtime.
 * Generated code must not need kiln's headers (so a cross compiler works):
 * the lines between the two "module ABI text" markers below are copied,
 * verbatim, into every generated module (cmake/embed.cmake makes them the
 * string codegen_module_abi_text at build time, and the C renderer prints
 * it), so this is their one definition. runtime/module.c reads modules
 * through the same declarations.
 *
 * Every module exports:
 *   int kiln_module_init(const kiln_module_api *api);
 *       called once after dlopen; returns 0, or non-zero if api->version is
 *       not KILN_MODULE_ABI_VERSION.
 *   const char kiln_module_meta[];
 *       the text below, describing each function.
 *   int32_t <name>(void *const *args, const int64_t *vars);
 *       one per function: args[i] points at element 0 of argument i
 *       (compact row-major), vars[k] is the value of symbolic size k.
 *       Returns 0, or a bit set of KILN_KERNEL_* codes: ENOMEM (a buffer
 *       could not be allocated; the outputs are unusable), EINDEX (an index
 *       input, of Gather or Scatter say, was out of range; the kernel never
 *       read or wrote outside its arrays, and the outputs are unusable) and
 *       EDIVZERO (an integer division or remainder had a zero divisor; the
 *       result is the defined value of base/intdiv.h, so the runtime reports
 *       it only when a run asks for that), and EEXTERNAL (a function a
 *       bring-your-own-codegen backend wrote, kiln/byoc.h, had its library
 *       fail; the library's message went to stderr). A kernel that sees
 *       several conditions returns their union.
 *
 * kiln_module_meta, one record per line, fields separated by one space:
 *   kiln-module 1
 *   func NAME NARGS NVARS
 *   var VARNAME                       (NVARS lines, in order of vars[])
 *   arg ARGNAME DTYPE NDIM D0 D1 ...  (NARGS lines; Dk is a decimal integer,
 *                                      or $K meaning symbolic size vars[K])
 *   end                               (after the last function)
 * Names contain no whitespace. DTYPE is a kiln_dtype_name(). */
#ifndef KILN_MODULE_ABI_H
#define KILN_MODULE_ABI_H

/* ---- begin module ABI text (copied into every generated module) ---- */
#include <stddef.h>
#include <stdint.h>

#define KILN_MODULE_ABI_VERSION 3
#define KILN_KERNEL_ENOMEM 1
#define KILN_KERNEL_EINDEX 2
#define KILN_KERNEL_EDIVZERO 4
#define KILN_KERNEL_EEXTERNAL 8

typedef struct {
    int version;
    int (*parallel_for)(int64_t n, int (*fn)(int64_t begin, int64_t end, void *closure),
                        void *closure);
    /* version 2: scratch buffers larger than a kernel keeps on its stack,
       64-byte aligned (NULL: out of memory), from a pool the runtime keeps */
    void *(*workspace_alloc)(size_t bytes);
    void (*workspace_free)(void *p);
} kiln_module_api;

typedef int32_t (*kiln_kernel_fn)(void *const *args, const int64_t *vars);
/* ---- end module ABI text ---- */

#endif
