/* fuzz_flags.c: libFuzzer target for the strings a user types on the
 * command line. The input is split at its first two newlines:
 *
 *   line 1  a target string, as --target and $KILN_TARGET take it
 *           ("llvm -mcpu=znver3 -mattr=+avx2"): kiln_target_parse
 *   line 2  an --input-shapes string ("x:[1,3],y:[1,7]") applied by the
 *           importer to a fixed model with two inputs of symbolic dims, and
 *           checked alone (kiln_onnx_check_input_shapes, what the CLI calls):
 *           a value the check refuses must not import
 *   line 3  a thread count, as KILN_NUM_THREADS gives it
 *           (kiln_num_threads_parse: 1 to 1024 or an error)
 *
 * and checks that a target that parses prints a string that parses again to
 * the same string, and that its queries (features, caches, vectors) answer
 * for any target. Everything is freed, so LeakSanitizer sees a leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_import.h"
#include "frontend/onnx_load.h"
#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "kiln/target.h"

#define FUZZ_MAX_INPUT 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Add(x: float[N,3], y: float[1,M]) -> z, opset 13 (onnx.helper). */
static const uint8_t k_model[] = {
    0x08, 0x08, 0x3a, 0x4a, 0x0a, 0x0e, 0x0a, 0x01, 0x78, 0x0a, 0x01, 0x79, 0x12, 0x01,
    0x7a, 0x22, 0x03, 0x41, 0x64, 0x64, 0x12, 0x01, 0x67, 0x5a, 0x14, 0x0a, 0x01, 0x78,
    0x12, 0x0f, 0x0a, 0x0d, 0x08, 0x01, 0x12, 0x09, 0x0a, 0x03, 0x12, 0x01, 0x4e, 0x0a,
    0x02, 0x08, 0x03, 0x5a, 0x14, 0x0a, 0x01, 0x79, 0x12, 0x0f, 0x0a, 0x0d, 0x08, 0x01,
    0x12, 0x09, 0x0a, 0x02, 0x08, 0x01, 0x0a, 0x03, 0x12, 0x01, 0x4d, 0x62, 0x09, 0x0a,
    0x01, 0x7a, 0x12, 0x04, 0x0a, 0x02, 0x08, 0x01, 0x42, 0x04, 0x0a, 0x00, 0x10, 0x0d};

/* Copy [p, p+n) into a NUL-terminated string (the fuzzer's bytes are not). */
static char *dup_n(const uint8_t *p, size_t n) {
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

static void target_string(const char *text) {
    kiln_target *t = kiln_target_parse(text);
    if (!t)
        return;
    char *printed = strdup(kiln_target_str(t));
    kiln_target *again = printed ? kiln_target_parse(printed) : NULL;
    if (!again || strcmp(kiln_target_str(again), printed) != 0)
        abort(); /* a target kiln prints must read back as itself */
    free(kiln_target_features(t));
    for (int level = 1; level <= 3; level++)
        (void)kiln_target_cache_bytes(t, level);
    (void)kiln_target_vector_bits(t);
    (void)kiln_target_vector_registers(t);
    (void)kiln_target_has(t, "avx2");
    kiln_target_free(again);
    kiln_target_free(t);
    free(printed);
}

static void shapes_string(const char *shapes) {
    static onnx_model *m;
    if (!m)
        m = onnx_model_parse(k_model, sizeof k_model, "flags.onnx", NULL);
    if (!m)
        abort(); /* the fixed model always parses */
    int refused = kiln_onnx_check_input_shapes(shapes) != KILN_OK;
    kiln_graph *g = onnx_import_model(m, "flags.onnx", shapes, 0);
    if (g && refused)
        abort(); /* the CLI's check and the importer share one parser */
    kiln_graph_free(g);
}

static void threads_string(const char *s) {
    int n = 0;
    if (kiln_num_threads_parse(s, &n) == KILN_OK && (n < 1 || n > 1024))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT)
        return 0;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t n1 = nl ? (size_t)(nl - data) : size;
    char *line1 = dup_n(data, n1);
    const uint8_t *rest = nl ? nl + 1 : data + size;
    size_t nrest = (size_t)(data + size - rest);
    const uint8_t *nl2 = memchr(rest, '\n', nrest);
    char *line2 = dup_n(rest, nl2 ? (size_t)(nl2 - rest) : nrest);
    char *line3 = nl2 ? dup_n(nl2 + 1, (size_t)(data + size - (nl2 + 1))) : NULL;
    if (line1)
        target_string(line1);
    if (line2 && nl)
        shapes_string(line2);
    if (line3)
        threads_string(line3);
    free(line1);
    free(line2);
    free(line3);
    return 0;
}
