import pytest
import torch
from torch import nn

from onelayer import count_parameters, gated_d_ff
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.params import block_flops, block_parameter_breakdown


def gpt2_like(d: int, n_heads: int = 4) -> TransformerBlock:
    return TransformerBlock(BlockConfig(d_model=d, n_heads=n_heads, activation="gelu_tanh"))


def llama_like(d: int, d_ff: int, n_heads: int = 4) -> TransformerBlock:
    return TransformerBlock(BlockConfig(d_model=d, n_heads=n_heads, d_ff=d_ff, activation="silu",
                                        gated=True, norm="rmsnorm", bias=False, eps=1e-6))


@pytest.mark.parametrize("d", [8, 64, 768])
def test_gpt2_block_counts_match_the_formulas(d):
    with torch.device("meta"):  # no memory, no init time, even for d = 768
        block = gpt2_like(d)
    parts = block_parameter_breakdown(block)
    assert parts == {"attention": 4 * d * d + 4 * d, "ffn": 8 * d * d + 5 * d, "norms": 4 * d}
    assert sum(parts.values()) == count_parameters(block) == 12 * d * d + 13 * d


def test_llama_block_counts_match_the_formulas():
    d = 64
    d_ff = gated_d_ff(d, multiple_of=16)
    with torch.device("meta"):
        block = llama_like(d, d_ff)
    parts = block_parameter_breakdown(block)
    assert parts == {"attention": 4 * d * d, "ffn": 3 * d * d_ff, "norms": 2 * d}
    assert sum(parts.values()) == count_parameters(block)


def test_attention_only_block_has_no_ffn_part():
    block = TransformerBlock(BlockConfig(d_model=8, n_heads=2, d_ff=0))
    assert block_parameter_breakdown(block) == {"attention": 4 * 64 + 4 * 8, "ffn": 0,
                                                 "norms": 2 * 8}
    assert block_flops(block, 3)["ffn"] == 0


def test_frozen_parameters_are_not_counted():
    block = gpt2_like(8)
    block.ln_1.weight.requires_grad_(False)
    assert block_parameter_breakdown(block)["norms"] == 3 * 8


def test_flops_follow_the_counting_convention():
    d, t = 16, 10
    block = gpt2_like(d)
    flops = block_flops(block, t)
    assert flops == {"attention_proj": t * 2 * 4 * d * d, "attention_scores": 4 * t * t * d,
                     "ffn": t * 2 * 8 * d * d}
    # every weight of a linear layer is one multiply-add per token
    weights = sum(m.weight.numel() for m in block.modules() if isinstance(m, nn.Linear))
    assert flops["attention_proj"] + flops["ffn"] == 2 * t * weights
    # the score term grows as T², the rest as T
    double = block_flops(block, 2 * t)
    assert double["attention_scores"] == 4 * flops["attention_scores"]
    assert double["ffn"] == 2 * flops["ffn"]


def test_gated_ffn_flops_have_three_matrices():
    d, d_ff = 16, 40
    assert block_flops(llama_like(d, d_ff), 1)["ffn"] == 2 * 3 * d * d_ff


def test_unknown_parameters_are_refused():
    block = gpt2_like(8)
    block.extra = nn.Linear(8, 8)
    with pytest.raises(ValueError, match="'extra' 有 72 个参数"):
        block_parameter_breakdown(block)
    block = gpt2_like(8)
    block.scale = nn.Parameter(torch.ones(8))
    with pytest.raises(ValueError, match="块自身直接持有 8 个参数"):
        block_parameter_breakdown(block)


@pytest.mark.parametrize("seq_len", [0, -3, 2.5, True, "8"])
def test_bad_sequence_length_raises_value_error(seq_len):
    with pytest.raises(ValueError, match="seq_len 应为正整数"):
        block_flops(gpt2_like(8), seq_len)


@pytest.mark.parametrize("fn", [block_parameter_breakdown, lambda b: block_flops(b, 4)])
def test_non_blocks_raise_value_error(fn):
    with pytest.raises(ValueError, match="实际为 Linear"):
        fn(nn.Linear(4, 4))
