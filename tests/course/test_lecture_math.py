"""Regression tests for the mathematics Lecture 1 teaches, checked on the course's own models.

The lecture writes its BPTT by hand in the notebook. Here the same equations are applied to
``CharRNN`` (float64) and compared with autograd, which also pins down the lecture's mapping
W = weight_hh, U = weight_ih, b = bias_ih + bias_hh, V = readout.weight, c = readout.bias.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import jupytext
import pytest
import torch
from torch.nn import functional as F

from course.analysis.lm import ngram_bits_per_char
from course.checks import assert_close
from course.data.chars import CharVocab
from course.data.code import load_python_source
from course.models.recurrent import CharRNN, rescale_spectral_radius_

LECTURE = Path(__file__).resolve().parents[2] / "lectures" / "01_rnn_bptt.py"


def bptt_by_the_equations(model: CharRNN, ids: torch.Tensor, targets: torch.Tensor):
    """Forward and backward pass of Section 2 for one sequence ids (T,) -> targets (T,)."""
    W, U = model.rnn.weight_hh_l0.detach(), model.rnn.weight_ih_l0.detach()
    b = (model.rnn.bias_ih_l0 + model.rnn.bias_hh_l0).detach()
    V, c = model.readout.weight.detach(), model.readout.bias.detach()
    K, H = V.shape
    xs = F.one_hot(ids, K).double()  # (T, K)
    hs = [torch.zeros(H, dtype=torch.float64)]
    probs = []
    for x in xs:
        hs.append(torch.tanh(W @ hs[-1] + U @ x + b))
        probs.append(torch.softmax(V @ hs[-1] + c, dim=0))
    grads = {k: torch.zeros_like(v) for k, v in (("W", W), ("U", U), ("b", b), ("V", V), ("c", c))}
    carried = torch.zeros(H, dtype=torch.float64)
    for t in range(len(ids), 0, -1):
        d_o = probs[t - 1] - F.one_hot(targets[t - 1], K)
        grads["V"] += torch.outer(d_o, hs[t])
        grads["c"] += d_o
        d_a = (V.T @ d_o + carried) * (1 - hs[t] ** 2)
        grads["W"] += torch.outer(d_a, hs[t - 1])
        grads["U"] += torch.outer(d_a, xs[t - 1])
        grads["b"] += d_a
        carried = W.T @ d_a
    loss = -sum(torch.log(p[y]) for p, y in zip(probs, targets, strict=True))
    return loss, grads


def test_bptt_equations_match_autograd_on_char_rnn():
    torch.manual_seed(0)
    model = CharRNN(6, 5).double()
    ids, targets = torch.randint(0, 6, (12,)), torch.randint(0, 6, (12,))
    loss, grads = bptt_by_the_equations(model, ids, targets)
    logits, _ = model(ids[None])
    autograd_loss = F.cross_entropy(logits[0], targets, reduction="sum")
    autograd_loss.backward()
    assert_close("L", loss, autograd_loss.detach(), atol=1e-12, against="autograd")
    for name, param in (
        ("W", model.rnn.weight_hh_l0),
        ("U", model.rnn.weight_ih_l0),
        ("V", model.readout.weight),
        ("c", model.readout.bias),
    ):
        assert_close(f"dL/d{name}", grads[name], param.grad, atol=1e-10, against="autograd")
    # b is split in two in nn.RNN; both halves receive the same gradient
    assert_close("dL/db", grads["b"], model.rnn.bias_ih_l0.grad, atol=1e-10, against="autograd")
    assert_close("dL/db", grads["b"], model.rnn.bias_hh_l0.grad, atol=1e-10, against="autograd")


def test_a_uniform_prediction_costs_log_k_per_step():
    model = CharRNN(7, 3).double()
    with torch.no_grad():
        model.readout.weight.zero_()
        model.readout.bias.zero_()
    ids = torch.randint(0, 7, (1, 9))
    logits, _ = model(ids)
    loss = F.cross_entropy(logits[0], ids[0], reduction="sum").item()
    assert loss == pytest.approx(9 * math.log(7))


def accumulated_truncated_gradient(model: CharRNN, ids: torch.Tensor, chunk: int):
    model.zero_grad()
    h, states = None, []
    for start in range(0, len(ids) - 1, chunk):
        y = ids[start + 1 : start + chunk + 1]
        logits, h = model(ids[start : start + len(y)][None], h)
        F.cross_entropy(logits[0], y, reduction="sum").backward()
        states.append(h.detach().clone())
        h = h.detach()
    return model.rnn.weight_hh_l0.grad.clone(), states


def test_truncation_changes_the_gradient_but_not_the_forward_pass():
    torch.manual_seed(0)
    model = CharRNN(5, 8).double()
    ids = torch.randint(0, 5, (33,))  # 32 predictions
    full, _ = accumulated_truncated_gradient(model, ids, 32)
    same, _ = accumulated_truncated_gradient(model, ids, 64)  # one chunk: no cut
    cut, states = accumulated_truncated_gradient(model, ids, 8)
    assert_close("dL/dW with one chunk", same, full, atol=1e-12)
    assert (cut - full).norm() / full.norm() > 1e-3  # the long-range terms are missing
    # the hidden state after each chunk is the one of the uncut forward pass
    with torch.no_grad():
        _, h_end = model(ids[None, :-1])
    assert_close("h after the last chunk", states[-1], h_end, atol=1e-12)


def test_truncated_gradient_approaches_the_full_one_as_chunks_grow():
    torch.manual_seed(1)
    model = CharRNN(5, 8).double()
    rescale_spectral_radius_(model.rnn.weight_hh_l0, 0.8)
    ids = torch.randint(0, 5, (65,))
    full, _ = accumulated_truncated_gradient(model, ids, 64)
    errors = [
        ((accumulated_truncated_gradient(model, ids, k)[0] - full).norm() / full.norm()).item()
        for k in (1, 4, 16)
    ]
    assert errors[0] > errors[1] > errors[2]


def test_clipping_rescales_the_global_norm_and_keeps_the_direction():
    a, b = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
    a.grad, b.grad = torch.tensor([3.0, 0.0, 4.0]), torch.tensor([0.0, 12.0])  # norm 13
    norm = torch.nn.utils.clip_grad_norm_([a, b], 1.3)
    assert norm.item() == pytest.approx(13.0)
    assert_close("clipped a", a.grad, torch.tensor([0.3, 0.0, 0.4]), atol=1e-6)
    assert_close("clipped b", b.grad, torch.tensor([0.0, 1.2]), atol=1e-6)


def test_power_norms_grow_at_rate_rho_in_the_long_run():
    # ||W^k||^(1/k) -> rho (Gelfand), even though ||W||_2 is larger than rho
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(32, 32, generator=gen, dtype=torch.float64) / 32**0.5
    rescale_spectral_radius_(W, 0.9)
    assert torch.linalg.matrix_norm(W, ord=2).item() > 1.2
    power = torch.linalg.matrix_power(W, 300)
    assert torch.linalg.matrix_norm(power, ord=2).item() ** (1 / 300) == pytest.approx(
        0.9, rel=0.02
    )


def test_baselines_on_the_lecture_corpus_order_as_stated():
    train = load_python_source(max_chars=200_000, split="train")
    val = load_python_source(max_chars=20_000, split="val")
    vocab = CharVocab.from_text(train)
    unigram = ngram_bits_per_char(train, val, n=1)
    bigram = ngram_bits_per_char(train, val, n=2)
    assert 4.0 < unigram < math.log2(len(vocab))
    assert 3.0 < bigram < unigram


def test_lecture_source_has_the_agreed_header_and_the_hidden_widget_cell():
    text = LECTURE.read_text(encoding="utf-8")
    metadata = jupytext.reads(text, fmt="py:percent").metadata
    assert metadata["kernelspec"]["name"] == "python3"
    assert 0 < metadata["course"]["budget_seconds"] <= 60  # the budget for Lecture 1
    widget_cell = re.search(r'# %% tags=\["remove-output"\]\n(.*)\n', text)
    assert widget_cell is not None and "interact_gradient_norms()" in widget_cell.group(1)
    assert "plot_gradient_norms()" in text  # the static figure with the defaults
    assert re.search(r'record\(\s*"01_rnn_bptt"', text)  # the figures reach the benchmark
    compile(text, str(LECTURE), "exec")  # valid Python (no magics)
