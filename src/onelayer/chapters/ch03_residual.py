"""Chapter 3's experiments: gradients through deep MLPs with and without shortcuts, and the
degradation experiment (He et al. 2016) at toy scale on ``onelayer.data.two_spirals``.

Many small networks are trained at once as one ``MLPEnsemble``: a hand-stacked copy of
``DeepMLP`` (tests check it member by member). ``torch.func.stack_module_state`` + ``vmap``
would give the same from ``DeepMLP`` itself, but is several times slower
(``make bench`` times both: tools/bench_ensembles.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.checks import check_choice, check_last_dim
from onelayer.mlp import DeepMLP
from onelayer.probes import weight_grad_norms
from onelayer.train import fit, seeded

VARIANTS = {"residual": (True, "default"), "plain": (False, "default"), "plain_he": (False, "he")}


def bce_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy over the samples; logits [..., n, 1], labels y [n] in {0, 1}.

    Leading dimensions (e.g. ensemble members) are kept: the result has shape [...].
    """
    z = logits.squeeze(-1)
    return F.binary_cross_entropy_with_logits(z, y.expand_as(z), reduction="none").mean(-1)


@torch.no_grad()
def error_rate(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of samples classified wrongly (logit > 0 means class 1); shape [...]."""
    z = logits.squeeze(-1)
    return ((z > 0).float() != y).float().mean(-1)


def layer_grad_norms(model: DeepMLP, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """‖∂L/∂W1‖ of each FFN layer, shape [n_layers], float64; L is ``bce_loss``."""
    return weight_grad_norms(bce_loss(model(x), y), [f.w1.weight for f in model.layers])


class MLPEnsemble(nn.Module):
    """Several ``DeepMLP`` of the same shape, computed together with batched matrix products.

    Member i's weights are slice [i] of stacked tensors (stored as x·W, not nn.Linear's
    transpose); members share no parameter, so training the ensemble on the summed loss
    trains each member exactly as on its own, only with fewer, larger operations.
    Shortcuts may differ per member: h ← s·h + FFN(h) with s = 1 (residual) or 0 (plain).
    """

    def __init__(self, members: Sequence[DeepMLP]) -> None:
        super().__init__()
        first = members[0]
        shape = (first.n_layers, first.d_model, first.d_ff, first.d_in)
        for member in members:
            got = (member.n_layers, member.d_model, member.d_ff, member.d_in)
            if got != shape:
                raise ValueError(
                    f"成员的 (n_layers, d_model, d_ff, d_in) 应都为 {shape}，实际有 {got}"
                )
        self.activation = first.layers[0].activation
        # torch.relu gives the same numbers as onelayer.relu in one operation instead of three.
        self.act = torch.relu if self.activation == "relu" else first.layers[0].act

        def stack(get, dim=0):
            return nn.Parameter(torch.stack([get(m).detach().clone() for m in members], dim))

        def stack_layers(get):
            return nn.Parameter(torch.stack([
                torch.stack([get(b).detach().clone() for b in m.layers]) for m in members
            ], dim=1))  # [n_layers, M, ...]：第 l 层的所有成员连续存放

        self.embed_w = stack(lambda m: m.embed.weight.T)  # [M, d_in, d_model]
        self.embed_b = stack(lambda m: m.embed.bias[None])  # [M, 1, d_model]
        self.w1 = stack_layers(lambda b: b.w1.weight.T)  # [L, M, d_model, d_ff]
        self.b1 = stack_layers(lambda b: b.w1.bias[None])  # [L, M, 1, d_ff]
        self.w2 = stack_layers(lambda b: b.w2.weight.T)  # [L, M, d_ff, d_model]
        self.b2 = stack_layers(lambda b: b.w2.bias[None])  # [L, M, 1, d_model]
        self.head_w = stack(lambda m: m.head.weight.T)  # [M, d_model, d_out]
        self.head_b = stack(lambda m: m.head.bias[None])  # [M, 1, d_out]
        self.register_buffer("shortcut", torch.tensor([float(m.shortcut) for m in members]))
        self.inits = [m.init for m in members]

    def per_member(self, values: torch.Tensor) -> list[torch.Tensor]:
        """``values`` [M] shaped to broadcast against each parameter, in ``parameters()`` order.

        Members sit on dim 0 of the embedding and head tensors and on dim 1 of the block tensors.
        """
        n_members = len(self.shortcut)
        if values.shape != (n_members,):
            raise ValueError(f"每个成员一个值：形状应为 [{n_members}]，实际为 {list(values.shape)}")
        views = []
        for name, p in self.named_parameters():
            shape = [1] * p.dim()
            shape[1 if name in ("w1", "b1", "w2", "b2") else 0] = n_members
            views.append(values.to(p.dtype).view(shape))
        return views

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d_in] → logits [M, n, d_out]."""
        check_last_dim(x, self.embed_w.shape[1], "d_in")
        h = torch.baddbmm(self.embed_b, x.expand(len(self.shortcut), -1, -1), self.embed_w)
        s = self.shortcut[:, None, None]
        for w1, b1, w2, b2 in zip(self.w1, self.b1, self.w2, self.b2):
            f = torch.baddbmm(b2, self.act(torch.baddbmm(b1, h, w1)), w2)  # FFN(h)
            h = torch.addcmul(f, s, h)  # s·h + FFN(h)
        return torch.baddbmm(self.head_b, h, self.head_w)

    def member(self, i: int) -> DeepMLP:
        """Member i as a stand-alone ``DeepMLP`` carrying the current weights."""
        n_layers, _, d_model, d_ff = self.w1.shape
        with torch.random.fork_rng(devices=[]):  # 权重随后被覆盖：不消耗全局随机数
            net = DeepMLP(
                n_layers, d_model, d_ff, shortcut=bool(self.shortcut[i]), init="default",
                d_in=self.embed_w.shape[1], d_out=self.head_w.shape[2],
                activation=self.activation,
            )
        net.init = self.inits[i]
        with torch.no_grad():
            net.embed.weight.copy_(self.embed_w[i].T)
            net.embed.bias.copy_(self.embed_b[i, 0])
            for k, ffn in enumerate(net.layers):
                ffn.w1.weight.copy_(self.w1[k, i].T)
                ffn.w1.bias.copy_(self.b1[k, i, 0])
                ffn.w2.weight.copy_(self.w2[k, i].T)
                ffn.w2.bias.copy_(self.b2[k, i, 0])
            net.head.weight.copy_(self.head_w[i].T)
            net.head.bias.copy_(self.head_b[i, 0])
        return net


def seeded_mlp(variant: str, n_layers: int, seed: int, d_model: int = 16) -> DeepMLP:
    """The ``DeepMLP`` of one variant of ``VARIANTS`` whose weights depend only on ``seed``.

    "residual" and "plain" with the same seed start from identical weights.
    """
    shortcut, init = VARIANTS[check_choice("variant", variant, VARIANTS)]
    with seeded(seed):
        return DeepMLP(n_layers, d_model, shortcut=shortcut, init=init)


@dataclass(frozen=True)
class SweepResult:
    """Training error and loss of every (variant, learning rate, depth, seed) after training.

    ``error`` and ``loss`` have shape [variants, lrs, depths, seeds]; ``history`` has shape
    [depths, steps, variants, lrs, seeds] (the loss before each step). ``ensembles[d]`` holds
    the trained networks of depth ``depths[d]``.
    """

    variants: tuple[str, ...]
    lrs: tuple[float, ...]
    depths: tuple[int, ...]
    seeds: tuple[int, ...]
    error: torch.Tensor
    loss: torch.Tensor
    history: torch.Tensor
    ensembles: tuple[MLPEnsemble, ...]

    def network(self, variant: str, depth: int, seed: int, lr: float | None = None) -> DeepMLP:
        """One trained network as a stand-alone ``DeepMLP`` (``lr`` may be left out if unique)."""
        v = self.variants.index(check_choice("variant", variant, self.variants))
        r = 0 if lr is None and len(self.lrs) == 1 else self.lrs.index(lr)
        index = (v * len(self.lrs) + r) * len(self.seeds) + self.seeds.index(seed)
        return self.ensembles[self.depths.index(depth)].member(index)


def degradation_sweep(
    x: torch.Tensor,
    y: torch.Tensor,
    depths: Sequence[int],
    seeds: Sequence[int] = (0, 1, 2),
    variants: Sequence[str] = tuple(VARIANTS),
    lrs: Sequence[float] = (5e-3,),
    d_model: int = 16,
    steps: int = 200,
) -> SweepResult:
    """Train every variant with every learning rate at every depth from every seed.

    Training is full-batch Adam (``onelayer.train.fit``); all networks of one depth are
    trained together as one ``MLPEnsemble`` (one learning rate per member when there are
    several).
    """
    errors, losses, histories, ensembles = [], [], [], []
    shape = (len(variants), len(lrs), len(seeds))
    member_lr: float | torch.Tensor = lrs[0]  # 成员顺序：网络 → 学习率 → 种子
    if len(lrs) > 1:
        member_lr = torch.tensor(lrs).repeat_interleave(len(seeds)).repeat(len(variants))
    for depth in depths:
        members = [seeded_mlp(v, depth, s, d_model) for v in variants for _ in lrs for s in seeds]
        ensemble = MLPEnsemble(members)
        history = fit(ensemble, lambda m: bce_loss(m(x), y), steps, member_lr)
        with torch.no_grad():
            logits = ensemble(x)
        errors.append(error_rate(logits, y).view(shape))
        losses.append(bce_loss(logits, y).view(shape))
        histories.append(history.view(steps, *shape))
        ensembles.append(ensemble)
    return SweepResult(
        variants=tuple(variants), lrs=tuple(lrs), depths=tuple(depths), seeds=tuple(seeds),
        error=torch.stack(errors, dim=2), loss=torch.stack(losses, dim=2).detach(),
        history=torch.stack(histories), ensembles=tuple(ensembles),
    )
