"""The book's blocks and model rebuilt as their industrial peers, with the same weights.

Each function builds a PyTorch or Hugging Face ``transformers`` module from a small config
(nothing downloaded), copies our weights into it and returns it in eval mode, so the
chapters and the tests can compare outputs number by number.
"""

from __future__ import annotations

import torch
from torch import nn

from onelayer.attention import CausalSelfAttention, causal_mask
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.model import TinyGPT

HF_GELU_NAMES = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}


def _require(block: BlockConfig, peer: str, **expected: object) -> None:
    for name, value in expected.items():
        if getattr(block, name) != value:
            raise ValueError(f"{peer} 要求 {name}={value!r}，实际为 {getattr(block, name)!r}")


def torch_encoder_layer(block: TransformerBlock) -> nn.TransformerEncoderLayer:
    """``nn.TransformerEncoderLayer`` (batch_first, dropout 0); call it with a causal mask."""
    cfg = block.config
    _require(cfg, "nn.TransformerEncoderLayer", norm="layernorm", gated=False, bias=True)
    activation = {"relu": "relu", "gelu": "gelu"}.get(cfg.activation)
    if activation is None or not cfg.ffn_width:
        raise ValueError(f"nn.TransformerEncoderLayer 只支持 relu/gelu 且 d_ff > 0，"
                         f"实际 activation={cfg.activation!r}，d_ff={cfg.ffn_width}")
    ref = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.ffn_width, dropout=0.0,
                                     activation=activation, layer_norm_eps=cfg.eps,
                                     batch_first=True, norm_first=cfg.norm_position == "pre")
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(block.attn.qkv.weight)  # 同样按 Q、K、V 的顺序
        ref.self_attn.in_proj_bias.copy_(block.attn.qkv.bias)
    ref.self_attn.out_proj.load_state_dict(block.attn.proj.state_dict())
    ref.linear1.load_state_dict(block.mlp.w1.state_dict())
    ref.linear2.load_state_dict(block.mlp.w2.state_dict())
    ref.norm1.load_state_dict(block.ln_1.state_dict())
    ref.norm2.load_state_dict(block.ln_2.state_dict())
    return ref.eval()


def gpt2_config(block: BlockConfig, n_layers: int = 1, vocab_size: int = 8,
                block_size: int = 8):
    """A ``transformers.GPT2Config`` with the same sizes; GPT-2 is Pre-LN with biases."""
    import transformers  # imported here: it takes seconds, and only these peers need it

    _require(block, "GPT-2", norm="layernorm", norm_position="pre", gated=False, bias=True)
    if block.activation not in HF_GELU_NAMES or not block.ffn_width:
        raise ValueError(f"GPT-2 的 FFN 要求 activation 为 {sorted(HF_GELU_NAMES)} 之一且 "
                         f"d_ff > 0，实际 activation={block.activation!r}，d_ff={block.ffn_width}")
    return transformers.GPT2Config(
        n_layer=n_layers, n_embd=block.d_model, n_head=block.n_heads, n_inner=block.ffn_width,
        activation_function=HF_GELU_NAMES[block.activation], layer_norm_epsilon=block.eps,
        vocab_size=vocab_size, n_positions=block_size,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=None, eos_token_id=None,
    )


def _copy_block_to_gpt2(block: TransformerBlock, peer: nn.Module) -> None:
    """GPT-2 stores its linear layers as ``Conv1D`` with weight [in, out]: transpose."""
    pairs = [(block.attn.qkv, peer.attn.c_attn), (block.attn.proj, peer.attn.c_proj),
             (block.mlp.w1, peer.mlp.c_fc), (block.mlp.w2, peer.mlp.c_proj)]
    with torch.no_grad():
        for ours, theirs in pairs:
            theirs.weight.copy_(ours.weight.T)
            theirs.bias.copy_(ours.bias)
    peer.ln_1.load_state_dict(block.ln_1.state_dict())
    peer.ln_2.load_state_dict(block.ln_2.state_dict())


def gpt2_block(block: TransformerBlock) -> nn.Module:
    """One ``transformers`` ``GPT2Block``; it returns a tensor (or a tuple in old versions)."""
    import transformers

    peer = transformers.GPT2Model(gpt2_config(block.config)).h[0]
    _copy_block_to_gpt2(block, peer)
    return peer.eval()


def gpt2_lm_head_model(model: TinyGPT) -> nn.Module:
    """``transformers.GPT2LMHeadModel`` with TinyGPT's weights (both tie the LM head)."""
    import transformers

    cfg = model.config
    peer = transformers.GPT2LMHeadModel(
        gpt2_config(cfg.block, cfg.n_layers, cfg.vocab_size, cfg.block_size))
    peer.transformer.wte.load_state_dict(model.tok.state_dict())
    peer.transformer.wpe.load_state_dict(model.pos.state_dict())
    for ours, theirs in zip(model.blocks, peer.transformer.h):
        _copy_block_to_gpt2(ours, theirs)
    peer.transformer.ln_f.load_state_dict(model.ln_f.state_dict())
    return peer.eval()


def llama_decoder_layer(block: TransformerBlock) -> nn.Module:
    """``transformers`` ``LlamaDecoderLayer``: RMSNorm, SwiGLU, no biases, Pre-Norm.

    Llama rotates queries and keys by position (rotary embeddings); our block has no
    position information of its own, so call the layer with ``no_rotation(x, d_head)``.
    """
    import transformers
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    cfg = block.config
    _require(cfg, "Llama", norm="rmsnorm", norm_position="pre", gated=True, bias=False,
             activation="silu")
    config = transformers.LlamaConfig(
        hidden_size=cfg.d_model, intermediate_size=cfg.ffn_width,
        num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_heads,
        rms_norm_eps=cfg.eps, hidden_act="silu", attention_bias=False, mlp_bias=False,
        num_hidden_layers=1, vocab_size=8,
    )
    config._attn_implementation = "sdpa"
    peer = LlamaDecoderLayer(config, layer_idx=0)
    q, k, v = block.attn.qkv.weight.split(cfg.d_model)
    attn, mlp = peer.self_attn, peer.mlp
    pairs = [(attn.q_proj, q), (attn.k_proj, k), (attn.v_proj, v),
             (attn.o_proj, block.attn.proj.weight),
             (mlp.gate_proj, block.mlp.w1.weight),  # 门：act(x·W1)
             (mlp.up_proj, block.mlp.w3.weight), (mlp.down_proj, block.mlp.w2.weight)]
    with torch.no_grad():
        for theirs, ours in pairs:
            theirs.weight.copy_(ours)
        peer.input_layernorm.weight.copy_(block.ln_1.weight)
        peer.post_attention_layernorm.weight.copy_(block.ln_2.weight)
    return peer.eval()


def no_rotation(x: torch.Tensor, d_head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary (cos, sin) of angle 0 for every position: q·cos + rotate(q)·sin = q."""
    shape = (*x.shape[:-1], d_head)
    return torch.ones(shape), torch.zeros(shape)


def torch_multihead_attention(attn: CausalSelfAttention) -> nn.MultiheadAttention:
    """``nn.MultiheadAttention`` (batch_first) with the same weights; call it with a causal
    ``attn_mask`` (it assumes nothing about order)."""
    if attn.qkv.bias is None:
        raise ValueError("nn.MultiheadAttention 的对照要求 bias=True，实际 qkv 没有偏置")
    peer = nn.MultiheadAttention(attn.d_model, attn.n_heads, batch_first=True)
    with torch.no_grad():
        peer.in_proj_weight.copy_(attn.qkv.weight)  # 同样按 Q、K、V 的顺序
        peer.in_proj_bias.copy_(attn.qkv.bias)
    peer.out_proj.load_state_dict(attn.proj.state_dict())
    return peer.eval()


def gpt2_attention(attn: CausalSelfAttention) -> nn.Module:
    """The ``GPT2Attention`` of a one-block ``transformers.GPT2Model`` (built from a config,
    nothing downloaded) with the same weights, ``Conv1D`` ones transposed."""
    import transformers

    if attn.qkv.bias is None:
        raise ValueError("GPT-2 的注意力要求 bias=True，实际 qkv 没有偏置")
    config = gpt2_config(BlockConfig(d_model=attn.d_model, n_heads=attn.n_heads))
    config._attn_implementation = "eager"  # 显式写出的注意力矩阵，而不是融合内核
    peer = transformers.GPT2Model(config).h[0].attn
    with torch.no_grad():
        for ours, theirs in ((attn.qkv, peer.c_attn), (attn.proj, peer.c_proj)):
            theirs.weight.copy_(ours.weight.T)
            theirs.bias.copy_(ours.bias)
    return peer.eval()


def additive_causal_mask(t: int) -> torch.Tensor:
    """[1, 1, t, t]: 0 where a query may look, −∞ above the diagonal — the form in which
    ``GPT2Attention`` (called on its own, outside ``GPT2Model``) adds a mask to its scores."""
    return torch.zeros(t, t).masked_fill(~causal_mask(t), float("-inf"))[None, None]
