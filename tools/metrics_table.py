"""Format the benchmark table (each notebook's execution time, each model's figure and baseline)
and the measurements page's table of every figure a build recorded, with the machine."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _processor() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "an unnamed processor"


def load_average() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def describe_machine(load_before: float | None, load_after: float | None) -> str:
    """The machine in words: processor, CPUs, PyTorch's CPU kernels and the 1-minute load
    average at the start and at the end of the run (the benchmark's own kernel holds one CPU)."""
    try:
        import torch

        kernels = f"PyTorch's {torch.backends.cpu.get_cpu_capability()} CPU kernels"
    except (ImportError, AttributeError):
        kernels = "PyTorch's CPU kernels unknown"
    words = f"{_processor()}, {os.cpu_count()} logical CPUs, {kernels}"
    if load_before is not None and load_after is not None:
        words += (
            f"; 1-minute load average {load_before:.2f} at the start, {load_after:.2f} at the end"
        )
    return words


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


def _claim(metric: dict) -> str:
    """What the lecture claims of a figure against its baseline, in words."""
    if metric.get("baseline") is None:
        return "-"
    margin = metric.get("margin", 0.0)
    if metric.get("claim") == "matches":
        return f"matches it within {margin:.3g}"
    better = "higher" if metric.get("higher_is_better") else "lower"
    return (
        f"beats it ({better} is better) by more than {margin:.3g}"
        if margin
        else f"beats it ({better} is better)"
    )


def figures_page(metrics: list[dict], machine: str) -> str:
    """The measurements page's table of every figure the lectures record with
    ``course.metrics.record`` (``metrics``: :func:`course.metrics.load_all` of a build's
    ``build/metrics``), with the ``machine`` that measured them: written by the build, so the
    page shows the figures of the build that made it, each with its baseline, the claim the
    lecture makes and whether it holds."""
    count = sum(len(notebook["metrics"]) for notebook in metrics)
    lines = [
        f"The {count} figures that the lectures of this site's build recorded, measured by `make`"
        f" on {machine}. Each lecture prints them in its executed notebook, and `make test` fails"
        " when a claim does not hold.",
        "",
        "| lecture | figure | value | baseline | the lecture's claim | holds |",
        "| --- | --- | ---: | --- | --- | --- |",
    ]
    for notebook in metrics:
        lecture = f"{int(notebook['notebook'][:2])}"
        for m in notebook["metrics"]:
            value = f"{m['value']:.4g} {_cell(m['unit'])}".rstrip()
            baseline = (
                "-" if m["baseline"] is None else f"{m['baseline']:.4g} ({m['baseline_name']})"
            )
            lines.append(
                f"| {lecture} | {_cell(m['name'])} | {value} | {_cell(baseline)} | {_claim(m)} |"
                f" {'yes' if m['passes'] else '**no**'} |"
            )
    return "\n".join(lines) + "\n"
