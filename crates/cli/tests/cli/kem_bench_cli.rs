//! `chainsig bench --kem ctru` through the built binary: the CPU figures always, the GPU part or one
//! line saying why not, and the JSON fields the plot and BENCHMARKS.md read.

use crate::common;
use common::{chainsig, TempDir};

#[test]
fn kem_bench_reports_the_cpu_and_writes_json() {
    let dir = TempDir::new("kem-bench");
    let json = dir.path("kem.json");
    let csv = dir.path("kem.csv");
    let out = chainsig(
        &[
            "bench",
            "--kem",
            "ctru",
            "--sizes",
            "1,4",
            "--repeats",
            "1",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
        "",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for heading in [
        "CPU NTT product, one core",
        "µs/product",
        "keygen/s",
        "encaps/s",
        "decaps/s",
    ] {
        assert!(stdout.contains(heading), "no {heading:?} in\n{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["repeats"], 1);
    assert_eq!(report["sizes"], serde_json::json!([1, 4]));
    let threads = report["threads"].as_u64().unwrap();
    assert!(threads >= 1);

    // The single-core NTT: every n, both products.
    let ntt = report["cpu_ntt"].as_array().unwrap();
    assert_eq!(ntt.len(), 6);
    for n in [653, 761, 1277] {
        for product in ["mod-q", "mod-q2"] {
            let row = ntt
                .iter()
                .find(|r| r["n"] == n && r["product"] == product)
                .unwrap_or_else(|| panic!("no CPU NTT row for {n} {product}"));
            let us = row["us_per_product"].as_f64().unwrap();
            let per_s = row["products_per_s"].as_f64().unwrap();
            assert!(us > 0.0 && (us * per_s / 1e6 - 1.0).abs() < 1e-9, "{row}");
        }
    }

    // The KEM: every n and operation, on all cores and on one, over the batch of 4 asked for.
    let kem = report["cpu_kem"].as_array().unwrap();
    assert_eq!(kem.len(), 18);
    for n in [653, 761, 1277] {
        for op in ["keygen", "encaps", "decaps"] {
            for t in [threads, 1] {
                let row = kem
                    .iter()
                    .find(|r| r["n"] == n && r["op"] == op && r["threads"] == t)
                    .unwrap_or_else(|| panic!("no KEM row for {n} {op} on {t} threads"));
                assert_eq!(row["batch"], 4, "{row}");
                assert_eq!(row["runs"], 1, "{row}");
                let ms = row["median_ms"].as_f64().unwrap();
                let per_s = row["per_s"].as_f64().unwrap();
                assert!(ms > 0.0 && (per_s * ms / 4e3 - 1.0).abs() < 1e-9, "{row}");
            }
        }
    }

    // The GPU: measured, or one line saying why not (and then no CSV).
    match report["gpu"].as_object() {
        None => {
            let why = report["gpu_unavailable"].as_str().unwrap();
            let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("no GPU")).collect();
            assert_eq!(lines.len(), 1, "{stdout}");
            assert!(lines[0].contains(why), "{stdout}");
            assert!(!csv.exists());
        }
        Some(gpu) => {
            assert!(gpu["failures"].as_array().unwrap().is_empty());
            // 3 n × 2 products × 3 methods × 2 sizes.
            assert_eq!(gpu["rows"].as_array().unwrap().len(), 36);
            let text = std::fs::read_to_string(&csv).unwrap();
            assert_eq!(text.lines().count(), 37);
            assert!(text.starts_with("n,product,method,batch,"));
        }
    }
}

#[test]
fn kem_bench_refuses_signature_options_and_bad_sizes() {
    for args in [
        &["bench", "--kem", "ctru", "--sweep"][..],
        &["bench", "--kem", "ctru", "--alg", "sm2"][..],
        &["bench", "--kem", "kyber"][..],
        &["bench", "--kem", "ctru", "--sizes", "0"][..],
        &["bench", "--kem", "ctru", "--repeats", "0"][..],
        &["bench", "--kem", "ctru", "--backend", "metal"][..],
    ] {
        let out = chainsig(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}
