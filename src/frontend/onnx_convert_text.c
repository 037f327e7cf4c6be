/* onnx_convert_text.c: TfIdfVectorizer, the one text op, converted to
 * text.tfidf (src/ops/text.c). The node's pool of n-grams is checked here,
 * where a bad attribute can name the node, and laid out as the constants
 * text.tfidf reads: the n-grams sorted by output index, and where each
 * output's n-grams start. Tokens are integers: kiln has no string tensors,
 * so pool_strings is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_convert.h"

#define AT_INTS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
#define AT_FLOATS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
#define AT_STRINGS ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS

/* One n-gram of the pool: where its tokens start, its length, its output. */
typedef struct {
    int64_t at, n, index;
} pool_gram;

static int by_index(const void *pa, const void *pb) {
    const pool_gram *a = pa, *b = pb;
    return a->index < b->index ? -1 : a->index > b->index ? 1 : (a->at > b->at) - (a->at < b->at);
}

/* The n-grams of the pool: group k of ngram_counts holds the (k+1)-grams,
 * from its start to the next group's (the last to the pool's end). Writes
 * *grams (malloc'd, j entries) and the count; -1 with an error. */
static int64_t pool_grams(imp *I, const Onnx__NodeProto *n, const Onnx__AttributeProto *counts,
                          const Onnx__AttributeProto *indexes, int64_t pool, pool_gram **grams) {
    int64_t total = 0;
    size_t k = counts->n_ints;
    if (k < 1)
        return imp_fail(I, n, "ngram_counts is empty");
    if (counts->ints[0] != 0)
        return imp_fail(I, n, "ngram_counts[0] = %lld: the 1-grams must start the pool at 0",
                        (long long)counts->ints[0]);
    for (size_t g = 0; g < k; g++) {
        int64_t s = counts->ints[g], e = g + 1 < k ? counts->ints[g + 1] : pool;
        if (s < 0 || s > e || e > pool)
            return imp_fail(I, n,
                            "ngram_counts[%zu] = %lld: the starts must rise from 0 to at most "
                            "the pool's %lld tokens",
                            g, (long long)s, (long long)pool);
        if ((e - s) % (int64_t)(g + 1))
            return imp_fail(I, n,
                            "the %zu-grams take %lld tokens of the pool, not a multiple of %zu",
                            g + 1, (long long)(e - s), g + 1);
        total += (e - s) / (int64_t)(g + 1);
    }
    if (indexes->n_ints != (size_t)total)
        return imp_fail(I, n, "ngram_indexes has %zu values, but the pool holds %lld n-grams",
                        indexes->n_ints, (long long)total);
    if (total == 0)
        return imp_fail(I, n, "the pool holds no n-gram");
    *grams = malloc(sizeof(pool_gram) * (size_t)total);
    if (!*grams)
        return imp_fail(I, n, "out of memory");
    int64_t j = 0;
    for (size_t g = 0; g < k; g++) {
        int64_t s = counts->ints[g], e = g + 1 < k ? counts->ints[g + 1] : pool;
        for (int64_t at = s; at < e; at += (int64_t)(g + 1), j++) {
            int64_t idx = indexes->ints[j];
            if (idx < 0 || idx >= GRAPH_MAX_ELEMENTS) {
                free(*grams);
                return imp_fail(I, n, "ngram_indexes[%lld] = %lld is out of range (0 to 2^48)",
                                (long long)j, (long long)idx);
            }
            (*grams)[j] = (pool_gram){at, (int64_t)(g + 1), idx};
        }
    }
    return total;
}

/* The constants of text.tfidf from the pool's n-grams (sorted by output):
 * the n-grams [J, 1 + L] (those outside the gram lengths get length 0 and
 * never count), the starts [O + 1]; the most n-grams of one output. */
static int tfidf_tables(imp *I, const Onnx__NodeProto *n, const pool_gram *gr, int64_t j,
                        const int64_t *pool, int64_t lo, int64_t hi, int64_t o, int ids[2],
                        int64_t *per) {
    int64_t len = 1;
    for (int64_t q = 0; q < j; q++)
        if (gr[q].n >= lo && gr[q].n <= hi && gr[q].n > len)
            len = gr[q].n;
    int64_t gd[2] = {j, 1 + len}, sd = o + 1;
    kiln_ndarray *g = kiln_ndarray_empty(KILN_INT64, 2, gd),
                 *s = g ? kiln_ndarray_empty(KILN_INT64, 1, &sd) : NULL;
    if (!s) {
        kiln_ndarray_free(g);
        return imp_fail(I, n, "%s", kiln_last_error());
    }
    int64_t *gv = kiln_ndarray_data(g), *sv = kiln_ndarray_data(s);
    memset(gv, 0, sizeof(int64_t) * (size_t)(j * (1 + len)));
    *per = 1;
    for (int64_t q = 0, c = 0; c <= o; c++) { /* outputs c: the n-grams from q on */
        sv[c] = q;
        int64_t q0 = q;
        for (; q < j && gr[q].index == c; q++) {
            int keep = gr[q].n >= lo && gr[q].n <= hi;
            gv[q * (1 + len)] = keep ? gr[q].n : 0;
            for (int64_t t = 0; keep && t < gr[q].n; t++)
                gv[q * (1 + len) + 1 + t] = pool[gr[q].at + t];
        }
        if (q - q0 > *per)
            *per = q - q0;
    }
    char nm[256];
    snprintf(nm, sizeof nm, "%s.ngrams", n->name);
    ids[0] = imp_add_const(I, nm, g);
    snprintf(nm, sizeof nm, "%s.starts", n->name);
    ids[1] = imp_add_const(I, nm, s);
    return ids[0] >= 0 && ids[1] >= 0 ? 0 : imp_fail(I, n, "%s", kiln_last_error());
}

/* TfIdfVectorizer: X [C] or [N, C] of int32 or int64 tokens. */
int cvt_tfidf(imp *I, const Onnx__NodeProto *n, int *outs) {
    char buf[16];
    const char *mode = imp_attr_str(I, n, "mode", "", buf, sizeof buf);
    if (strcmp(mode, "TF") && strcmp(mode, "IDF") && strcmp(mode, "TFIDF"))
        return imp_fail(I, n, "attribute 'mode' = '%s' is not TF, IDF or TFIDF", mode);
    if (imp_attr(I, n, "pool_strings", AT_STRINGS))
        return imp_fail(I, n, "a pool of strings is not supported (kiln has no string tensors)");
    const Onnx__AttributeProto *pool = imp_attr(I, n, "pool_int64s", AT_INTS),
                               *counts = imp_attr(I, n, "ngram_counts", AT_INTS),
                               *indexes = imp_attr(I, n, "ngram_indexes", AT_INTS),
                               *weights = imp_attr(I, n, "weights", AT_FLOATS);
    if (!pool)
        return imp_fail(I, n, "needs the pool_int64s attribute");
    int64_t lo = imp_attr_int(I, n, "min_gram_length", 0),
            hi = imp_attr_int(I, n, "max_gram_length", 0),
            skip = imp_attr_int(I, n, "max_skip_count", 0);
    if (lo < 1 || hi < lo)
        return imp_fail(I, n, "the gram lengths %lld to %lld must be 1 <= min <= max",
                        (long long)lo, (long long)hi);
    if (skip < 0)
        return imp_fail(I, n, "max_skip_count = %lld must not be negative", (long long)skip);
    pool_gram *gr = NULL;
    int64_t j = pool_grams(I, n, counts, indexes, (int64_t)pool->n_ints, &gr);
    if (j < 0)
        return -1;
    qsort(gr, (size_t)j, sizeof *gr, by_index);
    int64_t o = gr[j - 1].index + 1, per = 1;
    /* ONNX Runtime: one weight per n-gram, applied by output index */
    if (weights && weights->n_floats != (size_t)j) {
        free(gr);
        return imp_fail(I, n, "weights has %zu values, not one per n-gram (%lld)",
                        weights->n_floats, (long long)j);
    }
    if (weights && o > j) {
        free(gr);
        return imp_fail(I, n,
                        "output index %lld has no weight: weights has %lld values (one per "
                        "output index)",
                        (long long)o - 1, (long long)j);
    }
    int in[4] = {imp_input(I, n, 0), -1, -1, -1};
    int rc = tfidf_tables(I, n, gr, j, pool->ints, lo, hi, o, in + 1, &per);
    free(gr);
    if (rc < 0)
        return -1;
    if (weights) {
        kiln_ndarray *w = kiln_ndarray_empty(KILN_FLOAT32, 1, &o);
        if (!w)
            return imp_fail(I, n, "%s", kiln_last_error());
        memcpy(kiln_ndarray_data(w), weights->floats, sizeof(float) * (size_t)o);
        char nm[256];
        snprintf(nm, sizeof nm, "%s.weights", n->name);
        if ((in[3] = imp_add_const(I, nm, w)) < 0)
            return imp_fail(I, n, "%s", kiln_last_error());
    }
    char attrs[160];
    snprintf(attrs, sizeof attrs, "max_skip_count=%lld, max_per_index=%lld, mode=\"%s\"",
             (long long)skip, (long long)per, mode);
    return outs[0] = imp_call(I, n, "text.tfidf", weights ? 4 : 3, in, attrs);
}
