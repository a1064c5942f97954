"""Checkers for the chapters' exercises: call one on your own function, get pass/fail + a hint.

Each checker runs the reader's function on a few fixed random inputs, compares with the
book's reference, prints one line starting with ✓ or ✗, and returns True or False. When the
answer is wrong it recognises the common mistakes and names them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from onelayer.activations import gelu, gelu_tanh, relu
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.ffn import FeedForward
from onelayer.norms import LayerNorm
from onelayer.rope import apply_rope, apply_rope_interleaved, rope_angles, rotate_half

TOLERANCE = 1e-5
Mistakes = list[tuple[torch.Tensor, str]]  # (what a common mistake would return, its hint)


def _report(passed: bool, message: str) -> bool:
    print(("✓ 通过：" if passed else "✗ 未通过：") + message)
    return passed


def _judge(fn: Callable[..., torch.Tensor], args: tuple, expected: torch.Tensor, case: str,
           mistakes: Mistakes, fallback: str) -> str | None:
    """None when ``fn(*args)`` matches ``expected``; otherwise what is wrong, with a hint."""
    try:
        got = torch.as_tensor(fn(*args))
    except Exception as err:  # the reader's code may fail in any way
        return f"{case}时出错：{type(err).__name__}: {err}"
    if got.shape != expected.shape:
        return f"{case}时输出形状应为 {list(expected.shape)}，实际为 {list(got.shape)}"
    error = (got - expected).abs().max().item()
    if error <= TOLERANCE:
        return None
    hint = next((h for wrong, h in mistakes if (got - wrong).abs().max() <= TOLERANCE), fallback)
    return f"{case}时最大误差 {error:.3g}。提示：{hint}"


def check_ffn_forward(fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 1: ``fn(x, W1, b1, W2, b2)`` should compute GELU(x·W1 + b1)·W2 + b2.

    W1 has shape [d_model, d_ff] and W2 [d_ff, d_model] as in the formula (not nn.Linear's
    transposed storage); x may have any number of leading dimensions.
    """
    generator = torch.Generator().manual_seed(1234)
    for shape in [(4,), (3, 4), (2, 3, 4)]:
        ffn = FeedForward(4, 16, activation="gelu")
        with torch.no_grad():
            for p in ffn.parameters():
                p.copy_(torch.randn(p.shape, generator=generator))
            x = torch.randn(shape, generator=generator)
            W1, b1, W2, b2 = ffn.w1.weight.T, ffn.w1.bias, ffn.w2.weight.T, ffn.w2.bias
            mistakes = [
                (relu(x @ W1 + b1) @ W2 + b2, "看起来用了 ReLU；本题要求 GELU(h) = h·Φ(h)。"),
                (gelu(x @ W1) @ W2, "别忘了偏置 b1 和 b2。"),
            ]
            problem = _judge(fn, (x, W1, b1, W2, b2), ffn(x), f"输入形状 {list(shape)} ",
                             mistakes, "按 升维 → GELU → 降维 逐步打印中间结果，与第 1 章对照。")
        if problem:
            return _report(False, problem)
    return _report(True, "三种输入形状下都与 FeedForward 一致。")


def check_gelu_tanh(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Chapter 2: ``fn(x)`` should compute ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))."""
    x = torch.linspace(-6, 6, 241, dtype=torch.float64)
    mistakes = [
        (gelu(x), "这是精确的 x·Φ(x)；本题要的是 tanh 近似。"),
        (0.5 * x * (1 + torch.tanh((2 / torch.pi) * (x + 0.044715 * x**3))),
         "tanh 里的系数是 √(2/π)，不是 2/π。"),
        (0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x**2))),
         "括号里是 x 的三次方 x³。"),
    ]
    problem = _judge(fn, (x,), gelu_tanh(x), "在 [-6, 6] 上逐点比较", mistakes,
                     "对照公式逐项检查：½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))。")
    return _report(problem is None, problem or "在 [-6, 6] 上与 tanh 近似的 GELU 一致。")


def check_residual_add(fn: Callable[[torch.Tensor, Callable], torch.Tensor]) -> bool:
    """Chapter 3: ``fn(x, f)`` should return x + f(x), and raise ValueError when f changes
    the shape (instead of letting broadcasting hide the mistake)."""
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 4, generator=generator)
    f = torch.nn.Linear(4, 4)
    with torch.no_grad():
        mistakes = [(f(x), "只返回了 f(x)：残差连接要把输入 x 加回去。")]
        problem = _judge(fn, (x, f), x + f(x), "形状不变的 f ", mistakes,
                         "输出应为 x + f(x)。")
        if problem:
            return _report(False, problem)
        summed = torch.nn.Linear(4, 1)  # [2, 3, 4] → [2, 3, 1]：相加时会被广播，悄悄出错
        try:
            fn(x, summed)
        except ValueError:
            return _report(True, "x + f(x) 正确，形状不符时也给出了 ValueError。")
    return _report(False, "f 把最后一维从 4 变成 1 时应当 raise ValueError，"
                          "而不是让广播把 [2, 3, 1] 悄悄加到 [2, 3, 4] 上。")


def check_layer_norm(fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 4: ``fn(x, gamma, beta, eps)`` should equal F.layer_norm over the last dim."""
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 5, generator=generator) * 3 + 1
    gamma = torch.rand(5, generator=generator) + 0.5
    beta, eps = torch.randn(5, generator=generator), 1e-5

    def normed(dims, correction=0):     # (x − 均值) / √(方差 + ε)，均值、方差沿 dims 统计
        var = x.var(dims, keepdim=True, correction=correction)
        return (x - x.mean(dims, keepdim=True)) / torch.sqrt(var + eps)
    batch = "统计量要在最后一维（特征维）上算，不是跨批（和位置）——那是 BatchNorm。"
    mistakes = [(normed(-1, 1) * gamma + beta, "用了无偏方差（torch.var 的默认）；LayerNorm 用"
                 "有偏方差，除以 d 而不是 d − 1。"), (normed(-1), "别忘了乘 γ、加 β。"),
                (normed(-1) + beta, "漏了乘 γ。"), (normed(-1) * gamma, "漏了加 β。"),
                (normed(0) * gamma + beta, batch), (normed((0, 1)) * gamma + beta, batch)]
    expected = F.layer_norm(x, (5,), gamma, beta, eps)
    problem = _judge(fn, (x, gamma, beta, eps), expected, "输入形状 [2, 3, 5] ", mistakes,
                     "按 均值 → 有偏方差 → 归一化 → γ、β 逐步核对。")
    return _report(problem is None, problem or "与 torch.nn.functional.layer_norm 一致。")


# 第 8 章：前置归一化与后置归一化
def check_norm_position(fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 8: ``fn(x, f, ln, position)`` should return LN(x + F(x)) for position 'post'
    and x + F(LN(x)) for position 'pre' (f: a sublayer, ln: a LayerNorm with random γ, β)."""
    generator = torch.Generator().manual_seed(5)
    f, ln = FeedForward(6, 12, activation="gelu"), LayerNorm(6)
    with torch.no_grad():
        for p in [*f.parameters(), *ln.parameters()]:
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5 + (p.dim() == 1) * 0.5)
    x = torch.randn(2, 3, 6, generator=generator) * 2 + 0.5
    with torch.no_grad():
        post, pre = ln(x + f(x)), x + f(ln(x))
        cases = {
            "post": (post, [
                (pre, "两种摆法写反了：post 要求 LN(x + F(x))，归一化在残差相加之后。"),
                (ln(f(x)), "漏了残差：要先把 x 加回去，再做 LN。"),
                (x + ln(f(x)),
                 "LN 放在了子层输出上（x + LN(F(x))）；Post-Norm 对相加之后的和做 LN。"),
            ]),
            "pre": (pre, [
                (post, "两种摆法写反了：pre 要求 x + F(LN(x))，归一化在子层入口。"),
                (f(ln(x)), "漏了残差：子层的输出要加回原来的 x。"),
                (ln(x + f(ln(x))),
                 "Pre-Norm 的残差流不做归一化：输出是 x + F(LN(x))，外面不再套 LN。"),
                (ln(x) + f(ln(x)),
                 "捷径上的 x 要原样相加，不是 LN(x)：Pre-Norm 只归一化子层的输入。"),
            ]),
        }
        for position, (expected, mistakes) in cases.items():
            problem = _judge(fn, (x, f, ln, position), expected, f"position={position!r} ",
                             mistakes, "逐项核对：LN 在哪里、x 在哪里加回去。")
            if problem:
                return _report(False, problem)
    return _report(True, "post 与 pre 两种摆法都与 LN(x + F(x))、x + F(LN(x)) 一致。")


# 第 6 章：Pre-Norm 块的前向
def check_pre_norm_block(fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 6: ``fn(x, ln_1, attn, ln_2, mlp)`` should compute the Pre-Norm block
    h = x + attn(ln_1(x)), out = h + mlp(ln_2(h)) with the given submodules (dropout off).

    Checked against ``TransformerBlock`` with random weights (γ, β included, so swapped norms
    show), on a batched [2, 5, 8] and an unbatched [3, 8] input.
    """
    generator = torch.Generator().manual_seed(6)
    block = TransformerBlock(BlockConfig(d_model=8, n_heads=2, norm_position="pre")).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5 + (p.dim() == 1) * 0.2)
    ln_1, attn, ln_2, mlp = block.ln_1, block.attn, block.ln_2, block.mlp
    for shape in [(2, 5, 8), (3, 8)]:
        with torch.no_grad():
            x = torch.randn(shape, generator=generator)
            h = x + attn(ln_1(x))
            post = ln_1(x + attn(x))
            n1 = ln_1(x)
            normed = n1 + attn(n1)
            swapped = x + attn(ln_2(x))
            mistakes = [
                (ln_2(post + mlp(post)),
                 "这是后置归一化（Post-Norm）：Pre-Norm 的 LayerNorm 在子层入口，"
                 "不在残差相加之后。"),
                (normed + mlp(ln_2(normed)),
                 "残差加回的是 ln_1(x)：捷径应绕过 LayerNorm，加回原来的 x。"),
                (x + attn(ln_1(x)) + mlp(ln_2(x)),
                 "FFN 读的应是加上注意力输出之后的 h，而不是原来的 x（那是“并行块”的写法）。"),
                (mlp(ln_2(attn(ln_1(x)))), "两个子层的输出都要加回输入：别忘了残差。"),
                (mlp(ln_2(h)), "FFN 这一半也要加回 h：输出应为 h + mlp(ln_2(h))。"),
                (swapped + mlp(ln_1(swapped)), "ln_1 在注意力之前，ln_2 在 FFN 之前，两者用反了。"),
            ]
            problem = _judge(fn, (x, ln_1, attn, ln_2, mlp), block(x), f"输入形状 {list(shape)} ",
                             mistakes, "按 h = x + attn(ln_1(x))、h + mlp(ln_2(h)) 两行逐行核对。")
        if problem:
            return _report(False, problem)
    return _report(True, "两种输入形状下都与 TransformerBlock（Pre-Norm）一致。")


# 第 7 章：top-k 采样前的过滤
def check_top_k(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> bool:
    """Chapter 7: ``fn(logits, k)`` should keep the k largest scores of the last dimension
    and set every other score to -inf (what ``TinyGPT.generate`` does before softmax)."""
    def finite(t: torch.Tensor) -> torch.Tensor:  # −inf → −1e9, so that differences are numbers
        return torch.nan_to_num(torch.as_tensor(t), neginf=-1e9)

    generator = torch.Generator().manual_seed(7)
    for shape, k in [((10,), 3), ((6, 12), 5), ((2, 3, 6), 1)]:
        z = torch.randn(shape, generator=generator)
        kth = z.topk(k, dim=-1).values[..., -1:]
        kth_lowest = z.topk(k, dim=-1, largest=False).values[..., -1:]
        mistakes = [
            (z.masked_fill(z < kth, 0.0),
             "其余的分数要设成 -inf 而不是 0：logit 为 0 的字经过 softmax 仍有不小的概率。"),
            (z.masked_fill(z > kth_lowest, float("-inf")), "保留了分数最低的 k 个；要的是最大的。"),
        ]
        if z.dim() > 1 and k <= z.shape[0]:
            kth_first = z.topk(k, dim=0).values[-1:]
            mistakes.append((z.masked_fill(z < kth_first, float("-inf")),
                             "top-k 要在最后一维（词表那一维）上取，不是第 0 维。"))
        problem = _judge(lambda z, k: finite(fn(z.clone(), k)), (z, k),
                         finite(z.masked_fill(z < kth, float("-inf"))),
                         f"输入形状 {list(z.shape)}、k = {k} ",
                         [(finite(wrong), hint) for wrong, hint in mistakes],
                         "逐行核对：每行恰好保留 k 个原分数，其余为 -inf。")
        if problem:
            return _report(False, problem)
    return _report(True, "三种形状、三个 k 下都与 generate() 的 top-k 过滤一致。")


# 第 10 章：核采样（top-p）前的过滤
def check_top_p(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> bool:
    """Chapter 10: ``fn(logits, p)`` should keep, over the last dimension, the fewest
    highest-probability tokens whose probabilities add up to at least p, and set every other
    score to -inf (``onelayer.model.sampling_logits(logits, top_p=p)``)."""
    def finite(t: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(torch.as_tensor(t), neginf=-1e9)

    generator = torch.Generator().manual_seed(11)
    for shape, p in [((8,), 0.9), ((4, 10), 0.5), ((2, 3, 7), 0.75)]:
        z = torch.randn(shape, generator=generator) * 2
        probs, order = z.softmax(-1).sort(dim=-1, descending=True)
        total = probs.cumsum(-1)

        def keep_sorted(mask_sorted: torch.Tensor, z: torch.Tensor = z,
                        order: torch.Tensor = order) -> torch.Tensor:
            drop = torch.empty_like(mask_sorted).scatter_(-1, order, ~mask_sorted)
            return finite(z.masked_fill(drop, float("-inf")))

        mistakes = [
            (keep_sorted(total <= p),
             "用 “累计概率 ≤ p” 会少留一个：要留下让累计概率第一次达到 p 的那个字。"),
            (finite(z.masked_fill(z.softmax(-1) < p, float("-inf"))),
             "p 不是单个字的概率门槛，而是留下的字的概率之和。"),
        ]
        problem = _judge(lambda z, p: finite(fn(z.clone(), p)), (z, p),
                         keep_sorted(total - probs < p), f"输入形状 {list(z.shape)}、p = {p} ",
                         mistakes, "按概率从大到小排好，逐个累加，够 p 为止；其余设为 -inf。")
        if problem:
            return _report(False, problem)
    return _report(True, "三种形状、三个 p 下都与 sampling_logits(…, top_p=p) 一致。")


# 第 10 章：在韵脚处只留押韵的字
def check_rhyme_filter(fn: Callable[[torch.Tensor, str, str, str], torch.Tensor]) -> bool:
    """Chapter 10: ``fn(logits, chars, anchor, tone)`` sets to -inf (last dimension) each
    character of ``chars`` that does not rhyme with ``anchor`` at a ``tone`` slot by the 平水韵
    (``metre.rhymes``; unlisted characters do not rhyme); unchanged if none rhymes."""
    from onelayer import metre

    def finite(t: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(torch.as_tensor(t), neginf=-1e9)

    chars, generator = "杯台来回对花家天年去酒月东冬中送□", torch.Generator().manual_seed(10)
    for shape, anchor, tone in [((len(chars),), "杯", "平"), ((3, len(chars)), "回", "平"),
                                ((2, 2, len(chars)), "中", "平"), ((2, len(chars)), "中", "仄"),
                                ((4, len(chars)), "□", "平")]:
        z = torch.randn(shape, generator=generator)

        def keeping(test: Callable[[str], bool], z: torch.Tensor = z) -> torch.Tensor:
            keep = torch.tensor([test(c) for c in chars])
            return finite(z if not keep.any() else z.masked_fill(~keep, float("-inf")))

        mistakes = [
            (keeping(lambda c, a=anchor, t=tone: metre.rhymes(a, c, t) is not False),
             "表里没有的字（rhymes 返回 None）不算押韵，也要去掉。"),
            (keeping(lambda c, a=anchor: bool(metre.rhyme_groups(a) & metre.rhyme_groups(c))),
             f"韵脚是{tone}声：多音字只能用{tone}声的读音比韵，不能借另一个声调的读音。"),
            (keeping(lambda c, a=anchor: metre.tone(c) == metre.tone(a)),
             "同是平声不等于押韵：要同一个韵部（rhyme_groups 有交集）。"),
            (finite(torch.full_like(z, float("-inf"))),
             "没有一个字押韵时（比如首句末字不在表里），原样返回 logits，别全设成 -inf。"),
        ]
        problem = _judge(lambda z, a, t: finite(fn(z.clone(), chars, a, t)), (z, anchor, tone),
                         keeping(lambda c, a=anchor, t=tone: metre.rhymes(a, c, t) is True),
                         f"字表 {chars}、首句末字“{anchor}”、{tone}声韵脚 ", mistakes,
                         "逐个字用 metre.rhymes(anchor, 字, tone) 判断，不是 True 的设为 -inf。")
        if problem:
            return _report(False, problem)
    return _report(True, "五种形状、五种首句末字与韵脚声调下都与 rhyme_filter 一致。")


# 第 5 章：因果自注意力的一个头
def check_causal_attention(fn: Callable[..., torch.Tensor]) -> bool:
    """Chapter 5: ``fn(q, k, v)`` should compute softmax(q·kᵀ/√d_k + M)·v with the causal
    mask M, for q, k, v of shape [..., T, d_k] (what ``F.scaled_dot_product_attention`` with
    ``is_causal=True`` computes)."""
    generator = torch.Generator().manual_seed(6)
    for shape in [(5, 4), (2, 6, 8), (2, 3, 4, 16)]:
        q, k, v = (torch.randn(shape, generator=generator) * 2 for _ in range(3))
        t, d = shape[-2], shape[-1]
        scores = q @ k.transpose(-2, -1)
        future = torch.ones(t, t, dtype=torch.bool).triu(1)

        def attend(s: torch.Tensor, mask: torch.Tensor | None, dim: int = -1) -> torch.Tensor:
            return (s if mask is None else s.masked_fill(mask, float("-inf"))).softmax(dim)

        mistakes = [
            (attend(scores, future) @ v, "忘了除以 √d_k：分数的方差随 d_k 变大，softmax 会饱和。"),
            (attend(scores / d, future) @ v, "除的是 d_k，应当是 √d_k。"),
            (attend(scores / d**0.5, None) @ v, "忘了因果掩码：位置 i 不应看到 j > i 的词元。"),
            (attend(scores / d**0.5, future, dim=-2) @ v,
             "softmax 要沿最后一维（对同一个查询的各个键）归一化，每一行之和为 1。"),
        ]
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        problem = _judge(fn, (q.clone(), k.clone(), v.clone()), expected,
                         f"输入形状 {list(shape)} ", mistakes,
                         "先打印注意力权重：应是下三角、每行之和为 1。")
        if problem:
            return _report(False, problem)
    return _report(True, "三种形状下都与 F.scaled_dot_product_attention(is_causal=True) 一致。")


# 第 9 章：旋转位置编码
def check_rope(fn: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]) -> bool:
    """Chapter 9: ``fn(x, positions, rope_theta)`` should rotate x [..., T, d_head] by RoPE in the
    half-split pairing of Hugging Face Llama/Qwen: dimension j pairs with j + d_head/2 and turns
    by the angle t·ω_j, ω_j = rope_theta^(−2j/d_head), t = positions[i] for row i."""
    generator = torch.Generator().manual_seed(9)
    for shape, theta in [((5, 8), 10000.0), ((2, 6, 16), 10000.0), ((2, 3, 4, 32), 1e6)]:
        x = torch.randn(shape, generator=generator)
        positions = torch.randint(0, 16, (shape[-2],), generator=generator)
        d = shape[-1]
        cos, sin = rope_angles(positions, d, theta)
        slow_cos, slow_sin = rope_angles(positions, d, theta ** 0.5)   # ω_j = rope_theta^(−j/d)
        mistakes = [
            (apply_rope_interleaved(x, positions, theta),
             "这是 RoFormer 论文的相邻配对（2j 与 2j+1）；本题要 j 与 j + d_head/2 配对。"),
            (x * cos - rotate_half(x) * sin,
             "转反了方向：(a, b) ↦ (a·cos − b·sin, b·cos + a·sin)。"),
            (apply_rope(x, slow_cos, slow_sin),
             "角速度的指数是 −2j/d_head：ω_j = rope_theta^(−2j/d_head)，j 从 0 到 d_head/2 − 1。"),
        ]
        problem = _judge(fn, (x.clone(), positions.clone(), theta), apply_rope(x, cos, sin),
                         f"输入形状 {list(shape)}、rope_theta = {theta:g} ", mistakes,
                         "先试位置 0（应原样不动）和 d_head = 2（就是平面上的一次旋转）。")
        if problem:
            return _report(False, problem)
    return _report(True, "三种形状、两个 rope_theta 下都与 onelayer.rope.apply_rope 一致。")


# 第 11 章：logit 透镜
def check_logit_lens(fn: Callable[..., list[torch.Tensor]]) -> bool:
    """Chapter 11: ``fn(model, x)`` should return, for the residual stream after the
    embeddings and after each block, the logits read through the model's final norm and its
    tied unembedding: a list of n_layers + 1 tensors [..., T, vocab]
    (``ch11_inside.lens_logits``)."""
    from onelayer.chapters.ch11_inside import lens_logits
    from onelayer.model import GPTConfig, TinyGPT

    torch.manual_seed(11)
    for n_layers, shape in [(2, (5,)), (3, (2, 6))]:
        model = TinyGPT(GPTConfig(20, 8, n_layers=n_layers,
                                  block=BlockConfig(d_model=8, n_heads=2))).eval()
        x = torch.randint(20, shape)
        expected = torch.stack(lens_logits(model, x))
        with torch.no_grad():
            states = model.hidden_states(x)
            mistakes = [(torch.stack([h @ model.tok.weight.T for h in states]),
                         "读出之前先过最后的归一化 model.ln_f：模型自己的输出就是这样读的。"),
                         (torch.stack([model.ln_f(h) @ model.tok.weight.T for h in states[1:]]),
                          "词嵌入之后的那一层也要读：一共 n_layers + 1 个。")]
        case = f"{n_layers} 块、输入形状 {list(shape)} "
        try:
            got = fn(model, x)
            got = torch.stack([torch.as_tensor(g) for g in got]).detach()
        except Exception as err:  # the reader's code may fail in any way
            return _report(False, f"{case}时出错：{type(err).__name__}: {err}")
        problem = f"{case}时得到 {n_layers} 个读出。提示：{mistakes[1][1]}" \
            if got.shape[0] == n_layers else _judge(
                lambda g: g, (got,), expected, case, mistakes[:1],
                "对 model.hidden_states(x) 的每个状态 h，算 model.ln_f(h) @ model.tok.weight.T。")
        if problem:
            return _report(False, problem)
    return _report(True, "两种模型、两种输入形状下都与 lens_logits 一致。")
