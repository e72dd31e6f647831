# ---
# jupyter:
#   course:
#     budget_seconds: 60
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lecture 5: Self-attention, multi-head attention and positions
#
# In Lecture 4 the decoder attended to the encoder: queries from one sequence, keys and values
# from another. **Self-attention** {cite:p}`vaswani2017attention` lets every position of one
# sequence attend to every position of the same sequence, so each output mixes information
# from the whole input in one step, with no recurrence.
#
# **Why a word needs the rest of its sentence.** An embedding table gives a word one vector
# wherever it occurs (a **type** embedding, in Lecture 3's terms), but what a word means
# depends on its neighbours. "Bank" is a slope beside water in "we pulled the canoe up onto
# the bank", and a business in "she asked the bank for a loan". "Green" names a colour in "a
# green scarf", a lack of experience in "the new pilots are still green", and a concern for
# the environment in "a green party manifesto". One vector per word has to blend these senses;
# what we want is one vector per **occurrence**, computed from the words around it. Lecture 3's
# ELMo got such vectors from LSTMs that read the sentence one word at a time in each
# direction. Often the word that settles the sense comes later: in "the bank was too steep to
# climb, so we waded along the river", only "river" says which bank is meant, and a
# left-to-right reader reaches "bank" before it; ELMo's backward reader sees "river" first, but
# only after stepping through every word in between. Self-attention builds each position's
# vector from all the other positions at once, in one layer: "bank" can weigh "river"
# directly, however far apart they stand.
#
# This lecture:
#
# 1. computes self-attention step by step and checks two published worked examples;
# 2. writes the matrix form and checks it against PyTorch, with padding and causal masks;
# 3. measures why the scores are divided by $\sqrt{d_k}$;
# 4. builds multi-head attention and checks it against `torch.nn.MultiheadAttention`;
# 5. shows that self-attention ignores word order, then adds four positional encodings
#    (sinusoidal, learned, ALiBi, RoPE), checks their defining properties, and tests how far
#    each carries a model beyond the lengths it was trained on;
# 6. counts the cost of self-attention, recurrent and convolutional layers as the Transformer
#    paper tabulates it, then measures a self-attention layer against a recurrent layer as the
#    sequence and the width grow.

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from course.data.copying import IGNORE, delayed_copy_batch, delayed_copy_batches
from course.metrics import record
from course.models.attention import (
    MultiHeadAttention,
    alibi_bias,
    alibi_slopes,
    attention,
    causal_mask,
    padding_mask,
    rope,
    sinusoidal_encoding,
)
from course.models.tiny_transformer import ENCODINGS, TinyCausalTransformer
from course.train import fit
from course.viz.attention import (
    attention_explorer,
    head_weights,
    interact_attention,
    interact_positions,
    plot_attention,
    plot_positions,
    word_vectors,
)
from course.viz.attention_views import head_view
from course.viz.diagrams import multi_head_diagram, self_attention_diagram

torch.manual_seed(0)
torch.set_num_threads(1)  # small tensors: one thread is as fast, and robust on a busy 2-core CPU
torch.set_printoptions(precision=4, sci_mode=False)
LECTURE_START = time.perf_counter()

# %% [markdown]
# ## 1. Self-attention step by step
#
# Each input vector $x_i$ (a row of $X$, size $d_{\text{model}}$) is projected three ways, into
# a **query**, a **key** and a **value**:
#
# $$q_i = W^Q x_i, \qquad k_i = W^K x_i, \qquad v_i = W^V x_i.$$ (eq-qkv)
#
# Position $i$ scores every position $j$ by comparing its query with their keys, divides by
# $\sqrt{d_k}$ (the size of a key), turns the scores into weights with a softmax, and
# averages the values:
#
# $$s_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}}, \qquad
#   a_{ij} = \frac{\exp s_{ij}}{\sum_{j'} \exp s_{ij'}}, \qquad
#   z_i = \sum_j a_{ij}\, v_j.$$ (eq-self-attention)
#
# **Two worked examples as published.** The numbers below are those of lecture slides this
# unit was rebuilt from (not part of the course). The two-word example, "Thinking Machines",
# is in a SkillFactory lecture on the Transformer and BERT and in Seoul National University's
# Deep Learning lecture 12 (it comes from Jay Alammar's blog post "The Illustrated
# Transformer"); the four-word example, on the sentence "The brown dog ran", is in the third
# lecture of the course "Understanding Large Language Models". Both give raw scores with $d_k = 64$, so
# $\sqrt{d_k} = 8$, and the weights they derive, to two decimals. "Thinking Machines" gives one
# row, the scores $q_1 \cdot k_j$ of the first word. The four-word example gives two: the first
# word's, $q_1 \cdot k_j$ (112, 96, 16, 8), and then the second word's, $q_2 \cdot k_j$ for
# "brown" (92, 124, 22, 8). Here are the weights the code computes from each row of scores,
# next to the published values.


# %%
def weights_from_scores(raw_scores, d_k=64):
    scores = torch.tensor(raw_scores, dtype=torch.float64)
    return scores / math.sqrt(d_k), torch.softmax(scores / math.sqrt(d_k), dim=0)


worked_examples = [  # name, query word i, raw scores q_i . k_j, published weights a_ij
    ("Thinking Machines", 1, [112, 96], [0.88, 0.12]),
    ("four words, 'The'", 1, [112, 96, 16, 8], [0.87, 0.12, 0.01, 0.0]),
    ("four words, 'brown'", 2, [92, 124, 22, 8], [0.08, 0.91, 0.01, 0.0]),
]
rounded, gaps, ratios = {}, {}, {}
for name, i, raw, published in worked_examples:
    scaled, a = weights_from_scores(raw)
    rounded[name] = [round(value, 2) for value in a.tolist()]
    print(f"{name}: scores {raw} / 8 = {scaled.tolist()}")
    for j, (value, as_published) in enumerate(zip(a.tolist(), published, strict=True), start=1):
        print(f"   a_{i}{j} = {value:.7f}   rounds to {value:.2f}   (published: {as_published})")
    gaps[name] = max(abs(value - p) for value, p in zip(a.tolist(), published, strict=True))
    verdict = "rounds to them" if rounded[name] == published else "does not round to them"
    print(f"   largest gap to a published weight {gaps[name]:.4f}: the softmax {verdict}")
    top, second = scaled.topk(2).values.tolist()  # the two largest weights' ratio is e^(gap)
    big, next_big = sorted(published, reverse=True)[:2]
    ratios[name] = (math.exp(top - second), big / next_big)
    print(
        f"   two largest weights: ratio e^{top - second:.2f} = {ratios[name][0]:.2f}; "
        f"published {big} / {next_big} = {ratios[name][1]:.2f}"
    )
# The text below says which published rows are the softmax of their scores: keep it true.
assert rounded["Thinking Machines"] == [0.88, 0.12]
assert rounded["four words, 'The'"] == [0.88, 0.12, 0.0, 0.0]
assert rounded["four words, 'brown'"] == [0.02, 0.98, 0.0, 0.0]
assert round(gaps["four words, 'brown'"], 2) == 0.07
assert [round(r) for r in ratios["four words, 'brown'"]] == [55, 11]

# %% [markdown]
# The code gives 0.8808 and 0.1192 for "Thinking Machines", which the published example
# rounds to 0.88 and 0.12. The four-word example's published weights are not the softmax of
# its own scores, in either row:
#
# * for "The", the scores give 0.8808, 0.1192, 0.0000054 and 0.0000020, which round to .88,
#   .12, .00 and .00 (also summing to 1), not the published ".87, .12, .01, 0": a score of 16
#   against 112 leaves almost nothing;
# * for "brown", the scores give 0.0180, 0.9820, 0.0000029 and 0.0000005, which round to .02,
#   .98, .00 and .00, not the published ".08, .91, .01, 0". The largest gap, 0.07, is far
#   more than rounding: after scaling, 124 and 92 are 15.5 and 11.5, four units apart, so the
#   softmax makes one weight $e^4 \approx 55$ times the other, where .91 is only about 11
#   times .08.
#
# Once scores differ by more than a few units after scaling, the softmax is nearly a hard
# choice.
#
# The whole computation for the first word of a small made-up sentence, with each vector
# printed, in float64:

# %%
torch.manual_seed(0)
d_model, d_k = 8, 4
sentence = ["thinking", "machines", "think", "fast"]
X = word_vectors(sentence, d_model).double()  # (n, d_model): one fixed vector per word
W_Q, W_K, W_V = (
    torch.randn(d_k, d_model, dtype=torch.float64) / math.sqrt(d_model) for _ in range(3)
)
q1 = W_Q @ X[0]
keys = [W_K @ x for x in X]
values = [W_V @ x for x in X]
s = torch.stack([q1 @ k for k in keys]) / math.sqrt(d_k)
a = torch.softmax(s, dim=0)
z1 = sum(a_j * v for a_j, v in zip(a, values, strict=True))
print(f"q_1 = {q1.numpy().round(4)}")
print(
    f"scores s_1j = {s.numpy().round(4)}\nweights a_1j = {a.numpy().round(4)} (sum {a.sum():.4f})"
)
print(f"z_1 = {z1.numpy().round(4)}")

# %% [markdown]
# ## 2. The matrix form
#
# Stacking the rows, all positions are computed at once:
#
# $$Q = X W^{Q\top}, \quad K = X W^{K\top}, \quad V = X W^{V\top}, \qquad
#   Z = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}} + M\Big) V,$$ (eq-matrix-attention)
#
# where the softmax runs along each row and the mask $M$ is 0 where a query may attend and
# $-\infty$ where it may not. `course.models.attention.attention` computes
# {eq}`eq-matrix-attention` (its mask is boolean, True where allowed). Its first row is the
# $z_1$ above; the whole result is checked against
# `torch.nn.functional.scaled_dot_product_attention` on a padded batch (keys past each
# sentence's length are masked) and with a causal mask.

# %% mystnb={"image": {"alt": "Diagram of self-attention in matrix form: the input X of shape (n, d_model) is projected into Q = X W^(Q transpose), K = X W^(K transpose) and V = X W^(V transpose); Q and K give the scores s_ij = q_i dot k_j divided by the square root of d_k, an n by n matrix; a softmax over j after adding the mask M gives the weights a_ij, each row summing to 1; and the weights times V give z_i = sum over j of a_ij v_j, that is Z = AV."}}
self_attention_diagram()
plt.show()

# %% [markdown]
# The first line below computes the three boxes on the left of the diagram; `attention` does
# the rest, from the scores to $Z$.

# %%
Q, K, V = X @ W_Q.T, X @ W_K.T, X @ W_V.T
Z, A = attention(Q, K, V)
print(f"row 1 against the step-by-step z_1: {(Z[0] - z1).abs().max():.1e}")

torch.manual_seed(1)
B, h, n = 3, 2, 6
q, k, v = (torch.randn(B, h, n, 4, dtype=torch.float64) for _ in range(3))
lengths = torch.tensor([6, 3, 5])
pad = padding_mask(lengths, n)  # (B, 1, 1, n)
for name, mask in [("padding", pad), ("causal", causal_mask(n)), ("both", pad & causal_mask(n))]:
    ours, weights = attention(q, k, v, mask)
    library = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    masked = weights.masked_select(~mask.expand_as(weights))
    print(
        f"{name:8s} mask: max |ours - torch| = {(ours - library).abs().max():.1e}; "
        f"largest weight on a masked key = {masked.abs().max() if masked.numel() else 0:.1f}"
    )

# %% [markdown]
# ## 3. Why divide by $\sqrt{d_k}$
#
# If the entries of $q$ and $k$ are independent with mean 0 and variance 1, then
# $q \cdot k = \sum_{r=1}^{d_k} q_r k_r$ has variance $d_k$: its spread grows like
# $\sqrt{d_k}$. Large scores push the softmax towards a one-hot vector, where its gradient
# vanishes: $\partial a_i / \partial s_j = a_i(\delta_{ij} - a_j)$ is near 0 when one $a$ is near
# 1. Dividing by $\sqrt{d_k}$ keeps the variance at 1 for any width. We measure, for random
# queries and keys over 16 positions, the softmax's entropy and the size of its Jacobian as
# $d_k$ grows, with and without the scaling.

# %% mystnb={"image": {"alt": "Two panels against the key width d_k from 4 to 1024, on a log scale, for random queries and 16 random keys, one line with the 1/sqrt(d_k) scaling and one without: left the mean softmax entropy in nats, with a dotted line at the entropy of a uniform choice among 16 keys; right the mean Frobenius norm of the softmax Jacobian, on a log scale."}}
generator = torch.Generator().manual_seed(0)
widths = [4, 16, 64, 256, 1024]
measured = {"scaled": [], "not scaled": []}
for d in widths:
    qs = torch.randn(2000, d, generator=generator, dtype=torch.float64)
    ks = torch.randn(2000, 16, d, generator=generator, dtype=torch.float64)
    raw = torch.einsum("bd,bjd->bj", qs, ks)
    for label, scores in [("scaled", raw / math.sqrt(d)), ("not scaled", raw)]:
        a = scores.softmax(-1)
        entropy = -(a * a.clamp_min(1e-300).log()).sum(-1).mean().item()
        jacobian = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (b, 16, 16)
        measured[label].append((entropy, jacobian.norm(dim=(1, 2)).mean().item()))
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.3), constrained_layout=True)
for label, values in measured.items():
    left.plot(widths, [e for e, _ in values], "o-", label=label)
    right.plot(widths, [g for _, g in values], "o-", label=label)
left.axhline(math.log(16), color="k", ls=":", lw=1, label="uniform over 16")
left.set(xscale="log", xlabel="$d_k$", ylabel="softmax entropy (nats)")
right.set(xscale="log", yscale="log", xlabel="$d_k$", ylabel="mean ‖∂a/∂s‖ (Frobenius)")
left.legend(fontsize=8)
right.legend(fontsize=8)
plt.show()
for d, (e_s, g_s), (e_u, g_u) in zip(
    widths, measured["scaled"], measured["not scaled"], strict=True
):
    print(
        f"d_k = {d:5d}: entropy {e_s:.3f} scaled, {e_u:.3f} not; "
        f"Jacobian norm {g_s:.4f} scaled, {g_u:.4f} not"
    )
shrink = measured["scaled"][-1][1] / measured["not scaled"][-1][1]
print(f"at d_k = {widths[-1]}, the gradient without the scaling is {shrink:.1f} times smaller")
assert shrink > 2, "the text below says the gradient shrinks without the scaling"

# %% [markdown]
# With the scaling, entropy and gradient size stay the same at every width. Without it, the
# softmax collapses onto one key as $d_k$ grows and the gradient that reaches the scores
# shrinks with it (the last line above gives the factor at the largest width). In JupyterLab, the explorer below shows one head of random
# projections on any sentence you type, with the scaling on or off ($d_k = 64$).

# %% mystnb={"image": {"alt": "Heat map of the self-attention weights of one untrained head (head 0 of fixed random projections, d_k = 64, scores scaled by 1/sqrt(d_k)) on the sentence the animal did not cross the street because it was too tired: one row per query word, one column per key word, colour from 0 to 1; the title gives the mean entropy of the rows beside that of a uniform row. This is the widget's default view."}}
attention_explorer()
plt.show()
controls = interact_attention()

# %% [markdown]
# ## 4. The causal mask
#
# A decoder generates left to right, so position $i$ must not see positions $j > i$: during
# training all positions are computed at once, and a position that could read the next token
# would learn to copy it. The causal mask sets $M_{ij} = -\infty$ above the diagonal. The check:
# change the last token of a sequence and see which outputs move.

# %%
layer = MultiHeadAttention(8, 2).double()
x = torch.randn(1, 5, 8, dtype=torch.float64)
changed = x.clone()
changed[0, -1] += 1.0  # a different last token
for name, mask in [("no mask", None), ("causal mask", causal_mask(5))]:
    moved = (layer(x, mask=mask)[0] - layer(changed, mask=mask)[0]).abs().amax(-1)[0]
    print(f"{name:12s}: how much each position's output moved: {moved.detach().numpy().round(4)}")
print(causal_mask(5).int())

# %% [markdown]
# ## 5. Multi-head attention
#
# One head mixes values with one set of weights. **Multi-head attention** runs $h$ heads on
# separate slices of the projections, each of size $d_k = d_{\text{model}}/h$, and mixes their
# results with an output projection:
#
# $$\operatorname{head}_r = \operatorname{softmax}\!\Big(\frac{Q_r K_r^\top}{\sqrt{d_k}} + M\Big) V_r,
#   \qquad \operatorname{MultiHead}(X) = [\operatorname{head}_1; \dots; \operatorname{head}_h]\, W^{O\top},$$ (eq-multi-head)
#
# where $Q_r$ holds columns $r d_k, \dots, (r+1) d_k - 1$ of $Q$. The cost is that of one head
# of width $d_{\text{model}}$.

# %% mystnb={"image": {"alt": "Diagram of multi-head attention: the input X at the bottom feeds h heads side by side (head 1, head 2 and head h shown); each head takes its own slices Q_r, K_r, V_r and computes head_r = softmax(Q_r K_r-transpose over the square root of d_k plus M) V_r; the heads' outputs are concatenated and multiplied by W^(O transpose) to give MultiHead(X). A note says that each head has d_k = d_model / h."}}
multi_head_diagram()
plt.show()

# %% [markdown]
# `course.models.attention.MultiHeadAttention` does this with four `nn.Linear` layers, the
# diagram's projections below the heads and $W^O$ above them; PyTorch's
# `nn.MultiheadAttention` stores $W^Q, W^K, W^V$ stacked in one matrix. Copy the weights across and compare, with a padding mask:

# %%
torch.manual_seed(2)
ours = MultiHeadAttention(16, 4).double()
library = torch.nn.MultiheadAttention(16, 4, batch_first=True).double()
with torch.no_grad():
    library.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
    library.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
    library.out_proj.weight.copy_(ours.W_o.weight)
    library.out_proj.bias.copy_(ours.W_o.bias)
x = torch.randn(3, 7, 16, dtype=torch.float64)
lengths = torch.tensor([7, 4, 6])
out, weights = ours(x, mask=padding_mask(lengths, 7))
expected, expected_weights = library(
    x, x, x, key_padding_mask=~padding_mask(lengths, 7)[:, 0, 0], average_attn_weights=False
)
print(f"output: max |ours - nn.MultiheadAttention| = {(out - expected).abs().max():.1e}")
print(f"per-head weights: {(weights - expected_weights).abs().max():.1e}")

# %% [markdown]
# **Heads look at different things.** The heads of a layer see the same input and differ only
# in their projections. Here are two untrained heads (projections with $N(0, 1/d_k)$ entries,
# $d_k = 64$) on a real sentence, over fixed word vectors: even before training, each head
# has its own notion of which words are similar. Training makes heads specialise much
# further; Lecture 6 looks inside trained heads.

# %% mystnb={"image": {"alt": "Two heat maps side by side of the self-attention weights of two untrained heads, head 0 and head 1, with different random projections, on the sentence the animal did not cross the street because it was too tired: query words in rows, key words in columns, colour from 0 to 1."}}
words = "the animal did not cross the street because it was too tired".split()
first_head, second_head = head_weights(words, 0), head_weights(words, 1)
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
for weights_r, r, ax in [(first_head, 0, axes[0]), (second_head, 1, axes[1])]:
    plot_attention(weights_r, words, words, title=f"head {r}", ax=ax)
plt.show()
difference = (first_head - second_head).abs().sum(-1) / 2
print(
    f"total variation distance between the heads' rows: mean {difference.mean():.3f} "
    f"(0: the same weights, 1: no key in common); the word 'it' attends most to "
    f"{words[int(first_head[8].argmax())]!r} in head 0 and {words[int(second_head[8].argmax())]!r} in head 1"
)

# %% [markdown]
# ## 6. Positions
#
# Nothing in {eq}`eq-matrix-attention` depends on where a token is. Permuting the input rows
# permutes the output rows the same way (self-attention is **permutation-equivariant**), so
# "it is good , isn't it ?" and "it isn't good , is it ?", which have the same words, get the
# same set of output vectors.

# %%
first = "it is good , isn't it ?".split()
second = "it isn't good , is it ?".split()
layer = MultiHeadAttention(16, 2).double()


def outputs(words, positions=None):
    x = word_vectors(words, 16).double()[None]
    if positions is not None:
        x = x + positions[: len(words)].double()
    with torch.no_grad():
        return layer(x)[0][0]


perm = [0, 4, 2, 3, 1, 5, 6]  # second[i] == first[perm[i]]
assert [first[p] for p in perm] == second
print(
    f"no positions: max |out(second) - out(first) permuted| = "
    f"{(outputs(second) - outputs(first)[perm]).abs().max():.1e}"
)
p = sinusoidal_encoding(16, 16)
print(
    f"with sinusoidal positions added: "
    f"{(outputs(second, p) - outputs(first, p)[perm]).abs().max():.3f}"
)

# %% [markdown]
# So position must be put in. Four ways:
#
# **Sinusoidal** {cite:p}`vaswani2017attention`: add to $x_i$ the vector
#
# $$p_{i,2r} = \sin(i\,\omega_r), \qquad p_{i,2r+1} = \cos(i\,\omega_r), \qquad
#   \omega_r = 10000^{-2r/d}.$$ (eq-sinusoidal)
#
# The vectors come from this formula and are never trained: the encoding is fixed. (One of
# the slide decks this unit was rebuilt from, Seoul National University's Deep Learning
# lecture 12, presents this sine pattern as one the model learns. That is wrong for the
# sinusoidal encoding, which has no parameters at all; the training cell of "How far does
# each encoding carry?" below checks that a model with it has exactly as many trainable
# parameters as a model without positions. The learned encoding further down is the one that
# is trained.)
#
# Each pair of dimensions is a clock at its own frequency, and
# $p_i \cdot p_j = \sum_r \cos\big(\omega_r (i - j)\big)$ depends only on the offset $i - j$:

# %% mystnb={"image": {"alt": "Two heat maps of the sinusoidal positional encoding for 128 positions of 64 dimensions: left the encoding p_i, dimension against position i, in red and blue from -1 to 1; right the dot product of p_i and p_j for every pair of positions i and j."}}
P = sinusoidal_encoding(128, 64).double()
dots = P @ P.T
spread = max(
    (torch.diagonal(dots, offset).max() - torch.diagonal(dots, offset).min()).item()
    for offset in range(-127, 128)
)
formula = torch.stack(
    [torch.cos(10000 ** (-torch.arange(0, 64, 2) / 64) * o).sum() for o in range(128)]
).double()
print(f"largest spread of p_i · p_j along any diagonal: {spread:.1e}")
print(f"p_i · p_(i+o) against the sum of cosines: {(dots[0] - formula).abs().max():.1e}")
plot_positions("sinusoidal", n=128, d=64)
plt.show()

# %% [markdown]
# **Learned** {cite:p}`devlin2019bert,radford2018gpt`: a table of one trainable vector per
# position, added to $x_i$. It can represent anything, but only up to the longest position
# seen in training; the rows after that are never trained.
#
# **ALiBi** {cite:p}`press2022alibi` adds nothing to the inputs; it biases each head's scores
# by the distance, with a fixed slope $m_r = 2^{-8r/h}$ per head:
#
# $$s_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} - m_r\,|i - j|.$$ (eq-alibi)
#
# **RoPE** {cite:p}`su2021roformer` rotates each pair of dimensions of a query or key at
# position $i$ by the angle $i\,\theta_r$, $\theta_r = 10000^{-2r/d}$. Rotations compose, so
# $R_i q \cdot R_j k = q \cdot R_{j-i} k$:
#
# $$\operatorname{rope}(q, i) \cdot \operatorname{rope}(k, j) = f(q, k, i - j).$$ (eq-rope)

# %%
slopes = alibi_slopes(8)
print(f"ALiBi slopes for 8 heads: {slopes.numpy().round(4)}")
print(
    f"ALiBi bias of head 1 (slope 1/2), the row of query 6: {alibi_bias(6, slopes)[0, 5].numpy()}"
)
generator = torch.Generator().manual_seed(0)
q_vec, k_vec = (
    torch.randn(1, 64, generator=generator, dtype=torch.float64),
    torch.randn(1, 64, generator=generator, dtype=torch.float64),
)
worst = 0.0
for i, j in [(5, 2), (40, 37), (1000, 997)]:  # the same offset, 3, at different places
    score = (rope(q_vec, torch.tensor([i])) @ rope(k_vec, torch.tensor([j])).T).item()
    worst = max(
        worst,
        abs(score - (rope(q_vec, torch.tensor([3])) @ rope(k_vec, torch.tensor([0])).T).item()),
    )
    print(f"rope(q, {i}) · rope(k, {j}) = {score:.6f}")
print(
    f"largest difference between them: {worst:.1e}; "
    f"norms kept: {(rope(q_vec, torch.tensor([77])).norm() - q_vec.norm()).abs().item():.1e}"
)

# %% [markdown]
# In JupyterLab, explore each scheme (the book shows the sinusoidal one above):

# %%
controls = interact_positions()

# %% [markdown]
# ### How far does each encoding carry?
#
# A task where only position matters: read random tokens and, at each position, name the token
# **three steps back** (`course.data.copying`). The content of a token says nothing about where
# to look, so the model must know offsets. We train the same tiny causal Transformer (one
# layer, two heads, width 32) with each encoding, and with none, on sequences of 16 tokens,
# for 200 steps each, then test on sequences of 16 to 256 tokens. Accuracy counts every
# position that has an answer.

# %% mystnb={"image": {"alt": "Line chart of accuracy on the delayed-copy task against the test length n, from 16 to 256 on a log scale, for tiny one-layer transformers trained at length 16 with each positional encoding (none, sinusoidal, learned, ALiBi and RoPE), with a dotted vertical line at the training length and a dashed line at chance, 1/16."}}
TRAIN_LENGTH, TEST_LENGTHS, STEPS = 16, (16, 32, 64, 128, 256), 200


def copy_loss(model, batch):
    x, y = batch
    return F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)


extrapolation, times, trainable, trained = {}, {}, {}, {}
for encoding in ENCODINGS:
    torch.manual_seed(0)
    model = TinyCausalTransformer(16, d=32, num_heads=2, num_layers=1, positions=encoding)
    history = fit(
        model,
        copy_loss,
        delayed_copy_batches(64, TRAIN_LENGTH),
        steps=STEPS,
        lr=1e-2,
        desc=encoding,
    )
    times[encoding] = history.seconds
    trained[encoding] = model  # its heads are looked at below
    trainable[encoding] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.eval()
    with torch.no_grad():
        accuracy = {}
        for n in TEST_LENGTHS:
            x, y = delayed_copy_batch(200, n, generator=torch.Generator().manual_seed(1))
            right = (model(x).argmax(-1) == y)[y != IGNORE]
            accuracy[n] = right.float().mean().item()
    extrapolation[encoding] = accuracy

print(f"{'encoding':12s}" + "".join(f"{f'n = {n}':>9s}" for n in TEST_LENGTHS) + "   train time")
for encoding, accuracy in extrapolation.items():
    print(
        f"{encoding:12s}"
        + "".join(f"{accuracy[n]:9.3f}" for n in TEST_LENGTHS)
        + f"   {times[encoding]:8.1f} s"
    )
fig, ax = plt.subplots(figsize=(6.4, 3.4))
for encoding, accuracy in extrapolation.items():
    ax.plot(TEST_LENGTHS, [accuracy[n] for n in TEST_LENGTHS], "o-", label=encoding)
ax.axvline(TRAIN_LENGTH, color="k", ls=":", lw=1, label="training length")
ax.axhline(1 / 16, color="0.5", ls="--", lw=1, label="chance (1/16)")
ax.set(xscale="log", xlabel="test length n", ylabel="accuracy", ylim=(0, 1.02))
ax.set_xticks(TEST_LENGTHS, [str(n) for n in TEST_LENGTHS])
ax.minorticks_off()
ax.legend(fontsize=8)
plt.show()

SPREAD = 0.02  # between processors, of any accuracy in this table (python -m tools.spread)
for encoding in ("sinusoidal", "learned", "rope"):  # the encodings that give offsets
    record(
        "05_self_attention",
        f"delayed copy, {encoding} positions, n = 16 (training length)",
        extrapolation[encoding][TRAIN_LENGTH],
        baseline=extrapolation["none"][TRAIN_LENGTH],
        baseline_name="no positions",
        higher_is_better=True,
        margin=SPREAD,
    )
record(
    "05_self_attention",
    "delayed copy, alibi positions, n = 16 (training length)",
    extrapolation["alibi"][TRAIN_LENGTH],
    baseline=0.5,
    baseline_name="half the positions (the text: ALiBi gets fewer right)",
    margin=SPREAD,
)
record(
    "05_self_attention",
    "delayed copy, rope positions, n = 32 (twice the training length)",
    extrapolation["rope"][32],
    baseline=1 / 16,
    baseline_name="chance",
    higher_is_better=True,
    margin=SPREAD,
)
offsets = [extrapolation[e][TRAIN_LENGTH] for e in ("sinusoidal", "learned", "rope")]
assert min(offsets) > 0.95 and 1 / 16 < extrapolation["none"][TRAIN_LENGTH] < 0.5, (
    "the text below says every offset encoding solves the task at n = 16, and no positions fails"
)
assert extrapolation["alibi"][TRAIN_LENGTH] < 0.5, "the text below says ALiBi fails at n = 16"
assert max(extrapolation[e][2 * TRAIN_LENGTH] for e in ("sinusoidal", "learned", "rope")) < 0.85, (
    "the text below says the offset encodings fall well short of n = 16 already at n = 32"
)
assert all(a[TEST_LENGTHS[-1]] < a[TRAIN_LENGTH] for a in extrapolation.values()), (
    "the text below says every encoding scores lower at the longest test length than at n = 16"
)
assert trainable["sinusoidal"] == trainable["none"] < trainable["learned"], (
    "the text says the sinusoidal encoding is fixed (no trained parameters), the learned one not"
)

# %% [markdown]
# Read the table by columns. At the training length, every encoding that gives offsets
# (sinusoidal, learned, RoPE) solves the task, and the model without positions fails: it
# stays far below them (above chance, 1/16, but the causal mask alone does not tell it where
# "three back" is; the cell above checks both). ALiBi fails even at the training length: like
# the model without positions, it gets fewer than half the positions right there (the cell
# checks this too). That is not a bug: its bias is a penalty that only grows with distance,
# the same for every content, so a head can prefer near keys but cannot single out the key at
# distance 3 among random tokens. (In language, where ALiBi was designed, a recency preference
# is what helps, and content does the rest.)
#
# Beyond the training length, none of them holds its accuracy: every encoding scores lower at
# $n = 256$ than at $n = 16$, and the three that solve the task at the training length are
# already well short of that at $n = 32$, twice the length (below 0.85; the cell above checks
# both). Learned positions have untrained rows there. Sinusoidal and RoPE encode offsets, but
# the model met only offsets up to 15 and queries with at most 16 keys; longer sequences bring
# offsets whose scores training never shaped, and more keys competing in each softmax. The
# table shows how fast each falls towards chance: an encoding being "relative" does not make
# a model extrapolate.

# %% [markdown]
# ### What the heads learned
#
# Each position $i \ge 3$ has one right answer, the token at $i - 3$, and in a single layer
# the only way that token reaches position $i$ is through attention. So a model that solves
# the task should have a head whose weights in row $i$ peak at key $i - 3$. The next cell
# looks at one fresh test sequence of 16 tokens and counts, for every trained model and each
# of its two heads, the rows $i = 3, \dots, 15$ whose largest weight sits at $i - 3$, and the
# mean weight there.

# %%
probe_tokens, _ = delayed_copy_batch(1, TRAIN_LENGTH, generator=torch.Generator().manual_seed(2))
rows = torch.arange(3, TRAIN_LENGTH)  # the positions that have an answer
copy_weights, peaks_at_offset = {}, {}
print(
    f"{'encoding':12s} {'rows peaking at i - 3 (head 0, head 1)':>40s} {'mean weight there':>20s}"
)
for encoding, model in trained.items():
    with torch.no_grad():
        _, (layer_weights,) = model(probe_tokens, return_weights=True)  # (1, 2, n, n)
    copy_weights[encoding] = layer_weights
    peaks = (layer_weights[0][:, rows].argmax(-1) == rows - 3).float().mean(-1)  # (heads,)
    mass = layer_weights[0][:, rows, rows - 3].mean(-1)  # (heads,)
    peaks_at_offset[encoding] = peaks  # the share of rows, per head
    print(
        f"{encoding:12s} {', '.join(f'{v:.2f}' for v in peaks):>40s} "
        f"{', '.join(f'{v:.2f}' for v in mass):>20s}"
    )
solvers = [e for e in ENCODINGS if extrapolation[e][TRAIN_LENGTH] > 0.95]
assert all(peaks_at_offset[e].min() > 0.5 for e in solvers), (
    "the text below says both heads of every model that solves the task peak at i - 3 in most rows"
)
assert all(peaks_at_offset[e].max() < 0.5 for e in ENCODINGS if e not in solvers), (
    "the text below says the models that fail have no such head"
)

# %% [markdown]
# Every model that solves the task has such a head (for these three, in fact, both heads
# peak at $i - 3$ in most rows), and the two that fail, no positions and ALiBi, have none:
# without offsets, no head can find the key three back. **bertviz** {cite:p}`vig2019multiscale`,
# which Lectures 6 and 7 use for larger models, draws the sinusoidal model's two heads on the
# same sequence: hover over a token on the left to see where it looks, click a head's colour
# to show or hide that head. From the fourth token on, the lines should run to the token
# three places above. In JupyterLab the view draws when its cell runs.

# %%
head_view([copy_weights["sinusoidal"]], [str(t) for t in probe_tokens[0].tolist()])

# %% [markdown]
# ## 7. The cost, measured
#
# The Transformer paper {cite:p}`vaswani2017attention` compares four layer types in its
# Table 1 (the "Understanding Large Language Models" session shows the same table), per
# layer, for a sequence of $n$ vectors of width $d$, a convolution of kernel width $k$, and
# self-attention restricted to a neighbourhood of $r$ positions around each query:
#
# | layer | operations | sequential steps | longest path between two positions |
# | --- | --- | --- | --- |
# | self-attention | $O(n^2 d)$ | $O(1)$ | $O(1)$ |
# | recurrent | $O(n d^2)$ | $O(n)$ | $O(n)$ |
# | convolutional | $O(k n d^2)$ | $O(1)$ | $O(\log_k n)$ |
# | self-attention (restricted) | $O(r n d)$ | $O(1)$ | $O(n/r)$ |
#
# The path counts the steps a signal takes between the two farthest positions: time steps in
# the recurrent layer, stacked layers for the other two. For the convolution, $\log_k n$
# assumes dilated kernels; with contiguous ones a stack needs about $n/k$ layers to connect
# every pair. The cell below drops the constants and counts each row
# for this section's sizes: width $d = 64$, the lengths $n$ timed further down, a kernel width
# $k = 3$ and a neighbourhood $r = 16$ (our choices; the table fixes neither).


# %%
def layer_costs(n, d, k=3, r=16):
    """Each layer's (operations, sequential steps, longest path), Table 1 without constants."""
    conv_depth = 1
    while k**conv_depth < n:  # the least depth with k^depth >= n: ceil(log_k n), in integers
        conv_depth += 1
    return {
        "self-attention": (n * n * d, 1, 1),
        "recurrent": (n * d * d, n, n),
        "convolutional": (k * n * d * d, 1, conv_depth),
        "self-attention (restricted)": (r * n * d, 1, math.ceil(n / r)),
    }


costs = layer_costs(256, 64)
print("n = 256, d = 64, k = 3, r = 16")
print(f"{'layer':28s} {'operations':>11s} {'sequential steps':>17s} {'longest path':>13s}")
for name, (operations, steps, path) in costs.items():
    print(f"{name:28s} {operations:11,d} {steps:17d} {path:13d}")
count_lengths = [128, 256, 512, 1024, 2048]
print("\noperations in millions as n grows, d = 64")
print(f"{'layer':28s}" + "".join(f"{f'n = {n}':>11s}" for n in count_lengths))
for name in costs:
    print(
        f"{name:28s}" + "".join(f"{layer_costs(n, 64)[name][0] / 1e6:11.2f}" for n in count_lengths)
    )
# The text below compares these counts: keep it true.
for length in count_lengths:
    ops = {name: cost[0] for name, cost in layer_costs(length, 64).items()}
    assert ops["self-attention"] == length // 64 * ops["recurrent"]  # n/d times; n > d here
    assert ops["convolutional"] == 3 * ops["recurrent"]
    assert ops["self-attention (restricted)"] == min(ops.values())
assert [costs[name][2] for name in costs] == [1, 256, 6, 16]


# %% [markdown]
# Per operation count, self-attention is the dearest layer here: it costs $n/d$ times the
# recurrent layer, 4 times at $n = 256$ and 32 times at $n = 2048$, because every length in
# this section exceeds $d = 64$ (it is the cheaper of the two only when $n < d$). The
# convolution costs $k = 3$ times the recurrent layer at every $n$, and restricted
# self-attention, $r n d$, is the cheapest of the four. What self-attention buys is in the
# other two columns: one sequential step instead of 256, and a path of 1 layer where the
# convolution needs 6 and the restricted form 16.
#
# We time one self-attention head (projections and attention, width $d$) and one GRU layer on
# the CPU as $n$ grows with $d = 64$, and as $d$ grows with $n = 256$, taking the best of three
# runs, and fit the slope of log time against log size.


# %% mystnb={"image": {"alt": "Two log-log panels of the time in seconds of one forward pass (best of three) of a single-head self-attention layer and of a GRU layer: left against the sequence length n from 128 to 2048 at width d = 64, right against the width d from 32 to 512 at n = 256; the legend gives the fitted slope of each line."}}
def best_time(fn, repeats=3):
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def time_layers(n, d):
    torch.manual_seed(0)
    x = torch.randn(1, n, d)
    head = MultiHeadAttention(d, 1)
    gru = torch.nn.GRU(d, d, batch_first=True)
    with torch.no_grad():
        return best_time(lambda: head(x)), best_time(lambda: gru(x))


sizes_n, sizes_d = [128, 256, 512, 1024, 2048], [32, 64, 128, 256, 512]
by_n = [time_layers(n, 64) for n in tqdm(sizes_n, desc="n grows")]
by_d = [time_layers(256, d) for d in tqdm(sizes_d, desc="d grows")]


def slope(sizes, seconds):
    return np.polyfit(np.log(sizes), np.log(seconds), 1)[0]


fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.3), constrained_layout=True)
for ax, sizes, timings, label in [
    (left, sizes_n, by_n, "n (d = 64)"),
    (right, sizes_d, by_d, "d (n = 256)"),
]:
    for index, name in enumerate(("self-attention", "GRU")):
        seconds = [t[index] for t in timings]
        ax.plot(sizes, seconds, "o-", label=f"{name}: slope {slope(sizes, seconds):.2f}")
    ax.set(xscale="log", yscale="log", xlabel=label, ylabel="seconds per forward pass")
    ax.set_xticks(sizes, [str(size) for size in sizes])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.legend(fontsize=8)
plt.show()
for name, index in (("self-attention", 0), ("GRU", 1)):
    print(
        f"{name:15s} slope in n: {slope(sizes_n, [t[index] for t in by_n]):.2f}; "
        f"in d: {slope(sizes_d, [t[index] for t in by_d]):.2f}"
    )

# %% [markdown]
# The asymptotic slopes are 2 (attention in $n$) and 1 (the GRU in $n$), and in $d$ the GRU's
# $O(nd^2)$ against attention's projections, also $O(nd^2)$, plus $O(n^2 d)$. On a CPU at these
# sizes the measured slopes are lower than the asymptotic ones, because fixed costs (Python,
# small-matrix overheads) weigh on the small sizes. Compare the absolute times too: the GRU's
# $n$ steps run one after another, each too small to keep the CPU busy, while attention's
# $O(n^2 d)$ work is a few large matrix products. That sequential cost, not the operation
# count, is what self-attention removes, and at long enough $n$ the quadratic term wins back.

# %%
print(f"lecture ran in {time.perf_counter() - LECTURE_START:.0f} s")
# The summary below quotes section 3's measurements: keep it true.
unscaled = [jacobian_norm for _, jacobian_norm in measured["not scaled"]]
assert all(a > b for a, b in zip(unscaled, unscaled[1:], strict=False)), "it should shrink"
assert widths[-1] == 1024 and 5 < shrink < 7.5, (
    f"the summary says the unscaled gradient is about six times smaller at d_k = 1024, not "
    f"{shrink:.1f} times at d_k = {widths[-1]}"
)

# %% [markdown]
# ## Summary
#
# * Self-attention scores each pair of positions by $q_i \cdot k_j / \sqrt{d_k}$, turns each
#   row into weights with a softmax, and averages the values; the matrix form
#   $\operatorname{softmax}(QK^\top/\sqrt{d_k} + M)V$ matches PyTorch's with padding and causal
#   masks. The published "Thinking Machines" weights, 0.88 and 0.12, come out as 0.8808 and
#   0.1192; the four-word example's two published rows are not the softmax of its scores,
#   which round to .88, .12, .00, .00 and .02, .98, .00, .00.
# * Without the $1/\sqrt{d_k}$, wide heads saturate their softmax, and the gradient that
#   reaches their scores shrinks as the width grows: about six-fold at the widest head of
#   section 3, $d_k = 1024$, against the scaled head (the cell above checks the factor).
# * A causal mask keeps each position from seeing the future, which a decoder needs.
# * Multi-head attention splits the projections into $h$ heads and mixes them with $W^O$; ours
#   matches `nn.MultiheadAttention` with copied weights.
# * Self-attention ignores order until positions are added. Sinusoidal dot products depend
#   only on the offset, and so do RoPE's scores; ALiBi biases by distance; learned positions
#   are a table. On a task that needs exact offsets, the table above says which encodings
#   learn it and how far each carries beyond the training length. In the models that learn
#   it, the heads' weights peak at the key three back, as the head view shows.
# * Attention costs $O(n^2 d)$ per layer, more operations than a recurrent layer's $O(n d^2)$
#   once $n > d$, but needs no sequential steps and joins any two positions in one layer.
#
# **Next:** Assignment 5 (`a5_self_attention`) has you write, in NumPy, attention with a
# local mask that stays finite when a query may see no key and that merges two halves of the
# keys by their log-sum-exp (the step FlashAttention is built on), multi-head attention with
# given weights, the reading of a position back from its sinusoidal encoding, and RoPE as
# GPT-NeoX applies it (to part of each head, from a cache's offset).
