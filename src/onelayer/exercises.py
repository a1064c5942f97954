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
from onelayer.ffn import FeedForward

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
    problem = _judge(fn, (x,), gelu_tanh(x), "在 [-6, 6] 上", mistakes,
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
    mean = x.mean(-1, keepdim=True)
    mistakes = [
        ((x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) * gamma + beta,
         "用了无偏方差（torch.var 的默认）；LayerNorm 用有偏方差，除以 d 而不是 d − 1。"),
        ((x - mean) / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps),
         "别忘了乘 γ、加 β。"),
        ((x - x.mean(0)) / torch.sqrt(x.var(0, correction=0) + eps) * gamma + beta,
         "统计量要在最后一维（特征维）上算，不是在批维上——那是 BatchNorm。"),
    ]
    expected = F.layer_norm(x, (5,), gamma, beta, eps)
    problem = _judge(fn, (x, gamma, beta, eps), expected, "输入形状 [2, 3, 5] ", mistakes,
                     "按 均值 → 有偏方差 → 归一化 → γ、β 逐步核对。")
    return _report(problem is None, problem or "与 torch.nn.functional.layer_norm 一致。")
