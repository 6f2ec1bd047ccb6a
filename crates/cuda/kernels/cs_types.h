// Prelude of every kernel source: integer types without any standard header (NVRTC compiles this
// source with no system includes) and the function qualifiers for the GPU and host builds.
#pragma once
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CS_FN __host__ __device__ __forceinline__
#define CS_NOINLINE __host__ __device__ __forceinline__
#else
#define CS_FN static inline
#define CS_NOINLINE static
#endif

#if defined(__CUDA_ARCH__) && !defined(CS_PORTABLE)
#define CS_PTX 1
#else
#define CS_PTX 0
#endif

