"""Tests for course.train: the training loop, bits per character, n-gram baselines, sampling."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from course.data.code import CharVocab
from course.models.recurrent import CharRNN
from course.train import (
    TrainingHistory,
    bits_per_char,
    ngram_bits_per_char,
    sample,
    train_language_model,
)

PATTERN = "abcd" * 200


@pytest.fixture(scope="module")
def pattern_vocab() -> CharVocab:
    return CharVocab.from_text(PATTERN)


@pytest.fixture(scope="module")
def trained(pattern_vocab):
    """A tiny RNN trained on a repeating pattern, and its history."""
    torch.manual_seed(0)
    model = CharRNN(len(pattern_vocab), 16)
    ids = pattern_vocab.encode(PATTERN)
    history = train_language_model(
        model, ids, steps=120, batch_size=8, seq_len=12, lr=2e-2, seed=0, progress=False
    )
    return model, history


class Uniform(nn.Module):
    """Equal logits for K ids: a model that knows nothing."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, ids, state=None):
        return torch.zeros(*ids.shape, self.vocab_size), state


def test_training_reduces_the_loss_on_a_repeating_pattern(trained):
    _, history = trained
    assert isinstance(history, TrainingHistory)
    assert history.steps == 120 and history.stopped_by == "steps"
    assert len(history.losses) == len(history.grad_norms) == 120
    assert history.losses[0] > 1.0  # about ln 5 at the start
    assert sum(history.losses[-10:]) / 10 < 0.2 * history.losses[0]
    assert history.seconds > 0


def test_training_stops_after_the_requested_steps():
    model = CharRNN(5, 4)
    history = train_language_model(
        model, torch.randint(0, 5, (200,)), steps=7, batch_size=2, seq_len=5, progress=False
    )
    assert history.steps == 7 and len(history.losses) == 7 and history.stopped_by == "steps"


def test_training_respects_the_wall_clock_budget():
    model = CharRNN(5, 32)
    ids = torch.randint(0, 5, (2000,))
    none = train_language_model(model, ids, steps=100, budget_seconds=0.0, progress=False)
    assert none.steps == 0 and none.losses == [] and none.stopped_by == "budget"
    some = train_language_model(
        model, ids, steps=10**6, batch_size=4, seq_len=8, budget_seconds=0.3, progress=False
    )
    assert some.stopped_by == "budget"
    assert 0 < some.steps < 10**6
    assert some.seconds < 0.3 + 1.0  # one step's worth of slack, and more


def test_training_is_reproducible_with_a_seed():
    ids = torch.randint(0, 6, (300,), generator=torch.Generator().manual_seed(0))
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = CharRNN(6, 8)
        runs.append(train_language_model(model, ids, steps=5, seed=3, progress=False).losses)
    assert runs[0] == runs[1]


def test_clipping_bounds_the_update_and_the_history_records_the_norm_before_clipping():
    torch.manual_seed(0)
    model = CharRNN(5, 8)
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    history = train_language_model(
        model,
        torch.randint(0, 5, (100,)),
        steps=1,
        lr=1.0,
        clip_norm=1e-3,
        optimizer="sgd",
        progress=False,
    )
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert history.grad_norms[0] > 1e-2  # the raw gradient is much larger than the threshold
    assert (after - before).norm().item() == pytest.approx(1e-3, rel=1e-3)  # lr * clipped norm


def test_training_stops_at_a_non_finite_loss():
    model = CharRNN(5, 4)
    with torch.no_grad():
        model.readout.bias.fill_(float("nan"))
    history = train_language_model(model, torch.randint(0, 5, (100,)), steps=5, progress=False)
    assert history.stopped_by == "diverged" and history.steps == 0
    assert math.isnan(history.losses[-1])


def test_training_rejects_bad_arguments():
    model = CharRNN(5, 4)
    ids = torch.randint(0, 5, (100,))
    with pytest.raises(ValueError, match="optimizer: expected 'adam' or 'sgd', got 'rmsprop'"):
        train_language_model(model, ids, optimizer="rmsprop", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="clip_norm"):
        train_language_model(model, ids, clip_norm=0.0, progress=False)
    with pytest.raises(ValueError, match=r"train_ids: expected 1 dimensions \(N,\), got 2"):
        train_language_model(model, ids.view(10, 10), progress=False)
    with pytest.raises(TypeError, match="train_ids: expected a signed integer"):
        train_language_model(model, ids.float(), progress=False)


def test_bits_per_char_of_a_uniform_model_is_log2_k():
    ids = torch.randint(0, 8, (101,))
    assert bits_per_char(Uniform(8), ids) == pytest.approx(3.0)


def test_bits_per_char_carries_the_state_across_chunks_and_streams():
    torch.manual_seed(0)
    model = CharRNN(6, 5)
    ids = torch.randint(0, 6, (41,))
    with torch.no_grad():
        logits, _ = model(ids[None, :-1])  # one pass over the whole stream
        whole = nn.functional.cross_entropy(logits[0], ids[1:]).item() / math.log(2)
    assert bits_per_char(model, ids, batch_size=1, seq_len=7) == pytest.approx(whole, rel=1e-5)
    # four streams of 10 predictions each, read independently
    pieces = []
    for s in range(4):
        x, y = ids[10 * s : 10 * s + 10], ids[10 * s + 1 : 10 * s + 11]
        with torch.no_grad():
            pieces.append(nn.functional.cross_entropy(model(x[None])[0][0], y).item())
    expected = sum(pieces) / 4 / math.log(2)
    assert bits_per_char(model, ids, batch_size=4, seq_len=3) == pytest.approx(expected, rel=1e-5)


def test_bits_per_char_restores_training_mode_and_rejects_bad_input(trained, pattern_vocab):
    model, _ = trained
    model.train()
    value = bits_per_char(model, pattern_vocab.encode(PATTERN[:101]))
    assert model.training
    assert value < 0.5  # the pattern is learnt
    with pytest.raises(ValueError, match="need at least 2 ids"):
        bits_per_char(model, torch.tensor([1]))
    with pytest.raises(ValueError, match=r"ids: expected 1 dimensions"):
        bits_per_char(model, torch.ones(2, 3, dtype=torch.long))


def test_ngram_baselines_on_a_tiny_example_computed_by_hand():
    train, val = torch.tensor([0, 0, 1]), torch.tensor([0, 1, 1])
    # unigram, add-1: p(1) = (1 + 1) / (3 + 2); val[1:] = [1, 1]
    assert ngram_bits_per_char(train, val, n=1) == pytest.approx(-math.log2(2 / 5))
    # add-0.5: p(1) = 1.5 / (3 + 1)
    assert ngram_bits_per_char(train, val, n=1, k=0.5) == pytest.approx(-math.log2(0.375))
    # bigram, add-1: p(1|0) = (1 + 1) / (2 + 2), p(1|1) = (0 + 1) / (0 + 2)
    assert ngram_bits_per_char(train, val, n=2) == pytest.approx(1.0)
    # a larger vocabulary spreads the smoothing mass: p(1|0) = 2 / 5, p(1|1) = 1 / 3
    expected = (-math.log2(2 / 5) - math.log2(1 / 3)) / 2
    assert ngram_bits_per_char(train, val, n=2, vocab_size=3) == pytest.approx(expected)


def test_ngram_baselines_accept_text_and_share_the_unknown_id():
    # vocabulary from "aab": unknown, a, b (V = 3); counts 0, 2, 1 over N = 3
    assert ngram_bits_per_char("aab", "abb", n=1) == pytest.approx(math.log2(3))
    # "z" is unknown: p = (0 + 1) / 6
    assert ngram_bits_per_char("aab", "abz", n=1) == pytest.approx(
        (math.log2(3) + math.log2(6)) / 2
    )


def test_ngram_bigram_beats_unigram_on_structured_text():
    text = "the cat sat on the mat. " * 20
    assert ngram_bits_per_char(text, text, n=2) < ngram_bits_per_char(text, text, n=1)


def test_ngram_baselines_reject_bad_input():
    ids = torch.tensor([0, 1, 2])
    with pytest.raises(ValueError, match="n: expected 1 .* or 2 .*, got 3"):
        ngram_bits_per_char(ids, ids, n=3)
    with pytest.raises(ValueError, match="k: expected a positive"):
        ngram_bits_per_char(ids, ids, k=0)
    with pytest.raises(TypeError, match="not a mix"):
        ngram_bits_per_char("abc", ids)
    with pytest.raises(ValueError, match="vocab_size: got 2, but the ids go up to 2"):
        ngram_bits_per_char(ids, ids, vocab_size=2)
    with pytest.raises(ValueError, match="val: need at least 2"):
        ngram_bits_per_char(ids, ids[:1])
    with pytest.raises(TypeError, match="val: expected a signed integer"):
        ngram_bits_per_char(ids, ids.float())


def test_sample_continues_a_learnt_pattern_reproducibly(trained, pattern_vocab):
    model, _ = trained
    text = sample(model, pattern_vocab, "ab", 10, temperature=0.1, seed=0)
    assert text == "abcdabcdabcd"
    hot = [sample(model, pattern_vocab, "a", 30, temperature=5.0, seed=s) for s in (1, 1, 2)]
    assert hot[0] == hot[1] != hot[2]
    assert all(len(t) == 31 and CharVocab.UNK_CHAR not in t for t in hot)


def test_sample_rejects_bad_arguments(trained, pattern_vocab):
    model, _ = trained
    with pytest.raises(ValueError, match="prompt"):
        sample(model, pattern_vocab, "", 5)
    with pytest.raises(ValueError, match="temperature: expected a positive number, got 0"):
        sample(model, pattern_vocab, "a", 5, temperature=0)
    with pytest.raises(ValueError, match="length"):
        sample(model, pattern_vocab, "a", -1)
    assert sample(model, pattern_vocab, "abc", 0) == "abc"
