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
# in NumPy the forms that real models need and the lecture does not write: attention that
# keeps its footing when a query has no key and that can be computed in pieces, positions read
# back from their encoding, and the partial, offset RoPE of GPT-NeoX.
#
# **Goals.** After this assignment you can
#
# 1. compute scaled dot-product attention with a local mask over a padded batch, returning
#    zeros for queries that see no key, and join attention computed over two sets of keys from
#    their log-sum-exps, as FlashAttention does (Part A);
# 2. run multi-head attention from the weights of a `torch.nn.MultiheadAttention` (Part B);
# 3. build the matrix that moves a sinusoidal encoding by $k$ positions, and read a position
#    back from its encoding, precisely, from coarse and fine frequencies (Part C);
# 4. apply RoPE to part of each head, in the halves layout, at positions after a cache
#    (Part D);
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
#   $n \ne m$, $d_k = 1$, one head, as many heads as features, scores in the thousands, rows
#   and whole sequences with no key, encodings in `float32`, negative and fractional
#   offsets, non-contiguous arrays...) and checks that bad input raises `ValueError`.
#   Hard-coding the visible answers keeps the visible points only.
# * Part E is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs.
# * Use NumPy. During the hidden tests torch's attention (`F.scaled_dot_product_attention`,
#   `nn.MultiheadAttention` and its functions), every softmax and log-sum-exp of torch and
#   SciPy, autograd, the rotary helpers of `transformers` (GPT-NeoX's and Llama's) and the
#   helpers of the `course` package (among them `course.models.attention`) are replaced by
#   traps: calling them from your functions fails the test. (`course.checks` is allowed.) The
#   visible tests run your functions under the same rule and say so when one of them calls a
#   forbidden routine; their data and expected values are in
#   `course/checks/a5_self_attention.py`.
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
# ## Part A: attention that survives empty rows, and attention in pieces (4 points)
#
# Query $i$ scores key $j$ by $s_{ij} = q_i \cdot k_j / \sqrt{d_k}$, and the scores of a row
# become weights by a softmax over the keys it may see. With the additive mask $M_{ij} = 0$
# where the mask is True and $-\infty$ where it is False,
#
# $$A = \operatorname{softmax}\Big(\frac{Q K^\top}{\sqrt{d_k}} + M\Big) \text{ (row by row)},
# \qquad Z = A V, \qquad L_i = \log \sum_{j \text{ allowed}} e^{s_{ij}}.$$
#
# $L_i$, the **log-sum-exp** of row $i$'s allowed scores, is the log of the softmax's
# denominator: $a_{ij} = e^{s_{ij} - L_i}$. FlashAttention keeps $L$ instead of the $n \times m$
# matrix $A$, because it is all one needs to join the results of two pieces of the keys.
#
# **Local attention with padding.** Longformer-style local attention lets token $i$ see the
# keys $j$ with $|i - j| \le w$ (a band of radius $w$). In a padded batch, key $j$ of sequence
# $b$ is also blocked when it is padding, $j \ge \ell_b$. A padding *query* then may have no key
# at all: when $i - w \ge \ell_b$, every key in its band is padding. A plain softmax turns
# such a row into `nan` ($0/0$), and Lecture 5's `attention` refuses it. Yours must not: **a
# row with no allowed key gets $Z_i = 0$, $A_{i\cdot} = 0$ and $L_i = -\infty$**, with no `nan`
# anywhere, and every other row is exact and stable (scores in the thousands are normal).
#
# **Attention in pieces.** Split the keys (and their values) into two disjoint sets $a$ and
# $b$, and attend to each: $(Z^a, L^a)$ and $(Z^b, L^b)$. The attention over all the keys
# follows from these alone. Derive it: the denominator of the union is the sum of the two
# denominators, so $L = \log(e^{L^a} + e^{L^b})$, and $Z$ is a mix of $Z^a$ and $Z^b$ whose
# weights you find from the same fact. Compute it stably ($L$ may be in the thousands, or
# $-\infty$ when a piece holds no allowed key for that row).
#
# Implement
#
# * `local_mask(lengths, m, radius)`: for a batch of sequences padded to $m$ tokens, with
#   `lengths[b]` real tokens in sequence $b$ (0 to $m$), the (B, m, m) mask that allows key $j$
#   to query $i$ of sequence $b$ when $|i - j| \le$ `radius` and $j <$ `lengths[b]`;
# * `attention(Q, K, V, mask=None)`: `Q` (…, n, d_k), `K` (…, m, d_k), `V` (…, m, d_v), and
#   `mask` `None` (every key allowed) or booleans whose shape broadcasts to (…, n, m). Return
#   the tuple `(Z, A, L)` of shapes (…, n, d_v), (…, n, m) and (…, n), the leading
#   dimensions being those of the scores and the mask broadcast together;
# * `merge_attention(Z_a, L_a, Z_b, L_b)`: the results of one set of queries attending to two
#   disjoint sets of keys, `Z_a`, `Z_b` of shape (…, n, d_v) and `L_a`, `L_b` of shape (…, n);
#   return `(Z, L)`, the attention over the union.
#
# **Bad input** raises `ValueError` with a clear message: for `attention`, arrays with fewer
# than 2 dimensions, `Q` and `K` with different $d_k$, `K` and `V` with different $m$, a mask
# that is not boolean or does not broadcast to (…, n, m); for `local_mask`, $m < 1$, a negative
# radius, a length outside $0, \dots, m$, and lengths that are not integers in a 1-D array; for
# `merge_attention`, `Z_a` and `Z_b` of different shapes, an `L` whose shape is not `Z`'s without
# its last axis, and an `L` that holds `nan` or $+\infty$.


# %% nbgrader={"grade": false, "grade_id": "attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
def local_mask(lengths: np.ndarray | list[int], m: int, radius: int) -> np.ndarray:
    """The (B, m, m) mask: query i of sequence b may see key j when |i - j| <= radius and
    j < lengths[b]."""
    ### BEGIN SOLUTION
    for label, value, least in (("m", m, 1), ("radius", radius, 0)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{label} must be an integer, got {value!r}")
        if value < least:
            raise ValueError(f"{label} must be at least {least}, got {value}")
    sizes = np.asarray(lengths)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        given = f"shape {sizes.shape} and dtype {sizes.dtype}"
        raise ValueError(f"lengths must be a non-empty 1-D array of integers, got {given}")
    if sizes.min() < 0 or sizes.max() > m:
        raise ValueError(f"every length must lie in 0..m = {m}, got {sizes.tolist()}")
    steps = np.arange(m)
    band = np.abs(steps[:, None] - steps[None, :]) <= radius  # (m, m): |i - j| <= radius
    real = steps[None, None, :] < sizes[:, None, None]  # (B, 1, m): key j is a real token
    return band[None] & real  # (B, m, m)
    ### END SOLUTION


def attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scaled dot-product attention that gives a row with no allowed key zeros, not nan.

    Args:
        Q: queries, shape (..., n, d_k).
        K: keys, shape (..., m, d_k).
        V: values, shape (..., m, d_v).
        mask: None, or booleans broadcastable to (..., n, m); True where query i may attend
            to key j.

    Returns:
        (Z, A, L): the outputs (..., n, d_v), the weights (..., n, m) and the log-sum-exp of
        each row's allowed scores (..., n); Z and A are 0 and L is -inf on a row with no key.

    Raises:
        ValueError: for mismatched shapes or a mask that is not boolean or does not fit.
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
    scores = queries @ np.swapaxes(keys, -1, -2) / np.sqrt(queries.shape[-1])  # (..., n, m)
    allowed = np.ones((1, 1), dtype=bool) if mask is None else np.asarray(mask)
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
    allowed, scores = np.broadcast_to(allowed, grid), np.broadcast_to(scores, grid)
    seen = allowed.any(axis=-1, keepdims=True)  # (..., n, 1): rows with a key to see
    top = np.where(allowed, scores, -np.inf).max(axis=-1, keepdims=True, initial=-np.inf)
    top = np.where(seen, top, 0.0)  # the largest allowed score; 0 for an empty row
    lifted = np.where(allowed, np.exp(np.where(allowed, scores - top, 0.0)), 0.0)  # in [0, 1]
    total = lifted.sum(axis=-1, keepdims=True)  # (..., n, 1): >= 1 on a row with a key
    weights = lifted / np.where(seen, total, 1.0)  # (..., n, m): an empty row stays 0
    lse = np.where(seen, top + np.log(np.where(seen, total, 1.0)), -np.inf)[..., 0]  # (..., n)
    return weights @ values, weights, lse  # (..., n, d_v), (..., n, m), (..., n)
    ### END SOLUTION


def merge_attention(
    Z_a: np.ndarray, L_a: np.ndarray, Z_b: np.ndarray, L_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Join the attention of the same queries to two disjoint sets of keys.

    Args:
        Z_a, Z_b: the outputs over keys a and keys b, shape (..., n, d_v).
        L_a, L_b: their log-sum-exps, shape (..., n); -inf where a row has no key in the set.

    Returns:
        (Z, L): the attention over the union of the keys, shapes (..., n, d_v) and (..., n).
    """
    ### BEGIN SOLUTION
    out_a, out_b = (np.asarray(z, dtype=np.float64) for z in (Z_a, Z_b))
    lse_a, lse_b = (np.asarray(s, dtype=np.float64) for s in (L_a, L_b))
    if out_a.ndim < 2 or out_a.shape != out_b.shape:
        shapes = f"{out_a.shape} and {out_b.shape}"
        raise ValueError(f"Z_a and Z_b must share one shape (..., n, d_v), got {shapes}")
    if lse_a.shape != out_a.shape[:-1] or lse_b.shape != out_a.shape[:-1]:
        wanted = f"Z's shape without its last axis, {out_a.shape[:-1]}"
        raise ValueError(f"L_a and L_b must have {wanted}: got {lse_a.shape}, {lse_b.shape}")
    for label, lse in (("L_a", lse_a), ("L_b", lse_b)):
        if np.isnan(lse).any() or np.isposinf(lse).any():
            raise ValueError(f"{label} holds nan or +inf; a log-sum-exp is finite or -inf")
    top = np.maximum(lse_a, lse_b)  # (..., n)
    seen = top > -np.inf  # rows with a key in either set
    top = np.where(seen, top, 0.0)
    share_a, share_b = np.exp(lse_a - top), np.exp(lse_b - top)  # e^(L - top), in [0, 1]
    total = share_a + share_b  # the denominators' sum over e^top: >= 1 on a seen row
    lse = np.where(seen, top + np.log(np.where(seen, total, 1.0)), -np.inf)  # (..., n)
    mixed = share_a[..., None] * out_a + share_b[..., None] * out_b  # (..., n, d_v)
    return mixed / np.where(seen, total, 1.0)[..., None], lse
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Three queries and four keys with $d_k = 2$, values of size $d_v = 3$, then self-attention in a
# padded batch of two with a local mask of radius 1, then the queries times 1000; the expected
# numbers come from `torch.nn.functional.scaled_dot_product_attention` on the rows that have a
# key (its weights from the same function with $V = I$) and from `torch.logsumexp`. The merge
# is checked on numbers worked out by hand, and on your own attention split into two pieces.

# %% nbgrader={"grade": true, "grade_id": "test_attention_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(local_mask, attention, merge_attention)

# %% nbgrader={"grade": true, "grade_id": "test_attention_hidden", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
# Hidden test (3 points): attention against torch's scaled_dot_product_attention (rows with a
# key) and torch.logsumexp for batch dimensions, n != m, d_k = 1, a single key, scores in the
# thousands, local masks with padding that leave rows (or a whole sequence) with no key,
# masks that broadcast, non-contiguous arrays; local_mask for other radii and lengths (0 and
# m too); merge_attention on keys split at random (against attention over all of them),
# pieces with no key for some rows and log-sum-exps in the thousands; inputs must come back
# unmodified; ValueError for the bad inputs above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_attention

check_attention(local_mask, attention, merge_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): attention over keys that arrive in blocks
#
# Once Part A passes, this cell attends to 12 keys four at a time, joining each block into a
# running result with `merge_attention` (never holding a $5 \times 12$ weight matrix), and
# compares with one call over all the keys and with
# `torch.nn.functional.scaled_dot_product_attention`. Then the local mask's empty rows: yours
# against torch's (recent versions of `scaled_dot_product_attention` return zeros there too),
# and what a plain softmax makes of them.

# %%
import torch

rng = np.random.default_rng(0)
Q_x, K_x, V_x = rng.normal(size=(5, 8)), 30 * rng.normal(size=(12, 8)), rng.normal(size=(12, 3))
try:
    Z_run, L_run = np.zeros((5, 3)), np.full(5, -np.inf)  # no key yet
    for start_x in range(0, 12, 4):
        Z_blk, _, L_blk = attention(Q_x, K_x[start_x : start_x + 4], V_x[start_x : start_x + 4])
        Z_run, L_run = merge_attention(Z_run, L_run, Z_blk, L_blk)
    Z_all, _, L_all = attention(Q_x, K_x, V_x)
    Z_torch = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (Q_x, K_x, V_x))
    ).numpy()
    print(f"blocks of 4 against one call: {np.abs(Z_run - Z_all).max():.1e}")
    print(f"blocks of 4 against PyTorch: {np.abs(Z_run - Z_torch).max():.1e}")
    print(f"the log-sum-exps reach {L_all.max():.0f}")
    mask_x = local_mask([6, 2], 6, 1)  # sequence 1: 2 real tokens, radius 1
    X_x = rng.normal(size=(2, 6, 4))
    Z_loc, _, L_loc = attention(X_x, X_x, X_x, mask_x)
    Z_loc_torch = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(X_x),) * 3, attn_mask=torch.tensor(mask_x)
    ).numpy()
    print("sequence 1, which rows see a key:", mask_x[1].any(-1))
    print("  your L:", L_loc[1].round(2))
    print(f"  your Z against PyTorch's: {np.abs(Z_loc - Z_loc_torch).max():.1e}")
    blocked_x = torch.tensor(X_x[1] @ X_x[1].T / 2).masked_fill(~torch.tensor(mask_x[1]), -np.inf)
    print(
        "  a plain softmax's rows with nan:", torch.softmax(blocked_x, -1).isnan().any(-1).numpy()
    )
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
# applies to every head. Use your `attention` (its Z and A); the heads need no loop (move the
# head axis in front of the positions).
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
    mixed, weights, _ = attention(q, k, v, head_mask)  # (..., h, n, d_k), (..., h, n, n)
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
# ## Part C: reading a position back from its sinusoidal encoding (3 points)
#
# Attention by itself ignores order: permuting the tokens permutes the outputs the same way.
# Vaswani et al. (2017) add to the token at position $t$ the vector $p_t$ with, for
# $r = 0, \dots, d/2 - 1$,
#
# $$p_{t, 2r} = \sin(t\,\omega_r), \qquad p_{t, 2r+1} = \cos(t\,\omega_r), \qquad
# \omega_r = \text{base}^{-2r/d}, \quad \text{base} = 10000$$
#
# (sine and cosine **interleaved**). Lecture 5 builds these vectors and shows that $p_t \cdot
# p_u$ depends on $t - u$ only; the encoding is given below. Here you show that the vector
# holds the position itself, and how to move it.
#
# **Moving.** Moving $k$ positions is a linear map, the same at every position: $p_{t+k} = M_k
# p_t$ (as column vectors; with rows, $p_{t+k} = p_t M_k^\top$). Work out $M_k$ from the
# formulas for $\sin(a + b)$ and $\cos(a + b)$: it is block-diagonal, one $2 \times 2$ block per
# frequency, built from $k$ alone.
#
# **Reading.** Each pair gives an angle: $\varphi_r = \operatorname{atan2}(p_{t,2r},
# p_{t,2r+1})$ equals $t\,\omega_r$ up to a multiple of $2\pi$. The slowest pair
# ($r = d/2 - 1$) turns less than once over $|t| < P/2$, $P = 2\pi / \omega_{d/2-1}$, so it
# gives $t$ without ambiguity, but coarsely: an error $\varepsilon$ in its angle is an error
# $\varepsilon / \omega_{d/2-1}$ in $t$, a factor $\text{base}^{(d-2)/d}$ larger than the same
# error in the fastest pair (about 7,500 for $d = 64$). The fastest pair is precise but
# wrapped. Combine them: from the slowest pair to the fastest, use the current estimate of
# $t$ to choose the multiple of $2\pi$ to add to the next pair's angle, and take the
# estimate that pair gives. Encodings stored in `float32` (as models keep them) carry errors of
# about $10^{-7}$: the slowest pair alone then misses $t$ by about $10^{-4}$, the chain by far
# less.
#
# Implement
#
# * `shift_matrix(k, d, base=10000.0)`: the (d, d) matrix $M_k$, for any integer $k$ (negative
#   too);
# * `decode_position(p, base=10000.0)`: `p` of shape (…, d), one encoding per row (possibly in
#   `float32`, possibly slightly off); return the positions, shape (…), as `float64`: the $t$ in
#   $(-P/2, P/2]$ (fractional positions too) whose encoding `p` is.
#
# Raise `ValueError` for $d$ that is odd or below 2 (the given `frequencies` does it) and for a
# `p` that is a single number.


# %% [markdown]
# The frequencies and the encoding are given (with the check of $d$); use them in Parts C
# and D. `sinusoidal_encoding` takes any array of positions, fractional or negative too.


# %% nbgrader={"grade": false, "grade_id": "given_frequencies", "locked": true, "schema_version": 3, "solution": false, "task": false}
def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """omega_r = base ** (-2r / d) for r = 0 .. d/2 - 1, after checking d."""
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise ValueError(f"d must be an integer, got {d!r}")
    if d < 2 or d % 2:
        raise ValueError(f"d must be even and at least 2 (one sine and one cosine), got {d}")
    return float(base) ** (-np.arange(0, d, 2) / d)  # (d/2,)


def sinusoidal_encoding(positions: np.ndarray | list, d: int, base: float = 10000.0) -> np.ndarray:
    """p_t for each t in positions (any shape S), interleaved sin/cos. Returns S + (d,)."""
    where = np.asarray(positions, dtype=np.float64)
    phase = where[..., None] * frequencies(d, base)  # S + (d/2,): t * omega_r
    table = np.empty((*where.shape, d))
    table[..., 0::2], table[..., 1::2] = np.sin(phase), np.cos(phase)
    return table


# %% nbgrader={"grade": false, "grade_id": "sinusoidal", "locked": false, "schema_version": 3, "solution": true, "task": false}
def shift_matrix(k: int, d: int, base: float = 10000.0) -> np.ndarray:
    """M_k with p_{t+k} = M_k p_t for every t. Returns (d, d)."""
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


def decode_position(p: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """The positions t in (-P/2, P/2] whose encodings are the rows of p (..., d). Returns (...)."""
    ### BEGIN SOLUTION
    rows = np.asarray(p, dtype=np.float64)
    if rows.ndim < 1:
        raise ValueError("p must hold encodings of shape (..., d), not a single number")
    omega = frequencies(rows.shape[-1], base)  # (d/2,), slowest last
    phase = np.arctan2(rows[..., 0::2], rows[..., 1::2])  # (..., d/2): t omega_r mod 2 pi
    estimate = phase[..., -1] / omega[-1]  # the slowest pair: coarse, never wrapped
    for r in range(len(omega) - 2, -1, -1):  # each faster pair: finer, once unwrapped
        turns = np.round((estimate * omega[r] - phase[..., r]) / (2 * np.pi))
        estimate = (phase[..., r] + 2 * np.pi * turns) / omega[r]
    return estimate
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C

# %% nbgrader={"grade": true, "grade_id": "test_sinusoidal_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(shift_matrix, decode_position)

# %% nbgrader={"grade": true, "grade_id": "test_sinusoidal_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): shift_matrix against the rotation blocks and against the encoding
# (p_(t+k) from p_t) for negative, zero and large shifts and other bases; decode_position for
# d = 2 to 64, other bases, batches of positions near both ends of (-P/2, P/2], fractional
# positions, float32 encodings and encodings with noise, non-contiguous input; inputs must
# come back unmodified; ValueError for an odd d and a single number.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_sinusoidal

check_sinusoidal(shift_matrix, decode_position)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): how precise is each pair?
#
# 200 random positions in $d = 64$, stored in `float32`: the error of the position read from
# the slowest pair alone, from the fastest pair alone (wrapped), and from your chain.

# %%
rng = np.random.default_rng(3)
spots_x = rng.uniform(-20000, 20000, size=200)
stored_x = sinusoidal_encoding(spots_x, 64).astype(np.float32).astype(np.float64)
omega_x = frequencies(64)
slow_x = np.arctan2(stored_x[:, -2], stored_x[:, -1]) / omega_x[-1]
fast_x = np.arctan2(stored_x[:, 0], stored_x[:, 1]) / omega_x[0]
print(f"slowest pair alone: largest error {np.abs(slow_x - spots_x).max():.1e}")
print(f"fastest pair alone: largest error {np.abs(fast_x - spots_x).max():.1e} (wrapped)")
try:
    chain_x = decode_position(stored_x)
    print(f"your decode_position: largest error {np.abs(chain_x - spots_x).max():.1e}")
except NotImplementedError:
    print("Implement Part C first, then run this cell again.")

# %% [markdown]
# ## Part D: partial RoPE at an offset, as GPT-NeoX applies it (3 points)
#
# RoPE (Su et al., 2021) rotates the query and the key of position $t$ by angles proportional
# to $t$ just before their dot product, so that their score depends on the offset only.
# Lecture 5 rotates the **interleaved** pairs $(x_{2r}, x_{2r+1})$ of all $d$ features, at
# positions given one by one. GPT-NeoX, Pythia and Phi rotate differently, and that is what you
# write:
#
# * **partial**: only the first `rotary_dim` features of each head turn; features
#   `rotary_dim`, …, $d - 1$ pass unchanged (GPT-NeoX rotates a quarter of each head);
# * **halves**: with $h$ = `rotary_dim` / 2, feature $r < h$ is paired with feature $r + h$,
#   not with $r + 1$, and the pair turns by $t\,\theta_r$ with $\theta_r = \text{base}^{-2r /
#   \text{rotary\_dim}}$ (the frequencies of `rotary_dim` features, not of $d$):
#
# $$x'_r = x_r \cos t\theta_r - x_{r+h} \sin t\theta_r, \qquad
# x'_{r+h} = x_{r+h} \cos t\theta_r + x_r \sin t\theta_r \qquad (r < h);$$
#
# * **at an offset**: row $i$ of `x` stands at position $t = \text{offset} + i$. A decoder with a
#   KV cache rotates its new rows at the positions after the cached ones, so rotating a
#   sequence in one go or in two chunks (the second at the offset of the first one's length)
#   must give the same rows. In a batch, each sequence may have its own offset.
#
# Implement `partial_rope(x, offset, rotary_dim, base=10000.0)`: `x` of shape (…, n, d); `offset`
# a number, or an array whose shape broadcasts to `x.shape[:-2]` (one offset per sequence, e.g.
# (B, 1) for `x` of shape (B, heads, n, d)); offsets may be fractional (position
# interpolation divides positions to squeeze a long input into a trained range). Return the
# rotated array, same shape as `x`, as `float64`.
#
# Raise `ValueError` for `x` with fewer than 2 dimensions, a `rotary_dim` that is not an even
# integer in $2, \dots, d$, and an `offset` whose shape does not broadcast to `x.shape[:-2]`.


# %% nbgrader={"grade": false, "grade_id": "rope", "locked": false, "schema_version": 3, "solution": true, "task": false}
def partial_rope(
    x: np.ndarray, offset: float | np.ndarray, rotary_dim: int, base: float = 10000.0
) -> np.ndarray:
    """Rotate (x_r, x_{r+h}), r < h = rotary_dim / 2, of row i by (offset + i) * theta_r.

    Args:
        x: queries or keys, shape (..., n, d).
        offset: the position of row 0; a number, or one per sequence (broadcasts to
            x.shape[:-2]).
        rotary_dim: how many leading features turn (even, 2..d); the others pass unchanged.
        base: theta_r = base ** (-2r / rotary_dim).

    Returns:
        The rotated x, shape (..., n, d).
    """
    ### BEGIN SOLUTION
    rows = np.asarray(x, dtype=np.float64)
    if rows.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d), got shape {rows.shape}")
    d = rows.shape[-1]
    if isinstance(rotary_dim, (bool, np.bool_)) or not isinstance(rotary_dim, (int, np.integer)):
        raise ValueError(f"rotary_dim must be an integer, got {rotary_dim!r}")
    if rotary_dim < 2 or rotary_dim % 2 or rotary_dim > d:
        raise ValueError(f"rotary_dim must be even and in 2..d = {d}, got {rotary_dim}")
    start = np.asarray(offset, dtype=np.float64)
    lead = rows.shape[:-2]
    fits = zip(lead[::-1], start.shape[::-1], strict=False)  # aligned from the last axis
    if start.ndim > len(lead) or not all(b in (1, a) for a, b in fits):
        wanted = f"x.shape[:-2] = {lead}"
        raise ValueError(f"offset of shape {start.shape} does not broadcast to {wanted}")
    where = start[..., None] + np.arange(rows.shape[-2])  # (..., n): offset + i
    half = rotary_dim // 2
    angle = where[..., None] * frequencies(rotary_dim, base)  # (..., n, half)
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = rows[..., :half], rows[..., half:rotary_dim]  # (..., n, half) each
    turned = rows.copy()  # the pass-through features stay as they are
    turned[..., :half] = first * cos - second * sin
    turned[..., half:rotary_dim] = second * cos + first * sin
    return turned
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# The expected rows come from `transformers`' GPT-NeoX `apply_rotary_pos_emb` (in `float64`).

# %% nbgrader={"grade": true, "grade_id": "test_rope_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(partial_rope)

# %% nbgrader={"grade": true, "grade_id": "test_rope_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): partial_rope against transformers' GPT-NeoX apply_rotary_pos_emb
# (float64) for heads and batches, rotary_dim = 2 and = d, one offset per sequence, large,
# negative and fractional offsets, other bases, non-contiguous arrays; a sequence rotated in
# chunks against in one go; scores that depend on the offset only and lengths kept; inputs
# must come back unmodified; ValueError for an odd or too large rotary_dim, a 1-D x, and
# offsets that do not fit the batch.
### BEGIN HIDDEN TESTS
from autograder.hidden.a5_self_attention import check_rope

check_rope(partial_rope)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): what the pass-through features do to the scores
#
# One query and one key with $d = 16$, a quarter of it rotated: their score at the same offset 3
# but different places is the same, and the pass-through features contribute the same
# $q_{4:} \cdot k_{4:}$ at every offset.

# %%
rng = np.random.default_rng(5)
q_x, k_x = rng.normal(size=(2, 1, 16))
try:
    for at_x in (0, 10, 500):
        score_x = partial_rope(q_x, at_x + 3, 4) @ partial_rope(k_x, at_x, 4).T
        print(f"q at {at_x + 3:>3}, k at {at_x:>3}: score {score_x.item():.6f}")
    print(f"the pass-through part, q[4:] . k[4:] = {(q_x[0, 4:] @ k_x[0, 4:]):.6f}")
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
