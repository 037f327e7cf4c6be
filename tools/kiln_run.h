/* kiln_run.h: the subcommands that need only the runtime (libkiln_runtime):
 * `kiln run` (tvmc run: load a package, fill its inputs, run it, and save,
 * print or time the outputs) and `kiln inspect`. */
#ifndef KILN_TOOLS_RUN_H
#define KILN_TOOLS_RUN_H

/* Run `kiln run` with argv[0] = "run". Returns 0, 1 on a runtime failure,
 * or 2 on a bad argument (with a message on stderr). */
int kiln_cmd_run(int argc, char **argv);
/* `kiln inspect`: a package's inputs, outputs and kernels, or (with the
 * compiler) a model's graph. 0, 1 on failure, 2 on a bad argument. */
int kiln_cmd_inspect(int argc, char **argv);

#endif
