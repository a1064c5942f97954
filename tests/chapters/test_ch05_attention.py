"""Chapter 5's probes: attention maps, heads and the FFN switched off, the ablation summary."""

import pytest
import torch

from onelayer.chapters.ch05_attention import attention_maps, ffn_off, head_ablation, heads_off
from onelayer.chapters.ch07_tiny_gpt import fact_recall, facts_gpt_config
from onelayer.data import facts_corpus
from onelayer.model import TinyGPT


def model_and_corpus(d_ff=None):
    corpus = facts_corpus(8, 4)
    torch.manual_seed(0)
    model = TinyGPT(facts_gpt_config(corpus, d_ff=d_ff)).eval()
    with torch.no_grad():  # large enough weights that every head matters
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.2)
    return model, corpus


IDX = torch.randint(0, 20, (3, 9), generator=torch.Generator().manual_seed(1))


def test_attention_maps_are_the_first_blocks_weights():
    model, _ = model_and_corpus()
    block = model.blocks[0]
    with torch.no_grad():
        x = model.tok(IDX) + model.pos(torch.arange(9))
        expected = block.attn.weights(block.ln_1(x))
    maps = attention_maps(model, IDX)
    assert maps.shape == (3, 4, 9, 9) and torch.equal(maps, expected)
    assert torch.allclose(maps.sum(-1), torch.ones(3, 4, 9))


def test_all_heads_off_leaves_only_the_output_bias():
    model, _ = model_and_corpus()
    zeroed, _ = model_and_corpus()
    with torch.no_grad():
        zeroed.blocks[0].attn.proj.weight.zero_()
        with heads_off(model, [0, 1, 2, 3]):
            off = model(IDX)
        assert torch.allclose(off, zeroed(IDX), atol=1e-6)
        with heads_off(model, [1]):
            one_off = model(IDX)
        on = model(IDX)                                   # the hook is gone again
    assert (one_off - on).abs().max() > 1e-3
    assert torch.equal(on, zeroed(IDX)) is False
    assert not model.blocks[0].attn.proj._forward_pre_hooks


def test_ffn_off_is_the_attention_only_computation():
    model, corpus = model_and_corpus()
    with torch.no_grad():
        with ffn_off(model):
            off = model(IDX)
        block = model.blocks[0]
        x = model.tok(IDX) + model.pos(torch.arange(9))
        x = x + block.attn(block.ln_1(x))
        assert torch.allclose(off, model.ln_f(x) @ model.tok.weight.T, atol=1e-6)
    assert not model.blocks[0].mlp._forward_hooks


def test_head_ablation_summarises_what_it_measured():
    model, corpus = model_and_corpus()
    a = head_ablation(model, corpus, threshold=0.3)
    assert a.subject_weight.shape == (4,) and a.without_head.shape == (4,)
    assert a.recall == pytest.approx(fact_recall(model, corpus))
    assert a.subject_heads == [h for h in range(4) if a.subject_weight[h] > 0.3]
    assert a.top_head == int(a.subject_weight.argmax())
    assert torch.allclose(a.lost, a.recall - a.without_head)
    with heads_off(model, a.subject_heads):
        assert a.without_subject_heads == pytest.approx(fact_recall(model, corpus))


def test_bad_arguments_raise_value_error():
    model, corpus = model_and_corpus()
    with pytest.raises(ValueError, match=r"头的编号应在 0..3 之间，实际有 \[4\]"), \
            heads_off(model, [4]):
        pass
    with pytest.raises(ValueError, match="layer 应在 0..0 之间，实际为 1"):
        attention_maps(model, IDX, layer=1)
    with pytest.raises(ValueError, match="threshold 应在"):
        head_ablation(model, corpus, threshold=1.5)
    attention_only, _ = model_and_corpus(d_ff=0)
    with pytest.raises(ValueError, match="没有 FFN"), ffn_off(attention_only):
        pass
