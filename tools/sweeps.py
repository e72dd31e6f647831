"""Short sweeps that choose a checkpoint recipe: ``python -m tools.sweeps MODEL VARIANT...``.

MODEL is ``bert``, ``bilm``, or one of Lecture 8's character models, ``char_gpt_english``,
``char_lstm_english`` or ``char_rnn_english``.

Each variant trains the recipe of ``tools.make_checkpoints`` with a few settings changed, for a
short fixed number of steps (its schedule scaled to them: warm-up a tenth, linear decay to 0),
on one CPU thread, and prints one JSON line: the settings, the tokens processed, the time per
step and the held-out figure, measured as the checkpoint's. Variants are ``key=value`` lists
joined by commas (``lr=2e-3,dropout=0``); ``base`` is the recipe unchanged.

    python -m tools.sweeps bert base dropout=0 lr=2e-3,dropout=0 --steps 500 >> sweep.jsonl

The sweeps behind each recipe, with their figures, are in its docstring in
``tools/make_checkpoints.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

import torch

from course.analysis.bert import heldout_batches
from course.analysis.elmo import heldout_perplexity
from course.analysis.lm import windowed_bits_per_char
from course.data.bert_inputs import make_nsp_pairs, pretraining_batches
from course.data.chars import CharVocab, random_windows
from course.data.words import WordVocab, token_windows
from course.models.bert import BertConfig, BertForPreTraining, evaluate_pretraining
from course.models.bilm import BiLM
from course.models.gpt import GPT, GPTConfig
from course.models.recurrent import CharLSTM, CharRNN
from course.models.transformer import fuse_attention
from course.train import fit, linear_warmup_decay, next_token_loss
from tools import make_checkpoints as mc

MODEL_KEYS = {"d_model", "num_layers", "num_heads", "d_ff", "dropout"}


def parse_variant(text: str) -> dict[str, float | int]:
    """``"lr=2e-3,dropout=0"`` as {"lr": 0.002, "dropout": 0}; ``"base"`` as {}."""
    if text == "base":
        return {}
    settings = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"variant {text!r}: expected key=value pairs joined by commas")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"variant {text!r}: {key} must be a number, got {value!r}") from None
        settings[key] = int(number) if number.is_integer() and "." not in value else number
    return settings


def _short_fit(model, loss, batches, steps: int, lr: float, clip_norm: float):
    """``fit`` for a sweep: ``steps`` steps, warm-up a tenth of them, then linear decay to 0."""
    return fit(model, loss, batches, steps=steps, lr=lr, clip_norm=clip_norm,
               lr_schedule=linear_warmup_decay(max(1, steps // 10), steps), progress=False)  # fmt: skip


def _window_run(settings, config, model, batch_size, seq_len, lr, history, unit: str) -> dict:
    """What a sweep of windows of ``unit`` (tokens, characters) reports before its figures."""
    return {
        "settings": settings,
        "model": config,
        "parameters": sum(p.numel() for p in model.parameters()),
        "batch_size": batch_size,
        "seq_len": seq_len,
        "lr": lr,
        "steps": history.steps,
        unit: history.steps * batch_size * seq_len,
        "ms_per_step": round(1000 * history.seconds / max(1, history.steps), 1),
    }


def bert_variant(settings: dict, steps: int) -> dict:
    """Train ``BERT_ENGLISH`` with ``settings`` changed for ``steps`` steps; its figures."""
    recipe = mc.BERT_ENGLISH
    unknown = set(settings) - MODEL_KEYS - {"lr", "batch_size"}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}")
    train, val = mc.english_documents("train"), mc.english_documents("val")
    wordpiece = mc.bert_wordpiece(train, **recipe["vocab"])
    pairs = make_nsp_pairs(train, seed=mc.SEED)
    held = recipe["heldout"]
    heldout_pairs = make_nsp_pairs(val, seed=held["seed"])[: held["pairs"]]
    model_settings = {**recipe["model"], **{k: v for k, v in settings.items() if k in MODEL_KEYS}}
    config = BertConfig(vocab_size=len(wordpiece), **model_settings)
    batch_size = int(settings.get("batch_size", recipe["training"]["batch_size"]))
    lr = float(settings.get("lr", recipe["lr"]))
    torch.manual_seed(mc.SEED)
    model = BertForPreTraining(config)
    common = recipe["training"]
    batches = pretraining_batches(
        wordpiece, pairs, batch_size, mc.SEED, common["max_len"], common["mode"]
    )
    history = _short_fit(
        model, lambda m, batch: m.loss(batch), batches, steps, lr, common["clip_norm"]
    )
    evaluation = heldout_batches(
        wordpiece, heldout_pairs, held["batch_size"], held["seed"], common["max_len"]
    )
    figures = evaluate_pretraining(model, evaluation)
    return {
        "settings": settings,
        "config": asdict(config),
        "batch_size": batch_size,
        "lr": lr,
        "steps": history.steps,
        "sequences": history.steps * batch_size,
        "ms_per_step": round(1000 * history.seconds / max(1, history.steps), 1),
        **{k: round(v, 4) for k, v in figures.items()},
        "final_loss": round(sum(history.losses[-50:]) / len(history.losses[-50:]), 4),
    }


BILM_MODEL_KEYS = {"dim", "num_layers"}


def bilm_variant(settings: dict, steps: int) -> dict:
    """Train ``BILM_ENGLISH`` with ``settings`` changed (``lr``, ``batch_size``, ``seq_len``,
    ``dim``, ``num_layers``) for ``steps`` steps; its held-out perplexity each way."""
    recipe = mc.BILM_ENGLISH
    unknown = set(settings) - BILM_MODEL_KEYS - {"lr", "batch_size", "seq_len"}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}")
    train, heldout = mc.english_sentences("train"), mc.english_sentences("val")
    vocab = WordVocab.build(train, **recipe["vocab"])
    common = recipe["training"]
    batch_size = int(settings.get("batch_size", common["batch_size"]))
    seq_len = int(settings.get("seq_len", common["seq_len"]))
    lr = float(settings.get("lr", recipe["lr"]))
    model_settings = {
        **recipe["model"],
        **{k: settings[k] for k in BILM_MODEL_KEYS & set(settings)},
    }
    torch.manual_seed(mc.SEED)
    model = BiLM(vocab_size=len(vocab), **model_settings)
    history = _short_fit(
        model,
        lambda m, words: m.lm_loss(words),
        token_windows(vocab.encode(train), batch_size, seq_len, seed=mc.SEED),
        steps,
        lr,
        common["clip_norm"],
    )
    with torch.no_grad():
        figures = heldout_perplexity(model, vocab, heldout)
    run = _window_run(settings, model_settings, model, batch_size, seq_len, lr, history, "tokens")
    return {**run, **{k: round(v, 2) for k, v in figures.items()}}


CHAR_MODEL_KEYS = {
    "GPT": {"d_model", "num_layers", "num_heads", "d_ff"},
    "CharLSTM": {"hidden_size", "embedding_dim"},
    "CharRNN": {"hidden_size", "embedding_dim"},
}


def char_variant(name: str, settings: dict, steps: int) -> dict:
    """Train Lecture 8's ``name`` (a model of ``CHAR_ENGLISH``) with ``settings`` changed
    (``lr``, ``batch_size``, ``seq_len`` and the model's sizes) for ``steps`` steps; its
    held-out bits/char, measured as the checkpoint's (the recipe's windows, each afresh). A
    GPT given another ``d_model`` and no ``d_ff`` keeps the recipe's ratio of the two."""
    recipe, spec = mc.CHAR_ENGLISH, mc.CHAR_ENGLISH["models"][name]
    common, held = recipe["training"], recipe["heldout"]
    keys = CHAR_MODEL_KEYS[spec["class"]]
    unknown = set(settings) - keys - {"lr", "batch_size", "seq_len"}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}")
    train_text = mc.prose_text("train")
    vocab = CharVocab.from_text(train_text)
    batch_size = int(settings.get("batch_size", common["batch_size"]))
    seq_len = int(settings.get("seq_len", common["seq_len"]))
    lr = float(settings.get("lr", spec["lr"]))
    config = {**spec["config"], **{k: int(settings[k]) for k in keys & set(settings)}}
    torch.manual_seed(mc.SEED)
    if spec["class"] == "GPT":
        if "d_model" in settings and "d_ff" not in settings:
            ratio = spec["config"]["d_ff"] // spec["config"]["d_model"]
            config["d_ff"] = ratio * config["d_model"]
        config["max_len"] = max(seq_len, held["window"])
        model = fuse_attention(GPT(config=GPTConfig(vocab_size=len(vocab), **config)))
        loss = GPT.loss
    else:
        model_class = {"CharLSTM": CharLSTM, "CharRNN": CharRNN}[spec["class"]]
        model, loss = model_class(len(vocab), **config), next_token_loss
    history = _short_fit(
        model,
        loss,
        random_windows(vocab.encode(train_text), batch_size, seq_len, seed=mc.SEED),
        steps,
        lr,
        common["clip_norm"],
    )
    heldout = vocab.encode(mc.prose_text("val")[: held["characters"]])
    bits = windowed_bits_per_char(
        model, heldout, window=held["window"], batch_size=held["batch_size"]
    )
    run = _window_run(settings, config, model, batch_size, seq_len, lr, history, "characters")
    return {**run, "bits_per_char": round(bits, 4)}


SWEEPS = {
    "bert": bert_variant,
    "bilm": bilm_variant,
    **{
        name: lambda settings, steps, name=name: char_variant(name, settings, steps)
        for name in mc.CHAR_ENGLISH["models"]
    },
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", choices=sorted(SWEEPS))
    parser.add_argument("variants", nargs="+", help="key=value,... or base")
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variants]
    except ValueError as error:
        parser.error(str(error))
    torch.set_num_threads(mc.THREADS)
    for settings in variants:
        start = time.perf_counter()
        result = SWEEPS[args.model](settings, args.steps)
        result["seconds"] = round(time.perf_counter() - start, 1)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
