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
# # Assignment 1: an RNN that classifies padded sequences, BPTT by hand, and gradient clipping
#
# In Lecture 1 an RNN read one sequence and predicted the next character at every step, and
# PyTorch computed every gradient for us (the lecture then wrote that backward pass by hand).
# Here you open the box for a different task: the RNN reads a whole **batch** of sequences of
# different lengths, padded to a common length, and makes **one** prediction per sequence, a
# class, from its state after the last real step. You write its forward pass and its
# gradients with plain NumPy (BPTT), and the global-norm clipping that keeps exploding
# gradients in check.
#
# **Goals.** After this assignment you can
#
# 1. run an Elman RNN over a padded batch, leaving each sequence's state untouched by its
#    padding, and compute the mean cross-entropy of a numerically safe softmax (Part A);
# 2. push a loss that sits only at the end of each sequence back through time, through the
#    padding, and check it against autograd (Part B);
# 3. rescale a set of gradients to a maximum global norm without touching the originals (Part C);
# 4. work out which dependencies truncated BPTT can teach, with the state carried across
#    windows or reset (Part D, written).
#
# ## Notation
#
# The symbols are those of the course's notation page. Everything is NumPy, in `float64`. A
# batch holds $B$ sequences padded to $T$ steps; sequence $n$ has $\ell_n$ real steps
# ($1 \le \ell_n \le T$), and its steps $\ell_n + 1, \dots, T$ are padding, which may hold any
# values. Inputs have $D$ features, the hidden state has $H$ units and there are $K$ classes.
# For each sequence (we drop the index $n$) and $t = 1, \dots, T$:
#
# $$h_t = \begin{cases} \tanh\left(W h_{t-1} + U x_t + b\right) & t \le \ell
#   \quad\text{(a real step)}\\
#   h_{t-1} & t > \ell \quad\text{(padding: the state is carried, unchanged)}\end{cases}$$
#
# so that $h_T = h_\ell$, the state after the last real step. The sequence is classified from
# it, and the loss is the cross-entropy **averaged over the $B$ sequences** of the batch:
#
# $$o = V h_T + c, \qquad p = \operatorname{softmax}(o), \qquad
#   L = -\frac{1}{B} \sum_{n=1}^{B} \log p^{(n)}_{y_n},$$
#
# where $y_n$ is the class of sequence $n$ and $p^{(n)}$ its predicted distribution. There is
# no loss at the other steps.
#
# | name | shape | meaning |
# | --- | --- | --- |
# | `xs` | (B, T, D) | inputs: `xs[n, t - 1]` is $x_t$ of sequence $n$ |
# | `lengths` | (B,) | integers $\ell_n$, the real steps of each sequence, in any order |
# | `labels` | (B,) | integers $y_n$ in $[0, K)$, the class of each sequence |
# | `h0` | (B, H) | initial hidden states $h_0$, one per sequence (not always zero!) |
# | `params["W"]` | (H, H) | recurrent matrix $W$ |
# | `params["U"]` | (H, D) | input matrix $U$ |
# | `params["b"]` | (H,) | hidden bias $b$ |
# | `params["V"]` | (K, H) | readout matrix $V$ |
# | `params["c"]` | (K,) | output bias $c$ |
#
# ## How you are graded
#
# * Parts A, B and C are autograded. Each part has a **visible test** cell that you can run now:
#   it uses small fixed inputs and tells you which quantity is off, where and by how much.
# * Each part also has a **hidden test** cell. It looks empty in your copy; when the assignment
#   is graded it runs your function on other shapes, seeds and edge cases ($B = 1$, $T = 1$,
#   every length 1, lengths in any order, non-zero $h_0$, very large scores, non-contiguous
#   arrays, inputs that must not be modified...). Code that only reproduces the visible
#   numbers keeps the visible points and loses all the hidden ones. Write general code.
# * Part D is a short written answer, graded by hand.
# * Write your code only where it says `YOUR CODE HERE`, and keep the function names and
#   signatures. Do not delete or copy cells: the grader looks for them by their ids.
# * The point is to do the work yourself. During the hidden tests, `torch.autograd`,
#   `Tensor.backward`, `torch.nn.RNN`, `torch.nn.utils.clip_grad_norm_` and the helpers of the
#   `course` package are replaced by traps: calling them from your functions fails the test.
#   (`course.checks`, which the visible tests use, is allowed.) The visible tests run your
#   functions under the same rule and say so when one of them calls a forbidden routine; each
#   visible test's data and expected values are in `course/checks/a1_rnn_bptt.py`, the
#   module it calls. Lecture 1's backward pass differentiates another loss, on one sequence:
#   it is a guide to the method, not an answer.
#
# Autograded: 13 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a1 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a1_rnn_bptt/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a1_rnn_bptt import check_part_a, check_part_b, check_part_c

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## Part A: the forward pass over a padded batch, and the loss (4 points)
#
# Implement `rnn_forward`, which returns every hidden state and each sequence's predicted
# distribution, and `classification_loss`, which turns the predictions into the mean
# cross-entropy.
#
# Things to watch:
#
# * The recurrence starts from the given `h0`, and `hs[:, t - 1]` holds $h_t$ for
#   $t = 1, \dots, T$ (not $h_0$).
# * At a padded step the state does not move, whatever the padded input holds: `hs[n, t - 1]`
#   is then the state after the sequence's last real step. Compute the step for the whole
#   batch, then choose per row between the new and the old state (`np.where` does it).
# * $\exp$ overflows a `float64` above about 709. A softmax over scores such as
#   $(1000, 999)$ must still give $(0.731, 0.269)$, not `nan`. Subtracting the largest score of
#   each row before exponentiating leaves the softmax unchanged (why?) and keeps it finite.
#
# Your functions must not modify their inputs.


# %% nbgrader={"grade": false, "grade_id": "rnn_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rnn_forward(
    xs: np.ndarray, lengths: np.ndarray, h0: np.ndarray, params: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Run a tanh RNN over a padded batch and classify each sequence from its last state.

    Args:
        xs: inputs, shape (B, T, D); the steps after a sequence's length are padding.
        lengths: the number of real steps of each sequence, shape (B,), integers in [1, T].
        h0: the initial hidden states, shape (B, H).
        params: "W" (H, H), "U" (H, D), "b" (H,), "V" (K, H), "c" (K,).

    Returns:
        hs: hidden states h_1..h_T, shape (B, T, H); a padded step repeats the previous state.
        probs: softmax(V h_T + c) for each sequence, shape (B, K); every row sums to 1.
    """
    ### BEGIN SOLUTION
    inputs = np.asarray(xs, dtype=np.float64)
    n_rows, n_steps, _ = inputs.shape
    real = np.arange(n_steps) < np.reshape(lengths, (-1, 1))  # (B, T), True at real steps
    drive = inputs @ params["U"].T + params["b"]  # (B, T, D) @ (D, H) -> (B, T, H)
    states = np.empty((n_rows, n_steps, np.shape(params["W"])[0]))
    state = np.array(h0, dtype=np.float64)  # (B, H)
    for step in range(n_steps):
        moved = np.tanh(state @ params["W"].T + drive[:, step])  # (B, H)
        state = np.where(real[:, step, None], moved, state)  # padding keeps the old state
        states[:, step] = state
    scores = state @ params["V"].T + params["c"]  # (B, H) @ (H, K) -> (B, K)
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))  # largest entry per row is 1
    return states, shifted / shifted.sum(axis=1, keepdims=True)
    ### END SOLUTION


# %% nbgrader={"grade": false, "grade_id": "classification_loss", "locked": false, "schema_version": 3, "solution": true, "task": false}
def classification_loss(probs: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy of the predictions against the class ids.

    Args:
        probs: predicted distributions, shape (B, K), as returned by rnn_forward.
        labels: the correct class of every sequence, shape (B,), integers in [0, K).

    Returns:
        L = -(1/B) sum_n log probs[n, labels[n]], as a Python float.
    """
    ### BEGIN SOLUTION
    chosen = np.take_along_axis(probs, np.asarray(labels).reshape(-1, 1), axis=1)  # (B, 1)
    return float(-np.log(chosen).mean())
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# The weights are fixed by hand (no randomness), and the expected numbers were computed
# once with an independent implementation. The second sequence has one real step and the
# third two; their padding holds large numbers that must not leak into the result. Run this
# cell after writing both functions.

# %% nbgrader={"grade": true, "grade_id": "test_forward_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(rnn_forward, classification_loss)

# %% nbgrader={"grade": true, "grade_id": "test_forward_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): rnn_forward and classification_loss on other shapes and seeds,
# B = 1 and T = 1, every length 1, lengths in any order, garbage in the padding, non-zero h0,
# scores near 1000 (a naive softmax overflows), non-contiguous arrays, and inputs that must
# come back unmodified. It runs when the assignment is graded.
### BEGIN HIDDEN TESTS
from autograder.hidden.a1_rnn_bptt import check_rnn_forward

check_rnn_forward(rnn_forward, classification_loss)
### END HIDDEN TESTS

# %% [markdown]
# ## Part B: backpropagation through time, by hand (6 points)
#
# Implement `rnn_backward`: the gradient of the **mean** loss $L$ with respect to every
# parameter and to the initial states $h_0$ of all the sequences. Use NumPy only; no autograd.
#
# Lecture 1 derived BPTT for a loss at every step of one sequence. Here the loss of a sequence
# sits at its end only, and the batch has padding: derive each step on paper first.
#
# 1. Run your forward pass and keep what you need from it.
# 2. The gradient of $L$ with respect to the logits $o^{(n)}$ of sequence $n$ has a famously
#    short form; do not forget the $1/B$. From it you get the gradients for $V$ and $c$,
#    summed over the batch, and the gradient that arrives at $h_T$.
# 3. No other step has a loss of its own: walk backwards from $t = T$ to $t = 1$, carrying
#    $\partial L / \partial h_t$ to $\partial L / \partial h_{t-1}$, for the whole batch at once.
# 4. At a padded step $h_t = h_{t-1}$: what does that make of the gradient that passes
#    through it, and what does such a step add to the gradients of $W$, $U$ and $b$?
# 5. At a real step, going through $\tanh$ multiplies elementwise by $1 - h_t^2$; $W$, $U$
#    and $b$ are shared by all steps and sequences, so their gradients are sums. Take care
#    which hidden state multiplies which step ($W$ meets $h_{t-1}$, not $h_t$).
# 6. What is left over after step $t = 1$ is the gradient for $h_0$, one row per sequence.
#
# Return a dict with the keys `"W"`, `"U"`, `"b"`, `"V"`, `"c"` and `"h0"`, each of the same
# shape as the quantity it differentiates (`"h0"`: (B, H)).


# %% nbgrader={"grade": false, "grade_id": "rnn_backward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def rnn_backward(
    xs: np.ndarray,
    lengths: np.ndarray,
    labels: np.ndarray,
    h0: np.ndarray,
    params: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Gradients of the mean cross-entropy L of rnn_forward, by backpropagation through time.

    Args:
        xs: inputs, shape (B, T, D), padded after each sequence's length.
        lengths: real steps of each sequence, shape (B,).
        labels: class of each sequence, shape (B,).
        h0: the initial hidden states, shape (B, H).
        params: "W" (H, H), "U" (H, D), "b" (H,), "V" (K, H), "c" (K,).

    Returns:
        A dict of dL/d(name) for name in "W", "U", "b", "V", "c" and "h0", each with the shape
        of that quantity ("h0": (B, H)).
    """
    ### BEGIN SOLUTION
    inputs = np.asarray(xs, dtype=np.float64)
    states, predictions = rnn_forward(inputs, lengths, h0, params)
    n_rows, n_steps, _ = inputs.shape
    real = (np.arange(n_steps) < np.reshape(lengths, (-1, 1)))[:, :, None]  # (B, T, 1)
    # Padding may hold anything, NaN included: choose 0 there rather than multiply by a mask
    # (0 * NaN is NaN), so that no padded input enters the products below.
    inputs = np.where(real, inputs, 0.0)
    # dL/do for each sequence: (p - one_hot(label)) / B, (B, K)
    logit_grad = predictions.copy()
    logit_grad[np.arange(n_rows), np.asarray(labels)] -= 1.0
    logit_grad /= n_rows
    # The state each step starts from: h_0, h_1, ..., h_{T-1}, as a (B, T, H) array.
    incoming = np.concatenate([np.asarray(h0, dtype=np.float64)[:, None], states[:, :-1]], 1)
    grads = {"V": logit_grad.T @ states[:, -1], "c": logit_grad.sum(axis=0)}
    grads |= {name: np.zeros(np.shape(params[name])) for name in ("W", "U", "b")}
    state_grad = logit_grad @ params["V"]  # dL/dh_T, (B, H)
    for step in range(n_steps - 1, -1, -1):
        # dL/da_t at real steps; a padded step copied its state and adds nothing.
        pre_grad = np.where(real[:, step], state_grad * (1.0 - states[:, step] ** 2), 0.0)
        grads["W"] += pre_grad.T @ incoming[:, step]  # sum over b of outer(dL/da_t, h_{t-1})
        grads["U"] += pre_grad.T @ inputs[:, step]
        grads["b"] += pre_grad.sum(axis=0)
        # dL/dh_{t-1}: through W at a real step, unchanged through a padded one.
        state_grad = np.where(real[:, step], pre_grad @ params["W"], state_grad)
    grads["h0"] = state_grad
    return grads
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# This test builds the same computation in PyTorch, one sequence at a time over its real
# steps only, lets autograd differentiate it, and compares each of your gradients with
# autograd's. The sequences have lengths 2, 5 and 3, and their padding holds large numbers.

# %% nbgrader={"grade": true, "grade_id": "test_backward_visible", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
check_part_b(rnn_backward)

# %% nbgrader={"grade": true, "grade_id": "test_backward_hidden", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
# Hidden test (4 points): rnn_backward against autograd on other shapes and seeds, B = 1 and
# T = 1, every length 1, one sequence of full length, lengths in any order, long sequences,
# non-zero h0, scores near 1000, garbage in the padding, non-contiguous arrays, inputs that
# must come back unmodified, and no calls to autograd while your function runs.
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
check_part_c(clip_by_global_norm)

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
# Here the only loss sits at the end of each sequence, so the gradient for $h_0$ says how much
# that loss still learns from a state $T$ steps earlier. The cell below prints its norm for
# growing $T$, for a recurrent matrix $W$ with spectral radius 0.5 and 3. With the small radius
# the norm shrinks geometrically with the distance (the gradient vanishes); with the large one
# it does not shrink that way, and the gradients can become huge, which is what clipping is
# for. The cell then checks that padding a sequence changes none of its gradients, and clips
# one gradient set. Once your functions pass their tests, try other radii.


# %%
def random_problem(radius: float, length: int, seed: int = 0):
    """One random sequence (B = 1) and an RNN whose recurrent matrix W has the given radius."""
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
    inputs = rng.normal(size=(1, length, features))  # (B=1, T, D)
    labels = rng.integers(0, classes, size=1)
    return inputs, np.array([length]), labels, np.zeros((1, hidden)), weights


def reach(radius: float, lengths=(2, 5, 10, 20, 40)) -> list[float]:
    """Norm of dL/dh0 when the loss sits T steps after h0, for each T in lengths."""
    inputs, _, labels, start, weights = random_problem(radius, max(lengths))
    norms = []
    for length in lengths:
        grads = rnn_backward(inputs[:, :length], np.array([length]), labels, start, weights)
        norms.append(float(np.linalg.norm(grads["h0"])))
    return norms


try:
    for radius in (0.5, 3.0):
        print(f"radius {radius}:", " ".join(f"{value:.1e}" for value in reach(radius)))
    demo = random_problem(3.0, length=40)
    padded_inputs = np.concatenate([demo[0], np.full((1, 10, 4), 99.0)], axis=1)  # T = 50
    padded = rnn_backward(padded_inputs, *demo[1:])
    demo_grads = rnn_backward(*demo)
    gap = max(float(np.max(np.abs(padded[k] - demo_grads[k]))) for k in demo_grads)
    print(f"10 steps of padding change the gradients by at most {gap:.1e}")
    demo_clipped, demo_norm = clip_by_global_norm(demo_grads, max_norm=1.0)
    demo_after = np.sqrt(sum(np.sum(g**2) for g in demo_clipped.values()))
    print(f"global norm {demo_norm:.1f} before clipping, {demo_after:.1f} after")
except NotImplementedError:
    print("Implement rnn_backward and clip_by_global_norm first, then run this cell again.")

# %% [markdown]
# ## Part D: what truncated BPTT can teach (2 points, graded by hand)
#
# In practice the gradient is not pushed back through the whole history: a long stream is cut
# into windows of $k$ steps, the parameters are updated after each window, and backpropagation
# stops at the window's start (Lecture 1, Section 3). Take Lecture 1's setting, a loss at
# every step, on a toy stream: the RNN reads random bits $x_1, x_2, \dots$ (each 0 or 1 with
# probability 1/2, independently), and its output at step $t$ must be the bit it read five
# steps earlier, $x_{t-5}$. It is trained with windows of $k = 8$ steps, numbered
# $j = 1, \dots, 8$ within a window, in one of two ways:
#
# * **(a) carried**: the state is carried from one window into the next and detached, as in
#   Lecture 1;
# * **(b) reset**: the state is reset to $h_0 = 0$ at the start of every window.
#
# In 4 to 7 sentences, for (a) and for (b): at which positions $j$ does the loss give the
# weights a gradient that links the output to the bit it must recall? What accuracy, averaged
# over the 8 positions, can the trained network reach at best (where its state does not hold
# that bit, it can only guess), and why? What changes with windows of $k = 4$? You may count
# in the code cell below; it is not graded.

# %%
# Not graded: count here for Part D (which positions j of a window can see, or be trained
# to recall, the bit read five steps earlier, for k = 8 and k = 4, carried or reset).

# %% [markdown] nbgrader={"grade": true, "grade_id": "tbptt_vs_ngram", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** The bit recalled at position $j$ was read at $j - 5$, inside the same window
# only for $j = 6, 7, 8$: at these 3 positions of 8 the backward pass reaches it, in (a) and (b)
# alike, since both cut the graph at the window's start; at $j = 1, \dots, 5$ the bit lies in the
# previous window, behind the cut. With (b) the reset also erases it from the state, so
# positions 1 to 5 can only be guessed: at best $(3 \cdot 1 + 5 \cdot 0.5)/8 = 68.75\%$. With
# (a) the state still holds the bit (the forward pass crosses the border), and the weights
# learned at $j = 6, 7, 8$, which keep every bit for five steps, work at every position, since
# the network cannot tell where a window starts: at best 100%. So truncation limits what the
# gradient can teach to dependencies shorter than the window, not what the model can use, as
# long as the state is carried; resetting it limits both. With $k = 4$ the bit always lies in an
# earlier window: no position ever gets a gradient for it, (b) is left at chance (50%), and (a)
# recalls the bit only if dynamics learned for other reasons happen to keep it, which nothing
# in its training rewards.
#
# *Grading notes: 1 point for the positions $j = 6, 7, 8$ (the only ones the gradient links
# to their bit, in both schemes; none with $k = 4$); 1 point for 100% with the state carried
# (the forward pass crosses the border and the same weights apply there) against 68.75% with it
# reset (positions 1 to 5 guess), and chance with $k = 4$.*
