"""Chapter 11: the 宋词 model opened up, each finding placed on the part that shows it."""

from __future__ import annotations

from collections.abc import Mapping

from onelayer.book.diagrams.canvas import MUTED, SMALL, Diagram, drawing

FOUND = "#c0392b"


@drawing
def inside_diagram(n_layers: int, n_heads: int, heads: Mapping[tuple[int, int], str],
                   ffns: Mapping[int, str], lens: Mapping[int, str], note: str) -> Diagram:
    """The model bottom-up: the embeddings, then per block its heads (one box each) and its
    FFN; ``heads`` labels (block, head) boxes with what they were found to do, ``ffns`` the
    FFN of a block, ``lens`` what the logit lens reads after a block (-1: after the
    embeddings); ``note`` is said under the picture."""
    row, width = 0.78, 4.6
    height = 0.95 + n_layers * row + 0.75
    d = Diagram(width, height, "打开宋词模型：每一处发现在哪一块")
    head_w, gap, left = 0.36, 0.06, 0.62
    ffn_x = left + n_heads * (head_w + gap) + 0.42
    y = 0.75
    d.box(1.75, y, 2.3, 0.26, "词嵌入 + 位置嵌入", kind="weight", size=SMALL)
    if -1 in lens:
        d.text(3.0, y, lens[-1], size=SMALL, color=MUTED, ha="left")
    for layer in range(n_layers):
        y += row
        d.text(0.42, y, f"块 {layer}", size=SMALL, color=MUTED, rotation=90)
        for h in range(n_heads):
            x = left + h * (head_w + gap) + head_w / 2
            found = (layer, h) in heads
            d.box(x, y, head_w, 0.3, f"头{h}", kind="attention", size=SMALL)
            if found:
                d.box(x, y, head_w + 0.04, 0.34, kind="note", filled=False)
                d.text(x, y + 0.27, heads[(layer, h)], size=SMALL, color=FOUND)
        d.box(ffn_x, y, 0.6, 0.3, "FFN", kind="activation", size=SMALL)
        if layer in ffns:
            d.text(ffn_x, y + 0.27, ffns[layer], size=SMALL, color=FOUND)
        if layer in lens:
            d.text(ffn_x + 0.4, y, lens[layer], size=SMALL, color=MUTED, ha="left")
        d.arrow((0.2, y - row + (0.13 if layer == 0 else 0)), (0.2, y), color=MUTED)
    d.text(0.2, y + 0.22, "残差流", size=SMALL, color=MUTED)
    d.text(width / 2, 0.3, note, size=SMALL, color=FOUND)
    d.text(width / 2, height - 0.25, "右侧灰字：读出到这一块为止，logit 透镜看到什么", size=SMALL,
           color=MUTED)
    return d
