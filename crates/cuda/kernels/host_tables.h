// The host builds' fixed-base table builder and curve-membership check (host_shim.cpp for SM2,
// host_ecdsa.cpp for P-256), from the kernels' own arithmetic. Include after host_layers.h.
#pragma once

#include <vector>

#include "host_io.h"

// Fills the fixed-base table of the affine point B in signed W-bit windows (CS_TAB_ENTRIES(W)
// entries of 16 words; layout in ecmult.cuh): Jacobian multiples made affine with one shared
// inversion (Montgomery's trick). B must be a point of the curve.
template <int W>
static void build_table(const apt& B, u32* out) {
  constexpr int HALF = 1 << (W - 1), ENTRIES = CS_TAB_ENTRIES(W);
  std::vector<jpt> pts(ENTRIES);
  jpt base;
  pt_from_affine(base, B);
  for (int j = 0; j < CS_TAB_WINDOWS(W); j++) {
    jpt acc = base;
    pts[j * HALF] = acc;
    for (int m = 2; m <= HALF; m++) {
      pt_add_jac(acc, base);
      pts[j * HALF + m - 1] = acc;
    }
    for (int d = 0; d < W; d++) pt_dbl(base);
  }
  std::vector<fe> prefix(ENTRIES);
  fe run;
  fe_set_word(run, 1);
  for (int i = 0; i < ENTRIES; i++) {
    prefix[i] = run;
    fe_mul(run, run, pts[i].Z);
  }
  fe inv;
  fe_inv_fermat(inv, run);
  for (int i = ENTRIES - 1; i >= 0; i--) {
    fe zi, zi2, zi3, x, y;
    fe_mul(zi, inv, prefix[i]);
    fe_mul(inv, inv, pts[i].Z);
    fe_sqr(zi2, zi);
    fe_mul(zi3, zi2, zi);
    fe_mul(x, pts[i].X, zi2);
    fe_mul(y, pts[i].Y, zi3);
    for (int w = 0; w < 8; w++) {
      out[i * 16 + w] = x.v[w];
      out[i * 16 + 8 + w] = y.v[w];
    }
  }
}

// Whether (x, y) satisfies y^2 = x^3 + a x + b with x, y < p.
static bool host_on_curve(const u32* x, const u32* y) {
  fe a, b, t, rhs;
  load8(a, x);
  load8(b, y);
  if (u256_ge_const_p(a) || u256_ge_const_p(b)) return false;
  curve_rhs(rhs, a);
  fe_sqr(t, b);
  return fe_eq(t, rhs);
}
