"""Chapter 5's experiments: Pre-Norm vs Post-Norm in small GPTs.

- ``init_grad_norms``: per-layer FFN gradients at initialisation (Xiong et al. 2020, Fig. 3);
- ``warmup_experiment``: Post-LN and Pre-LN trained with learning-rate warm-ups of given
  lengths (0: no warm-up).

The warm-up runs are trained side by side as one ``TinyGPTStack``, a hand-stacked copy of
``TinyGPT`` (tests check it against ``TinyGPT`` and ``train_lm`` model by model); it reuses
the parts' formulas (``norm_sublayer``, ``standardize``). ``torch.func.stack_module_state``
+ ``vmap`` over ``TinyGPT`` is slower (``make bench``: tools/bench_ensembles.py), and
``vmap`` cannot run the model's token checks (they branch on tensor values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.block import BlockConfig
from onelayer.checks import check_positive_int
from onelayer.data import FactsCorpus, facts_corpus
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.norms import standardize
from onelayer.probes import evaluating, weight_grad_norms
from onelayer.residual import Sublayer, norm_sublayer
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


class TinyGPTStack(nn.Module):
    """Several TinyGPTs of one config computed as one: each weight gets a leading member axis
    and every linear layer becomes one batched matmul. Member i computes what TinyGPT i
    computes; only the speed differs (a small model pays a fixed cost per call, which the
    members now share).
    Supports the plain blocks the book trains: LayerNorm, biases, no gating, no dropout; an
    attention-only block (d_ff = 0) too."""

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
        self.names = [name for name, _ in members[0].named_parameters()]
        stacked = [torch.stack([dict(m.named_parameters())[n].detach() for m in members])
                   for n in self.names]
        self.weights = nn.ParameterList(nn.Parameter(w) for w in stacked)
        self.index = {name: i for i, name in enumerate(self.names)}
        mlp = members[0].blocks[0].mlp
        self.act = mlp.act if mlp is not None else None     # 与 FeedForward 用同一个激活函数

    def per_member(self, values: torch.Tensor) -> list[torch.Tensor]:
        """``values`` [M] shaped to broadcast against each parameter (members on dim 0)."""
        if values.shape != (len(self),):
            raise ValueError(f"每个成员一个值：形状应为 [{len(self)}]，实际为 {list(values.shape)}")
        return [values.to(w.dtype).view(-1, *[1] * (w.dim() - 1)) for w in self.weights]

    def __len__(self) -> int:
        return len(self.weights[0])

    def _p(self, name: str) -> torch.Tensor:
        return self.weights[self.index[name]]

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        w, b = self._p(name + ".weight"), self._p(name + ".bias")  # [M, out, in], [M, out]
        out = torch.baddbmm(b[:, None, :], x.flatten(1, -2), w.transpose(1, 2))
        return out.view(*x.shape[:-1], -1)

    def _norm(self, name: str) -> Sublayer:
        gamma, beta = self._p(name + ".weight"), self._p(name + ".bias")
        eps = self.config.block.eps
        return lambda x: standardize(x, eps=eps) * gamma[:, None, None] + beta[:, None, None]

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
        position = self.config.block.norm_position
        for i in range(self.config.n_layers):
            p = f"blocks.{i}."
            attn, mlp = partial(self._attn, prefix=p), partial(self._mlp, prefix=p)
            h = norm_sublayer(h, attn, self._norm(p + "ln_1"), position)
            if self.config.block.ffn_width:                               # d_ff = 0：只有注意力
                h = norm_sublayer(h, mlp, self._norm(p + "ln_2"), position)
        if position == "pre":
            h = self._norm("ln_f")(h)
        return h @ tok.transpose(1, 2)[:, None]                        # 输出层与词嵌入共享

    def member(self, i: int) -> TinyGPT:
        """Member ``i`` as an ordinary TinyGPT (in eval mode)."""
        model = TinyGPT(self.config)
        model.load_state_dict({name: w[i].detach().clone()
                               for name, w in zip(self.names, self.weights)})
        return model.eval()


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
    progress: Progress | None = None,
) -> WarmupRuns:
    """Train Post-LN and Pre-LN TinyGPTs with Adam, once per warm-up length in ``warmups``
    (0: none; w > 0: the learning rate ramps up linearly over w steps).

    Run (position, w, seed) starts from ``tiny_lm(..., seed)`` and sees the batches of
    ``train_lm(..., seed=seed)``: runs of one seed differ only in the learning rate.
    The runs of one position are trained together as a ``TinyGPTStack``.
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
                          seed=[s for _, s in runs], progress=progress)
        for w in warmups:
            rows = [i for i, (w_i, _) in enumerate(runs) if w_i == w]
            losses[pos, w] = curves[rows]
            models[pos, w] = [stack.member(i) for i in rows]
    return WarmupRuns(losses, models, tuple(seeds), tuple(warmups), lr)


@torch.no_grad()
def prediction_spread(model: TinyGPT, idx: torch.Tensor) -> float:
    """How much the predicted next-token distribution varies with the input: the mean over
    the vocabulary of the standard deviation (across all positions) of the log-probabilities.
    0 means the model predicts one and the same distribution everywhere."""
    with evaluating(model):
        log_p = model(idx).log_softmax(dim=-1).flatten(0, -2)
    return log_p.std(dim=0).mean().item()
