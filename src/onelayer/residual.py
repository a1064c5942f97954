"""Residual connections, x + f(x), and the toy experiments of chapter 3.

- ``residual_add`` / ``Residual``: the shortcut itself, with a shape check;
- ``DeepMLP``: a stack of FFN blocks with or without shortcuts;
- ``block_grad_norms``, ``stream_rms``: what such a stack does to gradients and activations;
- ``adam_fit``, ``MLPEnsemble``, ``degradation_sweep``: the degradation
  experiment (He et al. 2016) at toy scale, on ``onelayer.data.two_spirals``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.checks import check_choice, check_last_dim, check_positive_int
from onelayer.experiments import Adam
from onelayer.ffn import FeedForward

INITS = ("default", "he")
VARIANTS = {"residual": (True, "default"), "plain": (False, "default"), "plain_he": (False, "he")}


def residual_add(x: torch.Tensor, fx: torch.Tensor) -> torch.Tensor:
    """x + f(x), refusing shapes that differ (torch would broadcast some of them silently)."""
    if fx.shape != x.shape:
        raise ValueError(
            f"残差相加要求 f(x) 与 x 形状相同：x 为 {list(x.shape)}，f(x) 为 {list(fx.shape)}"
            "（子层的输出应回到 d_model）"
        )
    return x + fx


class Residual(nn.Module):
    """Wrap a sublayer f so that the module computes x + f(x)."""

    def __init__(self, sublayer: nn.Module) -> None:
        super().__init__()
        self.sublayer = sublayer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return residual_add(x, self.sublayer(x))


def he_init_(ffn: FeedForward) -> FeedForward:
    """Variance-preserving init for a ReLU FFN block: W1 ~ N(0, 2/d_model), W2 ~ N(0, 1/d_ff).

    Uses ``nn.init.kaiming_normal_`` (gain √2 before ReLU, 1 after it); biases are zeroed.
    """
    nn.init.kaiming_normal_(ffn.w1.weight, nonlinearity="relu")
    nn.init.kaiming_normal_(ffn.w2.weight, nonlinearity="linear")
    for layer in (ffn.w1, ffn.w2):
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return ffn


class DeepMLP(nn.Module):
    """embed ``Linear(d_in, d_model)`` → ``n_layers`` FFN blocks → head ``Linear(d_model, d_out)``.

    With ``shortcut=True`` each block updates the stream as h ← h + FFN(h); without it,
    h ← FFN(h). Both versions have exactly the same parameters, so one seed gives both the
    same initial weights. ``init="default"`` keeps PyTorch's ``nn.Linear`` init;
    ``init="he"`` re-initialises the blocks with ``he_init_``.
    """

    def __init__(
        self,
        n_layers: int,
        d_model: int = 16,
        d_ff: int | None = None,
        shortcut: bool = True,
        init: str = "default",
        d_in: int = 2,
        d_out: int = 1,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.d_model = check_positive_int("d_model", d_model)
        self.d_ff = check_positive_int("d_ff", d_model if d_ff is None else d_ff)
        self.d_in = check_positive_int("d_in", d_in)
        self.shortcut = bool(shortcut)
        self.init = check_choice("init", init, INITS)
        self.embed = nn.Linear(d_in, d_model)
        self.blocks = nn.ModuleList(
            FeedForward(d_model, self.d_ff, activation=activation) for _ in range(n_layers)
        )
        self.head = nn.Linear(d_model, check_positive_int("d_out", d_out))
        if init == "he":
            for block in self.blocks:
                he_init_(block)

    def stream(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream h after the embedding and after each block (n_layers + 1)."""
        check_last_dim(x, self.d_in, "d_in")
        h = self.embed(x)
        states = [h]
        for block in self.blocks:
            h = residual_add(h, block(h)) if self.shortcut else block(h)  # h + f(h) 或 f(h)
            states.append(h)
        return states

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stream(x)[-1])

    def extra_repr(self) -> str:
        return f"shortcut={self.shortcut}, init={self.init!r}"


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


def block_grad_norms(model: DeepMLP, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """‖∂L/∂W1‖ of each block (Frobenius norm), shape [n_layers]; L is ``bce_loss``.

    Uses ``torch.autograd.grad``, so the model's ``.grad`` fields are left untouched. The norm
    is taken in float64: squaring a float32 entry of 1e-24 would underflow to 0.
    """
    weights = [block.w1.weight for block in model.blocks]
    grads = torch.autograd.grad(bce_loss(model(x), y), weights)
    return torch.stack([g.double().norm() for g in grads])


@torch.no_grad()
def stream_rms(model: DeepMLP, x: torch.Tensor) -> torch.Tensor:
    """Root mean square of the stream after the embedding and after each block, [n_layers + 1]."""
    return torch.stack([h.pow(2).mean().sqrt() for h in model.stream(x)])


def gpt2_residual_std(n_layer: int, initializer_range: float = 0.02) -> float:
    """GPT-2's init std for the last projection of each residual branch: 0.02/√(2·n_layer).

    A block has two residual branches (attention and MLP), hence 2·n_layer of them.
    """
    return initializer_range / math.sqrt(2 * check_positive_int("n_layer", n_layer))


def adam_fit(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int = 200,
    lr: float | torch.Tensor = 5e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> torch.Tensor:
    """Minimise ``bce_loss`` on the full batch with Adam, written out; returns the loss history.

    The update is torch.optim.Adam's with default settings (a test checks this); writing it
    out avoids torch.optim, whose first use costs seconds of imports. For an ``MLPEnsemble``
    the members' losses are summed, so each member gets exactly its own gradient, and ``lr``
    may be a tensor [M] with one learning rate per member. The history has shape [steps, ...]
    (one column per member).
    """
    check_positive_int("steps", steps)
    lr_views = None
    if isinstance(lr, torch.Tensor):
        if not isinstance(model, MLPEnsemble):
            name = type(model).__name__
            raise ValueError(f"按成员给学习率只适用于 MLPEnsemble，实际模型为 {name}")
        lr_views = model.per_member(lr)
    if not bool(torch.all(torch.as_tensor(lr) > 0)):
        raise ValueError(f"lr 应为正数，实际为 {lr!r}")
    params = [p for p in model.parameters() if p.requires_grad]
    adam = Adam(params, betas, eps)
    history = []
    for _ in range(steps):
        losses = bce_loss(model(x), y)
        grads = torch.autograd.grad(losses.sum(), params)
        history.append(losses.detach())
        if lr_views is None:
            adam.step(grads, lr)
        else:
            adam.step_per_parameter(grads, lr_views)
    return torch.stack(history)


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
        self.activation = first.blocks[0].activation
        # torch.relu gives the same numbers as onelayer.relu in one operation instead of three.
        self.act = torch.relu if self.activation == "relu" else first.blocks[0].act

        def stack(get, dim=0):
            return nn.Parameter(torch.stack([get(m).detach().clone() for m in members], dim))

        def stack_layers(get):
            return nn.Parameter(torch.stack([
                torch.stack([get(b).detach().clone() for b in m.blocks]) for m in members
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
            for layer, block in enumerate(net.blocks):
                block.w1.weight.copy_(self.w1[layer, i].T)
                block.w1.bias.copy_(self.b1[layer, i, 0])
                block.w2.weight.copy_(self.w2[layer, i].T)
                block.w2.bias.copy_(self.b2[layer, i, 0])
            net.head.weight.copy_(self.head_w[i].T)
            net.head.bias.copy_(self.head_b[i, 0])
        return net


def seeded_mlp(variant: str, n_layers: int, seed: int, d_model: int = 16) -> DeepMLP:
    """The ``DeepMLP`` of one variant of ``VARIANTS`` built right after ``torch.manual_seed(seed)``.

    "residual" and "plain" with the same seed start from identical weights.
    """
    shortcut, init = VARIANTS[check_choice("variant", variant, VARIANTS)]
    torch.manual_seed(seed)
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

    Training is ``adam_fit``; all networks of one depth are trained together as one
    ``MLPEnsemble`` (with one learning rate per member when there are several).
    """
    errors, losses, histories, ensembles = [], [], [], []
    shape = (len(variants), len(lrs), len(seeds))
    member_lr: float | torch.Tensor = lrs[0]  # 成员顺序：网络 → 学习率 → 种子
    if len(lrs) > 1:
        member_lr = torch.tensor(lrs).repeat_interleave(len(seeds)).repeat(len(variants))
    for depth in depths:
        members = [seeded_mlp(v, depth, s, d_model) for v in variants for _ in lrs for s in seeds]
        ensemble = MLPEnsemble(members)
        history = adam_fit(ensemble, x, y, steps=steps, lr=member_lr)
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
