/* test_frontend_onnx_rnn.c: the importer's errors for RNN, GRU, LSTM and
 * Einsum models (tests/data/rnn_bad, written by make_rnn_node_tests.py):
 * malformed equations, unknown activations, wrong weight shapes and the
 * bound on the steps a recurrent node unrolls. Their results are checked
 * by the node tests (Debian's, and kiln's own in tests/data/rnn_nodes). */
#include "check.h"
#include "onnx_util.h"

static void test_onnx_errors(void) {
    static const struct {
        const char *file, *op, *msg;
    } cases[] = {
        {"bad_einsum_terms", "Einsum, opset 12",
         "equation 'ij,jk->ik' has more terms than the 1 inputs"},
        {"bad_einsum_char", "Einsum, opset 12", "equation 'i$->i': term 0 is malformed"},
        {"bad_einsum_two_ellipses", "Einsum, opset 12", "term 0 is malformed"},
        {"bad_einsum_rank", "Einsum, opset 12", "term 0 has 3 indices, input 0 is 2-D"},
        {"bad_einsum_output", "Einsum, opset 12", "output index 1 is repeated or in no input"},
        {"bad_einsum_output_twice", "Einsum, opset 12",
         "output index 1 is repeated or in no input"},
        {"bad_einsum_dims", "Einsum, opset 12", "an index has dims 3 and 4"},
        {"bad_einsum_diagonal_dims", "Einsum, opset 12", "an index has dims 2 and 3"},
        {"bad_rnn_steps", "RNN, opset 14",
         "5000 time steps times 1 direction(s) is more than the 4096 steps"},
        {"bad_rnn_bidirectional_steps", "RNN, opset 14",
         "2049 time steps times 2 direction(s) is more than the 4096 steps"},
        {"bad_rnn_activation", "RNN, opset 14", "activation 'Gelu' is not supported"},
        {"bad_rnn_activation_count", "RNN, opset 14",
         "attribute 'activations' has 1 names, 2 expected"},
        {"bad_rnn_direction", "RNN, opset 14",
         "attribute 'direction' = 'sideways' is not forward, reverse or bidirectional"},
        {"bad_rnn_hidden_size", "RNN, opset 14", "hidden_size 3 does not match R's last dim 2"},
        {"bad_rnn_layout", "RNN, opset 14", "attribute 'layout' must be 0 or 1, not 2"},
        {"bad_rnn_clip", "RNN, opset 14", "attribute 'clip' must be positive and finite"},
        {"bad_lstm_w_shape", "LSTM, opset 14", "input 1 ('W') has dim 1 of 7, 8 expected"},
        {"bad_gru_bias_shape", "GRU, opset 14", "input 3 ('B') has dim 1 of 5, 6 expected"},
        {"bad_rnn_x_rank", "RNN, opset 14", "input 0 ('X') must be a 3-D tensor of known dims"},
        {"bad_rnn_int_x", "RNN, opset 14", "X must be float32 or float64, not int32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ou_expect_data_error("rnn_bad", cases[i].file, cases[i].op, cases[i].msg);
}

TEST_MAIN(TEST(test_onnx_errors))
