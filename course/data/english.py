"""English prose and two labelled word-level tasks, read from files shipped with the course.

Nothing here touches the network or needs a platform-specific package: the files in
``course/data/files/`` are gzip-compressed JSON Lines made once by ``python -m
tools.prepare_corpora`` from Debian packages (sources, versions and licences are in
``course/data/files/README.md``).

Prose, in document order and sentence order (about 2M words in all)::

    docs = load_prose("train")                   # list[Document], 1,497 documents
    docs[0].title, docs[0].paragraphs[0][:2]     # "Genesis 2", its first two sentences
    text = prose_text("val", source="web")       # one str: sentences joined by " ",
                                                 # paragraphs by "\\n", documents by "\\n\\n"

``source`` is ``"web"`` (the World English Bible, one document per chapter), ``"pydocs"``
(the Python 3.11 documentation, one document per page) or ``"all"`` (both, web first).

Labelled tasks on WordNet 3.0 example sentences, one marked word per sentence::

    train = load_tagging_task("pos", "train")    # list[Example]
    ex = train[0]
    ex.tokens[ex.target]                         # the marked word, as it appears in the sentence
    ex.label                                     # "noun" | "verb" | "adj" | "adv"
    task_labels("supersense")                    # ("noun.Tops", ..., "verb.weather"), 41 classes

``"pos"`` asks for the marked word's part of speech (syntactic); ``"supersense"`` asks for its
lexicographer class, such as ``noun.animal`` or ``verb.motion`` (semantic; nouns and verbs
only). Splits are made by lemma: no word of the test split is a target word in training.

Splits are ``"train"``, ``"val"`` and ``"test"`` (about 80/10/10), fixed in the files.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, Literal

__all__ = [
    "SPLITS",
    "PROSE_SOURCES",
    "TASKS",
    "POS_LABELS",
    "SUPERSENSE_LABELS",
    "PROSE_FILES",
    "WORDNET_FILE",
    "REBUILD_COMMAND",
    "CorpusFileError",
    "MissingCorpusFileError",
    "CorruptCorpusFileError",
    "Document",
    "Example",
    "load_prose",
    "prose_text",
    "load_tagging_task",
    "task_labels",
    "majority_baseline",
]

Split = Literal["train", "val", "test"]
SPLITS: tuple[str, ...] = ("train", "val", "test")

PROSE_SOURCES: tuple[str, ...] = ("web", "pydocs")
PROSE_FILES: dict[str, str] = {"web": "prose_web.jsonl.gz", "pydocs": "prose_pydocs.jsonl.gz"}
WORDNET_FILE = "wordnet_examples.jsonl.gz"
REBUILD_COMMAND = "python -m tools.prepare_corpora"

TASKS: tuple[str, ...] = ("pos", "supersense")
POS_LABELS: tuple[str, ...] = ("noun", "verb", "adj", "adv")
# WordNet's lexicographer files for nouns and verbs, in WordNet's own order (lexnames 3 to 43).
SUPERSENSE_LABELS: tuple[str, ...] = (
    "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute", "noun.body",
    "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food",
    "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity",
    "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
)  # fmt: skip
# Lexicographer classes of adjectives and adverbs: stored in the file, not a task label.
OTHER_LEXNAMES: tuple[str, ...] = ("adj.all", "adj.pert", "adj.ppl", "adv.all")
_LEXNAMES = frozenset(SUPERSENSE_LABELS + OTHER_LEXNAMES)

# The package directory holding the prepared files. A Traversable, so it also works when the
# package is imported from a wheel or a zip; tests point it at a temporary copy.
DATA_DIR: Any = resources.files(__package__) / "files"


# ----------------------------------------------------------------------------------------------
# Errors


class CorpusFileError(Exception):
    """A prepared corpus file cannot be used. The message names the file and the fix."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(
            f"{self.path}: {problem}. Rebuild the prepared corpora with `{REBUILD_COMMAND}` "
            "in the course repository (it needs Debian's apt-get), or reinstall the course "
            "package or bundle, which ships the files."
        )


class MissingCorpusFileError(CorpusFileError, FileNotFoundError):
    """A prepared corpus file is absent."""


class CorruptCorpusFileError(CorpusFileError, ValueError):
    """A prepared corpus file is present but not readable: bad gzip, bad JSON or bad fields."""


# ----------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Document:
    """One document: a Bible chapter or a Python documentation page.

    ``paragraphs`` holds the sentences of each paragraph, in order: a tuple of paragraphs,
    each a tuple of sentence strings (whitespace-normalised, never empty).
    """

    id: str  # "web/Gen.1", "pydocs/library/os"
    source: str  # "web" or "pydocs"
    title: str  # "Genesis 1", "os — Miscellaneous operating system interfaces"
    paragraphs: tuple[tuple[str, ...], ...]

    @property
    def sentences(self) -> tuple[str, ...]:
        """All sentences of the document, in order (paragraph boundaries dropped)."""
        return tuple(s for paragraph in self.paragraphs for s in paragraph)

    @property
    def text(self) -> str:
        """Sentences joined by a space, paragraphs by a newline."""
        return "\n".join(" ".join(paragraph) for paragraph in self.paragraphs)


@dataclass(frozen=True)
class Example:
    """One WordNet example sentence with one marked word.

    ``tokens[target]`` is the marked word as written (possibly inflected: "dogs" for the lemma
    "dog"). ``label`` is the task's answer; ``pos`` and ``supersense`` keep both labels.
    ``ambiguous`` is True when WordNet lists the lemma under more than one part of speech.
    """

    tokens: tuple[str, ...]  # (T,) words and punctuation, in order
    target: int  # 0 <= target < T
    label: str
    lemma: str  # "dog"; the split is made on this
    synset: str  # "02084071-n": WordNet offset and part of speech
    pos: str  # one of POS_LABELS
    supersense: str  # one of SUPERSENSE_LABELS or OTHER_LEXNAMES
    ambiguous: bool

    @property
    def word(self) -> str:
        """The marked word, as written in the sentence."""
        return self.tokens[self.target]


# ----------------------------------------------------------------------------------------------
# Reading the files


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")


def _read_records(name: str) -> Iterator[tuple[int, dict]]:
    """Yield (line number, JSON object) for each line of ``DATA_DIR / name``.

    Raises MissingCorpusFileError or CorruptCorpusFileError naming the file.
    """
    path = DATA_DIR / name
    if not path.is_file():
        raise MissingCorpusFileError(path, "corpus file is missing")
    try:
        with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
            count = 0
            for number, line in enumerate(lines, start=1):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise CorruptCorpusFileError(
                        path, f"line {number} is not JSON ({err})"
                    ) from err
                if not isinstance(record, dict):
                    raise CorruptCorpusFileError(path, f"line {number} is not a JSON object")
                count += 1
                yield number, record
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as err:
        raise CorruptCorpusFileError(
            path, f"not a readable gzip file of UTF-8 text ({err})"
        ) from err
    if count == 0:
        raise CorruptCorpusFileError(path, "file holds no records")


def _field(record: dict, key: str, kind: type, path: object, number: int) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CorruptCorpusFileError(
            path, f"line {number}: field {key!r} should be {kind.__name__}, got {value!r:.60}"
        )
    return value


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) and s for s in value)


def _parse_document(record: dict, source: str, path: object, number: int) -> Document:
    paragraphs = _field(record, "paragraphs", list, path, number)
    if not paragraphs or not all(_strings(p) and p for p in paragraphs):
        raise CorruptCorpusFileError(
            path, f"line {number}: 'paragraphs' should be a non-empty list of lists of strings"
        )
    return Document(
        id=_field(record, "id", str, path, number),
        source=source,
        title=_field(record, "title", str, path, number),
        paragraphs=tuple(tuple(p) for p in paragraphs),
    )


def _split_of(record: dict, path: object, number: int) -> str:
    split = _field(record, "split", str, path, number)
    if split not in SPLITS:
        raise CorruptCorpusFileError(path, f"line {number}: unknown split {split!r}")
    return split


def load_prose(split: Split, source: str = "all") -> list[Document]:
    """Return the documents of one split, in corpus order (books and chapters, or pages).

    ``source`` is "web", "pydocs" or "all" (web first). Sizes of the whole corpus: see
    ``course/data/files/README.md``: 0.90M words of Bible in 1,378 chapters and 1.11M words
    of Python documentation in 491 pages, split about 80/10/10 by document.
    """
    _check_split(split)
    if source != "all" and source not in PROSE_SOURCES:
        raise ValueError(f"source: expected 'all' or one of {PROSE_SOURCES}, got {source!r}")
    sources = PROSE_SOURCES if source == "all" else (source,)
    documents: list[Document] = []
    for name in sources:
        path = DATA_DIR / PROSE_FILES[name]
        for number, record in _read_records(PROSE_FILES[name]):
            document = _parse_document(record, name, path, number)  # checks every line
            if _split_of(record, path, number) == split:
                documents.append(document)
    return documents


def prose_text(split: Split, source: str = "all") -> str:
    """Return one split as a single string, for character- and word-level language models.

    Sentences are joined by a space, paragraphs by a newline, and documents by a blank line.
    """
    return "\n\n".join(doc.text for doc in load_prose(split, source))


def task_labels(task: str) -> tuple[str, ...]:
    """Return the fixed, ordered label set of a task: 4 POS tags or 41 supersenses."""
    if task == "pos":
        return POS_LABELS
    if task == "supersense":
        return SUPERSENSE_LABELS
    raise ValueError(f"task: expected one of {TASKS}, got {task!r}")


def _parse_example(record: dict, task: str, path: object, number: int) -> Example:
    tokens = record.get("tokens")
    if not _strings(tokens) or not tokens:
        raise CorruptCorpusFileError(path, f"line {number}: 'tokens' should be a list of words")
    target = _field(record, "target", int, path, number)
    if not 0 <= target < len(tokens):
        raise CorruptCorpusFileError(
            path, f"line {number}: target {target} outside the {len(tokens)} tokens"
        )
    pos = _field(record, "pos", str, path, number)
    supersense = _field(record, "supersense", str, path, number)
    if pos not in POS_LABELS:
        raise CorruptCorpusFileError(path, f"line {number}: unknown part of speech {pos!r}")
    if supersense not in _LEXNAMES:
        raise CorruptCorpusFileError(path, f"line {number}: unknown supersense {supersense!r}")
    if supersense.split(".")[0] != pos:
        raise CorruptCorpusFileError(path, f"line {number}: {supersense} is not a {pos}")
    return Example(
        tokens=tuple(tokens),
        target=target,
        label=pos if task == "pos" else supersense,
        lemma=_field(record, "lemma", str, path, number),
        synset=_field(record, "synset", str, path, number),
        pos=pos,
        supersense=supersense,
        ambiguous=_field(record, "ambiguous", bool, path, number),
    )


# The WordNet file read once per process: (path, modification time, size) -> {(task, split):
# examples}. Every line is parsed and checked (about 1.3 s), and a lecture asks for several
# splits of both tasks, and majority_baseline for the training split again.
_TAGGING: dict[tuple[str, int, int], dict[tuple[str, str], tuple[Example, ...]]] = {}


def _tagging_examples(path: Any) -> dict[tuple[str, str], tuple[Example, ...]]:
    try:
        stat = path.stat()
    except (OSError, AttributeError):  # missing, or a resource that is not a file on disk
        stat = None
    key = (str(path), stat.st_mtime_ns, stat.st_size) if stat is not None else None
    if key is not None and key in _TAGGING:
        return _TAGGING[key]
    found: dict[tuple[str, str], list[Example]] = {
        (task, split): [] for task in TASKS for split in SPLITS
    }
    for number, record in _read_records(WORDNET_FILE):  # raises if the file is missing
        example = _parse_example(record, "pos", path, number)  # checks every line
        split = _split_of(record, path, number)
        found["pos", split].append(example)
        if example.supersense in SUPERSENSE_LABELS:
            found["supersense", split].append(replace(example, label=example.supersense))
    examples = {which: tuple(items) for which, items in found.items()}
    if key is not None:
        _TAGGING.clear()  # one version of the file at a time
        _TAGGING[key] = examples
    return examples


def load_tagging_task(task: str, split: Split) -> list[Example]:
    """Return the examples of one task and split, in WordNet order.

    ``task`` is "pos" (every example; labels ``POS_LABELS``) or "supersense" (examples whose
    target is a noun or a verb; labels ``SUPERSENSE_LABELS``). Each Example's ``label`` is the
    answer for that task. Class counts and majority baselines: ``course/data/files/README.md``.
    The file is read once per process (again if it changes); each call returns a new list.
    """
    task_labels(task)
    _check_split(split)
    return list(_tagging_examples(DATA_DIR / WORDNET_FILE)[task, split])


def majority_baseline(task: str, split: Split = "test") -> tuple[str, float]:
    """Return the most frequent training label and its accuracy on ``split``.

    The bar a classifier must clear: predicting this one label for every example.
    """
    counts = Counter(ex.label for ex in load_tagging_task(task, "train"))
    label = min(counts, key=lambda name: (-counts[name], name))
    evaluated = load_tagging_task(task, split)
    return label, sum(ex.label == label for ex in evaluated) / len(evaluated)
