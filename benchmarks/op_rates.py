"""Issue rates of single instructions on the device, to count a kernel's work
by pipe (the device library's METHOD.md: count first).

    python benchmarks/op_rates.py

Each kernel runs eight dependent chains of one operation a thread (each step
reads the next chain, so that nothing folds away), on 8 blocks of 256 threads
an SM. The rate is warp instructions a clock an SM, scaled so that FFMA gives
4 (Hopper's 128 FP32 lanes an SM), which takes the clock out. An operation at
4 has a full-rate pipe; at 2, a half-rate one (the ALU pipe on sm_90).
``SASS`` names what nvcc 13 makes of each (one instruction an operation, but
``iadd``, which ptxas spreads over IADD3 and IMAD.IADD).

Pairs (``a + b``: even chains run ``a``, odd ones ``b``) tell the pipes
apart: two half-rate operations on one pipe give 2 together, on two pipes up
to 4 (the issue limit of one instruction a clock a scheduler).
"""

from __future__ import annotations

import numpy as np

#: name: (register type, SASS, one step of chain k, reading chain k1)
OPS = {
    "ffma": ("float", "FFMA", "x{k} = fmaf(x{k}, 1.0001f, x{k1});"),
    "vimax3_s16x2": ("unsigned", "VIMNMX3.S16x2", "x{k} = __vimax3_s16x2(x{k}, x{k1}, z{k});"),
    "vimax3_s16x2_relu": ("unsigned", "VIMNMX3.S16x2.RELU",
                          "x{k} = __vimax3_s16x2_relu(x{k}, x{k1}, z{k});"),
    "viaddmax_s16x2": ("unsigned", "VIADDMNMX.S16x2",
                       "x{k} = __viaddmax_s16x2(x{k}, x{k1}, z{k});"),
    "max.s16x2": ("unsigned", "VIMNMX.S16x2",
                  'asm("max.s16x2 %0, %0, %1;" : "+r"(x{k}) : "r"(x{k1}));'),
    "add.s16x2": ("unsigned", "VIADD.16x2",
                  'asm("add.s16x2 %0, %0, %1;" : "+r"(x{k}) : "r"(x{k1}));'),
    "max.f16x2": ("unsigned", "HMNMX2",
                  'asm("max.f16x2 %0, %0, %1;" : "+r"(x{k}) : "r"(x{k1}));'),
    "max3.f16x2": ("unsigned", "VHMNMX",
                   'asm("{{.reg .b32 t; max.f16x2 t, %1, %2; max.f16x2 %0, %0, t;}}"'
                   ' : "+r"(x{k}) : "r"(x{k1}), "r"(z{k}));'),
    "fma.f16x2": ("unsigned", "HFMA2",
                  'asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x{k}) : "r"(x{k1}), "r"(z{k}));'),
    "fmax": ("float", "FMNMX", "x{k} = fmaxf(x{k}, x{k1});"),
    "imax": ("unsigned", "VIMNMX", "x{k} = max((int)x{k}, (int)x{k1});"),
    "lop3": ("unsigned", "LOP3",
             'asm("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x{k}) : "r"(x{k1}), "r"(z{k}));'),
    "prmt": ("unsigned", "PRMT", "x{k} = __byte_perm(x{k}, x{k1}, 0x5410);"),
    "iadd": ("unsigned", "IADD3 / IMAD.IADD", "x{k} = x{k} + x{k1};"),
    "imad": ("unsigned", "IMAD", "x{k} = x{k} * z{k} + x{k1};"),
}
#: pairs of unsigned-register operations, to find which share a pipe
PAIRS = [("viaddmax_s16x2", "add.s16x2"), ("viaddmax_s16x2", "max.f16x2"),
         ("add.s16x2", "max.f16x2"), ("viaddmax_s16x2", "imad"), ("add.s16x2", "imad"),
         ("viaddmax_s16x2", "iadd"), ("add.s16x2", "iadd"), ("viaddmax_s16x2", "prmt"),
         ("add.s16x2", "prmt"), ("viaddmax_s16x2", "lop3"), ("add.s16x2", "lop3"),
         ("viaddmax_s16x2", "vimax3_s16x2"), ("add.s16x2", "fma.f16x2"),
         ("viaddmax_s16x2", "fma.f16x2"), ("viaddmax_s16x2", "imax"),
         ("viaddmax_s16x2", "max3.f16x2"), ("add.s16x2", "max3.f16x2")]
CHAINS = 8
UNROLL = 16


def kernels() -> dict[str, tuple[str, list[str]]]:
    """Each kernel's name: its register type and the body of each chain."""
    out = {name: (ty, [body] * CHAINS) for name, (ty, _, body) in OPS.items()}
    for a, b in PAIRS:
        out[f"{a} + {b}"] = ("unsigned", [OPS[a if k % 2 == 0 else b][2] for k in range(CHAINS)])
    return out


def source() -> str:
    out = []
    for i, (ty, bodies) in enumerate(kernels().values()):
        decl = "\n".join(f"  {ty} x{k} = ({ty})(seed + {k}); unsigned z{k} = seed * {k + 3} + 7;"
                         for k in range(CHAINS))
        step = " ".join(bodies[k].format(k=k, k1=(k + 1) % CHAINS) for k in range(CHAINS))
        bits = (lambda k: f"__float_as_uint(x{k})") if ty == "float" else (lambda k: f"x{k}")
        acc = " ^ ".join(bits(k) for k in range(CHAINS))
        out.append(f"""extern "C" __global__ void k{i}(unsigned* out, unsigned seed, int iters) {{
{decl}
  for (int it = 0; it < iters; ++it) {{
#pragma unroll
    for (int u = 0; u < {UNROLL}; ++u) {{ {step} }}
  }}
  const unsigned r = {acc};
  if (r == 0x9e3779b9u) out[threadIdx.x] = r;
}}""")
    return "\n".join(out)


def main() -> None:
    import cupy as cp

    mod = cp.RawModule(code=source(), options=("-arch=sm_90",))
    out = cp.zeros(1024, cp.uint32)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    blocks, threads, iters = sms * 8, 256, 2000
    rates = {}
    for i, name in enumerate(kernels()):
        fn = mod.get_function(f"k{i}")
        fn((blocks,), (threads,), (out, np.uint32(1), np.int32(10)))
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        best = float("inf")
        for _ in range(3):
            start.record()
            fn((blocks,), (threads,), (out, np.uint32(1), np.int32(iters)))
            stop.record()
            stop.synchronize()
            best = min(best, cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        rates[name] = blocks * threads // 32 * iters * UNROLL * CHAINS / best / sms
    print(f"{'operation':36} {'SASS':20} warp instructions a clock an SM (FFMA = 4)")
    for name, rate in rates.items():
        sass = OPS[name][1] if name in OPS else "(pair)"
        print(f"{name:36} {sass:20} {4 * rate / rates['ffma']:5.2f}")


if __name__ == "__main__":
    main()
