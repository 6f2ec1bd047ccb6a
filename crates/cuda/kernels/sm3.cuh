// SM3 (GB/T 32905-2016) for SM2 digests on the GPU: e = SM3(Z_A ‖ M), one thread per record, so
// that hashing messages on the host does not cap a batch's throughput. Z_A depends only on the
// signer and arrives precomputed (the host caches it per key); the thread hashes Z_A and its
// message and writes e straight into the verification kernel's column-major input.
// Shared by the GPU module (compiled alone by NVRTC) and the host build that CI tests.
#pragma once

#if defined(__CUDA_ARCH__)
#define CS_ROTL(x, n) __funnelshift_l((x), (x), (n))
#else
#define CS_ROTL(x, n) ((u32)(((x) << ((n) & 31)) | ((x) >> ((32 - ((n) & 31)) & 31))))
#endif

CS_FN u32 sm3_p0(u32 x) { return x ^ CS_ROTL(x, 9) ^ CS_ROTL(x, 17); }
CS_FN u32 sm3_p1(u32 x) { return x ^ CS_ROTL(x, 15) ^ CS_ROTL(x, 23); }

// One compression: v = CF(v, block), the block's 16 big-endian words in w (overwritten: the message
// expansion runs in place over a 16-word window, so the 68 + 64 expanded words never exist at once).
CS_FN void sm3_compress(u32 v[8], u32 w[16]) {
  u32 a = v[0], b = v[1], c = v[2], d = v[3], e = v[4], f = v[5], g = v[6], h = v[7];
#pragma unroll
  for (int j = 0; j < 64; j++) {
    // W[j + 4] is needed now (for W'[j] = W[j] ^ W[j + 4]); expand it into the window.
    if (j + 4 >= 16) {
      const int k = j + 4;
      w[k & 15] = sm3_p1(w[(k - 16) & 15] ^ w[(k - 9) & 15] ^ CS_ROTL(w[(k - 3) & 15], 15)) ^
                  CS_ROTL(w[(k - 13) & 15], 7) ^ w[(k - 6) & 15];
    }
    const u32 wj = w[j & 15], wj4 = w[(j + 4) & 15];
    const u32 t = j < 16 ? 0x79cc4519u : 0x7a879d8au;
    const u32 a12 = CS_ROTL(a, 12);
    const u32 ss1 = CS_ROTL(a12 + e + CS_ROTL(t, j % 32), 7);
    const u32 ss2 = ss1 ^ a12;
    const u32 ff = j < 16 ? (a ^ b ^ c) : ((a & b) | (a & c) | (b & c));
    const u32 gg = j < 16 ? (e ^ f ^ g) : ((e & f) | (~e & g));
    const u32 tt1 = ff + d + ss2 + (wj ^ wj4);
    const u32 tt2 = gg + h + ss1 + wj;
    d = c;
    c = CS_ROTL(b, 9);
    b = a;
    a = tt1;
    h = g;
    g = CS_ROTL(f, 19);
    f = e;
    e = sm3_p0(tt2);
  }
  v[0] ^= a; v[1] ^= b; v[2] ^= c; v[3] ^= d;
  v[4] ^= e; v[5] ^= f; v[6] ^= g; v[7] ^= h;
}

// e = SM3(za ‖ msg[0, len)) as a 256-bit integer in 8 little-endian limbs (limb 0 least
// significant, the verification kernel's operand form); za as 8 big-endian words. The padded
// stream (za, message, 0x80, zeros, 64-bit bit length) is formed word by word as it is consumed.
CS_FN void sm3_za_message(u32 e[8], const u32 za[8], const unsigned char* msg, u32 len) {
  u32 v[8] = {0x7380166fu, 0x4914b2b9u, 0x172442d7u, 0xda8a0600u,
              0xa96f30bcu, 0x163138aau, 0xe38dee4du, 0xb0fb0e4eu};
  const u64 total = 32ull + len;                // bytes before padding
  const u64 blocks = (total + 8) / 64 + 1;      // room for 0x80 and the 8-byte length
  for (u64 blk = 0; blk < blocks; blk++) {
    u32 w[16];
#pragma unroll
    for (int k = 0; k < 16; k++) {
      if (blk == 0 && k < 8) {
        w[k] = za[k];
        continue;
      }
      const u64 p = blk * 64 + 4 * (u64)k;
      u32 word = 0;
#pragma unroll
      for (int q = 0; q < 4; q++) {
        const u64 pos = p + q;
        const u32 byte = pos < total ? (u32)msg[pos - 32] : (pos == total ? 0x80u : 0u);
        word = (word << 8) | byte;
      }
      w[k] = word;
    }
    if (blk == blocks - 1) {
      const u64 bits = total * 8;
      w[14] = (u32)(bits >> 32);
      w[15] = (u32)bits;
    }
    sm3_compress(v, w);
  }
#pragma unroll
  for (int j = 0; j < 8; j++) e[j] = v[7 - j];
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// Item i of a chunk: Z_A in za_cols (8 big-endian words, column-major with `stride`), its message
// at bytes[offsets[i], offsets[i + 1]); e goes to rows 0..7 of the verification input (operand e
// comes first in every column-major layout), overwriting whatever was staged there.
extern "C" __global__ void cs_sm3_e(const u32* __restrict__ za_cols,
                                    const u32* __restrict__ offsets,
                                    const unsigned char* __restrict__ bytes, u32 stride, u32 count,
                                    u32* __restrict__ e_cols) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  u32 za[8], e[8];
#pragma unroll
  for (int j = 0; j < 8; j++) za[j] = __ldg(za_cols + (size_t)j * stride + i);
  const u32 o0 = __ldg(offsets + i), o1 = __ldg(offsets + i + 1);
  sm3_za_message(e, za, bytes + o0, o1 - o0);
#pragma unroll
  for (int j = 0; j < 8; j++) e_cols[(size_t)j * stride + i] = e[j];
}
#endif
