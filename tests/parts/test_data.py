"""Generated data: the facts corpus and the two spirals (onelayer.data)."""

import math

import pytest
import torch

from onelayer.data import facts_corpus, two_spirals


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
    # reading the relation can only help: best ≤ relation ≤ structure
    assert corpus.best_loss() <= corpus.relation_loss() <= corpus.structure_loss() + 1e-9
    one_subject = facts_corpus(n_subjects=1, n_relations=3)  # the relation fixes the object
    assert one_subject.relation_loss() == pytest.approx(one_subject.best_loss())
    with pytest.raises(ValueError, match="词表"):
        corpus.encode("猫吃X")


def test_facts_corpus_rejects_sizes_it_cannot_build():
    with pytest.raises(ValueError, match="n_subjects 应在 1..32"):
        facts_corpus(n_subjects=33)
    with pytest.raises(ValueError, match="实际为 4、0"):
        facts_corpus(n_subjects=4, n_relations=0)


def test_two_spirals_is_balanced_deterministic_and_point_symmetric():
    x, y = two_spirals(200, seed=3)
    assert x.shape == (200, 2) and y.shape == (200,)
    assert y.sum() == 100
    assert torch.equal(x, two_spirals(200, seed=3)[0])
    assert not torch.equal(x, two_spirals(200, seed=4)[0])
    assert x.abs().max() <= 2.0
    with pytest.raises(ValueError, match="n 应为正整数"):
        two_spirals(0)
