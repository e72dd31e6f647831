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
# # Assignment 8: decoding a language model, and a KV cache
#
# Lecture 8 generated text from a GPT with the helpers of `course.decoding` (temperature,
# top-k and nucleus filters on torch logits) and with the KV cache of `course.models.gpt`.
# Here you write such steps yourself, in NumPy, in forms the lecture does not use: two
# filters the lecture does not show, min-p and typical sampling, that return
# **probabilities** rather than filtered logits; a sampler that turns given uniform numbers
# into tokens (so that it can be checked without a random generator); and one step of
# cached attention for a single head, with a sliding window that the lecture's cache does
# not have.
#
# **Goals.** After this assignment you can
#
# 1. turn logits into next-token probabilities at any temperature without overflow (Part A);
# 2. draw tokens from those probabilities by the inverse of their cumulative distribution
#    (Part B);
# 3. keep only the tokens at least a fraction $p_{\text{base}}$ as likely as the most likely
#    one, ties included (min-p, Part C);
# 4. keep the smallest set of the most typical tokens (surprisal closest to the entropy)
#    whose probability reaches p (typical sampling, Part D);
# 5. compute a new position's attention over a sliding window of cached keys and values,
#    and roll the cache (Part E);
# 6. say where min-p and typical sampling agree and where they part, on peaked, flat and
#    long-tailed distributions, with numbers from your own functions (Part F, written).
#
# ## How you are graded
#
# * Parts A to E are autograded. Each has a **visible test** that you can run now (fixed
#   inputs; it names the quantity that is off, where and by how much), and a **hidden test**
#   that runs at grading time on other inputs (random logits of other shapes, ties, huge and
#   tiny temperatures, $p_{\text{base}} = 0$ and $1$, tiny $p$ and $p = 1$, exact
#   boundaries of the cumulative distribution, longer sequences of cached steps, windows of
#   1 position and longer than the sequence, $t = 0$...) and checks that bad input raises
#   `ValueError`. Hard-coding the visible answers keeps the visible points only.
# * Part F is a short written answer, graded by hand.
# * Write code only where it says `YOUR CODE HERE`; keep function names and signatures; do not
#   delete or copy cells. Your functions must not modify their inputs, and return new arrays.
# * Use NumPy. You may call your own functions from each other (`min_p_probs` may use
#   `temperature_probs`, for instance). During the hidden tests the helpers of the `course` package
#   (among them `course.decoding` and `course.models.gpt`), `transformers`' logits warpers
#   (`TemperatureLogitsWarper`, `MinPLogitsWarper`, `TypicalLogitsWarper`...), torch's `softmax`,
#   `log_softmax`, `topk`, `sort`, `multinomial` and attention routines, and `scipy.special`'s
#   `softmax`, `log_softmax` and `logsumexp` are replaced by traps: calling them from your functions
#   fails the test. (`course.checks` is allowed.) The visible tests run your functions under the
#   same rule and say so when one of them calls a forbidden routine; their data and expected values
#   are in `course/checks/a8_gpt_decoding.py`.
#
# Notation: $|\mathcal{V}|$ is the vocabulary size, $z \in \mathbb{R}^{|\mathcal{V}|}$ a row of
# logits (scores), $\tau$ the temperature, $\pi = \mathrm{softmax}(z)$; in Part E, $t$ is the
# number of cached positions, $w$ the window and $d_k$, $d_v$ the sizes of a key and a value.
#
# Autograded: 14 points. Written: 2 points.
#
# **Handing in.** Run `python -m course handin a8 --student YOUR_ID` from the course
# folder: it checks this notebook, runs it in a fresh kernel and writes
# `handin/a8_gpt_decoding/YOUR_ID.ipynb`, the one file to hand in (the bundle's README says more).

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
import numpy as np

from course.checks.a8_gpt_decoding import (
    check_part_a,
    check_part_b,
    check_part_c,
    check_part_d,
    check_part_e,
)

np.set_printoptions(precision=4, suppress=True)


# %% [markdown]
# ## Part A: next-token probabilities at a temperature (3 points)
#
# A language model gives a row of logits $z$ for the next token. Sampling at temperature
# $\tau > 0$ draws from
#
# $$\pi^{(\tau)}_i = \frac{\exp(z_i / \tau)}{\sum_{j} \exp(z_j / \tau)}.$$
#
# $\tau < 1$ sharpens the distribution (towards greedy decoding as $\tau \to 0$), $\tau > 1$
# flattens it (towards the uniform distribution as $\tau \to \infty$).
#
# Implement `temperature_probs(logits, temperature)`:
#
# * `logits`: an array (or nested list) of shape (…, $|\mathcal{V}|$): one row (|𝒱|,), a
#   batch of rows (B, |𝒱|), or more axes; everything happens along the **last** axis. A logit
#   may be $-\infty$ (a token that was removed): its probability is 0.
# * Return a new `float64` array of the same shape whose rows are $\pi^{(\tau)}$.
# * It must work for **large logits**: $\exp(1000)$ overflows, but the probabilities of
#   $z = (1000, 1001, 999)$ are those of $(0, 1, -1)$. It must also work for a tiny $\tau$
#   (such as $10^{-3}$), where $z / \tau$ is huge.
#
# **Bad input** raises `ValueError`: a temperature that is not a number (booleans included),
# is $\le 0$, infinite or NaN; logits that contain NaN or $+\infty$; a row whose logits are
# all $-\infty$; logits with no axis (a single number) or an empty last axis.


# %% nbgrader={"grade": false, "grade_id": "temperature_probs", "locked": false, "schema_version": 3, "solution": true, "task": false}
def temperature_probs(logits: np.ndarray | list, temperature: float) -> np.ndarray:
    """softmax(logits / temperature) along the last axis, without overflow.

    Args:
        logits: (..., |V|) scores; -inf allowed (probability 0), NaN and +inf not.
        temperature: tau, a finite number > 0.

    Returns:
        A new float64 array (..., |V|) whose rows sum to 1.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    numeric = isinstance(temperature, (int, float, np.integer, np.floating))
    if isinstance(temperature, (bool, np.bool_)) or not numeric:
        raise ValueError(f"the temperature must be a number, got {temperature!r}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"the temperature must be finite and > 0, got {temperature!r}")
    z = np.array(logits, dtype=np.float64)  # (..., |V|), our own copy
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ValueError(f"logits need a last axis of at least one token, got shape {z.shape}")
    if np.isnan(z).any() or (z == np.inf).any():
        raise ValueError("logits must not contain NaN or +inf")
    peak = np.max(z, axis=-1, keepdims=True)  # (..., 1)
    if (peak == -np.inf).any():
        raise ValueError("a row of logits is -inf everywhere: no token is left to draw")
    # Shift each row so its largest logit is 0 before dividing: exp then lies in [0, 1].
    unnormalised = np.exp((z - peak) / float(temperature))  # (..., |V|)
    return unnormalised / unnormalised.sum(axis=-1, keepdims=True)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part A
#
# Three rows: $(2, 1, 0, -1)$, four equal logits, and $(1000, 1001, 999, -\infty)$; the
# expected probabilities were worked out by hand (to 12 digits).

# %% nbgrader={"grade": true, "grade_id": "temperature_probs_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_a(temperature_probs)

# %% nbgrader={"grade": true, "grade_id": "temperature_probs_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): temperature_probs against softmax(z / τ) worked out row by row
# with exactly rounded sums, on random logits of shapes (|V|,), (B, |V|) and (2, 3, |V|), |V| from 1 to 5,000,
# τ from 0.001 to 1,000, logits near ±10,000, rows with -inf, float32 and integer logits,
# lists; results new float64 arrays; inputs unchanged; ValueError for each bad input above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a8_gpt_decoding import check_temperature_probs

check_temperature_probs(temperature_probs)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): what the temperature does
#
# The entropy of the next-token distribution, $H = -\sum_i \pi_i \ln \pi_i$ in nats, of one
# row of logits at several temperatures: 0 for greedy decoding, $\ln |\mathcal{V}|$ for the
# uniform distribution.

# %%
try:
    row_x = np.array([4.0, 3.0, 2.5, 1.0, 0.0, -1.0, -2.0, -3.0])
    for tau_x in (0.1, 0.5, 1.0, 2.0, 10.0):
        probs_x = temperature_probs(row_x, tau_x)
        entropy_x = -np.sum(probs_x[probs_x > 0] * np.log(probs_x[probs_x > 0]))
        print(f"τ = {tau_x:5.1f}: probabilities {probs_x.round(3)}, entropy {entropy_x:.3f} "
              f"(uniform: {np.log(len(row_x)):.3f})")  # fmt: skip
except NotImplementedError:
    print("Implement Part A first, then run this cell again.")

# %% [markdown]
# ## Part B: drawing tokens by the inverse cumulative distribution (2 points)
#
# To draw a token from $\pi$, take a uniform number $u \in [0, 1)$ and walk along the
# cumulative probabilities $c_i = \pi_0 + \dots + \pi_i$: the token is the first $i$ whose
# $c_i$ exceeds $u$. Token $i$ owns the interval $[c_{i-1}, c_i)$ (with $c_{-1} = 0$), of
# length $\pi_i$, so a uniform $u$ falls in it with probability $\pi_i$. A token of
# probability 0 owns an empty interval and is never drawn.
#
# Implement `sample_tokens(probs, u)`: `probs` of shape (B, $|\mathcal{V}|$), one distribution
# per row, and `u` of shape (B,), one number in $[0, 1)$ per row. Return an `int64` array of
# shape (B,): for row $b$, the smallest $i$ with $u_b \cdot s_b < c_{b,i}$, where
# $s_b = c_{b,|\mathcal{V}|-1}$ is the row's total (1 up to rounding; comparing with
# $u_b \cdot s_b$, or $u_b$ with $c_{b,i} / s_b$, makes sure that every $u < 1$ finds a
# token). In practice $u$ comes from a random generator, e.g. `np.random.default_rng(0).random(B)`;
# here it is an argument, so the function is deterministic.
#
# **Bad input** raises `ValueError`: `probs` that is not 2-D or has no column, `u` whose shape
# is not (B,), a $u$ outside $[0, 1)$, probabilities that are negative, NaN or infinite, and a
# row whose sum differs from 1 by more than $10^{-6}$.


# %% nbgrader={"grade": false, "grade_id": "sample_tokens", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sample_tokens(probs: np.ndarray | list, u: np.ndarray | list) -> np.ndarray:
    """Map uniform numbers to tokens through each row's cumulative distribution.

    Args:
        probs: (B, |V|) probabilities, each row summing to 1 (within 1e-6).
        u: (B,) numbers in [0, 1).

    Returns:
        (B,) int64 token ids: row b's token is the first i with u_b * s_b < c_{b,i}.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    table = np.array(probs, dtype=np.float64)  # (B, |V|)
    draws = np.array(u, dtype=np.float64)  # (B,)
    if table.ndim != 2 or table.shape[1] == 0:
        raise ValueError(f"probs must have shape (B, |V|) with |V| >= 1, got {table.shape}")
    if draws.shape != table.shape[:1]:
        raise ValueError(f"u must hold one number per row: ({len(table)},), not {draws.shape}")
    if not np.isfinite(table).all() or (table < 0).any():
        raise ValueError("probabilities must be finite and >= 0")
    off = np.abs(table.sum(axis=1) - 1.0)  # (B,)
    if off.size and off.max() > 1e-6:
        worst = int(off.argmax())
        raise ValueError(f"row {worst} of probs sums to {table[worst].sum()!r}, not 1 ± 1e-6")
    if not np.all((draws >= 0.0) & (draws < 1.0)):
        raise ValueError("every u must lie in [0, 1)")
    ladder = np.cumsum(table, axis=1)  # (B, |V|)
    ladder = ladder / ladder[:, -1:]  # divided by its own total, the last rung is exactly 1
    passed = ladder <= draws[:, None]  # (B, |V|): rungs at or below u
    return passed.sum(axis=1).astype(np.int64)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part B
#
# Probabilities that are sums of powers of 2, so that the cumulative sums are exact and $u$
# can sit right on a boundary; then 20,000 draws with $u$ from a random generator.

# %% nbgrader={"grade": true, "grade_id": "sample_tokens_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_b(sample_tokens)

# %% nbgrader={"grade": true, "grade_id": "sample_tokens_hidden", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
# Hidden test (1 point): sample_tokens against the inverse cumulative distribution on
# random distributions (|V| from 1 to 20,000), u on exact boundaries, u = 0 and the largest
# number below 1, zero probabilities at the start, the middle and the end of a row, rows
# that sum to 1 only within 5e-7, float32 probabilities, lists; inputs unchanged;
# ValueError for each bad input above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a8_gpt_decoding import check_sample_tokens

check_sample_tokens(sample_tokens)
### END HIDDEN TESTS

# %% [markdown]
# ## Part C: min-p filtering, as probabilities (3 points)
#
# Lecture 8 truncated the distribution by a **count** (top-k) and by a **mass** (top-p).
# Min-p sampling (Nguyen et al., "Turning Up the Heat: Min-p Sampling for Creative and
# Coherent LLM Outputs", 2024) truncates by a **threshold relative to the most likely token**:
# given $p_{\text{base}} \in [0, 1]$,
#
# $$\text{keep token } i \iff \pi_i \ge p_{\text{base}} \cdot \max_j \pi_j,$$
#
# and renormalise the kept probabilities. When the model is sure (one large $\pi_j$) the
# threshold is high and few tokens survive; when it hesitates (a flat $\pi$) the threshold
# is low and many do.
#
# * The rule depends on the values only: **tokens tied in probability are kept or removed
#   together**, and every token tied with the most likely one is always kept.
# * $p_{\text{base}} = 0$ keeps every token; $p_{\text{base}} = 1$ keeps the most likely
#   token(s) only (greedy decoding, ties included).
# * Compare probabilities, not logits: the threshold scales the **largest probability**, not
#   the largest logit. (Since $\pi_i / \max_j \pi_j = e^{z_i - \max_j z_j}$, the rule may also
#   be written on logit differences.)
# * This is the rule of `transformers`' `MinPLogitsWarper` (with its default
#   `min_tokens_to_keep=1`, which never matters here: the most likely token always passes).
#
# Implement `min_p_probs(logits, p_base)`: `logits` of shape (…, $|\mathcal{V}|$), as in
# Part A (filter each row along the last axis); return a new `float64` array of the same
# shape, $\tilde\pi_i = \pi_i / \sum_{j \text{ kept}} \pi_j$ for kept tokens and 0 for the
# others, with $\pi = \mathrm{softmax}(z)$.
#
# **Bad input** raises `ValueError`: a `p_base` that is not a number (booleans included) or
# lies outside the closed interval $[0, 1]$ (NaN included), and the bad logits of Part A.


# %% nbgrader={"grade": false, "grade_id": "min_p_probs", "locked": false, "schema_version": 3, "solution": true, "task": false}
def min_p_probs(logits: np.ndarray | list, p_base: float) -> np.ndarray:
    """softmax(logits) restricted to the tokens of probability >= p_base * (the row's largest),
    renormalised.

    Args:
        logits: (..., |V|) scores, as in temperature_probs.
        p_base: the relative threshold, 0 <= p_base <= 1; 0 keeps every token.

    Returns:
        A new float64 array (..., |V|): 0 for removed tokens, rows summing to 1.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    numeric = isinstance(p_base, (int, float, np.integer, np.floating))
    if isinstance(p_base, (bool, np.bool_)) or not numeric:
        raise ValueError(f"p_base must be a number, got {p_base!r}")
    if not 0.0 <= p_base <= 1.0:  # NaN fails both comparisons
        raise ValueError(f"p_base must lie in [0, 1], got {p_base!r}")
    probs = temperature_probs(logits, 1.0)  # (..., |V|); also checks the logits
    floor = p_base * np.max(probs, axis=-1, keepdims=True)  # (..., 1), one threshold per row
    survivors = np.where(probs >= floor, probs, 0.0)  # (..., |V|); the top always survives
    return survivors / np.sum(survivors, axis=-1, keepdims=True)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part C
#
# The logits are logarithms of probabilities plus 3 (softmax ignores the shift), so that
# $\pi$ is known: row 0 is $(0.5, 0.2, 0.2, 0.05, 0.05)$ (ties below the top), row 1 is
# $(0.1, 0.3, 0.3, 0.25, 0.05)$ (a tie at the top). No value of $p_{\text{base}}$ that the
# test uses lies on a ratio $\pi_i / \max_j \pi_j$ of a token below the top, where rounding
# would decide.

# %% nbgrader={"grade": true, "grade_id": "min_p_probs_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_c(min_p_probs)

# %% nbgrader={"grade": true, "grade_id": "min_p_probs_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): min_p_probs against the ratio e^(z_i - max z) of every token to the
# most likely one, token by token, on random logits of several shapes and seeds (|V| up to
# 5,000), p_base from 0 to 1, ties at the top and below it, peaked and flat rows, -inf
# logits, huge logits, float32 and integer logits, NumPy floats and integers as p_base;
# results new float64 arrays; inputs unchanged; ValueError for each bad input above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a8_gpt_decoding import check_min_p_probs

check_min_p_probs(min_p_probs)
### END HIDDEN TESTS

# %% [markdown]
# ## Part D: typical sampling, as probabilities (3 points)
#
# Lecture 8's nucleus keeps the **most likely** tokens until their mass reaches $p$. Locally
# typical sampling (Meister, Pimentel, Wiher and Cotterell, "Locally Typical Sampling", TACL
# 2023) keeps the most **typical** ones instead: those whose information content, the
# surprisal $-\ln \pi_i$, is closest to the information content the model expects, the
# entropy
#
# $$H(\pi) = -\sum_j \pi_j \ln \pi_j \quad \text{(in nats; a token of probability 0 adds 0)}.$$
#
# With $\varepsilon_i = \left|-\ln \pi_i - H(\pi)\right|$ (and $\varepsilon_i = \infty$ where
# $\pi_i = 0$), it keeps the smallest set of the most typical tokens whose total probability
# reaches $p$, the token that crosses $p$ included. As a rule on values:
#
# $$\text{keep token } i \iff \sum_{j \,:\, \varepsilon_j < \varepsilon_i} \pi_j < p,$$
#
# the probability of the tokens *strictly more typical* than $i$ is still below $p$.
#
# * The most typical token is always kept, but **the most likely one need not be**: its
#   surprisal $-\ln \max_j \pi_j$ is the smallest of all, and it may lie further below $H$
#   than the surprisal of tokens of middling probability lies from $H$ (row 0 of the visible
#   test below, and the flat row of the exploration cell after it).
# * **Ties**: tokens of equal probability have equal $\varepsilon$ and are kept or removed
#   together (more generally, so are tokens of equal $\varepsilon$). `transformers`'
#   `TypicalLogitsWarper` sorts $\varepsilon$ and keeps every token whose $\varepsilon$ is at
#   most that of the token that crosses $p$: the same rule, the ties included.
# * $p = 1$ keeps every token.
#
# Implement `typical_probs(logits, p)`: `logits` as in Parts A and C; return a new `float64`
# array of the same shape with the kept tokens' probabilities renormalised and 0 elsewhere.
#
# **Bad input** raises `ValueError`: a `p` that is not a number (booleans included) or lies
# outside $(0, 1]$ (NaN included), and the bad logits of Part A.


# %% nbgrader={"grade": false, "grade_id": "typical_probs", "locked": false, "schema_version": 3, "solution": true, "task": false}
def typical_probs(logits: np.ndarray | list, p: float) -> np.ndarray:
    """softmax(logits) restricted to each row's most typical tokens of mass p, renormalised.

    Args:
        logits: (..., |V|) scores, as in temperature_probs.
        p: the mass of the typical set, 0 < p <= 1.

    Returns:
        A new float64 array (..., |V|): 0 for removed tokens, rows summing to 1.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    numeric = isinstance(p, (int, float, np.integer, np.floating))
    if isinstance(p, (bool, np.bool_)) or not numeric:
        raise ValueError(f"p must be a number, got {p!r}")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must lie in (0, 1], got {p!r}")
    probs = temperature_probs(logits, 1.0)  # (..., |V|); also checks the logits
    if p == 1:
        return probs
    possible = probs > 0
    surprisal = -np.log(np.where(possible, probs, 1.0))  # (..., |V|); 0 where pi = 0, unused
    entropy = np.sum(probs * surprisal, axis=-1, keepdims=True)  # (..., 1), nats
    distance = np.where(possible, np.abs(surprisal - entropy), np.inf)  # epsilon_i
    order = np.argsort(distance, axis=-1)  # (..., |V|), most typical first
    gaps = np.take_along_axis(distance, order, axis=-1)
    masses = np.take_along_axis(probs, order, axis=-1)
    before = np.cumsum(masses, axis=-1) - masses  # the mass ahead of each sorted position
    before[..., 0] = 0.0  # exactly nothing ahead of the most typical
    crossing = np.count_nonzero(before < p, axis=-1)[..., None] - 1  # (..., 1)
    widest = np.take_along_axis(gaps, crossing, axis=-1)  # the crossing token's distance
    typical = np.where(distance <= widest, probs, 0.0)  # ties with the crossing token stay
    return typical / np.sum(typical, axis=-1, keepdims=True)
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part D
#
# The logits are logarithms of probabilities, so that $\pi$ is known. Row 0 is
# $(0.4, 0.12, 0.12, 0.12, 0.12, 0.12)$: its entropy lies closer to the surprisal of the
# five tokens of 0.12 than to that of the most likely token, so for $p \le 0.6$ the most
# likely token is removed. Row 1 is $(0.5, 0.25, 0.125, 0.0625, 0.0625)$, with
# $H = 1.875 \ln 2$: the token of 0.25 is the most typical, then 0.5, then 0.125, then the two
# tied tokens of 0.0625. No value of $p$ that the test uses lies on a partial sum, where
# rounding would decide.

# %% nbgrader={"grade": true, "grade_id": "typical_probs_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_d(typical_probs)

# %% nbgrader={"grade": true, "grade_id": "typical_probs_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): typical_probs against the mass of the strictly more typical
# tokens, summed over distinct distances from the entropy, on random logits of several
# shapes and seeds (|V| up to 5,000), p from 1e-12 to 1, rows whose most likely token is
# removed, ties at the crossing, peaked and flat rows, -inf logits, float32 and integer
# logits, NumPy floats as p; results new float64 arrays; inputs unchanged; ValueError for
# each bad input above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a8_gpt_decoding import check_typical_probs

check_typical_probs(typical_probs)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): the numbers for Part F
#
# Three next-token distributions: a **peaked** one over 50 tokens (the model is sure), a
# **flat** one over 50 tokens (many continuations are plausible), and one with a **long tail**:
# three strong tokens, then 2,000 tokens that are each unlikely but hold much probability
# together (a large vocabulary). For each: the entropy $H$ and the surprisal of the most
# likely token; then, for min-p with $p_{\text{base}} = 0.1$ and typical sampling with
# $p = 0.9$, how many tokens are kept, how much of the model's probability they hold, whether
# the most likely token is among them, and how likely the least likely kept token is. Last,
# min-p on the peaked row at three temperatures (the logits divided by $\tau$ before the
# filter).

# %%
try:
    rng_x = np.random.default_rng(80)
    peaked_x = np.concatenate([[8.0, 6.5, 5.0], rng_x.normal(0.0, 1.0, size=47)])
    flat_x = rng_x.normal(0.0, 0.3, size=50)
    tail_x = np.concatenate([[6.0, 5.5, 5.0], rng_x.normal(-1.5, 0.5, size=2000)])
    for name_x, row_x in (("peaked", peaked_x), ("flat", flat_x), ("long tail", tail_x)):
        pi_x = temperature_probs(row_x, 1.0)
        entropy_x = -np.sum(pi_x * np.log(pi_x))
        print(f"{name_x}: H = {entropy_x:.3f} nats; the most likely token has probability "
              f"{pi_x.max():.3f}, surprisal {-np.log(pi_x.max()):.3f}")  # fmt: skip
        for label_x, kept_x in (("min-p, p_base = 0.1", min_p_probs(row_x, 0.1)),
                                ("typical, p = 0.9   ", typical_probs(row_x, 0.9))):  # fmt: skip
            mask_x = kept_x > 0
            print(f"    {label_x}: keeps {mask_x.sum():4d} token(s) holding "
                  f"{pi_x[mask_x].sum():.3f} of the probability; the most likely "
                  f"{'kept' if mask_x[pi_x.argmax()] else 'REMOVED'}; the least likely kept has "
                  f"{pi_x[mask_x].min():.1e}")  # fmt: skip
    for tau_x in (0.5, 1.0, 2.0):
        kept_x = np.count_nonzero(min_p_probs(peaked_x / tau_x, 0.1))
        print(f"peaked row at τ = {tau_x}: min-p with p_base = 0.1 keeps {kept_x} token(s)")
except NotImplementedError:
    print("Implement Parts A, C and D first, then run this cell again.")

# %% [markdown]
# ## Part E: one step of attention with a sliding-window KV cache (3 points)
#
# A GPT generates one token at a time. At step $t + 1$ the new position's query $q$ attends to
# the keys and values of the positions so far, the new one included, and the keys and values
# of the earlier positions do not change from step to step: they are kept in a **cache**, and
# only $q, k, v$ of the new position are computed. Lecture 8's cache grows by one row per
# token, up to the model's `max_len` positions. Models such as Mistral (after Longformer's
# local attention) bound it with a **sliding window** of $w$ positions: each position
# attends only to itself and the $w - 1$ positions before it, so the cache never needs more
# than $w$ rows (a "rolling buffer"), whatever the length of the text.
#
# For one head, with a cache $K_{\text{cache}}$ of shape $(t, d_k)$ and $V_{\text{cache}}$ of
# shape $(t, d_v)$ that holds at most $w$ positions ($t \le w$), the oldest first:
#
# $$K' = \text{the last } \min(t + 1, w) \text{ rows of }
#   \begin{bmatrix} K_{\text{cache}} \\ k^\top \end{bmatrix},\quad
#   V' = \text{the same rows of }
#   \begin{bmatrix} V_{\text{cache}} \\ v^\top \end{bmatrix},$$
#
# $$a = \mathrm{softmax}\!\left(\frac{K' q}{\sqrt{d_k}}\right),\quad
#   z = V'^\top a = \sum_{j} a_j\, v_j.$$
#
# When the cache is full ($t = w$), the oldest row is dropped before attending: the new
# position attends to exactly $w$ positions, itself included. This $z$ is row $n$ of causal
# attention with a **band mask** over the whole prefix of $n$ positions,
# $\mathrm{softmax}(QK^\top/\sqrt{d_k} + M)V$ with $M_{ij} = 0$ for $i - w < j \le i$ and
# $-\infty$ elsewhere (the band of `transformers`' sliding-window masks), at the cost of at
# most $w$ scores instead of a whole matrix. With $w \ge n$ the band is the whole causal
# triangle (Lecture 5's mask), and the step is the lecture's.
#
# Implement `kv_attention_step(keys, values, q, k, v, window)`: `keys` $(t, d_k)$, `values`
# $(t, d_v)$, `q` and `k` $(d_k,)$, `v` $(d_v,)$, `window` $= w$, with $0 \le t \le w$ (at the
# first step the caches have shapes $(0, d_k)$ and $(0, d_v)$). Return the tuple
# `(z, new_keys, new_values)`: $z$ of shape $(d_v,)$ and the trimmed caches $K'$ and $V'$ of
# $\min(t + 1, w)$ rows each, oldest first, new `float64` arrays (the inputs stay as they
# were). It must not overflow for large scores.
#
# **Bad input** raises `ValueError`: a `window` that is not an integer (booleans and `2.0`
# included) or is $< 1$; caches that are not 2-D, hold different numbers of positions, or hold
# more than `window` positions; $d_k < 1$ or $d_v < 1$; and `q`, `k` or `v` whose shape is not
# $(d_k,)$, $(d_k,)$, $(d_v,)$.


# %% nbgrader={"grade": false, "grade_id": "kv_attention_step", "locked": false, "schema_version": 3, "solution": true, "task": false}
def kv_attention_step(
    keys: np.ndarray,
    values: np.ndarray,
    q: np.ndarray | list,
    k: np.ndarray | list,
    v: np.ndarray | list,
    window: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Attention output of a new position over the last `window` positions; the caches rolled.

    Args:
        keys: (t, d_k) cached keys; values: (t, d_v) cached values; 0 <= t <= window.
        q, k: (d_k,) the new position's query and key; v: (d_v,) its value.
        window: w >= 1, the number of positions a position attends to, itself included.

    Returns:
        (z, new_keys, new_values): (d_v,), (min(t + 1, w), d_k), (min(t + 1, w), d_v), new
        float64 arrays; the caches hold the last positions, oldest first.

    Raises:
        ValueError: for the bad inputs listed above.
    """
    ### BEGIN SOLUTION
    if isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer)):
        raise ValueError(f"window must be an integer, got {window!r}")
    if not window >= 1:
        raise ValueError(f"window must be at least 1 position, got {window}")
    past_k = np.asarray(keys, dtype=np.float64)
    past_v = np.asarray(values, dtype=np.float64)
    if past_k.ndim != 2 or past_v.ndim != 2:
        raise ValueError(f"the caches must be 2-D, got shapes {past_k.shape} and {past_v.shape}")
    if past_k.shape[0] != past_v.shape[0]:
        raise ValueError(f"the caches hold {past_k.shape[0]} keys but {past_v.shape[0]} values")
    if past_k.shape[0] > window:
        raise ValueError(f"the caches hold {past_k.shape[0]} positions, more than window={window}")
    d_k, d_v = past_k.shape[1], past_v.shape[1]
    if min(d_k, d_v) < 1:
        raise ValueError(f"d_k and d_v must be at least 1, got {d_k} and {d_v}")
    query, key, value = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    for name, vector, size in (("q", query, d_k), ("k", key, d_k), ("v", value, d_v)):
        if vector.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {vector.shape}")
    # Append, then keep the last `window` rows: the oldest drops out once the cache is full.
    new_keys = np.concatenate([past_k, key[np.newaxis, :]])[-window:]  # (min(t+1, w), d_k)
    new_values = np.concatenate([past_v, value[np.newaxis, :]])[-window:]  # (min(t+1, w), d_v)
    logits = new_keys @ query * (1.0 / np.sqrt(d_k))  # one score per position in the window
    weights = np.exp(logits - logits.max())  # the largest is 1: no overflow
    z = weights @ new_values / weights.sum()  # (d_v,)
    return z, new_keys, new_values
    ### END SOLUTION


# %% [markdown]
# ### Visible test for Part E
#
# $d_k = 4$ ($\sqrt{d_k} = 2$), $d_v = 3$ and a window of $w = 2$, four steps from an empty
# cache. At the first step the only position attends to itself, so $z = v_1$. At the second,
# $q_2 \cdot k_1 = 0$ and $q_2 \cdot k_2 / 2 = \ln 3$, so the weights are $(1/4, 3/4)$. At the
# third, the cache is full: position 1 drops out, and $q_3 = 0$ gives equal weights to
# positions 2 and 3. At the fourth, position 2 drops out, $q_4 \cdot k_3 = 0$ and
# $q_4 \cdot k_4 / 2 = \ln 3$: weights $(1/4, 3/4)$ on positions 3 and 4 (position 2, whose key
# equals $k_4$, would have taken weight 3/7 had it stayed). Then $w = 1$, where a position
# attends to itself only, and a step with scores near 1000, where $e^{1000}$ would overflow.

# %% nbgrader={"grade": true, "grade_id": "kv_attention_step_visible", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
check_part_e(kv_attention_step)

# %% nbgrader={"grade": true, "grade_id": "kv_attention_step_hidden", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
# Hidden test (2 points): kv_attention_step, fed back its own caches step after step, against
# causal attention with a band mask recomputed over the whole prefix at every step, for
# windows of 1, 2, 3 and 5 positions and windows longer than the sequence, d_k = d_v and
# d_k ≠ d_v, d_k = 1, sequences of up to 12 positions, queries and keys from projections of
# random inputs, a prompt already in the cache, scores of several thousand, float32 and list
# inputs, a NumPy integer window, and t = 0 with a query that does not match the key; the
# returned caches hold the last positions in order; results new float64 arrays; inputs
# unchanged; ValueError for each bad input above.
### BEGIN HIDDEN TESTS
from autograder.hidden.a8_gpt_decoding import check_kv_attention_step

check_kv_attention_step(kv_attention_step)
### END HIDDEN TESTS

# %% [markdown]
# ## Explore (not graded): what the window saves
#
# Generating $n$ tokens by recomputing full attention over the prefix at every step costs
# about $\sum_{t=1}^{n} t^2 \approx n^3/3$ query–key products; a growing cache computes one
# row per step, $\sum_t t \approx n^2/2$; a sliding window of $w$ computes at most $w$ scores
# per step, about $n w$ in all, and its cache never holds more than $w$ positions. The time of
# 200 steps with your function and $w = 16$, against recomputing every row of the banded
# attention matrix at each step:

# %%
import time

try:
    rng_x = np.random.default_rng(81)
    n_x, d_x, w_x = 200, 16, 16
    q_x, k_x, v_x = (rng_x.normal(size=(n_x, d_x)) for _ in range(3))
    started_x = time.perf_counter()
    keys_x, values_x = np.zeros((0, d_x)), np.zeros((0, d_x))
    for i_x in range(n_x):
        z_x, keys_x, values_x = kv_attention_step(
            keys_x, values_x, q_x[i_x], k_x[i_x], v_x[i_x], w_x
        )
    cached_x = time.perf_counter() - started_x
    started_x = time.perf_counter()
    for i_x in range(1, n_x + 1):
        scores_x = q_x[:i_x] @ k_x[:i_x].T / np.sqrt(d_x)  # every row, again
        rows_x, cols_x = np.indices(scores_x.shape)
        scores_x[(cols_x > rows_x) | (cols_x <= rows_x - w_x)] = -np.inf  # the band mask
        full_x = np.exp(scores_x - scores_x.max(axis=1, keepdims=True))
        out_x = (full_x / full_x.sum(axis=1, keepdims=True)) @ v_x[:i_x]
    again_x = time.perf_counter() - started_x
    print(f"the cache holds {len(keys_x)} positions after {n_x} steps")
    print(
        f"last output, cached vs recomputed: largest difference {np.abs(z_x - out_x[-1]).max():.1e}"
    )
    print(
        f"{n_x} steps: with the cache {cached_x * 1e3:.1f} ms, recomputing {again_x * 1e3:.1f} ms"
    )
except NotImplementedError:
    print("Implement Part E first, then run this cell again.")

# %% [markdown]
# ## Part F: a threshold relative to the top, against a set around the entropy (2 points, graded by hand)
#
# In 4 to 8 sentences, with the numbers printed by the exploration cell after Part D. For each
# of the three rows, how many tokens do min-p ($p_{\text{base}} = 0.1$) and typical sampling
# ($p = 0.9$) keep, and how much of the model's probability do they hold? On which row do
# they agree? On the flat row, typical sampling removes the most likely token: why (compare
# its surprisal with $H$), and what kind of token is that rule designed to avoid? On which
# row does typical sampling keep tokens that the model itself finds very unlikely, and why
# must it (think of where $H$ lies when the tail holds much of the probability, and of what a
# set of mass $p$ must then take in)? Why does min-p not do that, and what does it give up in
# exchange? Finally: the temperature is applied **before** the filter (as `transformers`'
# `generate` does); what happens to the tokens min-p keeps when $\tau$ is lowered or raised,
# and why (write $\pi_i / \max_j \pi_j$ at temperature $\tau$)?

# %% [markdown] nbgrader={"grade": true, "grade_id": "min_p_vs_typical", "locked": false, "points": 2, "schema_version": 3, "solution": true, "task": false}
# **Model answer.** With the seeded rows of the exploration cell, both rules keep the same 2
# tokens of the peaked row, holding 0.941 of the probability. On the flat row min-p keeps all
# 50 tokens (1.000 of the probability; every token is at least a tenth as likely as the
# best), and typical sampling keeps 45 (0.908) but removes the most likely token, of
# probability 0.046: its surprisal, 3.070, lies further below $H = 3.862$ than the surprisal
# of tokens of middling probability lies from $H$. Typical sampling avoids tokens that carry
# much less information than the model expects, the choices that make generated text dull
# and repetitive, and so it may drop the most likely token; min-p never does. They differ
# most on the long-tail row: $H = 4.212$ is high because the tail holds much of the
# probability, so the most typical tokens are tail tokens, and a set of mass 0.9 must take
# in tail tokens one by one: typical sampling keeps 1,133 tokens (0.900), the least likely
# of them with a probability of 1.6e-04. Min-p judges each token against the most likely one,
# whatever the tail holds together: it keeps the 3 strong tokens only (0.609, the least
# likely kept at 1.1e-01). In exchange it gives up any guarantee on the mass kept (0.609
# here, 1.000 on the flat row) and any protection against overly predictable tokens. With
# the temperature, $\pi_i / \max_j \pi_j = e^{(z_i - \max_j z_j)/\tau}$: lowering $\tau$
# pushes every ratio below 1 towards 0, so fewer tokens pass (the peaked row keeps 1 token
# at $\tau = 0.5$, 2 at $\tau = 1.0$, 3 at $\tau = 2.0$), down to the most likely token
# alone, greedy decoding, as $\tau \to 0$; raising $\tau$ raises every ratio and more tokens
# pass.
#
# *Grading notes: 1 point for the numbers of both filters on the three rows, the most likely
# token removed by typical sampling on the flat row (its surprisal far below H: too
# predictable), and the long-tail row, where typical sampling must keep very unlikely tokens
# because H is high and its set has a fixed mass; 1 point for min-p's threshold relative to
# the most likely token (each token judged on its own, no guarantee on the mass kept) and for
# the kept set shrinking as τ is lowered, with the ratio e^((z_i − max z)/τ). Accept the
# student's own printed numbers. The numbers above are those the reference prints;
# `tests/grading/test_a8_hidden_checks.py` checks each against the cell's output.*
