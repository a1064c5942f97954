"""Small training loops and probes used by the chapters' experiments."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.data import FactsCorpus
from onelayer.ffn import FeedForward
from onelayer.model import GPTConfig, TinyGPT, lm_loss


def sgd_step(model: nn.Module, x: torch.Tensor, target: torch.Tensor, lr: float) -> float:
    """One plain gradient-descent step on the MSE loss; returns the loss before the step."""
    loss = F.mse_loss(model(x), target)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad  # θ ← θ − lr·∂L/∂θ
    return loss.item()


def teacher_task(
    d_model: int = 4, d_ff: int = 32, n: int = 256, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets from a random 'teacher' FFN: a nonlinear map to be learned."""
    generator = torch.Generator().manual_seed(seed)
    teacher = FeedForward(d_model, d_ff, activation="relu")
    with torch.no_grad():
        for p in teacher.parameters():
            p.copy_(torch.randn(p.shape, generator=generator))
        x = torch.randn(n, d_model, generator=generator)
        y = teacher(x)
        y = (y - y.mean(0)) / y.std(0)  # unit-variance targets: loss 1.0 = predicting the mean
    return x, y


def fit_ffn(
    x: torch.Tensor, y: torch.Tensor, d_ff: int, activation: str = "relu",
    steps: int = 200, lr: float = 0.5, seed: int = 0,
) -> float:
    """Fit a fresh FFN of width ``d_ff`` to (x, y) by full-batch gradient descent.

    Returns the final MSE. Plain gradient descent (the same step as ``sgd_step``) keeps
    the loop short and avoids torch.optim, whose first use costs seconds of imports.
    """
    check_positive_int("steps", steps)
    torch.manual_seed(seed)
    model = FeedForward(x.shape[-1], d_ff, activation=activation)
    for _ in range(steps):
        sgd_step(model, x, y, lr)
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


class Adam:
    """torch.optim.Adam's update with its default settings, written out (a test checks it).

    Writing it out avoids torch.optim, whose first use costs a notebook seconds of imports.
    """

    def __init__(self, params: Sequence[torch.Tensor], betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        self.params = list(params)
        self.m = [torch.zeros_like(p) for p in self.params]  # 一阶矩：梯度的滑动平均
        self.v = [torch.zeros_like(p) for p in self.params]  # 二阶矩：梯度平方的滑动平均
        self.betas, self.eps, self.t = betas, eps, 0

    @torch.no_grad()
    def _denominator(self, grads: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        beta1, beta2 = self.betas
        self.t += 1
        torch._foreach_lerp_(self.m, grads, 1 - beta1)  # m ← β1·m + (1−β1)·g
        torch._foreach_mul_(self.v, beta2)
        torch._foreach_addcmul_(self.v, grads, grads, value=1 - beta2)  # v ← β2·v + (1−β2)·g²
        denom = torch._foreach_sqrt(self.v)
        torch._foreach_div_(denom, math.sqrt(1 - beta2**self.t))
        torch._foreach_add_(denom, self.eps)  # √(v / (1−β2^t)) + ε
        return denom

    @torch.no_grad()
    def step(self, grads: Sequence[torch.Tensor], lr: float) -> None:
        """θ ← θ − lr·(m / (1−β1^t)) / (√(v / (1−β2^t)) + ε)."""
        denom = self._denominator(grads)
        torch._foreach_addcdiv_(self.params, self.m, denom, value=-lr / (1 - self.betas[0]**self.t))

    @torch.no_grad()
    def step_per_parameter(self, grads: Sequence[torch.Tensor],
                           lrs: Sequence[torch.Tensor]) -> None:
        """The same step, with a learning-rate tensor per parameter (broadcast against it)."""
        denom = self._denominator(grads)
        step = torch._foreach_div(self.m, denom)
        torch._foreach_mul_(step, lrs)
        torch._foreach_add_(self.params, step, alpha=-1 / (1 - self.betas[0]**self.t))


def warmup_lr(step: int, lr: float, warmup: int) -> float:
    """Linear learning-rate warm-up from lr/warmup to lr over ``warmup`` steps, then constant."""
    return lr * min(1.0, (step + 1) / warmup) if warmup else lr


def train_lm(
    model: TinyGPT, corpus: FactsCorpus, steps: int, lr: float = 1e-3, warmup: int = 0,
    batch_size: int = 32, seq_len: int | None = None, seed: int = 0, progress: bool = False,
) -> torch.Tensor:
    """Train ``model`` on random batches of ``corpus`` with Adam; returns the loss per step.

    ``warmup`` > 0 ramps the learning rate up linearly over that many steps. The batches
    depend only on ``seed``, so two models trained with the same seed see the same data.
    """
    check_positive_int("steps", steps)
    if warmup < 0:
        raise ValueError(f"warmup 应为非负整数，实际为 {warmup!r}")
    seq_len = seq_len or model.config.block_size
    generator = torch.Generator().manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    adam = Adam(params)
    model.train()
    losses = torch.empty(steps)
    for step in tqdm(range(steps), disable=not progress, file=sys.stderr, mininterval=1.0):
        x, y = corpus.batch(batch_size, seq_len, generator)
        loss = lm_loss(model(x), y)
        adam.step(torch.autograd.grad(loss, params), warmup_lr(step, lr, warmup))
        losses[step] = loss.detach()
    return losses


def fact_queries(corpus: FactsCorpus, context: int = 0, seed: int = 0
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompts [n_facts, 4·context + 2] asking every fact ("猫吃" → "桃") and the answers.

    Each prompt starts with ``context`` other random facts, a context never seen as such.
    """
    generator = torch.Generator().manual_seed(seed)
    n = len(corpus.facts)
    prefix = corpus.stream(n * context, generator).view(n, 4 * context)
    asks = torch.tensor([corpus.encode(s + r) for s, r in corpus.facts])
    answers = torch.tensor(corpus.encode("".join(corpus.facts.values())))
    return torch.cat([prefix, asks], dim=1), answers


@torch.no_grad()
def fact_recall(model: TinyGPT, corpus: FactsCorpus, context: int = 2, seed: int = 0) -> float:
    """Fraction of facts whose object is the model's most likely next token."""
    prompts, answers = fact_queries(corpus, context, seed)
    model.eval()
    return (model(prompts)[:, -1].argmax(-1) == answers).float().mean().item()


def ffn_grad_norms(model: TinyGPT, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """‖∂loss/∂W2‖ of every block's FFN (Xiong et al. 2020, Fig. 3), first block first."""
    weights = [block.mlp.w2.weight for block in model.blocks]
    grads = torch.autograd.grad(lm_loss(model(x), y), weights)
    return torch.stack([g.norm() for g in grads])


FACTS_BATCH = 32  # 第 7 章每步的批大小


def facts_gpt_config(corpus: FactsCorpus, d_ff: int | None = None, n_layers: int = 1,
                     norm_position: str = "pre", init: str = "gpt2",
                     d_model: int = 32) -> GPTConfig:
    """Chapter 7's model for ``corpus``: GPT-2's block (tanh GELU) with 4 heads, a context of
    4 sentences, fused kernels."""
    block = BlockConfig(d_model=d_model, n_heads=4, d_ff=d_ff, activation="gelu_tanh",
                        norm_position=norm_position, fused=True)
    return GPTConfig(vocab_size=len(corpus.vocab), block_size=16, n_layers=n_layers,
                     block=block, init=init)


@torch.no_grad()
def ffn_activations(model: TinyGPT, idx: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """act(x·W1 + b1) of block ``layer``'s FFN for every position: [..., T, d_ff]."""
    if not 0 <= layer < len(model.blocks) or model.blocks[layer].mlp is None:
        raise ValueError(
            f"layer 应指向一个带 FFN 的块（0..{len(model.blocks) - 1}），实际为 {layer}")
    mlp = model.blocks[layer].mlp
    seen = []
    handle = mlp.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    try:
        model.eval()
        model(idx)
    finally:
        handle.remove()
    return mlp.hidden(seen[0])


@dataclass(frozen=True)
class NeuronMemory:
    """One FFN neuron read as a key-value memory (Geva et al. 2021)."""

    neuron: int
    keys: list[str]  # the prompts that activate it most
    key_answers: str  # the objects those prompts ask for
    values: str  # the tokens its output vector promotes most, through the unembedding


@torch.no_grad()
def key_value_probe(model: TinyGPT, corpus: FactsCorpus, layer: int = 0, top: int = 5
                    ) -> list[NeuronMemory]:
    """For every neuron of one FFN: its top fact prompts ("猫吃") and its top value tokens."""
    prompts, answers = fact_queries(corpus, context=0)
    acts = ffn_activations(model, prompts, layer)[:, -1]  # [n_facts, d_ff] at the relation
    mlp = model.blocks[layer].mlp
    value_logits = mlp.w2.weight.T @ model.tok.weight.T  # [d_ff, vocab]：每个值向量读出的词元分数
    memories = []
    for i in range(acts.shape[1]):
        best = acts[:, i].topk(top).indices
        memories.append(NeuronMemory(
            neuron=i,
            keys=[corpus.decode(prompts[j].tolist()) for j in best],
            key_answers=corpus.decode(answers[best].tolist()),
            values=corpus.decode(value_logits[i].topk(top).indices.tolist()),
        ))
    return memories
