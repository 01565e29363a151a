"""The score-only kernels (``--traceback``: the traceback's) on workloads of
one length, against the bare recurrence (``recurrence_ceiling.py``) in the
same process: how much of the gap between the two is the kernel's own step
and how much the shape of the sampled workload (partly filled bands, short
pairs, the windows' tails).

    python benchmarks/shape_rates.py [--cells 1e12] [--lengths 128,512,1024] [--traceback]
                                     [--variant NAME=ITEM,ITEM ...]

For each length L, random proteins of exactly L residues (whole bands of 128
rows: every lane-row holds cells), their all-vs-all score-only with BLOSUM62
11/1 in local and global mode, then the sampled proteome workload of the same
cells. Prints GPU-busy GCUPS (the union of the windows' spans; with
traceback, the walks' too) and its share of the bare recurrence's rate at the
same shape (32 rows a lane, the query couples' profile layout, two blocks an
SM; with traceback 16 rows, four blocks of 128). Score-only, each mode's
figures are then fitted by ``pack_shape.py``'s model (an issued lane-row-step
and a band's set-up). ``--variant`` (as ``kernel_ab.py``'s: definitions and
``gpu_backend`` settings) runs every workload again under other settings,
after the base.
"""

from __future__ import annotations

import argparse

import numpy as np

from workloads import cells_of, sampled_proteins, uniform_proteins  # noqa: E402
from kernel_ab import apply, parse_variants, run  # noqa: E402
import pack_shape  # noqa: E402

from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402


def bare_rates(traceback: bool) -> dict[str, float]:
    """GCUPS of the bare recurrence, local and global (recurrence_ceiling's
    query-couple variants, or with traceback its 16-row ones), median of five
    launches."""
    import cupy as cp

    import recurrence_ceiling as rc

    dev = cp.cuda.Device()
    mod = cp.RawModule(code=rc.SOURCE, options=(f"-arch=sm_{dev.compute_capability}",
                                                "-std=c++17"))
    prof = rc.profile(np.random.default_rng(1), 16 if traceback else 32)
    clk = cp.zeros(2, cp.int64)
    rates = {}
    for mode in ("local", "global"):
        _fn, launch, cells = rc.launcher(mod, f"{mode}16_tb" if traceback else f"{mode}32_couples",
                                         prof, 20000, clk)
        t, _mhz = rc.timed(launch, clk, 5)
        rates[mode] = cells / t / 1e9
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=1e12)
    ap.add_argument("--lengths", default="128,512,1024")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--traceback", action="store_true",
                    help="with traceback (GPU busy: the fills and the walks)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=DEF1,ATTR=VALUE,... (see kernel_ab.py); the base runs first")
    args = ap.parse_args()
    variants = parse_variants(args.variant)
    be = GPUBackend()
    bare = bare_rates(args.traceback)
    print("bare recurrence: " + ", ".join(f"{m} {g:.0f} GCUPS" for m, g in bare.items()),
          flush=True)
    rng = np.random.default_rng(5)
    workloads = []  # (key, label, sequences)
    for length in (int(x) for x in args.lengths.split(",")):
        seqs = uniform_proteins(rng, args.cells, length)
        workloads.append((str(length), f"length {length}, n={len(seqs)}", seqs))
    sampled = sampled_proteins(args.cells)
    workloads.append(("sampled", f"sampled, n={len(sampled)}", sampled))
    measured: dict = {}  # (variant, mode) -> {workload key: GPU GCUPS}
    for vname, items in variants:
        for mode in ("local", "global"):  # compiles (a module a mode) and warms up
            run(be, workloads[0][2][:200], args.traceback, items, mode)
        print(f"\nvariant {vname} {','.join(items)}")
        print(f"{'workload':24} {'mode':7} {'cells':>9} {'wall s':>7} {'GPU busy s':>10} "
              f"{'GPU GCUPS':>9} {'of bare':>7}")
        for key, name, seqs in workloads:
            cells = cells_of([len(s) for s in seqs])
            for mode in ("local", "global"):
                best = None
                for _ in range(args.reps):
                    (wall, _f, _w, _t, stats), _digest = run(be, seqs, args.traceback, items,
                                                              mode)
                    busy = stats["gpu_busy"]
                    if best is None or busy < best[1]:
                        best = (wall, busy)
                wall, busy = best
                g = cells / busy / 1e9
                measured.setdefault((vname, mode), {})[key] = g
                print(f"{name:24} {mode:7} {cells:9.3g} {wall:7.3f} {busy:10.3f} {g:9.0f} "
                      f"{g / bare[mode]:7.2f}", flush=True)
    if args.traceback:
        return
    for mode in ("local", "global"):
        apply(variants[0][1], mode)  # the base's layout (query blocks) for the counts
        tots = {key: pack_shape.count(seqs, mode) for key, _n, seqs in workloads}
        for vname, _items in variants:
            print(f"\n{vname}, {mode}:", end="")
            pack_shape.fit(tots, measured[(vname, mode)])


if __name__ == "__main__":
    main()
