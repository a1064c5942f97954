"""Chapter 3's experiments: gradients through deep MLPs with and without shortcuts (the
lesson), and the degradation experiment (He et al. 2016) at toy scale on
``onelayer.data.two_spirals`` (the depth study, 03a_depth_study); chapter 4 trains the same
networks with a LayerNorm at the entrance of every layer.

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
from onelayer.norms import standardize
from onelayer.probes import weight_grad_norms
from onelayer.train import fit, seeded

# 网络 → (有无捷径, 初始化, 每块入口有无 LayerNorm)
VARIANTS = {
    "residual": (True, "default", False),
    "plain": (False, "default", False),
    "plain_he": (False, "he", False),
    "residual_he": (True, "he", False),
    "residual_ln": (True, "default", True),
    "plain_ln": (False, "default", True),
}
CH3_VARIANTS = ("residual", "plain", "plain_he")


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


@torch.no_grad()
def mean_pairwise_cosine(h: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity between the rows of h [..., n, d] over all pairs i ≠ j, shape [...].

    1 means every row points the same way (the representations collapsed to one direction);
    computed in float64.
    """
    if h.dim() < 2 or h.shape[-2] < 2:
        raise ValueError(f"h 的形状应为 [..., n, d] 且 n ≥ 2，实际为 {list(h.shape)}")
    unit = F.normalize(h.double(), dim=-1)
    n = h.shape[-2]
    total = (unit.sum(-2) ** 2).sum(-1)  # Σ_ij cos(h_i, h_j)，含 i = j 的 n 项（各为 1）
    return (total - n) / (n * (n - 1))


@torch.no_grad()
def relative_spread(h: torch.Tensor) -> float:
    """How far the rows of ``h`` [n, d] are from their mean row, relative to its size:
    mean over rows of ‖h_i − h̄‖, divided by ‖h̄‖ (0 when all rows are equal); float64."""
    if h.dim() != 2 or h.shape[0] < 2:
        raise ValueError(f"h 应为形状 [n, d]、n ≥ 2 的矩阵，实际形状为 {list(h.shape)}")
    h = h.double()
    mean = h.mean(0)
    return ((h - mean).norm(dim=-1).mean() / mean.norm().clamp_min(1e-300)).item()


def display_width(text: str) -> int:
    """Columns ``text`` takes in monospaced output: a CJK or full-width character takes two."""
    return sum(2 if ord(ch) > 0x2E80 else 1 for ch in text)


def seed_table(values: torch.Tensor, rows: Sequence[object], columns: Sequence[str],
               corner: str = "", digits: tuple[int, int] = (1, 0), width: int = 18) -> str:
    """A plain-text table: cell [r, c] is "median [min, max]" of ``values[r, c]`` over the seeds.

    ``values`` has shape [len(rows), len(columns), seeds]; ``digits`` are the decimals of the
    median and of the min/max. Columns are right-aligned with CJK characters counted twice.
    """
    if values.dim() != 3 or values.shape[:2] != (len(rows), len(columns)):
        raise ValueError(f"values 的形状应为 [{len(rows)}, {len(columns)}, 种子数]，"
                         f"实际为 {list(values.shape)}")

    def pad(text: str, to: int) -> str:
        return " " * (to - display_width(text)) + text

    labels = [str(r) for r in rows]
    first = max(display_width(t) for t in [corner, *labels])
    header = corner + " " * (first - display_width(corner))
    lines = [header + "".join(pad(c, width) for c in columns)]
    m, e = digits
    for label, row in zip(labels, values):
        cells = [f"{v.median():.{m}f} [{v.min():.{e}f}, {v.max():.{e}f}]" for v in row]
        lines.append(pad(label, first) + "".join(pad(c, width) for c in cells))
    return "\n".join(lines)


class MLPEnsemble(nn.Module):
    """Several ``DeepMLP`` of the same shape, computed together with batched matrix products.

    Member i's weights are slice [i] of stacked tensors (stored as x·W, not nn.Linear's
    transpose); members share no parameter, so training the ensemble on the summed loss
    trains each member exactly as on its own, only with fewer, larger operations.
    Shortcuts may differ per member: h ← s·h + FFN(h) with s = 1 (residual) or 0 (plain);
    so may LayerNorm: members with ``norm=True`` feed FFN(LN(h)) instead of FFN(h).
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
        normed = [m.norms is not None for m in members]
        self.register_buffer("normed", None)  # 没有成员带 LayerNorm 时不算它
        if any(normed):
            ones = [torch.ones(first.n_layers, 1, first.d_model)] * len(members)
            gammas = [torch.stack([n.weight[None] for n in m.norms]) if m.norms is not None
                      else o for m, o in zip(members, ones)]
            betas = [torch.stack([n.bias[None] for n in m.norms]) if m.norms is not None
                     else 0 * o for m, o in zip(members, ones)]
            self.ln_w = nn.Parameter(torch.stack(gammas, dim=1).detach().clone())  # [L, M, 1, d]
            self.ln_b = nn.Parameter(torch.stack(betas, dim=1).detach().clone())  # [L, M, 1, d]
            self.register_buffer("normed", torch.tensor(normed)[:, None, None])
            self.eps = members[normed.index(True)].norms[0].eps
            self.all_normed = all(normed)

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
            shape[1 if name in ("w1", "b1", "w2", "b2", "ln_w", "ln_b") else 0] = n_members
            views.append(values.to(p.dtype).view(shape))
        return views

    def stream(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The stream h of every member after the embedding and after each layer:
        n_layers + 1 tensors [M, n, d_model]."""
        check_last_dim(x, self.embed_w.shape[1], "d_in")
        h = torch.baddbmm(self.embed_b, x.expand(len(self.shortcut), -1, -1), self.embed_w)
        s = self.shortcut[:, None, None]
        states = [h]
        for i, (w1, b1, w2, b2) in enumerate(zip(self.w1, self.b1, self.w2, self.b2)):
            u = h
            if self.normed is not None:  # 带 LayerNorm 的成员读 γ ⊙ x̂ + β
                x_hat = standardize(h, eps=self.eps)  # 与 onelayer.norms.LayerNorm 同样的算法
                ln = torch.addcmul(self.ln_b[i], x_hat, self.ln_w[i])
                u = ln if self.all_normed else torch.where(self.normed, ln, h)
            f = torch.baddbmm(b2, self.act(torch.baddbmm(b1, u, w1)), w2)  # FFN(u)
            h = torch.addcmul(f, s, h)  # s·h + FFN(u)
            states.append(h)
        return states

    def head_logits(self, h: torch.Tensor) -> torch.Tensor:
        """The head on the last stream h [M, n, d_model] → logits [M, n, d_out]."""
        return torch.baddbmm(self.head_b, h, self.head_w)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [n, d_in] → logits [M, n, d_out]."""
        return self.head_logits(self.stream(x)[-1])

    def member(self, i: int) -> DeepMLP:
        """Member i as a stand-alone ``DeepMLP`` carrying the current weights."""
        n_layers, _, d_model, d_ff = self.w1.shape
        with torch.random.fork_rng(devices=[]):  # 权重随后被覆盖：不消耗全局随机数
            net = DeepMLP(
                n_layers, d_model, d_ff, shortcut=bool(self.shortcut[i]), init="default",
                d_in=self.embed_w.shape[1], d_out=self.head_w.shape[2],
                activation=self.activation,
                norm=self.normed is not None and bool(self.normed[i]),
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
            for k, norm in enumerate(net.norms or ()):
                norm.weight.copy_(self.ln_w[k, i, 0])
                norm.bias.copy_(self.ln_b[k, i, 0])
        return net


def seeded_mlp(variant: str, n_layers: int, seed: int, d_model: int = 16) -> DeepMLP:
    """The ``DeepMLP`` of one variant of ``VARIANTS`` whose weights depend only on ``seed``.

    "residual", "plain", "residual_ln" and "plain_ln" with the same seed start from
    identical FFN weights.
    """
    shortcut, init, norm = VARIANTS[check_choice("variant", variant, VARIANTS)]
    with seeded(seed):
        return DeepMLP(n_layers, d_model, shortcut=shortcut, init=init, norm=norm)


@dataclass(frozen=True)
class SweepResult:
    """Training error and loss of every (variant, learning rate, depth, seed) after training.

    ``error`` and ``loss`` have shape [variants, lrs, depths, seeds]; ``history`` has shape
    [depths, steps, variants, lrs, seeds] (the loss before each step). ``ensembles[d]`` holds
    the trained networks of depth ``depths[d]``. When the sweep records statistics,
    ``trace_steps`` lists the steps measured and, for depth ``depths[d]``, ``stream_rms[d]``
    has shape [len(trace_steps), depth + 1, variants, lrs, seeds] (RMS of the stream after
    the embedding and after each layer) and ``grad_w1[d]`` [len(trace_steps), depth, variants,
    lrs, seeds] (‖∂L/∂W1‖ of each layer), both measured before that step's update.
    """

    variants: tuple[str, ...]
    lrs: tuple[float, ...]
    depths: tuple[int, ...]
    seeds: tuple[int, ...]
    error: torch.Tensor
    loss: torch.Tensor
    history: torch.Tensor
    ensembles: tuple[MLPEnsemble, ...]
    trace_steps: tuple[int, ...] = ()
    stream_rms: tuple[torch.Tensor, ...] = ()
    grad_w1: tuple[torch.Tensor, ...] = ()

    def network(self, variant: str, depth: int, seed: int, lr: float | None = None) -> DeepMLP:
        """One trained network as a stand-alone ``DeepMLP`` (``lr`` may be left out if unique)."""
        v = self.variants.index(check_choice("variant", variant, self.variants))
        r = 0 if lr is None and len(self.lrs) == 1 else self.lrs.index(lr)
        index = (v * len(self.lrs) + r) * len(self.seeds) + self.seeds.index(seed)
        return self.ensembles[self.depths.index(depth)].member(index)


class _TracedLoss:
    """``bce_loss`` of an ensemble for ``fit``; at the steps listed it also records the RMS of
    the stream after each layer [L + 1, M] and each layer's ‖∂L/∂W1‖ [L, M]."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, steps: Sequence[int]) -> None:
        self.x, self.y, self.steps = x, y, set(steps)
        self.step = 0
        self.rms: list[torch.Tensor] = []
        self.grads: list[torch.Tensor] = []

    def __call__(self, model: MLPEnsemble) -> torch.Tensor:
        states = model.stream(self.x)
        loss = bce_loss(model.head_logits(states[-1]), self.y)
        if self.step in self.steps:  # 这一步更新之前的统计量
            with torch.no_grad():
                self.rms.append(torch.stack([h.pow(2).mean((-2, -1)).sqrt() for h in states]))
            (g,) = torch.autograd.grad(loss.sum(), model.w1, retain_graph=True)
            self.grads.append(g.flatten(-2).norm(dim=-1))
        self.step += 1
        return loss


def degradation_sweep(
    x: torch.Tensor,
    y: torch.Tensor,
    depths: Sequence[int],
    seeds: Sequence[int] = (0, 1, 2),
    variants: Sequence[str] = CH3_VARIANTS,
    lrs: Sequence[float] = (5e-3,),
    d_model: int = 16,
    steps: int = 200,
    record_every: int = 0,
) -> SweepResult:
    """Train every variant with every learning rate at every depth from every seed.

    Training is full-batch Adam (``onelayer.train.fit``); all networks of one depth are
    trained together as one ``MLPEnsemble`` (one learning rate per member when there are
    several). ``record_every`` > 0 also measures the stream's RMS and each layer's
    ‖∂L/∂W1‖ every that many steps (one extra backward pass each time).
    """
    if record_every < 0:
        raise ValueError(f"record_every 应为非负整数，实际为 {record_every}")
    for variant in variants:
        check_choice("variant", variant, VARIANTS)
    errors, losses, histories, ensembles = [], [], [], []
    rms_traces, grad_traces = [], []
    shape = (len(variants), len(lrs), len(seeds))
    member_lr: float | torch.Tensor = lrs[0]  # 成员顺序：网络 → 学习率 → 种子
    if len(lrs) > 1:
        member_lr = torch.tensor(lrs).repeat_interleave(len(seeds)).repeat(len(variants))
    trace_steps = tuple(range(0, steps, record_every)) if record_every else ()
    for depth in depths:
        members = [seeded_mlp(v, depth, s, d_model) for v in variants for _ in lrs for s in seeds]
        ensemble = MLPEnsemble(members)
        loss_fn = _TracedLoss(x, y, trace_steps)
        history = fit(ensemble, loss_fn, steps, member_lr)
        with torch.no_grad():
            logits = ensemble(x)
        errors.append(error_rate(logits, y).view(shape))
        losses.append(bce_loss(logits, y).view(shape))
        histories.append(history.view(steps, *shape))
        ensembles.append(ensemble)
        if trace_steps:
            rms_traces.append(torch.stack(loss_fn.rms).view(len(trace_steps), depth + 1, *shape))
            grad_traces.append(torch.stack(loss_fn.grads).view(len(trace_steps), depth, *shape))
    return SweepResult(
        variants=tuple(variants), lrs=tuple(lrs), depths=tuple(depths), seeds=tuple(seeds),
        error=torch.stack(errors, dim=2), loss=torch.stack(losses, dim=2).detach(),
        history=torch.stack(histories), ensembles=tuple(ensembles),
        trace_steps=trace_steps, stream_rms=tuple(rms_traces), grad_w1=tuple(grad_traces),
    )
