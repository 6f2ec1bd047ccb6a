// SM2's signer digest on the device (GB/T 32918.2-2016, section 5.5):
//   Z_A = SM3(ENTL ‖ ID ‖ a ‖ b ‖ xG ‖ yG ‖ xA ‖ yA),
// ENTL the identifier's length in bits as two big-endian bytes, the curve constants and the key's
// coordinates as 32 big-endian bytes each; so a record of a signer not seen before needs no host
// hashing. The host's reference is chainsig_core::hash::sm2_z_a.
//
// Contract: sm2_z_a reads `idlen` bytes at `id` (any alignment; idlen <= CS_ID_MAX, which ENTL's
// 16 bits hold: the caller refuses longer identifiers) and the affine key P (coordinates below
// p); it writes Z_A as 8 big-endian words, the form sm3_za_message takes. a is the curve's
// (p - 3, or 0 where CS_CURVE_A_ZERO), b, xG, yG come from the generated curve header.
// Assumes: sm3.cuh (sm3_compress), field.cuh (fe_sub, CS_LOAD_CONST) and point.cuh (apt).
// Timing: variable in idlen; identifiers and keys are public.
#pragma once

#define CS_ID_MAX 8191u

// Byte k (0 = most significant) of a field element held as little-endian limbs.
CS_FN u32 fe_be_byte(const fe& a, u32 k) { return (a.v[7 - (k >> 2)] >> (8 * (3 - (k & 3)))) & 0xffu; }

CS_FN void sm2_z_a(u32 za[8], const unsigned char* id, u32 idlen, const apt& P) {
  // The 192 bytes after the identifier: a, b, xG, yG, xA, yA.
  fe tail[6];
#if CS_CURVE_A_ZERO
  fe_set_word(tail[0], 0);
#else
  fe zero, three;
  fe_set_word(zero, 0);
  fe_set_word(three, 3);
  fe_sub(tail[0], zero, three);
#endif
  CS_LOAD_CONST(tail[1], curve_b);
  CS_LOAD_CONST(tail[2], curve_gx);
  CS_LOAD_CONST(tail[3], curve_gy);
  fe_copy(tail[4], P.x);
  fe_copy(tail[5], P.y);
  u32 v[8] = {0x7380166fu, 0x4914b2b9u, 0x172442d7u, 0xda8a0600u,
              0xa96f30bcu, 0x163138aau, 0xe38dee4du, 0xb0fb0e4eu};
  const u32 entl = idlen * 8;
  const u32 total = 2 + idlen + 192;       // bytes before padding
  const u32 blocks = (total + 8) / 64 + 1;  // room for 0x80 and the 8-byte length
  for (u32 blk = 0; blk < blocks; blk++) {
    u32 w[16];
    for (int k = 0; k < 16; k++) {
      u32 word = 0;
      for (int q = 0; q < 4; q++) {
        const u32 pos = blk * 64 + 4 * k + q;
        u32 byte;
        if (pos < 2)
          byte = (entl >> (8 * (1 - pos))) & 0xffu;
        else if (pos < 2 + idlen)
          byte = id[pos - 2];
        else if (pos < total) {
          const u32 t = pos - 2 - idlen;
          byte = fe_be_byte(tail[t >> 5], t & 31);
        } else
          byte = pos == total ? 0x80u : 0u;
        word = (word << 8) | byte;
      }
      w[k] = word;
    }
    if (blk == blocks - 1) {
      w[14] = 0;  // the bit length, below 2^32 here
      w[15] = total * 8;
    }
    sm3_compress(v, w);
  }
#pragma unroll
  for (int j = 0; j < 8; j++) za[j] = v[j];
}
