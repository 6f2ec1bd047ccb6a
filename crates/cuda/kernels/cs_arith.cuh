// 256-bit prime-field and curve arithmetic for one thread per signature.
//
// Compiled twice from this one source: by NVRTC for the GPU (inline PTX carry chains under
// __CUDA_ARCH__) and by the host C++ compiler for CI (the portable path), so the CPU test checks
// exactly the routines the kernels run. The curve comes from the generated cs_curve.h, which must be
// included first; nothing here names a particular curve.
#pragma once

#ifdef CS_COUNT_MULS
extern thread_local unsigned long long cs_mul_count;
#define CS_COUNT_MUL() (cs_mul_count++)
#else
#define CS_COUNT_MUL() ((void)0)
#endif

struct fe {
  u32 v[8];
};

// ---------------------------------------------------------------- word helpers

CS_FN void fe_copy(fe& r, const fe& a) {
#pragma unroll
  for (int i = 0; i < 8; i++) r.v[i] = a.v[i];
}

CS_FN void fe_set_word(fe& r, u32 w) {
  r.v[0] = w;
#pragma unroll
  for (int i = 1; i < 8; i++) r.v[i] = 0;
}

CS_FN bool fe_is_zero(const fe& a) {
  u32 acc = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) acc |= a.v[i];
  return acc == 0;
}

CS_FN bool fe_eq(const fe& a, const fe& b) {
  u32 acc = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) acc |= a.v[i] ^ b.v[i];
  return acc == 0;
}

// r = cond ? a : r, branch-free.
CS_FN void fe_cmov(fe& r, const fe& a, bool cond) {
  u32 mask = 0u - (u32)cond;
#pragma unroll
  for (int i = 0; i < 8; i++) r.v[i] = (r.v[i] & ~mask) | (a.v[i] & mask);
}

// r = a + b over 256 bits; returns the carry out.
CS_FN u32 u256_add(u32* r, const u32* a, const u32* b) {
#if CS_PTX
  u32 c;
  asm("add.cc.u32 %0, %9, %17;\n\t"
      "addc.cc.u32 %1, %10, %18;\n\t"
      "addc.cc.u32 %2, %11, %19;\n\t"
      "addc.cc.u32 %3, %12, %20;\n\t"
      "addc.cc.u32 %4, %13, %21;\n\t"
      "addc.cc.u32 %5, %14, %22;\n\t"
      "addc.cc.u32 %6, %15, %23;\n\t"
      "addc.cc.u32 %7, %16, %24;\n\t"
      "addc.u32 %8, 0, 0;"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
        "=r"(r[7]), "=r"(c)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
        "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
  return c;
#else
  u64 c = 0;
  for (int i = 0; i < 8; i++) {
    c += (u64)a[i] + b[i];
    r[i] = (u32)c;
    c >>= 32;
  }
  return (u32)c;
#endif
}

// r = a - b over 256 bits; returns 1 on borrow.
CS_FN u32 u256_sub(u32* r, const u32* a, const u32* b) {
#if CS_PTX
  u32 c;
  asm("sub.cc.u32 %0, %9, %17;\n\t"
      "subc.cc.u32 %1, %10, %18;\n\t"
      "subc.cc.u32 %2, %11, %19;\n\t"
      "subc.cc.u32 %3, %12, %20;\n\t"
      "subc.cc.u32 %4, %13, %21;\n\t"
      "subc.cc.u32 %5, %14, %22;\n\t"
      "subc.cc.u32 %6, %15, %23;\n\t"
      "subc.cc.u32 %7, %16, %24;\n\t"
      "subc.u32 %8, 0, 0;"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]),
        "=r"(r[7]), "=r"(c)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
        "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
  return c & 1;
#else
  i64 br = 0;
  for (int i = 0; i < 8; i++) {
    i64 d = (i64)a[i] - (i64)b[i] - br;
    r[i] = (u32)d;
    br = d < 0 ? 1 : 0;
  }
  return (u32)br;
#endif
}

// Word functions of the generated header as a value.
#define CS_LOAD_CONST(dst, fn)             \
  do {                                     \
    _Pragma("unroll") for (int _i = 0; _i < 8; _i++)(dst).v[_i] = fn(_i); \
  } while (0)

CS_FN bool u256_ge_const_p(const fe& a) {
  fe p, t;
  CS_LOAD_CONST(p, curve_p);
  return u256_sub(t.v, a.v, p.v) == 0;
}

CS_FN bool u256_ge_const_n(const fe& a) {
  fe n, t;
  CS_LOAD_CONST(n, curve_n);
  return u256_sub(t.v, a.v, n.v) == 0;
}

// ---------------------------------------------------------------- F_p

CS_FN void fe_add(fe& r, const fe& a, const fe& b) {
  fe t, u, p;
  CS_LOAD_CONST(p, curve_p);
  u32 c = u256_add(t.v, a.v, b.v);
  u32 bw = u256_sub(u.v, t.v, p.v);
  fe_cmov(t, u, (c | (bw ^ 1)) != 0);
  fe_copy(r, t);
}

CS_FN void fe_sub(fe& r, const fe& a, const fe& b) {
  fe t, p;
  CS_LOAD_CONST(p, curve_p);
  u32 bw = u256_sub(t.v, a.v, b.v);
  u32 mask = 0u - bw;
#pragma unroll
  for (int i = 0; i < 8; i++) p.v[i] &= mask;
  u256_add(r.v, t.v, p.v);
}

CS_FN void fe_neg(fe& r, const fe& a) {
  fe z;
  fe_set_word(z, 0);
  fe_sub(r, z, a);
}

// Reduces a 512-bit product modulo p by the generated column sums and two carry folds.
CS_FN void fe_reduce_wide(fe& r, const u32 t[16]) {
  i64 acc[8];
  curve_reduce_columns(t, acc);
#pragma unroll
  for (int round = 0; round < 3; round++) {
    i64 carry = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
      i64 x = acc[j] + carry;
      r.v[j] = (u32)x;
      carry = x >> 32;  // arithmetic shift: floor division by 2^32
    }
    if (round == 2) break;
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j] = (i64)r.v[j];
    curve_fold_carry(carry, acc);
  }
  // Now 0 <= r < 2^256 < 2p: one conditional subtraction.
  fe u, p;
  CS_LOAD_CONST(p, curve_p);
  u32 bw = u256_sub(u.v, r.v, p.v);
  fe_cmov(r, u, bw == 0);
}

// 256 x 256 -> 512-bit product.
CS_FN void u256_mul_wide(u32 t[16], const fe& a, const fe& b) {
#if CS_PTX
#pragma unroll
  for (int i = 0; i < 16; i++) t[i] = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    // Low halves of a_i * b_j into t[i+j], carry into t[i+8].
    asm("mad.lo.cc.u32 %0, %9, %10, %0;\n\t"
        "madc.lo.cc.u32 %1, %9, %11, %1;\n\t"
        "madc.lo.cc.u32 %2, %9, %12, %2;\n\t"
        "madc.lo.cc.u32 %3, %9, %13, %3;\n\t"
        "madc.lo.cc.u32 %4, %9, %14, %4;\n\t"
        "madc.lo.cc.u32 %5, %9, %15, %5;\n\t"
        "madc.lo.cc.u32 %6, %9, %16, %6;\n\t"
        "madc.lo.cc.u32 %7, %9, %17, %7;\n\t"
        "addc.u32 %8, %8, 0;"
        : "+r"(t[i]), "+r"(t[i + 1]), "+r"(t[i + 2]), "+r"(t[i + 3]), "+r"(t[i + 4]),
          "+r"(t[i + 5]), "+r"(t[i + 6]), "+r"(t[i + 7]), "+r"(t[i + 8])
        : "r"(a.v[i]), "r"(b.v[0]), "r"(b.v[1]), "r"(b.v[2]), "r"(b.v[3]), "r"(b.v[4]),
          "r"(b.v[5]), "r"(b.v[6]), "r"(b.v[7]));
    // High halves into t[i+1+j]; the row's total fits in i+9 words, so no carry leaves t[i+8].
    asm("mad.hi.cc.u32 %0, %8, %9, %0;\n\t"
        "madc.hi.cc.u32 %1, %8, %10, %1;\n\t"
        "madc.hi.cc.u32 %2, %8, %11, %2;\n\t"
        "madc.hi.cc.u32 %3, %8, %12, %3;\n\t"
        "madc.hi.cc.u32 %4, %8, %13, %4;\n\t"
        "madc.hi.cc.u32 %5, %8, %14, %5;\n\t"
        "madc.hi.cc.u32 %6, %8, %15, %6;\n\t"
        "madc.hi.u32 %7, %8, %16, %7;"
        : "+r"(t[i + 1]), "+r"(t[i + 2]), "+r"(t[i + 3]), "+r"(t[i + 4]), "+r"(t[i + 5]),
          "+r"(t[i + 6]), "+r"(t[i + 7]), "+r"(t[i + 8])
        : "r"(a.v[i]), "r"(b.v[0]), "r"(b.v[1]), "r"(b.v[2]), "r"(b.v[3]), "r"(b.v[4]),
          "r"(b.v[5]), "r"(b.v[6]), "r"(b.v[7]));
  }
#else
  for (int i = 0; i < 16; i++) t[i] = 0;
  for (int i = 0; i < 8; i++) {
    u64 c = 0;
    for (int j = 0; j < 8; j++) {
      c += (u64)a.v[i] * b.v[j] + t[i + j];
      t[i + j] = (u32)c;
      c >>= 32;
    }
    t[i + 8] = (u32)c;
  }
#endif
}

CS_FN void fe_mul(fe& r, const fe& a, const fe& b) {
  CS_COUNT_MUL();
  u32 t[16];
  u256_mul_wide(t, a, b);
  fe_reduce_wide(r, t);
}

CS_FN void fe_sqr(fe& r, const fe& a) { fe_mul(r, a, a); }

// a^e for the fixed exponent given by a generated word function (warp-uniform branches).
#define CS_DEFINE_POW(name, expfn)                          \
  CS_NOINLINE void name(fe& r, const fe& a) {               \
    fe acc;                                                 \
    fe_set_word(acc, 1);                                    \
    for (int wi = 7; wi >= 0; wi--) {                       \
      u32 w = expfn(wi);                                    \
      for (int bit = 31; bit >= 0; bit--) {                 \
        fe_sqr(acc, acc);                                   \
        if ((w >> bit) & 1) fe_mul(acc, acc, a);            \
      }                                                     \
    }                                                       \
    fe_copy(r, acc);                                        \
  }
CS_DEFINE_POW(fe_pow_sqrt, curve_sqrt_exp)
CS_DEFINE_POW(fe_pow_inv, curve_inv_exp)

// One-bit right shift of the 257-bit value (top:a).
CS_FN void u256_shr1(fe& a, u32 top) {
#if CS_PTX
#pragma unroll
  for (int i = 0; i < 7; i++)
    asm("shf.r.clamp.b32 %0, %1, %2, 1;" : "=r"(a.v[i]) : "r"(a.v[i]), "r"(a.v[i + 1]));
  asm("shf.r.clamp.b32 %0, %1, %2, 1;" : "=r"(a.v[7]) : "r"(a.v[7]), "r"(top));
#else
  for (int i = 0; i < 7; i++) a.v[i] = (a.v[i] >> 1) | (a.v[i + 1] << 31);
  a.v[7] = (a.v[7] >> 1) | (top << 31);
#endif
}

// x / 2 mod p.
CS_FN void fe_half(fe& x) {
  fe p, t;
  CS_LOAD_CONST(p, curve_p);
  u32 odd = x.v[0] & 1;
  u32 mask = 0u - odd;
#pragma unroll
  for (int i = 0; i < 8; i++) p.v[i] &= mask;
  u32 c = u256_add(t.v, x.v, p.v);
  u256_shr1(t, c);
  fe_copy(x, t);
}

CS_FN bool fe_is_one(const fe& a) {
  u32 acc = a.v[0] ^ 1;
#pragma unroll
  for (int i = 1; i < 8; i++) acc |= a.v[i];
  return acc == 0;
}

// Binary extended Euclid: a^-1 mod p for a != 0 (returns 0 for 0).
CS_NOINLINE void fe_inv_euclid(fe& r, const fe& a) {
  if (fe_is_zero(a)) {
    fe_set_word(r, 0);
    return;
  }
  fe u, v, x1, x2;
  fe_copy(u, a);
  CS_LOAD_CONST(v, curve_p);
  fe_set_word(x1, 1);
  fe_set_word(x2, 0);
  while (!fe_is_one(u) && !fe_is_one(v)) {
    while ((u.v[0] & 1) == 0) {
      u256_shr1(u, 0);
      fe_half(x1);
    }
    while ((v.v[0] & 1) == 0) {
      u256_shr1(v, 0);
      fe_half(x2);
    }
    fe d;
    if (u256_sub(d.v, u.v, v.v) == 0) {
      fe_copy(u, d);
      fe_sub(x1, x1, x2);
    } else {
      u256_sub(v.v, v.v, u.v);
      fe_sub(x2, x2, x1);
    }
  }
  if (fe_is_one(u))
    fe_copy(r, x1);
  else
    fe_copy(r, x2);
}

CS_FN void fe_inv_fermat(fe& r, const fe& a) { fe_pow_inv(r, a); }

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

// R = 2R for a = -3 (3M + 5S). Infinity stays infinity.
CS_FN void pt_dbl(jpt& R) {
  fe delta, gamma, beta, alpha, t0, t1;
  fe_sqr(delta, R.Z);
  fe_sqr(gamma, R.Y);
  fe_mul(beta, R.X, gamma);
  fe_sub(t0, R.X, delta);
  fe_add(t1, R.X, delta);
  fe_mul(alpha, t0, t1);
  fe_add(t0, alpha, alpha);
  fe_add(alpha, alpha, t0);  // alpha = 3 (X - delta)(X + delta)
  // Z3 = (Y + Z)^2 - gamma - delta
  fe_add(t0, R.Y, R.Z);
  fe_sqr(t0, t0);
  fe_sub(t0, t0, gamma);
  fe_sub(R.Z, t0, delta);
  // X3 = alpha^2 - 8 beta
  fe_add(beta, beta, beta);
  fe_add(beta, beta, beta);  // 4 beta
  fe_sqr(t0, alpha);
  fe_add(t1, beta, beta);
  fe_sub(R.X, t0, t1);
  // Y3 = alpha (4 beta - X3) - 8 gamma^2
  fe_sub(t0, beta, R.X);
  fe_mul(t0, alpha, t0);
  fe_sqr(gamma, gamma);
  fe_add(gamma, gamma, gamma);
  fe_add(gamma, gamma, gamma);
  fe_add(gamma, gamma, gamma);
  fe_sub(R.Y, t0, gamma);
}

// Co-Z addition of an affine point: Q is first brought to R's Z (X2 = x Z^2, Y2 = y Z^3), then
// Meloni's addition of two points sharing Z (8M + 3S in all). Handles R = infinity, R = Q (doubles)
// and R = -Q (infinity); q_inf makes it a no-op (used by branch-free table selection).
CS_NOINLINE void pt_add_affine(jpt& R, const apt& Q, bool q_inf) {
  fe z2, x2, y2, h, rr, a, b, c, t;
  fe_sqr(z2, R.Z);
  fe_mul(x2, Q.x, z2);
  fe_mul(t, z2, R.Z);
  fe_mul(y2, Q.y, t);
  fe_sub(h, x2, R.X);
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
  fe_sqr(a, h);          // A = (X2 - X1)^2
  fe_mul(b, R.X, a);     // B = X1 A
  fe_mul(c, x2, a);      // C = X2 A
  fe_sqr(t, rr);         // D = (Y2 - Y1)^2
  fe_sub(t, t, b);
  fe_sub(S.X, t, c);     // X3 = D - B - C
  fe_sub(t, b, S.X);
  fe_mul(t, rr, t);      // (Y2 - Y1)(B - X3)
  fe_sub(c, c, b);
  fe_mul(c, R.Y, c);     // Y1 (C - B)
  fe_sub(S.Y, t, c);
  fe_mul(S.Z, R.Z, h);
  jpt Qj;
  pt_from_affine(Qj, Q);
  pt_cmov(S, Qj, r_inf);
  pt_cmov(S, R, q_inf);
  fe_copy(R.X, S.X);
  fe_copy(R.Y, S.Y);
  fe_copy(R.Z, S.Z);
}

// R = R + Q, both Jacobian (12M + 4S), with every special case.
CS_NOINLINE void pt_add_jac(jpt& R, const jpt& Q) {
  bool r_inf = fe_is_zero(R.Z), q_inf = fe_is_zero(Q.Z);
  fe z1z1, z2z2, u1, u2, s1, s2, h, rr, t, hh, hhh;
  fe_sqr(z1z1, R.Z);
  fe_sqr(z2z2, Q.Z);
  fe_mul(u1, R.X, z2z2);
  fe_mul(u2, Q.X, z1z1);
  fe_mul(t, z2z2, Q.Z);
  fe_mul(s1, R.Y, t);
  fe_mul(t, z1z1, R.Z);
  fe_mul(s2, Q.Y, t);
  fe_sub(h, u2, u1);
  fe_sub(rr, s2, s1);
  if (!r_inf && !q_inf && fe_is_zero(h)) {
    if (fe_is_zero(rr))
      pt_dbl(R);
    else
      pt_set_inf(R);
    return;
  }
  jpt S;
  fe_sqr(hh, h);
  fe_mul(hhh, hh, h);
  fe_mul(u1, u1, hh);  // V = U1 H^2
  fe_sqr(t, rr);
  fe_sub(t, t, hhh);
  fe_sub(t, t, u1);
  fe_sub(S.X, t, u1);  // X3 = r^2 - H^3 - 2V
  fe_sub(t, u1, S.X);
  fe_mul(t, rr, t);
  fe_mul(s1, s1, hhh);
  fe_sub(S.Y, t, s1);  // Y3 = r (V - X3) - S1 H^3
  fe_mul(t, R.Z, Q.Z);
  fe_mul(S.Z, t, h);
  pt_cmov(S, Q, r_inf);
  pt_cmov(S, R, q_inf);
  fe_copy(R.X, S.X);
  fe_copy(R.Y, S.Y);
  fe_copy(R.Z, S.Z);
}
