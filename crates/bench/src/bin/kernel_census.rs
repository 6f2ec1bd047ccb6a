//! Instruction census of the SM2 kernels: compiles micro kernels that each run one field or point
//! operation (kernels/census.cuh) together with the default verification kernel and its compact
//! form for sm_90,
//! disassembles the cubin with `cuobjdump -sass` and counts machine instructions per operation by
//! class. This is the measurement behind "instructions per multiplication" in crates/cuda/README.md:
//! static counts need no GPU, so a change to the arithmetic can be weighed before a device run.
//! Rows ending in `:common` count what an operation executes almost always (the reduction's rare
//! corrections compiled out, their test and branch kept); a line adds them up over a fast
//! verification's loops. The ECDSA modules of P-256 and secp256k1 follow, their rows prefixed with
//! the curve: their kernels, the same micro kernels on their arithmetic, and the scalar product.
//!
//! Usage: kernel_census [--micro] [DIR]   (writes DIR/census*.cubin and DIR/kernel_census.csv; DIR
//! defaults to $OUT or ./out). `--micro` compiles the micro kernels' common path alone, without the
//! verification kernels: seconds instead of minutes, for weighing a change to the arithmetic.
//! Needs libnvrtc; cuobjdump from $CUOBJDUMP or PATH (the CUDA toolkit, or the
//! `nvidia-cuda-cuobjdump` wheel).

use chainsig_cuda::kernels::{self, KernelConfig};
use clap::Parser;
use std::collections::BTreeMap;
use std::process::Command;

// The micro kernels live beside the kernels they measure, in chainsig-cuda.
const CENSUS: &str = include_str!("../../../cuda/kernels/census.cuh");

/// Instruction classes, by opcode prefix; the first match wins.
const CLASSES: &[(&str, &[&str])] = &[
    ("imad.wide", &["IMAD.WIDE"]),
    ("imad", &["IMAD"]),
    ("iadd3", &["IADD3", "VIADD"]),
    ("sel", &["SEL", "FSEL"]),
    ("shift/logic", &["SHF", "LOP3", "LEA", "PRMT"]),
    ("compare", &["ISETP", "PLOP3", "P2R", "R2P"]),
    (
        "memory",
        &[
            "LDG", "STG", "LDL", "STL", "LDS", "STS", "LDC", "ULDC", "LD.", "ST.",
        ],
    ),
];

fn class_of(op: &str) -> &'static str {
    CLASSES
        .iter()
        .find(|(_, prefixes)| prefixes.iter().any(|p| op.starts_with(p)))
        .map(|(name, _)| *name)
        .unwrap_or("other")
}

/// Per function: instruction counts by class, from `cuobjdump -sass` text.
fn census(sass: &str) -> BTreeMap<String, BTreeMap<&'static str, usize>> {
    let mut out: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let mut func: Option<String> = None;
    for line in sass.lines() {
        if let Some(rest) = line.split("Function : ").nth(1) {
            func = Some(rest.trim().to_string());
            continue;
        }
        let Some(f) = &func else { continue };
        // Instruction lines look like `        /*0a10*/   @!P1 IMAD.WIDE.U32 R4, ... ;`.
        let t = line.trim_start();
        let Some(body) = t.strip_prefix("/*").and_then(|s| s.split_once("*/")) else {
            continue;
        };
        if !body.0.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let mut words = body.1.split_whitespace();
        let mut op = words.next().unwrap_or("");
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        if op.is_empty() || op == "NOP" {
            continue;
        }
        *out.entry(f.clone())
            .or_default()
            .entry(class_of(op))
            .or_default() += 1;
    }
    out
}

/// The SASS of a cubin, by cuobjdump.
fn disassemble(tool: &str, cubin: &str) -> String {
    match Command::new(tool).args(["-sass", cubin]).output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => panic!("{tool} failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!("cannot run {tool} ({e}); set CUOBJDUMP to its path"),
    }
}

/// Static instruction counts of the kernels (needs NVRTC and cuobjdump, not a GPU).
#[derive(Parser)]
struct Args {
    /// Only the micro kernels' common path, without the verification kernels (seconds, not
    /// minutes).
    #[arg(long)]
    micro: bool,
    /// The output folder (default: $OUT, else ./out).
    dir: Option<String>,
}

fn main() {
    let args = Args::parse();
    let micro = args.micro;
    let dir = args
        .dir
        .or_else(|| std::env::var("OUT").ok())
        .unwrap_or_else(|| "out".into());
    std::fs::create_dir_all(&dir).expect("create the output folder");
    let tool = std::env::var("CUOBJDUMP").unwrap_or_else(|_| "cuobjdump".into());
    // Three modules, compiled as the backend compiles them: the default kernel (with the micro
    // kernels beside it, under the same options), its compact form, and the micro kernels again
    // with the reduction's rarely taken corrections left out (CS_CENSUS_COMMON_PATH: the test and
    // the branch stay), whose counts are what a multiplication executes almost always.
    let default = KernelConfig::default_fast();
    let mut counts = BTreeMap::new();
    for (i, cfg) in [default, default.compacted(), default].iter().enumerate() {
        if micro && i != 2 {
            continue;
        }
        let kernels: &[KernelConfig] = if micro {
            &[]
        } else {
            std::slice::from_ref(cfg)
        };
        let mut src = kernels::source(&chainsig_core::curve::SM2, kernels).expect("kernel source");
        if i != 1 {
            src.push('\n');
            src.push_str(CENSUS);
        }
        if i == 2 {
            src = format!("#define CS_CENSUS_COMMON_PATH 1\n{src}");
        }
        let compiled = chainsig_gpu::compile_uncached(&src, &kernels::config_options(cfg, "sm_90"))
            .expect("NVRTC");
        for r in chainsig_gpu::parse_resources(&compiled.log) {
            if r.kernel == cfg.name() && i < 2 {
                println!(
                    "{}: {} registers, {} B stack, spills {} B / {} B",
                    r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
                );
            }
        }
        let cubin = format!("{dir}/census{i}.cubin");
        std::fs::write(&cubin, &compiled.cubin).expect("write the cubin");
        let sass = disassemble(&tool, &cubin);
        // From the second module only its verification kernel (the self-test repeats the first);
        // from the third only the micro kernels, named for their common path.
        counts.extend(census(&sass).into_iter().filter_map(|(f, c)| match i {
            0 => Some((f, c)),
            1 => (f == cfg.name()).then_some((f, c)),
            _ => f.starts_with("census_").then(|| (format!("{f}:common"), c)),
        }));
    }
    let arith = |c: &BTreeMap<&str, usize>| -> usize {
        c.iter()
            .filter(|(k, _)| **k != "memory" && **k != "other")
            .map(|(_, v)| v)
            .sum()
    };
    // The ECDSA modules: the kernels as the backend compiles them, then the micro kernels on the
    // curve's arithmetic, common path only.
    for (tag, curve) in [
        ("p256", chainsig_core::curve::P256),
        ("secp256k1", chainsig_core::curve::SECP256K1),
    ] {
        let cfg = kernels::ecdsa_config(KernelConfig::default_fast().max_registers);
        for common in [false, true] {
            if micro && !common {
                continue;
            }
            let mut src = if micro {
                kernels::source(&curve, &[]).expect("kernel source")
            } else {
                kernels::ecdsa_source(&curve).expect("ECDSA kernel source")
            };
            if common {
                src = format!(
                    "#define CS_CENSUS_COMMON_PATH 1\n#define CS_CENSUS_ECDSA 1\n{src}\n{CENSUS}"
                );
            }
            let compiled =
                chainsig_gpu::compile_uncached(&src, &kernels::config_options(&cfg, "sm_90"))
                    .expect("NVRTC");
            let cubin = format!("{dir}/census_{tag}{}.cubin", u8::from(common));
            std::fs::write(&cubin, &compiled.cubin).expect("write the cubin");
            counts.extend(
                census(&disassemble(&tool, &cubin))
                    .into_iter()
                    .filter_map(|(f, c)| {
                        match common {
                            false => {
                                f.starts_with("cs_verify_ecdsa") || f.starts_with("cs_recover")
                            }
                            true => f.starts_with("census_"),
                        }
                        .then(|| {
                            (
                                format!("{tag}:{f}{}", if common { ":common" } else { "" }),
                                c,
                            )
                        })
                    }),
            );
        }
    }
    let base = counts.get("census_base").map(arith).unwrap_or(0);
    let names: Vec<&str> = CLASSES.iter().map(|(n, _)| *n).chain(["other"]).collect();
    let mut csv = format!("function,arithmetic_net,{}\n", names.join(","));
    println!(
        "{:44} {:>8} {}",
        "function",
        "net",
        names.iter().map(|n| format!("{n:>12}")).collect::<String>()
    );
    for (f, c) in &counts {
        // Net of the baseline's address arithmetic for the micro kernels; the whole count for the
        // verification kernel (static: loops count once).
        let net = if f.contains("census_") {
            arith(c).saturating_sub(base)
        } else {
            arith(c)
        };
        let cells: Vec<usize> = names
            .iter()
            .map(|n| c.get(n).copied().unwrap_or(0))
            .collect();
        println!(
            "{f:44} {net:>8} {}",
            cells.iter().map(|v| format!("{v:>12}")).collect::<String>()
        );
        csv.push_str(&format!(
            "{f},{net},{}\n",
            cells
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    // Instructions a fast verification executes in its two loops, from the common-path counts:
    // 256 doublings, 64 additions of a window entry and the fixed-base table's additions, each
    // addition without the copy of the doubling it holds for the case R = Q.
    let net_of = |f: &str| counts.get(f).map(|c| arith(c).saturating_sub(base));
    for prefix in ["", "p256:", "secp256k1:"] {
        if let (Some(dbl), Some(coz), Some(aff)) = (
            net_of(&format!("{prefix}census_pt_dbl:common")),
            net_of(&format!("{prefix}census_pt_add_coz:common")),
            net_of(&format!("{prefix}census_pt_add_affine:common")),
        ) {
            let g_adds = 256usize.div_ceil(chainsig_cuda::host::GTABLE_BITS);
            let walk = 256 * dbl + 64 * (coz - dbl) + g_adds * (aff - dbl);
            println!(
                "{prefix}fast verification, loops only (common path): 256 x {dbl} + 64 x {} + {g_adds} x {} = {walk} instructions",
                coz - dbl,
                aff - dbl
            );
            csv.push_str(&format!("{prefix}fast_verification_loops_common,{walk}\n"));
        }
    }
    std::fs::write(format!("{dir}/kernel_census.csv"), csv).expect("write the CSV");
    println!("wrote {dir}/kernel_census.csv and the cubins beside it");
}
