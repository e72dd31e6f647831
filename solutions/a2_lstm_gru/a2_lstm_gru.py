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
# # Assignment 2: an LSTM with a projection, packed batches, the original GRU, and a quote cell
#
# In Lecture 2 you saw the LSTM and GRU cells written with torch and checked against
# `nn.LSTMCell` and `nn.GRUCell`. Here you write, in NumPy and for a whole batch at once,
# cells the lecture did not: an LSTM whose hidden state is a **projection** of a wider cell
# (the LSTMP of speech recognition, `proj_size` in `torch.nn.LSTM`), which you then run over a
# batch **packed** the way cuDNN stores it, and the GRU as its authors first wrote it, with the
# reset gate **before** the recurrent matrix. Then you rank the cells of a network by how well
# each one alone separates the characters inside quotes from the others.
#
# **Goals.** After this assignment you can
#
# 1. compute one step of an LSTM with a projection layer for a batch (Part A);
# 2. run that LSTM over a packed batch, in which the batch shrinks as sequences end (Part B);
# 3. compute one step of the GRU as first published, which is not PyTorch's (Part C);
# 4. rank cells by the area under the ROC curve, a statistic of ranks, and say why it can
#    pick another cell than a correlation does (Part D);
# 5. count what the projection saves, and predict the rank of what it adds to the gradient
#    along the cell path (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. A batch has $B$ rows; inputs have $D$ features, the cell
# has $H$ units and the hidden state $P$. Vectors are **rows**: `x` has shape (B, D), so a
# weight matrix acts as `x @ M.T` for a matrix `M`. The sigmoid is
# $\sigma(a) = 1 / (1 + e^{-a})$.
#
# The symbols follow the course's notation page: for every gate, $U_\bullet$ acts on the input
# $x_t$ and $W_\bullet$ on the previous state $h_{t-1}$, and the dictionary keys are named after
# them: `params["U"]` holds the input matrices and `params["W"]` the recurrent ones.
#
# **LSTM with a projection layer** (LSTMP; Sak, Senior and Beaufays, 2014). The cell state
# $c_t$ has $H$ units, as in Lecture 2, but what the cell passes on, to the next step and to
# the layer above, is $h_t = R\,(o_t \odot \tanh c_t)$, a linear projection of it to $P$
# numbers by a matrix $R$ ($P \times H$, no bias). The gates therefore read a recurrent state of
# size $P$: each $W_\bullet$ is $H \times P$. The four blocks of the weights are stacked in the
# order in which Lecture 2 first lists the gates: **forget, input, candidate, output**,
# labelled (f, i, g, o), each of $H$ rows. The candidate is $\tilde c_t$ in the lecture; the
# code labels its block `g`, the letter PyTorch uses for it. (PyTorch stacks the blocks in the
# order i, f, g, o; the tests take care of the conversion, you should not.)
#
# $$\begin{aligned}
# a_t &= U x_t + W h_{t-1} + b \quad\text{(shape } 4H\text{, split into } a^f, a^i, a^g, a^o)\\
# f_t &= \sigma(a^f), \quad i_t = \sigma(a^i), \quad \tilde c_t = \tanh(a^g), \quad
# o_t = \sigma(a^o)\\
# c_t &= f_t \odot c_{t-1} + i_t \odot \tilde c_t, \qquad
# h_t = R\,\big(o_t \odot \tanh(c_t)\big) \quad\text{(shape } P)
# \end{aligned}$$
#
# where $U$ stacks $U_f, U_i, U_{\tilde c}, U_o$ and $W$ stacks $W_f, W_i, W_{\tilde c}, W_o$.
# With $P = H$ and $R = I$ this is Lecture 2's cell, the one `torch.nn.LSTMCell` computes.
#
# | key | shape | holds |
# | --- | --- | --- |
# | `params["U"]` | (4H, D) | the input matrix $U$, blocks f, i, g, o |
# | `params["W"]` | (4H, P) | the recurrent matrix $W$, blocks f, i, g, o |
# | `params["b"]` | (4H,) | the bias $b$, blocks f, i, g, o |
# | `params["R"]` | (P, H) | the projection $R$ |
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
#   runs at grading time on other shapes, seeds and edge cases ($B = 1$, $P = 1$, $P = H$,
#   saturated gates, non-contiguous arrays, batches of one step, sequences of equal length,
#   ties, dead cells...) and checks that bad input raises `ValueError` (Parts A, B and D).
#   Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * During the hidden tests `torch.nn.LSTM`, `LSTMCell`, `GRU`, `GRUCell` (and torch's other
#   recurrent routines), the packing routines of `torch.nn.utils.rnn`, autograd and the
#   helpers of the `course` package (`course.analysis.interpret` among them) are replaced by
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
# ## Part A: one step of an LSTM with a projection (4 points)
#
# Implement `lstmp_cell_forward` for a batch, with the equations and the shapes given at the
# top: the gates read $h_{t-1}$ of size $P$, the cell has $H$ units, and the new hidden state
# is the projection $R\,(o_t \odot \tanh c_t)$. A numerically safe sigmoid avoids overflow
# warnings for large negative inputs: `0.5 * (1 + np.tanh(a / 2))` is the same function.
#
# **Bad input** raises `ValueError`: arrays of inconsistent shapes. `x`, `h_prev` and `c_prev`
# must be 2-D with the same number of rows $B$; with $D$, $P$ and $H$ the widths of `x`,
# `h_prev` and `c_prev`, `U` must be (4H, D), `W` (4H, P), `b` (4H,) and `R` (P, H). (NumPy
# broadcasts an `h_prev` of one row against a batch without complaint: check the shapes
# yourself.)


# %% nbgrader={"grade": false, "grade_id": "lstmp_cell_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lstmp_cell_forward(
    x: np.ndarray, h_prev: np.ndarray, c_prev: np.ndarray, params: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """One step of an LSTM with a projection layer, for a batch.

    Args:
        x: inputs x_t, shape (B, D).
        h_prev: hidden states h_{t-1}, shape (B, P).
        c_prev: cell states c_{t-1}, shape (B, H).
        params: "U" (4H, D), "W" (4H, P), "b" (4H,), blocks in the order f, i, g, o;
            "R" (P, H), the projection.

    Returns:
        h: the new hidden states h_t = R (o_t * tanh(c_t)), shape (B, P).
        c: the new cell states c_t, shape (B, H).

    Raises:
        ValueError: for arrays of inconsistent shapes.
    """
    ### BEGIN SOLUTION
    seen, recalled = np.asarray(x, dtype=float), np.asarray(h_prev, dtype=float)
    old = np.asarray(c_prev, dtype=float)
    if seen.ndim != 2 or recalled.ndim != 2 or old.ndim != 2:
        raise ValueError("x, h_prev and c_prev must be 2-D arrays (B, D), (B, P), (B, H)")
    if not len(seen) == len(recalled) == len(old):
        raise ValueError(f"rows of x, h_prev, c_prev: {len(seen)}, {len(recalled)}, {len(old)}")
    width, narrow = old.shape[1], recalled.shape[1]
    into, across = np.asarray(params["U"], float), np.asarray(params["W"], float)
    bias, down = np.asarray(params["b"], float), np.asarray(params["R"], float)
    shapes = {"U": into.shape, "W": across.shape, "b": bias.shape, "R": down.shape}
    wanted = dict(U=(4 * width, seen.shape[1]), W=(4 * width, narrow), b=(4 * width,))
    wanted["R"] = (narrow, width)
    for key, expected in wanted.items():
        if shapes[key] != expected:
            raise ValueError(f'params["{key}"] should have shape {expected}, got {shapes[key]}')
    scores = seen @ into.T + recalled @ across.T + bias  # (B, 4H)
    squashed = 0.5 * (1.0 + np.tanh(0.5 * scores))  # the sigmoid of every block; g's unused
    keep, write = squashed[:, :width], squashed[:, width : 2 * width]
    memory = keep * old + write * np.tanh(scores[:, 2 * width : 3 * width])  # (B, H)
    shown = squashed[:, 3 * width :] * np.tanh(memory)  # (B, H)
    return shown @ down.T, memory  # (B, P), (B, H)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Fixed weights (no randomness), $D = 3$, $H = 3$, $P = 2$; the expected numbers are those of
# `torch.nn.LSTM(3, 3, proj_size=2)` in float64 with the same weights, blocks reordered.

# %% nbgrader={"grade": true, "grade_id": "test_lstmp_cell_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(lstmp_cell_forward)

# %% nbgrader={"grade": true, "grade_id": "test_lstmp_cell_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): lstmp_cell_forward against torch.nn.LSTM with proj_size (weights
# copied and reordered, float64) for B = 1, P = 1, other shapes, saturated gates and
# non-contiguous arrays, and with P = H and R = I against torch.nn.LSTMCell; inputs must come
# back unmodified; inconsistent shapes must raise ValueError.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_lstmp_cell

check_lstmp_cell(lstmp_cell_forward)
### END HIDDEN TESTS

# %% [markdown]
# ## Part B: a packed batch, as cuDNN reads it (4 points)
#
# Sequences in a batch rarely have the same length. Instead of padding them and masking the
# padding, PyTorch's `PackedSequence` (what `pack_padded_sequence` builds, and what cuDNN
# reads) stores only the real steps, **time-major**, with the sequences sorted from the
# longest to the shortest:
#
# * `batch_sizes[t]` is the number of sequences that have a step $t$ (more than $t$ steps),
#   so `batch_sizes` never increases, and `batch_sizes[0]` $= B$;
# * `data` holds step 0 of sequences $0, \dots, B - 1$, then step 1 of the first
#   `batch_sizes[1]` sequences, then step 2 of the first `batch_sizes[2]`, and so on: it has
#   `sum(batch_sizes)` rows of $D$ features. For lengths (3, 1, 1), `batch_sizes` is
#   (3, 1, 1) and `data` holds, in this order, steps 0 of sequences 0, 1, 2, step 1 of
#   sequence 0, step 2 of sequence 0.
#
# Implement `lstmp_packed_forward`: run Part A's cell over the packed batch, starting from
# `h0` and `c0`, and return
#
# * `out`, shape (`sum(batch_sizes)`, P): the new $h_t$ of every row of `data`, in the same
#   packed order (what `nn.LSTM` returns as the `.data` of its packed output);
# * `(h_n, c_n)`, shapes (B, P) and (B, H): the state of each sequence after its own last
#   step, in the order of the sequences.
#
# The batch shrinks: at step $t$ only the first `batch_sizes[t]` sequences take a step, and the
# others must keep the state they ended with. Use your `lstmp_cell_forward` for the steps.
#
# **Bad input** raises `ValueError`: `batch_sizes` that is empty, not 1-D, not integers (a
# float such as `2.0` included), holds a size below 1, or increases somewhere; `data` that
# is not 2-D or whose number of rows is not `sum(batch_sizes)`; `h0` or `c0` that is not 2-D
# with `batch_sizes[0]` rows.


# %% nbgrader={"grade": false, "grade_id": "lstmp_packed_forward", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lstmp_packed_forward(
    data: np.ndarray,
    batch_sizes: np.ndarray,
    h0: np.ndarray,
    c0: np.ndarray,
    params: dict[str, np.ndarray],
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Run an LSTM with a projection over a packed batch.

    Args:
        data: the real steps of all sequences, time-major, shape (sum(batch_sizes), D).
        batch_sizes: (T,) integers, how many sequences have a step t; never increasing.
        h0, c0: initial states, shapes (B, P) and (B, H), B = batch_sizes[0].
        params: as in lstmp_cell_forward.

    Returns:
        out: h_t for every row of data, in the same order, shape (sum(batch_sizes), P).
        (h_n, c_n): the state after each sequence's last step, (B, P) and (B, H).

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    sizes = np.asarray(batch_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"batch_sizes must be a non-empty 1-D array of integers, got {sizes!r}")
    if sizes.min() < 1 or np.any(sizes[1:] > sizes[:-1]):
        raise ValueError(f"batch_sizes must be >= 1 and never increase, got {sizes.tolist()}")
    steps = np.asarray(data, dtype=float)
    if steps.ndim != 2 or len(steps) != sizes.sum():
        raise ValueError(f"data must be 2-D with {sizes.sum()} rows, got shape {steps.shape}")
    state_h, state_c = np.array(h0, dtype=float), np.array(c0, dtype=float)
    for name, state in (("h0", state_h), ("c0", state_c)):
        if state.ndim != 2 or len(state) != sizes[0]:
            raise ValueError(f"{name} must be 2-D with {sizes[0]} rows, got {state.shape}")
    out = np.zeros((len(steps), state_h.shape[1]))
    ends = np.cumsum(sizes)  # row after the last of each step
    for live, end in zip(sizes, ends, strict=True):
        rows = slice(end - live, end)  # the step's rows: one per sequence still running
        # the first `live` sequences run on; those after them ended and keep their state
        fresh = lstmp_cell_forward(steps[rows], state_h[:live], state_c[:live], params)
        state_h[:live], state_c[:live] = fresh
        out[rows] = state_h[:live]
    return out, (state_h, state_c)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Three sequences of lengths 3, 2 and 1, packed: `batch_sizes` is (3, 2, 1) and `data` has 6
# rows; the second sequence starts from a non-zero state, the others from zeros. The expected
# values are those of `torch.nn.LSTM(3, 3, proj_size=2)` (the weights of Part A's visible
# test) run on the same `PackedSequence`. Part A must pass first.

# %% nbgrader={"grade": true, "grade_id": "test_lstmp_packed_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(lstmp_packed_forward)

# %% nbgrader={"grade": true, "grade_id": "test_lstmp_packed_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): lstmp_packed_forward against torch.nn.LSTM with proj_size run on the
# same PackedSequence (float64) for other lengths and shapes (one step, one sequence,
# sequences of equal length, non-zero initial states, batch_sizes as a list); inputs must come
# back unmodified; bad batch_sizes, data, h0 or c0 must raise ValueError.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_lstmp_packed

check_lstmp_packed(lstmp_packed_forward)
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
# ## Part D: which cell separates the quotes? (3 points)
#
# You are given the activations of $H$ cells of a character-level LSTM at $N$ characters,
# `activations` of shape (N, H), and for each character a label `inside_quotes` of shape
# (N,) (True or 1 inside a string literal, False or 0 outside). Lecture 2 picked cells by
# their Pearson correlation with such a label. Here you rank them by how well each cell, read
# through a threshold of your choice, separates the two kinds of characters: the **area under
# the ROC curve** of cell $j$ is the probability that a character drawn at random inside the
# quotes has a higher activation than one drawn at random outside, ties counting one half:
#
# $$\mathrm{AUC}_j = \frac{1}{n_{\text{in}}\, n_{\text{out}}}
#   \sum_{n \text{ inside}}\ \sum_{m \text{ outside}}
#   \Big( [a_{nj} > a_{mj}] + \tfrac12 [a_{nj} = a_{mj}] \Big).$$
#
# $\mathrm{AUC} = 1$: every character inside is above every character outside; $0$: every one
# is below (a cell that switches *off* inside quotes, as useful as one that switches on);
# $1/2$: no better than chance, as for a constant cell. Implement `quote_cell_auc`: return
# the index of the cell whose AUC is **furthest from 1/2** and its AUC (which may be below
# 1/2), as a plain `int` and a plain `float`. Where several cells are equally far, return the
# lowest index. Counting pairs in integers, $2 \cdot (\text{wins}) + (\text{ties})$ against
# $n_{\text{in}} n_{\text{out}}$, compares cells exactly; in floats $|0.7 - 0.5|$ and
# $|0.3 - 0.5|$ differ. Comparing all pairs is fine for the sizes of the tests (a few thousand
# characters); sorting each column is faster.
#
# **Bad input** raises `ValueError`: `activations` that is not 2-D, has no column, or holds
# a NaN; labels whose length is not $N$ or that are not all 0/1 (or booleans); labels of one
# kind only (no pair to compare).


# %% nbgrader={"grade": false, "grade_id": "quote_cell_auc", "locked": false, "schema_version": 3, "solution": true, "task": false}
def quote_cell_auc(activations: np.ndarray, inside_quotes: np.ndarray) -> tuple[int, float]:
    """The cell (column) whose AUC for the labels is furthest from 1/2, and its AUC.

    Args:
        activations: (N, H), one column per cell.
        inside_quotes: (N,), True or 1 inside quotes, False or 0 outside.

    Returns:
        (cell, auc): the index of the cell (lowest among equals) and its AUC, an int and a float.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    table = np.asarray(activations, dtype=np.float64)
    flags = np.asarray(inside_quotes)
    if table.ndim != 2 or table.shape[1] == 0 or np.isnan(table).any():
        raise ValueError(f"activations must be (N, H) with H >= 1 and no NaN, got {table.shape}")
    if flags.shape != (len(table),) or not np.isin(flags, (0, 1)).all():
        raise ValueError(f"inside_quotes must be ({len(table)},) of 0/1 labels")
    inside = flags.astype(bool)
    n_in, n_out = int(inside.sum()), int((~inside).sum())
    if n_in == 0 or n_out == 0:
        raise ValueError("the labels need characters both inside and outside quotes")
    # Mann-Whitney: the ranks of the inside characters among all, ties sharing their mean rank
    order = np.argsort(table, axis=0, kind="stable")
    ranked = np.take_along_axis(table, order, axis=0)  # each column sorted
    doubled = np.empty_like(table)  # twice the (1-based) mean rank: integers, exact
    for cell in range(table.shape[1]):
        column = ranked[:, cell]
        starts = np.flatnonzero(np.r_[True, column[1:] != column[:-1]])
        stops = np.r_[starts[1:], len(column)]  # ranks starts + 1 ... stops share a group
        doubled[order[:, cell], cell] = np.repeat(starts + 1 + stops, stops - starts)
    twice_wins = doubled[inside].sum(axis=0) - n_in * (n_in + 1)  # 2 wins + ties, (H,)
    pairs = n_in * n_out
    best = int(np.argmax(np.abs(twice_wins - pairs)))  # argmax: the first of equals
    return best, float(twice_wins[best] / (2 * pairs))
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# Five made-up cells over a line of code. Cell 1 fires at the two opening quotes only: it has
# the largest correlation with the labels, but inside the strings it is as low as outside.
# Cell 3 is small and noisy, yet lower inside the quotes than outside most of the time.

# %% nbgrader={"grade": true, "grade_id": "test_quote_cell_auc_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(quote_cell_auc)

# %% nbgrader={"grade": true, "grade_id": "test_quote_cell_auc_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): quote_cell_auc against every pair counted (NumPy), on other
# activations: a cell that switches off inside quotes, a cell whose correlation beats its AUC,
# saturated cells with many ties, dead (constant) cells, two equally good cells, int labels,
# float32 and non-contiguous arrays, a single cell; inputs must come back unmodified; bad
# input must raise ValueError.
### BEGIN HIDDEN TESTS
from autograder.hidden.a2_lstm_gru import check_quote_cell_auc

check_quote_cell_auc(quote_cell_auc)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): the cell path keeps what the forget gate keeps
#
# Once Part A passes, this cell writes a value into a one-unit LSTM ($P = H = 1$, $R = 1$) at
# the first step and then feeds zeros. With forget bias $b_f$ and nothing else,
# $c_t = \sigma(b_f)^{t-1} c_1$: the memory (and, along the cell path, the gradient) decays
# geometrically unless $\sigma(b_f)$ is close to 1. Try other biases.


# %%
def remembered_after(forget_bias: float, steps: int = 50) -> float:
    """c_T / c_1 for a 1-unit LSTM whose only non-zero weights are the biases."""
    weights = {
        "U": np.zeros((4, 1)),
        "W": np.zeros((4, 1)),
        "b": np.array([forget_bias, 10.0, 10.0, 10.0]),  # write once, then only forget
        "R": np.ones((1, 1)),  # P = H = 1: no projection to speak of
    }
    h, c = lstmp_cell_forward(np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)), weights)
    first = c[0, 0]
    weights["b"] = np.array([forget_bias, -10.0, 0.0, 10.0])  # the input gate is now closed
    for _ in range(steps - 1):
        h, c = lstmp_cell_forward(np.zeros((1, 1)), h, c, weights)
    return float(c[0, 0] / first)


try:
    for bias in (0.0, 1.0, 3.0, 6.0):
        print(f"forget bias {bias}: c_50 / c_1 = {remembered_after(bias):.2e}")
except NotImplementedError:
    print("Implement lstmp_cell_forward first, then run this cell again.")

# %% [markdown]
# ## Part E: what the projection saves, and what it adds to the gradient (2 points, graded by hand)
#
# Answer in 4 to 8 sentences. Work out your predictions first, then check them with the
# numbers printed by the code cell below (it needs Part A).
#
# 1. **Cost.** Count the parameters of Part A's cell (one bias per block, as in the table at
#    the top) as a formula in $D$, $H$ and $P$, and the multiply-adds of one step for one
#    sequence (the products by $U$, $W$ and $R$). Evaluate both for $D = 64$, $H = 128$,
#    $P = 32$, and compare with Lecture 2's cell of $H = 128$ units and with one of
#    $H = 32$. Which of the two does the LSTMP's memory resemble, which its recurrent input,
#    and which one's cost is it closer to?
# 2. **The gradient along the cell path.** Along the cell path alone, Lecture 2's cell has
#    $\partial c_t / \partial c_{t-1} = \operatorname{diag}(f_t)$ (holding $h_{t-1}$ fixed).
#    Over two steps, $c_{t-1}$ also reaches $c_{t+1}$ through $h_t$, which drives the gates of
#    step $t + 1$. Write $\partial c_{t+1} / \partial c_{t-1}$ as
#    $\operatorname{diag}(f_{t+1} \odot f_t)$ plus a correction, and predict the largest
#    possible rank of that correction for an LSTMP with $H$ cells and a hidden state of size
#    $P$, with a reason. How many of the correction's singular values are then 0 for
#    $H = 6$, $P = 2$?

# %%
# The numbers for Part E (not graded). 1: the formula against nn.LSTM's own count. 2: the
# Jacobians by central differences, with your lstmp_cell_forward, on a random cell.
import torch  # noqa: E402 (only to count nn.LSTM's parameters)


def cell_jacobian(step, c: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d step(c) / d c for a state c of shape (1, H), by central differences: (H, H)."""
    columns = []
    for unit in range(c.shape[1]):
        bump = np.zeros_like(c)
        bump[0, unit] = eps
        columns.append((step(c + bump) - step(c - bump))[0] / (2 * eps))
    return np.stack(columns, axis=1)


try:
    D_e, H_e, P_e = 64, 128, 32
    lstmp = torch.nn.LSTM(D_e, H_e, proj_size=P_e)
    counted = sum(p.numel() for p in lstmp.parameters()) - 4 * H_e  # minus its second bias
    one_bias = {f"H = {n}": sum(p.numel() for p in torch.nn.LSTMCell(D_e, n).parameters()) - 4 * n
                for n in (H_e, P_e)}  # fmt: skip
    print(f"LSTMP D = {D_e}, H = {H_e}, P = {P_e}: {counted:,d} parameters "
          f"(nn.LSTM with proj_size, less its second bias)")  # fmt: skip
    for label, count in one_bias.items():
        print(f"Lecture 2's cell, D = {D_e}, {label}: {count:,d} parameters")
    multiply_adds = 4 * H_e * D_e + 4 * H_e * P_e + P_e * H_e  # U x, W h, R (o * tanh c)
    print(f"LSTMP multiply-adds per step: {multiply_adds:,d}; "
          f"Lecture 2's cell, H = {H_e}: {4 * H_e * (D_e + H_e):,d}, "
          f"H = {P_e}: {4 * P_e * (D_e + P_e):,d}")  # fmt: skip
    print(f"LSTMP against H = {H_e}: x{counted / one_bias[f'H = {H_e}']:.2f} of the parameters; "
          f"against H = {P_e}: x{counted / one_bias[f'H = {P_e}']:.1f}; W holds "
          f"{4 * H_e * P_e:,d} numbers instead of {4 * H_e * H_e:,d}, R {P_e * H_e:,d}")  # fmt: skip

    rng = np.random.default_rng(2)
    D_s, H_s, P_s = 3, 6, 2
    small = {"U": rng.normal(size=(4 * H_s, D_s)), "W": rng.normal(size=(4 * H_s, P_s)),
             "b": rng.normal(size=4 * H_s), "R": rng.normal(size=(P_s, H_s))}  # fmt: skip
    x_1, x_2 = rng.normal(size=(1, D_s)), rng.normal(size=(1, D_s))
    h_0, c_0 = rng.normal(size=(1, P_s)), rng.normal(size=(1, H_s))
    h_1, c_1 = lstmp_cell_forward(x_1, h_0, c_0, small)
    first = cell_jacobian(lambda c: lstmp_cell_forward(x_1, h_0, c, small)[1], c_0)
    second = cell_jacobian(lambda c: lstmp_cell_forward(x_2, h_1, c, small)[1], c_1)
    both = cell_jacobian(
        lambda c: lstmp_cell_forward(x_2, *lstmp_cell_forward(x_1, h_0, c, small), small)[1], c_0
    )
    off_diagonal = np.abs(first - np.diag(np.diag(first))).max()
    print(f"one step, H = {H_s}, P = {P_s}: largest off-diagonal |entry| {off_diagonal:.0e} "
          "(the diagonal is f_t)")  # fmt: skip
    correction = both - np.diag(np.diag(second) * np.diag(first))
    singular = np.linalg.svd(correction, compute_uv=False)
    print("two steps: singular values of the correction", " ".join(f"{s:.1e}" for s in singular))
    print(f"{(singular > 1e-6).sum()} above 1e-6, {(singular <= 1e-6).sum()} below")
except NotImplementedError:
    print("Implement lstmp_cell_forward first, then run this cell again.")

# %% [markdown] nbgrader={"grade": true, "grade_id": "projection_cost_and_rank", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** 1. The cell has $4HD$ numbers in $U$, $4HP$ in $W$, $4H$ in $b$ and $PH$
# in $R$: $4H(D + P + 1) + PH$ parameters, and one step costs $4H(D + P) + PH$
# multiply-adds. For $D = 64$, $H = 128$, $P = 32$ that is 53,760 parameters and 53,248
# multiply-adds, against 98,816 and 98,304 for Lecture 2's cell with $H = 128$ (x0.54) and
# 12,416 and 12,288 with $H = 32$ (x4.3). The saving is all in $W$, which holds 16,384
# numbers instead of 65,536, for the price of $R$'s 4,096. The memory is the large cell's:
# 128 cell units, each with its own forget gate on the cell path; the recurrent input is the
# small cell's: the gates read the past through 32 numbers only; the cost is about half the
# large cell's. 2. Of $c_{t+1} = f_{t+1} \odot c_t + i_{t+1} \odot \tilde c_{t+1}$, the
# gates and the candidate of step $t + 1$ depend on $c_{t-1}$ only through $h_t$, so
# $\partial c_{t+1} / \partial c_{t-1} = \operatorname{diag}(f_{t+1} \odot f_t) + G\,
# \partial h_t / \partial c_{t-1}$, with
# $G = \operatorname{diag}(c_t)\,\partial f_{t+1} / \partial h_t + \operatorname{diag}(\tilde c_{t+1})\,
# \partial i_{t+1} / \partial h_t + \operatorname{diag}(i_{t+1})\,\partial \tilde c_{t+1} / \partial h_t$
# of shape $H \times P$. The correction passes through the $P$ numbers of $h_t$: its rank is
# at most $P$, so for $H = 6$ and $P = 2$ at least 4 singular values are 0. The cell prints 2
# singular values of 2.5e-01 and 9.3e-02, and 4 below 1e-6 (9.4e-11 and less: the rounding
# of the central differences). In Lecture 2's cell $P = H$ and the correction can have full
# rank; the projection leaves the diagonal path whole and lets each cell sway the others'
# future only along $P$ directions.
#
# *Grading notes: 1 point for the formula of the parameters (or of the multiply-adds) with
# the three counts for $D = 64$ and the comparison: memory of the large cell, recurrent input
# of the small one, about half the large cell's cost; 1 point for the correction written as a
# product through $h_t$ (an $H \times P$ factor) and its rank at most $P$, with the 2 large
# and 4 vanishing singular values. Accept the student's own printed numbers. The numbers
# above are those the reference prints; `tests/grading/test_a2_hidden_checks.py` checks each
# against the cell's output.*
