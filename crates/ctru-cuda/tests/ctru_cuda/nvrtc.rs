//! Compiles the CTRU-Prime kernel module with NVRTC for sm_90 and fails on register spills or a
//! missing kernel. Needs libnvrtc (the `nvidia-cuda-nvrtc` wheel; .ci/nvrtc-check.sh) but no
//! GPU. Without the library it prints why it skipped, unless CHAINSIG_REQUIRE_NVRTC=1, when it fails.

use chainsig_ctru_cuda::kernel::{self, KERNEL_NAMES};

#[test]
fn every_ctru_kernel_compiles_for_sm90_without_spills() {
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    let compiled = kernel::compile("sm_90").expect("NVRTC compile");
    assert!(!compiled.cubin.is_empty());
    let res = chainsig_gpu::parse_resources(&compiled.log);
    for r in &res {
        println!(
            "{:20} {:3} registers, {:5} B stack, spills {} B stored / {} B loaded",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
    }
    for name in KERNEL_NAMES {
        let r = res
            .iter()
            .find(|r| r.kernel == name)
            .unwrap_or_else(|| panic!("no ptxas report for {name} (was the log cached empty?)"));
        assert!(r.registers > 0, "{name} reports no registers");
        assert_eq!(
            (r.spill_stores, r.spill_loads),
            (0, 0),
            "{name} spills registers"
        );
    }
    assert_eq!(res.len(), KERNEL_NAMES.len(), "unexpected entry points");
}
