// SM2 verification (GB/T 32918.2) of one signature by one thread (or one lane group): range
// checks, t = r + s mod n, the double-scalar product s G + t P in one of three modes, and the
// final comparison (e + x1) mod n == r; and the known signer's verification, both products from
// fixed-base tables. Shared by the GPU kernels and the host (CI) build.
//
// Bounds: e any 256-bit value (reduced once mod n); r and s any 256-bit values (outside [1, n)
// they fail); the key (px, py) affine and on the curve (the caller checks it), or x and a parity
// bit with COMPRESS, decompressed here (false when no point has that x).
// Assumes: every layer below (field, lanes, scalar, point, ecmult). Timing: variable; all inputs
// of a verification are public.
#pragma once

#define CS_MODE_PAPER 0     // window-1 simultaneous (Shamir) with {inf, G, P, G+P}, co-Z additions
#define CS_MODE_SEPARATE 1  // s*G from the fixed-base table, t*P by window-1 double-and-add
#define CS_MODE_FAST 2      // s*G from the fixed-base table, t*P by a signed 4-bit window, no inversion

struct sig_in {
  fe e, r, s, px, py;
  u32 parity;  // parity of y when the key arrives compressed
};

// The checks before any point arithmetic: r and s in [1, n), then t = r + s mod n, nonzero.
CS_FN bool cs_scalars(fe& t, const fe& r, const fe& s) {
  if (!scalar_in_range(r) || !scalar_in_range(s)) return false;
  scalar_add_mod_n(t, r, s);
  return !fe_is_zero(t);
}

// The whole verification. gtab is unused in paper mode.
template <int MODE, int INV, int COMPRESS>
CS_FN bool cs_verify(const sig_in& in, const u32* gtab) {
  fe t;
  if (!cs_scalars(t, in.r, in.s)) return false;
  apt P;
  fe_copy(P.x, in.px);
  if (COMPRESS) {
    if (!cs_decompress(P.y, in.px, in.parity)) return false;
  } else {
    fe_copy(P.y, in.py);
  }
  jpt R;
  if (MODE == CS_MODE_PAPER)
    mul_paper_sim<INV>(R, in.s, t, P);
  else if (MODE == CS_MODE_SEPARATE)
    mul_separate(R, in.s, t, P, gtab);
  else
    mul_fast(R, in.s, t, P, gtab);
  if (MODE == CS_MODE_FAST) return cs_x_matches(R, in.e, in.r);
  if (fe_is_zero(R.Z)) return false;  // s*G + t*P at infinity
  fe e;
  fe_copy(e, in.e);
  scalar_reduce_once(e);
  apt A;
  pt_to_affine<INV>(A, R);
  scalar_reduce_once(A.x);
  fe sum;
  scalar_add_mod_n(sum, e, A.x);
  return fe_eq(sum, in.r);
}

// A known signer's verification: s*G and t*P both from fixed-base tables (ktab is the signer's),
// 49 affine additions and no doubling at all, then the comparison of the fast mode.
CS_FN bool cs_verify_signed(const fe& e, const fe& r, const fe& s, const u32* gtab,
                            const u32* ktab) {
  fe t;
  if (!cs_scalars(t, r, s)) return false;
  jpt R, Q;
  mul_fixed<CS_GTAB_BITS>(R, s, gtab);
  mul_fixed<CS_KTAB_BITS>(Q, t, ktab);
  pt_add_jac(R, Q);
  return cs_x_matches(R, e, r);
}
