// The scalar layer: all arithmetic modulo the group order n (the generated curve_n), and reading
// a scalar's bits for the multiplications.
//
// Representation: a scalar is an `fe` (eight little-endian 32-bit limbs) holding a plain integer;
// "mod n" results are fully reduced, in [0, n). Montgomery form (R = 2^256) appears only where
// named: sc_mont_mul returns a b R^-1 mod n, and warp_batch_inv<.., CS_MOD_N> returns x^-1 R.
// Bounds: scalar_add_mod_n, sc_mont_mul and sc_mul take operands below n; scalar_reduce_once any
// value below 2^256 (< 2n); scalar_in_range, scalar_is_high, fe_word and fe_bits any 256-bit value.
// The modulus-generic routines of field.cuh (sub_mod, half_mod, inv_euclid_mod with CS_MOD_N) are
// the rest of the arithmetic mod n, under their bounds there.
//
// Assumes: field.cuh; n odd with 2^255 < n < 2^256, CS_N0INV = -n^-1 mod 2^32, curve_n_r2 =
// R^2 mod n and curve_n_half = (n - 1) / 2 from the generated header (codegen.rs derives them).
// Nothing here needs n prime except the inversions, which need gcd(x, n) = 1. warp_batch_inv:
// every lane of the warp calls it together (CS_INV_LANES lanes: 32 on the GPU, 1 in the host
// builds, which include host_warp.h first so that its shuffles are declared).
// Timing: the kernels' scalars are public; the additions, the Montgomery products and the
// comparisons are branch-free, the inversion by Euclid is not.
#pragma once

CS_FN bool u256_ge_const_n(const fe& a) {
  fe n, t;
  CS_LOAD_CONST(n, curve_n);
  return u256_sub(t.v, a.v, n.v) == 0;
}

// Word wi of a (wi may be a run-time value: a select chain keeps a in registers).
CS_FN u32 fe_word(const fe& a, int wi) {
  u32 w = a.v[0];
#pragma unroll
  for (int q = 1; q < 8; q++) w = (wi == q) ? a.v[q] : w;
  return w;
}

CS_FN bool scalar_in_range(const fe& a) { return !fe_is_zero(a) && !u256_ge_const_n(a); }

// r = a + b mod n for a, b < n.
CS_FN void scalar_add_mod_n(fe& r, const fe& a, const fe& b) {
  fe n;
  CS_LOAD_CONST(n, curve_n);
  add_mod(r, a, b, n);
}

// a mod n for a < 2^256 < 2n.
CS_FN void scalar_reduce_once(fe& a) {
  fe n;
  CS_LOAD_CONST(n, curve_n);
  sub_once_if_ge(a, n);
}

// W bits of k from bit position `bit` on (bits above 255 read as zero).
CS_FN u32 fe_bits(const fe& k, int bit, int W) {
  const int wi = bit >> 5, sh = bit & 31;
  const u32 lo = fe_word(k, wi), hi = wi + 1 < 8 ? fe_word(k, wi + 1) : 0u;
  const u32 v = sh == 0 ? lo : (lo >> sh) | (hi << (32 - sh));
  return v & ((1u << W) - 1u);
}

// r = a b R^-1 mod n (R = 2^256) for a, b < n: word-serial Montgomery multiplication (CIOS), each
// round adding a_j b_i and then m n with m chosen to clear the lowest word. A verification needs
// 17 of them (warp_batch_inv's 15, u1 and u2), under 2% of its instructions beside the point
// arithmetic, so this portable form (64-bit products, which ptxas turns into wide multiply-adds)
// is enough; the field's products are the ones worth hand-made carry chains.
CS_FN void sc_mont_mul(fe& r, const fe& a, const fe& b) {
  fe n;
  CS_LOAD_CONST(n, curve_n);
  u32 t[10];
#pragma unroll
  for (int j = 0; j < 10; j++) t[j] = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    u64 c = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const u64 x = (u64)a.v[j] * b.v[i] + t[j] + c;
      t[j] = (u32)x;
      c = x >> 32;
    }
    u64 x = (u64)t[8] + c;
    t[8] = (u32)x;
    t[9] = (u32)(x >> 32);
    const u32 m = t[0] * CS_N0INV;
    x = (u64)m * n.v[0] + t[0];  // low word becomes zero
    c = x >> 32;
#pragma unroll
    for (int j = 1; j < 8; j++) {
      x = (u64)m * n.v[j] + t[j] + c;
      t[j - 1] = (u32)x;
      c = x >> 32;
    }
    x = (u64)t[8] + c;
    t[7] = (u32)x;
    t[8] = t[9] + (u32)(x >> 32);
  }
  // t < 2n: one conditional subtraction.
  fe lo, d;
#pragma unroll
  for (int j = 0; j < 8; j++) lo.v[j] = t[j];
  const u32 borrow = u256_sub(d.v, lo.v, n.v);
  fe_cmov(lo, d, t[8] != 0 || borrow == 0);
  fe_copy(r, lo);
}

// r = a b mod n for a, b < n: a Montgomery product, then one with R^2 mod n to undo its R^-1.
CS_FN void sc_mul(fe& r, const fe& a, const fe& b) {
  fe t, r2;
  sc_mont_mul(t, a, b);
  CS_LOAD_CONST(r2, curve_n_r2);
  sc_mont_mul(r, t, r2);
}

// s > (n - 1) / 2: the high half that low-s rules reject.
CS_FN bool scalar_is_high(const fe& s) {
  fe half, d;
  CS_LOAD_CONST(half, curve_n_half);
  return u256_sub(d.v, half.v, s.v) != 0;
}

// The lanes that share one inversion mod n: a warp on the GPU. The host builds verify one
// signature at a time (one lane); host_ecdsa.cpp's batch_inverse runs 32 emulated lanes.
#if defined(__CUDA_ARCH__)
#define CS_INV_LANES 32
#else
#define CS_INV_LANES 1
#endif

// r = lane src's a, across the LANES lanes (all of them take part).
template <int LANES>
CS_FN void fe_from_lane(fe& r, const fe& a, u32 src) {
#pragma unroll
  for (int j = 0; j < 8; j++) r.v[j] = LANES == 1 ? a.v[j] : __shfl_sync(0xffffffffu, a.v[j], src);
}

// A product in a warp inversion's domain: Montgomery products mod n (the ECDSA scalars), the
// field's own products mod p (the recovered key's Z).
template <int MOD>
CS_FN void inv_domain_mul(fe& r, const fe& a, const fe& b) {
  if (MOD == CS_MOD_N) sc_mont_mul(r, a, b);
  else fe_mul(r, a, b);
}

// w = x^-1 mod m for every lane's x, by one inversion for all LANES lanes (Montgomery's trick):
// the lanes' prefix and suffix products by log2(LANES) shuffle steps each, one Euclid on their
// product, then each lane's inverse as that inverse times the products of the others. For MOD =
// CS_MOD_N (m = n) w comes in Montgomery form, x^-1 R; for CS_MOD_P (m = p) as a field element. A
// lane with use = false takes part as x = 1 (its w is 1, or R). Every lane of the warp must call
// it together. Why: the binary Euclid's inner loops depend on the data, so 32 lanes inverting 32
// values diverge and the warp runs the union of their paths (measured on an H100 at about a
// quarter of an ECDSA verification); here the warp runs one Euclid on one value, without
// divergence, for 2 log2(LANES) + 2 products a lane (3 more mod n, into and out of Montgomery
// form).
template <int LANES, int MOD>
CS_FN void warp_batch_inv(fe& w, const fe& x_in, bool use) {
  const u32 lane = LANES == 1 ? 0 : threadIdx.x % LANES;
  fe r2, x, pre, suf, t, p;
  fe_set_word(x, 1);
  fe_cmov(x, x_in, use);
  if (MOD == CS_MOD_N) {
    CS_LOAD_CONST(r2, curve_n_r2);
    sc_mont_mul(pre, x, r2);  // x R
  } else {
    fe_copy(pre, x);
  }
  fe_copy(suf, pre);
#pragma unroll
  for (u32 d = 1; d < LANES; d *= 2) {  // pre = x_0 .. x_lane, suf = x_lane .. x_last
    fe_from_lane<LANES>(t, pre, lane >= d ? lane - d : lane);
    inv_domain_mul<MOD>(p, pre, t);
    fe_cmov(pre, p, lane >= d);
    fe_from_lane<LANES>(t, suf, lane + d < LANES ? lane + d : lane);
    inv_domain_mul<MOD>(p, suf, t);
    fe_cmov(suf, p, lane + d < LANES);
  }
  fe all;
  fe_from_lane<LANES>(all, pre, LANES - 1);  // the product of all x: nonzero, m is prime
  if (MOD == CS_MOD_N) {
    fe one;
    fe_set_word(one, 1);
    sc_mont_mul(t, all, one);  // out of Montgomery form
    inv_euclid_mod<CS_MOD_N>(all, t);  // the same value in every lane: no divergence
    sc_mont_mul(w, all, r2);
  } else {
    inv_euclid_mod<CS_MOD_P>(w, all);
  }
  fe_from_lane<LANES>(t, pre, lane > 0 ? lane - 1 : lane);
  inv_domain_mul<MOD>(p, w, t);
  fe_cmov(w, p, lane > 0);
  fe_from_lane<LANES>(t, suf, lane + 1 < LANES ? lane + 1 : lane);
  inv_domain_mul<MOD>(p, w, t);
  fe_cmov(w, p, lane + 1 < LANES);
}
