"""Tests for course.data.english (the shipped English corpora) and tools.prepare_corpora."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import struct
import zlib
from collections import Counter
from pathlib import Path

import pytest

from course.data import english
from course.data.english import (
    POS_LABELS,
    PROSE_FILES,
    PROSE_SOURCES,
    REBUILD_COMMAND,
    SPLITS,
    SUPERSENSE_LABELS,
    WORDNET_FILE,
    CorpusFileError,
    CorruptCorpusFileError,
    MissingCorpusFileError,
    load_prose,
    load_tagging_task,
    majority_baseline,
    prose_text,
    task_labels,
)
from tools import prepare_corpora as prep

SHIPPED = Path(english.__file__).parent / "files"
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@pytest.fixture(scope="module")
def prose() -> dict[str, dict[str, list[english.Document]]]:
    return {src: {s: load_prose(s, src) for s in SPLITS} for src in PROSE_SOURCES}


@pytest.fixture(scope="module")
def tasks() -> dict[str, dict[str, list[english.Example]]]:
    return {task: {s: load_tagging_task(task, s) for s in SPLITS} for task in english.TASKS}


def _raw_records(name: str) -> list[dict]:
    with gzip.open(SHIPPED / name, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


# ----------------------------------------------------------------------------------------------
# The shipped prose


def test_prose_has_at_least_a_million_words(prose):
    words = {}
    for src, splits in prose.items():
        sentences = [sent for split in SPLITS for d in splits[split] for sent in d.sentences]
        words[src] = sum(len(WORD.findall(sent)) for sent in sentences)
    assert sum(words.values()) >= 1_000_000, words
    assert all(count >= 500_000 for count in words.values()), words


def test_prose_splits_partition_the_documents(prose):
    for src, splits in prose.items():
        ids = {s: [d.id for d in splits[s]] for s in SPLITS}
        assert all(ids[s] for s in SPLITS), f"{src}: an empty split"
        assert all(len(set(v)) == len(v) for v in ids.values()), f"{src}: a repeated id"
        assert not set(ids["train"]) & set(ids["val"]), src
        assert not set(ids["train"]) & set(ids["test"]), src
        assert not set(ids["val"]) & set(ids["test"]), src
        every = [r["id"] for r in _raw_records(PROSE_FILES[src])]
        assert sorted(every) == sorted(i for s in SPLITS for i in ids[s])
        # about 80/10/10 by document
        assert 0.7 < len(ids["train"]) / len(every) < 0.9, src


def test_prose_splits_come_from_the_stable_hash(prose):
    for src, splits in prose.items():
        for split, docs in splits.items():
            assert all(prep.split_of(d.id) == split for d in docs), (src, split)


def test_prose_keeps_document_order(prose):
    web = [d.id for d in prose["web"]["train"]]
    books = list(dict.fromkeys(i.split("/")[1].rsplit(".", 1)[0] for i in web))
    assert books[:3] == ["Gen", "Exod", "Lev"] and books[-1] == "Rev"
    for earlier, later in zip(web, web[1:], strict=False):
        book_a, chapter_a = earlier.split("/")[1].rsplit(".", 1)
        book_b, chapter_b = later.split("/")[1].rsplit(".", 1)
        if book_a == book_b:
            assert int(chapter_a) < int(chapter_b), (earlier, later)
    pages = [d.id for d in prose["pydocs"]["train"]]
    assert pages == sorted(pages)


def test_prose_documents_hold_clean_sentences(prose):
    docs = [d for splits in prose.values() for s in SPLITS for d in splits[s]]
    for doc in docs:
        assert doc.title and doc.paragraphs and doc.source in PROSE_SOURCES
        for sentence in doc.sentences:
            assert sentence == sentence.strip() and "  " not in sentence and "\n" not in sentence
            assert "<" not in sentence or doc.source == "pydocs", (doc.id, sentence)
    genesis = next(d for splits in prose["web"].values() for d in splits if d.id == "web/Gen.1")
    assert genesis.title == "Genesis 1"
    assert genesis.sentences[0] == "In the beginning, God created the heavens and the earth."
    # reST markup and code are gone from the Python documentation
    text = " ".join(
        sent for split in SPLITS for d in prose["pydocs"][split] for sent in d.sentences
    )
    for leftover in (":func:`", "``", ".. code-block::", ".. versionadded::", ".. _"):
        assert leftover not in text, leftover


def test_prose_text_joins_documents_paragraphs_and_sentences(prose):
    text = prose_text("val", "web")
    docs = prose["web"]["val"]
    assert text.split("\n\n")[0] == "\n".join(" ".join(p) for p in docs[0].paragraphs)
    assert text.count("\n\n") == len(docs) - 1
    both = prose_text("test")
    assert both.startswith(docs_text(prose["web"]["test"][:1]))
    assert both.endswith(docs_text(prose["pydocs"]["test"][-1:]))


def docs_text(docs: list[english.Document]) -> str:
    return "\n\n".join(d.text for d in docs)


def test_prose_rejects_unknown_split_and_source():
    with pytest.raises(ValueError, match="split"):
        load_prose("validation")
    with pytest.raises(ValueError, match="source"):
        load_prose("train", "wiki")


# ----------------------------------------------------------------------------------------------
# The shipped labelled tasks


def test_tasks_have_fixed_label_sets():
    assert task_labels("pos") == ("noun", "verb", "adj", "adv")
    assert len(task_labels("supersense")) == 41
    assert sum(x.startswith("noun.") for x in SUPERSENSE_LABELS) == 26
    with pytest.raises(ValueError, match="task"):
        task_labels("ner")


def test_task_examples_are_labelled_from_the_label_set(tasks):
    for task, splits in tasks.items():
        for split, examples in splits.items():
            assert len(examples) > 1000, (task, split)
            labels = task_labels(task)
            assert all(ex.label in labels for ex in examples)
            key = "pos" if task == "pos" else "supersense"
            assert all(ex.label == getattr(ex, key) for ex in examples)
    # the semantic task is the nouns and verbs of the syntactic one
    for split in SPLITS:
        nouns_verbs = [ex for ex in tasks["pos"][split] if ex.pos in ("noun", "verb")]
        assert len(nouns_verbs) == len(tasks["supersense"][split])
        assert all(ex.supersense.split(".")[0] == ex.pos for ex in nouns_verbs)
    assert {ex.label for ex in tasks["pos"]["train"]} == set(POS_LABELS)


def test_task_splits_are_disjoint_by_lemma(tasks):
    for task, splits in tasks.items():
        lemmas = {s: {ex.lemma for ex in splits[s]} for s in SPLITS}
        assert not lemmas["train"] & lemmas["test"], task
        assert not lemmas["train"] & lemmas["val"], task
        assert not lemmas["val"] & lemmas["test"], task
        assert all(prep.split_of(ex.lemma) == s for s in SPLITS for ex in splits[s])
        items = [(ex.tokens, ex.target) for s in SPLITS for ex in splits[s]]
        assert len(items) == len(set(items)), f"{task}: a repeated sentence and target"


# Suppletive forms that share no letter pattern with their lemma.
_SUPPLETIVE = {"went": "go", "is": "be", "was": "be", "were": "be", "are": "be", "am": "be"}


def test_every_target_index_points_at_the_target_word(tasks):
    no_exceptions = {pos: {} for pos in POS_LABELS}
    irregular = 0
    examples = [ex for s in SPLITS for ex in tasks["pos"][s]]
    for ex in examples:
        assert 0 <= ex.target < len(ex.tokens)
        word = ex.tokens[ex.target].lower()
        assert ex.word == ex.tokens[ex.target] and re.search(r"[a-z]", word), ex
        if ex.lemma in prep.base_forms(word, ex.pos, no_exceptions):
            continue
        irregular += 1  # from WordNet's exception lists: "threw" -> "throw", "feet" -> "foot"
        assert word[0] == ex.lemma[0] or _SUPPLETIVE.get(word) == ex.lemma, (word, ex.lemma)
    assert irregular < 0.03 * len(examples)
    # the marked word is the first matching token of the sentence
    dogs = [ex for ex in examples if ex.lemma == "dog" and ex.pos == "noun"]
    assert dogs and all(ex.word.lower() in ("dog", "dogs") for ex in dogs)


def test_majority_baselines_are_the_bar_to_beat(tasks):
    for task, splits in tasks.items():
        counts = Counter(ex.label for ex in splits["train"])
        label, accuracy = majority_baseline(task, "test")
        assert counts[label] == max(counts.values())
        test = splits["test"]
        assert accuracy == pytest.approx(sum(ex.label == label for ex in test) / len(test))
        assert accuracy < (0.5 if task == "pos" else 0.15), (task, label, accuracy)
        assert accuracy > 1 / len(task_labels(task)), (task, label, accuracy)


def test_readme_counts_match_the_shipped_files(tasks, prose):
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    for task, splits in tasks.items():
        section = readme.split(f"**{task}**", 1)[1]
        for label in task_labels(task):
            row = re.search(rf"^\| {re.escape(label)} \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|$",
                            section, flags=re.M)  # fmt: skip
            assert row, (task, label)
            stated = [int(x.replace(",", "")) for x in row.groups()]
            assert stated == [sum(ex.label == label for ex in splits[s]) for s in SPLITS]
    for src, splits in prose.items():
        for split in SPLITS:
            row = re.search(rf"^\| {src} \| {split} \| ([\d,]+) \|", readme, flags=re.M)
            assert row and int(row.group(1).replace(",", "")) == len(splits[split])
    for name in (*PROSE_FILES.values(), WORDNET_FILE):
        assert name in readme
    for notice in ("LICENSE-WordNet.txt", "LICENSE-PSF.txt", "LICENSE-WEB.txt"):
        assert (SHIPPED / notice).is_file() and notice in readme
    assert "Princeton University" in (SHIPPED / "LICENSE-WordNet.txt").read_text()
    assert REBUILD_COMMAND in readme


def test_shipped_files_are_small_and_deterministic_gzip():
    sizes = {
        name: (SHIPPED / name).stat().st_size for name in (*PROSE_FILES.values(), WORDNET_FILE)
    }
    assert sum(sizes.values()) < 6_000_000, sizes
    for name in sizes:
        header = (SHIPPED / name).read_bytes()[:10]
        assert header[:2] == b"\x1f\x8b"
        assert struct.unpack("<I", header[4:8])[0] == 0, f"{name}: gzip stores a time stamp"
        assert not header[3] & 0x08, f"{name}: gzip stores a file name"


# ----------------------------------------------------------------------------------------------
# Missing and corrupt files: a clear error naming the file and the rebuild command


@pytest.fixture
def data_copy(tmp_path, monkeypatch) -> Path:
    """A private copy of the shipped files that the loaders read instead."""
    copy = tmp_path / "files"
    shutil.copytree(SHIPPED, copy)
    monkeypatch.setattr(english, "DATA_DIR", copy)
    return copy


LOADERS = {
    PROSE_FILES["web"]: lambda: load_prose("train", "web"),
    PROSE_FILES["pydocs"]: lambda: prose_text("val", "pydocs"),
    WORDNET_FILE: lambda: load_tagging_task("supersense", "test"),
}


def _expect_error(kind: type, path: Path, load, *fragments: str) -> None:
    with pytest.raises(kind) as caught:
        load()
    message = str(caught.value)
    assert isinstance(caught.value, CorpusFileError)
    assert str(path) in message and REBUILD_COMMAND in message, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_missing_file_names_the_file_and_the_rebuild_command(data_copy, name):
    (data_copy / name).unlink()
    _expect_error(MissingCorpusFileError, data_copy / name, LOADERS[name], "missing")
    with pytest.raises(FileNotFoundError):
        LOADERS[name]()


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_gzip_garbage_is_a_clear_error(data_copy, name):
    (data_copy / name).write_bytes(b"this is not gzip at all" * 10)
    _expect_error(CorruptCorpusFileError, data_copy / name, LOADERS[name], "gzip")
    with pytest.raises(ValueError):
        LOADERS[name]()


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_truncated_gzip_is_a_clear_error(data_copy, name):
    whole = (data_copy / name).read_bytes()
    (data_copy / name).write_bytes(whole[: len(whole) // 2])
    _expect_error(CorruptCorpusFileError, data_copy / name, LOADERS[name], "gzip")


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_bad_json_is_a_clear_error_with_the_line(data_copy, name):
    lines = gzip.decompress((data_copy / name).read_bytes()).splitlines(keepends=True)
    lines[2] = b'{"id": "broken", \n'
    (data_copy / name).write_bytes(gzip.compress(b"".join(lines)))
    _expect_error(CorruptCorpusFileError, data_copy / name, LOADERS[name], "line 3", "JSON")


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"target": 99}, "target 99"),
        ({"pos": "pronoun"}, "pronoun"),
        ({"supersense": "noun.cheese"}, "noun.cheese"),
        ({"pos": "noun", "supersense": "verb.motion"}, "verb.motion is not a noun"),
        ({"split": "dev"}, "dev"),
        ({"tokens": "a string"}, "tokens"),
        ({"target": "3"}, "target"),
    ],
)
def test_bad_fields_are_a_clear_error(data_copy, change, fragment):
    path = data_copy / WORDNET_FILE
    records = [json.loads(x) for x in gzip.decompress(path.read_bytes()).splitlines()[:200]]
    test_line = next(i for i, r in enumerate(records) if r["split"] == "test")
    records[test_line].update(change)
    prep.write_jsonl_gz(path, records)  # a short file: the loader reads every line anyway
    _expect_error(CorruptCorpusFileError, path, LOADERS[WORDNET_FILE], fragment)


def test_the_tagging_file_is_read_once_and_again_when_it_changes(data_copy, monkeypatch):
    """load_tagging_task parses the file once per process: each call still gets a list of its
    own, and a changed file (a corpus rebuilt while a kernel runs) is read again."""
    path = data_copy / WORDNET_FILE
    first = load_tagging_task("pos", "train")
    first.clear()  # the caller's list: the next call is not affected
    reads = []
    real = english._read_records
    monkeypatch.setattr(english, "_read_records", lambda name: reads.append(name) or real(name))
    again = load_tagging_task("pos", "train")
    assert again and load_tagging_task("supersense", "train") and reads == []
    assert {e.label for e in load_tagging_task("supersense", "val")} <= set(SUPERSENSE_LABELS)
    records = [json.loads(x) for x in gzip.decompress(path.read_bytes()).splitlines()[:300]]
    prep.write_jsonl_gz(path, records)  # fewer lines: another size
    shorter = load_tagging_task("pos", "train")
    assert reads == [WORDNET_FILE]
    assert shorter == again[: len(shorter)] and 0 < len(shorter) < len(again)
    assert len(shorter) == sum(r["split"] == "train" for r in records)


def test_empty_or_malformed_prose_is_a_clear_error(data_copy):
    path = data_copy / PROSE_FILES["web"]
    prep.write_jsonl_gz(path, [])
    _expect_error(CorruptCorpusFileError, path, LOADERS[PROSE_FILES["web"]], "no records")
    prep.write_jsonl_gz(path, [{"id": "web/x", "title": "x", "split": "train", "paragraphs": [[]]}])
    _expect_error(CorruptCorpusFileError, path, LOADERS[PROSE_FILES["web"]], "paragraphs")
    path.write_bytes(gzip.compress(b"[1, 2, 3]\n"))
    _expect_error(CorruptCorpusFileError, path, LOADERS[PROSE_FILES["web"]], "JSON object")


# ----------------------------------------------------------------------------------------------
# The preparation steps


def test_split_sentences_handles_quotes_and_abbreviations():
    text = (
        "God said, “Let there be light,” and there was light. God saw the light. "
        "See e.g. the os module. J. R. R. Tolkien wrote it. Is it? “No.” Done"
    )
    assert prep.split_sentences(text) == [
        "God said, “Let there be light,” and there was light.",
        "God saw the light.",
        "See e.g. the os module.",
        "J. R. R. Tolkien wrote it.",
        "Is it?",
        "“No.”",
        "Done",
    ]
    assert prep.split_sentences("Use os.path.join. then go on.") == [
        "Use os.path.join. then go on."
    ]


def test_tokenize_splits_punctuation_and_clitics():
    assert prep.tokenize("The dog's bone isn't here, she'd say.") == [
        "The", "dog", "'s", "bone", "is", "n't", "here", ",", "she", "'d", "say", ".",
    ]  # fmt: skip
    assert prep.tokenize("a well-known o'clock") == ["a", "well-known", "o'clock"]


RST = """\
:mod:`os` --- Operating system interfaces
=========================================

.. module:: os
   :synopsis: Miscellaneous operating system interfaces.

This module provides a *portable* way to use :func:`~os.path.join`, see
:ref:`the tutorial <tut-os>` and :pep:`8`. It works on |version|.

Here is code::

   import os
   print(os.getcwd())

>>> os.sep
'/'

.. function:: getcwd()

   Return a string representing the current working directory.

   .. versionadded:: 3.2
      Added ``bytes`` support.

.. code-block:: python

   secret = "not prose"

* First item of a list.
* Second item,
  on two lines.

+------+------+
| grid | cell |
+------+------+

.. note:: Notes are prose.
"""


def test_rst_paragraphs_keep_prose_and_drop_code_and_markup():
    title, paragraphs = prep.rst_paragraphs(RST.splitlines())
    assert title == "os --- Operating system interfaces"
    assert paragraphs == [
        "This module provides a portable way to use join, see the tutorial and PEP 8. "
        "It works on 3.11.",
        "Here is code:",
        "Return a string representing the current working directory.",
        "Added bytes support.",
        "First item of a list.",
        "Second item, on two lines.",
        "Notes are prose.",
    ]


def test_base_forms_and_locate_target():
    exceptions = {"noun": {"feet": ["foot"]}, "verb": {"ran": ["run"]}, "adj": {}, "adv": {}}
    assert "dog" in prep.base_forms("Dogs", "noun", exceptions)
    assert "foot" in prep.base_forms("feet", "noun", exceptions)
    assert "run" in prep.base_forms("running", "verb", exceptions)
    assert "run" in prep.base_forms("ran", "verb", exceptions)
    assert "happy" not in prep.base_forms("happily", "adj", exceptions)
    tokens = prep.tokenize("The hot dogs ran past two dogs")
    assert prep.locate_target(tokens, ["hotdog", "dog"], "noun", exceptions) == (2, "dog")
    assert prep.locate_target(tokens, ["run"], "verb", exceptions) == (3, "run")
    assert prep.locate_target(tokens, ["hot_dog"], "noun", exceptions) is None


def test_web_chapters_drop_notes_and_headings_and_keep_words_apart():
    entries = [
        "",
        '<div osisID="Gen" sID="b1" type="book"/><milestone n="Genesis" type="x-usfm-h"/>'
        '<title type="main">Genesis</title>',
        '<chapter n="1" osisID="Gen.1" sID="Gen.1"/>',
        '<div sID="p1" type="x-p"/><w lemma="x">In</w> <w>the</w> <w>beginning</w>, '
        '<w>God</w><note placement="foot">A note.</note><w>created</w> it. ',
        '<div eID="p1" type="x-p"/><div sID="p2" type="x-p"/>Then more<note>n</note>. '
        'It was good.<chapter eID="Gen.1"/>',
        '<chapter n="1" osisID="DanGr.1" sID="DanGr.1"/>Skipped text.<chapter eID="DanGr.1"/>',
    ]
    chapters = prep.web_chapters(entries)
    assert chapters == [
        {
            "id": "web/Gen.1",
            "title": "Genesis 1",
            "paragraphs": [["In the beginning, God created it."], ["Then more.", "It was good."]],
            "verses": 2,
        }
    ]


# ----------------------------------------------------------------------------------------------
# The whole build on tiny synthetic packages: the loaders read what the tool writes


def _write_ztext(module: Path, testament: str, entries: list[str]) -> None:
    block = "".join(entries).encode("utf-8")
    compressed = zlib.compress(block)
    index, offset = b"", 0
    for entry in entries:
        size = len(entry.encode("utf-8"))
        index += struct.pack("<IIH", 0, offset if size else 0, size)
        offset += size
    (module / f"{testament}.bzs").write_bytes(struct.pack("<III", 0, len(compressed), len(block)))
    (module / f"{testament}.bzv").write_bytes(index)
    (module / f"{testament}.bzz").write_bytes(compressed)


def _name_in_split(stem: str, split: str, prefix: str = "") -> str:
    """The first name stem0, stem1... whose id (prefix + name) falls in ``split``."""
    return next(f"{stem}{i}" for i in range(99) if prep.split_of(f"{prefix}{stem}{i}") == split)


def _fake_packages(root: Path) -> dict:
    """Write a miniature of the three Debian packages' files; return what the build should find."""
    module = root / "sword-text-web/usr/share/sword/modules/texts/ztext/engWEB2015eb"
    module.mkdir(parents=True)
    chapters = []
    entries = [
        "",
        '<div osisID="Gen" sID="b" type="book"/><milestone n="Genesis" type="x-usfm-h"/>',
    ]
    for number in range(1, 13):
        entries += [
            f'<chapter n="{number}" osisID="Gen.{number}" sID="Gen.{number}"/>',
            f"<w>Verse</w> one of chapter {number}. Another sentence! ",
            f'<div sID="p" type="x-p"/>A new paragraph.<chapter eID="Gen.{number}"/>',
        ]
        chapters.append(f"web/Gen.{number}")
    _write_ztext(module, "ot", entries)
    _write_ztext(module, "nt", ["", ""])
    doc = root / "sword-text-web/usr/share/doc/sword-text-web"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text("public domain\n")

    sources = root / "python3.11-doc/usr/share/doc/python3.11/html/_sources"
    (sources / "library").mkdir(parents=True)
    pages = []
    for split in SPLITS:
        name = _name_in_split("library/page", split, prefix="pydocs/")
        (sources / f"{name}.rst.txt").write_text(RST)
        pages.append(f"pydocs/{name}")
    (sources / "license.rst.txt").write_text(
        "Licence\n=======\n\n.. _PSF-license:\n\nPSF\n---\n\n.. parsed-literal::\n\n"
        "   1. This LICENSE AGREEMENT is for Python |release|.\n\nBEOPEN.COM LICENSE AGREEMENT\n"
    )

    wordnet = root / "wordnet-base/usr/share/wordnet"
    wordnet.mkdir(parents=True)
    lexnames = ["adj.all", "adj.pert", "adv.all", *SUPERSENSE_LABELS, "adj.ppl"]
    man = root / "wordnet-base/usr/share/man/man5"
    man.mkdir(parents=True)
    with gzip.open(man / "lexnames.5WN.gz", "wt") as page:
        page.write("".join(f"{i:02d}\t{name}\tdescription\n" for i, name in enumerate(lexnames)))
    lemmas = {s: _name_in_split("wug", s) for s in SPLITS}
    synsets = {
        "noun": [f'00000001 05 n 01 {lemmas["train"]} 0 000 | a creature; "two {lemmas["train"]}s sat"'],
        "verb": [f'00000002 38 v 02 {lemmas["val"]} 0 go_fast 0 000 | move; "she {lemmas["val"]}ed home"'],
        "adj": [f'00000003 00 s 01 {lemmas["test"]}(a) 0 000 | odd; "a very {lemmas["test"]} hat"; "no match"'],
        "adv": ["  1 this is a licence header line"],
    }  # fmt: skip
    for pos, lines in synsets.items():
        (wordnet / f"data.{pos}").write_text("\n".join(lines) + "\n")
        (wordnet / f"index.{pos}").write_text(f"{lemmas['train']} n 1\n")
        (wordnet / f"{pos}.exc").write_text("feet foot\n")
    doc = root / "wordnet-base/usr/share/doc/wordnet-base"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text("WordNet 3.0 Copyright 2006 by Princeton University.\n")
    return {"chapters": chapters, "pages": pages, "lemmas": lemmas}


def test_build_writes_what_the_loaders_read(tmp_path, monkeypatch):
    expected = _fake_packages(tmp_path / "root")
    versions = {package: "1.0" for package in prep.PACKAGES}
    out = tmp_path / "out"
    stats = prep.build(tmp_path / "root", versions, out)
    monkeypatch.setattr(english, "DATA_DIR", out)

    web = [d for s in SPLITS for d in load_prose(s, "web")]
    assert sorted(d.id for d in web) == sorted(expected["chapters"])
    assert all(prep.split_of(d.id) == s for s in SPLITS for d in load_prose(s, "web"))
    gen1 = next(d for d in web if d.id == "web/Gen.1")
    assert gen1.title == "Genesis 1"
    assert gen1.paragraphs == (
        ("Verse one of chapter 1.", "Another sentence!"),
        ("A new paragraph.",),
    )
    for split, page in zip(SPLITS, expected["pages"], strict=True):
        (doc,) = load_prose(split, "pydocs")
        assert doc.id == page and doc.title.startswith("os ---")
        assert doc.paragraphs[0][0].startswith("This module provides a portable way")

    (noun,) = load_tagging_task("pos", "train")
    assert noun.word == f"{expected['lemmas']['train']}s" and noun.label == "noun"
    assert noun.supersense == "noun.animal" and noun.synset == "00000001-n"
    (verb,) = load_tagging_task("supersense", "val")
    assert verb.word == f"{expected['lemmas']['val']}ed" and verb.label == "verb.motion"
    (adj,) = load_tagging_task("pos", "test")
    assert (
        adj.label == "adj" and adj.supersense == "adj.all" and adj.tokens[adj.target - 1] == "very"
    )
    assert load_tagging_task("supersense", "test") == []
    assert stats["wordnet_counts"] == {"sentences": 4, "kept": 3, "target not found": 1}

    readme = (out / "README.md").read_text()
    assert "`wordnet-base` 1.0" in readme and REBUILD_COMMAND in readme
    assert "3.11" in (out / "LICENSE-PSF.txt").read_text()
    # Deterministic: building again gives the same bytes.
    again = tmp_path / "again"
    prep.build(tmp_path / "root", versions, again)
    for path in sorted(out.iterdir()):
        assert path.read_bytes() == (again / path.name).read_bytes(), path.name


def test_the_package_ships_the_files():
    """pyproject.toml installs course.data with its files, so a wheel or bundle has them."""
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((Path(prep.REPO) / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = config["tool"]["setuptools"]
    include = setuptools["packages"]["find"]["include"]
    assert "course.data" in find_packages(str(prep.REPO), include=include)
    package_data = setuptools["package-data"]
    patterns = [*package_data.get("*", []), *package_data.get("course.data", [])]
    for name in (*PROSE_FILES.values(), WORDNET_FILE, "README.md", "LICENSE-WordNet.txt"):
        assert any(Path("files", name).match(p) for p in patterns), name
