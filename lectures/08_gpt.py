# ---
# jupyter:
#   course:
#     budget_seconds: 90
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
# # Lecture 8: GPT, a causal Transformer that writes
#
# BERT (Lecture 7) reads a whole sentence at once and fills in blanks. The **GPT** family
# {cite:p}`radford2018gpt,radford2019gpt2,brown2020gpt3` does the older job of Lecture 1's
# character model: predict the next token from the ones before it, and so write text one
# token at a time. Its network is the Transformer's decoder stack without cross-attention:
# self-attention that may only look back.
#
# This lecture:
#
# 1. writes the **decoder-only Transformer** (causal mask, learned positions, tied output
#    layer) from Lecture 6's blocks;
# 2. **trains it** on the course's English prose, live for a few seconds, then loads the
#    course checkpoint trained longer, and compares it with a bigram model and with Lectures 1
#    and 2's RNN and LSTM trained on the same batches for the same number of steps;
# 3. proves it is **GPT-2**: the same weights in `transformers`' `GPT2LMHeadModel` give the
#    same logits;
# 4. writes every **decoding** strategy (greedy, beam, temperature, top-k, nucleus), checks
#    the filters against `transformers`, and measures what each does to the text;
# 5. adds a **KV cache** and measures the speed-up;
# 6. contrasts **autoregressive** and **autoencoding** models and works through **XLNet**'s
#    permutation orders on a sequence small enough to enumerate;
# 7. counts the parameters of GPT-1, GPT-2 and GPT-3 and the **compute** their training and
#    generation take;
# 8. states GPT-2's **zero-shot** and GPT-3's **few-shot** claims with the slides' figures, and
#    shows **in-context learning** in a tiny GPT that looks keys up in its own context.
#
# Nothing is downloaded: the corpus ships with the course, and every model here was trained
# by the course's own code on a CPU.

# %%
import inspect
import math
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from course.analysis.generation import (
    continuation_log_likelihood,
    distinct_n,
    generation_seconds,
    known_word_share,
    repetition_rate,
    words_of,
)
from course.analysis.in_context import context_free_accuracy, in_context_accuracy
from course.analysis.lm import ngram_bits_per_char, ngram_log_probs, windowed_bits_per_char
from course.analysis.parameters import (
    count_gpt,
    forward_flops,
    generation_flops,
    kv_cache_size,
    training_flops,
)
from course.analysis.permutation_lm import factorised_log_likelihood, permutation_masks
from course.checkpoints import checkpoint_vocab, load_checkpoint, load_heldout_text
from course.data.chars import random_windows
from course.data.english import prose_text
from course.data.key_value import (
    KeyValueTask,
    key_value_batches,
    key_value_lines,
    pair_lags,
    read_key_value_lines,
)
from course.decoding import (
    beam_search,
    filter_logits,
    greedy_search,
    recurrent_step,
    sample,
    temperature_scale,
    top_k_filter,
    top_p_filter,
)
from course.metrics import record
from course.models import gpt as gpt_module
from course.models.attention import causal_mask
from course.models.gpt import (
    GPT,
    GPT1,
    GPT2_LARGE,
    GPT2_MEDIUM,
    GPT2_SMALL,
    GPT2_XL,
    GPT3,
    GPTConfig,
    save_for_transformers,
)
from course.models.transformer import fuse_attention
from course.train import fit, linear_warmup_decay, next_token_loss
from course.viz.diagrams import (
    causal_mask_diagram,
    decoding_tree_diagram,
    gpt_stack_diagram,
    kv_cache_diagram,
)
from course.viz.generation import (
    example_logits,
    interact_model_samples,
    plot_generation_seconds,
    plot_in_context_accuracy,
    plot_model_samples,
    plot_permutation_masks,
    plot_sampling_filters,
)
from course.viz.training import plot_training_histories

torch.manual_seed(0)
torch.set_num_threads(1)  # small models: one thread is as fast, and robust on a busy 2-core CPU
torch.set_printoptions(precision=4, sci_mode=False)
LECTURE_START = time.perf_counter()

# %% [markdown]
# ## 1. A decoder-only Transformer
#
# A language model factorises the probability of a text $w_1 \dots w_T$ left to right,
#
# $$\log p(w_1, \dots, w_T) = \sum_{t=1}^{T} \log p(w_t \mid w_{<t}),$$ (eq-gpt-factorisation)
#
# and is trained to maximise it on real text: the cross-entropy of Lecture 1, now over
# tokens predicted by a Transformer. GPT computes every $p(w_{t+1} \mid w_{\le t})$ of a
# window in one pass. The input is the sum of a token embedding and a **learned** position
# embedding (not Lecture 5's sinusoids):
#
# $$h^{(0)}_t = E_{\text{tok}}[w_t] + E_{\text{pos}}[t].$$ (eq-gpt-input)
#
# Then $L$ blocks, each Lecture 6's pre-norm encoder layer with a **causal mask** (position
# $t$ may attend to positions $1..t$ only; GPT-2 moved each LayerNorm in front of its
# sublayer):
#
# $$a = h + \operatorname{MultiHead}(\operatorname{LN}_1(h);\ \text{causal}), \qquad
#   h' = a + \operatorname{FFN}(\operatorname{LN}_2(a)).$$ (eq-gpt-block)
#
# The output layer is the token table itself (**weight tying**), after a final LayerNorm:
#
# $$p(w_{t+1} \mid w_{\le t}) = \operatorname{softmax}\big(\operatorname{LN}_f(h^{(L)}_t)\,
#   E_{\text{tok}}^\top\big).$$ (eq-gpt-output)
#
# The diagram below stacks {eq}`eq-gpt-input` to {eq}`eq-gpt-output` from the bottom up, as
# `course/models/gpt.py` builds them. It leaves out dropout, which the model applies only in
# training, to the embedding sum and to the output of each sublayer.

# %% mystnb={"image": {"alt": "Diagram of the GPT stack as course/models/gpt.py builds it, from the bottom up: the tokens w_1 to w_T; a token embedding E_tok[w_t] and a position embedding E_pos[t], added to give h^(0)_t; then a block repeated L times, in which a LayerNorm LN_1 feeds masked (causal) multi-head self-attention, whose output is added to the block's input, a = h + MultiHead(LN_1(h); causal), and a LayerNorm LN_2 feeds a feed-forward network with GELU, whose output is added to a, h' = a + FFN(LN_2(a)), each residual path drawn around its sublayer on the right; then a final LayerNorm LN_f and the output layer, a product with the transposed token table E_tok and no bias, whose softmax gives p(w_(t+1) given w up to t). A dashed orange line from the token embedding to the output layer marks that the two are the same matrix (tied weights)."}}
gpt_stack_diagram()
plt.show()

# %% [markdown]
# That is all of it: no encoder, so no cross-attention. `course/models/gpt.py` is meant to
# be read top to bottom; here is its `forward`, which is {eq}`eq-gpt-input` to
# {eq}`eq-gpt-output` in five lines:

# %%
print(inspect.getsource(GPT.forward))

# %% mystnb={"image": {"alt": "Diagram of the causal mask for the six tokens the cat sat on the mat: a six by six grid with query positions i in rows and key positions j in columns; the squares on and below the diagonal, where j is at most i, are shaded and hold 0, and those above it hold minus infinity."}}
causal_mask_diagram()
plt.show()

# %% [markdown]
# The causal mask of a 6-token window (row $t$: the positions it may read; 1 where the grid
# above holds 0), and a check that the mask does what it says: changing the last token changes
# no prediction before it.

# %%
print(causal_mask(6).int())
torch.manual_seed(0)
tiny = GPT(GPTConfig(vocab_size=20, max_len=8, d_model=32, num_layers=2, num_heads=4, d_ff=64))
tiny.eval()
ids = torch.randint(20, (1, 6))
changed = ids.clone()
changed[0, -1] = (ids[0, -1] + 1) % 20
with torch.no_grad():
    before, after = tiny(ids), tiny(changed)
print("largest change in the logits of positions 1..5:", float((before - after)[0, :5].abs().max()))
print("largest change at position 6 itself:           ", float((before - after)[0, 5].abs().max()))
print("output layer is the token table:", tiny.lm_head.weight is tiny.token.weight)
# The text above: no position reads a later one, and the output layer is the token table.
assert torch.equal(before[0, :5], after[0, :5]), "changing the last token changed an earlier one"
assert tiny.lm_head.weight is tiny.token.weight, "the output layer should be the token table"

# %% [markdown]
# ## 2. Training it on English
#
# The course's English prose (the World English Bible and Python's documentation, Lecture 3's
# corpus) as one stream of characters. Characters keep the comparison with Lectures 1 and 2
# exact: every model is scored in **bits per character** on the same held-out text. A
# character bigram model, counted from the training text, is the baseline to beat.

# %%
train_text, val_text = prose_text("train"), prose_text("val")
gpt_ckpt, gpt_meta = load_checkpoint("char_gpt_english")
vocab = checkpoint_vocab(gpt_meta)  # the checkpoint's characters: the same for the live model
heldout = load_heldout_text("char_gpt_english")  # 100,000 characters of the 'val' split
train_ids, heldout_ids = vocab.encode(train_text), vocab.encode(heldout)
bigram_bpc = ngram_bits_per_char(train_ids, heldout_ids, n=2, vocab_size=len(vocab))
print(f"{len(train_text):,} training characters, {len(vocab)} distinct; "
      f"held-out {len(heldout):,} characters")  # fmt: skip
print(f"bigram (add-one): {bigram_bpc:.3f} bits/char")

# %% [markdown]
# **Live.** A small GPT (2 layers, $d = 64$, a window of 64 characters) for a fixed number of
# steps, with a linear warm-up then linear decay of the learning rate (Lecture 6's lesson:
# Transformers want a warm-up):

# %% mystnb={"image": {"alt": "Two panels of a 500-step training run of a small character-level GPT (2 layers of width 64) from fresh weights, running mean over 20 steps against step: left the training loss in nats per character, right the gradient norm before clipping, on a log scale."}}
LIVE_STEPS = 500
live_config = GPTConfig(
    vocab_size=len(vocab), max_len=64, d_model=64, num_layers=2, num_heads=4, d_ff=256, dropout=0.0
)
torch.manual_seed(0)
live = GPT(live_config)
live_history = fit(
    live,
    GPT.loss,
    random_windows(train_ids, 16, 64, seed=0),
    steps=LIVE_STEPS,
    lr=3e-3,
    lr_schedule=linear_warmup_decay(50, LIVE_STEPS),
    desc="GPT (live)",
)
live_bpc = windowed_bits_per_char(live, heldout_ids[:20_000], window=64)
plot_training_histories({"GPT (live)": live_history}, smooth=20)
plt.show()
record(
    "08_gpt", "live GPT held-out bits/char (20,000 chars)", live_bpc, unit="bits/char",
    baseline=ngram_bits_per_char(train_ids, heldout_ids[:20_000], n=2, vocab_size=len(vocab)),
    baseline_name="character bigram", margin=0.01,  # the spread between processors
)  # fmt: skip

# %% [markdown]
# A few hundred steps give a model that beats the bigram, but not by much: a Transformer has
# to learn from scratch where to look, which a recurrent network gets for free from its
# order of reading. For the rest of the lecture we load **the course checkpoint**: a bigger
# GPT (4 layers, $d = 128$, 4 heads, a window of 256 characters) trained much longer by the
# same loop, with the command below. Next to it, two checkpoints of Lectures 1 and 2's
# models, an RNN and an LSTM, trained by the same recipe on **the same batches** for **the
# same number of steps**, with the same schedule (the cell prints the recipe). The LSTM is
# sized to the GPT, so that the race is fair in size as well as in data; the RNN, Lecture 1's
# cell with 256 units, has far fewer parameters than either (the table prints each count). All
# three are scored on the same held-out windows of 256 characters, each
# started afresh, so every model sees the same context.

# %%
print(f"made by `{gpt_meta['command']}` in the course repository; the file ships with the course")
recipe = gpt_meta["training"]
print(
    f"recipe of all three: {recipe['steps']:,} steps of {recipe['batch_size']} windows of "
    f"{recipe['seq_len']} characters, warm-up {recipe['warmup']} steps, then linear decay to 0"
)
models = {
    "GPT": (gpt_ckpt, gpt_meta),
    "LSTM": load_checkpoint("char_lstm_english"),
    "RNN": load_checkpoint("char_rnn_english"),
}
print(
    "peak learning rates: "
    + ", ".join(f"{n} {m['training']['lr']:g}" for n, (_, m) in models.items())
)


shared = ("steps", "batch_size", "seq_len", "warmup", "clip_norm", "schedule", "seed")
assert all(meta["training"][key] == recipe[key] for _, meta in models.values() for key in shared), (
    "the text says the three share the recipe"
)
window = gpt_meta["heldout"]["evaluation"]["window"]
assert window == gpt_ckpt.config.max_len == recipe["seq_len"] == 256, "the text above says 256"
rows = []
for name, (model, meta) in models.items():
    bpc = windowed_bits_per_char(model, heldout_ids, window=window)  # a fresh start per window
    params = sum(p.numel() for p in model.parameters())
    training = meta["training"]
    recorded = meta["heldout"]["bits_per_char"]
    rows.append((name, params, training["steps"], training["seconds"], bpc, recorded))
print(f"{'model':<10} {'parameters':>10} {'steps':>6} {'train s':>8} {'bits/char':>9} "
      f"{'perplexity/char':>15} {'recorded':>9}")  # fmt: skip
print(f"{'bigram':<10} {'':>10} {'':>6} {'':>8} {bigram_bpc:9.3f} {2**bigram_bpc:15.2f}")
for name, params, steps, seconds, bpc, recorded in rows:
    print(f"{name:<10} {params:10,d} {steps:6d} {seconds:8.0f} {bpc:9.3f} {2**bpc:15.2f} "
          f"{recorded:9.3f}")  # fmt: skip
gpt_bpc = rows[0][4]
record(
    "08_gpt", "checkpoint GPT held-out bits/char", gpt_bpc, unit="bits/char",
    baseline=bigram_bpc, baseline_name="character bigram",
)  # fmt: skip
figure = {name: (params, seconds, bpc) for name, params, _, seconds, bpc, _ in rows}
record(
    "08_gpt", "checkpoint GPT against an LSTM of its size, held-out bits/char", gpt_bpc,
    unit="bits/char", baseline=figure["LSTM"][2], baseline_name="the LSTM checkpoint",
    margin=0.10,  # the course's bar for this race: a lead of at least a tenth of a bit per char
)  # fmt: skip
record(
    "08_gpt", "checkpoint LSTM against the RNN, held-out bits/char", figure["LSTM"][2],
    unit="bits/char", baseline=figure["RNN"][2], baseline_name="the RNN checkpoint", margin=0.02,
)  # fmt: skip
tied = gpt_ckpt.token.weight.numel()  # the output layer is the token embedding, transposed
print(
    f"the GPT's metadata records {gpt_meta['model']['parameters']:,} parameters: its saved "
    f"weights list the tied output matrix ({tied:,} numbers) a second time"
)
assert gpt_meta["model"]["parameters"] == figure["GPT"][0] + tied
# The text below reads the table this way: keep it true.
assert figure["GPT"][2] < figure["LSTM"][2] < figure["RNN"][2] < bigram_bpc
size_gap = figure["LSTM"][0] / figure["GPT"][0] - 1
print(
    f"the LSTM has {size_gap:+.0%} the GPT's parameters; the GPT is ahead of it by "
    f"{figure['LSTM'][2] - figure['GPT'][2]:.3f} bits/char"
)
assert abs(size_gap) <= 0.15, "the LSTM is sized to the GPT, within 15% of its parameters"
assert figure["RNN"][0] < figure["GPT"][0] / 4, "the text says the RNN is far smaller"
# What a training step costs each model. First its arithmetic, counted: every weight of a
# matrix that multiplies a vector is one multiply-add per character (an embedding is a lookup,
# no product; the GPT's output layer, the embedding's matrix tied to a Linear, multiplies),
# and the GPT's attention adds, in each layer, the scores and the weighted sum over the
# positions up to this one: 2 x d x (T + 1) / 2 on average over a window of T. Then its time
# on this machine, one thread: forward and backward on a batch of the recipe's shape, 32
# windows of 256 characters, the GPT through the fused attention its recipe trains with; the
# least of three, the three models taken in turn.
# (The recorded training times above come from runs that shared the machine's two cores.)
gpt_config, (lstm_ckpt, _), (rnn_ckpt, _) = gpt_ckpt.config, models["LSTM"], models["RNN"]
macs = {
    "GPT": sum(m.weight.numel() for m in gpt_ckpt.modules() if isinstance(m, torch.nn.Linear))
    + gpt_config.num_layers * gpt_config.d_model * (gpt_config.max_len + 1),
    "LSTM": lstm_ckpt.lstm.weight_ih_l0.numel() + lstm_ckpt.lstm.weight_hh_l0.numel()
    + lstm_ckpt.readout.weight.numel(),
    "RNN": rnn_ckpt.rnn.weight_ih_l0.numel() + rnn_ckpt.rnn.weight_hh_l0.numel()
    + rnn_ckpt.readout.weight.numel(),
}  # fmt: skip
macs_ratio = macs["GPT"] / macs["LSTM"]
print("multiply-adds per character, forward: " + ", ".join(f"{n} {m:,}" for n, m in macs.items())
      + f"; the GPT does {macs_ratio:.2f} times the LSTM's")  # fmt: skip
assert macs_ratio > 1, "the text below says a step of the GPT does more arithmetic than the LSTM's"
window_batch = heldout_ids[: 32 * 257].view(32, 257)
window_batch = (window_batch[:, :-1], window_batch[:, 1:])  # (32, 256) inputs and targets
times = {name: [] for name in models}
for _round in range(3):
    for name, (model, _) in models.items():
        fuse_attention(model, on=name == "GPT").train()
        started = time.perf_counter()
        (GPT.loss if name == "GPT" else next_token_loss)(model, window_batch).backward()
        times[name].append(time.perf_counter() - started)
        model.zero_grad(set_to_none=True)
        fuse_attention(model, on=False).eval()
print("one training step, one thread, on this machine: "
      + ", ".join(f"{n} {1000 * min(t):.0f} ms" for n, t in times.items()))  # fmt: skip

# %% [markdown]
# The "recorded" column is the figure `make checkpoints` measured when it made each file; the
# one before it was measured just now, by this page. (Each model has the peak learning rate
# that suited it in short trials, printed above the table; `tools/make_checkpoints.py`
# records the trials.)
#
# Read the table with its budget in mind. With the same steps and the same batches, a fair
# race in *data*, and against an LSTM of about its size, the GPT comes first, then the LSTM,
# then the RNN, and all three are far below the bigram. The GPT leads the LSTM by more than a
# tenth of a bit per character (the line above prints the lead, and the record checks that it
# is at least 0.10), far more than the checkpoints' figures move between processors
# (`tools/make_checkpoints.py` records the lead at the shorter budgets it tried). Nor is it a
# race of equal *arithmetic*: at the same size, a step of the GPT does more multiply-adds per
# character than a step of the LSTM (counted above; the cell checks it), because its attention
# compares each position with every one before it, and its softmaxes and normalisations add
# work that the count leaves out. The time a step of each
# took on this machine, one thread, is printed beside the count. The Transformer's strengths,
# every position of a window computed in parallel and any position read directly, pay off on
# parallel hardware and long contexts; on one CPU core at this size, the LSTM stays within that
# lead of the GPT for less arithmetic per step.
#
# What does the checkpoint write? Its greedy continuation of a held-out prompt, and one sample:

# %%
gpt_ckpt.eval()
prompt = "And God said, "
prompt_ids = vocab.encode(prompt)[None]  # (1, P)
with torch.no_grad():
    greedy = greedy_search(
        gpt_ckpt.decode_step,
        {"past": gpt_ckpt.forward_with_cache(prompt_ids[:, :-1])[1]},
        batch_size=1, bos=int(prompt_ids[0, -1]), eos=vocab.encode(".")[0].item(), max_len=100,
    )[0]  # fmt: skip
print("greedy:", repr(prompt + vocab.decode(greedy.tokens)))
drawn = gpt_ckpt.generate(
    prompt_ids, 100, temperature=0.8, generator=torch.Generator().manual_seed(0)
)
print("τ=0.8: ", repr(vocab.decode(drawn[0])))

# %% [markdown]
# **Does it spell?** A character model has to build every word letter by letter, so a first
# question about its text is whether its words are words. Each model continues the same 16
# held-out prompts (40 characters, ending at a space) by 200 characters, sampled at
# $\tau = 0.8$ from the same seed, and we count the share of the words it wrote that occur in
# the training text (`known_word_share`: a word is a run of letters; the last word of each
# continuation, perhaps cut, is left out). The baseline is the character bigram, sampled the
# same way: it knows which letter follows which, and nothing longer. The share measures
# spelling only, not grammar or sense; the samples show those.

# %%
known_words = set(words_of(train_text))
starts = [heldout.index(" ", 40 + 6000 * i) for i in range(16)]  # prompts ~6,000 chars apart
word_prompts = torch.stack([vocab.encode(heldout[s - 40 : s + 1]) for s in starts])  # (16, 41)
bigram_log_probs = ngram_log_probs(train_ids, len(vocab), n=2)  # add-one, as bigram_bpc's
steppers = {
    "GPT": (gpt_ckpt.decode_step, gpt_ckpt.start(len(starts), True)),  # with its KV cache
    "LSTM": (recurrent_step(models["LSTM"][0].eval()), None),  # None: the zero state
    "RNN": (recurrent_step(models["RNN"][0].eval()), None),
    "bigram": (lambda tokens, state: (bigram_log_probs[tokens], state), None),
}
word_share = {}
for name, (step, state) in steppers.items():
    with torch.no_grad():
        new = sample(step, word_prompts, state=state, max_new_tokens=200, temperature=0.8,
                     generator=torch.Generator().manual_seed(0))  # fmt: skip
    texts = [vocab.decode(row) for row in new]
    word_share[name] = known_word_share(texts, known_words)
    print(f"{name:<6} {word_share[name]:6.1%} known words | {texts[0][:64]!r}")
record(
    "08_gpt", "checkpoint GPT's sampled words that are words of the training text",
    word_share["GPT"], baseline=word_share["bigram"], baseline_name="the character bigram's",
    higher_is_better=True, margin=0.2,
)  # fmt: skip
# The text below reads the shares this way: keep it true.
assert word_share["GPT"] > 0.9, "more than nine words in ten"
assert word_share["bigram"] < 0.6, "the bigram's, fewer than six in ten"
networks = [word_share[name] for name in ("GPT", "LSTM", "RNN")]
assert max(networks) - min(networks) < 0.05, "the three networks within five points"

# %% [markdown]
# The GPT spells: more than nine in ten of the words it samples are words of its training
# text, where the bigram's are fewer than six in ten. The LSTM and the RNN spell almost as
# well, all three networks within five points of each other (the cell checks it). Spelling
# comes early to a character model; it is the held-out bits per character of the table above,
# which price every character's prediction, that set the three apart.

# %% [markdown]
# ## 3. Our GPT is GPT-2
#
# `save_for_transformers` writes the checkpoint under GPT-2's names (`wte`, `wpe`,
# `h.0.attn.c_attn`…, with GPT-2's `Conv1D` layers stored transposed) and a local
# `GPT2Config`; `transformers` loads it from that folder (nothing is downloaded) and we
# compare the logits on held-out text, in float32 and in float64.

# %%
import transformers  # noqa: E402  (imported here: only this section needs it)
from transformers import GPT2LMHeadModel  # noqa: E402

transformers.logging.set_verbosity_error()
text_ids = heldout_ids[: 4 * 128].view(4, 128)  # (4, 128): four held-out windows
gpt2_gaps = {}  # dtype -> the largest |logit difference|
with tempfile.TemporaryDirectory() as folder, torch.no_grad():
    path = save_for_transformers(gpt_ckpt, folder)
    for dtype in (torch.float32, torch.float64):
        theirs = GPT2LMHeadModel.from_pretrained(path, local_files_only=True, dtype=dtype).eval()
        ours = GPT(gpt_ckpt.config).to(dtype)
        ours.load_state_dict(gpt_ckpt.state_dict())
        ours.eval()
        gap = (ours(text_ids) - theirs(text_ids).logits).abs().max()
        gpt2_gaps[dtype] = float(gap)
        print(f"{str(dtype):<14} largest |logit difference| = {float(gap):.2e}")
# The text above: the same logits, to the rounding of each precision.
assert gpt2_gaps[torch.float32] < 1e-4 and gpt2_gaps[torch.float64] < 1e-10, gpt2_gaps

# %% [markdown]
# ## 4. Decoding
#
# The model gives a distribution over the next token; **decoding** decides what to write.
# Lecture 4 wrote the two search strategies for its translator, and they serve any model that
# has a step function (feed a token, get log-probabilities and a new state), the GPT included:
#
# - **greedy**: $y_t = \arg\max_y p(y \mid y_{<t})$;
# - **beam search** keeps the $k$ best partial outputs and, with length normalisation, ranks
#   finished ones by
#
# $$\operatorname{score}(y) = \frac{1}{|y|^{\alpha}} \sum_{t=1}^{|y|} \log p(y_t \mid y_{<t}).$$ (eq-gpt-beam)
#
# On a tree of two steps with made-up probabilities the two can disagree: greedy search
# commits to the best first word and misses a text that beam search keeps.

# %% mystnb={"image": {"alt": "Diagram of a two-step decoding tree after the word The, with made-up probabilities: cat 0.5, dog 0.4 and man 0.1, then sat 0.4 or ran 0.35 after cat and barked 0.7 or slept 0.3 after dog, each leaf with the product of its two probabilities. Greedy search, in blue, follows The cat sat (0.200); beam search with k = 2 keeps cat and dog, drops man, and finds The dog barked (0.280), in orange."}}
decoding_tree_diagram()
plt.show()

# %%
with torch.no_grad():  # section 2's prompt again, 100 characters, through the full stops
    argmax_run = gpt_ckpt.generate(prompt_ids, 100, top_k=1)  # top-1 sampling is greedy
loops = {
    name: repetition_rate([vocab.decode(run[0, prompt_ids.shape[1] :]).split()], 2)
    for name, run in (("greedy", argmax_run), ("τ=0.8", drawn))
}
print(f"greedy: {vocab.decode(argmax_run[0])!r}")
print(
    f"word pairs that repeat an earlier one: greedy {loops['greedy']:.0%}, "
    f"the τ=0.8 sample of section 2 {loops['τ=0.8']:.0%}"
)
assert loops["greedy"] > loops["τ=0.8"], "the text below: the most probable text loops"

# %% [markdown]
# The most probable text is a poor text, though: it is bland, and it loops (the lines above).
# **Sampling** draws $y_t \sim p$ instead, after reshaping the logits $z$ so that the tail,
# where the nonsense lives, is cut. Three filters, applied in this order (the order of
# `transformers`' `generate`):
#
# $$\text{temperature:}\quad \tilde z_i = z_i / \tau,$$ (eq-temperature)
#
# $$\text{top-}k\text{:}\quad \tilde z_i = z_i \text{ if } |\{j : z_j > z_i\}| < k,
#   \text{ else } -\infty,$$ (eq-top-k)
#
# $$\text{top-}p\text{ (nucleus):}\quad \tilde z_i = z_i \text{ if }
#   \sum_{j:\ \pi_j > \pi_i} \pi_j < p, \text{ else } -\infty, \qquad \pi = \operatorname{softmax}(z).$$ (eq-top-p)
#
# $\tau < 1$ sharpens the distribution and $\tau > 1$ flattens it. Top-$k$
# {cite:p}`fan2018hierarchical` keeps the $k$ best tokens, however flat or peaked the
# distribution is; top-$p$ {cite:p}`holtzman2020curious` keeps the smallest set of most
# probable tokens whose probability reaches $p$, so it keeps few when the model is sure and
# many when it is not. The course's three functions, each the equation above it:

# %%
for function in (temperature_scale, top_k_filter, top_p_filter):
    source = inspect.getsource(function)
    print(source[source.index('"""', source.index('"""') + 3) + 3 :].strip(), "\n")

# %% [markdown]
# **Against `transformers`.** Its logits warpers do the same job. On random logits, and on
# logits built with exact ties, we compare which tokens each keeps. Top-$k$ keeps every
# token tied with the $k$-th best in both. At the token that crosses $p$, the course keeps
# every token tied with it (the rule depends on the values only); `TopPLogitsWarper` sorts
# and keeps those the sort puts first, so there the two can differ, and the course's nucleus
# is the larger.

# %%
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper  # noqa: E402

gen = torch.Generator().manual_seed(0)
random_z = torch.randn(2000, 50, generator=gen, dtype=torch.float64)  # (2000, 50)
tied_z = torch.randint(0, 6, (2000, 50), generator=gen).double()  # many exact ties
for label, z in (("random", random_z), ("tied", tied_z)):
    t_gap = (temperature_scale(z, 0.7) - TemperatureLogitsWarper(0.7)(None, z)).abs().max()
    k_same = all(
        torch.equal(top_k_filter(z, k).isinf(), TopKLogitsWarper(k)(None, z).isinf())
        for k in (1, 5, 20, 50)
    )
    p_differ = sum(
        int((top_p_filter(z, p).isinf() != TopPLogitsWarper(p)(None, z).isinf()).any(-1).sum())
        for p in (0.1, 0.5, 0.9)
    )
    print(f"{label:>6}: temperature max gap {float(t_gap):.1e}; top-k same tokens kept: "
          f"{k_same}; top-p rows that differ: {p_differ} of {3 * len(z)}")  # fmt: skip
z = torch.tensor([[2.0, 1.0, 1.0, 0.0]], dtype=torch.float64)  # tokens 1 and 2 tie
print("probabilities:", z.softmax(-1).numpy().round(3))
print("course p=0.6 keeps", (~top_p_filter(z, 0.6).isinf()).int().tolist()[0],
      "| transformers keeps", (~TopPLogitsWarper(0.6)(None, z).isinf()).int().tolist()[0])  # fmt: skip

# %% [markdown]
# What the filters leave of a made-up next-token distribution after "The cat sat on the"
# (grey: the model's; blue: what sampling draws from) with $\tau = 0.7$, top-$k$ = 5 and
# top-$p$ = 0.8. Top-$k$ keeps five words; top-$p$, applied to what top-$k$ left, keeps only
# the two whose probabilities already pass 0.8:

# %% mystnb={"image": {"alt": "Grouped bar chart over 10 made-up next-token scores numbered 0 to 9: the model's probabilities softmax(z) in grey beside, in blue, the distribution that sampling draws from after temperature 0.7, top-k 5 and top-p 0.8; the title says how many tokens are kept."}}
after_k = filter_logits(example_logits(), temperature=0.7, top_k=5).softmax(-1)
after_p = filter_logits(example_logits(), temperature=0.7, top_k=5, top_p=0.8).softmax(-1)
print("after τ and top-k:", after_k.numpy().round(3))
print("and then top-p:   ", after_p.numpy().round(3))
kept_k, kept_p, best = int((after_k > 0).sum()), int((after_p > 0).sum()), after_k.sort().values
assert kept_k == 5 and kept_p == 2, (
    f"the text above: top-k keeps 5, top-p 2, not {kept_k}, {kept_p}"
)
assert best[-1] < 0.8 <= best[-2:].sum(), "the two best should be the first to pass 0.8"
plot_sampling_filters(example_logits(), temperature=0.7, top_k=5, top_p=0.8)
plt.show()

# %% [markdown]
# The widget does the same with our GPT: its distribution of the character after a prompt,
# and three continuations sampled with the filters you set (a fixed seed, so a change you see
# is the filters' doing). Lower the temperature or $p$ and the samples become tamer and more
# alike; raise them and they fall apart into non-words. The book shows $\tau = 0.8$,
# top-$p$ = 0.9.

# %% mystnb={"image": {"alt": "Two parts, for the course's character-level GPT checkpoint with temperature 0.8 and top-p 0.9: a grouped bar chart of the 15 most probable next tokens after the prompt And God said, with the model's probability in grey beside the probability that sampling draws from in blue; below it, three sampled continuations of 60 tokens as text."}}
plot_model_samples(gpt_ckpt, vocab, temperature=0.8, top_p=0.9)
plt.show()

# %%
controls = interact_model_samples(gpt_ckpt, vocab)

# %% [markdown]
# **What each strategy writes.** Sixteen prompts from the held-out text, each 40 characters
# ending with a space; every strategy continues each prompt until it writes a full stop or 80
# characters. We measure, over the continuations:
#
# - **distinct-$n$** {cite:p}`li2016diversity`: distinct $n$-grams over all $n$-grams, pooled
#   over the 16 texts (low: the same text again and again);
# - **repetition**: the share of a text's $n$-grams that repeat one earlier in the same text
#   {cite:p}`welleck2020neural` (high: loops);
# - the model's own **log-likelihood** of its output, per character (high: what the model
#   finds most probable).
#
# $n$-grams of words, $n = 2$ for distinct-$n$ and $n = 2$ for repetition. The function
# `search` below runs the two paths of the tree diagram on the GPT: greedy (beam size 1) and
# beam search, which keeps $k = 4$ prefixes where the diagram kept 2.

# %%
STOP, SPACE, LENGTH = vocab.encode(".")[0].item(), vocab.encode(" ")[0].item(), 80
ends = [heldout.index(" ", 40 + 6000 * i) for i in range(16)]  # a space ~6,000 chars apart
prompts = [heldout[e - 39 : e + 1] for e in ends]  # 40 characters, the last a space
prompt_batch = torch.stack([vocab.encode(p) for p in prompts])  # (16, 40)


def cut(ids: list[int]) -> list[int]:
    """A continuation up to and including its first full stop."""
    return ids[: ids.index(STOP) + 1] if STOP in ids else ids


def search(beam_size: int) -> list[list[int]]:
    """Greedy (beam_size 1) or beam search, all prompts at once, from their KV caches."""
    state = {"past": gpt_ckpt.forward_with_cache(prompt_batch[:, :-1])[1]}
    settings = {"batch_size": len(prompts), "bos": SPACE, "eos": STOP, "max_len": LENGTH}
    if beam_size == 1:
        found = greedy_search(gpt_ckpt.decode_step, state, **settings)
    else:
        found = beam_search(gpt_ckpt.decode_step, state, beam_size=beam_size, alpha=0.7, **settings)
    return [h.tokens for h in found]


def draw(**filters: float) -> list[list[int]]:
    """One sample per prompt with the given filters (fixed seed)."""
    generator = torch.Generator().manual_seed(0)
    new = gpt_ckpt.generate(prompt_batch, LENGTH, eos=STOP, generator=generator, **filters)
    return [cut(row) for row in new[:, prompt_batch.shape[1] :].tolist()]


strategies = {
    "greedy": lambda: search(1),
    "beam k=4": lambda: search(4),
    "sample τ=1": lambda: draw(),
    "sample τ=0.7": lambda: draw(temperature=0.7),
    "top-k=10": lambda: draw(top_k=10),
    "top-p=0.9": lambda: draw(top_p=0.9),
    "τ=0.7, top-p=0.9": lambda: draw(temperature=0.7, top_p=0.9),
}
decoded = {}
with torch.no_grad():
    for name, run in strategies.items():
        decoded[name] = run()
table = {}
for name, outputs in decoded.items():
    words = [vocab.decode(o).split() for o in outputs]
    log_lik = [
        float(continuation_log_likelihood(gpt_ckpt, p[None], torch.tensor([o]))[0]) / len(o)
        for p, o in zip(prompt_batch, outputs, strict=True)
    ]
    table[name] = {
        "distinct-2": distinct_n(words, 2),
        "repetition-2": repetition_rate(words, 2),
        "log-lik/char": float(np.mean(log_lik)),
        "chars": float(np.mean([len(o) for o in outputs])),
    }
print(f"{'strategy':<18} {'distinct-2':>10} {'repetition-2':>12} {'log-lik/char':>12} {'chars':>6}")
for name, row in table.items():
    print(f"{name:<18} {row['distinct-2']:10.3f} {row['repetition-2']:12.3f} "
          f"{row['log-lik/char']:12.3f} {row['chars']:6.1f}")  # fmt: skip
print("\nprompt:", repr(prompts[0]))
for name, outputs in decoded.items():
    print(f"{name:<18}", repr(vocab.decode(outputs[0])))
# The text after the figure reads the table this way: keep it true.
likeliest = sorted(table, key=lambda name: table[name]["log-lik/char"])[-2:]
least_varied = sorted(table, key=lambda name: table[name]["distinct-2"])[:2]
assert set(likeliest) == set(least_varied) == {"greedy", "beam k=4"}, (
    f"search should write the likeliest text ({likeliest}) and the least varied ({least_varied})"
)

# %% mystnb={"image": {"alt": "Scatter plot with one labelled point per decoding strategy (greedy, beam search with k = 4, and sampling with temperature, top-k and top-p settings): the distinct-2 share of word bigrams against the model's log-likelihood of its own text, in nats per character."}}
fig, ax = plt.subplots(figsize=(6.0, 3.6))
for name, row in table.items():
    ax.scatter(row["log-lik/char"], row["distinct-2"], s=30)
    ax.annotate(name, (row["log-lik/char"], row["distinct-2"]), fontsize=8,
                xytext=(4, 3), textcoords="offset points")  # fmt: skip
ax.set_xlabel("model's log-likelihood of its own text (nats per character)")
ax.set_ylabel("distinct-2 (word bigrams)")
ax.set_title("search finds likely, repetitive text; sampling, varied text", fontsize=10)
fig.tight_layout()
plt.show()

# %% [markdown]
# Search maximises likelihood and pays for it in variety: greedy and beam search have the
# highest log-likelihood and the fewest distinct bigrams. Pure sampling is the other extreme,
# and the filters move between the two: a lower temperature, top-$k$ or top-$p$ give up some
# variety to stay in the head of the distribution.
#
# ## 5. A KV cache
#
# Generation feeds one token at a time. Without a cache, step $t$ runs the whole prefix of
# $t$ tokens through the network again, although the keys and values of the earlier positions
# cannot have changed: a position never sees the future. A **KV cache** keeps them, per
# layer, and computes only the new position's query, key and value:
#
# $$K^{(l)}_{1..t} = \big[K^{(l)}_{1..t-1};\ k^{(l)}_t\big], \quad
#   V^{(l)}_{1..t} = \big[V^{(l)}_{1..t-1};\ v^{(l)}_t\big], \quad
#   o^{(l)}_t = \operatorname{softmax}\Big(\frac{q^{(l)}_t K^{(l)\top}_{1..t}}{\sqrt{d_k}}\Big) V^{(l)}_{1..t}.$$ (eq-kv-cache)
#
# The diagram below draws one such step inside layer $l$: what the cache already contains,
# the three vectors computed for the new position alone, the append, and the query meeting
# every one of the $t$ keys and values.

# %% mystnb={"image": {"alt": "Diagram of one generation step with a KV cache in layer l, for the new token at position t. Two shaded rows on the left hold the cache of layer l, stored at the earlier steps: the keys k_1, k_2, ..., k_(t-1) and, below them, the values v_1, v_2, ..., v_(t-1). On the right, for position t only, z_t = LN_1(h_t) is projected into q_t = W^Q z_t, k_t = W^K z_t and v_t = W^V z_t; k_t and v_t are appended at the ends of the two rows, which makes K_(1..t) and V_(1..t). Between the rows, the attention box o_t = softmax(q_t times K_(1..t) transposed, over the square root of d_k) V_(1..t) receives the query q_t (dashed, purple) and purple arrows from all t keys above it and all t values below it; its output o_t leaves on the left. A note says that each of the L layers keeps its own keys and values."}}
kv_cache_diagram()
plt.show()

# %% [markdown]
# `block_with_cache` is one block with a cache:

# %%
print(inspect.getsource(gpt_module.block_with_cache))

# %% [markdown]
# Cached and uncached generation must agree: the logits of a whole window computed in one
# pass against one token at a time through the cache, and the tokens that sampling draws
# with the same seed either way.

# %%
with torch.no_grad():
    x = heldout_ids[:128][None]  # (1, 128)
    full = gpt_ckpt(x)  # (1, 128, |V|)
    past, steps = gpt_ckpt.empty_cache(1), []
    for t in range(128):
        logits, past = gpt_ckpt.forward_with_cache(x[:, t : t + 1], past)
        steps.append(logits)
    stepwise = torch.cat(steps, 1)
print("largest |logit difference|, 128 positions:", f"{float((full - stepwise).abs().max()):.2e}")
same = [
    gpt_ckpt.generate(
        prompt_ids,
        100,
        temperature=1.0,
        use_cache=use_cache,
        generator=torch.Generator().manual_seed(1),
    )  # fmt: skip
    for use_cache in (True, False)
]
print("same 100 sampled tokens with and without the cache:", torch.equal(*same))

# %% [markdown]
# The time to generate $n$ tokens (greedy, from a one-token prompt, for 8 sequences at once
# as a server batches requests), with and without the cache; each time is the least of three
# runs, the one least disturbed by whatever else the computer is doing. Without it the work grows like
# $n^2$; with it, like $n$ until attending over the cached keys dominates.

# %% mystnb={"image": {"alt": "Line chart of the seconds that the course's GPT checkpoint takes to generate n tokens for a batch of 8, at n = 16, 32, 64 and 127, one line with a key-value cache and one without."}}
lengths = [16, 32, 64, 127]
cached = generation_seconds(gpt_ckpt, lengths, use_cache=True, batch_size=8, repeats=3)
uncached = generation_seconds(gpt_ckpt, lengths, use_cache=False, batch_size=8, repeats=3)
print(f"{'tokens':>6} {'cache s':>8} {'no cache s':>10} {'speed-up':>8} {'work ratio':>10}")
speed_ups, work_ratios = [], []
for (n, a), (_, b) in zip(cached, uncached, strict=True):
    speed_ups.append(b / a)
    work_ratios.append((n * (n + 1) / 2) / n)  # positions run: 1 + 2 + ... + n, against n
    print(f"{n:6d} {a:8.3f} {b:10.3f} {b / a:8.1f} {work_ratios[-1]:10.1f}")
assert speed_ups[-1] > 2, "the text below: at 127 tokens, more than twice as fast"
assert speed_ups[-1] < work_ratios[-1], "the text below: far less than the work it saves"
plot_generation_seconds(cached, uncached)
plt.show()
gpt3_per_token = kv_cache_size(GPT3, 1)
print(f"GPT-3 keeps {gpt3_per_token:,} numbers per token in its cache: "
      f"{gpt3_per_token * 2 / 1e6:.1f} MB in float16, "
      f"{kv_cache_size(GPT3, 2048) * 2 / 1e9:.1f} GB for a full 2,048-token context")  # fmt: skip

# %% [markdown]
# The last column is the $n^2$ against $n$ argument counted exactly: without the cache, the
# $n$ steps run $1 + 2 + \dots + n = n(n + 1)/2$ positions through the model, with it $n$, so
# the cache does $(n + 1)/2$ times less work, 64 times less at 127 tokens. The measured
# speed-up there is several times (the cell checks more than twice), but far below 64 (the
# cell checks that too), and the times vary from run to run:
# a model this small spends much of each step in Python and in launching small operations,
# not in arithmetic, and the cache saves only the arithmetic. The cache trades memory for
# time: for GPT-3 it is 4.7 MB per token of context, which is why serving long contexts is
# limited by memory.
#
# ## 6. Autoregressive against autoencoding, and XLNet
#
# GPT is **autoregressive** (AR): position $t$ conditions on $w_{<t}$ only, so it can write
# text, and its likelihood {eq}`eq-gpt-factorisation` is exact. BERT is an **autoencoder**
# (AE): every position sees the whole (corrupted) input, so its vectors use both sides, but it
# predicts its masked tokens independently of one another and never sees `[MASK]` after
# pretraining. Their masks for the same five tokens (1: the row may attend to the column):

# %%
masks = {"GPT (causal)": causal_mask(5), "BERT (masked LM)": torch.ones(5, 5, dtype=torch.bool)}
for name, mask in masks.items():
    print(name)
    print(mask.int())

# %% [markdown]
# **XLNet** {cite:p}`yang2019xlnet` keeps the AR factorisation but not the left-to-right
# order. Any order $z$ (a permutation of the positions) factorises the same joint
# distribution,
#
# $$\log p(x) = \sum_{t=1}^{T} \log p(x_{z_t} \mid x_{z_{<t}}),$$ (eq-xlnet-order)
#
# and XLNet trains one Transformer on random orders, so that over many orders each position
# learns from context on both sides, with no `[MASK]`. The tokens keep their positions; only
# the masks change. Two streams are needed: the **content** stream of $x_{z_t}$ sees
# $x_{z_{\le t}}$ (itself included) and is what later positions read; the **query** stream,
# which predicts $x_{z_t}$, sees $x_{z_{<t}}$ and the position $z_t$ but not the token.
#
# A sequence small enough to enumerate: three words from {this, is, good}. Our character GPT
# scores all 27 three-word sentences; normalised, they are an exact joint distribution
# $p(x_1, x_2, x_3)$. We factorise "this is good" in the natural order and in the order
# $z = (3, 1, 2)$ (good first, then this, then is), where each conditional is a ratio of
# marginals of the table:

# %% mystnb={"image": {"alt": "Two black-and-white attention masks of XLNet's two streams for three positions and the factorisation order z = (2, 0, 1): the content stream, where each position sees itself and the positions before it in that order, and the query stream, where it sees only those before it, with query position i in rows and key position j in columns, white where attention is allowed."}}
words = ["this", "is", "good"]
with torch.no_grad():
    grid = torch.tensor(np.array(np.meshgrid(*[range(3)] * 3, indexing="ij")).reshape(3, -1).T)
    texts = [" ".join(words[i] for i in row) + "." for row in grid.tolist()]
    start = vocab.encode(" ")[None]  # condition every sentence on a leading space
    scores = torch.stack([
        continuation_log_likelihood(gpt_ckpt, start, vocab.encode(t)[None])[0] for t in texts
    ])  # fmt: skip
joint = scores.double().softmax(0).view(3, 3, 3)  # p(x1, x2, x3) over the 27 sentences
x = [0, 1, 2]  # "this is good"
direct = math.log(float(joint[0, 1, 2]))
for order in ([0, 1, 2], [2, 0, 1]):
    total, parts = factorised_log_likelihood(joint, x, order)
    steps = " + ".join(f"{v:.3f}" for v in parts)
    print(f"order {[o + 1 for o in order]}: log p = {steps} = {total:.4f}")
    assert abs(float(total) - direct) < 1e-9, f"order {order} should give the same total"
print(f"directly from the table:      log p = {direct:.4f}")
print("most probable sentences:", [texts[i] for i in joint.flatten().argsort(descending=True)[:3]])
plot_permutation_masks((2, 0, 1))
plt.show()
content, query = permutation_masks((2, 0, 1))
print("query stream (row predicts its own token from the columns marked 1):")
print(query.int())
assert query[:2].tolist() == [[False, False, True], [True, False, True]], (
    "the text below: 'this' sees 'good' only, and 'is' sees both"
)

# %% [markdown]
# Both orders give the same total, to the last digit, with different terms: in the second,
# "good" is predicted with no context at all, and "this" and "is" with "good" already known
# to their right. That is XLNet's point: an AR model whose conditionals, over many orders,
# include right context. Its query-stream mask for the order (good, this, is) lets "this"
# see "good" only, and "is" see both.
#
# ## 7. Scale
#
# GPT-1, GPT-2 and GPT-3 are one design at growing size {cite:p}`radford2018gpt,radford2019gpt2,brown2020gpt3`:
# GPT-2's largest model has 1.5 billion parameters and was trained on 40 GB of web text
# (8 million pages); GPT-3 has 175 billion. A block has $12 d^2$ weights (the four
# $d \times d$ projections and a feed-forward layer of $4d$) plus biases and LayerNorms, so
#
# $$N \approx 12\, L\, d^2 + (|\mathcal{V}| + n_{\text{ctx}})\, d.$$ (eq-gpt-params)
#
# GPT-1, "the OpenAI transformer", differs only in where its LayerNorms sit: after each
# residual sum, as in Lecture 6's post-norm Transformer, with no final one
# (`GPTConfig(norm_first=False)` builds it with the same class). It was pretrained as a
# language model and then fine-tuned whole on each task, its inputs rewritten as one token
# sequence (for entailment: premise, a delimiter token, hypothesis), where ELMo handed
# frozen features to a task model.
#
# The course's formula (`count_gpt`, every bias and LayerNorm included) against a model built
# on PyTorch's meta device (shapes, no memory) and against the published figures:

# %%
published = {"GPT-1": "117M", "GPT-2 small": "117M", "GPT-2 medium": "345M",
             "GPT-2 large": "762M", "GPT-2 XL": "1,542M", "GPT-3": "175.0B"}  # fmt: skip
configs = {"GPT-1": GPT1, "GPT-2 small": GPT2_SMALL, "GPT-2 medium": GPT2_MEDIUM,
           "GPT-2 large": GPT2_LARGE, "GPT-2 XL": GPT2_XL, "GPT-3": GPT3}  # fmt: skip
print(f"{'model':<13} {'L':>3} {'d':>6} {'heads':>5} {'count_gpt':>16} {'meta device':>16} "
      f"{'12Ld²':>16} {'paper':>7}")  # fmt: skip
counts = {}
for name, cfg in configs.items():
    counts[name] = count_gpt(cfg).total
    if name == "GPT-3":
        meta = "(not built)"  # 96 layers of 12,288: slow to build even without memory
    else:
        with torch.device("meta"):
            built = sum(p.numel() for p in GPT(cfg).parameters())
        assert built == counts[name], f"{name}: count_gpt and the built model should agree"
        meta = f"{built:,d}"
    rough = 12 * cfg.num_layers * cfg.d_model**2
    print(f"{name:<13} {cfg.num_layers:3d} {cfg.d_model:6d} {cfg.num_heads:5d} "
          f"{counts[name]:16,d} {meta:>16} {rough:16,d} {published[name]:>7}")  # fmt: skip
# The text below reads the table this way: keep it true.
paper = {  # "1,542M" -> 1.542e9
    name: float(text[:-1].replace(",", "")) * {"M": 1e6, "B": 1e9}[text[-1]]
    for name, text in published.items()
}
assert round(counts["GPT-2 small"] / 1e6) == 124, "the small GPT-2 has 124M parameters"
assert all(counts[name] > paper[name] for name in counts if name.startswith("GPT-2")), (
    "every GPT-2 size should count more parameters than its published figure"
)
assert abs(counts["GPT-3"] / paper["GPT-3"] - 1) < 0.01, "GPT-3: within a fraction of a percent"

# %% [markdown]
# The published GPT-2 sizes were counted differently (the paper's "117M" small model has
# 124M parameters in its released weights; the others shift the same way); GPT-3's 175.0B
# is matched to within a fraction of a percent by the formula.
#
# **Compute.** A forward pass costs about $2N$ floating-point operations per token (one
# multiply and one add per weight), and the backward pass twice that
# {cite:p}`kaplan2020scaling`:
#
# $$C_{\text{train}} \approx 6\, N\, D, \qquad C_{\text{generate}} \approx 2\, N \text{ per token}.$$ (eq-compute)
#
# We check $2N$ against the exact count of the matrix products of a forward pass, then
# measure what this machine achieved while training the checkpoint and price the big models
# at that speed.

# %%
ours_n = sum(p.numel() for p in gpt_ckpt.parameters())
exact = forward_flops(gpt_ckpt.config, 128) / 128
print(f"our GPT: N = {ours_n:,}; forward FLOPs per token (window 128, exact): {exact:,.0f} "
      f"= {exact / ours_n:.2f} N")  # fmt: skip
training = gpt_meta["training"]
tokens = training["steps"] * training["batch_size"] * training["seq_len"]
flops = training_flops(ours_n, tokens)
speed = flops / training["seconds"]
print(f"checkpoint: {tokens:,} tokens, 6ND = {flops:.2e} FLOPs in {training['seconds']:.0f} s "
      f"on {training['torch_threads']} thread: {speed / 1e9:.1f} GFLOP/s")  # fmt: skip
gpt3_tokens = 300e9  # GPT-3 saw 300 billion of its 499 billion tokens (Brown et al. 2020)
gpt3_flops = training_flops(counts["GPT-3"], gpt3_tokens)
print(f"GPT-3: 6ND = {gpt3_flops:.3e} FLOPs; at this machine's speed "
      f"{gpt3_flops / speed / (365 * 24 * 3600):,.0f} years")  # fmt: skip
answer_seconds = {}
for name in ("GPT-2 XL", "GPT-3"):
    c = generation_flops(counts[name], 100)
    answer_seconds[name] = c / speed
    print(f"{name}: 100 generated tokens = 2N x 100 = {c:.2e} FLOPs, {c / speed:,.0f} s here")
print(f"our GPT: 100 generated tokens = {generation_flops(ours_n, 100):.2e} FLOPs")
# The text below reads these lines this way: keep it true.
assert round(gpt3_flops / 1e21) == 314, "6ND should give the 3.14e23 FLOPs of GPT-3's paper"
WRITING_YEARS = 5_000  # recorded history: writing is about five thousand years old
assert gpt3_flops / speed / (365 * 24 * 3600) > WRITING_YEARS, "longer than recorded history"
assert 60 <= answer_seconds["GPT-3"] < 3600, "one 100-token answer of GPT-3: minutes"

# %% [markdown]
# GPT-3's training set held 499 billion tokens, of which training saw 300 billion; $6ND$ with
# our count of $N$ gives the $3.14 \times 10^{23}$ FLOPs its paper reports. At the speed this
# laptop trained our model, that is longer than recorded history, and even one 100-token
# answer of GPT-3 would take minutes.

# %% [markdown]
# ## 8. Zero-shot and few-shot: learning in context
#
# GPT-1 was pretrained in order to be fine-tuned: each new task meant more training. GPT-2 and
# GPT-3 {cite:p}`radford2019gpt2,brown2020gpt3` ask another question: can the language model do
# a task with no training at all, if the task is written into the text it continues?
#
# - **Zero-shot** (GPT-2): the input describes the task and gives the item; whatever the model
#   writes next is read as its answer. GPT-2 was made to summarise an article, for instance, by
#   appending `TL;DR:` to it and letting it continue.
# - **Few-shot** (GPT-3): the input first holds $K$ worked examples of the task (its
#   *demonstrations*), then the new item. $K = 1$ is one-shot, $K = 0$ is zero-shot again, and
#   $K$ is as large as the window allows (2,048 tokens for GPT-3). The weights never change:
#   "without any gradient updates or fine-tuning", as the slide puts it. Whatever the model
#   learns from the examples it learns within one forward pass, by attending to them. This is
#   **in-context learning**.
#
# The slides' figures for the two models:
#
# | aspect | GPT-2 | GPT-3 |
# | --- | --- | --- |
# | parameters | 1.5 billion, "> 10×" GPT's | 175 billion, "10× more than any previous non-sparse LM" |
# | training data | 8 million web pages, "> 10×" GPT's | 499 billion words |
# | memory | (not on the slide) | 350 GB of GPU memory |
# | tested | zero-shot | few-shot, "without any gradient updates or fine-tuning" |
#
# The cell below checks what the course can compute from Section 7's `count_gpt`: the two
# parameter counts, GPT-2's ratio to GPT-1, and the 350 GB, which is what the 175 billion
# weights take in 16-bit floats at 2 bytes each (the weights alone). The rest are the papers'
# reported figures, which nothing here can recompute: the 8 million pages of GPT-2's WebText
# and its "> 10×" more data than GPT-1, GPT-3's "10× any previous non-sparse model", and the
# 499 billion, which GPT-3's paper counts in tokens, not words (its Table 2.2; training saw
# 300 billion of them, Section 7).

# %%
gpt2_ratio = counts["GPT-2 XL"] / counts["GPT-1"]
gpt3_gigabytes = counts["GPT-3"] * 2 / 1e9  # 16-bit floats: 2 bytes per weight
print(f"GPT-2 XL: {counts['GPT-2 XL'] / 1e9:.2f} billion parameters, {gpt2_ratio:.1f} × GPT-1's")
print(f"GPT-3: {counts['GPT-3'] / 1e9:.1f} billion parameters, {gpt3_gigabytes:.0f} GB in float16")
assert 1.5e9 <= counts["GPT-2 XL"] < 1.6e9 and gpt2_ratio > 10, "the slide's 1.5 billion, > 10×"
assert abs(counts["GPT-3"] / 1e9 - 175) < 1 and abs(gpt3_gigabytes - 350) < 5, "175 B, 350 GB"

# %% [markdown]
# ### In-context learning on a laptop
#
# GPT-3's few-shot results need GPT-3. The mechanism does not: here is a task that *only*
# in-context learning can solve, small enough for a laptop. Every sequence makes up its own
# dictionary. `course.data.key_value` draws, for each sequence, a fresh random mapping of four
# keys (`a` to `d`) to ten values (`0` to `9`), then writes twelve pairs: a key drawn at random,
# then its value under this sequence's mapping. A GPT reads the characters in order and, at
# each key, predicts the value that follows it. Where the key was shown earlier in the same
# sequence, the answer is in the context: that pair is a **query**, and the earlier pairs are
# its demonstrations. Where the key is new, nothing in the context or the weights can say
# which value comes, so no model beats chance there.
#
# The mapping changes with every sequence, so no weight can learn that `c` means `7`. What
# training can put into the weights is the *procedure*: find the earlier pair with this key
# and copy the value after it. Two layers of attention can do it: a head of layer 1 lets each
# value's position read the key just before it; a head of layer 2 lets the query attend to
# the position whose previous token is the query's own key, and copy the token there. This
# pair is called an **induction head** {cite:p}`olsson2022induction`.
#
# The baselines a query must beat: **chance**, 1 in 10; the **best context-free guess**, the
# value that most often followed each key in training sequences (about chance, since mappings
# are drawn afresh); and **a value drawn from those already shown** in the sequence, which
# knows that the answer is somewhere in the context but not where. Three held-out sequences,
# each pair's key followed by its value, with the number of pairs back to the key's last
# showing (`.` for a new key):

# %%
kv_model, kv_meta = load_checkpoint("key_value_gpt")
kv_task = KeyValueTask(**kv_meta["corpus"]["task"])
kv_heldout = read_key_value_lines(load_heldout_text("key_value_gpt"), kv_task)  # (1000, 24)
kv_lags = pair_lags(kv_heldout, kv_task)  # (1000, 12)
examples = key_value_lines(kv_heldout[:3], kv_task).splitlines()
for line, lags in zip(examples, kv_lags[:3].tolist(), strict=True):
    print(" ".join(line[i : i + 2] for i in range(0, len(line), 2)))
    print(" ".join(f"{lag:>2}" if lag else " ." for lag in lags))
kv_stream = key_value_batches(32, kv_task, seed=kv_meta["training"]["seed"])
kv_train = torch.cat([next(kv_stream)[0] for _ in range(100)])  # the first 3,200 training sequences
kv_context_free = context_free_accuracy(kv_train, kv_heldout, kv_task)
print(f"held-out: {int((kv_lags > 0).sum()):,} queries, {int((kv_lags == 0).sum()):,} new keys; "
      f"chance {kv_task.chance:.3f}, context-free best guess {kv_context_free:.3f}")  # fmt: skip
assert abs(kv_context_free - kv_task.chance) < 0.03, "the text says: about chance"

# %% [markdown]
# **Live.** The same GPT as the checkpoint below (2 layers, $d = 64$, 4 heads), trained for a
# few hundred steps by the course's loop with `GPT.loss`, whose targets sit at the keys only:

# %% mystnb={"image": {"alt": "Two panels of a 300-step training run of a 2-layer GPT on the key-value task, running mean over 20 steps against step: left the training loss in nats per predicted value, falling from about 2.5 to about 1.7, right the gradient norm before clipping, on a log scale."}}
KV_LIVE_STEPS = 300
torch.manual_seed(0)
kv_live = GPT(GPTConfig(**kv_meta["model"]["config"]["config"]))  # the checkpoint's sizes
kv_live_history = fit(
    kv_live,
    GPT.loss,
    key_value_batches(32, kv_task, seed=0),
    steps=KV_LIVE_STEPS,
    lr=3e-3,
    lr_schedule=linear_warmup_decay(30, KV_LIVE_STEPS),
    desc="key-value GPT (live)",
)
plot_training_histories({"key-value GPT (live)": kv_live_history}, smooth=20)
plt.show()
kv_live_result = in_context_accuracy(kv_live, kv_heldout, kv_task)
first_loss = np.mean(kv_live_history.losses[:50])
last_loss = np.mean(kv_live_history.losses[-50:])
print(f"loss: {first_loss:.3f} nats over the first 50 steps, {last_loss:.3f} over the last 50")
print(f"live model: query accuracy {kv_live_result.query_accuracy:.3f}; a value drawn from those "
      f"shown {kv_live_result.query_any_shown:.3f}; new keys {kv_live_result.first_accuracy:.3f}")  # fmt: skip
# Run to run: seeds 0, 1, 2, each with 1 and 2 torch threads (the course machine, 2 cores):
#   python -c "from tools.make_checkpoints import key_value_spread; key_value_spread(steps=300, warmup=30)"
# gives query accuracies 0.410 to 0.420 (spread 0.010), 0.019 to 0.030 above a drawn value
# (0.391), new keys 0.096 to 0.102, and a loss that falls by 0.54 to 0.57 nats. Each bar
# below leaves a margin several times that spread.
assert last_loss < first_loss - 0.3, "the text says: the loss falls"
assert abs(kv_live_result.query_accuracy - kv_live_result.query_any_shown) < 0.1
assert kv_live_result.query_accuracy > kv_task.chance + 0.2

# %% [markdown]
# A few hundred steps take the loss down quickly, and the live model's accuracy at the
# queries says what it has learnt by then: about the baseline of a value drawn from those
# shown (both printed above). It copies *some* value from the context, not yet the right one:
# far better than chance, which guesses among all values, and no better than drawing one of
# those shown (the cell checks both). Finding the right pair needs a mechanism like the
# induction head above; {cite:t}`olsson2022induction` saw such heads form in a bump of the
# loss, after a slow stretch. The course checkpoint was trained by the same loop for 5,000
# steps with the command below; its recorded loss (the mean of each 50 steps) falls slowly
# between steps 500 and 1,000, then more than twice as fast until step 2,500 (the rates are
# printed under it, and the cell checks them). This page does not open the heads, so it
# does not show that ours use an induction head; the accuracy by distance below shows only
# that the lookup works. Even a perfect lookup pays $\ln 10$ nats at every new key, so the
# loss cannot, on average, go below $\ln 10$ times their share. Then its accuracy on the
# held-out sequences, against the **quality bar** this page asserts: at least 0.65 at the
# queries, more than 0.3 above a value drawn from those shown, and within 0.05 of chance at
# new keys.

# %%
print(f"made by `{kv_meta['command']}` in the course repository ({kv_meta['training']['steps']:,} "
      "steps); the file ships with the course")  # fmt: skip
curve = kv_meta["training"]["loss_curve"]
for i in range(0, len(curve["mean_loss_nats"]), 10):
    start = i * curve["every"]
    print(f"steps {start:>5,}-{start + curve['every'] - 1:>5,}: "
          f"loss {curve['mean_loss_nats'][i]:.3f} nats")  # fmt: skip


def fall_per_1000(first: int, last: int) -> float:
    """How fast the recorded loss fell between steps ``first`` and ``last``, per 1,000 steps."""
    means, every = curve["mean_loss_nats"], curve["every"]
    return (means[first // every] - means[last // every]) / (last - first) * 1000


slow, fast = fall_per_1000(500, 1000), fall_per_1000(1000, 2500)
print(f"the loss fell {slow:.2f} nats per 1,000 steps from step 500 to 1,000, then {fast:.2f} "
      "from 1,000 to 2,500")  # fmt: skip
assert fast > 2 * slow, "the text above: the fall slows, then picks up again"
kv_result = in_context_accuracy(kv_model, kv_heldout, kv_task)
new_share = kv_result.first_count / (kv_result.first_count + kv_result.query_count)
print(f"floor: {new_share:.3f} of the keys are new, × ln 10 = {new_share * math.log(10):.3f} nats")
print(f"\n{'pairs since the key':>20} {'keys':>6} {'accuracy':>9} {'drawn value':>12}")
print(f"{'new':>20} {kv_result.first_count:6d} {kv_result.first_accuracy:9.3f} {'':>12}")
for lag, accuracy, count, any_shown in kv_result.by_lag(min_count=30):
    print(f"{lag:>20} {count:6d} {accuracy:9.3f} {any_shown:12.3f}")
print(f"{'all queries':>20} {kv_result.query_count:6d} {kv_result.query_accuracy:9.3f} "
      f"{kv_result.query_any_shown:12.3f}")  # fmt: skip
print(f"chance {kv_task.chance:.3f}; context-free best guess {kv_context_free:.3f}")
# The quality bar. Retrained on the course machine (2 cores) with other seeds and threads,
# the recipe reaches query accuracies of 0.989, 0.846 and 0.945 (seeds 0, 1, 2, one torch
# thread) and 0.924 and 0.832 (seeds 0 and 1, two threads): from 0.832 to 0.989, a spread of
# 0.157, as the lookup forms earlier or later; new keys stay at 0.095 to 0.104. Those runs
# are part of
#   python -c "from tools.make_checkpoints import key_value_spread; key_value_spread()"
# (which also trains seed 2 with two threads). The bar sits below the lowest of them by more
# than that spread.
KV_BAR = 0.65
assert kv_result.query_accuracy >= KV_BAR, f"query accuracy {kv_result.query_accuracy:.3f}"
assert kv_result.query_accuracy > kv_result.query_any_shown + 0.3, "far above a drawn value"
assert abs(kv_result.first_accuracy - kv_task.chance) < 0.05, "new keys: about chance"
print(f"quality bar: queries >= {KV_BAR}, > drawn value + 0.3, new keys within 0.05 of chance: met")
record(
    "08_gpt", "key-value GPT accuracy at held-out queries", kv_result.query_accuracy,
    baseline=kv_result.query_any_shown, baseline_name="a value drawn from those shown",
    higher_is_better=True, margin=0.3,
)  # fmt: skip

# %% mystnb={"image": {"alt": "Line chart of accuracy at a key against the number of pairs since that key was last shown in the sequence, from new (never shown) to 1, 2 and more pairs back, for the live model and the course checkpoint, with the baselines: a value drawn from those shown (grey dashes), the context-free best guess and chance at 0.1."}}
plot_in_context_accuracy(
    {"checkpoint": kv_result, "live": kv_live_result}, context_free=kv_context_free, min_count=30
)
plt.show()
ckpt_by_lag = [accuracy for _, accuracy, _, _ in kv_result.by_lag(min_count=30)]
live_by_lag = [accuracy for _, accuracy, _, _ in kv_live_result.by_lag(min_count=30)]
print(f"checkpoint, by lag: {min(ckpt_by_lag):.3f} to {max(ckpt_by_lag):.3f}")
print(f"live model, by lag: {live_by_lag[0]:.3f} one pair back, {live_by_lag[-1]:.3f} at the "
      f"longest lag drawn; a drawn value there {kv_live_result.by_lag(30)[-1][3]:.3f}")  # fmt: skip
assert max(ckpt_by_lag) - min(ckpt_by_lag) < 0.1, "the text says: the lag hardly matters"
assert live_by_lag[0] == max(live_by_lag) > live_by_lag[-1] + 0.2, "live: best one pair back"

# %% [markdown]
# The checkpoint answers a key that was shown before in the sequence almost always, however
# far back it was shown, and a new key at chance, as it must: nothing in its weights says
# which value a key takes in this sequence. Its accuracy at the queries clears the bar the
# cell above states and asserts, far above each baseline. The live model, which has not yet
# formed the lookup, does best one pair back and worse the further back the key was shown:
# it favours the values written last, which at one pair back are often the right ones.
#
# This is GPT-3's few-shot setting in miniature. The demonstrations are the earlier pairs,
# the query is the key, and the answer is read from the context in one forward pass, with no
# gradient step on this sequence. What the weights learnt in training is not any particular
# mapping but how to use a context. GPT-3 does the same with tasks written in language, over
# a window of 2,048 tokens; its paper reports that the gain from demonstrations grows with the
# size of the model.

# %%
print(f"lecture ran in {time.perf_counter() - LECTURE_START:.0f} s")

# %%
# The summary below restates what the cells above measured: keep it true.
assert gpt2_gaps[torch.float64] < 1e-10, "ours should compute GPT-2's logits"
gpt, lstm, rnn = figure["GPT"], figure["LSTM"], figure["RNN"]  # (parameters, seconds, bits/char)
assert gpt[2] < min(lstm[2], rnn[2]), "our GPT should beat the LSTM and the RNN"
assert abs(lstm[0] / gpt[0] - 1) <= 0.15, "the LSTM should be within 15% of the GPT's size"
assert lstm[2] - gpt[2] > 0.10, "the GPT should lead the LSTM by more than 0.1 bits/char"
worst = max(gpt[2], lstm[2], rnn[2])
assert bigram_bpc - worst > worst - gpt[2], "all three should beat the bigram by far"
assert macs["GPT"] > max(macs["LSTM"], macs["RNN"]), "recurrent steps do less arithmetic"
assert set(likeliest) == set(least_varied) == {"greedy", "beam k=4"}, "search: likely, repetitive"
assert torch.equal(*same) and (full - stepwise).abs().max() < 1e-4, "the cache changes nothing"
assert 2 < speed_ups[-1] < work_ratios[-1], "more than twice as fast, far below the work saved"
assert kv_model.config.num_layers == 2, "the key-value GPT has 2 layers"
assert kv_result.query_accuracy > max(kv_task.chance, kv_context_free) + 0.3, (
    "the key-value GPT should answer far above every context-free baseline"
)

# %% [markdown]
# ## Summary
#
# * GPT is a stack of causal Transformer blocks with learned positions and a tied output
#   layer, trained to predict the next token; ours is exactly GPT-2's computation.
# * Trained on the same batches for the same steps, our small GPT beats an LSTM of about its
#   size (within 15% of its parameters) by more than a tenth of a bit per character, and an
#   RNN, and all three beat a bigram model by far; a step of either recurrent model does less
#   arithmetic.
# * Greedy and beam search find likely but repetitive text; temperature, top-$k$ and
#   top-$p$ trade likelihood for variety. The course's filters keep every tied token, like
#   `transformers`' top-$k$; its top-$p$ differs from `transformers`' only at ties.
# * A KV cache computes each new position once; it gives the same tokens and logits, and at
#   the longest generation measured it is more than twice as fast, though far below the
#   $(n + 1)/2$ times less work it does.
# * XLNet factorises the same joint in any order; its masks, not its positions, change.
# * Parameters grow like $12 L d^2$ and training compute like $6ND$.
# * GPT-2 was tested zero-shot and GPT-3 few-shot: the task is written into the context and no
#   weight changes. A 2-layer GPT trained on sequences that each bring their own mapping
#   learns to answer from its context, far above every context-free baseline.
#
# **Next:** Assignment 8 (`a8_gpt_decoding`) has you write temperature sampling, min-$p$ and
# typical sampling filters and an attention step with a sliding-window KV cache yourself.
