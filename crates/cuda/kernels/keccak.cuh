// Keccak-256 as Ethereum uses it, one thread per message: the Keccak-f[1600] permutation of
// FIPS 202 (section 3: theta, rho, pi, chi, iota over 24 rounds on 25 64-bit lanes), a rate of
// 1088 bits (136 bytes) and capacity 512, and the original Keccak padding pad10*1 with the first
// padding byte 0x01 (The Keccak Reference 3.0, section 1.1.2). FIPS 202's SHA3-256 differs only
// in that byte (0x06: two domain bits before pad10*1); Ethereum fixed its hash before FIPS 202 and
// kept the original, so keccak256("") = c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470.
//
// A message is read through a `ks_msg`: up to 16 bytes of prefix held in registers, a body in
// memory (global memory on the GPU), up to 16 bytes of suffix in registers. That is the shape of
// an Ethereum signing payload (type byte and a re-encoded list header, the transaction's fields as
// they arrived, for EIP-155 the chain id and two zeros), so no thread copies its payload anywhere.
// Blocks are gathered word by word with every state index fixed at compile time, so the state
// stays in registers on the GPU.
//
// Bounds: a body of up to 2^32 - 33 bytes (ethtx.cuh passes at most its record limit).
// Assumes: types.h. Shared by the GPU module and the host build (host_ethtx.cpp).
// Timing: variable with the message length; all inputs are public.
#pragma once

typedef unsigned char u8;

CS_FN u64 ks_rotl(u64 x, int n) { return (x << n) | (x >> (64 - n)); }

// The round constants of iota (FIPS 202, algorithm 5), by round.
CS_FN u64 ks_round_constant(int round) {
  switch (round) {
    case 0: return 0x0000000000000001ull;
    case 1: return 0x0000000000008082ull;
    case 2: return 0x800000000000808aull;
    case 3: return 0x8000000080008000ull;
    case 4: return 0x000000000000808bull;
    case 5: return 0x0000000080000001ull;
    case 6: return 0x8000000080008081ull;
    case 7: return 0x8000000000008009ull;
    case 8: return 0x000000000000008aull;
    case 9: return 0x0000000000000088ull;
    case 10: return 0x0000000080008009ull;
    case 11: return 0x000000008000000aull;
    case 12: return 0x000000008000808bull;
    case 13: return 0x800000000000008bull;
    case 14: return 0x8000000000008089ull;
    case 15: return 0x8000000000008003ull;
    case 16: return 0x8000000000008002ull;
    case 17: return 0x8000000000000080ull;
    case 18: return 0x000000000000800aull;
    case 19: return 0x800000008000000aull;
    case 20: return 0x8000000080008081ull;
    case 21: return 0x8000000000008080ull;
    case 22: return 0x0000000080000001ull;
    default: return 0x8000000080008008ull;
  }
}

// Keccak-f[1600] on a[x + 5 y] (lanes little-endian, as FIPS 202 section 3.1.2 orders the state).
CS_FN void ks_permute(u64 a[25]) {
#pragma unroll 1
  for (int round = 0; round < 24; round++) {
    // theta: each lane takes the parities of the two neighbouring columns.
    u64 c[5];
#pragma unroll
    for (int x = 0; x < 5; x++) c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
#pragma unroll
    for (int x = 0; x < 5; x++) {
      const u64 d = c[(x + 4) % 5] ^ ks_rotl(c[(x + 1) % 5], 1);
#pragma unroll
      for (int y = 0; y < 25; y += 5) a[y + x] ^= d;
    }
    // rho and pi together: lane (x, y) rotated by its offset moves to (y, 2x + 3y); following
    // the one cycle of pi from (1, 0) visits every lane but (0, 0), whose offset is 0.
    u64 t = a[1], u;
#define KS_RHO_PI(to, rot) \
  u = a[to];               \
  a[to] = ks_rotl(t, rot); \
  t = u;
    KS_RHO_PI(10, 1) KS_RHO_PI(7, 3) KS_RHO_PI(11, 6) KS_RHO_PI(17, 10) KS_RHO_PI(18, 15)
    KS_RHO_PI(3, 21) KS_RHO_PI(5, 28) KS_RHO_PI(16, 36) KS_RHO_PI(8, 45) KS_RHO_PI(21, 55)
    KS_RHO_PI(24, 2) KS_RHO_PI(4, 14) KS_RHO_PI(15, 27) KS_RHO_PI(23, 41) KS_RHO_PI(19, 56)
    KS_RHO_PI(13, 8) KS_RHO_PI(12, 25) KS_RHO_PI(2, 43) KS_RHO_PI(20, 62) KS_RHO_PI(14, 18)
    KS_RHO_PI(22, 39) KS_RHO_PI(9, 61) KS_RHO_PI(6, 20) KS_RHO_PI(1, 44)
#undef KS_RHO_PI
    // chi: along each row, a ^= ~b & c.
#pragma unroll
    for (int y = 0; y < 25; y += 5) {
      u64 row[5];
#pragma unroll
      for (int x = 0; x < 5; x++) row[x] = a[y + x];
#pragma unroll
      for (int x = 0; x < 5; x++) a[y + x] = row[x] ^ (~row[(x + 1) % 5] & row[(x + 2) % 5]);
    }
    // iota
    a[0] ^= ks_round_constant(round);
  }
}

// Bytes of the Keccak-256 rate (1600 - 2 * 256 bits).
#define KS_RATE 136

// A message in three parts: pre (pre_len <= 16 bytes, byte i in bits 8 (i mod 8) of pre[i / 8]),
// body (body_len bytes in memory) and suf (suf_len <= 16 bytes, packed as pre).
struct ks_msg {
  u64 pre[2];
  u32 pre_len;
  const u8* body;
  u32 body_len;
  u64 suf[2];
  u32 suf_len;
};

CS_FN u32 ks_packed_byte(const u64 w[2], u32 i) {
  return (u32)((i < 8 ? w[0] >> (8 * i) : w[1] >> (8 * (i - 8))) & 0xff);
}

// Appends byte b to a packed register string of length *len.
CS_FN void ks_pack(u64 w[2], u32* len, u32 b) {
  const u32 i = *len;
  if (i < 8)
    w[0] |= (u64)(b & 0xff) << (8 * i);
  else
    w[1] |= (u64)(b & 0xff) << (8 * (i - 8));
  *len = i + 1;
}

CS_FN u32 ks_msg_len(const ks_msg& m) { return m.pre_len + m.body_len + m.suf_len; }

// Byte i of the padded message: the message, then 0x01, zeros and a final 0x80 in the last block
// (one byte 0x81 when the padding is a single byte). `padded` is the padded length.
CS_FN u32 ks_padded_byte(const ks_msg& m, u32 i, u32 padded) {
  const u32 len = ks_msg_len(m);
  u32 b;
  if (i < m.pre_len)
    b = ks_packed_byte(m.pre, i);
  else if (i < m.pre_len + m.body_len)
    b = m.body[i - m.pre_len];
  else if (i < len)
    b = ks_packed_byte(m.suf, i - m.pre_len - m.body_len);
  else
    b = i == len ? 0x01 : 0;
  if (i == padded - 1) b |= 0x80;
  return b;
}

// Keccak-256 of the message: out gets the 32-byte hash.
CS_FN void ks_keccak256(const ks_msg& m, u8 out[32]) {
  u64 a[25];
#pragma unroll
  for (int k = 0; k < 25; k++) a[k] = 0;
  const u32 padded = (ks_msg_len(m) / KS_RATE + 1) * KS_RATE;
#pragma unroll 1
  for (u32 block = 0; block < padded; block += KS_RATE) {
#pragma unroll
    for (int k = 0; k < KS_RATE / 8; k++) {
      u64 word = 0;
#pragma unroll
      for (int j = 0; j < 8; j++) word |= (u64)ks_padded_byte(m, block + 8 * k + j, padded) << (8 * j);
      a[k] ^= word;
    }
    ks_permute(a);
  }
#pragma unroll
  for (int k = 0; k < 4; k++)
#pragma unroll
    for (int j = 0; j < 8; j++) out[8 * k + j] = (u8)(a[k] >> (8 * j));
}

// The Ethereum address of an uncompressed public key: the last 20 bytes of Keccak-256 of x || y
// (the key's 64 bytes without SEC 1's 0x04). x and y are 8 little-endian 32-bit words each; out
// gets the 20 bytes, big-endian as an address is written.
CS_FN void ks_eth_address(const u32 x[8], const u32 y[8], u8 out[20]) {
  u64 a[25];
#pragma unroll
  for (int k = 0; k < 25; k++) a[k] = 0;
  // Lane k holds message bytes 8k..8k+7 in little-endian order; the message is x then y, each
  // big-endian, so byte 4 i + j of x is byte 3 - j of word 7 - i.
#pragma unroll
  for (int k = 0; k < 8; k++) {
    const u32* v = k < 4 ? x : y;
    const int i = 2 * (k % 4);  // big-endian word pair 7 - i, 6 - i
    const u32 hi = v[7 - i], lo = v[6 - i];
    const u32 hi_le = (hi >> 24) | ((hi >> 8) & 0xff00) | ((hi << 8) & 0xff0000) | (hi << 24);
    const u32 lo_le = (lo >> 24) | ((lo >> 8) & 0xff00) | ((lo << 8) & 0xff0000) | (lo << 24);
    a[k] = (u64)hi_le | ((u64)lo_le << 32);
  }
  a[8] = 0x01;                       // the padding: 0x01 after the 64 bytes ...
  a[KS_RATE / 8 - 1] = 1ull << 63;   // ... and 0x80 closing the block
  ks_permute(a);
  // The hash's bytes 12..31: lane 1's upper half, then lanes 2 and 3.
#pragma unroll
  for (int j = 0; j < 20; j++) {
    const int byte = 12 + j;
    out[j] = (u8)(a[byte / 8] >> (8 * (byte % 8)));
  }
}
