# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Assignment 1: an RNN forward pass, backpropagation through time by hand, and gradient clipping
#
# In Lecture 1 PyTorch computed every gradient for us. Here you open the box: you run a vanilla
# RNN over a sequence with plain NumPy, derive and code its gradients yourself (BPTT), and write
# the global-norm clipping that keeps exploding gradients in check.
#
# **Goals.** After this assignment you can
#
# 1. run an Elman RNN with a softmax read-out over a whole sequence and compute its summed
#    cross-entropy loss, in a numerically safe way (Part A);
# 2. push the loss gradient backwards through time and check it against autograd (Part B);
# 3. rescale a set of gradients to a maximum global norm without touching the originals (Part C);
# 4. explain what truncating BPTT does and does not cut away (Part D, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. One sequence has $T$ steps; inputs have $D$ features, the
# hidden state has $H$ units and there are $K$ output classes. For $t = 1, \dots, T$:
#
# $$a_t = W h_{t-1} + U x_t + b, \qquad h_t = \tanh(a_t), \qquad
#   \hat y_t = \operatorname{softmax}(V h_t + c),$$
#
# $$L = \sum_{t=1}^{T} \mathrm{CE}(y_t, \hat y_t) = -\sum_{t=1}^{T} \log \hat y_{t,\,k_t},$$
#
# where $k_t$ is the target class at step $t$ and $y_t$ is its one-hot vector.
#
# | name | shape | meaning |
# | --- | --- | --- |
# | `xs` | (T, D) | inputs $x_1, \dots, x_T$, one row per step |
# | `targets` | (T,) | integer class ids $k_1, \dots, k_T$ |
# | `h0` | (H,) | initial hidden state $h_0$ (not always zero!) |
# | `params["W"]` | (H, H) | recurrent weights |
# | `params["U"]` | (H, D) | input weights |
# | `params["b"]` | (H,) | hidden bias |
# | `params["V"]` | (K, H) | output weights |
# | `params["c"]` | (K,) | output bias |
#
# The loss is the **sum** over steps, not the mean.
#
# ## How you are graded
#
# * Parts A, B and C are autograded. Each part has a **visible test** cell that you can run now:
#   it uses small fixed inputs and tells you which quantity is off, where and by how much.
# * Each part also has a **hidden test** cell. It looks empty in your copy; when the assignment
#   is graded it runs your function on other shapes, seeds and edge cases ($T = 1$, non-zero
#   $h_0$, very large scores, non-contiguous arrays, inputs that must not be modified...). Code
#   that only reproduces the visible numbers keeps the visible points and loses all the hidden
#   ones. Write general code.
# * Part D is a short written answer, graded by hand.
# * Write your code only where it says `YOUR CODE HERE`, and keep the function names and
#   signatures. Do not delete or copy cells: the grader looks for them by their ids.
# * The point is to do the work yourself. During the hidden tests, `torch.autograd`,
#   `Tensor.backward`, `torch.nn.RNN`, `torch.nn.utils.clip_grad_norm_` and the helpers of the
#   `course` package are replaced by traps: calling them from your functions fails the test.
#   (`course.checks`, which the visible tests use, is allowed.)
#
# Autograded: 13 points. Written: 2 points.

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks import assert_close

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## Part A: the forward pass and the loss (4 points)
#
# Implement `rnn_forward`, which returns every hidden state and every predicted distribution,
# and `sequence_loss`, which turns the predictions into the summed cross-entropy.
#
# Two things to watch:
#
# * The recurrence starts from the given `h0`, and `hs` holds $h_1, \dots, h_T$ (not $h_0$).
# * $\exp$ overflows a `float64` above about 709. A softmax over scores such as
#   $(1000, 999)$ must still give $(0.731, 0.269)$, not `nan`. Subtracting the largest score of
#   each row before exponentiating leaves the softmax unchanged (why?) and keeps it finite.
#
# Your functions must not modify their inputs.


# %% nbgrader={"grade": false, "grade_id": "rnn_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rnn_forward(
    xs: np.ndarray, h0: np.ndarray, params: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Run a tanh RNN with a softmax read-out over one sequence.

    Args:
        xs: inputs x_1..x_T, shape (T, D).
        h0: the initial hidden state, shape (H,).
        params: "W" (H, H), "U" (H, D), "b" (H,), "V" (K, H), "c" (K,).

    Returns:
        hs: hidden states h_1..h_T, shape (T, H).
        probs: softmax predictions y_hat_1..y_hat_T, shape (T, K); every row sums to 1.
    """
    ### BEGIN SOLUTION
    recurrent, read_out = params["W"], params["V"]
    # Input contributions of all steps at once: (T, D) @ (D, H) -> (T, H).
    drive = np.asarray(xs, dtype=np.float64) @ params["U"].T + params["b"]
    states = np.empty((drive.shape[0], recurrent.shape[0]))
    state = np.array(h0, dtype=np.float64)
    for step, push in enumerate(drive):
        state = np.tanh(recurrent @ state + push)
        states[step] = state
    scores = states @ read_out.T + params["c"]  # (T, H) @ (H, K) -> (T, K)
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))  # largest entry per row is 1
    return states, shifted / shifted.sum(axis=1, keepdims=True)
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "sequence_loss", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sequence_loss(probs: np.ndarray, targets: np.ndarray) -> float:
    """Summed cross-entropy of the predictions against the target class ids.

    Args:
        probs: predicted distributions, shape (T, K), as returned by rnn_forward.
        targets: the correct class id at every step, shape (T,), integers in [0, K).

    Returns:
        L = -sum_t log probs[t, targets[t]], as a Python float.
    """
    ### BEGIN SOLUTION
    chosen = np.take_along_axis(probs, np.asarray(targets).reshape(-1, 1), axis=1)
    return float(-np.log(chosen).sum())
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# The weights below are fixed by hand (no randomness), and the expected numbers were computed
# once with an independent implementation. Run this cell after writing both functions.

# %% nbgrader={"grade": true, "grade_id": "test_forward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
xs_a = np.array([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.0]])  # (T=3, D=2)
h0_a = np.array([0.1, -0.2, 0.3])  # (H=3,)
params_a = {
    "W": np.linspace(-0.5, 0.5, 9).reshape(3, 3),
    "U": np.linspace(-1.0, 1.0, 6).reshape(3, 2),
    "b": np.array([0.0, 0.1, -0.1]),
    "V": np.linspace(-1.0, 1.0, 12).reshape(4, 3),  # K=4
    "c": np.array([0.0, 0.5, -0.5, 0.2]),
}
targets_a = np.array([2, 0, 3])

hs_a, probs_a = rnn_forward(xs_a, h0_a, params_a)
assert_close(
    "hs",
    hs_a,
    [
        [-0.4218990053, -0.2682711820, -0.3799489623],
        [-0.8600304355, 0.3844267603, 0.9472134470],
        [0.9136289087, 0.5552263829, -0.5350833088],
    ],
    against="the expected value",
)
assert_close(
    "probs",
    probs_a,
    [
        [0.4309497263, 0.3963469978, 0.0813360006, 0.0913672753],
        [0.1472868113, 0.3140723826, 0.1494355462, 0.3892052598],
        [0.0904742481, 0.2482398538, 0.1519764544, 0.5093094436],
    ],
    against="the expected value",
)
assert_close("sum of each row of probs", probs_a.sum(axis=1), np.ones(3), atol=1e-9)
assert_close(
    "sequence_loss", sequence_loss(probs_a, targets_a), 5.0992395470, against="the expected value"
)
print("Part A, visible test: passed.")

# %% nbgrader={"grade": true, "grade_id": "test_forward_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): rnn_forward and sequence_loss on other shapes and seeds, T = 1,
# non-zero h0, scores near 1000 (a naive softmax overflows), non-contiguous arrays, and
# inputs that must come back unmodified. It runs when the assignment is graded.
### BEGIN HIDDEN TESTS
from autograder.hidden.a1_rnn_bptt import check_rnn_forward

check_rnn_forward(rnn_forward, sequence_loss)
### END HIDDEN TESTS

# %% [markdown]
# ## Part B: backpropagation through time, by hand (6 points)
#
# Implement `rnn_backward`: the gradient of the **summed** loss $L$ with respect to every
# parameter and to the initial state $h_0$. Use NumPy only; no autograd.
#
# A road map (derive each step on paper first):
#
# 1. Run your forward pass and keep what you need from it.
# 2. The gradient of $\mathrm{CE}(y_t, \hat y_t)$ with respect to the scores $V h_t + c$ has a
#    famously short form. From it you get the gradients for $V$ and $c$, summed over $t$.
# 3. The state $h_t$ influences $L$ along **two** paths: through its own prediction
#    $\hat y_t$, and through $h_{t+1}$ (and so through every later step). Walk backwards from
#    $t = T$ to $t = 1$, carrying the gradient that arrives from the future.
# 4. Going through $\tanh$ multiplies elementwise by $\tanh'(a_t) = 1 - h_t^2$.
# 5. $W$, $U$ and $b$ are shared by all steps, so their gradients are sums over $t$. Take care
#    which hidden state multiplies which step ($W$ meets $h_{t-1}$, not $h_t$).
# 6. What is left over after step $t = 1$ is the gradient for $h_0$.
#
# Return a dict with the keys `"W"`, `"U"`, `"b"`, `"V"`, `"c"` and `"h0"`, each of the same
# shape as the quantity it differentiates.


# %% nbgrader={"grade": false, "grade_id": "rnn_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rnn_backward(
    xs: np.ndarray, targets: np.ndarray, h0: np.ndarray, params: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Gradients of the summed cross-entropy L of rnn_forward, by backpropagation through time.

    Args:
        xs: inputs, shape (T, D).
        targets: target class ids, shape (T,).
        h0: the initial hidden state, shape (H,).
        params: "W" (H, H), "U" (H, D), "b" (H,), "V" (K, H), "c" (K,).

    Returns:
        A dict of dL/d(name) for name in "W", "U", "b", "V", "c" and "h0", each with the shape
        of that quantity.
    """
    ### BEGIN SOLUTION
    states, predictions = rnn_forward(xs, h0, params)
    n_steps = states.shape[0]
    # d(CE)/d(scores) = y_hat - one_hot(target): (T, K)
    score_grad = predictions.copy()
    score_grad[np.arange(n_steps), np.asarray(targets)] -= 1.0
    # The state each step starts from: h_0, h_1, ..., h_{T-1}, as a (T, H) array.
    incoming = np.concatenate([np.reshape(h0, (1, -1)), states[:-1]], axis=0)
    from_output = score_grad @ params["V"]  # dL_t/dh_t through the read-out, (T, H)
    pre_grad = np.empty_like(states)  # dL/da_t, (T, H)
    from_future = np.zeros(states.shape[1])  # dL/dh_t through h_{t+1}; zero after the last step
    for step in range(n_steps - 1, -1, -1):
        pre_grad[step] = (from_output[step] + from_future) * (1.0 - states[step] ** 2)
        from_future = params["W"].T @ pre_grad[step]
    gradients = {"V": score_grad.T @ states, "c": score_grad.sum(axis=0), "h0": from_future}
    gradients["W"] = pre_grad.T @ incoming  # sum over t of outer(dL/da_t, h_{t-1})
    gradients["U"] = pre_grad.T @ np.asarray(xs, dtype=np.float64)
    gradients["b"] = pre_grad.sum(axis=0)
    return gradients
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# This test builds the same computation in PyTorch, lets autograd differentiate it, and compares
# each of your gradients with autograd's.

# %% nbgrader={"grade": true, "grade_id": "test_backward_visible", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
import torch

rng_b = np.random.default_rng(2024)
T_b, D_b, H_b, K_b = 4, 3, 5, 4
xs_b = rng_b.normal(size=(T_b, D_b))
targets_b = rng_b.integers(0, K_b, size=T_b)
h0_b = 0.5 * rng_b.normal(size=H_b)
shapes_b = {"W": (H_b, H_b), "U": (H_b, D_b), "b": (H_b,), "V": (K_b, H_b), "c": (K_b,)}
params_b = {name: 0.5 * rng_b.normal(size=shape) for name, shape in shapes_b.items()}

grads_b = rnn_backward(xs_b, targets_b, h0_b, params_b)

# The reference: the forward pass written with torch tensors, differentiated by autograd.
leaves_b = {
    name: torch.tensor(value, requires_grad=True)
    for name, value in {**params_b, "h0": h0_b}.items()
}
state_b = leaves_b["h0"]
loss_b = torch.zeros((), dtype=torch.float64)
for x_t, k_t in zip(torch.from_numpy(xs_b), targets_b, strict=True):
    state_b = torch.tanh(leaves_b["W"] @ state_b + leaves_b["U"] @ x_t + leaves_b["b"])
    loss_b = loss_b - torch.log_softmax(leaves_b["V"] @ state_b + leaves_b["c"], dim=0)[k_t]
loss_b.backward()

for name in ["V", "c", "W", "U", "b", "h0"]:
    assert name in grads_b, f"rnn_backward must return a gradient for {name!r}"
    assert_close(f"d{name}", grads_b[name], leaves_b[name].grad, atol=1e-8, against="autograd")
print("Part B, visible test: passed.")

# %% nbgrader={"grade": true, "grade_id": "test_backward_hidden", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Hidden test (4 points): rnn_backward against autograd on other shapes and seeds, T = 1,
# long sequences, non-zero h0, scores near 1000, non-contiguous arrays, inputs that must come
# back unmodified, and no calls to autograd while your function runs.
### BEGIN HIDDEN TESTS
from autograder.hidden.a1_rnn_bptt import check_rnn_backward

check_rnn_backward(rnn_backward)
### END HIDDEN TESTS

# %% [markdown]
# ## Part C: clipping by the global norm (3 points)
#
# When gradients explode, one update can throw the parameters far away. Clipping by the
# **global** norm treats all gradients as one long vector $g$: with
# $\lVert g\rVert = \sqrt{\sum_{\text{name}} \sum_i g_{\text{name},i}^2}$, every gradient is
# multiplied by the same factor $\min\!\left(1, \text{max\_norm} / \lVert g\rVert\right)$. The
# direction of the update is preserved; only its length is capped.
#
# Implement `clip_by_global_norm`. It returns a **new** dict of **new** arrays (the caller's
# gradients stay as they were), together with the norm measured **before** clipping. A
# threshold that is not positive makes no sense: raise `ValueError`.


# %% nbgrader={"grade": false, "grade_id": "clip_by_global_norm", "locked": false, "schema_version": 3, "solution": true, "task": false}
def clip_by_global_norm(
    grads: dict[str, np.ndarray], max_norm: float
) -> tuple[dict[str, np.ndarray], float]:
    """Scale all gradients by one common factor so that their global norm is at most max_norm.

    Args:
        grads: gradient arrays by name, of any shapes.
        max_norm: the largest global norm allowed; must be positive.

    Returns:
        clipped: a new dict with the same keys, holding new arrays (grads is not modified).
        total_norm: the global norm of grads before clipping, as a float.

    Raises:
        ValueError: if max_norm <= 0.
    """
    ### BEGIN SOLUTION
    if not max_norm > 0:
        raise ValueError(f"max_norm must be positive, got {max_norm!r}")
    as_float = {key: np.asarray(value, dtype=np.float64) for key, value in grads.items()}
    norm_before = float(np.sqrt(sum(np.vdot(g, g) for g in as_float.values())))
    factor = 1.0 if norm_before <= max_norm else max_norm / norm_before
    return {key: g * factor for key, g in as_float.items()}, norm_before
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C

# %% nbgrader={"grade": true, "grade_id": "test_clip_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
grads_c = {"W": np.array([[3.0, 0.0], [0.0, 4.0]]), "b": np.array([12.0])}  # global norm 13
clipped_c, norm_c = clip_by_global_norm(grads_c, max_norm=6.5)
assert_close("total_norm", norm_c, 13.0, atol=1e-9, against="the expected value")
assert_close("clipped['W']", clipped_c["W"], [[1.5, 0.0], [0.0, 2.0]], against="the expected value")
assert_close("clipped['b']", clipped_c["b"], [6.0], against="the expected value")
assert_close(
    "grads['W'] after the call",
    grads_c["W"],
    [[3.0, 0.0], [0.0, 4.0]],
    against="its value before the call",
)

small_c = {"U": np.array([[0.3, -0.4]])}  # global norm 0.5: nothing to clip
kept_c, norm_small_c = clip_by_global_norm(small_c, max_norm=1.0)
assert_close("total_norm", norm_small_c, 0.5, atol=1e-9, against="the expected value")
assert_close(
    "clipped['U']", kept_c["U"], [[0.3, -0.4]], atol=1e-12, against="the unchanged gradient"
)
print("Part C, visible test: passed.")

# %% nbgrader={"grade": true, "grade_id": "test_clip_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): clip_by_global_norm on other gradient sets (several tensors whose
# norms are each small but whose global norm is large, all-zero gradients, norms below the
# threshold, 3-D arrays), new arrays returned and inputs left unmodified, and a ValueError for
# max_norm <= 0.
### BEGIN HIDDEN TESTS
from autograder.hidden.a1_rnn_bptt import check_clip_by_global_norm

check_clip_by_global_norm(clip_by_global_norm)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): how far back does a gradient reach?
#
# The loss of the first $t - 1$ steps does not depend on step $t$, so the gradient that the
# **last** step's loss alone sends back to $h_0$ is the difference between the $h_0$-gradients
# of a sequence and of the same sequence without its last step. The cell below prints the norm
# of that gradient for growing $T$, for a recurrent matrix $W$ with spectral radius 0.5 and 3.
# With the small radius the norm shrinks geometrically with the distance (the gradient
# vanishes); with the large one it tends to grow (it explodes), which is what clipping is for.
# The cell then clips one gradient set. Once your functions pass their tests, try other radii.


# %%
def random_problem(radius: float, length: int, seed: int = 0):
    """A random sequence and RNN whose recurrent matrix W has the given spectral radius."""
    rng = np.random.default_rng(seed)
    hidden, features, classes = 16, 4, 5
    orthogonal, _ = np.linalg.qr(rng.normal(size=(hidden, hidden)))
    weights = {
        "W": radius * orthogonal,  # every eigenvalue has modulus `radius`
        "U": 0.1 * rng.normal(size=(hidden, features)),
        "b": np.zeros(hidden),
        "V": rng.normal(size=(classes, hidden)),
        "c": np.zeros(classes),
    }
    inputs = rng.normal(size=(length, features))
    labels = rng.integers(0, classes, size=length)
    return inputs, labels, np.zeros(hidden), weights


def last_step_reach(radius: float, lengths=(2, 5, 10, 20, 40)) -> list[float]:
    """Norm of d(loss of the last step)/d(h0) for sequences of the given lengths."""
    inputs, labels, start, weights = random_problem(radius, max(lengths))
    reach = []
    for length in lengths:
        whole = rnn_backward(inputs[:length], labels[:length], start, weights)["h0"]
        prefix = rnn_backward(inputs[: length - 1], labels[: length - 1], start, weights)["h0"]
        reach.append(float(np.linalg.norm(whole - prefix)))
    return reach


try:
    for radius in (0.5, 3.0):
        print(f"radius {radius}:", " ".join(f"{value:.1e}" for value in last_step_reach(radius)))
    demo_grads = rnn_backward(*random_problem(3.0, length=40))
    demo_clipped, demo_norm = clip_by_global_norm(demo_grads, max_norm=1.0)
    demo_after = np.sqrt(sum(np.sum(g**2) for g in demo_clipped.values()))
    print(f"global norm {demo_norm:.1f} before clipping, {demo_after:.1f} after")
except NotImplementedError:
    print("Implement rnn_backward and clip_by_global_norm first, then run this cell again.")

# %% [markdown]
# ## Part D: truncated BPTT is not an n-gram model (2 points, graded by hand)
#
# In practice the gradient is not pushed back through the whole history: the sequence is cut
# into windows of $T$ steps, the parameters are updated after each window, and backpropagation
# stops at the window's start. An n-gram model also looks only at a fixed window of recent
# tokens. In 3 to 6 sentences, explain why training an RNN with truncated BPTT over windows of
# $T$ steps is **not** the same as using a model that only sees the last $T$ tokens. Say what the
# truncation does cut away, and what it leaves intact.

# %% [markdown] nbgrader={"grade": true, "grade_id": "tbptt_vs_ngram", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Truncation acts on the backward pass only. In the forward pass the hidden
# state is carried from one window into the next (it is detached, not reset), and $h_t$ is a
# function of every input since the start of the stream, so a prediction can depend on a token
# that lies far more than $T$ steps back. An n-gram model with the same window conditions only on
# the last $T$ tokens: anything older has no influence at all, and it keeps a separate count or
# parameter per context instead of one shared recurrence. What truncation removes is the learning
# signal for long dependencies: no gradient says how a change of the weights would have altered a
# state more than $T$ steps before the loss, so the network is never trained directly to store
# information for longer than the window. It can still use older information that its
# short-range training happened to keep in the state.
#
# *Grading notes: 1 point for saying the hidden state (the memory) still flows across window
# boundaries in the forward pass, so the model's context is unbounded; 1 point for saying the
# truncation limits only how far back gradients (credit assignment) reach, so dependencies longer
# than T are learned weakly or indirectly.*
