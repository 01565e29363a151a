"""One device call: the GPU tests, then the GPU benchmark.

    python benchmarks/gpu_check.py [--part K/N] [--tests-only] [benchmark args...]
    python benchmarks/gpu_check.py --several [--tests-only] [scaling args...]

Arguments it does not know go to ``benchmarks/gpu.py`` (``--cells 1e13
--tb-cells 1e13``, ...). The whole GPU suite took 510 s on an H100 whose
kernel cache was empty (v55, test_warm.py's ~125 s included), and a device
call takes at most 600 s: ``--part K/N`` runs the K-th of N parts of it
(the collected tests dealt round-robin, so that each part holds some of every
parametrized test), and ``--tests-only`` skips the benchmark.

On a machine of several GPUs, ``--several`` runs instead the tests of
several devices, Dask, the placement and the slots (:data:`SEVERAL`, from
every test file: 76 on two H200s in v51, about 95 s), then
``benchmarks/scaling.py`` with the arguments it does not know (by default
``--cells 1e13 --traceback --gpus 1,2 --consumer place``: local with
traceback on one GPU and on two, its failures and the first one's message).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The test files of the GPU (the device has no Biopython or hypothesis for the
#: rest); test_warm.py runs ``pairalign warm`` with empty caches of its own
#: (about 65 s for the GPU's on an H100, 60 s for the CPU's).
GPU_TESTS = ("test_gpu_bounded.py", "test_gpu.py", "test_warm.py")
#: jaxtyping's pytest plugin, where the device's Python has it, is not ours to load.
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:jaxtyping",
          "-o", "addopts="]
#: The tests that ``--several`` selects (``pytest -k``).
SEVERAL = ("second_device or several_devices or slots_reserved_at_the_job_start or dask "
           "or placed_on_the_device_or_the_host or slots_take_windows or staged or views "
           "or reserves_its_device or primary_device")
#: ``--several``'s benchmark where no argument is given.
SCALING = ["--cells", "1e13", "--traceback", "--gpus", "1,2", "--consumer", "place"]


def part(text: str) -> tuple[int, int]:
    """``K/N`` as (K, N), 1 <= K <= N."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected K/N, e.g. 1/2") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: K must be between 1 and N")
    return k, n


def share(ids: list[str], k: int, n: int) -> list[str]:
    """The K-th of N round-robin shares of ``ids`` (1-based)."""
    return ids[k - 1::n]


def test_ids(files: list[str]) -> list[str]:
    """The node ids that pytest collects from ``files``."""
    out = subprocess.run([*PYTEST, "--collect-only", "-q", *files], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "::" in line]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", type=part, default=(1, 1), metavar="K/N")
    ap.add_argument("--tests-only", action="store_true")
    ap.add_argument("--several", action="store_true",
                    help="the tests of several devices, then scaling.py")
    args, bench_args = ap.parse_known_args()
    if args.several:
        tests = subprocess.run([*PYTEST, "-q", "-rfs", "-k", SEVERAL, str(ROOT / "tests")],
                               cwd=ROOT)
        if args.tests_only:
            print(f"tests of several devices exit {tests.returncode}")
            return tests.returncode
        bench = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scaling.py"),
                                *(bench_args or SCALING)], cwd=ROOT)
        print(f"tests of several devices exit {tests.returncode}, "
              f"scaling exit {bench.returncode}")
        return tests.returncode or bench.returncode
    files = [str(ROOT / "tests" / f) for f in GPU_TESTS]
    k, n = args.part
    selected = files if n == 1 else share(test_ids(files), k, n)
    tests = subprocess.run([*PYTEST, "-q", "-x", "-rfs", *selected], cwd=ROOT)
    if args.tests_only:
        print(f"gpu tests (part {k}/{n}) exit {tests.returncode}")
        return tests.returncode
    bench = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), *bench_args],
                           cwd=ROOT)
    print(f"gpu tests (part {k}/{n}) exit {tests.returncode}, benchmark exit {bench.returncode}")
    return tests.returncode or bench.returncode


if __name__ == "__main__":
    sys.exit(main())
