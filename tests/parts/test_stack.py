"""TinyGPTStack with grouped-query attention, rotary positions and QK-norm, member by member against
TinyGPT (the plain stack's tests are chapter 8's: tests/chapters/test_ch08_norm_position.py)."""

import pytest
import torch

from onelayer.block import BlockConfig
from onelayer.model import GPTConfig, TinyGPT
from onelayer.stack import TinyGPTStack


def members(seeds=(0, 1, 2), position="pre", **options) -> list[TinyGPT]:
    block = BlockConfig(d_model=16, n_heads=4, norm_position=position, **options)
    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        model = TinyGPT(GPTConfig(vocab_size=11, block_size=8, n_layers=2, block=block))
        with torch.no_grad():  # away from the init, so that the logits are of size about 1
            for p in model.parameters():
                p.add_(torch.randn(p.shape) * 0.1)
        models.append(model.eval())
    return models


OPTIONS = {
    "gqa": dict(n_kv_heads=2),
    "mqa_rope": dict(n_kv_heads=1, rope_theta=10000.0),
    "rope_attention_only": dict(rope_theta=100.0, d_ff=0),
    "qk_norm_gqa_rope": dict(qk_norm=True, n_kv_heads=2, rope_theta=10000.0),
}


@pytest.mark.parametrize("position", ["pre", "post"])
@pytest.mark.parametrize("name", OPTIONS)
def test_stack_computes_what_each_member_computes(name, position):
    models = members(position=position, **OPTIONS[name])
    stack = TinyGPTStack(models)
    idx = torch.randint(0, 11, (3, 4, 8), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        logits = stack(idx)
        for i, model in enumerate(models):
            assert (logits[i] - model(idx[i])).abs().max().item() < 1e-5
            back = stack.member(i)
            assert all(torch.equal(p, q) for p, q in zip(back.parameters(), model.parameters()))
    assert ("pos.weight" in stack.names) == ("rope_theta" not in OPTIONS[name])


@pytest.mark.parametrize(("options", "message"), [
    (dict(norm="rmsnorm"), "TinyGPTStack 要求 norm='layernorm'"),
    (dict(qkv_bias=False), "TinyGPTStack 要求 qkv_has_bias=True"),
])
def test_stack_refuses_rmsnorm_and_missing_biases(options, message):
    with pytest.raises(ValueError, match=message):
        TinyGPTStack(members(seeds=(0,), **options))
