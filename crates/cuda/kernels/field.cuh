// The field layer: 256-bit integers and arithmetic modulo the curve's prime p, the only file of
// the kernels with inline PTX.
//
// Compiled twice from this one source: by NVRTC for the GPU (inline PTX carry chains under
// CS_PTX, that is __CUDA_ARCH__ without CS_PORTABLE) and by the host C++ compiler for CI (the
// portable path), so the CPU tests check exactly the routines the kernels run.
//
// Representation: `fe` is eight 32-bit limbs, little-endian (v[0] least significant), a plain
// integer (no Montgomery form). Field elements are kept fully reduced: every fe_* routine takes
// its operands in [0, p) and returns its result in [0, p); nothing is lazily reduced.
// Bounds beyond that: fe_mul and fe_sqr accept any 256-bit operands (the reduction takes any
// 512-bit product); fe_reduce_wide any 512-bit value; u256_add / u256_sub / u256_shr1 are plain
// 256-bit integer operations returning the carry or borrow. The routines generic in the modulus
// (add_mod, sub_mod<MOD>, sub_once_if_ge, half_mod<MOD>, inv_euclid_mod<MOD>) serve p
// (CS_MOD_P) and the group order n (CS_MOD_N, used by scalar.cuh) alike: operands below m (below
// 2m for sub_once_if_ge), results below m. inv_euclid_mod returns 0 for 0 and needs gcd(a, m) = 1
// (true for any nonzero a below a prime m): its loop would not end for a value sharing a factor
// with m.
//
// Assumes: types.h, then the generated curve header (cs_curve.h, from src/codegen.rs): p and n
// odd, above 2^255 (so 2^256 - p < p and one conditional subtraction reduces any value below
// 2^256), p = 3 mod 4 (fe_pow_sqrt), and the reduction's column sums and top-carry bound, which
// codegen.rs proves for the curve at hand.
//
// Timing: the kernels handle public data only (signatures, keys, digests), so nothing here is
// constant time by contract. Additions, subtractions, selections and the small-constant products
// are branch-free; a product's reduction branches, rarely, on its value (fe_fold_carry); the
// inversion by Euclid (inv_euclid_mod) and the exponentiations' loops depend on their inputs and
// on the public exponent respectively.
//
// Length: about 700 lines, one file on purpose. Each routine's inline-PTX carry chain stands
// beside its portable twin, so that a reader (and the host build's tests) checks one against the
// other; splitting the PTX from the portable path would separate exactly what must be compared.
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

// Every multi-instruction asm below first copies its inputs into registers local to the asm block.
// NVVM treats an asm statement as one instruction that reads all inputs before it writes, so it may
// give an output, or an in/out ("+r") operand, the register of an input holding the same value (a
// constant zero limb, say); a carry chain that writes before its last read would then corrupt it.
// ptxas removes the copies.

// One 256-bit carry chain, r = a + b (ADD = 1) or r = a - b; returns the carry, or 1 on borrow.
// The PTX path names the instruction family: add.cc/addc.cc/addc or sub.cc/subc.cc/subc; the
// final addc/subc of 0 turns the carry flag into a word (1, or all ones after a borrow).
#define CS_U256_CHAIN(NAME, ADD, OP)                                                        \
  CS_FN u32 NAME(u32* r, const u32* a, const u32* b) {                                     \
    CS_U256_CHAIN_BODY(ADD, OP)                                                             \
  }

#if CS_PTX
#define CS_U256_CHAIN_BODY(ADD, OP)                                                         \
  u32 c = 0, x[8], y[8]; /* copies first: r may alias a or b */                            \
  _Pragma("unroll") for (int i = 0; i < 8; i++) {                                          \
    x[i] = a[i];                                                                            \
    y[i] = b[i];                                                                            \
  }                                                                                         \
  asm("{\n\t"                                                                               \
      ".reg .u32 q<8>;\n\t"                                                                 \
      "mov.u32 q0, %9;\n\tmov.u32 q1, %10;\n\tmov.u32 q2, %11;\n\tmov.u32 q3, %12;\n\t"     \
      "mov.u32 q4, %13;\n\tmov.u32 q5, %14;\n\tmov.u32 q6, %15;\n\tmov.u32 q7, %16;\n\t"    \
      OP ".cc.u32 %0, %0, q0;\n\t" OP "c.cc.u32 %1, %1, q1;\n\t"                             \
      OP "c.cc.u32 %2, %2, q2;\n\t" OP "c.cc.u32 %3, %3, q3;\n\t"                            \
      OP "c.cc.u32 %4, %4, q4;\n\t" OP "c.cc.u32 %5, %5, q5;\n\t"                            \
      OP "c.cc.u32 %6, %6, q6;\n\t" OP "c.cc.u32 %7, %7, q7;\n\t"                            \
      OP "c.u32 %8, %8, 0;\n\t"                                                              \
      "}"                                                                                   \
      : "+r"(x[0]), "+r"(x[1]), "+r"(x[2]), "+r"(x[3]), "+r"(x[4]), "+r"(x[5]), "+r"(x[6]), \
        "+r"(x[7]), "+r"(c)                                                                 \
      : "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]), "r"(y[4]), "r"(y[5]), "r"(y[6]),        \
        "r"(y[7]));                                                                         \
  _Pragma("unroll") for (int i = 0; i < 8; i++) r[i] = x[i];                               \
  return c & 1;
#else
#define CS_U256_CHAIN_BODY(ADD, OP)                                                         \
  u64 c = 0; /* carry, or borrow */                                                         \
  for (int i = 0; i < 8; i++) {                                                             \
    u64 w = ADD ? (u64)a[i] + b[i] + c : (u64)a[i] - b[i] - c;                             \
    r[i] = (u32)w;                                                                          \
    c = ADD ? w >> 32 : w >> 63; /* a borrow wraps w below zero */                          \
  }                                                                                         \
  return (u32)c;
#endif

CS_U256_CHAIN(u256_add, 1, "add")
CS_U256_CHAIN(u256_sub, 0, "sub")

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

// ---------------------------------------------------------------- F_p

// r = a + b mod m for a, b < m (the field prime, or the group order for scalars).
CS_FN void add_mod(fe& r, const fe& a, const fe& b, const fe& m) {
  fe t, u;
  u32 c = u256_add(t.v, a.v, b.v);
  u32 bw = u256_sub(u.v, t.v, m.v);
  fe_cmov(t, u, (c | (bw ^ 1)) != 0);
  fe_copy(r, t);
}

// a = a mod m for a < 2m: one conditional subtraction.
CS_FN void sub_once_if_ge(fe& a, const fe& m) {
  fe u;
  u32 bw = u256_sub(u.v, a.v, m.v);
  fe_cmov(a, u, bw == 0);
}

CS_FN void fe_add(fe& r, const fe& a, const fe& b) {
  fe p;
  CS_LOAD_CONST(p, curve_p);
  add_mod(r, a, b, p);
}

// The two moduli of the kernels: the field prime p and the group order n (ECDSA's scalars, and
// the scalar inversion by Euclid). A template argument keeps the modulus' words immediates.
#define CS_MOD_P 0
#define CS_MOD_N 1

template <int MOD>
CS_FN void mod_load(fe& m) {
  if (MOD == CS_MOD_N)
    CS_LOAD_CONST(m, curve_n);
  else
    CS_LOAD_CONST(m, curve_p);
}

// r = a - b mod m for a, b < m.
template <int MOD>
CS_FN void sub_mod(fe& r, const fe& a, const fe& b) {
  fe t, m;
  mod_load<MOD>(m);
  u32 bw = u256_sub(t.v, a.v, b.v);
  u32 mask = 0u - bw;
#pragma unroll
  for (int i = 0; i < 8; i++) m.v[i] &= mask;
  u256_add(r.v, t.v, m.v);
}

CS_FN void fe_sub(fe& r, const fe& a, const fe& b) { sub_mod<CS_MOD_P>(r, a, b); }

CS_FN void fe_neg(fe& r, const fe& a) {
  fe z;
  fe_set_word(z, 0);
  fe_sub(r, z, a);
}

// y = -y where `negate` holds, without a branch.
CS_FN void fe_neg_if(fe& y, bool negate) {
  fe ny;
  fe_neg(ny, y);
  fe_cmov(y, ny, negate);
}

// The reduction's corrections, which random operands need about once in 10^8 (again: the top
// fold carried out) and once in 2^31 (r >= p) multiplications: 2^256 - p added once more, then
// one conditional subtraction of p. CS_RARE_CALL (an ablation define) keeps its body out of line,
// one copy called from every product, instead of a cold block inlined at each one.
#if defined(CS_RARE_CALL) && (defined(__CUDACC__) || defined(__CUDACC_RTC__))
__host__ __device__ __noinline__ fe fe_reduce_rare(fe r, u32 again) {
#else
CS_FN fe fe_reduce_rare(fe r, u32 again) {
#endif
  fe k;
  u32 mask = 0u - again;
#pragma unroll
  for (int j = 0; j < 8; j++) k.v[j] = curve_k(j) & mask;
  u256_add(r.v, r.v, k.v);
  // Now 0 <= r < 2^256 < 2p.
  fe p;
  CS_LOAD_CONST(p, curve_p);
  sub_once_if_ge(r, p);
  return r;
}

// r + c 2^256 mod p for 0 <= r < 2^256 and 0 <= c <= CS_TOP_CARRY_MAX: the words of c (2^256 - p)
// (generated, mostly constants) added in one carry chain, then the rare corrections.
CS_FN void fe_fold_carry(fe& r, u32 c) {
  fe ck;
  curve_k_times(c, ck.v);
  u32 again = u256_add(r.v, r.v, ck.v);
#ifdef CS_CENSUS_COMMON_PATH  // examples/kernel_census: the test and branch, without the body
  if (again != 0 || r.v[7] >= curve_p(7)) __trap();
#elif defined(CS_RARE_ALWAYS)  // ablation: the corrections on every product, without a branch
  r = fe_reduce_rare(r, again);
#else
  if (again != 0 || r.v[7] >= curve_p(7)) r = fe_reduce_rare(r, again);
#endif
}

// Reduces a 512-bit product modulo p: the generated column sums, one signed carry pass, then the
// top carry c (0 <= c <= CS_TOP_CARRY_MAX) folded in as c * (2^256 - p) and the fold's own carry
// once more; codegen.rs (top_carry_bound) proves that neither fold overflows. Both corrections
// after the first fold run only when they can change r: when the fold carried out, or when r's top
// word reaches p's (r < p otherwise). For the primes here, p's top word is 2^32 - 1 or 2^32 - 2,
// so a warp almost never takes the branch, and ptxas keeps it a branch (not predicated code): a
// product's common path is 170 instructions instead of 204 (examples/kernel_census, sm_90).
CS_FN void fe_reduce_wide(fe& r, const u32 t[16]) {
  i64 acc[8];
  curve_reduce_columns(t, acc);
  i64 carry = 0;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    i64 x = acc[j] + carry;
    r.v[j] = (u32)x;
    carry = x >> 32;  // arithmetic shift: floor division by 2^32
  }
  fe_fold_carry(r, (u32)(carry + CS_REDUCE_BIAS));  // the bias of negative rows (P-256), else 0
}

// r = K a mod p for a small constant K (3, 4 or 8 in the point formulas) and a < p: one pass of
// word products, then the carry c = floor(K a / 2^256) <= K - 1 folded as in a reduction. About a
// third of the instructions of the K - 1 or log2(K) modular additions it replaces.
template <u32 K>
CS_FN void fe_mul_small(fe& r, const fe& a) {
  static_assert(K >= 2 && K - 1 <= CS_TOP_CARRY_MAX, "the carry must fold like a reduction's");
  u64 c = 0;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    c += (u64)a.v[j] * K;
    r.v[j] = (u32)c;
    c >>= 32;
  }
  fe_fold_carry(r, (u32)c);
}

// CS_ROW_CHAINS selects the first product routine (an ablation); the default is even/odd.
#if CS_PTX && !defined(CS_ROW_CHAINS)
#define CS_EVEN_ODD 1
#else
#define CS_EVEN_ODD 0
#endif

#if CS_EVEN_ODD
// Even/odd product accumulation. Each 32x32 partial product's low and high words go to adjacent
// words of one accumulator in a single carry chain (mad.lo.cc then madc.hi.cc), so ptxas can fuse
// the pair into one 64-bit IMAD.WIDE on a register pair. Products landing at even word offsets go
// to `ev` (ev[k] is word k), those at odd offsets to `od` (od[k] is word k + 1); the two are added
// once at the end. Every chain's top word has only received carries before, so it cannot overflow.
//
// chain1 … chain4_top all run one chain: q0 (= a) times q1, q2, … (the b words), the low word of
// q0·qj into acc word 2(j−1) and its high word into 2j−1, each step carrying into the next.
// CS_EO_PAIRS_J spells the first J steps once; the routines differ only in how many steps they take
// and how the chain ends. After preprocessing the asm strings are exactly those the routines spelled
// out before, so the PTX and the CUBIN are unchanged.
#define CS_EO_PAIRS_1                   \
  "mad.lo.cc.u32 %0, q0, q1, %0;\n\t"  \
  "madc.hi.cc.u32 %1, q0, q1, %1;\n\t"
#define CS_EO_PAIRS_2                   \
  CS_EO_PAIRS_1                         \
  "madc.lo.cc.u32 %2, q0, q2, %2;\n\t" \
  "madc.hi.cc.u32 %3, q0, q2, %3;\n\t"
#define CS_EO_PAIRS_3                   \
  CS_EO_PAIRS_2                         \
  "madc.lo.cc.u32 %4, q0, q3, %4;\n\t" \
  "madc.hi.cc.u32 %5, q0, q3, %5;\n\t"

// acc[0..8] += a * (b0 + b1 2^64 + b2 2^128 + b3 2^192), low/high words interleaved.
CS_FN void chain4(u32* acc, u32 a, u32 b0, u32 b1, u32 b2, u32 b3) {
  asm("{\n\t"
      ".reg .u32 q<5>;\n\t"
      "mov.u32 q0, %9;\n\t"
      "mov.u32 q1, %10;\n\t"
      "mov.u32 q2, %11;\n\t"
      "mov.u32 q3, %12;\n\t"
      "mov.u32 q4, %13;\n\t"
      CS_EO_PAIRS_3
      "madc.lo.cc.u32 %6, q0, q4, %6;\n\t"
      "madc.hi.cc.u32 %7, q0, q4, %7;\n\t"
      "addc.u32 %8, %8, 0;\n\t"
      "}"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),
        "+r"(acc[6]), "+r"(acc[7]), "+r"(acc[8])
      : "r"(a), "r"(b0), "r"(b1), "r"(b2), "r"(b3));
}

// The same for the last row, whose carry out of acc[7] is zero by the size of the product.
CS_FN void chain4_top(u32* acc, u32 a, u32 b0, u32 b1, u32 b2, u32 b3) {
  asm("{\n\t"
      ".reg .u32 q<5>;\n\t"
      "mov.u32 q0, %8;\n\t"
      "mov.u32 q1, %9;\n\t"
      "mov.u32 q2, %10;\n\t"
      "mov.u32 q3, %11;\n\t"
      "mov.u32 q4, %12;\n\t"
      CS_EO_PAIRS_3
      "madc.lo.cc.u32 %6, q0, q4, %6;\n\t"
      "madc.hi.u32 %7, q0, q4, %7;\n\t"
      "}"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),
        "+r"(acc[6]), "+r"(acc[7])
      : "r"(a), "r"(b0), "r"(b1), "r"(b2), "r"(b3));
}

// Chains of 1, 2 and 3 products (the triangle of a squaring), each with its carry word.
CS_FN void chain1(u32* acc, u32 a, u32 b0) {
  asm("{\n\t"
      ".reg .u32 q<2>;\n\t"
      "mov.u32 q0, %3;\n\t"
      "mov.u32 q1, %4;\n\t"
      CS_EO_PAIRS_1
      "addc.u32 %2, %2, 0;\n\t"
      "}"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2])
      : "r"(a), "r"(b0));
}
CS_FN void chain2(u32* acc, u32 a, u32 b0, u32 b1) {
  asm("{\n\t"
      ".reg .u32 q<3>;\n\t"
      "mov.u32 q0, %5;\n\t"
      "mov.u32 q1, %6;\n\t"
      "mov.u32 q2, %7;\n\t"
      CS_EO_PAIRS_2
      "addc.u32 %4, %4, 0;\n\t"
      "}"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4])
      : "r"(a), "r"(b0), "r"(b1));
}
CS_FN void chain3(u32* acc, u32 a, u32 b0, u32 b1, u32 b2) {
  asm("{\n\t"
      ".reg .u32 q<4>;\n\t"
      "mov.u32 q0, %7;\n\t"
      "mov.u32 q1, %8;\n\t"
      "mov.u32 q2, %9;\n\t"
      "mov.u32 q3, %10;\n\t"
      CS_EO_PAIRS_3
      "addc.u32 %6, %6, 0;\n\t"
      "}"
      : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3]), "+r"(acc[4]), "+r"(acc[5]),
        "+r"(acc[6])
      : "r"(a), "r"(b0), "r"(b1), "r"(b2));
}
#undef CS_EO_PAIRS_3
#undef CS_EO_PAIRS_2
#undef CS_EO_PAIRS_1

// t[0..16) = ev + (od shifted up one word); od[15] and the carry out are zero by size.
CS_FN void merge_even_odd(u32 t[16], const u32 ev[17], const u32 od[16]) {
#pragma unroll
  for (int k = 0; k < 16; k++) t[k] = ev[k];
  asm("{\n\t"
      ".reg .u32 q<15>;\n\t"
      "mov.u32 q0, %15;\n\t"
      "mov.u32 q1, %16;\n\t"
      "mov.u32 q2, %17;\n\t"
      "mov.u32 q3, %18;\n\t"
      "mov.u32 q4, %19;\n\t"
      "mov.u32 q5, %20;\n\t"
      "mov.u32 q6, %21;\n\t"
      "mov.u32 q7, %22;\n\t"
      "mov.u32 q8, %23;\n\t"
      "mov.u32 q9, %24;\n\t"
      "mov.u32 q10, %25;\n\t"
      "mov.u32 q11, %26;\n\t"
      "mov.u32 q12, %27;\n\t"
      "mov.u32 q13, %28;\n\t"
      "mov.u32 q14, %29;\n\t"
      "add.cc.u32 %0, %0, q0;\n\t"
      "addc.cc.u32 %1, %1, q1;\n\t"
      "addc.cc.u32 %2, %2, q2;\n\t"
      "addc.cc.u32 %3, %3, q3;\n\t"
      "addc.cc.u32 %4, %4, q4;\n\t"
      "addc.cc.u32 %5, %5, q5;\n\t"
      "addc.cc.u32 %6, %6, q6;\n\t"
      "addc.cc.u32 %7, %7, q7;\n\t"
      "addc.cc.u32 %8, %8, q8;\n\t"
      "addc.cc.u32 %9, %9, q9;\n\t"
      "addc.cc.u32 %10, %10, q10;\n\t"
      "addc.cc.u32 %11, %11, q11;\n\t"
      "addc.cc.u32 %12, %12, q12;\n\t"
      "addc.cc.u32 %13, %13, q13;\n\t"
      "addc.u32 %14, %14, q14;\n\t"
      "}"
      : "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7]),
        "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11]), "+r"(t[12]), "+r"(t[13]), "+r"(t[14]),
        "+r"(t[15])
      : "r"(od[0]), "r"(od[1]), "r"(od[2]), "r"(od[3]), "r"(od[4]), "r"(od[5]), "r"(od[6]),
        "r"(od[7]), "r"(od[8]), "r"(od[9]), "r"(od[10]), "r"(od[11]), "r"(od[12]), "r"(od[13]),
        "r"(od[14]));
}
#endif

// 256 x 256 -> 512-bit product.
CS_FN void u256_mul_wide(u32 t[16], const fe& a, const fe& b) {
#if CS_EVEN_ODD
  u32 ev[17], od[16];
#pragma unroll
  for (int i = 0; i < 17; i++) ev[i] = 0;
#pragma unroll
  for (int i = 0; i < 16; i++) od[i] = 0;
  const u32* B = b.v;
#pragma unroll
  for (int i = 0; i < 8; i += 2) {
    // Row i (even): b_even lands on even words, b_odd on odd words.
    chain4(ev + i, a.v[i], B[0], B[2], B[4], B[6]);
    chain4(od + i, a.v[i], B[1], B[3], B[5], B[7]);
    // Row i + 1 (odd): b_even lands on odd words, b_odd on even words.
    chain4(od + i, a.v[i + 1], B[0], B[2], B[4], B[6]);
    if (i + 1 == 7)
      chain4_top(ev + i + 2, a.v[i + 1], B[1], B[3], B[5], B[7]);
    else
      chain4(ev + i + 2, a.v[i + 1], B[1], B[3], B[5], B[7]);
  }
  merge_even_odd(t, ev, od);
#elif CS_PTX
#pragma unroll
  for (int i = 0; i < 16; i++) t[i] = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    // Low halves of a_i * b_j into t[i+j], carry into t[i+8].
    asm("{\n\t"
        ".reg .u32 q<9>;\n\t"
        "mov.u32 q0, %9;\n\t"
        "mov.u32 q1, %10;\n\t"
        "mov.u32 q2, %11;\n\t"
        "mov.u32 q3, %12;\n\t"
        "mov.u32 q4, %13;\n\t"
        "mov.u32 q5, %14;\n\t"
        "mov.u32 q6, %15;\n\t"
        "mov.u32 q7, %16;\n\t"
        "mov.u32 q8, %17;\n\t"
        "mad.lo.cc.u32 %0, q0, q1, %0;\n\t"
        "madc.lo.cc.u32 %1, q0, q2, %1;\n\t"
        "madc.lo.cc.u32 %2, q0, q3, %2;\n\t"
        "madc.lo.cc.u32 %3, q0, q4, %3;\n\t"
        "madc.lo.cc.u32 %4, q0, q5, %4;\n\t"
        "madc.lo.cc.u32 %5, q0, q6, %5;\n\t"
        "madc.lo.cc.u32 %6, q0, q7, %6;\n\t"
        "madc.lo.cc.u32 %7, q0, q8, %7;\n\t"
        "addc.u32 %8, %8, 0;\n\t"
        "}"
        : "+r"(t[i]), "+r"(t[i + 1]), "+r"(t[i + 2]), "+r"(t[i + 3]), "+r"(t[i + 4]),
          "+r"(t[i + 5]), "+r"(t[i + 6]), "+r"(t[i + 7]), "+r"(t[i + 8])
        : "r"(a.v[i]), "r"(b.v[0]), "r"(b.v[1]), "r"(b.v[2]), "r"(b.v[3]), "r"(b.v[4]),
          "r"(b.v[5]), "r"(b.v[6]), "r"(b.v[7]));
    // High halves into t[i+1+j]; the row's total fits in i+9 words, so no carry leaves t[i+8].
    asm("{\n\t"
        ".reg .u32 q<9>;\n\t"
        "mov.u32 q0, %8;\n\t"
        "mov.u32 q1, %9;\n\t"
        "mov.u32 q2, %10;\n\t"
        "mov.u32 q3, %11;\n\t"
        "mov.u32 q4, %12;\n\t"
        "mov.u32 q5, %13;\n\t"
        "mov.u32 q6, %14;\n\t"
        "mov.u32 q7, %15;\n\t"
        "mov.u32 q8, %16;\n\t"
        "mad.hi.cc.u32 %0, q0, q1, %0;\n\t"
        "madc.hi.cc.u32 %1, q0, q2, %1;\n\t"
        "madc.hi.cc.u32 %2, q0, q3, %2;\n\t"
        "madc.hi.cc.u32 %3, q0, q4, %3;\n\t"
        "madc.hi.cc.u32 %4, q0, q5, %4;\n\t"
        "madc.hi.cc.u32 %5, q0, q6, %5;\n\t"
        "madc.hi.cc.u32 %6, q0, q7, %6;\n\t"
        "madc.hi.u32 %7, q0, q8, %7;\n\t"
        "}"
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

// 256-bit square: the 28 products a_i a_j (i < j) once, doubled, plus the diagonal a_i^2.
CS_FN void u256_sqr_wide(u32 t[16], const fe& a) {
#if CS_EVEN_ODD
  u32 ev[17], od[16];
#pragma unroll
  for (int i = 0; i < 17; i++) ev[i] = 0;
#pragma unroll
  for (int i = 0; i < 16; i++) od[i] = 0;
  const u32* A = a.v;
  // Row i: a_i a_j for j = i+1, i+3, ... at odd words 2i+1, ... (od from 2i); j = i+2, i+4, ... at
  // even words 2i+2, ... (ev from 2i+2).
  chain4(od + 0, A[0], A[1], A[3], A[5], A[7]);
  chain3(ev + 2, A[0], A[2], A[4], A[6]);
  chain3(od + 2, A[1], A[2], A[4], A[6]);
  chain3(ev + 4, A[1], A[3], A[5], A[7]);
  chain3(od + 4, A[2], A[3], A[5], A[7]);
  chain2(ev + 6, A[2], A[4], A[6]);
  chain2(od + 6, A[3], A[4], A[6]);
  chain2(ev + 8, A[3], A[5], A[7]);
  chain2(od + 8, A[4], A[5], A[7]);
  chain1(ev + 10, A[4], A[6]);
  chain1(od + 10, A[5], A[6]);
  chain1(ev + 12, A[5], A[7]);
  chain1(od + 12, A[6], A[7]);
  u32 off[16];
  merge_even_odd(off, ev, od);  // the triangle, below 2^(32*15)
  // t = 2 off + sum a_i^2 2^(64 i): double by a shift chain, then one chain of the squares.
  t[0] = off[0] << 1;
#pragma unroll
  for (int k = 1; k < 16; k++)
    asm("shf.l.clamp.b32 %0, %1, %2, 1;" : "=r"(t[k]) : "r"(off[k - 1]), "r"(off[k]));
  asm("{\n\t"
      ".reg .u32 q<8>;\n\t"
      "mov.u32 q0, %16;\n\t"
      "mov.u32 q1, %17;\n\t"
      "mov.u32 q2, %18;\n\t"
      "mov.u32 q3, %19;\n\t"
      "mov.u32 q4, %20;\n\t"
      "mov.u32 q5, %21;\n\t"
      "mov.u32 q6, %22;\n\t"
      "mov.u32 q7, %23;\n\t"
      "mad.lo.cc.u32 %0, q0, q0, %0;\n\t"
      "madc.hi.cc.u32 %1, q0, q0, %1;\n\t"
      "madc.lo.cc.u32 %2, q1, q1, %2;\n\t"
      "madc.hi.cc.u32 %3, q1, q1, %3;\n\t"
      "madc.lo.cc.u32 %4, q2, q2, %4;\n\t"
      "madc.hi.cc.u32 %5, q2, q2, %5;\n\t"
      "madc.lo.cc.u32 %6, q3, q3, %6;\n\t"
      "madc.hi.cc.u32 %7, q3, q3, %7;\n\t"
      "madc.lo.cc.u32 %8, q4, q4, %8;\n\t"
      "madc.hi.cc.u32 %9, q4, q4, %9;\n\t"
      "madc.lo.cc.u32 %10, q5, q5, %10;\n\t"
      "madc.hi.cc.u32 %11, q5, q5, %11;\n\t"
      "madc.lo.cc.u32 %12, q6, q6, %12;\n\t"
      "madc.hi.cc.u32 %13, q6, q6, %13;\n\t"
      "madc.lo.cc.u32 %14, q7, q7, %14;\n\t"
      "madc.hi.u32 %15, q7, q7, %15;\n\t"
      "}"
      : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]),
        "+r"(t[7]), "+r"(t[8]), "+r"(t[9]), "+r"(t[10]), "+r"(t[11]), "+r"(t[12]), "+r"(t[13]),
        "+r"(t[14]), "+r"(t[15])
      : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(A[4]), "r"(A[5]), "r"(A[6]), "r"(A[7]));
#else
  u256_mul_wide(t, a, a);
#endif
}

CS_FN void fe_mul(fe& r, const fe& a, const fe& b) {
  CS_COUNT_MUL();
  u32 t[16];
  u256_mul_wide(t, a, b);
  fe_reduce_wide(r, t);
}

CS_FN void fe_sqr(fe& r, const fe& a) {
  CS_COUNT_MUL();
  u32 t[16];
  u256_sqr_wide(t, a);
  fe_reduce_wide(r, t);
}

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

// x / 2 mod m (m odd).
template <int MOD>
CS_FN void half_mod(fe& x) {
  fe m, t;
  mod_load<MOD>(m);
  u32 odd = x.v[0] & 1;
  u32 mask = 0u - odd;
#pragma unroll
  for (int i = 0; i < 8; i++) m.v[i] &= mask;
  u32 c = u256_add(t.v, x.v, m.v);
  u256_shr1(t, c);
  fe_copy(x, t);
}

CS_FN bool fe_is_one(const fe& a) {
  u32 acc = a.v[0] ^ 1;
#pragma unroll
  for (int i = 1; i < 8; i++) acc |= a.v[i];
  return acc == 0;
}

// Binary extended Euclid: a^-1 mod m (p or n, both prime) for 0 < a < m (returns 0 for 0).
template <int MOD>
CS_NOINLINE void inv_euclid_mod(fe& r, const fe& a) {
  if (fe_is_zero(a)) {
    fe_set_word(r, 0);
    return;
  }
  fe u, v, x1, x2;
  fe_copy(u, a);
  mod_load<MOD>(v);
  fe_set_word(x1, 1);
  fe_set_word(x2, 0);
  while (!fe_is_one(u) && !fe_is_one(v)) {
    while ((u.v[0] & 1) == 0) {
      u256_shr1(u, 0);
      half_mod<MOD>(x1);
    }
    while ((v.v[0] & 1) == 0) {
      u256_shr1(v, 0);
      half_mod<MOD>(x2);
    }
    fe d;
    if (u256_sub(d.v, u.v, v.v) == 0) {
      fe_copy(u, d);
      sub_mod<MOD>(x1, x1, x2);
    } else {
      u256_sub(v.v, v.v, u.v);
      sub_mod<MOD>(x2, x2, x1);
    }
  }
  if (fe_is_one(u))
    fe_copy(r, x1);
  else
    fe_copy(r, x2);
}

CS_FN void fe_inv_euclid(fe& r, const fe& a) { inv_euclid_mod<CS_MOD_P>(r, a); }

CS_FN void fe_inv_fermat(fe& r, const fe& a) { fe_pow_inv(r, a); }

// The field inversion of a module (KernelConfig::inversion): Euclid or Fermat.
#define CS_INV_EUCLID 0
#define CS_INV_FERMAT 1

template <int INV>
CS_FN void fe_inv(fe& r, const fe& a) {
  if (INV == CS_INV_FERMAT)
    fe_inv_fermat(r, a);
  else
    fe_inv_euclid(r, a);
}
