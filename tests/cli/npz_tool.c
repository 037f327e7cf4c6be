/* npz_tool.c: .npz helpers for the CLI tests, on libkiln_runtime alone.
 *
 *   npz_tool pick IN.npz OUT.npz NAME...   OUT holds IN's members NAME...,
 *                                          stored (no zlib needed to read it)
 *   npz_tool compare GOT.npz REF.npz RTOL  every float member of REF against
 *                                          GOT's member of that name
 *
 * compare prints, per member, the largest |got - ref| and that divided by
 * the largest |ref| (the difference relative to the output's scale), and
 * fails (exit 1) if the relative difference is above RTOL or a member is
 * missing or differs in shape. Exit 2 on bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/runtime.h"

static int usage(void) {
    fprintf(stderr, "usage: npz_tool pick IN.npz OUT.npz NAME...\n"
                    "       npz_tool compare GOT.npz REF.npz RTOL\n");
    return 2;
}

static int pick(int argc, char **argv) {
    if (argc < 5)
        return usage();
    kiln_npz *in = kiln_npz_load(argv[2]), *out = kiln_npz_new();
    int rc = !in || !out;
    for (int i = 4; i < argc && !rc; i++) {
        const kiln_ndarray *a = kiln_npz_get(in, argv[i]);
        if (!a) {
            fprintf(stderr, "npz_tool: %s has no member '%s'\n", argv[2], argv[i]);
            rc = 1;
        } else {
            rc = kiln_npz_add(out, argv[i], a) != KILN_OK;
        }
    }
    if (!rc)
        rc = kiln_npz_save(out, argv[3], 0) != KILN_OK;
    if (rc && *kiln_last_error())
        fprintf(stderr, "npz_tool: %s\n", kiln_last_error());
    kiln_npz_free(in);
    kiln_npz_free(out);
    return rc;
}

static int same_shape(const kiln_ndarray *a, const kiln_ndarray *b) {
    if (kiln_ndarray_ndim(a) != kiln_ndarray_ndim(b))
        return 0;
    for (int d = 0; d < kiln_ndarray_ndim(a); d++)
        if (kiln_ndarray_dim(a, d) != kiln_ndarray_dim(b, d))
            return 0;
    return kiln_ndarray_dtype(a) == kiln_ndarray_dtype(b);
}

static int compare(int argc, char **argv) {
    if (argc != 5)
        return usage();
    char *end;
    double rtol = strtod(argv[4], &end);
    if (*end || !(rtol >= 0))
        return usage();
    kiln_npz *got = kiln_npz_load(argv[2]), *ref = got ? kiln_npz_load(argv[3]) : NULL;
    if (!got || !ref) {
        fprintf(stderr, "npz_tool: %s\n", kiln_last_error());
        kiln_npz_free(got);
        return 1;
    }
    int rc = 0, compared = 0;
    for (int i = 0; i < kiln_npz_count(ref); i++) {
        const char *name = kiln_npz_name(ref, i);
        const kiln_ndarray *r = kiln_npz_array(ref, i), *g = kiln_npz_get(got, name);
        if (kiln_ndarray_dtype(r) != KILN_FLOAT32)
            continue;
        if (!g || !same_shape(g, r) || !kiln_ndarray_is_contiguous(g) ||
            !kiln_ndarray_is_contiguous(r)) {
            fprintf(stderr, "npz_tool: %s: '%s' is missing or differs in shape or dtype\n", argv[2],
                    name);
            rc = 1;
            continue;
        }
        const float *gp = kiln_ndarray_data(g), *rp = kiln_ndarray_data(r);
        double maxdiff = 0, scale = 0;
        int64_t n = kiln_ndarray_numel(r), nonfinite = 0;
        for (int64_t k = 0; k < n; k++) {
            if (!isfinite(gp[k]) || !isfinite(rp[k])) {
                nonfinite += !(isnan(gp[k]) && isnan(rp[k])) && gp[k] != rp[k];
                continue;
            }
            double d = fabs((double)gp[k] - (double)rp[k]);
            if (d > maxdiff)
                maxdiff = d;
            if (fabs((double)rp[k]) > scale)
                scale = fabs((double)rp[k]);
        }
        double rel = scale > 0 ? maxdiff / scale : maxdiff;
        int ok = rel <= rtol && !nonfinite;
        printf("%s: %s %lld values, max |diff| %.3g, max |ref| %.3g, relative %.3g%s\n",
               ok ? "ok" : "FAIL", name, (long long)n, maxdiff, scale, rel,
               nonfinite ? " (non-finite values differ)" : "");
        rc |= !ok;
        compared++;
    }
    if (!compared) {
        fprintf(stderr, "npz_tool: %s has no float32 member to compare\n", argv[3]);
        rc = 1;
    }
    kiln_npz_free(got);
    kiln_npz_free(ref);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return usage();
    if (!strcmp(argv[1], "pick"))
        return pick(argc, argv);
    if (!strcmp(argv[1], "compare"))
        return compare(argc, argv);
    return usage();
}
