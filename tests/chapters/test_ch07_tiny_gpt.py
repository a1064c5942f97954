"""Chapter 7's experiments: recalling facts, the FFN read as a key-value memory."""

import pytest
import torch

from onelayer import reference
from onelayer.block import BlockConfig
from onelayer.chapters.ch07_tiny_gpt import (
    fact_queries,
    fact_recall,
    facts_gpt_config,
    ffn_activations,
    key_value_probe,
)
from onelayer.data import facts_corpus
from onelayer.model import GPTConfig, TinyGPT


def test_fact_queries_ask_every_fact():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    prompts, answers = fact_queries(corpus, context=2)
    assert prompts.shape == (8, 10) and answers.shape == (8,)
    for prompt, answer in zip(prompts.tolist(), answers.tolist()):
        s, r = corpus.decode(prompt[-2:])
        assert corpus.facts[s, r] == corpus.vocab[answer]


def test_chapter_model_is_gpt2_with_tanh_gelu():
    pytest.importorskip("transformers")
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    model = TinyGPT(facts_gpt_config(corpus)).eval()
    peer = reference.gpt2_lm_head_model(model)
    assert peer.config.activation_function == "gelu_new"
    idx = torch.randint(0, len(corpus.vocab), (2, 16))
    with torch.no_grad():
        assert (model(idx) - peer(idx).logits).abs().max().item() < 1e-5


def test_ffn_activations_and_key_value_probe():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    block = BlockConfig(d_model=16, n_heads=2, d_ff=24)
    model = TinyGPT(GPTConfig(len(corpus.vocab), 8, n_layers=1, block=block))
    idx = torch.randint(0, len(corpus.vocab), (3, 5))
    acts = ffn_activations(model, idx)
    block = model.blocks[0]
    with torch.no_grad():
        x = model.hidden_states(idx)[0]
        h = x + block.attn(block.ln_1(x))
        assert torch.allclose(acts, block.mlp.hidden(block.ln_2(h)))
    memories = key_value_probe(model, corpus, top=3)
    assert len(memories) == 24
    m = memories[0]
    assert len(m.keys) == len(m.key_answers) == len(m.values) == 3
    assert all(corpus.facts[k[0], k[1]] == a for k, a in zip(m.keys, m.key_answers))
    with pytest.raises(ValueError, match="layer"):
        ffn_activations(model, idx, layer=1)


def test_probes_restore_the_train_mode():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    model = TinyGPT(facts_gpt_config(corpus)).train()
    fact_recall(model, corpus)
    ffn_activations(model, torch.zeros(1, 3, dtype=torch.long))
    assert model.training
