"""``OUT/report.html``: the batch at a glance, for the TA, next to ``grades.csv``.

One self-contained page (inline CSS, no script, nothing fetched): the score distribution, the
pass rate of every part, the most common failure messages of each part with the students who
got them, every submission that needs a look with its status and message, and the pairs of
submissions whose solution code is similar, side by side (:mod:`autograder.platform.similarity`).
Everything that comes from a submission (messages, ids, code) is escaped.
"""

from __future__ import annotations

import html
import os
import re
from collections import Counter, defaultdict
from pathlib import Path

from autograder.platform import judge
from autograder.platform.record import SubmissionRecord
from autograder.platform.similarity import Result

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
TOP_MESSAGES = 5
BINS = 10

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; height: .9em; background: #4a7bb7; vertical-align: middle; }
.fail { background: #c0504d; } .muted { color: #777; }
code { font-size: 95%; }
pre.code { margin: 0; font-size: 90%; white-space: pre-wrap; max-width: 34em; }
mark { background: #ffe08a; }
"""
SHOWN_PAIRS = 100  # pairs shown side by side in the report; similarity.json has them all
SHOWN_CODE_CHARS = 20_000  # of each side of a match


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _bar(fraction: float, css: str = "bar", width: float = 20.0) -> str:
    return f'<span class="{css}" style="width:{max(0.0, min(1.0, fraction)) * width:.2f}em"></span>'


def _shape(message: str) -> str:
    """A failure message with its numbers replaced, so that equal failures group together."""
    return NUMBER.sub("#", " ".join(message.split()))[:300]


def _score_distribution(rows: list[dict]) -> str:
    totals = [float(r["total"]) for r in rows if r["total"] != ""]
    if not totals:
        return "<p>No submission has a score.</p>"
    maximum = float(rows[0]["max"]) or 1.0
    counts = [0] * BINS
    for total in totals:
        counts[min(BINS - 1, int(total / maximum * BINS))] += 1
    peak = max(counts)
    lines = ["<table><tr><th>score</th><th>submissions</th><th></th></tr>"]
    for index in reversed(range(BINS)):
        low, high = maximum * index / BINS, maximum * (index + 1) / BINS
        upper = "]" if index == BINS - 1 else ")"
        lines.append(
            f"<tr><td>[{low:g}, {high:g}{upper}</td><td class=num>{counts[index]}</td>"
            f"<td>{_bar(counts[index] / peak)}</td></tr>"
        )
    lines.append("</table>")
    mean = sum(totals) / len(totals)
    ordered = sorted(totals)
    median = ordered[len(ordered) // 2]
    lines.append(
        f"<p>{len(totals)} scored submissions; mean {mean:.2f}, median {median:g}, "
        f"out of {maximum:g} (written answers count once graded by hand).</p>"
    )
    return "\n".join(lines)


def _parts(
    rows: list[dict],
    parts: dict[str, float],
    manual: set[str],
    records: dict[str, SubmissionRecord],
) -> str:
    scored = [r for r in rows if r["total"] != ""]
    lines = [
        "<table><tr><th>part</th><th>points</th><th>full marks</th><th></th>"
        "<th>most common failures (students)</th></tr>"
    ]
    for part, points in parts.items():
        if part in manual:
            lines.append(
                f"<tr><td><code>{_e(part)}</code></td><td class=num>{points:g}</td>"
                '<td colspan=3 class="muted">a written answer, graded by hand in formgrader'
                "</td></tr>"
            )
            continue
        full = sum(1 for r in scored if r.get(part) != "" and float(r[part]) >= points)
        rate = full / len(scored) if scored else 0.0
        groups: dict[str, list[str]] = defaultdict(list)
        examples: dict[str, str] = {}
        for row in scored:
            record = records.get(row["student"])
            why = record.failures.get(part) if record else None
            if why:
                key = _shape(why)
                groups[key].append(row["student"])
                examples.setdefault(key, why)
        ranked = Counter({key: len(students) for key, students in groups.items()}).most_common()
        items = [
            f"<li><code>{_e(examples[key][:300])}</code> ({count}): "
            f"{_e(', '.join(sorted(groups[key])[:30]))}"
            f"{' …' if count > 30 else ''}</li>"
            for key, count in ranked[:TOP_MESSAGES]
        ]
        if len(ranked) > TOP_MESSAGES:
            items.append(f"<li class=muted>{len(ranked) - TOP_MESSAGES} other messages</li>")
        failures = f"<ul>{''.join(items)}</ul>" if items else '<span class="muted">none</span>'
        lines.append(
            f"<tr><td><code>{_e(part)}</code></td><td class=num>{points:g}</td>"
            f"<td class=num>{full} / {len(scored)} ({rate:.0%})</td>"
            f"<td>{_bar(rate)}{_bar(1 - rate, 'bar fail')}</td><td>{failures}</td></tr>"
        )
    lines.append("</table>")
    return "\n".join(lines)


def _look(rows: list[dict], target: Path) -> str:
    look = [r for r in rows if r["status"] not in ("graded", "needs manual grading")]
    manual = sum(1 for r in rows if r["status"] == "needs manual grading")
    if not look:
        text = "<p>Nothing needs a look.</p>"
    else:
        order = {status: index for index, status in enumerate(judge.STATUSES)}
        lines = [
            "<table><tr><th>student</th><th>status</th><th>score</th><th>message</th>"
            "<th>feedback</th></tr>"
        ]
        for row in sorted(look, key=lambda r: (order.get(r["status"], 99), r["student"])):
            feedback = ""
            for path in filter(None, row["feedback"].split(";")):
                relative = os.path.relpath(path, target.parent)
                feedback += f'<a href="{_e(Path(relative).as_posix())}">feedback</a> '
            score = "" if row["total"] == "" else f"{float(row['total']):g}"
            lines.append(
                f"<tr><td>{_e(row['student'])}</td><td>{_e(row['status'])}</td>"
                f"<td class=num>{score}</td><td>{_e(row['message'][:600])}</td>"
                f"<td>{feedback}</td></tr>"
            )
        lines.append("</table>")
        text = "\n".join(lines)
    return text + f"<p>{manual} submission(s) wait only for written answers to be graded.</p>"


def _marked(text: str, spans: list[list[int]]) -> str:
    """``text`` escaped, its ``spans`` (matching code) in ``<mark>``, cut to SHOWN_CODE_CHARS."""
    shown = text[:SHOWN_CODE_CHARS]
    out, at = [], 0
    for start, end in sorted(spans):
        start, end = max(start, at), min(end, len(shown))
        if end > start:
            out.append(_e(shown[at:start]) + f"<mark>{_e(shown[start:end])}</mark>")
            at = end
    out.append(_e(shown[at:]))
    if len(text) > len(shown):
        out.append(_e("\n… (cut: the whole text is in similarity.json)"))
    return f'<pre class="code">{"".join(out)}</pre>'


def _similarity(result: Result | str | None) -> str:
    if result is None:
        return "<p>Not run.</p>"
    if isinstance(result, str):
        return f"<p>The comparison failed: {_e(result)}</p>"
    lines = [
        f"<p>Each part's solution code is compared between every two submissions"
        f"{' and with each file of <code>' + _e(result.past) + '</code>' if result.past else ''}"
        f", after removing the released skeleton, comments, docstrings, formatting and the names"
        f" the code chose ({_e(result.settings.get('library', 'copydetect'))}). Listed: pairs"
        f" with a part of score at least {result.threshold:g} (the share of one side's code found"
        f" in the other). {result.compared} comparisons; the highest score not listed is"
        f" {result.highest_below:.2f}. A high score is a reason to look, not a finding.</p>"
    ]
    if not result.pairs:
        lines.append("<p>No pair is above the threshold.</p>")
    else:
        lines.append(
            "<table><tr><th>first</th><th>second</th><th>highest score</th>"
            "<th>parts above the threshold (score)</th></tr>"
        )
        for pair in result.pairs:
            parts = ", ".join(f"<code>{_e(m.part)}</code> ({m.score:.2f})" for m in pair.matches)
            lines.append(
                f"<tr><td>{_e(pair.a)}</td><td>{_e(pair.b)}</td>"
                f"<td class=num>{pair.score:.2f}</td><td>{parts}</td></tr>"
            )
        lines.append("</table>")
        for pair in result.pairs[:SHOWN_PAIRS]:
            lines.append(
                f"<details><summary>{_e(pair.a)} and {_e(pair.b)}: {pair.score:.2f}</summary>"
            )
            for match in pair.matches:
                notes = [
                    f"{_e(who)}'s code does not all parse: compared without the lines that"
                    " do not (or as written, where nothing does)"
                    for who, parsed in zip((pair.a, pair.b), match.parsed, strict=True)
                    if not parsed
                ]
                lines.append(
                    f"<p><code>{_e(match.part)}</code>: {match.shares[0]:.0%} of"
                    f" {_e(pair.a)}'s code is in {_e(pair.b)}'s, {match.shares[1]:.0%} the other"
                    f" way. {'; '.join(notes)}</p>"
                    f"<table><tr><th>{_e(pair.a)}</th><th>{_e(pair.b)}</th></tr><tr>"
                    f"<td>{_marked(match.texts[0], match.spans[0])}</td>"
                    f"<td>{_marked(match.texts[1], match.spans[1])}</td></tr></table>"
                )
            lines.append("</details>")
        if len(result.pairs) > SHOWN_PAIRS:
            lines.append(
                f"<p class=muted>{len(result.pairs) - SHOWN_PAIRS} more pairs: see"
                " similarity.json.</p>"
            )
    if result.skipped:
        items = "".join(
            f"<li>{_e(s.owner)}{': <code>' + _e(s.part) + '</code>' if s.part else ''}:"
            f" {_e(s.why)}</li>"
            for s in result.skipped[:200]
        )
        more = len(result.skipped) - 200
        lines.append(
            f"<p>Not compared:</p><ul>{items}"
            f"{f'<li class=muted>{more} more: see similarity.json</li>' if more > 0 else ''}</ul>"
        )
    return "\n".join(lines)


def _policy(rows: list[dict], columns: list[str]) -> str:
    """Every row's late-policy columns (raw beside final total), late or penalised rows first."""
    header = "".join(f"<th>{_e(column)}</th>" for column in ["student", *columns])
    lines = [f"<table><tr>{header}</tr>"]
    changed = sorted(rows, key=lambda r: (r["final total"] == r["raw total"], r["student"]))
    for row in changed:
        cells = "".join(f"<td>{_e(row[column])}</td>" for column in ["student", *columns])
        lines.append(f"<tr>{cells}</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def write_report(
    rows: list[dict],
    parts: dict[str, float],
    manual: set[str],
    records: dict[str, SubmissionRecord],
    target: Path,
    title: str,
    similarity: Result | str | None = None,
    policy_columns: list[str] | None = None,
) -> Path:
    """Write the report of a batch: the CSV's ``rows``, ``parts`` (column -> points), the
    ``manual`` columns (written answers), the judge's ``records`` (failure messages), the
    ``similarity`` of the submissions' code (:mod:`autograder.platform.similarity`; a string:
    why the comparison failed) and, under a course policy, its ``policy_columns`` of every row."""
    counts = Counter(r["status"] for r in rows)
    summary = "".join(
        f"<tr><td>{_e(status)}</td><td class=num>{counts[status]}</td></tr>"
        for status in judge.STATUSES
        if counts.get(status)
    )
    late = ""
    if policy_columns:
        late = f"""<h2 id="policy">Late policy</h2>
<p>The raw total, and the final total after the course policy (<code>--policy</code>), with
where each submission time came from and why the two totals differ.</p>
{_policy(rows, policy_columns)}
"""
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{_e(title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{_e(title)}</h1>
<p>{len(rows)} submissions. Scores and statuses as in <code>grades.csv</code>.</p>
<table><tr><th>status</th><th>submissions</th></tr>{summary}</table>
<h2 id="look">Submissions that need a look</h2>
{_look(rows, target)}
{late}<h2 id="scores">Score distribution</h2>
{_score_distribution(rows)}
<h2 id="parts">Parts</h2>
{_parts(rows, parts, manual, records)}
<h2 id="similarity">Similar solutions</h2>
{_similarity(similarity)}
</body>
</html>
"""
    target.write_text(page, encoding="utf-8")
    return target
