/* load_saved.c: a deployed program. It links libkiln_runtime only (no
 * compiler, no toolchain), loads the module that test_driver_save wrote,
 * and runs it: C = 2*A + B over n = 1000. */
#include <stdio.h>
#include <stdlib.h>

#include "kiln/runtime.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: load_saved MODULE.so\n");
        return 2;
    }
    kiln_module *m = kiln_module_load(argv[1]);
    if (!m) {
        fprintf(stderr, "load_saved: %s\n", kiln_last_error());
        return 1;
    }
    kiln_function *f = kiln_module_get_function(m, "axpy");
    int64_t n = 1000;
    kiln_ndarray *a[3];
    for (int i = 0; i < 3; i++)
        a[i] = kiln_ndarray_empty(KILN_FLOAT32, 1, &n);
    float *pa = kiln_ndarray_data(a[0]), *pb = kiln_ndarray_data(a[1]);
    for (int i = 0; i < n; i++) {
        pa[i] = (float)i;
        pb[i] = 1.0f;
    }
    if (!f || kiln_function_call(f, 3, a) != KILN_OK) {
        fprintf(stderr, "load_saved: %s\n", kiln_last_error());
        return 1;
    }
    const float *pc = kiln_ndarray_data(a[2]);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += pc[i] != 2.0f * (float)i + 1.0f;
    for (int i = 0; i < 3; i++)
        kiln_ndarray_free(a[i]);
    kiln_module_free(m);
    printf("%d passed, %d failed\n", bad ? 0 : 1, bad ? 1 : 0);
    return bad != 0;
}
