"""Where the command line's wall time goes: timed runs, then one profiled run.

Runs ``pairalign all-vs-all FASTA --backend B -o FILE`` ``--runs`` times in fresh
processes (warm caches after the first: numba's, CuPy's and Python's bytecode,
as on an installed system), prints each wall time, then profiles
one more run (cProfile, top functions by cumulative and own time) and lists
the slowest imports of one more (``-X importtime``).

    python benchmarks/cli_profile.py shared/data/proteome_HG003687.faa --backend gpu
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

PROFILE = """
import cProfile, pstats, runpy, sys
top = int(sys.argv.pop(1))
sys.argv = ["pairalign", *sys.argv[1:]]
prof = cProfile.Profile()
prof.enable()
try:
    runpy.run_module("pairalign", run_name="__main__")
except SystemExit:
    pass
prof.disable()
stats = pstats.Stats(prof, stream=sys.stderr)
stats.sort_stats("cumtime").print_stats(top)
stats.sort_stats("tottime").print_stats(top // 2)
"""


def installed_env(cache: str) -> dict[str, str]:
    """This environment as an installed Python has it: bytecode written (under
    ``cache``) and read back. The device machine sets PYTHONDONTWRITEBYTECODE,
    and its site-packages hold no ``.pyc``: without this every run would
    compile numpy, numba, CuPy and pairalign from source (about 0.5 s)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def cli_runs(cli: list[str], runs: int, env: dict[str, str]) -> list[float]:
    """Wall seconds of ``runs`` runs of ``python -m pairalign *cli``, each in a new process."""
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pairalign", *cli], check=True, env=env)
        walls.append(time.perf_counter() - t)
    return walls


def profiled(cli: list[str], top: int, env: dict[str, str]) -> list[str]:
    """The profile of one run: the ``top`` functions by cumulative time, half as
    many by own time."""
    prof = subprocess.run([sys.executable, "-c", PROFILE, str(top), *cli],
                          capture_output=True, text=True, env=env)
    return [ln for ln in prof.stderr.splitlines() if ln.strip()]


def slowest_imports(cmd: list[str], top: int, env: dict[str, str]) -> list[str]:
    """The ``top`` imports with the largest cumulative time under ``-X importtime``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *cmd], capture_output=True,
                          text=True, env=env)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _own, cum, name = line.split(":", 1)[1].split("|")
        rows.append((int(cum), name.rstrip()))
    rows.sort(reverse=True)
    return [f"{cum / 1e6:7.3f} s  {name}" for cum, name in rows[:top]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fasta")
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=40, help="functions listed by the profile")
    ap.add_argument("extra", nargs="*", help="more options for all-vs-all (after --)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        env = installed_env(os.path.join(tmp, "pycache"))
        out = os.path.join(tmp, "pairs.tsv")
        cli = ["all-vs-all", args.fasta, "--backend", args.backend, "-o", out, *args.extra]
        walls = cli_runs(cli, args.runs, env)
        print("walls:", " ".join(f"{w:.2f}" for w in walls), "s", flush=True)
        print("slowest imports (cumulative):")
        for row in slowest_imports(["-m", "pairalign", *cli], 15, env):
            print(" ", row)
        print("\n".join(profiled(cli, args.top, env)), flush=True)


if __name__ == "__main__":
    main()
