/* kiln.c: the `kiln` command-line tool. kiln_cli_main dispatches to one
 * function per subcommand through the table below; adding a subcommand is
 * one row. It lives in libkiln_cli, which the `kiln` binary (main.c) and
 * the Python package's `python -m kiln` both call, so the two are one CLI.
 * The runtime-only build (KILN_RUNTIME_ONLY: a cross build for a board)
 * has run and inspect, not compile. */
#include <stdio.h>
#include <string.h>

#ifndef KILN_RUNTIME_ONLY
#include "kiln_compile.h"
#endif
#include "kiln_run.h"

#include "kiln_cli.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *summary;
} command;

static const command k_commands[] = {
#ifndef KILN_RUNTIME_ONLY
    {"compile", kiln_cmd_compile, "compile an ONNX model into a package (model.tar)"},
    {"tune", kiln_cmd_tune, "tune a model's kernels on this machine into tuning records"},
    {"quantize", kiln_cmd_quantize, "quantize a float ONNX model into a QDQ (int8) ONNX model"},
#endif
    {"run", kiln_cmd_run, "run a compiled package (model.tar) and time or save its outputs"},
    {"inspect", kiln_cmd_inspect, "print a model's graph IR and op counts, or a package's I/O"},
};
#define NCOMMANDS (int)(sizeof k_commands / sizeof k_commands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: kiln <command> [options]\n\ncommands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", k_commands[i].name, k_commands[i].summary);
    fprintf(f, "\n'kiln <command> --help' describes a command's options.\n"
               "  --help     print this message\n"
               "  --version  print kiln's version\n");
}

int kiln_cli_argc;
char **kiln_cli_argv;

int kiln_cli_main(int argc, char **argv) {
    kiln_cli_argc = argc;
    kiln_cli_argv = argv;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("kiln %s\n", kiln_version());
        return 0;
    }
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[1], k_commands[i].name) == 0)
            return k_commands[i].fn(argc - 1, argv + 1);
#ifdef KILN_RUNTIME_ONLY
    if (strcmp(argv[1], "compile") == 0) {
        fprintf(stderr, "kiln: this kiln is the runtime-only build: compile the model with a "
                        "full kiln (on the host, --target for this machine) and run the "
                        "package here\n");
        return 2;
    }
#endif
    fprintf(stderr, "kiln: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
