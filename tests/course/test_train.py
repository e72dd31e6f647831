"""Tests for course.train (the training loop, the language-model trainer) and course.analysis.lm
(bits per character, n-gram baselines, sampling)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from course import train as train_module
from course.analysis.lm import bits_per_char, ngram_bits_per_char, ngram_log_probs, sample
from course.data.chars import CharVocab, random_windows
from course.models.recurrent import CharRNN
from course.train import TrainingHistory, fit, next_token_loss, train_language_model
from tests.messages import raises

pytestmark = pytest.mark.usefixtures("one_thread_for_the_module")  # tests/conftest.py

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
    with raises(ValueError, "optimizer", "'sgd'", "'rmsprop'"):
        train_language_model(model, ids, optimizer="rmsprop", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="clip_norm"):
        train_language_model(model, ids, clip_norm=0.0, progress=False)
    with raises(ValueError, "train_ids", r"1 dimensions \(N,\)", r"\(10, 10\)"):
        train_language_model(model, ids.view(10, 10), progress=False)
    with raises(TypeError, "train_ids", "integer", "float32"):
        train_language_model(model, ids.float(), progress=False)


# -- fit: the one loop, with any loss and any batches --------------------------------------------


class Line(nn.Module):
    """y = w x: one parameter, so every number of a step can be worked out by hand."""

    def __init__(self, w: float = 0.0) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w))


def squared_error(model: Line, batch: tuple[float, float]) -> torch.Tensor:
    x, y = batch
    return (model.w * x - y) ** 2


@pytest.mark.parametrize("clip_norm, w_after", [(None, 0.4), (0.5, 0.05)])
def test_fit_takes_one_sgd_step_that_can_be_computed_by_hand(clip_norm, w_after):
    model = Line(0.0)
    history = fit(
        model,
        squared_error,
        [(1.0, 2.0)],
        steps=1,
        optimizer="sgd",
        lr=0.1,
        clip_norm=clip_norm,
        progress=False,
    )
    # loss (0 - 2)^2 = 4, gradient 2 (w x - y) x = -4: w = 0 + 0.1 * 4 unclipped, and
    # 0 + 0.1 * 0.5 with the gradient clipped to norm 0.5
    assert history.losses == [4.0]
    assert history.grad_norms == [4.0]  # measured once, before clipping
    assert model.w.item() == pytest.approx(w_after)
    assert history.steps == 1 and history.stopped_by == "steps"


def test_fit_records_extra_logged_values_and_stops_when_the_batches_run_out():
    def loss_and_logs(model, batch):
        loss = squared_error(model, batch)
        return loss, {"error": model.w * batch[0] - batch[1], "x": batch[0]}  # tensor, float

    history = fit(
        Line(),
        loss_and_logs,
        [(1.0, 1.0), (2.0, 0.0), (3.0, 1.0)],
        steps=10,
        optimizer="sgd",
        lr=0.0,
        progress=False,
    )
    assert history.stopped_by == "data" and history.steps == 3
    assert history.logs == {"error": [-1.0, 0.0, -1.0], "x": [1.0, 2.0, 3.0]}
    assert "used up the batches after 3 steps" in history.summary()


def test_fit_accepts_an_optimizer_and_a_learning_rate_schedule():
    model = Line(0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rates = []

    def loss_fn(model, batch):
        rates.append(optimizer.param_groups[0]["lr"])
        return squared_error(model, batch)

    fit(
        model,
        loss_fn,
        [(0.0, 0.0)] * 4,
        steps=4,
        optimizer=optimizer,
        lr_schedule=lambda step: (step + 1) / 4,
        progress=False,
    )
    assert rates == pytest.approx([0.025, 0.05, 0.075, 0.1])  # a warm-up to the initial lr


def test_fit_rejects_bad_arguments():
    for kwargs, message in (
        ({"steps": -1}, ("steps", "non-negative", "-1")),
        ({"steps": 1, "budget_seconds": -2.0}, ("budget_seconds", "non-negative")),
        ({"steps": 1, "clip_norm": 0.0}, ("clip_norm", "positive")),
        ({"steps": 1, "optimizer": "adagrad"}, ("optimizer", "'adam'", "'sgd'")),
    ):
        with raises(ValueError, *message):
            fit(Line(), squared_error, [(1.0, 1.0)], progress=False, **kwargs)


def test_next_token_loss_is_the_mean_cross_entropy_of_the_shifted_ids():
    model = Uniform(4)
    x, y = torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long)
    assert next_token_loss(model, (x, y)).item() == pytest.approx(math.log(4))


def test_random_windows_is_an_endless_reproducible_stream_checked_at_once():
    ids = torch.arange(50)
    first = [next(random_windows(ids, 3, 5, seed=2)) for _ in range(2)]
    torch.testing.assert_close(first[0], first[1])
    stream = random_windows(ids, 3, 5, seed=2)
    x, y = next(stream)
    assert x.shape == y.shape == (3, 5) and torch.equal(y, x + 1)
    assert not torch.equal(next(stream)[0], x)  # the next batch is another draw
    with raises(ValueError, "ids", r"seq_len \+ 1 = 51", "got 50"):
        random_windows(ids, 3, 50)  # raised here, not at the first batch


# -- a run that stops early ends calmly ----------------------------------------------------------


class Bars:
    """Stands in for tqdm.auto inside course.train and keeps the bars it makes."""

    def __init__(self, make):
        self.make, self.made = make, []

    def __call__(self, *args, **kwargs):
        self.made.append(self.make(*args, **kwargs))
        return self.made[-1]


def slow_loss(model, batch):
    import time

    time.sleep(0.02)
    return squared_error(model, batch)


def endless():
    while True:
        yield (1.0, 1.0)


def test_a_budget_stopped_run_ends_with_a_full_text_bar_and_one_calm_line(monkeypatch, capsys):
    import io

    from tqdm.std import tqdm as text_tqdm

    screen = io.StringIO()
    bars = Bars(lambda *a, **k: text_tqdm(*a, **k, file=screen))
    monkeypatch.setattr(train_module, "tqdm", bars)
    history = fit(Line(), slow_loss, endless(), steps=10_000, budget_seconds=0.2, lr=0.0)
    assert history.stopped_by == "budget" and 0 < history.steps < 10_000
    (bar,) = bars.made
    assert bar.n == bar.total == history.steps  # the bar ends full, at the steps done
    last_frame = screen.getvalue().split("\r")[-1]
    assert f"{history.steps}/{history.steps}" in last_frame and "100%" in last_frame
    printed = capsys.readouterr().out
    assert printed == f"stopped at the 0.2 s budget after {history.steps:,} steps\n"


def test_a_budget_stopped_run_leaves_the_notebook_bar_green_not_red(monkeypatch, capsys):
    from tqdm.notebook import tqdm as notebook_tqdm

    bars = Bars(notebook_tqdm)
    monkeypatch.setattr(train_module, "tqdm", bars)
    history = fit(Line(), slow_loss, endless(), steps=10_000, budget_seconds=0.1, lr=0.0)
    (bar,) = bars.made
    _, widget, _ = bar.container.children
    assert history.stopped_by == "budget"
    assert widget.bar_style == "success"  # tqdm paints it "danger" (red) when n < total
    assert widget.value == widget.max == history.steps
    assert capsys.readouterr().out.endswith(
        f"stopped at the 0.1 s budget after {history.steps:,} steps\n"
    )


def test_a_run_that_fails_keeps_the_red_bar(monkeypatch):
    from tqdm.notebook import tqdm as notebook_tqdm

    bars = Bars(notebook_tqdm)
    monkeypatch.setattr(train_module, "tqdm", bars)

    def fails_at_the_third_batch(model, batch):
        if batch[0] > 2:
            raise RuntimeError("bad batch")
        return squared_error(model, batch)

    with pytest.raises(RuntimeError, match="bad batch"):
        fit(Line(), fails_at_the_third_batch, [(1.0, 0.0), (2.0, 0.0), (3.0, 0.0)], steps=5)
    (bar,) = bars.made
    assert bar.n == 2 and bar.total == 5  # not completed: this stop was not on purpose
    assert bar.container.children[1].bar_style == "danger"


def test_a_diverged_run_says_so_plainly_and_its_bar_ends_full(monkeypatch, capsys):
    import io

    from tqdm.std import tqdm as text_tqdm

    bars = Bars(lambda *a, **k: text_tqdm(*a, **k, file=io.StringIO()))
    monkeypatch.setattr(train_module, "tqdm", bars)

    def blows_up(model, batch):
        return squared_error(model, batch) * (float("inf") if batch[0] > 2 else 1.0)

    history = fit(Line(), blows_up, [(1.0, 0.0), (2.0, 0.0), (3.0, 0.0)], steps=5, lr=0.0)
    assert history.stopped_by == "diverged" and history.steps == 2
    assert len(history.losses) == 3 and len(history.grad_norms) == 2
    (bar,) = bars.made
    assert bar.n == bar.total == 2
    printed = capsys.readouterr().out
    assert printed.startswith("diverged: the loss became nan at step 3, so training stopped")
    assert "after 2 steps" in printed


def test_a_complete_run_prints_its_steps_and_time(capsys):
    history = fit(Line(), squared_error, [(1.0, 1.0)] * 3, steps=3, lr=0.0)
    assert history.summary() == f"3 steps in {history.seconds:.1f} s"
    assert capsys.readouterr().out.endswith(history.summary() + "\n")


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
    # the table behind it: each row a distribution, p(1|0) = 2 / 5 and p(1|1) = 1 / 3 as above
    table = ngram_log_probs(train, 3, n=2).exp()
    assert table.shape == (3, 3) and torch.allclose(
        table.sum(1), torch.ones(3, dtype=torch.float64)
    )
    assert table[0, 1].item() == pytest.approx(2 / 5) and table[1, 1].item() == pytest.approx(1 / 3)
    assert ngram_log_probs(train, 2, n=1).exp().tolist() == pytest.approx([3 / 5, 2 / 5])
    with pytest.raises(ValueError, match="n: expected 1"):
        ngram_log_probs(train, 2, n=3)


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
    with raises(ValueError, "vocab_size", "got 2", "up to 2"):
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
    with raises(ValueError, "temperature", "positive", "got 0"):
        sample(model, pattern_vocab, "a", 5, temperature=0)
    with pytest.raises(ValueError, match="length"):
        sample(model, pattern_vocab, "a", -1)
    assert sample(model, pattern_vocab, "abc", 0) == "abc"
