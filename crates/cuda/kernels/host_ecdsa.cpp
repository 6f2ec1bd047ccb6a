// Host build of the kernels' ECDSA path for one curve: build.rs compiles it once per ECDSA curve
// (P-256, secp256k1), each with that curve's generated cs_curve.h and the prefix CS_ECDSA_PREFIX
// (cs_p256_, cs_k256_) on its exports. CI checks cs_verify_ecdsa and the scalar arithmetic against
// the Rust references, and the backend builds the curve's fixed-base table with it.
#include "host_layers.h"  // with host_warp.h, for warp_batch_inv's 32 emulated lanes

#include "host_io.h"
#include "host_tables.h"

#define CS_CAT2(a, b) a##b
#define CS_CAT(a, b) CS_CAT2(a, b)
#define CS_EXPORT(name) CS_CAT(CS_ECDSA_PREFIX, name)

namespace {
thread_local const u32* inverse_in;
thread_local const int* inverse_use;
thread_local u32* inverse_out;
thread_local int inverse_mod;

void inverse_lane(int lane) {
  fe x, w, r;
  load8(x, inverse_in + 8 * lane);
  const bool use = inverse_use[lane] != 0;
  if (inverse_mod == CS_MOD_N) {
    warp_batch_inv<kWarpLanes, CS_MOD_N>(w, x, use);
    fe one;
    fe_set_word(one, 1);
    sc_mont_mul(r, w, one);  // out of Montgomery form
  } else {
    warp_batch_inv<kWarpLanes, CS_MOD_P>(r, x, use);
  }
  for (int i = 0; i < 8; i++) inverse_out[8 * lane + i] = r.v[i];
}
}  // namespace

extern "C" {

// The warp's shared inversion (warp_batch_inv) as a warp of 32 runs it, emulated, modulo n
// (modulus CS_MOD_N) or p (CS_MOD_P): x holds 32 values of 8 words, use[k] says whether lane k
// takes part; out gets each x^-1 (1 where use is 0). Returns 0 when the lanes disagreed on their
// shuffles.
int CS_EXPORT(batch_inverse)(int modulus, const u32* x, const int* use, u32* out) {
  inverse_mod = modulus == CS_MOD_N ? CS_MOD_N : CS_MOD_P;
  inverse_in = x;
  inverse_use = use;
  inverse_out = out;
  return run_lanes(kWarpLanes, inverse_lane, 256 << 10) ? 1 : 0;
}

#define CS_EXPORT_ECDSA 1
#include "host_exports.h"

// Scalar arithmetic modulo n: op 0 is a b mod n, op 1 is a^-1 mod n by Euclid (b unused).
void CS_EXPORT(scalar_op)(int op, const u32* a, const u32* b, u32* r) {
  fe x, y, z;
  load8(x, a);
  load8(y, b);
  if (op == 0)
    sc_mul(z, x, y);
  else
    inv_euclid_mod<CS_MOD_N>(z, x);
  for (int i = 0; i < 8; i++) r[i] = z.v[i];
}

// a b mod p by the kernels' field product (the GPU module's self-test compares against it).
void CS_EXPORT(fe_mul)(const u32* a, const u32* b, u32* r) {
  fe x, y, z;
  load8(x, a);
  load8(y, b);
  fe_mul(z, x, y);
  for (int i = 0; i < 8; i++) r[i] = z.v[i];
}

// r = t mod p for any 512-bit t (16 little-endian words), by the kernels' reduction.
void CS_EXPORT(reduce_wide)(const u32* t, u32* r) {
  fe z;
  fe_reduce_wide(z, t);
  for (int i = 0; i < 8; i++) r[i] = z.v[i];
}

void CS_EXPORT(build_gtable)(u32* out) {
  apt g;
  curve_g(g);
  build_table<CS_GTAB_BITS>(g, out);
}

int CS_EXPORT(on_curve)(const u32* x, const u32* y) { return host_on_curve(x, y) ? 1 : 0; }
}
