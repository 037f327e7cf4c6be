/* runtime_only.c: a deployed program outside kiln's tree, linked with the
 * installed libkiln_runtime alone: loads the module vadd.c saved (argv[1])
 * and calls it. */
#include <stdio.h>

#include "kiln/runtime.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: runtime_only MODULE.so\n");
        return 2;
    }
    kiln_module *m = kiln_module_load(argv[1]);
    kiln_function *f = m ? kiln_module_get_function(m, "vadd") : NULL;
    if (!f) {
        fprintf(stderr, "runtime_only: %s\n", kiln_last_error());
        return 1;
    }
    int64_t len = 37;
    kiln_ndarray *arr[3];
    for (int k = 0; k < 3; k++)
        arr[k] = kiln_ndarray_empty(KILN_FLOAT32, 1, &len);
    float *pa = kiln_ndarray_data(arr[0]), *pb = kiln_ndarray_data(arr[1]);
    for (int64_t i = 0; i < len; i++) {
        pa[i] = 2.0f * (float)i;
        pb[i] = -1.0f;
    }
    if (kiln_function_call(f, 3, arr)) {
        fprintf(stderr, "runtime_only: %s\n", kiln_last_error());
        return 1;
    }
    const float *pc = kiln_ndarray_data(arr[2]);
    for (int64_t i = 0; i < len; i++)
        if (pc[i] != 2.0f * (float)i - 1.0f) {
            fprintf(stderr, "runtime_only: C[%lld] = %g\n", (long long)i, pc[i]);
            return 1;
        }
    for (int k = 0; k < 3; k++)
        kiln_ndarray_free(arr[k]);
    kiln_module_free(m);
    printf("runtime_only: loaded and called the saved module\n");
    return 0;
}
