// ECDSA (SEC 1 4.1.4) verification and public-key recovery of one signature by one thread, for
// any curve the generated header describes (P-256 and secp256k1 here; SM2's curve would do as
// well): the checks on r and s, w = s^-1 mod n shared across the warp (warp_batch_inv, scalar.cuh),
// u1 = e w and u2 = r w mod n, then u1 G + u2 Q by the fast mode's two multiplications (G's
// fixed-base table, Q's signed window, ecmult.cuh) and the comparison x(R) mod n == r without
// inverting Z. Shared by the GPU kernels and the host (CI) build.
//
// Bounds: e any 256-bit value (the hash's leftmost 256 bits; reduced once mod n); r, s any
// 256-bit values (outside [1, n) they fail); Q affine and on the curve (the caller validates it).
// Assumes: every layer below (field, lanes, scalar, point, ecmult). Every lane of a warp calls
// these routines together (the inversions are shared); `active` marks lanes with a signature.
// Timing: variable; all inputs are public.
#pragma once

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
