"""The model-family cases of ``test_devices.py`` on a real accelerator instead of the simulated
device: ``python -m tests.course.real_device`` on a machine with CUDA (``DEVICE=mps`` on Apple
silicon). Not collected by pytest: the suite runs where there is no GPU.

Each case moves its models and inputs to the device, runs the forward and backward passes and
the decoding and analysis helpers there, and compares every number with the CPU's (absolute
1e-5). cuDNN computes RNNs in TF32 on recent GPUs by default, about 2e-4 off the CPU: the
comparison turns that off unless ``TF32=1`` is set. One line per case; the exit status is the
number of cases that failed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback

import torch

from tests.course import test_devices as cases


def main() -> int:
    device = torch.device(os.environ.get("DEVICE", "cuda:0"))
    if not os.environ.get("TF32"):
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    cases.DEVICE = device  # what the cases' helpers move to and compare against
    cases.OnDevice = torch.Tensor  # a real device's tensors are plain tensors
    cases.simulated_device = contextlib.nullcontext
    cases.move_ = lambda model, to: model.to(device if to == device else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    print(f"torch {torch.__version__} on {name}")
    failed = 0
    for family, (case, _) in sorted(cases.CASES.items()):
        start = time.perf_counter()
        try:
            case()
            said = "ok"
        except Exception as error:  # noqa: BLE001 - every case is run and reported
            failed += 1
            said = f"FAILED: {type(error).__name__}: {error}\n{traceback.format_exc(limit=-3)}"
        print(f"{family:18s} {time.perf_counter() - start:5.1f} s  {said}", flush=True)
    print(f"{len(cases.CASES) - failed} of {len(cases.CASES)} model families as on the CPU")
    return failed


if __name__ == "__main__":
    sys.exit(main())
