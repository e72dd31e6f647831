"""Assignment 1: the hidden checks reject plausible bugs, autograd and torch.nn.RNN in disguise.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: an independent NumPy implementation with
one switch per plausible bug; each bug must fail the hidden check with a message that names
the case and the quantity; the visible tests name the wrong quantity too; and shortcuts that
give the right answer outside the traps are caught inside them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from solution_loader import as_student, load_solution, run_cell
from torch.autograd import grad as imported_grad

import course.metrics
from autograder.hidden import a1_rnn_bptt as hidden

ASSIGNMENT = "a1_rnn_bptt"


@pytest.fixture(scope="module")
def solution():
    return load_solution(ASSIGNMENT)


@pytest.fixture(scope="module")
def reference(solution):
    return solution.namespace()


# --------------------------------------------------------------------------------------------
# An independent, configurable NumPy implementation: each flag switches on one plausible bug.
# --------------------------------------------------------------------------------------------


def forward(
    xs,
    h0,
    params,
    *,
    stable=True,
    use_h0=True,
    transpose_w=False,
    keep_h0=False,
    in_place_state=False,
):
    W, U, b, V, c = (params[name] for name in ("W", "U", "b", "V", "c"))
    h = h0 if in_place_state else (np.array(h0, dtype=float) if use_h0 else np.zeros(len(h0)))
    rows = [np.array(h, dtype=float)] if keep_h0 else []
    for x in xs:
        new = np.tanh((W.T if transpose_w else W) @ h + U @ x + b)
        if in_place_state:
            h[:] = new  # writes into the caller's h0
        else:
            h = new
        rows.append(np.array(h, dtype=float))
    hs = np.array(rows)
    scores = hs @ V.T + c
    if stable:
        scores = scores - scores.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(scores)
        return hs, e / e.sum(axis=1, keepdims=True)


def loss(probs, targets, *, mean=False, all_classes=False, per_step=False):
    if all_classes:
        return float(-np.log(probs).sum())
    terms = -np.log(probs[np.arange(len(targets)), targets])
    if per_step:
        return terms
    return float(terms.mean() if mean else terms.sum())


def backward(
    xs,
    targets,
    h0,
    params,
    *,
    tanh_grad=True,
    previous_state=True,
    through_time=True,
    h0_grad=True,
    keys=("W", "U", "b", "V", "c", "h0"),
    **forward_bugs,
):
    W, V = params["W"], params["V"]
    hs, probs = forward(xs, h0, params, **forward_bugs)
    T, H = hs.shape
    dscores = probs.copy()
    dscores[np.arange(T), targets] -= 1
    g = {name: np.zeros_like(np.asarray(params[name], dtype=float)) for name in params}
    g["V"], g["c"] = dscores.T @ hs, dscores.sum(axis=0)
    carry = np.zeros(H)
    for t in reversed(range(T)):
        da = (V.T @ dscores[t] + carry) * ((1 - hs[t] ** 2) if tanh_grad else 1.0)
        before = (hs[t - 1] if t > 0 else np.asarray(h0, dtype=float)) if previous_state else hs[t]
        g["W"] += np.outer(da, before)
        g["U"] += np.outer(da, xs[t])
        g["b"] += da
        carry = W.T @ da if through_time else np.zeros(H)
    g["h0"] = (W.T @ da if T else np.zeros(H)) if h0_grad else np.zeros(H)
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
    hidden.check_rnn_forward(as_student(forward, "rnn_forward"), as_student(loss, "sequence_loss"))
    hidden.check_rnn_backward(as_student(backward, "rnn_backward"))
    hidden.check_clip_by_global_norm(as_student(clip, "clip_by_global_norm"))


def test_an_imported_autograd_name_is_trapped_and_restored(reference):
    originals = [
        (owner, name, getattr(owner, name)) for owner, name, _ in hidden.shortcut_targets()
    ]
    with pytest.raises(hidden.ShortcutUsed, match="it called torch.autograd.grad"):
        hidden.check_rnn_backward(as_student(backward_with_imported_grad, "rnn_backward"))
    for owner, name, original in originals:
        assert getattr(owner, name) is original, name
    assert globals()["imported_grad"] is torch.autograd.grad


# --------------------------------------------------------------------------------------------
# Part A: plausible bugs
# --------------------------------------------------------------------------------------------

GOOD_LOSS = as_student(loss, "sequence_loss")
GOOD_FORWARD = as_student(forward, "rnn_forward")


@pytest.mark.parametrize(
    ("bugs", "message"),
    [
        ({"stable": False}, r"scores near 1000.*probs contains nan"),
        ({"use_h0": False}, r"\[rnn_forward, T=1, .*\] hs differs from the reference by"),
        ({"transpose_w": True}, r"\[rnn_forward, T=1, .*\] hs differs from the reference by"),
        ({"keep_h0": True}, r"hs has shape \(2, 4\), but the reference has shape \(1, 4\)"),
        ({"in_place_state": True}, r"rnn_forward modified its input h0 in place"),
    ],
)
def test_check_rnn_forward_rejects_bug(bugs, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_rnn_forward(as_student(forward, "rnn_forward", **bugs), GOOD_LOSS)


@pytest.mark.parametrize(
    ("bugs", "message"),
    [
        ({"mean": True}, r"the mean over the 7 steps; the loss is their sum"),
        ({"all_classes": True}, r"sequence_loss differs from the reference by"),
        ({"per_step": True}, r"sequence_loss should be a single number, got ndarray of shape"),
    ],
)
def test_check_sequence_loss_rejects_bug(bugs, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_rnn_forward(GOOD_FORWARD, as_student(loss, "sequence_loss", **bugs))


def test_naive_softmax_passes_the_visible_test_but_not_the_hidden_one(solution, reference):
    naive = as_student(forward, "rnn_forward", stable=False)
    run_cell(
        solution.test_cells["test_forward_visible"].source,
        {**reference, "rnn_forward": naive},
        "test_forward_visible",
    )
    with pytest.raises(AssertionError, match="probs contains nan"):
        hidden.check_rnn_forward(naive, reference["sequence_loss"])


def forward_with_torch_rnn(xs, h0, params):
    rnn = torch.nn.RNN(xs.shape[1], len(h0), dtype=torch.float64)
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(torch.from_numpy(np.ascontiguousarray(params["W"])))
        rnn.weight_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(params["U"])))
        rnn.bias_ih_l0.copy_(torch.from_numpy(np.ascontiguousarray(params["b"])))
        rnn.bias_hh_l0.zero_()
        hs, _ = rnn(
            torch.from_numpy(np.ascontiguousarray(xs)), torch.from_numpy(np.array(h0))[None]
        )
    hs = hs.numpy()
    return hs, torch.softmax(torch.from_numpy(hs @ params["V"].T + params["c"]), dim=1).numpy()


def forward_with_course_helper(xs, h0, params):
    course.metrics.record("a1", "hidden size", len(h0))
    return forward(xs, h0, params)


def test_check_rnn_forward_rejects_torch_nn_rnn(reference):
    # The shortcut is genuine: outside the trap it computes the right answer.
    xs, targets, h0, params = hidden.FORWARD_CASES[1].build()
    hs, probs = forward_with_torch_rnn(xs, h0, params)
    hs_ref, probs_ref = reference["rnn_forward"](xs, h0, params)
    np.testing.assert_allclose(hs, hs_ref, atol=1e-12)
    np.testing.assert_allclose(probs, probs_ref, atol=1e-12)

    with pytest.raises(
        hidden.ShortcutUsed,
        match="rnn_forward must be written by hand with NumPy; it called torch.nn.RNN",
    ):
        hidden.check_rnn_forward(as_student(forward_with_torch_rnn, "rnn_forward"), GOOD_LOSS)


def test_check_rnn_forward_rejects_course_helpers():
    with pytest.raises(hidden.ShortcutUsed, match="it called course.metrics.record"):
        hidden.check_rnn_forward(as_student(forward_with_course_helper, "rnn_forward"), GOOD_LOSS)


# --------------------------------------------------------------------------------------------
# Part B: plausible bugs and autograd in disguise
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bugs", "message"),
    [
        ({"tanh_grad": False}, r"\[rnn_backward, T=1, .*\] dW differs from autograd by"),
        ({"previous_state": False}, r"\[rnn_backward, T=1, .*\] dW differs from autograd by"),
        ({"through_time": False}, r"\[rnn_backward, T=9, .*\] dW differs from autograd by"),
        ({"h0_grad": False}, r"\[rnn_backward, T=1, .*\] dh0 differs from autograd by"),
        ({"keys": ("W", "U", "b", "V", "c")}, r"returned no gradient for 'h0'"),
        ({"stable": False}, r"scores near 1000.*dV contains nan"),
        ({"in_place_state": True}, r"rnn_backward modified its input h0 in place"),
    ],
)
def test_check_rnn_backward_rejects_bug(bugs, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_rnn_backward(as_student(backward, "rnn_backward", **bugs))


def _summed_loss(tensors, xs, targets):
    """The summed cross-entropy as a torch function of the tensors "W", "U", "b", "V", "c", "h0"."""
    h = tensors["h0"]
    total = torch.zeros((), dtype=torch.float64)
    for x, k in zip(torch.tensor(np.array(xs)), targets, strict=True):
        h = torch.tanh(tensors["W"] @ h + tensors["U"] @ x + tensors["b"])
        total = total - torch.log_softmax(tensors["V"] @ h + tensors["c"], dim=0)[int(k)]
    return total


def _torch_loss(xs, targets, h0, params):
    leaves = {
        k: torch.tensor(np.array(v), requires_grad=True) for k, v in {**params, "h0": h0}.items()
    }
    return leaves, _summed_loss(leaves, xs, targets)


def backward_with_autograd(xs, targets, h0, params):
    leaves, total = _torch_loss(xs, targets, h0, params)
    total.backward()
    return {k: leaf.grad.numpy() for k, leaf in leaves.items()}


def backward_with_autograd_grad(xs, targets, h0, params):
    leaves, total = _torch_loss(xs, targets, h0, params)
    grads = torch.autograd.grad(total, list(leaves.values()))
    return {k: g.numpy() for k, g in zip(leaves, grads, strict=True)}


def backward_with_imported_grad(xs, targets, h0, params):
    leaves, total = _torch_loss(xs, targets, h0, params)
    grads = imported_grad(total, list(leaves.values()))  # bound at import time
    return {k: g.numpy() for k, g in zip(leaves, grads, strict=True)}


def backward_with_torch_func(xs, targets, h0, params):
    names = [*params, "h0"]
    tensors = [torch.tensor(np.array(v)) for v in [*params.values(), h0]]

    def loss_of(*values):
        return _summed_loss(dict(zip(names, values, strict=True)), xs, targets)

    grads = torch.func.grad(loss_of, argnums=tuple(range(len(tensors))))(*tensors)
    return {n: g.numpy() for n, g in zip(names, grads, strict=True)}


def backward_that_hides_the_trap(xs, targets, h0, params):
    try:
        return backward_with_autograd(xs, targets, h0, params)
    except Exception:  # noqa: BLE001 - a student who catches everything
        return backward(xs, targets, h0, params)


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
    xs, targets, h0, params = hidden.BACKWARD_CASES[0].build()
    expected = backward(xs, targets, h0, params)
    got = implementation(xs, targets, h0, params)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], atol=1e-10)
    # ... inside the check they are caught.
    with pytest.raises(
        hidden.ShortcutUsed,
        match=f"rnn_backward must compute gradients by hand; it called {called}",
    ):
        hidden.check_rnn_backward(as_student(implementation, "rnn_backward"))


def test_missing_tanh_derivative_passes_dv_but_fails_the_visible_test_on_dw(solution, reference):
    buggy = {**reference, "rnn_backward": as_student(backward, "rnn_backward", tanh_grad=False)}
    with pytest.raises(AssertionError, match=r"^dW differs from autograd by .* at \["):
        run_cell(
            solution.test_cells["test_backward_visible"].source, buggy, "test_backward_visible"
        )


# --------------------------------------------------------------------------------------------
# Part C: plausible bugs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bugs", "message"),
    [
        (
            {"per_tensor": True},
            r"six gradients of norm 2 .* clipped\['\w+'\] differs from clip_grad_norm_",
        ),
        ({"in_place": True}, r"modified its input grads\['W'\] in place"),
        (
            {"same_arrays": True},
            r"below max_norm.* clipped\['W'\] is \(a view of\) the input array",
        ),
        (
            {"always_scale": True},
            r"below max_norm.* clipped\['W'\] differs from the unchanged gradient",
        ),
        ({"same_dict": True}, r"below max_norm.* returned its input dict as clipped; return a new"),
        ({"norm_after": True}, r"total_norm differs from the norm before clipping"),
        ({"validate": False}, r"max_norm=0\) should raise ValueError .* but it returned"),
        ({"squared": True}, r"six gradients .* total_norm differs from the norm before clipping"),
    ],
)
def test_check_clip_rejects_bug(bugs, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_clip_by_global_norm(as_student(clip, "clip_by_global_norm", **bugs))


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
    with pytest.raises(AssertionError, match=r"should raise ValueError, but raised AssertionError"):
        hidden.check_clip_by_global_norm(as_student(clip_with_assert, "clip_by_global_norm"))


def test_check_clip_rejects_clip_grad_norm():
    with pytest.raises(
        hidden.ShortcutUsed,
        match=r"clip_by_global_norm must compute the global norm and the scaling by hand; "
        r"it called torch.nn.utils.clip_grad_norm_",
    ):
        hidden.check_clip_by_global_norm(as_student(clip_with_torch, "clip_by_global_norm"))


def test_per_tensor_clipping_fails_the_visible_test_on_clipped_w(solution, reference):
    buggy = {
        **reference,
        "clip_by_global_norm": as_student(clip, "clip_by_global_norm", per_tensor=True),
    }
    with pytest.raises(
        AssertionError,
        match=r"^clipped\['W'\] differs from the expected value by 2\.0e\+00 at \[1, 1\]",
    ):
        run_cell(solution.test_cells["test_clip_visible"].source, buggy, "test_clip_visible")


def test_visible_forward_test_names_the_wrong_quantity(solution, reference):
    cell = solution.test_cells["test_forward_visible"].source
    with pytest.raises(AssertionError, match=r"^hs differs from the expected value by"):
        run_cell(
            cell, {**reference, "rnn_forward": as_student(forward, "rnn_forward", use_h0=False)}
        )
    with pytest.raises(AssertionError, match=r"^sequence_loss differs from the expected value"):
        run_cell(cell, {**reference, "sequence_loss": as_student(loss, "sequence_loss", mean=True)})


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
    labels = {label for _, _, label in hidden.shortcut_targets()}
    assert REQUIRED_TRAPS <= labels
