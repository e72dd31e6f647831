"""Tests for course.models.recurrent: CharRNN against a hand-written loop, the input guards that
every model shares, and the spectral helpers."""

from __future__ import annotations

import pytest
import torch

from course.checks import assert_close
from course.models.recurrent import (
    CharLSTM,
    CharRNN,
    SequenceTagger,
    rescale_spectral_radius_,
    spectral_radius,
)
from tests.messages import raises


def hand_written_rnn(model: CharRNN, ids: torch.Tensor, h0: torch.Tensor | None = None):
    """h_t = tanh(W h_{t-1} + U x_t + b), logits_t = V h_t + c, one step at a time."""
    W, U = model.rnn.weight_hh_l0, model.rnn.weight_ih_l0
    b = model.rnn.bias_ih_l0 + model.rnn.bias_hh_l0
    V, c = model.readout.weight, model.readout.bias
    B, T = ids.shape
    h = torch.zeros(B, model.hidden_size, dtype=W.dtype) if h0 is None else h0[0]
    logits = []
    for t in range(T):
        if model.embedding is None:
            x = torch.nn.functional.one_hot(ids[:, t], model.vocab_size).to(W.dtype)  # (B, K)
        else:
            x = model.embedding.weight[ids[:, t]]  # (B, E)
        h = torch.tanh(h @ W.T + x @ U.T + b)  # (B, H)
        logits.append(h @ V.T + c)  # (B, K)
    return torch.stack(logits, dim=1), h[None]


@pytest.mark.parametrize("embedding_dim", [None, 5])
def test_char_rnn_matches_a_hand_written_loop(embedding_dim):
    torch.manual_seed(0)
    model = CharRNN(7, 6, embedding_dim=embedding_dim).double()
    ids = torch.randint(0, 7, (3, 9))
    h0 = torch.randn(1, 3, 6, dtype=torch.float64)
    logits, h_last = model(ids, h0)
    expected_logits, expected_h = hand_written_rnn(model, ids, h0)
    assert logits.shape == (3, 9, 7) and h_last.shape == (1, 3, 6)
    assert_close("logits", logits, expected_logits, atol=1e-12, against="the hand-written loop")
    assert_close("h_T", h_last, expected_h, atol=1e-12, against="the hand-written loop")


def test_char_rnn_default_state_is_zero_and_chunks_can_be_chained():
    torch.manual_seed(1)
    model = CharRNN(5, 4)
    ids = torch.randint(0, 5, (2, 10))
    full_logits, full_h = model(ids)
    zero_logits, _ = model(ids, model.init_hidden(2))
    first_logits, h = model(ids[:, :6])
    second_logits, second_h = model(ids[:, 6:], h)
    assert_close("logits with h0=zeros", zero_logits, full_logits, atol=0)
    assert_close(
        "chained logits", torch.cat([first_logits, second_logits], 1), full_logits, atol=1e-6
    )
    assert_close("chained h_T", second_h, full_h, atol=1e-6)


def test_char_rnn_options_stacked_layers_and_relu():
    model = CharRNN(11, 8, num_layers=2, nonlinearity="relu", embedding_dim=3)
    logits, h = model(torch.randint(0, 11, (4, 5)))
    assert logits.shape == (4, 5, 11) and h.shape == (2, 4, 8)
    assert model.rnn.nonlinearity == "relu"
    assert model.rnn.weight_ih_l0.shape == (8, 3)
    assert CharRNN(11, 8).rnn.weight_ih_l0.shape == (8, 11)  # one-hot input: U is (H, K)


def _state(model, *shape, dtype=torch.float32):
    """An initial state for ``model`` with each tensor of this shape and dtype."""
    tensor = torch.zeros(*shape, dtype=dtype)
    return (tensor, tensor.clone()) if isinstance(model, CharLSTM) else tensor


MODELS = [CharRNN, CharLSTM, SequenceTagger]
RECURRENT = [CharRNN, CharLSTM]


def _model(kind):
    return kind(5, 4, 3) if kind is SequenceTagger else kind(5, 4)


@pytest.mark.parametrize("kind", MODELS)
def test_every_model_rejects_bad_ids_with_the_same_clear_messages(kind):
    model = _model(kind)
    with raises(TypeError, "ids", "integer", "float32"):
        model(torch.zeros(2, 3))
    with raises(ValueError, "ids", r"2 dimensions \(B, T\)", r"\(3,\)"):
        model(torch.zeros(3, dtype=torch.long))
    with raises(ValueError, "ids", r"\[0, 5\)", "max 5"):
        model(torch.tensor([[0, 5]]))
    with pytest.raises(ValueError, match="got min -1"):
        model(torch.tensor([[-1, 2]]))


@pytest.mark.parametrize("kind", RECURRENT)
def test_both_language_models_reject_a_bad_initial_state_with_the_same_messages(kind):
    model = _model(kind)
    ids = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"^h_0: expected shape \(1, 2, 4\), got \(1, 3, 4\)"):
        model(ids, _state(model, 1, 3, 4))
    with pytest.raises(
        ValueError, match=r"^h_0: expected 3 dimensions \(1, 2, 4\), got 2 dimensions \(2, 4\)$"
    ):
        model(ids, _state(model, 2, 4))
    with raises(TypeError, "h_0", "floating point", "int64"):
        model(ids, _state(model, 1, 2, 4, dtype=torch.long))
    with raises(TypeError, "h_0", r"float32 \(the model's\)", "float64"):
        model(ids, _state(model, 1, 2, 4, dtype=torch.float64))
    assert model(ids, _state(model, 1, 2, 4))[0].shape == (2, 3, 5)  # the right state passes


def test_the_lstm_checks_its_cell_state_too():
    model = CharLSTM(5, 4)
    ids = torch.zeros(2, 3, dtype=torch.long)
    h = torch.zeros(1, 2, 4)
    with pytest.raises(ValueError, match=r"^c_0: expected shape \(1, 2, 4\), got \(1, 2, 5\)"):
        model(ids, (h, torch.zeros(1, 2, 5)))
    with pytest.raises(TypeError, match=r"^c_0: expected dtype torch.float32"):
        model(ids, (h, torch.zeros(1, 2, 4, dtype=torch.float64)))
    with raises(TypeError, "state", r"pair \(h_0, c_0\)"):
        model(ids, h)


def test_char_rnn_rejects_bad_configuration():
    with raises(ValueError, "nonlinearity", "'relu'", "'sigmoid'"):
        CharRNN(5, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="must be >= 1"):
        CharRNN(0, 4)


def test_spectral_radius_is_the_largest_eigenvalue_modulus():
    assert spectral_radius(torch.diag(torch.tensor([0.5, -2.0, 1.0]))) == pytest.approx(2.0)
    rotation = torch.tensor([[0.0, -3.0], [3.0, 0.0]])  # eigenvalues +-3i
    assert spectral_radius(rotation) == pytest.approx(3.0)
    with pytest.raises(ValueError, match=r"matrix: dimension 1 \(H\) should be 2"):
        spectral_radius(torch.zeros(2, 3))


def test_rescale_spectral_radius_works_in_place():
    torch.manual_seed(0)
    matrix = torch.randn(6, 6)
    direction = matrix / matrix.norm()
    returned = rescale_spectral_radius_(matrix, 1.7)
    assert returned is matrix
    assert spectral_radius(matrix) == pytest.approx(1.7, rel=1e-5)
    assert_close("direction", matrix / matrix.norm(), direction, atol=1e-6)


def test_rescale_spectral_radius_works_on_a_parameter_and_rejects_bad_input():
    model = CharRNN(5, 4)
    rescale_spectral_radius_(model.rnn.weight_hh_l0, 0.5)
    assert spectral_radius(model.rnn.weight_hh_l0) == pytest.approx(0.5, rel=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        rescale_spectral_radius_(torch.eye(2), -1.0)
    with pytest.raises(ValueError, match="nilpotent"):
        rescale_spectral_radius_(torch.tensor([[0.0, 1.0], [0.0, 0.0]]), 1.0)
