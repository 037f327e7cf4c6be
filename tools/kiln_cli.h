/* kiln_cli.h: the command-line tool as a library (libkiln_cli). */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include "kiln/base.h"

/* Run the CLI on argv ("kiln", "compile", ...) and return its exit code:
 * what `kiln` does, in this process (python -m kiln calls it, so a pass a
 * Python plugin registers is there for --pass). */
KILN_API int kiln_cli_main(int argc, char **argv);

/* The whole command line of the running kiln_cli_main (for re-executing it
 * under Python for a .py plugin). */
extern int kiln_cli_argc;
extern char **kiln_cli_argv;

#endif
