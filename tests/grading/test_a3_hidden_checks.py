"""Assignment 3: the hidden checks reject plausible bugs and torch's shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (each
sequence read and reversed on its own, layer by layer; softmax and masked statistics written
another way; the full matrix of centred cosines; the eigenvalues of ``np.cov``; loops over
held-out occurrences) with one switch per plausible bug, each of which must fail its check
with a message that names the case; the visible tests name the typical mistakes; shortcuts
through ``torch.nn.GRU``, ``GRUCell``, ``torch.softmax``, ``F.layer_norm``,
``F.cosine_similarity``, ``course.analysis``, ``torch.linalg.svdvals`` and
``torch.pca_lowrank``, which give the right answer outside the traps and are caught inside
them; and the numbers of Part E's model answer, which the exploration cells must print.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from autograder.hidden import a3_bilstm_elmo as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_shortcut,
    expect_traps,
    reference_namespace,
    row_id,
    run_visible,
    solution,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student, run_cell

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


def stacked(
    xs,
    lengths,
    layers,
    *,
    start_at_padding=False,
    swap_inputs=False,
    directions_first=False,
    first_layer_states=False,
    validate=True,
    in_place=False,
):
    """Each sequence read on its own, layer by layer: forward over its real tokens, backward
    over them reversed; the next layer reads [forward; backward]."""
    xs = np.asarray(xs) if not in_place else xs
    lengths = np.asarray(lengths)
    layers = list(layers)
    if validate:
        if xs.ndim != 3 or lengths.shape != (xs.shape[0],):
            raise ValueError("bad shapes")
        if lengths.min() < 1 or lengths.max() > xs.shape[1]:
            raise ValueError("bad lengths")
        if not layers or any(len(pair) != 2 for pair in layers):
            raise ValueError("layers must be pairs, at least one")
    if in_place:
        xs[np.arange(xs.shape[1])[None, :] >= lengths[:, None]] = 0.0
    B, T, _ = xs.shape
    H = np.shape(layers[0][0]["W"])[1]
    states = np.zeros((B, T, 2 * H))
    finals = np.zeros((len(layers), 2, B, H))  # (layer, direction, B, H)
    for b, length in enumerate(lengths):
        below = xs[b, : T if start_at_padding else length]  # the padding read too, if the bug
        kept = None
        for k, (pf, pb) in enumerate(layers):
            forward = run(below, pf)
            backward = run(below[::-1], pb)[::-1]
            finals[k, 0, b], finals[k, 1, b] = forward[length - 1], backward[0]
            output = np.concatenate([forward, backward], axis=1)
            below = np.concatenate([backward, forward], axis=1) if swap_inputs else output
            if kept is None or not first_layer_states:
                kept = output
        states[b, :length] = kept[:length]
    h_n = finals.transpose(1, 0, 2, 3) if directions_first else finals
    return {"states": states, "h_n": h_n.reshape(2 * len(layers), B, H)}


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


def centred(
    stack,
    background,
    *,
    own_mean=False,
    raw=False,
    pooled_mean=False,
    include_diagonal=False,
    as_array=False,
    check_zero=True,
    validate=True,
):
    """The full (N, N) matrix of cosines of v_i - mu, then the mean of its off-diagonal."""
    stack = np.asarray(stack, dtype=float)
    background = np.asarray(background, dtype=float)
    if validate:
        if stack.ndim != 3 or background.ndim != 3:
            raise ValueError("(L, N, D) and (L, M, D)")
        if background.shape[::2] != stack.shape[::2] or background.shape[1] == 0:
            raise ValueError("background")
        if stack.shape[1] < 2:
            raise ValueError("N < 2")
    N = stack.shape[1]
    values = []
    for layer, sample in zip(stack, background, strict=True):
        if raw:
            mean = 0.0
        elif own_mean:
            mean = layer.mean(axis=0)
        elif pooled_mean:  # one mean over every layer's background
            mean = background.reshape(-1, background.shape[-1]).mean(axis=0)
        else:
            mean = sample.mean(axis=0)
        u = layer - mean
        norms = np.linalg.norm(u, axis=1)
        if check_zero and np.any(norms == 0):
            raise ValueError("an occurrence at the mean")
        c = (u @ u.T) / np.outer(norms, norms)
        values.append(c.mean() if include_diagonal else (c.sum() - np.trace(c)) / (N * (N - 1)))
    return np.array(values) if as_array else [float(v) for v in values]


def share(stack, *, centre=True, squared=True, as_array=False, check_still=True):
    """The eigenvalues of np.cov of each layer: the largest over their sum."""
    stack = np.asarray(stack, dtype=float)
    if stack.ndim != 3 or stack.shape[1] < 2:
        raise ValueError("(L, N, D), N >= 2")
    values = []
    for layer in stack:
        if centre:
            spread = np.atleast_2d(np.cov(layer.T, bias=True))  # (D, D)
        else:
            spread = layer.T @ layer / len(layer)
        power = np.clip(np.linalg.eigvalsh(spread), 0.0, None)
        if not squared:
            power = np.sqrt(power)
        if power.sum() == 0:
            if check_still:
                raise ValueError("no variance")
            values.append(1.0)
            continue
        values.append(power.max() / power.sum())
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
    hidden.check_stacked_bidirectional_gru(as_student(stacked, "stacked_bidirectional_gru"))
    hidden.check_scalar_mix(as_student(mix, "scalar_mix"), as_student(softmax, "mix_weights"))
    hidden.check_context_measures(
        as_student(centred, "centred_self_similarity"),
        as_student(share, "first_component_share"),
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


GARBAGE = (
    r"^stacked_bidirectional_gru, two layers, B=3, T=6, lengths 6, 2, 4, garbage in the padding$"
)
THREE = r"^stacked_bidirectional_gru, three layers, B=5, T=7, .*given as lists$"
MIX = r"^scalar_mix, L\+1=4, B=3, T=5, D=3, layer norm, .*garbage in the padding$"
TWO_SENSES = r"^sense_separation, L=3, N=8, D=4, two senses as 0 and 1$"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"start_at_padding": True},
            Failure(GARBAGE, "^states differs", "start at position T - 1"),
        ),
        (
            {"swap_inputs": True},
            Failure(GARBAGE, "^states differs", r"read \[backward; forward\]"),
        ),
        ({"directions_first": True}, Failure(GARBAGE, r"^h_n \(layer 1 forward.* differs")),
        ({"first_layer_states": True}, Failure(GARBAGE, "^states differs")),
        (
            {"validate": False},
            Failure(
                None, r"lengths \[3, 0\] \(a sequence of length 0\)", "should raise ValueError"
            ),
        ),
        ({"in_place": True}, Failure(GARBAGE, r"in place: xs\b")),
    ],
    ids=row_id,
)
def test_check_stacked_bidirectional_gru_rejects_bug(bugs, failure):
    student = as_student(stacked, "stacked_bidirectional_gru", **bugs)
    expect_failure(lambda: hidden.check_stacked_bidirectional_gru(student), failure)


def test_a_stack_that_ignores_all_but_two_layers_fails_the_three_layer_case():
    """A reader hard-wired to two layers (it drops the third) fails where L = 3."""

    def two_layers_only(xs, lengths, layers):
        return stacked(xs, lengths, list(layers)[:2])

    expect_failure(
        lambda: hidden.check_stacked_bidirectional_gru(
            as_student(two_layers_only, "stacked_bidirectional_gru")
        ),
        Failure(THREE, "^states differs"),
    )


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


CENTRED = r"^centred_self_similarity, L=3, N=5, D=4, M=20$"
SHARE = r"^first_component_share, L=3, N=6, D=4$"


@pytest.mark.parametrize(
    ("centred_bugs", "share_bugs", "failure"),
    [
        (
            {"raw": True},
            {},
            Failure(CENTRED, "^the centred self-similarity by layer differs", "raw self-sim"),
        ),
        (
            {"own_mean": True},
            {},
            Failure(CENTRED, "^the centred self-similarity by layer differs", "their own mean"),
        ),
        (
            {"pooled_mean": True},
            {},
            Failure(CENTRED, "^the centred self-similarity by layer differs"),
        ),
        (
            {"include_diagonal": True},
            {},
            Failure(CENTRED, "^the centred self-similarity by layer differs"),
        ),
        (
            {"as_array": True},
            {},
            Failure(CENTRED, "list of 3 floats", r"got ndarray"),
        ),
        (
            {"check_zero": False},
            {},
            Failure(
                None,
                "^centred_self_similarity with occurrence 2 of layer 1 equal to the layer's mean",
                "should raise",
            ),
        ),
        (
            {"validate": False},
            {},
            Failure(None, r"^centred_self_similarity with N = 1 occurrence", "should raise"),
        ),
        ({}, {"centre": False}, Failure(SHARE, "^the first-component share by layer differs")),
        ({}, {"squared": False}, Failure(SHARE, "^the first-component share by layer differs")),
        ({}, {"as_array": True}, Failure(SHARE, "list of 3 floats", r"got ndarray")),
        (
            {},
            {"check_still": False},
            Failure(
                None,
                "^first_component_share with a layer whose 4 vectors are equal",
                "should raise",
            ),
        ),
    ],
    ids=row_id,
)
def test_check_context_measures_rejects_bug(centred_bugs, share_bugs, failure):
    students = (
        as_student(centred, "centred_self_similarity", **centred_bugs),
        as_student(share, "first_component_share", **share_bugs),
    )
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_context_measures(*students), failure)


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
            "test_stacked_visible",
            {
                "stacked_bidirectional_gru": as_student(
                    stacked, "stacked_bidirectional_gru", start_at_padding=True
                )
            },
            Failure(
                r"two layers, lengths 3 and 2",
                r"^h_n of sequence 1 \(length 2\) in the padded batch differs",
                "its last real token",
            ),
        ),
        (
            "test_stacked_visible",
            {
                "stacked_bidirectional_gru": as_student(
                    stacked, "stacked_bidirectional_gru", swap_inputs=True
                )
            },
            Failure(
                r"two layers, lengths 3 and 2",
                r"^h_n \(layer 1 forward.*\) differs",
                "the forward half first",
            ),
        ),
        (
            "test_stacked_visible",
            {
                "stacked_bidirectional_gru": as_student(
                    stacked, "stacked_bidirectional_gru", first_layer_states=True
                )
            },
            Failure(r"two layers, lengths 3 and 2", r"^states \(the top layer\) differs"),
        ),
        (
            "test_scalar_mix_visible",
            {"mix_weights": as_student(softmax, "mix_weights", naive=True)},
            Failure(r"^mix_weights, w = \[1000, 1001, 999\]", "^the softmax of w contains nan"),
        ),
        (
            "test_scalar_mix_visible",
            {"scalar_mix": as_student(mix, "scalar_mix", ignore_mask=True)},
            Failure(r"^scalar_mix, .*layer_norm=True", "^the mix at the real tokens differs"),
        ),
        (
            "test_context_measures_visible",
            {"centred_self_similarity": as_student(centred, "centred_self_similarity", raw=True)},
            Failure(
                "^centred_self_similarity, ",
                "^the centred self-similarity by layer differs",
                "raw self-similarities",
            ),
        ),
        (
            "test_context_measures_visible",
            {
                "centred_self_similarity": as_student(
                    centred, "centred_self_similarity", own_mean=True
                )
            },
            Failure(
                "^centred_self_similarity, ",
                "^the centred self-similarity by layer differs",
                "their own mean",
            ),
        ),
        (
            "test_context_measures_visible",
            {"first_component_share": as_student(share, "first_component_share", centre=False)},
            Failure(
                "^first_component_share, ",
                "^the first-component share by layer differs",
                "not centred",
            ),
        ),
        (
            "test_context_measures_visible",
            {"first_component_share": as_student(share, "first_component_share", squared=False)},
            Failure(
                "^first_component_share, ",
                "^the first-component share by layer differs",
                "squared singular values",
            ),
        ),
        (
            "test_sense_separation_visible",
            {"sense_separation": as_student(probe, "sense_separation", leave_one_out=False)},
            Failure(
                "^sense_separation, ", "^the accuracy by layer differs", r"by 8.3e-01 at \[1\]"
            ),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(
        ASSIGNMENT,
        "test_stacked_visible",
        stacked_bidirectional_gru=as_student(stacked, "stacked_bidirectional_gru"),
    )
    run_visible(
        ASSIGNMENT,
        "test_scalar_mix_visible",
        scalar_mix=as_student(mix, "scalar_mix"),
        mix_weights=as_student(softmax, "mix_weights"),
    )
    run_visible(
        ASSIGNMENT,
        "test_context_measures_visible",
        centred_self_similarity=as_student(centred, "centred_self_similarity"),
        first_component_share=as_student(share, "first_component_share"),
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


def stacked_with_torch(xs, lengths, layers):
    """torch.nn.GRU(bidirectional=True, num_layers=L) on packed sequences (the hidden check's
    own reference, called from inside the student's function)."""
    xs = np.asarray(xs, dtype=float)
    states, h_n = hidden._torch_stacked(xs, [int(n) for n in lengths], list(layers))
    return {"states": states, "h_n": h_n}


def stacked_with_gru_cells(xs, lengths, layers):
    """Each layer through torch's GRUCell, one sequence at a time (no packing)."""
    xs = np.asarray(xs, dtype=float)
    torch.nn.GRUCell(1, 1)
    return stacked(xs, lengths, layers)


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


def centred_with_torch_cosines(stack, background):
    stack = np.asarray(stack, dtype=float)
    mean = np.asarray(background, dtype=float).mean(axis=1, keepdims=True)
    u = torch.tensor(stack - mean)
    c = torch.nn.functional.cosine_similarity(u[:, :, None], u[:, None, :], dim=-1).numpy()
    N = stack.shape[1]
    return [float((m.sum() - np.trace(m)) / (N * (N - 1))) for m in c]


def centred_with_the_course(stack, background):
    from course.analysis.elmo import mean_pairwise_cosine

    stack = np.asarray(stack, dtype=float)
    mean = np.asarray(background, dtype=float).mean(axis=1, keepdims=True)
    return [mean_pairwise_cosine(torch.tensor(layer)) for layer in stack - mean]


def share_with_torch_svd(stack):
    shares = []
    for layer in np.asarray(stack, dtype=float):
        sv = torch.linalg.svdvals(torch.tensor(layer - layer.mean(axis=0))) ** 2
        shares.append(float(sv[0] / sv.sum()))
    return shares


def share_with_pca_lowrank(stack):
    shares = []
    for layer in np.asarray(stack, dtype=float):
        t = torch.tensor(layer)
        _, sv, _ = torch.pca_lowrank(t, q=min(t.shape), center=True)
        shares.append(float(sv[0] ** 2 / (sv**2).sum()))
    return shares


def probe_with_torch_cosines(stack, senses):
    torch.nn.functional.cosine_similarity(torch.ones(1, 2), torch.ones(1, 2))
    return probe(stack, senses)


@pytest.mark.parametrize(
    ("check", "implementations", "name", "called"),
    [
        (
            "check_stacked_bidirectional_gru",
            [stacked_with_torch],
            "stacked_bidirectional_gru",
            "torch.nn.GRU",
        ),
        (
            "check_stacked_bidirectional_gru",
            [stacked_with_gru_cells],
            "stacked_bidirectional_gru",
            "torch.nn.GRUCell",
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
            "check_context_measures",
            [centred_with_torch_cosines, share],
            "centred_self_similarity",
            "torch.nn.functional.cosine_similarity",
        ),
        (
            "check_context_measures",
            [centred_with_the_course, share],
            "centred_self_similarity",
            r"course.analysis.elmo.mean_pairwise_cosine",
        ),
        (
            "check_context_measures",
            [centred, share_with_torch_svd],
            "first_component_share",
            "torch.linalg.svdvals",
        ),
        (
            "check_context_measures",
            [centred, share_with_pca_lowrank],
            "first_component_share",
            "torch.pca_lowrank",
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
        "check_stacked_bidirectional_gru": ["stacked_bidirectional_gru"],
        "check_scalar_mix": ["scalar_mix", "mix_weights"],
        "check_context_measures": ["centred_self_similarity", "first_component_share"],
        "check_sense_separation": ["sense_separation", "best_layer"],
    }[check]
    students = [as_student(f, n) for f, n in zip(implementations, names, strict=True)]
    expect_shortcut(lambda: getattr(hidden, check)(*students), name, called)


def test_shortcut_implementations_are_right_outside_the_traps():
    rng = np.random.default_rng(0)
    layers = [
        tuple(
            {
                "U": rng.normal(size=(6, d)),
                "W": rng.normal(size=(6, 2)),
                "b_in": rng.normal(size=6),
                "b_rec": rng.normal(size=6),
            }
            for _ in range(2)
        )
        for d in (3, 4, 4)
    ]
    xs, lengths = rng.normal(size=(3, 4, 3)), np.array([4, 1, 3])
    mine, theirs = stacked(xs, lengths, layers), stacked_with_torch(xs, lengths, layers)
    for key in mine:
        np.testing.assert_allclose(theirs[key], mine[key], atol=1e-12)
    w = np.array([0.3, -2.0, 1.0])
    np.testing.assert_allclose(mix_weights_with_torch(w), softmax(w), atol=1e-15)
    stack, mask = rng.normal(size=(3, 3, 4, 2)), np.arange(4)[None, :] < lengths[:, None]
    np.testing.assert_allclose(
        scalar_mix_with_layer_norm(stack, w, 0.5, mask, True)[mask],
        mix(stack, w, 0.5, mask, True)[mask],
        atol=1e-12,
    )
    vectors, background = rng.normal(size=(2, 5, 3)) + 1.0, rng.normal(size=(2, 9, 3))
    for shortcut in (centred_with_torch_cosines, centred_with_the_course):
        np.testing.assert_allclose(
            shortcut(vectors, background), centred(vectors, background), atol=1e-12
        )
    for shortcut in (share_with_torch_svd, share_with_pca_lowrank):
        np.testing.assert_allclose(shortcut(vectors), share(vectors), atol=1e-10)


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
    "torch.cov",
    "torch.pca_lowrank",
    "torch.linalg.svd",
    "torch.linalg.svdvals",
    "torch.linalg.eigvalsh",
    "course.analysis.elmo.mean_pairwise_cosine",
    "course.analysis.geometry.anisotropy",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)


# --------------------------------------------------------------------------------------------
# Part E: the model answer's numbers are those the exploration cells print
# --------------------------------------------------------------------------------------------

# Numbers of the model answer that are the question's own settings, not results.
SETTINGS = {"0", "1", "2", "3", "5", "17", "20", "100", "2000"}
EXPLORED = ("your reader against PyTorch's, and what", "a common offset, and a small sample")


def test_the_model_answer_quotes_the_numbers_the_exploration_cells_print(capsys):
    """Every measured number of Part E's model answer appears in what the reference's two
    exploration cells for it print (after Part A and after Part C)."""
    notebook = solution(ASSIGNMENT).notebook
    explores = [
        cell.source
        for before, cell in zip(notebook.cells, notebook.cells[1:], strict=False)
        if cell.cell_type == "code"
        and any(f"Explore (not graded): {title}" in before.source for title in EXPLORED)
    ]
    assert len(explores) == 2
    answer = next(c.source for c in notebook.cells if "**Model answer.**" in c.source)
    capsys.readouterr()
    namespace = dict(reference_namespace(ASSIGNMENT))
    for explore in explores:
        run_cell(explore, namespace, "an exploration cell for Part E")
    printed = capsys.readouterr().out
    assert "layer 2 at position 0" in printed and "share of pure noise" in printed, printed
    said = answer.split("*Grading notes")[0]
    numbers = re.findall(r"(?<![\w.^$])\d(?:[\d,]*\d)?(?:\.\d+)?(?:e[-+]\d+)?(?![\w^])", said)
    measured = [n for n in numbers if n not in SETTINGS]
    assert len(measured) >= 15, numbers
    missing = [n for n in measured if n not in printed]
    assert missing == [], f"numbers of the model answer that the cells do not print: {missing}"
