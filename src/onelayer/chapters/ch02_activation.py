"""Chapter 2's dead-ReLU study (02a), trained with ``onelayer.train.fit``: every b1 is
pushed down by a bad update, then training goes on — do the units it silenced come back,
with ReLU and with GELU?

One run per seed; all seeds train together as one ``onelayer.stack.FeedForwardStack``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from onelayer.activations import get_activation
from onelayer.checks import check_positive_int
from onelayer.ffn import FeedForward
from onelayer.stack import FeedForwardStack
from onelayer.train import fit, seeded


def member_mse(stack: FeedForwardStack, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean squared error of every member on (x, y): [M]."""
    return ((stack(x) - y) ** 2).mean(dim=(1, 2))


def silent_units(pre: torch.Tensor) -> torch.Tensor:
    """[..., d_ff] bool from pre-activations [..., n, d_ff]: the units whose pre-activation
    is ≤ 0 for every one of the n inputs."""
    return ~(pre > 0).any(dim=-2)


@dataclass
class DamageRuns:
    """Every run of :func:`damage_and_retrain`, one per seed: dims [N, d_ff] unless noted."""

    seeds: tuple[int, ...]
    hit: torch.Tensor           # bool: silent on every input right after the update
    grad_w1: torch.Tensor       # Σ|∂L/∂W1| over each unit's input weights, right after it
    grad_w2: torch.Tensor       # Σ|∂L/∂W2| over each unit's output weights, right after it
    moved: torch.Tensor         # Σ|change| of each unit's W1 weights and b1 while retraining
    silent_after: torch.Tensor  # bool: silenced by the update and still silent at the end
    top_pre: torch.Tensor       # [checks, N, d_ff]: max over inputs of each unit's
                                # pre-activation, right after the update and every ``every`` steps
    check_steps: torch.Tensor   # [checks]: retraining steps at which top_pre was taken

    @property
    def n_hit(self) -> torch.Tensor:
        """[N]: units the bad update silenced."""
        return self.hit.sum(dim=-1)

    @property
    def n_revived(self) -> torch.Tensor:
        """[N]: silenced units that answer at least one input again at the end."""
        return (self.hit & ~self.silent_after).sum(dim=-1)


def damage_and_retrain(
    x: torch.Tensor, y: torch.Tensor, activation: str, seeds: Sequence[int],
    shift: float = 2.0, d_ff: int = 16, before: int = 200, after: int = 300,
    lr: float = 0.1, every: int = 10,
) -> DamageRuns:
    """For every seed: build ``FeedForward(d_model, d_ff, activation)`` from the seed, train
    it with ``fit`` (plain gradient descent, lr ``lr``) on the MSE for ``before`` steps,
    subtract ``shift`` from every b1 (the bad update), and train ``after`` more steps,
    watching the units the update silenced. Plain gradient descent keeps no state, so
    retraining in pieces of ``every`` steps is the same as one piece."""
    for name, value in (("d_ff", d_ff), ("before", before), ("after", after),
                        ("every", every)):
        check_positive_int(name, value)
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("seeds 应至少有一个值，实际为 0 个")
    if not shift > 0:
        raise ValueError(f"shift 应为正数（偏置减去的量），实际为 {shift!r}")
    if after % every:
        raise ValueError(f"after 应为 every={every} 的整数倍，实际为 {after}")
    if x.ndim != 2 or y.ndim != 2 or y.shape[0] != x.shape[0]:
        raise ValueError(f"x 应为 [n, d_model]、y 应为 [n, d_out]，实际为 {list(x.shape)} 和 "
                         f"{list(y.shape)}")
    get_activation(activation)  # a wrong name fails here, before any training
    stack = FeedForwardStack([_seeded_ffn(seed, x.shape[1], d_ff, activation) for seed in seeds])

    def loss(model: FeedForwardStack) -> torch.Tensor:
        return member_mse(model, x, y)

    fit(stack, loss, before, lr, optimizer="sgd")
    with torch.no_grad():
        stack.b1 -= shift                                        # the bad update
        hit = silent_units(stack.pre_activation(x))
    grad_w1, grad_w2 = torch.autograd.grad(loss(stack).sum(), (stack.w1, stack.w2))
    start = torch.cat([stack.w1, stack.b1], dim=1).detach().clone()
    tops = [stack.pre_activation(x).amax(dim=1).detach()]
    for _ in range(after // every):
        fit(stack, loss, every, lr, optimizer="sgd")
        tops.append(stack.pre_activation(x).amax(dim=1).detach())
    with torch.no_grad():
        moved = (torch.cat([stack.w1, stack.b1], dim=1) - start).abs().sum(dim=1)
        silent_after = silent_units(stack.pre_activation(x)) & hit
    return DamageRuns(seeds=seeds, hit=hit, grad_w1=grad_w1.abs().sum(dim=1),
                      grad_w2=grad_w2.abs().sum(dim=2), moved=moved,
                      silent_after=silent_after, top_pre=torch.stack(tops),
                      check_steps=torch.arange(0, after + 1, every))


def _seeded_ffn(seed: int, d_model: int, d_ff: int, activation: str) -> FeedForward:
    with seeded(seed):
        return FeedForward(d_model, d_ff, activation=activation)
