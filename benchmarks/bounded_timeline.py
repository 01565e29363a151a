"""Where a bounded local traceback run (gpu_backend.BOUNDED_TRACEBACK) spends
the GPU's time, window by window, and what it would gain if its passes after
the score pass cost nothing:

    python benchmarks/bounded_timeline.py --cells 1e13 [--full]

For each window (launch order): its stages as CUDA-event times since the run
began (score pass, reverse pass, box layout, box fill, walk), its boxes (how
many, how many wide, the largest, the wide ones' share of the box cells, and
the boxes from row 1, column 1: whole prefixes, of the pairs whose reverse pass
reached its cap and of those whose alignment starts there; with ``--stats``).
Then, over the run: the time some window is in its score pass, and the time
no window is but one is in a later stage (what the later stages add to the
GPU's span where they do not overlap a score pass). ``--full`` runs the full
traceback of the same job after it, in the same process, for its wall time.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workloads import cells_of, sampled_proteins  # noqa: E402

from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402

STAGES = ("score", "reverse", "layout", "boxes", "walk")


def instrument(be: GPUBackend, rows: list, stats: bool) -> None:
    """Record each bounded window's stage marks (and, with ``stats``, its box
    statistics: the host then waits for each window before the next takes its
    slot, which moves the timeline) in ``rows``."""
    cp = be.cp
    passes, detach, fetch = be._bounded_passes, be._detach, be._fetch
    arrays: dict = {}

    def bounded_passes(job, state, a, mod, dtype):
        arrays[id(a["counters"])] = a
        return passes(job, state, a, mod, dtype)

    def detached(job, h):
        a = arrays.pop(id(h.get("counters")), None)
        if stats and a is not None and h.get("bounded"):
            h["ev"][2].synchronize()
            s, i0, j0 = a["score"], a["box_i0"], a["box_j0"]
            live = s > 0
            n = cp.where(live, a["ei"] - i0 + 1, 0).astype(cp.int64)
            m = cp.where(live, a["ej"] - j0 + 1, 0).astype(cp.int64)
            cells = n * m
            steps = (n + 7) // 8 * m
            wide = steps >= int(be._box_wide_steps(job))
            prefix = live & (i0 == 1) & (j0 == 1)
            k = int(cp.argmax(cells))
            h["stats"] = dict(boxes=int(live.sum()), wide=int(wide.sum()),
                              box_cells=int(cells.sum()), wide_cells=int(cells[wide].sum()),
                              prefix=int(prefix.sum()), prefix_cells=int(cells[prefix].sum()),
                              largest=(int(n[k]), int(m[k])))
        return detach(job, h)

    def fetched(job, done):
        h = done["h"]
        marks = [h["ev"][0], *h.get("ev_bounded", []), h["ev"][1], h["ev"][2]]
        at = [cp.cuda.get_elapsed_time(be._origin, e) / 1e3 for e in marks]
        rows.append((at, h.get("stats"), h.get("bounded")))
        return fetch(job, done)

    be._bounded_passes, be._detach, be._fetch = bounded_passes, detached, fetched


TIMINGS = ("score_pass", "bound_pass", "box_order", "box_fill", "fill", "traceback",
           "gpu_busy", "gpu_span", "wait")


def timed_run(be: GPUBackend, sc: Scoring, seqs: list[str], rows: list, name: str) -> None:
    """One local run with traceback of ``seqs``, its windows' marks in ``rows``."""
    rows.clear()
    cells = cells_of([len(s) for s in seqs])
    job = Job("local", sc, True, SortedSet.encode(seqs, sc))
    be.timings.clear()
    t = time.perf_counter()
    run_job(job, be)
    wall = time.perf_counter() - t
    print(f"{name}: {cells:.3g} cells, {len(rows)} windows, wall {wall:.3f} s "
          f"({cells / wall / 1e9:,.0f} GCUPS); "
          + " ".join(f"{k} {v:.3f}" for k, v in be.timings.items() if k in TIMINGS), flush=True)


def covered(spans) -> float:
    return gpu_backend._covered(np.array(spans)) if len(spans) else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=1e12)
    ap.add_argument("--full", action="store_true", help="the full traceback after it")
    ap.add_argument("--show", type=int, default=40, help="windows printed")
    ap.add_argument("--stats", action="store_true",
                    help="each window's boxes too (waits for every window: moves the timeline)")
    args = ap.parse_args()
    sc = Scoring.create("protein")
    seqs = sampled_proteins(args.cells)
    be = GPUBackend()
    gpu_backend.BOUNDED_TRACEBACK = True
    rows: list = []
    instrument(be, rows, args.stats)
    # the warm-up loads both score widths' modules (the shortest proteins: 16 bits)
    for warm in (seqs[:400], sorted(seqs, key=len)[:400]):
        run_job(Job("local", sc, True, SortedSet.encode(warm, sc)), be)
    timed_run(be, sc, seqs, rows, "bounded")
    rows.sort(key=lambda r: r[0][0])
    print("stage ends in ms after the score pass began; boxes")
    print(f"{'start s':>8} {'score':>7} {'rev':>6} {'lay':>6} {'box':>7} {'walk':>6} "
          f"{'boxes':>8} {'wide':>6} {'wide%':>6} {'prefix':>7} {'%':>5} largest")
    for at, st, _ in rows[:args.show]:
        rel = [1e3 * (x - at[0]) for x in at[1:]]
        line = f"{at[0]:8.3f} " + " ".join(f"{x:6.1f}" for x in rel)
        if st:
            line += (f" {st['boxes']:8,} {st['wide']:6,} "
                     f"{100 * st['wide_cells'] / max(st['box_cells'], 1):5.1f}% "
                     f"{st['prefix']:7,} {100 * st['prefix_cells'] / max(st['box_cells'], 1):4.1f}% "
                     f"{st['largest'][0]}x{st['largest'][1]}")
        print(line)
    score_spans = [(r[0][0], r[0][1]) for r in rows if r[2]]
    later = [(r[0][1], r[0][-1]) for r in rows if r[2]]
    everything = [(r[0][0], r[0][-1]) for r in rows]
    both = covered(score_spans + later)
    print(f"GPU span covered {covered(everything):.3f} s: a score pass running "
          f"{covered(score_spans):.3f} s, later stages with no score pass running "
          f"{both - covered(score_spans):.3f} s")
    for k, name in enumerate(STAGES[1:], start=1):
        spans = [(r[0][k], r[0][k + 1]) for r in rows if r[2]]
        print(f"  {name:8} summed {sum(e - s for s, e in spans):.3f} s, covered {covered(spans):.3f} s")
    if args.full:
        gpu_backend.BOUNDED_TRACEBACK = False
        timed_run(be, sc, seqs, rows, "full")


if __name__ == "__main__":
    main()
