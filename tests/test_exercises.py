import torch

from onelayer.exercises import check_ffn_forward


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
