/* kiln_compile.h: `kiln compile` (tvmc compile) and `kiln inspect`. */
#ifndef KILN_TOOLS_COMPILE_H
#define KILN_TOOLS_COMPILE_H

/* argv[0] is the subcommand's name. 0 on success, 1 on failure, 2 on a bad argument. */
int kiln_cmd_compile(int argc, char **argv);
int kiln_cmd_inspect(int argc, char **argv);

#endif
