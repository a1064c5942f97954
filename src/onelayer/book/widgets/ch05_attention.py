"""Chapter 5 panels (self-attention), both computed or drawn in the page:

- ``query_explorer``: edit the query of 鱼 (or take another token's), watch the scores, the
  attention weights over 猫/吃/鱼 and the output change (``panels/attention.js``);
- ``attention_map_explorer``: pick a prompt, a head and a position of the trained facts model
  and see its attention weights (``panels/attnmap.js``; the weights are computed here and
  written as JSON, the page only draws them).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from onelayer.book.panels import PagePanel
from onelayer.chapters.ch05_attention import attention_maps
from onelayer.data import TOKENS, FactsCorpus, sentence_x
from onelayer.model import TinyGPT


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


def attention_map_data(model: TinyGPT, corpus: FactsCorpus, prompts: Sequence[str],
                       subject_head: int | None = None) -> dict:
    """Every head's attention weights of block 0 for each prompt (which must share one
    length), as nested lists of floats."""
    lengths = {len(p) for p in prompts}
    if not prompts or len(lengths) != 1:
        raise ValueError(f"提示应非空且等长，实际长度为 {sorted(lengths)}")
    shown = []
    for prompt in prompts:
        maps = attention_maps(model, torch.tensor(corpus.encode(prompt)))   # [h, T, T]
        shown.append({"text": prompt, "maps": maps.double().tolist()})
    return {"prompts": shown, "n_heads": model.config.block.n_heads,
            "subject_head": subject_head}


def attention_map_explorer(model: TinyGPT, corpus: FactsCorpus, prompts: Sequence[str],
                           subject_head: int | None = None) -> PagePanel:
    """Pick a prompt, a head and the position that asks; see that head's attention map and the
    asking position's weights."""
    return PagePanel("attnmap", attention_map_data(model, corpus, prompts, subject_head),
                     "训练好的模型：每个头在看哪里")
