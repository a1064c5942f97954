import torch

from onelayer.book.exercises import check_ffn_forward


def correct(x, W1, b1, W2, b2):
    return torch.nn.functional.gelu(x @ W1 + b1) @ W2 + b2


def test_correct_answer_passes(capsys):
    assert check_ffn_forward(correct)
    assert capsys.readouterr().out.startswith("✓ 通过")


def test_relu_answer_fails_with_hint(capsys):
    assert not check_ffn_forward(lambda x, W1, b1, W2, b2: torch.relu(x @ W1 + b1) @ W2 + b2)
    assert "ReLU" in capsys.readouterr().out


def test_missing_bias_fails_with_hint(capsys):
    gelu = torch.nn.functional.gelu
    assert not check_ffn_forward(lambda x, W1, b1, W2, b2: gelu(x @ W1) @ W2)
    assert "偏置" in capsys.readouterr().out


def test_crash_and_wrong_shape_are_reported(capsys):
    assert not check_ffn_forward(lambda *args: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out
    assert not check_ffn_forward(lambda x, *args: x.sum())
    assert "输出形状应为" in capsys.readouterr().out


def test_gelu_tanh_checker(capsys):
    from onelayer.book.exercises import check_gelu_tanh

    assert check_gelu_tanh(lambda x: torch.nn.functional.gelu(x, approximate="tanh"))
    assert not check_gelu_tanh(torch.nn.functional.gelu)
    assert "精确" in capsys.readouterr().out


def test_residual_add_checker(capsys):
    from onelayer.book.exercises import check_residual_add

    def careful(x, f):
        y = f(x)
        if y.shape != x.shape:
            raise ValueError("shape")
        return x + y

    assert check_residual_add(careful)
    assert not check_residual_add(lambda x, f: x + f(x))      # broadcasting hides the bug
    assert not check_residual_add(lambda x, f: f(x))
    out = capsys.readouterr().out
    assert "ValueError" in out and "加回去" in out


def test_layer_norm_checker(capsys):
    from onelayer.book.exercises import check_layer_norm

    def unbiased(x, g, b, eps):
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * g + b

    assert check_layer_norm(lambda x, g, b, eps: torch.nn.functional.layer_norm(x, (5,), g, b, eps))
    assert not check_layer_norm(unbiased)
    assert "无偏方差" in capsys.readouterr().out


def keep_top_k(z, k, dim=-1, fill=float("-inf")):
    kth = z.topk(k, dim=dim).values.narrow(dim, k - 1, 1)
    return z.masked_fill(z < kth, fill)


def test_top_k_checker_passes_the_right_filter_and_names_mistakes(capsys):
    from onelayer.book.exercises import check_top_k

    assert check_top_k(keep_top_k)
    assert capsys.readouterr().out.startswith("✓ 通过")
    assert not check_top_k(lambda z, k: keep_top_k(z, k, fill=0.0))
    assert "-inf 而不是 0" in capsys.readouterr().out
    assert not check_top_k(lambda z, k: -keep_top_k(-z, k, fill=float("inf")))
    assert "最低的 k 个" in capsys.readouterr().out
    assert not check_top_k(lambda z, k: keep_top_k(z, k, dim=0 if z.dim() > 1 else -1))
    assert "最后一维" in capsys.readouterr().out
