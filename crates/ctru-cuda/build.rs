//! Builds the host path of the kernel arithmetic with the C++ compiler: the very ctru_mul.cuh that
//! NVRTC compiles for the GPU, driven by host loops (kernels/host_shim.cpp), for the CI tests.
fn main() {
    for f in [
        "ctru_types.h",
        "ctru_mul.cuh",
        "keccak.cuh",
        "kem.cuh",
        "host_shim.cpp",
    ] {
        println!("cargo:rerun-if-changed=kernels/{f}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    cc::Build::new()
        .cpp(true)
        .file("kernels/host_shim.cpp")
        .include("kernels")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-O2")
        .compile("chainsig_ctru_cuda_host");
}
