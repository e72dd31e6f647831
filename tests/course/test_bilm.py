"""Tests for Unit 3's pieces: course.data.words, course.models.bilm, course.analysis.ngram,
course.analysis.elmo and course.viz.elmo."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch

from course.analysis.elmo import (
    Probe,
    ScalarMix,
    encode_sentences,
    heldout_perplexity,
    marked_word_features,
    mean_pairwise_cosine,
    probe_accuracy,
    train_probe,
)
from course.analysis.ngram import KneserNey, perplexity_both_ways
from course.checks import ShapeMismatch
from course.data.english import Example
from course.data.words import WordVocab, sentence_tokens, token_windows, tokenize
from course.models.bilm import BiLM, lengths_mask, reverse_padded
from course.viz.elmo import interact_layer_choice, plot_layer_choice, plot_similarity_by_layer

matplotlib.use("Agg")


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


SENTENCES = [
    sentence_tokens(s)
    for s in (
        "The dog's bone isn't here.",
        "A green tree stood by the river.",
        "The recruits were green, and the river was wide.",
        "Read the file and close it.",
        "The dog ran to the river.",
    )
]


@pytest.fixture(scope="module")
def vocab() -> WordVocab:
    return WordVocab.build(SENTENCES, max_words=20)


@pytest.fixture(scope="module")
def model(vocab: WordVocab) -> BiLM:
    torch.manual_seed(0)
    return BiLM(len(vocab), dim=6, num_layers=2).eval()


# ----------------------------------------------------------------------------------------------
# course.data.words


def test_tokenize_and_sentence_tokens():
    assert tokenize("The dog's bone isn't here.") == [
        "The", "dog", "'s", "bone", "is", "n't", "here", ".",
    ]  # fmt: skip
    assert sentence_tokens("Hi, Bob") == ["<s>", "hi", ",", "bob", "</s>"]
    assert sentence_tokens(["Already", "split"]) == ["<s>", "already", "split", "</s>"]


def test_word_vocab_ids_and_stream(vocab: WordVocab):
    assert vocab.words[:4] == ("<pad>", "<unk>", "<s>", "</s>")
    assert len(vocab) == 20
    assert vocab.words[4] == "the"  # the most frequent word comes first
    assert vocab.ids(["the", "zyzzyva"]) == [4, 1]
    stream = vocab.encode(SENTENCES[:2])
    assert stream.tolist() == vocab.ids(SENTENCES[0]) + vocab.ids(SENTENCES[1])
    assert WordVocab(vocab.words) == vocab


def test_word_vocab_rejects_bad_settings():
    with pytest.raises(ValueError, match="max_words must be > 4"):
        WordVocab.build(SENTENCES, max_words=4)
    with pytest.raises(ValueError, match="words must start with"):
        WordVocab(("a", "b"))
    with pytest.raises(ValueError, match="each word once"):
        WordVocab(("<pad>", "<unk>", "<s>", "</s>", "a", "a"))


def test_token_windows_are_slices_of_the_stream_and_reproducible():
    stream = torch.arange(100)
    first = next(token_windows(stream, 4, 10, seed=3))
    assert first.shape == (4, 10)
    assert (first[:, 1:] - first[:, :-1]).eq(1).all()  # consecutive tokens
    assert torch.equal(first, next(token_windows(stream, 4, 10, seed=3)))
    with pytest.raises(ValueError, match="too short"):
        next(token_windows(torch.arange(5), 2, 10))
    with pytest.raises(ShapeMismatch):
        next(token_windows(torch.zeros(3, 40, dtype=torch.long), 2, 10))


# ----------------------------------------------------------------------------------------------
# course.models.bilm


def test_reverse_padded_reverses_within_each_length_and_is_an_involution():
    x = torch.arange(12).reshape(3, 4)
    lengths = torch.tensor([4, 2, 1])
    assert reverse_padded(x, lengths).tolist() == [[3, 2, 1, 0], [5, 4, 6, 7], [8, 9, 10, 11]]
    y = torch.randn(3, 4, 5)
    assert torch.equal(reverse_padded(reverse_padded(y, lengths), lengths), y)
    assert lengths_mask(lengths, 4).sum(dim=1).tolist() == [4, 2, 1]


def test_bilm_layers_of_a_sentence_do_not_depend_on_the_padding(model: BiLM, vocab: WordVocab):
    """The backward reader starts at each sentence's last real token: a short sentence padded
    in a batch gets exactly the vectors it gets alone."""
    words, lengths = encode_sentences(SENTENCES, vocab)
    batched = model.layers(words, lengths)  # (L+1, B, T, 2D)
    assert batched.shape == (3, len(SENTENCES), int(lengths.max()), 12)
    for b, sentence in enumerate(SENTENCES):
        alone_words, _ = encode_sentences([sentence], vocab)
        alone = model.layers(alone_words)  # (L+1, 1, n, 2D)
        n = len(sentence)
        assert torch.allclose(batched[:, b, :n], alone[:, 0], atol=1e-6), b
        assert batched[:, b, n:].eq(0).all()  # padding holds zeros
    # the token layer is the same vector twice
    assert torch.equal(batched[0, ..., :6], batched[0, ..., 6:])


def test_each_direction_sees_only_its_own_side(model: BiLM, vocab: WordVocab):
    words, _ = encode_sentences([SENTENCES[2]], vocab)
    _, forward, backward = model.directions(words)
    changed = words.clone()
    k = 5
    changed[0, k] = words[0, k + 1]  # change the token at position k
    _, forward2, backward2 = model.directions(changed)
    for f, f2, b, b2 in zip(forward, forward2, backward, backward2, strict=True):
        assert torch.allclose(f[0, :k], f2[0, :k], atol=1e-6)  # forward states before k: unchanged
        assert not torch.allclose(f[0, k:], f2[0, k:])
        assert torch.allclose(
            b[0, k + 1 :], b2[0, k + 1 :], atol=1e-6
        )  # backward states after k: unchanged
        assert not torch.allclose(b[0, : k + 1], b2[0, : k + 1])


def test_lm_loss_scores_each_direction_and_ignores_padding(model: BiLM, vocab: WordVocab):
    words, lengths = encode_sentences(SENTENCES, vocab)
    loss, logs = model.lm_loss(words, lengths)
    assert loss.item() == pytest.approx((logs["forward"] + logs["backward"]) / 2)
    forward_logits, backward_logits = model.lm_logits(words, lengths)
    b, n = 1, int(lengths[1])  # one sentence by hand
    lp_f = forward_logits[b, : n - 1].log_softmax(-1)
    lp_b = backward_logits[b, 1:n].log_softmax(-1)
    one_f = -lp_f[torch.arange(n - 1), words[b, 1:n]].mean()
    one_b = -lp_b[torch.arange(n - 1), words[b, : n - 1]].mean()
    single = model.lm_loss(words[b : b + 1, :n])[1]
    assert single["forward"] == pytest.approx(one_f.item(), abs=1e-5)
    assert single["backward"] == pytest.approx(one_b.item(), abs=1e-5)
    assert math.isclose(loss.item(), model.lm_loss(words, lengths)[0].item())


def test_bilm_rejects_bad_input_clearly(model: BiLM, vocab: WordVocab):
    words, lengths = encode_sentences(SENTENCES[:2], vocab)
    with pytest.raises(ShapeMismatch, match="words"):
        model.layers(words[0])
    with pytest.raises(ValueError, match="words: expected values in"):
        model.layers(words + 1000)
    with pytest.raises(TypeError):
        model.layers(words.float())
    with pytest.raises(ValueError, match="lengths: expected values in 1.."):
        model.layers(words, torch.tensor([0, 3]))
    with pytest.raises(ShapeMismatch, match="lengths"):
        model.layers(words, torch.tensor([3]))
    with pytest.raises(ValueError, match="must be >= 1"):
        BiLM(10, dim=0)


# ----------------------------------------------------------------------------------------------
# course.analysis.ngram


@pytest.mark.parametrize("order", [1, 2, 3])
def test_kneser_ney_distributions_sum_to_one(order: int):
    rng = np.random.default_rng(0)
    V = 12
    train = [[2, *rng.integers(4, V, rng.integers(1, 8)).tolist(), 3] for _ in range(60)]
    kn = KneserNey(train, V, order)
    contexts = [[], [2], [2, 5], [7, 7], [11, 4]]  # seen and unseen contexts
    for context in contexts:
        context = context[-(order - 1) :] if order > 1 else []
        key = 0
        for w in context:
            key = key * V + w
        probs = kn._prob(key * V + np.arange(V), order) if context or order == 1 else None
        if probs is None:
            continue
        assert probs.sum() == pytest.approx(1.0, abs=1e-9), context
        assert (probs > 0).all()


def test_perplexity_both_ways_reads_the_backward_model_on_reversed_sentences():
    # each direction is the KneserNey model of that direction: backward, counted and scored on
    # every sentence reversed
    train = [[0, 1, 2, 3]] * 20 + [[0, 2, 1, 3]] * 5
    test = [[0, 1, 2, 3], [0, 2, 1, 3]]
    both = perplexity_both_ways(train, test, 4, order=2)
    assert both["forward"] == KneserNey(train, 4, order=2).perplexity(test)
    reversed_model = KneserNey([s[::-1] for s in train], 4, order=2)
    assert both["backward"] == reversed_model.perplexity([s[::-1] for s in test])


def test_kneser_ney_perplexity_is_sensible_and_checks_input():
    train = [[0, 1, 2, 3]] * 20 + [[0, 2, 1, 3]] * 5
    kn = KneserNey(train, 4, order=2)
    assert 1.0 < kn.perplexity([[0, 1, 2, 3]]) < kn.perplexity([[0, 2, 2, 3]])
    unigram = KneserNey(train, 4, order=1)
    assert kn.perplexity(train) < unigram.perplexity(train) <= 4.0
    assert len(kn.log_probs([[0, 1, 2, 3], [0, 3]])) == 4  # every token after the first
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 4\)"):
        KneserNey([[0, 5]], 4)
    with pytest.raises(ValueError, match="non-empty"):
        KneserNey([[0, 1], []], 4)
    with pytest.raises(ValueError, match="discount"):
        KneserNey(train, 4, discount=1.0)
    with pytest.raises(ValueError, match="order"):
        KneserNey(train, 4, order=0)


# ----------------------------------------------------------------------------------------------
# course.analysis.elmo


def test_scalar_mix_is_gamma_times_a_softmax_weighted_sum():
    mix = ScalarMix(3)
    layers = torch.randn(3, 2, 4, 5)
    assert torch.allclose(mix(layers), layers.mean(dim=0))  # w = 0, γ = 1: an equal mix
    with torch.no_grad():
        mix.w.copy_(torch.tensor([1.0, 0.0, -1.0]))
        mix.gamma.fill_(2.0)
    s = torch.softmax(torch.tensor([1.0, 0.0, -1.0]), 0)
    expected = 2.0 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2])
    assert torch.allclose(mix(layers), expected, atol=1e-6)
    with pytest.raises(ShapeMismatch, match="one slice per layer"):
        mix(torch.randn(2, 4, 5))
    with pytest.raises(ValueError, match="num_layers"):
        ScalarMix(0)


def test_heldout_perplexity_matches_the_mean_loss(model: BiLM, vocab: WordVocab):
    figures = heldout_perplexity(model, vocab, SENTENCES, batch_size=2)
    words, lengths = encode_sentences(SENTENCES, vocab)
    nats = 0.0
    for b in range(len(SENTENCES)):
        n = int(lengths[b])
        nats += model.lm_loss(words[b : b + 1, :n])[1]["forward"] * (n - 1)
    assert figures["forward"] == pytest.approx(math.exp(nats / int((lengths - 1).sum())), rel=1e-5)
    with pytest.raises(ValueError, match="at least one sentence"):
        encode_sentences([], vocab)


def test_marked_word_features_take_the_marked_word(model: BiLM, vocab: WordVocab):
    tokens = ("a", "green", "tree", "stood")
    examples = [Example(tokens, k, "adj", "green", "x", "adj", "adj.all", False) for k in range(4)]
    features = marked_word_features(model, vocab, examples, batch_size=3)
    words, lengths = encode_sentences([sentence_tokens(tokens)], vocab)
    layers = model.layers(words, lengths)
    for k in range(4):
        assert torch.allclose(features[:, k], layers[:, 0, k + 1], atol=1e-6)
    with pytest.raises(ValueError, match="at least one example"):
        marked_word_features(model, vocab, [])


def test_probes_learn_the_informative_layer():
    torch.manual_seed(0)
    labels = torch.randint(0, 3, (300,))
    noise = torch.randn(3, 300, 4)
    noise[1, :, 0] += 4.0 * labels  # only layer 1 carries the label
    on_layer = {
        j: probe_accuracy(train_probe(noise, labels, 3, j), noise, labels) for j in range(3)
    }
    assert on_layer[1] > 0.9 and on_layer[0] < 0.6 and on_layer[2] < 0.6
    probe = train_probe(noise, labels, 3, None, steps=300)
    assert probe_accuracy(probe, noise, labels) > 0.9
    assert int(probe.mix.weights().argmax()) == 1  # the mix puts its weight on layer 1
    with pytest.raises(ShapeMismatch, match="labels"):
        train_probe(noise, labels[:10], 3, 0)


def test_mean_pairwise_cosine():
    v = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    assert mean_pairwise_cosine(v) == pytest.approx(1 / 3)
    assert mean_pairwise_cosine(torch.ones(4, 3)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        mean_pairwise_cosine(torch.ones(1, 3))


# ----------------------------------------------------------------------------------------------
# course.viz.elmo


RESULTS = {
    "pos": {
        "accuracy": {"token layer": 0.8, "layer 1": 0.85, "layer 2 (top)": 0.83, "mix": 0.86},
        "weights": [0.2, 0.5, 0.3],
        "baseline": 0.44,
        "baseline_name": "majority class",
    }
}


def test_layer_choice_figure_and_errors():
    fig = plot_layer_choice(RESULTS)
    left, right = fig.axes
    assert [round(p.get_height(), 3) for p in left.patches] == [0.8, 0.85, 0.83, 0.86]
    assert [round(p.get_height(), 2) for p in right.patches] == [0.2, 0.5, 0.3]
    with pytest.raises(KeyError, match="task: expected one of"):
        plot_layer_choice(RESULTS, "nope")
    with pytest.raises(ValueError, match="missing"):
        plot_layer_choice({"pos": {"accuracy": {}}})


def test_similarity_figure_and_errors():
    sims = [np.eye(3), np.ones((3, 3))]
    fig = plot_similarity_by_layer(sims, ["a", "b", "c"], ["type", "layer 1"])
    assert len(fig.axes) == 3  # two heatmaps and a colour bar
    with pytest.raises(ValueError, match="one matrix per layer name"):
        plot_similarity_by_layer(sims, ["a", "b", "c"], ["type"])
    with pytest.raises(ValueError, match=r"expected a \(2, 2\) matrix"):
        plot_similarity_by_layer(sims, ["a", "b"], ["type", "layer 1"])


def test_interact_layer_choice_offers_every_task_and_redraws():
    import matplotlib.pyplot as plt

    results = {**RESULTS, "supersense": {**RESULTS["pos"], "weights": [0.1, 0.2, 0.7]}}
    before = len(plt.get_fignums())
    shown = interact_layer_choice(results)
    (menu,) = [c for c in shown.widget.children if type(c).__name__ == "Dropdown"]
    assert list(menu.options) == ["pos", "supersense"] and menu.value == "pos"
    assert len(plt.get_fignums()) == before + 1  # drawn once with the default task
    menu.value = "supersense"
    assert len(plt.get_fignums()) == before + 2
    weights = [round(p.get_height(), 2) for p in plt.gcf().axes[1].patches]
    assert weights == [0.1, 0.2, 0.7]
    plt.close("all")


def test_probe_standardises_each_layer_and_reads_one_layer_or_the_mix():
    features = torch.randn(3, 50, 4) * torch.tensor([1.0, 10.0, 100.0])[:, None, None] + 5.0
    probe = Probe(features, n_classes=2, layer=2)
    z = (features - probe.mean) / probe.std
    assert torch.allclose(z.mean(dim=1), torch.zeros(3, 4), atol=1e-4)
    assert torch.allclose(probe(features), probe.classifier(z[2]), atol=1e-5)
    assert Probe(features, 2, None).mix is not None and probe.mix is None
    with pytest.raises(ShapeMismatch, match=r"\(L\+1, N, F\)"):
        Probe(features[0], 2, 0)
