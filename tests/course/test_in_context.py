"""Tests for the key-value task (course.data.key_value) and its accuracy (course.analysis.in_context)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course.analysis.in_context import (
    InContextAccuracy,
    context_free_accuracy,
    in_context_accuracy,
    shown_value_counts,
    value_guesses,
)
from course.data.key_value import (
    IGNORE,
    KeyValueTask,
    key_value_batch,
    key_value_batches,
    key_value_lines,
    pair_lags,
    read_key_value_lines,
)

TASK = KeyValueTask(num_keys=5, num_values=7, num_pairs=10)


def _batch(batch_size=200, seed=0, task=TASK):
    return key_value_batch(batch_size, task, generator=torch.Generator().manual_seed(seed))


def _pairs(ids, task=TASK):
    """Each sequence as a list of (key, value) characters."""
    return [list(zip(t[0::2], t[1::2], strict=True)) for t in key_value_lines(ids, task).split()]


def test_a_sequence_writes_pairs_of_a_key_and_its_value_with_targets_at_the_keys():
    ids, targets = _batch()
    assert ids.shape == targets.shape == (200, 2 * TASK.num_pairs)
    for line in key_value_lines(ids, TASK).split("\n"):
        assert set(line[0::2]) <= set("abcde") and set(line[1::2]) <= set("0123456")
    assert torch.equal(targets[:, 0::2], ids[:, 1::2])  # a key's logits predict its value
    assert (targets[:, 1::2] == IGNORE).all()
    assert TASK.chance == pytest.approx(1 / 7) and len(TASK.vocab) == 5 + 7 + 1


def test_the_mapping_is_a_function_of_the_sequence_and_new_in_every_sequence():
    ids, _ = _batch()
    mappings = []
    for pairs in _pairs(ids):
        mapping = {}
        for key, value in pairs:
            assert mapping.setdefault(key, value) == value, "a key changed its value"
        mappings.append(mapping)
    # The same key takes different values in different sequences, each about equally often.
    values_of_a = [m["a"] for m in mappings if "a" in m]
    counts = [values_of_a.count(v) for v in "0123456"]
    assert len(values_of_a) > 150 and min(counts) > 0.4 * len(values_of_a) / 7, counts


def test_a_querys_answer_is_in_its_context_at_the_lag_that_pair_lags_gives():
    ids, _ = _batch()
    lags = pair_lags(ids, TASK)
    assert lags.shape == (200, TASK.num_pairs) and (lags[:, 0] == 0).all()
    for pairs, row in zip(_pairs(ids), lags.tolist(), strict=True):
        for i, (lag, (key, value)) in enumerate(zip(row, pairs, strict=True)):
            earlier = [j for j in range(i) if pairs[j][0] == key]
            if not earlier:
                assert lag == 0
                continue
            assert lag == i - earlier[-1] and pairs[i - lag] == (key, value)
    assert (lags > 0).any() and (lags == 0).sum() < lags.numel()


def test_pair_lags_on_a_hand_written_sequence():
    task = KeyValueTask(num_keys=3, num_values=4, num_pairs=6)
    ids = read_key_value_lines("a1b2a1c0b2b2", task)
    assert pair_lags(ids, task).tolist() == [[0, 0, 2, 0, 3, 1]]
    assert shown_value_counts(ids, task).tolist() == [[0, 1, 2, 2, 3, 3]]


def test_batches_are_reproducible_from_their_seed():
    a, b = _batch(seed=3), _batch(seed=3)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], _batch(seed=4)[0])
    stream, again = key_value_batches(8, TASK, seed=5), key_value_batches(8, TASK, seed=5)
    for _ in range(3):
        assert torch.equal(next(stream)[0], next(again)[0])


def test_the_lines_round_trip_and_bad_lines_are_refused():
    ids, _ = _batch(20)
    assert torch.equal(read_key_value_lines(key_value_lines(ids, TASK), TASK), ids)
    with pytest.raises(ValueError, match="expected 20 characters"):
        read_key_value_lines("a1b2", TASK)
    with pytest.raises(ValueError, match="keys from 'abcde'"):
        read_key_value_lines("1a" * 10, TASK)
    with pytest.raises(ValueError, match="a key has two values"):
        read_key_value_lines("a1a2" + "b3" * 8, TASK)
    with pytest.raises(ValueError, match="at least one line"):
        read_key_value_lines("", TASK)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"num_keys": 0}, "num_keys: expected 1 to 26"),
        ({"num_keys": 27}, "num_keys: expected 1 to 26"),
        ({"num_values": 1}, "num_values: expected 2 to 10"),
        ({"num_values": 11}, "num_values: expected 2 to 10"),
        ({"num_pairs": 0}, "num_pairs: expected at least 1"),
    ],
)
def test_bad_task_sizes_give_clear_errors(arguments, message):
    with pytest.raises(ValueError, match=message):
        KeyValueTask(**arguments)


def test_bad_batch_arguments_give_clear_errors():
    with pytest.raises(ValueError, match="batch_size: expected at least 1"):
        key_value_batch(0, TASK)
    with pytest.raises(ValueError, match="batch_size: expected at least 1"):
        next(key_value_batches(0, TASK))
    with pytest.raises(ValueError, match="2 \\* num_pairs"):
        pair_lags(torch.zeros(2, 5, dtype=torch.long), TASK)
    with pytest.raises(ValueError, match="values in \\[0, 13\\)"):
        pair_lags(torch.full((2, 4), 13), TASK)


class LookUp(nn.Module):
    """A hand-made model whose answers are known: at a key shown before it puts all its
    weight on the value written after that key's last showing; at a first showing, on the
    value ``first_guess``."""

    def __init__(self, task: KeyValueTask, first_guess: int = 0) -> None:
        super().__init__()
        self.task, self.first_guess = task, first_guess

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        vocab = self.task.vocab
        logits = torch.zeros(*ids.shape, len(vocab))
        lags = pair_lags(ids, self.task)
        guess = int(vocab.encode(self.task.values[self.first_guess]))
        for b in range(ids.shape[0]):
            for i, lag in enumerate(lags[b].tolist()):
                value = ids[b, 2 * (i - lag) + 1] if lag else guess
                logits[b, 2 * i, value] = 1.0
        return logits


def test_a_model_that_looks_the_key_up_is_always_right_at_a_repeated_key():
    ids, _ = _batch(100)
    result = in_context_accuracy(LookUp(TASK), ids, TASK)
    assert isinstance(result, InContextAccuracy)
    assert result.query_accuracy == 1.0 and all(a == 1.0 for a in result.accuracy)
    values = ids[:, 1::2] - int(TASK.vocab.encode("0"))
    first = pair_lags(ids, TASK) == 0
    assert result.first_accuracy == pytest.approx(float((values[first] == 0).double().mean()))
    assert result.first_count == int(first.sum())
    assert result.query_count == ids.shape[0] * TASK.num_pairs - result.first_count
    assert sum(result.counts) == result.query_count and result.chance == pytest.approx(1 / 7)
    assert [row[0] for row in result.by_lag()] == list(result.lags)
    assert all(count >= 50 for _, _, count, _ in result.by_lag(min_count=50))


def test_the_accuracy_by_lag_counts_a_models_mistakes_on_a_hand_written_sequence():
    task = KeyValueTask(num_keys=3, num_values=4, num_pairs=6)
    ids = read_key_value_lines("a1b2a1c0b2b2\na3a3a3a3a3a3", task)
    # First showings: a, b, c of line 1 and a of line 2; a guess of 2 is right for b only.
    result = in_context_accuracy(LookUp(task, first_guess=2), ids, task)
    assert result.first_accuracy == pytest.approx(1 / 4) and result.query_accuracy == 1.0
    # A model that always says 2: right at the b's of line 1 (lags 3 and 1) and nowhere else.
    wrong = nn.Module()
    wrong.forward = lambda x: torch.nn.functional.one_hot(
        torch.full(x.shape, int(task.vocab.encode("2"))), len(task.vocab)
    ).float()
    result = in_context_accuracy(wrong, ids, task)
    assert result.lags == (1, 2, 3)
    assert result.counts == (6, 1, 1)  # line 1's last b and line 2's five a's; a; b
    assert result.accuracy == pytest.approx((1 / 6, 0.0, 1.0))
    assert result.query_accuracy == pytest.approx(2 / 8)
    # The any-shown-value baseline: 1 / the number of distinct values written before.
    assert result.any_shown == pytest.approx(((1 / 3 + 5) / 6, 1 / 2, 1 / 3))
    assert value_guesses(wrong, ids, task).tolist() == [[2] * 6, [2] * 6]


def test_the_context_free_guess_is_the_most_frequent_value_of_each_key():
    task = KeyValueTask(num_keys=2, num_values=3, num_pairs=2)
    train = read_key_value_lines("a1b0\na1b2\na2b2", task)  # a: 1 twice; b: 2 twice
    test = read_key_value_lines("a1a1\nb0b0\nb2b2", task)  # queries: a=1, b=0, b=2
    assert context_free_accuracy(train, test, task) == pytest.approx(2 / 3)
    # On fresh mappings it is about chance, since no value of a key is likelier than another.
    ids, _ = _batch(2000, seed=1)
    train_ids, _ = _batch(2000, seed=2)
    assert context_free_accuracy(train_ids, ids, TASK) == pytest.approx(1 / 7, abs=0.03)


def test_a_tiny_gpt_with_random_weights_is_near_chance(one_thread):
    from course.models.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    model = GPT(GPTConfig(len(TASK.vocab), TASK.seq_len, 16, 1, 2, 32, dropout=0.0))
    model.train()
    result = in_context_accuracy(model, _batch(300)[0], TASK)
    assert model.training, "the measurement puts the model back in training mode"
    assert result.query_accuracy < 0.35 and result.first_accuracy < 0.35


def test_the_figure_draws_each_model_and_the_baselines():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course.viz.generation import plot_in_context_accuracy

    ids, _ = _batch(300)
    result = in_context_accuracy(LookUp(TASK), ids, TASK)
    fig = plot_in_context_accuracy({"look-up": result}, context_free=0.15, min_count=30)
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    drawn = [lag for lag, _, count, _ in result.by_lag() if count >= 30]
    assert list(lines["look-up"].get_xdata()) == drawn
    assert list(lines["look-up"].get_ydata()) == [1.0] * len(drawn)
    assert list(lines["chance (1/7)"].get_ydata()) == [1 / 7, 1 / 7]
    assert list(lines["context-free best guess"].get_ydata()) == [0.15, 0.15]
    assert lines["a value drawn from those shown"].get_ydata()[0] == pytest.approx(
        result.any_shown[0]
    )
    assert ax.get_xticklabels()[0].get_text() == "new"
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one model"):
        plot_in_context_accuracy({}, context_free=0.1)
