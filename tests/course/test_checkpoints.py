"""Tests for course.checkpoints and the shipped course-trained checkpoints."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest
import torch

import course.checkpoints as ckpt
from course.checkpoints import (
    CHECKPOINT_DIR,
    METADATA_KEYS,
    NESTED_KEYS,
    CheckpointError,
    StaleCheckpointError,
    available_checkpoints,
    check_text,
    checkpoint_vocab,
    heldout_bits_per_char,
    heldout_key,
    load_checkpoint,
    load_heldout_text,
    model_code_sha256,
    read_metadata,
    save_checkpoint,
)
from course.data.chars import CharVocab
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece
from course.models.bert import BertConfig, BertForPreTraining
from course.models.recurrent import CharLSTM, CharRNN
from tests.messages import raises
from tools.make_checkpoints import RECIPES, bert_heldout, heldout_figure, record_checks

REPO = Path(__file__).resolve().parents[2]
SHIPPED = available_checkpoints()
# How far Lecture 2's stdlib recipes move between seeds 0, 1, 2 (held-out bits/char; the LSTM
# 1.8109-1.8635, the RNN 1.9405-1.9620), measured with
# python -c "from tools.make_checkpoints import stdlib_spread; stdlib_spread()"
STDLIB_SEED_SPREAD = 0.0526


def test_the_course_ships_every_checkpoint_that_make_checkpoints_makes():
    assert SHIPPED == sorted(RECIPES) and SHIPPED, f"shipped {SHIPPED}, recipes {sorted(RECIPES)}"
    makefile = (REPO / "Makefile").read_text()
    target = re.search(r"^checkpoints:.*\n\t(.+)$", makefile, re.M)
    assert target and "-m tools.make_checkpoints" in target.group(1)
    default_goal = re.search(r"^all:.*$", makefile, re.M).group(0)
    assert "checkpoints" not in default_goal, "make checkpoints must not be part of make"


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_checkpoint_loads_and_reproduces_its_heldout_figure(name, one_thread):
    """On the start of its held-out text (check_text), recorded when it was made: the whole
    text takes up to a minute for the biLM and BERT, and the same weights and code give the
    same figures on any part of it."""
    model, meta = load_checkpoint(name)
    assert type(model).__name__ == meta["model"]["class"] and not model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    text = check_text(load_heldout_text(name))
    check = meta["heldout"]["check"]
    assert check["characters"] == len(text) < len(load_heldout_text(name)) / 5
    key = heldout_key(meta)
    with torch.no_grad():  # the same figures, without keeping a graph for the backward pass
        measured = heldout_figure(model, meta, text)
    if key == "bits_per_char":
        assert measured == pytest.approx(check[key], abs=2e-3), (name, measured, check[key])
    elif key == "perplexity":
        assert measured == pytest.approx(check[key], rel=1e-3), (name, measured, check[key])
    elif key == "in_context":  # accuracy at keys shown before in the sequence, and at new keys
        assert measured == pytest.approx(check[key], abs=2e-3), (name, measured, check[key])
        recorded = meta["heldout"][key]  # on the whole held-out text: Lecture 8's quality bar
        assert recorded["query_accuracy"] > 0.65 > 0.2 > recorded["first_accuracy"], recorded
    else:  # a BERT: MLM and NSP on held-out pairs
        assert measured == pytest.approx(check[key], abs=1e-3), (name, measured, check[key])


def test_the_check_text_is_the_first_tenth_to_the_end_of_a_line():
    text = "".join(f"line {i}\n" for i in range(100))  # 690 characters
    part = check_text(text)
    assert part.endswith("\n") and text.startswith(part)
    assert len(text) // 10 <= len(part) < len(text) // 10 + len("line 99\n")
    assert check_text("no newline at all") == "no newline at all"
    assert check_text("") == ""


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_checkpoints_metadata_is_complete(name):
    meta = read_metadata(name)
    for key, kind in METADATA_KEYS.items():
        assert isinstance(meta[key], kind), key
    for key, subkeys in NESTED_KEYS.items():
        assert set(subkeys) <= set(meta[key]), (key, set(subkeys) - set(meta[key]))
    training = meta["training"]
    assert isinstance(training["steps"], int) and training["steps"] > 0
    assert isinstance(training["seed"], int)
    assert training["stopped_by"] == "steps", "a checkpoint trains for its fixed step count"
    assert meta["command"] == "make checkpoints" and meta["name"] == name
    assert meta["model"]["code_sha256"] == model_code_sha256(meta["model"]["module"])
    assert (REPO / meta["model"]["source_file"]).is_file()
    assert meta["torch"] == torch.__version__
    config = meta["model"]["config"]
    vocab_size = config["config"]["vocab_size"] if "config" in config else config["vocab_size"]
    assert len(checkpoint_vocab(meta)) == vocab_size
    assert meta["heldout"]["characters"] == len(load_heldout_text(name))


def test_the_bert_checkpoint_meets_the_bars_lecture_7_relies_on():
    # What its metadata records (tools.make_checkpoints.bert_transfer): the checkpoint is
    # remade by `make checkpoints`; a recipe that no longer gets there must not ship.
    meta = read_metadata("bert_english")
    assert meta["heldout"]["pretraining"]["mlm_accuracy"] >= 0.33
    transfer = meta["transfer"]
    assert len(transfer["seeds"]) == 3
    assert min(transfer["fine_tuned_minus_scratch"]) >= 0.10, transfer  # on every seed
    gains = [a - b for a, b in zip(transfer["fine_tuned"], transfer["from_scratch"], strict=True)]
    assert gains == pytest.approx(transfer["fine_tuned_minus_scratch"], abs=1e-4)
    assert transfer["frozen_probe"] >= transfer["majority_class"] + 0.20, transfer
    fill = transfer["fill_mask_top5"]
    assert fill["hits"] > fill["of"] / 2, fill  # the hidden word among the top 5 in most
    assert fill["hits"] == sum(r["word"] in r["top5"] for r in fill["rows"])


def test_the_bilm_checkpoint_beats_the_trigram_by_the_bar_lecture_3_relies_on():
    # Both directions at least 3 below an interpolated Kneser-Ney trigram of the same words on
    # the same held-out split (recorded by tools.make_checkpoints.record_bilm_baseline).
    meta = read_metadata("bilm_english")
    trigram = meta["baselines"]["kneser_ney_trigram"]
    for direction in ("forward", "backward"):
        assert meta["heldout"]["perplexity"][direction] <= trigram[direction] - 3, (meta, trigram)


def test_lecture_2s_lstm_checkpoint_beats_a_plain_rnn_of_its_size_trained_the_same_way():
    lstm, rnn = read_metadata("char_lstm_stdlib"), read_metadata("char_rnn_stdlib")
    # within 2.5% of each other's parameters, on the same text, windows, steps and phase seeds
    ratio = rnn["model"]["parameters"] / lstm["model"]["parameters"]
    assert abs(ratio - 1) < 0.025, ratio
    assert rnn["corpus"]["sha256"] == lstm["corpus"]["sha256"]
    assert rnn["heldout"]["sha256"] == lstm["heldout"]["sha256"]
    for key in ("steps", "batch_size", "seq_len", "clip_norm", "optimizer", "seed"):
        assert rnn["training"][key] == lstm["training"][key], key
    steps_and_seeds = [
        [(p["steps"], p["seed"]) for p in m["training"]["phases"]] for m in (lstm, rnn)
    ]
    assert steps_and_seeds[0] == steps_and_seeds[1]
    # ahead by more than either recipe moves between seeds (Lecture 2's SEED_FIGURES)
    lead = rnn["heldout"]["bits_per_char"] - lstm["heldout"]["bits_per_char"]
    assert lead > STDLIB_SEED_SPREAD, lead


def test_the_char_gpt_beats_a_recurrent_model_of_its_size_as_lecture_8_says():
    gpt, lstm = read_metadata("char_gpt_english"), read_metadata("char_lstm_english")
    rnn = read_metadata("char_rnn_english")
    assert gpt["heldout"]["bits_per_char"] <= 1.60
    # ahead of an LSTM of its size by at least a tenth of a bit per character, far more than the
    # checkpoints' spread between processors (0.02, the measurements page): Lecture 8 records
    # the same comparison with that margin; the RNN behind both
    assert gpt["heldout"]["bits_per_char"] < lstm["heldout"]["bits_per_char"] - 0.10
    assert lstm["heldout"]["bits_per_char"] < rnn["heldout"]["bits_per_char"] - 0.02
    # the LSTM within 15% of the GPT's parameters (the GPT's metadata counts its tied output
    # matrix twice: the model's own count is what the comparison is about)
    gpt_model, _ = load_checkpoint("char_gpt_english")
    lstm_model, _ = load_checkpoint("char_lstm_english")
    sizes = [sum(p.numel() for p in m.parameters()) for m in (gpt_model, lstm_model)]
    assert abs(sizes[1] / sizes[0] - 1) <= 0.15, sizes
    # trained on the same batches, steps and schedule
    same = ("batch_size", "seq_len", "steps", "warmup", "schedule", "clip_norm", "seed")
    recipes = [{k: meta["training"][k] for k in same} for meta in (gpt, lstm, rnn)]
    assert recipes[0] == recipes[1] == recipes[2], recipes
    assert len({meta["heldout"]["sha256"] for meta in (gpt, lstm, rnn)}) == 1, "one held-out text"


def test_checkpoints_are_small_and_ship_in_the_package():
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["*"]
    files = [p for p in CHECKPOINT_DIR.iterdir() if p.is_file() and p.suffix != ".py"]
    for file in files:
        assert any(fnmatch.fnmatch(file.name, pattern) for pattern in patterns), (
            f"{file.name} is not package data, so the wheel would not ship it"
        )
    sizes = {p.name: p.stat().st_size for p in files}
    assert all(size < 8e6 for size in sizes.values()), sizes
    assert sum(sizes.values()) < 30e6, sizes
    assert (CHECKPOINT_DIR / "README.md").is_file(), "state the source and licence of the data"


def _copy(name: str, folder: Path) -> Path:
    for file in CHECKPOINT_DIR.glob(f"{name}.*"):
        shutil.copy(file, folder / file.name)
    return folder


@pytest.mark.parametrize("name", SHIPPED)
def test_loading_refuses_a_checkpoint_whose_model_code_changed(monkeypatch, name):
    module = read_metadata(name)["model"]["module"]
    original = ckpt.model_source(module)
    edited = original + "\nEDITED = True  # a change to the model's module\n"
    assert edited != original
    monkeypatch.setattr(ckpt, "model_source", lambda m: edited if m == module else original)
    with pytest.raises(StaleCheckpointError) as error:
        load_checkpoint(name)
    message = str(error.value)
    assert name in message and module.replace(".", "/") + ".py" in message
    assert "make checkpoints" in message


def test_the_code_hash_ignores_line_endings_blank_lines_and_comments(monkeypatch):
    module = "course.models.recurrent"
    original = ckpt.model_source(module)
    today = model_code_sha256(module)
    windows = original.replace("\n", "\r\n").replace("\r\n\r\n", "\r\n  \r\n# a note\r\n\r\n")
    monkeypatch.setattr(ckpt, "model_source", lambda m: windows)
    assert model_code_sha256(module) == today
    monkeypatch.setattr(ckpt, "model_source", lambda m: original + "\nEXTRA = 1\n")
    assert model_code_sha256(module) != today


@pytest.mark.parametrize("suffix, what", [(".pt", "weights file"), (".heldout.txt.gz", "held-out")])
def test_a_missing_file_names_itself_and_the_command(tmp_path, suffix, what):
    name = SHIPPED[0]
    folder = _copy(name, tmp_path)
    (folder / f"{name}{suffix}").unlink()
    load = load_checkpoint if suffix == ".pt" else load_heldout_text
    with pytest.raises(FileNotFoundError, match=f"{name}{re.escape(suffix)}") as error:
        load(name, folder)
    assert what in str(error.value) and "make checkpoints" in str(error.value)


def test_a_missing_metadata_file_lists_the_available_checkpoints(tmp_path):
    folder = _copy(SHIPPED[0], tmp_path)
    with pytest.raises(FileNotFoundError, match="no metadata file nope.json") as error:
        load_checkpoint("nope", folder)
    assert SHIPPED[0] in str(error.value) and "make checkpoints" in str(error.value)
    with pytest.raises(ValueError, match="checkpoint name"):
        load_checkpoint("../etc/passwd")


@pytest.mark.parametrize("name", SHIPPED)
def test_corrupt_files_give_a_clear_error(tmp_path, name):
    folder = _copy(name, tmp_path)
    weights = folder / f"{name}.pt"
    good = weights.read_bytes()

    weights.write_bytes(good[: len(good) // 2])  # truncated
    with pytest.raises(CheckpointError, match=f"{name}.pt is corrupt.*SHA-256"):
        load_checkpoint(name, folder)

    garbage = b"not a torch archive" * 10  # consistent hash, but unreadable
    weights.write_bytes(garbage)
    meta_file = folder / f"{name}.json"
    meta = json.loads(meta_file.read_text())
    meta["weights_sha256"] = ckpt._sha256(garbage)
    meta_file.write_text(json.dumps(meta))
    with raises(CheckpointError, f"{name}.pt", "corrupt", "torch.load"):
        load_checkpoint(name, folder)

    figure = meta["heldout"].get(
        "figure", "perplexity" if "perplexity" in meta["heldout"] else "bits_per_char"
    )
    del meta["heldout"][figure]
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=f"missing or malformed entries: heldout.{figure}"):
        load_checkpoint(name, folder)

    meta_file.write_text('{"name": ')
    with raises(CheckpointError, f"{name}.json", "corrupt", "not valid JSON"):
        load_checkpoint(name, folder)

    (folder / f"{name}.heldout.txt.gz").write_bytes(b"\x1f\x8b garbage")
    shutil.copy(CHECKPOINT_DIR / f"{name}.json", meta_file)
    with pytest.raises(CheckpointError, match="heldout.txt.gz is corrupt"):
        load_heldout_text(name, folder)


def _tiny(tmp_path, model=None, **overrides):
    vocab = CharVocab.from_text("def f(x):\n    return 'x'  # y\n")
    torch.manual_seed(0)
    config = {"vocab_size": len(vocab), "hidden_size": 6, "embedding_dim": 4}
    model = model or CharLSTM(**config)
    arguments = dict(
        config=config,
        vocab=vocab,
        training={"function": "none", "steps": 0, "seed": 0},
        corpus={"description": "a test"},
        heldout_text="def g(y):\n    return [y]\n",
        heldout_description="a test",
        description="a tiny model",
        directory=tmp_path,
    )
    return model, save_checkpoint(model, "tiny", **(arguments | overrides))


def test_save_then_load_gives_back_the_same_model(tmp_path):
    model, saved = _tiny(tmp_path)
    loaded, meta = load_checkpoint("tiny", tmp_path)
    assert meta == saved and available_checkpoints(tmp_path) == ["tiny"]
    ids = checkpoint_vocab(meta).encode("return x")[None, :]  # (1, T)
    model.eval()
    assert torch.equal(loaded(ids)[0], model(ids)[0])
    text = load_heldout_text("tiny", tmp_path)
    figure = heldout_bits_per_char(loaded, meta, text)
    assert figure == pytest.approx(meta["heldout"]["bits_per_char"], abs=1e-5)
    part = check_text(text)
    assert meta["heldout"]["check"]["characters"] == len(part) < len(text)
    measured = heldout_bits_per_char(loaded, meta, part)
    assert meta["heldout"]["check"]["bits_per_char"] == pytest.approx(measured, abs=1e-5)


def test_record_checks_measures_the_start_of_the_heldout_text_again(tmp_path, one_thread):
    _, saved = _tiny(
        tmp_path, heldout_text="".join(f"def f{i}(x):\n    return x\n" for i in range(30))
    )
    path = tmp_path / "tiny.json"
    meta = json.loads(path.read_text())
    meta["heldout"]["check"] = {"characters": 1, "bits_per_char": 99.0}  # a wrong record
    path.write_text(json.dumps(meta))
    record_checks(tmp_path)
    assert read_metadata("tiny", tmp_path) == saved
    del meta["heldout"]["check"]  # a checkpoint made before checks were recorded
    path.write_text(json.dumps(meta))
    assert record_checks(tmp_path) == [
        f"tiny: bits_per_char {saved['heldout']['check']['bits_per_char']} on the first "
        f"{saved['heldout']['check']['characters']:,} characters"
    ]
    assert read_metadata("tiny", tmp_path) == saved


def test_save_refuses_a_config_that_does_not_rebuild_the_model(tmp_path):
    vocab_size = len(CharVocab.from_text("def f(x):\n    return 'x'  # y\n"))
    for other in (CharRNN(vocab_size, 7, embedding_dim=4), CharLSTM(vocab_size, 7)):
        with pytest.raises(ValueError, match="does not rebuild this model"):
            _tiny(tmp_path, model=other)
    with pytest.raises(ValueError, match="'steps'"):
        _tiny(tmp_path, training={"seed": 0})


def test_a_wordpiece_model_saves_its_vocabulary_and_its_named_figure(tmp_path, one_thread):
    vocab = WordPiece([*SPECIAL_TOKENS, "the", "god", "said", "##s", "light", "a", "b", "##a"])
    config = {"config": {**BertConfig(len(vocab), 16, 1, 2, 32, 32).__dict__}}
    torch.manual_seed(0)
    model = BertForPreTraining(**config)
    text = "0\tthe god said\tthe light\n1\tgod said a\tb the\n0\tlight\tthe gods"
    saved = save_checkpoint(
        model,
        "tiny_bert",
        config=config,
        vocab=vocab,
        training={"function": "none", "steps": 0, "seed": 0},
        corpus={"description": "a test"},
        heldout_text=text,
        heldout_description="a test",
        description="a tiny BERT",
        directory=tmp_path,
        heldout_figure=bert_heldout,
        evaluation={"batch_size": 2, "seed": 0, "max_len": 16},
        figure_name="pretraining",
    )
    loaded, meta = load_checkpoint("tiny_bert", tmp_path)
    assert meta == saved and meta["tokenizer"] == "wordpiece"
    assert checkpoint_vocab(meta).vocab == vocab.vocab
    assert set(meta["heldout"]["pretraining"]) >= {"mlm_accuracy", "nsp_accuracy"}
    assert bert_heldout(loaded, meta, text) == meta["heldout"]["pretraining"]
    del meta["heldout"]["pretraining"]
    (tmp_path / "tiny_bert.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="heldout.pretraining"):
        read_metadata("tiny_bert", tmp_path)
