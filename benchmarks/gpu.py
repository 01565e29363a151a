"""GPU benchmark: GCUPS per mode, with and without traceback, GPU-only and end to end.

Run on a machine with a CUDA device (one device call: ``python benchmarks/gpu_check.py``
runs the GPU tests and this). Cells are counted as in DESIGN.md: the sum over
aligned pairs of len_i * len_j. GPU time is measured with CUDA events: the
union of the windows' spans from their first kernel to their last (windows in
flight overlap, so the sum of their kernels' times would count some twice);
end-to-end time runs from FASTA read to results
in host memory (pairs in input order), with numba and NVRTC warmed up first.
Then the command line on the proteome (with traceback, TSV to a file), three
times after a run that fills the caches, and the profile of one more run.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from workloads import (DATA, CupyCompiles, NumbaCompiles, cells_of,  # noqa: E402
                       sampled_proteins, warm_gpu_backend)

from kernel_ab import set_all  # noqa: E402

import pairalign  # noqa: E402
from pairalign.engine import run_job  # noqa: E402
from pairalign.job import Job, SortedSet  # noqa: E402
from pairalign.kernels import gpu_backend  # noqa: E402
from pairalign.kernels.gpu_backend import GPUBackend  # noqa: E402
from pairalign.scoring import Scoring  # noqa: E402


def gpu_seconds(timings: dict) -> float:
    """Seconds the GPU had a window's work queued or running (the union of the
    windows' spans; the sum of their kernels' event times counts overlapping
    windows twice)."""
    return timings.get("gpu_busy") or timings.get("fill", 0) + timings.get("traceback", 0)


def kernel_run(fasta: Path, mode, traceback, backend, cigar: bool = True):
    """One job on ``fasta``, read inside the timed run (the issue's end to end:
    FASTA read to results in host memory), and the process's page faults in it
    (``page_faults``: minor faults, a page or a huge page of new memory each;
    a fresh virtual machine's first touch of its memory is slow, NOTES v48),
    the placement's parts (``placement``: ``Placement.spent``) and the
    seconds the GPU's results waited for the consumer (``blocked``)."""
    sc = Scoring.create("protein")
    backend.timings.clear()
    stages: dict = {}
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with NumbaCompiles() as compiles, CupyCompiles() as kernels:
        t = time.perf_counter()
        seqs = pairalign.read_sequences(fasta).sequences
        job = Job.create(mode, sc, traceback, seqs, cigar=cigar)
        run_job(job, backend, timings=stages)
        wall = time.perf_counter() - t
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    slots = (getattr(backend, "_reservation", None) or {}).get("bytes", 0)
    place = {k: round(v, 3) for k, v in (stages.get("placement") or {}).items()}
    workers = (stages.get("scheduler") or {}).get("workers", [])
    return {**backend.timings, "order": stages["order"], "placement": place,
            "blocked": round(sum(w["blocked_s"] for w in workers), 3),
            "page_faults": faults,
            "slot_gb": slots / 1e9, "numba_compiles": compiles.count,
            "numba_compile_s": round(compiles.seconds, 3),
            "numba_slowest": [(round(s, 3), f) for s, f in compiles.slowest[:3]],
            "cupy_lookups_s": round(kernels.looked_up, 3),
            "cupy_compiled": [(round(s, 3), f) for s, f in kernels.compiled]}, wall


def write_fasta(seqs, path: Path) -> Path:
    """``seqs`` as a FASTA file (the scaled workloads' input, read in the timed run)."""
    with open(path, "w") as f:
        f.writelines(f">s{k}\n{s}\n" for k, s in enumerate(seqs))
    return path


def parasail_worker(args):
    import parasail

    pairs, seqs, traceback = args
    fn = parasail.sw_trace_scan_16 if traceback else parasail.sw_striped_profile_16
    cells = 0
    t = time.perf_counter()
    last = None
    for i, j in pairs:
        if traceback:
            r = fn(seqs[i], seqs[j], 11, 1, parasail.blosum62)
            r.cigar  # decode the alignment too
        else:
            if last != i:
                prof = parasail.profile_create_16(seqs[i], parasail.blosum62)
                last = i
            fn(prof, seqs[j], 11, 1)
        cells += len(seqs[i]) * len(seqs[j])
    return cells, time.perf_counter() - t


def parasail_gcups(seqs, traceback, cores, pairs_per_core=3000):
    """parasail on ``cores`` processes, each timing its own loop (process start-up
    and imports excluded); GCUPS = all cells / the slowest worker's time."""
    rng = np.random.default_rng(3)
    n = len(seqs)
    jobs = []
    for c in range(cores):
        i = np.sort(rng.integers(0, n, pairs_per_core))
        j = rng.integers(0, n, pairs_per_core)
        jobs.append((list(zip(i.tolist(), j.tolist())), seqs, traceback))
    with mp.get_context("spawn").Pool(cores) as pool:
        res = pool.map(parasail_worker, jobs)
    return sum(c for c, _ in res) / max(t for _, t in res) / 1e9


def cli_times(path, runs=3):
    """Wall seconds of the command line on ``path`` (with traceback, TSV to a
    file), ``runs`` times after one run that fills the caches, then the profile
    of one more run."""
    import tempfile

    from cli_profile import cli_runs, installed_env, profiled

    with tempfile.TemporaryDirectory() as tmp:
        env = installed_env(os.path.join(tmp, "pycache"))
        cli = ["all-vs-all", str(path), "--backend", "gpu", "-o", os.path.join(tmp, "p.tsv")]
        cli_runs(cli, 1, env)
        return cli_runs(cli, runs, env), profiled(cli, 30, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cells", type=float, default=1e12,
                    help="cells of the scaled workload (0: none)")
    ap.add_argument("--tb-cells", type=float, default=2e11, help="cells with traceback (0: none)")
    ap.add_argument("--no-parasail", action="store_true")
    ap.add_argument("--modes", default="local,global,semiglobal",
                    help="modes of the scaled workloads, comma-separated")
    ap.add_argument("--no-cli", action="store_true", help="skip the command line's runs")
    ap.add_argument("--without-cigar", action="store_true",
                    help="also run each scaled traceback workload without CIGARs "
                         "(cigar=False: begins, identities and lengths only)")
    ap.add_argument("--set", action="append", default=[],
                    help="ATTR=VALUE of gpu_backend (module.ATTR: of pairalign.module), "
                         "for an A/B in separate processes (first runs)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    set_all(args.set)

    be = GPUBackend()
    print(f"device: {be.describe()}", flush=True)
    rows = []
    # 1. the real proteome, end to end, as the CLI does
    path = DATA / "proteome_HG003687.faa"
    recs = pairalign.read_sequences(path)
    # warm-up: NVRTC (both score widths, every mode run) and numba, with
    # traceback and without
    warm_gpu_backend("local", (True, False), be, sample_cells=2e9,
                     modes=tuple(modes))
    base_cells = cells_of(recs.lengths)
    sc = Scoring.create("protein")
    for tb in (True, False):
        t = time.perf_counter()
        recs = pairalign.read_sequences(path)
        t_read = time.perf_counter() - t
        job = Job("local", sc, tb, SortedSet.encode(recs.sequences, sc))
        t_enc = time.perf_counter() - t - t_read
        be.timings.clear()
        stages: dict = {}
        with NumbaCompiles() as compiles:
            run_job(job, be, timings=stages)
        wall = time.perf_counter() - t
        tim = be.timings
        kern = gpu_seconds(tim)
        rows.append(("proteome 2100 e2e", "local", tb, base_cells, wall,
                     base_cells / wall / 1e9, base_cells / kern / 1e9))
        # with FUSED_WALK the packed pairs' walks run in the fill's kernel
        walked = " (the other pairs' walks; the packed ones' in fill)" if (
            tb and gpu_backend.FUSED_WALK) else ""
        print(f"proteome tb={tb}: wall {wall:.3f} s = read {t_read:.3f} + encode {t_enc:.3f}"
              f" + setup {tim.get('setup', 0):.3f} + fill {tim.get('fill', 0):.3f}"
              f" + traceback {tim.get('traceback', 0):.3f}{walked} + download/compact "
              f"{tim.get('download', 0):.3f} + order {stages['order']:.3f}; the launching "
              f"thread waited {tim.get('wait', 0):.3f} s on windows; numba compiled or "
              f"loaded {compiles.count} functions ({compiles.seconds:.3f} s)", flush=True)

    # 2. scaled workloads, kernels and end to end (from the FASTA file's read)
    scratch = tempfile.TemporaryDirectory()
    for target, tb_modes in ((args.tb_cells, True), (args.cells, False)):
        if not target:
            continue
        seqs = sampled_proteins(target)
        n = len(seqs)
        cells = cells_of(np.array([len(s) for s in seqs]))
        fasta = write_fasta(seqs, Path(scratch.name) / f"sampled_{target:.0e}.faa")
        del seqs
        for mode in modes:
            for cigar in (True, False) if tb_modes and args.without_cigar else (True,):
                tim, wall = kernel_run(fasta, mode, tb_modes, be, cigar)
                k = gpu_seconds(tim)
                name = f"scaled n={n}" + ("" if cigar else " no cigar")
                rows.append((name, mode, tb_modes, cells, wall, cells / wall / 1e9,
                             cells / k / 1e9))
                print(rows[-1], {key: round(v, 3) if isinstance(v, (int, float)) else v
                              for key, v in tim.items() if key != "cells"},
                      flush=True)

    if not args.no_cli:
        # the command line runs in its own process: this one's pool would otherwise
        # hold device memory that the command line then sizes its windows without
        import cupy as cp

        be._pinned.clear()  # the staging buffers
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        walls, profile = cli_times(path)
        print("command line, proteome with traceback to TSV: "
              + ", ".join(f"{w:.2f} s" for w in walls), flush=True)
        print("\n".join(profile), flush=True)

    cores = os.cpu_count() or 1
    ps = {}
    if not args.no_parasail:
        for tb in (True, False):
            ps[tb] = parasail_gcups(recs.sequences, tb, cores)
    print()
    print(f"{'workload':22} {'mode':10} {'tb':3} {'cells':>10} {'wall s':>8} "
          f"{'e2e GCUPS':>10} {'GPU GCUPS':>12} {'x parasail':>10}")
    for name, mode, tb, cells, wall, e2e, kern in rows:
        ratio = f"{e2e / ps[tb]:.0f}" if tb in ps else "-"
        print(f"{name:22} {mode:10} {'y' if tb else 'n':3} {cells:10.3g} {wall:8.2f} "
              f"{e2e:10.1f} {kern if kern is None else round(kern, 1)!s:>12} {ratio:>10}")
    for tb, g in ps.items():
        print(f"parasail sw_{'trace_scan' if tb else 'striped_profile'}_16 on {cores} cores: "
              f"{g:.2f} GCUPS")


if __name__ == "__main__":
    main()
