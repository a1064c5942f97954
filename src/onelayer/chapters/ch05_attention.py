"""Chapter 5's experiments: what the heads of a trained facts model (chapter 7's
``train_facts_models``) look at, and how much fact recall is lost when one is switched off.

A fact query ends with "subject relation" (猫吃); the answer is predicted at the relation's
position, which must fetch the subject from the position before it. A head "carries the
subject" when its attention weight from the last position to the subject is large.
Switching a head off sets its output to zero before W_O (zero ablation); the FFN is switched
off the same way, for comparison.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from onelayer.chapters.ch07_tiny_gpt import fact_queries, fact_recall
from onelayer.data import FactsCorpus
from onelayer.model import TinyGPT
from onelayer.probes import evaluating, recorded


def _block(model: TinyGPT, layer: int):
    if not 0 <= layer < len(model.blocks):
        raise ValueError(f"layer 应在 0..{len(model.blocks) - 1} 之间，实际为 {layer}")
    return model.blocks[layer]


@torch.no_grad()
def attention_maps(model: TinyGPT, idx: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """The attention matrices of block ``layer`` for tokens ``idx``: [..., n_heads, T, T]."""
    attn = _block(model, layer).attn
    with evaluating(model), recorded(attn, which="input") as inputs:
        model(idx)
    return attn.weights(inputs[0])


@contextmanager
def heads_off(model: TinyGPT, heads: Sequence[int], layer: int = 0) -> Iterator[TinyGPT]:
    """Inside the ``with`` block the given heads of block ``layer`` output zeros (their
    slices of the input of W_O are set to 0); afterwards the model is as before."""
    attn = _block(model, layer).attn
    d_head = attn.d_model // attn.n_heads
    bad = [h for h in heads if not (isinstance(h, int) and 0 <= h < attn.n_heads)]
    if bad:
        raise ValueError(f"头的编号应在 0..{attn.n_heads - 1} 之间，实际有 {bad}")

    def zero(_module, args):
        merged = args[0].clone()
        for h in heads:
            merged[..., h * d_head:(h + 1) * d_head] = 0
        return (merged,)

    handle = attn.proj.register_forward_pre_hook(zero)
    try:
        yield model
    finally:
        handle.remove()


@contextmanager
def ffn_off(model: TinyGPT, layer: int = 0) -> Iterator[TinyGPT]:
    """Inside the ``with`` block the FFN of block ``layer`` outputs zeros."""
    mlp = _block(model, layer).mlp
    if mlp is None:
        raise ValueError(f"第 {layer} 块没有 FFN（d_ff = 0）")
    handle = mlp.register_forward_hook(lambda _m, _args, out: torch.zeros_like(out))
    try:
        yield model
    finally:
        handle.remove()


@dataclass(frozen=True)
class HeadAblation:
    """One trained model: where its heads look, and the recall without each of them."""

    subject_weight: torch.Tensor  # [n_heads]: mean weight from the last position to the subject
    recall: float  # all heads on
    without_head: torch.Tensor  # [n_heads]: recall with that one head off
    without_subject_heads: float  # every head whose subject weight > threshold off
    without_other_heads: float  # every other head off
    without_ffn: float
    threshold: float

    @property
    def subject_heads(self) -> list[int]:
        return [h for h, w in enumerate(self.subject_weight.tolist()) if w > self.threshold]

    @property
    def top_head(self) -> int:
        """The head that looks at the subject most."""
        return int(self.subject_weight.argmax())

    @property
    def lost(self) -> torch.Tensor:
        """Recall lost with each head off, [n_heads]."""
        return self.recall - self.without_head


def head_ablation(model: TinyGPT, corpus: FactsCorpus, threshold: float = 0.5,
                  context: int = 2, layer: int = 0) -> HeadAblation:
    """Attention weights on the subject and fact recall with heads (or the FFN) switched off,
    on ``fact_queries(corpus, context)``."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold 应在 (0, 1) 之间，实际为 {threshold}")
    prompts, _ = fact_queries(corpus, context)
    weights = attention_maps(model, prompts.to(model.tok.weight.device), layer)
    subject = weights[:, :, -1, -2].mean(0).cpu()          # 最后一个位置 → 主语（倒数第二个）
    n_heads = subject.numel()

    def recall_with(heads: Sequence[int]) -> float:
        with heads_off(model, list(heads), layer):
            return fact_recall(model, corpus, context)

    carriers = [h for h in range(n_heads) if subject[h] > threshold]
    others = [h for h in range(n_heads) if h not in carriers]
    with ffn_off(model, layer):
        without_ffn = fact_recall(model, corpus, context)
    return HeadAblation(
        subject_weight=subject, recall=fact_recall(model, corpus, context),
        without_head=torch.tensor([recall_with([h]) for h in range(n_heads)]),
        without_subject_heads=recall_with(carriers), without_other_heads=recall_with(others),
        without_ffn=without_ffn, threshold=threshold)
