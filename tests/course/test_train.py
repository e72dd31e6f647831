"""Tests for course.train (the training loop, the language-model trainer) and course.analysis.lm
(bits per character, n-gram baselines, sampling)."""

from __future__ import annotations

import inspect
import itertools
import math

import pytest
import torch
from torch import nn

from course import train as train_module
from course.analysis.lm import bits_per_char, ngram_bits_per_char, sample
from course.data.code import CharVocab, random_windows
from course.models.recurrent import CharRNN
from course.train import TrainingHistory, fit, next_token_loss, train_language_model

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
    with pytest.raises(ValueError, match="optimizer: expected 'adam' or 'sgd' .*, got 'rmsprop'"):
        train_language_model(model, ids, optimizer="rmsprop", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="clip_norm"):
        train_language_model(model, ids, clip_norm=0.0, progress=False)
    with pytest.raises(ValueError, match=r"train_ids: expected 1 dimensions \(N,\), got 2"):
        train_language_model(model, ids.view(10, 10), progress=False)
    with pytest.raises(TypeError, match="train_ids: expected a signed integer"):
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
        ({"steps": -1}, "steps: expected a non-negative number, got -1"),
        ({"steps": 1, "budget_seconds": -2.0}, "budget_seconds: expected a non-negative"),
        ({"steps": 1, "clip_norm": 0.0}, "clip_norm: expected a positive number or None"),
        ({"steps": 1, "optimizer": "adagrad"}, "optimizer: expected 'adam' or 'sgd'"),
    ):
        with pytest.raises(ValueError, match=message):
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
    with pytest.raises(ValueError, match="need at least seq_len \\+ 1 = 51 ids"):
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


# -- recording and replaying runs (COURSE_FIT_RECORD / COURSE_FIT_REPLAY) ----------------------


def _dropout_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1))


def _numbered_batches():
    """Endless batches that say which one they are, from a generator of their own."""
    generator = torch.Generator().manual_seed(1)
    for n in itertools.count():
        yield n, torch.randn(8, 3, generator=generator), torch.randn(8, 1, generator=generator)


def _counting_loss(calls: list, scale: float = 1.0):
    def loss_fn(model, batch):
        calls.append(batch[0])
        _, x, y = batch
        return scale * ((model(x) - y) ** 2).mean()

    return loss_fn


def _run(calls, *, scale=1.0, lr=1e-2, steps=6):
    model = _dropout_model()
    batches = _numbered_batches()
    history = fit(model, _counting_loss(calls, scale), batches, steps=steps, lr=lr, desc="probe")
    return model, history, next(batches)[0], torch.rand(3)


def test_a_recorded_run_is_replayed_to_the_same_end_without_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path))
    trained_calls = []
    trained, history, next_batch, draws = _run(trained_calls)
    trained_line = capsys.readouterr().out.splitlines()[-1]
    assert trained_calls == [0, 1, 2, 3, 4, 5] and len(list(tmp_path.glob("*.pt"))) == 1

    monkeypatch.delenv(train_module.RECORD_VARIABLE)
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))
    replay_calls = []
    replayed, replayed_history, replayed_next, replayed_draws = _run(replay_calls)
    assert replay_calls == [0]  # not trained: the loss of the first batch, checked, and no more
    assert replayed_history == history
    replayed_state = replayed.state_dict()
    for name, value in trained.state_dict().items():
        assert torch.equal(value, replayed_state[name]), name
    assert replayed.training
    assert replayed_next == next_batch == 6  # the batches the run took were consumed
    assert torch.equal(replayed_draws, draws)  # the random state after the run is the same
    assert capsys.readouterr().out.splitlines()[-1] == trained_line


@pytest.mark.parametrize(
    "change", [{"scale": 2.0}, {"lr": 2e-2}, {"steps": 5}], ids=["closure", "setting", "steps"]
)
def test_a_run_that_starts_from_anything_else_is_trained(tmp_path, monkeypatch, change):
    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path))
    _run([])
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))
    calls = []
    _run(calls, **change)
    assert calls == list(range(change.get("steps", 6)))
    assert len(list(tmp_path.glob("*.pt"))) == 2  # recorded as a run of its own


def test_a_run_from_something_without_a_fingerprint_is_neither_recorded_nor_replayed(
    tmp_path, monkeypatch
):
    class Opaque:
        pass

    def loss_fn(model, batch):
        return squared_error(model, batch[:2])

    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path))
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))
    history = fit(Line(), loss_fn, [(1.0, 1.0, Opaque())] * 3, steps=3, progress=False)
    assert history.steps == 3 and not list(tmp_path.iterdir())


class Pick(nn.Module):
    """Reads one of two inputs, chosen by a plain attribute that is not a weight."""

    def __init__(self, layer: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = layer
        self.linear = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x[self.layer])


def _pick_run(layer: int, calls: list) -> TrainingHistory:
    def loss_fn(model, batch):
        calls.append(1)
        x, y = batch
        return ((model(x) - y) ** 2).mean()

    generator = torch.Generator().manual_seed(0)
    batch = (torch.randn(2, 8, 3, generator=generator), torch.randn(8, 1, generator=generator))
    return fit(Pick(layer), loss_fn, [batch] * 4, steps=4, lr=0.1, progress=False)


def test_a_model_that_differs_only_in_a_plain_attribute_is_trained(tmp_path, monkeypatch):
    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path))
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))
    first = _pick_run(0, [])
    calls = []
    second = _pick_run(1, calls)
    assert len(calls) == 4 and second.losses != first.losses
    assert len(list(tmp_path.glob("*.pt"))) == 2


def test_a_recorded_run_whose_first_loss_differs_is_not_replayed(tmp_path, monkeypatch):
    """Even where two runs' keys agree, the first batch's loss tells them apart."""
    monkeypatch.setattr(train_module, "_run_key", lambda *args: "one-key-for-all")
    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path))
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))
    _pick_run(0, [])
    calls = []
    _pick_run(1, calls)
    assert len(calls) == 1 + 4  # the check's loss, which differed, then four training steps


def test_the_build_records_and_the_students_lab_replays_under_these_names(tmp_path, monkeypatch):
    from course import fit_records
    from tools import build, student_lab

    # one definition, imported by the training loop, the build and the lab (torch-free)
    assert build.RECORD_VARIABLE is train_module.RECORD_VARIABLE is fit_records.RECORD_VARIABLE
    assert student_lab.REPLAY_VARIABLE is train_module.REPLAY_VARIABLE
    assert fit_records.REPLAY_VARIABLE == "COURSE_FIT_REPLAY"
    monkeypatch.setenv(train_module.RECORD_VARIABLE, "/somewhere")  # never passed on to a lab
    installation = student_lab.Installation(tmp_path / "course", tmp_path / "venv", 0.0, 0.0)
    plain = student_lab.lab_environment(installation, tmp_path / "home")
    assert not any(name.startswith("COURSE_FIT_") for name in plain)
    replaying = student_lab.lab_environment(installation, tmp_path / "home", replay=build.FITS)
    assert replaying[train_module.REPLAY_VARIABLE] == str(build.FITS)


# -- remembered evaluations ------------------------------------------------------------------


def _evaluation(calls: list):
    @train_module.remembered
    def heldout(model: nn.Module, x: torch.Tensor, *, scale: float = 1.0) -> dict:
        calls.append(scale)
        torch.rand(5)  # moves the random state, as sampling would
        with torch.no_grad():
            out = model(x) * scale
        return {"mean": out.mean().item(), "outputs": out, "sizes": (len(x), [1, 2])}

    return heldout


def test_a_recorded_evaluation_is_replayed_with_its_result_and_random_state(tmp_path, monkeypatch):
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))
    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path / "lecture"))  # as the build
    calls = []
    torch.manual_seed(0)
    first = _evaluation(calls)(_dropout_model(), x)
    after = torch.rand(3)
    assert calls == [1.0] and len(list((tmp_path / "lecture").glob("call-*.pt"))) == 1

    monkeypatch.delenv(train_module.RECORD_VARIABLE)
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))  # as the lab: the folders
    calls = []
    torch.manual_seed(0)
    again = _evaluation(calls)(_dropout_model(), x)
    assert calls == []  # not evaluated again
    assert again["mean"] == first["mean"] and again["sizes"] == (4, [1, 2])
    assert torch.equal(again["outputs"], first["outputs"])
    assert torch.equal(torch.rand(3), after)  # the random state the recorded call left

    for changed in ({"scale": 2.0}, {"x": x + 1}, {"seed": 1}):  # anything else is evaluated
        calls = []
        torch.manual_seed(changed.get("seed", 0))
        _evaluation(calls)(_dropout_model(), changed.get("x", x), scale=changed.get("scale", 1.0))
        assert len(calls) == 1, changed


def test_an_evaluation_is_itself_without_the_variables_or_a_fingerprint(tmp_path, monkeypatch):
    class Opaque:
        pass

    calls = []
    heldout = _evaluation(calls)
    heldout(_dropout_model(), torch.ones(2, 3))
    assert calls == [1.0] and not list(tmp_path.iterdir())
    assert heldout.__name__ == "heldout" and "scale" in str(inspect.signature(heldout))

    monkeypatch.setenv(train_module.RECORD_VARIABLE, str(tmp_path))
    monkeypatch.setenv(train_module.REPLAY_VARIABLE, str(tmp_path))

    @train_module.remembered
    def opaque(thing: Opaque) -> int:
        calls.append("opaque")
        return 1

    assert opaque(Opaque()) == 1 and opaque(Opaque()) == 1
    assert calls[1:] == ["opaque", "opaque"] and not list(tmp_path.iterdir())


def test_the_lectures_evaluations_are_remembered():
    from course.analysis import bert, elmo, generation, lm

    for function in (
        bert.heldout_pretraining_figures,
        bert.marked_word_states,
        bert.word_task_accuracy,
        elmo.heldout_perplexity,
        elmo.marked_word_features,
        generation.generation_seconds,
        lm.windowed_bits_per_char,
    ):
        assert function.__wrapped__.__name__ == function.__name__, function
        assert "def " + function.__name__ in inspect.getsource(function)
