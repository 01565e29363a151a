"""Where fill2's instructions and stalls go, block by block, under Nsight Compute.

    python benchmarks/sass_counts.py [--lengths 128,1024] [--modes local,global]
                                     [--cells 1e11] [--count 2] [--sampled] [--traceback]
                                     [--top 40]

For each mode and workload (random proteins of each length, and with
``--sampled`` the sampled proteome workload), ``profile_fill.py`` runs under
``ncu --section SourceCounters`` (the first ``--count`` fill2 launches), and
ncu's source page gives each SASS instruction's executed count (warp level)
and its stall samples, summed over the launches by offset in the function;
launches of the other score width's module (fill2's 16-bit and 32-bit
code, which the sampled workload runs both of) are counted apart, and the
busiest signature is the one printed.

Printed per workload: the code's blocks (runs of instructions with one
count) that hold at least 0.5% of the instructions or of the samples, each
with its count against the hottest instruction's (the band loop's, once a
warp-step), so that the share of steps that enter the local slow path, or
the samples at a barrier, read off directly. Then, for two lengths, each
instruction's count a step at the short length over the long one, as counts
a band (a band's cost c adds c / s to a step's count at s steps a band), the
instructions with the most, and the sum (against ``band_cost.py``'s fit).
ncu's CSV goes to ``--out`` (one a mode and workload) for a closer look.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
from pathlib import Path

from ncu_ab import find_ncu  # noqa: E402
import profile_fill  # noqa: E402

HERE = Path(__file__).resolve().parent


def _number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def parse_source(text: str) -> dict[str, dict[str, dict]]:
    """ncu's ``--page source --print-source sass --csv``, one table a kernel
    signature (the 16-bit and 32-bit modules' fill2 differ in their code, so
    their offsets must not be summed together), each summed over that
    signature's launches by offset from the function's first instruction
    (each process loads the module at its own address): each instruction's
    SASS, executed count (warp level) and stall samples."""
    tables: dict[str, dict[str, dict]] = {}
    table = tables.setdefault("", {})
    header: list[str] | None = None
    for row in csv.reader(line for line in text.splitlines() if line.startswith('"')):
        if row and row[0] == "Kernel Name":
            table = tables.setdefault(row[1] if len(row) > 1 else "", {})
            header = None
            continue
        if "Source" in row and any(k.strip("# ").endswith("Address") for k in row):
            header = row
            addr_key = next(k for k in row if k.strip("# ").endswith("Address"))
            base = None
            continue
        if header is None or len(row) != len(header):
            continue
        d = dict(zip(header, row))
        addr = int(d[addr_key], 16)
        base = addr if base is None else base
        executed = next((d[k] for k in header if k.startswith("Instructions Executed")), "")
        samples = next((d[k] for k in header
                        if k.startswith("Warp Stall Sampling (All")), "")
        entry = table.setdefault(f"{addr - base:05x}", {"sass": d["Source"].strip(), "exec": 0.0,
                                                "samples": 0.0})
        entry["exec"] += _number(executed)
        entry["samples"] += _number(samples)
    return {name: t for name, t in tables.items() if t}


def busiest(tables: dict[str, dict[str, dict]]) -> tuple[str, dict[str, dict]]:
    """The signature whose launches executed the most instructions, and its
    table."""
    return max(tables.items(), key=lambda kv: sum(e["exec"] for e in kv[1].values()))


def profile(ncu: str, mode: str, length: int, cells: float, count: int, out: Path,
            traceback: bool = False) -> dict:
    """The table of :func:`parse_source` for random proteins of ``length``
    residues (0: the sampled workload), score-only or with ``traceback``."""
    name = f"{mode}_{length or 'sampled'}{'_tb' if traceback else ''}"
    rep = Path("/tmp") / f"sass_counts_{name}"
    run = [ncu, "--clock-control", "none", "-k", "regex:fill2", "--launch-count", str(count),
           "--section", "SourceCounters", "--export", str(rep), "--force-overwrite",
           *profile_fill.command(length, cells, mode, traceback)]
    done = subprocess.run(run, capture_output=True, text=True, cwd=HERE)
    if done.returncode:
        raise SystemExit(f"sass_counts.py: ncu failed at {name}:\n"
                         + (done.stderr or done.stdout)[-2000:])
    page = subprocess.run([ncu, "--import", f"{rep}.ncu-rep", "--page", "source",
                           "--print-source", "sass", "--csv"], capture_output=True, text=True)
    (out / f"fill2_{name}.csv").write_text(page.stdout)
    tables = parse_source(page.stdout)
    if not tables:
        raise SystemExit(f"sass_counts.py: no SASS rows at {name}:\n"
                         + (page.stderr or page.stdout)[:3000])
    signature, table = busiest(tables)
    if len(tables) > 1:
        width = "16-bit" if "short *" in signature else "32-bit"
        print(f"{name}: {len(tables)} fill2 signatures profiled; counting the busiest, the "
              f"{width} module's")
    return table


def runs_of(table: dict) -> list[list]:
    """Runs of consecutive instructions with one executed count: [first
    address, last address, count, instructions, stall samples, first SASS]."""
    runs: list[list] = []
    for addr, e in table.items():
        if runs and runs[-1][2] == e["exec"]:
            runs[-1][1] = addr
            runs[-1][3] += 1
            runs[-1][4] += e["samples"]
        else:
            runs.append([addr, addr, e["exec"], 1, e["samples"], e["sass"]])
    return runs


def loop_count(runs: list[list]) -> float:
    """The band loop body's executed count (once a warp-step): the run that
    issues the most. A lone hotter instruction (a BSYNC that both of a
    branch's paths reach) would not count steps."""
    return max(runs, key=lambda r: r[2] * r[3])[2] or 1.0


def blocks(table: dict, least: float = 0.005) -> None:
    """The runs of :func:`runs_of` that hold at least ``least`` of the
    instructions or of the stall samples, each count against the band loop
    body's."""
    inst = sum(e["exec"] for e in table.values()) or 1.0
    samples = sum(e["samples"] for e in table.values()) or 1.0
    runs = runs_of(table)
    hot = loop_count(runs)
    print(f"  {'instructions':>13} {'n':>4} {'a step':>7} {'inst %':>7} {'samples %':>9}  first")
    for first, last, count, n, smp, sass in runs:
        if count * n / inst >= least or smp / samples >= least:
            print(f"  {first}-{last} {n:4d} {count / hot:7.3f} {100 * count * n / inst:7.1f} "
                  f"{100 * smp / samples:9.1f}  {sass[:60]}")


def compare(short: dict, long: dict, steps: tuple[int, int], top: int) -> None:
    """Each instruction's count a step (of :func:`loop_count`) at both
    lengths, and its excess at the short length, in counts a band: a band's
    cost c adds c / s to a step's count at s steps a band, so the excess is
    c (1 / s_short - 1 / s_long)."""
    steps_a_band = 1.0 / (1.0 / steps[0] - 1.0 / steps[1])
    hot_s = loop_count(runs_of(short))
    hot_l = loop_count(runs_of(long))
    rows = []
    for addr, e in short.items():
        rs = e["exec"] / hot_s
        rl = long.get(addr, {"exec": 0.0})["exec"] / hot_l
        rows.append((addr, e["sass"], rs, rl, (rs - rl) * steps_a_band, e["samples"]))
    total = sum(r[4] for r in rows)
    loop_samples = sum(r[5] for r in rows if r[2] > 0.98)
    all_samples = sum(r[5] for r in rows) or 1.0
    print(f"  excess a band, summed: {total:,.0f} warp instructions "
          f"(loop instructions: {sum(1 for r in rows if r[2] > 0.98)}, "
          f"{sum(r[2] for r in rows if r[2] > 0.98):.0f} a step); stall samples at "
          f"instructions run once a step or more: {loop_samples / all_samples:.0%}")
    print(f"  {'address':>8} {'a step, short':>13} {'long':>6} {'a band':>8} {'samples':>8}  SASS")
    for addr, sass, rs, rl, band, samples in sorted(rows, key=lambda r: -r[4])[:top]:
        print(f"  {addr:>8} {rs:13.3f} {rl:6.3f} {band:8.1f} {samples:8.0f}  {sass[:90]}")
    # contiguous runs of instructions with excess: the code regions
    regions, cur = [], None
    for addr, sass, rs, rl, band, samples in rows:
        if band > 0.5:
            if cur is None:
                cur = [addr, addr, 0.0, 0, 0.0]
            cur[1] = addr
            cur[2] += band
            cur[3] += 1
            cur[4] += samples
        elif cur is not None:
            regions.append(cur)
            cur = None
    if cur is not None:
        regions.append(cur)
    print("  regions (contiguous instructions with excess), largest first:")
    for first, last, band, n, samples in sorted(regions, key=lambda r: -r[2])[:12]:
        print(f"    {first}-{last}: {n} instructions, {band:,.0f} a band, {samples:.0f} samples")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="128,1024")
    ap.add_argument("--modes", default="local,global")
    ap.add_argument("--cells", type=float, default=1e11)
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--sampled", action="store_true",
                    help="the sampled proteome workload too (--cells of it)")
    ap.add_argument("--traceback", action="store_true",
                    help="the traceback kernels (fill2<mode, true>) instead")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    args = ap.parse_args()
    ncu = find_ncu()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lengths = [int(x) for x in args.lengths.split(",") if x]
    for mode in args.modes.split(","):
        tables = {}
        for n in lengths + ([0] if args.sampled else []):
            tables[n] = profile(ncu, mode, n, args.cells, args.count, out, args.traceback)
            print(f"{mode}, {f'length {n}' if n else 'sampled'}:")
            blocks(tables[n])
        if len(lengths) == 2:
            short, long = sorted(lengths)
            # a band of 128 rows runs m + G - 1 steps against targets of m
            # residues (groups of 4 lanes score-only, 8 with traceback)
            ramp = 7 if args.traceback else 3
            print(f"{mode}: lengths {short} against {long}")
            compare(tables[short], tables[long], (short + ramp, long + ramp), args.top)


if __name__ == "__main__":
    main()
