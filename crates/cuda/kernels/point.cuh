// The point layer: affine and Jacobian points of y^2 = x^3 + a x + b over F_p, for a = -3 or
// a = 0 (CS_CURVE_A_ZERO, from the generated header), and the doublings and additions of the
// verifications.
//
// Representation: `jpt` is Jacobian (X, Y, Z), the affine point (X / Z^2, Y / Z^3); Z = 0 is the
// point at infinity (pt_set_inf writes (1, 1, 0), but any Z = 0 counts). `apt` is affine (x, y)
// and never infinity: where an affine operand may be infinity a flag travels beside it (q_inf).
// A table entry on a common Z (coz_basis) is the Jacobian point (x, y, lam). Every coordinate is
// a field element in [0, p), as field.cuh keeps them.
// Exceptional cases: pt_dbl and pt_dbl_w map infinity to infinity; pt_add_affine, pt_add_jac and
// pt_add_coz take any R (infinity, equal to the other operand, or its negative: they then double
// or return infinity) and pt_add_jac any Q. pt_add_coz's entry must be finite; pt_add_affine's Q
// is ignored when q_inf holds.
// The constant b: no doubling or addition uses it, so they hold on every curve
// y^2 = x^3 + a x + b' over the same field with the same a. Only curve_rhs uses b (key
// decompression, cs_decompress, and the host's on-curve check). The exhaustive test
// (tests/exhaustive/) relies on this: it runs these formulas on a curve with such a
// b' whose group has a small prime order.
// cs_x_matches compares x(R) mod n with a scalar without inverting Z; it assumes p < 2n, so that
// x(R) mod n is x(R) or x(R) - n.
//
// Assumes: field.cuh, lanes.cuh (the formulas are written as steps of independent products) and
// scalar.cuh (cs_x_matches). Timing: variable (the exceptional cases branch); inputs are public.
#pragma once

// ---------------------------------------------------------------- points

struct jpt {  // Jacobian (X/Z^2, Y/Z^3); Z = 0 is the point at infinity
  fe X, Y, Z;
};
struct apt {  // affine
  fe x, y;
};

CS_FN void pt_set_inf(jpt& R) {
  fe_set_word(R.X, 1);
  fe_set_word(R.Y, 1);
  fe_set_word(R.Z, 0);
}

CS_FN void pt_from_affine(jpt& R, const apt& a) {
  fe_copy(R.X, a.x);
  fe_copy(R.Y, a.y);
  fe_set_word(R.Z, 1);
}

CS_FN void pt_cmov(jpt& R, const jpt& a, bool cond) {
  fe_cmov(R.X, a.X, cond);
  fe_cmov(R.Y, a.Y, cond);
  fe_cmov(R.Z, a.Z, cond);
}

// The doublings' last step, the same for every a: X3 = alpha^2 - 8 beta and
// Y3 = alpha (4 beta - X3) - 8 gamma^2, from alpha, alpha2 = alpha^2, beta = X Y^2 and
// gamma = Y^2 (beta and gamma are overwritten).
CS_FN void dbl_finish(jpt& R, const fe& alpha, const fe& alpha2, fe& beta, fe& gamma) {
  fe t0, t1;
  fe_mul_small<4>(beta, beta);
  fe_add(t1, beta, beta);
  fe_sub(R.X, alpha2, t1);
  fe_sub(t0, beta, R.X);
  fe_mul_sqr(t0, alpha, t0, gamma, gamma);
  fe_mul_small<8>(gamma, gamma);
  fe_sub(R.Y, t0, gamma);
}

#if CS_CURVE_A_ZERO
// R = 2R for a = 0 (secp256k1; 3M + 4S in three steps). Infinity stays infinity.
CS_DBL_FN void pt_dbl(jpt& R) {
  fe xx, gamma, beta, alpha, yz, t0;
  fe_sqr2(xx, R.X, gamma, R.Y);
  fe_mul_small<3>(alpha, xx);  // alpha = 3 X^2
  fe_mul3<false, true, false>(beta, R.X, gamma, t0, alpha, alpha, yz, R.Y, R.Z);
  fe_add(R.Z, yz, yz);  // Z3 = 2 Y Z
  dbl_finish(R, alpha, t0, beta, gamma);
}
#else
// R = 2R for a = -3 (4M + 4S in four steps of two). Infinity stays infinity.
CS_DBL_FN void pt_dbl(jpt& R) {
  fe delta, gamma, beta, alpha, yz, t0, t1;
  fe_sqr2(delta, R.Z, gamma, R.Y);
  fe_sub(t0, R.X, delta);
  fe_add(t1, R.X, delta);
  fe_mul2(beta, R.X, gamma, alpha, t0, t1);
  fe_mul_small<3>(alpha, alpha);  // alpha = 3 (X - delta)(X + delta)
  // Z3 = 2 Y Z: a product, where (Y + Z)^2 - gamma - delta would be a square and three additions;
  // on the GPU a square costs what a product does.
  fe_mul_sqr(yz, R.Y, R.Z, t0, alpha);
  fe_add(R.Z, yz, yz);
  dbl_finish(R, alpha, t0, beta, gamma);
}
#endif

// y^2 = x^3 + a x + b for the curve's a (-3 or 0): the right-hand side at x.
CS_FN void curve_rhs(fe& rhs, const fe& x) {
  fe x2, t, b;
  fe_sqr(x2, x);
#if CS_CURVE_A_ZERO
  fe_copy(t, x2);
#else
  fe_set_word(t, 3);
  fe_sub(t, x2, t);
#endif
  fe_mul(rhs, x, t);  // x (x^2 + a): one multiplication fewer than x^3 + a x
  CS_LOAD_CONST(b, curve_b);
  fe_add(rhs, rhs, b);
}

// Co-Z addition of an affine point: Q is first brought to R's Z (X2 = x Z^2, Y2 = y Z^3), then
// Meloni's addition of two points sharing Z (8M + 3S in all, six steps). Handles R = infinity,
// R = Q (doubles) and R = -Q (infinity); q_inf makes it a no-op (used by branch-free table
// selection).
CS_NOINLINE void pt_add_affine(jpt& R, const apt& Q, bool q_inf) {
  fe z2, x2, y2, h, rr, a, b, c, t;
  fe_sqr(z2, R.Z);
  fe_mul2(x2, Q.x, z2, t, z2, R.Z);
  fe_sub(h, x2, R.X);
  fe_mul_sqr(y2, Q.y, t, a, h);  // A = (X2 - X1)^2
  fe_sub(rr, y2, R.Y);
  bool r_inf = fe_is_zero(R.Z);
  if (!q_inf && !r_inf && fe_is_zero(h)) {  // rare: same x coordinate
    if (fe_is_zero(rr))
      pt_dbl(R);
    else
      pt_set_inf(R);
    return;
  }
  jpt S;
  fe_mul2(b, R.X, a, c, x2, a);  // B = X1 A, C = X2 A
  fe_mul_sqr(S.Z, R.Z, h, t, rr);  // D = (Y2 - Y1)^2
  fe_sub(t, t, b);
  fe_sub(S.X, t, c);  // X3 = D - B - C
  fe_sub(t, b, S.X);
  fe_sub(c, c, b);
  fe_mul2(t, rr, t, c, R.Y, c);  // (Y2 - Y1)(B - X3), Y1 (C - B)
  fe_sub(S.Y, t, c);
  jpt Qj;
  pt_from_affine(Qj, Q);
  pt_cmov(S, Qj, r_inf);
  pt_cmov(S, R, q_inf);
  fe_copy(R.X, S.X);
  fe_copy(R.Y, S.Y);
  fe_copy(R.Z, S.Z);
}

// R = R + Q, both Jacobian (12M + 4S), with every special case: five levels of 2, 4, 4, 4 and 2
// independent products (five steps of a quad, eight of a pair).
CS_NOINLINE void pt_add_jac(jpt& R, const jpt& Q) {
  bool r_inf = fe_is_zero(R.Z), q_inf = fe_is_zero(Q.Z);
  fe z1z1, z2z2, u1, u2, t1, t2, s1, s2, h, rr, t, hh, hhh, z1z2;
  fe_sqr2(z1z1, R.Z, z2z2, Q.Z);
  // Products that share an operand share a pair step: the pair picks only the other one.
  fe_mul4<false, false, false, false>(u1, R.X, z2z2, t1, Q.Z, z2z2, u2, Q.X, z1z1, t2, R.Z, z1z1);
  fe_sub(h, u2, u1);
  fe_mul4<false, false, true, false>(s1, R.Y, t1, s2, Q.Y, t2, hh, h, h, z1z2, R.Z, Q.Z);
  fe_sub(rr, s2, s1);
  if (!r_inf && !q_inf && fe_is_zero(h)) {
    if (fe_is_zero(rr))
      pt_dbl(R);
    else
      pt_set_inf(R);
    return;
  }
  jpt S;
  // H^3, V = U1 H^2, r^2, Z3 = Z1 Z2 H
  fe_mul4<false, false, true, false>(hhh, h, hh, u1, u1, hh, t, rr, rr, S.Z, z1z2, h);
  fe_sub(t, t, hhh);
  fe_sub(t, t, u1);
  fe_sub(S.X, t, u1);  // X3 = r^2 - H^3 - 2V
  fe_sub(t, u1, S.X);
  fe_mul2(t, rr, t, s1, s1, hhh);
  fe_sub(S.Y, t, s1);  // Y3 = r (V - X3) - S1 H^3
  pt_cmov(S, Q, r_inf);
  pt_cmov(S, R, q_inf);
  fe_copy(R.X, S.X);
  fe_copy(R.Y, S.Y);
  fe_copy(R.Z, S.Z);
}

// ---------------------------------------------------------------- tables on one Z
// The variable-base walk adds entries of a small table of multiples of P. Stored on one common Z
// (lam), an entry (x, y) is the Jacobian point (x, y, lam): with lam^2 and lam^3 formed once per
// table, each addition costs 11M + 3S instead of the 12M + 4S of two unrelated Jacobian points,
// and an entry is 16 words instead of 24.
struct coz_basis {
  fe lam, lam2, lam3;
};

// a x for the curve's a (-3, or 0).
CS_FN void fe_times_a(fe& r, const fe& x) {
#if CS_CURVE_A_ZERO
  fe_set_word(r, 0);
#else
  fe t;
  fe_mul_small<3>(t, x);
  fe_neg(r, t);
#endif
}

// R = 2R in modified Jacobian coordinates (Cohen, Miyaji, Ono): W = a Z^4 travels with the point,
// and the doubling is 4M + 4S in three levels of 3, 3 and 2 independent products, where the a = -3
// formula (pt_dbl) needs four levels. A quad therefore doubles in three steps; one thread or a
// pair gains nothing and keeps pt_dbl, whose walk needs no W. Infinity stays infinity (W = 0).
CS_DBL_FN void pt_dbl_w(jpt& R, fe& W) {
  fe xx, yy, yz, m, mm, y4, xyy, s, t, u;
  fe_mul3<true, true, false>(xx, R.X, R.X, yy, R.Y, R.Y, yz, R.Y, R.Z);
  fe_mul_small<3>(m, xx);
  fe_add(m, m, W);  // M = 3 X^2 + a Z^4
  fe_mul3<true, true, false>(mm, m, m, y4, yy, yy, xyy, R.X, yy);
  fe_mul_small<4>(s, xyy);  // S = 4 X Y^2
  fe_sub(t, mm, s);
  fe_sub(R.X, t, s);  // X3 = M^2 - 2S
  fe_mul_small<8>(y4, y4);  // 8 Y^4
  fe_sub(t, s, R.X);
  fe_mul2(t, m, t, u, y4, W);
  fe_sub(R.Y, t, y4);  // Y3 = M (S - X3) - 8 Y^4
  fe_add(R.Z, yz, yz);  // Z3 = 2 Y Z
  fe_add(W, u, u);      // a Z3^4 = 16 Y^4 a Z^4
}

// R = R + (Q.x, Q.y, lam) with every special case; five levels of 4, 2, 3, 3 and 2 independent
// products (five steps of a quad, eight of a pair). With W (modified Jacobian, for pt_dbl_w) the
// sum's a Z^4 comes out of three more products in the same five levels (4, 3, 3, 4, 3), so a quad
// pays no extra step for it; alam4 = a lam^4 is the W of an entry, for R at infinity.
template <bool WITH_W>
CS_FN void pt_add_coz(jpt& R, fe* W, const apt& Q, const coz_basis& B, const fe* alam4) {
  const bool r_inf = fe_is_zero(R.Z);
  fe z1z1, u1, s1, yz, u2, s2, zl, h, rr, hh, r2, zh, hhh, v, z3sq, z3q, t;
  fe_mul4<true, false, false, false>(z1z1, R.Z, R.Z, u1, R.X, B.lam2, s1, R.Y, B.lam3, yz, Q.y,
                                     R.Z);
  if (WITH_W)  // U2 = x Z1^2, S2 = y Z1^3, Z1^2 lam^2
    fe_mul3<false, false, false>(u2, Q.x, z1z1, s2, yz, z1z1, zl, z1z1, B.lam2);
  else
    fe_mul2(u2, Q.x, z1z1, s2, yz, z1z1);
  fe_sub(h, u2, u1);
  fe_sub(rr, s2, s1);
  if (!r_inf && fe_is_zero(h)) {  // rare: the same x coordinate
    if (fe_is_zero(rr)) {
      if (WITH_W)
        pt_dbl_w(R, *W);
      else
        pt_dbl(R);
    } else {
      pt_set_inf(R);
      if (WITH_W) fe_set_word(*W, 0);
    }
    return;
  }
  jpt S;
  fe_mul3<true, true, false>(hh, h, h, r2, rr, rr, zh, R.Z, h);
  if (WITH_W)  // and Z3^2 = Z1^2 lam^2 H^2
    fe_mul4<false, false, false, false>(hhh, h, hh, v, u1, hh, S.Z, zh, B.lam, z3sq, zl, hh);
  else
    fe_mul3<false, false, false>(hhh, h, hh, v, u1, hh, S.Z, zh, B.lam);  // Z3 = Z1 lam H
  fe_sub(t, r2, hhh);
  fe_sub(t, t, v);
  fe_sub(S.X, t, v);  // X3 = r^2 - H^3 - 2V
  fe_sub(t, v, S.X);
  if (WITH_W)
    fe_mul3<false, false, true>(t, rr, t, s1, s1, hhh, z3q, z3sq, z3sq);
  else
    fe_mul2(t, rr, t, s1, s1, hhh);
  fe_sub(S.Y, t, s1);  // Y3 = r (V - X3) - S1 H^3
  jpt Qj;  // R at infinity: the sum is the entry itself
  fe_copy(Qj.X, Q.x);
  fe_copy(Qj.Y, Q.y);
  fe_copy(Qj.Z, B.lam);
  pt_cmov(S, Qj, r_inf);
  fe_copy(R.X, S.X);
  fe_copy(R.Y, S.Y);
  fe_copy(R.Z, S.Z);
  if (WITH_W) {
    fe_times_a(*W, z3q);
    fe_cmov(*W, *alam4, r_inf);
  }
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
