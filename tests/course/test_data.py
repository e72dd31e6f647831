"""Tests for course.data.code: corpora, vocabulary and batching."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
import torch

from course.data import code as data
from course.data.chars import CharVocab, batch_windows
from course.data.code import (
    load_pydoc_topics,
    load_python_source,
    load_text_file,
    split_of_file,
    stdlib_source_files,
)
from tests.messages import raises


def test_stdlib_source_files_are_sorted_top_level_python_files():
    files = stdlib_source_files()
    root = Path(sysconfig.get_paths()["stdlib"])
    assert len(files) > 50
    assert files == sorted(files)
    assert all(f.suffix == ".py" and f.parent == root for f in files)


def test_split_of_file_is_deterministic_and_holds_out_about_one_file_in_ten():
    files = stdlib_source_files()
    splits = [split_of_file(f) for f in files]
    assert splits == [split_of_file(f.name) for f in files]  # depends on the name only
    held_out = splits.count("val") / len(splits)
    assert 0.03 < held_out < 0.25


def _names_with_split(split: str, count: int) -> list[str]:
    names = (f"m{i:03d}.py" for i in range(1000))
    return [n for n in names if split_of_file(n) == split][:count]


@pytest.fixture
def fake_stdlib(tmp_path, monkeypatch):
    """Four train files (one not UTF-8) and two val files, in a temporary folder."""
    train_names, val_names = _names_with_split("train", 4), _names_with_split("val", 2)
    contents = {}
    for name in train_names + val_names:
        contents[name] = f"# {name}\nx = 1"  # no final newline: the loader adds one
        (tmp_path / name).write_text(contents[name], encoding="utf-8")
    (tmp_path / train_names[1]).write_bytes(b"caf\xe9 = 1\n")  # Latin-1, not UTF-8
    files = sorted(tmp_path.glob("*.py"))
    monkeypatch.setattr(data, "stdlib_source_files", lambda: files)
    return train_names, val_names, contents


def test_load_python_source_reads_one_split_in_order_and_skips_bad_files(fake_stdlib):
    train_names, val_names, contents = fake_stdlib
    expected_train = "".join(contents[n] + "\n" for n in sorted(train_names) if n != train_names[1])
    expected_val = "".join(contents[n] + "\n" for n in sorted(val_names))
    assert load_python_source(max_chars=None, split="train") == expected_train
    assert load_python_source(max_chars=None, split="val") == expected_val
    assert load_python_source(max_chars=7, split="train") == expected_train[:7]


def test_load_python_source_real_corpus_is_deterministic_and_splits_differ():
    train = load_python_source(max_chars=5000, split="train")
    val = load_python_source(max_chars=5000, split="val")
    assert len(train) == len(val) == 5000
    assert train == load_python_source(max_chars=5000, split="train")
    assert train != val


def test_load_python_source_rejects_bad_arguments():
    with raises(ValueError, "split", "'val'", "'test'"):
        load_python_source(split="test")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_chars"):
        load_python_source(max_chars=0)


def test_load_pydoc_topics_is_english_text_about_python():
    text = load_pydoc_topics()
    assert len(text) > 100_000
    assert "assert" in text and "The " in text


def test_load_text_file_reads_utf8(tmp_path):
    path = tmp_path / "poem.txt"
    path.write_text("héllo\n", encoding="utf-8")
    assert load_text_file(path) == "héllo\n"
    assert load_text_file(str(path)) == "héllo\n"


def test_load_text_file_names_the_missing_path(tmp_path):
    missing = tmp_path / "nowhere" / "corpus.txt"
    with pytest.raises(FileNotFoundError, match="corpus.txt") as error:
        load_text_file(missing)
    assert str(missing) in str(error.value)


def test_char_vocab_orders_characters_and_reserves_id_zero():
    vocab = CharVocab.from_text("banana")
    assert vocab.chars == ("a", "b", "n")
    assert len(vocab) == 4  # three characters and the unknown id
    assert vocab.encode("abn").tolist() == [1, 2, 3]
    assert vocab.encode("banana").dtype == torch.long


def test_char_vocab_round_trip_and_unknown_characters():
    vocab = CharVocab.from_text("hello world")
    assert vocab.decode(vocab.encode("low world")) == "low world"
    ids = vocab.encode("hex!")
    assert ids.tolist()[2:] == [CharVocab.UNK_ID, CharVocab.UNK_ID]
    assert vocab.decode(ids) == "he" + CharVocab.UNK_CHAR * 2
    assert vocab.decode([1, 2]) == vocab.decode(torch.tensor([1, 2]))


def test_char_vocab_strict_encoding_names_the_unknown_characters():
    vocab = CharVocab.from_text("abc")
    with pytest.raises(KeyError, match="'xz'"):
        vocab.encode("axbz", strict=True)


def test_char_vocab_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        CharVocab.from_text("")
    with pytest.raises(TypeError, match="expected a str, got list"):
        CharVocab.from_text(["a"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="distinct single characters"):
        CharVocab(("a", "a"))
    vocab = CharVocab.from_text("ab")
    with pytest.raises(TypeError, match="expected a str, got bytes"):
        vocab.encode(b"ab")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"id 7 is outside the vocabulary \[0, 3\)"):
        vocab.decode([1, 7])
    with pytest.raises(ValueError, match=r"expected 1 dimensions \(\*,\), got 2 dimensions"):
        vocab.decode(torch.ones(2, 2, dtype=torch.long))
    with raises(TypeError, "ids", "integer", "float32"):
        vocab.decode(torch.ones(2))


def test_batch_windows_gives_inputs_and_targets_shifted_by_one():
    ids = torch.arange(100)
    g = torch.Generator().manual_seed(0)
    x, y = batch_windows(ids, batch_size=5, seq_len=8, generator=g)
    assert x.shape == y.shape == (5, 8)
    assert x.dtype == y.dtype == torch.long
    assert torch.equal(y, x + 1)  # ids are consecutive integers
    assert torch.equal(x[:, 1:], x[:, :-1] + 1)  # contiguous windows
    assert int(y.max()) <= 99


def test_batch_windows_is_reproducible_with_a_seeded_generator():
    ids = torch.randint(0, 10, (500,), generator=torch.Generator().manual_seed(1))
    first = batch_windows(ids, 4, 16, torch.Generator().manual_seed(3))
    second = batch_windows(ids, 4, 16, torch.Generator().manual_seed(3))
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))


def test_batch_windows_works_with_the_shortest_possible_stream():
    x, y = batch_windows(torch.tensor([4, 5, 6]), batch_size=2, seq_len=2)
    assert x.tolist() == [[4, 5], [4, 5]] and y.tolist() == [[5, 6], [5, 6]]


def test_batch_windows_rejects_bad_input():
    with raises(ValueError, "ids", r"seq_len \+ 1 = 11", "got 10"):
        batch_windows(torch.arange(10), 2, 10)
    with raises(ValueError, "ids", r"1 dimensions \(N,\)", r"\(2, 5\)"):
        batch_windows(torch.zeros(2, 5, dtype=torch.long), 2, 3)
    with raises(TypeError, "ids", "integer", "float32"):
        batch_windows(torch.zeros(50), 2, 3)
    with pytest.raises(ValueError, match="must be >= 1"):
        batch_windows(torch.arange(50), 0, 3)


def test_the_characters_module_is_what_the_corpora_module_names():
    """Characters and windows live in course.data.chars; course.data.code names the same
    objects, as the checkpoints' metadata ("course.data.code.random_windows") does."""
    from course.data import chars, code

    for name in chars.__all__:
        assert getattr(code, name) is getattr(chars, name), name
