import pytest
import torch
from torch import nn

from onelayer.attention import CausalSelfAttention
from onelayer.block import BlockConfig, TransformerBlock


def randomize(module: nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3 + (p.dim() == 1) * 0.1)


def torch_encoder_layer(block: TransformerBlock) -> nn.TransformerEncoderLayer:
    cfg = block.config
    ref = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.hidden, dropout=0.0,
                                     activation="gelu", batch_first=True,
                                     norm_first=cfg.norm_position == "pre")
    ref.self_attn.in_proj_weight.data.copy_(block.attn.qkv.weight)
    ref.self_attn.in_proj_bias.data.copy_(block.attn.qkv.bias)
    ref.self_attn.out_proj.load_state_dict(block.attn.proj.state_dict())
    ref.linear1.load_state_dict(block.mlp.w1.state_dict())
    ref.linear2.load_state_dict(block.mlp.w2.state_dict())
    ref.norm1.load_state_dict(block.ln_1.state_dict())
    ref.norm2.load_state_dict(block.ln_2.state_dict())
    return ref.eval()


@pytest.mark.parametrize("position", ["pre", "post"])
def test_block_matches_torch_transformer_encoder_layer(position):
    block = TransformerBlock(BlockConfig(d_model=16, n_heads=4, norm_position=position)).eval()
    randomize(block, seed=0)
    ref = torch_encoder_layer(block)
    x = torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(1))
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        err = (block(x) - ref(x, src_mask=mask, is_causal=True)).abs().max().item()
    assert err < 1e-5


def test_pre_norm_block_matches_transformers_gpt2_block():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=4, vocab_size=8,
                                     n_positions=8, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, activation_function="gelu_new")
    gpt2 = transformers.GPT2Model(config).eval().h[0]
    block = TransformerBlock(BlockConfig(d_model=16, n_heads=4, activation="gelu_tanh")).eval()
    with torch.no_grad():  # GPT-2's Conv1D stores weights as [in, out]: transpose
        block.attn.qkv.weight.copy_(gpt2.attn.c_attn.weight.T)
        block.attn.qkv.bias.copy_(gpt2.attn.c_attn.bias)
        block.attn.proj.weight.copy_(gpt2.attn.c_proj.weight.T)
        block.attn.proj.bias.copy_(gpt2.attn.c_proj.bias)
        block.mlp.w1.weight.copy_(gpt2.mlp.c_fc.weight.T)
        block.mlp.w1.bias.copy_(gpt2.mlp.c_fc.bias)
        block.mlp.w2.weight.copy_(gpt2.mlp.c_proj.weight.T)
        block.mlp.w2.bias.copy_(gpt2.mlp.c_proj.bias)
    block.ln_1.load_state_dict(gpt2.ln_1.state_dict())
    block.ln_2.load_state_dict(gpt2.ln_2.state_dict())
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        theirs = gpt2(x)
        theirs = theirs[0] if isinstance(theirs, tuple) else theirs
        err = (block(x) - theirs).abs().max().item()
    assert err < 1e-5


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
    ({"norm_position": "middle"}, "norm_position 应为"),
    ({"norm": "batchnorm"}, "norm 应为"),
    ({"activation": "tanh"}, "activation 应为"),
    ({"dropout": 1.5}, "dropout 应在"),
])
def test_bad_configs_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BlockConfig(**kwargs)
