// ECDSA verification of one signature by one thread, for any curve the generated header
// describes (P-256 here; SM2's curve would do as well): the checks on r and s, w = s^-1 mod n
// shared across the warp (warp_batch_inv), u1 = e w and u2 = r w mod n, then u1 G + u2 Q by the
// fast mode's two multiplications (G's fixed-base table, Q's signed window) and the comparison
// x(R) mod n == r without inverting Z. Shared by the GPU kernels and the host (CI) build.
#pragma once

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

// Whether r and s are in [1, n) (and, for LOW_S, s <= n/2).
template <int LOW_S>
CS_FN bool ecdsa_scalars_ok(const fe& r, const fe& s) {
  return scalar_in_range(r) && scalar_in_range(s) && !(LOW_S && scalar_is_high(s));
}

// The verification past the range checks, from w = s^-1 R mod n (warp_batch_inv).
CS_FN bool ecdsa_verify_with(const fe& e_in, const fe& r, const fe& w, const apt& Q,
                             const u32* gtab) {
  fe e, u1, u2;
  fe_copy(e, e_in);
  scalar_reduce_once(e);
  sc_mont_mul(u1, e, w);  // e s^-1: w's R cancels the product's R^-1
  sc_mont_mul(u2, r, w);  // nonzero: r, w in [1, n) and n prime
  jpt R, T;
  mul_window(T, u2, Q);
  mul_fixed<CS_GTAB_BITS>(R, u1, gtab);  // infinity for u1 = 0 (e = 0 mod n)
  pt_add_jac(R, T);
  fe zero;
  fe_set_word(zero, 0);
  return cs_x_matches(R, zero, r);  // x(R) is r or r + n
}

// The whole ECDSA verification of digest e (the hash's leftmost 256 bits, any value below 2^256),
// signature (r, s) and the validated public key Q. LOW_S rejects s > n/2. Every lane of the warp
// calls it together (the inversion is shared); `active` is false for a lane without a signature.
template <int LOW_S>
CS_FN bool cs_verify_ecdsa(const fe& e_in, const fe& r, const fe& s, const apt& Q,
                           const u32* gtab, bool active = true) {
  const bool ok = active && ecdsa_scalars_ok<LOW_S>(r, s);
  fe w;
  warp_batch_inv<CS_INV_LANES, CS_MOD_N>(w, s, ok);
  return ok && ecdsa_verify_with(e_in, r, w, Q, gtab);
}

// Public-key recovery (Ethereum's sender recovery): Q = r^-1 (s R - e G), where R is the point
// with x = r and the parity of y `id` names (ids 0 and 1; x = r + n, ids 2 and 3, is refused, as
// Ethereum does). False for r or s outside [1, n), s > n/2 (Ethereum since Homestead), an r that
// is no point's x, or Q at infinity. Both inversions are shared across the warp: r^-1 mod n as
// s^-1 is in verification, and the one that makes Q affine, Z^-1 mod p. Every lane of the warp
// calls this together and reaches both (`active` false for a lane without a request).
CS_FN bool cs_recover_ecdsa(apt& Q, const fe& e_in, const fe& r, const fe& s, u32 id,
                            const u32* gtab, bool active = true) {
  const bool ok = active && id <= 1 && ecdsa_scalars_ok<1>(r, s);
  fe w;
  warp_batch_inv<CS_INV_LANES, CS_MOD_N>(w, r, ok);
  apt R;
  fe_copy(R.x, r);
  const bool on_curve = ok && cs_decompress(R.y, r, id);
  jpt S;
  pt_set_inf(S);
  if (on_curve) {
    fe e, u1, u2;
    fe_copy(e, e_in);
    scalar_reduce_once(e);
    sc_mont_mul(u1, e, w);  // e / r
    if (!fe_is_zero(u1)) {  // u1 = -e / r
      fe n;
      CS_LOAD_CONST(n, curve_n);
      u256_sub(u1.v, n.v, u1.v);
    }
    sc_mont_mul(u2, s, w);  // s / r, nonzero: s, w in [1, n)
    jpt T;
    mul_window(T, u2, R);
    mul_fixed<CS_GTAB_BITS>(S, u1, gtab);
    pt_add_jac(S, T);
  }
  const bool found = on_curve && !fe_is_zero(S.Z);
  fe zi;
  warp_batch_inv<CS_INV_LANES, CS_MOD_P>(zi, S.Z, found);
  pt_affine_with(Q, S, zi);
  return found;
}
