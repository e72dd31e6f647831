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
# # Assignment 5: self-attention, masks and positions
#
# Lecture 5 built self-attention in PyTorch: one query at a time, then as matrices, then with
# several heads, and it gave the model four ways to know where a token stands. Here you write
# the same machinery in NumPy, in the general form a Transformer needs: batches, queries and
# keys of different lengths, masks, and positions that need not be $0, 1, 2, \dots$
#
# **Goals.** After this assignment you can
#
# 1. compute scaled dot-product attention for a batch with causal and padding masks, stably
#    (Part A);
# 2. run multi-head attention from the weights of a `torch.nn.MultiheadAttention` (Part B);
# 3. build the sinusoidal encoding and show why it encodes relative positions (Part C);
# 4. rotate queries and keys with RoPE, so that their scores depend on offsets only (Part D);
# 5. say what attention costs on long inputs, compared with a recurrent layer (Part E, written).
#
# ## Notation
#
# Everything is NumPy, in `float64`. Vectors are **rows**: a sequence of $n$ tokens is a
# matrix $X$ of shape (n, d_model) whose row $i$ is $x_i$, and a weight matrix $W$ acts as
# `X @ W.T`, as in `torch.nn.Linear`. Queries, keys and values are
#
# $$Q = X W^{Q\top}, \qquad K = X W^{K\top}, \qquad V = X W^{V\top},$$
#
# with $W^Q, W^K$ of shape $(d_k, d_\text{model})$ and $W^V$ of shape $(d_v, d_\text{model})$.
# Arrays may have **leading batch dimensions**, written "…": `Q` of shape (…, n, d_k) is a
# stack of query matrices. $n$ counts queries and $m$ keys; in self-attention $m = n$, in
# cross-attention (a decoder reading an encoder) they differ. Positions are numbered from 0.
#
# A **mask** is an array of booleans, **True where a query may attend to a key**
# (the convention of `torch.nn.functional.scaled_dot_product_attention`; beware that
# `torch.nn.MultiheadAttention`'s `attn_mask` uses the opposite one, True = blocked).
#
# ## How you are graded
#
# * Parts A to D are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off, where and by how much), and a **hidden test**
#   that runs at grading time on other shapes, seeds and edge cases (batch dimensions,
#   $n \ne m$, $d_k = 1$, one head, as many heads as features, scores in the thousands,
#   positions that skip, negative and fractional positions, non-contiguous arrays...) and
#   checks that bad input raises `ValueError`. Hard-coding the visible answers keeps the
#   visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests torch's attention (`F.scaled_dot_product_attention`,
#   `nn.MultiheadAttention` and its functions), every softmax of torch and SciPy, autograd and the
#   helpers of the `course` package (among them `course.models.attention`) are replaced by traps:
#   calling them from your functions fails the test. (`course.checks` is allowed.) The visible tests
#   run your functions under the same rule and say so when one of them calls a forbidden routine;
#   their data and expected values are in `course/checks/a5_self_attention.py`.
#
# Autograded: 14 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a5 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a5_self_attention/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a5_self_attention import check_part_a, check_part_b, check_part_c, check_part_d

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## Part A: scaled dot-product attention with masks (4 points)
#
# Query $i$ scores key $j$ by $s_{ij} = q_i \cdot k_j / \sqrt{d_k}$, and the scores of a row
# become weights by a softmax over the keys it may see. With the additive mask $M_{ij} = 0$
# where the mask is True and $-\infty$ where it is False,
#
# $$A = \operatorname{softmax}\Big(\frac{Q K^\top}{\sqrt{d_k}} + M\Big) \text{ (row by row)},
# \qquad Z = A V,$$
#
# so a blocked key gets weight exactly 0 and each row of $A$ sums to 1 over the allowed keys.
#
# Implement
#
# * `attention(Q, K, V, mask=None)`: `Q` (…, n, d_k), `K` (…, m, d_k), `V` (…, m, d_v), and
#   `mask` `None` (every key allowed) or booleans whose shape broadcasts to (…, n, m). Return
#   the tuple `(Z, A)`: `Z` of shape (…, n, d_v) and the weights `A` of shape (…, n, m).
# * `causal_mask(n)`: the (n, n) mask of a decoder, where position $i$ sees the positions
#   $j \le i$ and none after it.
# * `padding_mask(lengths, m)`: for a batch of sequences padded to $m$ tokens, with `lengths[b]`
#   real tokens in sequence $b$, the mask of shape (B, 1, m) that allows the real keys of each
#   sequence and blocks its padding (the axis of length 1 broadcasts over the queries; combine
#   it with a causal mask by `&`).
#
# **Stability.** Scores are not small: with $d_k = 64$ and entries of size 4 a score is about
# 128, and $e^{710}$ overflows. The softmax does not change when one number is subtracted from
# a whole row; subtract the row's largest **allowed** score.
#
# **Bad input** raises `ValueError` with a clear message: arrays with fewer than 2 dimensions,
# `Q` and `K` with different $d_k$, `K` and `V` with different $m$, a mask that is not boolean
# or does not broadcast to (…, n, m), and **a row of the mask that allows no key** (its softmax
# would divide 0 by 0): the message must say which row. `causal_mask` and `padding_mask` raise
# it for a size below 1, a length outside $1, \dots, m$, and lengths that are not integers in a
# 1-D array.


# %% nbgrader={"grade": false, "grade_id": "attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention.

    Args:
        Q: queries, shape (..., n, d_k).
        K: keys, shape (..., m, d_k).
        V: values, shape (..., m, d_v).
        mask: None, or booleans broadcastable to (..., n, m); True where query i may attend
            to key j.

    Returns:
        (Z, A): the outputs, shape (..., n, d_v), and the weights, shape (..., n, m).

    Raises:
        ValueError: for mismatched shapes, a mask that is not boolean, or a row of the mask
            with no allowed key.
    """
    ### BEGIN SOLUTION
    queries = np.asarray(Q, dtype=np.float64)
    keys = np.asarray(K, dtype=np.float64)
    values = np.asarray(V, dtype=np.float64)
    for label, array in (("Q", queries), ("K", keys), ("V", values)):
        if array.ndim < 2:
            raise ValueError(f"{label} needs at least 2 dimensions, got shape {array.shape}")
    if queries.shape[-1] != keys.shape[-1]:
        widths = f"Q has {queries.shape[-1]} features, K has {keys.shape[-1]}"
        raise ValueError(f"Q and K must share d_k: {widths}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"K has {keys.shape[-2]} keys but V has {values.shape[-2]} values")
    if keys.shape[-2] == 0:
        raise ValueError("there are no keys to attend to (m = 0)")
    d_k = queries.shape[-1]
    scores = queries @ np.swapaxes(keys, -1, -2) / np.sqrt(d_k)  # (..., n, m)
    if mask is not None:  # blocked keys will score -inf
        allowed = np.asarray(mask)
        if allowed.dtype != np.bool_:
            raise ValueError(f"mask must hold booleans (True = may attend), not {allowed.dtype}")
        ours, theirs = scores.shape[::-1], allowed.shape[::-1]  # aligned from the last axis
        rows_fit = allowed.ndim >= 2 and allowed.shape[-2] in (1, scores.shape[-2])
        inner = rows_fit and allowed.shape[-1] in (1, scores.shape[-1])
        outer = all(1 in (a, b) or a == b for a, b in zip(ours[2:], theirs[2:], strict=False))
        if not (inner and outer):
            shapes = f"mask of shape {allowed.shape} against scores of shape {scores.shape}"
            raise ValueError(f"the mask must broadcast to (..., n, m): {shapes}")
        grid = np.broadcast_shapes(scores.shape, allowed.shape)
        allowed = np.broadcast_to(allowed, grid)
        blind = ~allowed.any(axis=-1)  # (..., n): rows with no key to see
        if blind.any():
            where = tuple(int(i) for i in np.argwhere(blind)[0])
            batch = f" of batch entry {list(where[:-1])}" if len(where) > 1 else ""
            empty = f"row {where[-1]}{batch} of the mask allows no key"
            raise ValueError(f"{empty}: its softmax would be 0/0")
        scores = np.where(allowed, np.broadcast_to(scores, grid), -np.inf)
    top = scores.max(axis=-1, keepdims=True)  # the largest allowed score of each row
    lifted = np.exp(scores - top)  # in (0, 1]; blocked keys give exp(-inf) = 0
    weights = lifted / lifted.sum(axis=-1, keepdims=True)  # (..., n, m)
    return weights @ values, weights  # (..., n, d_v), (..., n, m)
    ### END SOLUTION


def causal_mask(n: int) -> np.ndarray:
    """The (n, n) boolean mask that lets position i see positions j <= i."""
    ### BEGIN SOLUTION
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    steps = np.arange(n)
    return steps[None, :] <= steps[:, None]  # (n, n): True on and below the diagonal
    ### END SOLUTION


def padding_mask(lengths: np.ndarray | list[int], m: int) -> np.ndarray:
    """The (B, 1, m) boolean mask that allows key j of sequence b when j < lengths[b]."""
    ### BEGIN SOLUTION
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be a positive integer, got {m!r}")
    sizes = np.asarray(lengths)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        given = f"shape {sizes.shape} and dtype {sizes.dtype}"
        raise ValueError(f"lengths must be a non-empty 1-D array of integers, got {given}")
    if sizes.min() < 1 or sizes.max() > m:
        raise ValueError(f"every length must lie in 1..m = {m}, got {sizes.tolist()}")
    return (np.arange(m)[None, :] < sizes[:, None])[:, None, :]  # (B, 1, m)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Three queries and four keys with $d_k = 2$, values of size $d_v = 3$; the expected numbers
# come from `torch.nn.functional.scaled_dot_product_attention` (and its weights from the same
# function with $V = I$).

# %% nbgrader={"grade": true, "grade_id": "test_attention_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(attention, causal_mask, padding_mask)

# %% nbgrader={"grade": true, "grade_id": "test_attention_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): attention against torch's scaled_dot_product_attention for batch
# dimensions, n != m, d_k = 1, a single key, scores in the thousands, causal and padding masks
# combined, masks that broadcast over the batch, non-contiguous arrays; causal_mask and
# padding_mask for other sizes and lengths given as a list; inputs must come back unmodified;
# ValueError (naming the row) for a row with no allowed key, and for the bad inputs above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_attention

check_attention(attention, causal_mask, padding_mask)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your attention against PyTorch's
#
# Once Part A passes, this cell compares your function with
# `torch.nn.functional.scaled_dot_product_attention` on a random batch with a causal and a
# padding mask, and shows what a naive softmax does with large scores.

# %%
import torch

rng = np.random.default_rng(0)
Q_x, K_x, V_x = (rng.normal(size=(2, 5, 8)) for _ in range(3))
try:
    mask_x = causal_mask(5) & padding_mask([5, 3], 5)  # (2, 5, 5)
    Z_x, A_x = attention(Q_x, K_x, V_x, mask_x)
    Z_torch = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (Q_x, K_x, V_x)), attn_mask=torch.tensor(mask_x)
    )
    print(f"largest difference from PyTorch: {np.abs(Z_x - Z_torch.numpy()).max():.1e}")
    print("weights of sequence 1 (3 real tokens, causal):\n", A_x[1])
    with np.errstate(over="ignore", invalid="ignore"):
        big = 400.0 * Q_x[0] @ K_x[0].T / np.sqrt(8)
        naive = np.exp(big) / np.exp(big).sum(axis=-1, keepdims=True)
    print(f"a naive softmax of scores up to {big.max():.0f}: {np.isnan(naive).sum()} nan of 25")
except NotImplementedError:
    print("Implement Part A first, then run this cell again.")

# %% [markdown]
# ## Part B: multi-head attention with given weights (4 points)
#
# Multi-head attention runs $h$ attentions side by side, each on its own slice of $d_k =
# d_\text{model} / h$ features, and mixes their outputs with $W^O$. The weights are those of
# a `torch.nn.MultiheadAttention(d_model, h)`, in `params`:
#
# * `"in_proj_weight"` (3 d_model, d_model): $[W^Q; W^K; W^V]$ stacked by rows;
# * `"in_proj_bias"` (3 d_model,): $[b^Q; b^K; b^V]$ (may be missing: no bias);
# * `"out_proj_weight"` (d_model, d_model): $W^O$;
# * `"out_proj_bias"` (d_model,): $b^O$ (may be missing: no bias).
#
# For self-attention on $X$ of shape (…, n, d_model):
#
# $$Q = X W^{Q\top} + b^Q,\quad K = X W^{K\top} + b^K,\quad V = X W^{V\top} + b^V,$$
#
# head $r$ ($r = 0, \dots, h-1$) takes the columns $r d_k, \dots, (r+1) d_k - 1$ of each:
#
# $$\text{head}_r = \operatorname{softmax}\Big(\frac{Q_r K_r^\top}{\sqrt{d_k}} + M\Big) V_r,
# \qquad \text{MultiHead}(X) = [\text{head}_0; \dots; \text{head}_{h-1}]\, W^{O\top} + b^O,$$
#
# where $[\cdot\,;\cdot]$ concatenates the heads' outputs feature-wise, back to width
# d_model. Note the scale: $\sqrt{d_k}$ of a head, not $\sqrt{d_\text{model}}$.
#
# Implement `multi_head_attention(X, params, num_heads, mask=None)`, returning the tuple
# `(out, weights)`: `out` of shape (…, n, d_model) and the weights of every head, shape
# (…, num_heads, n, n). The `mask` (booleans, True = may attend, broadcastable to (…, n, n))
# applies to every head. Use your `attention`; the heads need no loop (move the head axis in
# front of the positions).
#
# Raise `ValueError` when d_model is not divisible by `num_heads` (with a message that says
# so, using the word "divisible"), for `num_heads` below 1, `X` with fewer than 2 dimensions,
# a missing weight matrix, and a weight or bias of the wrong shape.


# %% nbgrader={"grade": false, "grade_id": "multi_head_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def multi_head_attention(
    X: np.ndarray,
    params: dict[str, np.ndarray],
    num_heads: int,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head self-attention with torch.nn.MultiheadAttention's weights.

    Args:
        X: the tokens, shape (..., n, d_model).
        params: "in_proj_weight" (3 d_model, d_model), "out_proj_weight" (d_model, d_model),
            and optionally "in_proj_bias" (3 d_model,) and "out_proj_bias" (d_model,).
        num_heads: h, a divisor of d_model.
        mask: None, or booleans broadcastable to (..., n, n); True = may attend.

    Returns:
        (out, weights): shapes (..., n, d_model) and (..., num_heads, n, n).

    Raises:
        ValueError: when d_model is not divisible by num_heads, or for a missing or misshapen
            weight.
    """
    ### BEGIN SOLUTION
    tokens = np.asarray(X, dtype=np.float64)
    if tokens.ndim < 2:
        raise ValueError(f"X must have shape (..., n, d_model), got shape {tokens.shape}")
    width = tokens.shape[-1]
    if isinstance(num_heads, (bool, np.bool_)) or not isinstance(num_heads, (int, np.integer)):
        raise ValueError(f"num_heads must be an integer, got {num_heads!r}")
    if num_heads < 1:
        raise ValueError(f"num_heads must be at least 1, got {num_heads}")
    if width % num_heads:
        sizes = f"d_model = {width} is not divisible by num_heads = {num_heads}"
        raise ValueError(f"{sizes}: the heads cannot share the features equally")
    shapes = {"in_proj_weight": (3 * width, width), "in_proj_bias": (3 * width,)}
    shapes |= {"out_proj_weight": (width, width), "out_proj_bias": (width,)}
    for key, shape in shapes.items():
        if key not in params:
            if key.endswith("_bias"):
                continue  # a layer built with bias=False
            raise ValueError(f"params has no {key!r}")
        if np.shape(params[key]) != shape:
            wrong = f"params[{key!r}] has shape {np.shape(params[key])}"
            raise ValueError(f"{wrong}; d_model = {width} needs {shape}")
    if mask is not None and np.ndim(mask) < 2:
        raise ValueError(f"mask must broadcast to (..., n, n), got shape {np.shape(mask)}")
    d_k = width // num_heads
    lead = tokens.shape[:-1]  # (..., n)
    packed = tokens @ np.asarray(params["in_proj_weight"], dtype=np.float64).T  # (..., n, 3d)
    if "in_proj_bias" in params:
        packed = packed + np.asarray(params["in_proj_bias"], dtype=np.float64)
    per_head = packed.reshape(*lead, 3, num_heads, d_k)  # (..., n, 3, h, d_k)
    per_head = np.moveaxis(per_head, -3, 0)  # (3, ..., n, h, d_k)
    q, k, v = np.swapaxes(per_head, -2, -3)  # each (..., h, n, d_k)
    head_mask = None if mask is None else np.asarray(mask)[..., None, :, :]  # (..., 1, n, n)
    mixed, weights = attention(q, k, v, head_mask)  # (..., h, n, d_k), (..., h, n, n)
    joined = np.swapaxes(mixed, -2, -3).reshape(*lead, width)  # (..., n, d_model)
    out = joined @ np.asarray(params["out_proj_weight"], dtype=np.float64).T
    if "out_proj_bias" in params:
        out = out + np.asarray(params["out_proj_bias"], dtype=np.float64)
    return out, weights
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# $n = 3$ tokens with $d_\text{model} = 4$ and $h = 2$ heads, without a mask and with a causal
# one; the expected numbers come from `torch.nn.MultiheadAttention` with these weights copied
# in (and its `attn_mask=~mask`, since it marks blocked positions with True).

# %% nbgrader={"grade": true, "grade_id": "test_multi_head_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(multi_head_attention)

# %% nbgrader={"grade": true, "grade_id": "test_multi_head_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): multi_head_attention against torch.nn.MultiheadAttention (float64,
# weights copied) for one head, as many heads as features (d_k = 1), a batch with a causal
# mask, a padding mask per sequence, no biases, non-contiguous arrays; inputs must come back
# unmodified; ValueError for d_model not divisible by num_heads, num_heads = 0, a missing or
# misshapen weight, X that is 1-D.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_multi_head_attention

check_multi_head_attention(multi_head_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): your heads against PyTorch's
#
# Random weights for `d_model = 8` and `h = 4`, copied into `torch.nn.MultiheadAttention`;
# the largest difference of the outputs and of the weights of every head.

# %%
rng = np.random.default_rng(1)
params_x = {
    "in_proj_weight": rng.normal(size=(24, 8)) / np.sqrt(8),
    "in_proj_bias": 0.1 * rng.normal(size=24),
    "out_proj_weight": rng.normal(size=(8, 8)) / np.sqrt(8),
    "out_proj_bias": 0.1 * rng.normal(size=8),
}
X_x = rng.normal(size=(2, 6, 8))
layer_x = torch.nn.MultiheadAttention(8, 4, batch_first=True, dtype=torch.float64)
with torch.no_grad():
    layer_x.in_proj_weight.copy_(torch.tensor(params_x["in_proj_weight"]))
    layer_x.in_proj_bias.copy_(torch.tensor(params_x["in_proj_bias"]))
    layer_x.out_proj.weight.copy_(torch.tensor(params_x["out_proj_weight"]))
    layer_x.out_proj.bias.copy_(torch.tensor(params_x["out_proj_bias"]))
    blocked_x = ~torch.tensor(np.tril(np.ones((6, 6), dtype=bool)))  # torch: True = blocked
    X_t = torch.tensor(X_x)
    out_t, weights_t = layer_x(
        X_t, X_t, X_t, attn_mask=blocked_x, need_weights=True, average_attn_weights=False
    )
try:
    out_x, weights_x = multi_head_attention(X_x, params_x, 4, np.tril(np.ones((6, 6), bool)))
    print(f"out: largest difference {np.abs(out_x - out_t.numpy()).max():.1e}")
    print(f"weights: largest difference {np.abs(weights_x - weights_t.numpy()).max():.1e}")
except NotImplementedError:
    print("Implement Part B first, then run this cell again.")

# %% [markdown]
# ## Part C: the sinusoidal encoding and relative positions (3 points)
#
# Attention by itself ignores order: permuting the tokens permutes the outputs the same way.
# Vaswani et al. (2017) add to token $i$ the vector $p_i$ with, for $r = 0, \dots, d/2 - 1$,
#
# $$p_{i, 2r} = \sin(i\,\omega_r), \qquad p_{i, 2r+1} = \cos(i\,\omega_r), \qquad
# \omega_r = \text{base}^{-2r/d}, \quad \text{base} = 10000$$
#
# (sine and cosine **interleaved**: columns 0, 2, 4, … are sines, 1, 3, 5, … cosines). Each
# pair of columns turns with position at its own frequency $\omega_r$, from one radian per
# position ($r = 0$) down to about $1/\text{base}$.
#
# Two properties make these vectors relative. First, since
# $\sin a \sin b + \cos a \cos b = \cos(a - b)$,
#
# $$p_i \cdot p_j = \sum_{r=0}^{d/2-1} \cos\big((i - j)\,\omega_r\big),$$
#
# which depends on the offset $i - j$ only: the matrix of dot products is constant along each
# diagonal (a Toeplitz matrix). Second, moving $k$ positions is a **linear map** that is the
# same at every position: $p_{i+k} = M_k\, p_i$, where $M_k$ is block-diagonal with one
# $2 \times 2$ block per frequency. From $\sin(a + b) = \sin a \cos b + \cos a \sin b$ and
# $\cos(a + b) = \cos a \cos b - \sin a \sin b$, the block for $r$ acting on
# $(p_{i,2r}, p_{i,2r+1})$ is
#
# $$\begin{pmatrix} \cos k\omega_r & \sin k\omega_r \\ -\sin k\omega_r & \cos k\omega_r
# \end{pmatrix}.$$
#
# Implement
#
# * `sinusoidal_encoding(n, d, base=10000.0)`: the (n, d) matrix whose row $i$ is $p_i$;
# * `relative_dot(n, d)`: the (n, n) matrix of $p_i \cdot p_j$ (base 10000), from the
#   encoding or from the sum of cosines;
# * `shift_matrix(k, d, base=10000.0)`: the (d, d) matrix $M_k$, for any integer $k$
#   (negative too).
#
# Raise `ValueError` for $n < 1$ and for $d$ that is odd or below 2.


# %% [markdown]
# The frequencies are given (with the check of $d$); use them in Parts C and D.


# %% nbgrader={"grade": false, "grade_id": "given_frequencies", "locked": true, "schema_version": 3, "solution": false, "task": false}
def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """omega_r = base ** (-2r / d) for r = 0 .. d/2 - 1, after checking d."""
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise ValueError(f"d must be an integer, got {d!r}")
    if d < 2 or d % 2:
        raise ValueError(f"d must be even and at least 2 (one sine and one cosine), got {d}")
    return float(base) ** (-np.arange(0, d, 2) / d)  # (d/2,)


# %% nbgrader={"grade": false, "grade_id": "sinusoidal", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sinusoidal_encoding(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal positions p_0 .. p_{n-1}, interleaved sin/cos. Returns (n, d)."""
    ### BEGIN SOLUTION
    omega = frequencies(d, base)  # (d/2,)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    phase = np.arange(n)[:, None] * omega[None, :]  # (n, d/2): i * omega_r
    table = np.empty((n, d))
    table[:, 0::2] = np.sin(phase)
    table[:, 1::2] = np.cos(phase)
    return table
    ### END SOLUTION


def relative_dot(n: int, d: int) -> np.ndarray:
    """p_i . p_j for i, j < n (base 10000). Returns (n, n)."""
    ### BEGIN SOLUTION
    omega = frequencies(d)  # (d/2,)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    offsets = np.arange(n)
    per_offset = np.cos(offsets[:, None] * omega).sum(axis=1)  # (n,): sum_r cos(k omega_r)
    return per_offset[np.abs(offsets[:, None] - offsets[None, :])]  # (n, n), Toeplitz
    ### END SOLUTION


def shift_matrix(k: int, d: int, base: float = 10000.0) -> np.ndarray:
    """M_k with p_{i+k} = M_k p_i for every i. Returns (d, d)."""
    ### BEGIN SOLUTION
    turn = k * frequencies(d, base)  # (d/2,): the angle k * omega_r of each pair
    block = np.zeros((d, d))
    evens = np.arange(0, d, 2)
    block[evens, evens] = np.cos(turn)
    block[evens, evens + 1] = np.sin(turn)
    block[evens + 1, evens] = -np.sin(turn)
    block[evens + 1, evens + 1] = np.cos(turn)
    return block
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C

# %% nbgrader={"grade": true, "grade_id": "test_sinusoidal_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(sinusoidal_encoding, relative_dot, shift_matrix)

# %% nbgrader={"grade": true, "grade_id": "test_sinusoidal_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): sinusoidal_encoding against the formula computed another way for
# other n, d and bases (n = 1, d = 2, long sequences), relative_dot against the closed form
# and shift_matrix for negative, zero and large shifts; ValueError for an odd d, d = 0, n = 0.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_sinusoidal

check_sinusoidal(sinusoidal_encoding, relative_dot, shift_matrix)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): how far apart do two positions look?
#
# The dot product $p_0 \cdot p_k$ as the offset $k$ grows: largest at $k = 0$ ($d/2$), it falls
# off but not monotonically, and for $d = 64$ it stays distinct over thousands of positions.

# %%
try:  # p_0 against every position, from the encoding itself: (n,), not an (n, n) matrix
    encoding_x = np.asarray(sinusoidal_encoding(2000, 64))
    far_x = encoding_x @ encoding_x[0]
    for offset_x in (0, 1, 2, 5, 10, 50, 100, 1000, 1999):
        print(f"p_0 . p_{offset_x:<5} = {far_x[offset_x]:7.3f}")
except NotImplementedError:
    print("Implement Part C first, then run this cell again.")

# %% [markdown]
# ## Part D: rotary position embedding (3 points)
#
# RoPE (Su et al., 2021) does not add positions to the tokens; it **rotates** the query and the
# key of position $i$ by angles proportional to $i$, just before their dot product. Each pair
# of features $(x_{2r}, x_{2r+1})$ turns by the angle $i\,\theta_r$,
# $\theta_r = \text{base}^{-2r/d}$:
#
# $$\begin{pmatrix} x'_{2r} \\ x'_{2r+1} \end{pmatrix} =
# \begin{pmatrix} \cos i\theta_r & -\sin i\theta_r \\ \sin i\theta_r & \cos i\theta_r
# \end{pmatrix} \begin{pmatrix} x_{2r} \\ x_{2r+1} \end{pmatrix}.$$
#
# Writing $R_i$ for this block-diagonal rotation, $(R_i q)^\top (R_j k) = q^\top R_i^\top R_j
# k = q^\top R_{j-i}\, k$, since rotations by $a$ and then by $-b$ add up to a rotation by
# $a - b$: the score depends on the offset $j - i$ only, and a rotation keeps every length.
#
# Implement `apply_rope(x, positions, base=10000.0)`: `x` of shape (…, n, d) with $d$ even,
# `positions` the $n$ positions of the rows (shape (n,), or `x.shape[:-1]` for one set of
# positions per sequence). Positions need not be $0, \dots, n-1$: a decoder with a cache
# rotates the new token at its true position, a sequence may skip positions, and fractional
# positions are allowed (position interpolation squeezes long inputs into a trained range
# that way). Return the rotated array, same shape as `x`.
#
# Raise `ValueError` for an odd $d$, `x` with fewer than 2 dimensions, and positions whose
# shape does not broadcast to `x.shape[:-1]` or that are a single number.


# %% nbgrader={"grade": false, "grade_id": "rope", "locked": false, "schema_version": 3, "solution": true, "task": false}
def apply_rope(x: np.ndarray, positions: np.ndarray | list, base: float = 10000.0) -> np.ndarray:
    """Rotate each pair (x_{2r}, x_{2r+1}) of row i by positions[i] * theta_r.

    Args:
        x: queries or keys, shape (..., n, d), d even.
        positions: shape (n,) or x.shape[:-1]; numbers (integers usually).
        base: theta_r = base ** (-2r / d).

    Returns:
        The rotated x, shape (..., n, d).
    """
    ### BEGIN SOLUTION
    rows = np.asarray(x, dtype=np.float64)
    if rows.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d), got shape {rows.shape}")
    d = rows.shape[-1]
    if d % 2:
        raise ValueError(f"d = {d} is odd: RoPE rotates pairs of features")
    where = np.asarray(positions, dtype=np.float64)
    if where.ndim == 0:
        raise ValueError("positions must hold one position per row, not a single number")
    pairs = zip(rows.shape[-2::-1], where.shape[::-1], strict=False)  # from the last axis
    fits = where.ndim < rows.ndim and all(b in (1, a) for a, b in pairs)
    if not fits:
        wanted = f"({rows.shape[-2]},) or {rows.shape[:-1]}"
        raise ValueError(f"positions of shape {where.shape} do not fit x {rows.shape}: {wanted}")
    where = np.broadcast_to(where, rows.shape[:-1])  # (..., n)
    theta = frequencies(d, base)  # (d/2,)
    angle = where[..., None] * theta  # (..., n, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = rows[..., 0::2], rows[..., 1::2]  # (..., n, d/2) each
    turned = np.empty_like(rows)
    turned[..., 0::2] = first * cos - second * sin
    turned[..., 1::2] = first * sin + second * cos
    return turned
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D

# %% nbgrader={"grade": true, "grade_id": "test_rope_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(apply_rope)

# %% nbgrader={"grade": true, "grade_id": "test_rope_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): apply_rope against rotations computed with complex numbers in torch,
# for batches, d = 2, long and negative positions, fractional positions, one set of positions
# per sequence, other bases, non-contiguous arrays; scores that depend on offsets only and
# lengths kept; inputs must come back unmodified; ValueError for an odd d, a 1-D x, and
# positions of the wrong length.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_rope

check_rope(apply_rope)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): a score that only sees the offset
#
# One query and one key, both rotated, at every pair of positions up to 8: the table of scores
# is constant along its diagonals, whatever the vectors.

# %%
rng = np.random.default_rng(5)
q_x, k_x = rng.normal(size=(2, 16))
try:
    spots_x = np.arange(8)
    table_x = (
        apply_rope(np.tile(q_x, (8, 1)), spots_x) @ apply_rope(np.tile(k_x, (8, 1)), spots_x).T
    )
    print(np.round(table_x, 3))
except NotImplementedError:
    print("Implement Part D first, then run this cell again.")

# %% [markdown]
# ## Part E: attention on long inputs (2 points, graded by hand)
#
# In 4 to 8 sentences: how do the time and the memory of self-attention grow with the length
# $n$ of the input, for a fixed width $d$, and how does that compare with a recurrent layer of
# width $d$ (operations, memory, and the number of steps that must run one after the other)?
# Where does the quadratic term come from, and what does it mean for $n = 100{,}000$? Name one
# idea that makes long inputs affordable and what it gives up, and say whether ALiBi or RoPE
# changes the cost.

# %% [markdown] nbgrader={"grade": true, "grade_id": "long_inputs", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** Self-attention compares every query with every key: $QK^\top$ costs
# $O(n^2 d)$ operations, so does $AV$, and the score matrix has $n^2$ entries per head, so time
# and memory grow quadratically with $n$ (the projections add only $O(n d^2)$). A recurrent
# layer does $O(d^2)$ work per step, $O(n d^2)$ in all, and keeps one state of size $d$, but its
# $n$ steps must run one after the other, while attention computes all positions at once in
# $O(1)$ sequential steps and connects any two positions by a path of length 1 instead of
# $n$. Attention is cheaper than recurrence while $n < d$ and dearer beyond; at
# $n = 100{,}000$ one head's scores alone are $10^{10}$ numbers, 80 GB in float64. Remedies:
# local (sliding-window) attention lets each token see the $w$ previous ones, $O(n w d)$, at
# the price of no direct path beyond $w$ (stacked layers widen the view); sparse or
# low-rank/kernel approximations, or computing exact attention in tiles without storing
# $A$ (FlashAttention: memory $O(n)$, time still $O(n^2 d)$). ALiBi and RoPE only change the
# scores (a bias, a rotation); they help a model handle lengths it was not trained on but do
# not change the $O(n^2)$ cost.
#
# *Grading notes: 1 point for the costs ($O(n^2 d)$ time and $O(n^2)$ memory against
# $O(n d^2)$ and $O(n)$ sequential steps for the RNN, attention parallel in $O(1)$ steps); 1 point
# for a sound remedy with its price, and for saying that positional schemes do not reduce the
# cost.*
