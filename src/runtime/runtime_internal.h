/* runtime_internal.h: runtime functions the compiler side uses but users
 * do not: loading a module built into a temporary folder. */
#ifndef KILN_RUNTIME_INTERNAL_H
#define KILN_RUNTIME_INTERNAL_H

#include "../base/base_internal.h"
#include "kiln/runtime.h"

/* Load the module at so_path. If tmpdir is not NULL, the module owns that
 * folder and removes it (and the files in it) when freed. */
KILN_HIDDEN kiln_module *kiln_module_load_owned(const char *so_path, const char *tmpdir);

#endif
