"""Tests of the ``course`` package: models, data, analysis, viz, checks, metrics, train."""
