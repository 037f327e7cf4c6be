/* driver_internal.h: what the build pipelines share (build.c for
 * tensor-expression functions, compile.c for graphs). */
#ifndef KILN_DRIVER_INTERNAL_H
#define KILN_DRIVER_INTERNAL_H

#include "../codegen/codegen.h"
#include "kiln/schedule.h"
#include "../target/target.h"

struct kiln_build_options {
    char *cc;
    char *cflags;
    char *target;
    int vector_bytes; /* 0: the host's */
    int no_fuse;      /* graphs: one kernel per op (opt level 0) */
    int naive;        /* graphs: the naive schedule (every stage inlined, nothing else) */
    int winograd;     /* graphs: -1 auto, 0 off, 2 or 4 Winograd tile for every eligible conv */
    int opt_level;    /* graphs: 0-3, -1 for the default (3) */
    char *disabled;   /* graphs: comma-separated pass names */
    char *dump_dir;   /* graphs: where to write the IR around each pass */
};

/* The target of opts: the host's (with opts' vector width, if set); NULL
 * with an error. The caller frees it. */
KILN_HIDDEN kiln_target *driver_target(const kiln_build_options *opts);
/* The toolchain of opts (defaults where unset). */
KILN_HIDDEN codegen_toolchain driver_toolchain(const kiln_build_options *opts);
/* Remove a build folder and the files in it. */
KILN_HIDDEN void driver_remove_dir(const char *dir);

#endif
