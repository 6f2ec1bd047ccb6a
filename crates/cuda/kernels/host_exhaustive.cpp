// Host build of the kernels' generic point and scalar code on a curve whose group has a small
// prime order q (chainsig_core::curve::small_order), for the exhaustive test in
// tests/exhaustive/: every point, every scalar. build.rs compiles it once per such curve, each
// with its generated cs_curve.h (the real field and a, the test's b', G and n = a 256-bit multiple
// of q), table widths small enough that no fixed-base table entry is infinity (CS_GTAB_BITS,
// CS_KTAB_BITS) and the prefix CS_TINY_PREFIX on its exports. Points cross the C ABI as 24 words
// (Jacobian X, Y, Z) or 16 (affine x, y), scalars and field elements as 8, all little-endian.
#include "host_layers.h"
#include "host_io.h"
#include "host_tables.h"

#define CS_CAT2(a, b) a##b
#define CS_CAT(a, b) CS_CAT2(a, b)
#define CS_EXPORT(name) CS_CAT(CS_TINY_PREFIX, name)

namespace {
jpt load_jac(const u32* w) {
  jpt r;
  load8(r.X, w);
  load8(r.Y, w + 8);
  load8(r.Z, w + 16);
  return r;
}

void store_jac(u32* w, const jpt& r) {
  for (int i = 0; i < 8; i++) {
    w[i] = r.X.v[i];
    w[8 + i] = r.Y.v[i];
    w[16 + i] = r.Z.v[i];
  }
}

apt load_aff(const u32* w) {
  apt a;
  load8(a.x, w);
  load8(a.y, w + 8);
  return a;
}
}  // namespace

extern "C" {

// R = 2R (pt_dbl: the curve's a = -3 or a = 0 formula).
void CS_EXPORT(dbl)(u32* r) {
  jpt R = load_jac(r);
  pt_dbl(R);
  store_jac(r, R);
}

// R = 2R in modified Jacobian coordinates, W = a Z^4 beside it (pt_dbl_w).
void CS_EXPORT(dbl_w)(u32* r, u32* w) {
  jpt R = load_jac(r);
  fe W;
  load8(W, w);
  pt_dbl_w(R, W);
  store_jac(r, R);
  store8(w, W);
}

// R = R + Q for affine Q (pt_add_affine); q_inf makes Q infinity.
void CS_EXPORT(add_affine)(u32* r, const u32* q, int q_inf) {
  jpt R = load_jac(r);
  pt_add_affine(R, load_aff(q), q_inf != 0);
  store_jac(r, R);
}

// R = R + Q, both Jacobian (pt_add_jac).
void CS_EXPORT(add_jac)(u32* r, const u32* q) {
  jpt R = load_jac(r);
  pt_add_jac(R, load_jac(q));
  store_jac(r, R);
}

// R = R + (x, y, lam) (pt_add_coz), the entry (x, y) on the common Z lam; with_w: the modified
// Jacobian form, W = a Z^4 of R updated beside it.
void CS_EXPORT(add_coz)(int with_w, u32* r, u32* w, const u32* q, const u32* lam) {
  jpt R = load_jac(r);
  coz_basis B;
  load8(B.lam, lam);
  fe_sqr(B.lam2, B.lam);
  fe_mul(B.lam3, B.lam2, B.lam);
  fe W, alam4;
  load8(W, w);
  fe_sqr(alam4, B.lam2);
  fe_times_a(alam4, alam4);
  const apt Q = load_aff(q);
  if (with_w)
    pt_add_coz<true>(R, &W, Q, B, &alam4);
  else
    pt_add_coz<false>(R, nullptr, Q, B, nullptr);
  store_jac(r, R);
  store8(w, W);
}

// Words of a fixed-base table of G (key = 0) or of a known signer's key (key = 1).
unsigned long long CS_EXPORT(table_words)(int key) {
  return key ? CS_KTABLE_WORDS : CS_GTABLE_WORDS;
}

// The fixed-base table of the affine point b (build_table, with this build's widths).
void CS_EXPORT(build_table)(int key, const u32* b, u32* out) {
  if (key)
    build_table<CS_KTAB_BITS>(load_aff(b), out);
  else
    build_table<CS_GTAB_BITS>(load_aff(b), out);
}

// R = k B from B's table (mul_fixed, G's width for key = 0, a key's for key = 1).
void CS_EXPORT(mul_fixed)(int key, const u32* k, const u32* tab, u32* r) {
  fe K;
  jpt R;
  load8(K, k);
  if (key)
    mul_fixed<CS_KTAB_BITS>(R, K, tab);
  else
    mul_fixed<CS_GTAB_BITS>(R, K, tab);
  store_jac(r, R);
}

// R = t P by the signed window: the Jacobian walk (modified = 0) or the modified-Jacobian one.
void CS_EXPORT(mul_window)(int modified, const u32* t, const u32* p, u32* r) {
  fe T;
  jpt R;
  load8(T, t);
  if (modified)
    mul_window_in<true>(R, T, load_aff(p));
  else
    mul_window_in<false>(R, T, load_aff(p));
  store_jac(r, R);
}

// R = s G + t P by a mode's double-scalar product (CS_MODE_PAPER with inversion inv,
// CS_MODE_SEPARATE, CS_MODE_FAST); gtab is G's table. Returns 0 for an unknown mode.
int CS_EXPORT(double_mul)(int mode, int inv, const u32* s, const u32* t, const u32* p,
                          const u32* gtab, u32* r) {
  fe S, T;
  jpt R;
  load8(S, s);
  load8(T, t);
  const apt P = load_aff(p);
  if (mode == CS_MODE_PAPER && inv == CS_INV_FERMAT)
    mul_paper_sim<CS_INV_FERMAT>(R, S, T, P);
  else if (mode == CS_MODE_PAPER)
    mul_paper_sim<CS_INV_EUCLID>(R, S, T, P);
  else if (mode == CS_MODE_SEPARATE)
    mul_separate(R, S, T, P, gtab);
  else if (mode == CS_MODE_FAST)
    mul_fast(R, S, T, P, gtab);
  else
    return 0;
  store_jac(r, R);
  return 1;
}

#define CS_EXPORT_SM2 1
#define CS_EXPORT_ECDSA 1
#include "host_exports.h"

// Arithmetic mod n: op 0 a b (sc_mul), 1 a^-1 (inv_euclid_mod; a prime to n), 2 a + b
// (scalar_add_mod_n), 3 a - b (sub_mod), 4 a / 2 (half_mod), 5 a b R^-1 (sc_mont_mul); a, b < n.
// Returns 0 for an unknown op.
int CS_EXPORT(scalar_op)(int op, const u32* a, const u32* b, u32* r) {
  fe x, y, z;
  load8(x, a);
  load8(y, b);
  switch (op) {
    case 0: sc_mul(z, x, y); break;
    case 1: inv_euclid_mod<CS_MOD_N>(z, x); break;
    case 2: scalar_add_mod_n(z, x, y); break;
    case 3: sub_mod<CS_MOD_N>(z, x, y); break;
    case 4: fe_copy(z, x); half_mod<CS_MOD_N>(z); break;
    case 5: sc_mont_mul(z, x, y); break;
    default: return 0;
  }
  store8(r, z);
  return 1;
}

// y of the point with abscissa x and y's parity (cs_decompress, the one use of b): 1, or 0 when
// no point has that x.
int CS_EXPORT(decompress)(const u32* x, u32 parity, u32* y) {
  fe a, b;
  load8(a, x);
  if (!cs_decompress(b, a, parity)) return 0;
  store8(y, b);
  return 1;
}
}
