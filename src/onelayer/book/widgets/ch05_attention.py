"""Chapter 5 panel (self-attention), computed in the page:

- ``query_explorer``: edit the query of 鱼 (or take another token's), watch the scores, the
  attention weights over 猫/吃/鱼 and the output change (``panels/attention.js``).
"""

from __future__ import annotations

import torch

from onelayer.book.panels import PagePanel
from onelayer.data import TOKENS, sentence_x


def query_panel_data() -> dict:
    """The 猫吃鱼 rows (keys and values, W_Q = W_K = W_V = I as in the hand calculation) and
    the starting query x_鱼."""
    X = sentence_x()
    return {"tokens": list(TOKENS), "X": X.tolist(), "token": "鱼",
            "q": X[TOKENS.index("鱼")].tolist()}


def query_explorer() -> PagePanel:
    """Four sliders for the query, a token picker (its row becomes the query and the causal
    mask hides the tokens after it), a switch for the 1/√d_k scale."""
    return PagePanel("attention", query_panel_data(), "“鱼”的查询：改一改，看注意力权重")


def query_attention(q: torch.Tensor, token: str, scaled: bool = True) -> dict[str, torch.Tensor]:
    """What the panel shows, in float64: scores q·x_j (/√d_k), weights and the output, over the
    tokens up to and including ``token``."""
    if token not in TOKENS:
        raise ValueError(f"token 应为 {list(TOKENS)} 之一，实际为 {token!r}")
    X = sentence_x().double()[:TOKENS.index(token) + 1]
    scores = X @ q.double() / (q.numel() ** 0.5 if scaled else 1.0)
    weights = scores.softmax(-1)
    return {"score": scores, "weight": weights, "out": weights @ X}
