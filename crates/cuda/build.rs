//! Builds the portable (host) path of the kernel arithmetic with the C++ compiler: the same
//! sources NVRTC compiles for the GPU, with the curve header generated from chainsig_core.
#[path = "src/codegen.rs"]
#[allow(dead_code)]
mod codegen;

fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let header = codegen::curve_header(&chainsig_core::curve::SM2).expect("SM2 header");
    std::fs::write(out.join("cs_curve.h"), header).expect("write cs_curve.h");
    // P-256's ECDSA build includes its own cs_curve.h from a directory of its own.
    let p256_dir = out.join("p256");
    std::fs::create_dir_all(&p256_dir).expect("create the P-256 header directory");
    let header = codegen::curve_header(&chainsig_core::curve::P256).expect("P-256 header");
    std::fs::write(p256_dir.join("cs_curve.h"), header).expect("write P-256 cs_curve.h");
    for f in [
        "cs_types.h",
        "cs_arith.cuh",
        "cs_verify.cuh",
        "cs_ecdsa.cuh",
        "cs_sm3.cuh",
        "host_shim.cpp",
        "host_lanes.cpp",
        "host_ecdsa.cpp",
        "host_io.h",
        "host_tables.h",
        "../src/codegen.rs",
    ] {
        println!("cargo:rerun-if-changed=kernels/{f}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    cc::Build::new()
        .cpp(true)
        .file("kernels/host_shim.cpp")
        .include(&out)
        .include("kernels")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-O2")
        .warnings(false)
        .compile("chainsig_cuda_host");
    cc::Build::new()
        .cpp(true)
        .file("kernels/host_ecdsa.cpp")
        .include(&p256_dir)
        .include("kernels")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-O2")
        .warnings(false)
        .compile("chainsig_cuda_p256");
    // The pair and quad kernels' lanes, emulated on the host (host_lanes.cpp), once per lane count.
    for (lanes, quad) in [(2, false), (4, true)] {
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .file("kernels/host_lanes.cpp")
            .include(&out)
            .include("kernels")
            .define("CS_HOST_LANES", "1")
            .define("CS_PAIR", "1")
            .define(
                "CS_LANES_ENTRY",
                format!("cs_host_verify_lanes{lanes}").as_str(),
            )
            .flag_if_supported("-std=c++17")
            .flag_if_supported("-O2")
            .warnings(false);
        if quad {
            build.define("CS_QUAD", "1");
        }
        build.compile(&format!("chainsig_cuda_lanes{lanes}"));
    }
}
