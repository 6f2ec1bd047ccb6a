//! Single-core CPU baseline: polynomial multiplication (NTT and schoolbook) and the KEM per n.
//!
//! `cargo bench -p chainsig-ctru --bench ctru`

use std::time::Duration;

use chainsig_ctru::ntt::multiplier;
use chainsig_ctru::poly::schoolbook_mul_mod_q;
use chainsig_ctru::{decaps, encaps, keygen, NistDrbg, ParamSet};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn polymul(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut group = c.benchmark_group("polymul");
    for set in ParamSet::ALL {
        let p = set.params();
        let m = multiplier(set);
        let a: Vec<i32> = (0..p.n).map(|_| rng.gen_range(0..p.q)).collect();
        let b: Vec<i8> = (0..p.n)
            .map(|_| rng.gen_range(-p.eta..=p.eta) as i8)
            .collect();
        let b_wide: Vec<i32> = b.iter().map(|&v| v as i32).collect();
        let c2: Vec<i32> = (0..p.n).map(|_| rng.gen_range(0..p.q2)).collect();
        group.bench_function(BenchmarkId::new("ntt_mod_q", p.n), |bench| {
            bench.iter(|| m.mul_mod_q(black_box(&a), black_box(&b)).unwrap())
        });
        group.bench_function(BenchmarkId::new("ntt_mod_q2", p.n), |bench| {
            bench.iter(|| m.mul_mod_q2(black_box(&c2), black_box(&b)).unwrap())
        });
        group.bench_function(BenchmarkId::new("schoolbook_mod_q", p.n), |bench| {
            bench.iter(|| schoolbook_mul_mod_q(p, black_box(&a), black_box(&b_wide)))
        });
        let mut t: Vec<u32> = (0..m.len() as u32).map(|i| i % m.prime()).collect();
        group.bench_function(BenchmarkId::new("ntt_forward_only", p.n), |bench| {
            bench.iter(|| m.forward(black_box(&mut t)))
        });
        group.bench_function(BenchmarkId::new("ntt_inverse_only", p.n), |bench| {
            bench.iter(|| m.inverse_unscaled(black_box(&mut t)))
        });
        let u = t.clone();
        group.bench_function(BenchmarkId::new("ntt_pointwise_only", p.n), |bench| {
            bench.iter(|| m.pointwise(black_box(&mut t), black_box(&u)))
        });
    }
    group.finish();
}

fn kem(c: &mut Criterion) {
    let mut group = c.benchmark_group("kem");
    for set in ParamSet::ALL {
        let n = set.params().n;
        let mut drbg = NistDrbg::new(&[7u8; 48]);
        group.bench_function(BenchmarkId::new("keygen", n), |bench| {
            bench.iter(|| keygen(set, &mut drbg))
        });
        let (pk, sk) = keygen(set, &mut drbg);
        group.bench_function(BenchmarkId::new("encaps", n), |bench| {
            bench.iter(|| encaps(black_box(&pk), &mut drbg))
        });
        let (ct, _) = encaps(&pk, &mut drbg);
        group.bench_function(BenchmarkId::new("decaps", n), |bench| {
            bench.iter(|| decaps(black_box(&sk), black_box(&ct)).unwrap())
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = polymul, kem }
criterion_main!(benches);
