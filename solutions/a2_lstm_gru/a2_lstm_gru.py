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
# # Assignment 2: LSTM and GRU cells, padded batches, and a cell that detects quotes
#
# In Lecture 2 you saw the LSTM and GRU cells written with torch and checked against
# `nn.LSTMCell` and `nn.GRUCell`, and read how two variants of the LSTM differ from them. Here
# you write, in NumPy and for a whole batch at once, the variants the lecture did not: an LSTM
# with **peephole connections**, which you then run over a batch of sequences of different
# lengths, and the GRU as its authors first wrote it, with the reset gate **before** the
# recurrent matrix. Then you find a meaningful cell in a trained network's activations.
#
# **Goals.** After this assignment you can
#
# 1. compute one step of an LSTM with peephole connections for a batch (Part A);
# 2. run that LSTM over a padded batch, using a mask so that padding changes nothing (Part B);
# 3. compute one step of the GRU as first published, which is not PyTorch's (Part C);
# 4. pick, from recorded activations, the cell that best detects "inside a quote" (Part D);
# 5. work out how far a gradient travels along the GRU's update gate, and what tying its gates
#    costs (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. A batch has $B$ rows; inputs have $D$ features and the
# state has $H$ units. Vectors are **rows**: `x` has shape (B, D), so a weight matrix acts as
# `x @ M.T` for a matrix `M`. The sigmoid is $\sigma(a) = 1 / (1 + e^{-a})$.
#
# The symbols follow the course's notation page: for every gate, $U_\bullet$ ($H \times D$)
# acts on the input $x_t$ and $W_\bullet$ ($H \times H$) on the previous state $h_{t-1}$, and
# the dictionary keys are named after them: `params["U"]` holds the input matrices and
# `params["W"]` the recurrent ones.
#
# **LSTM with peephole connections** (Lecture 2, "Two variants of the cell";
# Gers and Schmidhuber, 2000). The four blocks of the weights are stacked in the order in
# which Lecture 2 first lists the gates: **forget, input, candidate, output**, labelled
# (f, i, g, o), each of $H$ rows. The candidate is $\tilde c_t$ in the lecture; the code
# labels its block `g`, the letter PyTorch uses for it. (PyTorch stacks the blocks in the
# order i, f, g, o; the tests take care of the conversion, you should not.)
#
# The gates also look at the cell, each unit at its own unit only: three vectors
# $p_f, p_i, p_o$ of size $H$ (the rows of `params["P"]`, in that order) multiply the cell
# elementwise. The forget and input gates see the **old** cell $c_{t-1}$; the output gate is
# computed after the update and sees the **new** cell $c_t$:
#
# $$\begin{aligned}
# a_t &= U x_t + W h_{t-1} + b \quad\text{(shape } 4H\text{, split into } a^f, a^i, a^g, a^o)\\
# f_t &= \sigma(a^f + p_f \odot c_{t-1}), \quad i_t = \sigma(a^i + p_i \odot c_{t-1}), \quad \tilde c_t = \tanh(a^g)\\
# c_t &= f_t \odot c_{t-1} + i_t \odot \tilde c_t, \qquad
# o_t = \sigma(a^o + p_o \odot c_t), \qquad h_t = o_t \odot \tanh(c_t)
# \end{aligned}$$
#
# where $U$ stacks $U_f, U_i, U_{\tilde c}, U_o$ and $W$ stacks $W_f, W_i, W_{\tilde c}, W_o$.
# With $P = 0$ this is Lecture 2's cell, the one `torch.nn.LSTMCell` computes.
#
# | key | shape | holds |
# | --- | --- | --- |
# | `params["U"]` | (4H, D) | the input matrix $U$, blocks f, i, g, o |
# | `params["W"]` | (4H, H) | the recurrent matrix $W$, blocks f, i, g, o |
# | `params["b"]` | (4H,) | the bias $b$, blocks f, i, g, o |
# | `params["P"]` | (3, H) | the peephole weights, rows $p_f, p_i, p_o$ |
#
# **GRU, as Cho et al. (2014) wrote it** (the reset gate applied *before* the recurrent
# matrix; Keras calls it `reset_after=False`). Blocks in the order **update, reset,
# candidate**, labelled (z, r, n); the candidate is $\tilde h_t$ in the lecture, and `n` is
# PyTorch's label for it. Each side has its own bias, $b^{\text{in}}$ next to $U$ and
# $b^{\text{rec}}$ next to $W$:
#
# $$\begin{aligned}
# z_t &= \sigma(U_z x_t + b^{\text{in}}_z + W_z h_{t-1} + b^{\text{rec}}_z), \qquad
# r_t = \sigma(U_r x_t + b^{\text{in}}_r + W_r h_{t-1} + b^{\text{rec}}_r)\\
# \tilde h_t &= \tanh\left(U_h x_t + b^{\text{in}}_h + W_h (r_t \odot h_{t-1}) + b^{\text{rec}}_h\right), \qquad
# h_t = (1 - z_t) \odot \tilde h_t + z_t \odot h_{t-1}
# \end{aligned}$$
#
# Lecture 2's GRU (PyTorch's, cuDNN's) has $r_t \odot (W_h h_{t-1} + b^{\text{rec}}_h)$ in
# the candidate instead. The two are different functions of the same weights: the reset
# gate scales the units of the old state here, before $W_h$ mixes them, and the units of
# $W_h h_{t-1} + b^{\text{rec}}_h$ there, after; $W_h (r \odot h) = r \odot (W_h h)$ holds for
# every $r$ and $h$ only when $W_h$ is diagonal. Here $b^{\text{rec}}_h$ is not reset: it is
# simply added, like $b^{\text{in}}_h$.
#
# | key | shape | holds |
# | --- | --- | --- |
# | `params["U"]` | (3H, D) | the input matrices $U_z, U_r, U_h$ |
# | `params["W"]` | (3H, H) | the recurrent matrices $W_z, W_r, W_h$ |
# | `params["b_in"]` | (3H,) | the input-side biases $b^{\text{in}}$, blocks z, r, n |
# | `params["b_rec"]` | (3H,) | the recurrent-side biases $b^{\text{rec}}$, blocks z, r, n |
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off and by how much), and a **hidden test** that
#   runs at grading time on other shapes, seeds and edge cases ($B = 1$, $H = 1$, saturated
#   gates, non-contiguous arrays, sequences of length 0, dead cells...). Hard-coding the
#   visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * During the hidden tests `torch.nn.LSTM`, `LSTMCell`, `GRU`, `GRUCell` (and torch's other
#   recurrent routines), autograd and the helpers of the `course` package are replaced by
#   traps: calling them from your functions fails the test. (`course.checks` is allowed.) The
#   visible tests run your functions under the same rule and say so when one of them calls a
#   forbidden routine; their data and expected values are in `course/checks/a2_lstm_gru.py`.
#
# Autograded: 14 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a2 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a2_lstm_gru/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a2_lstm_gru import check_part_a, check_part_b, check_part_c, check_part_d

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## Part A: one LSTM step (4 points)
#
# Implement `lstm_cell_forward` for a batch, with the peephole connections given at the top:
# $p_f$ and $p_i$ on the old cell $c_{t-1}$, $p_o$ on the new cell $c_t$. A numerically safe
# sigmoid avoids overflow warnings for large negative inputs: `0.5 * (1 + np.tanh(a / 2))`
# is the same function.


# %% nbgrader={"grade": false, "grade_id": "lstm_cell_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lstm_cell_forward(
    x: np.ndarray, h_prev: np.ndarray, c_prev: np.ndarray, params: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """One step of an LSTM with peephole connections, for a batch.

    Args:
        x: inputs x_t, shape (B, D).
        h_prev: hidden states h_{t-1}, shape (B, H).
        c_prev: cell states c_{t-1}, shape (B, H).
        params: "U" (4H, D), "W" (4H, H), "b" (4H,), blocks in the order f, i, g, o;
            "P" (3, H), the peephole weights p_f, p_i, p_o.

    Returns:
        h: the new hidden states h_t, shape (B, H).
        c: the new cell states c_t, shape (B, H).
    """
    ### BEGIN SOLUTION
    width = np.shape(h_prev)[-1]
    old = np.asarray(c_prev, float)
    peek = np.asarray(params["P"], float)  # (3, H): rows f, i, o
    scores = np.asarray(x, float) @ params["U"].T + np.asarray(h_prev, float) @ params["W"].T
    scores = scores + params["b"]  # (B, 4H)
    before = scores[:, : 2 * width] + np.concatenate([peek[0], peek[1]]) * np.tile(old, 2)
    squash = 0.5 * (1.0 + np.tanh(0.5 * before))  # forget and input gates, which see c_{t-1}
    keep, write = squash[:, :width], squash[:, width:]
    proposal = np.tanh(scores[:, 2 * width : 3 * width])
    memory = keep * old + write * proposal
    reveal = 0.5 * (1.0 + np.tanh(0.5 * (scores[:, 3 * width :] + peek[2] * memory)))  # sees c_t
    return reveal * np.tanh(memory), memory
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Fixed weights (no randomness), with peepholes; the expected numbers come from the
# equations above, written in torch in float64. (With $P = 0$ the same code agrees with
# `torch.nn.LSTMCell`, blocks reordered; the hidden test checks both.)

# %% nbgrader={"grade": true, "grade_id": "test_lstm_cell_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(lstm_cell_forward)

# %% nbgrader={"grade": true, "grade_id": "test_lstm_cell_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): lstm_cell_forward against the peephole equations (written in torch,
# float64) for B = 1 and H = 1, other shapes, non-zero states, saturated gates and
# non-contiguous arrays, and with P = 0 against torch.nn.LSTMCell (weights copied and
# reordered); inputs must come back unmodified.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_lstm_cell

check_lstm_cell(lstm_cell_forward)
### END HIDDEN TESTS

# %% [markdown]
# ## Part B: a padded batch, with a mask (4 points)
#
# Sequences in a batch rarely have the same length. We pad them to a common length $T$ and
# pass a boolean `mask` of shape (B, T): `mask[b, t]` is True when step $t$ of sequence $b$
# is real, False when it is padding. Padding must change nothing:
#
# * at a padded step, the state of that sequence is carried over unchanged
#   ($h_t = h_{t-1}$, $c_t = c_{t-1}$), whatever garbage the padded input holds;
# * `hs[b, t]` is the new hidden state at a real step and **zero** at a padded step (as
#   PyTorch's `pad_packed_sequence` does);
# * the returned `(h_last, c_last)` is the state after each sequence's last real step (its
#   initial state if it has no real step at all).
#
# Use your `lstm_cell_forward` for the steps (the cell of Part A, peepholes included:
# `params` is the same dictionary). Hint: compute the step for the whole batch, then use
# `np.where` with the mask column to choose, per row, the new or the old state.


# %% nbgrader={"grade": false, "grade_id": "lstm_sequence_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lstm_sequence_forward(
    xs: np.ndarray,
    mask: np.ndarray,
    h0: np.ndarray,
    c0: np.ndarray,
    params: dict[str, np.ndarray],
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Run an LSTM over a padded batch.

    Args:
        xs: inputs, shape (B, T, D); padded steps may hold any values.
        mask: shape (B, T), True at real steps, False at padding.
        h0, c0: initial states, shape (B, H) each.
        params: as in lstm_cell_forward.

    Returns:
        hs: shape (B, T, H), h_t at real steps and 0 at padded steps.
        (h_last, c_last): the state after each sequence's last real step, (B, H) each.
    """
    ### BEGIN SOLUTION
    valid = np.asarray(mask, dtype=bool)
    n_rows, n_steps = valid.shape
    outputs = np.zeros((n_rows, n_steps, np.shape(h0)[-1]))
    state_h, state_c = np.array(h0, dtype=float), np.array(c0, dtype=float)
    for step in range(n_steps):
        fresh_h, fresh_c = lstm_cell_forward(xs[:, step], state_h, state_c, params)
        real = valid[:, step : step + 1]  # (B, 1), broadcasts over the H units
        state_h = np.where(real, fresh_h, state_h)
        state_c = np.where(real, fresh_c, state_c)
        outputs[:, step] = np.where(real, fresh_h, 0.0)
    return outputs, (state_h, state_c)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Two sequences of lengths 3 and 1, padded to $T = 3$. The second row's padding holds large
# numbers that must not leak into the result. The expected values come from Part A's
# equations run over each sequence's real steps alone, with the weights (peepholes included)
# of Part A's visible test. Part A must pass first.

# %% nbgrader={"grade": true, "grade_id": "test_lstm_sequence_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(lstm_sequence_forward)

# %% nbgrader={"grade": true, "grade_id": "test_lstm_sequence_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): lstm_sequence_forward against the peephole cell run over each
# sequence's real steps, and with P = 0 against torch.nn.LSTM on packed sequences, for other
# lengths and shapes (T = 1, a sequence of length 0, non-zero initial states, garbage in the
# padding); inputs must come back unmodified.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_lstm_sequence

check_lstm_sequence(lstm_sequence_forward)
### END HIDDEN TESTS

# %% [markdown]
# ## Part C: one GRU step (3 points)
#
# Implement `gru_cell_forward`, the GRU of Cho et al. (2014), with the equations and the
# block order (z, r, n) given at the top. Watch where the reset gate goes: it multiplies the
# old state $h_{t-1}$, unit by unit, *before* $W_h$ does; $b^{\text{rec}}_h$ is added
# without a gate. Lecture 2's `gru_cell` (PyTorch's convention) computes another function.


# %% nbgrader={"grade": false, "grade_id": "gru_cell_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gru_cell_forward(
    x: np.ndarray, h_prev: np.ndarray, params: dict[str, np.ndarray]
) -> np.ndarray:
    """One GRU step for a batch, the reset gate applied before the recurrent matrix.

    Args:
        x: inputs, shape (B, D).
        h_prev: hidden states h_{t-1}, shape (B, H).
        params: "U" (3H, D), "W" (3H, H), "b_in" (3H,), "b_rec" (3H,), blocks z, r, n.

    Returns:
        h: the new hidden states, shape (B, H).
    """
    ### BEGIN SOLUTION
    old = np.asarray(h_prev, dtype=float)
    size = old.shape[-1]
    mixing = np.asarray(params["W"], float)
    from_input = np.asarray(x, float) @ params["U"].T + params["b_in"]  # (B, 3H)
    from_state = old @ mixing[: 2 * size].T + params["b_rec"][: 2 * size]  # (B, 2H)
    gates = 0.5 * (1.0 + np.tanh(0.5 * (from_input[:, : 2 * size] + from_state)))
    update, reset = gates[:, :size], gates[:, size:]  # (B, H) each
    recalled = (reset * old) @ mixing[2 * size :].T + params["b_rec"][2 * size :]  # (B, H)
    proposal = np.tanh(from_input[:, 2 * size :] + recalled)
    return proposal + update * (old - proposal)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C
#
# Fixed weights (no randomness); the expected numbers come from the equations at the top,
# written in torch in float64. A GRU in PyTorch's convention (Lecture 2's `gru_cell`, or
# `torch.nn.GRUCell`) does not pass it.

# %% nbgrader={"grade": true, "grade_id": "test_gru_cell_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(gru_cell_forward)

# %% nbgrader={"grade": true, "grade_id": "test_gru_cell_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): gru_cell_forward against the equations above (written in torch,
# float64) for B = 1 and H = 1, other shapes and non-contiguous arrays; inputs must come back
# unmodified.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_gru_cell

check_gru_cell(gru_cell_forward)
### END HIDDEN TESTS

# %% [markdown]
# ## Part D: which cell detects quotes? (3 points)
#
# You are given the activations of $H$ cells of a character-level LSTM at $N$ characters,
# `activations` of shape (N, H), and for each character a label `inside_quotes` of shape
# (N,) (True or 1 inside a string literal, False or 0 outside). Return the index of the cell
# whose activation has the largest **absolute** Pearson correlation with the labels:
#
# $$r_j = \frac{\sum_n (a_{nj} - \bar a_j)(y_n - \bar y)}
#   {\sqrt{\sum_n (a_{nj} - \bar a_j)^2}\,\sqrt{\sum_n (y_n - \bar y)^2}} .$$
#
# A cell that switches *off* inside quotes detects them just as well as one that switches on.
# A constant cell (a dead unit) has no correlation at all: count it as 0, never `nan`.
# Return a plain Python `int`.


# %% nbgrader={"grade": false, "grade_id": "select_quote_cell", "locked": false, "schema_version": 3, "solution": true, "task": false}
def select_quote_cell(activations: np.ndarray, inside_quotes: np.ndarray) -> int:
    """Index of the cell (column) with the largest |Pearson correlation| with the labels."""
    ### BEGIN SOLUTION
    centred = np.asarray(activations, dtype=np.float64)
    centred = centred - centred.mean(axis=0, keepdims=True)
    target = np.asarray(inside_quotes, dtype=np.float64)
    target = target - target.mean()
    spread = np.linalg.norm(centred, axis=0) * np.linalg.norm(target)  # (H,)
    agreement = np.abs(target @ centred)  # (H,)
    strength = np.divide(agreement, spread, out=np.zeros_like(agreement), where=spread > 0)
    return int(np.argmax(strength))
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# Five made-up cells over a line of code: cell 3 copies the quote labels with some noise.

# %% nbgrader={"grade": true, "grade_id": "test_select_quote_cell_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(select_quote_cell)

# %% nbgrader={"grade": true, "grade_id": "test_select_quote_cell_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): select_quote_cell on other activations: a cell that switches off
# inside quotes, dead (constant) cells, cells of very different scales, int labels, float32
# and non-contiguous arrays, a single cell.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_select_quote_cell

check_select_quote_cell(select_quote_cell)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): the cell path keeps what the forget gate keeps
#
# Once Part A passes, this cell writes a value into a one-unit LSTM at the first step and
# then feeds zeros. With forget bias $b_f$ and nothing else, $c_t = \sigma(b_f)^{t-1} c_1$:
# the memory (and, along the cell path, the gradient) decays geometrically unless
# $\sigma(b_f)$ is close to 1. Try other biases.


# %%
def remembered_after(forget_bias: float, steps: int = 50) -> float:
    """c_T / c_1 for a 1-unit LSTM whose only non-zero weights are the biases."""
    weights = {
        "U": np.zeros((4, 1)),
        "W": np.zeros((4, 1)),
        "b": np.array([forget_bias, 10.0, 10.0, 10.0]),  # write once, then only forget
        "P": np.zeros((3, 1)),  # no peepholes: the gates see the biases only
    }
    h, c = lstm_cell_forward(np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)), weights)
    first = c[0, 0]
    weights["b"] = np.array([forget_bias, -10.0, 0.0, 10.0])  # the input gate is now closed
    for _ in range(steps - 1):
        h, c = lstm_cell_forward(np.zeros((1, 1)), h, c, weights)
    return float(c[0, 0] / first)


try:
    for bias in (0.0, 1.0, 3.0, 6.0):
        print(f"forget bias {bias}: c_50 / c_1 = {remembered_after(bias):.2e}")
except NotImplementedError:
    print("Implement lstm_cell_forward first, then run this cell again.")

# %% [markdown]
# ## Part E: the GRU's memory path (2 points, graded by hand)
#
# Lecture 2 differentiated the LSTM's cell update along the cell path. The GRU of Part C has no
# cell: its memory path is the term $z_t \odot h_{t-1}$ of
# $h_t = (1 - z_t) \odot \tilde h_t + z_t \odot h_{t-1}$. This line and the update gate are
# the same in both conventions of the reset gate, which only changes how $\tilde h_t$ is
# computed. In 4 to 7 sentences:
#
# 1. Holding $z_t$ and $\tilde h_t$ fixed, what is $\partial h_t / \partial h_{t-1}$ along this
#    path, and what carries the gradient from $h_T$ back to $h_t$?
# 2. Take a GRU whose update-gate pre-activations sit at their biases, with
#    $b^{\text{in}}_z + b^{\text{rec}}_z = 0$ for every unit, or $= 3$ for every unit (as at
#    initialisation, with small weights). In each case, how much of the gradient survives 40
#    steps back along this path, and what share of the candidate $\tilde h_t$ enters $h_t$ at
#    each step?
# 3. An LSTM with forget-gate bias 3 and input-gate bias 0 keeps as much along its cell path.
#    What does the GRU with bias 3 give up that this LSTM does not, and why? Compare
#    $\partial h_t / \partial \tilde h_t$ with $\partial c_t / \partial \tilde c_t$.
#
# You may check your numbers with your `gru_cell_forward` in the code cell below; it is not
# graded.

# %%
# Not graded: check your numbers for Part E here. In a one-unit GRU whose weights are all zero
# (biases as you choose), h_40 is an affine function of h_0: run gru_cell_forward 40 times from
# two values of h_0, one apart, and the difference of the two h_40 is the derivative.

# %% [markdown] nbgrader={"grade": true, "grade_id": "forget_gate_gradients", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Along the memory path $\partial h_t / \partial h_{t-1} = \operatorname{diag}(z_t)$,
# so $\partial h_T / \partial h_t = \operatorname{diag}\big(\prod_{j=t+1}^{T} z_j\big)$: the
# update gate plays the forget gate's part, with no weight matrix and no $\tanh'$ on the path.
# With biases 0, $z = \sigma(0) = 0.5$: 40 steps leave $0.5^{40} \approx 9.1 \cdot 10^{-13}$ of
# the gradient, and each step lets in half of the candidate. With biases 3,
# $z = \sigma(3) \approx 0.953$ keeps $0.953^{40} \approx 0.14$ of it (a one-unit GRU with zero
# weights gives $\partial h_{40} / \partial h_0 = 0.143$ by finite differences), but only
# $1 - z \approx 0.047$ of each new candidate enters the state. The gates are tied:
# $\partial h_t / \partial \tilde h_t = \operatorname{diag}(1 - z_t)$, so the bias that keeps the
# memory also makes the GRU write slowly (it writes only as much as it forgets) and shrinks the
# gradient that reaches the candidate and its weights $U_h$, $W_h$ to 0.047 of what reaches
# $h_t$. The LSTM's gates are separate: with forget bias 3 it keeps the same $0.953^{40}$ along
# its cell path, yet it still writes with $i_t = \sigma(0) = 0.5$, and
# $\partial c_t / \partial \tilde c_t = \operatorname{diag}(i_t)$ passes about 10.5 times more
# gradient to its candidate. Training moves each $z_t$ unit by unit and step by step (it depends
# on the input), so a trained GRU can keep some units and write others, and the full Jacobian
# has other paths (through $\tilde h_t$, $z_t$ and $r_t$) as well.
#
# *Grading notes: 1 point for $\operatorname{diag}(z_t)$ and the product of the update gates,
# with about $9 \cdot 10^{-13}$ at bias 0 and about 0.14 at bias 3 after 40 steps; 1 point for
# the cost of tying the gates: with $z \approx 0.953$ only $1 - z \approx 0.047$ of the
# candidate, and of the gradient towards it, gets through, where the LSTM keeps its memory and
# still writes (and passes gradient to $\tilde c_t$) through an input gate near 0.5.*
