// Keccak-f[1600], SHA3-512 and SHAKE256 (FIPS 202) for the CTRU-Prime batch KEM, written once for both
// the GPU (NVRTC, no standard headers) and the host build (host_shim.cpp), which CI checks against
// RustCrypto's sha3 crate (tests/ctru_cuda/host_kem.rs).
//
// Hand-written because NVRTC programs cannot link a library: there is no device SHA-3 to call. One
// thread hashes one item: the permutation works on 25 lanes that the compiler keeps in registers
// (every index below is a constant), the sponge's byte position is the only dynamic index.
//
// Lanes are little-endian: byte i of the state is byte (i mod 8) of lane i / 8.
#pragma once

CTRU_FN u64 ctru_rotl64(u64 x, int n) { return (x << n) | (x >> (64 - n)); }

// Keccak-f[1600] round constants.
#define CTRU_KECCAK_RC_LIST \
  0x0000000000000001ULL,\
  0x0000000000008082ULL,\
  0x800000000000808aULL,\
  0x8000000080008000ULL,\
  0x000000000000808bULL,\
  0x0000000080000001ULL,\
  0x8000000080008081ULL,\
  0x8000000000008009ULL,\
  0x000000000000008aULL,\
  0x0000000000000088ULL,\
  0x0000000080008009ULL,\
  0x000000008000000aULL,\
  0x000000008000808bULL,\
  0x800000000000008bULL,\
  0x8000000000008089ULL,\
  0x8000000000008003ULL,\
  0x8000000000008002ULL,\
  0x8000000000000080ULL,\
  0x000000000000800aULL,\
  0x800000008000000aULL,\
  0x8000000080008081ULL,\
  0x8000000000008080ULL,\
  0x0000000080000001ULL,\
  0x8000000080008008ULL

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__constant__ u64 ctru_keccak_rc[24] = {CTRU_KECCAK_RC_LIST};
#else
static const u64 ctru_keccak_rc[24] = {CTRU_KECCAK_RC_LIST};
#endif

// One round on the lanes a[x + 5y]: θ, ρ and π (into b), χ, ι. Generated from the FIPS 202 definitions
// (offsets and constants computed, not typed), then checked against RustCrypto.
CTRU_FN void ctru_keccak_round(u64* a, u64 rc) {
  u64 c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20];
  u64 c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
  u64 c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22];
  u64 c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
  u64 c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
  u64 d0 = c4 ^ ctru_rotl64(c1, 1);
  u64 d1 = c0 ^ ctru_rotl64(c2, 1);
  u64 d2 = c1 ^ ctru_rotl64(c3, 1);
  u64 d3 = c2 ^ ctru_rotl64(c4, 1);
  u64 d4 = c3 ^ ctru_rotl64(c0, 1);
  a[0] ^= d0;
  a[1] ^= d1;
  a[2] ^= d2;
  a[3] ^= d3;
  a[4] ^= d4;
  a[5] ^= d0;
  a[6] ^= d1;
  a[7] ^= d2;
  a[8] ^= d3;
  a[9] ^= d4;
  a[10] ^= d0;
  a[11] ^= d1;
  a[12] ^= d2;
  a[13] ^= d3;
  a[14] ^= d4;
  a[15] ^= d0;
  a[16] ^= d1;
  a[17] ^= d2;
  a[18] ^= d3;
  a[19] ^= d4;
  a[20] ^= d0;
  a[21] ^= d1;
  a[22] ^= d2;
  a[23] ^= d3;
  a[24] ^= d4;
  u64 b0 = a[0];
  u64 b16 = ctru_rotl64(a[5], 36);
  u64 b7 = ctru_rotl64(a[10], 3);
  u64 b23 = ctru_rotl64(a[15], 41);
  u64 b14 = ctru_rotl64(a[20], 18);
  u64 b10 = ctru_rotl64(a[1], 1);
  u64 b1 = ctru_rotl64(a[6], 44);
  u64 b17 = ctru_rotl64(a[11], 10);
  u64 b8 = ctru_rotl64(a[16], 45);
  u64 b24 = ctru_rotl64(a[21], 2);
  u64 b20 = ctru_rotl64(a[2], 62);
  u64 b11 = ctru_rotl64(a[7], 6);
  u64 b2 = ctru_rotl64(a[12], 43);
  u64 b18 = ctru_rotl64(a[17], 15);
  u64 b9 = ctru_rotl64(a[22], 61);
  u64 b5 = ctru_rotl64(a[3], 28);
  u64 b21 = ctru_rotl64(a[8], 55);
  u64 b12 = ctru_rotl64(a[13], 25);
  u64 b3 = ctru_rotl64(a[18], 21);
  u64 b19 = ctru_rotl64(a[23], 56);
  u64 b15 = ctru_rotl64(a[4], 27);
  u64 b6 = ctru_rotl64(a[9], 20);
  u64 b22 = ctru_rotl64(a[14], 39);
  u64 b13 = ctru_rotl64(a[19], 8);
  u64 b4 = ctru_rotl64(a[24], 14);
  a[0] = b0 ^ (~b1 & b2);
  a[1] = b1 ^ (~b2 & b3);
  a[2] = b2 ^ (~b3 & b4);
  a[3] = b3 ^ (~b4 & b0);
  a[4] = b4 ^ (~b0 & b1);
  a[5] = b5 ^ (~b6 & b7);
  a[6] = b6 ^ (~b7 & b8);
  a[7] = b7 ^ (~b8 & b9);
  a[8] = b8 ^ (~b9 & b5);
  a[9] = b9 ^ (~b5 & b6);
  a[10] = b10 ^ (~b11 & b12);
  a[11] = b11 ^ (~b12 & b13);
  a[12] = b12 ^ (~b13 & b14);
  a[13] = b13 ^ (~b14 & b10);
  a[14] = b14 ^ (~b10 & b11);
  a[15] = b15 ^ (~b16 & b17);
  a[16] = b16 ^ (~b17 & b18);
  a[17] = b17 ^ (~b18 & b19);
  a[18] = b18 ^ (~b19 & b15);
  a[19] = b19 ^ (~b15 & b16);
  a[20] = b20 ^ (~b21 & b22);
  a[21] = b21 ^ (~b22 & b23);
  a[22] = b22 ^ (~b23 & b24);
  a[23] = b23 ^ (~b24 & b20);
  a[24] = b24 ^ (~b20 & b21);
  a[0] ^= rc;
}

// The permutation on a state held in memory: lanes copied into registers, 24 rounds, copied back.
CTRU_FN void ctru_keccak_f(u64* state) {
  u64 a[25];
CTRU_UNROLL
  for (int i = 0; i < 25; i++) a[i] = state[i];
  for (int round = 0; round < 24; round++) ctru_keccak_round(a, ctru_keccak_rc[round]);
CTRU_UNROLL
  for (int i = 0; i < 25; i++) state[i] = a[i];
}

// Rates in bytes: SHA3-512 absorbs 72 bytes per permutation, SHAKE256 136.
#define CTRU_RATE_SHA3_512 72
#define CTRU_RATE_SHAKE256 136

struct ctru_sponge {
  u64 s[25];
  int pos;   // next byte of the rate to absorb into or squeeze from
  int rate;  // bytes
};

CTRU_FN void ctru_sponge_init(ctru_sponge& k, int rate) {
CTRU_UNROLL
  for (int i = 0; i < 25; i++) k.s[i] = 0;
  k.pos = 0;
  k.rate = rate;
}

CTRU_FN void ctru_sponge_xor_byte(ctru_sponge& k, int at, u8 b) {
  k.s[at >> 3] ^= (u64)b << (8 * (at & 7));
}

// Absorbs len bytes (any length, across as many blocks as needed).
CTRU_FN void ctru_sponge_absorb(ctru_sponge& k, const u8* in, int len) {
  int i = 0;
  while (i < len) {
    // Whole lanes when aligned, bytes otherwise.
    if ((k.pos & 7) == 0 && len - i >= 8 && k.rate - k.pos >= 8) {
      u64 w = 0;
CTRU_UNROLL
      for (int b = 0; b < 8; b++) w |= (u64)in[i + b] << (8 * b);
      k.s[k.pos >> 3] ^= w;
      k.pos += 8;
      i += 8;
    } else {
      ctru_sponge_xor_byte(k, k.pos, in[i]);
      k.pos++;
      i++;
    }
    if (k.pos == k.rate) {
      ctru_keccak_f(k.s);
      k.pos = 0;
    }
  }
}

// Pads (domain byte, then 0x80 in the last rate byte; both in one byte when they meet) and permutes;
// the sponge is then ready to squeeze from position 0.
CTRU_FN void ctru_sponge_finish(ctru_sponge& k, u8 domain) {
  ctru_sponge_xor_byte(k, k.pos, domain);
  ctru_sponge_xor_byte(k, k.rate - 1, 0x80);
  ctru_keccak_f(k.s);
  k.pos = 0;
}

// Squeezes len bytes (any length), permuting whenever the rate is used up.
CTRU_FN void ctru_sponge_squeeze(ctru_sponge& k, u8* out, int len) {
  for (int i = 0; i < len; i++) {
    if (k.pos == k.rate) {
      ctru_keccak_f(k.s);
      k.pos = 0;
    }
    out[i] = (u8)(k.s[k.pos >> 3] >> (8 * (k.pos & 7)));
    k.pos++;
  }
}

// Overwrites the state (secret-derived in the KEM) before the sponge goes out of scope.
CTRU_FN void ctru_sponge_wipe(ctru_sponge& k) {
  volatile u64* s = k.s;
  for (int i = 0; i < 25; i++) s[i] = 0;
}

CTRU_FN void ctru_sha3_512(const u8* in, int len, u8* out64) {
  ctru_sponge k;
  ctru_sponge_init(k, CTRU_RATE_SHA3_512);
  ctru_sponge_absorb(k, in, len);
  ctru_sponge_finish(k, 0x06);
  ctru_sponge_squeeze(k, out64, 64);
  ctru_sponge_wipe(k);
}

CTRU_FN void ctru_shake256(const u8* in, int len, u8* out, int out_len) {
  ctru_sponge k;
  ctru_sponge_init(k, CTRU_RATE_SHAKE256);
  ctru_sponge_absorb(k, in, len);
  ctru_sponge_finish(k, 0x1F);
  ctru_sponge_squeeze(k, out, out_len);
  ctru_sponge_wipe(k);
}
