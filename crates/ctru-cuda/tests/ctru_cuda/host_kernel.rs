//! The kernels' arithmetic, compiled for the host (build.rs), against chainsig_ctru's schoolbook
//! product: random inputs in the KEM's ranges and extreme inputs, for n = 653, 761, 1277, mod q and
//! mod q2, for every method. Runs in CI without a GPU.

use chainsig_bench::ctru::{random_operands, reference};
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{host, small_limit, Method, Product};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A batch in the KEM's ranges: small operands in [−η, η] or the unpacked-key range, the large one in
/// [0, q) or [0, q2); then wider ones up to the limits, and large operands outside [0, q2).
///
/// Mod q is exactly the benchmark's [`random_operands`]. Mod q2 is that too, except that every
/// other instance is drawn from (−100000, 100000) instead of [0, q2): the kernels must reduce any
/// integer, which the KEM's own ranges never show them.
fn random_case(
    set: ParamSet,
    product: Product,
    rng: &mut ChaCha20Rng,
    count: usize,
) -> (Vec<i32>, Vec<Vec<i32>>) {
    let p = set.params();
    let n = p.n;
    match product {
        Product::ModQ => random_operands(set, product, rng, count),
        Product::ModQ2 => {
            let (f_lo, f_hi) = p.unpacked_f_range();
            let f: Vec<i32> = (0..n).map(|_| rng.gen_range(f_lo..=f_hi)).collect();
            let batch = (0..count)
                .map(|i| {
                    if i % 2 == 0 {
                        (0..n).map(|_| rng.gen_range(0..p.q2)).collect()
                    } else {
                        (0..n).map(|_| rng.gen_range(-100_000..100_000)).collect()
                    }
                })
                .collect();
            (f, batch)
        }
    }
}

/// Extreme operands: every coefficient at the ends of the ranges, with all sign patterns that make
/// the linear coefficients largest (all equal signs) plus alternating ones.
fn extreme_case(set: ParamSet, product: Product) -> Vec<(Vec<i32>, Vec<Vec<i32>>)> {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let (large_hi, large_lo) = match product {
        Product::ModQ => ((p.q - 1) / 2, -(p.q - 1) / 2),
        Product::ModQ2 => (p.q2 / 2 - 1, -p.q2 / 2),
    };
    let alt =
        |a: i32, b: i32| -> Vec<i32> { (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect() };
    let small_polys = vec![vec![limit; n], vec![-limit; n], alt(limit, -limit)];
    let large_polys = vec![
        vec![large_hi; n],
        vec![large_lo; n],
        alt(large_hi, large_lo),
        vec![p.q - 1; n],
    ];
    let mut cases = Vec::new();
    match product {
        Product::ModQ => {
            for h in &large_polys {
                cases.push((h.clone(), small_polys.clone()));
            }
        }
        Product::ModQ2 => {
            for f in &small_polys {
                cases.push((f.clone(), large_polys.clone()));
            }
        }
    }
    cases
}

fn check(
    set: ParamSet,
    method: Method,
    product: Product,
    shared: &[i32],
    batch: &[Vec<i32>],
    what: &str,
) {
    let got = host::mul_batch(set, method, product, shared, batch).expect("host product");
    assert_eq!(got.len(), batch.len());
    for (i, (g, b)) in got.iter().zip(batch).enumerate() {
        let want = reference(set, product, shared, b);
        assert!(
            *g == want,
            "{set} {} {}: {what}, instance {i}: first difference at coefficient {:?}",
            method.name(),
            product.name(),
            g.iter().zip(&want).position(|(x, y)| x != y)
        );
    }
}

fn run_method(method: Method) {
    let mut rng = ChaCha20Rng::seed_from_u64(0x6374_7275_6375_6461);
    for set in ParamSet::ALL {
        for product in Product::ALL {
            // 37 instances: the Tensor Core tiling pads to 64 columns, so a partial tile is covered.
            let (shared, batch) = random_case(set, product, &mut rng, 37);
            check(set, method, product, &shared, &batch, "random");
            for (k, (shared, batch)) in extreme_case(set, product).into_iter().enumerate() {
                check(
                    set,
                    method,
                    product,
                    &shared,
                    &batch,
                    &format!("extreme case {k}"),
                );
            }
        }
    }
}

#[test]
fn schoolbook_kernel_arithmetic_matches_reference() {
    run_method(Method::Schoolbook);
}

#[test]
fn ntt_kernel_arithmetic_matches_reference() {
    run_method(Method::Ntt);
}

#[test]
fn tensor_core_kernel_arithmetic_matches_reference() {
    run_method(Method::TensorCore);
}

#[test]
fn a_wrong_result_is_detected() {
    // The comparison itself can fail: a product with a shifted operand differs from the reference.
    let set = ParamSet::Ctru761;
    let n = set.params().n;
    let mut h = vec![0i32; n];
    h[1] = 1;
    let r: Vec<i32> = (0..n as i32).map(|i| i % 3 - 1).collect();
    let got = host::mul_batch(
        set,
        Method::Ntt,
        Product::ModQ,
        &h,
        std::slice::from_ref(&r),
    )
    .unwrap();
    let mut h0 = vec![0i32; n];
    h0[0] = 1;
    assert_ne!(got[0], reference(set, Product::ModQ, &h0, &r));
    assert_eq!(got[0], reference(set, Product::ModQ, &h, &r));
}
