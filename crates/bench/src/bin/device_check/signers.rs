//! `device_check --signers N`: records of known signers through their fixed-base tables.

use chainsig_core::batch::Batch;
use chainsig_core::bitmap::Bitmap;
use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_gpu::median;
use chainsig_testkit::sets as testdata;
use std::time::Instant;

/// Records of `signers` known signers (a tenth corrupted, edge cases first): their tables built on
/// the host and loaded, verdicts of the known-signer kernel against RustCrypto `sm2` on every
/// batch of every run, then end-to-end time across batch sizes and launch shapes, beside the
/// default path that verifies the same records with their keys.
pub fn signers_check(count: usize, signers: usize, seed: u64, out: &std::path::Path) {
    use chainsig_cuda::signers::{SignerBatch, SignerIndex, SignerTables};
    const REPS: usize = 9;
    let t = Instant::now();
    let (records, verdicts) = testdata::generate(count, signers, 100, seed);
    let valid = verdicts.iter().filter(|v| **v).count();
    println!(
        "generated {count} records of {signers} signers (seed {seed}): {valid} valid, {} invalid by the reference, in {:.1} s",
        count - valid,
        t.elapsed().as_secs_f64()
    );
    let expected = Bitmap::from_bools(verdicts.iter().copied());
    let mut index = SignerIndex::new();
    for r in &records {
        index.insert((r.px, r.py));
    }
    let t = Instant::now();
    let tables = SignerTables::build(index.keys()).expect("every generated key is on the curve");
    let build_s = t.elapsed().as_secs_f64();
    println!(
        "tables of {} signers built on {} host threads in {build_s:.2} s ({:.0} MB)",
        tables.len(),
        rayon::current_num_threads(),
        tables.words().len() as f64 * 4.0 / 1e6
    );
    let sizes: Vec<usize> = [4096usize, 16384, 65536, 172032, 262144, 524288, 1 << 20]
        .into_iter()
        .filter(|&n| n <= count)
        .chain((count < 4096).then_some(count))
        .collect();
    let t = Instant::now();
    let inputs: Vec<(usize, SignerBatch, Batch)> = sizes
        .iter()
        .map(|&n| {
            let b = testdata::batch(&records[..n]);
            let sb = SignerBatch::from_batch(&b, &index).expect("every key is indexed");
            (n, sb, b)
        })
        .collect();
    println!(
        "signer batches built in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let mismatches = |map: &Bitmap, n: usize| {
        (0..n).filter(|&i| map.get(i) != expected.get(i)).count() + usize::from(map.len() != n)
    };
    let mut rows = Vec::new();
    let mut all_ok = true;
    let shapes = [
        (8usize, 128u32),
        (4, 128),
        (16, 128),
        (8, 64),
        (8, 256),
        (2, 128),
        (1, 128),
    ];
    for (si, &(streams, block)) in shapes.iter().enumerate() {
        let cfg = CudaConfig {
            streams,
            block_size: block,
            ..CudaConfig::default()
        };
        let backend = CudaBackend::new(cfg).expect("open the backend");
        if si == 0 {
            for r in backend.resources() {
                println!(
                    "{:44} {:3} regs {:4} B stack spills {}+{}",
                    r.kernel, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads
                );
            }
        }
        let t = Instant::now();
        backend.load_signers(&tables).expect("load the signers");
        let load_ms = t.elapsed().as_secs_f64() * 1e3;
        for (n, sb, b) in &inputs {
            let n = *n;
            let mut signed = Vec::new();
            let mut keyed = Vec::new();
            let mut bad = 0usize;
            for rep in 0..=REPS {
                let (map, ms) = backend.verify_signed_timed(sb).expect("verify signed");
                bad += mismatches(&map, n);
                if rep > 0 {
                    signed.push(ms);
                }
                // The same records through the default path, only for the default shape.
                if si == 0 {
                    let (map, ms) = backend.verify_timed(b).expect("verify with keys");
                    bad += mismatches(&map, n);
                    if rep > 0 {
                        keyed.push(ms);
                    }
                }
            }
            all_ok &= bad == 0;
            let sm = median(&mut signed);
            let km = (!keyed.is_empty()).then(|| median(&mut keyed));
            println!(
                "K={streams:2} B={block:4} batch {n:8}: known signers {sm:8.3} ms {:.3e}/s{}  mismatches {bad}",
                n as f64 / sm * 1e3,
                km.map(|k| format!("; with keys {k:8.3} ms {:.3e}/s ({:.2}x)", n as f64 / k * 1e3, k / sm))
                    .unwrap_or_default()
            );
            rows.push(serde_json::json!({
                "streams": streams, "block_size": block, "batch": n, "reps": REPS,
                "signers": tables.len(), "signed_e2e_ms": sm, "signed_per_s": n as f64 / sm * 1e3,
                "keyed_e2e_ms": km, "keyed_per_s": km.map(|k| n as f64 / k * 1e3),
                "mismatches": bad, "load_ms": load_ms,
            }));
        }
    }
    let mut csv = String::from(
        "streams,block_size,batch,signers,signed_e2e_ms,signed_per_s,keyed_e2e_ms,mismatches\n",
    );
    for r in &rows {
        csv.push_str(&format!(
            "{},{},{},{},{:.4},{:.1},{},{}\n",
            r["streams"],
            r["block_size"],
            r["batch"],
            r["signers"],
            r["signed_e2e_ms"].as_f64().unwrap(),
            r["signed_per_s"].as_f64().unwrap(),
            r["keyed_e2e_ms"]
                .as_f64()
                .map(|v| format!("{v:.4}"))
                .unwrap_or_default(),
            r["mismatches"]
        ));
    }
    std::fs::write(out.join("signers.csv"), csv).unwrap();
    std::fs::write(
        out.join("signers.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "seed": seed, "records": count, "signers": tables.len(), "valid": valid,
            "table_build_s": build_s, "host_threads": rayon::current_num_threads(), "rows": rows,
        }))
        .unwrap(),
    )
    .unwrap();
    if !all_ok {
        eprintln!("VERDICTS DIFFER FROM THE CPU REFERENCE");
        std::process::exit(1);
    }
    println!("all verdicts equal the CPU reference in every run, known signers and with keys");
}
