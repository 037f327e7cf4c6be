"""Loading libkiln and calling it: the one place that knows C signatures.

Python holds no copy of kiln's struct layouts: every kiln object is an
opaque pointer (``c_void_p``), and every call goes through a public
function of ``include/kiln/*.h``. The library is found, in order, at
``$KILN_LIBRARY_PATH`` (a file, or a folder holding ``libkiln.so``), inside
the package (a wheel bundles it), in the source tree's build folders, and
where the system's loader finds it; with ``$KILN_LIBRARY_PATH`` set, only
there. Its C API version must be the one this
package was written for (``KILN_API_VERSION``), or importing kiln fails with
a message that says which library was found and what to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_size_t,
    c_void_p,
)
from typing import Any, Callable, Optional

#: The C API version (``kiln_api_version()``) this package is written for.
API_VERSION = 1

_here = os.path.dirname(os.path.abspath(__file__))


class KilnError(RuntimeError):
    """An error raised by kiln's C library (or by a callback run from it).

    ``str(err)`` is kiln's message, which names the file, node, op or
    option at fault. ``c_trace`` is the C call stack where the error was
    raised (empty if none was taken); a Python exception raised inside a
    callback that C called arrives with its own traceback in the message.
    """

    def __init__(self, message: str, status: int = 1, c_trace: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.c_trace = c_trace


class KilnLibraryError(ImportError):
    """libkiln was not found, or is not the version this package needs."""


def _candidates() -> list:
    names = ["libkiln.so", "libkiln.so.0"]
    out = []
    env = os.environ.get("KILN_LIBRARY_PATH")
    if env:
        for part in env.split(os.pathsep):
            if os.path.isfile(part):
                out.append(part)
            else:
                out += [os.path.join(part, n) for n in names]
        return out  # an explicit path is the only place looked
    out += [os.path.join(_here, "lib", n) for n in names]
    root = os.path.dirname(os.path.dirname(_here))
    for b in ("build", "build-test-release", "build-release"):
        out += [os.path.join(root, b, n) for n in names]
    found = ctypes.util.find_library("kiln")
    if found:
        out.append(found)
    return out


def _load() -> ctypes.CDLL:
    tried = []
    env = os.environ.get("KILN_LIBRARY_PATH")
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            if env:
                raise KilnLibraryError(f"kiln: cannot load {path}: {e}") from None
            tried.append(f"{path} ({e})")
            continue
        lib._kiln_path = path  # type: ignore[attr-defined]
        _check_version(lib, path)
        return lib
    raise KilnLibraryError(
        "kiln: libkiln.so not found. Build kiln (bash scripts/quickstart.sh), install it, "
        "or set KILN_LIBRARY_PATH to the folder that holds libkiln.so. Tried: "
        + ", ".join(tried)
    )


def _check_version(lib: ctypes.CDLL, path: str) -> None:
    try:
        api = lib.kiln_api_version
    except AttributeError:
        raise KilnLibraryError(
            f"kiln: {path} has no kiln_api_version(): it is not libkiln, or a libkiln older "
            f"than this Python package (which needs C API version {API_VERSION}); rebuild kiln"
        ) from None
    api.restype = c_int
    have = api()
    ver = lib.kiln_version
    ver.restype = c_char_p
    if have != API_VERSION:
        raise KilnLibraryError(
            f"kiln: {path} is libkiln {ver().decode()} with C API version {have}, but this "
            f"kiln Python package needs C API version {API_VERSION}: use the package and the "
            f"library of one kiln build (rebuild kiln, or reinstall the package from it)"
        )


lib = _load()
library_path: str = lib._kiln_path  # type: ignore[attr-defined]

# ---- signatures --------------------------------------------------------------
# One row per C function: restype, then argtypes. Handles are c_void_p.
P = c_void_p
S = c_char_p
I64P = POINTER(c_int64)

PRED_FN = CFUNCTYPE(c_int, P, c_int, P)  # kiln_pattern_pred
PACKED_FN = CFUNCTYPE(c_int, P, P, P)  # kiln_packed_fn
FREE_FN = CFUNCTYPE(None, P)
COMPUTE_FN = CFUNCTYPE(P, P, POINTER(P), P)  # kiln_compute_fn
REWRITE_FN = CFUNCTYPE(c_int, P, P)  # kiln_rewrite_fn
CODEGEN_FN = CFUNCTYPE(P, P, c_int, S, P)  # returns malloc'd char*
PROGRESS_FN = CFUNCTYPE(None, P, S, c_int, c_int, S)
TUNE_LOG_FN = CFUNCTYPE(None, P, c_int, S)

_SIGS = {
    # base
    "kiln_version": (S,),
    "kiln_api_version": (c_int,),
    "kiln_last_error": (S,),
    "kiln_last_error_trace": (S,),
    "kiln_clear_error": (None,),
    "kiln_error_raise": (c_int, c_int, S),
    "kiln_free": (None, P),
    "kiln_status_str": (S, c_int),
    "kiln_dtype_name": (S, c_int),
    "kiln_dtype_parse": (c_int, S, POINTER(c_int)),
    "kiln_dtype_size": (c_size_t, c_int),
    # ffi
    "kiln_args_new": (P,),
    "kiln_args_free": (None, P),
    "kiln_args_count": (c_int, P),
    "kiln_args_kind": (c_int, P, c_int),
    "kiln_args_push_none": (c_int, P),
    "kiln_args_push_int": (c_int, P, c_int64),
    "kiln_args_push_float": (c_int, P, c_double),
    "kiln_args_push_str": (c_int, P, S),
    "kiln_args_push_array": (c_int, P, P, c_int),
    "kiln_args_push_graph": (c_int, P, P, c_int),
    "kiln_args_push_func": (c_int, P, P),
    "kiln_args_int": (c_int64, P, c_int),
    "kiln_args_float": (c_double, P, c_int),
    "kiln_args_str": (S, P, c_int),
    "kiln_args_array": (P, P, c_int),
    "kiln_args_graph": (P, P, c_int),
    "kiln_args_func": (P, P, c_int),
    "kiln_args_take_array": (P, P, c_int, POINTER(c_int)),
    "kiln_args_take_graph": (P, P, c_int, POINTER(c_int)),
    "kiln_func_new": (P, PACKED_FN, P, FREE_FN),
    "kiln_func_retain": (P, P),
    "kiln_func_release": (None, P),
    "kiln_func_call": (c_int, P, P, P),
    "kiln_func_register": (c_int, S, P, c_int),
    "kiln_func_unregister": (c_int, S),
    "kiln_func_get": (P, S, c_int),
    "kiln_func_list": (P,),
    # runtime: arrays
    "kiln_ndarray_empty": (P, c_int, c_int, I64P),
    "kiln_ndarray_wrap": (P, P, c_int, c_int, I64P, I64P, c_int64),
    "kiln_ndarray_free": (None, P),
    "kiln_ndarray_copy": (c_int, P, P),
    "kiln_ndarray_dtype": (c_int, P),
    "kiln_ndarray_ndim": (c_int, P),
    "kiln_ndarray_dim": (c_int64, P, c_int),
    "kiln_ndarray_stride": (c_int64, P, c_int),
    "kiln_ndarray_data": (P, P),
    "kiln_ndarray_is_contiguous": (c_int, P),
    "kiln_npz_new": (P,),
    "kiln_npz_free": (None, P),
    "kiln_npz_count": (c_int, P),
    "kiln_npz_add": (c_int, P, S, P),
    "kiln_npz_name": (S, P, c_int),
    "kiln_npz_array": (P, P, c_int),
    "kiln_set_num_threads": (c_int, c_int),
    "kiln_num_threads": (c_int,),
    # runtime: modules, models, executors, packages
    "kiln_module_load": (P, S),
    "kiln_module_save": (c_int, P, S),
    "kiln_module_free": (None, P),
    "kiln_module_function_count": (c_int, P),
    "kiln_module_get_function": (P, P, S),
    "kiln_module_function_at": (P, P, c_int),
    "kiln_function_name": (S, P),
    "kiln_function_num_args": (c_int, P),
    "kiln_function_call": (c_int, P, c_int, POINTER(P)),
    "kiln_model_load": (P, S),
    "kiln_model_retain": (P, P),
    "kiln_model_free": (None, P),
    "kiln_model_run": (c_int, P, POINTER(P), POINTER(P), ctypes.c_uint),
    "kiln_model_run_alloc": (c_int, P, POINTER(P), POINTER(P), ctypes.c_uint),
    "kiln_model_num_inputs": (c_int, P),
    "kiln_model_input_name": (S, P, c_int),
    "kiln_model_input_dtype": (c_int, P, c_int),
    "kiln_model_input_ndim": (c_int, P, c_int),
    "kiln_model_input_dim": (c_int64, P, c_int, c_int),
    "kiln_model_input_dim_expr": (S, P, c_int, c_int),
    "kiln_model_num_outputs": (c_int, P),
    "kiln_model_output_name": (S, P, c_int),
    "kiln_model_output_dtype": (c_int, P, c_int),
    "kiln_model_output_ndim": (c_int, P, c_int),
    "kiln_model_output_dim": (c_int64, P, c_int, c_int),
    "kiln_model_output_dim_expr": (S, P, c_int, c_int),
    "kiln_executor_create_from_model": (P, P),
    "kiln_executor_free": (None, P),
    "kiln_executor_set_input": (c_int, P, S, P),
    "kiln_executor_run": (c_int, P),
    "kiln_executor_num_outputs": (c_int, P),
    "kiln_executor_output": (P, P, c_int),
    "kiln_executor_num_kernels": (c_int, P),
    "kiln_executor_kernel_name": (S, P, c_int),
    "kiln_executor_kernel_func": (S, P, c_int),
    "kiln_executor_run_profiled": (c_int, P, POINTER(c_double)),
    "kiln_executor_kernel_cost": (c_int, P, c_int, POINTER(c_double), POINTER(c_double)),
    "kiln_package_inspect": (P, S),
    "kiln_package_info_free": (None, P),
    "kiln_package_info_target": (S, P),
    "kiln_package_info_num_kernels": (c_int, P),
    "kiln_package_info_kernel_name": (S, P, c_int),
    "kiln_package_info_kernel_backend": (S, P, c_int),
    # target
    "kiln_target_parse": (P, S),
    "kiln_target_host": (P,),
    "kiln_target_free": (None, P),
    "kiln_target_str": (S, P),
    "kiln_target_arch": (S, P),
    "kiln_target_cpu": (S, P),
    "kiln_target_vector_bits": (c_int, P),
    "kiln_target_has": (c_int, P, S),
    "kiln_target_features": (P, P),
    # te
    "kiln_ctx_new": (P,),
    "kiln_ctx_free": (None, P),
    "kiln_var": (P, P, S),
    "kiln_size_var": (P, P, S),
    "kiln_int": (P, P, c_int64),
    "kiln_const": (P, P, c_int, c_double),
    "kiln_reduce_axis": (P, P, P, P, S),
    "kiln_select": (P, P, P, P),
    "kiln_dot": (P, c_int, P, P),
    "kiln_cast": (P, c_int, P),
    "kiln_sum": (P, P, c_int, POINTER(P)),
    "kiln_max_reduce": (P, P, c_int, POINTER(P)),
    "kiln_min_reduce": (P, P, c_int, POINTER(P)),
    "kiln_prod": (P, P, c_int, POINTER(P)),
    "kiln_placeholder": (P, P, c_int, POINTER(P), c_int, S),
    "kiln_compute": (P, P, c_int, POINTER(P), COMPUTE_FN, P, S),
    "kiln_tensor_at": (P, P, c_int, POINTER(P)),
    "kiln_scan_declare": (P, P, c_int, POINTER(P), c_int, c_int, S),
    "kiln_scan_define": (c_int, P, COMPUTE_FN, P),
    "kiln_tensor_scan_axis": (c_int, P),
    "kiln_checked_index": (P, P, P, c_int),
    "kiln_tensor_ndim": (c_int, P),
    "kiln_tensor_dim": (P, P, c_int),
    "kiln_tensor_dtype": (c_int, P),
    "kiln_tensor_name": (S, P),
    "kiln_tensor_axis": (P, P, c_int),
    "kiln_tensor_reduce_axis": (P, P, c_int),
    "kiln_tensor_num_reduce_axes": (c_int, P),
    "kiln_tensor_inputs": (c_int, P, POINTER(P), c_int),
    "kiln_expr_print": (c_int, P, ctypes.c_char_p, c_size_t),
    # schedule and build
    "kiln_schedule_create": (P, P, c_int, POINTER(P)),
    "kiln_schedule_stage": (P, P, P),
    "kiln_stage_leaf_axes": (c_int, P, POINTER(P), c_int),
    "kiln_split": (c_int, P, P, c_int64, POINTER(P), POINTER(P)),
    "kiln_split_nparts": (c_int, P, P, c_int64, POINTER(P), POINTER(P)),
    "kiln_tile": (c_int, P, P, P, c_int64, c_int64, POINTER(P), POINTER(P), POINTER(P),
                  POINTER(P)),
    "kiln_fuse": (c_int, P, P, P, POINTER(P)),
    "kiln_reorder": (c_int, P, c_int, POINTER(P)),
    "kiln_vectorize": (c_int, P, P),
    "kiln_unroll": (c_int, P, P),
    "kiln_parallel": (c_int, P, P),
    "kiln_bind": (c_int, P, P, S),
    "kiln_compute_at": (c_int, P, P, P),
    "kiln_compute_inline": (c_int, P),
    "kiln_compute_root": (c_int, P),
    "kiln_set_scope": (c_int, P, S),
    "kiln_cache_read": (P, P, P, S, c_int, POINTER(P)),
    "kiln_cache_write": (P, P, P, S),
    "kiln_lower_to_string": (P, P, c_int, POINTER(P), S),
    "kiln_build_options_new": (P,),
    "kiln_build_options_set": (c_int, P, S, S),
    "kiln_build_options_free": (None, P),
    "kiln_build_options_set_progress": (c_int, P, PROGRESS_FN, P),
    "kiln_build": (P, P, c_int, POINTER(P), S, P),
    "kiln_build_save": (c_int, P, c_int, POINTER(P), S, P, S),
    "kiln_build_source": (P, P, c_int, POINTER(P), S, P),
    # graphs
    "kiln_graph_new": (P,),
    "kiln_graph_free": (None, P),
    "kiln_graph_var": (c_int, P, S, c_int, c_int, I64P, POINTER(c_char_p)),
    "kiln_graph_const": (c_int, P, S, P),
    "kiln_graph_call": (c_int, P, S, c_int, POINTER(c_int), S, S),
    "kiln_graph_tuple": (c_int, P, c_int, POINTER(c_int), S),
    "kiln_graph_tuple_get": (c_int, P, c_int, c_int, S),
    "kiln_graph_set_outputs": (c_int, P, c_int, POINTER(c_int), POINTER(c_char_p)),
    "kiln_graph_num_nodes": (c_int, P),
    "kiln_graph_node_op": (S, P, c_int),
    "kiln_graph_node_name": (S, P, c_int),
    "kiln_graph_node_num_inputs": (c_int, P, c_int),
    "kiln_graph_node_input": (c_int, P, c_int, c_int),
    "kiln_graph_node_value": (P, P, c_int),
    "kiln_graph_node_attr_int": (c_int64, P, c_int, S, c_int64),
    "kiln_graph_node_attr_float": (c_double, P, c_int, S, c_double),
    "kiln_graph_node_attr_str": (S, P, c_int, S, S),
    "kiln_graph_node_attrs": (P, P, c_int),
    "kiln_graph_node_dtype": (c_int, P, c_int),
    "kiln_graph_node_ndim": (c_int, P, c_int),
    "kiln_graph_node_dim": (c_int64, P, c_int, c_int),
    "kiln_graph_infer_types": (c_int, P),
    "kiln_graph_compile": (c_int, P, S, P),
    "kiln_graph_print": (P, P),
    "kiln_graph_op_counts": (P, P),
    "kiln_graph_constants": (P, P),
    "kiln_graph_parse": (P, S, P),
    "kiln_graph_num_outputs": (c_int, P),
    "kiln_graph_output": (c_int, P, c_int),
    "kiln_graph_node_body": (P, P, c_int),
    "kiln_pass_list": (S,),
    "kiln_graph_run_pass": (P, P, S, P),
    "kiln_onnx_import": (P, S, S),
    "kiln_onnx_import_bytes": (P, ctypes.c_char_p, c_size_t, S, S),
    "kiln_tflite_import": (P, S, S),
    "kiln_tflite_import_bytes": (P, ctypes.c_char_p, c_size_t, S, S),
    "kiln_tflite_import_flags": (P, S, S, c_int),
    "kiln_tflite_import_bytes_flags": (P, ctypes.c_char_p, c_size_t, S, S, c_int),
    "kiln_tflite_is_model": (c_int, ctypes.c_char_p, c_size_t),
    "kiln_quantize_options_new": (P,),
    "kiln_quantize_options_free": (None, P),
    "kiln_quantize_options_set": (c_int, P, S, S),
    "kiln_onnx_quantize": (c_int, S, P, S, P, POINTER(P)),
    "kiln_npz_load": (P, S),
    "kiln_plugin_load": (c_int, S),
    # patterns
    "kiln_pattern_set_new": (P,),
    "kiln_pattern_set_free": (None, P),
    "kiln_pattern_wildcard": (P, P),
    "kiln_pattern_constant": (P, P),
    "kiln_pattern_op": (P, P, S, c_int, POINTER(P)),
    "kiln_pattern_op_where": (P, P, PRED_FN, P, c_int, POINTER(P)),
    "kiln_pattern_alt": (P, P, P, P),
    "kiln_pattern_op_class": (P, P, c_int, c_int, POINTER(P)),
    "kiln_pattern_named": (P, P, S),
    "kiln_pattern_attrs": (P, P, P, S),
    "kiln_pattern_type": (P, P, P, c_int, c_int, I64P),
    "kiln_pattern_optional": (P, P, S, P),
    "kiln_pattern_dominator": (P, P, P, P, P),
    "kiln_pattern_parse": (P, P, S),
    "kiln_pattern_print": (P, P),
    "kiln_pattern_match": (P, P, P, c_int),
    "kiln_match_node": (c_int, P, P),
    "kiln_match_free": (None, P),
    "kiln_rewrite_pre": (P, P),
    "kiln_rewrite_post": (P, P),
    "kiln_rewrite_root": (c_int, P),
    "kiln_rewrite_pre_node": (c_int, P, P),
    "kiln_rewrite_post_node": (c_int, P, P),
    "kiln_rewrite_uses": (c_int, P, c_int),
    "kiln_rewrite_post_of": (c_int, P, c_int),
    "kiln_graph_rewrite": (P, P, P, REWRITE_FN, P),
    "kiln_graph_rewrite_once": (P, P, P, REWRITE_FN, P),
    "kiln_graph_partition": (P, P, P, S, PRED_FN, P),
    # byoc
    "kiln_codegen_names": (S,),
    "kiln_codegen_builder_new": (P, S),
    "kiln_codegen_builder_free": (None, P),
    "kiln_codegen_builder_set": (c_int, P, S, S),
    "kiln_codegen_builder_add_pattern": (c_int, P, S, S, PRED_FN),
    "kiln_codegen_builder_set_supported": (c_int, P, PRED_FN),
    "kiln_codegen_builder_set_codegen": (c_int, P, CODEGEN_FN),
    "kiln_codegen_builder_register": (c_int, P, P),
    "kiln_graph_partition_for": (P, P, S),
    # tuning
    "kiln_tune_options_new": (P,),
    "kiln_tune_options_free": (None, P),
    "kiln_tune_options_set": (c_int, P, S, S),
    "kiln_tune_options_set_log": (c_int, P, TUNE_LOG_FN, P),
    "kiln_graph_tune": (c_int, P, P, P),
}


# te's math and arithmetic builders: kiln_NAME(expr) and kiln_NAME(expr, expr)
TE_UNARY = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil", "abs",
            "round", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
            "acosh", "atanh", "neg", "not"]
TE_BINARY = ["add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max", "eq", "ne",
             "lt", "le", "gt", "ge", "and", "or", "pow", "shl", "shr"]
_SIGS.update({"kiln_" + n: (P, P) for n in TE_UNARY})
_SIGS.update({"kiln_" + n: (P, P, P) for n in TE_BINARY})


class _Funcs:
    """The C functions, with their signatures set (``C.kiln_graph_new()``)."""

    def __getattr__(self, name: str) -> Any:
        sig = _SIGS.get(name)
        if sig is None:
            raise AttributeError(f"kiln: no signature for C function {name}")
        f = getattr(lib, name)
        f.restype = sig[0]
        f.argtypes = list(sig[1:])
        setattr(self, name, f)
        return f


C = _Funcs()

# ---- errors --------------------------------------------------------------------


def last_error(status: int = 1) -> KilnError:
    """The last C error of this thread as a KilnError (not raised)."""
    msg = (C.kiln_last_error() or b"").decode(errors="replace")
    trace = (C.kiln_last_error_trace() or b"").decode(errors="replace")
    if not msg:
        msg = "kiln: " + C.kiln_status_str(status).decode()
    return KilnError(msg, status, trace)


def check(status: int) -> None:
    """Raise the last C error if ``status`` is not KILN_OK (0)."""
    if status != 0:
        raise last_error(status)


def check_ptr(p: Optional[int]) -> int:
    """Raise the last C error if ``p`` is NULL; else return it."""
    if not p:
        raise last_error()
    return p


def take_str(p: Optional[int]) -> str:
    """The text of a malloc'd C string, which is then freed; raises on NULL."""
    check_ptr(p)
    try:
        return ctypes.string_at(p).decode()
    finally:
        C.kiln_free(p)


def enc(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode()


def raise_in_c(exc: BaseException) -> int:
    """Record a Python exception as the C error of this thread (with its
    traceback); returns the status a callback then returns."""
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    return C.kiln_error_raise(1, f"Python callback failed: {text}".encode(errors="replace"))


# Callbacks that C may call must stay alive as long as C holds them.
_keep: list = []
_keep_lock = threading.Lock()


def keep_alive(obj: Any) -> Any:
    with _keep_lock:
        _keep.append(obj)
    return obj


def callback(kind: Any, fn: Callable) -> Any:
    """A C function pointer of type ``kind`` calling ``fn``, kept alive for
    the process (C may call it at any time later)."""
    return keep_alive(kind(fn))
