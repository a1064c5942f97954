"""Chapter 8's experiments: Pre-Norm vs Post-Norm in small GPTs.

- ``init_grad_norms``: per-layer FFN gradients at initialisation (Xiong et al. 2020, Fig. 3);
- ``warmup_experiment``: Post-LN and Pre-LN trained with learning-rate warm-ups of given
  lengths (0: no warm-up);
- ``stall_followup``: Post-LN without warm-up, trained longer, and with Adam's moments
  estimated before the first step (β2 = 0.9, so that v settles; after RAdam's "Adam-2k"
  control, Liu et al. 2020).

The warm-up runs are trained side by side as one ``onelayer.stack.TinyGPTStack``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.data import FactsCorpus, facts_corpus
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.probes import evaluating, weight_grad_norms
from onelayer.stack import TinyGPTStack
from onelayer.train import Progress, seeded, train_lm


def tiny_lm(corpus: FactsCorpus, n_layers: int, norm_position: str, seed: int,
            d_model: int = 64, n_heads: int = 4, init: str = "xavier",
            block_size: int = 32, embedding_std: float = 0.02) -> TinyGPT:
    """A TinyGPT for ``corpus`` whose weights depend only on ``seed``; token and position
    embeddings drawn from N(0, ``embedding_std``²) (0.02 is GPT-2's and TinyGPT's)."""
    if not embedding_std > 0:
        raise ValueError(f"embedding_std 应 > 0，实际为 {embedding_std}")
    block = BlockConfig(d_model=d_model, n_heads=n_heads, norm_position=norm_position)
    with seeded(seed):
        model = TinyGPT(GPTConfig(len(corpus.vocab), block_size, n_layers, block, init=init))
        if embedding_std != 0.02:
            with torch.no_grad():
                for table in (model.tok, model.pos):
                    table.weight.normal_(std=embedding_std)
    return model


def ffn_grad_norms(model: TinyGPT, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """‖∂loss/∂W2‖ of every block's FFN (Xiong et al. 2020, Fig. 3), first block first."""
    return weight_grad_norms(lm_loss(model(x), y), [b.mlp.w2.weight for b in model.blocks])


def init_grad_norms(
    n_layers: int, norm_position: str, seeds: Sequence[int] = (0, 1, 2), init: str = "xavier",
    d_model: int = 64, n_heads: int = 4, batch_size: int = 16, seq_len: int = 32,
    corpus: FactsCorpus | None = None, embedding_std: float = 0.02,
) -> torch.Tensor:
    """‖∂loss/∂W2‖ of every block's FFN at initialisation, one row per seed: [seeds, n_layers].

    Xiong et al. 2020 (Fig. 3) measure this; every seed's model sees the same batch.
    """
    check_positive_int("n_layers", n_layers)
    if not seeds:
        raise ValueError("seeds 不能为空：至少要有 1 个随机种子")
    corpus = corpus or facts_corpus()
    x, y = corpus.batch(batch_size, seq_len, torch.Generator().manual_seed(0))
    rows = [ffn_grad_norms(tiny_lm(corpus, n_layers, norm_position, seed, d_model, n_heads,
                                   init, block_size=seq_len, embedding_std=embedding_std), x, y)
            for seed in seeds]
    return torch.stack(rows)


@dataclass(frozen=True)
class WarmupRuns:
    """Losses [seeds, steps] and trained models of the warm-up experiment, keyed by
    (norm_position, warmup)."""

    losses: dict[tuple[str, int], torch.Tensor]
    models: dict[tuple[str, int], list[TinyGPT]]
    seeds: tuple[int, ...]
    warmups: tuple[int, ...]
    lr: float

    def final(self, position: str, warmup: int, last: int = 10) -> torch.Tensor:
        """Mean loss of the last ``last`` steps, one value per seed."""
        return self.losses[position, warmup][:, -last:].mean(dim=1)


def warmup_experiment(
    corpus: FactsCorpus, n_layers: int = 12, seeds: Sequence[int] = (0, 1), steps: int = 90,
    warmups: Sequence[int] = (0, 45), lr: float = 3e-3, d_model: int = 32, n_heads: int = 4,
    batch_size: int = 16, seq_len: int = 16, positions: Sequence[str] = ("post", "pre"),
    betas: tuple[float, float] = (0.9, 0.999), progress: Progress | None = None,
) -> WarmupRuns:
    """Train Post-LN and Pre-LN TinyGPTs with Adam, once per warm-up length in ``warmups``
    (0: none; w > 0: the learning rate ramps up linearly over w steps).

    Run (position, w, seed) starts from ``tiny_lm(..., seed)`` and sees the batches of
    ``train_lm(..., seed=seed)``: runs of one seed differ only in the learning rate.
    The runs of one position are trained together as a ``TinyGPTStack``; ``betas`` are
    Adam's (β1, β2), torch's defaults unless given.
    """
    check_positive_int("steps", steps)
    if (not isinstance(warmups, Sequence) or not warmups or len(set(warmups)) < len(warmups)
            or any(type(w) is not int or not 0 <= w <= steps for w in warmups)):
        raise ValueError(f"warmups 应为 0..steps={steps} 之间互不相同的整数，至少一个，"
                         f"实际为 {warmups!r}")
    if not seeds:
        raise ValueError("seeds 不能为空：至少要有 1 个随机种子")
    runs = [(w, s) for w in warmups for s in seeds]
    losses: dict[tuple[str, int], torch.Tensor] = {}
    models: dict[tuple[str, int], list[TinyGPT]] = {}
    for pos in positions:
        stack = TinyGPTStack([tiny_lm(corpus, n_layers, pos, s, d_model, n_heads, "xavier",
                                      seq_len) for _, s in runs])
        curves = train_lm(stack, corpus, steps, lr, [w for w, _ in runs], batch_size, seq_len,
                          seed=[s for _, s in runs], betas=betas, progress=progress)
        for w in warmups:
            rows = [i for i, (w_i, _) in enumerate(runs) if w_i == w]
            losses[pos, w] = curves[rows]
            models[pos, w] = [stack.member(i) for i in rows]
    return WarmupRuns(losses, models, tuple(seeds), tuple(warmups), lr)


def stall_followup(
    corpus: FactsCorpus, n_layers: int = 12, seeds: Sequence[int] = (0, 1), steps: int = 180,
    estimate: int = 45, lr: float = 3e-3, d_model: int = 32, n_heads: int = 4,
    batch_size: int = 16, seq_len: int = 16, estimate_betas: tuple[float, float] = (0.9, 0.9),
    progress: Progress | None = None,
) -> dict[str, torch.Tensor]:
    """Post-LN without warm-up, two groups of ``seeds`` trained for ``steps`` steps (each
    group one ``TinyGPTStack``); returns their losses [seeds, steps] by group:

    - ``"long"``: Adam at ``lr`` from the first step (``warmup_experiment``'s stalled runs,
      trained longer; same initial weights and batches);
    - ``"estimated"``: Adam with ``estimate_betas`` (β2 = 0.9 by default, so that v settles
      within ``estimate`` steps); the first ``estimate`` steps move no parameter (learning
      rate 0): Adam's moments m and v only average those batches' gradients; then ``lr``
      without warm-up. If warm-up only made up for a poorly estimated v (Liu et al. 2020,
      RAdam), this group would learn.
    """
    check_positive_int("steps", steps)
    if type(estimate) is not int or not 0 < estimate < steps:
        raise ValueError(f"estimate 应为 1..steps-1={steps - 1} 之间的整数，实际为 {estimate!r}")
    if not seeds:
        raise ValueError("seeds 不能为空：至少要有 1 个随机种子")
    out = {}
    for group, hold, betas in (("long", 0, (0.9, 0.999)), ("estimated", estimate, estimate_betas)):
        stack = TinyGPTStack([tiny_lm(corpus, n_layers, "post", s, d_model, n_heads, "xavier",
                                      seq_len) for s in seeds])
        out[group] = train_lm(stack, corpus, steps, lr, batch_size=batch_size, seq_len=seq_len,
                              seed=list(seeds), hold=hold, betas=betas, progress=progress)
    return out


@torch.no_grad()
def prediction_spread(model: TinyGPT, idx: torch.Tensor) -> float:
    """How much the predicted next-token distribution varies with the input: the mean over
    the vocabulary of the standard deviation (across all positions) of the log-probabilities.
    0 means the model predicts one and the same distribution everywhere."""
    with evaluating(model):
        log_p = model(idx).log_softmax(dim=-1).flatten(0, -2)
    return log_p.std(dim=0).mean().item()
