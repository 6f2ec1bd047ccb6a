// The lane layer: the products of the point formulas in steps of two, three or four independent
// products (fe_mul2, fe_sqr2, fe_mul_sqr, fe_step2, fe_mul3, fe_mul4), formed by one thread, a
// lane pair or a lane quad.
//
// CS_LANES is the number of threads per signature: 1 by default; 2 with CS_PAIR, 4 with CS_PAIR
// and CS_QUAD (GPU modules of those switches, and the host's lane emulation under CS_HOST_LANES,
// host_lanes.cpp with host_warp.h). In a group every lane computes one of the step's products and
// the lanes exchange them by shuffles, so all lanes end each step holding all results.
//
// Representation and bounds: those of field.cuh. Every routine returns exactly what fe_mul or
// fe_sqr would (in [0, p)), on every lane of the group; results may alias operands.
// Assumes: field.cuh. In a lane group, every lane of the group calls each step together with the
// same operands (the pair or quad stays converged; the shuffles' masks are its lanes), which holds
// because all lanes run the same code on the same values and so take the same branches.
// Timing: as field.cuh (no routine here branches on data).
#pragma once

// ---------------------------------------------------------------- two products per step
// The point formulas below are written as steps of two independent products. One thread forms
// both, one after the other; in a lane-pair kernel (CS_PAIR, for small batches, where one warp per
// scheduler leaves most of the GPU idle) the two lanes of a pair (lane ^ 1) hold the same values,
// each forms one product and they swap results, which halves the chain of dependent
// multiplications per signature. Both lanes end every step with identical values, so they always
// take the same branches and the pair stays converged for its shuffles.
// The lane forms run on the GPU, and on the host under CS_HOST_LANES, where host_lanes.cpp
// emulates the lanes and their shuffles so that CI checks them too.
#if (defined(__CUDA_ARCH__) || defined(CS_HOST_LANES)) && defined(CS_PAIR)
#if defined(CS_QUAD)
#define CS_LANES 4  // a quad: two pairs, which run the steps of two as pairs
#else
#define CS_LANES 2
#endif
CS_LANE_FN bool pair_upper() { return (threadIdx.x & 1u) != 0; }

// Lane 0's r0 and lane 1's r1 are in p; each lane takes the other's from its partner.
CS_LANE_FN void pair_swap_results(fe& r0, fe& r1, const fe& p) {
  const u32 mask = 3u << (threadIdx.x & 30u);
  const bool upper = pair_upper();
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const u32 q = __shfl_xor_sync(mask, p.v[j], 1);
    r0.v[j] = upper ? q : p.v[j];
    r1.v[j] = upper ? p.v[j] : q;
  }
}

// x = the operand of this lane's product: a0 on lane 0, a1 on lane 1.
CS_LANE_FN void pair_pick(fe& x, const fe& a0, const fe& a1) {
  const bool upper = pair_upper();
#pragma unroll
  for (int j = 0; j < 8; j++) x.v[j] = upper ? a1.v[j] : a0.v[j];
}

// r0 = a0 b0, r1 = a1 b1.
CS_FN void fe_mul2(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1, const fe& b1) {
  fe a, b, p;
  pair_pick(a, a0, a1);
  pair_pick(b, b0, b1);
  fe_mul(p, a, b);
  pair_swap_results(r0, r1, p);
}

// r0 = a0^2, r1 = a1^2.
CS_FN void fe_sqr2(fe& r0, const fe& a0, fe& r1, const fe& a1) {
  fe a, p;
  pair_pick(a, a0, a1);
  fe_sqr(p, a);
  pair_swap_results(r0, r1, p);
}

// r0 = a0 b0, r1 = a1^2 (the square as a product, so both lanes run the same routine).
CS_FN void fe_mul_sqr(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1) {
  fe_mul2(r0, a0, b0, r1, a1, a1);
}
#else
#define CS_LANES 1
CS_FN void fe_mul2(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1, const fe& b1) {
  fe p, q;
  fe_mul(p, a0, b0);
  fe_mul(q, a1, b1);
  fe_copy(r0, p);
  fe_copy(r1, q);
}

CS_FN void fe_sqr2(fe& r0, const fe& a0, fe& r1, const fe& a1) {
  fe p, q;
  fe_sqr(p, a0);
  fe_sqr(q, a1);
  fe_copy(r0, p);
  fe_copy(r1, q);
}

CS_FN void fe_mul_sqr(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1) {
  fe p, q;
  fe_mul(p, a0, b0);
  fe_sqr(q, a1);
  fe_copy(r0, p);
  fe_copy(r1, q);
}
#endif

// One step of two products, either of which may be a square (SQk: b_k is then ignored).
template <bool SQ0, bool SQ1>
CS_FN void fe_step2(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1, const fe& b1) {
  if (SQ0 && SQ1) fe_sqr2(r0, a0, r1, a1);
  else if (SQ1) fe_mul_sqr(r0, a0, b0, r1, a1);
  else if (SQ0) fe_mul_sqr(r1, a1, b1, r0, a0);
  else fe_mul2(r0, a0, b0, r1, a1, b1);
}

// Steps of four products (SQk: product k is a square, a_k^2; b_k is then ignored). A quad
// (CS_QUAD) forms one product per lane and gathers all four; a pair forms them in two steps of
// two; one thread forms them in turn, squares by the squaring routine.
template <bool SQ0, bool SQ1, bool SQ2, bool SQ3>
CS_FN void fe_mul4(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1, const fe& b1, fe& r2,
                   const fe& a2, const fe& b2, fe& r3, const fe& a3, const fe& b3) {
#if CS_LANES == 4
  const u32 q = threadIdx.x & 3u;
  fe a, b, p;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    a.v[j] = q == 0 ? a0.v[j] : q == 1 ? a1.v[j] : q == 2 ? a2.v[j] : a3.v[j];
    b.v[j] = q == 0 ? (SQ0 ? a0.v[j] : b0.v[j])
           : q == 1 ? (SQ1 ? a1.v[j] : b1.v[j])
           : q == 2 ? (SQ2 ? a2.v[j] : b2.v[j])
                    : (SQ3 ? a3.v[j] : b3.v[j]);
  }
  fe_mul(p, a, b);
  const u32 mask = 15u << (threadIdx.x & 28u), base = threadIdx.x & 28u;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    r0.v[j] = __shfl_sync(mask, p.v[j], base);
    r1.v[j] = __shfl_sync(mask, p.v[j], base + 1);
    r2.v[j] = __shfl_sync(mask, p.v[j], base + 2);
    r3.v[j] = __shfl_sync(mask, p.v[j], base + 3);
  }
#else
  fe p0, p1, p2, p3;
  fe_step2<SQ0, SQ1>(p0, a0, b0, p1, a1, b1);
  fe_step2<SQ2, SQ3>(p2, a2, b2, p3, a3, b3);
  fe_copy(r0, p0);
  fe_copy(r1, p1);
  fe_copy(r2, p2);
  fe_copy(r3, p3);
#endif
}

// Steps of three products. A quad forms them at once (its fourth lane repeats the third); a pair
// forms two, then the third on both lanes; one thread forms the three in turn.
template <bool SQ0, bool SQ1, bool SQ2>
CS_FN void fe_mul3(fe& r0, const fe& a0, const fe& b0, fe& r1, const fe& a1, const fe& b1, fe& r2,
                   const fe& a2, const fe& b2) {
#if CS_LANES == 4
  fe spare;
  fe_mul4<SQ0, SQ1, SQ2, SQ2>(r0, a0, b0, r1, a1, b1, r2, a2, b2, spare, a2, b2);
#else
  fe p0, p1, p2;
  fe_step2<SQ0, SQ1>(p0, a0, b0, p1, a1, b1);
  if (SQ2)
    fe_sqr(p2, a2);
  else
    fe_mul(p2, a2, b2);
  fe_copy(r0, p0);
  fe_copy(r1, p1);
  fe_copy(r2, p2);
#endif
}
