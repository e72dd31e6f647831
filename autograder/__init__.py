"""Grading code that students never see: the hidden checks of the assignments.

``autograder.hidden.<assignment>`` holds the functions that an assignment's hidden test cells
call at autograde time. The kernel that grades a submission needs the repository root on its
``PYTHONPATH`` so that ``import autograder.hidden`` works.
"""
