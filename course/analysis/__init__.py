"""Measurements that return numbers (figures live in ``course.viz``).

- ``course.analysis.interpret``: text features, LSTM cell states and best-matching cells
"""
