//! Unit tests of the CTRU benchmark (no GPU needed; the GPU parts report unavailable).

use super::kem::FixedSeed;
use super::*;
use chainsig_ctru::ntt::multiplier;
use chainsig_ctru::{encaps, ParamSet};
use chainsig_ctru_cuda::{
    prepare, small_limit, Error, GpuError, KemTiming, Method, Product, Timing, MAX_BATCH,
};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn plans_sort_and_reject_what_cannot_run() {
    let p = Plan::new(&ParamSet::ALL, &[64, 1, 64, 4], 3).unwrap();
    assert_eq!(p.sizes, vec![1, 4, 64]);
    assert_eq!(p.largest(), 64);
    assert!(!p.time_after_mismatch);
    assert!(Plan::new(&ParamSet::ALL, &[], 3).is_err());
    assert!(Plan::new(&ParamSet::ALL, &[0, 4], 3).is_err());
    assert!(Plan::new(&ParamSet::ALL, &[MAX_BATCH + 1], 3).is_err());
    assert!(Plan::new(&ParamSet::ALL, &[4], 0).is_err());
    assert!(Plan::new(&[], &[4], 1).is_err());
    assert_eq!(
        Plan::new(&ParamSet::ALL, &[MAX_BATCH], 1)
            .unwrap()
            .largest(),
        MAX_BATCH
    );

    let s = Plan::standard(65536, 20).unwrap();
    assert_eq!(s.sizes, SIZES.to_vec());
    assert_eq!(s.sets, ParamSet::ALL.to_vec());
    assert_eq!(Plan::standard(100, 20).unwrap().sizes, vec![1, 16, 64]);
    assert!(Plan::standard(0, 20).is_err());
}

#[test]
fn row_rates_and_speedups() {
    let t = Timing {
        kernel_ms: 2.0,
        end_to_end_ms: 4.0,
        setup_ms: 0.5,
        runs: 10,
    };
    // 1000 products: 500 000/s on the kernel, 250 000/s end to end; the CPU at 10 µs is 100 000/s.
    let r = Row::new(761, Product::ModQ, Method::Ntt, 1000, &t, 10.0);
    assert_eq!(r.runs, 10);
    assert!((r.kernel_products_per_s - 500_000.0).abs() < 1e-6);
    assert!((r.end_to_end_products_per_s - 250_000.0).abs() < 1e-6);
    assert!((r.speedup_kernel - 5.0).abs() < 1e-9);
    assert!((r.speedup_end_to_end - 2.5).abs() < 1e-9);

    let csv = to_csv(std::slice::from_ref(&r));
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), CSV_COLUMNS.join(","));
    assert_eq!(
        lines.next().unwrap(),
        "761,mod-q,cuda-ntt,1000,10,2.000000,4.000000,0.500000,500000.000000,\
             250000.000000,10.000000,5.000000,2.500000"
    );
    assert!(lines.next().is_none());
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["product"], "mod-q");
    assert_eq!(v["method"], "cuda-ntt");
    assert_eq!(v["end_to_end_ms"], 4.0);
    assert_eq!(table(&[r]).lines().count(), 2);
    // The columns ci/plot_kem.py reads.
    let plot = include_str!("../../../ctru-cuda/ci/plot_kem.py");
    for c in [
        "n",
        "product",
        "method",
        "batch",
        "kernel_products_per_s",
        "end_to_end_products_per_s",
        "cpu_ntt_us",
    ] {
        assert!(CSV_COLUMNS.contains(&c), "{c}");
        assert!(plot.contains(&format!("[\"{c}\"]")), "{c}");
    }
}

#[test]
fn kem_rows_and_table() {
    let r = KemRow::new(653, KemOp::Decaps, 4, 200, 3, 0.5);
    assert!((r.per_s - 400.0).abs() < 1e-9);
    assert!((r.median_ms - 500.0).abs() < 1e-9);
    assert_eq!(serde_json::to_value(&r).unwrap()["op"], "decaps");
    let rows = [
        KemRow::new(653, KemOp::Keygen, 4, 200, 3, 1.0),
        r,
        KemRow::new(653, KemOp::Keygen, 1, 200, 3, 2.0),
    ];
    let t = kem_table(&rows);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 3, "{t}");
    assert!(lines[1].contains("200") && lines[1].contains("400") && lines[1].contains('-'));
    assert!(lines[2].trim_start().starts_with("653       1"));
}

#[test]
fn gpu_kem_rows_sizes_and_tampering() {
    let t = KemTiming {
        kernel_ms: 2.0,
        end_to_end_ms: 4.0,
        runs: 10,
    };
    let r = GpuKemRow::new(761, KemOp::Decaps, 1000, &t);
    assert!((r.kernel_per_s - 500_000.0).abs() < 1e-6);
    assert!((r.end_to_end_per_s - 250_000.0).abs() < 1e-6);
    let csv = kem_gpu_csv(std::slice::from_ref(&r));
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), KEM_CSV_COLUMNS.join(","));
    assert_eq!(
        lines.next().unwrap(),
        "761,decaps,1000,10,2.000000,4.000000,500000.0,250000.0"
    );
    assert_eq!(kem_gpu_table(&[r]).lines().count(), 2);
    assert_eq!(kem_sizes(65536), KEM_SIZES.to_vec());
    assert_eq!(kem_sizes(5000), vec![1024, 4096]);
    assert_eq!(kem_sizes(100), vec![100]);
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let (pk, _) = random_keys(ParamSet::Ctru761, &mut rng);
    let (ct, _) = encaps(&pk, &mut FixedSeed([5; 32]));
    for kind in 0..3 {
        assert_ne!(tamper(&ct, &mut rng, kind), ct, "kind {kind}");
    }
}

#[test]
fn operands_lie_in_range_and_cpu_figures_are_positive() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    for set in ParamSet::ALL {
        let p = set.params();
        for product in Product::ALL {
            let limit = small_limit(set, product);
            let (shared, batch) = random_operands(set, product, &mut rng, 3);
            assert_eq!(shared.len(), p.n);
            assert_eq!(batch.len(), 3);
            let small: Vec<&Vec<i32>> = match product {
                Product::ModQ => batch.iter().collect(),
                Product::ModQ2 => vec![&shared],
            };
            assert!(small.iter().all(|v| v.iter().all(|c| c.abs() <= limit)));
            for (s, b) in extremes(set, product) {
                assert_eq!(s.len(), p.n);
                assert!(prepare(set, product, &s, &b).is_ok());
            }
            // The CPU NTT agrees with the schoolbook on these operands, and is timed.
            let m = multiplier(set);
            let got = match product {
                Product::ModQ => {
                    let r: Vec<i8> = batch[0].iter().map(|&v| v as i8).collect();
                    m.mul_mod_q(&shared, &r).unwrap()
                }
                Product::ModQ2 => {
                    let f: Vec<i8> = shared.iter().map(|&v| v as i8).collect();
                    m.mul_mod_q2(&batch[0], &f).unwrap()
                }
            };
            assert_eq!(got, reference(set, product, &shared, &batch[0]));
            assert!(cpu_ntt_us(set, product, &shared, &batch[0], 1).unwrap() > 0.0);
        }
    }
    let mut bad = vec![0i32; ParamSet::Ctru653.params().n];
    bad[3] = 1000;
    let ok = vec![0i32; bad.len()];
    assert!(matches!(
        cpu_ntt_us(ParamSet::Ctru653, Product::ModQ, &ok, &bad, 1),
        Err(Error::OutOfRange { index: 3, .. })
    ));
    let rows = cpu_ntt_rows(&[ParamSet::Ctru653], 1, &mut rng).unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.products_per_s > 0.0));
}

#[test]
fn cpu_kem_round_trips_on_one_core_and_all() {
    for parallel in [false, true] {
        let rows = cpu_kem(ParamSet::Ctru653, 3, 1, parallel).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.op).collect::<Vec<_>>(),
            KemOp::ALL.to_vec()
        );
        assert!(rows.iter().all(|r| r.per_s > 0.0 && r.batch == 3));
        assert_eq!(rows[0].threads == 1, !parallel);
    }
    assert!(cpu_kem(ParamSet::Ctru653, 0, 1, false).is_err());
}

#[test]
fn without_a_gpu_the_sweep_says_unavailable() {
    if chainsig_gpu::driver_available() {
        eprintln!("a CUDA driver is present: the device tests cover run_gpu");
        return;
    }
    let plan = Plan::new(&[ParamSet::Ctru653], &[1], 1).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert!(matches!(
        run_gpu(&plan, &mut rng, |_| {}),
        Err(Error::Gpu(GpuError::Unavailable(_)))
    ));
}
