"""``pairalign warm``: after it, the command line's usual runs compile nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pairalign.backends import gpu_available

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "adeno_fiber.faa"

# a fresh interpreter: the commands of a user's day, with numba's compilations
# counted and the files that CuPy's kernel cache gains (one per NVRTC compilation)
USER_RUNS = """
import os, sys
from numba.core import event
from pairalign.cli import main
ex, reads, out, backend = sys.argv[1:5]
cache = os.environ.get("CUPY_CACHE_DIR", "")
kernels = lambda: set(os.listdir(cache)) if os.path.isdir(cache) else set()
before = kernels()
runs = [["all-vs-all", ex, "-o", out + "/a.tsv"],
        ["all-vs-all", ex, "-o", out + "/a.tsv", "--no-traceback", "--mode", "global"],
        ["tree", ex, "-o", out + "/t.nwk"],
        ["search", ex, ex, "-o", out + "/s.tsv", "--top", "3"],
        ["overlap", reads, "-o", out + "/o.paf", "--min-overlap", "100"]]
with event.install_recorder("numba:compile") as rec:
    for args in runs:
        main.main(args + ["--backend", backend, "-q"], prog_name="pairalign",
                  standalone_mode=False)
print(sorted({ev.data["dispatcher"].py_func.__qualname__ for _, ev in rec.buffer if ev.is_end}))
print(sorted(kernels() - before))
"""


def _run(args, env):
    return subprocess.run(args, env=env, capture_output=True, text=True, check=True)


def _warm_then_user_runs(tmp_path: Path, backend: str) -> tuple[str, str]:
    """``pairalign warm`` twice with empty caches of its own, then the user's
    runs in a new process: what numba compiled, and CuPy's new cache files."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               CUPY_CACHE_DIR=str(tmp_path / "cupy"))
    warm = [sys.executable, "-m", "pairalign", "warm", "--backend", backend]
    first = _run(warm, env).stderr
    assert f"16 commands on the {backend}" in first and " 0 functions" not in first
    assert "numba compiled 0 functions" in _run(warm, env).stderr  # all cached now
    rng = np.random.default_rng(3)
    genome = rng.choice(list("ACGT"), 3000)
    reads = tmp_path / "reads.fa"
    reads.write_text("".join(f">r{k}\n{''.join(genome[s:s + 800])}\n"
                             for k, s in enumerate((0, 500, 1100, 1900))))
    numba, cupy = _run([sys.executable, "-c", USER_RUNS, str(EXAMPLE), str(reads),
                        str(tmp_path), backend], env).stdout.split("\n")[:2]
    assert (tmp_path / "t.nwk").read_text().endswith(";\n")
    return numba, cupy


@pytest.mark.parametrize("mode", ["global", "semiglobal", "local"])
def test_warm_long_sequences_take_32_bits(mode):
    """warm's long protein and long read pairs need 32-bit scores in every
    mode, so that it compiles both widths for both inputs."""
    from pairalign.scoring import Scoring
    from pairalign.warm import LONG_PROTEIN, LONG_READ

    for alphabet, n in (("protein", LONG_PROTEIN - 7), ("dna", LONG_READ)):
        assert Scoring.create(alphabet).score_dtype(n, n, mode) == np.int32


def test_warm_compiles_what_later_runs_take(tmp_path):
    assert _warm_then_user_runs(tmp_path, "cpu") == ("[]", "[]")


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not gpu_available(), reason="CuPy sees no CUDA device")
def test_warm_compiles_what_later_gpu_runs_take(tmp_path):
    """Every CUDA module too: with CuPy's cache empty before ``warm``, the
    user's GPU runs afterwards add no file to it."""
    assert _warm_then_user_runs(tmp_path, "gpu") == ("[]", "[]")
    assert os.listdir(tmp_path / "cupy")  # warm did compile into it
