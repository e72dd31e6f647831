"""The environment variables that turn on the recording and the replaying of training runs.

``course.train.fit`` records what each run ends with when ``COURSE_FIT_RECORD`` names a folder
(the build sets it) and replays a recorded run when ``COURSE_FIT_REPLAY`` names one (the
students' JupyterLab in the test suite sets it): see ``course.train``. The names live in this
module of their own so that the build and the test tools can set them without importing torch.
"""

RECORD_VARIABLE = "COURSE_FIT_RECORD"
REPLAY_VARIABLE = "COURSE_FIT_REPLAY"
# In the folder of recorded runs: the thread counts ({variable: count}) of the kernels that
# recorded them. A kernel that replays them takes the same counts, so that what it computes
# before a run, and so the run's key, comes out the same.
THREADS_FILE = "threads.json"
