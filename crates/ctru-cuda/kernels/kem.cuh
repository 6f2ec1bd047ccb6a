// The non-product steps of CTRU-Prime encapsulation and decapsulation (spec §4, §5, §6.3, §8), exactly
// as crates/ctru/src/kem.rs and encode.rs compute them, one unit of work per routine (one coefficient,
// one byte, one item) so the GPU kernels (ctru_kem_kernels.cuh) spread them over threads and the host
// build (host_shim.cpp) loops over them; CI compares the host build with chainsig_ctru
// (tests/ctru_cuda/host_kem.rs).
//
// Hand-written because nothing else computes these steps on a GPU; the hashing is keccak.cuh.
// No branch or memory index depends on secret data (messages, keys, decrypted values): selections are
// masks, the division by q is a multiply-shift, and the E8 decoder is branch-free like the CPU one.
#pragma once

// Bit t of a little-endian bit stream.
CTRU_FN int ctru_bit(const u8* bytes, int t) { return (bytes[t >> 3] >> (t & 7)) & 1; }

// All ones when a < b (|a|, |b| < 2^30).
CTRU_FN int ctru_lt_mask(int a, int b) { return (a - b) >> 31; }
CTRU_FN int ctru_select(int mask, int yes, int no) { return (yes & mask) | (no & ~mask); }

// Sample(ρ), coefficient k: η bits counted positive minus the next η bits, at stream position 2ηk.
CTRU_FN int ctru_sample_coef(const ctru_kem_params& p, const u8* rho, int k) {
  const int start = 2 * p.eta * k;
  int v = 0;
  for (int j = 0; j < p.eta; j++) v += ctru_bit(rho, start + j) - ctru_bit(rho, start + p.eta + j);
  return v;
}

// UnpackCT, coefficient i in [0, q2): log2 q2 bits from stream position i·log2 q2 (padding ignored).
CTRU_FN int ctru_ct_coef(const ctru_kem_params& p, const u8* ct, int i) {
  const int t = i * p.log2_q2;
  const int at = t >> 3;
  u32 w = ct[at];
  if (at + 1 < p.ct_bytes) w |= (u32)ct[at + 1] << 8;
  if (at + 2 < p.ct_bytes) w |= (u32)ct[at + 2] << 16;
  return (int)((w >> (t & 7)) & (u32)(p.q2 - 1));
}

// The [8,4,4] codeword of a nibble without a table lookup (spec §5.1).
CTRU_FN u32 ctru_codeword(u32 nibble) {
  const u32 b0 = 0u - (nibble & 1), b1 = 0u - ((nibble >> 1) & 1);
  const u32 b2 = 0u - ((nibble >> 2) & 1), b3 = 0u - ((nibble >> 3) & 1);
  return ((b0 & 0x55) ^ (b1 & 0x0f) ^ (b2 & 0x3c) ^ (b3 & 0xf0)) & 0xff;
}

// Compressed coefficient i of the ciphertext, with the message bit added (spec §5.2); σ in [0, q).
CTRU_FN int ctru_compress_coef(const ctru_kem_params& p, int sigma, const u8* msg, int i) {
  const u32 x = (u32)(p.q2 * sigma + (p.q - 1) / 2);
  const int rounded = (int)(((u64)x * p.q_magic) >> 40);
  int b = 0;
  if (i < 16 * p.msg_bytes) {  // public position, not a secret
    const int t = i >> 3;
    const u32 nibble = (msg[t >> 1] >> (4 * (t & 1))) & 0x0f;
    b = (int)((ctru_codeword(nibble) >> (i & 7)) & 1);
  }
  return (rounded + (p.q2 / 2) * b) & (p.q2 - 1);
}

// PackCT of the re-encryption, byte j: the coefficients whose bits fall into bits 8j … 8j+7 of the
// stream (at most two for log2 q2 ≥ 8), zero padding after coefficient n − 1.
CTRU_FN u8 ctru_ct_byte(const ctru_kem_params& p, const i16* sigma, const u8* msg, int j) {
  const int w = p.log2_q2;
  const int first = (8 * j) / w, last = (8 * j + 7) / w;
  u32 acc = 0;
  for (int i = first; i <= last; i++) {
    if (i >= p.n) break;  // public position
    const u32 c = (u32)ctru_compress_coef(p, sigma[i], msg, i);
    const int shift = i * w - 8 * j;
    acc |= shift >= 0 ? c << shift : c >> -shift;
  }
  return (u8)acc;
}

// The E8 decoder of one block of 8 values in [0, q2), with the exact tie rules of spec §5.4;
// a transcription of chainsig_ctru::encode::e8_decode_block.
CTRU_FN u32 ctru_e8_block(int q2, const i16* v) {
  const int half = q2 / 2;
  int alpha[8], beta[8];
CTRU_UNROLL
  for (int j = 0; j < 8; j++) {
    const int x = v[j];
    const int d = ctru_select(ctru_lt_mask(half, x), q2 - x, x);
    alpha[j] = d * d;
    beta[j] = (x - half) * (x - half);
  }
  int total[2], flags[2][4];
CTRU_UNROLL
  for (int coset = 0; coset < 2; coset++) {
    int gaps[4];
    int parity = 0;
    total[coset] = 0;
CTRU_UNROLL
    for (int i = 0; i < 4; i++) {
      const int e = 2 * i, o = 2 * i + 1;
      const int primary = coset == 0 ? alpha[e] + alpha[o] : beta[e] + alpha[o];
      const int alternative = coset == 0 ? beta[e] + beta[o] : alpha[e] + beta[o];
      const int take_alt = ctru_lt_mask(alternative, primary);
      flags[coset][i] = take_alt & 1;
      parity ^= take_alt & 1;
      total[coset] += ctru_select(take_alt, alternative, primary);
      const int diff = alternative - primary;
      const int sign = diff >> 31;
      gaps[i] = (diff ^ sign) - sign;
    }
    int best = gaps[0], best_index = 0;
CTRU_UNROLL
    for (int i = 1; i < 4; i++) {
      const int better = ctru_lt_mask(gaps[i], best);
      best = ctru_select(better, gaps[i], best);
      best_index = ctru_select(better, i, best_index);
    }
    const int odd = -parity;
CTRU_UNROLL
    for (int i = 0; i < 4; i++) {
      const int chosen = ~(((i - best_index) | (best_index - i)) >> 31);
      flags[coset][i] ^= chosen & odd & 1;
    }
    total[coset] += best & odd;
  }
  const int coset = ctru_lt_mask(total[1], total[0]);
  int u[4];
CTRU_UNROLL
  for (int i = 0; i < 4; i++) u[i] = ctru_select(coset, flags[1][i], flags[0][i]);
  return (u32)((coset & 1) + 2 * u[0] + 4 * (u[0] ^ u[1]) + 8 * u[3]);
}

// Message byte j decoded from w = c·f mod q2 (n values in [0, q2)): blocks 2j (low nibble), 2j + 1.
CTRU_FN u8 ctru_decode_byte(const ctru_kem_params& p, const i16* w, int j) {
  return (u8)(ctru_e8_block(p.q2, w + 16 * j) | (ctru_e8_block(p.q2, w + 16 * j + 8) << 4));
}

// Encaps, one item: m = SHAKE256(b, MSG) from the 32-byte seed b.
CTRU_FN void ctru_message_item(const ctru_kem_params& p, const u8* seed, u8* msg) {
  ctru_shake256(seed, CTRU_SEED_BYTES, msg, p.msg_bytes);
}

// One item: G = SHA3-512(pk[0..33) ‖ m); K = G[0..32) into key, ρ = SHAKE256(G[32..64), C) into rho.
CTRU_FN void ctru_derive_item(const ctru_kem_params& p, const u8* prefix, const u8* msg, u8* key,
                              u8* rho) {
  u8 g[64];
  ctru_sponge k;
  ctru_sponge_init(k, CTRU_RATE_SHA3_512);
  ctru_sponge_absorb(k, prefix, CTRU_PREFIX_BYTES);
  ctru_sponge_absorb(k, msg, p.msg_bytes);
  ctru_sponge_finish(k, 0x06);
  ctru_sponge_squeeze(k, g, 64);
  for (int i = 0; i < 32; i++) key[i] = g[i];
  ctru_shake256(g + 32, 32, rho, p.coin_bytes);
  ctru_sponge_wipe(k);
  volatile u8* gv = g;
  for (int i = 0; i < 64; i++) gv[i] = 0;
}

// Decaps, one item: compare ct with its re-encryption ct2 over all bytes (OR of XORs), compute
// K̄ = SHA3-512(pk[0..33) ‖ z ‖ ct)[0..32) every time, and select the whole key: K when equal, K̄
// otherwise (our deliberate difference from the reference, which takes only bit 0 of K̄ per byte).
// `pz` is pk[0..33) ‖ z.
CTRU_FN void ctru_finish_item(const ctru_kem_params& p, const u8* pz, const u8* ct, const u8* ct2,
                              const u8* key, u8* ss) {
  u32 diff = 0;
  for (int i = 0; i < p.ct_bytes; i++) diff |= (u32)(ct[i] ^ ct2[i]);
  const u32 accept = (diff - 1) >> 8 & 0xff;  // 0xff when diff = 0, else 0 (diff < 256)
  u8 kbar[64];
  ctru_sponge k;
  ctru_sponge_init(k, CTRU_RATE_SHA3_512);
  ctru_sponge_absorb(k, pz, CTRU_PREFIX_BYTES + CTRU_SEED_BYTES);
  ctru_sponge_absorb(k, ct, p.ct_bytes);
  ctru_sponge_finish(k, 0x06);
  ctru_sponge_squeeze(k, kbar, 64);
  for (int i = 0; i < 32; i++) ss[i] = (u8)((key[i] & accept) | (kbar[i] & ~accept));
  ctru_sponge_wipe(k);
  volatile u8* kv = kbar;
  for (int i = 0; i < 64; i++) kv[i] = 0;
}
