"""Tests of ``tools`` and of what ``make`` builds: build products, the website, the student's
flow in JupyterLab, lab markdown, lint and layering."""
