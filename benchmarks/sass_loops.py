"""The packed kernels' inner loops in SASS, read here (no device): nvcc and
cuobjdump, with the backend's macros.

    python benchmarks/sass_loops.py [--source align.cu] [--against other.cu]
        [--score short|int] [--cuobjdump PATH]

Compiles ``fill2`` in every mode, score-only and with traceback (``-arch=sm_90``,
the options of ``gpu_backend.nvrtc_options``), and prints, for each kernel,
ptxas's registers and spills, then each innermost loop that does DPX work
(those of the packed fills: the 32-row score-only step, the 8- and 16-row
short bands, the traceback step, and ptxas's copies of them on the divergent
shuffles' slow path) as ``address: instructions, DPX instructions, spill
instructions, register copies``. With ``--against``, the same for another
source beside it, and whether each kernel's code is the same.

Static counts tell whether a change moved a kernel's register allocation
(the traceback kernels left alone by a score-only change, say); they do not
predict a step's time (NOTES.md, v26): measure that on the device
(``kernel_ab.py``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pairalign.kernels.gpu_backend import nvrtc_options  # noqa: E402

MODES = {0: "global", 1: "semiglobal", 2: "local"}
KERNELS = [(m, tb) for tb in (False, True) for m in (2, 0, 1)]
LINE = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)")


def compile_sass(source: Path, score: str, cuobjdump: str, work: Path) -> tuple[str, str]:
    """(SASS, ptxas's report) of ``source``'s fill2 kernels."""
    wrapper = work / f"{source.stem}_kernels.cu"
    lines = [f'#include "{source.resolve()}"', "void pairalign_instantiate() {"]
    lines += [f"    (void)&fill2<{m}, {'true' if tb else 'false'}>;" for m, tb in KERNELS]
    wrapper.write_text("\n".join([*lines, "}", ""]))
    cubin = wrapper.with_suffix(".cubin")
    done = subprocess.run(["nvcc", "-cubin", *nvrtc_options(score, "90"), "-Xptxas", "-v",
                           "-o", str(cubin), str(wrapper)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"nvcc failed on {source}:\n{done.stderr}")
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    return sass, done.stderr


def functions(sass: str) -> dict[str, list[tuple[int, str]]]:
    """Each function's instructions, (address, text), by mangled name."""
    out: dict[str, list[tuple[int, str]]] = {}
    current = None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        m = LINE.match(line)
        if m and current is not None:
            current.append((int(m.group(1), 16), m.group(2)))
    return out


def opcode(text: str) -> str:
    words = text.split()
    return words[1] if words[0].startswith("@") else words[0]


def inner_loops(code: list[tuple[int, str]]) -> list[tuple[int, int, int, int, int]]:
    """Innermost backward-branch loops with DPX work: (address, instructions,
    DPX, spill instructions, register copies)."""
    index = {a: i for i, (a, _) in enumerate(code)}
    loops = []
    for i, (a, text) in enumerate(code):
        m = BRANCH.search(text)
        if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in index:
            start = int(m.group(1), 16)
            ops = Counter(opcode(t) for _, t in code[index[start]:i + 1])
            dpx = sum(v for k, v in ops.items() if k.startswith(("VIMNMX", "VIADDMNMX")))
            spill = sum(v for k, v in ops.items() if k.split(".")[0] in ("LDL", "STL"))
            copies = ops["IMAD.MOV.U32"] + ops["MOV"]
            loops.append((start, a, i + 1 - index[start], dpx, spill, copies))
    work = [x for x in loops if x[3] >= 20]
    inner = [x for x in work
             if not any(o is not x and o[0] >= x[0] and o[1] <= x[1] for o in work)]
    return [(s, n, d, sp, c) for s, _, n, d, sp, c in inner]


def kernel_name(mangled: str) -> str | None:
    m = re.match(r"_Z5fill2ILi(\d)ELb(\d)E", mangled)
    if not m:
        return None
    return f"fill2<{MODES[int(m.group(1))]}, {'traceback' if m.group(2) == '1' else 'score-only'}>"


def report(sass: str, ptxas: str) -> dict[str, tuple[str, list, list[str]]]:
    """By kernel: its ptxas line, its inner loops, its code (for comparisons)."""
    usage = {}
    for m in re.finditer(r"Compiling entry function '(\S+)'.*?\n(.*?registers[^\n]*)", ptxas,
                         re.S):
        regs = re.search(r"Used (\d+) registers", m.group(2))
        spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", m.group(2))
        usage[m.group(1)] = (f"{regs.group(1) if regs else '?'} registers"
                             + (f", spills {spill.group(1)} / {spill.group(2)} B" if spill else ""))
    out = {}
    for mangled, code in functions(sass).items():
        name = kernel_name(mangled)
        if name:
            out[name] = (usage.get(mangled, ""), inner_loops(code), [t for _, t in code])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=ROOT / "pairalign" / "kernels" / "align.cu")
    ap.add_argument("--against", type=Path, help="another align.cu to compare with")
    ap.add_argument("--score", default="short", choices=("short", "int"))
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    args = ap.parse_args()
    if shutil.which("nvcc") is None:
        raise SystemExit("sass_loops.py needs nvcc on PATH")
    sources = [args.source] + ([args.against] if args.against else [])
    with tempfile.TemporaryDirectory() as tmp:
        reports = [report(*compile_sass(src, args.score, args.cuobjdump, Path(tmp)))
                   for src in sources]
    for name in sorted(reports[0]):
        print(name)
        for src, rep in zip(sources, reports):
            ptx, loops, _ = rep.get(name, ("absent", [], []))
            print(f"  {src.name}: {ptx}")
            for start, n, dpx, spill, copies in loops:
                print(f"    {start:#07x}: {n} instructions, {dpx} DPX, {spill} spill, "
                      f"{copies} copies")
        if len(reports) == 2:
            same = reports[0][name][2] == reports[1].get(name, (None, None, None))[2]
            print(f"  same code: {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
