"""The score-only recurrence alone, as the packed kernel runs it, to measure
what the device gives the work itself (the device library's METHOD.md: count
the work, then measure a ceiling for it).

    python benchmarks/recurrence_ceiling.py [--steps 20000] [--waves 8]

Each thread holds ``R`` rows of two pairs in the 16-bit halves of its
registers (H and the next column's E) and steps along columns as
``Stripe2::column`` of ``align.cu`` does score-only: per row the diagonal
term (``add.s16x2``), H by one DPX maximum of three (``.relu`` in local mode),
H - go, and the next E and F by one ``__viaddmax_s16x2`` each; local adds its
column maximum (one ``__vimax3_s16x2`` per two rows). The substitution scores
come from a query profile in shared memory by 16-byte loads, as in the packed
kernel: every lane of a warp at one residue (a broadcast, the loads at their
cheapest), or (``*_couples``) in the query couples' layout, each group of 4
lanes on its own residues, a lane one column behind its neighbour. With
``shfl``, lane l takes the row above from lane l - 1 by two shuffles a column
(groups of 4 lanes), as the packed kernel's bands do; with ``own``, each lane
feeds itself. The ``*_tb`` variants add the traceback as the packed kernel
writes it (16 rows a lane: each cell's four bits from packed differences
into bit planes, 0.5 byte a cell stored to a buffer larger than L2). No
end-cell positions, no boundary rows in global memory, no pair bookkeeping:
what is left is the recurrence, the profile and the hand-over, so its rate
bounds what the real kernel can reach at the same registers and occupancy.

Two other forms of the step (NOTES.md, v42): ``*_f2`` carries F + go down a
lane's rows, so that F's chain is two dependent operations a row instead of
three, at one maximum more a row on the ALU pipe (H100: local 7,100 to 6,522
GCUPS in the couples' layout, global 7,499 to 7,370: the ALU pipe binds,
not the chain); ``*_skew_*`` steps a lane's top half of rows a column ahead
of its bottom half, two F chains a step (global 7,697 to 8,473, local 7,300
to 7,440; in the packed kernel, global at 1e13 cells ran 5% slower).

Prints, per variant: registers (ptxas), GCUPS from CUDA events (median of
``--reps`` launches after a warm-up), the SM clock during the launch (cycles
of ``clock64`` over ``%globaltimer`` nanoseconds, block 0), and that rate as
a share of the ALU pipe's bound at that clock: every maximum is on the ALU
pipe at half rate (``op_rates.py``), 3 a row global and 3.5 local, so one SM
does at most 4 x 16 / 3 = 21.3 rows (42.7 cells) a clock global, 36.6 local;
with traceback 7 a row (3 maxima, 2 PRMTs, 2 LOP3s), 18.3 cells a clock.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

SOURCE = r"""
__device__ __forceinline__ unsigned add2(unsigned a, unsigned b) {
    unsigned r; asm("add.s16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}


// The thread's state folded into out, so that nothing folds away, and
// block 0's clocks
template <int R>
__device__ __forceinline__ void finish(const unsigned (&hl)[R], const unsigned (&el)[R],
                                       unsigned x, unsigned* __restrict__ out,
                                       long long* __restrict__ clk, long long c0,
                                       unsigned long long t0) {
#pragma unroll
    for (int r = 0; r < R; ++r) x ^= hl[r] ^ el[r];
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        clk[0] = clock64() - c0;
        clk[1] = (long long)(gtimer() - t0);
    }
}

// A variant's kernel: NAME runs the templated runner given after MINB
#define KERNEL(NAME, MINB, ...)                                                        \
extern "C" __global__ void __launch_bounds__(256, MINB)                                \
NAME(const uint4* p, int steps, unsigned* out, long long* clk) {                        \
    __VA_ARGS__(p, steps, out, clk);                                                     \
}

// One row as Stripe2::column's score-only step: H = max3(D, E, F) from D
// (the diagonal term already added), then the next E and F from H - go.
template <bool LOCAL>
__device__ __forceinline__ unsigned row_plain(unsigned d, unsigned& e, unsigned& f,
                                              unsigned go2, unsigned ge2) {
    const unsigned h = LOCAL ? __vimax3_s16x2_relu(d, e, f) : __vimax3_s16x2(d, e, f);
    const unsigned hg = add2(h, go2);
    e = __viaddmax_s16x2(e, ge2, hg);
    f = __viaddmax_s16x2(f, ge2, hg);
    return h;
}

// One row with f carrying F + go (the F2 variants): row_plain's F chain
// down a lane's rows is three dependent operations a row, this one's two:
// x = max(diag + s, E) first (off the chain), H = max(f - go, x) (relu in
// local mode), f' = max(f - ge, H); H - go for the next E only. One DPX
// more a row on the ALU pipe, one add fewer on the FMA pipe.
template <bool LOCAL>
__device__ __forceinline__ unsigned row_f2(unsigned diag, unsigned s, unsigned& e,
                                           unsigned& f, unsigned go2, unsigned ge2) {
    const unsigned x = __viaddmax_s16x2(diag, s, e);
    const unsigned h = LOCAL ? __viaddmax_s16x2_relu(f, go2, x)
                             : __viaddmax_s16x2(f, go2, x);
    f = __viaddmax_s16x2(f, ge2, h);
    e = __viaddmax_s16x2(e, ge2, add2(h, go2));
    return h;
}

// LAYOUT 0: every lane of a warp at one residue (a broadcast: the loads at
// their cheapest). 1: as the packed kernel's query couples, groups of 4 lanes
// each on its own target, lane l one column behind lane l - 1, chunk q of lane
// l's rows for residue t at ((t R / 4 + q) 4 + l) (build_query_profile). 2: 1
// with each residue's entry PAD16 chunks further apart.
template <int R, bool LOCAL, bool SHFL, int MINB, int LAYOUT = 0, int PAD16 = 0,
          bool F2 = false>
__device__ __forceinline__ void run(const uint4* __restrict__ prof_g, int steps,
                                    unsigned* __restrict__ out, long long* __restrict__ clk) {
    extern __shared__ uint4 prof[];  // [32 residues][R / 4 chunks (x 4 lanes)]
    constexpr int ENTRY = LAYOUT ? R + PAD16 : R / 4;  // chunks a residue
    for (int i = threadIdx.x; i < 32 * ENTRY; i += blockDim.x) prof[i] = prof_g[i % (8 * R)];
    __syncthreads();
    const long long c0 = clock64();
    const unsigned long long t0 = gtimer();
    const int lane = threadIdx.x & 31;
    const unsigned go2 = 0xfff5fff5u, ge2 = 0xffffffffu;  // -11, -1 in both halves
    const unsigned ngo2 = 0x000b000bu;  // +11 (F2: F + go in, F out)
    unsigned hl[R], el[R];
#pragma unroll
    for (int r = 0; r < R; ++r) { hl[r] = 0; el[r] = go2; }
    unsigned fup = go2, hup = 0, diag = 0, cmax = 0;
    for (int j = 0; j < steps; ++j) {
        const int t = LAYOUT ? ((j - (lane & 3)) * 7 + (lane >> 2) * 13) & 31 : j & 31;
        const uint4* p = prof + t * ENTRY + (LAYOUT ? (lane & 3) : 0);
        unsigned sub[R];
#pragma unroll
        for (int k = 0; k < R / 4; ++k) {
            const uint4 v = p[LAYOUT ? 4 * k : k];
            sub[4 * k] = v.x; sub[4 * k + 1] = v.y; sub[4 * k + 2] = v.z; sub[4 * k + 3] = v.w;
        }
        if constexpr (F2) {
            unsigned dg[R];
            dg[0] = diag;
#pragma unroll
            for (int r = 1; r < R; ++r) dg[r] = hl[r - 1];
            fup = add2(fup, ngo2);  // F + go
#pragma unroll
            for (int r = 0; r < R; ++r)
                hl[r] = row_f2<LOCAL>(dg[r], sub[r], el[r], fup, go2, ge2);
            fup = add2(fup, go2);
        } else {
            sub[0] = add2(diag, sub[0]);
#pragma unroll
            for (int r = 1; r < R; ++r) sub[r] = add2(hl[r - 1], sub[r]);
#pragma unroll
            for (int r = 0; r < R; ++r) hl[r] = row_plain<LOCAL>(sub[r], el[r], fup, go2, ge2);
        }
        if (LOCAL) {
#pragma unroll
            for (int r = 0; r < R; r += 2) cmax = __vimax3_s16x2(cmax, hl[r], hl[r + 1]);
        }
        diag = hup;
        if (SHFL) {
            hup = __shfl_up_sync(0xffffffffu, hl[R - 1], 1, 4);
            fup = __shfl_up_sync(0xffffffffu, fup, 1, 4);
            if ((lane & 3) == 0) { hup = 0; fup = go2; }
        } else {
            hup = hl[R - 1] & 0x00ff00ffu;  // keeps the own-fed scores bounded
        }
    }
    finish<R>(hl, el, cmax ^ fup, out, clk, c0, t0);
}

#define VARIANT(NAME, R, LOCAL, SHFL, MINB, ...) \
    KERNEL(NAME, MINB, run<R, LOCAL, SHFL, MINB, ##__VA_ARGS__>)
VARIANT(local32_shfl_b2, 32, true, true, 2)
VARIANT(global32_shfl_b2, 32, false, true, 2)
VARIANT(local32_own_b2, 32, true, false, 2)
VARIANT(global32_own_b2, 32, false, false, 2)
VARIANT(local16_shfl_b3, 16, true, true, 3)
VARIANT(local16_shfl_b4, 16, true, true, 4)
VARIANT(global16_shfl_b4, 16, false, true, 4)
VARIANT(local8_shfl_b6, 8, true, true, 6)
VARIANT(local8_shfl_b8, 8, true, true, 8)
VARIANT(global8_shfl_b8, 8, false, true, 8)
VARIANT(local32_couples, 32, true, true, 2, 1, 0)
VARIANT(global32_couples, 32, false, true, 2, 1, 0)
VARIANT(local32_couples_pad, 32, true, true, 2, 2, 4)
VARIANT(local16_couples_b4, 16, true, true, 4, 1, 0)
VARIANT(local32_shfl_f2, 32, true, true, 2, 0, 0, true)
VARIANT(global32_shfl_f2, 32, false, true, 2, 0, 0, true)
VARIANT(local32_couples_f2, 32, true, true, 2, 1, 0, true)
VARIANT(global32_couples_f2, 32, false, true, 2, 1, 0, true)
// Skewed halves (as the packed kernel's SKEW_GLOBAL of be5acf0, reverted:
// NOTES.md, v42): a lane's top R / 2 rows step at column j while its
// bottom R / 2 rows step at column j - 1, so that a step holds two F chains
// of R / 2 rows that do not wait on each other (one chain of R rows, 3
// dependent operations a row, in the packed kernel). What crosses between
// the halves waits a step in a register: H of row R / 2 - 1 a column back
// (the bottom's diagonal term) and the F that leaves the top half.
template <int R, bool LOCAL, int MINB, bool F2 = false>
__device__ __forceinline__ void run_skew(const uint4* __restrict__ prof_g, int steps,
                                         unsigned* __restrict__ out, long long* __restrict__ clk) {
    extern __shared__ uint4 prof[];
    constexpr int ENTRY = R / 4, T = R / 2;
    const unsigned ngo2 = 0x000b000bu;
    for (int i = threadIdx.x; i < 32 * ENTRY; i += blockDim.x) prof[i] = prof_g[i % (8 * R)];
    __syncthreads();
    const long long c0 = clock64();
    const unsigned long long t0 = gtimer();
    const int lane = threadIdx.x & 31;
    const unsigned go2 = 0xfff5fff5u, ge2 = 0xffffffffu;
    unsigned hl[R], el[R];
#pragma unroll
    for (int r = 0; r < R; ++r) { hl[r] = 0; el[r] = go2; }
    unsigned fup = go2, hup = 0, diag = 0, cmax = 0, dmid = 0, fmid = go2, fbot = go2;
    for (int j = 0; j < steps; ++j) {
        const uint4* p = prof + (j & 31) * ENTRY;        // the top half's column
        const uint4* pb = prof + ((j - 1) & 31) * ENTRY;  // the bottom's, a column back
        unsigned sub[R];
#pragma unroll
        for (int k = 0; k < R / 4; ++k) {
            const uint4 v = (k < R / 8 ? p : pb)[k];
            sub[4 * k] = v.x; sub[4 * k + 1] = v.y; sub[4 * k + 2] = v.z; sub[4 * k + 3] = v.w;
        }
        unsigned dg[R];
        dg[0] = diag;
        dg[T] = dmid;
#pragma unroll
        for (int r = 1; r < R; ++r) if (r != T) dg[r] = hl[r - 1];
        if constexpr (!F2) {
#pragma unroll
            for (int r = 0; r < R; ++r) sub[r] = add2(dg[r], sub[r]);
        }
        dmid = hl[T - 1];
        fbot = fmid;
        if constexpr (F2) { fup = add2(fup, ngo2); fbot = add2(fbot, ngo2); }
#pragma unroll
        for (int r = 0; r < T; ++r) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int k = r + h * T;
                if constexpr (F2) {
                    hl[k] = row_f2<LOCAL>(dg[k], sub[k], el[k], h ? fbot : fup, go2, ge2);
                } else {  // as run's: the diagonal terms added first
                    hl[k] = row_plain<LOCAL>(sub[k], el[k], h ? fbot : fup, go2, ge2);
                }
            }
        }
        if constexpr (F2) { fup = add2(fup, go2); fbot = add2(fbot, go2); }
        fmid = fup;
        if (LOCAL) {
#pragma unroll
            for (int r = 0; r < R; r += 2) cmax = __vimax3_s16x2(cmax, hl[r], hl[r + 1]);
        }
        diag = hup;
        hup = __shfl_up_sync(0xffffffffu, hl[R - 1], 1, 4);
        fup = __shfl_up_sync(0xffffffffu, fbot, 1, 4);
        if ((lane & 3) == 0) { hup = 0; fup = go2; }
    }
    finish<R>(hl, el, cmax ^ fup ^ fmid ^ dmid, out, clk, c0, t0);
}
#define VARIANT_SKEW(NAME, R, LOCAL, MINB, ...) \
    KERNEL(NAME, MINB, run_skew<R, LOCAL, MINB, ##__VA_ARGS__>)
VARIANT_SKEW(local32_skew_b2, 32, true, 2)
VARIANT_SKEW(global32_skew_b2, 32, false, 2)
VARIANT_SKEW(local16_skew_b4, 16, true, 4)
VARIANT_SKEW(local32_skew_f2, 32, true, 2, true)
VARIANT_SKEW(global32_skew_f2, 32, false, 2, true)
// With traceback, as Stripe2::column's want_tb branch: each cell's four bits
// as signs of packed differences, gathered into bit planes by a PRMT and a
// LOP3 per two comparisons, and each pair's R / 8 words a column stored to
// global memory (0.5 byte a cell, coalesced: a thread's words side by side,
// column after column over a buffer of `wrap` columns, larger than L2).
__device__ __forceinline__ unsigned signs2(unsigned x, unsigned y) {
    unsigned r; asm("prmt.b32 %0, %1, %2, 0xfbd9;" : "=r"(r) : "r"(x), "r"(y)); return r;
}
template <int R, bool LOCAL, int MINB>
__device__ __forceinline__ void run_tb(const uint4* __restrict__ prof_g, int steps, int wrap,
                                       uint2* __restrict__ tb, long long* __restrict__ clk) {
    extern __shared__ uint4 prof[];  // [32 residues][R / 4]
    for (int i = threadIdx.x; i < 8 * R; i += blockDim.x) prof[i] = prof_g[i];
    __syncthreads();
    const long long c0 = clock64();
    const unsigned long long t0 = gtimer();
    const int lane = threadIdx.x & 31;
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned go2 = 0xfff5fff5u, ge2 = 0xffffffffu;
    unsigned hl[R], el[R];
#pragma unroll
    for (int r = 0; r < R; ++r) { hl[r] = 0; el[r] = go2; }
    unsigned fup = go2, hup = 0, diag = 0;
    for (int j = 0; j < steps; ++j) {
        const uint4* p = prof + (j & 31) * (R / 4);
        unsigned sub[R];
#pragma unroll
        for (int k = 0; k < R / 4; ++k) {
            const uint4 v = p[k];
            sub[4 * k] = v.x; sub[4 * k + 1] = v.y; sub[4 * k + 2] = v.z; sub[4 * k + 3] = v.w;
        }
        sub[0] = add2(diag, sub[0]);
#pragma unroll
        for (int r = 1; r < R; ++r) sub[r] = add2(hl[r - 1], sub[r]);
        unsigned pp[R / 8] = {}, qq[R / 8] = {};
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const unsigned h = LOCAL ? __vimax3_s16x2_relu(sub[r], el[r], fup)
                                     : __vimax3_s16x2(sub[r], el[r], fup);
            const unsigned hg = add2(h, go2);
            const unsigned plane = 0x01010101u << (r % 8);
            pp[r / 8] |= signs2(__vsub2(el[r], fup), __vsub2(sub[r], h)) & plane;
            el[r] = __viaddmax_s16x2(el[r], ge2, hg);
            fup = __viaddmax_s16x2(fup, ge2, hg);
            qq[r / 8] |= signs2(__vsub2(hg, el[r]), __vsub2(hg, fup)) & plane;
            hl[r] = h;
        }
        static_assert(R == 16, "two words a pair a column");
        uint2* at = tb + 2 * ((j % wrap) * nthreads + tid);
        at[0] = make_uint2(__byte_perm(pp[0], qq[0], 0x5410), __byte_perm(pp[1], qq[1], 0x5410));
        at[1] = make_uint2(__byte_perm(pp[0], qq[0], 0x7632), __byte_perm(pp[1], qq[1], 0x7632));
        diag = hup;
        hup = __shfl_up_sync(0xffffffffu, hl[R - 1], 1, 8);
        fup = __shfl_up_sync(0xffffffffu, fup, 1, 8);
        if ((lane & 7) == 0) { hup = 0; fup = go2; }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        clk[0] = clock64() - c0;
        clk[1] = (long long)(gtimer() - t0);
    }
}
#define VARIANT_TB(NAME, LOCAL)                                                         \
extern "C" __global__ void __launch_bounds__(128, 4)                                   \
NAME(const uint4* p, int steps, int wrap, uint2* tb, long long* clk) {                  \
    run_tb<16, LOCAL, 4>(p, steps, wrap, tb, clk);                                       \
}
VARIANT_TB(local16_tb, true)
VARIANT_TB(global16_tb, false)
"""

#: name: (rows a lane, local, blocks an SM asked of the compiler)
VARIANTS = {
    "local32_shfl_b2": (32, True, 2), "global32_shfl_b2": (32, False, 2),
    "local32_own_b2": (32, True, 2), "global32_own_b2": (32, False, 2),
    "local16_shfl_b3": (16, True, 3), "local16_shfl_b4": (16, True, 4),
    "global16_shfl_b4": (16, False, 4), "local8_shfl_b6": (8, True, 6),
    "local8_shfl_b8": (8, True, 8), "global8_shfl_b8": (8, False, 8),
    "local32_couples": (32, True, 2), "global32_couples": (32, False, 2),
    "local32_couples_pad": (32, True, 2), "local16_couples_b4": (16, True, 4),
    "local32_skew_b2": (32, True, 2), "global32_skew_b2": (32, False, 2),
    "local16_skew_b4": (16, True, 4),
    "local32_shfl_f2": (32, True, 2), "global32_shfl_f2": (32, False, 2),
    "local32_couples_f2": (32, True, 2), "global32_couples_f2": (32, False, 2),
    "local32_skew_f2": (32, True, 2), "global32_skew_f2": (32, False, 2),
}


#: with traceback (16 rows a lane, blocks of 128, four an SM): name: local
TB_VARIANTS = {"local16_tb": True, "global16_tb": False}


def alu_bound_cells_per_clock_sm(local: bool, traceback: bool = False) -> float:
    """Cells a clock an SM at the ALU pipe's bound: 4 schedulers x 16 lanes a
    clock, 3 maxima a row of two cells (3.5 with local's column maximum);
    with traceback 3 maxima, 2 PRMTs and 2 LOP3s a row."""
    return 4 * 16 / (7.0 if traceback else 3.5 if local else 3.0) * 2


def profile(rng: np.random.Generator, rows: int):
    """A device profile for ``rows`` rows a lane: 32 residues of BLOSUM-like
    scores, -4..11, in both halves."""
    import cupy as cp

    return cp.asarray(rng.integers(-4, 12, size=(32 * rows, 2)).astype(np.int16)
                      .view(np.uint32).reshape(-1))


def launcher(mod, name: str, prof, steps: int, clk, waves: int = 8):
    """Variant ``name`` of ``mod`` (a RawModule of SOURCE) as (function, a
    launch with its grid, block and shared memory, the cells it computes):
    score-only on ``waves`` blocks of 256 an SM, with traceback on 16 blocks
    of 128 an SM (four resident) over a traceback buffer of 1,000 columns."""
    import cupy as cp

    fn = mod.get_function(name)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    if name in TB_VARIANTS:
        rows, threads, blocks, wrap = 16, 128, sms * 4 * 4, 1000
        buf = cp.empty(wrap * blocks * threads * 4, cp.uint32)
        args, smem = (prof, np.int32(steps), np.int32(wrap), buf, clk), 32 * rows * 4
    else:
        rows, threads, blocks = VARIANTS[name][0], 256, sms * waves
        args = (prof, np.int32(steps), cp.empty(blocks * threads, cp.uint32), clk)
        smem = 32 * (rows + 4) * 16
    return (fn, lambda: fn((blocks,), (threads,), args, shared_mem=smem),
            blocks * threads * steps * 2 * rows)


def timed(launch, clk, reps: int) -> tuple[float, float]:
    """Median seconds of ``reps`` launches after one, and the median SM
    clock (MHz) that block 0 saw."""
    import cupy as cp

    launch()
    cp.cuda.runtime.deviceSynchronize()
    times, mhz = [], []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        launch()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
        c, ns = clk.get()
        mhz.append(c / ns * 1e3)
    return statistics.median(times), statistics.median(mhz)


def main() -> None:
    import cupy as cp

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20000, help="columns a thread")
    ap.add_argument("--waves", type=int, default=8, help="blocks an SM, over the launch")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    cc = dev.compute_capability
    mod = cp.RawModule(code=SOURCE, options=(f"-arch=sm_{cc}", "-std=c++17"))
    rng = np.random.default_rng(1)
    clk = cp.zeros(2, cp.int64)
    print(f"{dev.pci_bus_id} {cp.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}, "
          f"{sms} SMs, {args.steps} columns a thread, {args.waves} blocks an SM")
    print(f"{'variant':18} {'regs':>4} {'GCUPS':>8} {'MHz':>6} {'ALU bound GCUPS':>16} {'share':>6}")

    def measure(name: str, prof, local: bool, traceback: bool = False) -> None:
        fn, launch, cells = launcher(mod, name, prof, args.steps, clk, args.waves)
        t, f = timed(launch, clk, args.reps)
        bound = alu_bound_cells_per_clock_sm(local, traceback) * sms * f * 1e6 / 1e9
        print(f"{name:18} {fn.num_regs:4d} {cells / t / 1e9:8.0f} {f:6.0f} {bound:16.0f} "
              f"{cells / t / 1e9 / bound:6.2f}"
              + (f"  ({cells / 2 / t / 1e12:.2f} TB/s of traceback)" if traceback else ""),
              flush=True)

    for name, (rows, local, _minb) in VARIANTS.items():
        measure(name, profile(rng, rows), local)
    tb_prof = profile(rng, 16)  # with traceback: 16 rows, 0.5 byte a cell stored
    for name, local in TB_VARIANTS.items():
        measure(name, tb_prof, local, traceback=True)


if __name__ == "__main__":
    main()
