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

// The compact kernels (KernelConfig::compact) call the point doubling instead of inlining it, so
// the kernel holds one copy of it (about 2000 instructions) instead of one per call site: a warp
// that runs alone on its scheduler, as in small batches, then waits far less on instruction fetch.
#if defined(CS_COMPACT) && (defined(__CUDACC__) || defined(__CUDACC_RTC__))
#define CS_DBL_FN __host__ __device__ __noinline__
#else
#define CS_DBL_FN CS_FN
#endif

// The lane helpers of the pair and quad kernels (lanes.cuh): device code, or plain functions in
// the host's lane emulation (host_lanes.cpp).
#if defined(CS_HOST_LANES)
#define CS_LANE_FN static inline
#else
#define CS_LANE_FN __device__ __forceinline__
#endif

#if defined(__CUDA_ARCH__) && !defined(CS_PORTABLE)
#define CS_PTX 1
#else
#define CS_PTX 0
#endif

