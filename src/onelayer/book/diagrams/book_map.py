"""The front page: one Pre-Norm layer of a small GPT, each part marked with the chapter that
builds it. The page shows it as images/book_map.svg, this drawing's output; a test
(tests/book/test_intro.py) checks that the file is current."""

from __future__ import annotations

from matplotlib.patches import Circle

from onelayer.book.diagrams.blocks import ATTENTION, LN, sublayer
from onelayer.book.diagrams.canvas import INK, MUTED, SMALL, Diagram, drawing

STEP, BOX_H = 0.36, 0.24  # sublayer()'s spacing: each box is STEP below the previous one
FFN_PARTS = [("升维 $W_1$", "weight"), ("激活函数", "activation"), ("降维 $W_2$", "weight")]


def _badge(d: Diagram, x: float, y: float, chapter: int, label: str) -> None:
    """The chapter's number in a circle at (x, y), what it builds on its right."""
    d.ax.add_patch(Circle((x, y), 0.1, facecolor="white", edgecolor=INK, linewidth=0.9))
    d.text(x, y, str(chapter), size=SMALL - 1)
    d.text(x + 0.16, y, label, size=SMALL, ha="left")


def _centres(top: float, n: int) -> list[float]:
    """The centres of n boxes that sublayer() draws under the stream's point ``top``."""
    return [top - (i + 1) * STEP + BOX_H / 2 for i in range(n)]


@drawing
def book_map_diagram() -> Diagram:
    """A small GPT drawn around one of its Pre-Norm blocks, top to bottom: the embeddings,
    LayerNorm → self-attention → ⊕, LayerNorm → W1 → activation → W2 → ⊕ (the block, ×N),
    ln_f and the next token's scores; a numbered badge beside each part names the chapter
    that builds it (1–9), and two lines under it the chapters that use the whole model
    (10, 11)."""
    d = Diagram(3.3, 4.75, "一层 Transformer：各章在哪里")
    x, w, labels = 0.95, 1.2, 2.15
    d.box(x, 4.55, w, 0.26, "词元 → 词嵌入 + 位置", kind="weight", size=SMALL)
    top = 4.2
    d.line([(x, 4.42), (x, top)])
    ln1, attention = _centres(top, 2)
    y = sublayer(d, x, top, [LN, ATTENTION], w=w)
    add1 = y + 0.13
    ln2, w1, act, w2 = _centres(y, 4)
    y = sublayer(d, x, y, [LN, *FFN_PARTS], w=w)
    add2 = y + 0.13
    d.box(x + 0.13, (top + y) / 2 + 0.02, 1.65, top - y + 0.2, kind="note", dashed=True,
          filled=False)
    d.text(x + 0.8, y + 0.05, "×N", size=SMALL, color=MUTED)
    d.arrow((x, y), (x, y - 0.2))
    d.box(x, y - 0.33, w, 0.26, "ln_f（LayerNorm）", kind="norm", size=SMALL)
    d.arrow((x, y - 0.46), (x, y - 0.66))
    d.text(x, y - 0.78, "下一个词元的分数", size=SMALL)

    _badge(d, labels, top + 0.1, 6, "组装一个块")
    _badge(d, labels, ln1, 4, "层归一化")
    _badge(d, labels, attention, 5, "自注意力")
    _badge(d, labels, add1, 3, "残差连接")
    _badge(d, labels, ln2, 8, "前置还是后置")
    _badge(d, labels, w1, 1, "前馈网络")
    _badge(d, labels, act, 2, "激活函数")
    _badge(d, labels, (w2 + add2) / 2, 9, "今天的一层")
    _badge(d, labels, y - 0.33, 7, "小 GPT")
    _badge(d, 0.3, y - 1.1, 10, "学写宋词")
    _badge(d, labels, y - 1.1, 11, "拆开一层")
    return d

