"""CausalSelfAttention against its three peers, its KV cache, its modern options (grouped-query
attention, rotation, QK-norm, q/k/v bias), and its argument checks."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from onelayer import reference
from onelayer.attention import CausalSelfAttention, LayerCache, causal_mask, repeat_kv
from onelayer.block import BlockConfig
from onelayer.model import GPTConfig, KVCache, TinyGPT


def moved(module: nn.Module, seed: int, scale: float = 0.3) -> nn.Module:
    """Every parameter moved away from its init, so nothing matches by luck."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * scale)
    return module.eval()


def attention(d_model=16, n_heads=4, seed=0) -> CausalSelfAttention:
    return moved(CausalSelfAttention(d_model, n_heads), seed)


X = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(1))


def test_written_out_matches_scaled_dot_product_attention_is_causal():
    # float64: in float32 the three ways differ by a few ulps, and by how many changes from run
    # to run with the memory layout (1.2e-6 seen once against the 1e-6 bound)
    attn, x = attention().double(), X.double()
    with torch.no_grad():
        q, k, v = attn.heads(x)
        written = attn.weights(x) @ v
        scores = q @ k.transpose(-2, -1) / math.sqrt(4)       # 再从公式写一遍
        scratch = scores.masked_fill(torch.ones(6, 6).triu(1).bool(), -math.inf).softmax(-1) @ v
        fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        err = (written - fused).abs().max().item()
        err_scratch = (scratch - fused).abs().max().item()
        err_out = (attn.merge(written) - attn(x)).abs().max().item()
    print(f"weights()·V vs F.scaled_dot_product_attention: max error {err:.1e}")
    assert err < 1e-6 and err_scratch < 1e-6 and err_out < 1e-6


def test_matches_torch_multihead_attention_with_a_causal_mask():
    attn = attention(seed=2)
    peer = reference.torch_multihead_attention(attn)
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        out, w = peer(X, X, X, attn_mask=mask, average_attn_weights=False)
        err = (attn(X) - out).abs().max().item()
        err_w = (attn.weights(X) - w).abs().max().item()
        unmasked, _ = peer(X, X, X)
    print(f"nn.MultiheadAttention: max error {err:.1e} (output), {err_w:.1e} (weights)")
    assert err < 1e-5 and err_w < 1e-6
    with torch.no_grad():  # 不传掩码：只有最后一个位置（本来就看得见全部）对得上
        gap = (attn(X) - unmasked).abs().amax(dim=(0, 2))
    assert gap[-1] < 1e-5 and gap[:-1].min() > 1e-3


def test_matches_transformers_gpt2_attention():
    pytest.importorskip("transformers")
    attn = attention(seed=3)
    peer = reference.gpt2_attention(attn)
    with torch.no_grad():
        out, w = peer(X, attention_mask=reference.additive_causal_mask(6))[:2]
        err = (attn(X) - out).abs().max().item()
        err_w = (attn.weights(X) - w).abs().max().item()
    print(f"transformers GPT2Attention: max error {err:.1e} (output), {err_w:.1e} (weights)")
    assert err < 1e-5 and err_w < 1e-6


def test_an_explicit_mask_replaces_the_causal_one():
    attn = attention(seed=4)
    full = torch.ones(6, 6, dtype=torch.bool)
    with torch.no_grad():
        assert torch.equal(attn.weights(X, causal_mask(6)), attn.weights(X))
        err = (attn(X, mask=full) - attn.merge(attn.weights(X, full) @ attn.heads(X)[2]))
        assert err.abs().max() < 1e-6
        assert (attn(X, mask=full) - attn(X)).abs().max() > 1e-3


def test_cached_attention_equals_the_whole_sequence():
    # float64: in float32 the fused kernel's round-off on outputs of size about 4 varies with
    # the memory layout from call to call (up to 1.5e-6 seen, before and after GQA/RoPE)
    attn, x = attention(seed=5).double(), X.double()
    cache = LayerCache()
    with torch.no_grad():
        whole = attn(x)
        first = attn(x[:, :4], cache=cache)        # 先 4 个位置，再一个一个来
        steps = [attn(x[:, t:t + 1], cache=cache) for t in (4, 5)]
    assert len(cache) == 6
    err = (torch.cat([first, *steps], dim=1) - whole).abs().max().item()
    assert err < 1e-12
    with torch.no_grad(), attn.caching(LayerCache()) as c:  # 同样的事，用 with 绑定缓存
        attn(x[:, :2])
        two_more = attn(x[:, 2:4])
    assert len(c) == 4 and attn.cache is None
    assert (two_more - whole[:, 2:4]).abs().max() < 1e-12


def tiny_gpt(seed=0, block_size=12, position="pre") -> TinyGPT:
    # logits of size about 1: float32 round-off stays well below 1e-6
    torch.manual_seed(seed)
    block = BlockConfig(d_model=16, n_heads=4, norm_position=position)
    return moved(TinyGPT(GPTConfig(vocab_size=11, block_size=block_size, n_layers=2,
                                   block=block)), seed, scale=0.1)


def test_cached_logits_equal_uncached_logits_step_by_step():
    model = tiny_gpt()
    idx = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(2))
    cache = KVCache(2)
    with torch.no_grad():
        whole = model(idx)
        parts = [model.cached_logits(idx[:, :5], cache)]
        parts += [model.cached_logits(idx[:, t:t + 1], cache) for t in range(5, 12)]
    err = (torch.cat(parts, dim=1) - whole).abs().max().item()
    print(f"KV cache vs whole sequence: max logit error {err:.1e}")
    assert err < 1e-6 and len(cache) == 12


@pytest.mark.parametrize("position", ["pre", "post"])
def test_cached_generation_gives_the_same_tokens(position):
    model = tiny_gpt(seed=1, position=position)
    for top_k, temperature in ((1, 1.0), (None, 1.0), (5, 0.7)):
        runs = [model.generate([1, 2, 3], 30, temperature, top_k, use_cache=use,
                               generator=torch.Generator().manual_seed(0))
                for use in (True, False)]
        assert runs[0] == runs[1]           # 30 个新词元：越过 block_size = 12 之后也相同
        assert len(runs[0]) == 33


def test_bad_masks_and_caches_raise_value_error():
    attn = attention()
    with pytest.raises(ValueError, match=r"mask 应为布尔张量 \[6, 6\].*形状 \[6, 5\]"):
        attn(X, mask=torch.ones(6, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask 应为布尔张量 \[6, 6\].*torch.float32"):
        attn.weights(X, mask=torch.ones(6, 6))
    cache = LayerCache()
    with torch.no_grad():
        attn(X, cache=cache)
        with pytest.raises(ValueError, match=r"缓存的批维应为 \[2\]，实际输入的批维为 \[3\]"):
            attn(torch.randn(3, 1, 16), cache=cache)
    model = tiny_gpt(block_size=12)
    full = KVCache(2)
    with torch.no_grad():
        model.cached_logits(torch.randint(0, 11, (10,)), full)
        with pytest.raises(ValueError, match="缓存的 10 个位置加上新的 3 个应 ≤ block_size=12，"
                                             "实际为 13"):
            model.cached_logits(torch.tensor([1, 2, 3]), full)
    with pytest.raises(ValueError, match="KV 缓存应有 n_layers=2 层，实际为 3 层"):
        model.cached_logits(torch.tensor([1]), KVCache(3))
    with pytest.raises(ValueError, match="use_cache 应为 True 或 False"):
        model.generate([1], 2, use_cache="yes")
    with pytest.raises(ValueError, match="d_model 应能被 n_heads 整除，实际 d_model=10，n_heads=4"):
        CausalSelfAttention(10, 4)


MODERN = {  # the options of today's open models, alone and together
    "mqa": dict(n_kv_heads=1),
    "gqa": dict(n_kv_heads=2),
    "rope": dict(rope_theta=10000.0),
    "qk_norm": dict(qk_norm=True),
    "qwen2": dict(n_kv_heads=2, rope_theta=10000.0, bias=False, qkv_bias=True),
    "qwen3": dict(n_kv_heads=2, rope_theta=100.0, bias=False, qk_norm=True),
}


def modern(name, seed=0) -> CausalSelfAttention:
    return moved(CausalSelfAttention(16, 4, **MODERN[name]), seed)


def test_explicit_defaults_are_the_plain_attention_bit_for_bit():
    plain = attention(seed=7)
    explicit = CausalSelfAttention(16, 4, True, 0.0, n_kv_heads=4, rope_theta=None,
                                   qk_norm=False, qkv_bias=True).eval()
    explicit.load_state_dict(plain.state_dict())
    assert [(k, v.shape) for k, v in plain.state_dict().items()] == [
        ("qkv.weight", (48, 16)), ("qkv.bias", (48,)), ("proj.weight", (16, 16)),
        ("proj.bias", (16,))]
    with torch.no_grad():
        assert torch.equal(explicit(X), plain(X))
        assert torch.equal(explicit.weights(X), plain.weights(X))


@pytest.mark.parametrize("name", MODERN)
def test_written_out_weights_match_forward_with_every_option(name):
    attn, x = modern(name, seed=8).double(), X.double()
    with torch.no_grad():
        _, _, v = attn.heads(x)
        written = attn.merge(attn.weights(x) @ attn.shared(v))
        err = (written - attn(x)).abs().max().item()
    print(f"{name}: weights()·V vs forward: max error {err:.1e}")
    assert err < 1e-12


def test_grouped_query_attention_is_multi_head_attention_with_shared_keys():
    # GQA with 2 key/value heads = MHA whose heads 0, 1 share one key/value and 2, 3 another
    gqa = modern("gqa", seed=9).double()
    full = CausalSelfAttention(16, 4).double().eval()
    q, k, v = gqa.qkv.weight.split([16, 8, 8])
    qb, kb, vb = gqa.qkv.bias.split([16, 8, 8])

    def per_head(w):             # [2·d_head, …] → [4·d_head, …]: kv 头 g 给查询头 2g、2g + 1
        return w.unflatten(0, (2, 4)).repeat_interleave(2, dim=0).flatten(0, 1)

    with torch.no_grad():
        full.qkv.weight.copy_(torch.cat([q, per_head(k), per_head(v)]))
        full.qkv.bias.copy_(torch.cat([qb, per_head(kb), per_head(vb)]))
        full.proj.load_state_dict(gqa.proj.state_dict())
        assert (gqa(X.double()) - full(X.double())).abs().max().item() < 1e-12
    assert gqa.qkv.weight.shape == (16 + 2 * 2 * 4, 16)          # d_model + 2·n_kv_heads·d_head


def test_repeat_kv_gives_query_head_h_the_kv_head_h_over_n_rep():
    kv = torch.randn(2, 3, 5, 4)
    repeated = repeat_kv(kv, 2)
    assert repeated.shape == (2, 6, 5, 4)
    for h in range(6):
        assert torch.equal(repeated[:, h], kv[:, h // 2])
    assert repeat_kv(kv, 1) is kv


def test_repeat_kv_equals_transformers():
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import repeat_kv as hf_repeat_kv
    kv = torch.randn(2, 3, 5, 4)
    assert torch.equal(repeat_kv(kv, 4), hf_repeat_kv(kv, 4))


@pytest.mark.parametrize("name", ["mqa", "qwen2", "qwen3"])
def test_cache_keeps_only_the_shared_heads_and_equals_the_whole_sequence(name):
    attn, x = modern(name, seed=10).double(), X.double()     # float64: see the test above
    cache = LayerCache()
    with torch.no_grad():
        whole = attn(x)
        parts = [attn(x[:, :4], cache=cache)] + [attn(x[:, t:t + 1], cache=cache) for t in (4, 5)]
    assert cache.keys.shape == cache.values.shape == (2, attn.n_kv_heads, 6, 4)
    assert (torch.cat(parts, dim=1) - whole).abs().max().item() < 1e-12


def test_rotated_scores_depend_only_on_distance():
    attn = modern("rope", seed=11)
    with torch.no_grad():
        q0, k0, v0 = attn.heads(X)
        q5, k5, v5 = attn.heads(X, past=5)              # 同样的词元，整体后移 5 个位置
    assert torch.equal(v0, v5) and (q0 - q5).abs().max() > 1e-2
    assert (q0 @ k0.transpose(-2, -1) - q5 @ k5.transpose(-2, -1)).abs().max().item() < 1e-5


def test_qk_norm_gives_each_head_unit_rms_before_its_weight():
    attn = CausalSelfAttention(16, 4, qk_norm=True, eps=1e-6).eval()
    assert [k for k in attn.state_dict() if "norm" in k] == ["q_norm.weight", "k_norm.weight"]
    assert attn.q_norm.weight.shape == (4,)                     # [d_head]，各头共用
    with torch.no_grad():
        q, k, _ = attn.heads(X * 50.0)
    for part in (q, k):
        assert torch.allclose(part.pow(2).mean(-1), torch.ones(2, 4, 6), atol=1e-4)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(n_kv_heads=3), "n_heads 应能被 n_kv_heads 整除，实际 n_heads=4，n_kv_heads=3"),
    (dict(n_kv_heads=0), "n_kv_heads 应为正整数，实际为 0"),
    (dict(rope_theta=0.0), "rope_theta 应为正数，实际为 0.0"),
    (dict(qk_norm="yes"), "qk_norm 应为 True 或 False"),
    (dict(qkv_bias=1), "qkv_bias 应为 True 或 False"),
    (dict(qk_norm=True, eps=0.0), "eps 应为正数"),
])
def test_bad_modern_options_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CausalSelfAttention(16, 4, **kwargs)


def test_rotation_needs_heads_of_even_width():
    with pytest.raises(ValueError, match="d_head 应为偶数，实际为 3"):
        CausalSelfAttention(12, 4, rope_theta=10000.0)


def test_plain_attention_peers_refuse_the_modern_options():
    for name in ("gqa", "rope", "qk_norm"):
        with pytest.raises(ValueError, match="nn.MultiheadAttention 的对照要求普通多头注意力"):
            reference.torch_multihead_attention(modern(name))
    with pytest.raises(ValueError, match="GPT-2 的对照要求普通多头注意力.*n_kv_heads=1"):
        reference.gpt2_attention(modern("mqa"))
    with pytest.raises(ValueError, match="GPT-2 要求 rope_theta=None"):
        reference.gpt2_config(BlockConfig(d_model=16, n_heads=4, rope_theta=1e4))
