//! Per-core verification and signing cost of each algorithm (criterion; one thread).
use chainsig_core::{Algorithm, Batch};
use chainsig_testkit::{prepared_items, record, GenSpec};
use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 7,
            invalid_ratio: 0.0,
            msg_len: 64,
        };
        let (items, _) = prepared_items(&spec, 256);
        let batch = Batch::from_results(alg, false, items.iter().map(|i| Ok(*i)));
        let mut n = 0usize;
        c.bench_function(&format!("{alg}/verify"), |b| {
            b.iter(|| {
                n = (n + 1) % items.len();
                assert!(chainsig_cpu::verify_item(alg, false, &batch.item(n)));
            })
        });
        let mut i = 0u64;
        c.bench_function(&format!("{alg}/generate (keygen+hash+sign)"), |b| {
            b.iter(|| {
                i += 1;
                record(&spec, i)
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
