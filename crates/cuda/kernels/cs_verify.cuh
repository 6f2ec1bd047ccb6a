// SM2-style verification of one signature by one thread: range checks, t = r + s mod n, the
// double-scalar product s*G + t*P in one of three modes, and the final comparison
// (e + x1) mod n == r. Shared by the GPU kernels and the host (CI) build.
#pragma once

#define CS_MODE_PAPER 0     // window-1 simultaneous (Shamir) with {inf, G, P, G+P}, co-Z additions
#define CS_MODE_SEPARATE 1  // s*G from the fixed-base table, t*P by window-1 double-and-add
#define CS_MODE_FAST 2      // s*G from the fixed-base table, t*P by a signed 4-bit window, no inversion

#define CS_INV_EUCLID 0
#define CS_INV_FERMAT 1

// Fixed-base tables in signed windows of W bits: entry (j, m) = m * 2^(W j) * B for j < the
// number of windows and 1 <= m <= 2^(W-1), affine, 16 words, at index j * 2^(W-1) + m - 1.
// G's table, which every signature's s*G reads, has 13-bit windows: 20 additions from 81920
// entries (5 MB, which stays in the H200's L2); a known signer's key table has 9-bit windows, 29
// additions from 7424 entries (464 KB per signer). 256 must not be a multiple of W, so the top
// window holds its bits plus the carry of the signed recoding.
#define CS_GTAB_BITS 13
#define CS_KTAB_BITS 9
#define CS_TAB_WINDOWS(W) ((256 + (W) - 1) / (W))
#define CS_TAB_ENTRIES(W) (CS_TAB_WINDOWS(W) << ((W) - 1))
#define CS_GTABLE_WORDS (CS_TAB_ENTRIES(CS_GTAB_BITS) * 16)
#define CS_KTABLE_WORDS (CS_TAB_ENTRIES(CS_KTAB_BITS) * 16)

struct sig_in {
  fe e, r, s, px, py;
  u32 parity;  // parity of y when the key arrives compressed
};

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

// y of the point with abscissa x and the given parity; false when x >= p or no such point.
CS_FN bool cs_decompress(fe& y, const fe& x, u32 parity) {
  if (u256_ge_const_p(x)) return false;
  fe rhs, t;
  curve_rhs(rhs, x);
  fe_pow_sqrt(y, rhs);  // p = 3 mod 4
  fe_sqr(t, y);
  if (!fe_eq(t, rhs)) return false;
  fe_neg_if(y, (y.v[0] & 1) != (parity & 1));
  return true;
}

template <int INV>
CS_FN void fe_inv(fe& r, const fe& a) {
  if (INV == CS_INV_FERMAT)
    fe_inv_fermat(r, a);
  else
    fe_inv_euclid(r, a);
}

CS_FN void table_load(apt& q, const u32* tab, u32 idx) {
#if defined(__CUDA_ARCH__)
  const uint4* p = reinterpret_cast<const uint4*>(tab) + idx * 4;
  uint4 a = __ldg(p), b = __ldg(p + 1), c = __ldg(p + 2), d = __ldg(p + 3);
  q.x.v[0] = a.x; q.x.v[1] = a.y; q.x.v[2] = a.z; q.x.v[3] = a.w;
  q.x.v[4] = b.x; q.x.v[5] = b.y; q.x.v[6] = b.z; q.x.v[7] = b.w;
  q.y.v[0] = c.x; q.y.v[1] = c.y; q.y.v[2] = c.z; q.y.v[3] = c.w;
  q.y.v[4] = d.x; q.y.v[5] = d.y; q.y.v[6] = d.z; q.y.v[7] = d.w;
#else
  for (int i = 0; i < 8; i++) {
    q.x.v[i] = tab[idx * 16 + i];
    q.y.v[i] = tab[idx * 16 + 8 + i];
  }
#endif
}

// W bits of k from bit position `bit` on (bits above 255 read as zero).
CS_FN u32 fe_bits(const fe& k, int bit, int W) {
  const int wi = bit >> 5, sh = bit & 31;
  const u32 lo = fe_word(k, wi), hi = wi + 1 < 8 ? fe_word(k, wi + 1) : 0u;
  const u32 v = sh == 0 ? lo : (lo >> sh) | (hi << (32 - sh));
  return v & ((1u << W) - 1u);
}

// R = k * B for 0 <= k < 2^256 from B's table in signed W-bit windows: one affine addition per
// window, no doubling. A window's value above 2^(W-1) becomes the negative digit value - 2^W
// (the entry with its y negated) and carries one into the next window.
template <int W>
CS_FN void mul_fixed(jpt& R, const fe& k, const u32* tab) {
  static_assert(256 % W != 0, "the top window needs room for the recoding's carry");
  constexpr u32 HALF = 1u << (W - 1);
  pt_set_inf(R);
  u32 carry = 0;
#pragma unroll 1
  for (int j = 0; j < CS_TAB_WINDOWS(W); j++) {
    const u32 v = fe_bits(k, j * W, W) + carry;
    carry = v > HALF ? 1u : 0u;
    const u32 mag = carry ? (2u * HALF - v) : v;
    apt q;
    table_load(q, tab, (u32)j * HALF + (mag ? mag - 1u : 0u));
    fe_neg_if(q.y, carry != 0);
    pt_add_affine(R, q, mag == 0);
  }
}

CS_FN void curve_g(apt& g) {
  CS_LOAD_CONST(g.x, curve_gx);
  CS_LOAD_CONST(g.y, curve_gy);
}

// Affine form of a finite Jacobian point, given zi = 1/Z: (X zi^2, Y zi^3).
CS_FN void pt_affine_with(apt& a, const jpt& P, const fe& zi) {
  fe zi2;
  fe_sqr(zi2, zi);
  fe_mul(a.x, P.X, zi2);
  fe_mul(zi2, zi2, zi);
  fe_mul(a.y, P.Y, zi2);
}

// Affine form of a finite Jacobian point.
template <int INV>
CS_FN void pt_to_affine(apt& a, const jpt& P) {
  fe zi;
  fe_inv<INV>(zi, P.Z);
  pt_affine_with(a, P, zi);
}

// Paper: window-1 simultaneous multiplication with the table {inf, G, P, G+P}.
template <int INV>
CS_FN void mul_paper_sim(jpt& R, const fe& s, const fe& t, const apt& P) {
  apt G, GP;
  curve_g(G);
  jpt gp;
  pt_from_affine(gp, G);
  pt_add_affine(gp, P, false);
  bool gp_inf = fe_is_zero(gp.Z);  // P = -G
  if (!gp_inf) pt_to_affine<INV>(GP, gp);
  else { fe_copy(GP.x, G.x); fe_copy(GP.y, G.y); }
  pt_set_inf(R);
  for (int wi = 7; wi >= 0; wi--) {
    u32 sw = fe_word(s, wi), tw = fe_word(t, wi);
    for (int bit = 31; bit >= 0; bit--) {
      pt_dbl(R);
      u32 idx = ((sw >> bit) & 1u) | (((tw >> bit) & 1u) << 1);
      apt q;  // branch-free selection by index arithmetic
      fe_copy(q.x, G.x);
      fe_copy(q.y, G.y);
      fe_cmov(q.x, P.x, idx == 2);
      fe_cmov(q.y, P.y, idx == 2);
      fe_cmov(q.x, GP.x, idx == 3);
      fe_cmov(q.y, GP.y, idx == 3);
      pt_add_affine(R, q, idx == 0 || (idx == 3 && gp_inf));
    }
  }
}

// Separate: s*G by the fixed-base table, t*P by window-1 double-and-add, then one addition.
CS_FN void mul_separate(jpt& R, const fe& s, const fe& t, const apt& P, const u32* gtab) {
  jpt tp;
  pt_set_inf(tp);
  for (int wi = 7; wi >= 0; wi--) {
    u32 tw = fe_word(t, wi);
    for (int bit = 31; bit >= 0; bit--) {
      pt_dbl(tp);
      pt_add_affine(tp, P, ((tw >> bit) & 1u) == 0);
    }
  }
  mul_fixed<CS_GTAB_BITS>(R, s, gtab);
  pt_add_jac(R, tp);
}

// The signed window's width for t*P (CS_WINDOW_BITS unless defined: 5 in the lane kernels, 4 in
// those of one thread a signature): odd digits in [-(2^W - 1), 2^W - 1], a table of the 2^(W-1) odd
// multiples P, 3P, ..., and ceil(255 / W) additions. Five bits take 51 additions and 255 doublings
// from a table of 16 (179 products), four take 64 and 256 from a table of 8 (91): about 100
// products fewer a verification. Measured on an H100 (2026-12-06): the lane kernels gain 3-4% at
// 1024-4096 signatures, but the one-thread kernels at full occupancy lose 45% (2^20: 96 against
// 52 ms): a 1 KB table a thread (1.7 KB of stack) and a longer loop body; which of the two costs
// it was not measured (BENCHMARKS.md, 2026-12-06).
#ifndef CS_WINDOW_BITS
#if CS_LANES > 1
#define CS_WINDOW_BITS 5
#else
#define CS_WINDOW_BITS 4
#endif
#endif
#define CS_WINDOW_ENTRIES (1 << (CS_WINDOW_BITS - 1))
#define CS_WINDOW_DIGITS ((255 + CS_WINDOW_BITS - 1) / CS_WINDOW_BITS)

// The window's digits: k = (t or n - t, whichever is odd) >> 1; returns whether t was even.
CS_FN bool window_digits(fe& k, const fe& t) {
  fe n;
  CS_LOAD_CONST(n, curve_n);
  const bool even = (t.v[0] & 1u) == 0;
  u256_sub(k.v, n.v, t.v);
  fe_cmov(k, t, !even);
  u256_shr1(k, 0);
  return even;
}

// W-bit digit B of k encodes the odd digit 2B - (2^W - 1): the table entry of its magnitude (entry
// i holds (2i + 1) P) and whether it is positive.
CS_FN u32 window_entry(u32 digit, bool& positive) {
  constexpr u32 HALF = CS_WINDOW_ENTRIES;
  positive = digit >= HALF;
  return positive ? digit - HALF : HALF - 1u - digit;
}

// Walk of the signed W-bit window over k' = (k >> 1): from entry 0 of the table, ceil(255 / W)
// rounds of W doublings and one addition of the entry its digit selects, negated for a negative
// digit. With MODIFIED the accumulator carries W = a Z^4 (pt_dbl_w, three quad steps per doubling
// instead of four); the points are the same either way.
template <bool MODIFIED>
CS_FN void window_walk(jpt& acc, const fe& k, const apt tbl[CS_WINDOW_ENTRIES],
                       const coz_basis& basis) {
  fe w, alam4;
  if (MODIFIED) {
    fe_sqr(w, basis.lam2);
    fe_times_a(alam4, w);
    fe_copy(w, alam4);
  }
  fe_copy(acc.X, tbl[0].x);
  fe_copy(acc.Y, tbl[0].y);
  fe_copy(acc.Z, basis.lam);
#pragma unroll 1
  for (int i = CS_WINDOW_DIGITS - 1; i >= 0; i--) {
    const u32 digit = fe_bits(k, i * CS_WINDOW_BITS, CS_WINDOW_BITS);
    // CS_ROLL_DOUBLINGS (KernelConfig::rolled, the ECDSA default): the doublings as a loop, so
    // the walk's body holds one doubling's instructions instead of W (the inlined kernel's body
    // is about 14,300 instructions, 228 KB, with four).
#if defined(CS_ROLL_DOUBLINGS)
#pragma unroll 1
#else
#pragma unroll
#endif
    for (int d = 0; d < CS_WINDOW_BITS; d++) {
      if (MODIFIED)
        pt_dbl_w(acc, w);
      else
        pt_dbl(acc);
    }
    bool pos;
    apt Q = tbl[window_entry(digit, pos)];
    fe_neg_if(Q.y, !pos);
    pt_add_coz<MODIFIED>(acc, &w, Q, basis, &alam4);
  }
}

// t*P by a regular signed W-bit window. For odd k, digit i of (k >> 1) = B encodes the odd digit
// 2B - (2^W - 1) and k = 2^(W D) + sum_i (2B_i - (2^W - 1)) 2^(W i) with D = ceil(255 / W) digits, so
// the walk starts at P and does D rounds of W doublings and one addition, the same for every
// thread. Even t uses n - t, negated. The table of odd multiples shares one Z, which makes each
// addition two products cheaper. A quad walks in modified Jacobian coordinates (see window_walk).
template <bool MODIFIED>
CS_FN void mul_window_in(jpt& acc, const fe& t, const apt& P) {
  fe k;
  const bool even = window_digits(k, t);
  apt tbl[CS_WINDOW_ENTRIES];  // P, 3P, 5P, ... on one Z
  coz_basis basis;
  coz_odd_multiples<CS_WINDOW_ENTRIES>(tbl, basis, P);
  window_walk<MODIFIED>(acc, k, tbl, basis);
  fe_neg_if(acc.Y, even);  // an even t was walked as n - t
}

// Ablation defines for the small-batch lane kernels (to be timed against the defaults):
// CS_QUAD_PLAIN walks quads in plain Jacobian coordinates; CS_JAC_WINDOW keeps the odd multiples
// in Jacobian coordinates, each with its own Z, and adds them by the full Jacobian addition.
#if defined(CS_JAC_WINDOW)
CS_FN void mul_window(jpt& acc, const fe& t, const apt& P) {
  fe k;
  const bool even = window_digits(k, t);
  jpt tbl[CS_WINDOW_ENTRIES], p2;  // P, 3P, 5P, ...
  pt_from_affine(tbl[0], P);
  pt_from_affine(p2, P);
  pt_dbl(p2);
  for (int i = 1; i < CS_WINDOW_ENTRIES; i++) {
    tbl[i] = tbl[i - 1];
    pt_add_jac(tbl[i], p2);
  }
  acc = tbl[0];
  for (int i = CS_WINDOW_DIGITS - 1; i >= 0; i--) {
    const u32 digit = fe_bits(k, i * CS_WINDOW_BITS, CS_WINDOW_BITS);
    for (int d = 0; d < CS_WINDOW_BITS; d++) pt_dbl(acc);
    bool pos;
    jpt Q = tbl[window_entry(digit, pos)];
    fe_neg_if(Q.Y, !pos);
    pt_add_jac(acc, Q);
  }
  fe_neg_if(acc.Y, even);  // an even t was walked as n - t
}
#elif defined(CS_QUAD_PLAIN)
CS_FN void mul_window(jpt& acc, const fe& t, const apt& P) { mul_window_in<false>(acc, t, P); }
#else
CS_FN void mul_window(jpt& acc, const fe& t, const apt& P) { mul_window_in<CS_LANES == 4>(acc, t, P); }
#endif

// Fast: s*G from the fixed-base table, t*P by the signed window, then one addition.
CS_FN void mul_fast(jpt& R, const fe& s, const fe& t, const apt& P, const u32* gtab) {
  jpt tp;
  mul_window(tp, t, P);
  mul_fixed<CS_GTAB_BITS>(R, s, gtab);
  pt_add_jac(R, tp);
}

// The checks before any point arithmetic: r and s in [1, n), then t = r + s mod n, nonzero.
CS_FN bool cs_scalars(fe& t, const fe& r, const fe& s) {
  if (!scalar_in_range(r) || !scalar_in_range(s)) return false;
  scalar_add_mod_n(t, r, s);
  return !fe_is_zero(t);
}

// (e + x1) mod n == r for the Jacobian R = (X, Y, Z) without inverting Z: x1 = X / Z^2 lies in
// [0, p) and x1 mod n = v = (r - e) mod n, so x1 is v or v + n (p > n).
CS_FN bool cs_x_matches(const jpt& R, const fe& e_in, const fe& r) {
  if (fe_is_zero(R.Z)) return false;  // s*G + t*P at infinity
  fe e, v, n, z2, cand, w;
  fe_copy(e, e_in);
  scalar_reduce_once(e);
  CS_LOAD_CONST(n, curve_n);
  if (u256_sub(v.v, r.v, e.v)) u256_add(v.v, v.v, n.v);
  fe_sqr(z2, R.Z);
  fe_mul(cand, v, z2);
  if (fe_eq(cand, R.X)) return true;
  u32 c = u256_add(w.v, v.v, n.v);
  if (c || u256_ge_const_p(w)) return false;
  fe_mul(cand, w, z2);
  return fe_eq(cand, R.X);
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
