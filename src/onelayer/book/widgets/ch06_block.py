"""Chapter 6 panels: where one block's parameters and FLOPs go."""

from __future__ import annotations

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from onelayer.block import BlockConfig, TransformerBlock
from onelayer.book.panels import PagePanel
from onelayer.book.plotting import new_figure
from onelayer.book.widgets.frames import frame_player
from onelayer.params import block_flops, block_parameter_breakdown

BLOCK_PART_NAMES = {"attention": "注意力", "ffn": "FFN", "norms": "归一化"}
BLOCK_FLOP_NAMES = {"attention_proj": "注意力的投影", "attention_scores": "注意力分数与加权",
                    "ffn": "FFN"}
BLOCK_COLORS = {"attention": "tab:blue", "attention_proj": "tab:blue",
                "attention_scores": "lightsteelblue", "ffn": "tab:orange", "norms": "tab:green"}


def meta_block(d_model: int, ratio: float, gated: bool, norm: str = "layernorm",
               bias: bool = True, d_head: int = 64) -> TransformerBlock:
    """A block on the meta device (shapes only, no memory): d_ff = round(ratio·d_model),
    n_heads = d_model / d_head (at least 1); GELU when plain, SwiGLU when gated."""
    n_heads = max(1, d_model // d_head)
    d_ff = max(1, round(ratio * d_model))
    cfg = BlockConfig(d_model, n_heads, d_ff, "silu" if gated else "gelu", gated, norm,
                      bias=bias)
    with torch.device("meta"):
        return TransformerBlock(cfg)


def _shares(parts: dict[str, int]) -> dict[str, float]:
    total = sum(parts.values())
    return {k: v / total for k, v in parts.items()}


def _stacked_bars(ax, rows: dict[str, dict[str, float]], names: dict[str, str]) -> None:
    """One horizontal bar per row, its parts stacked to 100 %, labelled when wide enough."""
    for i, shares in enumerate(rows.values()):
        left = 0.0
        for key, share in shares.items():
            ax.barh(i, share * 100, left=left, height=0.6, color=BLOCK_COLORS[key],
                    label=names[key] if i == 0 else None)
            if share >= 0.08:
                ax.text(left + share * 50, i, f"{share:.0%}", ha="center", va="center",
                        fontsize=9, color="black" if key == "attention_scores" else "white")
            left += share * 100
    ax.set_xlim(0, 100)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # 第一行在上
    ax.grid(False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=3, fontsize=8,
              frameon=False, handlelength=1.2, columnspacing=1.0)


def block_breakdown_figure(blocks: dict[str, TransformerBlock], seq_len: int,
                           title: str) -> Figure:
    """Left: each block's parameters by part; right: its forward FLOPs by part at seq_len."""
    fig = new_figure(figsize=(9.6, 1.7 + 0.45 * len(blocks)), layout="constrained")
    ax_p, ax_f = fig.subplots(1, 2)
    _stacked_bars(ax_p, {k: _shares(block_parameter_breakdown(b)) for k, b in blocks.items()},
                  BLOCK_PART_NAMES)
    _stacked_bars(ax_f, {k: _shares(block_flops(b, seq_len)) for k, b in blocks.items()},
                  BLOCK_FLOP_NAMES)
    ax_p.set_yticks(range(len(blocks)), list(blocks))
    ax_f.set_yticks(range(len(blocks)), [])
    ax_p.set_xlabel("参数占比（%）")
    ax_f.set_xlabel(f"前向 FLOPs 占比（%），T = {seq_len}")
    fig.suptitle(title)
    return fig


def block_ratio_frames(d_model: int = 768, seq_len: int = 1024) -> widgets.VBox:
    """Chapter 6, without a kernel: slide d_ff/d_model; parameter and FLOP shares of a plain
    GELU block and a SwiGLU block of the same d_ff."""
    ratios = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]
    kinds = {"GELU + LayerNorm": (False, "layernorm", True),
             "SwiGLU + RMSNorm": (True, "rmsnorm", False)}

    def blocks(ratio: float) -> dict[str, TransformerBlock]:
        return {name: meta_block(d_model, ratio, *flags) for name, flags in kinds.items()}

    def draw(ratio: float) -> Figure:
        return block_breakdown_figure(
            blocks(ratio), seq_len, f"d_ff = {ratio:g}·d_model（d_model = {d_model}）")

    def alt(ratio: float) -> str:
        shares = [_shares(block_parameter_breakdown(b))["ffn"] for b in blocks(ratio).values()]
        return (f"两组堆叠横条：d_ff = {ratio:g}·d_model 时，GELU 块与 SwiGLU 块的参数"
                f"（左）和 T = {seq_len} 时前向 FLOPs（右）在注意力、FFN、归一化之间的占比；"
                f"FFN 的参数占比分别为 {shares[0]:.0%} 和 {shares[1]:.0%}。")

    return frame_player(draw, ratios, "d_ff 倍数", alt, start=ratios.index(4.0))


BLOCK_D_MODELS = (64, 256, 768, 1024, 2048, 4096)


def block_explorer() -> PagePanel:
    """Pick d_model, d_ff/d_model, plain or gated, the norm, biases and T; see where one
    block's parameters and FLOPs go.

    Computed in the page (``panels/block.js``) by closed-form counts under the conventions
    of ``block_parameter_breakdown`` and ``block_flops`` (for the block ``meta_block`` builds);
    a test compares them with those functions over every choice of the controls.
    """
    return PagePanel("block", {"d_models": list(BLOCK_D_MODELS), "d_model": 768, "ratio": 4.0,
                               "seq_len": 1024}, "一个块的参数与计算量")
