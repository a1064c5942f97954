import pytest
import torch

from onelayer.book.exercises import check_ffn_forward
from onelayer.rope import apply_rope_interleaved


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
    # the chapter's buggy demo: 2/π instead of √(2/π)
    assert not check_gelu_tanh(
        lambda x: 0.5 * x * (1 + torch.tanh(2 / torch.pi * (x + 0.044715 * x**3))))
    out = capsys.readouterr().out
    assert "√(2/π)" in out and "在 [-6, 6] 上逐点比较时最大误差" in out


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

    def hat(x, eps):
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, correction=0)
                                                            + eps)

    assert not check_layer_norm(lambda x, g, b, eps: hat(x, eps) + b)
    assert "漏了乘 γ" in capsys.readouterr().out
    assert not check_layer_norm(lambda x, g, b, eps: hat(x, eps) * g)
    assert "漏了加 β" in capsys.readouterr().out

    def batch_norm(x, g, b, eps, dims=(0, 1)):
        mu = x.mean(dims, keepdim=True)
        return (x - mu) / torch.sqrt(((x - mu) ** 2).mean(dims, keepdim=True) + eps) * g + b

    for dims in (0, (0, 1)):
        assert not check_layer_norm(lambda x, g, b, eps, d=dims: batch_norm(x, g, b, eps, d))
        assert "BatchNorm" in capsys.readouterr().out


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


# The chapter 6 exercise checker (onelayer.book.exercises.check_pre_norm_block)
def test_pre_norm_block_checker_accepts_the_two_lines(capsys):
    from onelayer.book.exercises import check_pre_norm_block

    def two_lines(x, ln_1, attn, ln_2, mlp):
        h = x + attn(ln_1(x))
        return h + mlp(ln_2(h))

    assert check_pre_norm_block(two_lines)
    assert capsys.readouterr().out.startswith("✓ 通过")


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda x, l1, a, l2, m: l2(l1(x + a(x)) + m(l1(x + a(x)))), "后置归一化"),
    (lambda x, l1, a, l2, m: x + a(l1(x)) + m(l2(x)), "并行块"),
    (lambda x, l1, a, l2, m: m(l2(a(l1(x)))), "别忘了残差"),
    (lambda x, l1, a, l2, m: m(l2(x + a(l1(x)))), "FFN 这一半"),
    (lambda x, l1, a, l2, m: (x + a(l2(x))) + m(l1(x + a(l2(x)))), "用反了"),
    (lambda x, l1, a, l2, m: x, "逐行核对"),
    (lambda x, l1, a, l2, m: x[..., :4], "输出形状应为"),
])
def test_pre_norm_block_checker_names_the_mistake(capsys, wrong, hint):
    from onelayer.book.exercises import check_pre_norm_block

    assert not check_pre_norm_block(wrong)
    assert hint in capsys.readouterr().out


def test_pre_norm_block_checker_recognises_a_normalised_shortcut(capsys):
    from onelayer.book.exercises import check_pre_norm_block

    def normalised_shortcut(x, ln_1, attn, ln_2, mlp):
        h = ln_1(x)
        h = h + attn(h)
        return h + mlp(ln_2(h))

    assert not check_pre_norm_block(normalised_shortcut)
    assert "捷径应绕过 LayerNorm" in capsys.readouterr().out


def test_norm_position_checker(capsys):
    from onelayer.book.exercises import check_norm_position

    def right(x, f, ln, position):
        return ln(x + f(x)) if position == "post" else x + f(ln(x))

    assert check_norm_position(right)
    assert capsys.readouterr().out.startswith("✓ 通过")
    wrong = {
        "写反": lambda x, f, ln, p: right(x, f, ln, "pre" if p == "post" else "post"),
        "残差": lambda x, f, ln, p: ln(f(x)) if p == "post" else f(ln(x)),
        "相加之后": lambda x, f, ln, p: x + ln(f(x)) if p == "post" else x + f(ln(x)),
        "外面不再套": lambda x, f, ln, p: right(x, f, ln, p) if p == "post" else ln(x + f(ln(x))),
        "原样相加": lambda x, f, ln, p: right(x, f, ln, p) if p == "post" else ln(x) + f(ln(x)),
    }
    for hint, fn in wrong.items():
        assert not check_norm_position(fn)
        assert hint in capsys.readouterr().out, hint
    assert not check_norm_position(lambda *args: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_causal_attention_checker(capsys):
    from onelayer.book.exercises import check_causal_attention

    def right(q, k, v):
        t = q.shape[-2]
        s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        return s.masked_fill(torch.ones(t, t).triu(1).bool(), float("-inf")).softmax(-1) @ v

    assert check_causal_attention(right)
    assert capsys.readouterr().out.startswith("✓ 通过")
    unscaled = lambda q, k, v: right(q * q.shape[-1] ** 0.5, k, v)  # noqa: E731
    assert not check_causal_attention(unscaled)
    assert "√d_k" in capsys.readouterr().out
    assert not check_causal_attention(
        lambda q, k, v: (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(-1) @ v)
    assert "因果掩码" in capsys.readouterr().out


# The chapter 9 exercise checker (onelayer.book.exercises.check_rope)
def rope_from_scratch(x, positions, theta, dtype=torch.float32):
    d = x.shape[-1]
    omega = theta ** (-torch.arange(0, d, 2, dtype=dtype) / d)      # ω_j = θ^(−2j/d)
    angle = positions.to(dtype)[:, None] * omega
    cos, sin = angle.cos().repeat(1, 2), angle.sin().repeat(1, 2)
    a, b = x.to(dtype).chunk(2, dim=-1)
    return (x.to(dtype) * cos + torch.cat([-b, a], dim=-1) * sin).float()


def test_rope_checker_passes_float32_float64_and_transformers(capsys):
    from onelayer.book.exercises import check_rope

    assert check_rope(rope_from_scratch)
    assert check_rope(lambda x, t, th: rope_from_scratch(x, t, th, torch.float64))
    assert capsys.readouterr().out.startswith("✓ 通过")
    apply_rotary_pos_emb = pytest.importorskip(
        "transformers.models.llama.modeling_llama").apply_rotary_pos_emb

    def with_transformers(x, positions, theta):
        d = x.shape[-1]
        angle = positions.float()[:, None] * theta ** (-torch.arange(0, d, 2).float() / d)
        angle = torch.cat([angle, angle], dim=-1)
        rotated, _ = apply_rotary_pos_emb(x, x, angle.cos(), angle.sin(), unsqueeze_dim=0)
        return rotated.reshape(x.shape)                 # [1, T, d] → [T, d] when x is [T, d]

    assert check_rope(with_transformers)


@pytest.mark.parametrize(("wrong", "hint"), [
    (apply_rope_interleaved, "相邻配对"),
    (lambda x, t, th: rope_from_scratch(x, -t, th), "转反了方向"),
    (lambda x, t, th: rope_from_scratch(x, t, th ** 0.5), "−2j/d_head"),
    (lambda x, t, th: x, "位置 0"),
    (lambda x, t, th: x[..., :2], "输出形状应为"),
])
def test_rope_checker_names_the_mistake(capsys, wrong, hint):
    from onelayer.book.exercises import check_rope

    assert not check_rope(wrong)
    assert hint in capsys.readouterr().out


def test_top_p_checker_passes_the_nucleus_and_names_mistakes(capsys):
    from onelayer.book.exercises import check_top_p
    from onelayer.model import sampling_logits

    assert check_top_p(lambda z, p: sampling_logits(z, top_p=p))

    def keep(z, p, rule):
        probs, order = z.softmax(-1).sort(dim=-1, descending=True)
        kept = rule(probs.cumsum(-1), probs, p)
        drop = torch.empty_like(kept).scatter_(-1, order, ~kept)
        return z.masked_fill(drop, float("-inf"))

    capsys.readouterr()
    assert not check_top_p(lambda z, p: keep(z, p, lambda total, probs, p: total <= p))
    assert "少留一个" in capsys.readouterr().out
    assert not check_top_p(lambda z, p: z.masked_fill(z.softmax(-1) < p, float("-inf")))
    assert "单个字的概率门槛" in capsys.readouterr().out
    assert not check_top_p(lambda z, p: keep(z, p, lambda total, probs, p: total - probs < 1 - p))


def test_rhyme_filter_checker_passes_the_library_and_names_mistakes(capsys):
    from onelayer import metre
    from onelayer.book.exercises import check_rhyme_filter
    from onelayer.chapters.ch10_songci import rhyme_filter

    def dropping(rule):
        return lambda z, chars, a, t: z.masked_fill(
            torch.tensor([rule(a, c, t) for c in chars]), float("-inf"))

    assert check_rhyme_filter(rhyme_filter)
    capsys.readouterr()
    assert not check_rhyme_filter(dropping(lambda a, c, t: metre.rhymes(a, c, t) is False))
    assert "表里没有的字" in capsys.readouterr().out
    assert not check_rhyme_filter(dropping(
        lambda a, c, t: not metre.rhyme_groups(a) & metre.rhyme_groups(c)))
    assert "只能用平声的读音比韵" in capsys.readouterr().out
    assert not check_rhyme_filter(dropping(lambda a, c, t: metre.tone(c) != metre.tone(a)))
    assert "同是平声不等于押韵" in capsys.readouterr().out
    assert not check_rhyme_filter(dropping(lambda a, c, t: metre.rhymes(a, c, t) is not True))
    assert "原样返回 logits" in capsys.readouterr().out


def test_logit_lens_checker_passes_the_library_and_names_mistakes(capsys):
    from onelayer.book.exercises import check_logit_lens
    from onelayer.chapters.ch11_inside import lens_logits

    assert check_logit_lens(lens_logits)
    capsys.readouterr()
    assert not check_logit_lens(lambda m, x: [h @ m.tok.weight.T for h in m.hidden_states(x)])
    assert "ln_f" in capsys.readouterr().out
    assert not check_logit_lens(lambda m, x: lens_logits(m, x)[1:])
    assert "n_layers + 1" in capsys.readouterr().out
    assert not check_logit_lens(lambda m, x: 1 / 0)
    assert "ZeroDivisionError" in capsys.readouterr().out
