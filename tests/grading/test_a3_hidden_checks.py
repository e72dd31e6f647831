"""Assignment 3: the hidden checks reject plausible bugs and torch's shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (each
sequence reversed on its own, softmax and masked statistics written another way, loops over
pairs and held-out occurrences) with one switch per plausible bug, each of which must fail
its check with a message that names the case; the visible tests name the typical mistakes;
and shortcuts through ``torch.nn.GRU``, ``torch.softmax``, ``F.layer_norm`` and
``F.cosine_similarity``, which give the right answer outside the traps and are caught inside
them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.hidden import a3_bilstm_elmo as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_shortcut,
    expect_traps,
    row_id,
    run_visible,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ASSIGNMENT = "a3_bilstm_elmo"

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def gru(x, h, p):
    """One GRU step, (B, D) and (B, H) -> (B, H), blocks z, r, n."""
    gx = np.split(x @ np.asarray(p["U"]).T + p["b_in"], 3, axis=1)
    gh = np.split(h @ np.asarray(p["W"]).T + p["b_rec"], 3, axis=1)
    z, r = sigmoid(gx[0] + gh[0]), sigmoid(gx[1] + gh[1])
    n = np.tanh(gx[2] + r * gh[2])
    return (1 - z) * n + z * h


def run(tokens, p):
    """Read ``tokens`` (T, D) from the first to the last; the states (T, H)."""
    h = np.zeros((1, np.shape(p["W"])[1]))
    states = []
    for x in tokens:
        h = gru(x[None], h, p)
        states.append(h[0])
    return np.array(states)


def bigru(
    xs,
    lengths,
    pf,
    pb,
    *,
    start_at_padding=False,
    forward_through_padding=False,
    keep_padding_states=False,
    swap_halves=False,
    validate=True,
    in_place=False,
):
    """Each sequence read on its own: forward over its real tokens, backward over them reversed."""
    xs = np.asarray(xs) if not in_place else xs
    lengths = np.asarray(lengths)
    if validate:
        if xs.ndim != 3 or lengths.shape != (xs.shape[0],):
            raise ValueError("bad shapes")
        if lengths.min() < 1 or lengths.max() > xs.shape[1]:
            raise ValueError("bad lengths")
    if in_place:
        xs[np.arange(xs.shape[1])[None, :] >= lengths[:, None]] = 0.0
    B, T, _ = xs.shape
    H = np.shape(pf["W"])[1]
    states = np.zeros((B, T, 2 * H))
    final_fwd, final_bwd = np.zeros((B, H)), np.zeros((B, H))
    for b, length in enumerate(lengths):
        forward = run(xs[b, :T] if forward_through_padding else xs[b, :length], pf)
        span = T if start_at_padding else length
        backward = run(xs[b, :span][::-1], pb)[::-1]
        halves = (backward, forward) if swap_halves else (forward, backward)
        states[b, :length] = np.concatenate([h[:length] for h in halves], axis=1)
        if keep_padding_states:
            states[b, length:, :H] = forward[length - 1]
        final_fwd[b] = forward[-1]
        final_bwd[b] = backward[0]
    return {"states": states, "final_fwd": final_fwd, "final_bwd": final_bwd}


def softmax(w, *, naive=False, validate=True):
    w = np.asarray(w, dtype=float)
    if validate and (w.ndim != 1 or w.size == 0):
        raise ValueError("w must be a non-empty 1-D array")
    if naive:
        return np.exp(w) / np.exp(w).sum()
    log_z = np.logaddexp.reduce(w)  # another stable way: log-sum-exp
    return np.exp(w - log_z)


def mix(
    layers,
    w,
    gamma,
    mask=None,
    layer_norm=False,
    *,
    naive=False,
    ignore_mask=False,
    per_token=False,
    ddof=0,
    zero_padding=False,
    check_empty_mask=True,
):
    layers = np.asarray(layers, dtype=float)
    if layers.ndim != 4:
        raise ValueError("layers must be 4-D")
    s = softmax(w, naive=naive)
    if len(s) != len(layers):
        raise ValueError("one weight per layer")
    real = np.ones(layers.shape[1:3], bool) if mask is None else np.asarray(mask, bool)
    if real.shape != layers.shape[1:3]:
        raise ValueError("mask shape")
    if layer_norm:
        if check_empty_mask and not real.any():
            raise ValueError("no real token")
        counted = np.ones_like(real) if ignore_mask else real
        normed = []
        for layer in layers:
            if per_token:  # nn.LayerNorm: each token over its own features
                mean = layer.mean(-1, keepdims=True)
                var = layer.var(-1, keepdims=True)
            else:
                values = layer[counted].ravel()
                mean, var = values.mean(), values.var(ddof=ddof)
            normed.append((layer - mean) / np.sqrt(var + 1e-12))
        layers = np.array(normed)
    out = gamma * np.einsum("j,jbtd->btd", s, layers)
    if zero_padding:
        out = out * real[..., None]
    return out


def cosines(vectors, *, unnormalised=False, eps_for_zero=False):
    v = np.asarray(vectors, dtype=float)
    if v.ndim != 2:
        raise ValueError("(N, D)")
    norms = np.linalg.norm(v, axis=1)
    if np.any(norms == 0) and not eps_for_zero:
        raise ValueError("zero vector")
    if unnormalised:
        return v @ v.T
    unit = v / np.maximum(norms, 1e-12)[:, None]
    return unit @ unit.T


def mean_similarity(stack, *, include_diagonal=False, as_array=False, check_n=True):
    stack = np.asarray(stack, dtype=float)
    if stack.ndim != 3:
        raise ValueError("(L, N, D)")
    N = stack.shape[1]
    if check_n and N < 2:
        raise ValueError("N < 2")
    values = []
    for layer in stack:
        c = cosines(layer)
        values.append(c.mean() if include_diagonal else (c.sum() - N) / (N * (N - 1)))
    return np.array(values) if as_array else [float(v) for v in values]


def probe(stack, senses, *, leave_one_out=True, validate=True):
    stack = np.asarray(stack, dtype=float)
    labels = list(senses)
    names = sorted(set(labels))
    if validate:
        if len(labels) != stack.shape[1] or len(names) < 2:
            raise ValueError("senses")
        if min(labels.count(n) for n in names) < 2:
            raise ValueError("a sense with one example")
    scores = []
    for layer in stack:
        right = 0
        for i, v in enumerate(layer):
            sims = []
            for n in names:
                keep = [k for k, t in enumerate(labels) if t == n and (k != i or not leave_one_out)]
                with np.errstate(all="ignore"):
                    c = layer[keep].mean(0) if keep else np.zeros_like(v)
                    sims.append(v @ c / (np.linalg.norm(v) * np.linalg.norm(c)))
            right += (
                names[int(np.nanargmax(sims))] == labels[i] if not np.all(np.isnan(sims)) else 0
            )
        scores.append(right / len(labels))
    return scores


def best(stack, senses, *, last_on_tie=False, as_float=False):
    scores = np.array(probe(stack, senses))
    index = (
        len(scores) - 1 - int(np.argmax(scores[::-1])) if last_on_tie else int(np.argmax(scores))
    )
    return float(index) if as_float else index


# --------------------------------------------------------------------------------------------
# The independent implementations pass
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    hidden.check_bidirectional_gru(as_student(bigru, "bidirectional_gru"))
    hidden.check_scalar_mix(as_student(mix, "scalar_mix"), as_student(softmax, "mix_weights"))
    hidden.check_context_similarity(
        as_student(cosines, "cosine_similarity_matrix"),
        as_student(mean_similarity, "mean_context_similarity"),
    )
    hidden.check_sense_separation(
        as_student(probe, "sense_separation"), as_student(best, "best_layer")
    )
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_padded_outputs_of_the_mix_are_not_graded():
    """Zeroing the mix at padded tokens is allowed: only real tokens are compared."""
    hidden.check_scalar_mix(
        as_student(mix, "scalar_mix", zero_padding=True), as_student(softmax, "mix_weights")
    )


def test_the_sense_cases_have_no_near_ties_and_one_real_tie_between_layers():
    for case in hidden.sense_cases():
        accuracies, closest_call = hidden.loo_accuracies(**case.inputs)
        assert closest_call > 1e-4, case.label  # no occurrence is as close to two centroids
        assert accuracies == pytest.approx(probe(case.vectors_by_layer, case.senses)), case.label
    ties = [
        case.label
        for case in hidden.sense_cases()
        if sorted(hidden.loo_accuracies(**case.inputs)[0])[-2:] == [1.0, 1.0]
    ]
    assert len(ties) == 1


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


GARBAGE = r"^bidirectional_gru, B=3, T=6, lengths 6, 2, 4, garbage in the padding$"
MIX = r"^scalar_mix, L\+1=4, B=3, T=5, D=3, layer norm, .*garbage in the padding$"
TWO_SENSES = r"^sense_separation, L=3, N=8, D=4, two senses as 0 and 1$"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"start_at_padding": True},
            Failure(GARBAGE, "^states differs", "starts at position T - 1"),
        ),
        ({"forward_through_padding": True}, Failure(GARBAGE, "^final_fwd differs")),
        ({"keep_padding_states": True}, Failure(GARBAGE, "^states differs")),
        (
            {"swap_halves": True},
            Failure(r"^bidirectional_gru, B=1, T=1, D=1, H=1$", "^states differs"),
        ),
        (
            {"validate": False},
            Failure(None, r"lengths \[3, 5\] with T = 4", "should raise ValueError", "returned"),
        ),
        ({"in_place": True}, Failure(GARBAGE, r"in place: xs\b")),
    ],
    ids=row_id,
)
def test_check_bidirectional_gru_rejects_bug(bugs, failure):
    student = as_student(bigru, "bidirectional_gru", **bugs)
    expect_failure(lambda: hidden.check_bidirectional_gru(student), failure)


@pytest.mark.parametrize(
    ("scalar_mix_bugs", "weight_bugs", "failure"),
    [
        (
            {},
            {"naive": True},
            Failure(r"^mix_weights, w = \[800, -800, 799.5\]", "^s contains nan"),
        ),
        ({}, {"validate": False}, Failure(None, "^mix_weights with an empty w", "should raise")),
        ({"ignore_mask": True}, {}, Failure(MIX, "^the mix at the real tokens differs")),
        ({"per_token": True}, {}, Failure(MIX, "^the mix at the real tokens differs")),
        ({"ddof": 1}, {}, Failure(MIX, "^the mix at the real tokens differs")),
        # scalar_mix with its own overflowing softmax: nan at the huge weights
        (
            {"naive": True},
            {},
            Failure(r"^scalar_mix, .*w = \[700, 710, 705\]", "^the mix .* contains nan"),
        ),
        (
            {"check_empty_mask": False},
            {},
            Failure(None, "^scalar_mix with a mask with no real token", "should raise ValueError"),
        ),
    ],
    ids=row_id,
)
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore::RuntimeWarning")
def test_check_scalar_mix_rejects_bug(scalar_mix_bugs, weight_bugs, failure):
    students = (
        as_student(mix, "scalar_mix", **scalar_mix_bugs),
        as_student(softmax, "mix_weights", **weight_bugs),
    )
    expect_failure(lambda: hidden.check_scalar_mix(*students), failure)


@pytest.mark.parametrize(
    ("cosine_bugs", "mean_bugs", "failure"),
    [
        (
            {"unnormalised": True},
            {},
            Failure(r"^cosine_similarity_matrix, N=5, D=4$", "^the cosine matrix differs"),
        ),
        (
            {"eps_for_zero": True},
            {},
            Failure(
                None, r"^cosine_similarity_matrix with a zero vector \(row 2\)", "should raise"
            ),
        ),
        (
            {},
            {"include_diagonal": True},
            Failure(r"^mean_context_similarity, L=3", "^the mean similarity by layer differs"),
        ),
        (
            {},
            {"as_array": True},
            Failure(r"^mean_context_similarity, L=3", "list of 3 floats", r"got ndarray"),
        ),
        (
            {},
            {"check_n": False},
            Failure(None, "^mean_context_similarity with N = 1 occurrence", "should raise"),
        ),
    ],
    ids=row_id,
)
def test_check_context_similarity_rejects_bug(cosine_bugs, mean_bugs, failure):
    students = (
        as_student(cosines, "cosine_similarity_matrix", **cosine_bugs),
        as_student(mean_similarity, "mean_context_similarity", **mean_bugs),
    )
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_context_similarity(*students), failure)


@pytest.mark.parametrize(
    ("probe_bugs", "best_bugs", "failure"),
    [
        (
            {"leave_one_out": False},
            {},
            Failure(TWO_SENSES, "^the accuracy by layer differs", "leave-one-out"),
        ),
        (
            {},
            {"last_on_tie": True},
            Failure(
                r"^best_layer, .*layers 1 and 3 tie at the top$",
                "chose layer 3, but layer 1",
                r"layers \[1, 3\] tie; the lowest wins",
            ),
        ),
        (
            {},
            {"as_float": True},
            Failure(TWO_SENSES.replace("sense_separation", "best_layer"), "as an int"),
        ),
        (
            {"validate": False},
            {},
            Failure(None, "^sense_separation with 5 labels for N = 6", "should raise ValueError"),
        ),
    ],
    ids=row_id,
)
def test_check_sense_separation_rejects_bug(probe_bugs, best_bugs, failure):
    students = (
        as_student(probe, "sense_separation", **probe_bugs),
        as_student(best, "best_layer", **best_bugs),
    )
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_sense_separation(*students), failure)


def test_a_best_layer_that_trusts_centroids_with_the_held_out_vector_is_wrong_too():
    """best_layer built on the non-held-out accuracies picks layer 1 instead of 2 (case 1)."""

    def best_without_loo(stack, senses):
        return int(np.argmax(probe(stack, senses, leave_one_out=False)))

    students = (as_student(probe, "sense_separation"), as_student(best_without_loo, "best_layer"))
    expect_failure(
        lambda: hidden.check_sense_separation(*students),
        Failure(TWO_SENSES.replace("sense_separation", "best_layer"), "chose layer 1"),
    )


# --------------------------------------------------------------------------------------------
# The visible tests name the typical mistakes
# --------------------------------------------------------------------------------------------


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_bidirectional_visible",
            {"bidirectional_gru": as_student(bigru, "bidirectional_gru", start_at_padding=True)},
            Failure(
                None,
                r"^final_bwd of sequence 1 \(length 2\) in the padded batch differs",
                "its last real token",
            ),
        ),
        (
            "test_bidirectional_visible",
            {"bidirectional_gru": as_student(bigru, "bidirectional_gru", swap_halves=True)},
            Failure(None, "^states differs"),
        ),
        (
            "test_scalar_mix_visible",
            {"mix_weights": as_student(softmax, "mix_weights", naive=True)},
            Failure(None, r"^mix_weights\(\[1000, 1001, 999\]\) contains nan"),
        ),
        (
            "test_scalar_mix_visible",
            {"scalar_mix": as_student(mix, "scalar_mix", ignore_mask=True)},
            Failure(None, r"^scalar_mix\(.*layer_norm=True\) at the real tokens differs"),
        ),
        (
            "test_context_similarity_visible",
            {
                "mean_context_similarity": as_student(
                    mean_similarity, "mean_context_similarity", include_diagonal=True
                )
            },
            Failure(None, "^mean_context_similarity .* differs", r"by 1.4e-01 at \[1\]"),
        ),
        (
            "test_sense_separation_visible",
            {"sense_separation": as_student(probe, "sense_separation", leave_one_out=False)},
            Failure(None, "^sense_separation accuracies by layer differs", r"by 8.3e-01 at \[1\]"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(ASSIGNMENT, "test_bidirectional_visible", bidirectional_gru=as_student(bigru, "x"))
    run_visible(
        ASSIGNMENT,
        "test_scalar_mix_visible",
        scalar_mix=as_student(mix, "scalar_mix"),
        mix_weights=as_student(softmax, "mix_weights"),
    )
    run_visible(
        ASSIGNMENT,
        "test_context_similarity_visible",
        cosine_similarity_matrix=as_student(cosines, "cosine_similarity_matrix"),
        mean_context_similarity=as_student(mean_similarity, "mean_context_similarity"),
    )
    run_visible(
        ASSIGNMENT,
        "test_sense_separation_visible",
        sense_separation=as_student(probe, "sense_separation"),
        best_layer=as_student(best, "best_layer"),
    )


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's layers and functions are trapped
# --------------------------------------------------------------------------------------------


def _zrn_to_rzn(m):
    z, r, n = np.split(np.asarray(m, dtype=float), 3)
    return torch.tensor(np.concatenate([r, z, n]))


def bigru_with_torch(xs, lengths, pf, pb):
    xs = np.asarray(xs, dtype=float)
    B, T, D = xs.shape
    H = np.shape(pf["W"])[1]
    layer = torch.nn.GRU(D, H, batch_first=True, bidirectional=True, dtype=torch.float64)
    with torch.no_grad():
        for suffix, p in (("", pf), ("_reverse", pb)):
            getattr(layer, f"weight_ih_l0{suffix}").copy_(_zrn_to_rzn(p["U"]))
            getattr(layer, f"weight_hh_l0{suffix}").copy_(_zrn_to_rzn(p["W"]))
            getattr(layer, f"bias_ih_l0{suffix}").copy_(_zrn_to_rzn(p["b_in"]))
            getattr(layer, f"bias_hh_l0{suffix}").copy_(_zrn_to_rzn(p["b_rec"]))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(xs), list(np.asarray(lengths)), batch_first=True, enforce_sorted=False
        )
        out, h_n = layer(packed)
        states, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    return {"states": states.numpy(), "final_fwd": h_n[0].numpy(), "final_bwd": h_n[1].numpy()}


def mix_weights_with_torch(w):
    return torch.softmax(torch.tensor(np.asarray(w, dtype=float)), dim=0).numpy()


def scalar_mix_with_layer_norm(layers, w, gamma, mask=None, layer_norm=False):
    layers = np.asarray(layers, dtype=float)
    real = np.ones(layers.shape[1:3], bool) if mask is None else np.asarray(mask, bool)
    if layer_norm:
        normed = []
        for layer in layers:
            flat = torch.nn.functional.layer_norm(
                torch.tensor(layer[real].ravel()), (int(real.sum()) * layer.shape[-1],), eps=1e-12
            )
            values = layer[real].ravel()
            mean, std = values.mean(), np.sqrt(values.var() + 1e-12)
            assert np.allclose(flat.numpy(), (values - mean) / std)
            normed.append((layer - mean) / std)
        layers = np.array(normed)
    return gamma * np.einsum("j,jbtd->btd", softmax(w), layers)


def cosines_with_torch(vectors):
    t = torch.tensor(np.asarray(vectors, dtype=float))
    return torch.nn.functional.cosine_similarity(t[:, None], t[None, :], dim=-1).numpy()


def probe_with_torch_cosines(stack, senses):
    torch.nn.functional.cosine_similarity(torch.ones(1, 2), torch.ones(1, 2))
    return probe(stack, senses)


@pytest.mark.parametrize(
    ("check", "implementations", "name", "called"),
    [
        (
            "check_bidirectional_gru",
            [bigru_with_torch],
            "bidirectional_gru",
            "torch.nn.GRU",
        ),
        (
            "check_scalar_mix",
            [lambda *a: mix(*a), mix_weights_with_torch],
            "mix_weights",
            "torch.softmax",
        ),
        (
            "check_scalar_mix",
            [scalar_mix_with_layer_norm, softmax],
            "scalar_mix",
            "torch.nn.functional.layer_norm",
        ),
        (
            "check_context_similarity",
            [cosines_with_torch, mean_similarity],
            "cosine_similarity_matrix",
            "torch.nn.functional.cosine_similarity",
        ),
        (
            "check_sense_separation",
            [probe_with_torch_cosines, best],
            "sense_separation",
            "torch.nn.functional.cosine_similarity",
        ),
    ],
)
def test_checks_reject_shortcuts(check, implementations, name, called):
    names = {
        "check_bidirectional_gru": ["bidirectional_gru"],
        "check_scalar_mix": ["scalar_mix", "mix_weights"],
        "check_context_similarity": ["cosine_similarity_matrix", "mean_context_similarity"],
        "check_sense_separation": ["sense_separation", "best_layer"],
    }[check]
    students = [as_student(f, n) for f, n in zip(implementations, names, strict=True)]
    expect_shortcut(lambda: getattr(hidden, check)(*students), name, called)


def test_shortcut_implementations_are_right_outside_the_traps():
    rng = np.random.default_rng(0)
    params = [
        {
            "U": rng.normal(size=(6, 3)),
            "W": rng.normal(size=(6, 2)),
            "b_in": rng.normal(size=6),
            "b_rec": rng.normal(size=6),
        }
        for _ in range(2)
    ]
    xs, lengths = rng.normal(size=(3, 4, 3)), np.array([4, 1, 3])
    mine, theirs = bigru(xs, lengths, *params), bigru_with_torch(xs, lengths, *params)
    for key in mine:
        np.testing.assert_allclose(theirs[key], mine[key], atol=1e-12)
    w = np.array([0.3, -2.0, 1.0])
    np.testing.assert_allclose(mix_weights_with_torch(w), softmax(w), atol=1e-15)
    layers, mask = rng.normal(size=(3, 3, 4, 2)), np.arange(4)[None, :] < lengths[:, None]
    np.testing.assert_allclose(
        scalar_mix_with_layer_norm(layers, w, 0.5, mask, True)[mask],
        mix(layers, w, 0.5, mask, True)[mask],
        atol=1e-12,
    )
    vectors = rng.normal(size=(5, 3))
    np.testing.assert_allclose(cosines_with_torch(vectors), cosines(vectors), atol=1e-12)


REQUIRED_TRAPS = {
    "torch.nn.GRU",
    "torch.nn.GRUCell",
    "torch.nn.LSTM",
    "torch.nn.LayerNorm",
    "torch.gru",
    "torch.gru_cell",
    "torch.softmax",
    "torch.Tensor.softmax",
    "torch.nn.functional.softmax",
    "torch.nn.functional.layer_norm",
    "torch.nn.functional.cosine_similarity",
    "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
