"""Bad input a new user might try, part by part: each gets a ValueError naming the expected and
the actual value (never a torch internal error); a float64 module reads float64 input."""

import re

import pytest
import torch

from onelayer import (
    BlockConfig,
    CausalSelfAttention,
    DeepMLP,
    FeedForward,
    GPTConfig,
    LayerNorm,
    Residual,
    RMSNorm,
    TinyGPT,
    TransformerBlock,
    count_parameters,
    lm_loss,
    trace_ffn,
)
from onelayer.checks import check_probability
from onelayer.data import facts_corpus
from onelayer.residual import deep_norm
from onelayer.stack import FeedForwardStack, TinyGPTStack

BLOCK = dict(d_model=8, n_heads=2)


def traced(ffn: FeedForward):
    return lambda x: trace_ffn(ffn, x).out


# name: (build the part, the shape of a valid input)
PARTS = {
    "ffn": (lambda: FeedForward(4, 16), (2, 3, 4)),
    "swiglu": (lambda: FeedForward.from_variant("swiglu", 4, 16), (2, 3, 4)),
    "trace_ffn": (lambda: traced(FeedForward(4, 16)), (2, 3, 4)),
    "deep_mlp": (lambda: DeepMLP(2, d_model=4, d_in=2, norm=True), (5, 2)),
    "layernorm": (lambda: LayerNorm(4), (2, 3, 4)),
    "rmsnorm": (lambda: RMSNorm(4), (2, 3, 4)),
    "residual": (lambda: Residual(FeedForward(4, 16)), (2, 3, 4)),
    "attention": (lambda: CausalSelfAttention(8, 2), (2, 3, 8)),
    "attention_weights": (lambda: CausalSelfAttention(8, 2).weights, (2, 3, 8)),
    "gqa_rope_qknorm": (lambda: CausalSelfAttention(8, 4, n_kv_heads=2, rope_theta=1e4,
                                                    qk_norm=True), (2, 3, 8)),
    "block_pre": (lambda: TransformerBlock(BlockConfig(**BLOCK)), (2, 3, 8)),
    "block_post_gated_rms": (lambda: TransformerBlock(BlockConfig(
        **BLOCK, norm_position="post", gated=True, activation="silu", norm="rmsnorm")), (2, 3, 8)),
    "ffn_stack": (lambda: FeedForwardStack([FeedForward(4, 16), FeedForward(4, 16)]), (3, 4)),
}


@pytest.mark.parametrize("dtype", [torch.int64, torch.float64, torch.float16, torch.bool])
@pytest.mark.parametrize("name", PARTS)
def test_input_of_another_dtype_names_both_dtypes_and_the_fix(name, dtype):
    build, shape = PARTS[name]
    x = torch.randn(shape).to(dtype)
    with pytest.raises(ValueError) as info:
        build()(x)
    message = str(info.value)
    assert f"为 torch.float32，实际为 {dtype}" in message and "x.float()" in message
    if dtype == torch.float64:
        assert "module.double()" in message


@pytest.mark.parametrize("name", [n for n in PARTS if n not in ("trace_ffn", "attention_weights")])
def test_a_float64_module_reads_float64_input(name):
    build, shape = PARTS[name]
    torch.manual_seed(0)
    part, x = build(), torch.randn(shape)
    with torch.no_grad():
        single = part(x)
        double = part.double()(x.double())
    assert double.dtype == torch.float64
    assert torch.allclose(double, single.double(), atol=1e-5)


@pytest.mark.parametrize("name", ["ffn", "layernorm", "attention", "block_pre"])
@pytest.mark.parametrize("value", [[[1.0, 2.0, 3.0, 4.0]], 1.0])
def test_input_that_is_not_a_tensor_is_named(name, value):
    with pytest.raises(ValueError, match=r"输入应为 torch\.Tensor，实际为 (list|float)"):
        PARTS[name][0]()(value)


@pytest.mark.parametrize("name", ["attention", "block_pre"])
def test_attention_wants_a_sequence_axis(name):
    with pytest.raises(ValueError, match=re.escape("输入应为序列 [..., T, d_model]（至少 2 维），"
                                                   "实际形状为 [8]")):
        PARTS[name][0]()(torch.randn(8))


def tiny(**block) -> TinyGPT:
    torch.manual_seed(0)
    return TinyGPT(GPTConfig(vocab_size=12, block_size=6, block=BlockConfig(**BLOCK, **block)))


def test_a_float64_model_reads_token_ids():
    model, idx = tiny(rope_theta=1e4), torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        single = model(idx)
        double = model.double()(idx)
    assert double.dtype == torch.float64 and torch.allclose(double, single.double(), atol=1e-5)
    assert lm_loss(double, idx).dtype == torch.float64


@pytest.mark.parametrize(("idx", "message"), [
    ([1, 2, 3], "词元编号应为 torch.Tensor，实际为 list"),
    (torch.tensor([1, 2], dtype=torch.int32), r"实际为 torch\.int32.*idx\.long\(\)"),
    (torch.tensor([1.0, 2.0]), r"实际为 torch\.float32.*idx\.long\(\)"),
    (torch.tensor([[1, 12]]), re.escape("词元编号应在 [0, 12) 内，实际范围 [1, 12]")),
    (torch.tensor([-1, 3]), re.escape("实际范围 [-1, 3]")),
    (torch.zeros(1, 0, dtype=torch.long), "序列长度应在 1 到 block_size=6 之间，实际为 0"),
])
def test_bad_token_ids_are_named(idx, message):
    with pytest.raises(ValueError, match=message):
        tiny()(idx)


@pytest.mark.parametrize(("prompt", "message"), [
    (torch.tensor([1, 2]), r"实际为 Tensor.*prompt\.tolist\(\)"),
    ([1, 2.5], "其中有 2.5"),
    ("猫吃", "实际为 str"),
    ([1, 12], re.escape("词元编号应在 [0, 12) 内，实际范围 [1, 12]")),
])
def test_bad_prompts_are_named(prompt, message):
    with pytest.raises(ValueError, match=message):
        tiny().generate(prompt, 2)


def test_stack_of_models_checks_token_ids_like_one_model():
    stack = TinyGPTStack([tiny(), tiny()])
    with pytest.raises(ValueError, match=r"int64 张量 \[M, B, T\]，实际为 torch\.float32"):
        stack(torch.ones(2, 1, 3))
    with pytest.raises(ValueError, match=re.escape("词元编号应在 [0, 12) 内，实际范围 [12, 12]")):
        stack(torch.full((2, 1, 3), 12))
    with pytest.raises(ValueError, match="block_size=6 之间，实际为 7"):
        stack(torch.zeros(2, 1, 7, dtype=torch.long))


LOGITS = torch.randn(2, 3, 12)


@pytest.mark.parametrize(("logits", "targets", "message"), [
    (LOGITS, torch.tensor([[1, 2, 12], [0, 0, 0]]),
     r"targets 应在 \[0, 12\) 内，实际范围 \[0, 12\]"),
    (LOGITS, torch.tensor([[1, 2, -5], [0, 0, 0]]), r"实际范围 \[-5, 2\]"),
    (LOGITS, torch.tensor([[1, 2, -100], [0, 0, 0]]), r"实际范围 \[-100, 2\]"),
    (LOGITS[None].expand(3, -1, -1, -1), torch.full((3, 2, 3), 12), r"实际范围 \[12, 12\]"),
    (LOGITS, torch.ones(2, 3), r"int64（torch\.long）的词元编号，实际为 torch\.float32"),
    (LOGITS, torch.ones(2, 3, dtype=torch.int32), r"实际为 torch\.int32（可用 targets\.long\(\)"),
    (LOGITS.long(), torch.ones(2, 3, dtype=torch.long), "logits 应为浮点张量，实际为 torch.int64"),
    (torch.randn(2, 0, 12), torch.ones(2, 0, dtype=torch.long), r"不能为空.*实际形状 \[2, 0\]"),
    (LOGITS, [[1, 2, 3], [0, 0, 0]], "targets 应为 torch.Tensor，实际为 list"),
])
def test_lm_loss_names_bad_targets_and_logits(logits, targets, message):
    with pytest.raises(ValueError, match=message):
        lm_loss(logits, targets)


def test_lm_loss_of_valid_targets_is_unchanged():
    targets = torch.tensor([[1, 2, 11], [0, 0, 0]])
    expected = torch.nn.functional.cross_entropy(LOGITS.flatten(0, 1), targets.flatten())
    assert torch.equal(lm_loss(LOGITS, targets), expected)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: TinyGPT(BlockConfig()), "config 应为 GPTConfig，实际为 BlockConfig"),
    (lambda: TransformerBlock({"d_model": 8}), "config 应为 BlockConfig，实际为 dict"),
    (lambda: count_parameters("ffn"), "module 应为 torch.nn.Module，实际为 str"),
    (lambda: check_probability("dropout", "0.1"), "dropout 应在 \\[0, 1\\) 之间，实际为 '0.1'"),
    (lambda: BlockConfig(**BLOCK, dropout="0.1"), "dropout 应在"),
    (lambda: deep_norm(torch.randn(2, 4), FeedForward(4, 8), LayerNorm(4), "2"),
     "alpha 应 ≥ 1，实际为 '2'"),
    (lambda: facts_corpus().decode([1, 10**6]),
     r"词元编号应在 \[0, \d+\) 内，实际为 \[1, 1000000\]"),
])
def test_wrong_kinds_of_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
