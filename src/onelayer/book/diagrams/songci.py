"""Chapter 10's pictures of 格律: one ci with each character's tone and its rhymes, and a 词牌's
form (the tone grid and the rhyme slots) read from ci."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.patches import Circle, Rectangle

from onelayer import metre
from onelayer.book.diagrams.canvas import INK, MUTED, SMALL, Diagram, drawing
from onelayer.chapters.ch10_songci import Form

# 平 and 仄 each have a fill and a text mark (colour is never the only sign); a free place is
# white and marked 中.
TONE_FILLS = {"平": "#dce7f6", "仄": "#fbe4d5", "中": "#ffffff"}
RHYME = "#c0392b"


@drawing
def annotated_ci_diagram(text: str, tune: str, tone: str = "平",
                         book: str = "词林正韵") -> Diagram:
    """One ci of ``tune`` line by line, each character over its tone (``metre.tone``: 平, 仄, 中
    for a character listed under both, · when the table lacks it); each line's last character
    outlined in red when it rhymes with the first line's in ``tone`` (``metre.rhymes``), with
    its class in ``book``."""
    lines = metre.ci_lines(text)
    if not lines:
        raise ValueError(f"text 应是一首词的正文，实际为 {text!r}")
    cell = 0.36
    width = min(4.6, 0.45 + cell * max(map(len, lines)) + 1.6)
    height = 0.55 + len(lines) * (cell + 0.12) + 0.45
    d = Diagram(width, height, f"{tune}的平仄与韵脚")
    top, left = height - 0.5, 0.3
    d.text(width / 2, height - 0.2, f"{tune}：每个字下面是它的声调", size=SMALL, color=MUTED)
    anchor = lines[0][-1]
    for i, line in enumerate(lines):
        y = top - i * (cell + 0.12) - cell / 2
        for j, char in enumerate(line):
            x = left + j * cell + cell / 2
            mark = metre.tone(char) or "·"
            d.ax.add_patch(Rectangle((x - cell / 2, y - cell / 2), cell, cell,
                                     facecolor=TONE_FILLS.get(mark, "#ffffff"),
                                     edgecolor="#bbbbbb", linewidth=0.6))
            d.text(x, y + 0.06, char, color=INK)
            d.text(x, y - 0.11, mark, size=7, color=MUTED)
        end = left + (len(line) - 1) * cell + cell / 2
        rhymes = i == 0 or metre.rhymes(anchor, line[-1], tone, book)
        if rhymes:
            d.ax.add_patch(Rectangle((end - cell / 2 + 0.02, y - cell / 2 + 0.02),
                                     cell - 0.04, cell - 0.04, facecolor="none",
                                     edgecolor=RHYME, linewidth=1.6))
        groups = "、".join(sorted(metre.rhyme_groups(line[-1], book, tone))) or f"无{tone}声"
        label = f"起韵：{groups}" if i == 0 else f"押韵：{groups}" if rhymes else "不押"
        d.text(end + cell / 2 + 0.08, y, label, size=SMALL,
               color=RHYME if rhymes else MUTED, ha="left")
    d.text(0.05, 0.28, "平、仄：字表里这个字的声调；中：字表里平仄两读", size=SMALL, color=MUTED,
           ha="left")
    d.text(0.05, 0.1, f"红框：韵脚，末字与首句末字在{tone}声里同属{book}的一部", size=SMALL,
           color=MUTED, ha="left")
    return d


@drawing
def ci_form_diagram(form: Form, threshold: float = 0.9, halves: int = 2,
                    score: Sequence[str] | None = None) -> Diagram:
    """The form as a grid: a row per line, a cell per character, marked 平 or 仄 where at least
    ``threshold`` of the ci agree (and the share that does), 中 where the place is free; the
    first line's end and each rhyme slot's end outlined in red, with how often that line
    rhymes with the first. The lines are split into ``halves`` (a 词's 片). ``score``: the
    printed 词谱, a string of 平/仄/中 per line, drawn above each row; a place the 谱 leaves
    free (中) where the ci agree is outlined with a dashed line."""
    if score is not None and [len(line) for line in score] != list(form.pattern):
        raise ValueError(f"score 应为每句一串平仄、句长 {list(form.pattern)}，"
                         f"实际为 {list(score)!r}")
    cell, gap = 0.42, 0.2
    strip = 0.22 if score is not None else 0.0
    rows = len(form.pattern)
    per_half = -(-rows // halves)
    width = min(4.6, 0.5 + cell * max(form.pattern) + 1.45)
    height = 0.75 + rows * (cell + strip) + (halves - 1) * gap + 0.5 + 0.2 * (score is not None)
    d = Diagram(width, height, f"{form.tune}的格律：平仄与韵脚")
    left, top = 0.5, height - 0.55
    d.text(left + cell * max(form.pattern) / 2, height - 0.22,
           f"{form.tune}：每格是多数词在这里用的声调", size=SMALL, color=MUTED)
    for i, length in enumerate(form.pattern):
        y = top - i * (cell + strip) - strip - (i // per_half) * gap - cell / 2
        if i % per_half == 0:
            d.text(0.2, y, "上片" if i == 0 else "下片", size=SMALL, color=MUTED)
        if score is not None:
            d.text(0.3, y + cell / 2 + strip / 2, "谱", size=7, color=MUTED)
        for j in range(length):
            share = form.grid.agreement[i][j]
            tone = form.grid.majority[i][j] if share >= threshold else "中"
            x = left + j * cell + cell / 2
            d.ax.add_patch(Rectangle((x - cell / 2, y - cell / 2), cell, cell,
                                     facecolor=TONE_FILLS[tone], edgecolor="#bbbbbb",
                                     linewidth=0.6))
            d.text(x, y + 0.06, tone, color=INK if tone != "中" else MUTED)
            d.text(x, y - 0.12, f"{share:.0%}", size=7, color=MUTED)
            if score is not None:
                printed = score[i][j]
                d.text(x, y + cell / 2 + strip / 2, printed, size=7,
                       color=MUTED if printed == "中" else INK)
                if printed == "中" and tone != "中":
                    d.ax.add_patch(Rectangle((x - cell / 2 + 0.03, y - cell / 2 + 0.03),
                                             cell - 0.06, cell - 0.06, facecolor="none",
                                             edgecolor=INK, linewidth=0.9, linestyle=(0, (2, 2))))
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
    if score is not None:
        d.text(0.05, 0.5, "小字“谱”：印出的词谱（中 = 可平可仄）；虚线框：谱不论，词人却多用一声",
               size=SMALL, color=MUTED, ha="left")
    d.text(0.05, 0.3, f"平/仄：至少 {threshold:.0%} 的词在此用同一声调（格里是这个比例）；"
           "中：不定", size=SMALL, color=MUTED, ha="left")
    d.text(0.05, 0.1, f"红框：韵脚；右边是末字与首句末字同韵（{form.book}）的比例",
           size=SMALL, color=MUTED, ha="left")
    return d


@drawing
def rhyme_arms_diagram() -> Diagram:
    """What the rhyme study changes in the recipe, on 晏殊's first two lines: the rhyme class
    added to each character's row of the (tied) token table, the loss at a rhyming line end
    weighted, each character read with the next one's place (its countdown to the line's end
    and whether it ends a rhyme slot), and each line written end first."""
    from onelayer import metre
    from onelayer.chapters.ch10_place import OUTSIDE, text_places
    from onelayer.chapters.ch10_rhyme import reversed_lines, rhyme_ends

    width, height = 4.6, 5.5
    d = Diagram(width, height, "押韵研究改了配方的哪几处")
    d.text(0.05, height - 0.2, "一、告诉模型韵部：字的行加上它的韵部的行", size=SMALL, ha="left")
    for k, char in enumerate("东冬风"):
        y = height - 0.55 - k * 0.38
        (group,) = metre.rhyme_groups(char, "词林正韵")
        d.box(0.75, y, 0.9, 0.28, f"E[{char}]", size=SMALL)
        d.op(1.45, y, "+", radius=0.1)
        d.box(2.35, y, 1.35, 0.28, f"G[{group}]", kind="norm", size=SMALL)
        d.text(3.15, y, f"= “{char}”的新行", size=SMALL, ha="left")
    d.text(0.05, height - 1.72, "三个字共用一行 G；输入和输出（同一张表）都用新行", size=7,
           color=MUTED, ha="left")

    text = "浣溪沙：一曲新词酒一杯，去年天气旧亭台。"
    start = text.index("：") + 1
    heavy = set(rhyme_ends(text, "词林正韵"))
    cell = 4.3 / (len(text) - start)
    top = height - 2.05
    d.text(0.05, top, "二、加重韵脚的损失：与首句末字同韵的句末字 ×10", size=SMALL, ha="left")
    for k, char in enumerate(text[start:]):
        x = 0.2 + (k + 0.5) * cell
        bar = 0.45 if start + k in heavy else 0.045
        d.ax.add_patch(Rectangle((x - cell * 0.35, top - 0.75), cell * 0.7, bar,
                                 facecolor=RHYME if bar > 0.1 else "#bbbbbb", linewidth=0))
        d.text(x, top - 0.88, char, size=SMALL)
    d.text(width - 0.05, top - 0.25, "×10（第 1500 步起）", size=7, color=RHYME, ha="right")

    place = top - 1.3
    d.text(0.05, place, "三、告诉模型位置：每个字离句末还有几个字，是不是韵脚", size=SMALL,
           ha="left")
    places = text_places(text, "词林正韵")
    for k, char in enumerate(text[start:]):
        x = 0.2 + (k + 0.5) * cell
        left, slot = places[start + k]
        d.text(x, place - 0.32, char, size=SMALL)
        d.text(x, place - 0.6, "·" if left == OUTSIDE else str(left), size=SMALL,
               color=RHYME if slot else MUTED)
    d.text(width - 0.05, place - 0.85, "红：韵脚（模型读每个字时，看到的是下一个字的这两样）",
           size=7, color=RHYME, ha="right")

    low = place - 1.15
    d.text(0.05, low, "四、每句倒着写：韵脚字先写", size=SMALL, ha="left")
    d.text(0.2, low - 0.32, text[start:], size=SMALL, ha="left", color=MUTED)
    d.text(0.2, low - 0.62, reversed_lines(text[start:]), size=SMALL, ha="left")
    return d


@drawing
def training_step_diagram(steps: int = 100, warmup: int = 20, norm: float = 2.0) -> Diagram:
    """One step of the chapter's training loop and the three things it adds to chapter 7's:
    the gradient clipped to norm 1, the learning rate's factor (warm-up, then a half cosine
    down to 10 %), and AdamW's decay of the weights themselves."""
    from onelayer.train import warmup_cosine

    width, height = 4.6, 3.0
    d = Diagram(width, height, "一步训练：裁剪梯度、按日程取学习率、AdamW 更新")
    top = height - 0.3
    steps_row = [("批次", "stream"), ("小 GPT", "weight"), ("损失", "note"), ("梯度 g", "note"),
                 ("裁剪", "note"), ("AdamW", "weight")]
    xs = [0.4 + k * 0.76 for k in range(len(steps_row))]
    for k, (label, kind) in enumerate(steps_row):
        d.box(xs[k], top, 0.6, 0.3, label, kind=kind, size=SMALL)
        if k:
            d.arrow((xs[k - 1] + 0.3, top), (xs[k] - 0.3, top))
    d.text(width / 2, top - 0.36, "PyTorch 的 AdamW：w ← w − lr·倍数(t)·"
           "( $\\hat m$ / ($\\sqrt{\\hat v}$ + ε) + λ·w )", size=SMALL)

    # Clipping: a gradient of norm `norm` is scaled back onto the circle of radius 1.
    unit, cx, cy = 0.55, 1.05, 0.95
    d.ax.add_patch(Circle((cx, cy), unit, facecolor="none", edgecolor=MUTED, linewidth=0.8,
                          linestyle=(0, (3, 2))))
    direction = (0.8, 0.6)
    d.arrow((cx, cy), (cx + norm * unit * direction[0] * 0.8, cy + norm * unit * direction[1]
                       * 0.8), color=MUTED, dashed=True)
    d.arrow((cx, cy), (cx + unit * direction[0], cy + unit * direction[1]), color=RHYME)
    d.text(cx + 0.8, cy + 0.85, f"‖g‖ = {norm:g}", size=SMALL, color=MUTED, ha="left")
    d.text(cx + 0.5, cy + 0.1, "缩到 1", size=SMALL, color=RHYME, ha="left")
    d.text(1.15, 0.18, "梯度裁剪：范数超过 1 时按比例缩短", size=SMALL)

    # The schedule: the learning rate's factor over the steps.
    left, bottom, w, h = 2.55, 0.5, 1.85, 1.1
    d.line([(left, bottom), (left + w, bottom)], color=MUTED, width=0.8)
    d.line([(left, bottom), (left, bottom + h)], color=MUTED, width=0.8)
    points = [(left + w * s / (steps - 1), bottom + h * warmup_cosine(s, steps, warmup))
              for s in range(steps)]
    d.line(points, color="#3b6aa8")
    x_warm = left + w * warmup / (steps - 1)
    d.line([(x_warm, bottom), (x_warm, bottom + h)], color=MUTED, dashed=True, width=0.7)
    d.text(x_warm - 0.05, bottom + h + 0.12, f"预热 {warmup} 步", size=7, color=MUTED)
    d.text(left + w, bottom + 0.1 * h + 0.14, "10%", size=7, color=MUTED, ha="right")
    d.text(left - 0.06, bottom + h, "1", size=7, color=MUTED, ha="right")
    d.text(left + w / 2, 0.18, "学习率的倍数：先升，再沿余弦降", size=SMALL)
    return d


@drawing
def sampling_diagram(chars: str = "风花月春人酒",
                     logits: Sequence[float] = (2.0, 1.5, 1.0, 0.5, 0.0, -1.0)) -> Diagram:
    """The six characters' probabilities as bars, as they are and after the three ways of
    changing the logits: temperature 0.5, top-k = 3, top-p = 0.9. A character a method drops
    is an empty dashed bar marked ×."""
    import torch

    from onelayer.model import sampling_logits

    scores = torch.tensor(list(logits))
    panels = [("原始", scores), ("τ = 0.5", sampling_logits(scores, temperature=0.5)),
              ("top-k = 3", sampling_logits(scores, top_k=3)),
              ("top-p = 0.9", sampling_logits(scores, top_p=0.9))]
    width, height = 4.6, 2.0
    d = Diagram(width, height, "温度、top-k 与核采样怎样改变六个字的概率")
    panel_w, bar, base, scale = 1.1, 0.13, 0.5, 1.6
    for k, (title, panel) in enumerate(panels):
        left = 0.06 + k * (panel_w + 0.03)
        probs = panel.softmax(-1).tolist()
        d.text(left + panel_w / 2, height - 0.14, title, size=SMALL)
        d.line([(left, base), (left + panel_w - 0.06, base)], color=MUTED, width=0.6)
        for j, (char, p) in enumerate(zip(chars, probs)):
            x = left + 0.1 + j * 0.17
            kept = panel[j].item() != float("-inf")
            if kept:
                d.ax.add_patch(Rectangle((x - bar / 2, base), bar, p * scale,
                                         facecolor="#3b6aa8", linewidth=0))
                d.text(x, base + p * scale + 0.08, f"{p:.2f}".lstrip("0"), size=6,
                       color=MUTED)
            else:
                d.ax.add_patch(Rectangle((x - bar / 2, base), bar, 0.12, facecolor="none",
                                         edgecolor=MUTED, linewidth=0.6, linestyle=(0, (2, 1))))
                d.text(x, base + 0.22, "×", size=8, color=RHYME)
            d.text(x, base - 0.13, char, size=SMALL)
    d.text(width / 2, 0.12, "条高：softmax 后的概率；×：这个办法把它的 logit 设成 −∞",
           size=SMALL, color=MUTED)
    return d
