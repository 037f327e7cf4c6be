/* kiln_compile.h: `kiln compile` (tvmc compile) and the model half of
 * `kiln inspect`; the parts of the CLI that need the compiler (libkiln). */
#ifndef KILN_TOOLS_COMPILE_H
#define KILN_TOOLS_COMPILE_H

/* argv[0] is the subcommand's name. 0 on success, 1 on failure, 2 on a bad argument. */
int kiln_cmd_compile(int argc, char **argv);
struct kiln_graph;
/* Import the model at path with the frontend its bytes name: TFLite when
 * they carry the FlatBuffer identifier "TFL3" at byte 4 (or the name ends
 * in .tflite), else ONNX. NULL with kiln's error. */
struct kiln_graph *kiln_import_model(const char *path, const char *shapes);
/* --tflite-kernels VALUE: xnnpack (the default) or reference, the TFLite
 * import flags kiln_import_model uses from then on; 0, or -1 for another
 * value. */
int kiln_set_tflite_kernels(const char *value);
/* Print an ONNX or TFLite model's graph IR, inputs, outputs and op counts; 0 or 1. */
int kiln_inspect_model(const char *path, const char *shapes);

struct kiln_build_options;
/* Load every `--plugin LIB.so` of argv first, so that its ops and backends
 * (a --target "mybackend, llvm") are known whatever the options' order;
 * 0, or 1 after printing the error. */
int kiln_load_plugins(const char *cmd, int argc, char **argv);
/* The build options `kiln compile` and `kiln tune` share (--target,
 * --input-shapes, --opt-level, --disabled-pass, --cross-compiler,
 * --winograd, --plugin, --no-cache, --tflite-kernels) at argv[*i]: 1 if it was one (its value
 * taken, *i advanced; --input-shapes into *shapes), 0 if not, -1 after
 * printing an error (*rc: 2 for a bad argument, 1 for a failure). */
int kiln_build_arg(const char *cmd, int argc, char **argv, int *i, struct kiln_build_options *o,
                   const char **shapes, int *rc);
/* `kiln tune` (tvmc tune): kiln_tune.c. */
int kiln_cmd_tune(int argc, char **argv);
/* `kiln quantize`: kiln_quantize.c. */
int kiln_cmd_quantize(int argc, char **argv);

#endif
