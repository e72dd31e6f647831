"""Format the benchmark table: each notebook's execution time, each model's figure and baseline."""

from __future__ import annotations


def _cell(text: str) -> str:
    """Table-safe text: a literal "|" would end the Markdown cell."""
    return text.replace("|", "\\|")


def _margin(metric: dict) -> str:
    """The lead a win needs (the figure's measured spread between machines), where one is set."""
    margin = metric.get("margin", 0.0)
    if metric.get("claim") == "matches":
        return f" (matches it within {margin:.3g})"
    return f" (by > {margin:.3g})" if margin else ""


def format_table(
    timings: dict[str, float],
    metrics: list[dict],
    budgets: dict[str, float] | None = None,
    command: str | None = None,
) -> str:
    """Two Markdown tables: notebook execution times (and budgets), then model quality.

    With ``command``, each row ends with a column naming the command that reproduces it. The
    figures table is left out when no notebook recorded a figure.
    """
    budgets = budgets or {}
    head, rule, end = "", "", ""
    if command is not None:
        head, rule, end = " command |", " --- |", f" {_cell(command)} |"
    lines = [f"| notebook | seconds | budget |{head}", f"| --- | ---: | ---: |{rule}"]
    for name, seconds in sorted(timings.items()):
        budget = f"{budgets[name]:g}" if name in budgets else "-"
        lines.append(f"| {name} | {seconds:.1f} | {budget} |{end}")
    if any(notebook["metrics"] for notebook in metrics):
        lines += [
            "",
            f"| notebook | model | figure | baseline | beats baseline |{head}",
            f"| --- | --- | --- | --- | --- |{rule}",
        ]
    for notebook in metrics:
        for m in notebook["metrics"]:
            baseline = (
                "-" if m["baseline"] is None else f"{m['baseline']:.4g} ({m['baseline_name']})"
            )
            lines.append(
                f"| {notebook['notebook']} | {_cell(m['name'])} | {m['value']:.4g} {_cell(m['unit'])}".rstrip()
                + f" | {baseline} | {'yes' if m['passes'] else 'NO'}{_margin(m)} |{end}"
            )
    return "\n".join(lines) + "\n"
