from dataclasses import replace

import pytest
import torch
from torch import nn

from onelayer import reference
from onelayer.attention import CausalSelfAttention
from onelayer.block import BlockConfig, TransformerBlock


def randomize(module: nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3 + (p.dim() == 1) * 0.1)


@pytest.mark.parametrize("position", ["pre", "post"])
def test_block_matches_torch_transformer_encoder_layer(position):
    block = TransformerBlock(BlockConfig(d_model=16, n_heads=4, norm_position=position)).eval()
    randomize(block, seed=0)
    ref = reference.torch_encoder_layer(block)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(1))
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        err = (block(x) - ref(x, src_mask=mask, is_causal=True)).abs().max().item()
    assert err < 1e-5


def test_pre_norm_block_matches_transformers_gpt2_block():
    pytest.importorskip("transformers")
    block = TransformerBlock(BlockConfig(d_model=16, n_heads=4, activation="gelu_tanh")).eval()
    randomize(block, seed=3)
    peer = reference.gpt2_block(block)
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        theirs = peer(x)
        theirs = theirs[0] if isinstance(theirs, tuple) else theirs
        err = (block(x) - theirs).abs().max().item()
    assert err < 1e-5


def llama_block() -> TransformerBlock:
    cfg = BlockConfig(d_model=16, n_heads=4, d_ff=40, activation="silu", gated=True,
                      norm="rmsnorm", bias=False, eps=1e-6)
    block = TransformerBlock(cfg).eval()
    randomize(block, seed=4)
    return block


def test_swiglu_rmsnorm_block_matches_transformers_llama_decoder_layer():
    pytest.importorskip("transformers")
    block = llama_block()
    peer = reference.llama_decoder_layer(block)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        theirs = peer(x, position_embeddings=reference.no_rotation(x, d_head=4))
        theirs = theirs[0] if isinstance(theirs, tuple) else theirs
        assert (block(x) - theirs).abs().max().item() < 1e-5
        # with real rotary angles the two differ: Llama's positions live in the attention
        cos, sin = reference.no_rotation(x, d_head=4)
        angle = torch.arange(6.0).view(1, 6, 1).expand_as(cos)
        rotated = peer(x, position_embeddings=(angle.cos(), angle.sin()))
        rotated = rotated[0] if isinstance(rotated, tuple) else rotated
        assert (block(x) - rotated).abs().max().item() > 1e-3


def modern_block(seed: int, **options) -> TransformerBlock:
    cfg = BlockConfig(d_model=16, n_heads=4, d_ff=40, activation="silu", gated=True,
                      norm="rmsnorm", bias=False, eps=1e-6, rope_theta=10000.0, **options)
    block = TransformerBlock(cfg).eval()
    randomize(block, seed)
    return block


PEERS = {  # our block's options → the Hugging Face decoder layer that computes the same
    "llama": (dict(n_kv_heads=2), reference.llama_decoder_layer),
    "qwen2": (dict(n_kv_heads=2, qkv_bias=True), reference.qwen2_decoder_layer),
    "qwen3": (dict(n_kv_heads=2, qk_norm=True), reference.qwen3_decoder_layer),
}


@pytest.mark.parametrize("family", PEERS)
def test_rotary_gqa_block_matches_transformers_decoder_layer(family):
    pytest.importorskip("transformers")
    options, make_peer = PEERS[family]
    block = modern_block(seed=8, **options)
    peer = make_peer(block)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        angles = reference.rotary_position_embeddings(block, x, family)
        theirs = peer(x, position_embeddings=angles)
        theirs = theirs[0] if isinstance(theirs, tuple) else theirs
        err = (block(x) - theirs).abs().max().item()
        unrotated = peer(x, position_embeddings=reference.no_rotation(x, d_head=4))
        unrotated = unrotated[0] if isinstance(unrotated, tuple) else unrotated
    print(f"{type(peer).__name__}: max error {err:.1e}")
    assert err <= 1e-6
    assert (block(x) - unrotated).abs().max().item() > 1e-3     # 旋转确实参与了计算


def test_peers_refuse_blocks_they_cannot_express():
    with pytest.raises(ValueError, match="Llama 要求 norm='rmsnorm'"):
        reference.llama_decoder_layer(TransformerBlock(BlockConfig(d_model=8, n_heads=2)))
    with pytest.raises(ValueError, match="GPT-2 要求 norm_position='pre'"):
        reference.gpt2_config(BlockConfig(d_model=8, n_heads=2, norm_position="post"))
    with pytest.raises(ValueError, match="Llama 要求 qk_norm=False"):
        reference.llama_decoder_layer(modern_block(0, qk_norm=True))
    with pytest.raises(ValueError, match="Qwen2 要求 qkv_has_bias=True"):
        reference.qwen2_decoder_layer(modern_block(0))
    with pytest.raises(ValueError, match="Qwen3 要求 qk_norm=True"):
        reference.qwen3_decoder_layer(modern_block(0))
    with pytest.raises(ValueError, match="Qwen3 要求 qkv_has_bias=False"):
        reference.qwen3_decoder_layer(modern_block(0, qk_norm=True, qkv_bias=True))
    with pytest.raises(ValueError, match="Qwen2 要求旋转位置编码（rope_theta 为正数），实际"):
        reference.qwen2_decoder_layer(TransformerBlock(replace(llama_block().config,
                                                               qkv_bias=True)))
    with pytest.raises(ValueError, match="family 应为"):
        reference.rotary_position_embeddings(modern_block(0), torch.zeros(1, 3, 16), "gpt2")


def test_explicit_attention_weights_give_the_fused_output():
    attn = CausalSelfAttention(8, 2).eval()
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        weights = attn.weights(x)
        _, _, v = attn.heads(x)
        explicit = attn.proj((weights @ v).transpose(-3, -2).flatten(-2))
        assert (attn(x) - explicit).abs().max().item() < 1e-6
    assert torch.allclose(weights.sum(-1), torch.ones(3, 2, 5))
    assert torch.all(weights[..., 0, 1:] == 0)  # the first position sees only itself


def test_attention_only_block_has_no_ffn():
    block = TransformerBlock(BlockConfig(d_model=8, n_heads=2, d_ff=0))
    assert block.mlp is None and block.ln_2 is None
    x = torch.randn(2, 3, 8)
    with torch.no_grad():
        assert torch.equal(block(x), x + block.attn(block.ln_1(x)))


def test_attention_is_causal():
    attn = CausalSelfAttention(8, 2).eval()
    x = torch.randn(1, 5, 8)
    changed = x.clone()
    changed[0, 3:] += 1.0  # change only the last two positions
    with torch.no_grad():
        assert torch.equal(attn(x)[0, :3], attn(changed)[0, :3])
        assert not torch.equal(attn(x)[0, 3:], attn(changed)[0, 3:])


def test_swiglu_rmsnorm_block_runs_and_keeps_shape():
    cfg = BlockConfig(d_model=16, n_heads=2, d_ff=40, activation="silu", gated=True,
                      norm="rmsnorm", bias=False, eps=1e-6)
    assert TransformerBlock(cfg)(torch.randn(3, 7, 16)).shape == (3, 7, 16)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"d_model": 10, "n_heads": 4}, "d_model 应能被 n_heads 整除，实际 d_model=10，n_heads=4"),
    ({"n_kv_heads": 3}, "n_heads 应能被 n_kv_heads 整除，实际 n_heads=4，n_kv_heads=3"),
    ({"rope_theta": -1.0}, "rope_theta 应为正数，实际为 -1.0"),
    ({"d_model": 12, "n_heads": 4, "rope_theta": 1e4}, "d_head 应为偶数，实际为 3"),
    ({"qk_norm": 1}, "qk_norm 应为 True 或 False"),
    ({"qkv_bias": "no"}, "qkv_bias 应为 True 或 False"),
    ({"norm_position": "middle"}, "norm_position 应为"),
    ({"norm": "batchnorm"}, "norm 应为"),
    ({"activation": "tanh"}, "activation 应为"),
    ({"dropout": 1.5}, "dropout 应在"),
    ({"d_ff": -4}, "d_ff 应为正整数"),
])
def test_bad_configs_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BlockConfig(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {},
    {"norm_position": "post", "activation": "gelu_tanh"},
    {"norm": "rmsnorm", "gated": True, "activation": "silu", "bias": False},
])
def test_fused_block_computes_the_same_as_the_written_out_one(kwargs):
    written = TransformerBlock(BlockConfig(d_model=16, n_heads=4, **kwargs)).eval()
    randomize(written, seed=6)
    fused = TransformerBlock(BlockConfig(d_model=16, n_heads=4, fused=True, **kwargs)).eval()
    fused.load_state_dict(written.state_dict())
    assert type(fused.ln_1) is not type(written.ln_1)
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(7), requires_grad=True)
    out_w, out_f = written(x), fused(x)
    assert (out_w - out_f).abs().max().item() < 1e-5
    (grad_w,) = torch.autograd.grad(out_w.square().sum(), x)
    (grad_f,) = torch.autograd.grad(out_f.square().sum(), x)
    assert (grad_w - grad_f).abs().max().item() < 1e-4


def test_modern_options_off_keep_the_state_dict():
    plain = TransformerBlock(BlockConfig(d_model=16, n_heads=4))
    explicit = TransformerBlock(BlockConfig(d_model=16, n_heads=4, n_kv_heads=4, rope_theta=None,
                                            qk_norm=False, qkv_bias=True))
    shapes = [(k, v.shape) for k, v in plain.state_dict().items()]
    assert shapes == [(k, v.shape) for k, v in explicit.state_dict().items()]
    assert dict(shapes)["attn.qkv.weight"] == (48, 16)


def test_modern_options_reach_the_attention():
    cfg = BlockConfig(d_model=16, n_heads=4, n_kv_heads=1, rope_theta=500.0, qk_norm=True,
                      bias=False, qkv_bias=True, eps=1e-6)
    attn = TransformerBlock(cfg).attn
    assert (attn.n_kv_heads, attn.rope_theta, attn.q_norm.eps) == (1, 500.0, 1e-6)
    assert attn.qkv.weight.shape == (16 + 2 * 4, 16) and attn.qkv.bias is not None
    assert attn.proj.bias is None
    assert (cfg.kv_heads, cfg.qkv_has_bias) == (1, True)
    assert (BlockConfig().kv_heads, BlockConfig(bias=False).qkv_has_bias) == (4, False)


def test_repr_shows_the_modern_options_only_when_set():
    plain = repr(BlockConfig(d_model=16, n_heads=4))
    assert plain.endswith("eps=1e-05, fused=False)") and "rope_theta" not in plain
    assert repr(BlockConfig(d_model=16, n_heads=4, n_kv_heads=2, qk_norm=True)).endswith(
        "fused=False, n_kv_heads=2, qk_norm=True)")
