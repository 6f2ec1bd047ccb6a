// Kernel entry points: one thread per signature (CS_LANES > 1: a pair or quad of threads, see
// lanes.cuh), verdicts gathered per block as bitmap words. The layers below (field.cuh to
// ecdsa.cuh) come before this file in the assembled source.
// The host appends one CS_INSTANTIATE line per configuration it needs (see src/kernel.rs).
#pragma once

// The signature a thread works on; both lanes of a pair share it.
__device__ __forceinline__ u32 cs_item() {
  return (blockIdx.x * blockDim.x + threadIdx.x) / CS_LANES;
}

// Operand a of signature i from the column-major input: rows `row` to `row + 7`, a warp reading
// consecutive words of each.
__device__ __forceinline__ void cs_load_column(fe& a, const u32* __restrict__ in, u32 stride,
                                               u32 row, u32 i) {
#pragma unroll
  for (int j = 0; j < 8; j++) a.v[j] = __ldg(in + (size_t)(row + j) * stride + i);
}

// The parity of signature i's compressed key, from the bit row `row`.
__device__ __forceinline__ u32 cs_load_parity(const u32* __restrict__ in, u32 stride, u32 row,
                                              u32 i) {
  return (__ldg(in + (size_t)row * stride + (i >> 5)) >> (i & 31)) & 1u;
}

// One vote per signature from a warp's ballot: the bits of lanes 0, CS_LANES, 2 CS_LANES, ...
// packed into the low 32 / CS_LANES bits.
__device__ __forceinline__ u32 cs_first_lane_bits(u32 w) {
  if (CS_LANES == 1) return w;
  if (CS_LANES == 4) {
    w &= 0x11111111u;
    w = (w | (w >> 3)) & 0x03030303u;
    w = (w | (w >> 6)) & 0x000f000fu;
    return (w | (w >> 12)) & 0x000000ffu;
  }
  w &= 0x55555555u;
  w = (w | (w >> 1)) & 0x33333333u;
  w = (w | (w >> 2)) & 0x0f0f0f0fu;
  w = (w | (w >> 4)) & 0x00ff00ffu;
  return (w | (w >> 8)) & 0x0000ffffu;
}

// Stage 3: the block's verdicts gathered by warp ballots in shared memory and written as 32-bit
// halves of the 64-bit bitmap words (every thread of the block calls it, in or out of range;
// little-endian, so half k of the words is 32-bit word k). A warp votes for 32 / CS_LANES
// signatures; the votes of the first `voters` threads count (a multiple of 32 * CS_LANES: the
// whole block, or the half that holds the verdicts in a split kernel).
__device__ __forceinline__ void cs_write_verdicts(bool ok, unsigned long long* __restrict__ out,
                                                  u32 voters) {
  __shared__ u32 votes[32];
  u32 ballot = __ballot_sync(0xffffffffu, ok);
  ballot = cs_first_lane_bits(ballot);
  if ((threadIdx.x & 31) == 0) votes[threadIdx.x >> 5] = ballot;
  __syncthreads();
  const u32 bits_per_warp = 32 / CS_LANES;
  const u32 words = voters / (32 * CS_LANES);
  if (threadIdx.x < words) {
    u32 w = 0;
    for (u32 k = 0; k < CS_LANES; k++)
      w |= votes[CS_LANES * threadIdx.x + k] << (k * bits_per_warp);
    reinterpret_cast<u32*>(out)[blockIdx.x * words + threadIdx.x] = w;
  }
}

template <int MODE, int INV, int COMPRESS, int ROWMAJOR>
__device__ __forceinline__ void cs_verify_entry(const u32* __restrict__ in, u32 stride, u32 count,
                                                const u32* __restrict__ gtab,
                                                unsigned long long* __restrict__ out) {
  const u32 i = cs_item();
  bool ok = false;
  if (i < count) {
    sig_in s;
    fe* ops[5] = {&s.e, &s.r, &s.s, &s.px, &s.py};
    const int nops = COMPRESS ? 4 : 5;
    if (ROWMAJOR) {
      const u32 width = nops * 8 + COMPRESS;
      const u32* row = in + (size_t)i * width;
#pragma unroll
      for (int k = 0; k < nops; k++)
#pragma unroll
        for (int j = 0; j < 8; j++) ops[k]->v[j] = __ldg(row + k * 8 + j);
      s.parity = COMPRESS ? __ldg(row + 32) & 1u : 0u;
    } else {
#pragma unroll
      for (int k = 0; k < nops; k++) cs_load_column(*ops[k], in, stride, k * 8, i);
      s.parity = COMPRESS ? cs_load_parity(in, stride, 32, i) : 0u;
    }
    ok = cs_verify<MODE, INV, COMPRESS>(s, gtab);
  }
  cs_write_verdicts(ok, out, blockDim.x);
}

#define CS_INSTANTIATE(name, M, I, C, L)                                                   \
  extern "C" __global__ void name(const u32* in, u32 stride, u32 count, const u32* gtab,   \
                                  unsigned long long* out) {                               \
    cs_verify_entry<M, I, C, L>(in, stride, count, gtab, out);                             \
  }

// ECDSA (kernels/ecdsa.cuh) over the column-major rows e, r, s, px, py of full keys, the
// layout of chainsig_core::Batch; one thread per signature.
template <int LOW_S>
__device__ __forceinline__ void cs_verify_ecdsa_entry(const u32* __restrict__ in, u32 stride,
                                                      u32 count, const u32* __restrict__ gtab,
                                                      unsigned long long* __restrict__ out) {
  // Every lane calls the verification, past the batch's end too: the warp shares s^-1.
  const u32 i = cs_item();
  const bool active = i < count;
  fe e, r, s;
  apt Q;
  const u32 at = active ? i : 0;
  cs_load_column(e, in, stride, 0, at);
  cs_load_column(r, in, stride, 8, at);
  cs_load_column(s, in, stride, 16, at);
  cs_load_column(Q.x, in, stride, 24, at);
  cs_load_column(Q.y, in, stride, 32, at);
  const bool ok = cs_verify_ecdsa<LOW_S>(e, r, s, Q, gtab, active);
  cs_write_verdicts(ok, out, blockDim.x);
}

#define CS_INSTANTIATE_ECDSA(name, LOW_S)                                                  \
  extern "C" __global__ void name(const u32* in, u32 stride, u32 count, const u32* gtab,   \
                                  unsigned long long* out) {                               \
    cs_verify_ecdsa_entry<LOW_S>(in, stride, count, gtab, out);                            \
  }

// Recovery (kernels/ecdsa.cuh): column-major rows e, r, s (8 words each), then one row of
// recovery ids; each recovered key goes to `keys` as 16 rows (x, then y) of `stride` words, and
// whether there is one to the verdict bitmap.
#define CS_RECOVER_ROWS 25

__device__ __forceinline__ void cs_recover_entry(const u32* __restrict__ in, u32 stride, u32 count,
                                                 const u32* __restrict__ gtab,
                                                 unsigned long long* __restrict__ out,
                                                 u32* __restrict__ keys) {
  // Every lane calls the recovery, past the batch's end too: the warp shares r^-1.
  const u32 i = cs_item();
  const bool active = i < count;
  const u32 at = active ? i : 0;
  fe e, r, s;
  apt Q;
  cs_load_column(e, in, stride, 0, at);
  cs_load_column(r, in, stride, 8, at);
  cs_load_column(s, in, stride, 16, at);
  const u32 id = __ldg(in + (size_t)24 * stride + at);
  const bool ok = cs_recover_ecdsa(Q, e, r, s, id, gtab, active);
  if (ok) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
      keys[(size_t)j * stride + i] = Q.x.v[j];
      keys[(size_t)(8 + j) * stride + i] = Q.y.v[j];
    }
  }
  cs_write_verdicts(ok, out, blockDim.x);
}

#define CS_INSTANTIATE_RECOVER(name)                                                       \
  extern "C" __global__ void name(const u32* in, u32 stride, u32 count, const u32* gtab,   \
                                  unsigned long long* out, u32* keys) {                    \
    cs_recover_entry(in, stride, count, gtab, out, keys);                                  \
  }

// Known signers: column-major rows e, r, s (8 words each), then the signer's index into ktabs,
// which holds one fixed-base table (CS_KTABLE_WORDS words) per signer.
#define CS_SIGNED_ROWS 25

__device__ __forceinline__ void cs_verify_signed_entry(const u32* __restrict__ in, u32 stride,
                                                       u32 count, const u32* __restrict__ gtab,
                                                       const u32* __restrict__ ktabs,
                                                       unsigned long long* __restrict__ out) {
  const u32 i = cs_item();
  bool ok = false;
  if (i < count) {
    fe e, r, s;
    cs_load_column(e, in, stride, 0, i);
    cs_load_column(r, in, stride, 8, i);
    cs_load_column(s, in, stride, 16, i);
    const u32 signer = __ldg(in + (size_t)24 * stride + i);
    ok = cs_verify_signed(e, r, s, gtab, ktabs + (size_t)signer * CS_KTABLE_WORDS);
  }
  cs_write_verdicts(ok, out, blockDim.x);
}

// Only fast-mode modules carry the known-signer kernel (src/kernel.rs).
#define CS_INSTANTIATE_SIGNED(name)                                                            \
  extern "C" __global__ void name(const u32* in, u32 stride, u32 count, const u32* gtab,       \
                                  const u32* ktabs, unsigned long long* out) {                 \
    cs_verify_signed_entry(in, stride, count, gtab, ktabs, out);                               \
  }

// Fast mode with the fixed-base half on lane pairs of its own (a lane-pair module only): the
// first half of the block walks t*P, the second half forms s*G from G's table for the same
// signatures and hands it over in shared memory, where the first half adds it and compares. The
// table half finishes long before the window, so a signature no longer waits on its 32 table
// additions. For batches that leave most schedulers idle; blocks of a multiple of 64 * CS_LANES
// threads.
#define CS_SPLIT_MAX_ITEMS 256  // 1024 threads: two halves of 256 lane pairs

template <int COMPRESS>
__device__ __forceinline__ void cs_verify_split_entry(const u32* __restrict__ in, u32 stride,
                                                      u32 count, const u32* __restrict__ gtab,
                                                      unsigned long long* __restrict__ out) {
  __shared__ jpt s_times_g[CS_SPLIT_MAX_ITEMS];
  const u32 half = blockDim.x / 2;
  const bool table_half = threadIdx.x >= half;
  const u32 local = (table_half ? threadIdx.x - half : threadIdx.x) / CS_LANES;
  const u32 i = blockIdx.x * (half / CS_LANES) + local;
  fe r, s, t;
  jpt tp;
  bool run = false;
  if (i < count) {
    cs_load_column(r, in, stride, 8, i);
    cs_load_column(s, in, stride, 16, i);
    run = cs_scalars(t, r, s);
    if (run && table_half) {
      jpt sg;
      mul_fixed<CS_GTAB_BITS>(sg, s, gtab);
      if (threadIdx.x % CS_LANES == 0) s_times_g[local] = sg;
    } else if (run) {
      apt P;
      cs_load_column(P.x, in, stride, 24, i);
      if (COMPRESS)
        run = cs_decompress(P.y, P.x, cs_load_parity(in, stride, 32, i));
      else
        cs_load_column(P.y, in, stride, 32, i);
      if (run) mul_window(tp, t, P);
    }
  }
  __syncthreads();
  bool ok = false;
  if (run && !table_half) {
    jpt R = s_times_g[local];
    pt_add_jac(R, tp);
    fe e;
    cs_load_column(e, in, stride, 0, i);
    ok = cs_x_matches(R, e, r);
  }
  cs_write_verdicts(ok, out, half);
}

// Fast-mode split kernels are instantiated only in lane-pair modules (src/kernel.rs).
#define CS_INSTANTIATE_SPLIT(name, C)                                                      \
  extern "C" __global__ void name(const u32* in, u32 stride, u32 count, const u32* gtab,   \
                                  unsigned long long* out) {                               \
    cs_verify_split_entry<C>(in, stride, count, gtab, out);                                \
  }

// Field arithmetic self-test: for operands a_i, b_i (8 words each, row-major), out_i holds the wide
// products a·b and a² (16 words each), then a·b and a² mod p (8 words each): 48 words per item.
// The backend runs it at open against the host build, so a miscompiled product never verifies.
extern "C" __global__ void cs_field_check(const u32* a, const u32* b, u32 count, u32* out) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  fe x, y, r;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    x.v[j] = a[(size_t)i * 8 + j];
    y.v[j] = b[(size_t)i * 8 + j];
  }
  u32* o = out + (size_t)i * 48;
  u32 w[16];
  u256_mul_wide(w, x, y);
#pragma unroll
  for (int j = 0; j < 16; j++) o[j] = w[j];
  u256_sqr_wide(w, x);
#pragma unroll
  for (int j = 0; j < 16; j++) o[16 + j] = w[j];
  fe_mul(r, x, y);
#pragma unroll
  for (int j = 0; j < 8; j++) o[32 + j] = r.v[j];
  fe_sqr(r, x);
#pragma unroll
  for (int j = 0; j < 8; j++) o[40 + j] = r.v[j];
}
