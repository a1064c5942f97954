"""Rotary position embedding (onelayer.rope): its formulas, its two pairings, and Hugging Face's."""

import math

import pytest
import torch

from onelayer import reference
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.rope import (
    apply_rope,
    apply_rope_interleaved,
    interleaved_to_half,
    rope_angles,
    rope_frequencies,
    rotate_half,
)

GEN = torch.Generator().manual_seed(0)
X = torch.randn(2, 3, 7, 8, generator=GEN)           # [B, heads, T, d_head]
POSITIONS = torch.arange(7)


def test_frequencies_follow_the_formula():
    omega = rope_frequencies(8, theta=10000.0)
    expected = [10000.0 ** (-2 * j / 8) for j in range(4)]     # ω_j = θ^(−2j/d_head)
    assert omega.shape == (4,) and omega[0] == 1.0
    assert torch.allclose(omega.double(), torch.tensor(expected, dtype=torch.float64),
                          rtol=1e-6, atol=0)
    assert torch.all(omega[1:] < omega[:-1])                    # 越往后的一对转得越慢


def test_angles_repeat_for_the_two_halves_and_start_at_zero():
    cos, sin = rope_angles(POSITIONS, 8, theta=100.0)
    assert cos.shape == sin.shape == (7, 8)
    assert torch.equal(cos[:, :4], cos[:, 4:]) and torch.equal(sin[:, :4], sin[:, 4:])
    assert torch.equal(cos[0], torch.ones(8)) and torch.equal(sin[0], torch.zeros(8))
    angle = 3 * 100.0 ** (-2 / 8)                               # t = 3，第 j = 1 对
    assert cos[3, 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert sin[3, 5].item() == pytest.approx(math.sin(angle), abs=1e-6)


def test_rotate_half_and_a_worked_rotation():
    assert torch.equal(rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])),
                       torch.tensor([-3.0, -4.0, 1.0, 2.0]))    # (a, b) → (−b, a)
    # d_head = 2: one pair, ω_0 = 1, so position t turns (1, 0) by t radians
    cos, sin = rope_angles(torch.tensor([0, 1, 2]), 2)
    turned = apply_rope(torch.tensor([1.0, 0.0]).expand(3, 2), cos, sin)
    t = torch.arange(3.0)
    assert torch.allclose(turned, torch.stack([t.cos(), t.sin()], dim=-1), atol=1e-6)


def test_position_zero_is_left_alone():
    cos, sin = rope_angles(torch.zeros(7, dtype=torch.long), 8)
    assert torch.equal(apply_rope(X, cos, sin), X)


def test_rotation_keeps_the_length_of_every_pair():
    rotated = apply_rope(X, *rope_angles(POSITIONS, 8))
    pair_norms = [(v[..., :4] ** 2 + v[..., 4:] ** 2).sqrt() for v in (X, rotated)]  # (j, j+4)
    assert (pair_norms[0] - pair_norms[1]).abs().max().item() < 1e-6


def test_score_depends_only_on_the_distance():
    # q at position m, k at position n: q_m·k_n after the rotation is a function of m − n
    q, k = torch.randn(2, 16, generator=GEN).unbind(0)
    q, k = q / q.norm(), k / k.norm()

    def score(m, n):
        cos, sin = rope_angles(torch.tensor([m, n]), 16)
        qm = apply_rope(q.expand(2, 16), cos, sin)[0]
        kn = apply_rope(k.expand(2, 16), cos, sin)[1]
        return (qm @ kn).item()

    for m, n in ((5, 2), (2, 5), (9, 9)):
        base = score(m, n)
        for shift in (1, 7, 30):
            assert abs(score(m + shift, n + shift) - base) < 1e-5
    assert abs(score(5, 2) - score(5, 3)) > 1e-3                   # 距离变了，分数就变


def test_interleaved_pairing_is_the_half_split_up_to_a_permutation():
    perm = interleaved_to_half(8)
    assert perm.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    cos, sin = rope_angles(POSITIONS, 8)
    half = apply_rope(X[..., perm], cos, sin)
    interleaved = apply_rope_interleaved(X, POSITIONS)
    assert (half - interleaved[..., perm]).abs().max().item() < 1e-6
    assert (apply_rope(X, cos, sin) - interleaved).abs().max().item() > 1e-2   # 配对不同
    # the paper's pairs are adjacent: position 1 turns (x_0, x_1) by ω_0 = 1 radian
    e0 = torch.zeros(2, 8)
    e0[:, 0] = 1.0
    turned = apply_rope_interleaved(e0, torch.tensor([0, 1]))
    assert torch.allclose(turned[1, :2], torch.tensor([math.cos(1), math.sin(1)]), atol=1e-6)
    assert torch.equal(turned[1, 2:], torch.zeros(6))


def test_apply_rope_equals_transformers_apply_rotary_pos_emb():
    pytest.importorskip("transformers")
    from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

    q, k = X, torch.randn(2, 3, 7, 8, generator=GEN)
    cos, sin = rope_angles(POSITIONS, 8)
    theirs = apply_rotary_pos_emb(q, k, cos[None], sin[None])      # cos [1, T, d_head]
    assert torch.equal(apply_rope(q, cos, sin), theirs[0])
    assert torch.equal(apply_rope(k, cos, sin), theirs[1])


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3"])
def test_angles_equal_the_rotary_module_of_transformers(family):
    pytest.importorskip("transformers")
    block = TransformerBlock(BlockConfig(d_model=32, n_heads=2, rope_theta=500.0))
    x = torch.zeros(1, 12, 32)
    cos, sin = rope_angles(torch.arange(12), 16, theta=500.0)
    theirs = reference.rotary_position_embeddings(block, x, family)
    err = max((ours - t[0]).abs().max().item() for ours, t in zip((cos, sin), theirs))
    print(f"{family} rotary (cos, sin) vs rope_angles: max error {err:.1e}")
    assert err <= 1e-6


@pytest.mark.parametrize(("call", "message"), [
    (lambda: rope_frequencies(7), "d_head 应为偶数，实际为 7"),
    (lambda: rope_frequencies(0), "d_head 应为正整数"),
    (lambda: rope_frequencies(8, theta=0.0), "rope_theta 应为正数，实际为 0.0"),
    (lambda: rope_frequencies(8, theta=-1), "rope_theta 应为正数"),
    (lambda: rope_angles(torch.zeros(2, 3), 8), r"positions 应为一维张量 \[T\]"),
    (lambda: rotate_half(torch.zeros(3, 5)), "d_head 应为偶数，实际为 5"),
    (lambda: apply_rope(X, *rope_angles(torch.arange(6), 8)),
     r"x 为 \[2, 3, 7, 8\]，cos 为 \[6, 8\]"),
    (lambda: apply_rope(X, *rope_angles(POSITIONS, 4)), r"cos 为 \[7, 4\]"),
    (lambda: apply_rope_interleaved(X, torch.arange(5)), r"positions 为 \[5\]"),
    (lambda: apply_rope_interleaved(X[..., :7], POSITIONS), "d_head 应为偶数，实际为 7"),
    (lambda: interleaved_to_half(3), "d_head 应为偶数"),
])
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_rotary_peer_needs_a_rotating_block():
    pytest.importorskip("transformers")
    with pytest.raises(ValueError, match="rotary_position_embeddings 要求旋转位置编码"):
        reference.rotary_position_embeddings(TransformerBlock(BlockConfig(d_model=8, n_heads=2)),
                                             torch.zeros(1, 3, 8))
