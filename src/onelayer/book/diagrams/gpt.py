"""Chapter 7: the tiny GPT from token ids to logits, with the model's own sizes."""

from __future__ import annotations

from onelayer.book.diagrams.blocks import ATTENTION, LN, sublayer
from onelayer.book.diagrams.canvas import MUTED, SMALL, Diagram, drawing
from onelayer.model import GPTConfig

TIED = "#3b6aa8"


@drawing
def tiny_gpt_diagram(config: GPTConfig) -> Diagram:
    """Token ids → token embedding E plus position embedding P → n_layers Pre-Norm blocks →
    ln_f → the tied unembedding (·Eᵀ, the same table as E) → logits for the next token."""
    block = config.block
    if block.norm_position != "pre" or block.rope_theta is not None:
        raise ValueError(f"这张图画的是带位置表的前置归一化 GPT，实际为 norm_position = "
                         f"{block.norm_position!r}、rope_theta = {block.rope_theta!r}")
    V, T, dim = config.vocab_size, config.block_size, block.d_model
    d = Diagram(4.6, 4.85, "小 GPT")
    x = 1.5
    d.box(x, 4.62, 1.5, 0.26, f"词元编号 idx [T]，T ≤ {T}", kind="note", size=SMALL)
    d.arrow((x, 4.49), (x, 4.3))
    d.box(x, 4.15, 1.5, 0.28, f"词嵌入 $E$ [{V}, {dim}]", kind="weight", size=SMALL)
    d.arrow((x, 4.01), (x, 3.79))
    d.op(x, 3.66, "+", radius=0.13)
    d.box(3.45, 3.66, 1.55, 0.28, f"位置嵌入 $P$ [{T}, {dim}]", kind="weight", size=SMALL)
    d.arrow((2.67, 3.66), (x + 0.13, 3.66))
    top = 3.53
    d.text(x + 1.25, top - 0.2, f"×{config.n_layers}", size=SMALL, color=MUTED, ha="left")
    y = sublayer(d, x, top - 0.05, [LN, ATTENTION])
    ffn = (f"FFN {dim}→{block.ffn_width}→{dim}", "weight")
    y = sublayer(d, x, y, [LN, ffn])
    d.box(x + 0.25, (top + y) / 2, 1.75, top - y + 0.1, kind="note", dashed=True, filled=False)
    d.text(x + 1.25, (top + y) / 2 - 0.15, f"前置归一化块\n{block.n_heads} 个头，"
           f"$d$ = {dim}", size=SMALL, color=MUTED, ha="left")
    y -= 0.05
    d.arrow((x, y), (x, y - 0.2))
    d.box(x, y - 0.33, 1.2, 0.26, "ln_f（LayerNorm）", kind="norm", size=SMALL)
    d.arrow((x, y - 0.46), (x, y - 0.66))
    d.box(x, y - 0.8, 1.5, 0.28, f"$\\cdot\\, E^\\top$ [{dim}, {V}]", kind="weight", size=SMALL)
    d.line([(x - 0.75, 4.15), (0.5, 4.15), (0.5, y - 0.8)], color=TIED, dashed=True)
    d.arrow((0.5, y - 0.8), (x - 0.75, y - 0.8), color=TIED, dashed=True)
    d.text(0.45, (4.15 + y - 0.8) / 2, "同一张表\n（共享）", size=SMALL, color=TIED, ha="right")
    d.arrow((x, y - 0.94), (x, y - 1.14))
    d.text(x, y - 1.27, f"logits [T, {V}]：每个位置下一个字的分数", size=SMALL)
    return d


@drawing
def training_loop_diagram(example: str = "蚁追蛋。猪养栗。") -> Diagram:
    """One training step of a language model: the target is the input shifted by one, the
    loss is the mean cross-entropy over every position, then zero_grad → backward → step."""
    if len(example) < 2:
        raise ValueError(f"示例至少要有 2 个字，实际为 {len(example)} 个")
    d = Diagram(4.6, 3.9, "训练的一步")
    n = min(len(example) - 1, 7)
    left = 2.3 - 0.25 * (n - 1) / 2
    for i in range(n):
        cx = left + 0.25 * i
        d.box(cx, 3.65, 0.23, 0.23, example[i], kind="stream", size=SMALL)
        d.box(cx, 2.35, 0.23, 0.23, example[i + 1], kind="note", size=SMALL)
        d.arrow((cx, 3.5), (cx, 3.27))
    d.text(left - 0.25, 3.65, "x", ha="right")
    d.text(left - 0.25, 2.35, "y", ha="right")
    d.text(left + 0.25 * n, 2.35, "  y = x 左移一位", size=SMALL, color=MUTED, ha="left")
    d.box(2.3, 3.12, 2.0, 0.26, "模型 net(x)：logits [B, T, V]", kind="attention", size=SMALL)
    d.arrow((2.3, 2.98), (2.3, 2.52))
    d.box(2.3, 1.95, 3.2, 0.34, "交叉熵：每个位置取 −ln p(正确的下一个字)，再平均",
          kind="activation", size=SMALL)
    d.arrow((2.3, 2.2), (2.3, 2.13))
    d.arrow((2.3, 1.77), (2.3, 1.55))
    d.text(2.3, 1.42, "loss（一个数）", size=SMALL)
    steps = [("optimizer.zero_grad()", "清掉上一步的 .grad"),
             ("loss.backward()", "把梯度写进每个参数的 .grad"),
             ("optimizer.step()", "按 .grad 更新权重")]
    for i, (code, say) in enumerate(steps):
        y = 1.05 - 0.36 * i
        d.box(1.35, y, 1.7, 0.28, code, kind="weight", size=SMALL)
        d.text(2.3, y, say, size=SMALL, color=MUTED, ha="left")
    d.line([(0.5, 0.33), (0.2, 0.33), (0.2, 3.12)], color=MUTED, dashed=True)
    d.arrow((0.2, 3.12), (1.3, 3.12), color=MUTED, dashed=True)
    d.text(0.25, 3.3, "下一步用新权重", size=SMALL, color=MUTED, ha="left")
    return d
