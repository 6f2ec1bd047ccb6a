// Micro kernels for the instruction census (examples/kernel_census.rs): each runs one field or
// point operation of the verification kernels on operands loaded from distinct addresses (so the
// compiler cannot fold them) and stores every result. `census_base` only loads and stores: its
// count is subtracted from the others, leaving the instructions of the operation itself.
#pragma once

#define CENSUS_LOAD(x, p) _Pragma("unroll") for (int j = 0; j < 8; j++) x.v[j] = p[(size_t)i * 8 + j];
#define CENSUS_STORE(x, p) _Pragma("unroll") for (int j = 0; j < 8; j++) p[(size_t)i * 8 + j] = x.v[j];
#define CENSUS_KERNEL(name) extern "C" __global__ void name(const u32* a, u32* o)

// Operand k of a kernel lives at a + k * 4096 words.
#define OPND(k) (a + (k) * 4096)
#define OUTW(k) (o + (k) * 4096)

// A kernel of two field operands and one field result, computed by the statement OP.
#define CENSUS_FE2(name, OP)                     \
  CENSUS_KERNEL(name) {                          \
    const u32 i = threadIdx.x;                   \
    fe x, y, r;                                  \
    CENSUS_LOAD(x, OPND(0)) CENSUS_LOAD(y, OPND(1)) \
    OP;                                          \
    CENSUS_STORE(r, OUTW(0))                     \
  }

CS_FN void census_xor(fe& r, const fe& a, const fe& b) {
#pragma unroll
  for (int j = 0; j < 8; j++) r.v[j] = a.v[j] ^ b.v[j];
}

// The square, with y folded in so that the kernel keeps the baseline's loads.
CS_FN void census_sqr(fe& r, const fe& x, const fe& y) {
  fe_sqr(r, x);
  census_xor(r, r, y);
}

// The 512-bit product alone: its high half is folded into the stored words by XOR.
CS_FN void census_mul_wide(fe& r, const fe& x, const fe& y) {
  u32 t[16];
  u256_mul_wide(t, x, y);
#pragma unroll
  for (int j = 0; j < 8; j++) r.v[j] = t[j] ^ t[j + 8];
}

// The reduction alone, of the 512-bit value made of the two operands.
CS_FN void census_reduce(fe& r, const fe& x, const fe& y) {
  u32 t[16];
#pragma unroll
  for (int j = 0; j < 8; j++) {
    t[j] = x.v[j];
    t[j + 8] = y.v[j];
  }
  fe_reduce_wide(r, t);
}

CENSUS_FE2(census_base, census_xor(r, x, y))
CENSUS_FE2(census_fe_add, fe_add(r, x, y))
CENSUS_FE2(census_fe_sub, fe_sub(r, x, y))
CENSUS_FE2(census_fe_mul, fe_mul(r, x, y))
CENSUS_FE2(census_fe_sqr, census_sqr(r, x, y))
CENSUS_FE2(census_mul_wide, census_mul_wide(r, x, y))
CENSUS_FE2(census_reduce, census_reduce(r, x, y))

CENSUS_KERNEL(census_pt_dbl) {
  const u32 i = threadIdx.x;
  jpt R;
  CENSUS_LOAD(R.X, OPND(0)) CENSUS_LOAD(R.Y, OPND(1)) CENSUS_LOAD(R.Z, OPND(2))
  pt_dbl(R);
  CENSUS_STORE(R.X, OUTW(0)) CENSUS_STORE(R.Y, OUTW(1)) CENSUS_STORE(R.Z, OUTW(2))
}

// Includes the branch to the doubling for R = Q, which the main loop almost never takes.
CENSUS_KERNEL(census_pt_add_jac) {
  const u32 i = threadIdx.x;
  jpt R, Q;
  CENSUS_LOAD(R.X, OPND(0)) CENSUS_LOAD(R.Y, OPND(1)) CENSUS_LOAD(R.Z, OPND(2))
  CENSUS_LOAD(Q.X, OPND(3)) CENSUS_LOAD(Q.Y, OPND(4)) CENSUS_LOAD(Q.Z, OPND(5))
  pt_add_jac(R, Q);
  CENSUS_STORE(R.X, OUTW(0)) CENSUS_STORE(R.Y, OUTW(1)) CENSUS_STORE(R.Z, OUTW(2))
}

CENSUS_KERNEL(census_pt_add_affine) {
  const u32 i = threadIdx.x;
  jpt R;
  apt Q;
  CENSUS_LOAD(R.X, OPND(0)) CENSUS_LOAD(R.Y, OPND(1)) CENSUS_LOAD(R.Z, OPND(2))
  CENSUS_LOAD(Q.x, OPND(3)) CENSUS_LOAD(Q.y, OPND(4))
  pt_add_affine(R, Q, false);
  CENSUS_STORE(R.X, OUTW(0)) CENSUS_STORE(R.Y, OUTW(1)) CENSUS_STORE(R.Z, OUTW(2))
}

// The window's addition of a table entry on the common Z (Jacobian walk), with its inlined
// doubling for R = Q.
CENSUS_KERNEL(census_pt_add_coz) {
  const u32 i = threadIdx.x;
  jpt R;
  apt Q;
  coz_basis B;
  CENSUS_LOAD(R.X, OPND(0)) CENSUS_LOAD(R.Y, OPND(1)) CENSUS_LOAD(R.Z, OPND(2))
  CENSUS_LOAD(Q.x, OPND(3)) CENSUS_LOAD(Q.y, OPND(4))
  CENSUS_LOAD(B.lam, OPND(5)) CENSUS_LOAD(B.lam2, OPND(6)) CENSUS_LOAD(B.lam3, OPND(7))
  pt_add_coz<false>(R, nullptr, Q, B, nullptr);
  CENSUS_STORE(R.X, OUTW(0)) CENSUS_STORE(R.Y, OUTW(1)) CENSUS_STORE(R.Z, OUTW(2))
}

// ECDSA's product of scalars mod n (two Montgomery products; kernels/scalar.cuh), in ECDSA
// modules only.
#ifdef CS_CENSUS_ECDSA
CENSUS_FE2(census_sc_mul, sc_mul(r, x, y))
#endif
