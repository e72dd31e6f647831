"""Measures of generated text (course.analysis.generation) on inputs with known answers, and
XLNet's permutation factorisation (course.analysis.permutation_lm) on an exact joint table."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch.nn import functional as F

from course.analysis.generation import (
    continuation_log_likelihood,
    distinct_n,
    generation_seconds,
    known_word_share,
    ngrams,
    repetition_rate,
    words_of,
)
from course.analysis.lm import windowed_bits_per_char
from course.analysis.permutation_lm import factorised_log_likelihood, permutation_masks
from course.models.gpt import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("one_thread")


def test_ngrams_distinct_n_and_repetition_on_known_inputs():
    assert ngrams("abcab", 2) == [("a", "b"), ("b", "c"), ("c", "a"), ("a", "b")]
    assert ngrams([1, 2], 3) == []
    texts = [["the", "cat", "the", "cat"], ["the", "dog"]]
    # Unigrams: the, cat, the, cat, the, dog -> 3 distinct of 6.
    assert distinct_n(texts, 1) == 3 / 6
    # Bigrams: (the cat), (cat the), (the cat) | (the dog) -> 3 distinct of 4.
    assert distinct_n(texts, 2) == 3 / 4
    # Repetition within each text: unigrams 2 of 4 repeat in the first, 0 of 2 in the second.
    assert repetition_rate(texts, 1) == 1 - (2 + 2) / 6
    assert repetition_rate(texts, 2) == 1 - (2 + 1) / 4
    loop = [[7, 8, 9] * 5]  # a generation stuck in a loop of 3
    assert repetition_rate(loop, 3) == 1 - 3 / 13 and distinct_n(loop, 3) == 3 / 13
    assert repetition_rate([list(range(10))], 2) == 0.0 and distinct_n([list(range(10))], 2) == 1
    # Across texts, distinct-n sees copies that repetition-n (within a text) does not.
    same = [[1, 2, 3], [1, 2, 3]]
    assert distinct_n(same, 1) == 0.5 and repetition_rate(same, 1) == 0.0


def test_metric_errors_are_clear():
    with pytest.raises(ValueError, match="n: expected an integer >= 1"):
        distinct_n([[1, 2]], 0)
    with pytest.raises(ValueError, match="no sequence has 3 tokens"):
        repetition_rate([[1, 2], [3]], 3)
    with pytest.raises(TypeError, match="a list of sequences"):
        distinct_n("a text, not a list of texts", 1)
    with pytest.raises(TypeError, match="a list of sequences"):
        distinct_n(torch.tensor([1, 2, 3]), 1)  # type: ignore[arg-type]


def test_known_word_share_counts_spelled_words_and_leaves_out_each_texts_last():
    # Runs of letters, lower-cased: digits, underscores and punctuation split words.
    assert words_of("The cat's 2nd_try, ÜBER-naïve!") == [
        "the",
        "cat",
        "s",
        "nd",
        "try",
        "über",
        "naïve",
    ]
    vocabulary = {"the", "cat", "sat", "on", "a", "dog"}
    texts = ["The cat sat on the ma", "a dog ran fas"]  # the last words, cut, are left out
    # the, cat, sat, on, the: 5 known of 5; a, dog, ran: 2 of 3.
    assert known_word_share(texts, vocabulary) == 7 / 8
    assert known_word_share(["qqq zzz end"], vocabulary) == 0.0
    with pytest.raises(TypeError, match="a list of texts"):
        known_word_share("the cat sat", vocabulary)
    with pytest.raises(ValueError, match="no words to score"):
        known_word_share(["one", "12 34"], vocabulary)
    with pytest.raises(TypeError, match="expected a str"):
        words_of(b"bytes")  # type: ignore[arg-type]


class BigramLM(torch.nn.Module):
    """A 'language model' whose next-token probabilities are a fixed table row per token."""

    def __init__(self, probs: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("log_table", probs.log())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.log_table[ids] + 3.0  # logits up to a constant: (B, T, V)


def test_continuation_log_likelihood_on_a_known_model():
    probs = torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2]], dtype=torch.float64)
    model = BigramLM(probs).train()
    prompt = torch.tensor([[0, 1], [2, 2]])
    continuation = torch.tensor([[2, 0, 1], [0, 0, 0]])
    got = continuation_log_likelihood(model, prompt, continuation)
    expected = [
        math.log(0.8) + math.log(0.6) + math.log(0.25),  # 1 -> 2 -> 0 -> 1
        math.log(0.6) + math.log(0.5) + math.log(0.5),  # 2 -> 0 -> 0 -> 0
    ]
    assert torch.allclose(got, torch.tensor(expected, dtype=torch.float64), atol=1e-12)
    assert model.training  # put back
    with pytest.raises(ValueError, match="continuation: expected shape"):
        continuation_log_likelihood(model, prompt, continuation[:1])
    with pytest.raises(TypeError, match="prompt: expected a signed integer"):
        continuation_log_likelihood(model, prompt.float(), continuation)
    with pytest.raises(ValueError, match="at least one token"):
        continuation_log_likelihood(model, prompt[:, :0], continuation)


def test_windowed_bits_per_char_on_a_known_model():
    probs = torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2]], dtype=torch.float64)
    model = BigramLM(probs).train()
    ids = torch.tensor([0, 1, 2, 0, 0, 1, 2, 2])  # 7 predictions; windows of 3: 2 windows, 6
    bits = windowed_bits_per_char(model, ids, window=3, batch_size=1)
    pairs = [(0, 1), (1, 2), (2, 0), (0, 0), (0, 1), (1, 2)]  # the last, (2, 2), is left out
    expected = -sum(math.log2(probs[a, b]) for a, b in pairs) / 6
    assert abs(bits - expected) < 1e-12 and model.training
    whole = windowed_bits_per_char(model, ids, window=7)  # one window: all 7 predictions
    pairs = list(zip(ids[:-1].tolist(), ids[1:].tolist(), strict=True))
    assert abs(whole + sum(math.log2(probs[a, b]) for a, b in pairs) / 7) < 1e-12
    with pytest.raises(ValueError, match="need at least window"):
        windowed_bits_per_char(model, ids, window=8)
    with pytest.raises(ValueError, match="window and batch_size"):
        windowed_bits_per_char(model, ids, window=0)
    with pytest.raises(ValueError, match="ids: expected 1 dimensions"):
        windowed_bits_per_char(model, ids[None], window=2)


def test_a_gpt_scores_its_own_greedy_output_at_least_as_high_as_samples():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, max_len=16, d_model=16, num_layers=1, num_heads=2,
                          d_ff=32)).double()  # fmt: skip
    prompt = torch.tensor([[3, 4]])
    greedy = model.generate(prompt, 1, top_k=1)[:, 2:]
    sampled = model.generate(prompt.repeat(50, 1), 1, generator=torch.Generator().manual_seed(0))
    best = continuation_log_likelihood(model, prompt, greedy)
    others = continuation_log_likelihood(model, prompt.repeat(50, 1), sampled[:, 2:])
    assert bool((others <= best + 1e-12).all())  # one step: greedy is the most likely token
    assert bool((sampled[:, 2] != greedy[0, 0]).any())  # the samples are not all greedy's


def test_generation_seconds_reports_each_length():
    model = GPT(GPTConfig(vocab_size=20, max_len=16, d_model=16, num_layers=1, num_heads=2,
                          d_ff=32))  # fmt: skip
    for use_cache in (True, False):
        times = generation_seconds(model, [4, 2], use_cache=use_cache, prompt_length=3)
        assert [n for n, _ in times] == [4, 2] and all(s > 0 for _, s in times)
    assert model.training
    with pytest.raises(ValueError, match="lengths"):
        generation_seconds(model, [0], use_cache=True)
    with pytest.raises(ValueError, match="need 17 positions"):
        generation_seconds(model, [16], use_cache=True, prompt_length=2)
    with pytest.raises(ValueError, match="prompt_length"):
        generation_seconds(model, [2], use_cache=True, prompt_length=0)
    with pytest.raises(ValueError, match="repeats"):
        generation_seconds(model, [2], use_cache=True, repeats=0)


def test_generation_seconds_keeps_the_least_of_its_repeats(monkeypatch):
    from course.analysis import generation

    model = GPT(GPTConfig(vocab_size=20, max_len=16, d_model=16, num_layers=1, num_heads=2,
                          d_ff=32))  # fmt: skip
    clock = iter([0.0, 5.0, 10.0, 12.0, 20.0, 24.0])  # (start, end) of runs of 5, 2 and 4 s
    monkeypatch.setattr(generation.time, "perf_counter", lambda: next(clock))
    assert generation_seconds(model, [3], use_cache=True, repeats=3) == [(3, 2.0)]


# ----------------------------------------------------------------------------------------------
# XLNet: permutation factorisation


def test_permutation_masks_for_an_order():
    content, query = permutation_masks([2, 0, 1])  # predict position 2, then 0, then 1
    assert content.tolist() == [
        [True, False, True],  # position 0 (second in the order) sees 2 and itself
        [True, True, True],  # position 1 (last) sees everything
        [False, False, True],  # position 2 (first) sees itself only
    ]
    assert query.tolist() == [
        [False, False, True],
        [True, False, True],
        [False, False, False],  # the first in the order sees nothing: p(x_2) unconditioned
    ]
    assert torch.equal(content, query | torch.eye(3, dtype=torch.bool))
    natural_content, natural_query = permutation_masks(range(4))  # left to right: causal
    assert torch.equal(natural_content, torch.ones(4, 4, dtype=torch.bool).tril())
    assert torch.equal(natural_query, torch.ones(4, 4, dtype=torch.bool).tril(-1))
    for bad in ([0, 0, 1], [1, 2], []):
        with pytest.raises(ValueError, match="permutation"):
            permutation_masks(bad)


def test_every_order_factorises_the_same_likelihood():
    g = torch.Generator().manual_seed(0)
    joint = torch.rand(3, 3, 3, 3, generator=g, dtype=torch.float64)
    joint /= joint.sum()  # an exact distribution over 81 sequences of 4 tokens
    x = [2, 0, 1, 1]
    exact = math.log(float(joint[tuple(x)]))
    results = {order: factorised_log_likelihood(joint, x, order)
               for order in itertools.permutations(range(4))}  # fmt: skip
    for order, (total, terms) in results.items():
        assert abs(total - exact) < 1e-12, order
        assert len(terms) == 4 and all(t <= 0 for t in terms)
    # The terms themselves differ between orders: only their sum is the same.
    left, right = results[(0, 1, 2, 3)][1], results[(3, 2, 1, 0)][1]
    assert abs(left[0] - right[-1]) > 1e-3  # p(x_0) differs from p(x_0 | x_1, x_2, x_3)
    assert abs(left[0] - math.log(float(joint.sum((1, 2, 3))[2]))) < 1e-12  # p(x_0 = 2)
    with pytest.raises(ValueError, match="4 axes"):
        factorised_log_likelihood(joint, x[:3], (0, 1, 2))
    with pytest.raises(ValueError, match="sum to 1"):
        factorised_log_likelihood(joint * 2, x, (0, 1, 2, 3))
    with pytest.raises(ValueError, match="out of range"):
        factorised_log_likelihood(joint, [0, 0, 0, 3], (0, 1, 2, 3))
    zero = joint.clone()
    zero[tuple(x)] = 0.0
    with pytest.raises(ValueError, match="probability 0"):
        factorised_log_likelihood(zero / zero.sum(), x, (0, 1, 2, 3))


# ----------------------------------------------------------------------------------------------
# Figures


def test_figures_of_filters_generation_time_and_permutation_masks():
    import ipywidgets as widgets
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course.viz.generation import (
        EXAMPLE_TOKENS,
        example_logits,
        interact_sampling_filters,
        plot_generation_seconds,
        plot_permutation_masks,
        plot_sampling_filters,
    )

    z = example_logits()
    assert z.shape == (len(EXAMPLE_TOKENS),) and bool((z.diff() < 0).all())  # most likely first
    fig = plot_sampling_filters(top_k=3)
    blue = [bar.get_height() for bar in fig.axes[0].containers[1]]
    assert sum(h > 0 for h in blue) == 3 and abs(sum(blue) - 1) < 1e-9
    assert "3 of 10 tokens kept" in fig.axes[0].get_title()
    fig = plot_sampling_filters(torch.tensor([1.0, 1.0, 0.0]), top_p=0.5, tokens="abc")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b", "c"]
    assert "2 of 3 tokens kept" in fig.axes[0].get_title()  # the tie at the crossing is kept
    with pytest.raises(ValueError, match="tokens: expected 3 labels"):
        plot_sampling_filters(torch.zeros(3), tokens=["a"])
    with pytest.raises(ValueError, match=r"one distribution \(V,\)"):
        plot_sampling_filters(torch.zeros(2, 3))
    controls = interact_sampling_filters().widget.children
    assert sum(isinstance(c, (widgets.FloatSlider, widgets.IntSlider)) for c in controls) == 3
    fig = plot_generation_seconds([(8, 0.1), (4, 0.05)], [(4, 0.1), (8, 0.4)])
    assert [list(line.get_xdata()) for line in fig.axes[0].get_lines()] == [[4, 8], [4, 8]]
    with pytest.raises(ValueError, match="at least one"):
        plot_generation_seconds([], [(4, 0.1)])
    fig = plot_permutation_masks((1, 0))
    assert [ax.images[0].get_array().tolist() for ax in fig.axes] == [
        [[True, True], [False, True]],
        [[False, True], [False, False]],
    ]
    plt.close("all")


def test_the_model_sampling_explorer_shows_the_filtered_distribution_and_samples():
    import ipywidgets as widgets
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course.data.chars import CharVocab
    from course.models.gpt import GPT, GPTConfig
    from course.viz.generation import interact_model_samples, plot_model_samples

    vocab = CharVocab.from_text("abcdefgh .")
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=len(vocab), max_len=32, d_model=16, num_heads=2, d_ff=32))
    model.train()
    fig = plot_model_samples(model, vocab, "ab ", top_k=4, num_samples=2, length=5, shown=6)
    assert model.training  # the figure leaves the model's mode as it found it
    bars, text = fig.axes
    blue = [bar.get_height() for bar in bars.containers[1]]
    assert sum(h > 0 for h in blue) <= 4 and len(blue) == 6
    assert f"4 of {len(vocab)} kept" in bars.get_title()
    lines = [t.get_text() for t in text.texts]
    assert len(lines) == 2 and all(line.startswith(f"{i + 1}. …") for i, line in enumerate(lines))
    assert all(len(line) == len("1. …") + 5 for line in lines)
    again = plot_model_samples(model, vocab, "ab ", top_k=4, num_samples=2, length=5, shown=6)
    assert [t.get_text() for t in again.axes[1].texts] == lines  # the seed fixes the samples
    with pytest.raises(ValueError, match="num_samples, length and shown"):
        plot_model_samples(model, vocab, num_samples=0)
    controls = interact_model_samples(model, vocab, "ab ").widget.children
    assert sum(isinstance(c, (widgets.FloatSlider, widgets.IntSlider)) for c in controls) == 3
    plt.close("all")


def test_windowed_bits_per_char_starts_a_recurrent_model_afresh_in_each_window():
    from course.models.recurrent import CharLSTM

    torch.manual_seed(0)
    model = CharLSTM(7, 8, embedding_dim=4)
    ids = torch.randint(7, (13,))  # two windows of 6 predictions (the 13th id is not scored)
    nats = 0.0
    for start in (0, 6):
        x, y = ids[start : start + 6], ids[start + 1 : start + 7]
        with torch.no_grad():
            logits, _ = model(x[None])  # from a zero state
        nats += float(F.cross_entropy(logits[0], y, reduction="sum"))
    bits = windowed_bits_per_char(model, ids, window=6, batch_size=1)
    assert bits == pytest.approx(nats / 12 / math.log(2), rel=1e-6)
