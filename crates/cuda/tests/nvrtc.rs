//! Compiles every kernel configuration with NVRTC for sm_90 and fails on register spills.
//! Needs libnvrtc (the `nvidia-cuda-nvrtc` wheel; see ci/nvrtc-check.sh) but no GPU. Without the
//! library it prints why it skipped, unless CHAINSIG_REQUIRE_NVRTC=1, when it fails.

use chainsig_cuda::kernel::{self, KernelConfig};

#[test]
fn every_kernel_compiles_for_sm90_without_spills() {
    if !kernel::nvrtc_available() {
        assert!(
            std::env::var("CHAINSIG_REQUIRE_NVRTC").as_deref() != Ok("1"),
            "CHAINSIG_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded (LD_LIBRARY_PATH?)"
        );
        eprintln!("skipped: libnvrtc not found; run crates/cuda/ci/nvrtc-check.sh");
        return;
    }
    use rayon::prelude::*;
    let configs = KernelConfig::all();
    // One module per configuration, as the backend loads them; through the disk cache, so a run of
    // this test also fills the cache a GPU machine can be given.
    let compiled: Vec<_> = configs
        .par_iter()
        .map(|c| {
            kernel::compile_config(&chainsig_core::curve::SM2, c, "sm_90").expect("NVRTC compile")
        })
        .collect();
    let mut res = Vec::new();
    for c in &compiled {
        assert!(!c.cubin.is_empty());
        res.extend(kernel::parse_resources(&c.log));
    }
    for r in &res {
        println!(
            "{:40} {:3} registers, {:5} B stack, spills {} B stored / {} B loaded",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
    }
    for c in &configs {
        let r = res
            .iter()
            .find(|r| r.kernel == c.name())
            .unwrap_or_else(|| {
                panic!(
                    "no ptxas report for {} (was the log cached empty?)",
                    c.name()
                )
            });
        assert!(r.registers > 0, "{} reports no registers", c.name());
        assert_eq!(
            (r.spill_stores, r.spill_loads),
            (0, 0),
            "{} spills registers",
            c.name()
        );
    }
}

#[test]
fn ptxas_report_parsing() {
    let log = "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n\
               ptxas info    : Function properties for k1\n\
               \x20   768 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n\
               ptxas info    : Used 96 registers, used 0 barriers, 768 bytes cumulative stack size\n";
    let r = kernel::parse_resources(log);
    assert_eq!(r.len(), 1);
    assert_eq!(
        (
            r[0].registers,
            r[0].stack_bytes,
            r[0].spill_stores,
            r[0].spill_loads
        ),
        (96, 768, 4, 8)
    );
    assert_eq!(r[0].kernel, "k1");
}

/// The register-capped variants the benchmark tries (more threads per multiprocessor); prints
/// whether each spills. Not a gate: the sweep reports the capped variants separately.
#[test]
fn register_capped_variants_report() {
    if !kernel::nvrtc_available() || std::env::var("CHAINSIG_REGCAP_PROBE").as_deref() != Ok("1") {
        eprintln!("skipped: set CHAINSIG_REGCAP_PROBE=1 with libnvrtc loadable");
        return;
    }
    use rayon::prelude::*;
    let mut configs = Vec::new();
    for base in KernelConfig::all()
        .into_iter()
        .filter(|c| c.compress && !c.row_major && c.inversion == chainsig_cuda::Inversion::Euclid)
    {
        for cap in [128, 96] {
            configs.push(KernelConfig {
                max_registers: Some(cap),
                ..base
            });
        }
    }
    let out: Vec<_> = configs
        .par_iter()
        .map(|c| kernel::compile_config(&chainsig_core::curve::SM2, c, "sm_90").expect("compile"))
        .collect();
    for c in &out {
        for r in kernel::parse_resources(&c.log) {
            println!(
                "{:40} {:3} registers, {:5} B stack, spills {} / {}",
                r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
            );
        }
    }
}
