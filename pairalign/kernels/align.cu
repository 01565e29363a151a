// pairalign GPU kernels: one thread per pair.
//
// Conventions are those of pairalign/kernels/cpu.py (the reference): cells (i, j)
// 1-based, i over the query (row sequence), j over the target; the traceback
// nibble of a cell holds H's origin in bits 0-1 (0 stop, 1 diagonal, 2 E, 3 F),
// "E extended" in bit 2 and "F extended" in bit 3. Ties: H prefers diagonal, then
// E, then F, and stops at 0 in local mode; E and F prefer opening; the end cell is
// the first best cell in row-major order.
//
// The fill walks the query in stripes of STRIPE rows held in registers; the row
// above a stripe (H and F) lives in global memory, per warp [j][lane] from
// warp_boff, so that a warp's accesses coalesce. A stripe's 8 nibbles of one column make one 32-bit
// traceback word. Each warp (32 consecutive pairs, which share a query and have
// targets of about one length) owns a block of words sized by its own longest
// pair, word (stripe, j) of lane l at warp_off + (stripe * warp_m + j - 1) * 32 + l:
// the warp's stores coalesce and memory follows the real cells, not the window's
// longest pair.
//
// SCORE, the type of the stored boundary row, is int, or short where every score
// fits (the host checks the bound): half the bytes moved per stripe.

#define STRIPE 8
#define PAD 31
#define GLOBAL 0
#define SEMIGLOBAL 1
#define LOCAL 2

#ifndef SCORE
#define SCORE int
#endif

__device__ __forceinline__ int gap_boundary(int i, int go, int ge) {
    return i == 0 ? 0 : -(go + (i - 1) * ge);
}

__device__ __forceinline__ bool earlier(int i, int j, int bi, int bj) {
    return i < bi || (i == bi && j < bj);
}

template <int mode, bool want_tb>
__global__ void __launch_bounds__(256, want_tb ? 3 : 4)
fill(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ pair_row, const int* __restrict__ pair_col, const int npairs,
     const int* __restrict__ matrix, const int K, const int go, const int ge, const int neg,
     SCORE* __restrict__ bnd_h, SCORE* __restrict__ bnd_f,
     unsigned int* __restrict__ tb, const long long* __restrict__ warp_off,
     const long long* __restrict__ warp_boff, const int* __restrict__ warp_m,
     int* __restrict__ out_score, int* __restrict__ out_ei, int* __restrict__ out_ej)
{
    __shared__ int smat[32 * 32];
    // row PAD scores rows past the query's end: so low that no such cell can
    // become a best cell, which spares a bounds test per cell
    for (int k = threadIdx.x; k < K * K; k += blockDim.x)
        smat[(k / K) * 32 + (k % K)] = matrix[k];
    for (int k = threadIdx.x; k < 32; k += blockDim.x)
        smat[PAD * 32 + k] = neg / 2;
    __syncthreads();
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;

    const long long qoff = offsets[pair_row[p]];
    const int n = (int)(offsets[pair_row[p] + 1] - qoff);
    const long long toff = offsets[pair_col[p]];
    const int m = (int)(offsets[pair_col[p] + 1] - toff);
    const unsigned char* a = codes + qoff;
    const unsigned char* b = codes + toff;

    unsigned int* tbw = want_tb ? tb + warp_off[p / 32] + (p % 32) : tb;
    const int wm = warp_m[p / 32];
    bnd_h += warp_boff[p / 32] + (p % 32);
    bnd_f += warp_boff[p / 32] + (p % 32);
    for (int j = 0; j <= m; ++j) {
        bnd_h[j * 32] = (SCORE)(mode == GLOBAL ? gap_boundary(j, go, ge) : 0);
        bnd_f[j * 32] = (SCORE)neg;
    }
    int best = (mode == LOCAL) ? 0 : neg;
    int bi = 0, bj = 0;

    for (int i0 = 0; i0 < n; i0 += STRIPE) {
        int qa[STRIPE], hl[STRIPE], el[STRIPE];
#pragma unroll
        for (int r = 0; r < STRIPE; ++r) {
            qa[r] = (i0 + r < n ? a[i0 + r] : PAD) * 32;
            hl[r] = (mode == GLOBAL) ? gap_boundary(i0 + r + 1, go, ge) : 0;
            el[r] = neg;
        }
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
            int diag = diag0;
            diag0 = hup;
            unsigned int word = 0;
#pragma unroll
            for (int r = 0; r < STRIPE; ++r) {
                // Hopper DPX: max(a + b, c) and three-way max (with 0 when local)
                // in one instruction each; the row-to-row dependency chain is two
                // instructions long, which is what bounds a lone long pair.
                const int d = diag + smat[qa[r] + bc];
                const int e_ext = el[r] - ge;
                const int e = __viaddmax_s32(hl[r], -go, e_ext);
                const int f_ext = fup - ge;
                const int f = __viaddmax_s32(hup, -go, f_ext);
                const int h = (mode == LOCAL) ? __vimax3_s32_relu(d, e, f) : __vimax3_s32(d, e, f);
                unsigned int org = (h == d) ? 1u : ((h == e) ? 2u : 3u);
                if (mode == LOCAL && h == 0) org = 0u;
                const int e_open = hl[r] - go, f_open = hup - go;
                const int i = i0 + r + 1;
                if (mode == LOCAL) {
                    if (h >= best && (h > best || (h > 0 && earlier(i, j, bi, bj)))) {
                        best = h; bi = i; bj = j;
                    }
                } else if (mode == SEMIGLOBAL) {
                    if ((i == n || (j == m && i < n)) && h >= best
                        && (h > best || earlier(i, j, bi, bj))) {
                        best = h; bi = i; bj = j;
                    }
                } else if (i == n && j == m) {
                    best = h; bi = i; bj = j;
                }
                word |= (org | ((unsigned int)(e_ext > e_open) << 2) | ((unsigned int)(f_ext > f_open) << 3)) << (4 * r);
                diag = hl[r];
                hl[r] = h;
                el[r] = e;
                hup = h;
                fup = f;
            }
            bnd_h[bidx] = (SCORE)hup;
            bnd_f[bidx] = (SCORE)fup;
            if (want_tb)
                tbw[((long long)(i0 / STRIPE) * wm + (j - 1)) * 32] = word;
        }
    }
    out_score[p] = best;
    out_ei[p] = bi;
    out_ej[p] = bj;
}

#define OP_MATCH 0
#define OP_MISMATCH 1
#define OP_INS 2
#define OP_DEL 3

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

template <int mode>
__global__ void __launch_bounds__(256)
walk(
     const unsigned char* __restrict__ codes, const long long* __restrict__ offsets,
     const int* __restrict__ pair_row, const int* __restrict__ pair_col, const int npairs,
     const unsigned int* __restrict__ tb, const long long* __restrict__ warp_off,
     const int* __restrict__ warp_m,
     const int* __restrict__ ei, const int* __restrict__ ej,
     const long long* __restrict__ op_off, unsigned char* __restrict__ op_code,
     int* __restrict__ op_len,
     int* __restrict__ out_qb, int* __restrict__ out_tb, int* __restrict__ out_nops,
     int* __restrict__ out_ident, int* __restrict__ out_alen)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const unsigned char* a = codes + offsets[pair_row[p]];
    const unsigned char* b = codes + offsets[pair_col[p]];
    const unsigned int* tbw = tb + warp_off[p / 32] + (p % 32);
    const int wm = warp_m[p / 32];
    int i = ei[p], j = ej[p];
    int state = 0, ident = 0, length = 0;
    Runs runs{op_code, op_len, op_off[p], 255, 0};
    while (true) {
        if (i == 0 || j == 0) {
            if (mode == GLOBAL) {
                if (i > 0) { runs.emit(OP_INS, i); length += i; i = 0; }
                else if (j > 0) { runs.emit(OP_DEL, j); length += j; j = 0; }
            }
            break;
        }
        const int r = (i - 1) % STRIPE;
        const unsigned int t =
            (tbw[((long long)((i - 1) / STRIPE) * wm + (j - 1)) * 32] >> (4 * r)) & 15u;
        if (state == 0) {
            const unsigned int org = t & 3u;
            if (org == 0u) break;
            if (org == 1u) {
                const bool same = a[i - 1] == b[j - 1];
                ident += same;
                runs.emit(same ? OP_MATCH : OP_MISMATCH, 1);
                ++length; --i; --j;
            } else {
                state = (org == 2u) ? 1 : 2;
            }
        } else if (state == 1) {
            runs.emit(OP_DEL, 1); ++length;
            if (((t >> 2) & 1u) == 0u) state = 0;
            --j;
        } else {
            runs.emit(OP_INS, 1); ++length;
            if (((t >> 3) & 1u) == 0u) state = 0;
            --i;
        }
    }
    runs.flush();
    long long lo = op_off[p], hi = runs.pos - 1;
    while (lo < hi) {
        unsigned char c = op_code[lo]; op_code[lo] = op_code[hi]; op_code[hi] = c;
        int l = op_len[lo]; op_len[lo] = op_len[hi]; op_len[hi] = l;
        ++lo; --hi;
    }
    out_qb[p] = i;
    out_tb[p] = j;
    out_nops[p] = (int)(runs.pos - op_off[p]);
    out_ident[p] = ident;
    out_alen[p] = length;
}
