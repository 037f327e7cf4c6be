/* kiln_compile.h: `kiln compile` (tvmc compile) and the model half of
 * `kiln inspect`; the parts of the CLI that need the compiler (libkiln). */
#ifndef KILN_TOOLS_COMPILE_H
#define KILN_TOOLS_COMPILE_H

/* argv[0] is the subcommand's name. 0 on success, 1 on failure, 2 on a bad argument. */
int kiln_cmd_compile(int argc, char **argv);
/* Print an ONNX model's graph IR, inputs, outputs and op counts; 0 or 1. */
int kiln_inspect_model(const char *path, const char *shapes);

#endif
