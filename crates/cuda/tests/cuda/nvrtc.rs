//! Compiles the kernel modules with NVRTC for sm_90 and fails on register spills (beyond the
//! declared budget of the register-capped default, see `KernelConfig::spill_budget`): every module
//! a default backend loads, and with `CHAINSIG_NVRTC_ABLATIONS=1` the sweep's other configurations.
//! Needs libnvrtc (the `nvidia-cuda-nvrtc` wheel; see .ci/nvrtc-check.sh) but no GPU. Without the
//! library it prints why it skipped, unless CHAINSIG_REQUIRE_NVRTC=1, when it fails.

use chainsig_cuda::kernels::{self, KernelConfig};

/// The SM2 modules a default backend loads (its main kernel and the forms for small batches).
#[test]
fn loaded_sm2_kernels_compile_for_sm90_within_their_spill_budgets() {
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    compile_and_check(&chainsig_cuda::CudaConfig::default().sm2_kernels());
}

/// Every other configuration of the switches: the ablations of the benchmark sweep, which no
/// backend loads unless its configuration names them. They share the loaded kernels' source and
/// differ by defines, and compiling them is most of this module's cold time (about 25 modules of
/// 8–12 s each on the 2-core CI machine), so they compile where `CHAINSIG_NVRTC_ABLATIONS=1`:
/// in `scripts/kernel_cache.sh`, which every device run of the sweep goes through.
#[test]
fn ablation_kernels_compile_for_sm90_within_their_spill_budgets() {
    if std::env::var("CHAINSIG_NVRTC_ABLATIONS").as_deref() != Ok("1") {
        eprintln!("skipped: the ablation kernels compile with CHAINSIG_NVRTC_ABLATIONS=1 (scripts/kernel_cache.sh)");
        return;
    }
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    let loaded = chainsig_cuda::CudaConfig::default().sm2_kernels();
    let ablations: Vec<KernelConfig> = KernelConfig::all()
        .into_iter()
        .filter(|c| !loaded.contains(c))
        .collect();
    assert!(
        ablations.len() >= 20,
        "the sweep's configurations are there"
    );
    compile_and_check(&ablations);
}

/// Compiles each configuration as its own module, as the backend loads them, side by side and
/// through the disk cache (so a run also fills the cache a GPU machine can be given), and fails
/// on a module that spills beyond its configuration's budget.
fn compile_and_check(configs: &[KernelConfig]) {
    use rayon::prelude::*;
    let compiled: Vec<_> = configs
        .par_iter()
        .map(|c| {
            kernels::compile_config(&chainsig_core::curve::SM2, c, "sm_90").expect("NVRTC compile")
        })
        .collect();
    let mut res = Vec::new();
    for c in &compiled {
        assert!(!c.cubin.is_empty());
        res.extend(chainsig_gpu::parse_resources(&c.log));
    }
    for r in &res {
        println!(
            "{:40} {:3} registers, {:5} B stack, spills {} B stored / {} B loaded",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
    }
    for c in configs {
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
        // Uncapped kernels must not spill at all; a capped one within its declared budget.
        let budget = c.spill_budget();
        assert!(
            r.spill_stores <= budget && r.spill_loads <= budget,
            "{} spills {} B stored / {} B loaded, budget {budget} B",
            c.name(),
            r.spill_stores,
            r.spill_loads
        );
    }
}

#[test]
fn ecdsa_kernels_compile_for_sm90_within_the_default_spill_budget() {
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    use chainsig_core::curve::{P256, SECP256K1};
    use rayon::prelude::*;
    let cfg = kernels::ecdsa_config(KernelConfig::default_fast().max_registers);
    let reports: Vec<Vec<chainsig_gpu::Resources>> = [P256, SECP256K1]
        .par_iter()
        .map(|curve| {
            let c = kernels::compile_ecdsa(curve, &cfg, "sm_90").expect("NVRTC compile");
            chainsig_gpu::parse_resources(&c.log)
        })
        .collect();
    let budget = cfg.spill_budget();
    for (curve, res) in ["P-256", "secp256k1"].iter().zip(&reports) {
        for name in [
            kernels::ECDSA_KERNEL,
            kernels::ECDSA_LOW_S_KERNEL,
            kernels::RECOVER_KERNEL,
        ] {
            let r = res
                .iter()
                .find(|r| r.kernel == name)
                .unwrap_or_else(|| panic!("no ptxas report for {curve}'s {name}"));
            println!(
                "{curve:10} {:30} {:3} registers, {:5} B stack, spills {} B stored / {} B loaded",
                r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
            );
            assert!(r.registers > 0);
            assert!(
                r.spill_stores <= budget && r.spill_loads <= budget,
                "{curve}'s {name} spills {} B stored / {} B loaded, budget {budget} B",
                r.spill_stores,
                r.spill_loads
            );
        }
    }
}

#[test]
fn raw_sm2_kernels_compile_for_sm90_without_spills() {
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    let c = kernels::compile_raw("sm_90").expect("NVRTC compile");
    let res = chainsig_gpu::parse_resources(&c.log);
    for name in [kernels::RAW_KERNEL, kernels::RAW_SIGNED_KERNEL] {
        let r = res
            .iter()
            .find(|r| r.kernel == name)
            .unwrap_or_else(|| panic!("no ptxas report for {name}"));
        println!(
            "{:40} {:3} registers, {:5} B stack, spills {} B stored / {} B loaded",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
        assert!(r.registers > 0, "{name} reports no registers");
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{name} spills");
    }
}

#[test]
fn sm3_kernel_compiles_for_sm90_without_spills() {
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    let c = chainsig_gpu::compile_cached(&kernels::sm3_source(), "sm_90").expect("NVRTC compile");
    let res = chainsig_gpu::parse_resources(&c.log);
    let r = res
        .iter()
        .find(|r| r.kernel == kernels::SM3_KERNEL)
        .expect("a ptxas report for the SM3 kernel");
    println!(
        "{:40} {:3} registers, {:5} B stack",
        r.kernel, r.registers, r.stack_bytes
    );
    assert!(r.registers > 0);
    assert_eq!(
        (r.spill_stores, r.spill_loads),
        (0, 0),
        "the SM3 kernel spills"
    );
}

/// The raw-transaction module (kernels/ethtx.cuh): its parse and address kernels.
#[test]
fn ethtx_module_compiles_for_sm90_without_spills() {
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    let compiled = chainsig_cuda::ethtx::compile("sm_90").expect("NVRTC compile");
    let res = chainsig_gpu::parse_resources(&compiled.log);
    for name in [
        chainsig_cuda::ethtx::PARSE_KERNEL,
        chainsig_cuda::ethtx::ADDRESS_KERNEL,
    ] {
        let r = res
            .iter()
            .find(|r| r.kernel == name)
            .unwrap_or_else(|| panic!("no ptxas report for {name}"));
        println!(
            "{:20} {:3} registers, {:5} B stack, spills {} B stored / {} B loaded",
            r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
        );
        assert!(r.registers > 0);
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{name} spills");
    }
}

#[test]
fn ptxas_report_parsing() {
    let log = "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n\
               ptxas info    : Function properties for k1\n\
               \x20   768 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n\
               ptxas info    : Used 96 registers, used 0 barriers, 768 bytes cumulative stack size\n";
    let r = chainsig_gpu::parse_resources(log);
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
    if !chainsig_gpu::nvrtc_available()
        || std::env::var("CHAINSIG_REGCAP_PROBE").as_deref() != Ok("1")
    {
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
                product: Default::default(),
                ..base
            });
        }
    }
    let out: Vec<_> = configs
        .par_iter()
        .map(|c| kernels::compile_config(&chainsig_core::curve::SM2, c, "sm_90").expect("compile"))
        .collect();
    for c in &out {
        for r in chainsig_gpu::parse_resources(&c.log) {
            println!(
                "{:40} {:3} registers, {:5} B stack, spills {} / {}",
                r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
            );
        }
    }
}

/// Registers an instruction of an inline-asm block reads that an earlier instruction of the same
/// block wrote. NVVM assumes an asm reads every input before it writes any output, so such a read
/// sees a register NVVM shared between an output and an input of equal value.
fn asm_write_before_read(ptx: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut block: Option<Vec<&str>> = None;
    for line in ptx.lines().map(str::trim) {
        if line.contains("begin inline asm") {
            block = Some(Vec::new());
        } else if line.contains("end inline asm") {
            let instrs = block.take().unwrap_or_default();
            let mut written: Vec<&str> = Vec::new();
            for ins in &instrs {
                let Some((_, operands)) = ins.trim_end_matches(';').split_once(char::is_whitespace)
                else {
                    continue;
                };
                let mut regs = operands.split(',').map(str::trim);
                let Some(dst) = regs.next() else { continue };
                for src in regs.filter(|r| r.starts_with('%')) {
                    if written.contains(&src) {
                        found.push(format!("{src} read after written in: {}", instrs.join(" ")));
                    }
                }
                if dst.starts_with('%') {
                    written.push(dst);
                }
            }
        } else if let Some(b) = block.as_mut() {
            if !line.is_empty() {
                b.push(line);
            }
        }
    }
    found
}

#[test]
fn inline_asm_reads_its_inputs_before_writing() {
    assert!(
        !asm_write_before_read("// begin inline asm\nadd.cc.u32 %r1, %r1, %r2;\naddc.u32 %r3, %r1, 0;\n// end inline asm").is_empty(),
        "the scanner must see a hazard"
    );
    if !chainsig_gpu::nvrtc_or_skip() {
        return;
    }
    // The default kernel (even/odd products) and the row-chain ablation, as PTX, compiled side by
    // side and kept in the kernel cache under their source and options (a minute of NVRTC each
    // on the 2-core CI machine, for a scan that takes milliseconds).
    let src = kernels::source(&chainsig_core::curve::SM2, &[KernelConfig::default_fast()])
        .expect("kernel source");
    use rayon::prelude::*;
    let compiled: Vec<_> = [None, Some("-DCS_ROW_CHAINS=1")]
        .into_par_iter()
        .map(|extra| (extra, ptx_cached(&src, extra)))
        .collect();
    for (extra, ptx) in compiled {
        assert!(ptx.contains("begin inline asm"), "no inline asm in the PTX");
        let hazards = asm_write_before_read(&ptx);
        assert!(
            hazards.is_empty(),
            "{extra:?}: {:#?}",
            &hazards[..hazards.len().min(3)]
        );
    }
}

/// The PTX of `src` for compute_90 with `extra` among the options, from the kernel cache
/// (`chainsig_gpu::cache`, keyed by source and options) when it is there, else compiled and kept.
fn ptx_cached(src: &str, extra: Option<&str>) -> String {
    let options: Vec<String> = ["--std=c++17"]
        .into_iter()
        .chain(extra)
        .map(String::from)
        .collect();
    let path = chainsig_gpu::cache::cache_dir().map(|dir| {
        dir.join(format!(
            "{}.ptx",
            chainsig_gpu::cache::cache_key(src, &options, "compute_90")
        ))
    });
    if let Some(ptx) = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        return ptx;
    }
    let opts = chainsig_gpu::cudarc::nvrtc::CompileOptions {
        arch: Some("compute_90"),
        options,
        ..Default::default()
    };
    let ptx = chainsig_gpu::cudarc::nvrtc::compile_ptx_with_opts(src, opts)
        .expect("NVRTC PTX compile")
        .to_src();
    if let Some(path) = path {
        // The cache only saves time: a failed write is not an error.
        let _ = std::fs::create_dir_all(path.parent().expect("a file in the cache folder"))
            .and_then(|()| std::fs::write(&path, &ptx));
    }
    ptx
}
