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


# The chapter 6 exercise checker (onelayer.book.exercises.check_pre_norm_block)
def test_pre_norm_block_checker_accepts_the_two_lines(capsys):
    from onelayer.book.exercises import check_pre_norm_block

    def two_lines(x, ln_1, attn, ln_2, mlp):
        h = x + attn(ln_1(x))
        return h + mlp(ln_2(h))

    assert check_pre_norm_block(two_lines)
    assert capsys.readouterr().out.startswith("✓ 通过")


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda x, l1, a, l2, m: l2(l1(x + a(x)) + m(l1(x + a(x)))), "后置归一化"),
    (lambda x, l1, a, l2, m: x + a(l1(x)) + m(l2(x)), "并行块"),
    (lambda x, l1, a, l2, m: m(l2(a(l1(x)))), "别忘了残差"),
    (lambda x, l1, a, l2, m: m(l2(x + a(l1(x)))), "FFN 这一半"),
    (lambda x, l1, a, l2, m: (x + a(l2(x))) + m(l1(x + a(l2(x)))), "用反了"),
    (lambda x, l1, a, l2, m: x, "逐行核对"),
    (lambda x, l1, a, l2, m: x[..., :4], "输出形状应为"),
])
def test_pre_norm_block_checker_names_the_mistake(capsys, wrong, hint):
    from onelayer.book.exercises import check_pre_norm_block

    assert not check_pre_norm_block(wrong)
    assert hint in capsys.readouterr().out


def test_pre_norm_block_checker_recognises_a_normalised_shortcut(capsys):
    from onelayer.book.exercises import check_pre_norm_block

    def normalised_shortcut(x, ln_1, attn, ln_2, mlp):
        h = ln_1(x)
        h = h + attn(h)
        return h + mlp(ln_2(h))

    assert not check_pre_norm_block(normalised_shortcut)
    assert "捷径应绕过 LayerNorm" in capsys.readouterr().out


# The chapter 6 panels (onelayer.book.widgets)
def test_meta_block_has_the_requested_sizes():
    from onelayer.book.widgets import meta_block

    block = meta_block(4096, 11008 / 4096, gated=True, norm="rmsnorm", bias=False)
    assert next(block.parameters()).device.type == "meta"
    assert (block.config.n_heads, block.config.hidden) == (64, 11008)
    assert block_parameter_breakdown(block)["ffn"] == 3 * 4096 * 11008


def test_block_frames_have_one_distinct_alt_text_per_frame():
    import re

    from onelayer.book.plotting import use_book_style
    from onelayer.book.widgets import block_ratio_frames

    use_book_style()  # the CJK font, as in the chapters
    player = block_ratio_frames()
    frames = player.children[-1].children
    alts = [re.search(r'alt="([^"]*)"', f.value).group(1) for f in frames]
    assert len(alts) == 6 and len(set(alts)) == 6
    assert "d_ff = 4·d_model" in alts[player.children[-1].selected_index]
