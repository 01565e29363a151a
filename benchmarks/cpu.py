"""CPU benchmark: all-vs-all GCUPS of pairalign's numba backend beside parasail.

Workload: ``--n`` proteins (default 400) sampled without replacement, with a fixed
seed, from ``shared/data/proteome_HG003687.faa``; every pair ``i < j``; BLOSUM62,
gaps 11/1. Cells are counted as in DESIGN.md: the sum over pairs of
``len_i * len_j``.

For each mode (global, semiglobal, local), with traceback and score-only:

- pairalign: ``pairalign.align_all(seqs, mode=..., traceback=..., backend="cpu",
  threads=N)``, timed end to end from the Python list of strings to the
  AlignmentResult (encoding, windows, kernels, results in input order). Numba
  compilation is excluded: every mode, both score widths and both traceback
  settings are run once on a small set first.
- parasail, in the same process, on the same N cores: a ``multiprocessing`` pool of
  N worker processes (started and warmed before timing); the rows ``i`` are
  handed out largest first, one task per row, and a worker aligns sequence ``i``
  against every ``j > i`` with one profile per row (``profile_create_16``).
  Score-only: ``{sw,nw,sg}_striped_profile_16``; traceback:
  ``{sw,nw,sg}_trace_scan_profile_16`` and the CIGAR decoded (``.cigar.decode``).
  A pair whose 16-bit result saturates is redone with the 32-bit functions.
  The scores come back to the parent and are compared with pairalign's.

Usage::

    python benchmarks/cpu.py                 # 400 sequences, all cores
    python benchmarks/cpu.py --threads 2 --n 400
    python benchmarks/cpu.py --quick         # 120 sequences, a smoke run
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
if not DATA.exists():
    DATA = ROOT / "shared" / "data"

MODES = ("global", "semiglobal", "local")
_PFX = {"global": "nw", "semiglobal": "sg", "local": "sw"}
GAP_OPEN, GAP_EXTEND = 11, 1


# ---------------------------------------------------------------------------------
# workload
# ---------------------------------------------------------------------------------


def sample(n: int, seed: int) -> list[str]:
    import pairalign

    recs = pairalign.read_sequences(DATA / "proteome_HG003687.faa")
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(len(recs), size=min(n, len(recs)), replace=False))
    return [recs.sequences[k] for k in idx]


def cells_of(seqs: list[str]) -> int:
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    total = int(lengths.sum())
    return (total * total - int((lengths * lengths).sum())) // 2


# ---------------------------------------------------------------------------------
# parasail workers
# ---------------------------------------------------------------------------------

_W: dict = {}


def _init(seqs: list[str]) -> None:
    import parasail

    _W["seqs"] = seqs
    _W["matrix"] = parasail.blosum62
    _W["parasail"] = parasail


def _row(task: tuple[int, str, bool]) -> tuple[int, list[int], int, int]:
    """Align sequence ``i`` against every ``j > i``; scores, CIGAR bytes, 32-bit redos."""
    i, mode, traceback = task
    ps = _W["parasail"]
    seqs, matrix = _W["seqs"], _W["matrix"]
    pfx = _PFX[mode]
    kind = "trace_scan_profile" if traceback else "striped_profile"
    f16 = getattr(ps, f"{pfx}_{kind}_16")
    f32 = getattr(ps, f"{pfx}_{kind}_32")
    prof = ps.profile_create_16(seqs[i], matrix)
    prof32 = None
    scores = []
    cigar_bytes = 0
    redo = 0
    for j in range(i + 1, len(seqs)):
        r = f16(prof, seqs[j], GAP_OPEN, GAP_EXTEND)
        if r.saturated:
            if prof32 is None:
                prof32 = ps.profile_create_32(seqs[i], matrix)
            r = f32(prof32, seqs[j], GAP_OPEN, GAP_EXTEND)
            redo += 1
        if traceback:
            cigar_bytes += len(r.cigar.decode)
        scores.append(r.score)
    return i, scores, cigar_bytes, redo


def run_parasail(pool, seqs: list[str], mode: str, traceback: bool) -> tuple[float, np.ndarray, int]:
    n = len(seqs)
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    suffix = np.concatenate([np.cumsum(lengths[::-1])[::-1][1:], [0]])
    cost = lengths * suffix
    order = np.argsort(-cost, kind="stable")  # largest rows first (LPT-like)
    tasks = [(int(i), mode, traceback) for i in order if i < n - 1]
    t0 = time.perf_counter()
    rows = {}
    redo = 0
    for i, scores, _, r in pool.imap_unordered(_row, tasks, chunksize=1):
        rows[i] = scores
        redo += r
    elapsed = time.perf_counter() - t0
    out = np.concatenate([np.asarray(rows[i], np.int64) for i in range(n - 1)])
    return elapsed, out, redo


# ---------------------------------------------------------------------------------
# pairalign
# ---------------------------------------------------------------------------------


def warm_up(seqs: list[str], threads: int) -> None:
    """Compile (or load from numba's cache) every kernel variant the runs use."""
    import pairalign

    by_len = sorted(seqs, key=len)
    few = by_len[:24] + by_len[-2:]  # short pairs (16-bit) and the longest (32-bit)
    for mode in MODES:
        for tb in (True, False):
            pairalign.align_all(few, mode=mode, traceback=tb, backend="cpu", threads=threads,
                                window=16)


def run_pairalign(seqs: list[str], mode: str, traceback: bool, threads: int):
    import pairalign

    t0 = time.perf_counter()
    res = pairalign.align_all(seqs, mode=mode, traceback=traceback, backend="cpu",
                              threads=threads, gap_open=GAP_OPEN, gap_extend=GAP_EXTEND)
    return time.perf_counter() - t0, res


# ---------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=400, help="sequences sampled (default 400)")
    ap.add_argument("--seed", type=int, default=1, help="sampling seed (default 1)")
    ap.add_argument("--threads", type=int, default=None,
                    help="cores for both: pairalign threads and parasail workers (default all)")
    ap.add_argument("--quick", action="store_true", help="120 sequences: a smoke run")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each measurement; the fastest is reported (default 1)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n = min(args.n, 120)
    threads = args.threads or len(os.sched_getaffinity(0))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]

    import numba
    import parasail

    import pairalign

    seqs = sample(args.n, args.seed)
    lengths = np.array([len(s) for s in seqs])
    cells = cells_of(seqs)
    pairs = len(seqs) * (len(seqs) - 1) // 2
    print(f"pairalign {pairalign.__version__} (numba {numba.__version__}), "
          f"parasail {parasail.__version__}, Python {platform.python_version()}")
    print(f"CPU: {cpu_model()}, {threads} cores used; {datetime.date.today().isoformat()}")
    print(f"workload: {len(seqs)} proteins of proteome_HG003687.faa (seed {args.seed}), "
          f"{lengths.min()}-{lengths.max()} aa, median {int(np.median(lengths))}; "
          f"{pairs:,} pairs, {cells / 1e9:.2f} G cells; BLOSUM62, gaps {GAP_OPEN}/{GAP_EXTEND}")

    ctx = mp.get_context("spawn")
    with ctx.Pool(threads, initializer=_init, initargs=(seqs,)) as pool:
        # start and warm the workers (imports, one tiny task each)
        list(pool.imap_unordered(_row, [(len(seqs) - 2, "local", True)] * threads))
        t0 = time.perf_counter()
        warm_up(seqs, threads)
        print(f"numba warm-up (excluded): {time.perf_counter() - t0:.1f} s")
        print()
        header = (f"{'mode':<11} {'traceback':<9} {'pairalign s':>11} {'GCUPS':>7} "
                  f"{'parasail s':>10} {'GCUPS':>7} {'ratio':>6}  scores")
        print(header)
        print("-" * len(header))
        rows = []
        for mode in modes:
            for tb in (True, False):
                t_pa = t_ps = float("inf")
                for _ in range(max(1, args.repeat)):
                    t, res = run_pairalign(seqs, mode, tb, threads)
                    t_pa = min(t_pa, t)
                    t, ps_scores, redo = run_parasail(pool, seqs, mode, tb)
                    t_ps = min(t_ps, t)
                same = np.array_equal(res.pairs.score.astype(np.int64), ps_scores)
                g_pa, g_ps = cells / t_pa / 1e9, cells / t_ps / 1e9
                note = "equal" if same else f"DIFFER ({int((res.pairs.score != ps_scores).sum())})"
                if redo:
                    note += f", parasail 32-bit redo {redo}"
                print(f"{mode:<11} {'yes' if tb else 'no':<9} {t_pa:>11.2f} {g_pa:>7.2f} "
                      f"{t_ps:>10.2f} {g_ps:>7.2f} {g_pa / g_ps:>6.2f}  {note}", flush=True)
                rows.append((mode, tb, t_pa, g_pa, t_ps, g_ps, same))
    print()
    print("ratio = pairalign GCUPS / parasail GCUPS; pairalign timed end to end "
          "(list of str in, AlignmentResult out), numba compilation excluded.")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
