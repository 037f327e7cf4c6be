/* onnx_shapes.c: the one parser of tvmc's --input-shapes syntax,
 * "name:[d0,d1,...],other:[...]" ("x:[]" is a scalar), used by the importer
 * and, through kiln_onnx_check_input_shapes, by the CLI before it imports.
 * A dimension is a whole number from 0 to INT64_MAX: a sign, trailing
 * junk, strtoll's ERANGE (a huge number would silently become INT64_MAX),
 * more than KILN_MAX_NDIM dimensions or an element count past int64 are
 * errors naming the input and the dimension. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/onnx.h"
#include "onnx_import.h"

kiln_status onnx_shapes_parse(const char *spec, onnx_shape_fn fn, void *user) {
    const char *p = spec ? spec : "";
    while (*p) {
        const char *colon = strstr(p, ":[");
        const char *close = colon ? strchr(colon, ']') : NULL;
        if (!colon || !close || colon == p)
            return kiln_set_error(KILN_ERR_INVALID,
                                  "--input-shapes: '%.200s' is not name:[d0,d1,...]", p);
        size_t nlen = (size_t)(colon - p);
        int pn = nlen > 100 ? 100 : (int)nlen, nd = 0;
        int64_t dims[KILN_MAX_NDIM], count = 1;
        char symbuf[KILN_MAX_NDIM][64];
        const char *syms[KILN_MAX_NDIM];
        for (const char *q = colon + 2; q < close;) {
            while (*q == ' ')
                q++;
            const char *e = q;
            while (e < close && *e != ',')
                e++;
            const char *t = e;
            while (t > q && t[-1] == ' ')
                t--;
            int len = (int)(t - q) > 100 ? 100 : (int)(t - q);
            if (len == 0 && e == close && nd == 0)
                break; /* "x:[]", a scalar */
            char num[128], *end = num;
            snprintf(num, sizeof num, "%.*s", len, q);
            if (graph_is_size_name(num, sizeof num)) {
                /* a name: the dim is symbolic, a size the package takes when it runs */
                if (nd >= KILN_MAX_NDIM)
                    return kiln_set_error(KILN_ERR_INVALID,
                                          "--input-shapes: input '%.*s' has more than %d "
                                          "dimensions",
                                          pn, p, KILN_MAX_NDIM);
                if (len > 63)
                    return kiln_set_error(KILN_ERR_INVALID,
                                          "--input-shapes: input '%.*s': the dim name '%s' is "
                                          "longer than 63 characters",
                                          pn, p, num);
                snprintf(symbuf[nd], sizeof symbuf[nd], "%.63s", num);
                syms[nd] = symbuf[nd];
                dims[nd++] = -1;
                q = e < close ? e + 1 : e;
                continue;
            }
            errno = 0;
            long long v = *num >= '0' && *num <= '9' ? strtoll(num, &end, 10) : 0;
            const char *why = NULL;
            if (*num == '-')
                why = "is negative";
            else if (!(*num >= '0' && *num <= '9') || *end)
                why = "is not a whole number or a name";
            else if (errno == ERANGE)
                why = "is out of range (more than 9223372036854775807)";
            else if (nd >= KILN_MAX_NDIM)
                why = "is past the most dimensions an input may have (16)";
            else if (v && count > INT64_MAX / v)
                why = "makes the input's element count overflow 64 bits";
            if (why)
                return kiln_set_error(KILN_ERR_INVALID,
                                      "--input-shapes: input '%.*s': dimension '%s' %s", pn, p,
                                      len ? num : "", why);
            syms[nd] = NULL;
            dims[nd++] = v;
            count *= v;
            q = e < close ? e + 1 : e;
        }
        if (fn) {
            kiln_status st = fn(p, nlen, nd, dims, syms, user);
            if (st)
                return st;
        }
        p = close + 1;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return KILN_OK;
}

kiln_status kiln_onnx_check_input_shapes(const char *spec) {
    return onnx_shapes_parse(spec, NULL, NULL);
}
