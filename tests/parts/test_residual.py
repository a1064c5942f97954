"""Residual connections and the norm arrangements around them (onelayer.residual)."""

import pytest
import torch
from torch import nn

from onelayer import FeedForward, residual
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.norms import LayerNorm
from onelayer.residual import Residual, residual_add


def test_residual_adds_the_input_back():
    torch.manual_seed(0)
    ffn = FeedForward(4, 16)
    x = torch.randn(2, 3, 4)
    with torch.no_grad():
        assert torch.equal(Residual(ffn)(x), x + ffn(x))


def test_jacobian_of_residual_is_identity_plus_jacobian_of_branch():
    torch.manual_seed(1)
    ffn = FeedForward(4, 16)
    x = torch.randn(4)
    jac_residual = torch.autograd.functional.jacobian(Residual(ffn), x)
    jac_branch = torch.autograd.functional.jacobian(ffn, x)
    assert torch.allclose(jac_residual, torch.eye(4) + jac_branch, atol=1e-6)
    assert not torch.allclose(jac_branch, torch.zeros(4, 4))


@pytest.mark.parametrize("fx_shape", [(3, 16), (3, 1), (4,)])
def test_shape_mismatch_is_a_value_error_naming_both_shapes(fx_shape):
    x = torch.zeros(3, 4)
    with pytest.raises(ValueError, match=r"x 为 \[3, 4\]，f\(x\) 为 \[" + str(fx_shape[0])):
        residual_add(x, torch.zeros(fx_shape))


def test_torch_alone_would_broadcast_the_mismatch_silently():
    x, fx = torch.zeros(3, 4), torch.ones(3, 1)
    assert (x + fx).shape == (3, 4)  # no error from torch: the reason residual_add checks
    with pytest.raises(ValueError):
        residual_add(x, fx)


def test_gpt2_block_is_two_residual_adds():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=1, n_embd=32, n_head=4, vocab_size=16, n_positions=8,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    torch.manual_seed(2)
    block = transformers.GPT2Model(config).eval().h[0]
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        h = residual_add(x, block.attn(block.ln_1(x))[0])
        ours = residual_add(h, block.mlp(block.ln_2(h)))
        theirs = block(x)
        theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert (ours - theirs).abs().max() < 1e-6


def attention_only_block(position: str, seed: int = 0) -> TransformerBlock:
    torch.manual_seed(seed)
    block = TransformerBlock(BlockConfig(d_model=8, n_heads=2, d_ff=0, norm_position=position))
    with torch.no_grad():  # γ, β away from 1, 0 so that a misplaced norm shows
        block.ln_1.weight.uniform_(0.5, 1.5)
        block.ln_1.bias.normal_()
    return block.eval()


@pytest.mark.parametrize("position", ["pre", "post"])
def test_one_line_arrangements_match_the_block(position):
    block = attention_only_block(position)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        ours = residual.norm_sublayer(x, block.attn, block.ln_1, position)
        assert torch.allclose(ours, block(x), atol=1e-6)
        flipped = "post" if position == "pre" else "pre"
        other = residual.norm_sublayer(x, block.attn, block.ln_1, flipped)
        assert (other - block(x)).abs().max() > 0.1


def test_post_norm_output_is_normalised_pre_norm_output_is_not():
    torch.manual_seed(0)
    f, ln = nn.Linear(6, 6), LayerNorm(6)
    x = torch.randn(4, 6) * 3 + 1
    with torch.no_grad():
        post, pre = residual.post_norm(x, f, ln), residual.pre_norm(x, f, ln)
    assert torch.allclose(post.mean(-1), torch.zeros(4), atol=1e-5)
    assert torch.allclose(post.var(-1, correction=0), torch.ones(4), atol=1e-3)
    assert (pre.var(-1, correction=0) - 1).abs().max() > 0.5


def test_bad_arguments_raise_clear_errors():
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match="position 应为"):
        residual.norm_sublayer(x, nn.Identity(), nn.Identity(), "middle")
    with pytest.raises(ValueError, match="形状相同"):
        residual.pre_norm(x, nn.Linear(4, 2), nn.Identity())
    with pytest.raises(ValueError, match="alpha 应 ≥ 1"):
        residual.deep_norm(x, nn.Identity(), nn.Identity(), alpha=0.5)
    with pytest.raises(ValueError, match="n_layers 应为正整数"):
        residual.deepnorm_constants(0)


def test_deep_norm_and_sandwich_reduce_to_the_two_arrangements():
    torch.manual_seed(1)
    f, ln, ln2 = nn.Linear(5, 5), LayerNorm(5), LayerNorm(5)
    x = torch.randn(3, 5)
    with torch.no_grad():
        assert torch.equal(residual.deep_norm(x, f, ln, alpha=1.0), residual.post_norm(x, f, ln))
        deeper = residual.deep_norm(x, f, ln, alpha=2.0)
        assert not torch.allclose(deeper, residual.post_norm(x, f, ln))
        sandwich = residual.sandwich_norm(x, f, ln, nn.Identity())
        assert torch.equal(sandwich, residual.pre_norm(x, f, ln))
        branch = residual.sandwich_norm(x, f, ln, ln2) - x      # the branch output is normalised
        assert torch.allclose(branch.mean(-1), torch.zeros(3), atol=1e-5)


def test_deepnorm_constants():
    for n in (1, 6, 1000):
        alpha, beta = residual.deepnorm_constants(n)
        assert alpha**4 == pytest.approx(2 * n) and beta**-4 == pytest.approx(8 * n)
        assert alpha > 1 > beta
