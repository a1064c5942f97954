"""Chapter 9: today's layer — query heads sharing key/value heads (MHA, GQA, MQA), one layer
of four generations side by side, and RoPE's pairs of dimensions turning with the position."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from matplotlib.patches import Arc, FancyBboxPatch

from onelayer.attention import check_kv_heads
from onelayer.book.diagrams.canvas import KINDS, MUTED, SMALL, Diagram, drawing
from onelayer.rope import rope_frequencies

STREAM = KINDS["stream"][0]
NEW = "#d0312d"  # the outline of what a generation changed


def _new(d: Diagram, x: float, y: float, w: float, h: float, pad: float = 0.035) -> None:
    """A red outline around the box of size w × h centred on (x, y): new in this column."""
    d.ax.add_patch(FancyBboxPatch(
        (x - w / 2 - pad, y - h / 2 - pad), w + 2 * pad, h + 2 * pad,
        boxstyle="round,pad=0,rounding_size=0.08", facecolor="none", edgecolor=NEW,
        linewidth=1.8))


# ---- Query heads sharing key/value heads ----------------------------------------------------

KV_NAMES = {"MHA": "多头", "GQA": "分组查询", "MQA": "多查询"}


def _kv_kind(n_heads: int, n_kv: int) -> str:
    return "MHA" if n_kv == n_heads else "MQA" if n_kv == 1 else "GQA"


@drawing
def kv_sharing_diagram(n_heads: int = 4, kv_options: Sequence[int] = (4, 2, 1)) -> Diagram:
    """Ainslie et al. 2023's figure 2 with the chapter's head counts: for each number of
    key/value heads, the n_heads query heads on top, the key/value heads under them, and a
    line from query head h to the key/value head it reads, h // (n_heads / n_kv); under each
    panel the KV cache's size relative to multi-head attention."""
    options = [check_kv_heads(n_heads, n_kv) for n_kv in kv_options]
    if not options:
        raise ValueError("kv_options 至少要有一种键值头数")
    width = 4.6
    pitch = width / len(options)
    cell = min(0.3, 0.86 * pitch / n_heads)
    d = Diagram(width, 2.55, "查询头共用键值头")
    y_q, y_k, y_v = 1.72, 0.92, 0.66
    for i, n_kv in enumerate(options):
        centre = pitch * (i + 0.5)
        kind, group = _kv_kind(n_heads, n_kv), n_heads // n_kv
        d.text(centre, 2.38, f"{KV_NAMES[kind]}（{kind}）", size=SMALL)
        d.text(centre, 2.16, f"{n_kv} 组键值头", size=SMALL, color=MUTED)
        q_x = [centre + (h - (n_heads - 1) / 2) * cell for h in range(n_heads)]
        kv_x = [sum(q_x[g * group:(g + 1) * group]) / group for g in range(n_kv)]
        for h, x in enumerate(q_x):
            d.line([(x, y_q - cell / 2), (kv_x[h // group], y_k + 0.11)], color=MUTED,
                   width=0.9)
        for h, x in enumerate(q_x):
            d.box(x, y_q, cell * 0.9, cell * 0.9, f"$Q_{h}$", kind="attention", size=SMALL)
        for g, x in enumerate(kv_x):
            w = cell * 0.9
            d.box(x, y_k, w, 0.24, f"$K_{g}$", kind="attention", size=SMALL)
            d.box(x, y_v, w, 0.24, f"$V_{g}$", kind="attention", size=SMALL)
        share = Fraction(n_kv, n_heads)
        d.text(centre, 0.3, f"KV 缓存 ×{share}", size=SMALL)
        if i:
            d.line([(pitch * i, 0.2), (pitch * i, 2.45)], color=KINDS["note"][0], dashed=True,
                   width=0.6)
    d.text(width / 2, 0.05, f"查询头 $h$ 读第 $h$ // ({n_heads}/$n_\\mathrm{{kv}}$) 组"
           "键值头；查询头一个不少", size=SMALL, color=MUTED)
    return d


# ---- One layer, four generations ------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """A box in a layer: its label, its kind, whether it is new in its column, and the small
    tags drawn inside it (label, kind, new)."""

    label: str
    kind: str
    new: bool = False
    tags: tuple[tuple[str, str, bool], ...] = ()


def _attention(*tags: tuple[str, str, bool]) -> Part:
    return Part("注意力", "attention", tags=tags)


LN, NEW_LN = Part("LayerNorm", "norm"), Part("LayerNorm", "norm", new=True)
RMS, NEW_RMS = Part("RMSNorm", "norm"), Part("RMSNorm", "norm", new=True)
SWIGLU = Part("SwiGLU FFN", "weight")
NO_POSITION = "词嵌入\n（不加位置）"
ROPE, GQA, QK_NORM = ("RoPE", "note"), ("GQA", "note"), ("QK-norm", "norm")
# Each generation: name, year and note, the input, the attention sublayer, the FFN sublayer.
GENERATIONS = (
    ("Transformer", "2017\n后置归一化", Part("词嵌入\n+ 正弦位置", "stream"),
     (_attention(), LN), (Part("FFN（ReLU）", "weight"), LN)),
    ("GPT-2", "2019\n前置归一化", Part("词嵌入\n+ 位置表", "stream", new=True),
     (NEW_LN, _attention()), (NEW_LN, Part("FFN（GELU）", "weight", new=True))),
    ("Llama", "2023\n前置归一化", Part(NO_POSITION, "stream", new=True),
     (NEW_RMS, _attention((*ROPE, True), (*GQA, True))),
     (NEW_RMS, replace(SWIGLU, new=True))),
    ("Qwen3", "2025\n前置归一化", Part(NO_POSITION, "stream"),
     (RMS, _attention((*ROPE, False), (*GQA, False), (*QK_NORM, True))), (RMS, SWIGLU)),
)
BOX_W, BOX_H, TAG_H, GAP = 0.86, 0.24, 0.2, 0.16


def _height(part: Part) -> float:
    rows = math.ceil(len(part.tags) / 2)
    return BOX_H + rows * (TAG_H + 0.04) + (0.03 if rows else 0.0)


def _part(d: Diagram, x: float, top: float, part: Part) -> float:
    """The part's box with its top edge at ``top`` (tags two to a row under its label);
    returns its bottom edge."""
    h = _height(part)
    y = top - h / 2
    d.box(x, y, BOX_W, h, kind=part.kind)
    label_y = top - BOX_H / 2 if part.tags else y
    d.text(x, label_y, part.label, size=SMALL)
    if part.new:
        _new(d, x, y, BOX_W, h)
    for k, (label, kind, new) in enumerate(part.tags):
        row, column = divmod(k, 2)
        in_row = min(2, len(part.tags) - 2 * row)
        tag_w = 0.37 if in_row == 2 else 0.6
        tx = x + ((column - (in_row - 1) / 2) * (tag_w + 0.06))
        ty = top - BOX_H - (row + 0.5) * (TAG_H + 0.04) + 0.02
        d.box(tx, ty, tag_w, TAG_H, label, kind=kind, size=SMALL)
        if new:
            _new(d, tx, ty, tag_w, TAG_H, pad=0.0)
    return top - h


def _parts(d: Diagram, x: float, y: float, parts: Sequence[Part]) -> float:
    """Parts one under another from y down, an arrow into each; returns the last bottom."""
    for part in parts:
        d.arrow((x, y), (x, y - GAP))
        y = _part(d, x, y - GAP, part)
    return y


def _sublayer(d: Diagram, x: float, top: float, branch: Sequence[Part],
              after: Sequence[Part]) -> float:
    """The branch's parts, ⊕ with the residual stream from (x, top), then the parts after
    the sum; returns the y where the stream leaves it."""
    y = _parts(d, x, top, branch)
    radius = 0.11
    y_add = y - GAP - radius
    d.arrow((x, y), (x, y_add + radius))
    d.op(x, y_add, "+", radius=radius)
    side = x + BOX_W / 2 + 0.07
    d.line([(x, top), (side, top), (side, y_add)], color=STREAM)
    d.arrow((side, y_add), (x + radius, y_add), color=STREAM)
    return _parts(d, x, y_add - radius, after)


@drawing
def layer_generations_diagram() -> Diagram:
    """One layer of four generations: the Transformer of 2017 (Post-Norm LayerNorm, ReLU FFN,
    sinusoidal positions added to the embeddings), GPT-2 (Pre-Norm LayerNorm, GELU FFN, a
    learned position table), Llama (Pre-Norm RMSNorm, SwiGLU FFN, RoPE and GQA inside the
    attention, no position added at the input) and Qwen3 (the same plus QK-norm); what each
    column changed relative to the one on its left is outlined in red."""
    d = Diagram(4.6, 4.55, "一层，2017 → 今天")
    pitch = 1.14
    top = 3.88
    for i, (name, note, embed, first, second) in enumerate(GENERATIONS):
        x = 0.48 + pitch * i
        d.text(x + 0.04, 4.43, name, size=SMALL)
        d.text(x + 0.04, 4.14, note, size=SMALL, color=MUTED, linespacing=1.3)
        h = 0.38
        d.box(x, top - h / 2, BOX_W, h, embed.label, kind=embed.kind, size=SMALL)
        if embed.new:
            _new(d, x, top - h / 2, BOX_W, h)
        d.line([(x, top - h), (x, top - h - 0.05)])
        y = _sublayer(d, x, top - h - 0.05, *_split(first))
        y = _sublayer(d, x, y, *_split(second))
        d.arrow((x, y), (x, y - GAP))
    sample = 0.62
    d.box(sample, 0.14, 0.3, 0.16, kind="note")
    _new(d, sample, 0.14, 0.3, 0.16)
    d.text(sample + 0.25, 0.14, "红框：比左边一列新的部分；GQA：Llama 2 的 34B、70B 和 Llama 3",
           size=SMALL, color=MUTED, ha="left")
    return d


def _split(parts: Sequence[Part]) -> tuple[Sequence[Part], Sequence[Part]]:
    """A sublayer's parts split at its attention or FFN: a norm after it is after the sum."""
    core = next(i for i, p in enumerate(parts) if p.kind in ("attention", "weight"))
    return parts[:core + 1], parts[core + 1:]


# ---- RoPE's pairs turning -------------------------------------------------------------------

POSITION_COLOURS = ("#a194d4", "#8a79c8", "#5f4ca6", "#33245f")


@drawing
def rope_pairs_diagram(d_head: int = 8, positions: Sequence[int] = (0, 1, 2, 3),
                       base: float = 10000.0) -> Diagram:
    """RoPE as d_head/2 pairs of dimensions (j and j + d_head/2, the halves' pairing of
    transformers), each a plane in which the query or key at position m is turned by m·ω_j,
    ω_j = rope_theta^(−2j/d_head) from onelayer.rope: the first pair turns 1 radian per
    position, the last barely moves. The vector at position 0 is drawn pointing right."""
    omega = rope_frequencies(d_head, base).tolist()
    pairs, half = len(omega), d_head // 2
    width = 4.6
    pitch = width / pairs
    radius = min(0.42, 0.36 * pitch)
    d = Diagram(width, 2.55, "RoPE：每对维度按位置转")
    cy = 1.56
    last = max(positions)
    for j, w in enumerate(omega):
        cx = pitch * (j + 0.5)
        d.text(cx, 2.43, f"第 {j} 对", size=SMALL)
        d.text(cx, 2.23, f"（维 {j} 与 {j + half}）", size=SMALL, color=MUTED)
        d.ax.add_patch(Arc((cx, cy), 2 * radius, 2 * radius, color=KINDS["note"][0],
                           linewidth=0.8))
        d.line([(cx - radius, cy), (cx + radius, cy)], color=KINDS["note"][0], width=0.5)
        for m, colour in zip(positions, POSITION_COLOURS * len(positions)):
            a = m * w
            tip = (cx + radius * math.cos(a), cy + radius * math.sin(a))
            d.arrow((cx, cy), tip, color=colour)
        if last * w > 0.35:  # far enough apart to name each arrow
            for m, colour in zip(positions, POSITION_COLOURS * len(positions)):
                a = m * w
                d.text(cx + (radius + 0.1) * math.cos(a), cy + (radius + 0.1) * math.sin(a),
                       f"{m}", size=SMALL, color=colour)
        d.text(cx, cy - radius - 0.2, f"$\\omega_{j}$ = {_number(w)}", size=SMALL)
        d.text(cx, cy - radius - 0.42, f"{last} 步转 {_number(last * w)} 弧度", size=SMALL,
               color=MUTED)
    legend_y = 0.42
    d.text(0.05, legend_y, "位置 $m$：", size=SMALL, color=MUTED, ha="left")
    for k, (m, colour) in enumerate(zip(positions, POSITION_COLOURS * len(positions))):
        x = 0.68 + 0.42 * k
        d.arrow((x, legend_y), (x + 0.22, legend_y), color=colour)
        d.text(x + 0.26, legend_y, f"{m}", size=SMALL, color=colour, ha="left")
    d.text(0.74 + 0.42 * len(positions), legend_y, "（位置 0 画成朝右）", size=SMALL,
           color=MUTED, ha="left")
    d.text(0.05, 0.12, f"位置 $m$ 的向量转过 $m\\,\\omega_j$，"
           f"$\\omega_j$ = rope_theta$^{{-2j/{d_head}}}$，rope_theta = {base:g}",
           size=SMALL, color=MUTED, ha="left")
    return d


def _number(value: float) -> str:
    """A speed or an angle with 3 significant digits, no exponent for the book's sizes."""
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.1e}"
