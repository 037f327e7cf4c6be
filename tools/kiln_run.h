/* kiln_run.h: the `kiln run` subcommand (tvmc run): load a package, fill
 * its inputs, run it, and save, print or time the outputs. */
#ifndef KILN_TOOLS_RUN_H
#define KILN_TOOLS_RUN_H

/* Run `kiln run` with argv[0] = "run". Returns 0, 1 on a runtime failure,
 * or 2 on a bad argument (with a message on stderr). */
int kiln_cmd_run(int argc, char **argv);

#endif
