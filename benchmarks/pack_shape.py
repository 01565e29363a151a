"""Where the packed score-only kernel's lane-steps go, counted on the CPU (no device).

    python benchmarks/pack_shape.py [--cells 1e12] [--lengths 128,512,1024] [--mode local]
                                    [--measured 128=3096,512=4430,1024=4654,sampled=3588]

For each workload (random proteins of one length, as ``shape_rates.py`` makes
them, and the sampled proteome workload) the windows are planned as the GPU
backend plans them score-only (``GPUBackend._plan_for``: windows of 1,024,
query couples, couples of targets, blocks of 8 warps sharing a profile), and
every warp of ``fill2`` is followed through its bands (32 rows a lane, groups
of 4 lanes, a query's last band in stripes of 8 or 16 rows where its rows fit,
as ``fill_pack`` does). A lane-row-step fills two cells (the 16-bit halves);
the issued lane-row-steps are counted under each of the shape's losses in
turn:

1. ``halves``: the two pairs of a couple run together, the longer target's
   columns (target couples) or the longer query's rows (query couples);
2. ``bands``: a query's rows rounded up to whole bands of its stripes;
3. ``short``: the 8- and 16-row stripes' rows weighted by their cost against
   a 32-row stripe's (``--cost16``, ``--cost8``: their step's instructions a
   row, static SASS, NOTES v25);
4. ``ramp``: each band's ``last`` extra steps while the group's lanes start
   one after another;
5. ``warp``: every group of a warp runs as long as its longest couple;
6. ``groups``: the empty groups of warps with fewer than 8 couples.

Printed per workload: the packed kernel's share of the cells, the efficiency
(cells / 2 over the issued lane-row-steps) after each loss, the bands and
their mean steps. With ``--measured`` (GPU-busy GCUPS of the same workloads,
e.g. from ``shape_rates.py``) it fits ``time = a * issued + b * bands`` by
least squares: the rate of an issued lane-row-step and a band's fixed cost
in steps, and what each workload would run at without its shape's losses.
"""

from __future__ import annotations

import argparse

import numpy as np

from workloads import sampled_proteins, uniform_proteins  # noqa: E402

from pairalign.job import Job, SortedSet
from pairalign.kernels import gpu_backend as gb
from pairalign.kernels.gpu_layout import expand
from pairalign.scheduler.windows import plan_windows
from pairalign.scoring import Scoring

WIDTH = 1024
# a row of an 8- and of a 16-row stripe against one of a 32-row stripe: their
# steps' instructions a row in the static SASS of the v25 loops (1.84-1.93 and
# 1.22-1.28, nvcc 13)
COST8, COST16 = 1.9, 1.25
STAGES = ("ideal", "halves", "bands", "short", "ramp", "warp", "groups")


def band_table(rows: np.ndarray, R: int, G: int, short_last: bool = True):
    """Per query length (``rows``), its bands as ``fill_pack`` runs them:
    ``(band_rows, stripe_rows, last)`` arrays of shape ``(len(rows), nb)``
    (0 where a query has fewer bands): rows a band holds (G stripes), its
    stripes' rows and its last lane (``min(G - 1, stripes left - 1)``)."""
    rows = np.asarray(rows, np.int64)
    nstripes = -(-rows // R)
    nfull = nstripes.copy()
    if short_last:
        short = (nstripes > 0) & (rows - (nstripes - 1) // G * (G * R) <= G * 16)
        nfull = np.where(short, (nstripes - 1) // G * G, nstripes)
    full_bands = -(-nfull // G)
    tail = nfull < nstripes
    nb = int((full_bands + tail).max(initial=0))
    band_rows = np.zeros((len(rows), nb), np.int64)
    stripe_rows = np.zeros((len(rows), nb), np.int64)
    last = np.zeros((len(rows), nb), np.int64)
    for b in range(nb):
        full = b < full_bands
        left = nfull - b * G  # full stripes from this band on
        stripe_rows[:, b] = np.where(full, R, 0)
        band_rows[:, b] = np.where(full, G * R, 0)
        last[:, b] = np.where(full, np.minimum(G - 1, left - 1), 0)
        here = tail & (b == full_bands)
        rest = rows - nfull * R
        s = np.where(rest <= G * 8, 8, 16)
        st = -(-rows // s) - nfull * (R // s)  # the short band's stripes
        stripe_rows[:, b] = np.where(here, s, stripe_rows[:, b])
        band_rows[:, b] = np.where(here, G * s, band_rows[:, b])
        last[:, b] = np.where(here, np.minimum(G - 1, st - 1), last[:, b])
    return band_rows, stripe_rows, last


def count(seqs: list[str], mode: str, cost16: float = COST16, cost8: float = COST8) -> dict:
    """The issued lane-row-steps of the packed kernel after each loss
    (:data:`STAGES`), its cells, the job's cells, the warps' bands and their
    steps, over the job's windows."""
    sc = Scoring.create("protein")
    job = Job(mode, sc, False, SortedSet.encode(seqs, sc))
    R, G = gb._pack_shape(False, mode)
    groups = 32 // G
    be = gb.GPUBackend.planner()
    lengths = be._job_plans(job)["lengths"]
    col_base = job.joined()[2]
    rl, cl = job.rows.lengths.astype(np.int64), job.col_set.lengths.astype(np.int64)
    tot = dict.fromkeys(STAGES, 0.0)
    tot.update(cells=0.0, packed_cells=0.0, bands=0.0, band_steps=0.0, warps=0, empty_warps=0)
    for w in plan_windows(job.rows.lengths, None, WIDTH):
        plan = be._plan_for(job, w, False)
        ex = expand(plan, lengths, col_base, False)
        n_all = rl[ex["rows"].astype(np.int64)]
        m_all = cl[ex["cols"].astype(np.int64) - col_base]
        tot["cells"] += float((n_all * m_all).sum())
        # pairs 2c and 2c + 1 are couple c; couple_warps gives each warp's couples
        n = n_all[:plan.npack].reshape(-1, 2)
        m = m_all[:plan.npack].reshape(-1, 2)
        cw = plan.couple_warps.astype(np.int64)
        sizes = np.diff(cw)
        tot["warps"] += len(sizes)
        tot["live_warps"] = tot.get("live_warps", 0) + int((sizes > 0).sum())
        tot["empty_warps"] += int((sizes == 0).sum())
        warp_of = np.repeat(np.arange(len(sizes)), sizes)
        cells = (n * m).sum(axis=1).astype(np.float64)
        tot["packed_cells"] += float(cells.sum())
        tot["ideal"] += float(cells.sum()) / 2
        # a couple runs the longer query's rows and the longer target's columns
        nc, mc = n.max(axis=1), m.max(axis=1)
        tot["halves"] += float((nc * mc).sum())
        # a warp's couples share its rows (one query, or one query couple)
        live = sizes > 0
        wrows = np.zeros(len(sizes), np.int64)
        wrows[live] = nc[cw[:-1][live]]
        wmax = np.zeros(len(sizes), np.int64)
        np.maximum.at(wmax, warp_of, mc)
        brows, srows, last = band_table(wrows, R, G, short_last=R == 32)
        wgt = np.select([srows == 32, srows == 16, srows == 8], [1.0, cost16, cost8], 0.0)
        # per warp: a group's lane-rows a step summed over the bands, rounded to
        # whole bands, then weighted; and the bands' ramps (lane-row-steps)
        rounded = brows.sum(axis=1).astype(np.float64)
        weighted = (brows * wgt).sum(axis=1)
        ramp = (brows * wgt * last).sum(axis=1)
        tot["bands"] += float(rounded[warp_of].dot(mc))
        tot["short"] += float(weighted[warp_of].dot(mc))
        tot["ramp"] += float(weighted[warp_of].dot(mc) + ramp[warp_of].sum())
        per_group = weighted * wmax + ramp  # a group that runs as long as the warp
        tot["warp"] += float((sizes * per_group).sum())
        tot["groups"] += float((groups * live * per_group).sum())
        nbands = (brows > 0).sum(axis=1)
        tot["band_steps"] += float((nbands * wmax).sum() + last.sum())
        tot["bands_n"] = tot.get("bands_n", 0.0) + float(nbands.sum())
    return tot


def fit(tots: dict[str, dict], measured: dict[str, float]) -> None:
    """``time = a * issued + b * bands`` over the measured workloads, by least
    squares; prints the fit and each workload's rate without its losses."""
    names = [k for k in measured if k in tots]
    if len(names) < 2:
        print("fit: needs two measured workloads or more")
        return
    t = np.array([tots[k]["cells"] / (measured[k] * 1e9) for k in names])
    x = np.array([[tots[k]["groups"], tots[k]["bands_n"]] for k in names])
    (a, b), *_ = np.linalg.lstsq(x, t, rcond=None)
    print(f"\nfit over {', '.join(names)}: an issued lane-row-step {a * 1e15:.3f} fs "
          f"({2 / a / 1e9:,.0f} GCUPS with no loss and no band set-up); a band's set-up "
          f"{b * 1e9:.1f} ns of the whole GPU = {b / a / 1024:,.1f} warp-steps of 32 rows")
    rms = float(np.sqrt(np.mean(((x @ np.array([a, b])) / t - 1) ** 2)))
    print(f"  rms relative error {rms:.1%}")
    for k, xk in zip(names, x):
        model = a * xk[0] + b * xk[1]
        print(f"  {k:>8}: measured {measured[k]:,.0f} GCUPS, model {tots[k]['cells'] / model / 1e9:,.0f}; "
              f"issued {a * xk[0] / model:.0%} of the time, band set-up {b * xk[1] / model:.0%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=float, default=1e12)
    ap.add_argument("--lengths", default="128,512,1024")
    ap.add_argument("--mode", default="local", choices=("local", "global", "semiglobal"))
    ap.add_argument("--cost16", type=float, default=COST16)
    ap.add_argument("--cost8", type=float, default=COST8)
    ap.add_argument("--measured", default=None,
                    help="GPU-busy GCUPS per workload, e.g. 128=3096,sampled=3588")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    work = {str(L): uniform_proteins(rng, args.cells, int(L)) for L in args.lengths.split(",") if L}
    work["sampled"] = sampled_proteins(args.cells)
    tots = {}
    print(f"{'workload':>8} {'n':>6} {'packed':>7} " + " ".join(f"{s:>7}" for s in STAGES[1:])
          + f" {'bands':>10} {'steps/band':>10} {'empty warps':>11}")
    for name, seqs in work.items():
        tot = tots[name] = count(seqs, args.mode, args.cost16, args.cost8)
        eff = [tot["ideal"] / tot[s] for s in STAGES[1:]]
        print(f"{name:>8} {len(seqs):>6} {tot['packed_cells'] / tot['cells']:>7.1%} "
              + " ".join(f"{e:>7.3f}" for e in eff)
              + f" {tot['bands_n']:>10,.0f} {tot['band_steps'] / tot['bands_n']:>10.1f} "
              f"{tot['empty_warps'] / max(tot['warps'], 1):>11.1%}")
    print("(efficiency: cells / 2 over the issued lane-row-steps after each loss, cumulative)")
    if args.measured:
        measured = {k: float(v) for k, v in (it.split("=") for it in args.measured.split(","))}
        fit(tots, measured)


if __name__ == "__main__":
    main()
