//! Operands of the product checks: random batches in the KEM's ranges, the extreme instances, and
//! the reference product (`chainsig_ctru`'s schoolbook) they are checked against.

use chainsig_ctru::poly::{schoolbook_mul_mod_q, schoolbook_mul_mod_q2};
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{small_limit, Product};
use rand::Rng;

/// The schoolbook product the GPU results must equal.
pub fn reference(set: ParamSet, product: Product, shared: &[i32], b: &[i32]) -> Vec<i32> {
    let p = set.params();
    match product {
        Product::ModQ => {
            let a: Vec<i32> = shared.iter().map(|&v| v.rem_euclid(p.q)).collect();
            schoolbook_mul_mod_q(p, &a, b)
        }
        Product::ModQ2 => {
            let c: Vec<i32> = b.iter().map(|&v| v.rem_euclid(p.q2)).collect();
            schoolbook_mul_mod_q2(p, shared, &c)
        }
    }
}

/// A shared operand and `count` batch operands in the KEM's ranges: for mod q, h uniform mod q and r
/// alternately within η and within the small limit; for mod q2, f in the unpacked secret-key range
/// and c uniform mod q2.
pub fn random_operands(
    set: ParamSet,
    product: Product,
    rng: &mut impl Rng,
    count: usize,
) -> (Vec<i32>, Vec<Vec<i32>>) {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let (f_lo, f_hi) = p.unpacked_f_range();
    match product {
        Product::ModQ => (
            (0..n).map(|_| rng.gen_range(0..p.q)).collect(),
            (0..count)
                .map(|i| {
                    let e = if i % 2 == 0 { p.eta } else { limit };
                    (0..n).map(|_| rng.gen_range(-e..=e)).collect()
                })
                .collect(),
        ),
        Product::ModQ2 => (
            (0..n).map(|_| rng.gen_range(f_lo..=f_hi)).collect(),
            (0..count)
                .map(|_| (0..n).map(|_| rng.gen_range(0..p.q2)).collect())
                .collect(),
        ),
    }
}

/// Extreme cases: (shared, batch) pairs with every coefficient at an end of its range.
pub fn extremes(set: ParamSet, product: Product) -> Vec<(Vec<i32>, Vec<Vec<i32>>)> {
    let p = set.params();
    let n = p.n;
    let limit = small_limit(set, product);
    let alt =
        |a: i32, b: i32| -> Vec<i32> { (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect() };
    let small = vec![vec![limit; n], vec![-limit; n], alt(limit, -limit)];
    let large = match product {
        Product::ModQ => vec![
            vec![(p.q - 1) / 2; n],
            vec![-(p.q - 1) / 2; n],
            vec![p.q - 1; n],
            alt((p.q - 1) / 2, -(p.q - 1) / 2),
        ],
        Product::ModQ2 => vec![
            vec![p.q2 / 2 - 1; n],
            vec![-p.q2 / 2; n],
            vec![p.q2 - 1; n],
            alt(p.q2 / 2 - 1, -p.q2 / 2),
        ],
    };
    match product {
        Product::ModQ => large.into_iter().map(|h| (h, small.clone())).collect(),
        Product::ModQ2 => small.into_iter().map(|f| (f, large.clone())).collect(),
    }
}
