/* kiln/runtime.h: what a deployed program needs, and nothing from the
 * compiler: n-dimensional arrays, .npy/.npz files, the thread pool, and
 * loading and calling built modules. Everything here lives in
 * libkiln_runtime, which depends on no C toolchain.
 *
 * Threads. Every call may be made from any thread. The error message
 * (kiln_last_error) is per thread. Each object's section says what may be
 * shared: in short, reading an object from many threads at once is safe,
 * changing it while another thread uses it is not, except for the thread
 * pool and kiln_model_run, which are made for concurrent callers. One
 * loaded model (kiln_model) serves any number of threads at once. */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include "kiln/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_MAX_NDIM 16
#define KILN_ALIGNMENT 64

/* ---- n-dimensional arrays ---------------------------------------------- */

/* An array: dtype, shape, strides (in elements), byte offset and storage.
 * Storage of arrays made by kiln_ndarray_empty is 64-byte aligned.
 * Threads: an array may be read by many threads at once (the getters, and
 * as the source of a copy); writing its elements, or freeing it, while
 * another thread uses it is a data race. Distinct arrays, views of one
 * storage included, may be used by different threads freely as long as no
 * two threads write the same elements. */
typedef struct kiln_ndarray kiln_ndarray;

/* A new compact row-major array, zero-filled. NULL (with an error) on a bad
 * rank, a negative dim, a size overflow or an allocation failure. */
KILN_API kiln_ndarray *kiln_ndarray_empty(kiln_dtype dt, int ndim, const int64_t *shape);
/* A view of caller-owned memory; the caller keeps `data` alive. `strides`
 * (in elements) may be NULL for compact row-major. */
KILN_API kiln_ndarray *kiln_ndarray_wrap(void *data, kiln_dtype dt, int ndim, const int64_t *shape,
                                         const int64_t *strides, int64_t byte_offset);
/* A view of `base` with new shape/strides/offset sharing its storage; `base`
 * must outlive the view. Fails if the view would reach outside the storage. */
KILN_API kiln_ndarray *kiln_ndarray_view(const kiln_ndarray *base, int ndim, const int64_t *shape,
                                         const int64_t *strides, int64_t byte_offset);
/* Free an array (and its storage if it owns it). NULL is a no-op. */
KILN_API void kiln_ndarray_free(kiln_ndarray *a);
/* Copy src's elements into dst; shapes and dtypes must match (any strides). */
KILN_API kiln_status kiln_ndarray_copy(kiln_ndarray *dst, const kiln_ndarray *src);

KILN_API kiln_dtype kiln_ndarray_dtype(const kiln_ndarray *a);
KILN_API int kiln_ndarray_ndim(const kiln_ndarray *a);
/* Dim `i`, or -1 if i is out of range. */
KILN_API int64_t kiln_ndarray_dim(const kiln_ndarray *a, int i);
/* Stride of dim `i` in elements, or 0 if i is out of range. */
KILN_API int64_t kiln_ndarray_stride(const kiln_ndarray *a, int i);
KILN_API int64_t kiln_ndarray_byte_offset(const kiln_ndarray *a);
/* Number of elements (product of the shape). */
KILN_API int64_t kiln_ndarray_numel(const kiln_ndarray *a);
/* Pointer to element 0: the storage base plus the byte offset. */
KILN_API void *kiln_ndarray_data(const kiln_ndarray *a);
/* 1 if the strides are compact row-major, else 0. */
KILN_API int kiln_ndarray_is_contiguous(const kiln_ndarray *a);

/* ---- .npy and .npz ----------------------------------------------------- */

/* Read a .npy file (any little-endian dtype above, C or Fortran order). */
KILN_API kiln_ndarray *kiln_npy_load(const char *path);
/* Write `a` as a version 1.0 .npy file. */
KILN_API kiln_status kiln_npy_save(const char *path, const kiln_ndarray *a);

/* A set of named arrays, as in numpy's np.savez.
 * Threads: the getters may be called from many threads at once; kiln_npz_add
 * and kiln_npz_free need the set to themselves. Loading and saving distinct
 * sets (or one set, saved from several threads) is safe. */
typedef struct kiln_npz kiln_npz;

/* Read an .npz (stored or deflated members, ZIP64 extra fields). */
KILN_API kiln_npz *kiln_npz_load(const char *path);
/* An empty set, to fill with kiln_npz_add and write with kiln_npz_save. */
KILN_API kiln_npz *kiln_npz_new(void);
/* Add a copy of `a` under `name` (the ".npy" suffix is added on save). */
KILN_API kiln_status kiln_npz_add(kiln_npz *z, const char *name, const kiln_ndarray *a);
/* Write the set; `compress` 1 deflates members as np.savez_compressed does. */
KILN_API kiln_status kiln_npz_save(const kiln_npz *z, const char *path, int compress);
KILN_API int kiln_npz_count(const kiln_npz *z);
/* Name of member i without ".npy", or NULL if out of range. */
KILN_API const char *kiln_npz_name(const kiln_npz *z, int i);
/* Member i (owned by the set), or NULL. */
KILN_API const kiln_ndarray *kiln_npz_array(const kiln_npz *z, int i);
/* Member by name (without ".npy"), or NULL. */
KILN_API const kiln_ndarray *kiln_npz_get(const kiln_npz *z, const char *name);
KILN_API void kiln_npz_free(kiln_npz *z);

/* ---- thread pool ---------------------------------------------------------
 * One process-wide pool of kiln_num_threads() - 1 persistent workers.
 * Threads: every function here may be called from any number of threads at
 * once. A parallel loop claims the workers that are free when it starts
 * (none is shared by two loops) and runs its chunks on them and on the
 * calling thread; a loop that finds no free worker runs on its caller
 * alone. So concurrent loops never wait for each other, and the threads
 * busy at once stay about kiln_num_threads() plus the callers. */

/* A chunk of a parallel loop: run iterations [begin, end). Returns 0, or
 * non-zero to report failure. */
typedef int (*kiln_parallel_fn)(int64_t begin, int64_t end, void *closure);

/* Run fn over [0, n) split into min(n, kiln_num_threads()) contiguous
 * chunks (their sizes differ by at most one, whoever runs them) on the
 * calling thread and the workers it claims. Nested calls run serially on
 * the caller. Returns 0, or the bitwise OR of the non-zero values chunks
 * returned (a kernel's KILN_KERNEL_* bits, module_abi.h, add up). */
KILN_API int kiln_parallel_for(int64_t n, kiln_parallel_fn fn, void *closure);
/* Threads a parallel loop uses: the last kiln_set_num_threads, else
 * KILN_NUM_THREADS if set, else the cores this process may run on. A
 * KILN_NUM_THREADS that kiln_num_threads_parse refuses is ignored, with one
 * warning on stderr. */
KILN_API int kiln_num_threads(void);
/* Change the thread count (1 to 1024) for later parallel loops. The pool
 * grows as needed and never shrinks: extra workers sleep. */
KILN_API kiln_status kiln_set_num_threads(int n);
/* Parse a thread count as KILN_NUM_THREADS gives it: decimal digits only,
 * 1 to 1024. KILN_OK and *out, or KILN_ERR_INVALID with a message. */
KILN_API kiln_status kiln_num_threads_parse(const char *s, int *out);

/* ---- built modules ------------------------------------------------------- */

/* A loaded shared object holding one or more built functions.
 * Threads: a module and its functions are immutable once loaded; any number
 * of threads may look up and call functions at once (a function's kernel
 * writes only its output arrays and scratch memory of its own, so calls
 * must not share output arrays). kiln_module_free needs the module to
 * itself, after every call into it has returned. */
typedef struct kiln_module kiln_module;
/* A function inside a module; owned by the module. */
typedef struct kiln_function kiln_function;

/* Load a module written by kiln_module_save or kiln_build_save. */
KILN_API kiln_module *kiln_module_load(const char *path);
/* Copy the module's shared object to `path`, to load in another process. */
KILN_API kiln_status kiln_module_save(const kiln_module *m, const char *path);
KILN_API void kiln_module_free(kiln_module *m);
KILN_API int kiln_module_function_count(const kiln_module *m);
/* The function called `name`, or NULL with an error naming the known ones. */
KILN_API kiln_function *kiln_module_get_function(kiln_module *m, const char *name);
/* Function i, or NULL. */
KILN_API kiln_function *kiln_module_function_at(kiln_module *m, int i);
KILN_API const char *kiln_function_name(const kiln_function *f);
KILN_API int kiln_function_num_args(const kiln_function *f);
/* Call f. Checks the count, dtypes, ranks, fixed dims and that symbolic dims
 * agree across arguments, and that every array is contiguous. A kernel
 * failure is KILN_ERR_NOMEM (a scratch buffer could not be allocated) or
 * KILN_ERR_RANGE (an index read from data, as Gather's, is out of range;
 * nothing was read out of bounds). An integer division by zero is no error
 * here: it has the defined value x / 0 = 0 (executors and kiln_model_run
 * can be asked to report it). */
KILN_API kiln_status kiln_function_call(const kiln_function *f, int nargs,
                                        kiln_ndarray *const *args);

/* ---- packages ----------------------------------------------------------------
 * A package (model.tar) is a POSIX ustar archive of four regular files, in
 * this order:
 *   manifest.json  {"format": "kiln-package", "version": 2, "abi": N,
 *               "members": [{"name": "mod.so", "size": BYTES, "sha256": HEX},
 *               ...]}: the package format version, the module ABI version
 *               of its kernels (module_abi.h) and each other member's size
 *               and SHA-256 (64 lowercase hex digits), each listed once
 *   mod.so      the kernels: a module following module_abi.h
 *   mod.json    the execution plan: TVM's graph-executor JSON ("nodes",
 *               "arg_nodes", "heads", "node_row_ptr", and "attrs" with
 *               "shape", "dltype", "storage_id"), plus kiln's optional
 *               top-level "output_names" (one name per head; default
 *               "output_0", "output_1", ...), "target", and "param_names"
 *               (the parameters: the names of the "null" nodes mod.params
 *               must hold, as kiln compile writes it)
 *   mod.params  the weights: an .npz (np.load reads it), one member per
 *               "null" node that is a parameter. This differs from TVM, whose
 *               mod.params is its own binary format (relay.save_param_dict);
 *               kiln chose numpy's format so any tool can read the weights.
 * With "param_names", a "null" node is a parameter exactly when it is listed,
 * and a package whose mod.params lacks one is refused, naming it; without
 * (packages from other writers), a "null" node whose name is a key of
 * mod.params is a parameter. Every other "null" node is an input. A
 * "tvm_op" node calls attrs.func_name with its input entries then its output
 * entries. Storage: each parameter gets one 64-byte aligned buffer at load,
 * shared by every run; every other storage_id gets a 64-byte aligned buffer,
 * sized for the largest entry that uses it, in a run state's arena. A run
 * allocates nothing once its run state exists.
 *
 * Symbolic dims. A dim in attrs.shape may be a string instead of an
 * integer: a dim expression over named dim variables, fixed only when the
 * model runs. The syntax: decimal integers, names ([A-Za-z_][A-Za-z0-9_]*),
 * + - * // (floor division) % (floor modulo), unary -, min(a, b), max(a, b)
 * and parentheses, with the usual precedence; at most 256 bytes and 32
 * levels of nesting ("n", "n*2", "(s+1)//2", "max(n-1, 1)"). An expression
 * without names is its value. A plan whose dims are all integers is static
 * and runs as above. In a plan with names (a dynamic plan):
 *   - every name must be a dim of its own ("n", not "n*2") of some input;
 *     the first such input dim, inputs in "arg_nodes" order, binds it each
 *     run, and every other symbolic input dim must equal its expression
 *     under that binding (else the run fails with KILN_ERR_INVALID naming
 *     the input, the dim, the variable and both values);
 *   - parameters must be static;
 *   - the kernels' signatures are checked at load as far as the plan's
 *     constant dims go, and per run for the rest (a kernel's fixed dim that
 *     meets a symbolic dim, a kernel's symbolic size used twice);
 *   - an expression that overflows int64, divides by zero or is negative,
 *     and an entry of more than 1 TiB, fail the run, naming the entry;
 *   - each run state has one 64-byte aligned buffer per storage_id (the
 *     parameters' aside), grown, never shrunk, when a run's shapes need
 *     more; storage_id sharing stays valid at every size, since liveness
 *     does not depend on sizes. A run whose bound variables equal the
 *     previous run's on that run state does no setup and allocates nothing.
 * Threads: kiln_package_write and kiln_package_inspect may be called from
 * any thread (distinct paths).
 *
 * Trust: loading a package runs its native code (mod.so), as loading a
 * shared library does; load only packages you trust (docs/SECURITY.md).
 * Before any of it runs, kiln checks the manifest (present and first, this
 * format version and module ABI, every member listed once with a matching
 * size and SHA-256, no other member), mod.so's ELF structure against its
 * size, its machine and the CPU features mod.json's target needs; then
 * mod.so is loaded from memory (a memfd), so no file is written. These
 * checks catch corrupt, truncated and foreign packages, not hostile ones:
 * whoever writes a package can write a matching manifest.
 * kiln_package_inspect reads a package without loading mod.so. */

/* The package format kiln_package_write writes and the reader accepts
 * (manifest.json's "version"). Packages without a manifest (format 1,
 * before it) are refused: rebuild them with `kiln compile`. */
#define KILN_PACKAGE_FORMAT_VERSION 2

/* Write a package to `path`: the manifest, the shared object at `so_path`,
 * `json` (json_len bytes; must parse as JSON) and `params` (NULL for none).
 * The file appears whole or not at all. */
KILN_API kiln_status kiln_package_write(const char *path, const char *json, size_t json_len,
                                        const char *so_path, const kiln_npz *params);

/* What a package holds, read without loading or running any of its code. */
typedef struct kiln_package_info kiln_package_info;

/* A tensor of a package's plan: name, dtype and shape. A symbolic dim d
 * has shape[d] -1 and its expression in dim_expr[d] (NULL for a constant
 * dim). */
typedef struct {
    const char *name;
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_NDIM];
    const char *dim_expr[KILN_MAX_NDIM];
} kiln_tensor_desc;

/* Read the package at `path` without loading mod.so: verify the manifest
 * and mod.so's ELF structure, parse mod.params' names and read the plan
 * (mod.json) for its inputs, outputs and kernel calls. Works for a package
 * built for another machine. NULL with an error naming the package, the
 * member and the node. */
KILN_API kiln_package_info *kiln_package_inspect(const char *path);
KILN_API void kiln_package_info_free(kiln_package_info *p);
/* mod.json's target string ("llvm -mcpu=..."), or NULL if it has none. */
KILN_API const char *kiln_package_info_target(const kiln_package_info *p);
/* The module ABI version the manifest gives for the kernels. */
KILN_API int kiln_package_info_abi(const kiln_package_info *p);
/* Members other than the manifest (mod.so, mod.json, mod.params): 3. */
KILN_API int kiln_package_info_num_members(const kiln_package_info *p);
/* Member i's name, size and SHA-256 (64 hex digits); 0 if out of range. */
KILN_API int kiln_package_info_member(const kiln_package_info *p, int i, const char **name,
                                      int64_t *size, const char **sha256);
/* Inputs (parameters excluded) and outputs, as kiln_executor lists them. */
KILN_API int kiln_package_info_num_inputs(const kiln_package_info *p);
KILN_API const kiln_tensor_desc *kiln_package_info_input(const kiln_package_info *p, int i);
KILN_API int kiln_package_info_num_outputs(const kiln_package_info *p);
KILN_API const kiln_tensor_desc *kiln_package_info_output(const kiln_package_info *p, int i);
/* Kernel calls per run, in order: node k's name and the function it calls. */
KILN_API int kiln_package_info_num_kernels(const kiln_package_info *p);
KILN_API const char *kiln_package_info_kernel_name(const kiln_package_info *p, int k);
KILN_API const char *kiln_package_info_kernel_func(const kiln_package_info *p, int k);
/* Who compiled call k: "kiln", or the external backend whose function it
 * is (kiln/byoc.h: "dnnl"); and how many of the graph's ops it computes
 * (-1 if the package does not say). */
KILN_API const char *kiln_package_info_kernel_backend(const kiln_package_info *p, int k);
KILN_API int kiln_package_info_kernel_ops(const kiln_package_info *p, int k);
/* The functions mod.so exports, as its kiln_module_meta text (module_abi.h)
 * read from its dynamic symbol table without loading it; NULL if it cannot
 * be found there. */
KILN_API const char *kiln_package_info_functions(const kiln_package_info *p);

/* ---- loaded models ---------------------------------------------------------
 * A model is a loaded package: its module, its plan and its weights. It is
 * immutable once loaded and reference counted.
 * Threads: any number of threads may call kiln_model_run and
 * kiln_model_run_alloc on one model at once, each with inputs of its own
 * shapes when the plan has symbolic dims, and read its inputs and outputs;
 * each concurrent run takes a run state (activation memory, and for a
 * dynamic plan the binding of its dim variables) of its own from the
 * model's pool (allocating one when all are busy), so memory grows by one
 * run state per concurrent run, never by a copy of the weights.
 * kiln_model_retain and kiln_model_free may be called from any thread; the
 * last free must come after every run. */
typedef struct kiln_model kiln_model;

/* Flags for kiln_model_run (and kiln_executor_set_check_div_zero): report
 * an integer division or remainder by zero as an error naming the node,
 * instead of giving it the defined value x / 0 = 0, x % 0 = 0. */
#define KILN_RUN_CHECK_DIV_ZERO 1u

/* Load a package written by kiln_package_write: this runs its mod.so
 * (trust it), after the checks above. One reference. NULL with an error
 * naming the file, the member and the node. */
KILN_API kiln_model *kiln_model_load(const char *package_tar_path);
/* A model over a graph JSON and a loaded module; one reference. `mod` is
 * borrowed and must outlive the model; `params` (may be NULL) is copied. */
KILN_API kiln_model *kiln_model_create(const char *json, size_t len, kiln_module *mod,
                                       const kiln_npz *params);
/* Add a reference; returns m. */
KILN_API kiln_model *kiln_model_retain(kiln_model *m);
/* Drop a reference; the last frees the model (and its module, if it came
 * from a package). NULL is a no-op. */
KILN_API void kiln_model_free(kiln_model *m);
/* Inputs in the order of "arg_nodes" (parameters excluded), and outputs,
 * one per head; name, dtype, rank and dims as for an executor below (NULL,
 * KILN_DTYPE_COUNT or -1 when out of range; a dim is -1 when it is
 * symbolic, and *_dim_expr gives its expression). */
KILN_API int kiln_model_num_inputs(const kiln_model *m);
KILN_API const char *kiln_model_input_name(const kiln_model *m, int i);
KILN_API kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i);
KILN_API int kiln_model_input_ndim(const kiln_model *m, int i);
KILN_API int64_t kiln_model_input_dim(const kiln_model *m, int i, int d);
KILN_API int kiln_model_num_outputs(const kiln_model *m);
KILN_API const char *kiln_model_output_name(const kiln_model *m, int i);
KILN_API kiln_dtype kiln_model_output_dtype(const kiln_model *m, int i);
KILN_API int kiln_model_output_ndim(const kiln_model *m, int i);
KILN_API int64_t kiln_model_output_dim(const kiln_model *m, int i, int d);
/* The expression of symbolic dim d of input (output) i as mod.json writes
 * it ("n", "n*2"), owned by the model; NULL for a constant dim or out of
 * range. */
KILN_API const char *kiln_model_input_dim_expr(const kiln_model *m, int i, int d);
KILN_API const char *kiln_model_output_dim_expr(const kiln_model *m, int i, int d);
/* Run the model once, safely from any number of threads at once: copy
 * inputs[i] (one per input, in order, every one given; any strides) in, run
 * every kernel and copy each output into outputs[i] (NULL skips it). Each
 * input must have its port's dtype and shape; a symbolic dim may have any
 * size consistent with the other inputs (see "Symbolic dims" above). Each
 * output array must have this run's shape (kiln_model_run_alloc makes
 * them). `flags`: 0 or KILN_RUN_CHECK_DIV_ZERO. A kernel failure names the
 * node and function: KILN_ERR_NOMEM, KILN_ERR_RANGE (an index input out of
 * range) or, with KILN_RUN_CHECK_DIV_ZERO, KILN_ERR_INVALID (an integer
 * division by zero); the outputs are then not written. */
KILN_API kiln_status kiln_model_run(kiln_model *m, const kiln_ndarray *const *inputs,
                                    kiln_ndarray *const *outputs, unsigned flags);
/* kiln_model_run into new arrays of this run's output shapes, for callers
 * that do not know them: outputs has one slot per output and receives
 * compact arrays the caller frees (all NULL after a failure). */
KILN_API kiln_status kiln_model_run_alloc(kiln_model *m, const kiln_ndarray *const *inputs,
                                          kiln_ndarray **outputs, unsigned flags);

/* ---- executors ---------------------------------------------------------------
 * An executor is a model and one run state of its own: inputs that keep
 * their values across runs, outputs that stay readable until the next run,
 * per-kernel profiling.
 * Threads: an executor belongs to one thread at a time; two threads must
 * not use one executor at once (use one executor per thread, all made from
 * one model with kiln_executor_create_from_model, or kiln_model_run). The
 * getters of names, dtypes and shapes only read the model. */
typedef struct kiln_executor kiln_executor;

/* Load a package (kiln_model_load) into an executor of its own. */
KILN_API kiln_executor *kiln_executor_load(const char *package_tar_path);
/* An executor over a graph JSON and a loaded module. `mod` is borrowed and
 * must outlive the executor; `params` (may be NULL) is copied. */
KILN_API kiln_executor *kiln_executor_create(const char *json, size_t len, kiln_module *mod,
                                             const kiln_npz *params);
/* An executor over m, sharing its module and weights; it holds a reference
 * to m, so m may be freed first. Its inputs start as 0, except those with
 * symbolic dims, which have no value (and no shape) until set. */
KILN_API kiln_executor *kiln_executor_create_from_model(kiln_model *m);
/* The executor's model (borrowed: retain it to keep it past the executor). */
KILN_API kiln_model *kiln_executor_model(const kiln_executor *e);
/* Free the executor and drop its reference to the model. */
KILN_API void kiln_executor_free(kiln_executor *e);

/* Inputs in the order of "arg_nodes" (parameters excluded). */
KILN_API int kiln_executor_num_inputs(const kiln_executor *e);
/* Name of input i, or NULL if out of range. */
KILN_API const char *kiln_executor_input_name(const kiln_executor *e, int i);
/* Dtype of input i (KILN_DTYPE_COUNT if out of range). */
KILN_API kiln_dtype kiln_executor_input_dtype(const kiln_executor *e, int i);
/* Rank of input i (-1 if out of range). */
KILN_API int kiln_executor_input_ndim(const kiln_executor *e, int i);
/* Dim d of input i (-1 if out of range or symbolic). */
KILN_API int64_t kiln_executor_input_dim(const kiln_executor *e, int i, int d);
/* The expression of symbolic dim d of input i (kiln_model_input_dim_expr). */
KILN_API const char *kiln_executor_input_dim_expr(const kiln_executor *e, int i, int d);
/* Copy `value` into the input called `name`; its dtype, rank and constant
 * dims must match (any strides). A symbolic dim takes the value's size (the
 * input's buffer grows when it must); the inputs' sizes are checked against
 * each other when the executor runs. Inputs keep their value across runs;
 * unset inputs are 0, and an input with symbolic dims must be set before
 * the first run. */
KILN_API kiln_status kiln_executor_set_input(kiln_executor *e, const char *name,
                                             const kiln_ndarray *value);
/* Run every kernel in order, after binding a dynamic plan's dim variables
 * from the inputs' shapes. Failures as for kiln_model_run. */
KILN_API kiln_status kiln_executor_run(kiln_executor *e);
/* With on != 0, later runs report an integer division by zero as an error
 * (KILN_RUN_CHECK_DIV_ZERO); 0 (the default) gives it the defined value. */
KILN_API kiln_status kiln_executor_set_check_div_zero(kiln_executor *e, int on);
/* Outputs, one per head, in order. */
KILN_API int kiln_executor_num_outputs(const kiln_executor *e);
/* Name of output i ("output_names", or "output_<i>"), or NULL. */
KILN_API const char *kiln_executor_output_name(const kiln_executor *e, int i);
/* Output i (owned by the executor, valid until it is freed; the values are
 * those of the last run), or NULL. With symbolic dims, it has the last
 * run's shape (the same object, reshaped, from run to run), and is NULL
 * before the first run and after set_input or a failed run moved the
 * executor's buffers (run again; do not read a pointer kept from before). */
KILN_API const kiln_ndarray *kiln_executor_output(const kiln_executor *e, int i);
/* Kernel calls per run (the "tvm_op" nodes), in execution order. */
KILN_API int kiln_executor_num_kernels(const kiln_executor *e);
/* Node name of kernel call k, or NULL. */
KILN_API const char *kiln_executor_kernel_name(const kiln_executor *e, int k);
/* Function (attrs.func_name) kernel call k calls, or NULL. */
KILN_API const char *kiln_executor_kernel_func(const kiln_executor *e, int k);
/* Run, and store the wall time of each kernel call in kernel_seconds
 * (kiln_executor_num_kernels entries). */
KILN_API kiln_status kiln_executor_run_profiled(kiln_executor *e, double *kernel_seconds);

/* ---- the roofline profile (docs/PROFILING.md) ---------------------------------- */
/* The cost of one call of kernel k, counted when the package was compiled
 * (mod.json's attrs.flops and attrs.bytes): its floating-point operations
 * (a multiply-add is 2, a transcendental 1) and its compulsory bytes (its
 * inputs and outputs, each once). A count is -1 where the package does not
 * give it (older packages) or, with symbolic dims, before the first run;
 * with symbolic dims, it is the last run's. */
KILN_API kiln_status kiln_executor_kernel_cost(const kiln_executor *e, int k, double *flops,
                                               double *bytes);
/* The vector width the package was compiled for, in bits (mod.json's
 * target), or 0 if it does not say. */
KILN_API int kiln_executor_vector_bits(const kiln_executor *e);

/* One measurement of the FP32 FMA rate: `threads` chunks of a parallel loop
 * (run on at most kiln_num_threads() threads), each `iters` iterations of
 * independent FMA chains over vectors of *lanes floats, narrowed to the
 * widest this CPU runs (*lanes is set to it). GFLOP/s, or 0 on bad
 * arguments. */
KILN_API double kiln_measure_fma_gflops(int *lanes, int threads, int64_t iters);
/* The best of three streaming passes dst[i] = src[i] + 1 over two buffers
 * of bytes/2 each (bytes <= 0: four times the last-level cache, at least
 * 64 MiB), counting what is read and written. GB/s, or 0 if it could not
 * allocate them. */
KILN_API double kiln_measure_bandwidth_gbs(int threads, int64_t bytes);

typedef struct {
    double peak_gflops;   /* FP32 FMA peak, GFLOP/s */
    double bandwidth_gbs; /* streaming read + write, GB/s */
    int lanes, threads;   /* the vector width and thread count measured */
    int cached;           /* 1: read from `source`; 0: measured now (and saved there, if set) */
    char cpu[128];        /* the CPU model, as /proc/cpuinfo names it */
    char source[1024];    /* the cache file, or "" where there is none */
} kiln_machine_limits;

/* This machine's limits for vectors of `lanes` floats and `threads` threads
 * (at most kiln_num_threads()): from the cache file
 * $XDG_CACHE_HOME/kiln/machine-limits.txt (else ~/.cache/kiln/...), keyed
 * by CPU model, thread count and lanes, or measured (about 0.2 s) and
 * saved there (not a multi-thread peak that fell short of the threads'
 * one-thread peaks: measured beside other work). With use_cache 0, always
 * measured, and not saved. */
KILN_API kiln_status kiln_machine_limits_get(int lanes, int threads, int use_cache,
                                             kiln_machine_limits *out);

typedef enum { KILN_BOUND_UNKNOWN, KILN_BOUND_COMPUTE, KILN_BOUND_MEMORY } kiln_bound;

/* A kernel's place on the roofline. Every figure is -1 where its inputs
 * are unknown. */
typedef struct {
    double seconds, flops, bytes;
    double gflops, gbs;  /* achieved */
    double intensity;    /* flops per byte */
    double limit_gflops; /* min(peak, intensity x bandwidth) */
    double share;        /* the roofline time max(flops/peak, bytes/bandwidth) over seconds:
                            the achieved fraction of the limit (for a kernel without flops,
                            of the bandwidth) */
    kiln_bound bound;    /* the limit that binds */
} kiln_roofline;

/* The roofline point of a kernel that took `seconds` for flops and bytes
 * (-1: unknown) on a machine with limits lim. */
KILN_API void kiln_roofline_point(double seconds, double flops, double bytes,
                                  const kiln_machine_limits *lim, kiln_roofline *out);

#ifdef __cplusplus
}
#endif
#endif
