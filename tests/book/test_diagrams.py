"""The pictures of ideas (onelayer.book.diagrams): vector, self-contained, the same bytes on
every machine (strict nbval compares them), narrow enough for a phone, and drawn from the
chapters' own tensors."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import torch

import onelayer.book.diagrams as diagrams
from onelayer.book.diagrams.canvas import MAX_WIDTH, Diagram
from onelayer.chapters.ch07_tiny_gpt import facts_gpt_config
from onelayer.chapters.ch10_songci import PRINTED_SCORES
from onelayer.data import TOKENS, facts_corpus, sentence_ffn, sentence_x
from onelayer.ffn import trace_ffn

DRAWINGS = [name for name in diagrams.__all__ if name != "Diagram"]


def chapter7_config():
    return facts_gpt_config(facts_corpus(n_subjects=32, n_relations=8, seed=0))


YAN_SHU = ("一曲新词酒一杯，去年天气旧亭台。夕阳西下几时回？",
           "无可奈何花落去，似曾相识燕归来。小园香径独徘徊。")


def songci_form():
    """Chapter 10's form of 浣溪沙, read from a few made-up ci (the picture's layout does not
    depend on the corpus)."""
    from onelayer.chapters.ch10_songci import Form
    from onelayer.songci import Ci

    return Form.read([Ci("浣溪沙", "", YAN_SHU)] * 3, "浣溪沙", (7,) * 6)


def inside_findings():
    """Chapter 11's map: the model's sizes and a finding for a head, an FFN and the lens."""
    return (3, 4, {(2, 1): "看句首", (0, 1): "管断句"}, {0: "去掉即崩"},
            {-1: "只认得当前字", 2: "平仄几乎全对"}, "押韵：找不到")


ARGUMENTS = {"tiny_gpt_diagram": lambda: (chapter7_config(),),
             "ci_form_diagram": lambda: (songci_form(), 0.9, 2, PRINTED_SCORES["浣溪沙"]),
             "inside_diagram": inside_findings,
             "annotated_ci_diagram": lambda: ("".join(YAN_SHU), "浣溪沙")}


def draw(name):
    """A drawing with the arguments its chapter gives it."""
    args = ARGUMENTS.get(name)
    return getattr(diagrams, name)(*(() if args is None else args()))


@pytest.fixture(scope="module", params=DRAWINGS)
def drawn(request):
    return draw(request.param)


def test_svg_is_vector_self_contained_and_repeatable(drawn):
    svg = drawn.svg()
    assert svg == drawn.svg(), "同一张图两次输出的 SVG 应逐字节相同"
    assert "<text" not in svg, "文字应画成字形轮廓，读者的机器不需要字体"
    assert "<image" not in svg, "示意图应全是矢量"
    links = set(re.findall(r'(?:href|src)="([^"#][^"]*)"', svg))
    assert links == set(), f"不应引用外部资源：{links}"
    assert "<dc:date>" not in svg
    assert len(svg) < 150_000


def test_fits_a_phone(drawn):
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', drawn.svg()).group(1))
    assert width_pt <= (MAX_WIDTH + 0.2) * 72


def test_the_ffn_is_drawn_with_the_chapter_numbers():
    shown = diagrams.ffn_diagram().texts
    x = sentence_x()[TOKENS.index("鱼")]
    trace = trace_ffn(sentence_ffn(), x)
    for value in [*x.tolist(), *trace.pre.tolist(), *trace.out.tolist()]:
        assert f"{value:.2f}".replace("-", "−") in shown
    assert "−2.30" in shown  # detector 2, the hand calculation's h₂, is among them


def test_the_gated_ffn_counts_its_parameters():
    shown = " ".join(diagrams.gated_ffn_diagram(512, 2048).texts)
    assert "2,097,152" in shown and "3,145,728" in shown and "+50%" in shown


def test_the_layernorm_picture_ends_on_the_sphere():
    x = sentence_x()[TOKENS.index("鱼")]
    xhat = torch.nn.functional.layer_norm(x, (4,), eps=0.0)
    assert abs(xhat.norm().item() - 2.0) < 1e-6  # the circle's radius √d
    assert any("= 2" in t for t in diagrams.layernorm_geometry_diagram().texts)


def test_bad_sizes_and_symbols_are_refused():
    with pytest.raises(ValueError, match="图宽"):
        Diagram(MAX_WIDTH + 1, 2, "太宽")
    with pytest.raises(ValueError, match="运算符"):
        Diagram(2, 2, "符号").op(1, 1, "-")


def test_drawing_leaves_the_random_state_alone():
    for name in DRAWINGS:
        torch.manual_seed(0)
        draw(name)
        after = torch.rand(3)
        torch.manual_seed(0)
        assert torch.equal(after, torch.rand(3)), f"{name} 改变了随机数的状态"


def test_the_attention_picture_shows_the_hand_calculation():
    X = sentence_x()
    A = torch.softmax((X @ X.T / 2).masked_fill(~torch.ones(3, 3, dtype=torch.bool).tril(),
                                                 float("-inf")), dim=-1)
    shown = diagrams.attention_diagram().texts
    for value in [*A.flatten().tolist(), *(A @ X).flatten().tolist()]:
        assert f"{value:.2f}".replace("-", "−") in shown
    assert "0.48" in shown  # 鱼 looks at itself with the hand calculation's 0.478


def test_every_head_gets_its_own_queries_keys_and_values():
    shown = diagrams.head_split_diagram().texts
    for name in "QKV":
        assert {f"${name}^{{(0)}}$", f"${name}^{{(1)}}$"} <= set(shown)


def test_the_gpt_picture_carries_the_model_sizes():
    config = chapter7_config()
    shown = " ".join(diagrams.tiny_gpt_diagram(config).texts)
    assert f"[{config.vocab_size}, {config.block.d_model}]" in shown
    assert f"×{config.n_layers}" in shown and "→128→" in shown
    with pytest.raises(ValueError, match="norm_position"):
        post = replace(config, block=replace(config.block, norm_position="post"))
        diagrams.tiny_gpt_diagram(post)


def test_the_four_placements_are_drawn():
    shown = diagrams.norm_placements_diagram().texts
    assert {"Post-LN", "Pre-LN", "DeepNorm", "Sandwich-LN", "×α"} <= set(shown)
    assert shown.count("LN") == 5  # one LayerNorm in each, two in the sandwich


def test_query_heads_read_their_groups_key_value_head():
    d = diagrams.kv_sharing_diagram(4, (4, 2, 1))
    shown = d.texts
    for h in range(4):
        assert shown.count(f"$Q_{h}$") == 3  # every panel keeps all 4 query heads
    assert [shown.count(f"$K_{g}$") for g in range(4)] == [3, 2, 1, 1]
    assert {"KV 缓存 ×1", "KV 缓存 ×1/2", "KV 缓存 ×1/4"} <= set(shown)
    reads = [line.get_data() for line in d.ax.lines if line.get_linestyle() == "-"]
    assert len(reads) == 12  # one line from each query head of each panel
    assert len({xs[1] for xs, _ in reads}) == 4 + 2 + 1  # ending on 7 key/value heads
    with pytest.raises(ValueError, match="n_kv_heads"):
        diagrams.kv_sharing_diagram(4, (3,))


def test_four_generations_of_one_layer():
    shown = diagrams.layer_generations_diagram().texts
    assert {"Transformer", "GPT-2", "Llama", "Qwen3"} <= set(shown)
    assert shown.count("FFN（ReLU）") == shown.count("FFN（GELU）") == 1
    assert shown.count("SwiGLU FFN") == 2
    assert shown.count("LayerNorm") == 4 and shown.count("RMSNorm") == 4
    assert shown.count("RoPE") == 2 and shown.count("QK-norm") == 1  # QK-norm: Qwen3 only


def test_rope_pairs_turn_at_the_chapters_speeds():
    from onelayer.rope import rope_frequencies

    for base in (10000.0, 100.0):
        shown = diagrams.rope_pairs_diagram(8, (0, 1, 2, 3), base).texts
        for j, w in enumerate(rope_frequencies(8, base).tolist()):
            assert f"$\\omega_{j}$ = {w:.3g}" in shown
            assert f"（维 {j} 与 {j + 4}）" in shown  # the halves' pairing of transformers
        assert any(f"rope_theta = {base:g}" in t for t in shown)
        assert not any("θ" in t or "\\theta" in t for t in shown)  # θ is an angle in the book
    assert "$\\omega_0$ = 1" in diagrams.rope_pairs_diagram().texts  # 1 rad per position
    with pytest.raises(ValueError):
        diagrams.rope_pairs_diagram(d_head=7)


def test_rope_shift_keeps_the_angle_between_query_and_key():
    d = diagrams.rope_shift_diagram(omega=0.35, m=3, n=1, shift=3)
    assert {"$q$（位置 3）", "$k$（位置 1）", "$q$（位置 6）", "$k$（位置 4）"} <= set(d.texts)
    arcs = [p for p in d.ax.patches if type(p).__name__ == "Arc" and p.theta2 - p.theta1 < 180]
    assert len(arcs) == 2 and abs((arcs[0].theta2 - arcs[0].theta1)
                                  - (arcs[1].theta2 - arcs[1].theta1)) < 1e-9  # 夹角不变


def test_qk_norm_sits_before_rope_and_not_on_v():
    shown = diagrams.qk_norm_diagram().texts
    assert shown.count("RMSNorm（$\\gamma$）") == 2 and shown.count("RoPE") == 2
    assert "不归一化、不转" in shown


def test_sliding_window_sees_the_last_positions():
    d = diagrams.sliding_window_diagram(size=8, window=3)
    seen = [p for p in d.ax.patches if type(p).__name__ == "Rectangle"
            and p.get_facecolor()[:3] != (0.9333333333333333,) * 3]
    assert len(seen) == 36 + (8 + 7 + 6)  # 因果：1 + … + 8；窗口 3：8 + 7 + 6
    with pytest.raises(ValueError, match="window"):
        diagrams.sliding_window_diagram(size=4, window=4)


def test_the_inside_map_places_each_finding():
    shown = draw("inside_diagram").texts
    for label in ("看句首", "管断句", "去掉即崩", "只认得当前字", "平仄几乎全对", "押韵：找不到"):
        assert label in shown
    assert sum(t.startswith("头") for t in shown) == 3 * 4      # 每块 4 个头


def test_the_printed_score_is_drawn_above_the_grid_read_from_the_ci():
    score = PRINTED_SCORES["浣溪沙"]
    shown = draw("ci_form_diagram").texts
    assert shown.count("谱") == 6
    assert "".join(score).count("中") <= shown.count("中")
    bare = diagrams.ci_form_diagram(songci_form()).texts
    # 每句一个“谱”，每字一个记号，一行图例
    assert "谱" not in bare and len(shown) - len(bare) == 6 + 42 + 1
    with pytest.raises(ValueError, match="score 应为每句一串平仄"):
        diagrams.ci_form_diagram(songci_form(), score=score[:5])


def test_one_ci_is_drawn_with_each_tone_and_its_rhymes():
    shown = draw("annotated_ci_diagram").texts
    assert sum(t in ("平", "仄", "中") for t in shown) == 42        # 每个字一个声调
    assert shown.count("中") == 4                                   # 几、回、相、燕：字表里两读
    assert sum(t.startswith(("起韵", "押韵")) for t in shown) == 5 and "不押" in shown
    with pytest.raises(ValueError, match="text 应是一首词的正文"):
        diagrams.annotated_ci_diagram("，。", "浣溪沙")


def test_the_seed_block_is_drawn_as_its_figure_and_as_its_code():
    shown = diagrams.seed_block_diagram().texts
    assert shown.count("LayerNorm") == 2, "左边按原教程的图：每次相加之后一个 LayerNorm"
    assert "norm1（调用 3 次）" in shown and "norm2" in shown, "右边按原教程的代码：norm1、norm2"


def test_the_front_page_map_marks_every_chapter():
    from test_intro import toc_chapters

    badges = diagrams.book_map_diagram().texts
    missing = [n for n in toc_chapters() if str(n) not in badges]
    assert missing == [], f"首页的图没有标出第 {missing} 章"


def test_the_rhyme_study_changes_are_drawn_on_real_characters():
    shown = draw("rhyme_arms_diagram").texts
    assert shown.count("G[第1部平]") == 3, "东、冬、风共用词林正韵第一部平声的一行"
    assert "×10（第 1500 步起）" in shown and "杯一酒词新曲一，台亭旧气天年去。" in shown
