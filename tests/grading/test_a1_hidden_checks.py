"""Assignment 1: the hidden checks reject plausible bugs, autograd and torch.nn.RNN in disguise.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps, no lecture function pasted in passes) is in ``test_assignments.py``. Here: an
independent NumPy implementation with one switch per plausible bug; each bug must fail the
hidden check with a message that names the case and the quantity; the visible tests name the
case and the wrong quantity too; shortcuts that give the right answer outside the traps are caught inside
them; and Lecture 1's backward pass, adapted to a padded batch, still fails Part B.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch.autograd import grad as imported_grad

import course.metrics
from autograder.hidden import a1_rnn_bptt as hidden
from tests.grading.bug_injection import (
    Failure,
    case_label,
    expect_failure,
    expect_shortcut,
    expect_traps,
    reference_namespace,
    row_id,
    run_visible,
    solution,
)
from tests.grading.solution_loader import ROOT, as_student, lecture_functions

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ASSIGNMENT = "a1_rnn_bptt"


@pytest.fixture(scope="module")
def reference():
    return reference_namespace(ASSIGNMENT)


# --------------------------------------------------------------------------------------------
# An independent, configurable NumPy implementation, one sequence at a time: each flag
# switches on one plausible bug.
# --------------------------------------------------------------------------------------------


def forward(
    xs,
    lengths,
    h0,
    params,
    *,
    stable=True,
    use_h0=True,
    transpose_w=False,
    keep_h0=False,
    in_place_state=False,
    move_on_padding=False,
    zero_padding=False,
):
    W, U, b, V, c = (params[name] for name in ("W", "U", "b", "V", "c"))
    n_rows, n_steps, _ = np.shape(xs)
    H = W.shape[0]
    all_rows, finals = [], []
    for row in range(n_rows):
        if in_place_state:
            h = h0[row]  # a view: writing into it writes into the caller's h0
        else:
            h = np.array(h0[row], dtype=float) if use_h0 else np.zeros(H)
        rows = [np.array(h, dtype=float)] if keep_h0 else []
        for t in range(n_steps):
            if t < lengths[row] or move_on_padding:
                new = np.tanh((W.T if transpose_w else W) @ h + U @ xs[row, t] + b)
                if in_place_state:
                    h[:] = new
                else:
                    h = new
                rows.append(np.array(h, dtype=float))
            else:
                rows.append(np.zeros(H) if zero_padding else np.array(h, dtype=float))
        all_rows.append(rows)
        finals.append(np.array(h, dtype=float))
    scores = np.array(finals) @ V.T + c  # (B, K)
    if stable:
        scores = scores - scores.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(scores)
        return np.array(all_rows), e / e.sum(axis=1, keepdims=True)


def loss(probs, labels, *, summed=False, all_classes=False, per_sequence=False):
    if all_classes:
        return float(-np.log(probs).sum(axis=1).mean())
    terms = -np.log(probs[np.arange(len(labels)), labels])
    if per_sequence:
        return terms
    return float(terms.sum() if summed else terms.mean())


def backward(
    xs,
    lengths,
    labels,
    h0,
    params,
    *,
    tanh_grad=True,
    previous_state=True,
    through_time=True,
    through_padding=True,
    transposed_w=False,
    divide_by="sequences",
    h0_grad=True,
    sum_h0=False,
    keys=("W", "U", "b", "V", "c", "h0"),
    **forward_bugs,
):
    W, V = params["W"], params["V"]
    hs, probs = forward(xs, lengths, h0, params, **forward_bugs)
    n_rows, n_steps, H = hs.shape
    moving = forward_bugs.get("move_on_padding", False)
    divisor = {"sequences": n_rows, "nothing": 1, "real tokens": int(np.sum(lengths))}[divide_by]
    g = {name: np.zeros_like(np.asarray(params[name], dtype=float)) for name in params}
    dh0 = np.zeros((n_rows, H))
    for row in range(n_rows):
        d_o = probs[row].copy()
        d_o[labels[row]] -= 1
        d_o /= divisor
        g["V"] += np.outer(d_o, hs[row, -1])
        g["c"] += d_o
        carry = V.T @ d_o  # dL/dh_T
        for t in reversed(range(n_steps)):
            if not (t < lengths[row] or moving):  # padding: h_t = h_{t-1}
                if not through_padding:
                    carry = np.zeros(H)
                continue
            start = hs[row, t - 1] if t > 0 else np.asarray(h0[row], dtype=float)
            da = carry * ((1 - hs[row, t] ** 2) if tanh_grad else 1.0)
            g["W"] += np.outer(da, start if previous_state else hs[row, t])
            g["U"] += np.outer(da, xs[row, t])
            g["b"] += da
            if through_time:
                carry = (W if transposed_w else W.T) @ da
            else:
                carry = np.zeros(H)
        dh0[row] = carry if h0_grad else 0.0
    g["h0"] = dh0.sum(axis=0) if sum_h0 else dh0
    return {name: g[name] for name in keys}


def clip(
    grads,
    max_norm,
    *,
    per_tensor=False,
    in_place=False,
    same_arrays=False,
    always_scale=False,
    norm_after=False,
    validate=True,
    squared=False,
    same_dict=False,
):
    if validate and max_norm <= 0:
        raise ValueError("max_norm must be positive")
    norms = {k: float(np.linalg.norm(g)) for k, g in grads.items()}
    sum_of_squares = float(sum(n**2 for n in norms.values()))
    total = sum_of_squares if squared else float(np.sqrt(sum_of_squares))  # squared: no root
    if same_dict and total <= max_norm:
        return grads, total  # nothing to clip, so the bug hands back the caller's dict
    out = grads if in_place else {}
    for key, g in grads.items():
        reference_norm = norms[key] if per_tensor else total
        if always_scale or reference_norm > max_norm:
            factor = max_norm / reference_norm if reference_norm else 1.0
            if in_place:
                g *= factor
            else:
                out[key] = g * factor
        elif not in_place:
            out[key] = g if same_arrays else g.copy()
    if norm_after:
        total = float(np.sqrt(sum(np.sum(v**2) for v in out.values())))
    return out, total


# --------------------------------------------------------------------------------------------
# The independent implementation passes; an imported autograd name is trapped and restored
# --------------------------------------------------------------------------------------------


def test_the_independent_test_implementation_passes_too():
    hidden.check_rnn_forward(
        as_student(forward, "rnn_forward"), as_student(loss, "classification_loss")
    )
    hidden.check_rnn_backward(as_student(backward, "rnn_backward"))
    hidden.check_clip_by_global_norm(as_student(clip, "clip_by_global_norm"))


def test_an_imported_autograd_name_is_trapped_and_restored(reference):
    originals = [
        (owner, name, getattr(owner, name)) for owner, name, _ in hidden.shortcut_targets()
    ]
    expect_shortcut(
        lambda: hidden.check_rnn_backward(as_student(backward_with_imported_grad, "rnn_backward")),
        "rnn_backward",
        "torch.autograd.grad",
    )
    for owner, name, original in originals:
        assert getattr(owner, name) is original, name
    assert globals()["imported_grad"] is torch.autograd.grad


# --------------------------------------------------------------------------------------------
# Part A: plausible bugs
# --------------------------------------------------------------------------------------------

GOOD_LOSS = as_student(loss, "classification_loss")
GOOD_FORWARD = as_student(forward, "rnn_forward")
FIRST = r"^rnn_forward, B=1, T=1, "
UNSORTED = r"^rnn_forward, B=4, T=6, D=2, H=5, K=3, lengths \(6, 2, 4, 1\) in no order"
LOSS_FIRST = FIRST.replace("rnn_forward", "classification_loss")
LOSS_UNSORTED = UNSORTED.replace("rnn_forward", "classification_loss")


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"stable": False}, Failure(r"^rnn_forward, .*scores near 1000", "probs contains nan")),
        ({"use_h0": False}, Failure(FIRST, "^hs differs")),
        ({"transpose_w": True}, Failure(FIRST, "^hs differs")),
        ({"keep_h0": True}, Failure(FIRST, r"^hs has shape \(1, 2, 4\)", r"shape \(1, 1, 4\)")),
        ({"in_place_state": True}, Failure(FIRST, r"in place: h0\b")),
        ({"move_on_padding": True}, Failure(UNSORTED, "^hs differs", r"at \[1, [2-5],")),
        ({"zero_padding": True}, Failure(UNSORTED, "^hs differs", r"at \[1, 2,")),
    ],
    ids=row_id,
)
def test_check_rnn_forward_rejects_bug(bugs, failure):
    expect_failure(
        lambda: hidden.check_rnn_forward(as_student(forward, "rnn_forward", **bugs), GOOD_LOSS),
        failure,
    )


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"summed": True}, Failure(LOSS_UNSORTED, "^classification_loss returned", "the sum over")),
        ({"all_classes": True}, Failure(LOSS_FIRST, "^classification_loss differs")),
        (
            {"per_sequence": True},
            Failure(LOSS_FIRST, "^classification_loss should be a single number"),
        ),
    ],
    ids=row_id,
)
def test_check_classification_loss_rejects_bug(bugs, failure):
    student = as_student(loss, "classification_loss", **bugs)
    expect_failure(lambda: hidden.check_rnn_forward(GOOD_FORWARD, student), failure)


def test_naive_softmax_passes_the_visible_test_but_not_the_hidden_one(reference):
    naive = as_student(forward, "rnn_forward", stable=False)
    run_visible(ASSIGNMENT, "test_forward_visible", rnn_forward=naive)
    expect_failure(
        lambda: hidden.check_rnn_forward(naive, reference["classification_loss"]),
        Failure("scores near 1000", "probs contains nan"),
    )


# The cases of the visible tests (course/checks/a1_rnn_bptt.py), as their failures name them.
VISIBLE_FORWARD = r"^rnn_forward, three sequences of lengths 3, 1 and 2"
VISIBLE_LOSS = r"^classification_loss, three sequences of lengths 3, 1 and 2"
VISIBLE_BACKWARD = r"^rnn_backward, three sequences of lengths 2, 5 and 3"
VISIBLE_CLIP = r"^clip_by_global_norm, gradients of global norm 13,"


def test_the_visible_forward_test_names_the_wrong_quantity():
    def visible(**functions):
        return lambda: run_visible(ASSIGNMENT, "test_forward_visible", **functions)

    expect_failure(
        visible(rnn_forward=as_student(forward, "rnn_forward", use_h0=False)),
        Failure(VISIBLE_FORWARD, "^hs differs"),
    )
    expect_failure(
        visible(rnn_forward=as_student(forward, "rnn_forward", move_on_padding=True)),
        Failure(VISIBLE_FORWARD, "^hs differs", r"at \[2, 2, "),
    )
    expect_failure(
        visible(classification_loss=as_student(loss, "classification_loss", summed=True)),
        Failure(VISIBLE_LOSS, "^classification_loss differs"),
    )


def forward_with_torch_rnn(xs, lengths, h0, params):
    H = np.shape(h0)[-1]
    rnn = torch.nn.RNN(np.shape(xs)[-1], H, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(torch.from_numpy(np.ascontiguousarray(params["W"])))
        rnn.weight_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(params["U"])))
        rnn.bias_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(params["b"])))
        rnn.bias_hh_l0.zero_()
        rows = []
        for row, length in enumerate(lengths):
            x = torch.from_numpy(np.ascontiguousarray(xs[row, :length]))[None]
            out, _ = rnn(x, torch.from_numpy(np.array(h0[row]))[None, None])  # (1, length, H)
            out = out[0].numpy()
            rows.append(np.concatenate([out, np.repeat(out[-1:], np.shape(xs)[1] - length, 0)]))
    hs = np.array(rows)
    scores = torch.from_numpy(hs[:, -1] @ params["V"].T + params["c"])
    return hs, torch.softmax(scores, dim=1).numpy()


def forward_with_course_helper(xs, lengths, h0, params):
    course.metrics.record("a1", "hidden size", np.shape(h0)[-1])
    return forward(xs, lengths, h0, params)


def test_check_rnn_forward_rejects_torch_nn_rnn(reference):
    # The shortcut is genuine: outside the trap it computes the right answer.
    case = hidden.forward_cases()[1]
    inputs = (case.xs, case.lengths, case.h0, case.params)
    hs, probs = forward_with_torch_rnn(*inputs)
    hs_ref, probs_ref = reference["rnn_forward"](*inputs)
    np.testing.assert_allclose(hs, hs_ref, atol=1e-12)
    np.testing.assert_allclose(probs, probs_ref, atol=1e-12)

    student = as_student(forward_with_torch_rnn, "rnn_forward")
    expect_shortcut(
        lambda: hidden.check_rnn_forward(student, GOOD_LOSS), "rnn_forward", "torch.nn.RNN"
    )


def test_check_rnn_forward_rejects_course_helpers():
    student = as_student(forward_with_course_helper, "rnn_forward")
    expect_shortcut(
        lambda: hidden.check_rnn_forward(student, GOOD_LOSS), "rnn_forward", "course.metrics.record"
    )


# --------------------------------------------------------------------------------------------
# Part B: plausible bugs and autograd in disguise
# --------------------------------------------------------------------------------------------

ONE_STEP = r"^rnn_backward, B=1, T=1, "
LENGTH_ONE = r"^rnn_backward, B=3, T=5, .*every length 1"
UNSORTED_B = r"^rnn_backward, B=4, T=9, .*in no order"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"tanh_grad": False}, Failure(ONE_STEP, "^dW differs")),
        ({"previous_state": False}, Failure(ONE_STEP, "^dW differs")),
        ({"through_time": False}, Failure(ONE_STEP, "^dh0 differs")),
        ({"through_padding": False}, Failure(LENGTH_ONE, "^dW differs")),
        ({"move_on_padding": True}, Failure(LENGTH_ONE, "^dV differs")),
        ({"transposed_w": True}, Failure(ONE_STEP, "^dh0 differs")),
        ({"divide_by": "nothing"}, Failure(LENGTH_ONE, "^dV differs")),
        ({"divide_by": "real tokens"}, Failure(UNSORTED_B, "^dV differs")),
        ({"h0_grad": False}, Failure(ONE_STEP, "^dh0 differs")),
        ({"sum_h0": True}, Failure(ONE_STEP, r"^dh0 has shape \(3,\)", r"shape \(1, 3\)")),
        ({"keys": ("W", "U", "b", "V", "c")}, Failure(ONE_STEP, "no gradient for 'h0'")),
        ({"stable": False}, Failure("^rnn_backward, .*scores near 1000", "^dV contains nan")),
        ({"in_place_state": True}, Failure(ONE_STEP, r"in place: h0\b")),
    ],
    ids=row_id,
)
def test_check_rnn_backward_rejects_bug(bugs, failure):
    student = as_student(backward, "rnn_backward", **bugs)
    expect_failure(lambda: hidden.check_rnn_backward(student), failure)


def _mean_loss(tensors, xs, lengths, labels):
    """The mean cross-entropy as a torch function of "W", "U", "b", "V", "c", "h0"."""
    total = torch.zeros((), dtype=torch.float64)
    for row, (length, label) in enumerate(zip(lengths, labels, strict=True)):
        h = tensors["h0"][row]
        for x in torch.tensor(np.array(xs[row, :length])):
            h = torch.tanh(tensors["W"] @ h + tensors["U"] @ x + tensors["b"])
        total = total - torch.log_softmax(tensors["V"] @ h + tensors["c"], dim=0)[int(label)]
    return total / len(lengths)


def _torch_loss(xs, lengths, labels, h0, params):
    leaves = {
        k: torch.tensor(np.array(v), requires_grad=True) for k, v in {**params, "h0": h0}.items()
    }
    return leaves, _mean_loss(leaves, xs, lengths, labels)


def backward_with_autograd(xs, lengths, labels, h0, params):
    leaves, total = _torch_loss(xs, lengths, labels, h0, params)
    total.backward()
    return {k: leaf.grad.numpy() for k, leaf in leaves.items()}


def backward_with_autograd_grad(xs, lengths, labels, h0, params):
    leaves, total = _torch_loss(xs, lengths, labels, h0, params)
    grads = torch.autograd.grad(total, list(leaves.values()))
    return {k: g.numpy() for k, g in zip(leaves, grads, strict=True)}


def backward_with_imported_grad(xs, lengths, labels, h0, params):
    leaves, total = _torch_loss(xs, lengths, labels, h0, params)
    grads = imported_grad(total, list(leaves.values()))  # bound at import time
    return {k: g.numpy() for k, g in zip(leaves, grads, strict=True)}


def backward_with_torch_func(xs, lengths, labels, h0, params):
    names = [*params, "h0"]
    tensors = [torch.tensor(np.array(v)) for v in [*params.values(), h0]]

    def loss_of(*values):
        return _mean_loss(dict(zip(names, values, strict=True)), xs, lengths, labels)

    grads = torch.func.grad(loss_of, argnums=tuple(range(len(tensors))))(*tensors)
    return {n: g.numpy() for n, g in zip(names, grads, strict=True)}


def backward_that_hides_the_trap(xs, lengths, labels, h0, params):
    try:
        return backward_with_autograd(xs, lengths, labels, h0, params)
    except Exception:  # noqa: BLE001 - a student who catches everything
        return backward(xs, lengths, labels, h0, params)


@pytest.mark.parametrize(
    ("implementation", "called"),
    [
        (backward_with_autograd, "torch.Tensor.backward"),
        (backward_with_autograd_grad, "torch.autograd.grad"),
        (backward_with_imported_grad, "torch.autograd.grad"),
        (backward_with_torch_func, "torch.autograd.grad"),
        (backward_that_hides_the_trap, r"torch.Tensor.backward \(and caught the error\)"),
    ],
)
def test_check_rnn_backward_rejects_autograd(implementation, called):
    # Outside the trap these shortcuts give the right gradients ...
    case = hidden.backward_cases()[2]
    expected = backward(**case.inputs)
    got = implementation(**case.inputs)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], atol=1e-10)
    # ... inside the check they are caught.
    student = as_student(implementation, "rnn_backward")
    expect_shortcut(lambda: hidden.check_rnn_backward(student), "rnn_backward", called)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"tanh_grad": False}, Failure(VISIBLE_BACKWARD, "^dW differs", r" at \[")),
        ({"move_on_padding": True}, Failure(VISIBLE_BACKWARD, "^dV differs", r" at \[")),
        ({"through_padding": False}, Failure(VISIBLE_BACKWARD, "^dW differs", r" at \[")),
        ({"divide_by": "real tokens"}, Failure(VISIBLE_BACKWARD, "^dV differs", r" at \[")),
    ],
    ids=row_id,
)
def test_the_visible_backward_test_names_the_wrong_gradient(bugs, failure):
    student = as_student(backward, "rnn_backward", **bugs)
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_backward_visible", rnn_backward=student), failure
    )


# --------------------------------------------------------------------------------------------
# Lecture 1 wrote BPTT for another loss: its backward pass, copied, does not pass Part B
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lecture():
    """The functions that Lecture 1's cells define (read with jupytext, defined, not run)."""
    return lecture_functions(ROOT / "lectures" / "01_rnn_bptt.py")


def lecture_bptt_per_sequence(lecture, xs, lengths, labels, h0, params):
    """Lecture 1's rnn_forward and bptt_gradients, run on each sequence's real steps with the
    sequence's class as the target of every step, averaged over the batch: the closest a
    student gets to Part B by copying the lecture's cell and looping over the batch."""
    weights = {name: torch.tensor(np.array(value)) for name, value in params.items()}
    totals, from_h0 = {}, []
    for row, length in enumerate(lengths):
        x = torch.tensor(np.array(xs[row, :length]))  # (length, D)
        targets = torch.full((int(length),), int(labels[row]))
        start = torch.tensor(np.array(h0[row]))
        hs, probs, _ = lecture["rnn_forward"](x, targets, **weights, h0=start)
        grads, _ = lecture["bptt_gradients"](x, targets, hs, probs, weights["W"], weights["V"])
        from_h0.append(grads.pop("h0").numpy() / len(lengths))
        for name, value in grads.items():
            totals[name] = totals.get(name, 0.0) + value.numpy() / len(lengths)
    return {**totals, "h0": np.array(from_h0)}


def test_the_lecture_bptt_cell_pasted_in_fails_part_b(lecture):
    with pytest.raises(TypeError, match=r"bptt_gradients\(\) missing 1 required"):
        run_visible(ASSIGNMENT, "test_backward_visible", rnn_backward=lecture["bptt_gradients"])


def test_the_lecture_bptt_cell_looped_over_the_batch_fails_part_b(reference, lecture):
    given = []  # the visible test's data: the arguments it passes to rnn_backward

    def recording(*args):
        given.append(copy.deepcopy(args))
        return reference["rnn_backward"](*args)

    run_visible(ASSIGNMENT, "test_backward_visible", rnn_backward=recording)
    data = list(given[0])

    # The adapter is faithful: it gives the exact gradients of the lecture's loss, a class
    # prediction at every real step, averaged over the batch ...
    adapted = lecture_bptt_per_sequence(lecture, *data)
    xs, lengths, labels, h0, params = data
    leaves = {
        k: torch.tensor(np.array(v), requires_grad=True) for k, v in {**params, "h0": h0}.items()
    }
    every_step = torch.zeros((), dtype=torch.float64)
    for row, length in enumerate(lengths):
        h = leaves["h0"][row]
        for x in torch.tensor(xs[row, :length]):
            h = torch.tanh(leaves["W"] @ h + leaves["U"] @ x + leaves["b"])
            scores = leaves["V"] @ h + leaves["c"]
            every_step = every_step - torch.log_softmax(scores, dim=0)[int(labels[row])]
    (every_step / len(lengths)).backward()
    for name, leaf in leaves.items():
        np.testing.assert_allclose(adapted[name], leaf.grad.numpy(), atol=1e-10)

    # ... and Part B differentiates another loss: the visible test rejects it, naming dV.
    def copier(*args):
        return lecture_bptt_per_sequence(lecture, *args)

    message = expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_backward_visible", rnn_backward=copier),
        Failure(VISIBLE_BACKWARD, "^dV differs", r" by \S+ at \["),
    )
    gap = float(case_label(message)[1].split(" by ")[1].split()[0])
    assert gap > 0.1, message


# --------------------------------------------------------------------------------------------
# Part C: plausible bugs
# --------------------------------------------------------------------------------------------


SIX = r"^clip_by_global_norm, six gradients of norm 2"
BELOW = r"^clip_by_global_norm, .*below max_norm"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"per_tensor": True}, Failure(SIX, r"^clipped\['\w+'\] differs")),
        ({"in_place": True}, Failure(SIX, r"in place: grads\['W'\]")),
        ({"same_arrays": True}, Failure(BELOW, r"^clipped\['W'\] is \(a view of\) the input")),
        ({"always_scale": True}, Failure(BELOW, r"^clipped\['W'\] differs", "unchanged gradient")),
        ({"same_dict": True}, Failure(BELOW, "returned its input dict")),
        ({"norm_after": True}, Failure(SIX, "^total_norm differs", "norm before clipping")),
        (
            {"validate": False},
            Failure(None, r"max_norm=0\)", "should raise ValueError", "returned"),
        ),
        ({"squared": True}, Failure(SIX, "^total_norm differs", "norm before clipping")),
    ],
    ids=row_id,
)
def test_check_clip_rejects_bug(bugs, failure):
    student = as_student(clip, "clip_by_global_norm", **bugs)
    expect_failure(lambda: hidden.check_clip_by_global_norm(student), failure)


def clip_with_assert(grads, max_norm):
    assert max_norm > 0, "max_norm must be positive"
    return clip(grads, max_norm)


def clip_with_torch(grads, max_norm):
    holders = [
        torch.zeros(np.shape(g), dtype=torch.float64, requires_grad=True) for g in grads.values()
    ]
    for holder, g in zip(holders, grads.values(), strict=True):
        holder.grad = torch.tensor(np.array(g))
    total = torch.nn.utils.clip_grad_norm_(holders, max_norm)
    return {k: h.grad.numpy() for k, h in zip(grads, holders, strict=True)}, float(total)


def test_check_clip_rejects_the_wrong_exception_type():
    student = as_student(clip_with_assert, "clip_by_global_norm")
    expect_failure(
        lambda: hidden.check_clip_by_global_norm(student),
        Failure(None, "should raise ValueError", "raised AssertionError"),
    )


def test_check_clip_rejects_clip_grad_norm():
    student = as_student(clip_with_torch, "clip_by_global_norm")
    expect_shortcut(
        lambda: hidden.check_clip_by_global_norm(student),
        "clip_by_global_norm",
        "torch.nn.utils.clip_grad_norm_",
    )


def test_per_tensor_clipping_fails_the_visible_test_on_clipped_w():
    student = as_student(clip, "clip_by_global_norm", per_tensor=True)
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_clip_visible", clip_by_global_norm=student),
        Failure(VISIBLE_CLIP, r"^clipped\['W'\] differs", r"by 2\.0e\+00 at \[1, 1\]"),
    )


# --------------------------------------------------------------------------------------------
# The traps themselves
# --------------------------------------------------------------------------------------------

REQUIRED_TRAPS = {
    "torch.autograd.backward",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.RNN",
    "course.metrics.record",
    "course.metrics.load_all",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)


def test_each_visible_cell_is_one_call_of_its_check_and_the_reference_passes_it(reference, capsys):
    from course.checks.a1_rnn_bptt import check_part_a, check_part_b, check_part_c

    cells = solution(ASSIGNMENT).test_cells
    assert cells["test_forward_visible"].visible_source.strip() == (
        "check_part_a(rnn_forward, classification_loss)"
    )
    assert cells["test_backward_visible"].visible_source.strip() == "check_part_b(rnn_backward)"
    assert cells["test_clip_visible"].visible_source.strip() == "check_part_c(clip_by_global_norm)"
    check_part_a(reference["rnn_forward"], reference["classification_loss"])
    check_part_b(reference["rnn_backward"])
    check_part_c(reference["clip_by_global_norm"])
    assert capsys.readouterr().out.count("visible test: passed.") == 3
