//! Builds the portable (host) path of the kernel arithmetic with the C++ compiler: the same
//! sources NVRTC compiles for the GPU, with the curve header generated from chainsig_core.
#[path = "src/codegen.rs"]
#[allow(dead_code)]
mod codegen;

use chainsig_core::curve::small_order;

fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let header = codegen::curve_header(&chainsig_core::curve::SM2).expect("SM2 header");
    std::fs::write(out.join("cs_curve.h"), header).expect("write cs_curve.h");
    for f in [
        "types.h",
        "field.cuh",
        "lanes.cuh",
        "scalar.cuh",
        "point.cuh",
        "ecmult.cuh",
        "sm2.cuh",
        "ecdsa.cuh",
        "sm3.cuh",
        "sec1.cuh",
        "za.cuh",
        "sm2raw.cuh",
        "host_shim.cpp",
        "host_lanes.cpp",
        "host_warp.h",
        "host_ecdsa.cpp",
        "host_exhaustive.cpp",
        "host_io.h",
        "host_exports.h",
        "host_layers.h",
        "host_tables.h",
        "keccak.cuh",
        "rlp.cuh",
        "ethtx.cuh",
        "host_ethtx.cpp",
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
    // The ECDSA path once per ECDSA curve, each including its own cs_curve.h from a directory of
    // its own and prefixing its exports.
    for (curve, short) in [
        (&chainsig_core::curve::P256, "p256"),
        (&chainsig_core::curve::SECP256K1, "k256"),
    ] {
        let dir = out.join(short);
        std::fs::create_dir_all(&dir).expect("create the curve header directory");
        let header = codegen::curve_header(curve).expect("ECDSA curve header");
        std::fs::write(dir.join("cs_curve.h"), header).expect("write cs_curve.h");
        cc::Build::new()
            .cpp(true)
            .file("kernels/host_ecdsa.cpp")
            .include(&dir)
            .include("kernels")
            .define("CS_ECDSA_PREFIX", format!("cs_{short}_").as_str())
            .flag_if_supported("-std=c++17")
            .flag_if_supported("-O2")
            .warnings(false)
            .compile(&format!("chainsig_cuda_{short}"));
        // The raw-transaction path (Keccak, RLP, signing payloads) over secp256k1's recovery.
        if short == "k256" {
            cc::Build::new()
                .cpp(true)
                .file("kernels/host_ethtx.cpp")
                .include(&dir)
                .include("kernels")
                .flag_if_supported("-std=c++17")
                .flag_if_supported("-O2")
                .warnings(false)
                .compile("chainsig_cuda_ethtx");
        }
    }
    // The generic point and scalar code on each curve of chainsig_core::curve::small_order, for
    // the exhaustive test (tests/exhaustive/): G's table in 5-bit windows for q = 19 and 3-bit ones
    // for q = 13 (2^(W-1) below q: no entry at infinity; 256 not a multiple of W), a key's table in
    // 3-bit ones; secp256k1's q = 13 takes the 3-bit signed window, whose four odd multiples stay
    // clear of 13 P (the 4-bit window's eight would meet it).
    for (curve, short, gtab_bits, window_bits) in [
        (&small_order::SM2_FIELD, "tiny_sm2", "5", None),
        (&small_order::P256_FIELD, "tiny_p256", "5", None),
        (&small_order::SECP256K1_FIELD, "tiny_k256", "3", Some("3")),
    ] {
        let dir = out.join(short);
        std::fs::create_dir_all(&dir).expect("create the curve header directory");
        let header = codegen::curve_header(&curve.params).expect("small-order curve header");
        std::fs::write(dir.join("cs_curve.h"), header).expect("write cs_curve.h");
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .file("kernels/host_exhaustive.cpp")
            .include(&dir)
            .include("kernels")
            .define("CS_TINY_PREFIX", format!("cs_{short}_").as_str())
            .define("CS_GTAB_BITS", gtab_bits)
            .define("CS_KTAB_BITS", "3")
            .flag_if_supported("-std=c++17")
            .flag_if_supported("-O2")
            .warnings(false);
        if let Some(bits) = window_bits {
            build.define("CS_WINDOW_BITS", bits);
        }
        build.compile(&format!("chainsig_cuda_{short}"));
    }
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
