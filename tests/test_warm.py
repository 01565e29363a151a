"""``pairalign warm``: after it, the command line's usual runs compile nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "adeno_fiber.faa"

# a fresh interpreter: the commands of a user's day, with numba's compilations counted
USER_RUNS = """
import sys
from numba.core import event
from pairalign.cli import main
ex, reads, out = sys.argv[1:4]
runs = [["all-vs-all", ex, "-o", out + "/a.tsv"],
        ["all-vs-all", ex, "-o", out + "/a.tsv", "--no-traceback", "--mode", "global"],
        ["tree", ex, "-o", out + "/t.nwk"],
        ["search", ex, ex, "-o", out + "/s.tsv", "--top", "3"],
        ["overlap", reads, "-o", out + "/o.paf", "--min-overlap", "100"]]
with event.install_recorder("numba:compile") as rec:
    for args in runs:
        main.main(args + ["--backend", "cpu", "-q"], prog_name="pairalign", standalone_mode=False)
print(sorted({ev.data["dispatcher"].py_func.__qualname__ for _, ev in rec.buffer if ev.is_end}))
"""


def _run(args, env):
    return subprocess.run(args, env=env, capture_output=True, text=True, check=True)


def test_warm_compiles_what_later_runs_take(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    warm = [sys.executable, "-m", "pairalign", "warm", "--backend", "cpu"]
    first = _run(warm, env).stderr
    assert "16 commands on the cpu" in first and " 0 functions" not in first
    assert "numba compiled 0 functions" in _run(warm, env).stderr  # all cached now
    rng = np.random.default_rng(3)
    genome = rng.choice(list("ACGT"), 3000)
    reads = tmp_path / "reads.fa"
    reads.write_text("".join(f">r{k}\n{''.join(genome[s:s + 800])}\n"
                             for k, s in enumerate((0, 500, 1100, 1900))))
    compiled = _run([sys.executable, "-c", USER_RUNS, str(EXAMPLE), str(reads), str(tmp_path)],
                    env).stdout.strip()
    assert compiled == "[]"
    assert (tmp_path / "t.nwk").read_text().endswith(";\n")
