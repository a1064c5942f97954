"""Parameter counting and forward FLOPs, read from the module itself."""

from __future__ import annotations

from torch import nn

from onelayer.block import TransformerBlock
from onelayer.checks import check_positive_int

# Which part of a block each submodule of ``TransformerBlock`` belongs to.
BLOCK_PARTS = {"attn": "attention", "mlp": "ffn", "ln_1": "norms", "ln_2": "norms"}


def count_parameters(module: nn.Module) -> int:
    """Number of trainable scalars in ``module``."""
    if not isinstance(module, nn.Module):
        raise ValueError(f"module 应为 torch.nn.Module，实际为 {type(module).__name__}")
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _check_block(block: object) -> TransformerBlock:
    if not isinstance(block, TransformerBlock):
        raise ValueError(
            f"block 应为 onelayer.block.TransformerBlock，实际为 {type(block).__name__}")
    return block


def block_parameter_breakdown(block: TransformerBlock) -> dict[str, int]:
    """Trainable parameters of one ``TransformerBlock`` per part, counted submodule by submodule.

    ``attention``: ``attn`` (Q, K, V and output projections); ``ffn``: ``mlp`` (0 when the
    block has no FFN); ``norms``: ``ln_1`` and ``ln_2``. The parts add up to
    ``count_parameters(block)``: a parameter outside these submodules raises ValueError.
    """
    _check_block(block)
    parts = {"attention": 0, "ffn": 0, "norms": 0}
    for name, child in block.named_children():
        n = count_parameters(child)
        if n and name not in BLOCK_PARTS:
            raise ValueError(f"子模块 {name!r} 有 {n} 个参数，"
                             f"但不属于 {sorted(BLOCK_PARTS)} 中的任何一个")
        if n:
            parts[BLOCK_PARTS[name]] += n
    own = sum(p.numel() for p in block.parameters(recurse=False) if p.requires_grad)
    if own:
        raise ValueError(f"块自身直接持有 {own} 个参数，无法归入注意力、FFN 或归一化")
    return parts


def _linear_flops_per_token(module: nn.Module | None) -> int:
    """2·in·out for every nn.Linear inside ``module``: one multiply-add = 2 FLOPs."""
    if module is None:
        return 0
    return sum(2 * m.in_features * m.out_features for m in module.modules()
               if isinstance(m, nn.Linear))


def block_flops(block: TransformerBlock, seq_len: int) -> dict[str, int]:
    """Forward FLOPs of one ``TransformerBlock`` on one sequence of ``seq_len`` tokens.

    Convention: a multiply-add is 2 FLOPs. Counted, per token:

    - ``attention_proj``: every ``nn.Linear`` in ``attn`` (Q, K, V, output), 2·in·out each;
    - ``attention_scores``: Q·Kᵀ and the weighted sum A·V, 2·T·d_model each, i.e.
      2·2·T·d_model, over the full T×T score matrix (the masked half is not subtracted);
    - ``ffn``: every ``nn.Linear`` in ``mlp``, 2·in·out each (0 without an FFN).

    Ignored: biases, softmax, scaling by 1/√d_head, norms, activations, the gate's product,
    residual adds and dropout — element-wise work of order T·d_model (softmax: T²·n_heads),
    small next to the matrix products. The in/out sizes are read from the module's layers.
    """
    _check_block(block)
    t = check_positive_int("seq_len", seq_len)
    return {
        "attention_proj": t * _linear_flops_per_token(block.attn),
        "attention_scores": 2 * 2 * t * t * block.attn.d_model,
        "ffn": t * _linear_flops_per_token(block.mlp),
    }
