"""Checkers for the chapters' exercises: call one on your own function, get pass/fail + a hint."""

from __future__ import annotations

from collections.abc import Callable

import torch

from onelayer.activations import relu
from onelayer.ffn import FeedForward

TOLERANCE = 1e-5


def _report(passed: bool, message: str) -> bool:
    print(("✓ 通过：" if passed else "✗ 未通过：") + message)
    return passed


def check_ffn_forward(fn: Callable[..., torch.Tensor]) -> bool:
    """Exercise (chapter 1): ``fn(x, W1, b1, W2, b2)`` should compute GELU(x·W1 + b1)·W2 + b2.

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
        with torch.no_grad():
            expected = ffn(x)
            try:
                got = torch.as_tensor(fn(x, W1, b1, W2, b2))
            except Exception as err:  # the reader's code may fail in any way
                return _report(False, f"输入形状 {list(shape)} 时出错：{type(err).__name__}: {err}")
            if got.shape != expected.shape:
                return _report(False, f"输入形状 {list(shape)} 时输出形状应为 "
                                      f"{list(expected.shape)}，实际为 {list(got.shape)}")
            error = (got - expected).abs().max().item()
            if error > TOLERANCE:
                relu_version = relu(x @ W1 + b1) @ W2 + b2
                if (got - relu_version).abs().max() < TOLERANCE:
                    hint = "看起来用了 ReLU；本题要求 GELU(h) = h·Φ(h)。"
                elif (got - (torch.nn.functional.gelu(x @ W1) @ W2)).abs().max() < TOLERANCE:
                    hint = "别忘了偏置 b1 和 b2。"
                else:
                    hint = "按 升维 → GELU → 降维 逐步打印中间结果，与 trace_ffn 对照。"
                return _report(False, f"最大误差 {error:.3g}。提示：{hint}")
    return _report(True, "三种输入形状下都与 FeedForward 一致。")
