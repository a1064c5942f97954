"""Pre-Norm and Post-Norm: where the LayerNorm sits relative to the residual add (chapter 5).

post_norm(x, f, norm) = norm(x + f(x))          the 2017 Transformer
pre_norm(x, f, norm)  = x + f(norm(x))          GPT-2, Llama …
deep_norm             = norm(α·x + f(x))        Wang et al. 2022 (α > 1, with a down-scaled init)
sandwich_norm         = x + norm₂(f(norm₁(x)))  Ding et al. 2021 (CogView)

Also the chapter's probes: the outputs of a module's forward calls (a hook), the bytes a
forward pass keeps for backward, the size of the residual stream, per-layer FFN gradient
norms at initialisation (Xiong et al. 2020) and the learning-rate warm-up experiment, whose
models are trained side by side as one ``TinyGPTStack`` (the tests check it against
``TinyGPT`` and ``train_lm`` model by model).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from onelayer.block import NORM_POSITIONS, BlockConfig
from onelayer.checks import check_choice, check_positive_int
from onelayer.data import FactsCorpus, facts_corpus
from onelayer.experiments import Adam, ffn_grad_norms, warmup_lr
from onelayer.model import GPTConfig, TinyGPT
from onelayer.norms import standardize
from onelayer.residual import residual_add

Sublayer = Callable[[torch.Tensor], torch.Tensor]


def post_norm(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer) -> torch.Tensor:
    """Post-Norm: LN(x + F(x)). The residual stream is normalised after every add."""
    return norm(residual_add(x, sublayer(x)))


def pre_norm(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer) -> torch.Tensor:
    """Pre-Norm: x + F(LN(x)). Only the sublayer's input is normalised, the stream is not."""
    return residual_add(x, sublayer(norm(x)))


def norm_sublayer(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer,
                  position: str) -> torch.Tensor:
    """One residual sublayer with its norm placed at ``position`` ('pre' or 'post')."""
    check_choice("position", position, NORM_POSITIONS)
    return (pre_norm if position == "pre" else post_norm)(x, sublayer, norm)


def deep_norm(x: torch.Tensor, sublayer: Sublayer, norm: Sublayer, alpha: float) -> torch.Tensor:
    """DeepNorm: LN(α·x + F(x)), a Post-Norm whose shortcut is weighted by α ≥ 1."""
    if not alpha >= 1:
        raise ValueError(f"DeepNorm 的 alpha 应 ≥ 1，实际为 {alpha!r}")
    return norm(residual_add(alpha * x, sublayer(x)))


def sandwich_norm(x: torch.Tensor, sublayer: Sublayer, norm_in: Sublayer,
                  norm_out: Sublayer) -> torch.Tensor:
    """Sandwich-LN: x + LN₂(F(LN₁(x))), a Pre-Norm with a second norm on the branch output."""
    return residual_add(x, norm_out(sublayer(norm_in(x))))


def deepnorm_constants(n_layers: int) -> tuple[float, float]:
    """DeepNorm's (α, β) for an encoder-only or decoder-only stack of ``n_layers`` blocks:
    α = (2N)^¼ weights the shortcut, β = (8N)^-¼ scales the init of the branch weights."""
    check_positive_int("n_layers", n_layers)
    return (2 * n_layers) ** 0.25, (8 * n_layers) ** -0.25


@contextmanager
def recorded_outputs(module: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Inside the ``with`` block, every forward call of ``module`` appends its output."""
    outputs: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda _m, _args, out: outputs.append(out.detach()))
    try:
        yield outputs
    finally:
        handle.remove()


def saved_activation_bytes(run: Callable[[], object], module: nn.Module) -> int:
    """Bytes of the tensors that ``run()`` keeps for the backward pass, ``module``'s own
    parameters not counted; each storage is counted once."""
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return sum(storages.values())


def tiny_lm(corpus: FactsCorpus, n_layers: int, norm_position: str, seed: int,
            d_model: int = 64, n_heads: int = 4, init: str = "xavier",
            block_size: int = 32) -> TinyGPT:
    """A TinyGPT for ``corpus`` whose weights depend only on ``seed``."""
    torch.manual_seed(seed)
    block = BlockConfig(d_model=d_model, n_heads=n_heads, norm_position=norm_position)
    return TinyGPT(GPTConfig(len(corpus.vocab), block_size, n_layers, block, init=init))


@torch.no_grad()
def residual_stream_rms(model: TinyGPT, idx: torch.Tensor) -> torch.Tensor:
    """RMS of the residual stream [n_layers + 1]: after the embeddings, then after each block."""
    return torch.stack([h.pow(2).mean().sqrt() for h in model.hidden_states(idx)])


def init_grad_norms(
    n_layers: int, norm_position: str, seeds: Sequence[int] = (0, 1, 2), init: str = "xavier",
    d_model: int = 64, n_heads: int = 4, batch_size: int = 16, seq_len: int = 32,
    corpus: FactsCorpus | None = None,
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
                                   init, block_size=seq_len), x, y)
            for seed in seeds]
    return torch.stack(rows)


class TinyGPTStack(nn.Module):
    """Several TinyGPTs of one config computed as one: each weight gets a leading member axis
    and every linear layer becomes one batched matmul. Member i computes what TinyGPT i
    computes; only the speed differs (a small model pays a fixed cost per call, which the
    members now share).
    Supports the plain blocks the chapter trains: LayerNorm, biases, no gating, no dropout."""

    def __init__(self, members: Sequence[TinyGPT]) -> None:
        super().__init__()
        if not members:
            raise ValueError("members 不能为空：至少要有 1 个 TinyGPT")
        self.config = members[0].config
        for m in members:
            if m.config != self.config:
                raise ValueError(f"所有成员的配置应相同，实际为 {self.config} 与 {m.config}")
        block = self.config.block
        wanted = {"norm": "layernorm", "bias": True, "gated": False, "dropout": 0.0}
        for name, value in wanted.items():
            if getattr(block, name) != value:
                raise ValueError(f"TinyGPTStack 要求 {name}={value!r}，实际为 "
                                 f"{getattr(block, name)!r}")
        if not block.hidden:
            raise ValueError("TinyGPTStack 要求 d_ff > 0，实际为 0")
        self.names = [name for name, _ in members[0].named_parameters()]
        stacked = [torch.stack([dict(m.named_parameters())[n].detach() for m in members])
                   for n in self.names]
        self.weights = nn.ParameterList(nn.Parameter(w) for w in stacked)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.act = members[0].blocks[0].mlp.act             # 与 FeedForward 用同一个激活函数

    def __len__(self) -> int:
        return len(self.weights[0])

    def _p(self, name: str) -> torch.Tensor:
        return self.weights[self.index[name]]

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w, b = self._p(name + ".weight"), self._p(name + ".bias")  # [M, out, in], [M, out]
        out = torch.baddbmm(b[:, None, :], x.flatten(1, -2), w.transpose(1, 2))
        return out.view(*x.shape[:-1], -1)

    def _norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        gamma, beta = self._p(name + ".weight"), self._p(name + ".bias")
        y = standardize(x, dim=-1, eps=self.config.block.eps) * gamma[:, None, None]
        return y + beta[:, None, None]

    def _attn(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        m, b, t, d = x.shape
        heads = self.config.block.n_heads
        q, k, v = (part.reshape(m * b, t, heads, d // heads).transpose(1, 2)  # 4 维：融合内核
                   for part in self._linear(x, prefix + "attn.qkv").split(d, dim=-1))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self._linear(out.transpose(1, 2).reshape(m, b, t, d), prefix + "attn.proj")

    def _mlp(self, x: torch.Tensor, prefix: str) -> torch.Tensor:
        hidden = self.act(self._linear(x, prefix + "mlp.w1"))
        return self._linear(hidden, prefix + "mlp.w2")

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits [M, B, T, vocab_size] for token ids ``idx`` [M, B, T] (one batch per member)."""
        if idx.dim() != 3 or idx.shape[0] != len(self):
            raise ValueError(f"词元编号的形状应为 [M={len(self)}, B, T]，实际为 {list(idx.shape)}")
        tok = self._p("tok.weight")
        h = tok[torch.arange(len(self))[:, None, None], idx]
        h = h + self._p("pos.weight")[:, None, :idx.shape[-1]]
        pre = self.config.block.norm_position == "pre"
        for i in range(self.config.n_layers):
            p = f"blocks.{i}."
            if pre:
                h = h + self._attn(self._norm(h, p + "ln_1"), p)       # x + Attn(LN₁(x))
                h = h + self._mlp(self._norm(h, p + "ln_2"), p)        # x + FFN(LN₂(x))
            else:
                h = self._norm(h + self._attn(h, p), p + "ln_1")       # LN₁(x + Attn(x))
                h = self._norm(h + self._mlp(h, p), p + "ln_2")        # LN₂(x + FFN(x))
        if pre:
            h = self._norm(h, "ln_f")
        return h @ tok.transpose(1, 2)[:, None]                        # 输出层与词嵌入共享

    def member(self, i: int) -> TinyGPT:
        """Member ``i`` as an ordinary TinyGPT (in eval mode)."""
        model = TinyGPT(self.config)
        model.load_state_dict({name: w[i].detach().clone()
                               for name, w in zip(self.names, self.weights)})
        return model.eval()


def train_stack(
    stack: TinyGPTStack, corpus: FactsCorpus, steps: int, lrs: Sequence[float],
    warmups: Sequence[int], seeds: Sequence[int], batch_size: int = 32,
    seq_len: int | None = None, progress: bool = False,
) -> torch.Tensor:
    """Train every member as ``train_lm(member, corpus, steps, lrs[i], warmups[i], batch_size,
    seq_len, seeds[i])`` would, all at once; returns the losses [M, steps]."""
    check_positive_int("steps", steps)
    m = len(stack)
    if not len(lrs) == len(warmups) == len(seeds) == m:
        raise ValueError(f"lrs、warmups、seeds 的长度都应为成员数 {m}，实际为 "
                         f"{len(lrs)}、{len(warmups)}、{len(seeds)}")
    seq_len = seq_len or stack.config.block_size
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    params = list(stack.parameters())
    adam = Adam(params)
    losses = torch.empty(m, steps)
    for step in tqdm(range(steps), disable=not progress, file=sys.stderr, mininterval=1.0):
        xs, ys = zip(*(corpus.batch(batch_size, seq_len, g) for g in generators))
        x, y = torch.stack(xs), torch.stack(ys)
        logits = stack(x)
        per_member = F.cross_entropy(logits.flatten(0, -2), y.flatten(), reduction="none")
        per_member = per_member.view(m, -1).mean(dim=1)       # 每个成员自己的平均损失
        grads = torch.autograd.grad(per_member.sum(), params)  # 成员之间互不相干
        lr = torch.tensor([warmup_lr(step, lr, w) for lr, w in zip(lrs, warmups)])
        adam.step_per_parameter(grads, [lr.view(-1, *[1] * (p.dim() - 1)) for p in params])
        losses[:, step] = per_member.detach()
    return losses


@dataclass(frozen=True)
class WarmupRuns:
    """Losses [seeds, steps] and trained models of the warm-up experiment, keyed by
    (norm_position, warmup)."""

    losses: dict[tuple[str, int], torch.Tensor]
    models: dict[tuple[str, int], list[TinyGPT]]
    seeds: tuple[int, ...]
    warmup: int
    lr: float

    def final(self, position: str, warmup: int, last: int = 10) -> torch.Tensor:
        """Mean loss of the last ``last`` steps, one value per seed."""
        return self.losses[position, warmup][:, -last:].mean(dim=1)


def warmup_experiment(
    corpus: FactsCorpus, n_layers: int = 12, seeds: Sequence[int] = (0, 1), steps: int = 90,
    warmup: int = 45, lr: float = 3e-3, d_model: int = 32, n_heads: int = 4,
    batch_size: int = 16, seq_len: int = 16, progress: bool = False,
) -> WarmupRuns:
    """Train Post-LN and Pre-LN TinyGPTs with Adam, each with and without a linear warm-up.

    Run (position, w, seed) starts from ``tiny_lm(..., seed)`` and sees the batches of
    ``train_lm(..., seed=seed)``: with and without warm-up differ only in the learning rate.
    The runs of one position are trained together as a ``TinyGPTStack``.
    """
    check_positive_int("steps", steps)
    check_positive_int("warmup", warmup)
    if warmup > steps:
        raise ValueError(f"warmup 应 ≤ steps={steps}，实际为 {warmup}")
    if not seeds:
        raise ValueError("seeds 不能为空：至少要有 1 个随机种子")
    runs = [(w, s) for w in (0, warmup) for s in seeds]
    losses: dict[tuple[str, int], torch.Tensor] = {}
    models: dict[tuple[str, int], list[TinyGPT]] = {}
    for pos in ("post", "pre"):
        stack = TinyGPTStack([tiny_lm(corpus, n_layers, pos, s, d_model, n_heads, "xavier",
                                      seq_len) for _, s in runs])
        curves = train_stack(stack, corpus, steps, [lr] * len(runs), [w for w, _ in runs],
                             [s for _, s in runs], batch_size, seq_len, progress)
        for w in (0, warmup):
            rows = [i for i, (w_i, _) in enumerate(runs) if w_i == w]
            losses[pos, w] = curves[rows]
            models[pos, w] = [stack.member(i) for i in rows]
    return WarmupRuns(losses, models, tuple(seeds), warmup, lr)


@torch.no_grad()
def prediction_spread(model: TinyGPT, idx: torch.Tensor) -> float:
    """How much the predicted next-token distribution varies with the input: the mean over
    the vocabulary of the standard deviation (across all positions) of the log-probabilities.
    0 means the model predicts one and the same distribution everywhere."""
    log_p = model(idx).log_softmax(dim=-1).flatten(0, -2)
    return log_p.std(dim=0).mean().item()
