/* codegen.h: turning flat loop IR into a loaded module. The C renderer
 * writes one translation unit that follows runtime/module_abi.h; the
 * toolchain driver compiles it into a shared object. */
#ifndef KILN_CODEGEN_H
#define KILN_CODEGEN_H

#include "../target/target.h"
#include "../tir/tir.h"
#include "kiln/schedule.h"

/* Render `nfuncs` lowered functions into one C source (malloc'd). NULL with
 * an error if the IR uses something the CPU back end cannot run (a loop
 * bound to a GPU thread axis) or an unsupported dtype operation. */
KILN_HIDDEN char *codegen_render_c(int nfuncs, const tir_func *funcs);
/* The same module as up to `nparts` translation units to compile in
 * parallel (parts[k] malloc'd): each has its functions whole, part 0 the
 * module's entry and metadata. Returns the number of parts (at most one
 * per function, at least 1), or -1 with an error. */
KILN_HIDDEN int codegen_render_c_parts(int nfuncs, const tir_func *funcs, int nparts, char **parts);

/* A digest of what function f does: its C text and metadata with its name,
 * its variables' and its arguments' names left out (c_module.c). Two
 * functions of one module with the same key can share one C function. An
 * error if f cannot be rendered. */
KILN_HIDDEN kiln_status codegen_func_key(const tir_func *f, unsigned char key[32]);

/* Texts the generated C carries, made at build time from their one
 * definition (cmake/embed.cmake), so they cannot drift: the declarations of
 * runtime/module_abi.h between its "module ABI text" markers, and
 * base/intdiv.h, the integer division rule (x / 0 = 0, INT_MIN / -1 wraps). */
KILN_HIDDEN extern const char codegen_module_abi_text[];
KILN_HIDDEN extern const char codegen_intdiv_text[];

/* 1 if the C renderer supports vectors of `lanes` x dt as data (loads,
 * stores, arithmetic): lanes 1, or a power of two from 2 to 64 whose vector
 * is at most 256 bytes. The vectorize pass should only emit such widths. */
KILN_HIDDEN int codegen_vector_ok(kiln_dtype dt, int lanes);

typedef struct {
    const char *cc;     /* compiler command, e.g. "cc" or a cross gcc */
    const char *cflags; /* e.g. "-O3 -march=native", "-O3 -mcpu=cortex-a72" */
    int cache;          /* the kernel cache (compile_cache.c): 1 on, 0 off, -1 as $KILN_CACHE
                           says (on unless "0") */
    kiln_build_progress_fn progress; /* "compile C" and "link" reports; may be NULL */
    void *progress_user;
    const char *ldflags; /* added to the link after -lm (a backend's library), or NULL */
} codegen_toolchain;

/* The compiler and flags of target t (kiln/target.h): the target decides,
 * this layer never guesses the host. */
KILN_HIDDEN codegen_toolchain codegen_target_toolchain(const kiln_target *t);

/* Write `source` to a fresh temporary folder as NAME.c and compile it with
 * `cc cflags -shared -fPIC -o NAME.so NAME.c -lm`. On success sets *so_path
 * and *tmpdir (malloc'd; the caller owns the folder). On failure returns
 * KILN_ERR_TOOLCHAIN with a message naming the kept source file and quoting
 * the compiler's first error lines. */
KILN_HIDDEN kiln_status codegen_compile(const char *source, const char *name,
                                        const codegen_toolchain *tc, char **so_path, char **tmpdir);
/* The same for the n parts of codegen_render_c_parts: with n > 1 each part
 * NAME_k.c is compiled to NAME_k.o by its own compiler process, all at
 * once, then linked into NAME.so. */
KILN_HIDDEN kiln_status codegen_compile_parts(int n, const char *const *sources, const char *name,
                                              const codegen_toolchain *tc, char **so_path,
                                              char **tmpdir);

#endif
