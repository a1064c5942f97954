"""Chapter 10's picture of a 词牌's form: the tone grid and the rhyme slots, read from ci."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from onelayer.book.diagrams.canvas import INK, MUTED, SMALL, Diagram, drawing
from onelayer.chapters.ch10_songci import Form

# 平 and 仄 each have a fill and a text mark (colour is never the only sign); a free place is
# white and marked 中.
TONE_FILLS = {"平": "#dce7f6", "仄": "#fbe4d5", "中": "#ffffff"}
RHYME = "#c0392b"


@drawing
def ci_form_diagram(form: Form, threshold: float = 0.9, halves: int = 2) -> Diagram:
    """The form as a grid: a row per line, a cell per character, marked 平 or 仄 where at least
    ``threshold`` of the ci agree (and the share that does), 中 where the place is free; the
    first line's end and each rhyme slot's end outlined in red, with how often that line
    rhymes with the first. The lines are split into ``halves`` (a 词's 片)."""
    cell, gap = 0.42, 0.2
    rows = len(form.pattern)
    per_half = -(-rows // halves)
    width = min(4.6, 0.5 + cell * max(form.pattern) + 1.45)
    height = 0.75 + rows * cell + (halves - 1) * gap + 0.5
    d = Diagram(width, height, f"{form.tune}的格律：平仄与韵脚")
    left, top = 0.5, height - 0.55
    d.text(left + cell * max(form.pattern) / 2, height - 0.22,
           f"{form.tune}：每格是多数词在这里用的声调", size=SMALL, color=MUTED)
    for i, length in enumerate(form.pattern):
        y = top - i * cell - (i // per_half) * gap - cell / 2
        if i % per_half == 0:
            d.text(0.2, y, "上片" if i == 0 else "下片", size=SMALL, color=MUTED)
        for j in range(length):
            share = form.grid.agreement[i][j]
            tone = form.grid.majority[i][j] if share >= threshold else "中"
            x = left + j * cell + cell / 2
            d.ax.add_patch(Rectangle((x - cell / 2, y - cell / 2), cell, cell,
                                     facecolor=TONE_FILLS[tone], edgecolor="#bbbbbb",
                                     linewidth=0.6))
            d.text(x, y + 0.06, tone, color=INK if tone != "中" else MUTED)
            d.text(x, y - 0.12, f"{share:.0%}", size=7, color=MUTED)
        end = left + (length - 1) * cell + cell / 2
        rhymed = i == 0 or i in form.slots
        if rhymed:
            d.ax.add_patch(Rectangle((end - cell / 2 + 0.02, y - cell / 2 + 0.02),
                                     cell - 0.04, cell - 0.04, facecolor="none",
                                     edgecolor=RHYME, linewidth=1.6))
        label = ("起韵" if i == 0 else
                 f"韵 {form.line_rhymes[i]:.0%}" if rhymed else
                 f"不押 {form.line_rhymes[i]:.0%}")
        d.text(end + cell / 2 + 0.08, y, label, size=SMALL,
               color=RHYME if rhymed else MUTED, ha="left")
    d.text(0.05, 0.3, f"平/仄：至少 {threshold:.0%} 的词在此用同一声调（格里是这个比例）；"
           "中：不定", size=SMALL, color=MUTED, ha="left")
    d.text(0.05, 0.1, f"红框：韵脚；右边是末字与首句末字同韵（{form.book}）的比例",
           size=SMALL, color=MUTED, ha="left")
    return d
