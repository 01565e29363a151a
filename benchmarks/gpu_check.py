"""One device call: the GPU tests, then the GPU benchmark; a short table last.

    python benchmarks/gpu_check.py [--quick] [benchmark args...]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The test files of the GPU (the device has no Biopython or hypothesis for the rest).
GPU_TESTS = ("test_gpu_bounded.py", "test_gpu.py")


def main() -> int:
    args = sys.argv[1:]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                            "-o", "addopts=", *(str(ROOT / "tests" / f) for f in GPU_TESTS)], cwd=ROOT)
    bench = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), *args], cwd=ROOT)
    print(f"gpu tests exit {tests.returncode}, benchmark exit {bench.returncode}")
    return tests.returncode or bench.returncode


if __name__ == "__main__":
    sys.exit(main())
