// Scalar multiplication: the fixed-base tables and their walk (mul_fixed), the table of odd
// multiples on one Z (coz_odd_multiples) and the signed-window walk (mul_window), and the three
// double-scalar products s G + t P of the SM2 modes (mul_paper_sim, mul_separate, mul_fast),
// which ECDSA's verification and recovery reuse.
//
// Representation: scalars are 256-bit integers in `fe` limbs (scalar.cuh), points as in
// point.cuh; a fixed-base table is an array of affine entries, 16 words each (x then y), laid out
// as described at CS_GTAB_BITS below.
// Bounds and assumptions on the group (all hold for the real curves, whose order n is a prime
// above 2^255):
// - mul_fixed<W>: any k below 2^256; no table entry is infinity, that is B's order does not
//   divide m 2^(W j) for m <= 2^(W-1) (true for a prime order above 2^(W-1)).
// - coz_odd_multiples<N>: P affine, of odd prime order above 2N - 1, so that no step of the chain
//   meets an exceptional case.
// - mul_window (signed window): t below 2^256 and at most n, and n P = infinity (an even t is
//   walked as n - t, then negated).
// - mul_paper_sim, mul_separate: any s, t below 2^256 and any affine P.
// Every multiplication returns the exact multiple, infinity included; none needs an inversion
// except mul_paper_sim's (G + P made affine, by fe_inv<INV>).
// Assumes: field.cuh, lanes.cuh, scalar.cuh, point.cuh. Timing: variable (digit-dependent table
// indices and the additions' exceptional cases); the inputs are public.
#pragma once

// Fixed-base tables in signed windows of W bits: entry (j, m) = m * 2^(W j) * B for j < the
// number of windows and 1 <= m <= 2^(W-1), affine, 16 words, at index j * 2^(W-1) + m - 1.
// G's table, which every signature's s*G reads, has 13-bit windows: 20 additions from 81920
// entries (5 MB, which stays in the H200's L2); a known signer's key table has 9-bit windows, 29
// additions from 7424 entries (464 KB per signer). 256 must not be a multiple of W, so the top
// window holds its bits plus the carry of the signed recoding.
// Both widths may be given smaller by a host build of the exhaustive test, whose tiny group
// needs 2^(W-1) below its order (no table entry at infinity); the GPU modules never define them.
#ifndef CS_GTAB_BITS
#define CS_GTAB_BITS 13
#endif
#ifndef CS_KTAB_BITS
#define CS_KTAB_BITS 9
#endif
#define CS_TAB_WINDOWS(W) ((256 + (W) - 1) / (W))
#define CS_TAB_ENTRIES(W) (CS_TAB_WINDOWS(W) << ((W) - 1))
#define CS_GTABLE_WORDS (CS_TAB_ENTRIES(CS_GTAB_BITS) * 16)
#define CS_KTABLE_WORDS (CS_TAB_ENTRIES(CS_KTAB_BITS) * 16)

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

// T[i] = (2i + 1) P for i < N, all on one Z, from an affine P of odd prime order. Each odd multiple
// is the last plus 2P by Meloni's co-Z addition (5M + 2S with the Z product left out), which also
// brings 2P to the sum's Z, so the next addition is co-Z again; afterwards every earlier entry is
// brought to the last one's Z. 91 products for N = 8 (against 120 in Jacobian points), 11 more per
// entry after. No step meets an exceptional case: (2i - 1) P = ±2P would need an order dividing
// 2i + 1 or 2i - 3.
template <int N>
CS_FN void coz_odd_multiples(apt T[N], coz_basis& B, const apt& P) {
  jpt D;
  pt_from_affine(D, P);
  pt_dbl(D);  // 2P on Z_0 = D.Z
  fe z2, z3, h[N - 1];
  fe_sqr(z2, D.Z);
  fe_mul(z3, z2, D.Z);
  fe_mul2(T[0].x, P.x, z2, T[0].y, P.y, z3);  // P on Z_0
  for (int i = 1; i < N; i++) {
    // T[i-1] and D share Z_(i-1); their sum and D move to Z_i = Z_(i-1) h.
    fe rr, a, d, b, c, t;
    fe_sub(h[i - 1], T[i - 1].x, D.X);
    fe_sub(rr, T[i - 1].y, D.Y);
    fe_sqr2(a, h[i - 1], d, rr);
    fe_mul2(b, D.X, a, c, T[i - 1].x, a);  // D's x and the entry's x times h^2
    fe_sub(t, d, b);
    fe_sub(T[i].x, t, c);  // X = rr^2 - B - C
    fe_sub(t, b, T[i].x);
    fe_sub(c, c, b);                  // h^3
    fe_mul2(t, rr, t, D.Y, D.Y, c);  // rr (B - X), and D's y on the new Z
    fe_sub(T[i].y, t, D.Y);
    fe_copy(D.X, b);
  }
  // T[j] lies on Z_j = Z_0 h_0 ... h_(j-1): bring it to Z_(N-1) by f = h_j ... h_(N-2).
  fe f;
  fe_copy(f, h[N - 2]);
  for (int j = N - 2; j >= 0; j--) {
    fe f2, f3;
    if (j < N - 2) fe_mul(f, f, h[j]);
    fe_sqr(f2, f);
    fe_mul(f3, f2, f);
    fe_mul2(T[j].x, T[j].x, f2, T[j].y, T[j].y, f3);
  }
  fe_mul(B.lam, D.Z, f);  // Z_(N-1) = Z_0 h_0 ... h_(N-2)
  fe_sqr(B.lam2, B.lam);
  fe_mul(B.lam3, B.lam2, B.lam);
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
