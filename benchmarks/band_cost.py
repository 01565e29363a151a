"""What a band of the packed score-only kernel costs, under Nsight Compute.

    python benchmarks/band_cost.py [--lengths 128,512,1024] [--cells 1e11] [--mode local]

``pack_shape.py`` fits the kernels' time to their issued lane-row-steps and a
fixed cost a band (v27's kernels: about 80 warp-steps of 32 rows a band). This
says what that cost is made of. For each length, ``profile_fill.py`` aligns
random proteins of that length under ``ncu`` (``fill2``'s launches, each alone),
and the launches' sums are fitted the same way, per metric: warp instructions
issued, and the warps' cycles in each stall reason (each reason's cycles per
issued instruction times the instructions). Printed: per length, the time, the
instructions and the stall cycles a cell; then per metric, its share a
lane-row-step and a band, and a band's in warp-steps of 32 rows.

Instructions a band well above a step's few hundred say the set-up is issue
work (the profile's build, the band's first loads); stall cycles a band
(long scoreboard, barrier, no instruction) say it waits.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import numpy as np

from ncu_ab import find_ncu, parse  # noqa: E402
from workloads import uniform_proteins  # noqa: E402
import pack_shape  # noqa: E402
import profile_fill  # noqa: E402

HERE = Path(__file__).resolve().parent
STALLS = ("long_scoreboard", "short_scoreboard", "wait", "barrier", "membar", "mio_throttle",
          "lg_throttle", "math_pipe_throttle", "no_instruction", "branch_resolving",
          "not_selected", "selected", "dispatch_stall", "misc", "sleeping", "drain")
METRICS = {"ns": "gpu__time_duration.sum", "inst": "smsp__inst_executed.sum"} | {
    s: f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio" for s in STALLS}


def profile(ncu: str, length: int, cells: float, mode: str) -> dict[str, float]:
    """fill2's launches of one run, summed: nanoseconds, instructions, and the
    warps' cycles in each stall reason."""
    cmd = [ncu, "--clock-control", "none", "-k", "regex:fill2", "--csv", "--page", "raw",
           "--metrics", ",".join(METRICS.values()), *profile_fill.command(length, cells, mode)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE)
    launches = parse(out.stdout, METRICS, {})
    if not launches:
        raise SystemExit(f"band_cost.py: no fill2 launch profiled at length {length}:\n"
                         + (out.stderr or out.stdout)[-2000:])
    tot = dict.fromkeys(METRICS, 0.0)
    for _name, m in launches:
        tot["ns"] += m["ns"]
        tot["inst"] += m["inst"]
        for s in STALLS:
            tot[s] += m[s] * m["inst"]
    tot["launches"] = len(launches)
    return tot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="128,512,1024")
    ap.add_argument("--cells", type=float, default=1e11)
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    args = ap.parse_args()
    ncu = find_ncu()
    rows = []
    for length in (int(x) for x in args.lengths.split(",")):
        # profile_fill.py's proteins for --length
        seqs = uniform_proteins(np.random.default_rng(5), args.cells, length)
        shape = pack_shape.count(seqs, args.mode)
        prof = profile(ncu, length, args.cells, args.mode)
        rows.append((length, shape, prof))
        c = shape["cells"]
        print(f"length {length}: {prof['launches']} launches, {c:.3g} cells, "
              f"{shape['bands_n']:,.0f} bands, {c / prof['ns']:,.0f} GCUPS under ncu, "
              f"{prof['inst'] * 32 / c:.2f} warp instructions a cell (x 32); stall cycles "
              "a cell (x 32): " + ", ".join(f"{s} {prof[s] * 32 / c:.2f}" for s in STALLS
                                            if prof[s] * 32 / c >= 0.05), flush=True)
    if len(rows) < 2:
        return
    x = np.array([[sh["groups"], sh["bands_n"]] for _l, sh, _p in rows])
    print("\nper metric: a lane-row-step's and a band's share (least squares of the relative "
          "errors over the lengths), "
          "a band in warp-steps of 32 rows")
    for key in ("ns", "inst", *STALLS):
        y = np.array([p[key] for _l, _s, p in rows])
        if not y.all():
            continue
        # relative errors: each length's row divided by its value
        (a, b), *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
        steps = b / a / 1024 if a else float("nan")
        fit = x @ np.array([a, b])
        rms = float(np.sqrt(np.mean((fit / y - 1) ** 2)))
        print(f"  {key:>18}: step {a:.4g}, band {b:.4g} ({steps:,.1f} warp-steps), "
              f"rms {rms:.1%}")


if __name__ == "__main__":
    main()
