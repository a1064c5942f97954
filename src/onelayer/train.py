"""Training: the book's own optimiser (Adam, written out; plain gradient descent beside it)
with its loops — full-batch (``fit``) and language-model batches (``train_lm``) — and, for
chapter 10, the loop as real language models are trained with PyTorch's parts
(``train_adamw``: ``torch.optim.AdamW``, warm-up then cosine decay, gradient clipping).

Randomness is explicit: models are built inside ``seeded(seed)`` and batches come from a
``torch.Generator`` made from a seed, so no function here moves the global random state.
The loops also train a *stack* of models (``onelayer.stack``): one loss per member, summed
for the gradient — members share no parameter, so each gets exactly its own gradient — and,
in ``fit`` and ``train_lm``, one learning rate per member.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from onelayer.checks import check_choice, check_positive_int
from onelayer.data import FactsCorpus
from onelayer.model import lm_loss

LearningRate = float | Sequence[torch.Tensor]  # one number, or one tensor per parameter
Progress = Callable[[Iterable[int]], Iterable[int]]  # wraps the steps, e.g. a progress bar


SEED_OFFSET_VARIABLE = "ONELAYER_SEED_OFFSET"


def seed_offset() -> int:
    """The environment's ``ONELAYER_SEED_OFFSET`` (0 when unset): every experiment's seeds
    are shifted by it, so a claim can be re-checked on seeds nobody has looked at."""
    raw = os.environ.get(SEED_OFFSET_VARIABLE, "0").strip() or "0"
    if not raw.isdigit():
        raise ValueError(f"{SEED_OFFSET_VARIABLE} 应为非负整数，实际为 {raw!r}")
    return int(raw)


def experiment_seeds(n: int) -> tuple[int, ...]:
    """The seeds of an experiment with ``n`` runs: offset, offset + 1, …, offset + n − 1."""
    check_positive_int("n", n)
    offset = seed_offset()
    return tuple(range(offset, offset + n))


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Inside the ``with`` block the global generator starts from ``seed`` (so a model built
    there depends only on the seed); afterwards the global random state is as before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


class GradientDescent:
    """θ ← θ − lr·∂L/∂θ."""

    def __init__(self, params: Sequence[torch.Tensor]) -> None:
        self.params = list(params)

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor], lr: LearningRate) -> None:
        torch._foreach_sub_(self.params, torch._foreach_mul(grads, lr))


class Adam:
    """torch.optim.Adam's update with its default settings, written out (a test checks it).

    Writing it out avoids torch.optim, whose first use costs a notebook seconds of imports,
    and lets a stack of models have one learning rate per member.
    """

    def __init__(self, params: Sequence[torch.Tensor], betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = list(params)
        self.m = [torch.zeros_like(p) for p in self.params]  # 一阶矩：梯度的滑动平均
        self.v = [torch.zeros_like(p) for p in self.params]  # 二阶矩：梯度平方的滑动平均
        self.betas, self.eps, self.t = betas, eps, 0

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor], lr: LearningRate) -> None:
        """θ ← θ − lr·(m / (1−β1^t)) / (√(v / (1−β2^t)) + ε); ``lr`` is a number or one
        tensor per parameter (broadcast against it)."""
        beta1, beta2 = self.betas
        self.t += 1
        torch._foreach_lerp_(self.m, grads, 1 - beta1)  # m ← β1·m + (1−β1)·g
        torch._foreach_mul_(self.v, beta2)
        torch._foreach_addcmul_(self.v, grads, grads, value=1 - beta2)  # v ← β2·v + (1−β2)·g²
        denom = torch._foreach_sqrt(self.v)
        torch._foreach_div_(denom, math.sqrt(1 - beta2**self.t))
        torch._foreach_add_(denom, self.eps)  # √(v / (1−β2^t)) + ε
        correction = 1 - beta1**self.t
        if isinstance(lr, (int, float)):
            torch._foreach_addcdiv_(self.params, self.m, denom, value=-lr / correction)
        else:
            step = torch._foreach_div(self.m, denom)
            torch._foreach_mul_(step, lr)
            torch._foreach_add_(self.params, step, alpha=-1 / correction)


OPTIMIZERS = {"adam": Adam, "sgd": GradientDescent}


def _learning_rate(model: nn.Module, lr: float | torch.Tensor) -> LearningRate:
    """A number, or for a stack of models one tensor per parameter from lr [members]."""
    if isinstance(lr, torch.Tensor):
        if not hasattr(model, "per_member"):
            raise ValueError(f"按成员给学习率只适用于一叠模型，实际模型为 {type(model).__name__}")
        if not bool((lr > 0).all()):
            raise ValueError(f"lr 应为正数，实际为 {lr.tolist()}")
        return model.per_member(lr)
    if not lr > 0:
        raise ValueError(f"lr 应为正数，实际为 {lr!r}")
    return lr


def fit(model: nn.Module, loss_fn: Callable[[nn.Module], torch.Tensor], steps: int,
        lr: float | torch.Tensor, optimizer: str = "adam") -> torch.Tensor:
    """Full-batch training: ``steps`` times, loss = loss_fn(model), one optimiser step.

    ``loss_fn`` returns one loss, or one per member of a stack (their sum is minimised, and
    ``lr`` may be a tensor [members]). Returns the loss before each step: [steps, ...].
    """
    check_positive_int("steps", steps)
    params = [p for p in model.parameters() if p.requires_grad]
    step_lr = _learning_rate(model, lr)
    opt = OPTIMIZERS[check_choice("optimizer", optimizer, OPTIMIZERS)](params)
    history = []
    for _ in range(steps):
        loss = loss_fn(model)
        opt.step(torch.autograd.grad(loss.sum(), params), step_lr)
        history.append(loss.detach())
    return torch.stack(history)


def warmup_lr(step: int, lr: float, warmup: int) -> float:
    """Linear learning-rate warm-up from lr/warmup to lr over ``warmup`` steps, then constant."""
    return lr * min(1.0, (step + 1) / warmup) if warmup else lr


def _per_member(name: str, value: object, n: int) -> list:
    values = list(value) if isinstance(value, Sequence) else [value] * n
    if len(values) != n:
        raise ValueError(f"{name} 应有 {n} 个值（每个成员一个），实际为 {len(values)} 个")
    return values


def train_lm(model: nn.Module, corpus: FactsCorpus, steps: int, lr: float = 1e-3,
             warmup: int = 0, batch_size: int = 32, seq_len: int | None = None,
             seed: int | Sequence[int] = 0, progress: Progress | None = None,
             hold: int | Sequence[int] = 0,
             betas: tuple[float, float] = (0.9, 0.999)) -> torch.Tensor:
    """Train a language model on random batches of ``corpus`` with Adam; returns the loss
    per step, [steps] (or [members, steps] for a stack).

    ``warmup`` > 0 ramps the learning rate up linearly over that many steps. The batches
    depend only on ``seed``, so two models trained with the same seed see the same data.
    For a stack of models ``seed`` is a list (one per member, each with its own batches),
    and ``lr``, ``warmup`` and ``hold`` may be lists too. ``hold`` > 0 keeps the learning
    rate at 0 for that many first steps (Adam's moments average their gradients, no weight
    moves), then the schedule starts. ``betas`` are Adam's (β1, β2), torch's defaults unless
    given. ``progress`` wraps the range of steps (e.g. the book's progress bar).
    """
    check_positive_int("steps", steps)
    stacked = isinstance(seed, Sequence)
    seeds = list(seed) if stacked else [seed]
    lrs, warmups, holds = (_per_member(n, v, len(seeds))
                           for n, v in (("lr", lr), ("warmup", warmup), ("hold", hold)))
    for name, values, given in (("warmup", warmups, warmup), ("hold", holds, hold)):
        if any(not (type(v) is int and v >= 0) for v in values):
            raise ValueError(f"{name} 应为非负整数，实际为 {given!r}")
    _learning_rate(model, torch.tensor(lrs) if stacked else lrs[0])       # lr > 0 for all
    seq_len = seq_len or model.config.block_size
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    params = [p for p in model.parameters() if p.requires_grad]
    if not (len(betas) == 2 and all(0 <= beta < 1 for beta in betas)):
        raise ValueError(f"betas 应为两个 [0, 1) 之间的数，实际为 {betas!r}")
    adam = Adam(params, betas=tuple(betas))
    model.train()
    losses = torch.empty(len(seeds), steps)
    for step in (progress or iter)(range(steps)):
        batches = [corpus.batch(batch_size, seq_len, g) for g in generators]
        x, y = (torch.stack(t) for t in zip(*batches)) if stacked else batches[0]
        loss = lm_loss(model(x), y)
        step_lrs = [0.0 if step < h else warmup_lr(step - h, r, w)
                    for r, w, h in zip(lrs, warmups, holds)]
        step_lr = model.per_member(torch.tensor(step_lrs)) if stacked else step_lrs[0]
        adam.step(torch.autograd.grad(loss.sum(), params), step_lr)
        losses[:, step] = loss.detach()
    return losses if stacked else losses[0]


def warmup_cosine(step: int, steps: int, warmup: int, floor: float = 0.1) -> float:
    """The learning rate's factor at ``step`` (0-based) of ``steps``: up linearly over the first
    ``warmup`` steps, then down along a half cosine to ``floor`` at the last step."""
    if not 0 <= warmup < steps:
        raise ValueError(f"warmup 应在 [0, steps={steps}) 内，实际为 {warmup!r}")
    if step < warmup:
        return (step + 1) / warmup
    done = (step - warmup) / max(1, steps - 1 - warmup)              # 0 → 1
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, done)))


def named_weights(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """(name, parameter) of a TinyGPT, or of a stack (one tensor per name, members on dim 0)."""
    if hasattr(model, "per_member"):
        return list(zip(model.names, model.weights))
    return list(model.named_parameters())


def adamw(model: nn.Module, lr: float, weight_decay: float = 0.1,
          betas: tuple[float, float] = (0.9, 0.95)) -> torch.optim.AdamW:
    """torch.optim.AdamW with weight decay on the matrices and embeddings only, not on biases
    or norm gains (nanoGPT's grouping); β2 = 0.95 as GPT-3 and nanoGPT train."""
    decay, keep = [], []
    for name, p in named_weights(model):
        if p.requires_grad:
            norm = any(n in name for n in ("ln_1", "ln_2", "ln_f"))
            (keep if norm or name.endswith("bias") else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": keep, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def clip_gradients(model: nn.Module, max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_: scale the gradient down so that its norm is at most
    ``max_norm``. A stack clips each member on its own norm, as each model alone would."""
    if not hasattr(model, "per_member"):
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        return
    weights = [w for w in model.weights if w.grad is not None]
    norms = torch.stack([w.grad.pow(2).flatten(1).sum(1) for w in weights]).sum(0).sqrt()  # [M]
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    torch._foreach_mul_([w.grad for w in weights],
                        [scale.view(-1, *[1] * (w.dim() - 1)) for w in weights])


def train_adamw(model: nn.Module, corpus, steps: int, lr: float, warmup: int,
                batch_size: int, seq_len: int, seed: int | Sequence[int] = 0,
                max_norm: float = 1.0, evaluate: Callable[[nn.Module], object] | None = None,
                every: int | None = None, progress: Progress | None = None,
                weigh: Callable[[torch.Tensor, int], torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, dict[int, object]]:
    """The training loop of a real language model, for a TinyGPT or a stack of them (one seed
    each: a seed fixes a member's batches). AdamW, warm-up then cosine decay, gradient clipping.
    Returns the training loss per step, [steps] (a stack: [members, steps]), and
    ``evaluate(model)`` (in eval mode) at step 0, every ``every`` steps and after the last:
    {step: result}. ``progress`` wraps the steps (a progress bar; or ``itertools.islice`` to run
    only the first steps of the schedule: the losses of steps not run stay nan). ``weigh``
    (one model): ``weigh(targets, step)`` gives each target's weight in the loss (``lm_loss``)."""
    check_positive_int("steps", steps)
    stacked = hasattr(model, "per_member")
    seeds = _per_member("seed", seed, len(model)) if stacked else [seed]
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    optimizer = adamw(model, lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine(step, steps, warmup))
    losses, evaluations = torch.full((len(seeds), steps), math.nan), {}
    done = 0
    for step in (progress or iter)(range(steps)):
        if evaluate is not None and every and step % every == 0:
            evaluations[step] = _evaluated(model, evaluate)
        batches = [corpus.batch(batch_size, seq_len, g) for g in generators]
        x, y = (torch.stack(t) for t in zip(*batches)) if stacked else batches[0]
        weights = None if weigh is None else weigh(y, step)
        loss = lm_loss(model(x), y, weights)          # 一叠模型：每个成员一个损失
        optimizer.zero_grad()
        loss.sum().backward()
        clip_gradients(model, max_norm)
        optimizer.step()
        schedule.step()
        losses[:, step] = loss.detach()
        done = step + 1
    if evaluate is not None:
        evaluations[done] = _evaluated(model, evaluate)
    return (losses if stacked else losses[0]), evaluations


def _evaluated(model: nn.Module, evaluate: Callable[[nn.Module], object]) -> object:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        result = evaluate(model)
    model.train(was_training)
    return result
