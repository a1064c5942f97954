"""TinyGPT against transformers' GPT-2 and Qwen models, its rotary variant, and its argument
checks (onelayer.model)."""

import math

import pytest
import torch

from onelayer import reference
from onelayer.block import BlockConfig
from onelayer.model import GPTConfig, KVCache, TinyGPT, gpt2_residual_std, lm_loss
from onelayer.train import seeded


def tiny(norm_position="pre", d_ff=None, n_layers=2, init="gpt2"):
    torch.manual_seed(0)
    block = BlockConfig(d_model=16, n_heads=2, d_ff=d_ff, norm_position=norm_position)
    return TinyGPT(GPTConfig(vocab_size=11, block_size=8, n_layers=n_layers, block=block,
                             init=init))


def test_logits_match_transformers_gpt2_lm_head_model():
    pytest.importorskip("transformers")
    model = tiny().eval()
    with torch.no_grad():  # move every weight away from its init, so nothing matches by luck
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.1)
    peer = reference.gpt2_lm_head_model(model)
    idx = torch.randint(0, 11, (3, 8))
    with torch.no_grad():
        assert (model(idx) - peer(idx).logits).abs().max().item() < 1e-5


def test_head_is_tied_and_post_norm_has_no_final_norm():
    pre, post = tiny("pre"), tiny("post")
    assert not isinstance(pre.ln_f, torch.nn.Identity)
    assert isinstance(post.ln_f, torch.nn.Identity)
    assert pre.tok.weight.grad is None
    lm_loss(pre(torch.tensor([[1, 2, 3]])), torch.tensor([[2, 3, 4]])).backward()
    assert pre.tok.weight.grad[5].abs().sum() > 0  # never an input: only the head reaches it


def test_initial_loss_is_about_log_vocab():
    model = tiny()
    idx, targets = torch.randint(0, 11, (2, 64, 8))
    assert abs(lm_loss(model(idx), targets).item() - math.log(11)) < 0.05


def test_causal_model_ignores_the_future():
    model = tiny().eval()
    a, b = torch.tensor([1, 2, 3, 4]), torch.tensor([1, 2, 3, 9])
    with torch.no_grad():
        assert torch.allclose(model(a)[:3], model(b)[:3])


@pytest.mark.parametrize(("idx", "message"), [
    (torch.tensor([1.0, 2.0]), "int64"),
    (torch.tensor([1, 11]), r"\[0, 11\)"),
    (torch.zeros(9, dtype=torch.long), "block_size=8"),
])
def test_bad_tokens_raise_value_error(idx, message):
    with pytest.raises(ValueError, match=message):
        tiny()(idx)


def test_generate_checks_its_arguments_and_is_reproducible():
    model = tiny()
    with pytest.raises(ValueError, match="提示不能为空"):
        model.generate([], 3)
    with pytest.raises(ValueError, match="block_size=8，实际为 9"):
        model.generate([1] * 9, 3)
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1], 3, temperature=0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate([1], 3, top_k=12)
    out = model.generate([1, 2], 10, generator=torch.Generator().manual_seed(0))
    again = model.generate([1, 2], 10, generator=torch.Generator().manual_seed(0))
    assert out == again and len(out) == 12 and out[:2] == [1, 2]
    greedy = model.generate([1, 2], 1, top_k=1)
    with torch.no_grad():
        assert greedy[-1] == model(torch.tensor([1, 2]))[-1].argmax().item()


def test_bad_model_configs_raise_value_error():
    with pytest.raises(ValueError, match="vocab_size 应为正整数"):
        GPTConfig(vocab_size=0, block_size=8)
    with pytest.raises(ValueError, match="init 应为"):
        GPTConfig(vocab_size=5, block_size=8, init="kaiming")
    with pytest.raises(ValueError, match="block 应为 BlockConfig"):
        GPTConfig(vocab_size=5, block_size=8, block={"d_model": 8})


@pytest.mark.parametrize("n_layer", [2, 12])
def test_gpt2_scaled_init_matches_transformers(n_layer):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=n_layer, n_embd=64, n_head=4, vocab_size=16,
                                     n_positions=8)
    torch.manual_seed(3)
    model = transformers.GPT2Model(config)
    expected = gpt2_residual_std(n_layer)
    assert expected == pytest.approx(0.02 / math.sqrt(2 * n_layer))
    for block in model.h:
        for proj in (block.attn.c_proj, block.mlp.c_proj):
            assert proj.weight.std().item() == pytest.approx(expected, rel=0.05)
        assert block.mlp.c_fc.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_lm_loss_keeps_one_value_per_member_of_a_stack():
    logits, targets = torch.randn(3, 2, 5, 11), torch.randint(0, 11, (3, 2, 5))
    per_member = lm_loss(logits, targets)
    assert per_member.shape == (3,)
    for i in range(3):
        assert torch.allclose(per_member[i], lm_loss(logits[i], targets[i]))
    with pytest.raises(ValueError, match="targets 为"):
        lm_loss(logits, targets[..., :4])


def test_gpt2_residual_std_checks_its_argument():
    with pytest.raises(ValueError, match="n_layer 应为正整数"):
        gpt2_residual_std(0)


def rotary(seed=0, block_size=8, n_layers=2, **options) -> TinyGPT:
    """A Qwen-style TinyGPT: RMSNorm, SwiGLU, rotary positions, grouped-query attention."""
    torch.manual_seed(seed)
    block = BlockConfig(d_model=16, n_heads=4, n_kv_heads=2, d_ff=24, activation="silu",
                        gated=True, norm="rmsnorm", bias=False, eps=1e-6, rope_theta=10000.0,
                        **options)
    model = TinyGPT(GPTConfig(vocab_size=11, block_size=block_size, n_layers=n_layers,
                              block=block)).eval()
    with torch.no_grad():  # move every weight away from its init, so nothing matches by luck
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.1)
    return model


def test_rotary_model_has_no_position_table():
    model = rotary()
    assert model.pos is None
    assert not [k for k in model.state_dict() if k.startswith("pos")]
    assert model(torch.tensor([[1, 2, 3]])).shape == (1, 3, 11)


def test_rotary_model_is_causal_and_sees_order():
    model = rotary()
    a, b = torch.tensor([1, 2, 3, 4]), torch.tensor([1, 2, 3, 9])
    with torch.no_grad():
        assert torch.allclose(model(a)[:3], model(b)[:3])
        swapped = model(torch.tensor([2, 1, 3, 4]))
        assert (model(a)[-1] - swapped[-1]).abs().max() > 1e-3  # 没有位置表，也分得清顺序


def test_rotary_cached_logits_equal_the_whole_sequence():
    model = rotary(block_size=12).double()          # float64: only the cache may differ
    idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(2))
    cache = KVCache(2)
    with torch.no_grad():
        whole = model(idx)
        parts = [model.cached_logits(idx[:, :5], cache)]
        parts += [model.cached_logits(idx[:, t:t + 1], cache) for t in range(5, 12)]
    assert (torch.cat(parts, dim=1) - whole).abs().max().item() < 1e-12
    assert cache.layers[0].keys.shape == (3, 2, 12, 4)         # 只存 n_kv_heads = 2 个头


@pytest.mark.parametrize("options", [{}, {"qk_norm": True}])
def test_rotary_generation_gives_the_same_tokens_with_and_without_cache(options):
    model = rotary(seed=1, **options)
    for top_k, temperature in ((1, 1.0), (None, 1.0), (5, 0.7)):
        runs = [model.generate([1, 2, 3], 20, temperature, top_k, use_cache=use,
                               generator=torch.Generator().manual_seed(0))
                for use in (True, False)]
        assert runs[0] == runs[1] and len(runs[0]) == 23   # 越过 block_size = 8 之后也相同


@pytest.mark.parametrize(("family", "options"), [("qwen2", {"qkv_bias": True}),
                                                 ("qwen3", {"qk_norm": True})])
def test_logits_match_transformers_qwen_for_causal_lm(family, options):
    pytest.importorskip("transformers")
    model = rotary(seed=2, **options)
    peer = getattr(reference, f"{family}_for_causal_lm")(model)
    assert peer.lm_head.weight is peer.model.embed_tokens.weight      # 输出层与词嵌入共享
    idx = torch.randint(0, 11, (3, 8), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        err = (model(idx) - peer(idx).logits).abs().max().item()
    print(f"{type(peer).__name__}: max logit error {err:.1e}")
    assert err <= 1e-5


def test_qwen_models_refuse_what_they_cannot_express():
    pytest.importorskip("transformers")
    with pytest.raises(ValueError, match="Qwen2 要求 qkv_has_bias=True"):
        reference.qwen2_for_causal_lm(rotary())
    with pytest.raises(ValueError, match="Qwen3 要求 norm='rmsnorm'"):
        reference.qwen3_for_causal_lm(tiny())


def test_sampling_logits_keeps_the_nucleus_and_the_top_k():
    from onelayer.model import sampling_logits

    z = torch.tensor([[2.0, 1.5, 1.0, 0.5, 0.0, -1.0], [0.0, 3.0, 0.0, 0.0, 0.0, 0.0]])
    cumulative = z.softmax(-1).sort(-1, descending=True).values.cumsum(-1)
    kept = torch.isfinite(sampling_logits(z, top_p=0.9)).sum(-1)
    # 留下的是累计概率第一次达到 0.9 的那几个
    assert kept.tolist() == [int((cumulative[i] < 0.9).sum()) + 1 for i in range(2)]
    assert torch.equal(sampling_logits(z, top_p=1.0), z)
    assert torch.isfinite(sampling_logits(z, top_p=1e-6)).sum(-1).tolist() == [1, 1]
    assert torch.isfinite(sampling_logits(z, top_k=2)).sum(-1).tolist() == [2, 6]  # 并列都留下
    assert torch.allclose(sampling_logits(z, temperature=0.5), z * 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": 0.0}, "temperature 应为正数"),
    ({"top_k": 7}, "top_k 应为 1 到 vocab_size=6"),
    ({"top_p": 0.0}, r"top_p 应在 \(0, 1\]"),
    ({"top_p": 1.5}, r"top_p 应在 \(0, 1\]"),
])
def test_sampling_logits_rejects_bad_settings(kwargs, message):
    from onelayer.model import sampling_logits

    with pytest.raises(ValueError, match=message):
        sampling_logits(torch.zeros(6), **kwargs)


def test_generate_with_top_p_one_is_plain_sampling():
    with seeded(0):
        model = TinyGPT(GPTConfig(vocab_size=11, block_size=8, block=BlockConfig(d_model=16)))
    plain = model.generate([1, 2], 5, generator=torch.Generator().manual_seed(3))
    nucleus = model.generate([1, 2], 5, top_p=1.0, generator=torch.Generator().manual_seed(3))
    assert plain == nucleus


def test_a_model_without_a_position_table_is_blind_to_order_but_for_the_mask():
    config = GPTConfig(vocab_size=11, block_size=8, position_table=False,
                       block=BlockConfig(d_model=16))
    with seeded(0):
        model = TinyGPT(config).eval()
    assert model.pos is None and "pos.weight" not in dict(model.named_parameters())
    with torch.no_grad():  # 第一个位置只看得见自己：它的输出与位置无关，只与词元有关
        first = model(torch.tensor([[5, 1, 2], [5, 3, 4]]))[:, 0]
    assert torch.allclose(first[0], first[1])
    with pytest.raises(ValueError, match="position_table"):
        GPTConfig(vocab_size=11, block_size=8, position_table="no")


def test_gpt_config_prints_the_position_table_only_when_it_is_off():
    assert "position_table" not in repr(GPTConfig(vocab_size=5, block_size=4))
    assert repr(GPTConfig(vocab_size=5, block_size=4, position_table=False)).endswith(
        "position_table=False)")
