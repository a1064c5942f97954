"""The book's blocks and model rebuilt as their industrial peers, with the same weights.

Each function builds a PyTorch or Hugging Face ``transformers`` module from a small config
(nothing downloaded), copies our weights into it and returns it in eval mode, so the
chapters and the tests can compare outputs number by number. The peers: PyTorch's
encoder layer and multi-head attention; GPT-2; the Llama, Qwen2 and Qwen3 decoder layers
(rotary embeddings, grouped-query attention, q/k/v bias, QK-norm) and the Qwen models.
"""

from __future__ import annotations

import torch
from torch import nn

from onelayer.attention import CausalSelfAttention, causal_mask
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.checks import check_choice
from onelayer.model import TinyGPT

HF_GELU_NAMES = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}


def _plain_attention(block: BlockConfig) -> dict[str, object]:
    """The settings of a 2017/GPT-2 attention: every query head its own key and value, no
    rotation, no QK-norm, the q/k/v projection biased like the rest."""
    return {"kv_heads": block.n_heads, "rope_theta": None, "qk_norm": False,
            "qkv_has_bias": block.bias}


def _require_plain(attn: CausalSelfAttention, peer: str) -> None:
    if (attn.n_kv_heads, attn.rope_theta, attn.q_norm) != (attn.n_heads, None, None):
        raise ValueError(f"{peer} 的对照要求普通多头注意力（n_kv_heads = n_heads，不旋转，"
                         f"没有 QK-norm），实际 n_kv_heads={attn.n_kv_heads}，rope_theta="
                         f"{attn.rope_theta}，qk_norm={attn.q_norm is not None}")


def _require(block: BlockConfig, peer: str, **expected: object) -> None:
    for name, value in expected.items():
        if getattr(block, name) != value:
            raise ValueError(f"{peer} 要求 {name}={value!r}，实际为 {getattr(block, name)!r}")


def torch_encoder_layer(block: TransformerBlock) -> nn.TransformerEncoderLayer:
    """``nn.TransformerEncoderLayer`` (batch_first, dropout 0); call it with a causal mask."""
    cfg = block.config
    _require(cfg, "nn.TransformerEncoderLayer", norm="layernorm", gated=False, bias=True,
             **_plain_attention(cfg))
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

    _require(block, "GPT-2", norm="layernorm", norm_position="pre", gated=False, bias=True,
             **_plain_attention(block))
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


HF_FAMILIES = {"llama": "Llama", "qwen2": "Qwen2", "qwen3": "Qwen3"}


def _hf(family: str, name: str):
    """Class ``<Family><name>`` of ``transformers.models.<family>.modeling_<family>``, e.g.
    ``_hf("qwen2", "DecoderLayer")`` is ``Qwen2DecoderLayer`` (the three files share a layout)."""
    import importlib

    check_choice("family", family, HF_FAMILIES)
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    return getattr(module, HF_FAMILIES[family] + name)


def _require_decoder(block: BlockConfig, peer: str, rotary: bool, **expected: object) -> None:
    """Pre-Norm, RMSNorm, SwiGLU, no bias outside the attention's q/k/v: a Llama-style layer."""
    _require(block, peer, norm="rmsnorm", norm_position="pre", gated=True, activation="silu",
             bias=False, **expected)
    if not block.ffn_width:
        raise ValueError(f"{peer} 要求有 FFN 子层（d_ff > 0），实际 d_ff=0")
    if rotary:
        _require_rotation(block, peer)


def _require_rotation(block: BlockConfig, peer: str) -> None:
    if block.rope_theta is None:
        raise ValueError(f"{peer} 要求旋转位置编码（rope_theta 为正数），实际 rope_theta=None")


def decoder_config(family: str, block: BlockConfig, n_layers: int = 1, vocab_size: int = 8,
                   block_size: int = 8):
    """A ``LlamaConfig``/``Qwen2Config``/``Qwen3Config`` with the block's sizes, tied
    embeddings and the fused attention kernel."""
    config = _hf(family, "Config")(
        hidden_size=block.d_model, intermediate_size=block.ffn_width,
        num_attention_heads=block.n_heads, num_key_value_heads=block.kv_heads,
        head_dim=block.d_model // block.n_heads, rms_norm_eps=block.eps, hidden_act="silu",
        num_hidden_layers=n_layers, vocab_size=vocab_size, max_position_embeddings=block_size,
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
        # 不旋转的块（第 6 章）：θ 用不到，调用者以 no_rotation 传入角度
        rope_parameters={"rope_type": "default", "rope_theta": block.rope_theta or 10000.0},
    )
    config._attn_implementation = "sdpa"
    return config


def _copy_block_to_decoder_layer(block: TransformerBlock, peer: nn.Module) -> None:
    """Our ``qkv`` holds q, k and v one after another: split it into q_proj, k_proj, v_proj."""
    cfg, attn, mlp = block.config, peer.self_attn, peer.mlp
    kv_width = cfg.kv_heads * (cfg.d_model // cfg.n_heads)
    sizes = [cfg.d_model, kv_width, kv_width]
    projections = (attn.q_proj, attn.k_proj, attn.v_proj)
    pairs = [(theirs.weight, ours) for theirs, ours in
             zip(projections, block.attn.qkv.weight.split(sizes))]
    if block.attn.qkv.bias is not None:
        pairs += [(theirs.bias, ours) for theirs, ours in
                  zip(projections, block.attn.qkv.bias.split(sizes))]
    if block.attn.q_norm is not None:
        pairs += [(attn.q_norm.weight, block.attn.q_norm.weight),
                  (attn.k_norm.weight, block.attn.k_norm.weight)]
    pairs += [(attn.o_proj.weight, block.attn.proj.weight),
              (mlp.gate_proj.weight, block.mlp.w1.weight),  # 门：act(x·W1)
              (mlp.up_proj.weight, block.mlp.w3.weight),
              (mlp.down_proj.weight, block.mlp.w2.weight),
              (peer.input_layernorm.weight, block.ln_1.weight),
              (peer.post_attention_layernorm.weight, block.ln_2.weight)]
    with torch.no_grad():
        for theirs, ours in pairs:
            theirs.copy_(ours)


def _decoder_layer(family: str, block: TransformerBlock) -> nn.Module:
    peer = _hf(family, "DecoderLayer")(decoder_config(family, block.config), layer_idx=0)
    _copy_block_to_decoder_layer(block, peer)
    return peer.eval()


def llama_decoder_layer(block: TransformerBlock) -> nn.Module:
    """``transformers`` ``LlamaDecoderLayer``: RMSNorm, SwiGLU, no biases, Pre-Norm, rotary
    embeddings; grouped-query attention when n_kv_heads < n_heads.

    The layer takes its rotation angles as ``position_embeddings=(cos, sin)``: for a block
    with ``rope_theta`` pass ``rotary_position_embeddings(block, x, "llama")``; a block without
    rotation has no position information of its own, and matches the layer called with
    ``no_rotation(x, d_head)``.
    """
    _require_decoder(block.config, "Llama", rotary=False, qkv_has_bias=False, qk_norm=False)
    return _decoder_layer("llama", block)


def qwen2_decoder_layer(block: TransformerBlock) -> nn.Module:
    """``transformers`` ``Qwen2DecoderLayer``: Llama's layer with a bias on q, k and v only
    (``bias=False, qkv_bias=True``). Call it with ``rotary_position_embeddings(block, x)``."""
    _require_decoder(block.config, "Qwen2", rotary=True, qkv_has_bias=True, qk_norm=False)
    return _decoder_layer("qwen2", block)


def qwen3_decoder_layer(block: TransformerBlock) -> nn.Module:
    """``transformers`` ``Qwen3DecoderLayer``: Llama's layer with QK-norm (``qk_norm=True``),
    no biases. Call it with ``rotary_position_embeddings(block, x, "qwen3")``."""
    _require_decoder(block.config, "Qwen3", rotary=True, qkv_has_bias=False, qk_norm=True)
    return _decoder_layer("qwen3", block)


def rotary_position_embeddings(block: TransformerBlock, x: torch.Tensor,
                               family: str = "qwen2") -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) [1, T, d_head] for positions 0 … T − 1 of ``x`` [B, T, d_model], computed
    by the rotary module of the Hugging Face model ``family`` (``Qwen2RotaryEmbedding`` …)
    from the block's ``rope_theta``: what its decoder layers take as ``position_embeddings``."""
    _require_rotation(block.config, "rotary_position_embeddings")
    rotary = _hf(family, "RotaryEmbedding")(decoder_config(family, block.config))
    positions = torch.arange(x.shape[-2], device=x.device)[None]
    return rotary(x, positions)


def _causal_lm(family: str, model: TinyGPT) -> nn.Module:
    cfg = model.config
    config = decoder_config(family, cfg.block, cfg.n_layers, cfg.vocab_size, cfg.block_size)
    peer = _hf(family, "ForCausalLM")(config)
    peer.model.embed_tokens.load_state_dict(model.tok.state_dict())  # 输出层与之共享
    for ours, theirs in zip(model.blocks, peer.model.layers):
        _copy_block_to_decoder_layer(ours, theirs)
    peer.model.norm.load_state_dict(model.ln_f.state_dict())
    return peer.eval()


def qwen2_for_causal_lm(model: TinyGPT) -> nn.Module:
    """``transformers.Qwen2ForCausalLM`` with TinyGPT's weights: token embedding (tied to the
    output layer), Qwen2 decoder layers, final RMSNorm; positions come from the rotation."""
    _require_decoder(model.config.block, "Qwen2", rotary=True, qkv_has_bias=True, qk_norm=False)
    return _causal_lm("qwen2", model)


def qwen3_for_causal_lm(model: TinyGPT) -> nn.Module:
    """``transformers.Qwen3ForCausalLM`` with TinyGPT's weights (see ``qwen2_for_causal_lm``)."""
    _require_decoder(model.config.block, "Qwen3", rotary=True, qkv_has_bias=False, qk_norm=True)
    return _causal_lm("qwen3", model)


def no_rotation(x: torch.Tensor, d_head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary (cos, sin) of angle 0 for every position: q·cos + rotate(q)·sin = q."""
    shape = (*x.shape[:-1], d_head)
    return torch.ones(shape), torch.zeros(shape)


def torch_multihead_attention(attn: CausalSelfAttention) -> nn.MultiheadAttention:
    """``nn.MultiheadAttention`` (batch_first) with the same weights; call it with a causal
    ``attn_mask`` (it assumes nothing about order)."""
    _require_plain(attn, "nn.MultiheadAttention")
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

    _require_plain(attn, "GPT-2")
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
