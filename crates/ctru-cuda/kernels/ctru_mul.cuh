// Arithmetic of the CTRU-Prime batch products, shared by the GPU kernels (ctru_kernels.cuh) and the
// host build (host_shim.cpp) that CI runs against the Rust schoolbook reference.
//
// Every routine here computes one unit of work (one coefficient, one butterfly, one leaf, one matrix
// entry, one warp tile) so a kernel spreads the units over its threads and the host build loops over
// them in order; between the phases the kernel synchronises and the host loop has simply finished.
//
// Inputs reach these routines already centered by the Rust side (lib.rs, `prepare`):
//   product 0 (mod q):  shared a = h in (−q/2, q/2), batch b = r with |r| ≤ the small limit;
//   product 1 (mod q2): shared a = f with |f| ≤ the small limit, batch b = c in [−q2/2, q2/2).
// With those limits n·max|a|·max|b| < Q/2 < 2^31, so every linear coefficient is an exact int32.
#pragma once

// ---------------------------------------------------------------------------------------------
// Reduction of an exact folded coefficient.

// v mod m in [0, m) for a prime m (product 0) or v & (m − 1) for a power of two (product 1).
CTRU_FN int ctru_reduce(int prod, int v, int m) {
  if (prod == CTRU_MOD_Q2) return v & (m - 1);
  int r = v % m;  // truncates toward zero: r in (−m, m)
  return r + (m & (r >> 31));
}

// Folded coefficient k < n of the linear product d_0 … d_{2n−2}: x^n = x + 1 gives
// v_k = d_k + d_{n+k} (k < n − 1) + d_{n+k−1} (k ≥ 1).
CTRU_FN int ctru_fold(const int* d, int n, int k) {
  int v = d[k];
  if (k < n - 1) v += d[n + k];
  if (k >= 1) v += d[n + k - 1];
  return v;
}

// ---------------------------------------------------------------------------------------------
// Method A, schoolbook: linear coefficient d_k = Σ_{i+j=k} a_i b_j, exact in int32.

CTRU_FN int ctru_school_linear(const int* a, const int* b, int n, int k) {
  int lo = k - (n - 1);
  if (lo < 0) lo = 0;
  int hi = k < n - 1 ? k : n - 1;
  int acc = 0;
  for (int i = lo; i <= hi; i++) acc += a[i] * b[k - i];
  return acc;
}

// ---------------------------------------------------------------------------------------------
// Method A, incomplete NTT: the transform of chainsig_ctru::ntt, same tables, same value ranges.

CTRU_FN u32 ctru_csub(u32 x, u32 m) {
  u32 y = x - m;
  return y < x ? y : x;  // x − m when x ≥ m (no wrap), else x
}

// a·w mod Q in [0, 2Q) for any a < 2^32 (Shoup).
CTRU_FN u32 ctru_mul_shoup(u32 a, u32 w, u32 ws, u32 prime) {
  u32 quotient = (u32)(((u64)a * ws) >> 32);
  return a * w - quotient * prime;
}

// x·2^−32 mod Q in [0, 2Q) for x < Q·2^32 (Montgomery).
CTRU_FN u32 ctru_redc(u64 x, u32 prime, u32 neg_q_inv) {
  u32 m = (u32)x * neg_q_inv;
  return (u32)((x + (u64)m * prime) >> 32);
}

// A centered integer |v| < Q as its residue in [0, Q).
CTRU_FN u32 ctru_lift(int v, u32 prime) { return (u32)(v + (int)(prime & (u32)(v >> 31))); }

// One butterfly (unit idx < len / radix) of forward layer l.
CTRU_FN void ctru_ntt_fwd_unit(u32* s, const u32* tw, const ctru_ntt_params& p, int l, int idx) {
  const ctru_layer L = p.layer[l];
  const u32 q = p.prime, two_q = 2 * p.prime;
  if (L.radix == 2) {
    int sub = L.block_len >> 1;
    int blk = idx / sub, i = idx - blk * sub;
    u32* x = s + blk * L.block_len + i;
    const u32* t = tw + 2 * (L.fwd + blk);
    u32 u = x[0];
    u32 v = ctru_mul_shoup(x[sub], t[0], t[1], q);
    x[0] = ctru_csub(u + v, two_q);
    x[sub] = ctru_csub(u + two_q - v, two_q);
  } else {  // radix 3
    int sub = L.block_len / 3;
    int blk = idx / sub, i = idx - blk * sub;
    u32* x = s + blk * L.block_len + i;
    const u32* c = tw + 2 * (L.fwd + blk * 6);
    u32 a0 = x[0], a1 = x[sub], a2 = x[2 * sub];
    for (int j = 0; j < 3; j++) {
      u32 v = a0 + ctru_mul_shoup(a1, c[4 * j], c[4 * j + 1], q) +
              ctru_mul_shoup(a2, c[4 * j + 2], c[4 * j + 3], q);
      x[j * sub] = ctru_csub(ctru_csub(v, 2 * two_q), two_q);
    }
  }
}

// One butterfly (unit idx < len / radix) of inverse layer l (without the 1/radix factor).
CTRU_FN void ctru_ntt_inv_unit(u32* s, const u32* tw, const ctru_ntt_params& p, int l, int idx) {
  const ctru_layer L = p.layer[l];
  const u32 q = p.prime, two_q = 2 * p.prime;
  if (L.radix == 2) {
    int sub = L.block_len >> 1;
    int blk = idx / sub, i = idx - blk * sub;
    u32* x = s + blk * L.block_len + i;
    const u32* t = tw + 2 * (L.inv + blk);
    u32 c0 = x[0], c1 = x[sub];
    x[0] = ctru_csub(c0 + c1, two_q);
    x[sub] = ctru_mul_shoup(c0 + two_q - c1, t[0], t[1], q);
  } else {  // radix 3
    int sub = L.block_len / 3;
    int blk = idx / sub, i = idx - blk * sub;
    u32* x = s + blk * L.block_len + i;
    const u32* k = tw + 2 * (L.inv + blk * 6);
    u32 c0 = x[0], c1 = x[sub], c2 = x[2 * sub];
    x[0] = ctru_csub(ctru_csub(c0 + c1 + c2, 2 * two_q), two_q);
    for (int j = 1; j < 3; j++) {
      const u32* kk = k + 6 * (j - 1);
      u32 v = ctru_mul_shoup(c0, kk[0], kk[1], q) + ctru_mul_shoup(c1, kk[2], kk[3], q) +
              ctru_mul_shoup(c2, kk[4], kk[5], q);
      x[j * sub] = ctru_csub(ctru_csub(v, 2 * two_q), two_q);
    }
  }
}

// Leaf product in Z_Q[x]/(x^B − ζ): s ← s·t·2^−32 on leaf `leaf` (inputs and output in [0, 2Q)).
template <int B>
CTRU_FN void ctru_ntt_leaf_unit(u32* s, const u32* t, const u32* tw, const ctru_ntt_params& p,
                                int leaf) {
  u32* x = s + leaf * B;
  const u32* y = t + leaf * B;
  u64 low[B], high[B];
  u32 xv[B], yv[B];
CTRU_UNROLL
  for (int i = 0; i < B; i++) {
    low[i] = 0;
    high[i] = 0;
    xv[i] = x[i];
    yv[i] = y[i];
  }
CTRU_UNROLL
  for (int i = 0; i < B; i++) {
CTRU_UNROLL
    for (int j = 0; j < B; j++) {
      u64 prod = (u64)xv[i] * yv[j];
      if (i + j < B)
        low[i + j] += prod;
      else
        high[i + j - B] += prod;
    }
  }
  const u32 zeta = tw[p.zeta_off + leaf];
CTRU_UNROLL
  for (int k = 0; k < B; k++) {
    u64 folded = low[k] + (u64)ctru_redc(high[k], p.prime, p.neg_q_inv) * zeta;
    x[k] = ctru_redc(folded, p.prime, p.neg_q_inv);
  }
}

// Final scaling of linear coefficient k and its lift to the exact integer in (−Q/2, Q/2).
CTRU_FN int ctru_ntt_final_unit(const u32* s, const ctru_ntt_params& p, int k) {
  int r = (int)ctru_csub(ctru_mul_shoup(s[k], p.final_w, p.final_ws, p.prime), p.prime);
  int half = (int)(p.prime / 2);
  return r - (int)(p.prime & (u32)((half - r) >> 31));
}

// ---------------------------------------------------------------------------------------------
// Method B, Tensor Cores: out[:, b] = M · B[:, b] with the shared polynomial as the matrix M.
//
// Entry (i, j) of M is coefficient i of x^j·a after one fold: a_{i−j} (i ≥ j), a_0 + a_{n−1}
// included for i = j ≥ 1, a_{i−j+n−1} (1 ≤ i ≤ j) and a_{i−j+n} (i < j). At most two terms.
// Matrices are stored in 16 × 16 tiles of 256 contiguous bytes (every WMMA pointer 256-byte aligned,
// leading dimension 16): A tiles row-major, B tiles column-major.

CTRU_FN int ctru_tc_entry(const int* a, int n, int i, int j) {
  if (i >= n || j >= n) return 0;
  int v = 0;
  if (i >= j) v += a[i - j];
  if (i <= j && i >= 1) v += a[i - j + n - 1];
  if (i < j) v += a[i - j + n];
  return v;
}

CTRU_FN int ctru_tc_a_index(int i, int j, int n_pad) {
  return (((i >> 4) * (n_pad >> 4) + (j >> 4)) << 8) + ((i & 15) << 4) + (j & 15);
}

CTRU_FN int ctru_tc_b_index(int k, int col, int n_pad) {
  return (((col >> 4) * (n_pad >> 4) + (k >> 4)) << 8) + ((col & 15) << 4) + (k & 15);
}

// Matrix unit (i, j) < n_pad². Product 0: the entry reduced and centered mod q, split as
// lo + 128·hi with lo in [0, 127] and hi in [−31, 30], into a0 (lo) and a1 (hi). Product 1: the exact
// entry (|m| ≤ 2·max|f| ≤ 126) into a0; a1 is unused.
CTRU_FN void ctru_tc_matrix_unit(int prod, const int* a, int n, int n_pad, int q, int i, int j, i8* a0,
                                 i8* a1) {
  int m = ctru_tc_entry(a, n, i, j);
  int at = ctru_tc_a_index(i, j, n_pad);
  if (prod == CTRU_MOD_Q) {
    int half = (q - 1) / 2;
    if (m > half) m -= q;
    if (m < -half) m += q;
    int lo = m & 127;
    a0[at] = (i8)lo;
    a1[at] = (i8)((m - lo) >> 7);
  } else {
    a0[at] = (i8)m;
  }
}

// Batch unit (k, col) < n_pad × batch_pad, from the centered batch (count × n, row per instance).
// Product 0: r as one int8 digit into b0. Product 1: c in [−q2/2, q2/2) as d0 + 256·d1 with d0 the
// signed low byte and d1 in [−4, 4], into b0 and b1.
CTRU_FN void ctru_tc_batch_unit(int prod, const i16* batch, int n, int count, int n_pad, int k, int col,
                                i8* b0, i8* b1) {
  int c = (k < n && col < count) ? batch[col * n + k] : 0;
  int at = ctru_tc_b_index(k, col, n_pad);
  if (prod == CTRU_MOD_Q) {
    b0[at] = (i8)c;
  } else {
    int d0 = (int)(i8)(c & 0xFF);
    b0[at] = (i8)d0;
    b1[at] = (i8)((c - d0) >> 8);
  }
}

// Fragment operations: WMMA m16n16k16 int8 on the device, a plain 16 × 16 × 16 integer product on
// the host (the host build checks the tiling, digits and recombination; the MMA itself is the
// hardware's). The device side calls the compiler's WMMA builtins, the ones <mma.h>'s
// load_matrix_sync / mma_sync / store_matrix_sync wrap for signed char, because NVRTC without a CUDA
// toolkit installation has no <mma.h> to include. Fragments: 8 int8 of A and of B, 8 int32 of the
// accumulator per lane; layout codes 0 = row-major, 1 = column-major; mma layout 1 = A row, B col.
#if defined(CTRU_WMMA)
struct ctru_frag_a {
  int x[2];
};
struct ctru_frag_b {
  int x[2];
};
struct ctru_frag_c {
  int x[8];
};
#define CTRU_FRAG_C_LEN 8
__device__ __forceinline__ void ctru_frag_zero(ctru_frag_c& c) {
  for (int e = 0; e < 8; e++) c.x[e] = 0;
}
__device__ __forceinline__ void ctru_frag_load(ctru_frag_a& f, const i8* ptr) {
  __imma_m16n16k16_ld_a_s8(f.x, (const int*)ptr, 16, 0);
}
__device__ __forceinline__ void ctru_frag_load(ctru_frag_b& f, const i8* ptr) {
  __imma_m16n16k16_ld_b_s8(f.x, (const int*)ptr, 16, 1);
}
__device__ __forceinline__ void ctru_frag_mma(ctru_frag_c& c, const ctru_frag_a& a, const ctru_frag_b& b) {
  __imma_m16n16k16_mma_s8(c.x, a.x, b.x, c.x, 1, 0);
}
__device__ __forceinline__ void ctru_frag_store(int* ptr, const ctru_frag_c& c) {
  __imma_m16n16k16_st_c_i32(ptr, c.x, 16, 1);
}
#define CTRU_FRAG_ZERO(c) ctru_frag_zero(c)
#define CTRU_FRAG_LOAD(f, ptr) ctru_frag_load(f, ptr)
#define CTRU_FRAG_MMA(c, a, b) ctru_frag_mma(c, a, b)
#define CTRU_FRAG_STORE(ptr, c) ctru_frag_store(ptr, c)
#else
struct ctru_frag_a {
  i8 x[256];  // x[r·16 + k]
};
struct ctru_frag_b {
  i8 x[256];  // x[col·16 + k]
};
struct ctru_frag_c {
  int x[256];  // x[col·16 + r]
};
#define CTRU_FRAG_C_LEN 256
#define CTRU_FRAG_ZERO(c) ctru_host_zero(c)
#define CTRU_FRAG_LOAD(f, ptr) ctru_host_load(f, ptr)
#define CTRU_FRAG_MMA(c, a, b) ctru_host_mma(c, a, b)
#define CTRU_FRAG_STORE(ptr, c) ctru_host_store(ptr, c)
static inline void ctru_host_zero(ctru_frag_c& c) {
  for (int e = 0; e < 256; e++) c.x[e] = 0;
}
template <class F>
static inline void ctru_host_load(F& f, const i8* ptr) {
  for (int e = 0; e < 256; e++) f.x[e] = ptr[e];  // a tile is 256 contiguous bytes, ldm 16
}
static inline void ctru_host_mma(ctru_frag_c& c, const ctru_frag_a& a, const ctru_frag_b& b) {
  for (int col = 0; col < 16; col++)
    for (int r = 0; r < 16; r++) {
      int acc = c.x[col * 16 + r];
      for (int k = 0; k < 16; k++) acc += (int)a.x[r * 16 + k] * (int)b.x[col * 16 + k];
      c.x[col * 16 + r] = acc;
    }
}
static inline void ctru_host_store(int* ptr, const ctru_frag_c& c) {
  for (int e = 0; e < 256; e++) ptr[e] = c.x[e];
}
#endif

// Offset of 16 × 16 tile (2·t + i, k) of a tiled digit matrix with kt tiles along k: the i-th of
// the two row tiles (matrix: output rows; batch: instances) of warp tile t, at k step k.
CTRU_FN int ctru_tc_tile_offset(int t, int i, int kt, int k) { return ((2 * t + i) * kt + k) << 8; }

// The four fragment products of one k step into both accumulators, acc0[i][j] += x0[i]·y0[j] and
// acc1[i][j] += x1[i]·y1[j]. One routine for both products, which differ only in which side carries
// two digits: mod q passes (lo, hi, b, b), the matrix split in two; mod q2 passes (a, a, d0, d1),
// the batch split in two. Inlined, so the instructions are those of the two loops it replaces.
template <class FragA, class FragB>
CTRU_FN void ctru_tc_mma_2x2(ctru_frag_c (&acc0)[2][2], ctru_frag_c (&acc1)[2][2],
                             const FragA (&x0)[2], const FragA (&x1)[2], const FragB (&y0)[2],
                             const FragB (&y1)[2]) {
CTRU_UNROLL
  for (int i = 0; i < 2; i++)
CTRU_UNROLL
    for (int j = 0; j < 2; j++) {
      CTRU_FRAG_MMA(acc0[i][j], x0[i], y0[j]);
      CTRU_FRAG_MMA(acc1[i][j], x1[i], y1[j]);
    }
}

// One warp tile: output rows [32·tr, 32·tr + 32) × instances [32·tc, 32·tc + 32), both digits, then
// recombined (acc0 + scale·acc1, the same element layout in both fragments), reduced and written as
// out[instance·n + row]. `stage` holds 256 ints; lanes share the element loop (host: lane 0 of 1).
// Exactness: |acc0 + scale·acc1| ≤ n·(127 + 128·31)·max|r| < 2^31 (product 0 with |r| ≤ 9) and
// ≤ n·126·(128 + 256·4) (product 1): int32 never wraps.
template <int PROD>
CTRU_FN void ctru_tc_tile(const i8* a0, const i8* a1, const i8* b0, const i8* b1, i16* out, int n,
                          int n_pad, int count, int m, int tr, int tc, int* stage, int lane,
                          int lanes) {
  ctru_frag_c acc0[2][2], acc1[2][2];
CTRU_UNROLL
  for (int i = 0; i < 2; i++)
CTRU_UNROLL
    for (int j = 0; j < 2; j++) {
      CTRU_FRAG_ZERO(acc0[i][j]);
      CTRU_FRAG_ZERO(acc1[i][j]);
    }
  const int kt = n_pad >> 4;
  for (int k = 0; k < kt; k++) {
    if (PROD == CTRU_MOD_Q) {
      ctru_frag_a lo[2], hi[2];
      ctru_frag_b b[2];
CTRU_UNROLL
      for (int i = 0; i < 2; i++) {
        CTRU_FRAG_LOAD(lo[i], a0 + ctru_tc_tile_offset(tr, i, kt, k));
        CTRU_FRAG_LOAD(hi[i], a1 + ctru_tc_tile_offset(tr, i, kt, k));
        CTRU_FRAG_LOAD(b[i], b0 + ctru_tc_tile_offset(tc, i, kt, k));
      }
      ctru_tc_mma_2x2(acc0, acc1, lo, hi, b, b);
    } else {
      ctru_frag_a a[2];
      ctru_frag_b d0[2], d1[2];
CTRU_UNROLL
      for (int i = 0; i < 2; i++) {
        CTRU_FRAG_LOAD(a[i], a0 + ctru_tc_tile_offset(tr, i, kt, k));
        CTRU_FRAG_LOAD(d0[i], b0 + ctru_tc_tile_offset(tc, i, kt, k));
        CTRU_FRAG_LOAD(d1[i], b1 + ctru_tc_tile_offset(tc, i, kt, k));
      }
      ctru_tc_mma_2x2(acc0, acc1, a, a, d0, d1);
    }
  }
  const int scale = PROD == CTRU_MOD_Q ? 128 : 256;
CTRU_UNROLL
  for (int i = 0; i < 2; i++)
CTRU_UNROLL
    for (int j = 0; j < 2; j++) {
      for (int e = 0; e < CTRU_FRAG_C_LEN; e++) acc0[i][j].x[e] += scale * acc1[i][j].x[e];
      CTRU_SYNCWARP();
      CTRU_FRAG_STORE(stage, acc0[i][j]);
      CTRU_SYNCWARP();
      const int row0 = 32 * tr + 16 * i, col0 = 32 * tc + 16 * j;
      for (int e = lane; e < 256; e += lanes) {
        int row = row0 + (e & 15), col = col0 + (e >> 4);
        if (row < n && col < count) out[col * n + row] = (i16)ctru_reduce(PROD, stage[e], m);
      }
    }
}
