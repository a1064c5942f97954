"""The seed articles' worked examples, recomputed: the book quotes these numbers."""

import torch

from onelayer import gelu, relu, trace_ffn
from onelayer.data import TOKENS, sentence_ffn, sentence_x, shown_w1_columns, tiny_example


def test_fish_scores_on_the_four_shown_detectors():
    x_fish = sentence_x()[TOKENS.index("鱼")]
    h = x_fish @ shown_w1_columns()
    assert torch.allclose(h, torch.tensor([0.25, -2.30, 0.64, 0.18]), atol=1e-6)


def test_gelu_vs_relu_table_of_seed_003():
    h = torch.tensor([0.25, -2.30, 0.64, 0.18])
    assert torch.allclose(gelu(h), torch.tensor([0.150, -0.025, 0.473, 0.103]), atol=5e-4)
    assert torch.equal(relu(h), torch.tensor([0.25, 0.0, 0.64, 0.18]))


def test_full_sentence_path_contains_the_hand_calculation():
    X = sentence_x()
    t = trace_ffn(sentence_ffn(), X)
    assert t.pre.shape == (3, 16) and t.out.shape == (3, 4)
    assert torch.allclose(t.pre[2, :4], X[2] @ shown_w1_columns())


def test_sentence_ffn_is_deterministic():
    X = sentence_x()
    assert torch.equal(trace_ffn(sentence_ffn(), X).out, trace_ffn(sentence_ffn(), X).out)


def test_tiny_example_of_seed_004():
    ex = tiny_example()
    pre = ex.x @ ex.w1 + ex.b1
    assert pre.tolist() == [5.0, 2.0, 0.0]
    assert (relu(pre) @ ex.w2 + ex.b2).item() == 3.5


def test_times_two_plus_three_times_four_is_8x_plus_12():
    x = torch.linspace(-3, 3, 13)
    assert torch.equal((x * 2 + 3) * 4, 8 * x + 12)
    assert not torch.equal((x * 2 + 3) * 4, 26 * x + 12)
