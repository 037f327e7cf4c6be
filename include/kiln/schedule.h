/* kiln/schedule.h: schedules. A schedule decides loop order, splitting,
 * placement and annotation of each compute stage; it never changes results.
 * Axes are kiln_expr variables: a compute's axes (kiln_tensor_axis), its
 * reduce axes, and the new axes that split and fuse return.
 * Every primitive returns KILN_OK or an error naming the stage and axis. */
#ifndef KILN_SCHEDULE_H
#define KILN_SCHEDULE_H

#include "kiln/target.h"
#include "kiln/te.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_schedule kiln_schedule;
/* The schedule of one operation (TVM's s[T]). */
typedef struct kiln_stage kiln_stage;

/* A schedule over the operations that produce `outputs` and all they read. */
KILN_API kiln_schedule *kiln_schedule_create(kiln_ctx *ctx, int n, kiln_tensor *const *outputs);
/* The stage computing t, or NULL with an error if t is not in the schedule. */
KILN_API kiln_stage *kiln_schedule_stage(kiln_schedule *s, const kiln_tensor *t);
/* Current leaf axes in loop order, outermost first. Returns the count and
 * writes up to cap axes. */
KILN_API int kiln_stage_leaf_axes(const kiln_stage *st, kiln_expr *out, int cap);

KILN_API kiln_status kiln_split(kiln_stage *st, kiln_expr axis, int64_t factor, kiln_expr *outer,
                                kiln_expr *inner);
KILN_API kiln_status kiln_split_nparts(kiln_stage *st, kiln_expr axis, int64_t nparts,
                                       kiln_expr *outer, kiln_expr *inner);
/* Split x by fx and y by fy, then order (xo, yo, xi, yi). */
KILN_API kiln_status kiln_tile(kiln_stage *st, kiln_expr x, kiln_expr y, int64_t fx, int64_t fy,
                               kiln_expr *xo, kiln_expr *yo, kiln_expr *xi, kiln_expr *yi);
/* Fuse two adjacent leaf axes (outer first) into one. */
KILN_API kiln_status kiln_fuse(kiln_stage *st, kiln_expr outer, kiln_expr inner, kiln_expr *fused);
/* Put the given leaf axes in this order, in the slots they occupy now. */
KILN_API kiln_status kiln_reorder(kiln_stage *st, int n, const kiln_expr *axes);
KILN_API kiln_status kiln_vectorize(kiln_stage *st, kiln_expr axis);
KILN_API kiln_status kiln_unroll(kiln_stage *st, kiln_expr axis);
KILN_API kiln_status kiln_parallel(kiln_stage *st, kiln_expr axis);
/* Bind to a GPU thread axis: "blockIdx.x", "threadIdx.y", ... Recorded and
 * lowered; the CPU back end rejects it. */
KILN_API kiln_status kiln_bind(kiln_stage *st, kiln_expr axis, const char *thread_tag);
/* Compute this stage inside `parent`'s loop `axis`. */
KILN_API kiln_status kiln_compute_at(kiln_stage *st, kiln_stage *parent, kiln_expr axis);
/* Substitute this stage's body into its consumers (not for reductions). */
KILN_API kiln_status kiln_compute_inline(kiln_stage *st);
/* Compute this stage at the top level (undoes compute_at / inline). */
KILN_API kiln_status kiln_compute_root(kiln_stage *st);
/* Where the stage's buffer lives: "global" (memory) or "local" (a small
 * buffer the C compiler may keep in registers). Outputs stay global. */
KILN_API kiln_status kiln_set_scope(kiln_stage *st, const char *scope);
/* A copy of t in `scope` ("global" or "local") that `readers` read instead
 * of t. Returns the new tensor, or NULL with an error. */
KILN_API kiln_tensor *kiln_cache_read(kiln_schedule *s, kiln_tensor *t, const char *scope,
                                      int nreaders, kiln_tensor *const *readers);
/* Compute t into a `scope` buffer first, then copy it to t. Must come
 * before other primitives on t's stage. Returns the cache tensor. */
KILN_API kiln_tensor *kiln_cache_write(kiln_schedule *s, kiln_tensor *t, const char *scope);

/* ---- lowering and building ---------------------------------------------- */

/* Lowered loop IR of a function taking `args` (placeholders and outputs, and
 * implicitly every symbolic size they use), printed into a malloc'd string
 * the caller frees. NULL with an error on an invalid schedule. */
KILN_API char *kiln_lower_to_string(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                                    const char *name);

/* Build options: "target" (a target string, kiln/target.h: "llvm",
 * "llvm -mcpu=haswell", "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72";
 * "c" emits source only for kiln_build; default $KILN_TARGET, else this
 * machine), "cc" (the C compiler: a cross compiler for another
 * architecture) and "cflags" (replace the target's), "vector-bits"
 * (128/256/512: the vector width schedules use instead of the target's);
 * for graphs: "opt-level" (0-3, default 3), "disabled-pass" (a pass name
 * or a comma-separated list; may repeat), "dump-ir" (a folder for the
 * graph before and after each pass, then the target, the kernels' loop IR
 * and C), "fuse" ("0": one kernel per op),
 * "schedule" ("default", or "naive": every stage inlined but scans, and no loop
 * transformed, the reference for testing schedules), "winograd"
 * (auto|off|2|4); "cache" ("1", the default unless $KILN_CACHE is "0", or
 * "0"): keep compiled objects in the kernel cache, $XDG_CACHE_HOME/kiln
 * (docs/COMPILE_TIME.md); "tuning-records" (a file `kiln tune` wrote: each
 * kernel takes the best record for its workload and target, the rest the
 * default schedule; "" for none; docs/tuning.md). A bad value is an error
 * naming it. NULL options
 * mean the defaults. */
typedef struct kiln_build_options kiln_build_options;
KILN_API kiln_build_options *kiln_build_options_new(void);
KILN_API kiln_status kiln_build_options_set(kiln_build_options *o, const char *key,
                                            const char *value);
/* Build for a copy of t (NULL: back to the default target). "cc",
 * "cflags" and "vector-bits" still apply on top of it. */
KILN_API kiln_status kiln_build_options_set_target(kiln_build_options *o, const kiln_target *t);
KILN_API void kiln_build_options_free(kiln_build_options *o);

/* What a build is doing, for a progress display or a time per phase
 * (kiln compile --time-passes): called on the building thread with the
 * phase that runs now ("pass NAME" for each graph pass, "lower", "render",
 * "compile C", "link", "package", and "done" when the build ends, also on
 * an error), `done` of `total` items of it (kernels, C parts; 0 of 0 when
 * not counted) and, once a phase is over, maybe a note saying what it did
 * ("248 kernels, 144 distinct"; else NULL). A new phase name ends the last
 * phase. */
typedef void (*kiln_build_progress_fn)(void *user, const char *phase, int done, int total,
                                       const char *note);
/* Report progress of builds with these options to fn (NULL: none). */
KILN_API kiln_status kiln_build_options_set_progress(kiln_build_options *o,
                                                     kiln_build_progress_fn fn, void *user);

struct kiln_module;
/* Lower, render to C, compile and load one function called `name`. */
KILN_API struct kiln_module *kiln_build(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                                        const char *name, const kiln_build_options *opts);
/* Lower, render and compile into a shared object at `path` without loading
 * it: the way to cross-compile (a "target" of another architecture, whose
 * compiler is TRIPLE-gcc unless "cc" says otherwise). kiln_module_load
 * reads the file on the target machine, with libkiln_runtime alone. */
KILN_API kiln_status kiln_build_save(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                                     const char *name, const kiln_build_options *opts,
                                     const char *path);
/* The generated C source of the same function, malloc'd. */
KILN_API char *kiln_build_source(kiln_schedule *s, int nargs, kiln_tensor *const *args,
                                 const char *name, const kiln_build_options *opts);

#ifdef __cplusplus
}
#endif
#endif
