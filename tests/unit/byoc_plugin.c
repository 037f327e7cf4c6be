/* byoc_plugin.c: a plugin (kiln/plugin.h) that registers a backend
 * (kiln/byoc.h): the test backend of byoc_ccomp.h under the name
 * "ccplug", for `kiln compile --plugin libkiln_byoc_plugin.so --target
 * "ccplug, llvm"` (tests/cli/test_byoc.sh). */
#include "byoc_ccomp.h"
#include "kiln/plugin.h"

int kiln_plugin_init(void);

__attribute__((visibility("default"))) int kiln_plugin_init(void) {
    static const kiln_codegen_pattern rows[] = {
        {"ccplug.mul_add", "add(multiply(*, *), *)", mul_add_ok},
    };
    kiln_codegen_spec s = ccomp_spec("ccplug", NULL);
    s.patterns = rows;
    return kiln_codegen_register(&s) == KILN_OK ? 0 : 1;
}
