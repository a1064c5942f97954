"""Chapter 9's experiments: the attention of today's open models.

- ``kv_cache_bytes``: what a KV cache costs per token, 2 · layers · kv_heads · d_head · bytes;
  ``cached_bytes`` measures what a model's ``KVCache`` really holds;
- ``train_gqa_models``: chapter 7's facts models with ``n_kv_heads`` shared key/value heads
  (grouped-query attention, Ainslie et al. 2023; 1 = multi-query, Shazeer 2019), one per seed,
  trained side by side as one ``TinyGPTStack``;
- ``score_growth``: the attention scores and the softmax's sharpness when the query and key
  projections are scaled up, with and without QK-norm;
- ``lr_sweep``: chapter 7's facts model trained at several learning rates, with or without
  QK-norm: the final loss and the largest attention logit (Wortsman et al. 2024's small-scale
  proxy of the instability QK-norm was adopted for).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from onelayer.attention import CausalSelfAttention, causal_mask
from onelayer.chapters.ch07_tiny_gpt import FactsRuns, facts_gpt_config, train_facts_models
from onelayer.checks import check_positive_int
from onelayer.data import FactsCorpus
from onelayer.model import GPTConfig, KVCache, TinyGPT
from onelayer.stack import TinyGPTStack
from onelayer.train import Progress, seeded, train_lm


def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, bytes_per_value: int = 2,
                   tokens: int = 1) -> int:
    """Bytes of cached keys and values for ``tokens`` positions (2 bytes: float16/bfloat16)."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("d_head", d_head),
                        ("bytes_per_value", bytes_per_value), ("tokens", tokens)):
        check_positive_int(name, value)
    return 2 * n_layers * n_kv_heads * d_head * bytes_per_value * tokens  # 键和值各一份


def cached_bytes(cache: KVCache) -> int:
    """Bytes of the tensors a ``KVCache`` holds."""
    return sum(t.numel() * t.element_size() for layer in cache.layers
               for t in (layer.keys, layer.values) if t is not None)


def facts_gqa_config(corpus: FactsCorpus, n_kv_heads: int, n_heads: int = 4) -> GPTConfig:
    """Chapter 7's facts model (d_model = 32) with ``n_heads`` query heads of width
    32 / n_heads that share ``n_kv_heads`` key/value heads."""
    config = facts_gpt_config(corpus)
    return replace(config, block=replace(config.block, n_heads=n_heads, n_kv_heads=n_kv_heads))


@dataclass(frozen=True)
class GQARuns(FactsRuns):
    """Facts models with one number of key/value heads, one per seed."""

    n_kv_heads: int = 0


def train_gqa_models(corpus: FactsCorpus, seeds: Sequence[int], n_kv_heads: int,
                     n_heads: int = 4, steps: int = 500, lr: float = 3e-3, every: int = 250,
                     progress: Progress | None = None) -> GQARuns:
    """Chapter 7's ``train_facts_models`` on ``facts_gqa_config``: one model per seed
    (weights and batches from that seed), recall measured after every ``every`` steps."""
    runs = train_facts_models(corpus, seeds, steps=steps, lr=lr, every=every, progress=progress,
                              config=facts_gqa_config(corpus, n_kv_heads, n_heads))
    return GQARuns(runs.models, runs.losses, runs.recall, runs.every, n_kv_heads)


@dataclass(frozen=True)
class ScoreGrowth:
    """One attention layer with its query and key projections scaled by each of ``scales``."""

    scales: list[float]
    max_score: torch.Tensor  # [scales]: the largest |q·k/√d_head| over heads and visible pairs
    top_weight: torch.Tensor  # [scales]: a row's largest attention weight, mean over rows ≥ 1


def _scaled_qk(attn: CausalSelfAttention, scale: float) -> CausalSelfAttention:
    """A copy of ``attn`` (in eval mode) whose W_Q and W_K (and their biases) are × scale."""
    scaled = copy.deepcopy(attn).eval()
    q_and_k = attn.d_model + attn.n_kv_heads * attn.d_head     # qkv 的前两段输出：q、k
    with torch.no_grad():
        scaled.qkv.weight[:q_and_k] *= scale
        if scaled.qkv.bias is not None:
            scaled.qkv.bias[:q_and_k] *= scale
    return scaled


@torch.no_grad()
def score_growth(attn: CausalSelfAttention, x: torch.Tensor, scales: Sequence[float]
                 ) -> ScoreGrowth:
    """How large the attention scores get, and how sharp the softmax, when W_Q and W_K are
    multiplied by each of ``scales`` (x [..., T, d_model], T ≥ 2)."""
    if not scales or min(scales) <= 0:
        raise ValueError(f"scales 应为非空的正数列表，实际为 {list(scales)}")
    if x.dim() < 2 or x.shape[-2] < 2:
        raise ValueError(f"x 应为 [..., T, d_model]、T ≥ 2，实际形状为 {list(x.shape)}")
    visible = causal_mask(x.shape[-2], device=x.device)
    max_score, top_weight = [], []
    for scale in scales:
        scaled = _scaled_qk(attn, scale)
        q, k, _ = scaled.heads(x)                                   # 已做 QK 归一化（若有）
        scores = q @ scaled.shared(k).transpose(-2, -1) / math.sqrt(scaled.d_head)
        max_score.append(scores.masked_select(visible).abs().max())
        top_weight.append(scaled.weights(x)[..., 1:, :].amax(-1).mean())  # 第 0 行只有一个键
    return ScoreGrowth(list(scales), torch.stack(max_score), torch.stack(top_weight))


@torch.no_grad()
def max_attention_logit(model: TinyGPT, idx: torch.Tensor) -> float:
    """The largest |q·k/√d_head| of any block, head and visible pair on the batch ``idx``: the
    attention logit whose growth Wortsman et al. (2024) and Dehghani et al. (2023) track."""
    largest = 0.0
    visible = causal_mask(idx.shape[-1])
    for block, x in zip(model.blocks, model.hidden_states(idx)):
        if block.config.norm_position != "pre":
            raise ValueError(f"只支持前置归一化的块，实际为 {block.config.norm_position!r}")
        q, k, _ = block.attn.heads(block.ln_1(x))
        scores = q @ block.attn.shared(k).transpose(-2, -1) / math.sqrt(block.attn.d_head)
        largest = max(largest, scores.masked_select(visible).abs().max().item())
    return largest


@dataclass(frozen=True)
class LearningRateSweep:
    """Chapter 7's facts model trained at each of ``lrs`` with one seed per column."""

    lrs: list[float]
    qk_norm: bool
    losses: torch.Tensor      # [lrs, seeds, steps]: the training loss at every step
    max_logit: torch.Tensor   # [lrs, seeds]: max_attention_logit after training

    @property
    def final_loss(self) -> torch.Tensor:
        """[lrs, seeds]: the mean training loss of the last 20 steps."""
        return self.losses[..., -20:].mean(-1)


def lr_sweep(corpus: FactsCorpus, seeds: Sequence[int], lrs: Sequence[float], qk_norm: bool,
             steps: int = 150, progress: Progress | None = None) -> LearningRateSweep:
    """Train ``facts_gpt_config`` (QK-norm on or off) once per learning rate and seed, all
    side by side as one ``TinyGPTStack`` (Adam, no warm-up); then measure each model's largest
    attention logit on one fixed batch of 64 sequences."""
    if not seeds or not lrs:
        raise ValueError(f"seeds 和 lrs 都不能为空，实际为 {list(seeds)}、{list(lrs)}")
    config = facts_gpt_config(corpus)
    config = replace(config, block=replace(config.block, qk_norm=qk_norm))
    members = []
    for _ in lrs:
        for seed in seeds:
            with seeded(seed):
                members.append(TinyGPT(config))
    stack = TinyGPTStack(members)
    losses = train_lm(stack, corpus, steps, lr=[lr for lr in lrs for _ in seeds],
                      seed=list(seeds) * len(lrs), progress=progress)
    idx, _ = corpus.batch(64, config.block_size, torch.Generator().manual_seed(0))
    logits = [max_attention_logit(stack.member(i), idx) for i in range(len(members))]
    shape = (len(lrs), len(seeds))
    return LearningRateSweep(list(lrs), qk_norm, losses.view(*shape, steps),
                             torch.tensor(logits).view(shape))
