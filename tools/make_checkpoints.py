"""Remake the course-trained checkpoints: ``python -m tools.make_checkpoints`` (``make checkpoints``).

Each recipe below trains one model with the course's own training loop
(``course.train.train_language_model``), fixed seeds and a fixed number of steps (never a
wall-clock budget, so the result does not depend on how busy the machine is), on one CPU
thread per run, and writes it with ``course.checkpoints.save_checkpoint`` into
``course/checkpoints/``. Commit the files it writes. Not part of ``make``: it takes minutes.

    python -m tools.make_checkpoints                 # every checkpoint
    python -m tools.make_checkpoints --only char_lstm_stdlib
    python -m tools.make_checkpoints --device cuda   # train on a GPU (DEVICE=cuda make checkpoints)
    python -m tools.make_checkpoints --list

A run saves its state every 500 steps (``--save-every``) in the user's cache folder
(``--state-dir``; ``tools.resumable``); stopped (Ctrl-C, a closed laptop, a killed job) and
started again with the same command, it goes on from its last save and ends with the weights an
uninterrupted run gives. A recipe or code changed in between starts afresh, and says so.
``--no-resume`` neither saves nor continues. The long recipes can train side by side, one
thread each, on a 2-core machine: ``python -m tools.make_checkpoints --only bert_english &``.

``--device`` (cpu, cuda or mps; cpu by default) is where the model and its batches train. The
initial weights are drawn on the CPU either way; after training the model comes back to the
CPU, where its held-out figure is measured as before and its weights are saved, so a
checkpoint loads anywhere. Each checkpoint's metadata records the device and the number of
torch threads it trained with. A GPU does not give the CPU's numbers to the last bit.

Training time of each recipe on one CPU thread (``python -m tools.make_checkpoints --only
NAME``, as the shipped checkpoints record it, on the course machine: 2 cores, loaded; reading
the data and the held-out evaluation come on top, and for BERT the fine-tuning runs of
``bert_transfer``, about 100 s):

    bert_english        3,282 s      char_lstm_english  10,576 s *
    bilm_english        4,427 s      char_lstm_stdlib      702 s
    char_gpt_english   14,624 s *    char_rnn_english    1,532 s
    key_value_gpt         268 s      char_rnn_stdlib       442 s

* Lecture 8's GPT and LSTM, 12,000 steps on windows of 256 characters, trained side by side
beside builds and tests, and for a while beside a third recipe: each often had less than a
core (quiet, one thread each, about 0.9 s a step for the GPT and 0.6 s for the LSTM: three
and two hours). About ten hours in all as recorded, about five side by side on two cores
(start the two longest, char_gpt_english and char_lstm_english, first). The time grows about
linearly with steps x batch size; BERT's steps cost about a quarter less without dropout (its
recipe's comment gives the sweep).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from course.analysis.bert import (
    combine_layers,
    fill_mask_hits,
    heldout_batches,
    marked_word_states,
    read_nsp_pairs,
    train_word_classifier,
    word_task_accuracy,
)
from course.analysis.elmo import heldout_perplexity, probe_accuracy, train_probe
from course.analysis.in_context import in_context_accuracy
from course.analysis.ngram import perplexity_both_ways
from course.checkpoints import (
    CHECKPOINT_DIR,
    REMAKE_COMMAND,
    available_checkpoints,
    check_text,
    checkpoint_vocab,
    heldout_bits_per_char,
    heldout_key,
    load_checkpoint,
    load_heldout_text,
    read_metadata,
    save_checkpoint,
)
from course.data.bert_inputs import make_nsp_pairs, pretraining_batches
from course.data.chars import CharVocab, random_windows
from course.data.code import load_python_source
from course.data.english import (
    load_prose,
    load_tagging_task,
    majority_baseline,
    prose_text,
    task_labels,
)
from course.data.key_value import (
    KeyValueTask,
    key_value_batch,
    key_value_batches,
    key_value_lines,
    read_key_value_lines,
)
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece, count_words, train_tokenizers_wordpiece
from course.data.words import WordVocab, sentence_tokens, token_windows
from course.models.bert import BertConfig, BertForPreTraining, evaluate_pretraining
from course.models.bilm import BiLM
from course.models.gpt import GPT, GPTConfig
from course.models.recurrent import CharLSTM, CharRNN
from course.models.transformer import fuse_attention
from course.train import (
    TrainingHistory,
    fit,
    linear_warmup_decay,
    next_token_loss,
    train_language_model,
)
from tools.resumable import RunFile, code_digest, default_state_dir, resumable_fit, run_key

SEED = 0
THREADS = 1  # one thread per run: as fast for these sizes, and deterministic
DEVICES = ("cpu", "cuda", "mps")  # --device; the training times on the CPU: module docstring


def training_device(name: str) -> torch.device:
    """The device ``--device`` names, or a ValueError that says why it cannot train here."""
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in DEVICES:
        raise ValueError(f"--device {name!r}: expected one of {', '.join(DEVICES)}")
    if device.type == "cuda" and not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise ValueError(
            f"--device {name}: no CUDA GPU is available (torch {torch.__version__}, {build}); "
            "train on the CPU with --device cpu"
        )
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"--device {name}: there are {torch.cuda.device_count()} CUDA devices")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {name}: the MPS backend (Apple silicon) is not available")
    return device


def device_record(device: torch.device) -> dict:
    """Where a run trained, for the metadata: the device, its name for a GPU, torch's threads."""
    record = {"device": str(device)}
    if device.type == "cuda":
        record["device_name"] = torch.cuda.get_device_name(device)
    return {**record, "torch_threads": torch.get_num_threads()}


def to_device(batch, device: torch.device):
    """A batch (a tensor, or a tuple or dict of tensors) moved to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: value.to(device) for key, value in batch.items()}
    return tuple(value.to(device) for value in batch)


def on_device(batches: Iterable, device: torch.device) -> Iterator:
    """The batches of a stream, each moved to ``device`` as it is drawn (made on the CPU)."""
    return (to_device(batch, device) for batch in batches)


@dataclass(frozen=True)
class Runs:
    """Where the recipes save their runs (``tools.resumable``), and how often; ``folder=None``
    saves nothing (``--no-resume``)."""

    folder: Path | None
    save_every: int = 500

    def file(self, name: str, recipe: Any, function: Callable) -> RunFile | None:
        """The run file of checkpoint ``name``, keyed by its recipe, the course's training code
        and the recipe's own ``function``."""
        if self.folder is None:
            return None
        key = run_key(name, recipe, code_digest(extra=[function]))
        return RunFile(self.folder / f"{name}.pt", key, self.save_every)


NO_RUNS = Runs(None)


CHAR_LSTM_STDLIB = {
    "model": {"hidden_size": 256, "embedding_dim": 32, "forget_bias": 1.0},
    "training": {"batch_size": 32, "seq_len": 100, "clip_norm": 1.0, "optimizer": "adam"},
    # A step decay: a fast learning rate, then a slower one (a fresh Adam, new batches).
    "phases": [
        {"steps": 3000, "lr": 1e-2, "seed": SEED},
        {"steps": 1000, "lr": 2e-3, "seed": SEED + 1},
    ],
}

# Lecture 2's plain RNN against that LSTM at the same size: H = 496 gives 351,223 parameters
# (+1.7% of the LSTM's 345,223) and 344,720 multiply-adds a character (+2.1%), so both do the
# same arithmetic on the same windows, steps and phases. Its rates were chosen by 500 steps
# of the first phase (held-out bits/char on 20,000 characters, one thread beside other work):
#     RNN lr 1e-2  3.850   5e-3  3.053   3e-3  2.660   2e-3  2.750   1e-3  2.944
#         (104-112 ms/step)
#     LSTM lr 1e-2 2.498 (the LSTM's rate; 141 ms/step)
# The second phase keeps the LSTM's ratio: a fifth of the first rate. Held-out bits/char from
# seeds 0 (the checkpoints), 1 and 2, by stdlib_spread() (one thread, about 17 min a seed):
#     LSTM 1.8635, 1.8109, 1.8359 (spread 0.053)    RNN 1.9405, 1.9444, 1.9620 (spread 0.022)
# so the LSTM's worst seed leads the RNN's best by 0.077.
CHAR_RNN_STDLIB = {
    "model": {"hidden_size": 496, "embedding_dim": 32},
    "training": CHAR_LSTM_STDLIB["training"],
    "phases": [
        {"steps": 3000, "lr": 3e-3, "seed": SEED},
        {"steps": 1000, "lr": 6e-4, "seed": SEED + 1},
    ],
}


STDLIB_PAIR = (
    ("char_lstm_stdlib", CharLSTM, CHAR_LSTM_STDLIB),
    ("char_rnn_stdlib", CharRNN, CHAR_RNN_STDLIB),
)


def train_in_phases(
    model: torch.nn.Module,
    train_ids: torch.Tensor,
    common: dict,
    phases: list[dict],
    device: torch.device,
) -> dict:
    """Run ``course.train.train_language_model`` once per phase (each for its fixed number of
    steps, never a time budget) on ``device`` (where ``model`` is) and return the training part
    of the metadata."""
    losses, seconds = [], 0.0
    train_ids = train_ids.to(device)  # the windows are cut from it on the device
    for phase in phases:
        history = train_language_model(model, train_ids, **common, **phase, budget_seconds=None)
        if history.stopped_by != "steps" or history.steps != phase["steps"]:
            raise RuntimeError(
                f"training stopped by {history.stopped_by!r} after {history.steps} of "
                f"{phase['steps']} steps ({phase})"
            )
        losses += history.losses
        seconds += history.seconds
    return {
        "function": "course.train.train_language_model",
        "steps": sum(phase["steps"] for phase in phases),
        "seed": SEED,
        "initial_weights": f"torch.manual_seed({SEED}) before {type(model).__name__}(**config)",
        **common,
        "phases": phases,
        **device_record(device),
        "seconds": round(seconds, 1),
        "final_loss_bits": round(statistics.fmean(losses[-100:]) / math.log(2), 4),
        "stopped_by": "steps",
    }


def fit_record(history: TrainingHistory, function: str, model_class: str, settings: dict,
               device: torch.device, *, in_bits: bool = False) -> dict:  # fmt: skip
    """The training part of a checkpoint's metadata for one ``course.train.fit`` run on
    ``device``, after checking that it ran all its steps (never stopped by a time budget or a
    non-finite loss)."""
    if history.stopped_by != "steps":
        raise RuntimeError(f"training stopped by {history.stopped_by!r}: {history.summary()}")
    final = statistics.fmean(history.losses[-100:])  # nats per token
    return {
        "function": function,
        "steps": history.steps,
        "seed": SEED,
        "initial_weights": f"torch.manual_seed({SEED}) before {model_class}(**config)",
        **settings,
        **device_record(device),
        "seconds": round(history.seconds, 1),
        **(
            {"final_loss_bits": round(final / math.log(2), 4)}
            if in_bits
            else {"final_loss_nats": round(final, 4)}
        ),
        "stopped_by": history.stopped_by,
    }


def char_lstm_stdlib(directory: Path, device: torch.device, runs: Runs = NO_RUNS) -> dict:
    """Lecture 2's interpretable cells: a char-LSTM trained on the whole train split of the
    standard library (about four times Lecture 2's text) with ``CHAR_LSTM_STDLIB``."""
    return char_stdlib(
        "char_lstm_stdlib",
        CharLSTM,
        CHAR_LSTM_STDLIB,
        "Character-level LSTM (H = 256, 32-dimensional embedding) trained on Python's "
        "standard library for Lecture 2's interpretable cells",
        directory,
        device,
    )


def char_rnn_stdlib(directory: Path, device: torch.device, runs: Runs = NO_RUNS) -> dict:
    """Lecture 2's LSTM against a plain RNN: the char-RNN of ``CHAR_RNN_STDLIB``, trained on the
    same windows, steps and phases as ``char_lstm_stdlib``."""
    return char_stdlib(
        "char_rnn_stdlib",
        CharRNN,
        CHAR_RNN_STDLIB,
        "Character-level RNN (tanh, H = 496, 32-dimensional embedding) trained on Python's "
        "standard library with the windows, steps and phases of char_lstm_stdlib, for Lecture "
        "2's comparison of the two at the same size",
        directory,
        device,
    )


def stdlib_texts() -> tuple[str, str, CharVocab]:
    """Lecture 2's stdlib recipes' data: the whole train split, the held-out text (the first
    100,000 characters of the 'val' split, Lecture 2's) and the vocabulary of the train split."""
    train_text = load_python_source(max_chars=None, split="train")
    heldout_text = load_python_source(max_chars=100_000, split="val")
    return train_text, heldout_text, CharVocab.from_text(train_text)


def train_stdlib(
    model_class: type[torch.nn.Module],
    recipe: dict,
    config: dict,
    train_ids: torch.Tensor,
    device: torch.device,
    seed: int = SEED,
) -> tuple[torch.nn.Module, dict]:
    """Train a ``model_class(**config)`` with ``recipe``; the checkpoint is seed ``SEED``, other
    seeds (initial weights and every phase's windows) measure the spread. The model comes back
    on the CPU."""
    torch.manual_seed(seed)  # the initial weights
    model = model_class(**config).to(device)
    phases = [{**phase, "seed": phase["seed"] + 100 * (seed - SEED)} for phase in recipe["phases"]]
    training = train_in_phases(model, train_ids, recipe["training"], phases, device)
    if seed != SEED:
        training |= {"seed": seed, "initial_weights": f"torch.manual_seed({seed})"}
    return model.cpu(), training  # measured and saved on the CPU, as before


def stdlib_spread(
    seeds: Iterable[int] = (1, 2), directory: Path = CHECKPOINT_DIR
) -> dict[tuple[str, int], float]:
    """Train both of Lecture 2's stdlib recipes once per seed (0 is the checkpoints' own, read
    from ``directory``) and print each run's held-out bits per character, measured as the
    checkpoints are, and the spread (max - min) over the seeds with the checkpoints' figures:
    how far the LSTM's lead over the RNN can move between runs. About 17 minutes a seed on one
    thread."""
    train_text, heldout_text, vocab = stdlib_texts()
    train_ids = vocab.encode(train_text)
    figures: dict[tuple[str, int], float] = {}
    for name, model_class, recipe in STDLIB_PAIR:
        metadata = read_metadata(name, directory)
        figures[(name, SEED)] = metadata["heldout"]["bits_per_char"]
        for seed in seeds:
            config = {"vocab_size": len(vocab), **recipe["model"]}
            model, training = train_stdlib(
                model_class, recipe, config, train_ids, torch.device("cpu"), seed
            )
            figures[(name, seed)] = heldout_bits_per_char(model, metadata, heldout_text)
            print(f"{name}, seed {seed}: {figures[(name, seed)]:.4f} bits/char "
                  f"({training['seconds']:.0f} s)", flush=True)  # fmt: skip
    for name, _, _ in STDLIB_PAIR:
        values = [value for (key, _), value in figures.items() if key == name]
        print(
            f"{name}: {min(values):.4f} to {max(values):.4f}, spread {max(values) - min(values):.4f}"
        )
    return figures


def char_stdlib(
    name: str,
    model_class: type[torch.nn.Module],
    recipe: dict,
    description: str,
    directory: Path,
    device: torch.device,
) -> dict:
    """A character-level model of the standard library's source, trained with ``recipe``."""
    train_text, heldout_text, vocab = stdlib_texts()
    config = {"vocab_size": len(vocab), **recipe["model"]}
    model, training = train_stdlib(model_class, recipe, config, vocab.encode(train_text), device)
    python = platform.python_version()
    return save_checkpoint(
        model,
        name,
        config=config,
        vocab=vocab,
        training=training,
        corpus={
            "description": (
                "the source of Python's standard library (top-level modules, split 'train' of "
                "course.data.code.load_python_source: every file not held out), Python "
                f"{python}, PSF licence"
            ),
            "python": python,
            "characters": len(train_text),
            "sha256": hashlib.sha256(train_text.encode("utf-8")).hexdigest(),
        },
        heldout_text=heldout_text,
        heldout_description=(
            "the first 100,000 characters of the held-out split ('val') of the standard "
            f"library's source, Python {python}: Lecture 2's held-out text"
        ),
        description=description,
        command=REMAKE_COMMAND,
        directory=directory,
    )


# Chosen by short runs of ``python -m tools.sweeps bilm`` (500 steps of 32 windows of 32 words,
# warm-up 50 steps, linear decay to 0; one thread beside other work), held-out perplexity
# forward / backward:
#     lr 3e-3 (the earlier recipe's rate)     298 ms/step   257.4 / 269.3
#     lr 6e-3                                  317 ms/step   249.7 / 261.4
#     lr 1.2e-2                                534 ms/step   235.7 / 231.6 (a busier machine)
# and 20 steps of 64 and of 128 windows: 636 and 1,224 ms/step, no cheaper a word than 32.
# The recipe is four times the earlier budget (4,000 steps of 32) at the best rate: 16,000 steps
# of 32, warm-up 500, then linear decay to 0.
BILM_ENGLISH = {
    "vocab": {"max_words": 5000},
    "model": {"dim": 128, "num_layers": 2},
    "training": {"batch_size": 32, "seq_len": 32, "clip_norm": 1.0, "optimizer": "adam"},
    "steps": 16000,
    "lr": 1.2e-2,
    "warmup": 500,
}


def english_sentences(split: str) -> list[list[str]]:
    """Every sentence of the English prose (both sources) of a split, as biLM tokens."""
    return [sentence_tokens(s) for doc in load_prose(split, "all") for s in doc.sentences]


def bilm_heldout(model: torch.nn.Module, metadata: dict, text: str) -> dict[str, float]:
    """The checkpoint's held-out figure: perplexity of each direction on the held-out sentences
    (one per line, tokens separated by spaces)."""
    vocab = checkpoint_vocab(metadata)
    sentences = [line.split(" ") for line in text.splitlines()]
    figures = heldout_perplexity(model, vocab, sentences, **metadata["heldout"]["evaluation"])
    return {direction: round(value, 4) for direction, value in figures.items()}


def kneser_ney_baseline(
    train: list[list[str]], heldout: list[list[str]], vocab: WordVocab, order: int = 3
) -> dict[str, float]:
    """Held-out perplexity of an interpolated Kneser-Ney n-gram model of ``train`` read each way
    (``course.analysis.ngram.KneserNey``, as Lecture 3 counts it), on the same words as the
    biLM: the bar its checkpoint is held to."""
    train_ids = [vocab.ids(s) for s in train]
    test_ids = [vocab.ids(s) for s in heldout]
    both = perplexity_both_ways(train_ids, test_ids, len(vocab), order)
    return {direction: round(value, 4) for direction, value in both.items()}


def record_bilm_baseline(directory: Path) -> dict:
    """Measure the Kneser-Ney trigram on the biLM checkpoint's data and record it in its JSON
    (``baselines.kneser_ney_trigram``, on the whole held-out split, as its own figure)."""
    path = Path(directory) / "bilm_english.json"
    metadata = json.loads(path.read_text(encoding="utf-8"))
    train, heldout = english_sentences("train"), english_sentences("val")
    vocab = WordVocab.build(train, **BILM_ENGLISH["vocab"])
    figures = kneser_ney_baseline(train, heldout, vocab)
    metadata["baselines"] = {"kneser_ney_trigram": figures}
    path.write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return metadata


def bilm_english(directory: Path, device: torch.device, runs: Runs = NO_RUNS) -> dict:
    """Lecture 3's ELMo: a biLM (word-embedding token layer, two LSTM layers each way, a shared
    softmax) trained on the English prose of ``course.data.english`` with ``BILM_ENGLISH``."""
    recipe = BILM_ENGLISH
    train = english_sentences("train")
    heldout = english_sentences("val")
    vocab = WordVocab.build(train, **recipe["vocab"])
    stream = vocab.encode(train)  # (N,) word ids
    config = {"vocab_size": len(vocab), **recipe["model"]}
    torch.manual_seed(SEED)  # the initial weights
    model = BiLM(**config).to(device)
    common = recipe["training"]
    run = runs.file("bilm_english", recipe, bilm_english)
    history = resumable_fit(
        model,
        lambda m, words: m.lm_loss(words),
        lambda: on_device(
            token_windows(stream, common["batch_size"], common["seq_len"], seed=SEED), device
        ),
        steps=recipe["steps"],
        lr=recipe["lr"],
        clip_norm=common["clip_norm"],
        lr_schedule=linear_warmup_decay(recipe["warmup"], recipe["steps"]),
        run=run,
        desc="biLM",
    )
    training = fit_record(
        history,
        "course.train.fit with BiLM.lm_loss on course.data.words.token_windows",
        "BiLM",
        {
            **common,
            "lr": recipe["lr"],
            "warmup": recipe["warmup"],
            "schedule": "course.train.linear_warmup_decay(warmup, steps)",
        },
        device,
    )
    model.cpu()  # measured and saved on the CPU, as before
    text = "\n".join(" ".join(sentence) for sentence in train)
    save_checkpoint(
        model,
        "bilm_english",
        config=config,
        vocab=vocab,
        training=training,
        corpus={
            "description": (
                "every sentence of the 'train' split of course.data.english.load_prose(source="
                "'all') (the World English Bible and the Python 3.11 documentation), tokenised "
                "and lower-cased by course.data.words.sentence_tokens"
            ),
            "sentences": len(train),
            "tokens": len(stream),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        },
        heldout_text="\n".join(" ".join(sentence) for sentence in heldout),
        heldout_description=(
            "every sentence of the 'val' split of the same prose, one per line, tokens "
            "separated by spaces"
        ),
        description=(
            "ELMo-style biLM (word-embedding token layer, 2 LSTM layers of 128 each way, shared "
            "softmax over 5,000 words) trained on the course's English prose for Lecture 3"
        ),
        command=REMAKE_COMMAND,
        directory=directory,
        heldout_figure=bilm_heldout,
        evaluation={"batch_size": 16},  # heldout_perplexity's default: see why there
    )
    return record_bilm_baseline(directory)


# Chosen by short runs of ``python -m tools.sweeps bert`` (600 steps of 64 pairs each, warm-up
# 60, one CPU thread beside another run; held-out masked-LM accuracy, most frequent token 0.053):
#
#     dropout 0.1, lr 1e-3 (the earlier recipe's settings)    582 ms/step   MLM 0.126
#     dropout 0,   lr 1e-3                                     421 ms/step   MLM 0.133
#     dropout 0,   lr 2e-3                                     484 ms/step   MLM 0.150
#     dropout 0,   lr 4e-3                                     430 ms/step   MLM 0.053 (stalled)
#
# No dropout in pretraining (as Geiping and Goldstein's "cramming" BERT) makes a step about a
# quarter cheaper and learns no slower; twice the learning rate learns faster, four times fails.
# The recipe is then four times the earlier budget (3,000 steps of 32): 6,000 steps of 64.
BERT_ENGLISH = {
    "vocab": {"vocab_size": 4000},  # the `tokenizers` WordPiece trainer, on the train split
    "model": {
        "d_model": 128,
        "num_layers": 4,
        "num_heads": 4,
        "d_ff": 512,
        "max_len": 64,
        "dropout": 0.0,
    },
    "training": {"batch_size": 64, "max_len": 64, "mode": "bernoulli", "clip_norm": 1.0},
    "steps": 6000,
    "lr": 2e-3,
    "warmup": 300,  # linear warm-up, then linear decay to 0 at the last step
    "heldout": {"pairs": 2048, "batch_size": 64, "seed": 0},
}


def english_documents(split: str) -> list[tuple[str, ...]]:
    """The sentences of every document of the English prose (both sources) of a split."""
    return [doc.sentences for doc in load_prose(split, "all")]


def bert_wordpiece(documents: list[tuple[str, ...]], vocab_size: int) -> WordPiece:
    """The `tokenizers` trainer's WordPiece vocabulary on ``documents``, with its pieces in
    sorted order after the special tokens (the trainer's own order of ties varies by run)."""
    learned = train_tokenizers_wordpiece(count_words(s for d in documents for s in d), vocab_size)
    rest = sorted(t for t in learned.vocab if t not in SPECIAL_TOKENS)
    return WordPiece(list(SPECIAL_TOKENS) + rest)


def bert_heldout(model: torch.nn.Module, metadata: dict, text: str) -> dict[str, float]:
    """The checkpoint's held-out figures: MLM accuracy and loss and NSP accuracy on the held-out
    pairs (lines of label, sentence A, sentence B, separated by tabs), masked with a fixed seed."""
    settings = metadata["heldout"]["evaluation"]
    batches = heldout_batches(checkpoint_vocab(metadata), read_nsp_pairs(text), **settings)
    return {k: round(v, 4) for k, v in evaluate_pretraining(model, batches).items()}


# What Lecture 7 does with the checkpoint, measured when it is made: the part of speech of a
# marked word (course.data.english's WordNet task), 4,000 training sentences drawn as the
# lecture draws them; a linear probe on the frozen features (the last four layers side by
# side); and the same network fine-tuned from the checkpoint and trained from scratch, once per
# seed (course.analysis.bert.train_word_classifier: 100 steps of 32, lr 1e-3).
BERT_TRANSFER = {
    "task": "pos",
    "train_sentences": 4000,
    "draw_seed": 0,  # numpy.random.default_rng(0).choice(..., replace=False), as the lecture
    "probe": "concat_last_four",
    "seeds": [0, 1, 2],
    "steps": 100,
    "lr": 1e-3,
}


def bert_transfer(model: BertForPreTraining, wordpiece: WordPiece) -> dict:
    """``BERT_TRANSFER``'s figures for a pretrained ``model`` (on the CPU), and the fill-mask
    sentences of Lecture 7 (course.analysis.bert.FILL_MASK_CHECKS)."""
    setting = BERT_TRANSFER
    labels = task_labels(setting["task"])
    every, test = (
        load_tagging_task(setting["task"], "train"),
        load_tagging_task(setting["task"], "test"),
    )
    rng = np.random.default_rng(setting["draw_seed"])
    train = [every[i] for i in rng.choice(len(every), setting["train_sentences"], replace=False)]
    y_train = torch.tensor([labels.index(e.label) for e in train])
    y_test = torch.tensor([labels.index(e.label) for e in test])
    _, majority = majority_baseline(setting["task"], "test")
    states_train = marked_word_states(model, wordpiece, train)
    states_test = marked_word_states(model, wordpiece, test)
    how = setting["probe"]
    probe = train_probe(combine_layers(states_train, how)[None], y_train, len(labels), layer=0)
    frozen = probe_accuracy(probe, combine_layers(states_test, how)[None], y_test)
    runs = {"fine_tuned": [], "from_scratch": []}
    for seed in setting["seeds"]:
        for name, start in (("fine_tuned", model.bert.state_dict()), ("from_scratch", None)):
            classifier, _ = train_word_classifier(
                model.config, start, wordpiece, train, labels, seed=seed,
                steps=setting["steps"], lr=setting["lr"], desc=f"{name}, seed {seed}",
            )  # fmt: skip
            runs[name].append(round(word_task_accuracy(classifier, wordpiece, test, labels), 4))
    hits = fill_mask_hits(model, wordpiece)
    return {
        **setting,
        "test_sentences": len(test),
        "majority_class": round(majority, 4),
        "frozen_probe": round(frozen, 4),
        **runs,
        "fine_tuned_minus_scratch": [
            round(a - b, 4) for a, b in zip(runs["fine_tuned"], runs["from_scratch"], strict=True)
        ],
        "fill_mask_top5": {
            "hits": sum(hit for *_, hit in hits),
            "of": len(hits),
            "rows": [{"text": t, "word": w, "top5": top} for t, w, top, _ in hits],
        },
    }


def bert_english(directory: Path, device: torch.device, runs: Runs = NO_RUNS) -> dict:
    """Lecture 7's BERT: a 4-layer BERT pretrained with MLM and NSP on the English prose of
    ``course.data.english`` with ``BERT_ENGLISH``."""
    recipe = BERT_ENGLISH
    train, val = english_documents("train"), english_documents("val")
    wordpiece = bert_wordpiece(train, **recipe["vocab"])
    pairs = make_nsp_pairs(train, seed=SEED)
    held = recipe["heldout"]
    heldout_pairs = make_nsp_pairs(val, seed=held["seed"])[: held["pairs"]]
    config = {"config": asdict(BertConfig(vocab_size=len(wordpiece), **recipe["model"]))}
    torch.manual_seed(SEED)  # the initial weights
    model = BertForPreTraining(**config).to(device)
    common = recipe["training"]
    run = runs.file("bert_english", recipe, bert_english)
    history = resumable_fit(
        model,
        lambda m, batch: m.loss(batch),
        lambda: on_device(
            pretraining_batches(
                wordpiece, pairs, common["batch_size"], SEED, common["max_len"], common["mode"]
            ),
            device,
        ),
        steps=recipe["steps"],
        lr=recipe["lr"],
        clip_norm=common["clip_norm"],
        lr_schedule=linear_warmup_decay(recipe["warmup"], recipe["steps"]),
        run=run,
        desc="BERT",
    )
    training = fit_record(
        history,
        "course.train.fit with BertForPreTraining.loss on "
        "course.data.bert_inputs.pretraining_batches",
        "BertForPreTraining",
        {
            **common,
            "lr": recipe["lr"],
            "warmup": recipe["warmup"],
            "schedule": "course.train.linear_warmup_decay(warmup, steps)",
            "nsp_pairs": len(pairs),
        },
        device,
    )
    model.cpu()  # measured and saved on the CPU, as before
    text = "\n\n".join("\n".join(d) for d in train)
    metadata = save_checkpoint(
        model,
        "bert_english",
        config=config,
        vocab=wordpiece,
        training=training,
        corpus={
            "description": (
                "the sentences of every document of the 'train' split of course.data.english."
                "load_prose(source='all') (the World English Bible and the Python 3.11 "
                "documentation); NSP pairs from course.data.bert_inputs.make_nsp_pairs(seed=0); "
                "the vocabulary from the tokenizers library's WordPiece trainer on the same text"
            ),
            "documents": len(train),
            "sentences": sum(map(len, train)),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        },
        heldout_text="\n".join(f"{p.label}\t{p.a}\t{p.b}" for p in heldout_pairs),
        heldout_description=(
            f"the first {held['pairs']} NSP pairs of the 'val' split's documents "
            f"(make_nsp_pairs(seed={held['seed']})), one per line: label, sentence A, sentence B "
            "separated by tabs; masked by pretraining_batch with a generator seeded as recorded"
        ),
        description=(
            "A tiny BERT (4 layers, d 128, 4 heads, 4,000 WordPiece tokens) pretrained with MLM "
            "and NSP on the course's English prose for Lecture 7"
        ),
        command=REMAKE_COMMAND,
        directory=directory,
        heldout_figure=bert_heldout,
        evaluation={
            "batch_size": held["batch_size"],
            "seed": held["seed"],
            "max_len": common["max_len"],
        },
        figure_name="pretraining",
    )
    metadata["transfer"] = bert_transfer(model, wordpiece)
    path = Path(directory) / "bert_english.json"
    path.write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return metadata


# Lecture 8: a character-level GPT, and Units 1 and 2's recurrent models given the same
# budget: the same batches (32 windows of 256 characters of the English prose), the same number
# of steps and the same schedule (linear warm-up, then linear decay to 0). The LSTM is sized to
# the GPT (416 units: 886,704 parameters against the GPT's 848,640, 4% more), so that the race
# is fair in size too; the RNN keeps Lecture 1's 256 units. Learning rates from short runs (600
# steps of 32 windows of 128, the schedule scaled to them, one thread beside other work),
# held-out bits/char: GPT 2e-3 2.561, 4e-3 2.294 (about 500 ms/step); LSTM (416) 3e-3 2.406,
# 1e-2 2.110 (about 290 ms/step); the RNN's from the earlier 3,000-step recipe, 3e-3 1.964,
# 1e-2 1.945. Windows of 256 rather than 128 give the GPT the longer context that attention
# uses and a recurrent model cannot carry far, at twice the characters per step; the GPT's step
# on them costs 1,468 ms with PyTorch's fused attention kernel against 2,523 ms with the
# lecture's hand-written one (one thread), so the recipe trains it fused
# (course.models.transformer.fuse_attention), at 8e-3: at 1,200 steps of 32 windows of 128 the
# GPT reached 1.926 held-out bits/char with 8e-3 against 1.946 with 4e-3.
# Eight times the earlier budget in steps (3,000 of 16): 12,000 of 32.
# Sweeps of this recipe at 2,000 steps (the schedule scaled: warm-up 200), one thread each, two
# side by side (python -m tools.sweeps NAME VARIANT --steps 2000), held-out bits/char: GPT 1.675
# (AdamW with beta2 0.95 and weight decay 0.1 on the matrices, by hand: 1.670); a deeper GPT,
# num_layers=6,d_model=112 (960,512 parameters), 1.696; LSTM 1.697, and 1.800 at lr=5e-3. The
# GPT's lead over the LSTM grows with the budget: 0.022 at 2,000 steps, 0.071 at 6,000 (GPT
# 1.474, LSTM 1.545, RNN 1.779) and 0.134 at 12,000 (GPT 1.367, LSTM 1.500), each recipe's
# schedule decaying to 0 at its last step; neither the optimiser nor depth widened it at 2,000.
# At 12,000 steps the RNN's loss jumped at 1e-2 (from 1.46 to 2.06 nats around step 3,000) and
# ended at 1.916 held-out bits/char, worse than its 6,000-step run; at 3e-3, the other rate of its
# trial, it reaches 1.708, so the recipe gives it 3e-3.
# A step's cost, one thread, nothing else running: GPT 1,174 ms in float32, 929 ms under bf16
# autocast, 1,328 ms through torch.compile (after 53 s of compiling); LSTM 779 and 503 ms. Neither
# is used: compiling is slower here, and bf16's effect on the held-out figure is not measured.
CHAR_ENGLISH = {
    "training": {"batch_size": 32, "seq_len": 256, "steps": 12000, "warmup": 200, "clip_norm": 1.0},
    "models": {
        "char_gpt_english": {
            "class": "GPT",
            "config": {
                "max_len": 256,
                "d_model": 128,
                "num_layers": 4,
                "num_heads": 4,
                "d_ff": 512,
                "dropout": 0.0,
            },
            "lr": 8e-3,
        },
        "char_lstm_english": {
            "class": "CharLSTM",
            "config": {"hidden_size": 416, "embedding_dim": 64, "forget_bias": 1.0},
            "lr": 1e-2,
        },
        "char_rnn_english": {
            "class": "CharRNN",
            "config": {"hidden_size": 256, "embedding_dim": 64},
            "lr": 3e-3,
        },
    },
    # Held-out: the first 100,000 characters of the 'val' prose, cut into windows of 256 (+1)
    # characters; every model starts each window afresh, so all see the same context.
    "heldout": {"characters": 100_000, "window": 256, "batch_size": 16},
}


def char_english(name: str, directory: Path, device: torch.device, runs: Runs = NO_RUNS) -> dict:
    """One of Lecture 8's three character-level models of the English prose (``CHAR_ENGLISH``)."""
    recipe, spec = CHAR_ENGLISH, CHAR_ENGLISH["models"][name]
    common, held = recipe["training"], recipe["heldout"]
    train_text = prose_text("train")
    heldout_text = prose_text("val")[: held["characters"]]
    vocab = CharVocab.from_text(train_text)
    torch.manual_seed(SEED)  # the initial weights
    if spec["class"] == "GPT":
        config = {"config": asdict(GPTConfig(vocab_size=len(vocab), **spec["config"]))}
        model, loss = fuse_attention(GPT(**config)), GPT.loss  # fused while it trains
    else:
        config = {"vocab_size": len(vocab), **spec["config"]}
        model = {"CharLSTM": CharLSTM, "CharRNN": CharRNN}[spec["class"]](**config)
        loss = next_token_loss
    model.to(device)
    train_ids = vocab.encode(train_text)
    run = runs.file(name, {"training": common, "model": spec}, char_english)
    history = resumable_fit(
        model,
        loss,
        lambda: on_device(
            random_windows(train_ids, common["batch_size"], common["seq_len"], seed=SEED), device
        ),
        steps=common["steps"],
        lr=spec["lr"],
        clip_norm=common["clip_norm"],
        lr_schedule=linear_warmup_decay(common["warmup"], common["steps"]),
        run=run,
        desc=name,
    )
    training = fit_record(
        history,
        "course.train.fit on course.data.code.random_windows",
        spec["class"],
        {
            **common,
            "lr": spec["lr"],
            "schedule": "course.train.linear_warmup_decay(warmup, steps)",
        },
        device,
        in_bits=True,
    )
    model.cpu()  # measured and saved on the CPU, as before
    return save_checkpoint(
        model,
        name,
        config=config,
        vocab=vocab,
        training=training,
        corpus={
            "description": (
                "the 'train' split of course.data.english.prose_text(source='all') (the World "
                "English Bible and the Python 3.11 documentation), as one character stream"
            ),
            "characters": len(train_text),
            "sha256": hashlib.sha256(train_text.encode("utf-8")).hexdigest(),
        },
        heldout_text=heldout_text,
        heldout_description=(
            f"the first {held['characters']:,} characters of the 'val' split of the English "
            f"prose, scored in windows of {held['window']} characters, each started afresh"
        ),
        description=(
            f"A character-level {spec['class']} of the course's English prose, trained for "
            f"Lecture 8 with the same batches, steps and schedule as its two companions"
        ),
        command=REMAKE_COMMAND,
        directory=directory,
        evaluation={"window": held["window"], "batch_size": held["batch_size"]},
    )


# Lecture 8's in-context learning: a tiny GPT trained on course.data.key_value's sequences, each
# with a fresh random mapping of 4 keys to 10 values, 12 pairs long. The loss sits near 1.7 nats
# (copying some value shown earlier) for several hundred steps, then falls as the lookup forms;
# when it falls differs from seed to seed, so the recipe runs 5,000 steps, and Lecture 8's
# quality bar sits below the spread that key_value_spread() measures.
KEY_VALUE_GPT = {
    "task": {"num_keys": 4, "num_values": 10, "num_pairs": 12},
    "model": {"d_model": 64, "num_layers": 2, "num_heads": 4, "d_ff": 256, "dropout": 0.0},
    "training": {"batch_size": 32, "steps": 5000, "warmup": 100, "clip_norm": 1.0, "lr": 3e-3},
    "heldout": {"sequences": 1000, "seed": 1234},  # a generator seed the training never uses
    "curve_every": 50,  # the metadata keeps the mean loss of each 50 steps
}


def key_value_heldout(model: torch.nn.Module, metadata: dict, text: str) -> dict[str, float]:
    """The checkpoint's held-out figures: accuracy at the keys shown before in their sequence
    (queries) and at first showings, on the held-out sequences (one per line)."""
    task = KeyValueTask(**metadata["heldout"]["evaluation"]["task"])
    result = in_context_accuracy(model, read_key_value_lines(text, task), task)
    return {
        "query_accuracy": round(result.query_accuracy, 4),
        "first_accuracy": round(result.first_accuracy, 4),
    }


def train_key_value_gpt(
    seed: int = SEED,
    device: torch.device | None = None,
    *,
    steps: int | None = None,
    warmup: int | None = None,
):
    """``KEY_VALUE_GPT``'s model and run with ``seed`` for the initial weights and the batches:
    (model, history, config). The checkpoint is seed ``SEED``; other seeds measure the spread.
    ``steps`` and ``warmup`` replace the recipe's (Lecture 8's live run: 300 and 30)."""
    recipe, common = KEY_VALUE_GPT, KEY_VALUE_GPT["training"]
    steps, warmup = steps or common["steps"], warmup or common["warmup"]
    task = KeyValueTask(**recipe["task"])
    config = {"config": asdict(GPTConfig(len(task.vocab), task.seq_len, **recipe["model"]))}
    device = device or torch.device("cpu")
    torch.manual_seed(seed)  # the initial weights
    model = GPT(**config).to(device)
    history = fit(
        model,
        GPT.loss,
        on_device(key_value_batches(common["batch_size"], task, seed=seed), device),
        steps=steps,
        lr=common["lr"],
        clip_norm=common["clip_norm"],
        lr_schedule=linear_warmup_decay(warmup, steps),
        desc="key-value GPT",
    )
    return model.cpu(), history, config


def key_value_heldout_ids() -> torch.Tensor:
    """The held-out sequences (B, 2n) of ``KEY_VALUE_GPT``."""
    held = KEY_VALUE_GPT["heldout"]
    generator = torch.Generator().manual_seed(held["seed"])
    task = KeyValueTask(**KEY_VALUE_GPT["task"])
    return key_value_batch(held["sequences"], task, generator=generator)[0]


def key_value_spread(
    seeds: Iterable[int] = (0, 1, 2),
    threads: Iterable[int] = (1, 2),
    *,
    steps: int | None = None,
    warmup: int | None = None,
) -> dict:
    """Train ``KEY_VALUE_GPT`` (with ``steps`` and ``warmup`` if given) once per seed and
    thread count; print each run's held-out accuracy at queries and at new keys, the drop of
    its loss (first 50 steps' mean minus the last 50's), and the spread (max - min) of the
    query accuracy: how far a figure of this recipe moves between runs."""
    task = KeyValueTask(**KEY_VALUE_GPT["task"])
    ids = key_value_heldout_ids()
    figures = {}
    for n in threads:
        torch.set_num_threads(n)
        for seed in seeds:
            model, history, _ = train_key_value_gpt(seed, steps=steps, warmup=warmup)
            result = in_context_accuracy(model, ids, task)
            drop = statistics.fmean(history.losses[:50]) - statistics.fmean(history.losses[-50:])
            figures[(seed, n)] = (result.query_accuracy, result.first_accuracy)
            print(f"seed {seed}, {n} thread(s): query accuracy {result.query_accuracy:.4f} "
                  f"(a value drawn from those shown {result.query_any_shown:.4f}), new keys "
                  f"{result.first_accuracy:.4f}, loss drop {drop:.3f} ({history.seconds:.0f} s)",
                  flush=True)  # fmt: skip
    queries = [q for q, _ in figures.values()]
    print(f"query accuracy from {min(queries):.4f} to {max(queries):.4f}: "
          f"spread {max(queries) - min(queries):.4f}")  # fmt: skip
    return figures


def key_value_gpt(directory: Path, device: torch.device, runs: Runs = NO_RUNS) -> dict:
    """Lecture 8's in-context learner: a 2-layer GPT on the key-value task (``KEY_VALUE_GPT``)."""
    recipe = KEY_VALUE_GPT
    task = KeyValueTask(**recipe["task"])
    model, history, config = train_key_value_gpt(SEED, device)
    every = recipe["curve_every"]
    curve = [
        round(statistics.fmean(history.losses[i : i + every]), 4)
        for i in range(0, len(history.losses), every)
    ]
    training = fit_record(
        history,
        "course.train.fit with GPT.loss on course.data.key_value.key_value_batches",
        "GPT",
        {
            **recipe["training"],
            "schedule": "course.train.linear_warmup_decay(warmup, steps)",
            "loss_curve": {"every": every, "mean_loss_nats": curve},
        },
        device,
    )
    held = recipe["heldout"]
    return save_checkpoint(
        model,
        "key_value_gpt",
        config=config,
        vocab=task.vocab,
        training=training,
        corpus={
            "description": (
                "synthetic sequences of course.data.key_value.key_value_batches(seed=0): each "
                "a fresh random mapping of the keys to the values, then num_pairs pairs"
            ),
            "task": recipe["task"],
            "sequences": training["steps"] * recipe["training"]["batch_size"],
        },
        heldout_text=key_value_lines(key_value_heldout_ids(), task),
        heldout_description=(
            f"{held['sequences']} sequences of course.data.key_value.key_value_batch from a "
            f"generator seeded with {held['seed']}, one per line"
        ),
        description=(
            "A 2-layer GPT (d 64, 4 heads) trained on sequences of key-value pairs, each with "
            "its own random mapping, for Lecture 8's in-context learning"
        ),
        command=REMAKE_COMMAND,
        directory=directory,
        heldout_figure=key_value_heldout,
        evaluation={"task": recipe["task"], "seed": held["seed"]},
        figure_name="in_context",
    )


RECIPES: dict[str, Callable[[Path, torch.device, Runs], dict]] = {
    "char_lstm_stdlib": char_lstm_stdlib,
    "char_rnn_stdlib": char_rnn_stdlib,
    "bilm_english": bilm_english,
    "bert_english": bert_english,
    "key_value_gpt": key_value_gpt,
    **{
        name: (
            lambda directory, device, runs=NO_RUNS, name=name: char_english(
                name, directory, device, runs
            )
        )
        for name in CHAR_ENGLISH["models"]
    },
}


def heldout_figure(model: torch.nn.Module, metadata: dict, text: str) -> Any:
    """A checkpoint's held-out figure on ``text``, measured as its recipe measures it: BERT's
    pretraining figures, the biLM's perplexities, or a character model's bits per character."""
    heldout = metadata["heldout"]
    if heldout.get("figure") == "pretraining":
        return bert_heldout(model, metadata, text)
    if heldout.get("figure") == "in_context":
        return key_value_heldout(model, metadata, text)
    if "perplexity" in heldout:
        return bilm_heldout(model, metadata, text)
    return round(heldout_bits_per_char(model, metadata, text), 6)


def record_checks(directory: Path) -> list[str]:
    """Measure each checkpoint in ``directory`` on the start of its held-out text
    (:func:`course.checkpoints.check_text`) and record it as ``heldout.check``, which
    ``save_checkpoint`` writes for a checkpoint made since; the weights are not touched."""
    torch.set_num_threads(THREADS)
    lines = []
    for name in available_checkpoints(directory):
        model, metadata = load_checkpoint(name, directory)
        check = check_text(load_heldout_text(name, directory))
        key = heldout_key(metadata)
        with torch.no_grad():
            figure = heldout_figure(model, metadata, check)
        metadata["heldout"]["check"] = {"characters": len(check), key: figure}
        path = Path(directory) / f"{name}.json"
        path.write_text(json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        lines.append(f"{name}: {key} {figure} on the first {len(check):,} characters")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", action="append", choices=sorted(RECIPES), help="one checkpoint")
    parser.add_argument("--list", action="store_true", help="list the checkpoints and exit")
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR, help="output folder")
    parser.add_argument(
        "--device",
        default="cpu",
        help="where to train: cpu (the default), cuda or mps; checkpoints are saved on the CPU",
    )
    parser.add_argument(
        "--record-checks",
        action="store_true",
        help="measure each checkpoint in --out on the start of its held-out text, record it "
        "in its JSON (heldout.check, which the suite reproduces) and exit; trains nothing",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where runs are saved as they train, to be continued if stopped (default: "
        "$COURSE_RUNS_DIR, else the user's cache folder, ~/.cache/seqcourse/checkpoint-runs)",
    )
    parser.add_argument(
        "--save-every", type=int, default=500, help="steps between two saves of a run (500)"
    )
    parser.add_argument(
        "--no-resume", action="store_true", help="neither save runs nor continue saved ones"
    )
    args = parser.parse_args(argv)
    if args.save_every < 1:
        parser.error(f"--save-every: expected a positive number of steps, got {args.save_every}")
    if args.record_checks:
        print("\n".join(record_checks(args.out)))
        return 0
    if args.list:
        print("\n".join(sorted(RECIPES)))
        return 0
    try:  # before any data is read or any step taken
        device = training_device(args.device)
    except ValueError as error:
        parser.error(str(error))
    torch.set_num_threads(THREADS)
    folder = None if args.no_resume else (args.state_dir or default_state_dir())
    runs = Runs(folder, args.save_every)
    if folder is not None:
        print(f"[checkpoints] runs are saved every {runs.save_every} steps in {folder}", flush=True)
    for name in args.only or sorted(RECIPES):
        print(f"[checkpoints] training {name} on {device}", flush=True)
        start = time.perf_counter()
        metadata = RECIPES[name](args.out, device, runs)
        if runs.folder is not None:
            (runs.folder / f"{name}.pt").unlink(missing_ok=True)  # done: its checkpoint is saved
        size = (args.out / metadata["weights_file"]).stat().st_size
        key = heldout_key(metadata)
        figure = f"{key} {metadata['heldout'][key]}"
        print(
            f"[checkpoints] {name}: {metadata['training']['steps']} steps in "
            f"{time.perf_counter() - start:.0f} s, held-out {figure}, {size / 1e6:.2f} MB "
            f"-> {args.out / metadata['weights_file']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
