"""Where the GPU idles between windows, and what each idle gap waited for.

    python benchmarks/window_gaps.py --cells 1e13 --traceback [--mode local] [--runs 2]
    python benchmarks/window_gaps.py --cells 1e13 --traceback --set FETCH_THREAD=True

Runs ``run_job`` on ``--cells`` sampled cells (the proteome with 0) ``--runs``
times after a warm-up (the first run is the first of its size in the process,
as the command line's only run is), and for each run takes every window's
span on the GPU (its first event after its slot was freed to its last, CUDA events) and,
on the host's clock, when the launching thread began to wait for a window's
end, noticed it, detached it and launched the slot's next window. A gap is a
stretch of the run in which no window's span is open; each is charged to the
window that ends it and to the slot's window before it:

- ``notice``: from that window's end on the device to the host noticing it
  (the host busy elsewhere: downloading, handing results on, launching);
- ``detach``: the host detaching it (the operation counts' download with
  traceback, the compaction queued);
- ``launch``: the next window's plan, layout and kernels queued;
- ``freed``: the device still copying the slot's results out after the
  launch (the slot's next window waits on that event);
- ``other``: a window with none before it on its slot (a run's first
  windows).

Also the gap before the first window (planning) and the totals. ``--set
ATTR=VALUE`` sets ``gpu_backend.ATTR`` first (as ``kernel_ab.py`` does).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workloads import (add_run_arguments, cells_of, proteome_or_sampled,  # noqa: E402
                       warm_gpu_backend)

from kernel_ab import set_all  # noqa: E402
from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402

STAGES = ("notice", "detach", "launch", "freed", "other")
#: the launching thread's timings printed for each run
HOST_STAGES = ("launch", "alloc", "layout", "wait", "download", "compact", "copy_out", "place")


class Recorder:
    """Host times (perf_counter) of one run's windows, keyed by launch number."""

    def __init__(self) -> None:
        self.origin_host = 0.0
        #: launch order: w, slot, ev, launch, wait, noticed, detach, freed
        self.windows: list[dict] = []

    def install(self) -> None:
        rec = self
        streams, launch, first, detach = (GPUBackend._window_streams, GPUBackend._launch,
                                          GPUBackend._first_done, GPUBackend._detach)

        def window_streams(self, depth):  # run_windows records its origin right after
            rec.windows.clear()
            out = streams(self, depth)
            rec.origin_host = time.perf_counter()
            return out

        def launch_(self, job, state, w, stream, bounded=None):
            t = time.perf_counter()
            h = launch(self, job, state, w, stream, bounded)
            h["_gap"] = len(rec.windows)
            rec.windows.append({"w": w, "slot": stream.ptr, "ev": h["ev"],
                                "launch": (t, time.perf_counter())})
            return h

        def first_done(self, running):
            t = time.perf_counter()
            h = first(self, running)
            rec.windows[h["_gap"]].update(wait=t, noticed=time.perf_counter())
            return h

        def detach_(self, job, h):
            k = h["_gap"]
            t = time.perf_counter()
            done = detach(self, job, h)
            rec.windows[k].update(detach=(t, time.perf_counter()), freed=done["freed"])
            rec.windows[k].setdefault("noticed", t)
            return done

        GPUBackend._window_streams = window_streams
        GPUBackend._launch = launch_
        GPUBackend._first_done = first_done
        GPUBackend._detach = detach_

    def table(self, be) -> list[dict]:
        """Each window's times in seconds since the run's origin event: device
        (start, end, freed) and host (launch, wait, noticed, detach)."""
        import cupy as cp

        def dev(ev):
            return cp.cuda.get_elapsed_time(be._origin, ev) / 1e3

        rows = []
        for r in self.windows:
            o = self.origin_host
            rows.append({
                "w": r["w"], "slot": r["slot"], "start": dev(r["ev"][3]), "end": dev(r["ev"][2]),
                "freed": dev(r["freed"]) if "freed" in r else None,
                "launch": tuple(t - o for t in r["launch"]),
                "noticed": r.get("noticed", np.nan) - o,
                "detach": tuple(t - o for t in r.get("detach", (np.nan, np.nan)))})
        return rows


def gaps(rows: list[dict], least: float) -> tuple[float, list[tuple]]:
    """The idle stretches between windows (at least ``least`` seconds) as
    (from, to, window that ends it, its slot's previous window or None),
    and the idle time before the first window."""
    order = sorted(range(len(rows)), key=lambda k: rows[k]["start"])
    prev_on_slot: dict[int, int] = {}
    last_of_slot: dict = {}
    for k in range(len(rows)):  # launch order
        if rows[k]["slot"] in last_of_slot:
            prev_on_slot[k] = last_of_slot[rows[k]["slot"]]
        last_of_slot[rows[k]["slot"]] = k
    before = rows[order[0]]["start"]
    found = []
    end = rows[order[0]]["end"]
    for k in order[1:]:
        if rows[k]["start"] - end >= least:
            found.append((end, rows[k]["start"], k, prev_on_slot.get(k)))
        end = max(end, rows[k]["end"])
    return before, found


def charge(rows: list[dict], gap: tuple) -> dict[str, float]:
    """A gap's seconds by what it waited for (STAGES), in the order they pass."""
    g0, g1, k, p = gap
    out = dict.fromkeys(STAGES, 0.0)
    if p is None:
        out["other"] = g1 - g0
        return out
    marks = [("other", rows[p]["end"]), ("notice", rows[p]["noticed"]),
             ("detach", rows[p]["detach"][1]), ("launch", rows[k]["launch"][1]),
             ("freed", g1)]
    at = g0
    for name, t in marks:
        t = min(max(t, at), g1)
        out[name] += t - at
        at = t
    return out


def report(rows: list[dict], least: float, show: int) -> None:
    """One run's gaps, charged (see the module's docstring), and its longest."""
    before, found = gaps(rows, least)
    charged = [charge(rows, g) for g in found]
    total = {s: sum(c[s] for c in charged) for s in STAGES}
    idle = sum(g1 - g0 for g0, g1, _, _ in found)
    span = max(r["end"] for r in rows)
    print(f"  before the first window {before * 1e3:.1f} ms; {len(found)} gaps "
          f"between windows, {idle * 1e3:.1f} ms; after the last window's end the run's "
          f"span ends at {span:.3f} s")
    print("  gaps by what they waited for (ms): "
          + ", ".join(f"{s} {total[s] * 1e3:.1f}" for s in STAGES))
    lengths = np.array([g1 - g0 for g0, g1, _, _ in found]) * 1e3
    tenths = np.zeros(10)
    np.add.at(tenths, np.array([min(int(10 * g0 / span), 9) for g0, _, _, _ in found], int),
              lengths)
    print("  gap ms by tenth of the span: " + " ".join(f"{x:.0f}" for x in tenths))
    if len(lengths):
        print("  gap ms: median {:.2f}, p90 {:.2f}, max {:.2f}".format(
            *np.percentile(lengths, [50, 90, 100])))
    print(f"  longest {show} (ms from the gap's start; window's pairs, cells a pair):")
    for g, c in sorted(zip(found, charged), key=lambda x: x[0][0] - x[0][1])[:show]:
        g0, g1, k, p = g
        w = rows[k]["w"]
        print(f"    at {g0:7.3f} s  {(g1 - g0) * 1e3:6.2f} ms  "
              + " ".join(f"{s} {c[s] * 1e3:.2f}" for s in STAGES if c[s])
              + f"  next: {w.pairs:,} pairs, {w.cells / max(w.pairs, 1):,.0f} cells a pair")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    add_run_arguments(ap)
    ap.add_argument("--least", type=float, default=1e-4, help="shortest gap counted, s")
    ap.add_argument("--show", type=int, default=12, help="longest gaps listed")
    ap.add_argument("--set", action="append", default=[],
                    help="ATTR=VALUE of gpu_backend (module.ATTR: of pairalign.module)")
    args = ap.parse_args()
    set_all(args.set)
    seqs = proteome_or_sampled(args.cells)
    cells = cells_of([len(s) for s in seqs])
    t = time.perf_counter()
    be = warm_gpu_backend(args.mode, args.traceback)
    print(f"warm-up: {time.perf_counter() - t:.1f} s", flush=True)
    sc = Scoring.create("protein")
    rec = Recorder()
    rec.install()
    for run in range(args.runs):
        job = Job(args.mode, sc, args.traceback, SortedSet.encode(seqs, sc))
        be.timings.clear()
        t = time.perf_counter()
        run_job(job, be)
        wall = time.perf_counter() - t
        tim = be.timings
        print(f"run {run}: wall {wall:.3f} s ({cells / wall / 1e9:.0f} GCUPS), GPU span "
              f"{tim.get('gpu_span', 0):.3f} s, busy {tim.get('gpu_busy', 0):.3f} s, "
              f"{len(rec.windows)} windows; launching thread: "
              + " ".join(f"{k} {v:.3f}" for k, v in tim.items()
                         if k in HOST_STAGES and v), flush=True)
        report(rec.table(be), args.least, args.show)


if __name__ == "__main__":
    main()
