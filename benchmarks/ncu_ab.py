"""The bounded traceback's kernels in isolation, this ``align.cu`` against
another version: Nsight Compute runs ``profile_bounded.py`` once for each and
prints, launch by launch, each kernel's time, instructions and what held it.

    python benchmarks/ncu_ab.py --source old_align.cu [--cells 1e11]

In a run (``kernel_ab.py``) two windows share the GPU, so the kernels' event
times overlap and an A/B of one kernel there mostly measures its neighbours;
under ``ncu`` each launch runs alone. Both versions run the same windows (the
same sampled proteins), so launches pair up by their place in the run.
"""

from __future__ import annotations

import argparse
import csv
import glob
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Nsight Compute's metric for each column of the table.
METRICS = {
    "us": "gpu__time_duration.sum",
    "Ginst": "smsp__inst_executed.sum",
    "issue%": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "alu%": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "longsb": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
}
#: Each column's scale from the metric's unit (ns, instructions).
SCALE = {"us": 1e-3, "Ginst": 1e-9}


def find_ncu() -> str:
    """The ``ncu`` on the path, or the newest under /opt/nvidia."""
    path = shutil.which("ncu")
    if path:
        return path
    found = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    if not found:
        raise SystemExit("ncu_ab.py: no ncu on the path or under /opt/nvidia/nsight-compute")
    return found[-1]


def parse(text: str, metrics: dict[str, str] = METRICS,
          scale: dict[str, float] = SCALE) -> list[tuple[str, dict[str, float]]]:
    """Each profiled launch of ncu's ``--csv --page raw`` output: the kernel's
    name and the columns of ``metrics`` (column -> metric), each times its
    ``scale``."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if not rows:
        return []
    header, launches = rows[0], []
    for row in rows[1:]:
        d = dict(zip(header, row))
        if not d.get("ID", "").strip():  # the units row
            continue
        launches.append((d["Kernel Name"], {
            col: float(d[m].replace(",", "")) * scale.get(col, 1.0)
            for col, m in metrics.items()}))
    return launches


def profile(ncu: str, args, source: str | None) -> list[tuple[str, dict[str, float]]]:
    cmd = [ncu, "--clock-control", "none", "-k", f"regex:^({args.kernels})$",
           "--launch-skip", str(args.skip), "--launch-count", str(args.count), "--csv",
           "--page", "raw", "--metrics", ",".join(METRICS.values()), sys.executable,
           str(HERE / "profile_bounded.py"), "--cells", str(args.cells)]
    if source:
        cmd += ["--source", str(Path(source).resolve())]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE)
    launches = parse(out.stdout)
    if not launches:
        raise SystemExit(f"ncu_ab.py: no launches profiled ({source or 'this align.cu'}):\n"
                         + (out.stderr or out.stdout)[-2000:])
    return launches


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--source", required=True, help="the other version of align.cu")
    ap.add_argument("--cells", type=float, default=1e11)
    ap.add_argument("--kernels", default="bound_starts|fill_box",
                    help="kernel names, a regular expression")
    ap.add_argument("--skip", type=int, default=3,
                    help="matching launches to skip (the warm-up run's)")
    ap.add_argument("--count", type=int, default=6)
    args = ap.parse_args()
    ncu = find_ncu()
    this, other = profile(ncu, args, None), profile(ncu, args, args.source)
    cols = list(METRICS)
    print(f"{'kernel':14} " + " ".join(f"{c:>8} {'other':>8}" for c in cols) + "  time ratio")
    totals: dict[str, list[float]] = {}
    for (name, a), (other_name, b) in zip(this, other):
        if name != other_name:
            raise SystemExit(f"ncu_ab.py: launches differ ({name} against {other_name})")
        print(f"{name[:14]:14} " + " ".join(f"{a[c]:8.3g} {b[c]:8.3g}" for c in cols)
              + f"  {a['us'] / b['us']:.3f}")
        t = totals.setdefault(name, [0.0, 0.0])
        t[0] += a["us"]
        t[1] += b["us"]
    for name, (a, b) in totals.items():
        print(f"total {name}: {a:.0f} us against {b:.0f} us ({a / b:.3f})")


if __name__ == "__main__":
    main()
