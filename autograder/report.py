"""``OUT/report.html``: the batch at a glance, for the TA, next to ``grades.csv``.

One self-contained page (inline CSS, no script, nothing fetched): the score distribution, the
pass rate of every part, the most common failure messages of each part with the students who
got them, and every submission that needs a look with its status and message. Everything that
comes from a submission (messages, ids) is escaped.
"""

from __future__ import annotations

import html
import os
import re
from collections import Counter, defaultdict
from pathlib import Path

from autograder import judge

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
"""


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
    rows: list[dict], parts: dict[str, float], manual: set[str], records: dict[str, dict]
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
            why = records.get(row["student"], {}).get("failures", {}).get(part)
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


def write_report(
    rows: list[dict],
    parts: dict[str, float],
    manual: set[str],
    records: dict[str, dict],
    target: Path,
    title: str,
) -> Path:
    """Write the report of a batch: the CSV's ``rows``, ``parts`` (column -> points), the
    ``manual`` columns (written answers) and the judge's ``records`` (failure messages)."""
    counts = Counter(r["status"] for r in rows)
    summary = "".join(
        f"<tr><td>{_e(status)}</td><td class=num>{counts[status]}</td></tr>"
        for status in judge.STATUSES
        if counts.get(status)
    )
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
<h2 id="scores">Score distribution</h2>
{_score_distribution(rows)}
<h2 id="parts">Parts</h2>
{_parts(rows, parts, manual, records)}
</body>
</html>
"""
    target.write_text(page, encoding="utf-8")
    return target
