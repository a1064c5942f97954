import math

import pytest
import torch

from onelayer import reference
from onelayer.block import BlockConfig
from onelayer.data import facts_corpus
from onelayer.experiments import fact_queries, fact_recall, ffn_grad_norms, train_lm, warmup_lr
from onelayer.model import GPTConfig, TinyGPT, lm_loss


def tiny(norm_position="pre", d_ff=None, n_layers=2, init="gpt2"):
    torch.manual_seed(0)
    block = BlockConfig(d_model=16, n_heads=2, d_ff=d_ff, norm_position=norm_position)
    return TinyGPT(GPTConfig(vocab_size=11, block_size=8, n_layers=n_layers, block=block,
                             init=init))


def test_logits_match_transformers_gpt2_lm_head_model():
    pytest.importorskip("transformers")
    model = tiny().eval()
    with torch.no_grad():  # move every weight away from its init, so nothing matches by luck
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.1)
    peer = reference.gpt2_lm_head_model(model)
    idx = torch.randint(0, 11, (3, 8))
    with torch.no_grad():
        assert (model(idx) - peer(idx).logits).abs().max().item() < 1e-5


def test_head_is_tied_and_post_norm_has_no_final_norm():
    pre, post = tiny("pre"), tiny("post")
    assert not isinstance(pre.ln_f, torch.nn.Identity)
    assert isinstance(post.ln_f, torch.nn.Identity)
    assert pre.tok.weight.grad is None
    lm_loss(pre(torch.tensor([[1, 2, 3]])), torch.tensor([[2, 3, 4]])).backward()
    assert pre.tok.weight.grad[5].abs().sum() > 0  # never an input: only the head reaches it


def test_initial_loss_is_about_log_vocab():
    model = tiny()
    idx, targets = torch.randint(0, 11, (2, 64, 8))
    assert abs(lm_loss(model(idx), targets).item() - math.log(11)) < 0.05


def test_causal_model_ignores_the_future():
    model = tiny().eval()
    a, b = torch.tensor([1, 2, 3, 4]), torch.tensor([1, 2, 3, 9])
    with torch.no_grad():
        assert torch.allclose(model(a)[:3], model(b)[:3])


@pytest.mark.parametrize(("idx", "message"), [
    (torch.tensor([1.0, 2.0]), "int64"),
    (torch.tensor([1, 11]), r"\[0, 11\)"),
    (torch.zeros(9, dtype=torch.long), "block_size=8"),
])
def test_bad_tokens_raise_value_error(idx, message):
    with pytest.raises(ValueError, match=message):
        tiny()(idx)


def test_generate_checks_its_arguments_and_is_reproducible():
    model = tiny()
    with pytest.raises(ValueError, match="提示不能为空"):
        model.generate([], 3)
    with pytest.raises(ValueError, match="block_size=8，实际为 9"):
        model.generate([1] * 9, 3)
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1], 3, temperature=0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate([1], 3, top_k=12)
    out = model.generate([1, 2], 10, generator=torch.Generator().manual_seed(0))
    again = model.generate([1, 2], 10, generator=torch.Generator().manual_seed(0))
    assert out == again and len(out) == 12 and out[:2] == [1, 2]
    greedy = model.generate([1, 2], 1, top_k=1)
    with torch.no_grad():
        assert greedy[-1] == model(torch.tensor([1, 2]))[-1].argmax().item()


def test_bad_model_configs_raise_value_error():
    with pytest.raises(ValueError, match="vocab_size 应为正整数"):
        GPTConfig(vocab_size=0, block_size=8)
    with pytest.raises(ValueError, match="init 应为"):
        GPTConfig(vocab_size=5, block_size=8, init="kaiming")
    with pytest.raises(ValueError, match="block 应为 BlockConfig"):
        GPTConfig(vocab_size=5, block_size=8, block={"d_model": 8})


def test_facts_corpus_is_deterministic_and_consistent():
    corpus = facts_corpus(n_subjects=6, n_relations=3, seed=1)
    assert corpus == facts_corpus(n_subjects=6, n_relations=3, seed=1)
    assert corpus.facts != facts_corpus(n_subjects=6, n_relations=3, seed=2).facts
    assert len(corpus.facts) == 18
    x, y = corpus.batch(4, 10, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 10) and torch.equal(x[:, 1:], y[:, :-1])
    text = corpus.decode(x[0].tolist())
    assert text[3] == "。" and (text[0], text[1]) in corpus.facts
    assert corpus.facts[text[0], text[1]] == text[2]
    assert corpus.best_loss() < corpus.structure_loss() < corpus.unigram_loss()
    assert corpus.unigram_loss() < math.log(len(corpus.vocab))
    n_objects = len(set(corpus.facts.values()))  # guessing among n objects costs ≤ ln(n)/4
    assert corpus.structure_loss() - corpus.best_loss() <= math.log(n_objects) / 4 + 1e-6
    one_fact = facts_corpus(n_subjects=1, n_relations=1)  # one object: nothing left to guess
    assert one_fact.structure_loss() == pytest.approx(one_fact.best_loss())
    with pytest.raises(ValueError, match="词表"):
        corpus.encode("猫吃X")


def test_fact_queries_ask_every_fact():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    prompts, answers = fact_queries(corpus, context=2)
    assert prompts.shape == (8, 10) and answers.shape == (8,)
    for prompt, answer in zip(prompts.tolist(), answers.tolist()):
        s, r = corpus.decode(prompt[-2:])
        assert corpus.facts[s, r] == corpus.vocab[answer]


def test_training_learns_the_facts():
    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    block = BlockConfig(d_model=32, n_heads=2)
    model = TinyGPT(GPTConfig(len(corpus.vocab), 12, n_layers=1, block=block))
    before = fact_recall(model, corpus)
    losses = train_lm(model, corpus, steps=150, lr=3e-3, batch_size=16)
    assert losses[-10:].mean() < corpus.best_loss() + 0.1 < losses[0]
    assert fact_recall(model, corpus) == 1.0 > before


def test_warmup_ramps_linearly():
    assert [warmup_lr(s, 1.0, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_lr(0, 1.0, 0) == 1.0


def test_ffn_grad_norms_one_per_block():
    model = tiny(n_layers=3, init="xavier")
    norms = ffn_grad_norms(model, torch.randint(0, 11, (2, 8)), torch.randint(0, 11, (2, 8)))
    assert norms.shape == (3,) and torch.all(norms > 0)


def test_chapter_model_is_gpt2_with_tanh_gelu():
    pytest.importorskip("transformers")
    from onelayer.experiments import facts_gpt_config

    corpus = facts_corpus(n_subjects=4, n_relations=2)
    torch.manual_seed(0)
    model = TinyGPT(facts_gpt_config(corpus)).eval()
    peer = reference.gpt2_lm_head_model(model)
    assert peer.config.activation_function == "gelu_new"
    idx = torch.randint(0, len(corpus.vocab), (2, 16))
    with torch.no_grad():
        assert (model(idx) - peer(idx).logits).abs().max().item() < 1e-5


def test_ffn_activations_and_key_value_probe():
    from onelayer.experiments import ffn_activations, key_value_probe

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


def test_facts_corpus_rejects_sizes_it_cannot_build():
    with pytest.raises(ValueError, match="n_subjects 应在 1..32"):
        facts_corpus(n_subjects=33)
    with pytest.raises(ValueError, match="实际为 4、0"):
        facts_corpus(n_subjects=4, n_relations=0)
