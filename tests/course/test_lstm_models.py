"""Tests for the Lecture 2 additions: CharLSTM, SequenceTagger, the forget bias, the recall task,
and the gradient-flow measurements of course.analysis.gradients (figure: course.viz.gradients)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from course.analysis.gradients import cell_gradient_norms_by_distance
from course.analysis.lm import bits_per_char
from course.checks import assert_close
from course.data.recall import (
    RecallTask,
    recall_accuracy,
    recall_batch,
    recall_batches,
    recall_loss,
    train_recall,
)
from course.decoding import recurrent_step, sample
from course.models.recurrent import CharLSTM, CharRNN, SequenceTagger, set_forget_bias_
from course.viz.gradients import plot_cell_gradient_norms

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def hand_written_lstm(model: CharLSTM, ids: torch.Tensor):
    """The slide equations, one step at a time, with PyTorch's gate order (i, f, g, o)."""
    lstm = model.lstm
    H = model.hidden_size
    x = torch.nn.functional.one_hot(ids, model.vocab_size).double()  # (B, T, K)
    h = torch.zeros(ids.shape[0], H, dtype=torch.float64)
    c = torch.zeros_like(h)
    logits = []
    for t in range(ids.shape[1]):
        z = x[:, t] @ lstm.weight_ih_l0.T + h @ lstm.weight_hh_l0.T
        z = z + lstm.bias_ih_l0 + lstm.bias_hh_l0  # (B, 4H)
        i, f, g, o = z.split(H, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        logits.append(model.readout(h))
    return torch.stack(logits, dim=1), h, c


def test_char_lstm_matches_the_gate_equations_and_chains_chunks():
    torch.manual_seed(0)
    model = CharLSTM(6, 5).double()
    ids = torch.randint(0, 6, (3, 8))
    logits, (h, c) = model(ids)
    expected, h_ref, c_ref = hand_written_lstm(model, ids)
    assert logits.shape == (3, 8, 6) and h.shape == (1, 3, 5) and c.shape == (1, 3, 5)
    assert_close("logits", logits, expected, atol=1e-12)
    assert_close("h_T", h[0], h_ref, atol=1e-12)
    assert_close("c_T", c[0], c_ref, atol=1e-12)
    first, state = model(ids[:, :5])
    second, _ = model(ids[:, 5:], state)
    assert_close("chained logits", torch.cat([first, second], dim=1), logits, atol=1e-12)
    zero_logits, _ = model(ids, model.init_hidden(3))
    assert_close("logits from init_hidden", zero_logits, logits, atol=1e-12)


def test_char_lstm_rejects_bad_input_and_works_with_bits_per_char():
    model = CharLSTM(5, 4, embedding_dim=3)
    with pytest.raises(ValueError, match="ids: expected values in"):
        model(torch.tensor([[0, 5]]))
    with pytest.raises(TypeError, match="pair"):
        model(torch.tensor([[0, 1]]), torch.zeros(1, 1, 4))
    with pytest.raises(ValueError):
        CharLSTM(0, 4)
    bpc = bits_per_char(model, torch.randint(0, 5, (200,)))
    assert 0 < bpc < 2 * np.log2(5)


@pytest.mark.parametrize("cls", [CharRNN, CharLSTM])
def test_recurrent_step_gives_the_forward_pass_one_character_at_a_time(cls):
    torch.manual_seed(0)
    model = cls(7, 5, embedding_dim=3).double().eval()
    ids = torch.randint(7, (2, 6))
    whole = model(ids)[0].log_softmax(-1)  # (2, 6, 7)
    step, state = recurrent_step(model), None
    for t in range(6):
        log_probs, state = step(ids[:, t], state)
        assert_close(f"step {t}", log_probs, whole[:, t], atol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        step(ids, None)  # (B, T): one token per row is expected
    # So course.decoding's sampler runs on it: the same draws from the same seed.
    drawn = [
        sample(
            step,
            ids[:, :2],
            max_new_tokens=4,
            generator=torch.Generator().manual_seed(1),
        )
        for _ in range(2)
    ]
    assert drawn[0].shape == (2, 4) and torch.equal(*drawn)


def test_forget_bias_is_set_exactly():
    torch.manual_seed(0)
    layer = torch.nn.LSTM(3, 4, num_layers=2)
    set_forget_bias_(layer, 1.5)
    for name, bias in layer.named_parameters():
        if name.startswith("bias_ih"):
            assert torch.all(bias[4:8] == 1.5)
        if name.startswith("bias_hh"):
            assert torch.all(bias[4:8] == 0.0)
    assert torch.all(CharLSTM(4, 3, forget_bias=1.0).lstm.bias_ih_l0[3:6] == 1.0)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_sequence_tagger_shapes(cell):
    model = SequenceTagger(9, 6, 8, cell=cell)
    assert model(torch.randint(0, 9, (2, 7))).shape == (2, 7, 8)


def test_sequence_tagger_rejects_unknown_cell():
    with pytest.raises(ValueError, match="cell"):
        SequenceTagger(9, 6, 8, cell="transformer")


def test_recall_batch_layout():
    task = RecallTask(num_keys=5)
    ids, targets = recall_batch(4, 3, task=task, generator=torch.Generator().manual_seed(0))
    assert ids.shape == targets.shape == (4, 5)
    assert torch.all(ids[:, -1] == task.query_id) and torch.all(ids[:, :-1] < 5)
    assert torch.all(targets[:, -1] == ids[:, 0])  # the key
    assert torch.all(targets[:, 1:-1] == ids[:, :-2])  # echo of the previous token
    assert torch.all(targets[:, 0] == -100)
    assert task.chance == pytest.approx(0.2) and task.vocab_size == 6
    with pytest.raises(ValueError):
        recall_batch(0, 3)


def test_an_lstm_learns_to_recall_and_accuracy_is_measured(one_thread):
    task = RecallTask(num_keys=4)
    torch.manual_seed(0)
    model = SequenceTagger(task.vocab_size, 16, task.num_keys, cell="lstm")
    before = recall_accuracy(model, 10, task=task, samples=400)
    history = train_recall(model, max_distance=10, steps=300, task=task, progress=False)
    after = recall_accuracy(model, 10, task=task, samples=400)
    assert history.steps == 300 and len(history.losses) == 300
    assert len(history.logs["recall"]) == 300  # the recall part of each step's loss
    assert all(r <= total for r, total in zip(history.logs["recall"], history.losses, strict=True))
    assert before < 0.5 < 0.9 < after


def test_recall_batches_mix_distances_reproducibly_and_the_loss_has_two_parts():
    task = RecallTask(num_keys=4)
    stream = recall_batches(8, max_distance=30, min_distance=1, task=task, seed=5)
    lengths = {next(stream)[0].shape[1] - 2 for _ in range(40)}
    assert min(lengths) >= 1 and max(lengths) <= 30 and len(lengths) > 5
    again = recall_batches(8, max_distance=30, min_distance=1, task=task, seed=5)
    first = recall_batches(8, max_distance=30, min_distance=1, task=task, seed=5)
    assert all(torch.equal(next(first)[0], next(again)[0]) for _ in range(5))
    with pytest.raises(ValueError, match="min_distance <= max_distance"):
        recall_batches(8, max_distance=2, min_distance=3)

    class Knows(nn.Module):  # always right on the echo, uniform at the query
        def forward(self, ids):
            logits = 50.0 * F.one_hot(ids.roll(1, dims=1).clamp(max=3), 4).float()
            logits[:, -1] = 0.0
            return logits

    ids, targets = recall_batch(16, 5, task=task, generator=torch.Generator().manual_seed(0))
    loss, logs = recall_loss(Knows(), (ids, targets))
    assert logs["recall"] == pytest.approx(np.log(4))  # the query part alone
    assert loss.item() == pytest.approx(np.log(4), abs=1e-6)  # the echo part is ~0


def test_train_recall_stops_on_budget_and_validates():
    model = SequenceTagger(9, 4, 8, cell="rnn")
    history = train_recall(model, max_distance=5, steps=10_000, budget_seconds=0.2, progress=False)
    assert history.stopped_by == "budget" and history.steps < 10_000
    with pytest.raises(ValueError):
        train_recall(model, max_distance=2, min_distance=3)


def test_gradient_norms_of_cells_follow_the_forget_bias():
    rnn = cell_gradient_norms_by_distance("rnn", 40)
    low = cell_gradient_norms_by_distance("lstm", 40, forget_bias=0.0)
    high = cell_gradient_norms_by_distance("lstm", 40, forget_bias=3.0)
    assert rnn.shape == (40,) and rnn[0] == pytest.approx(1.0)
    assert high[-1] > 1e3 * low[-1] and high[-1] > 1e3 * rnn[-1]
    cell_path = cell_gradient_norms_by_distance("lstm", 40, forget_bias=3.0, wrt="c")
    assert cell_path.shape == (40,) and np.all(cell_path > 0)
    with pytest.raises(ValueError):
        cell_gradient_norms_by_distance("gru", 10, wrt="c")
    with pytest.raises(ValueError):
        cell_gradient_norms_by_distance("rnn", 10, forget_bias=1.0)
    with pytest.raises(ValueError):
        cell_gradient_norms_by_distance("transformer", 10)


def test_plot_cell_gradient_norms_draws_one_line_per_curve():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot_cell_gradient_norms(seq_len=20)
    assert len(fig.axes[0].lines) == 4
    plt.close(fig)
