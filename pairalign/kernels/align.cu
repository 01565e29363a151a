// pairalign GPU kernels.
//
// Conventions are those of pairalign/kernels/cpu.py (the reference): cells (i, j)
// 1-based, i over the query (row sequence), j over the target. Ties: H prefers
// diagonal, then E, then F, and stops at 0 in local mode; E and F prefer
// opening; the end cell is the first best cell in row-major order.
//
// The traceback holds four bits a cell (i, j), four comparisons: bit 0 "F over
// E" (E < F), bit 1 "H from a gap" (D < H, D the diagonal term), bit 2 "E of
// the next cell, (i, j + 1), extends this one's" (E - ge > H - go), bit 3 "F
// of the cell below, (i + 1, j), extends this one's". H's origin is the
// diagonal without bit 1, else F with bit 0, else E; a gap run goes on while
// the cell it reaches has its bit set (the walk reads each cell's word once).
// The local stop (H = 0) is not stored: the walk carries the score back from
// the end cell (each move undoes one term of the recurrence) and stops where H
// reaches 0.
//
// A thread fills a stripe of STRIPE query rows held in registers, column by
// column (struct Stripe); a stripe's 8 cells of one column make one 32-bit
// traceback word, in bit planes: bit k of row r at bit 8 k + r (tb_bits). E and F are kept as E + go and F + go, so that each takes one
// DPX instruction: E'[i][j] = max(H[i][j-1], E'[i][j-1] - ge).
//
// A window's pairs are of two kinds, the wide ones first (wide pairs need a
// matrix of at most 24 letters with scores that fit a signed byte); the host
// launches `fill` on the wide blocks, then on the narrow ones (block0):
//
// - wide pairs (all but the smallest), one warp each (or several, each taking
//   every ww-th band: BandChain): lane l fills stripe 32 b + l of
//   band b, one column behind lane l - 1, which hands it the H and F of the row
//   above through a shuffle. A pair's critical path is 32 times shorter than on
//   one thread, so the longest pairs no longer hold up the end of a launch. Word
//   (stripe s, column j) of a wide pair sits at off[p] + ((s / 32) * (m + 31)
//   + (j - 1) + s % 32) * 32 + s % 32: the step at which it is written, so that
//   each step's stores coalesce. The band's top row (H, F) lives in global memory
//   at boff[p], m + 1 entries, rewritten by the band's last lane for the next.
// - narrow pairs, one thread each: the row above a stripe lives in global memory
//   per warp [j][lane] from boff[nwide + warp]; each warp (32 consecutive pairs,
//   which share a query and have targets of about one length) owns a block of
//   words sized by its own longest pair, word (stripe, j) of lane l at
//   off[nwide + warp] + (stripe * warp_m + j - 1) * 32 + l.
//
// - packed pairs (wide, scores within 16 bits): two pairs of one query per
//   group of lanes, the groups of a warp of one query, launched first on their
//   own (fill2, see fill_pack); with traceback, each pair's words in the wide
//   layout above with bands of PACK_TB_GROUP lanes of TB_STRIPES stripes each
//   instead of 32 lanes of one: with gs = PACK_TB_GROUP * TB_STRIPES, word
//   (s, j) at ((s / gs) * (m + PACK_TB_GROUP - 1) + (j - 1) + l) * gs + s % gs,
//   where l = (s % gs) / TB_STRIPES is the lane that fills it.
// - query couples (local and global: QueryCouple): two queries (rows r and
//   r + 1 of a window) against one target, the packed kernel's first warps
//   (fill2); with traceback each pair's words in the couples'
//   layout above, both with the bands of the longer query (the first).
//
// SCORE, the type of the stored boundary row, is int, or short where every score
// fits (the host checks the bound): half the bytes moved per stripe.

#define STRIPE 8
#define PAD 31
#define GLOBAL 0
#define SEMIGLOBAL 1
#define LOCAL 2
#define FULL 0xffffffffu
#define NO_SHORT_BAND 0x7fffffff  // walk_pair's short_from where no band is short

#ifndef SCORE
#define SCORE int
#endif

// The packed kernel's shape: without traceback, rows a lane (8, 16 or 32) and
// lanes a group (4, 8, 16 or 32) per mode; with traceback PACK_TB_ROWS rows a
// lane (8 or 16: a word a stripe of 8 a column) and PACK_TB_GROUP lanes, which
// lay out the couples' words (see walk). The host passes them
// (gpu_backend.PACK_SHAPES, PACK_ROWS_TRACEBACK, PACK_GROUP_TRACEBACK).
#ifndef PACK_ROWS_GLOBAL
#define PACK_ROWS_GLOBAL 16
#define PACK_GROUP_GLOBAL 8
#endif
#ifndef PACK_ROWS_SEMIGLOBAL
#define PACK_ROWS_SEMIGLOBAL 16
#define PACK_GROUP_SEMIGLOBAL 8
#endif
#ifndef PACK_ROWS_LOCAL
#define PACK_ROWS_LOCAL 16
#define PACK_GROUP_LOCAL 8
#endif
#ifndef PACK_TB_GROUP
#define PACK_TB_GROUP 8
#endif
#ifndef PACK_TB_ROWS
#define PACK_TB_ROWS 8
#endif
#define TB_STRIPES (PACK_TB_ROWS / STRIPE)  // stripes a lane of the packed kernel
// The packed kernel's threads a block, score-only and with traceback (the
// host passes gpu_backend.PACK_THREADS and PACK_THREADS_TRACEBACK), and its
// blocks a SM: with traceback 16 rows a lane take 104-110 registers at 512
// threads a SM and spill 36-60 bytes at 768 (80 registers), and run a little
// faster at 512 (NOTES.md, v12); 8 rows take 80 at 768 without spills; 32
// rows take 154-160 at 384.
#ifndef BLOCK_QUERY_PROFILE  // score-only query couples: a profile a block (gpu_backend)
#define BLOCK_QUERY_PROFILE 0
#endif
#ifndef BLOCK_QUERY_PROFILE_TB  // the same with traceback
#define BLOCK_QUERY_PROFILE_TB 0
#endif
// Score-only local and global, the blocks of G columns whose residues a lane
// holds: the next block's and the one after (RESIDUES_ONE_AHEAD: the next
// one's only, as semiglobal; see fill_band)
#ifdef RESIDUES_ONE_AHEAD
#define RESIDUES_AHEAD 1
#else
#define RESIDUES_AHEAD 2
#endif
#ifndef PACK_THREADS
#define PACK_THREADS 256
#endif
#ifndef PACK_TB_THREADS
#define PACK_TB_THREADS 256
#endif
#ifndef PACK_TB_BLOCKS
#define PACK_TB_BLOCKS ((PACK_TB_ROWS == 32 ? 384 : PACK_TB_ROWS == 16 ? 512 : 768) \
                        / PACK_TB_THREADS)
#endif

__host__ __device__ constexpr int pack_rows(int mode) {
    return mode == GLOBAL ? PACK_ROWS_GLOBAL : mode == SEMIGLOBAL ? PACK_ROWS_SEMIGLOBAL
                                                                  : PACK_ROWS_LOCAL;
}

__host__ __device__ constexpr int pack_group(int mode) {
    return mode == GLOBAL ? PACK_GROUP_GLOBAL : mode == SEMIGLOBAL ? PACK_GROUP_SEMIGLOBAL
                                                                   : PACK_GROUP_LOCAL;
}

__device__ __forceinline__ int gap_boundary(int i, int go, int ge) {
    return i == 0 ? 0 : -(go + (i - 1) * ge);
}

__device__ __forceinline__ bool earlier(int i, int j, int bi, int bj) {
    return i < bi || (i == bi && j < bj);
}

__device__ __forceinline__ void offer(int h, int i, int j, int& best, int& bi, int& bj) {
    if (h > best || (h == best && earlier(i, j, bi, bj))) { best = h; bi = i; bj = j; }
}

// The substitution matrix in shared memory, rows 32 apart (as fill loads it):
// W(a, b) at qa + b for qa = 32 a. A warp's narrow pairs share their query, so its
// lanes read one row, in different banks. A column's scores are read through
// column(b): what depends on the target residue alone is worked out once a
// column, not once a cell.
struct SharedMatrix {
    const int* s;
    struct Column {
        const int* p;
        __device__ __forceinline__ int operator()(int qa) const { return p[qa]; }
    };
    __device__ __forceinline__ Column column(int b) const { return Column{s + b}; }
};

// The same as signed bytes, a copy in each bank (load_lane_matrix): lane l
// reads only bank l, so lanes that score pairs of residues of their own (the
// bounded traceback's passes) do not conflict (with SharedMatrix, ncu counted
// 39-70 M bank conflicts in a window's narrow box fill and 118 M in its
// reverse pass: NOTES.md, v21). Entries of row PAD are -128. Entry (a, b),
// e = qa + b, is byte e % 4 of word (e / 4) * 32 + lane; since qa is a
// multiple of 32 that is byte b % 4 of word 8 qa + (b / 4) * 32 + lane, so a
// cell costs an address, a load and a PRMT that picks the byte with its sign.
struct LaneMatrix {
    const unsigned* s;
    int lane;
    struct Column {
        unsigned addr;  // the shared-memory address of entry (0, b)'s word
        unsigned sel;   // PRMT selector: byte b % 4, its sign bit replicated above
        __device__ __forceinline__ int operator()(int qa) const {
            unsigned w, r;
            asm("ld.shared.u32 %0, [%1];" : "=r"(w) : "r"(addr + ((unsigned)qa << 5)));
            asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(w), "r"(sel));
            return (int)r;
        }
    };
    __device__ __forceinline__ Column column(int b) const {
        const unsigned k = b & 3;
        return Column{(unsigned)__cvta_generic_to_shared(s + (b >> 2) * 32 + lane),
                      k | (k | 8) * 0x1110u};
    }
};

// The matrix as LaneMatrix reads it: 32 rows of 32 signed bytes (row PAD and
// columns past K: -128), each word of 4 entries repeated in every bank; 32 KB.
__device__ __forceinline__ void load_lane_matrix(unsigned* lm, const int* matrix, int K) {
    for (int k = threadIdx.x; k < 256 * 32; k += blockDim.x) {
        const int w = k / 32;  // entries 4 w to 4 w + 3
        unsigned word = 0;
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            const int e = 4 * w + x, a = e / 32, b = e % 32;
            const int v = (a < K && b < K) ? matrix[a * K + b] : -128;
            word |= ((unsigned)v & 0xffu) << (8 * x);
        }
        lm[k] = word;
    }
    __syncthreads();
}

template <int mode, bool want_tb>
struct Stripe {
    int qa[STRIPE], hl[STRIPE], el[STRIPE];

    __device__ __forceinline__ void start(const unsigned char* a, int n, int i0, int go,
                                          int ge, int neg) {
#pragma unroll
        for (int r = 0; r < STRIPE; ++r) {
            // row PAD scores rows past the query's end so low that none of their
            // cells can become a best cell (no bounds test per cell)
            qa[r] = (i0 + r < n ? a[i0 + r] : PAD) * 32;
            hl[r] = (mode == GLOBAL) ? gap_boundary(i0 + r + 1, go, ge) : 0;
            el[r] = neg;
        }
    }

    // Column j of the stripe: diag = H[i0][j - 1]; hup, fup come in as H[i0][j]
    // and F'[i0][j] and leave as the stripe's last row. Returns the traceback word.
    template <typename Matrix>
    __device__ __forceinline__ unsigned column(const Matrix& mat, int bc, int diag, int& hup,
                                               int& fup, int go, int ge) {
        const auto col = mat.column(bc);
        int sub[STRIPE];
#pragma unroll
        for (int r = 0; r < STRIPE; ++r) sub[r] = col(qa[r]);
        return column(sub, diag, hup, fup, go, ge);
    }

    // The same with the substitution scores of the column's cells given.
    __device__ __forceinline__ unsigned column(const int (&sub)[STRIPE], int diag, int& hup,
                                               int& fup, int go, int ge) {
        // the traceback's four comparisons a row, each shifted in as the sign
        // of a difference (one subtract and one funnel shift a bit, where a
        // compare, a select, a shift and an OR took four): after the stripe's
        // rows, the low byte of plane k holds row r at bit 7 - r
        unsigned plane[4] = {};  // shifted out by the stripe's 8 rows
#pragma unroll
        for (int r = 0; r < STRIPE; ++r) {
            const int d = diag + sub[r];
            const int e = __viaddmax_s32(el[r], -ge, hl[r]);
            const int f = __viaddmax_s32(fup, -ge, hup);
            const int ef = max(e, f);
            // Local with traceback compares h with d: there h must not come from
            // __viaddmax_s32_relu, after which nvcc 13 (sm_90) evaluates h == c
            // as h == a + b (seen on the H100; benchmarks/NOTES.md, v5).
            const int h = (mode != LOCAL) ? __viaddmax_s32(ef, -go, d)
                        : want_tb ? __vimax_s32_relu(d, ef - go)
                                  : __viaddmax_s32_relu(ef, -go, d);
            if (want_tb) {  // E' and F' of the next cells: max(X' - ge, h); h >= d
                plane[0] = __funnelshift_l(e - f, plane[0], 1);       // e < f
                plane[1] = __funnelshift_l(d - h, plane[1], 1);       // h != d
                plane[2] = __funnelshift_l(h - e + ge, plane[2], 1);  // e - ge > h
                plane[3] = __funnelshift_l(h - f + ge, plane[3], 1);  // f - ge > h
            }
            diag = hl[r];
            hl[r] = h;
            el[r] = e;
            hup = h;
            fup = f;
        }
        if (!want_tb) return 0;
        // bytes [plane 3, 2, 1, 0] reversed bit by bit: plane k's row r at 8 k + r
        return __brev(__byte_perm(__byte_perm(plane[3], plane[2], 0x0040),
                                  __byte_perm(plane[1], plane[0], 0x0040), 0x5410));
    }

    __device__ __forceinline__ int pick(int r) const {
        int x = hl[0];
#pragma unroll
        for (int k = 1; k < STRIPE; ++k) x = (r == k) ? hl[k] : x;
        return x;
    }

    // The end cell after column j: local takes the column's maximum (a slow path
    // only when it beats or ties the best), semiglobal looks at row n and column m,
    // global at cell (n, m).
    __device__ __forceinline__ void track(int i0, int j, int n, int m, int& best, int& bi,
                                          int& bj) const {
        if (mode == LOCAL) {
            const int c = max(__vimax3_s32(__vimax3_s32(hl[0], hl[1], hl[2]),
                                           __vimax3_s32(hl[3], hl[4], hl[5]), hl[6]), hl[7]);
            if (c > best || (c == best && c > 0 && bi > i0)) {
                int rf = STRIPE - 1;
#pragma unroll
                for (int r = STRIPE - 2; r >= 0; --r) rf = (hl[r] == c) ? r : rf;
                const int i = i0 + rf + 1;
                if (c > best || i < bi) { best = c; bi = i; bj = j; }
            }
        } else {
            const bool last = i0 + STRIPE >= n;
            if (mode == SEMIGLOBAL) {
                if (last) offer(pick(n - 1 - i0), n, j, best, bi, bj);
                if (j == m) {
#pragma unroll
                    for (int r = 0; r < STRIPE; ++r)
                        if (i0 + r + 1 < n) offer(hl[r], i0 + r + 1, m, best, bi, bj);
                }
            } else if (last && j == m) {
                best = pick(n - 1 - i0); bi = n; bj = m;
            }
        }
    }
};

// One thread, one pair (see the top of the file for the layout: a warp's 32
// pairs interleave their boundary entries and traceback words).
template <int mode, bool want_tb, typename Matrix>
__device__ __forceinline__ void fill_thread(
     const Matrix& smat, const unsigned char* a, int n, const unsigned char* b, int m,
     int go, int ge, int neg, SCORE* bnd_h, SCORE* bnd_f, unsigned int* tbw, int wm,
     int& best, int& bi, int& bj)
{
    for (int j = 0; j <= m; ++j) {
        bnd_h[j * 32] = (SCORE)(mode == GLOBAL ? gap_boundary(j, go, ge) : 0);
        bnd_f[j * 32] = (SCORE)neg;
    }
    Stripe<mode, want_tb> st;
    for (int i0 = 0; i0 < n; i0 += STRIPE) {
        st.start(a, n, i0, go, ge, neg);
        int diag0 = bnd_h[0];  // H[i0][0]
        bnd_h[0] = (SCORE)((mode == GLOBAL) ? gap_boundary(i0 + STRIPE, go, ge) : 0);
        // the next column's inputs are loaded one column ahead: their latency
        // (L2, and L1 for the target) hides behind this column's arithmetic
        int bc_next = b[0], hup_next = bnd_h[32], fup_next = bnd_f[32];
        for (int j = 1; j <= m; ++j) {
            const int bc = bc_next;
            const int bidx = j * 32;
            int hup = hup_next;
            int fup = fup_next;
            if (j < m) {
                bc_next = b[j];
                hup_next = bnd_h[bidx + 32];
                fup_next = bnd_f[bidx + 32];
            }
            const int diag = diag0;
            diag0 = hup;
            const unsigned word = st.column(smat, bc, diag, hup, fup, go, ge);
            st.track(i0, j, n, m, best, bi, bj);
            bnd_h[bidx] = (SCORE)hup;
            bnd_f[bidx] = (SCORE)fup;
            if (want_tb)
                tbw[((long long)(i0 / STRIPE) * wm + (j - 1)) * 32] = word;
        }
    }
}

// The row above a band, as the lanes of a group of G (the warp, or a part of
// it for the packed kernel's groups) take it: lane 0 one column of the band's
// top row a step, G columns at a time from registers of the whole group (the
// next G loaded ahead); every other lane the last row of its neighbour's
// stripe, one step old, through a shuffle. T: int, or two 16-bit halves;
// lane: the lane in the group.
template <typename T, int G = 32, bool late = false>
struct BandTop {
    T cur_h, cur_f, nxt_h, nxt_f, ld_h, ld_f;

    template <typename P>
    __device__ __forceinline__ BandTop(const P* top_h, const P* top_f, int lane, int m, T neg)
        : cur_h(0), cur_f(neg), nxt_h(0), nxt_f(neg) {
        if (lane + 1 <= m) { cur_h = top_h[lane + 1]; cur_f = top_f[lane + 1]; }
        if (lane + G + 1 <= m) { nxt_h = top_h[lane + G + 1]; nxt_f = top_f[lane + G + 1]; }
    }

    // H and F of the row above this lane's cell at step t. The next G
    // columns' values are loaded G steps before they are needed. late: they
    // become nxt only at the step's end (settle), a lane past the row's end
    // (column m) loading column m again (no step reads it); assigned where
    // they were loaded, ptxas loaded into other registers and moved them
    // into nxt at once, and the warp waited there for the load every G
    // steps (ncu: long scoreboard). Late, score-only local and global ran
    // 2.2% and 1.1% faster at 1e13 cells and semiglobal 11% slower (its
    // spills; NOTES.md, v42): fill_band asks for it by mode.
    template <typename P>
    __device__ __forceinline__ void step(const P* top_h, const P* top_f, int t, int lane, int m,
                                         T out_h, T out_f, T& hup, T& fup) {
        if (t > 0 && (t & (G - 1)) == 0) {
            cur_h = nxt_h; cur_f = nxt_f;
            if constexpr (late) {
                const int k = min(t + G + 1 + lane, m);
                ld_h = top_h[k]; ld_f = top_f[k];
            } else {
                const int k = t + G + 1 + lane;
                if (k <= m) { nxt_h = top_h[k]; nxt_f = top_f[k]; }
            }
        }
        hup = __shfl_up_sync(FULL, out_h, 1, G);
        fup = __shfl_up_sync(FULL, out_f, 1, G);
        const T th = __shfl_sync(FULL, cur_h, t & (G - 1), G);
        const T tf = __shfl_sync(FULL, cur_f, t & (G - 1), G);
        if (lane == 0) { hup = th; fup = tf; }
    }

    // the end of step t: what step loaded becomes nxt (late)
    __device__ __forceinline__ void settle(int t) {
        if constexpr (late) {
            if (t > 0 && (t & (G - 1)) == 0) { nxt_h = ld_h; nxt_f = ld_f; }
        }
    }
};

// The query profile of a band of G lanes of R rows (lane l: rows (band * G +
// l) * R onwards), for the warp kernels. The lanes score different query rows
// against different target residues: lookups in one shared table would
// conflict on its banks. The profile holds instead, for each target residue
// t, each lane's R scores as signed bytes at prof[t * G + l]: one
// conflict-free 8- or 16-byte load per lane and column (G lanes read one
// residue's G consecutive words). The groups of a packed warp share their
// query, and so one profile, built by the whole warp. Rows past the query's
// end, and entries t >= K (the packed kernel's one more, for columns past a
// target's end), score -128.
template <int R> struct ProfileWord;
template <> struct ProfileWord<8> { typedef uint2 type; };
template <> struct ProfileWord<16> { typedef uint4 type; };
struct alignas(16) uint8x32 { uint4 lo, hi; };
template <> struct ProfileWord<32> { typedef uint8x32 type; };

template <int R, int G>
__device__ __forceinline__ void build_profile(const int* matrix, int K, int entries,
                                              typename ProfileWord<R>::type* prof,
                                              const unsigned char* a, int n, int band, int lane,
                                              int pad = 0) {
    for (int k = lane; k < entries * G; k += 32) {
        const int t = k / G, i0 = (band * G + k % G) * R - pad;
        unsigned w[R / 4] = {};
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int v = (t < K && i0 + r < n) ? (i0 + r < 0 ? 0 : matrix[a[i0 + r] * K + t])
                                                : -128;
            w[r / 4] |= ((unsigned)v & 0xffu) << (8 * (r % 4));
        }
        typename ProfileWord<R>::type word;
        memcpy(&word, w, sizeof(word));
        prof[k] = word;
    }
}

// Several warps on one wide pair (fill's ww > 1): warp w of the pair fills
// bands w, w + ww, ..., each behind the band above, whose bottom row (the
// pair's one top row in global memory, rewritten band by band) it loads up to
// 64 columns ahead (BandTop). Every `every + 1` steps (a multiple of 32) the
// band's last lane publishes how much of that row it has written, as band *
// span + columns (span = m + 2, so that a later band's count is larger),
// after a fence; every 32 steps a warp waits, before its loads, until the band
// above has written as far. A band writes a column only after loading it, and
// the band below loads it only after that, so one row serves every band;
// nothing waits on a later band. The counts sit in shared memory where the
// pair's warps share a block (a block-scope fence), or in global memory where
// they span blocks (device: a device-scope fence before the count, an acquire
// load of it, so that the loads after it do not read the row from a stale
// L1). prog null: one warp a pair.
__device__ __forceinline__ int load_acquire(const volatile int* p) {
    int v;
    asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

struct BandChain {
    volatile int* prog;  // the pair's warps' counts
    int wi, ww, span;    // this warp of the pair's ww
    bool device;         // prog in global memory, the pair's warps over blocks
    int every;           // publish at steps t with (t & every) == 0: 31 or 127

    __device__ __forceinline__ void publish(int band, int cols, int writer) const {
        if (!prog) return;
        __syncwarp();
        if (device) __threadfence(); else __threadfence_block();
        if ((int)(threadIdx.x & 31) == writer) prog[wi] = band * span + cols;
    }

    // until band - 1 has written its bottom row through column cols
    __device__ __forceinline__ void wait(int band, int cols) const {
        if (!prog || band == 0) return;
        const int need = (band - 1) * span + cols;
        const volatile int* above = prog + (wi + ww - 1) % ww;
        if (device) {
            while (load_acquire(above) < need) __nanosleep(64);
        } else {
            while (*above < need) __nanosleep(32);
            __threadfence_block();
        }
    }
};

// One warp, one pair (see the top of the file for the layout), or with chain
// one of its warps (BandChain). Every lane ends with the best of its own
// cells; the caller reduces them.
template <int mode, bool want_tb>
__device__ __forceinline__ void fill_warp(
     const int* matrix, int K, uint2* prof, const unsigned char* a, int n,
     const unsigned char* b, int m, int go, int ge, int neg, SCORE* top_h, SCORE* top_f,
     unsigned int* tbp, int lane, int& best, int& bi, int& bj,
     const BandChain chain = BandChain{nullptr, 0, 1, 0, false, 31})
{
    if (chain.wi == 0) {
        for (int j = lane; j <= m; j += 32) {
            top_h[j] = (SCORE)(mode == GLOBAL ? gap_boundary(j, go, ge) : 0);
            top_f[j] = (SCORE)neg;
        }
    }
    const int nstripes = (n + STRIPE - 1) / STRIPE;
    Stripe<mode, want_tb> st;
    for (int band = chain.wi; band * 32 < nstripes; band += chain.ww) {
        __syncwarp();
        const int i0 = (band * 32 + lane) * STRIPE;
        const int last = min(31, nstripes - 1 - band * 32);  // the band's last lane
        st.start(a, n, i0, go, ge, neg);
        build_profile<STRIPE, 32>(matrix, K, K, prof, a, n, band, lane);
        __syncwarp();
        int diag = (mode == GLOBAL) ? gap_boundary(i0, go, ge) : 0;  // H[i0][0]
        int out_h = 0, out_f = neg;
        chain.wait(band, min(64, m));
        BandTop<int> above(top_h, top_f, lane, m, neg);
        const int steps = m + last;
        const long long tb_band = (long long)band * (m + 31);
        for (int t = 0; t < steps; ++t) {
            if (chain.prog && t > 0 && (t & 31) == 0) {
                if ((t & chain.every) == 0) chain.publish(band, min(max(t - last, 0), m), last);
                chain.wait(band, min(t + 64, m));
            }
            int hup, fup;
            above.step(top_h, top_f, t, lane, m, out_h, out_f, hup, fup);
            const int j = t - lane + 1;
            if (j >= 1 && j <= m && lane <= last) {
                const int d0 = diag;
                diag = hup;
                const uint2 pw = prof[b[j - 1] * 32 + lane];
                int sub[STRIPE];
#pragma unroll
                for (int r = 0; r < STRIPE; ++r)
                    sub[r] = (int)(signed char)(((r < 4) ? pw.x : pw.y) >> (8 * (r % 4)));
                const unsigned word = st.column(sub, d0, hup, fup, go, ge);
                st.track(i0, j, n, m, best, bi, bj);
                out_h = hup;
                out_f = fup;
                if (lane == last) { top_h[j] = (SCORE)hup; top_f[j] = (SCORE)fup; }
                if (want_tb) tbp[(tb_band + t) * 32 + lane] = word;
            }
        }
        chain.publish(band, m + 1, last);
    }
}

// Two pairs of one query on a group of lanes (see fill_pack), each register
// holding a cell of both in its signed 16-bit halves (low: pair p, high: pair
// p + 1): the wide path's wavefront with every instruction doing two cells. For pairs whose
// scores fit 16 bits over the query and the longer target (the host checks);
// the shorter target's columns past its end score a profile entry of -128,
// and since no cell depends on a column to its right they change nothing of
// its own cells. The band's top row holds both pairs' H and F in one word.
__device__ __forceinline__ unsigned pack2(int v) { return ((unsigned)v & 0xffffu) * 0x10001u; }

__device__ __forceinline__ int half(unsigned x, int k) {
    return k ? (int)x >> 16 : (int)(x << 16) >> 16;
}

#define NEG16 (-16384)

// Packed add and max in PTX (sm_90): the __vadd2 / __vmaxs2 builtins cost an
// extra PRMT per use on nvcc 13.
__device__ __forceinline__ unsigned add2(unsigned a, unsigned b) {
    unsigned r;
    asm("add.s16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

__device__ __forceinline__ unsigned max2(unsigned a, unsigned b) {
    unsigned r;
    asm("max.s16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

// Where a < b in each half: the signs of __vsub2(a, b). PTX has no packed
// subtract on sm_90, but nvcc turns __vsub2 into one VIADD.16x2 with b negated
// (FMA pipe); ~(~a + b) took two more ALU-pipe instructions. Every difference
// the traceback takes is of two scores of cells (or of E and F one gap
// away), and the 16-bit bound keeps it within 16 bits (|score| <
// 16,000 - go - ge; scoring.INT16_LIMIT). signs2: the signs of x's and y's
// halves as bytes of 0 or 0xff, [x low, y low, x high, y high].
__device__ __forceinline__ unsigned signs2(unsigned x, unsigned y) {
    unsigned r;  // prmt, not __byte_perm: its selectors' sign bits replicate
    asm("prmt.b32 %0, %1, %2, 0xfbd9;" : "=r"(r) : "r"(x), "r"(y));
    return r;
}

// acc with bit k of each byte of s (bytes of 0 or 0xff, from signs2) added:
// bit k of each byte of acc is 0. By a LOP3 (ALU pipe), or by an IMAD (FMA
// pipe) where mad: s is 255 times its bytes' bits y, so s * (255^-1 << k) =
// y << k (mod 2^32), 255^-1 = 0xfefefeff; and, the bits apart, adding them is
// or-ing them. The traceback step's instructions are about 7 a row on the ALU
// pipe against 6 on the FMA pipe, both half rate: TB_MAD_P and TB_MAD_Q (bit
// r: row r of a lane's R; p: bits 0-1, q: bits 2-3) choose which rows'
// planes move to the FMA pipe (the host passes gpu_backend's
// TRACEBACK_IMAD_ROWS_P and _Q).
#ifndef TB_MAD_P
#define TB_MAD_P 0
#endif
#ifndef TB_MAD_Q
#define TB_MAD_Q 0
#endif
__device__ __forceinline__ unsigned in_plane(unsigned acc, unsigned s, int k, bool mad) {
    if (mad) {
        unsigned r;  // PTX, so that no strength reduction moves it to the ALU pipe
        asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(s), "r"(0xfefefeffu << k), "r"(acc));
        return r;
    }
    return acc | (s & (0x01010101u << k));
}

// Semiglobal with traceback, the packed pairs' query padded on top as
// score-only (Stripe2::top_pad), so that row n's H is the stripe's last
// row's: without it, in a query's last band the lane that holds row n takes
// its H out of the stripe every column (Stripe2::row, a chain of masks)
// while the group's other lanes wait. walk_pair then reads row i at row i
// + pad of the words (target couples only: semiglobal with traceback has no
// query couples, gpu_backend._query_band). The host passes
// gpu_backend.SEMIGLOBAL_TRACEBACK_TOP_PAD.
#ifndef TB_TOP_PAD
#define TB_TOP_PAD 0
#endif

// R rows a lane: 8, 16 or 32 (with traceback a 32-bit word a column per 8 rows).
template <int mode, bool want_tb, int R>
struct Stripe2 {
    static_assert(R == 8 || R == 16 || R == 32, "rows a lane: 8, 16 or 32");
    // Score-only semiglobal, fill_pack pads the query on top (rows of score
    // 0, which repeat the boundary row H = 0) so that row n is the last row
    // of a stripe: its end-cell tracking reads hl[R - 1] instead of choosing
    // among R rows every column (which took registers enough to spill at 32
    // rows a lane).
    static constexpr bool top_pad = mode == SEMIGLOBAL && (!want_tb || TB_TOP_PAD);
    unsigned hl[R], el[R];

    // el holds E of the next column's cell, E[i][j + 1]; F comes in as F of
    // the stripe's first row and leaves as F of the row below its last.
    __device__ __forceinline__ void start(int i0, int go, int ge) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int h0 = (mode == GLOBAL) ? gap_boundary(i0 + r + 1, go, ge) : 0;
            hl[r] = pack2(h0);
            el[r] = pack2(h0 - go);
        }
    }

    // H of row i0 (the one above the stripe) in column 0: the diagonal term
    // of the stripe's first cell of column 1
    __device__ __forceinline__ static unsigned corner(int i0, int go, int ge) {
        return pack2((mode == GLOBAL) ? gap_boundary(i0, go, ge) : 0);
    }

    // The stripe's cells of column j of both pairs (see Stripe::column). The
    // diagonal terms come first, from the previous column's H before any is
    // overwritten: at 8 rows no register copies (ALU-pipe PRMTs on nvcc 13;
    // the ALU pipe is what bounds this kernel, ncu: 84-87% busy). At 16 rows
    // nvcc schedules them later and copies the new H (IMAD.MOV, FMA pipe; at 32
    // rows 32 copies a step: benchmarks/NOTES.md, v11).
    //
    // E and F are kept as they are, the next column's E and the next row's
    // F computed ahead: a cell is H = max3(D, E, F) and the next E and F, each
    // max(X - ge, H - go), on the ALU pipe, and adds (D, H - go) on the FMA
    // pipe. Score-only, each of the next E and F is one DPX instruction; E' =
    // E + go took a fourth maximum (and, with traceback, register copies).
    //
    // With traceback, each cell's four bits (see the top of the file) are
    // signs of differences, in both halves at once: E - F, D - H, (H - go) -
    // E' and (H - go) - F', with E' = max(E - ge, H - go) the next E (and F'
    // the next F): negative exactly where E - ge > H - go, as (H - go) - (E -
    // ge) is, without computing E - ge apart (one DPX instruction for E', no
    // add: 32 fewer FMA-pipe instructions a 16-row step, in the loop of
    // fill2<local> 461 to 434 with ptxas's register copies; the E' and F'
    // written after the bits that read E and F, so that they take E's and F's
    // registers: written before, 21 more copies). One PRMT turns the signs of two
    // differences into four bytes of 0 or 0xff (sign-replicating selectors),
    // and one LOP3 keeps bit r of each (the word's bit planes): `p` collects
    // bits 0 and 1, `q` bits 2 and 3, in bytes 0-1 for the low halves' pair
    // and 2-3 for the high; w0 and w1 are the two pairs' words. The
    // shift-and-add of each sign bit took two ALU-pipe instructions a
    // comparison, this one.
    //
    // bits: whether to make the words (by default with traceback; the
    // checkpointed fill makes none, its walk's recomputation does: CKPT).
    template <bool bits = want_tb>
    __device__ __forceinline__ void column(unsigned (&sub)[R], unsigned diag,
                                           unsigned& hup, unsigned& fup, unsigned go2,
                                           unsigned ge2, unsigned (&w0)[R / 8],
                                           unsigned (&w1)[R / 8]) {
        sub[0] = add2(diag, sub[0]);
#pragma unroll
        for (int r = 1; r < R; ++r) sub[r] = add2(hl[r - 1], sub[r]);
        unsigned p[R / 8] = {}, q[R / 8] = {};  // a stripe of 8 rows each
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const unsigned h = (mode == LOCAL) ? __vimax3_s16x2_relu(sub[r], el[r], fup)
                                               : __vimax3_s16x2(sub[r], el[r], fup);
            const unsigned hg = add2(h, go2);
            if (!bits) {
                el[r] = __viaddmax_s16x2(el[r], ge2, hg);
                fup = __viaddmax_s16x2(fup, ge2, hg);
            } else {
                p[r / 8] = in_plane(p[r / 8], signs2(__vsub2(el[r], fup), __vsub2(sub[r], h)),
                                    r % 8, (TB_MAD_P >> r) & 1);
                el[r] = __viaddmax_s16x2(el[r], ge2, hg);
                fup = __viaddmax_s16x2(fup, ge2, hg);
                q[r / 8] = in_plane(q[r / 8], signs2(__vsub2(hg, el[r]), __vsub2(hg, fup)),
                                    r % 8, (TB_MAD_Q >> r) & 1);
            }
            hl[r] = h;
            hup = h;
        }
        if (bits) {
#pragma unroll
            for (int k = 0; k < R / 8; ++k) {
                w0[k] = __byte_perm(p[k], q[k], 0x5410);
                w1[k] = __byte_perm(p[k], q[k], 0x7632);
            }
        }
    }

    // H of the stripe's row r (0 <= r < R), both halves, by masks: a chain of
    // selects on r lets nvcc move the stripe to local memory.
    __device__ __forceinline__ unsigned row(int r) const {
        unsigned x = 0;
#pragma unroll
        for (int k = 0; k < R; ++k) x |= hl[k] & (0u - (unsigned)(k == r));
        return x;
    }

    // The end cells of both pairs after column j (see Stripe::track). Local takes
    // the column's maximum and a slow path only where a half reaches its pair's
    // best (at least 1); floor, read in local mode only, holds max(best - 1,
    // 0) of both pairs: a word in shared memory that the lanes of a couple
    // share (a cell below another lane's best of its pair is not the pair's
    // end cell), raised without atomics (a lost raise only costs a later slow
    // path).
    __device__ __forceinline__ void track(int i0, int j, int n, int m0, int m1,
                                          volatile unsigned& floor, int (&best)[2], int (&bi)[2],
                                          int (&bj)[2]) const {
        if (mode == LOCAL) {
#ifdef TRACK_NONE  // benchmarks only: what local's end-cell tracking costs (no best at all)
            if (!want_tb) return;
#endif
            unsigned c2 = __vimax3_s16x2(hl[0], hl[1], hl[2]);
#pragma unroll
            for (int r = 3; r + 1 < R; r += 2) c2 = __vimax3_s16x2(c2, hl[r], hl[r + 1]);
            c2 = max2(c2, hl[R - 1]);  // R is even
            const unsigned f = floor;
#ifdef TRACK_NO_ROWS  // benchmarks only: the slow path entered as it is, its row search left out
            if (!want_tb && max2(c2, f) != f) {
#pragma unroll
                for (int k = 0; k < 2; ++k) {
                    const int c = half(c2, k);
                    if (c > best[k]) { best[k] = c; bi[k] = i0 + 1; bj[k] = j; }
                }
                floor = max2(floor, (((unsigned)max(best[1] - 1, 0)) << 16)
                                    | (unsigned)max(best[0] - 1, 0));
                return;
            }
#endif
            if (max2(c2, f) != f) {
                // Which rows reach the column's maximum, both halves at once:
                // relu(H - c2 + 1) is 1 there and 0 elsewhere (H <= c2), one
                // DPX instruction a row; the rows of a chunk of C as bits
                // (row 0 the highest), doubled and added by one 32-bit add a
                // row (IADD3 or IMAD; no carry between halves: C <= 16 bits).
                constexpr int C = R < 16 ? R : 16;
                const unsigned lift = __vsub2(0x00010001u, c2);
                unsigned rows[R / C];
#pragma unroll
                for (int q = 0; q < R / C; ++q) {
                    unsigned acc = 0;
#pragma unroll
                    for (int r = q * C; r < q * C + C; ++r)
                        acc = acc + acc + __viaddmax_s16x2_relu(hl[r], lift, 0u);
                    rows[q] = acc;
                }
#pragma unroll
                for (int k = 0; k < 2; ++k) {
                    const int c = half(c2, k);
                    if (c > best[k] || (c == best[k] && c > 0 && bi[k] > i0)) {
                        int rf = 0;  // the first row of the first chunk that has one
#pragma unroll
                        for (int q = R / C - 1; q >= 0; --q) {
                            const unsigned bits = k ? rows[q] >> 16 : rows[q] & 0xffffu;
                            if (bits) rf = q * C + __clz(bits) - (32 - C);
                        }
                        const int i = i0 + rf + 1;
                        if (c > best[k] || i < bi[k]) { best[k] = c; bi[k] = i; bj[k] = j; }
                    }
                }
                floor = max2(floor, (((unsigned)max(best[1] - 1, 0)) << 16)
                                    | (unsigned)max(best[0] - 1, 0));
            }
        } else {
            const bool last = i0 + R >= n;
#pragma unroll
            for (int k = 0; k < 2; ++k) {
                const int mk = k ? m1 : m0;
                if (j > mk) continue;
                if (mode == SEMIGLOBAL) {
                    semiglobal_ends(k, i0, n, j, mk, last, best, bi, bj);
                } else if (last && j == mk) {
                    best[k] = half(row(n - 1 - i0), k); bi[k] = n; bj[k] = mk;
                }
            }
        }
    }

    // Semiglobal end cells of half k (a pair of n rows and m columns; the
    // stripe's rows from i0 + 1, below 1 the top pad) after column j <= m:
    // its row n where the stripe holds it (``last``) and, at j = m, the best
    // row of column m (the first of equals).
    __device__ __forceinline__ void semiglobal_ends(int k, int i0, int n, int j, int m,
                                                    bool last, int (&best)[2], int (&bi)[2],
                                                    int (&bj)[2]) const {
        if (last) {
            const unsigned hn = top_pad ? hl[R - 1] : row(n - 1 - i0);
            offer(half(hn, k), n, j, best[k], bi[k], bj[k]);
        }
        if (j == m) {
            int c = NEG16, rf = -1;
#pragma unroll
            for (int r = R - 1; r >= 0; --r) {
                const int i = i0 + r + 1;
                const int x = half(hl[r], k);
                if (i >= 1 && i < n && x >= c) { c = x; rf = r; }
            }
            if (rf >= 0) offer(c, i0 + rf + 1, m, best[k], bi[k], bj[k]);
        }
    }

    // track for query couples (QueryCouple): the low half's query of n0 rows,
    // the high half's of n1, one target of m columns; i0 is the stripe's
    // first row with no pad. Local mode reads neither (rows past a query's
    // end score -128 and never hold a best cell); global takes each half's
    // cell (n_k, m). Semiglobal score-only pads each half's query on top by
    // its own p_k rows (see top_pad), so that its row n_k ends a stripe:
    // half k's rows of the stripe start at i0 - p_k; it takes the best of
    // its row n_k (the stripe's last) and of its column m, as track does.
    __device__ __forceinline__ void track_query(int i0, int j, int n0, int n1, int p0, int p1,
                                                int m, volatile unsigned& floor, int (&best)[2],
                                                int (&bi)[2], int (&bj)[2]) const {
        if (mode == LOCAL) {
            track(i0, j, n0, m, m, floor, best, bi, bj);
        } else if (mode == SEMIGLOBAL) {
#pragma unroll
            for (int k = 0; k < 2; ++k) {
                const int nk = k ? n1 : n0, ik = i0 - (k ? p1 : p0);
                semiglobal_ends(k, ik, nk, j, m, ik < nk && ik + R >= nk, best, bi, bj);
            }
        } else if (j == m) {
#pragma unroll
            for (int k = 0; k < 2; ++k) {
                const int nk = k ? n1 : n0;
                if (nk - 1 >= i0 && nk - 1 < i0 + R) {
                    best[k] = half(row(nk - 1 - i0), k); bi[k] = nk; bj[k] = m;
                }
            }
        }
    }
};

// Rows of the top pad above a query of n rows (Stripe2::top_pad), to a
// multiple of P: the couples' fills and the walk take it from here.
template <int mode, bool want_tb, int R, int P = R>
__device__ __forceinline__ int top_pad_rows(int n) {
    return Stripe2<mode, want_tb, R>::top_pad ? (P - n % P) % P : 0;
}

// Where column j's profile entries start, in bytes from a lane's word of entry
// 0 (entries of G words): low half target 0's, high half target 1's; a column
// past a target's end takes entry K (-128 throughout).
template <typename Word, int G>
__device__ __forceinline__ unsigned prof_offsets(const unsigned char* b0, int m0,
                                                 const unsigned char* b1, int m1, int K, int j) {
    const unsigned r0 = j <= m0 ? b0[j - 1] : K;
    const unsigned r1 = j <= m1 ? b1[j - 1] : K;
    return (r0 | (r1 << 16)) * (unsigned)(G * sizeof(Word));
}

// Word k of a lane's profile entry (rows 4k to 4k + 3)
__device__ __forceinline__ unsigned word_at(const uint2& w, int k) { return k ? w.y : w.x; }
__device__ __forceinline__ unsigned word_at(const uint8x32& w, int k) {
    return k == 0 ? w.lo.x : k == 1 ? w.lo.y : k == 2 ? w.lo.z : k == 3 ? w.lo.w
         : k == 4 ? w.hi.x : k == 5 ? w.hi.y : k == 6 ? w.hi.z : w.hi.w;
}
__device__ __forceinline__ unsigned word_at(const uint4& w, int k) {
    return k == 0 ? w.x : k == 1 ? w.y : k == 2 ? w.z : w.w;
}

// A couple of two targets and one query (see above): the profile of the
// query, (K + 1) entries of G words (see build_profile), entry K for the
// shorter target's columns past its end; a column's two entries, one per
// target, merged by a PRMT a row into the halves. R rows a lane; P, the rows
// a lane of the query's other bands, to which the top pad rounds (fill_pack
// may fill a query's last band in shorter stripes: in_stripes).
template <int mode, bool want_tb, int R, int G, int P = R>
struct TargetCouple {
    typedef typename ProfileWord<R>::type Word;
    Word* prof;
    const unsigned char* a;
    int n;
    const unsigned char *b0, *b1;
    int m0, m1, K;

    // rows of the top pad (see Stripe2::top_pad)
    __device__ __forceinline__ int pad() const { return top_pad_rows<mode, want_tb, R, P>(n); }
    __device__ __forceinline__ int rows() const { return n; }
    // the same couple in stripes of S rows a lane
    template <int S>
    __device__ __forceinline__ TargetCouple<mode, want_tb, S, G, P> in_stripes() const {
        return {reinterpret_cast<typename ProfileWord<S>::type*>(prof), a, n, b0, b1, m0, m1, K};
    }
    __device__ __forceinline__ void build(const int* matrix, int band, int lane) const {
        build_profile<R, G>(matrix, K, K + 1, prof, a, n, band, lane, pad());
    }
    // column j's profile offsets (see fill_band): loaded as residues(j), then
    // offsets(that) after the group's shuffle, or at once by offsets_at(j)
    __device__ __forceinline__ unsigned residues(int j) const {
        return prof_offsets<Word, G>(b0, m0, b1, m1, K, j);
    }
    __device__ __forceinline__ static unsigned offsets(unsigned loaded) { return loaded; }
    __device__ __forceinline__ unsigned offsets_at(int j) const { return residues(j); }
    // row r's two scores, each byte sign-extended into its half
    __device__ __forceinline__ void load(const char* plane, unsigned col,
                                         unsigned (&sub)[R]) const {
        const Word p0 = *reinterpret_cast<const Word*>(plane + (col & 0xffffu));
        const Word p1 = *reinterpret_cast<const Word*>(plane + (col >> 16));
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const unsigned k = r % 4;
            const unsigned sel = k | ((k | 8u) << 4) | ((4u + k) << 8) | ((12u + k) << 12);
            asm("prmt.b32 %0, %1, %2, %3;" : "=r"(sub[r])
                : "r"(word_at(p0, r / 4)), "r"(word_at(p1, r / 4)), "r"(sel));
        }
    }
    __device__ __forceinline__ void track(const Stripe2<mode, want_tb, R>& st, int i0, int j,
                                          volatile unsigned& floor, int (&best)[2], int (&bi)[2],
                                          int (&bj)[2]) const {
        st.track(i0, j, n, m0, m1, floor, best, bi, bj);
    }
};

// Query couples (local and global; semiglobal score-only, each query with its
// own top pad): two queries, rows r and r + 1 of a window
// (a0 of n0 rows, a1 of n1), against one target b of m columns, in the halves
// of each register (low: a0's pair). Both halves take the same target
// residue each column, so the warp's profile joins the two queries: entry t,
// lane l holds, for each of the lane's R rows, the scores of a0's and a1's
// residues against t as a ready pair of 16-bit halves (-128 past a query's
// end: such rows never hold a best cell, and nothing above them depends on
// them). A step loads its rows' pairs without merging (TargetCouple's PRMT a
// row). The groups of a warp share the query couple, each has its own target.
//
// A lane's R words of entry t are R / 4 chunks of 16 bytes, chunk-major:
// chunk q of lane l at prof[(t * R / 4 + q) * G + l], so that the G lanes of
// a group load one chunk from consecutive addresses (a lane's words side by
// side would put the lanes of a group 4 R bytes apart, on the same banks).
// Entries first, first + stride, ...: a warp's lanes (stride 32), or a block's
// threads (stride PACK_THREADS or PACK_TB_THREADS) where it shares the profile.
template <int R, int G>
__device__ __forceinline__ void build_query_profile(const int* matrix, int K, uint4* prof,
                                                    const unsigned char* a0, int n0, int p0,
                                                    const unsigned char* a1, int n1, int p1,
                                                    int band, int first, int stride) {
    // a thread a chunk of 4 rows (entry t, chunk q, lane l: prof[k]), so that
    // every thread of a block takes part (a thread an entry: 3 warps of 8
    // at K = 24, G = 4, while the others waited at the barrier)
    for (int k = first; k < K * G * (R / 4); k += stride) {
        const int l = k % G, q = (k / G) % (R / 4), t = k / (G * (R / 4));
        const int i0 = (band * G + l) * R + 4 * q;
        unsigned w[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {  // rows of a top pad (p_k) score 0
            const int x0 = i0 + r - p0, x1 = i0 + r - p1;
            const int v0 = x0 < n0 ? (x0 < 0 ? 0 : matrix[a0[x0] * K + t]) : -128;
            const int v1 = x1 < n1 ? (x1 < 0 ? 0 : matrix[a1[x1] * K + t]) : -128;
            w[r] = ((unsigned)v0 & 0xffffu) | ((unsigned)v1 << 16);
        }
        prof[k] = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

// B: the block's warps hold query couples of one row couple (the host pads
// each row couple's warps to whole blocks) and share one profile, which the
// whole block builds a band at a time between two barriers; every warp of the
// block runs the same bands (they follow from the queries alone).
template <int mode, bool want_tb, int R, int G, int P = R, bool B = false>
struct QueryCouple {
    uint4* prof;
    const unsigned char *a0, *a1;
    int n0, n1;
    const unsigned char* b;
    int m0, m1, K;  // m0 = m1: the target's length

    // each half's top pad (Stripe2::top_pad), to a multiple of P rows (see
    // TargetCouple), in its profile rows and its tracking: the couple's rows
    // start at 0
    __device__ __forceinline__ static int pad_of(int n) {
        return top_pad_rows<mode, want_tb, R, P>(n);
    }
    __device__ __forceinline__ int pad() const { return 0; }
    __device__ __forceinline__ int rows() const {
        return max(n0 + pad_of(n0), n1 + pad_of(n1));
    }
    template <int S>
    __device__ __forceinline__ QueryCouple<mode, want_tb, S, G, P, B> in_stripes() const {
        return {prof, a0, a1, n0, n1, b, m0, m1, K};
    }
    __device__ __forceinline__ void build(const int* matrix, int band, int lane) const {
        // B: the block's threads build it, once every warp is done with the
        // last band's; else the warp's lanes
        if constexpr (B) __syncthreads();
        build_query_profile<R, G>(matrix, K, prof, a0, n0, pad_of(n0), a1, n1, pad_of(n1), band,
                                  B ? (int)threadIdx.x : lane,
                                  B ? (want_tb ? PACK_TB_THREADS : PACK_THREADS) : 32);
        if constexpr (B) __syncthreads();
    }
    // the residue alone, scaled after the shuffle, so that nothing consumes
    // the load before the next step (see fill_band)
    __device__ __forceinline__ unsigned residues(int j) const {
        return j <= m0 ? (unsigned)b[j - 1] : 0u;
    }
    __device__ __forceinline__ static unsigned offsets(unsigned loaded) {
        return loaded * (unsigned)(R / 4 * G * sizeof(uint4));
    }
    // both at once (with traceback), as one expression: nvcc 13 then gives
    // the traceback kernels' SASS of v26 byte for byte
    __device__ __forceinline__ unsigned offsets_at(int j) const {
        return (j <= m0 ? (unsigned)b[j - 1] : 0u) * (unsigned)(R / 4 * G * sizeof(uint4));
    }
    __device__ __forceinline__ void load(const char* plane, unsigned col,
                                         unsigned (&sub)[R]) const {
        const uint4* pw = reinterpret_cast<const uint4*>(plane + col);
#pragma unroll
        for (int q = 0; q < R / 4; ++q) {
            const uint4 v = pw[q * G];
            sub[4 * q] = v.x; sub[4 * q + 1] = v.y; sub[4 * q + 2] = v.z; sub[4 * q + 3] = v.w;
        }
    }
    __device__ __forceinline__ void track(const Stripe2<mode, want_tb, R>& st, int i0, int j,
                                          volatile unsigned& floor, int (&best)[2], int (&bi)[2],
                                          int (&bj)[2]) const {
        st.track_query(i0, j, n0, n1, pad_of(n0), pad_of(n1), m0, floor, best, bi, bj);
    }
};

// x as it is, through an identity shuffle: ptxas keeps the result in a
// register, where it would work a value out of the thread's index and the
// kernel's parameters again at each use (it does not rematerialize a
// shuffle). For the band's invariants of the step loop (fill_band).
__device__ __forceinline__ unsigned pinned(unsigned x) {
    return __shfl_sync(FULL, x, threadIdx.x % 32);
}

// p, a pointer into shared memory, pinned (see pinned) as an offset from the
// block's dynamic shared memory, so that its loads stay shared-memory loads
template <typename T>
__device__ __forceinline__ T* pinned_shared(T* p) {
    extern __shared__ int shared[];
    const int off = (int)(reinterpret_cast<const volatile char*>(p)
                          - reinterpret_cast<const volatile char*>(shared));
    return reinterpret_cast<T*>(reinterpret_cast<char*>(shared) + (int)pinned((unsigned)off));
}

// A pair's S words of a step (one a stripe) as one store of 4, 8 or 16 bytes
template <int S>
__device__ __forceinline__ void store_words(unsigned* at, const unsigned (&w)[S]) {
    if constexpr (S == 4) *reinterpret_cast<uint4*>(at) = make_uint4(w[0], w[1], w[2], w[3]);
    else if constexpr (S == 2) *reinterpret_cast<uint2*>(at) = make_uint2(w[0], w[1]);
    else *at = w[0];
}

// Checkpointed traceback (CKPT, gpu_backend.CHECKPOINT_TRACEBACK_MODES): the packed
// fill makes no traceback bits. Each lane keeps, in each pair's words of the
// band, what it took in from above at each column (its half of H and F of
// the row above its stripe: a word a step, where the bits' words were) and,
// after every CKPT_COLS-th column, its stripe's H and E (a word a row), from
// which the walk (walk_ckpt) fills the CKPT_COLS columns of one stripe that
// its path goes through again, with the fill's own step (Stripe2::column),
// bits and all. A local path crosses a few such blocks. The fill makes no
// bits and, 32 columns apart, stores 0.375 byte a cell against the bits'
// 0.5: what the bits' fill costs is its stores (at 1e12 cells, local, 0.516
// s of GPU with its words stored, 0.323 s with them made and not stored),
// not its bits (NOTES.md, v40). The words fit in the bits' room: a band's
// m + G - 1 steps of G words, then floor(m / CKPT_COLS) checkpoints of G
// lanes' R words, within the (R / 8) (m + G - 1) G words of a band of R-row
// stripes (a short last band of 8-row stripes has a whole band's room).
#ifndef CKPT  // bit k: mode k's fills are checkpointed (GLOBAL 0, SEMIGLOBAL 1, LOCAL 2)
#define CKPT 0
#endif
__host__ __device__ constexpr bool checkpointed(int mode) { return (CKPT >> mode) & 1; }
#ifndef CKPT_COLS
#define CKPT_COLS 16
#endif
// a checkpointed fill loads its target residues ahead, as the score-only
// fills do (see fill_band)
#ifndef CKPT_AHEAD
#define CKPT_AHEAD 0
#endif
// (the host sets CKPT only at 16 rows a lane or more: at 8, the words from
// above fill the room)
static_assert(!CKPT || CKPT_COLS * (PACK_TB_ROWS / 8 - 1) >= PACK_TB_ROWS,
              "a band's checkpoints must fit its room");
#define CKPT_WORDS (PACK_TB_ROWS / 8)  // a lane's words a column
// walk_ckpt's threads a block (gpu_backend.WALK_CHECKPOINT_THREADS): each
// thread's block of words in shared memory, CKPT_COLS * CKPT_WORDS words
// WALK_CKPT_THREADS apart (a word a bank: in local memory, the blocks of the
// SM's walks outgrew its L1)
#ifndef WALK_CKPT_THREADS
#define WALK_CKPT_THREADS 128
#endif

// A lane's words from above of CKPT_CHUNK consecutive steps lie side by
// side, stored together (one store of 4, 8 or 16 bytes): chunks of G lanes,
// CKPT_CHUNK words each, a chunk of steps after another.
#ifndef CKPT_CHUNK
#define CKPT_CHUNK 1
#endif
static_assert(CKPT_CHUNK == 1 || CKPT_CHUNK == 2 || CKPT_CHUNK == 4, "a store of 4, 8 or 16 bytes");
// (the steps rounded up to whole chunks still leave the checkpoints room)
static_assert(!CKPT || CKPT_CHUNK <= PACK_TB_GROUP, "a band's chunks must fit its room");

// Where lane l's word of step t lies, in words from a band's first word
template <int G>
__device__ __forceinline__ long long ckpt_step_word(int t, int l) {
    constexpr int C = CKPT_CHUNK;
    return (long long)(t & ~(C - 1)) * G + l * C + (t & (C - 1));
}

// Where lane l's checkpoint c >= 1 (after column c * CKPT_COLS) starts, in
// words from a band's first word, for a pair of m columns: after the band's
// m + G - 1 steps, rounded up to whole chunks
template <int R, int G>
__device__ __forceinline__ long long ckpt_words(int m, int c, int l) {
    constexpr int C = CKPT_CHUNK;
    return (long long)((m + G - 1 + C - 1) / C * C) * G + ((long long)(c - 1) * G + l) * R;
}

// A lane's R rows of H and E, one pair's half of each (PRMT selector sel:
// 0x5410 the low halves, 0x7632 the high), a word a row, as R / 4 stores
template <int R>
__device__ __forceinline__ void store_rows(unsigned* at, const unsigned (&h)[R],
                                           const unsigned (&e)[R], unsigned sel) {
#pragma unroll
    for (int k = 0; k < R; k += 4)
        *reinterpret_cast<uint4*>(at + k) = make_uint4(
            __byte_perm(h[k], e[k], sel), __byte_perm(h[k + 1], e[k + 1], sel),
            __byte_perm(h[k + 2], e[k + 2], sel), __byte_perm(h[k + 3], e[k + 3], sel));
}

// A lane's words of a chunk of C steps (see CKPT_CHUNK), in registers: as
// an array written at t % C, ptxas kept it in local memory (an indexed store)
template <int C>
struct StepChunk {
    unsigned w[C];
    __device__ __forceinline__ void put(int t, unsigned x) {
        const int u = t & (C - 1);
        if (u == 0) w[0] = x;
        if constexpr (C > 1) { if (u == 1) w[1] = x; }
        if constexpr (C > 2) { if (u == 2) w[2] = x; if (u == 3) w[3] = x; }
    }
    // steps first to t, at word (the lane's word of step t as if unchunked),
    // if they hold a step of the pair's (the lane's steps gl to gl + steps - 1;
    // none where steps is 0: a warp's padding groups point at the window's
    // first pair's words)
    template <int G>
    __device__ __forceinline__ void store(unsigned* word, int first, int t, int gl, int steps) const {
        if (steps <= 0 || t < gl || first - gl >= steps) return;
        store_words(word - (t - first) * G, w);
    }
};

// Band `band` of a couple (see fill_pack): stripes band * G to band * G + G -
// 1 of the couple's nstripes of R rows (a stripe a lane, the first pad rows
// the top pad), column by column, from the band's top row at top_h and top_f,
// which its last lane leaves there for the next band. pad is c.pad(), passed
// in: read from the couple here instead, the score-only kernels compile to
// other SASS, and at 128 registers each such change must be measured anew
// (NOTES.md, v25).
template <int mode, bool want_tb, int R, int G, typename Couple>
__device__ __forceinline__ void fill_band(
     const int* matrix, const Couple& c, int band, int nstripes, int pad, int go, int ge,
     volatile unsigned& floor, unsigned* top_h, unsigned* top_f, unsigned* tb0, unsigned* tb1,
     int lane, int (&best)[2], int (&bi)[2], int (&bj)[2])
{
    // With traceback, the step loop's band invariants are pinned (see
    // pinned): ptxas worked the profile's and the floor's shared addresses
    // and the packed gap costs out again every step (~30 instructions of the
    // 16-row loop). Pinned score-only, the 32-row loops lost as many
    // instructions and global ran 2% slower at 1e13 cells (NOTES.md, v32).
    constexpr bool pin = want_tb;
    const int gl = lane & (G - 1);
    const int m0 = c.m0, m1 = c.m1, m = max(m0, m1);
    const unsigned go2 = pin ? pinned(pack2(-go)) : pack2(-go);
    const unsigned ge2 = pin ? pinned(pack2(-ge)) : pack2(-ge);
    volatile unsigned& fl = pin && mode == LOCAL ? *pinned_shared(&floor) : floor;
    Stripe2<mode, want_tb, R> st;
    __syncwarp();
    const int i0 = (band * G + gl) * R - pad;  // negative in the top pad
    const int last = min(G - 1, nstripes - 1 - band * G);  // the band's last lane
    // Of the lanes that fill (`mine`), the band's last is lane G - 1 or the
    // one whose stripe holds the query's last row (i0 >= tail; the lanes
    // below it fill nothing). Tested as `gl == last`, ptxas worked `last` out
    // again every step at 128 registers (ten instructions and a spill reload:
    // sass_counts.py); tested so, score-only local and global ran 2.6-2.8%
    // faster at 1e13 cells (NOTES.md, v31).
    const int tail = (nstripes - 1) * R - pad;
    st.start(i0, go, ge);
    c.build(matrix, band, lane);
    __syncwarp();
    unsigned diag = st.corner(i0, go, ge);
    unsigned out_h = 0, out_f = pack2(NEG16);
    BandTop<unsigned, G, !want_tb && mode != SEMIGLOBAL> above(top_h, top_f, gl, m,
                                                               pack2(NEG16));
    // Column j's profile entries, as byte offsets from this lane's word of
    // entry 0, travel like H and F: lane 0 takes them G columns at a time
    // from the whole group, every other lane from its neighbour one step
    // later. No per-step residue loads. Score-only, each lane loads its
    // residue of the next G columns one step before they are needed, into
    // the register the last step of a block has just read (the live range of
    // a load at the block's first step), and nothing uses it before the next
    // step's shuffle: loaded at the block's first step and scaled at once, it
    // held 13% of the warps' stall samples, with the reload of the spilled
    // target pointer before it (ncu), and loaded ahead the score-only fills
    // ran 2-5% faster at 1e13 cells. With traceback the fill ran 5% slower
    // loading ahead, so it loads at the block's first step (NOTES.md, v27).
    // Loaded one step ahead, that load still held the warps at the next
    // step's shuffle (long scoreboard: 7% of the stall samples on the sampled
    // workload, 10-11% at 1,024 residues; ncu, sass_counts.py); loaded G + 1
    // steps ahead (`later`, one more register), local and global ran 3-6%
    // faster at 1e12 cells and semiglobal 3% slower (NOTES.md, v30).
    constexpr bool ckpt = want_tb && checkpointed(mode);
    constexpr bool ahead = !want_tb || (ckpt && CKPT_AHEAD);
    constexpr bool two_ahead = ahead && mode != SEMIGLOBAL && RESIDUES_AHEAD > 1;
    const char* plane = reinterpret_cast<const char*>(c.prof + gl);
    if constexpr (pin) plane = pinned_shared(plane);
    unsigned cols = 0, col = 0, later = 0;
    if constexpr (ahead) cols = c.residues(gl + 1);
    if constexpr (two_ahead) later = c.residues(gl + G + 1);
    const unsigned mine = gl <= last ? (unsigned)m : 0u;  // lanes past the band's end: none
    const int group_steps = m + last;
    const int steps = G == 32 ? group_steps
                              : (int)__reduce_max_sync(FULL, (unsigned)group_steps);
    constexpr int S = R / 8;  // stripes a lane: words a step
    // each pair's words of step t at word0 and word1, advanced a step at a
    // time (computed from t, ptxas worked out both 64-bit addresses again
    // every step: ~16 instructions). Checkpointed (see CKPT): a word a
    // lane and step, the pair's half of the H and F that came in from above,
    // and after every CKPT_COLS-th column the lane's R rows of H and E, its
    // half of both in a word a row, at ck0 and ck1 (ckpt_words).
    // Chunked (CKPT_CHUNK steps a store), word0 and word1 run a step at a
    // time as if unchunked, from the lane's first word of the band's first
    // chunk, and a chunk is stored at its last step (or the band's), from C
    // - 1 steps back, if it holds a step of the pair (StepChunk::store).
    constexpr int C = ckpt ? CKPT_CHUNK : 1;
    constexpr int step_words = ckpt ? G : G * S;
    unsigned* word0 = tb0 + (ckpt ? (long long)band * (m0 + G - 1) * G * S + gl * C
                                  : ((long long)band * (m0 + G - 1) * G + gl) * S);
    unsigned* word1 = tb1 + (ckpt ? (long long)band * (m1 + G - 1) * G * S + gl * C
                                  : ((long long)band * (m1 + G - 1) * G + gl) * S);
    unsigned* ck0 = ckpt ? word0 - gl * C + ckpt_words<R, G>(m0, 1, gl) : nullptr;
    unsigned* ck1 = ckpt ? word1 - gl * C + ckpt_words<R, G>(m1, 1, gl) : nullptr;
    StepChunk<C> chunk0, chunk1;
#ifdef FILL_NO_STORES
    unsigned sink = 0;
#endif
    for (int t = 0; t < steps; ++t, word0 += step_words, word1 += step_words) {
        unsigned hup, fup;
        above.step(top_h, top_f, t, gl, m, out_h, out_f, hup, fup);
        if (!ahead && (t & (G - 1)) == 0) cols = c.offsets_at(t + gl + 1);
        const unsigned from_left = __shfl_up_sync(FULL, col, 1, G);
        const unsigned shuffled = __shfl_sync(FULL, cols, t & (G - 1), G);
        const unsigned from_group = ahead ? c.offsets(shuffled) : shuffled;
        col = gl == 0 ? from_group : from_left;
        if (ahead && (t & (G - 1)) == G - 1) {
            if constexpr (two_ahead) {
                cols = later;
                later = c.residues(t + gl + G + 2);
            } else {
                cols = c.residues(t + gl + 2);
            }
        }
        const int j = t - gl + 1;
        if ((unsigned)(t - gl) < mine) {
            const unsigned d0 = diag;
            diag = hup;
            unsigned sub[R];
            c.load(plane, col, sub);
            unsigned w0[R / 8], w1[R / 8];
            const unsigned in_h = hup, in_f = fup;
            st.template column<want_tb && !ckpt>(sub, d0, hup, fup, go2, ge2, w0, w1);
            c.track(st, i0, j, fl, best, bi, bj);
            out_h = hup;
            out_f = fup;
            if (gl == G - 1 || i0 >= tail) { top_h[j] = hup; top_f[j] = fup; }
#ifdef FILL_NO_STORES  // benchmarks only: the fill's words made, not stored
            if constexpr (want_tb && !ckpt) {
#pragma unroll
                for (int k = 0; k < R / 8; ++k) sink ^= w0[k] ^ w1[k];
            }
            if (false)
#endif
            if constexpr (ckpt) {
                if constexpr (C == 1) {
                    if (j <= m0) *word0 = __byte_perm(in_h, in_f, 0x5410);
                    if (j <= m1) *word1 = __byte_perm(in_h, in_f, 0x7632);
                } else {  // stored with its chunk (StepChunk)
                    chunk0.put(t, __byte_perm(in_h, in_f, 0x5410));
                    chunk1.put(t, __byte_perm(in_h, in_f, 0x7632));
                }
                if (j % CKPT_COLS == 0) {
                    if (j <= m0) store_rows<R>(ck0, st.hl, st.el, 0x5410);
                    if (j <= m1) store_rows<R>(ck1, st.hl, st.el, 0x7632);
                    ck0 += G * R;
                    ck1 += G * R;
                }
            } else if constexpr (want_tb) {
                if (j <= m0) store_words(word0, w0);
                if (j <= m1) store_words(word1, w1);
            }
        }
#ifndef FILL_NO_STORES
        if constexpr (ckpt && C > 1) {
            if ((t & (C - 1)) == C - 1) {
                chunk0.template store<G>(word0, t - (C - 1), t, gl, min((int)mine, m0));
                chunk1.template store<G>(word1, t - (C - 1), t, gl, min((int)mine, m1));
            }
        }
#endif
        above.settle(t);
    }
#ifndef FILL_NO_STORES
    if constexpr (ckpt && C > 1) {  // the band's last chunk, if short (word0: past the last step)
        if (steps % C) {
            word0 -= step_words;
            word1 -= step_words;
            chunk0.template store<G>(word0, steps & ~(C - 1), steps - 1, gl, min((int)mine, m0));
            chunk1.template store<G>(word1, steps & ~(C - 1), steps - 1, gl, min((int)mine, m1));
        }
    }
#endif
#ifdef FILL_NO_STORES
    if (sink == 0x9e3779b9u && m0 < 0) *tb0 = sink;
#endif
}

// Whether fill_pack may fill a query's last band in shorter stripes (see
// there), at R rows a lane with traceback or without, and the stripes of R
// rows that it fills in whole bands of G lanes, of those that `rows` rows (its
// top pad included) take: all of them, or those before a last band whose rows
// fit G stripes of 8 rows with traceback, 16 without. walk finds a packed
// pair's words by the same rule.
template <bool want_tb, int R>
constexpr bool short_last_band = want_tb ? R == 16 : R == 32;

template <bool want_tb, int R, int G>
__device__ __forceinline__ int whole_band_stripes(int rows) {
    const int nstripes = (rows + R - 1) / R;
#ifndef PACK_WHOLE_BANDS
    constexpr int short_rows = want_tb ? 8 : 16;  // a lane's rows of the short band, at most
    if (short_last_band<want_tb, R> && nstripes > 0
        && rows - (nstripes - 1) / G * (G * R) <= G * short_rows)
        return (nstripes - 1) / G * G;
#endif
    return nstripes;
}

// A couple (TargetCouple or QueryCouple, which give the profile, each column's
// rows and the end-cell tracking) on a group of G lanes of R rows each (R =
// PACK_TB_ROWS with traceback); a warp holds 32 / G groups, a couple each,
// all of one query (or query couple). Short queries fill more of a group's
// band than of a warp's, a lane's per-column work (shuffles, profile and
// bound bookkeeping) is shared by R rows, and a band's first and last lanes
// wait G - 1 steps instead of 31. The warp runs until its longest group is
// done (its couples' targets are of about one length); a group with no
// couple (m0 = m1 = 0) only takes part in the shuffles. lane: the lane in the
// warp. With traceback, each pair's words go to its own wide layout (tb0,
// tb1), up to its own end (a query couple's with the longer query's bands).
//
// Score-only at 32 rows a lane, a query's last band takes stripes of 8 or 16
// rows where its rows fit G of them (the couples of a warp share their query,
// so the whole warp takes the same branch): with bands of 128 rows, 88.7% of
// the lane-rows held cells at 1e13 cells of sampled proteins (NOTES.md, v25).
// With traceback at 16 rows a lane, in stripes of 8 where its rows fit G of
// them (88.7% too, NOTES.md, v32): its words, one a lane and step, lie G a
// step after the full bands' (fill_band's layout at 8 rows), which walk_pair
// is told by the stripe they start at. PACK_WHOLE_BANDS turns both off.
template <int mode, bool want_tb, int R, int G, typename Couple>
__device__ __forceinline__ void fill_pack(
     const int* matrix, const Couple& c, int go, int ge, unsigned* top_h, unsigned* top_f,
     unsigned* tb0, unsigned* tb1, int lane, int (&best)[2], int (&bi)[2], int (&bj)[2])
{
    const int gl = lane & (G - 1);
    const int m = max(c.m0, c.m1);
    if (m > 0) {
        for (int j = gl; j <= m; j += G) {
            const int h0 = mode == GLOBAL ? gap_boundary(j, go, ge) : 0;
            top_h[j] = pack2(h0);
            top_f[j] = pack2(h0 - go);  // F of row 1
        }
    }
    static_assert(G >= 4, "shared floors: at most 64 groups a block of 256");
    __shared__ unsigned floors[64];  // a couple's floor (local only: Stripe2::track)
    volatile unsigned& floor = floors[threadIdx.x / G];
    if (mode == LOCAL && gl == 0) floor = 0;  // seen after the band's __syncwarp
    const int n = c.rows(), pad = c.pad();
    const int nstripes = (n + pad + R - 1) / R;
    const int nfull = whole_band_stripes<want_tb, R, G>(n + pad);  // filled in R rows a lane
    for (int band = 0; band * G < nfull; ++band)
        fill_band<mode, want_tb, R, G>(matrix, c, band, nstripes, pad, go, ge, floor, top_h,
                                       top_f, tb0, tb1, lane, best, bi, bj);
#ifndef PACK_WHOLE_BANDS
    if constexpr (short_last_band<want_tb, R>) {
        // the last band, after nfull / G bands of R rows; its rows worked out
        // again here rather than kept live across the loop above
        if (nfull < nstripes) {
            if (want_tb || n + pad - nfull * R <= G * 8)
                fill_band<mode, want_tb, 8, G>(matrix, c.template in_stripes<8>(),
                                             nfull / G * (R / 8), (n + pad + 7) / 8, pad, go, ge,
                                             floor, top_h, top_f, tb0, tb1, lane, best, bi, bj);
            else if constexpr (!want_tb)
                fill_band<mode, false, 16, G>(matrix, c.template in_stripes<16>(),
                                              nfull / G * (R / 16), (n + pad + 15) / 16, pad, go,
                                              ge, floor, top_h, top_f, tb0, tb1, lane, best, bi,
                                              bj);
        }
    }
#endif
}

// The best (score, i, j) of each group of G lanes, in its first lane.
template <int G = 32>
__device__ __forceinline__ void warp_best(int& best, int& bi, int& bj) {
#pragma unroll
    for (int k = G / 2; k > 0; k >>= 1) {
        const int ob = __shfl_down_sync(FULL, best, k, G);
        const int oi = __shfl_down_sync(FULL, bi, k, G);
        const int oj = __shfl_down_sync(FULL, bj, k, G);
        if (ob > best || (ob == best && earlier(oi, oj, bi, bj))) {
            best = ob; bi = oi; bj = oj;
        }
    }
}

template <int mode, bool want_tb>
__global__ void __launch_bounds__(256, want_tb ? 3 : 4)
fill(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ pair_row, const int* __restrict__ pair_col, const int npairs,
     const int nwide, const int* __restrict__ matrix, const int K, const int go,
     const int ge, const int neg, SCORE* __restrict__ bnd_h, SCORE* __restrict__ bnd_f,
     unsigned int* __restrict__ tb, const long long* __restrict__ off,
     const long long* __restrict__ boff, const int* __restrict__ warp_m,
     int* __restrict__ out_score, int* __restrict__ out_ei, int* __restrict__ out_ej,
     const int block0, const int ww, int* __restrict__ chains)
{
    // narrow blocks: the matrix, rows 32 apart; wide blocks: a profile per warp,
    // then (1 < ww <= 8) the warps' band counts and bests (the host's wide_shared).
    // Block b of the launch is block block0 + b of the whole (wide ones first),
    // so that wide and narrow blocks can go to separate launches. A wide pair
    // takes ww warps (BandChain): 1, 2, 4 or 8 of one block, or ww / 8 whole
    // blocks (16 to 64 warps) whose counts, bests and count of warps done are
    // chains[p * (4 ww + 1) ...], all -1 at the launch (the host launches no
    // more of those blocks than the device holds at once: a band's warp waits
    // on the block before its own, and the pair's first on its last).
    extern __shared__ int shared[];
    const int wide_blocks = (nwide * ww + 7) / 8;
    const int block = block0 + (int)blockIdx.x;
    int best = (mode == LOCAL) ? 0 : neg;
    int bi = 0, bj = 0;
    if (block < wide_blocks) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        const int p = (block * 8 + warp) / ww, wi = (block * 8 + warp) % ww;
        if (p >= nwide) return;  // the pair's warps
        const long long qoff = offsets[pair_row[p]], toff = offsets[pair_col[p]];
        const int n = (int)(offsets[pair_row[p] + 1] - qoff);
        const int m = (int)(offsets[pair_col[p] + 1] - toff);
        uint2* prof = reinterpret_cast<uint2*>(shared) + warp * K * 32;
        int* counts = ww > 8 ? chains + (long long)p * (4 * ww + 1)
                             : shared + 8 * K * 32 * 2 + warp - wi;  // then bests, rows, columns
        const int stride = ww > 8 ? ww : 8;  // between counts, bests, rows and columns
        int* bests = counts + stride;
        // the pair's warps of one block: a named barrier each (0 is __syncthreads's)
        const auto pair_sync = [&]() {
            asm volatile("bar.sync %0, %1;" :: "r"(1 + warp / ww), "r"(ww * 32) : "memory");
        };
        BandChain chain{nullptr, 0, 1, 0, false, 31};
        if (ww > 8) {
            chain = BandChain{counts, wi, ww, m + 2, true, 127};
        } else if (ww > 1) {
            if (lane == 0) counts[wi] = -1;
            pair_sync();
            chain = BandChain{counts, wi, ww, m + 2, false, 31};
        }
        fill_warp<mode, want_tb>(matrix, K, prof, codes + qoff, n, codes + toff, m, go, ge, neg,
                                 bnd_h + boff[p], bnd_f + boff[p], tb + off[p], lane,
                                 best, bi, bj, chain);
        warp_best(best, bi, bj);
        bool out = wi == 0;
        if (ww > 1 && lane == 0) {
            bests[wi] = best; bests[stride + wi] = bi; bests[2 * stride + wi] = bj;
        }
        if (ww > 8) {  // the pair's last warp to finish reduces them
            if (lane == 0) {
                __threadfence();
                out = atomicAdd(counts + 4 * ww, 1) == ww - 2;  // from -1
                if (out) __threadfence();
            }
            out = __shfl_sync(FULL, out, 0);
        } else if (ww > 1) {
            pair_sync();
        }
        if (ww > 1 && out && lane == 0) {
            for (int k = 0; k < ww; ++k) {
                const int* at = bests + k;
                if (ww > 8) offer(__ldcg(at), __ldcg(at + stride), __ldcg(at + 2 * stride),
                                  best, bi, bj);
                else offer(at[0], at[stride], at[2 * stride], best, bi, bj);
            }
        }
        if (out && lane == 0) { out_score[p] = best; out_ei[p] = bi; out_ej[p] = bj; }
        return;
    }
    int* smat = shared;
    for (int k = threadIdx.x; k < K * K; k += blockDim.x)
        smat[(k / K) * 32 + (k % K)] = matrix[k];
    for (int k = threadIdx.x; k < 32; k += blockDim.x)
        smat[PAD * 32 + k] = neg / 2;
    __syncthreads();
    const int q = (block - wide_blocks) * blockDim.x + threadIdx.x;  // narrow index
    const int p = nwide + q;
    if (p >= npairs) return;
    const long long qoff = offsets[pair_row[p]], toff = offsets[pair_col[p]];
    const int n = (int)(offsets[pair_row[p] + 1] - qoff);
    const int m = (int)(offsets[pair_col[p] + 1] - toff);
    const int w = nwide + q / 32;
    fill_thread<mode, want_tb>(SharedMatrix{smat}, codes + qoff, n, codes + toff, m, go, ge, neg,
                               bnd_h + boff[w] + q % 32, bnd_f + boff[w] + q % 32,
                               want_tb ? tb + off[w] + q % 32 : tb, warp_m[q / 32],
                               best, bi, bj);
    out_score[p] = best;
    out_ei[p] = bi;
    out_ej[p] = bj;
}

// With traceback, fill2's groups walk their own couples' pairs as soon as
// their fill is done (lanes 0 and 1 of each group, pairs 2c and 2c + 1), and
// walk takes the other pairs alone: the separate walk kernel's blocks,
// which could not share an SM with two of fill2's, kept the next window's
// fill to one block on the SMs they held (the host passes
// gpu_backend.FUSED_WALK).
#ifndef FUSED_WALK
#define FUSED_WALK 0
#endif

// The four bits of row r's cell from its stripe's traceback word (bit planes)
__device__ __forceinline__ unsigned tb_bits(unsigned word, int r) {
    const unsigned x = (word >> r) & 0x01010101u;
    return (x | (x >> 7) | (x >> 14) | (x >> 21)) & 15u;
}

#ifndef WALK_AHEAD
#define WALK_AHEAD 8  // traceback words a walk loads at once (see walk)
#endif
#define OP_ALIGNED 0  // kernels/conventions.py
#define OP_INS 1
#define OP_DEL 2

struct Runs {
    unsigned char* code; int* len; long long pos; int cur; int count;
    __device__ void emit(int op, int k) {
        if (op == cur) { count += k; return; }
        if (count > 0) { code[pos] = (unsigned char)cur; len[pos] = count; ++pos; }
        cur = op; count = k;
    }
    __device__ void flush() {
        if (count > 0) { code[pos] = (unsigned char)cur; len[pos] = count; ++pos; }
        count = 0;
    }
};

// One pair's walk from its end cell (i, j) back to where its alignment starts,
// which it leaves in i and j (see walk for the layouts): tbw holds the pair's
// words (a narrow pair's: its lane's of the warp's block), word (stripe s,
// column j) at ((s / gs) * span + (j - 1) + (s % gs) / (gs / g)) * gs + s % gs
// where wide, else at (s * span + (j - 1)) * 32; from stripe short_from on (a
// packed pair's short last band, see fill_pack), stripe s = short_from + l at
// (s / gs) * span * gs + (j - 1 + l) * g + l. v: the end cell's score. The
// operations go from op_off on, end first (compact_ops puts them in order).
template <int mode>
__device__ __forceinline__ void walk_pair(
     const unsigned char* a, const unsigned char* b, const unsigned int* tbw, bool wide,
     int g, int gs, int short_from, long long span, const int* matrix, int K, int go, int ge,
     int v, long long op_off, unsigned char* op_code, int* op_len, int& i, int& j, int& nops,
     int& ident, int& length, int pad = 0)
{
    int state = 0;
    ident = 0;
    length = 0;
    Runs runs{op_code, op_len, op_off, 255, 0};
    // the words of the current stripe from column j leftwards, loaded WALK_AHEAD
    // at a time: a walk goes at most a column left a step, so it waits for
    // memory once a stripe or WALK_AHEAD columns instead of at every step
    unsigned ahead[WALK_AHEAD];
    int ahead_s = -1, ahead_n = 0;  // their stripe, and how many are left
    // g and gs are powers of two: the refill's divisions as shifts (integer
    // division by a value known only at run time is ~20 instructions)
    const int gs_shift = __ffs(gs) - 1, lane_shift = gs_shift - (__ffs(g) - 1);
    auto left = [&]() {  // one column left: the next word moves up
#pragma unroll
        for (int k = 0; k + 1 < WALK_AHEAD; ++k) ahead[k] = ahead[k + 1];
        --ahead_n;
        --j;
    };
    while (true) {
        if (i == 0 || j == 0) {
            if (mode == GLOBAL) {
                if (i > 0) { runs.emit(OP_INS, i); length += i; i = 0; }
                else if (j > 0) { runs.emit(OP_DEL, j); length += j; j = 0; }
            }
            break;
        }
        const int r = (i - 1 + pad) % STRIPE;  // pad: the fill's top pad (TB_TOP_PAD)
        const int s = (i - 1 + pad) / STRIPE;
        if (s != ahead_s || ahead_n == 0) {
            const int l = s - short_from;
            const int band = s >> gs_shift, in_band = s & (gs - 1);
            const long long word =
                !wide ? ((long long)s * span + (j - 1)) * 32
                : s < short_from ? ((band * span + (j - 1) + (in_band >> lane_shift)) << gs_shift)
                                   + in_band
                : ((band * span) << gs_shift) + (long long)(j - 1 + l) * g + l;
            // from a column's word to the next's
            const long long column_words = !wide ? 32 : s < short_from ? gs : g;
#pragma unroll
            for (int k = 0; k < WALK_AHEAD; ++k)
                ahead[k] = j - k >= 1 ? tbw[word - k * column_words] : 0u;
            ahead_s = s;
            ahead_n = WALK_AHEAD;
        }
        const unsigned int t = tb_bits(ahead[0], r);
        // in a gap run, reached from E(i, j + 1) (state 1) or F(i + 1, j)
        // (state 2): it goes on from E or F here, or opened from H here
        if (state != 0) {
            if (t & (state == 1 ? 4u : 8u)) {
                v += ge;
                runs.emit(state == 1 ? OP_DEL : OP_INS, 1); ++length;
                if (state == 1) left(); else --i;
                continue;
            }
            v += go;
            state = 0;
        }
        if (mode == LOCAL && v == 0) break;
        if ((t & 2u) == 0u) {  // from the diagonal
            const int x = a[i - 1], y = b[j - 1];
            ident += x == y;
            runs.emit(OP_ALIGNED, 1);
            v -= matrix[x * K + y];
            ++length; --i; left();
        } else if (t & 1u) {  // F over E: H(i, j) = F(i, j), a gap in the target
            runs.emit(OP_INS, 1); ++length; --i;
            state = 2;
        } else {
            runs.emit(OP_DEL, 1); ++length; left();
            state = 1;
        }
    }
    runs.flush();
    nops = (int)(runs.pos - op_off);
}

// Packed pair p's short last band and top pad for walk_pair (see fill_pack):
// from its query's rows, or a query couple's longer query's (query_couple:
// the couple's other pair is p ^ 1).
template <int mode>
__device__ __forceinline__ void packed_walk_layout(const long long* offsets, const int* pair_row,
                                                   int p, bool query_couple, int& short_from,
                                                   int& pad) {
    const int n = (int)(offsets[pair_row[p] + 1] - offsets[pair_row[p]]);
    short_from = NO_SHORT_BAND;
    pad = top_pad_rows<mode, true, PACK_TB_ROWS>(n);  // TargetCouple::pad
    if (short_last_band<true, PACK_TB_ROWS>) {
        const int n_other = query_couple
                          ? (int)(offsets[pair_row[p ^ 1] + 1] - offsets[pair_row[p ^ 1]]) : 0;
        const int rows = max(n, n_other) + pad;
        const int full = whole_band_stripes<true, PACK_TB_ROWS, PACK_TB_GROUP>(rows);
        if (full * PACK_TB_ROWS < rows) short_from = full * TB_STRIPES;
    }
}

// walk_pair from (i, j) of score v, and pair p's outputs written: where its
// alignment starts, its operations' count, identities and length.
template <int mode>
__device__ __forceinline__ void walk_out(
     int p, const unsigned char* a, const unsigned char* b, const unsigned int* tbw, bool wide,
     int g, int gs, int short_from, long long span, int pad, const int* matrix, int K, int go,
     int ge, int v, int i, int j, const long long* op_off, unsigned char* op_code, int* op_len,
     int* out_qb, int* out_tb, int* out_nops, int* out_ident, int* out_alen)
{
    int nops = 0, ident = 0, length = 0;
#ifndef WALK_SKIP  // benchmarks only: what the walks cost (every alignment empty)
    walk_pair<mode>(a, b, tbw, wide, g, gs, short_from, span, matrix, K, go, ge, v, op_off[p],
                    op_code, op_len, i, j, nops, ident, length, pad);
#endif
    out_qb[p] = i;
    out_tb[p] = j;
    out_nops[p] = nops;
    out_ident[p] = ident;
    out_alen[p] = length;
}

// The walk of packed pair p (a couple's, see fill_pack) from its end cell (i,
// j) of score v: its words at off[p] in the couples' layout; where
// query_couple, its couple's other pair is p ^ 1 (the longer query's bands).
template <int mode>
__device__ __forceinline__ void walk_packed_pair(
     const unsigned char* codes, const long long* offsets, const int* pair_row,
     const int* pair_col, int p, bool query_couple, const unsigned int* tb,
     const long long* off, const int* matrix, int K, int go, int ge, int v, int i, int j,
     const long long* op_off, unsigned char* op_code, int* op_len, int* out_qb, int* out_tb,
     int* out_nops, int* out_ident, int* out_alen)
{
    const long long toff = offsets[pair_col[p]];
    int short_from, pad;
    packed_walk_layout<mode>(offsets, pair_row, p, query_couple, short_from, pad);
    walk_out<mode>(p, codes + offsets[pair_row[p]], codes + toff, tb + off[p], true,
                   PACK_TB_GROUP, PACK_TB_GROUP * TB_STRIPES, short_from,
                   (long long)(offsets[pair_col[p] + 1] - toff) + PACK_TB_GROUP - 1, pad, matrix,
                   K, go, ge, v, i, j, op_off, op_code, op_len, out_qb, out_tb, out_nops,
                   out_ident, out_alen);
}

// The words of one block of a checkpointed pair (see CKPT): stripe l of R
// rows of a band (its words from `band` on, the pair's m columns; its first
// row i0 + 1, rows up to 0 the top pad, past n scoring -128), columns j0 + 1
// to j0 + cols (j0 = c * CKPT_COLS), filled again from the lane's checkpoint c
// (c = 0: the fill's start) and the H and F it took in from above, by the
// fill's own step; both halves hold this pair's cells. blk[k]: column j0 + 1
// + k's R / 8 words. The loads of 16 columns go at once: a thread waits for
// memory once every 16 columns, not at each.
template <int mode, int R>
__device__ __forceinline__ void ckpt_block(
     const unsigned char* a, int n, const unsigned char* b, int m, const unsigned* band,
     int l, int i0, int c, int cols, const SharedMatrix& mat, int go, int ge, unsigned* blk)
{
    constexpr int G = PACK_TB_GROUP;
    constexpr int PF = CKPT_COLS < 16 ? CKPT_COLS : 16;  // columns loaded at once
    const int j0 = c * CKPT_COLS;
    unsigned in[PF];
    int bt[PF];
    auto fetch = [&](int k0) {  // columns j0 + k0 + 1 on
#pragma unroll
        for (int x = 0; x < PF; ++x) {
            const int k = k0 + x;
            in[x] = k < cols ? band[ckpt_step_word<G>(j0 + k + l, l)] : 0u;
            bt[x] = k < cols ? b[j0 + k] : 0;
        }
    };
    fetch(0);
    Stripe2<mode, true, R> st;
    unsigned diag;
    if (c == 0) {
        st.start(i0, go, ge);
        diag = st.corner(i0, go, ge);
    } else {
        const uint4* ck = reinterpret_cast<const uint4*>(band + ckpt_words<R, G>(m, c, l));
#pragma unroll
        for (int r = 0; r < R; r += 4) {
            const uint4 w = ck[r / 4];
            const unsigned x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                st.hl[r + k] = __byte_perm(x[k], 0, 0x1010);
                st.el[r + k] = __byte_perm(x[k], 0, 0x3232);
            }
        }
        diag = __byte_perm(band[ckpt_step_word<G>(j0 - 1 + l, l)], 0, 0x1010);
    }
    int qa[R];  // each row's matrix row (32 apart: PAD's past n), or -1 in the top pad
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int i = i0 + r + 1;
        qa[r] = i <= 0 ? -1 : (i <= n ? a[i - 1] : PAD) * 32;
    }
    const unsigned go2 = pack2(-go), ge2 = pack2(-ge);
    // a loop, not unrolled: a block's step unrolled CKPT_COLS times took tens
    // of KB of code; the loaded columns move down a place a column
#pragma unroll 1
    for (int k = 0; k < cols; ++k) {
        if (k > 0 && k % PF == 0) fetch(k);
        unsigned hup = __byte_perm(in[0], 0, 0x1010), fup = __byte_perm(in[0], 0, 0x3232);
        const unsigned d0 = diag;
        diag = hup;
        const auto col = mat.column(bt[0]);
#pragma unroll
        for (int x = 0; x + 1 < PF; ++x) { in[x] = in[x + 1]; bt[x] = bt[x + 1]; }
        unsigned sub[R];
#pragma unroll
        for (int r = 0; r < R; ++r)  // a top pad in semiglobal mode only
            sub[r] = pack2(mode != SEMIGLOBAL || qa[r] >= 0 ? col(qa[r]) : 0);
        unsigned w0[R / 8], w1[R / 8];
        st.template column<true>(sub, d0, hup, fup, go2, ge2, w0, w1);
#pragma unroll
        for (int q = 0; q < R / 8; ++q) blk[(k * CKPT_WORDS + q) * WALK_CKPT_THREADS] = w0[q];
    }
}

// walk_pair for a checkpointed packed pair (CKPT), a lane's walk of one pair
// after another: the words of the block (stripe, CKPT_COLS columns) its path
// is in, filled again (ckpt_block) as the path enters it, up to the path's
// column. The lanes of a warp walk their blocks apart (walk), then fill their
// next ones together (refill), each lane taking its next pair as soon as it is
// done with one (walk_ckpt): a warp fills as many blocks as its pairs' paths
// cross over 32, not 32 times its longest path's (a pair a lane, the warp's
// instructions ran 6.7 lanes each, and the walk took longer than the fill).
template <int mode>
struct CkptWalk {
    const unsigned char *a, *b;
    const unsigned* tbw;  // the pair's words
    int n, m, pad;
    int full_rows;  // rows (top pad included) in stripes of PACK_TB_ROWS, then 8-row stripes
    int i, j, v, state, ident, length;
    int blk_s, blk_c;  // the block's stripe (an id) and its columns
    bool done;
    Runs runs;

    // pair p's walk from its end cell (ei, ej) of its score (packed_walk_layout)
    __device__ __forceinline__ void begin(const unsigned char* codes, const long long* offsets,
                                          const int* pair_row, const int* pair_col, int p,
                                          bool query_couple, const unsigned* tb,
                                          const long long* off, const int* score, const int* ei,
                                          const int* ej, const long long* op_off,
                                          unsigned char* op_code, int* op_len) {
        const long long qoff = offsets[pair_row[p]], toff = offsets[pair_col[p]];
        a = codes + qoff;
        b = codes + toff;
        n = (int)(offsets[pair_row[p] + 1] - qoff);
        m = (int)(offsets[pair_col[p] + 1] - toff);
        tbw = tb + off[p];
        int short_from;
        packed_walk_layout<mode>(offsets, pair_row, p, query_couple, short_from, pad);
        full_rows = short_from == NO_SHORT_BAND ? NO_SHORT_BAND : short_from * STRIPE;
        i = ei[p];
        j = ej[p];
        v = score[p];
        state = ident = length = 0;
        blk_s = blk_c = -1;
        runs = Runs{op_code, op_len, op_off[p], 255, 0};
#ifdef WALK_SKIP
        done = true;
#else
        done = false;
#endif
    }

    // steps while the path is in the block (done: the alignment's start)
    __device__ __forceinline__ void walk(const int* matrix, int K, int go, int ge,
                                         const unsigned* blk) {
        constexpr int R = PACK_TB_ROWS;
        while (!done) {
            if (i == 0 || j == 0) {
                if (mode == GLOBAL) {
                    if (i > 0) { runs.emit(OP_INS, i); length += i; i = 0; }
                    else if (j > 0) { runs.emit(OP_DEL, j); length += j; j = 0; }
                }
                done = true;
                break;
            }
            const int x = i - 1 + pad;
            const bool full = x < full_rows;
            const int sid = full ? x / R : full_rows / R + (x - full_rows) / 8;
            if (sid != blk_s || (j - 1) / CKPT_COLS != blk_c) break;
            const int r = full ? x % R : (x - full_rows) % 8;
            const unsigned t = tb_bits(
                blk[((j - 1) % CKPT_COLS * CKPT_WORDS + r / 8) * WALK_CKPT_THREADS], r % 8);
            if (state != 0) {
                if (t & (state == 1 ? 4u : 8u)) {
                    v += ge;
                    runs.emit(state == 1 ? OP_DEL : OP_INS, 1); ++length;
                    if (state == 1) --j; else --i;
                    continue;
                }
                v += go;
                state = 0;
            }
            if (mode == LOCAL && v == 0) { done = true; break; }
            if ((t & 2u) == 0u) {  // from the diagonal
                const int qx = a[i - 1], ty = b[j - 1];
                ident += qx == ty;
                runs.emit(OP_ALIGNED, 1);
                v -= matrix[qx * K + ty];
                ++length; --i; --j;
            } else if (t & 1u) {  // F over E
                runs.emit(OP_INS, 1); ++length; --i;
                state = 2;
            } else {
                runs.emit(OP_DEL, 1); ++length; --j;
                state = 1;
            }
        }
    }

    // the words of the block that cell (i, j) is in, up to column j
    __device__ __forceinline__ void refill(const SharedMatrix& mat, int go, int ge,
                                           unsigned* blk) {
        constexpr int G = PACK_TB_GROUP, R = PACK_TB_ROWS;
        const long long span = (long long)(m + G - 1) * G;  // a band's words at 8 rows a lane
        const int x = i - 1 + pad;
        const int c = (j - 1) / CKPT_COLS;
        if (x < full_rows || R == 8) {
            const int s = x / R;
            ckpt_block<mode, R>(a, n, b, m, tbw + (s / G) * span * (R / 8), s % G, s * R - pad,
                                c, j - c * CKPT_COLS, mat, go, ge, blk);
            blk_s = s;
        } else {
            const int l = (x - full_rows) / 8;
            ckpt_block<mode, 8>(a, n, b, m, tbw + (full_rows / (8 * G)) * span, l,
                                full_rows + l * 8 - pad, c, j - c * CKPT_COLS, mat, go, ge, blk);
            blk_s = full_rows / R + l;
        }
        blk_c = c;
    }

    // pair p's outputs (see walk_out)
    __device__ __forceinline__ void finish(int p, long long op0, int* out_qb, int* out_tb,
                                           int* out_nops, int* out_ident, int* out_alen) {
        runs.flush();
        out_qb[p] = i;
        out_tb[p] = j;
        out_nops[p] = (int)(runs.pos - op0);
        out_ident[p] = ident;
        out_alen[p] = length;
    }
};

// Pairs 2c and 2c + 1 (one query) in group c (fill_pack), couples
// couple_warps[w] to couple_warps[w + 1] (at most 32 / G) in warp w, all of
// one query; the boundary rows at boff[2c], each pair's traceback words at
// off[p]. The first nquery warps hold query couples instead (local and
// global: QueryCouple; pair 2c + 1's query is row r + 1), with a joint
// profile per warp (K entries of G lanes' 4 R bytes: 12 KB at 32 x 4 for K
// = 24, 96 KB a block); one launch for both, so that the second kind's
// warps fill the first one's tail. A launch of its own, so that its
// registers do not bound those of fill. Blocks per SM (registers per thread:
// 80 at 3, 128 at 2): with traceback PACK_TB_BLOCKS. Score-only, 16
// rows a lane take 94-118 registers at 2; at 3 local spills 24 bytes and runs
// as fast, semiglobal 164 and runs 1.6x slower, global 44-60 and runs 1.13x
// faster (1e12 cells, H100). 32 rows a lane take 128 registers at 2 (local
// spills 8 bytes, global 52, semiglobal 32 with its top pad: NOTES.md, v11).
template <int mode, bool want_tb>
__global__ void __launch_bounds__(want_tb ? PACK_TB_THREADS : PACK_THREADS,
                                  want_tb ? PACK_TB_BLOCKS
                                  : (mode == GLOBAL && pack_rows(mode) < 32 ? 768 : 512)
                                    / PACK_THREADS)
fill2(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ pair_row, const int* __restrict__ pair_col,
     const int* __restrict__ couple_warps, const int nwarps, const int nquery,
     const int* __restrict__ matrix, const int K, const int go, const int ge, const int neg,
     SCORE* __restrict__ bnd_h, SCORE* __restrict__ bnd_f, const long long* __restrict__ boff,
     unsigned int* __restrict__ tb, const long long* __restrict__ off,
     int* __restrict__ out_score, int* __restrict__ out_ei, int* __restrict__ out_ej,
     const long long* __restrict__ op_off, unsigned char* __restrict__ op_code,
     int* __restrict__ op_len, int* __restrict__ out_qb, int* __restrict__ out_tb,
     int* __restrict__ out_nops, int* __restrict__ out_ident, int* __restrict__ out_alen)
{
    constexpr int R = want_tb ? PACK_TB_ROWS : pack_rows(mode);
    constexpr int G = want_tb ? PACK_TB_GROUP : pack_group(mode);
    typedef typename ProfileWord<R>::type Word;
    extern __shared__ int shared[];
    const int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    const int lane = threadIdx.x % 32;
    if (warp >= nwarps) return;  // the whole warp (never in a block of query couples)
    const int first = couple_warps[warp];
    const int p = 2 * (first + lane / G);
    const bool real = p < 2 * couple_warps[warp + 1];
    // a block of query couples may share one profile (QueryCouple's B):
    // its queries from the block's first warp, which holds couples even where
    // this warp, padding the row couple's warps to a whole block, holds none
    constexpr bool block_profile = want_tb ? BLOCK_QUERY_PROFILE_TB : BLOCK_QUERY_PROFILE;
    const int qfirst = block_profile && warp < nquery ? couple_warps[warp - (int)threadIdx.x / 32]
                                                      : first;
    const long long qoff = offsets[pair_row[2 * qfirst]];
    const int n = (int)(offsets[pair_row[2 * qfirst] + 1] - qoff);
    long long t0 = 0, t1 = 0, bo = 0;
    int m0 = 0, m1 = 0;
    if (real) {
        t0 = offsets[pair_col[p]];
        t1 = offsets[pair_col[p + 1]];
        m0 = (int)(offsets[pair_col[p] + 1] - t0);
        m1 = (int)(offsets[pair_col[p + 1] + 1] - t1);
        bo = boff[p];
    }
#ifdef FILL_STORES_HOT  // benchmarks only: every pair's words into the first 16 K words
    unsigned* const tb0 = want_tb && real ? tb + off[p] % 16384 : tb;
    unsigned* const tb1 = want_tb && real ? tb + off[p + 1] % 16384 : tb;
#else
    unsigned* const tb0 = want_tb && real ? tb + off[p] : tb;
    unsigned* const tb1 = want_tb && real ? tb + off[p + 1] : tb;
#endif
    unsigned* const top_h = reinterpret_cast<unsigned*>(bnd_h + bo);
    unsigned* const top_f = reinterpret_cast<unsigned*>(bnd_f + bo);
    const int init = (mode == LOCAL) ? 0 : neg;
    int best[2] = {init, init}, bi[2] = {0, 0}, bj[2] = {0, 0};
    // a warp's profile: a joint one (4 bytes a row) where the launch has query
    // couples, so that the two kinds of warps of a block do not overlap; with
    // block profiles, the block's (blocks hold warps of one kind)
    const int slot = threadIdx.x / 32;
    char* const mine = reinterpret_cast<char*>(shared)
                     + (block_profile ? (warp < nquery ? 0 : slot * (K + 1) * G * R)
                                      : slot * (nquery > 0 ? K * G * R * 4 : (K + 1) * G * R));
    bool query = false;  // a warp of query couples: the second query is row r + 1
    if constexpr (mode != SEMIGLOBAL || !want_tb) {  // semiglobal: score-only
        query = warp < nquery;
        if (query) {
            const long long q1 = offsets[pair_row[2 * qfirst + 1]];
            const int n1 = (int)(offsets[pair_row[2 * qfirst + 1] + 1] - q1);
            const QueryCouple<mode, want_tb, R, G, R, block_profile> c{
                reinterpret_cast<uint4*>(mine), codes + qoff, codes + q1, n, n1, codes + t0, m0,
                m0, K};
            fill_pack<mode, want_tb, R, G>(matrix, c, go, ge, top_h, top_f, tb0, tb1, lane,
                                           best, bi, bj);
        }
    }
    if (!query) {
        const TargetCouple<mode, want_tb, R, G> c{reinterpret_cast<Word*>(mine), codes + qoff, n,
                                                  codes + t0, codes + t1, m0, m1, K};
        fill_pack<mode, want_tb, R, G>(matrix, c, go, ge, top_h, top_f, tb0, tb1, lane,
                                       best, bi, bj);
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        warp_best<G>(best[k], bi[k], bj[k]);
        if (real && lane % G == 0) {
            out_score[p + k] = best[k]; out_ei[p + k] = bi[k]; out_ej[p + k] = bj[k];
        }
    }
#if FUSED_WALK
    if constexpr (want_tb && !checkpointed(mode)) {  // else walk_ckpt walks them
        // lane 1 of the group takes pair p + 1's end from lane 0; the warp's
        // barrier orders its lanes' stores of the words before the walks' loads
        const int from = lane & ~(G - 1), gl = lane & (G - 1);
        const int v1 = __shfl_sync(FULL, best[1], from);
        const int i1 = __shfl_sync(FULL, bi[1], from);
        const int j1 = __shfl_sync(FULL, bj[1], from);
        __syncwarp();
        if (real && gl < 2)
            walk_packed_pair<mode>(codes, offsets, pair_row, pair_col, p + gl, query, tb, off,
                                   matrix, K, go, ge, gl ? v1 : best[0], gl ? i1 : bi[0],
                                   gl ? j1 : bj[0], op_off, op_code, op_len, out_qb, out_tb,
                                   out_nops, out_ident, out_alen);
    }
#endif
}

// WALK_MIN_BLOCKS: blocks a SM that walk's registers must allow: 48 registers
// give five (without the bound, local's walk takes 54 and four); at six
// ptxas spills 44-52 bytes, at eight 88-100, and the walk ran slower
// (NOTES.md, v32, v33)
#ifndef WALK_MIN_BLOCKS
#define WALK_MIN_BLOCKS 5
#endif
#define WALK_BOUNDS __launch_bounds__(256, WALK_MIN_BLOCKS)

// A thread a pair's walk, pairs p0 on (FUSED_WALK: p0 = npack, the packed
// pairs walked by fill2), from each pair's end cell (ei, ej) of its score.
template <int mode>
__global__ void WALK_BOUNDS
walk(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ pair_row, const int* __restrict__ pair_col, const int npairs,
     const int nwide, const int npack, const int nqpack, const unsigned int* __restrict__ tb,
     const long long* __restrict__ off, const int* __restrict__ warp_m,
     const int* __restrict__ matrix, const int K, const int go, const int ge,
     const int* __restrict__ score, const int* __restrict__ ei, const int* __restrict__ ej,
     const long long* __restrict__ op_off, unsigned char* __restrict__ op_code,
     int* __restrict__ op_len,
     int* __restrict__ out_qb, int* __restrict__ out_tb, int* __restrict__ out_nops,
     int* __restrict__ out_ident, int* __restrict__ out_alen, const int p0)
{
    const int p = p0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const unsigned char* a = codes + offsets[pair_row[p]];
    const long long toff = offsets[pair_col[p]];
    const unsigned char* b = codes + toff;
    const bool wide = p < nwide;
    const int q = p - nwide;
    // word (stripe s, column j): wide pairs by band (of g lanes of gs / g
    // stripes: PACK_TB_GROUP and TB_STRIPES for couples) and step, narrow ones
    // per warp
    const int g = p < npack ? PACK_TB_GROUP : 32;
    const int gs = p < npack ? PACK_TB_GROUP * TB_STRIPES : 32;
    const unsigned int* tbw = wide ? tb + off[p] : tb + off[nwide + q / 32] + q % 32;
    const long long span = wide ? (long long)(offsets[pair_col[p] + 1] - toff) + g - 1
                                : (long long)warp_m[q / 32];
    // a packed pair's short last band (fill_pack): from the rows its couple
    // filled, a query couple's (the first nqpack pairs, p and p ^ 1) the
    // longer query's
    int short_from = NO_SHORT_BAND, pad = 0;
    if (p < npack) packed_walk_layout<mode>(offsets, pair_row, p, p < nqpack, short_from, pad);
    // local mode: the score of the current state's cell, carried back from the
    // end cell (H = 0 is where the alignment starts; see the top of the file)
    walk_out<mode>(p, a, b, tbw, wide, g, gs, short_from, span, pad, matrix, K, go, ge, score[p],
                   ei[p], ej[p], op_off, op_code, op_len, out_qb, out_tb, out_nops, out_ident,
                   out_alen);
}

// The walks of the packed pairs (below npack, the first nqpack in query
// couples) where the fill was checkpointed (CKPT): CkptWalk from each pair's
// end cell (ei, ej) of its score, the lanes taking pairs from next[0]
// (zeroed) as they finish them. The matrix in shared memory, rows 32 apart
// (load_lane_matrix's copy a bank took 0.1 s of a window's walks at 1e12
// cells to load, block after block).
template <int mode>
__global__ void __launch_bounds__(WALK_CKPT_THREADS, 2048 / WALK_CKPT_THREADS / 4)
walk_ckpt(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ pair_row, const int* __restrict__ pair_col, const int npack,
     const int nqpack, const unsigned int* __restrict__ tb, const long long* __restrict__ off,
     const int* __restrict__ matrix, const int K, const int go, const int ge,
     const int* __restrict__ score, const int* __restrict__ ei, const int* __restrict__ ej,
     const long long* __restrict__ op_off, unsigned char* __restrict__ op_code,
     int* __restrict__ op_len, int* __restrict__ out_qb, int* __restrict__ out_tb,
     int* __restrict__ out_nops, int* __restrict__ out_ident, int* __restrict__ out_alen,
     int* __restrict__ next)
{
    __shared__ int sm[32 * 32];  // W(a, b) at 32 a + b; rows PAD and past K: -128
    for (int k = threadIdx.x; k < 32 * 32; k += blockDim.x)
        sm[k] = k / 32 < K && k % 32 < K ? matrix[(k / 32) * K + k % 32] : -128;
    __syncthreads();
    const SharedMatrix mat{sm};
    __shared__ unsigned blocks[CKPT_COLS * CKPT_WORDS * WALK_CKPT_THREADS];
    unsigned* const blk = blocks + threadIdx.x;
    CkptWalk<mode> w;
    int p = -1;
    while (true) {
        // pairs taken and walked until the lane's needs a block, or none is left
        while (p < npack) {
            if (p < 0) {
                p = atomicAdd(next, 1);
                if (p >= npack) break;
                w.begin(codes, offsets, pair_row, pair_col, p, p < nqpack, tb, off, score, ei,
                        ej, op_off, op_code, op_len);
            }
            w.walk(matrix, K, go, ge, blk);
            if (!w.done) break;
            w.finish(p, op_off[p], out_qb, out_tb, out_nops, out_ident, out_alen);
            p = -1;
        }
        const bool more = p < npack;
        if (!__any_sync(FULL, more)) break;
        if (more) w.refill(mat, go, ge, blk);
    }
}

// ---------------------------------------------------------------------------
// Bounded local traceback (gpu_backend.BOUNDED_TRACEBACK): a window's local
// alignments from its score pass (the score-only kernels: each pair's score
// and end cell (ei, ej), the first best in row-major order) and a traceback of
// a box of each pair only.
//
// Why it is the same alignment: every alignment of the pair's score that ends
// at (ei, ej) lies in the box from the least row i0 and the least column j0
// where one of them starts, to (ei, ej). Filled as a local matrix of its own
// (zero boundary), the box's H, E and F are at most the full matrix's, and
// equal to them in every state that such an alignment passes through (a path
// into it from outside the box would make an alignment of the pair's score
// that starts outside). The walk takes, from the end cell, the first origin in
// the tie order whose term equals H: an origin on an optimal alignment, whose
// term is then the same in the box; one that is not scores less in both. So
// the box's walk is the full matrix's. Its end cell is the box's last: no
// cell before it in row-major order reaches the score (it would have been the
// full matrix's end cell). benchmarks/NOTES.md (v21) has the model that
// checked this on the CPU against the reference kernels.
//
// Where the alignments start: bound_starts runs the DP backwards from the end
// cell over the reversed prefixes, anchored there (H'(0, 0) = 0, every other
// boundary dead), with every state of score <= 0 dead: no optimal alignment
// that ends at (ei, ej) passes through one (its part before would score at
// least the pair's score and end earlier). Reversed row i, column j is cell
// (ei + 1 - i, ej + 1 - j); an alignment of the pair's score ends there in
// the reversed pass exactly where one starts (any reversed local alignment of
// that score within the prefixes ends, forwards, at (ei, ej), the first such
// end cell). The live cells are few (a band along the alignment): one thread a
// pair, stripes of BOUND_ROWS reversed rows in registers, a stripe's columns
// from the first live one of the row above until the stripe is dead past the
// last.
#define BNEG (-(1 << 28))
// Reversed rows a stripe of the reverse pass (gpu_backend.BOUND_ROWS): its
// row above, one lane's own in global memory, is read and written once a
// column of the stripe, and a warp's 32 lanes touch 32 sectors each time.
#ifndef BOUND_ROWS
#define BOUND_ROWS 16
#endif

// Sum over a warp's lanes, added to *to by lane 0 (every lane takes part).
__device__ __forceinline__ void warp_add(unsigned long long* to, long long x) {
#pragma unroll
    for (int k = 16; k > 0; k >>= 1) x += __shfl_down_sync(FULL, x, k);
    if (threadIdx.x % 32 == 0 && x) atomicAdd(to, (unsigned long long)x);
}

// Pair p = order[k] of sorted position k: box_i0[p], box_j0[p], the first row
// and column of its box (ei + 1, ej + 1 where its score is 0: an empty box).
// Each lane takes the next pair (counts[1], zeroed) as soon as it is done with
// one, and every lane runs the same column step: a pass's length varies with
// the pair far more than its score tells, and lanes that waited for the
// warp's longest pass took most of the time (1e12 cells on the H100: 0.29 s
// summed over the windows with a pair a thread, sorted by score). The row
// above a stripe, (H, F + go) a column, ej + 2 entries, at scratch[ej_sum[p] -
// ej[p] + 2 p] on (ej_sum: the inclusive sum of ej over pairs). A pair whose
// pass takes more than `cap` cells (homologs: a band as long as the pair, on
// one thread) stops there with the box of its whole prefix (a box that holds
// every alignment ending at (ei, ej)). Adds the cells computed to counters[0].
extern "C" __global__ void __launch_bounds__(256)
bound_starts(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ rows, const int* __restrict__ cols,
     const long long* __restrict__ order, const int npairs, const int* __restrict__ matrix,
     const int K, const int go, const int ge, const int* __restrict__ score,
     const int* __restrict__ ei, const int* __restrict__ ej,
     const long long* __restrict__ ej_sum, int2* __restrict__ scratch,
     const long long cap, int* __restrict__ box_i0, int* __restrict__ box_j0,
     unsigned long long* __restrict__ counters, int* __restrict__ counts)
{
    __shared__ unsigned lm[256 * 32];
    load_lane_matrix(lm, matrix, K);
    const LaneMatrix mat{lm, (int)(threadIdx.x % 32)};
    long long total = 0;
    int p = -1, n = 0, m = 0, opt = 0;
    const unsigned char* a = nullptr;
    const unsigned char* b = nullptr;
    int2* row = nullptr;
    int i0 = 0, lo = 0, hi = 0, nlo = 0, nhi = -1, j = 1, diag0 = 0, real = 0;
    int imax = 0, jmax = 0;
    long long cells = 0;
    int qa[BOUND_ROWS], hl[BOUND_ROWS], el[BOUND_ROWS];
    bool done = true;  // no pair in hand, or its pass is over
    // column j's row above and target residue, loaded a column ahead: the
    // pass waited on these loads more than on anything else (ncu, v23)
    int2 up_next = make_int2(BNEG, BNEG);
    int bc_next = 0;
    auto fetch = [&](int jj) {
        up_next = jj <= hi ? row[jj] : make_int2(BNEG, BNEG);
        bc_next = jj <= m ? b[m - jj] : 0;
    };
    auto stripe = [&]() {  // start the stripe from row i0 (reversed), columns from lo
        real = n - i0;
#pragma unroll
        for (int r = 0; r < BOUND_ROWS; ++r) {
            qa[r] = (r < real ? a[n - i0 - r - 1] : PAD) * 32;
            hl[r] = BNEG;  // column lo - 1 (or 0) is dead in every row
            el[r] = BNEG;
        }
        diag0 = (lo == 0) ? 0 : BNEG;  // H'(i0, first column - 1): the anchor
        nlo = m + 1;
        nhi = -1;
        j = max(lo, 1);
        fetch(j);
    };
    while (true) {
        if (done) {
            if (p >= 0) {
                box_i0[p] = n + 1 - imax;
                box_j0[p] = m + 1 - jmax;
                total += cells;
            }
            const int k = atomicAdd(counts + 1, 1);
            if (k >= npairs) break;
            p = (int)order[k];
            opt = score[p];
            n = ei[p];
            m = ej[p];
            imax = jmax = 0;
            cells = 0;
            if (opt <= 0) continue;  // an empty box, written as the next pair is taken
            a = codes + offsets[rows[p]];  // reversed row i: a[n - i]
            b = codes + offsets[cols[p]];  // reversed column j: b[m - j]
            row = scratch + (ej_sum[p] - m) + 2LL * p;
            lo = hi = i0 = 0;
            stripe();
            done = false;
        }
        int hup = up_next.x, fup = up_next.y;
        const auto col = mat.column(bc_next);
        fetch(j + 1);  // row[j + 1] is the stripe above's until this stripe gets there
        int diag = diag0;
        diag0 = hup;
        int c = BNEG;
#pragma unroll
        for (int r = 0; r < BOUND_ROWS; ++r) {
            const int d = diag + col(qa[r]);  // rows past the prefix: dead below
            const int e = __viaddmax_s32(el[r], -ge, hl[r]);  // E + go, as F
            const int f = __viaddmax_s32(fup, -ge, hup);
            int h = __viaddmax_s32(max(e, f), -go, d);
            h = h > 0 && r < real ? h : BNEG;
            diag = hl[r];
            hl[r] = h;
            el[r] = e;
            hup = h;
            fup = f;
            c = max(c, h);
        }
        cells += BOUND_ROWS;
        if (c == opt) {  // where alignments of the score start
#pragma unroll
            for (int r = 0; r < BOUND_ROWS; ++r)
                if (hl[r] == opt) { imax = max(imax, i0 + r + 1); jmax = max(jmax, j); }
        }
        row[j] = make_int2(hup, hup > BNEG ? fup : BNEG);
        if (hup > BNEG) { nlo = min(nlo, j); nhi = j; }
        if ((c == BNEG && j > hi) || j == m || cells > cap) {  // the stripe is over
            if (cells > cap) {  // the prefix
                imax = n;
                jmax = m;
                done = true;
            } else if (nhi < 0 || i0 + BOUND_ROWS >= n) {
                done = true;
            } else {
                lo = nlo;
                hi = nhi;
                i0 += BOUND_ROWS;
                stripe();
            }
        } else {
            ++j;
        }
    }
    warp_add(counters, total);
}

// A box's shape: rows, columns, and whether it is wide (one warp: at least
// wide_steps column steps of STRIPE rows), from its pair's end and start.
struct Box {
    int n, m;
    bool wide;
    __device__ __forceinline__ Box(int ei, int ej, int i0, int j0, int wide_steps)
        : n(ei - i0 + 1), m(ej - j0 + 1), wide(steps() >= wide_steps) {}
    __device__ __forceinline__ int stripes() const { return (n + STRIPE - 1) / STRIPE; }
    __device__ __forceinline__ long long steps() const { return (long long)stripes() * m; }
};

#define WIDE_KEY (1LL << 62)

// Each pair's box: the sort key, so that an ascending sort puts the wide
// boxes first (below -WIDE_KEY), then the narrow ones by rows in stripes, then
// columns, most first (a warp's lanes run their stripes and columns side by
// side), and the pairs of score 0 last. Adds the box cells to counters[1].
extern "C" __global__ void __launch_bounds__(256)
box_keys(
     const int npairs, const int* __restrict__ score, const int* __restrict__ ei,
     const int* __restrict__ ej, const int* __restrict__ box_i0,
     const int* __restrict__ box_j0, const int wide_steps, long long* __restrict__ key,
     unsigned long long* __restrict__ counters)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    long long cells = 0;
    if (p < npairs) {
        if (score[p] > 0) {
            const Box x(ei[p], ej[p], box_i0[p], box_j0[p], wide_steps);
            key[p] = x.wide ? -WIDE_KEY - x.steps()
                            : -((long long)x.stripes() << 32 | x.m);
            cells = (long long)x.n * x.m;
        } else {
            key[p] = 1;
        }
    }
    warp_add(counters + 1, cells);
}

// Where each box's buffers go, its pairs in the order of the keys' sort
// (order[k]): the wide ones first, an item each; then
// the narrow ones in warps of 32 (sorted position nwide + 32 q + lane), an
// item (number nwide + q) each warp, its words and boundary entries
// interleaved by lane as the classic narrow pairs' (fill_thread), sized by
// the warp's most stripes and its longest box (item_m). Writes each pair's
// item and lane, nwide to counts[0], and each item's rows in stripes and
// columns (atomicMax into zeroed item_s and item_m).
extern "C" __global__ void __launch_bounds__(256)
box_items(
     const int npairs, const long long* __restrict__ order, const long long* __restrict__ key,
     const int* __restrict__ score, const int* __restrict__ ei, const int* __restrict__ ej,
     const int* __restrict__ box_i0, const int* __restrict__ box_j0,
     int* __restrict__ item, int* __restrict__ lane_of, int* __restrict__ item_s,
     int* __restrict__ item_m, int* __restrict__ counts)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= npairs) return;
    // the wide boxes: the sorted positions whose key is below -WIDE_KEY
    int lo = 0, hi = npairs;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (key[order[mid]] < -WIDE_KEY) lo = mid + 1; else hi = mid;
    }
    const int nwide = lo;
    if (k == 0) counts[0] = nwide;
    const int p = (int)order[k];
    const int it = k < nwide ? k : nwide + (k - nwide) / 32;
    item[p] = it;
    lane_of[p] = k < nwide ? 0 : (k - nwide) % 32;
    if (score[p] > 0) {
        const Box x(ei[p], ej[p], box_i0[p], box_j0[p], 0);
        atomicMax(item_s + it, x.stripes());
        atomicMax(item_m + it, x.m);
    }
}

// Each item's traceback words and boundary entries (H and F each): a wide
// box's by its bands, a narrow warp's 32 lanes of its stripes by its columns.
extern "C" __global__ void __launch_bounds__(256)
box_item_needs(
     const int nitems, const int* __restrict__ counts, const int* __restrict__ item_s,
     const int* __restrict__ item_m, long long* __restrict__ words, long long* __restrict__ bnd)
{
    const int it = blockIdx.x * blockDim.x + threadIdx.x;
    if (it >= nitems) return;
    const long long st = item_s[it], m = item_m[it];
    if (it < counts[0]) {
        words[it] = (st + 31) / 32 * 32 * (m + 31);
        bnd[it] = m + 1;
    } else {
        words[it] = st * m * 32;
        bnd[it] = m > 0 ? (m + 1) * 32 : 0;
    }
}

// The boxes' traceback (local mode): with `wide`, a warp a wide box (sorted
// position k < nwide; blocks of 8 warps, a query profile each), else a thread
// a narrow one (sorted position nwide + thread: the launch's warps are the
// items' warps). Item it's words at words[wend[it] - its words] on, its
// boundary entries likewise by bend (see box_item_needs); where they would
// not fit (the last entry of wend past capacity, of bend past bnd_capacity),
// status[0] is set and nothing is filled. The box's end cell must come out as its last cell, with
// the pair's score: else status[1] is set (a check of the above).
extern "C" __global__ void __launch_bounds__(256, 3)
fill_box(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ rows, const int* __restrict__ cols,
     const long long* __restrict__ order, const int npairs, const int* __restrict__ matrix,
     const int K, const int go, const int ge, const int neg, const int* __restrict__ score,
     const int* __restrict__ ei, const int* __restrict__ ej, const int* __restrict__ box_i0,
     const int* __restrict__ box_j0, const int* __restrict__ counts,
     const int* __restrict__ item_m, const long long* __restrict__ words_need,
     const long long* __restrict__ wend, const long long* __restrict__ bnd_need,
     const long long* __restrict__ bend, const long long capacity,
     const long long bnd_capacity, unsigned int* __restrict__ words,
     SCORE* __restrict__ bnd_h, SCORE* __restrict__ bnd_f, const int wide,
     int* __restrict__ status)
{
    extern __shared__ int box_shared[];
    // every item's entries are summed by the last entry (the items after the
    // last have none)
    if (npairs > 0 && (wend[npairs - 1] > capacity || bend[npairs - 1] > bnd_capacity)) {
        if (blockIdx.x == 0 && threadIdx.x == 0) status[0] = 1;
        return;
    }
    const int nwide = counts[0];
    int best = 0, bi = 0, bj = 0;
    if (wide) {
        const int k = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32);
        const int lane = threadIdx.x % 32;
        if (k >= nwide) return;  // the whole warp
        const int p = (int)order[k];
        const int i0 = box_i0[p], j0 = box_j0[p];
        const Box x(ei[p], ej[p], i0, j0, 0);
        uint2* prof = reinterpret_cast<uint2*>(box_shared) + (threadIdx.x / 32) * K * 32;
        const long long ws = wend[k] - words_need[k], bs = bend[k] - bnd_need[k];
        fill_warp<LOCAL, true>(matrix, K, prof, codes + offsets[rows[p]] + i0 - 1, x.n,
                               codes + offsets[cols[p]] + j0 - 1, x.m, go, ge, neg,
                               bnd_h + bs, bnd_f + bs, words + ws, lane, best, bi, bj);
        warp_best(best, bi, bj);
        if (lane == 0 && (best != score[p] || bi != x.n || bj != x.m)) atomicOr(status + 1, 1);
        return;
    }
    // the lane matrix: rows past a box's end score -128, which no cell of
    // theirs turns into a best cell (each is below a cell of the box's)
    load_lane_matrix(reinterpret_cast<unsigned*>(box_shared), matrix, K);
    const LaneMatrix mat{reinterpret_cast<unsigned*>(box_shared), (int)(threadIdx.x % 32)};
    const int u = blockIdx.x * blockDim.x + threadIdx.x;
    const int k = nwide + u;
    if (k >= npairs) return;
    const int p = (int)order[k];
    if (score[p] <= 0) return;
    const int it = nwide + u / 32, lane = u % 32;
    const int i0 = box_i0[p], j0 = box_j0[p];
    const Box x(ei[p], ej[p], i0, j0, 0);
    const long long ws = wend[it] - words_need[it] + lane, bs = bend[it] - bnd_need[it] + lane;
    fill_thread<LOCAL, true>(mat, codes + offsets[rows[p]] + i0 - 1, x.n,
                             codes + offsets[cols[p]] + j0 - 1, x.m, go, ge, neg,
                             bnd_h + bs, bnd_f + bs, words + ws, item_m[it], best, bi, bj);
    if (best != score[p] || bi != x.n || bj != x.m) atomicOr(status + 1, 1);
}

// The walk of each pair's box (see fill_box for its words) from the box's last
// cell; begins in the pair's coordinates. Pairs of score 0: an empty
// alignment at (ei, ej), as walk leaves it. Nothing where status is set.
extern "C" __global__ void __launch_bounds__(256)
walk_box(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ rows, const int* __restrict__ cols, const int npairs,
     const int* __restrict__ matrix, const int K, const int go, const int ge,
     const int* __restrict__ score, const int* __restrict__ ei, const int* __restrict__ ej,
     const int* __restrict__ box_i0, const int* __restrict__ box_j0,
     const int* __restrict__ counts, const int* __restrict__ item,
     const int* __restrict__ lane_of, const int* __restrict__ item_m,
     const long long* __restrict__ words_need, const long long* __restrict__ wend,
     const unsigned int* __restrict__ words, const int* __restrict__ status,
     const long long* __restrict__ op_off, unsigned char* __restrict__ op_code,
     int* __restrict__ op_len, int* __restrict__ out_qb, int* __restrict__ out_tb,
     int* __restrict__ out_nops, int* __restrict__ out_ident, int* __restrict__ out_alen)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs || status[0] || status[1]) return;
    int i = ei[p], j = ej[p], nops = 0, ident = 0, length = 0;
    if (score[p] > 0) {
        const int i0 = box_i0[p], j0 = box_j0[p], it = item[p];
        const Box x(i, j, i0, j0, 0);
        const bool wide = it < counts[0];
        i = x.n;
        j = x.m;
        walk_pair<LOCAL>(codes + offsets[rows[p]] + i0 - 1, codes + offsets[cols[p]] + j0 - 1,
                         words + wend[it] - words_need[it] + (wide ? 0 : lane_of[p]), wide,
                         32, 32, NO_SHORT_BAND, wide ? x.m + 31 : item_m[it], matrix, K, go, ge,
                         score[p], op_off[p], op_code, op_len, i, j, nops, ident, length);
        i += i0 - 1;
        j += j0 - 1;
    }
    out_qb[p] = i;
    out_tb[p] = j;
    out_nops[p] = nops;
    out_ident[p] = ident;
    out_alen[p] = length;
}

// A window's pairs in launch order from the host's plan (gpu_layout.py, whose
// expand() is this kernel in NumPy). Segment columns: first position, row,
// first column, kind (1: couple), first traceback word, first boundary entry,
// first operation slot, pairs (kind 3: query couples, the pairs of rows r and
// r + 1 with each target in turn). Columns are sorted positions of the column set,
// joined at col_base; q2 sums every other column length (stride2_prefix);
// couples' words are laid out by bands of PACK_TB_GROUP lanes of TB_STRIPES
// stripes (the plan's couple_lanes and couple_stripes with traceback).
#define SEG_COLS 8
extern "C" __global__ void __launch_bounds__(256)
layout_pairs(
     const long long* __restrict__ seg, const int nseg, const int npairs, const int nwide,
     const int col_base, const long long* __restrict__ offsets,
     const long long* __restrict__ q2, const int couple_scale, const int want_tb,
     const int want_ops, int* __restrict__ rows, int* __restrict__ cols, long long* __restrict__ off,
     long long* __restrict__ boff, long long* __restrict__ op_off)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    int lo = 0, hi = nseg - 1;  // the last segment starting at or before p
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (seg[(long long)mid * SEG_COLS] <= p) lo = mid; else hi = mid - 1;
    }
    const long long* s = seg + (long long)lo * SEG_COLS;
    const long long i = p - s[0];
    const bool query_couple = s[3] == 3;  // pairs (row, c), (row + 1, c)
    const int h = query_couple ? (int)(i % 2) : 0;  // a query couple's second pair
    const long long k = query_couple ? i / 2 : i;  // the target's place in the segment
    const int r = (int)s[1] + h, c0 = (int)s[2], c = c0 + (int)k;
    const long long n = offsets[r + 1] - offsets[r];
    const long long span = offsets[col_base + c] - offsets[col_base + c0];
    rows[p] = r;
    cols[p] = col_base + c;
    // a query couple's pairs take the longer query's (row s[1]) words, and
    // n0 + m and n1 + m operation slots a target
    const long long n0 = offsets[s[1] + 1] - offsets[s[1]];
    const long long n1 = query_couple ? offsets[s[1] + 2] - offsets[s[1] + 1] : 0;
    const long long m = offsets[col_base + c + 1] - offsets[col_base + c];
    if (want_ops)
        op_off[p] = s[6] + (query_couple ? k * (n0 + n1) + 2 * span + h * (n0 + m) : i * n + span);
    if (p < nwide) {
        const bool packed = s[3] == 1 || query_couple;
        const long long g = packed ? PACK_TB_GROUP : 32;  // lanes a band
        const long long gs = packed ? PACK_TB_GROUP * TB_STRIPES : 32;  // stripes a band
        const long long bands = (((query_couple ? n0 : n) + STRIPE - 1) / STRIPE + gs - 1) / gs;
        off[p] = s[4] + (want_tb ? (query_couple
                                    ? bands * gs * (2 * (span + (g - 1) * k) + h * (m + g - 1))
                                    : bands * gs * (span + (g - 1) * i))
                                 : 0);
        const long long half = (i + 1) / 2;  // couples before this pair's, or up to it
        boff[p] = s[5] + (s[3] == 1 ? couple_scale * (q2[c0 + 2 * half] - q2[c0] + half)
                          : query_couple ? couple_scale * (offsets[col_base + c0 + half]
                                                           - offsets[col_base + c0] + half)
                          : span + i);
    }
}

// A window's pairs in input indices (PairBatch.oriented, on the device): the
// sorted positions rows[p] and cols[p] - col_base mapped through the sets'
// orders; for all-vs-all (triangle), a pair whose query maps above its target
// is seen from the other side: indices, begins and ends exchanged, and with
// traceback (want_tb; else qb, tb and flip are not read or written) flip[p]
// set for compact_ops to swap insertions and deletions. Reads the window's
// slot, writes into the block its results leave in (out_*).
extern "C" __global__ void __launch_bounds__(256)
orient_pairs(
     const int* __restrict__ rows, const int* __restrict__ cols, const int npairs,
     const int col_base, const long long* __restrict__ row_order,
     const long long* __restrict__ col_order, const int triangle, const int want_tb,
     const int* __restrict__ qb, const int* __restrict__ qe, const int* __restrict__ tb,
     const int* __restrict__ te, long long* __restrict__ out_q, long long* __restrict__ out_t,
     int* __restrict__ out_qb, int* __restrict__ out_qe, int* __restrict__ out_tb,
     int* __restrict__ out_te, unsigned char* __restrict__ flip)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const long long a = row_order[rows[p]], b = col_order[cols[p] - col_base];
    const bool f = triangle && a > b;
    out_q[p] = f ? b : a;
    out_t[p] = f ? a : b;
    out_qe[p] = f ? te[p] : qe[p];
    out_te[p] = f ? qe[p] : te[p];
    if (want_tb) {
        out_qb[p] = f ? tb[p] : qb[p];
        out_tb[p] = f ? qb[p] : tb[p];
        flip[p] = f;
    }
}

// Operations from each pair's slots (sized by a bound, at src_off) to their
// places in the compacted arrays (dst_off, npairs + 1 entries): a warp a pair;
// a pair flipped by orient_pairs has its insertions and deletions swapped.
// The walks leave each pair's operations end first; this copy puts them
// start first (each walk's thread swapping them in place, with scattered loads
// and stores of its own, made the walk of global pairs 6% longer: NOTES.md,
// v33).
extern "C" __global__ void __launch_bounds__(256)
compact_ops(
     const long long* __restrict__ src_off, const long long* __restrict__ dst_off,
     const int npairs, const unsigned char* __restrict__ code, const int* __restrict__ len,
     const unsigned char* __restrict__ flip, unsigned char* __restrict__ out_code,
     int* __restrict__ out_len)
{
    const long long p = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (p >= npairs) return;
    const long long s = src_off[p], d = dst_off[p], k = dst_off[p + 1] - d;
    const bool f = flip[p];
    for (long long x = threadIdx.x % 32; x < k; x += 32) {
        const long long y = s + k - 1 - x;
        const unsigned char c = code[y];
        out_code[d + x] = f && c == OP_INS ? OP_DEL : f && c == OP_DEL ? OP_INS : c;
        out_len[d + x] = len[y];
    }
}

// A window's compacted operations (window order, src_off: npairs + 1 entries)
// to their places among every pair of a job in input order: pair p at the
// final offset of its rank pos[p] (dst_off); a warp a pair.
extern "C" __global__ void __launch_bounds__(256)
place_ops(
     const long long* __restrict__ src_off, const long long* __restrict__ pos,
     const long long* __restrict__ dst_off, const int npairs,
     const unsigned char* __restrict__ code, const int* __restrict__ len,
     unsigned char* __restrict__ out_code, int* __restrict__ out_len)
{
    const long long p = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (p >= npairs) return;
    const long long s = src_off[p], k = src_off[p + 1] - s, d = dst_off[pos[p]];
    for (long long x = threadIdx.x % 32; x < k; x += 32) {
        out_code[d + x] = code[s + x];
        out_len[d + x] = len[s + x];
    }
}

// A window's operation counts put by rank, for the job's offsets that place_ops
// takes (their cumsum, once every window's are in): pair p's count at entry
// pos[p] + 1 of a zeroed array of the job's pairs + 1.
extern "C" __global__ void __launch_bounds__(256)
counts_at_ranks(
     const long long* __restrict__ src_off, const long long* __restrict__ pos,
     const int npairs, long long* __restrict__ out)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    out[pos[p] + 1] = src_off[p + 1] - src_off[p];
}

// Each pair's rank in input order (engine.pair_rank on the device): row-major
// q * ncols + t, or for all-vs-all (triangle) the upper triangle's q < t of n.
extern "C" __global__ void __launch_bounds__(256)
pair_ranks(
     const long long* __restrict__ q, const long long* __restrict__ t, const int npairs,
     const long long n, const long long ncols, const int triangle, long long* __restrict__ out)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const long long a = q[p], b = t[p];
    out[p] = triangle ? a * (2 * n - a - 1) / 2 + (b - a - 1) : a * ncols + b;
}
