// SEC1 public keys (SEC 1 v2, section 2.3.4) from the record's own bytes to a checked affine
// point, on the device: `04 ‖ x ‖ y` (x, y < p and y^2 = x^3 + a x + b) or `02/03 ‖ x` (x < p,
// y decompressed with the parity the prefix names), so the host copies key bytes and never
// decodes them. Shared by the GPU module (kernels::raw_source) and the host build.
//
// Contract: sec1_decode reads exactly `len` bytes at `key` (any alignment, any length, len 0
// included) and returns CS_KEY_OK with P on the curve, or the first failing check's code. The
// checks and their order are chainsig_weierstrass's `affine_from_sec1` (the CPU path's), so a
// code names the same `KeyError` the CPU path reports for that record (crate::raw::KeyFault
// maps them): `00` alone is the point at infinity; length 33 or 65 with another prefix (or a
// prefix of the other length) is a prefix error; every other length a length error; then x
// (and y) below p; then the root (compressed) or the curve equation (uncompressed).
// Assumes: field.cuh (u256_ge_const_p, fe_eq, fe_sqr) and point.cuh (curve_rhs, cs_decompress).
// Timing: variable; keys are public.
#pragma once

#define CS_KEY_OK 0
#define CS_KEY_LENGTH 1     // KeyError::Length: not 33 or 65 bytes (nor `00`)
#define CS_KEY_PREFIX 2     // KeyError::Prefix: 33 or 65 bytes whose prefix does not fit them
#define CS_KEY_RANGE 3      // KeyError::CoordinateOutOfRange: x or y not below p
#define CS_KEY_NO_ROOT 4    // KeyError::NoSquareRoot: compressed x with no point
#define CS_KEY_OFF_CURVE 5  // KeyError::NotOnCurve: uncompressed (x, y) off the curve
#define CS_KEY_INFINITY 6   // KeyError::Infinity: the single byte 00

// 32 big-endian bytes as 8 little-endian limbs, unreduced.
CS_FN void fe_from_be32(fe& a, const unsigned char* b) {
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const unsigned char* w = b + 28 - 4 * j;
    a.v[j] = ((u32)w[0] << 24) | ((u32)w[1] << 16) | ((u32)w[2] << 8) | (u32)w[3];
  }
}

// y^2 = x^3 + a x + b for x, y already below p.
CS_FN bool cs_on_curve(const apt& P) {
  fe rhs, t;
  curve_rhs(rhs, P.x);
  fe_sqr(t, P.y);
  return fe_eq(t, rhs);
}

CS_FN u32 sec1_decode(apt& P, const unsigned char* key, u32 len) {
  const u32 prefix = len > 0 ? (u32)key[0] : 0xffffffffu;
  if (len == 1 && prefix == 0) return CS_KEY_INFINITY;
  const bool full = len == 65 && prefix == 4;
  const bool compressed = len == 33 && (prefix == 2 || prefix == 3);
  if (!full && !compressed) return (len == 33 || len == 65) ? CS_KEY_PREFIX : CS_KEY_LENGTH;
  fe_from_be32(P.x, key + 1);
  if (u256_ge_const_p(P.x)) return CS_KEY_RANGE;
  if (compressed) return cs_decompress(P.y, P.x, prefix & 1u) ? CS_KEY_OK : CS_KEY_NO_ROOT;
  fe_from_be32(P.y, key + 33);
  if (u256_ge_const_p(P.y)) return CS_KEY_RANGE;
  return cs_on_curve(P) ? CS_KEY_OK : CS_KEY_OFF_CURVE;
}
