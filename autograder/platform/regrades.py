"""``OUT/regrades.csv``: every score that a re-run of the grading command changed, and why.

Each run keeps, per student, the scores it wrote (every part, ``total`` and, under a policy,
``final total``), the digest of the submission and the terms the policy decided by
(``state.json``: ``scores``). The next run compares: each score that differs is a row
``student, part, old score, new score, why``, appended. A run that changes nothing appends
nothing; a student's first grading is not a regrade.
"""

from __future__ import annotations

import csv
from pathlib import Path

COLUMNS = ["student", "part", "old score", "new score", "why"]
FINAL = "final total"
# policy term -> how its change reads; the extension is named before the due date it moves
TERMS = ["extension", "due", "late days left", "rule", "submitted at"]


def kept(row: dict, parts: list[str], digest: str, terms: dict[str, str] | None) -> dict:
    """What a run keeps of a student's row for the next run to compare with."""
    scores = {part: row.get(part, "") for part in [*parts, "total"]}
    if terms is not None:
        scores[FINAL] = row.get(FINAL, "")
    return {"scores": scores, "digest": digest, "terms": terms}


def policy_words(student: str, old: dict[str, str] | None, new: dict[str, str] | None) -> str:
    """How the policy's terms for ``student`` changed between two runs, in words ('' if not)."""
    if old == new:
        return ""
    if old is None:
        return "policy applied (--policy)"
    if new is None:
        return "policy no longer applied (no --policy)"
    said = []
    for term in TERMS:
        before, after = old.get(term, ""), new.get(term, "")
        moved = term == "due" and old.get("extension") != new.get("extension")
        if before == after or moved:  # a new extension's due date is said with it
            continue
        if term == "extension":
            said.append(
                f"policy changed: extension for {student} ({before or 'none'} -> {after or 'none'})"
            )
        elif term == "due":
            said.append(f"policy changed: due date ({before} -> {after})")
        elif term == "late days left":
            said.append(f"policy changed: late days left for {student} ({before} -> {after})")
        elif term == "rule":
            said.append("policy changed: penalty rule")
        else:
            said.append(f"submission time changed ({before} -> {after})")
    return "; ".join(said)


def changes(
    previous: dict[str, dict], current: dict[str, dict], judged: dict[str, str]
) -> list[dict]:
    """The regrade rows between the kept scores of two runs (:func:`kept`). ``judged``: student ->
    why it was judged in this run ("submission changed", "judged again (--force)", ...)."""
    rows = []
    for student in sorted(set(previous) & set(current)):
        old, new = previous[student], current[student]
        raw_changed = any(
            old["scores"].get(part, "") != value
            for part, value in new["scores"].items()
            if part != FINAL
        )
        submission = judged.get(student) or (
            "submission changed" if old["digest"] != new["digest"] else "recorded again"
        )
        policy = policy_words(student, old.get("terms"), new.get("terms"))
        for part, value in new["scores"].items():
            before = old["scores"].get(part, "")
            if before == value:
                continue
            if part != FINAL:
                why = submission
            else:
                why = "; ".join(w for w in (submission if raw_changed else "", policy) if w)
            rows.append(
                {"student": student, "part": part, "old score": before, "new score": value}
                | {"why": why or "recomputed"}
            )
    return rows


def append(rows: list[dict], target: Path) -> None:
    """Append ``rows`` to ``target`` (with the header row if it is new); nothing if no rows."""
    if not rows:
        return
    new = not target.exists()
    with target.open("a", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        writer.writerows(rows)
