// Prelude of the CTRU-Prime kernel source: fixed-width types without any standard header (NVRTC
// compiles with no system includes) and the qualifiers that make the same routines a GPU or a host build.
#pragma once
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;
typedef signed char i8;
typedef short i16;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CTRU_FN __host__ __device__ __forceinline__
#define CTRU_SYNCWARP() __syncwarp()
#define CTRU_UNROLL _Pragma("unroll")
#else
#define CTRU_FN static inline
#define CTRU_SYNCWARP() ((void)0)
#define CTRU_UNROLL
#endif

// Products: 0 = h·r mod q (shared operand large, batch small), 1 = c·f mod q2 (shared small, batch large).
#define CTRU_MOD_Q 0
#define CTRU_MOD_Q2 1

// Most forward layers a plan may have (the shipped plans have 7 or 9).
#define CTRU_MAX_LAYERS 12

struct ctru_layer {
  int radix;      // 2 or 3
  int block_len;  // coefficients per block at this layer's input
  int fwd;        // first forward twiddle (pairs w, w_shoup) of this layer in the table
  int inv;        // first inverse twiddle of this layer
};

// Everything the NTT product needs besides the twiddle table; passed by value to the kernel.
struct ctru_ntt_params {
  u32 prime;
  u32 neg_q_inv;
  u32 final_w;
  u32 final_ws;
  int n;
  int len;
  int leaf_len;
  int leaves;
  int num_layers;
  int zeta_off;  // first leaf ζ·2^32 (one word each) in the table, after the twiddle pairs
  ctru_layer layer[CTRU_MAX_LAYERS];
};

// Sizes and moduli of one parameter set for the KEM kernels (kem.cuh); passed by value.
struct ctru_kem_params {
  int n;
  int q;
  int q2;
  int log2_q2;
  int eta;
  int coin_bytes;  // C = ceil(2*eta*n/8)
  int msg_bytes;   // MSG = floor(n/16)
  int ct_bytes;
  u32 q_magic;     // ceil(2^40 / q): floor(x / q) = (x * q_magic) >> 40 for 0 <= x < 2^24
};

// Bytes of pk that are hashed, and of the seeds, keys and z.
#define CTRU_PREFIX_BYTES 33
#define CTRU_SEED_BYTES 32
