// The CTRU-Prime batch-product kernels (GPU only). The arithmetic lives in ctru_mul.cuh, which the
// host build compiles too; these wrappers only spread its units over threads and synchronise.
//
// Batch layout everywhere: instance i holds coefficients [i·n, i·n + n) of a row-major i16 array,
// already centered (see ctru_mul.cuh); outputs likewise, reduced to [0, m).

// ---- Method A, schoolbook: one block per instance, operands and the linear product in shared memory.
// Dynamic shared memory: 4·(2n + 2n − 1) bytes.
template <int PROD>
__device__ void ctru_school_body(const i16* __restrict__ shared_op, const i16* __restrict__ batch,
                                 i16* __restrict__ out, int n, int m) {
  extern __shared__ int ctru_smem[];
  int* a = ctru_smem;
  int* b = a + n;
  int* d = b + n;
  const int inst = blockIdx.x;
  const i16* src = batch + (u64)inst * n;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    a[k] = shared_op[k];
    b[k] = src[k];
  }
  __syncthreads();
  for (int k = threadIdx.x; k < 2 * n - 1; k += blockDim.x) d[k] = ctru_school_linear(a, b, n, k);
  __syncthreads();
  i16* dst = out + (u64)inst * n;
  for (int k = threadIdx.x; k < n; k += blockDim.x)
    dst[k] = (i16)ctru_reduce(PROD, ctru_fold(d, n, k), m);
}

extern "C" __global__ void ctru_school_q(const i16* shared_op, const i16* batch, i16* out, int n, int m) {
  ctru_school_body<CTRU_MOD_Q>(shared_op, batch, out, n, m);
}
extern "C" __global__ void ctru_school_q2(const i16* shared_op, const i16* batch, i16* out, int n,
                                          int m) {
  ctru_school_body<CTRU_MOD_Q2>(shared_op, batch, out, n, m);
}

// ---- Method A, incomplete NTT: one block per instance, every layer fused in one kernel, the
// transform in shared memory (len words). `hat` is the shared operand's forward transform.
template <int PROD, int B>
__device__ void ctru_ntt_body(const ctru_ntt_params& p, const u32* __restrict__ tw,
                              const u32* __restrict__ hat, const i16* __restrict__ batch,
                              i16* __restrict__ out, int m) {
  extern __shared__ u32 ctru_words[];
  u32* s = ctru_words;
  const int n = p.n, len = p.len;
  const int inst = blockIdx.x;
  const i16* src = batch + (u64)inst * n;
  for (int k = threadIdx.x; k < len; k += blockDim.x) s[k] = k < n ? ctru_lift(src[k], p.prime) : 0u;
  for (int l = 0; l < p.num_layers; l++) {
    __syncthreads();
    const int units = len / p.layer[l].radix;
    for (int u = threadIdx.x; u < units; u += blockDim.x) ctru_ntt_fwd_unit(s, tw, p, l, u);
  }
  __syncthreads();
  for (int u = threadIdx.x; u < p.leaves; u += blockDim.x) ctru_ntt_leaf_unit<B>(s, hat, tw, p, u);
  for (int l = p.num_layers - 1; l >= 0; l--) {
    __syncthreads();
    const int units = len / p.layer[l].radix;
    for (int u = threadIdx.x; u < units; u += blockDim.x) ctru_ntt_inv_unit(s, tw, p, l, u);
  }
  __syncthreads();
  int* d = (int*)s;
  for (int k = threadIdx.x; k < 2 * n - 1; k += blockDim.x) d[k] = ctru_ntt_final_unit(s, p, k);
  __syncthreads();
  i16* dst = out + (u64)inst * n;
  for (int k = threadIdx.x; k < n; k += blockDim.x)
    dst[k] = (i16)ctru_reduce(PROD, ctru_fold(d, n, k), m);
}

#define CTRU_NTT_KERNEL(name, PROD, B)                                                          \
  extern "C" __global__ void name(const ctru_ntt_params p, const u32* tw, const u32* hat,       \
                                  const i16* batch, i16* out, int m) {                         \
    ctru_ntt_body<PROD, B>(p, tw, hat, batch, out, m);                                          \
  }
CTRU_NTT_KERNEL(ctru_ntt_q_b3, CTRU_MOD_Q, 3)
CTRU_NTT_KERNEL(ctru_ntt_q_b5, CTRU_MOD_Q, 5)
CTRU_NTT_KERNEL(ctru_ntt_q_b7, CTRU_MOD_Q, 7)
CTRU_NTT_KERNEL(ctru_ntt_q2_b3, CTRU_MOD_Q2, 3)
CTRU_NTT_KERNEL(ctru_ntt_q2_b5, CTRU_MOD_Q2, 5)
CTRU_NTT_KERNEL(ctru_ntt_q2_b7, CTRU_MOD_Q2, 7)

// ---- Method B, Tensor Cores.

// One thread per matrix entry of the n_pad × n_pad matrix of the shared operand (given centered).
extern "C" __global__ void ctru_tc_matrix(int prod, const i16* shared_op, int n, int n_pad, int q,
                                          i8* a0, i8* a1) {
  extern __shared__ int ctru_op[];
  for (int k = threadIdx.x; k < n; k += blockDim.x) ctru_op[k] = shared_op[k];
  __syncthreads();
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)n_pad * n_pad) return;
  const int i = (int)(e / n_pad), j = (int)(e % n_pad);
  ctru_tc_matrix_unit(prod, ctru_op, n, n_pad, q, i, j, a0, a1);
}

// One thread per entry of the n_pad × batch_pad digit matrices of the batch.
extern "C" __global__ void ctru_tc_batch(int prod, const i16* batch, int n, int count, int n_pad,
                                         int batch_pad, i8* b0, i8* b1) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)n_pad * batch_pad) return;
  const int col = (int)(e / n_pad), k = (int)(e % n_pad);
  ctru_tc_batch_unit(prod, batch, n, count, n_pad, k, col, b0, b1);
}

#define CTRU_TC_WARPS 4
// One warp per 32 × 32 output tile; warps of a block take consecutive row tiles of the same
// instances, so they share the batch fragments through L1.
#define CTRU_TC_KERNEL(name, PROD)                                                              \
  extern "C" __global__ void __launch_bounds__(32 * CTRU_TC_WARPS)                               \
      name(const i8* a0, const i8* a1, const i8* b0, const i8* b1, i16* out, int n, int n_pad,   \
           int count, int batch_pad, int m) {                                                    \
    __shared__ __align__(32) int stage[CTRU_TC_WARPS][256];                                      \
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;                                  \
    const int row_tiles = n_pad >> 5;                                                            \
    const long long gw = (long long)blockIdx.x * CTRU_TC_WARPS + warp;                          \
    if (gw >= (long long)row_tiles * (batch_pad >> 5)) return;                                   \
    ctru_tc_tile<PROD>(a0, a1, b0, b1, out, n, n_pad, count, m, (int)(gw % row_tiles),           \
                       (int)(gw / row_tiles), stage[warp], lane, 32);                            \
  }
CTRU_TC_KERNEL(ctru_tc_gemm_q, CTRU_MOD_Q)
CTRU_TC_KERNEL(ctru_tc_gemm_q2, CTRU_MOD_Q2)
