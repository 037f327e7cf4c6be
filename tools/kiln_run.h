/* kiln_run.h: the subcommands that need only the runtime (libkiln_runtime):
 * `kiln run` (tvmc run: load a package, fill its inputs, run it, and save,
 * print or time the outputs) and `kiln inspect`. */
#ifndef KILN_TOOLS_RUN_H
#define KILN_TOOLS_RUN_H

#include "kiln/runtime.h"

/* Run `kiln run` with argv[0] = "run". Returns 0, 1 on a runtime failure,
 * or 2 on a bad argument (with a message on stderr). */
int kiln_cmd_run(int argc, char **argv);
/* `kiln inspect`: a package's inputs, outputs and kernels, or (with the
 * compiler) a model's graph. 0, 1 on failure, 2 on a bad argument. */
int kiln_cmd_inspect(int argc, char **argv);
/* `kiln run --profile` (kiln_profile.c): time each kernel over `runs` runs,
 * print the roofline table (the `top` slowest, all if 0) and, with trace,
 * write a Chrome trace there. 0, or 1 with a message on stderr. */
/* Seconds on the monotonic clock. */
double kiln_run_now(void);
/* Print "kiln CMD: " and the message on stderr, then where the subcommand's
 * help is; return 2, a bad argument's exit code. */
int kiln_bad_arg(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kiln_run_profile(kiln_executor *e, long long runs, long long top, const char *trace);

#endif
