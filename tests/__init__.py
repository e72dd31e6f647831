"""The test suite, in folders that follow the layers: course/, grading/, build/."""
