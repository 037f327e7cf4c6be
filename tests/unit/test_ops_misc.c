/* test_ops_misc.c: text.tfidf (src/ops/text.c) and det (linalg.c) past what
 * the node tests (Debian's, and kiln's own in tests/data/misc_nodes) reach:
 * every relation error; and the importer's errors for TfIdfVectorizer,
 * RoiAlign and Det models that break a rule (tests/data/misc_bad, written by
 * make_misc_node_tests.py), each naming the node. image.roi_align's relation
 * errors are with the other image ops (test_ops_image.c); its batch index
 * and text.tfidf's starts out of range are KILN_ERR_RANGE
 * (test_ops_index.c). */
#include "check.h"
#include "graph/graph_internal.h"
#include "kiln/graph.h"
#include "kiln/onnx.h"
#include "onnx_util.h"
#include "op_util.h"

static void test_relation_errors(void) {
    const char *tf = "text.tfidf";
    ot_expect_error(tf, NULL, 3, T(F32(2, 5), I64(3, 3), I64(3)),
                    "needs int32 or int64 tokens [C] or [N, C], not 2-D float32");
    ot_expect_error(tf, NULL, 3, T(I64(2, 2, 5), I64(3, 3), I64(3)),
                    "needs int32 or int64 tokens [C] or [N, C], not 3-D int64");
    ot_expect_error(tf, NULL, 3, T(I64(5), I32(3, 3), I64(3)),
                    "the n-grams must be int64 [J >= 1, 1 + L >= 2]");
    ot_expect_error(tf, NULL, 3, T(I64(5), I64(3, 1), I64(3)),
                    "the n-grams must be int64 [J >= 1, 1 + L >= 2]");
    ot_expect_error(tf, NULL, 3, T(I64(5), I64(0, 3), I64(3)),
                    "the n-grams must be int64 [J >= 1, 1 + L >= 2]");
    ot_expect_error(tf, NULL, 3, T(I64(5), I64(3, 3), I64(3, 1)),
                    "the starts must be int64 [O + 1]");
    ot_expect_error(tf, NULL, 4, T(I64(5), I64(3, 3), I64(3), F32(3)),
                    "the weights must be float32 [2], one per output");
    ot_expect_error(tf, NULL, 4, T(I64(5), I64(3, 3), I64(3), I64(2)),
                    "the weights must be float32 [2], one per output");
    ot_expect_error(tf, "max_skip_count=-1", 3, T(I64(5), I64(3, 3), I64(3)),
                    "max_skip_count = -1 must not be negative");
    ot_expect_error(tf, "max_per_index=4", 3, T(I64(5), I64(3, 3), I64(3)),
                    "max_per_index = 4 must be 1 to the n-gram count 3");
    ot_expect_error(tf, "max_per_index=0", 3, T(I64(5), I64(3, 3), I64(3)),
                    "max_per_index = 0 must be 1 to the n-gram count 3");
    ot_expect_error(tf, "mode=\"BM25\"", 3, T(I64(5), I64(3, 3), I64(3)),
                    "mode 'BM25' is not one of TF, IDF, TFIDF");
    /* the last token an n-gram may reach is computed without overflow */
    ot_expect_error(tf, NULL, 3, T(I64(1, 1LL << 40), I64(2, 1LL << 24), I64(3)), "overflow int64");
    const char *det = "det";
    ot_expect_error(det, NULL, 1, T(F32(3)), "needs matrices [*, M, M], not a 1-D input");
    ot_expect_error(det, NULL, 1, T(F32(2, 3, 4)), "the matrices are 3 x 4, not square");
    ot_expect_error(det, NULL, 1, T(I32(3, 3)),
                    "needs float16, float32 or float64 matrices, not int32");
    ot_expect_error(det, NULL, 1, T(F32(1025, 1025)),
                    "1025 x 1025 matrices are larger than det supports (1024 x 1024)");
}

/* Models that break a rule of TfIdfVectorizer, RoiAlign or Det: each is
 * refused with an error naming the node, its op and opset. */
static void test_onnx_errors(void) {
    static const struct {
        const char *file, *op, *msg;
    } cases[] = {
        {"bad_tfidf_mode", "TfIdfVectorizer, opset 9",
         "attribute 'mode' = 'BM25' is not TF, IDF or TFIDF"},
        {"bad_tfidf_gram_lengths", "TfIdfVectorizer, opset 9",
         "the gram lengths 3 to 2 must be 1 <= min <= max"},
        {"bad_tfidf_skip_negative", "TfIdfVectorizer, opset 9",
         "max_skip_count = -1 must not be negative"},
        {"bad_tfidf_counts_start", "TfIdfVectorizer, opset 9",
         "ngram_counts[0] = 1: the 1-grams must start the pool at 0"},
        {"bad_tfidf_counts_falling", "TfIdfVectorizer, opset 9",
         "ngram_counts[1] = 3: the starts must rise from 0 to at most the pool's 4 tokens"},
        {"bad_tfidf_counts_span", "TfIdfVectorizer, opset 9",
         "the 2-grams take 3 tokens of the pool, not a multiple of 2"},
        {"bad_tfidf_indexes_count", "TfIdfVectorizer, opset 9",
         "ngram_indexes has 2 values, but the pool holds 3 n-grams"},
        {"bad_tfidf_index_negative", "TfIdfVectorizer, opset 9",
         "ngram_indexes[1] = -1 is out of range (0 to 2^48)"},
        {"bad_tfidf_weights_count", "TfIdfVectorizer, opset 9",
         "weights has 2 values, not one per n-gram (3)"},
        {"bad_tfidf_weight_missing", "TfIdfVectorizer, opset 9",
         "output index 5 has no weight: weights has 3 values"},
        {"bad_tfidf_strings", "TfIdfVectorizer, opset 9",
         "a pool of strings is not supported (kiln has no string tensors)"},
        {"bad_tfidf_float_tokens", "TfIdfVectorizer, opset 9",
         "needs int32 or int64 tokens [C] or [N, C], not 2-D float32"},
        {"bad_tfidf_3d_tokens", "TfIdfVectorizer, opset 9",
         "needs int32 or int64 tokens [C] or [N, C], not 3-D int32"},
        {"bad_roialign_mode", "RoiAlign, opset 16", "attribute 'mode' = 'sum'"},
        {"bad_roialign_coordinate_mode", "RoiAlign, opset 16",
         "attribute 'coordinate_transformation_mode' = 'asymmetric'"},
        {"bad_roialign_output_height", "RoiAlign, opset 16",
         "output_height and output_width must be 1 to 2^48, not 0 and 1"},
        {"bad_roialign_sampling_ratio", "RoiAlign, opset 16",
         "sampling_ratio = -1 must be 0 (adaptive) to 65536"},
        {"bad_roialign_rois_shape", "RoiAlign, opset 16",
         "the rois are [3, 5] for 3 batch indices"},
        {"bad_roialign_index_count", "RoiAlign, opset 16",
         "the rois are [3, 4] for 2 batch indices"},
        {"bad_roialign_3d", "RoiAlign, opset 16", "needs an input [N, C, H, W]"},
        {"bad_roialign_opset10_coordinate_mode", "RoiAlign, opset 10",
         "attribute 'coordinate_transformation_mode' is not an attribute of RoiAlign at opset 10"},
        {"bad_det_vector", "Det, opset 11", "needs matrices [*, M, M], not a 1-D input"},
        {"bad_det_not_square", "Det, opset 11", "the matrices are 3 x 4, not square"},
        {"bad_det_int", "Det, opset 11", "needs float16, float32 or float64 matrices, not int32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ou_expect_data_error("misc_bad", cases[i].file, cases[i].op, cases[i].msg);
}

TEST_MAIN(TEST(test_relation_errors), TEST(test_onnx_errors))
