"""Chapter 9's panel: a query rotated to position m and a key to position n, computed in the
page (``panels/rope.js``); the score after the rotation depends only on m − n."""

from __future__ import annotations

import torch

from onelayer.book.panels import PagePanel
from onelayer.rope import apply_rope, check_d_head, check_theta

ROPE_PANEL_POSITIONS = 64  # 滑块上的位置 0 … 63


def rope_panel_data(q: torch.Tensor, k: torch.Tensor, theta: float = 10000.0,
                    m: int = 5, n: int = 2) -> dict:
    """The panel's inputs: one head's query and key (1-D, the same even length), θ, and the
    starting positions m and n."""
    if q.dim() != 1 or q.shape != k.shape:
        raise ValueError(f"q 与 k 应为同样长的一维向量，实际为 {list(q.shape)} 与 {list(k.shape)}")
    check_d_head(q.numel())
    if not (0 <= m < ROPE_PANEL_POSITIONS and 0 <= n < ROPE_PANEL_POSITIONS):
        raise ValueError(f"m、n 应在 0..{ROPE_PANEL_POSITIONS - 1} 之间，实际为 {m}、{n}")
    return {"q": q.tolist(), "k": k.tolist(), "theta": check_theta(theta),
            "positions": ROPE_PANEL_POSITIONS, "m": m, "n": n}


def rope_explorer(q: torch.Tensor, k: torch.Tensor, theta: float = 10000.0) -> PagePanel:
    """Sliders for m and n, a choice of the pair to draw, a button that moves both positions
    by one: the rotated vectors, each pair's share of the score, and the score."""
    title = "查询在位置 m、键在位置 n：旋转之后的分数"
    return PagePanel("rope", rope_panel_data(q, k, theta), title)


def rope_scores(q: torch.Tensor, k: torch.Tensor, m: int, n: int, theta: float = 10000.0
                ) -> dict[str, torch.Tensor]:
    """What the panel shows, in float64: q rotated to m, k to n, each pair's term of q_m·k_n
    (pair j = dimensions j and j + d/2), and the score."""
    d = check_d_head(q.numel())
    omega = check_theta(theta) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # ω_j
    angles = torch.tensor([m, n], dtype=torch.float64)[:, None] * omega             # t·ω_j
    angles = torch.cat([angles, angles], dim=-1)
    q_m, k_n = apply_rope(torch.stack([q, k]).double(), angles.cos(), angles.sin())
    pairs = (q_m * k_n).view(2, d // 2).sum(0)
    return {"q_rot": q_m, "k_rot": k_n, "pair": pairs, "score": pairs.sum()[None]}
