"""TinyGPT: token and position embeddings, N blocks from ``onelayer.block``, a final norm
and a language-model head that shares the token embedding's weights (GPT-2's layout).

With ``block.rope_theta`` set there is no position embedding: the attention rotates queries
and keys by position instead (Llama, Qwen)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields

import torch
import torch.nn.functional as F
from torch import nn

from onelayer.attention import LayerCache
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.checks import (
    check_choice,
    check_flag,
    check_id_range,
    check_positive_int,
    check_tensor,
    check_type,
)

GPT_INITS = ("gpt2", "xavier")


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    block_size: int  # the longest context the model reads (and the position table's length)
    n_layers: int = 2
    block: BlockConfig = field(default_factory=BlockConfig)
    init: str = "gpt2"  # or "xavier", the setting of Xiong et al. 2020's analysis
    position_table: bool = True  # False: no position embedding (position only leaks through
                                 # the causal mask); a rotary block never has one

    def __post_init__(self) -> None:
        check_positive_int("vocab_size", self.vocab_size)
        check_positive_int("block_size", self.block_size)
        check_positive_int("n_layers", self.n_layers)
        check_type("block", self.block, BlockConfig)
        check_choice("init", self.init, GPT_INITS)
        check_flag("position_table", self.position_table)

    def __repr__(self) -> str:
        """Every field; ``position_table`` only when it is off (chapter 10's control), so a
        config of the earlier chapters prints what those chapters teach."""
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                 if f.name != "position_table" or not self.position_table]
        return f"GPTConfig({', '.join(shown)})"


def gpt2_residual_std(n_layer: int, initializer_range: float = 0.02) -> float:
    """Init std for the last projection of each residual branch: 0.02/√(2·n_layer).

    GPT-2's paper says to scale these weights by 1/√N, N the number of residual layers;
    N = 2·n_layer (a block has two residual branches, attention and MLP) is how nanoGPT
    and Hugging Face ``transformers`` read it.
    """
    return initializer_range / math.sqrt(2 * check_positive_int("n_layer", n_layer))


class KVCache:
    """The keys and values of every position a model has seen, one ``LayerCache`` per block."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [LayerCache() for _ in range(check_positive_int("n_layers", n_layers))]

    def __len__(self) -> int:
        return len(self.layers[0])


TOKEN_LAYOUTS = {1: "[T]", 2: "[B, T]", 3: "[M, B, T]"}


def check_token_ids(idx: torch.Tensor, config: GPTConfig, dims: tuple[int, ...] = (1, 2)
                    ) -> torch.Tensor:
    """``idx`` must be int64 token ids with ``dims`` dimensions ([T] or [B, T]; a stack of
    models reads [M, B, T]), 1 ≤ T ≤ block_size, each id in [0, vocab_size)."""
    if check_tensor("词元编号", idx).dtype != torch.long or idx.dim() not in dims:
        layouts = " 或 ".join(TOKEN_LAYOUTS[d] for d in dims)
        hint = "" if idx.dtype == torch.long else "；整数编号可用 idx.long() 转换"
        raise ValueError(f"词元编号应为 int64 张量 {layouts}，实际为 {idx.dtype}，"
                         f"形状 {list(idx.shape)}{hint}")
    if not 1 <= idx.shape[-1] <= config.block_size:
        raise ValueError(
            f"序列长度应在 1 到 block_size={config.block_size} 之间，实际为 {idx.shape[-1]}"
        )
    return check_id_range("词元编号", idx, config.vocab_size)


class TinyGPT(nn.Module):
    """A Pre-Norm stack ends with a final norm (its residual stream is never normalised
    otherwise); a Post-Norm stack already ends with one, so it gets none (Xiong et al. 2020)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = check_type("config", config, GPTConfig)
        d = config.block.d_model
        self.tok = nn.Embedding(config.vocab_size, d)
        rotary = config.block.rope_theta is not None       # 位置由注意力里的旋转给出
        table = config.position_table and not rotary
        self.pos = nn.Embedding(config.block_size, d) if table else None
        self.drop = nn.Dropout(config.block.dropout)
        self.blocks = nn.ModuleList(TransformerBlock(config.block) for _ in range(config.n_layers))
        pre = config.block.norm_position == "pre"
        self.ln_f = config.block.make_norm() if pre else nn.Identity()
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """gpt2: N(0, 0.02), a residual branch's last projection 0.02/√(2·n_layers).
        xavier: Xavier-uniform linear layers (Xiong et al. 2020's setting), embeddings as gpt2."""
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if self.config.init == "xavier" and isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
        elif isinstance(module, (nn.Linear, nn.Embedding)):
            branch_end = any(module is b.attn.proj or module is getattr(b.mlp, "w2", None)
                             for b in self.blocks)
            std = gpt2_residual_std(self.config.n_layers) if branch_end else 0.02
            nn.init.normal_(module.weight, std=std)

    def check_tokens(self, idx: torch.Tensor) -> torch.Tensor:
        """``idx`` must be integer token ids [T] or [B, T] with 1 ≤ T ≤ block_size."""
        return check_token_ids(idx, self.config)

    def position_embedding(self, positions: torch.Tensor) -> torch.Tensor | float:
        """P[t] for each of ``positions`` [T], [T, d_model]; 0 when there is no table (the
        attention rotates queries and keys instead, or ``position_table=False``)."""
        return 0.0 if self.pos is None else self.pos(positions)

    def hidden_states(self, idx: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream: the embeddings, then the output of each block."""
        self.check_tokens(idx)
        positions = torch.arange(idx.shape[-1], device=idx.device)
        states = [self.drop(self.tok(idx) + self.position_embedding(positions))]
        for block in self.blocks:
            states.append(block(states[-1]))
        return states

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits [..., T, vocab_size] for the next token at every position."""
        return self.ln_f(self.hidden_states(idx)[-1]) @ self.tok.weight.T  # 输出层与词嵌入共享

    def cached_logits(self, idx: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Logits [..., T, vocab_size] for tokens ``idx`` that continue the ``len(cache)``
        positions already in ``cache`` (whose keys and values are reused, and the new ones
        appended): the same numbers as the last T rows of ``forward`` on the whole sequence."""
        self.check_tokens(idx)
        past, t = len(cache), idx.shape[-1]
        if len(cache.layers) != len(self.blocks):
            raise ValueError(f"KV 缓存应有 n_layers={len(self.blocks)} 层，"
                             f"实际为 {len(cache.layers)} 层")
        if past + t > self.config.block_size:
            raise ValueError(f"缓存的 {past} 个位置加上新的 {t} 个应 ≤ block_size="
                             f"{self.config.block_size}，实际为 {past + t}")
        positions = torch.arange(past, past + t, device=idx.device)  # 接着缓存里的位置往后数
        x = self.drop(self.tok(idx) + self.position_embedding(positions))
        for block, layer in zip(self.blocks, cache.layers):
            with block.attn.caching(layer):
                x = block(x)
        return self.ln_f(x) @ self.tok.weight.T

    @torch.no_grad()
    def generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
        top_p: float | None = None,
    ) -> list[int]:
        """Continue ``prompt`` (token ids) by sampling; temperature → 0 approaches greedy.

        ``use_cache``: keep the keys and values of the context (``KVCache``), so each step
        runs the model on the new token only; the tokens are the same as without it. Once the
        context fills ``block_size`` the positions shift, and the cache is rebuilt each step."""
        cfg = self.config
        check_prompt(prompt)
        if not prompt:
            raise ValueError("提示不能为空：至少要有 1 个词元")
        if len(prompt) > cfg.block_size:
            raise ValueError(f"提示长度应 ≤ block_size={cfg.block_size}，实际为 {len(prompt)}")
        check_positive_int("max_new_tokens", max_new_tokens)
        check_flag("use_cache", use_cache)
        check_sampling(temperature, top_k, top_p, cfg.vocab_size)
        was_training = self.training
        self.eval()
        tokens = list(prompt)
        device = self.tok.weight.device
        cache = None
        for _ in range(max_new_tokens):
            context = torch.tensor(tokens[-cfg.block_size:], device=device)
            if not use_cache:
                logits = self(context)[-1]
            elif cache is None or len(cache) == cfg.block_size:     # 满了：位置要整体左移
                cache = KVCache(len(self.blocks))
                logits = self.cached_logits(context, cache)[-1]
            else:                                                   # 只算新来的一个词元
                logits = self.cached_logits(context[-1:], cache)[-1]
            logits = sampling_logits(logits, temperature, top_k, top_p)
            probs = logits.softmax(-1).to(generator.device if generator else device)
            tokens.append(torch.multinomial(probs, 1, generator=generator).item())
        self.train(was_training)
        return tokens


def check_prompt(prompt: object) -> None:
    """A prompt is a list (or tuple) of integer token ids."""
    if isinstance(prompt, (list, tuple)):
        bad = [t for t in prompt if isinstance(t, bool) or not isinstance(t, numbers.Integral)]
        if not bad:
            return
        actual = f"其中有 {bad[0]!r}"
    else:
        actual = f"实际为 {type(prompt).__name__}"
    raise ValueError(f"prompt 应为词元编号（整数）的列表，{actual}"
                     "（张量可用 prompt.tolist() 转换，文字要先编码成编号）")


def check_sampling(temperature: float, top_k: int | None, top_p: float | None,
                   vocab_size: int) -> None:
    """temperature > 0; top_k an integer in [1, vocab_size]; top_p in (0, 1] (or None)."""
    if not temperature > 0:
        raise ValueError(f"temperature 应为正数，实际为 {temperature!r}")
    if top_k is not None and not (type(top_k) is int and 1 <= top_k <= vocab_size):
        raise ValueError(f"top_k 应为 1 到 vocab_size={vocab_size} 的整数，实际为 {top_k!r}")
    if top_p is not None and not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p 应在 (0, 1] 之间，实际为 {top_p!r}")


def sampling_logits(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                    top_p: float | None = None) -> torch.Tensor:
    """The scores a sampler draws from (softmax of the result), over the last dimension.

    Divide by ``temperature``; top-k keeps the k highest scores; top-p (nucleus sampling,
    Holtzman et al. 2020) keeps the fewest highest-probability tokens whose probabilities
    add up to at least p. Every other score becomes −inf.
    """
    check_sampling(temperature, top_k, top_p, logits.shape[-1])
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        probs, order = logits.softmax(-1).sort(dim=-1, descending=True)
        before = probs.cumsum(-1) - probs                 # 排在它前面的字的概率之和
        drop_sorted = before >= top_p                     # 前面的已经凑够 p：不要
        drop = torch.empty_like(drop_sorted).scatter_(-1, order, drop_sorted)  # 放回原来的顺序
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def lm_loss(logits: torch.Tensor, targets: torch.Tensor,
            weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean cross-entropy of the next-token predictions (nats per token).

    logits [..., B, T, vocab], targets [..., B, T]: the mean is over B and T, leading
    dimensions (one per member of a stack of models) are kept. ``weights`` [B, T] (one
    model): each token's cross-entropy multiplied by its weight, still divided by B·T.
    """
    check_tensor("logits", logits)
    if check_tensor("targets", targets).dim() < 2 or logits.shape[:-1] != targets.shape:
        raise ValueError(f"logits 应为 [..., B, T, 词表]、targets 为 [..., B, T]，实际为 "
                         f"{list(logits.shape)} 与 {list(targets.shape)}")
    if not logits.is_floating_point():
        raise ValueError(f"logits 应为浮点张量，实际为 {logits.dtype}")
    if targets.dtype != torch.long:
        raise ValueError(f"targets 应为 int64（torch.long）的词元编号，实际为 {targets.dtype}"
                         "（可用 targets.long() 转换）")
    if not targets.shape[-2:].numel():
        raise ValueError(f"targets 不能为空：B 和 T 都应 ≥ 1，实际形状 {list(targets.shape)}")
    check_id_range("targets", targets, logits.shape[-1])      # 词表大小 = logits 的最后一维
    if weights is not None:
        if check_tensor("weights", weights).shape != targets.shape or targets.dim() != 2:
            raise ValueError(f"weights 应与 targets 同形状 [B, T]，实际为 {list(weights.shape)} "
                             f"与 {list(targets.shape)}")
        nll = F.cross_entropy(logits.flatten(0, -2), targets.flatten(), reduction="none")
        return (nll * weights.flatten()).mean()
    if targets.dim() == 2:
        return F.cross_entropy(logits.flatten(0, -2), targets.flatten())
    nll = F.cross_entropy(logits.flatten(0, -2), targets.flatten(), reduction="none")
    return nll.view(*targets.shape[:-2], -1).mean(-1)
