"""Chapter 2's experiment: a 'bad update' pushes every b1 down, then training goes on — do
the units it silenced come back, with ReLU and with GELU?

All runs of one activation (every seed × every shift) train together as one stack of
independent FFNs ("members"): each weight gets a leading member dimension and each linear
layer becomes one batched matrix product. Member m computes exactly what a lone
``FeedForward`` built from its seed would (a test checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from onelayer.activations import get_activation
from onelayer.checks import check_positive_int
from onelayer.ffn import FeedForward
from onelayer.train import seeded


def silent_units(pre: torch.Tensor) -> torch.Tensor:
    """[..., d_ff] bool from pre-activations [..., n, d_ff]: the units whose pre-activation
    is ≤ 0 for every one of the n inputs."""
    return ~(pre > 0).any(dim=-2)


@dataclass
class DamageRuns:
    """Every run of :func:`damage_and_retrain`; the leading dims are [shift, seed]."""

    shifts: tuple[float, ...]
    seeds: tuple[int, ...]
    hit: torch.Tensor           # [S, N, d_ff] bool: silent on every input right after the update
    grad_w1: torch.Tensor       # [S, N, d_ff]: Σ|∂L/∂W1| over each unit's weights, right after it
    grad_w2: torch.Tensor       # [S, N, d_ff]: Σ|∂L/∂W2| over each unit's output weights
    moved: torch.Tensor         # [S, N, d_ff]: Σ|change| of each unit's W1 weights and b1 after it
    silent_after: torch.Tensor  # [S, N, d_ff] bool: still silent on every input at the end
    loss_before: torch.Tensor   # [S, N]: just before the bad update
    loss_final: torch.Tensor    # [S, N]: after retraining
    losses: torch.Tensor        # [before + after, S, N]: the loss before each step

    @property
    def n_hit(self) -> torch.Tensor:
        """[S, N]: units the bad update silenced."""
        return self.hit.sum(dim=-1)

    @property
    def n_revived(self) -> torch.Tensor:
        """[S, N]: silenced units that answer at least one input again at the end."""
        return (self.hit & ~self.silent_after).sum(dim=-1)


def damage_and_retrain(
    x: torch.Tensor, y: torch.Tensor, activation: str, seeds: Sequence[int],
    shifts: Sequence[float] = (2.0,), d_ff: int = 16, before: int = 200, after: int = 300,
    lr: float = 0.1,
) -> DamageRuns:
    """For every shift and seed: build ``FeedForward(d_model, d_ff, activation)`` from the
    seed, train it by plain full-batch gradient descent on the MSE (lr ``lr``) for ``before``
    steps, subtract the shift from every b1 (the bad update), train ``after`` more steps, and
    record what happened to the units the update silenced."""
    for name, value in (("d_ff", d_ff), ("before", before), ("after", after)):
        check_positive_int(name, value)
    seeds, shifts = tuple(seeds), tuple(float(s) for s in shifts)
    if not seeds or not shifts:
        raise ValueError(f"seeds 和 shifts 都应至少有一个值，"
                         f"实际为 {len(seeds)} 个和 {len(shifts)} 个")
    if min(shifts) <= 0:
        raise ValueError(f"shifts 应全为正数（偏置减去的量），实际为 {list(shifts)}")
    if x.ndim != 2 or y.shape[:1] != x.shape[:1]:
        raise ValueError(f"x 应为 [n, d_model]、y 应为 [n, d_out]，实际为 {list(x.shape)} 和 "
                         f"{list(y.shape)}")
    act = get_activation(activation)
    n_shifts, n_seeds = len(shifts), len(seeds)

    inits = []
    for seed in seeds:
        with seeded(seed):
            inits.append(FeedForward(x.shape[-1], d_ff, activation=activation))
    params = [torch.stack([t.detach() for t in tensors]).requires_grad_() for tensors in (
        [f.w1.weight.T for f in inits], [f.w1.bias for f in inits],
        [f.w2.weight.T for f in inits], [f.w2.bias for f in inits])]

    def pre_activation() -> torch.Tensor:                        # [M, n, d_ff]
        return x @ params[0] + params[1][:, None]

    def member_losses() -> torch.Tensor:                         # [M]
        out = act(pre_activation()) @ params[2] + params[3][:, None]
        return ((out - y) ** 2).mean(dim=(1, 2))

    def train(steps: int) -> torch.Tensor:
        history = []
        for _ in range(steps):
            loss = member_losses()
            grads = torch.autograd.grad(loss.sum(), params)
            with torch.no_grad():
                torch._foreach_sub_(params, torch._foreach_mul(grads, lr))
            history.append(loss.detach())
        return torch.stack(history)

    history = [train(before).repeat(1, n_shifts)]                # same for every shift
    with torch.no_grad():
        loss_before = member_losses().repeat(n_shifts)
        # one copy of the seeds' models per shift: member m = (shift m // N, seed m % N)
        params[:] = [p.repeat(n_shifts, *[1] * (p.ndim - 1)).requires_grad_() for p in params]
        shift_per_member = torch.tensor(shifts).repeat_interleave(n_seeds)
        params[1] -= shift_per_member[:, None]                   # the bad update
        hit = silent_units(pre_activation())
    grad_w1, _, grad_w2, _ = torch.autograd.grad(member_losses().sum(), params)
    unit_params = torch.cat([params[0].detach(), params[1].detach()[:, None]], dim=1).clone()
    history.append(train(after))
    with torch.no_grad():
        moved = (torch.cat([params[0], params[1][:, None]], dim=1) - unit_params).abs().sum(1)
        silent_after = silent_units(pre_activation()) & hit
        loss_final = member_losses()

    def grid(t: torch.Tensor) -> torch.Tensor:                  # [M, ...] → [S, N, ...]
        return t.reshape(n_shifts, n_seeds, *t.shape[1:])

    losses = torch.cat(history)                                  # [steps, M]
    return DamageRuns(
        shifts=shifts, seeds=seeds,
        hit=grid(hit),
        grad_w1=grid(grad_w1.abs().sum(dim=1)),
        grad_w2=grid(grad_w2.abs().sum(dim=2)),
        moved=grid(moved),
        silent_after=grid(silent_after),
        loss_before=grid(loss_before),
        loss_final=grid(loss_final),
        losses=losses.reshape(before + after, n_shifts, n_seeds),
    )
