//! The kernel source and its compilation: NVRTC to CUBIN for the device's architecture through
//! `chainsig_gpu::compile_cached_with` (the options and on-disk cache of every chainsig module).

use chainsig_gpu::Compiled;

const TYPES: &str = include_str!("../kernels/ctru_types.h");
const MUL: &str = include_str!("../kernels/ctru_mul.cuh");
const KERNELS: &str = include_str!("../kernels/ctru_kernels.cuh");
const KECCAK: &str = include_str!("../kernels/keccak.cuh");
const KEM: &str = include_str!("../kernels/kem.cuh");
const KEM_KERNELS: &str = include_str!("../kernels/ctru_kem_kernels.cuh");

/// Every kernel symbol in the module.
pub const KERNEL_NAMES: [&str; 19] = [
    "ctru_school_q",
    "ctru_school_q2",
    "ctru_ntt_q_b3",
    "ctru_ntt_q_b5",
    "ctru_ntt_q_b7",
    "ctru_ntt_q2_b3",
    "ctru_ntt_q2_b5",
    "ctru_ntt_q2_b7",
    "ctru_tc_matrix",
    "ctru_tc_batch",
    "ctru_tc_gemm_q",
    "ctru_tc_gemm_q2",
    "ctru_kem_unpack_ct",
    "ctru_kem_decode",
    "ctru_kem_message",
    "ctru_kem_derive",
    "ctru_kem_sample",
    "ctru_kem_pack",
    "ctru_kem_finish",
];

/// The full CUDA C++ source: types, the shared arithmetic (device WMMA path on), the product kernels,
/// then Keccak, the KEM steps and their kernels.
pub fn source() -> String {
    let mut s = String::new();
    s.push_str(TYPES);
    s.push_str("\n#define CTRU_WMMA 1\n");
    s.push_str(MUL);
    s.push('\n');
    s.push_str(KERNELS);
    for part in [KECCAK, KEM, KEM_KERNELS] {
        s.push('\n');
        s.push_str(part);
    }
    s
}

/// Compiles (or loads from the cache) the module for `arch`, with chainsig-gpu's options.
pub fn compile(arch: &str) -> Result<Compiled, String> {
    chainsig_gpu::compile_cached(&source(), arch)
}
