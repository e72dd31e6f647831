"""nbgrader configuration shared by the build, the tests and the TA grading command.

``autograder.nbgrader_format.make_course_dir`` copies this file into each nbgrader course
directory (build/nbgrader/<assignment>, the grading command's OUT/course, a temporary one in
the tests), so every nbgrader run uses exactly these settings.
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "seqcourse"
# The course directory is the folder of this file (its copy), whatever else nbgrader reads first:
# a grader on the course's hub has settings naming ~/seqcourse (deploy/jupyterhub/), as
# nbgrader's documentation has instructors do, and nbgrader reads those and then this file.
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# What students see where a solution was.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A cell that runs longer than this fails (an infinite loop must not stall grading).
c.Execute.timeout = 120

# A student who deletes a test cell gets it back, graded, instead of a silent zero.
c.OverwriteCells.add_missing_cells = True

# Feedback shows no hidden-test source (the TA grading command also writes tracebacks without
# hidden lines: see autograder/platform/judge.py).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
