"""Chapter 7 panels: the trained tiny GPT's next-token distribution, and sampling from it
(``panels/gpt.js`` runs the model in the page); the attention maps of the trained model
(``panels/attnmap.js``: the weights are computed here and written as JSON, the page only
draws them)."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import nn

from onelayer.book.panels import PagePanel
from onelayer.book.plotting import new_figure, show_with_alt
from onelayer.book.widgets.frames import frame_player
from onelayer.book.widgets.live import live_output
from onelayer.chapters.ch07_tiny_gpt import attention_maps
from onelayer.checks import check_choice
from onelayer.data import FactsCorpus
from onelayer.model import TinyGPT
from onelayer.probes import evaluating


def _next_token_figure(model: TinyGPT, corpus: FactsCorpus, prompt: str, temperature: float,
                       top: int = 10) -> Figure:
    """Bar chart of the most likely next tokens after ``prompt`` at ``temperature``."""
    with torch.no_grad(), evaluating(model):
        logits = model(torch.tensor(corpus.encode(prompt)))[-1]
    probs = (logits / temperature).softmax(-1)
    best = probs.topk(top)
    labels = [corpus.vocab[i] for i in best.indices.tolist()]
    truth = corpus.facts.get((prompt[-2], prompt[-1])) if len(prompt) >= 2 else None
    colors = ["tab:orange" if c == truth else "tab:blue" for c in labels]
    fig = new_figure(figsize=(6.4, 2.6))
    ax = fig.subplots()
    ax.bar(range(top), best.values.tolist(), color=colors)
    ax.set_xticks(range(top), labels)
    ax.set_ylim(0, 1)
    ax.set_ylabel("概率")
    ax.set_title(f"“{prompt}”之后的下一个字，温度 τ = {temperature:.3g}（橙色：表里的事实）")
    return fig


def temperature_frames(model: TinyGPT, corpus: FactsCorpus, prompt: str) -> widgets.VBox:
    """Chapter 7, without a kernel: the next-token distribution as the temperature changes."""
    values = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0]

    def alt(t: float) -> str:
        return (f"柱状图：提示“{prompt}”之后概率最高的 10 个字在温度 {t:g} 下的概率；"
                "温度越低，概率越集中在第一名上，温度越高越平。")

    return frame_player(lambda t: _next_token_figure(model, corpus, prompt, t), values,
                        "温度 τ", alt, start=values.index(1.0))


def generation_explorer(model: TinyGPT, corpus: FactsCorpus) -> widgets.VBox:
    """Type a prompt, pick temperature, top-k and a seed; see a sample and the distribution."""
    prompt = widgets.Text(value="猫吃", description="提示")
    temperature = widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                         description="温度 τ")
    top_k = widgets.IntSlider(value=len(corpus.vocab), min=1, max=len(corpus.vocab),
                              description="top-k")
    seed = widgets.IntSlider(value=0, min=0, max=20, description="随机种子")

    def update(prompt: str, temperature: float, top_k: int, seed: int) -> None:
        try:
            ids = model.generate(corpus.encode(prompt), 12, temperature, top_k,
                                 torch.Generator().manual_seed(seed))
        except ValueError as err:
            print("ValueError:", err)
            return
        print("生成：", corpus.decode(ids))
        fig = _next_token_figure(model, corpus, prompt, temperature)
        show_with_alt(fig, f"柱状图：提示“{prompt}”之后概率最高的 10 个字，"
                           f"温度 {temperature:.3g}。")

    out = live_output(
        update, {"prompt": prompt, "temperature": temperature, "top_k": top_k, "seed": seed})
    return widgets.VBox([widgets.HBox([prompt, seed]), widgets.HBox([temperature, top_k]), out])


def tensor_base64(t: torch.Tensor, dtype: str) -> str:
    """The tensor's values, row-major, little-endian, as base64: float32 (exact, and smaller
    than decimal text) or float16 (half the bytes; rounds each weight to 11 significant bits)."""
    kind = {"float32": "<f4", "float16": "<f2"}[dtype]
    return base64.b64encode(t.detach().to(getattr(torch, dtype)).contiguous().numpy()
                            .astype(kind).tobytes()).decode("ascii")


def gpt_model_data(model: TinyGPT, vocab: Sequence[str], dtype: str = "float32") -> dict:
    """What ``panels/gpt.js`` needs to run ``model``: its sizes, vocabulary and weights (in
    ``dtype``, "float32" or "float16"). The model must be a LayerNorm, ungated TinyGPT with a
    position table, an FFN in every block and one token per entry of ``vocab``."""
    cfg = model.config
    block_cfg = cfg.block
    if block_cfg.norm != "layernorm" or block_cfg.gated or cfg.vocab_size != len(vocab) \
            or model.pos is None:
        raise ValueError("页面里的模型应为 LayerNorm、非门控、有位置嵌入表的 TinyGPT，"
                         "词表与语料相同；"
                         f"实际为 norm={block_cfg.norm!r}，gated={block_cfg.gated}，"
                         f"位置嵌入表：{'有' if model.pos is not None else '无'}，"
                         f"vocab_size={cfg.vocab_size}（语料词表 {len(vocab)} 个字）")
    if any(block.mlp is None for block in model.blocks):
        raise ValueError("页面里的模型的每一块都应有 FFN（d_ff > 0），实际有一块没有")
    check_choice("dtype", dtype, ("float32", "float16"))

    def linear(layer: nn.Linear) -> dict:
        return {"in": layer.in_features, "out": layer.out_features,
                "W": tensor_base64(layer.weight, dtype),
                "b": tensor_base64(layer.bias, dtype) if layer.bias is not None else None}

    def layer_norm(norm: nn.Module) -> dict:
        return {"eps": norm.eps, "weight": tensor_base64(norm.weight, dtype),
                "bias": tensor_base64(norm.bias, dtype) if norm.bias is not None else None}

    blocks = [{"ln_1": layer_norm(b.ln_1), "ln_2": layer_norm(b.ln_2),
               "attn": {"qkv": linear(b.attn.qkv), "proj": linear(b.attn.proj)},
               "w1": linear(b.mlp.w1), "w2": linear(b.mlp.w2)} for b in model.blocks]
    return {"d": block_cfg.d_model, "n_heads": block_cfg.n_heads, "dtype": dtype,
            "block_size": cfg.block_size, "activation": block_cfg.activation,
            "norm_position": block_cfg.norm_position, "vocab": "".join(vocab),
            "tok": tensor_base64(model.tok.weight, dtype),
            "pos": tensor_base64(model.pos.weight, dtype), "blocks": blocks,
            "ln_f": None if isinstance(model.ln_f, nn.Identity) else layer_norm(model.ln_f)}


def gpt_panel_data(model: TinyGPT, corpus: FactsCorpus, prompt: str = "猫吃") -> dict:
    """What the page needs to run ``model`` (float32 weights) and the fact table (to mark the
    right answer)."""
    model_data = gpt_model_data(model, corpus.vocab)
    corpus.encode(prompt)  # ValueError for characters outside the vocabulary
    return {"prompt": prompt, "facts": {s + r: o for (s, r), o in corpus.facts.items()},
            "model": model_data}


def tiny_gpt_in_page(model: TinyGPT, corpus: FactsCorpus, prompt: str = "猫吃") -> PagePanel:
    """The trained model running in the page (``panels/gpt.js``): type a prompt, see the
    next-token distribution under temperature and top-k, a sampled continuation and the FFN
    neurons that fire most on the last character. A test compares its logits with PyTorch's."""
    return PagePanel("gpt", gpt_panel_data(model, corpus, prompt), "在页面里运行的小 GPT")


def attention_map_data(model: TinyGPT, corpus: FactsCorpus, prompts: Sequence[str],
                       marked_head: int | None = None) -> dict:
    """Every head's attention weights of block 0 for each prompt (which must share one
    length), as nested lists of floats; ``marked_head`` is labelled as the head that moves
    the subject."""
    lengths = {len(p) for p in prompts}
    if not prompts or len(lengths) != 1:
        raise ValueError(f"提示应非空且等长，实际长度为 {sorted(lengths)}")
    shown = []
    for prompt in prompts:
        maps = attention_maps(model, torch.tensor(corpus.encode(prompt)))   # [h, T, T]
        shown.append({"text": prompt, "maps": maps.double().tolist()})
    return {"prompts": shown, "n_heads": model.config.block.n_heads, "marked_head": marked_head}


def attention_map_explorer(model: TinyGPT, corpus: FactsCorpus, prompts: Sequence[str],
                           marked_head: int | None = None) -> PagePanel:
    """Pick a prompt, a head and the position that asks; see that head's attention map and the
    asking position's weights."""
    return PagePanel("attnmap", attention_map_data(model, corpus, prompts, marked_head),
                     "训练好的模型：每个头在看哪里")
