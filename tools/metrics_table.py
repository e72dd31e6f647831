"""Format the benchmark table: each notebook's execution time, each model's figure and baseline."""

from __future__ import annotations


def format_table(timings: dict[str, float], metrics: list[dict]) -> str:
    """Two Markdown tables: notebook execution times, then model quality next to its baseline."""
    lines = ["| notebook | seconds |", "| --- | ---: |"]
    lines += [f"| {name} | {seconds:.1f} |" for name, seconds in sorted(timings.items())]
    lines += [
        "",
        "| notebook | model | figure | baseline | beats baseline |",
        "| --- | --- | --- | --- | --- |",
    ]
    for notebook in metrics:
        for m in notebook["metrics"]:
            baseline = (
                "-" if m["baseline"] is None else f"{m['baseline']:.4g} ({m['baseline_name']})"
            )
            lines.append(
                f"| {notebook['notebook']} | {m['name']} | {m['value']:.4g} {m['unit']}".rstrip()
                + f" | {baseline} | {'yes' if m['passes'] else 'NO'} |"
            )
    return "\n".join(lines) + "\n"
