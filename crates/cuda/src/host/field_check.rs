//! The GPU field self-test's operands and judge: edge and random pairs, and a comparison of the
//! device's products with exact schoolbook products and the host build's reductions.

use super::HostCurve;
use crate::codegen::Words;

/// Operand pairs for the GPU field self-test: edge values (0, 1, p − 1, p, 2²⁵⁶ − 1, single
/// words and bits at the top, alternating patterns) paired with each other, then random words.
pub fn field_check_inputs(curve: HostCurve, count: usize, seed: u64) -> (Vec<Words>, Vec<Words>) {
    use rand::{RngCore, SeedableRng};
    let p = crate::codegen::words_from_be(&curve.params().p);
    let mut p_minus_1 = p;
    p_minus_1[0] -= 1; // p is odd
    let mut edges: Vec<Words> = vec![
        [0; 8],
        [1, 0, 0, 0, 0, 0, 0, 0],
        p_minus_1,
        p,
        [u32::MAX; 8],
        [0, 0, 0, 0, 0, 0, 0, 1 << 31],
        [0x5555_5555; 8],
        [0xaaaa_aaaa; 8],
    ];
    for w in 0..8 {
        let mut v = [0u32; 8];
        v[w] = u32::MAX;
        edges.push(v);
    }
    let mut a = Vec::with_capacity(count);
    let mut b = Vec::with_capacity(count);
    'edges: for x in &edges {
        for y in &edges {
            if a.len() == count {
                break 'edges;
            }
            a.push(*x);
            b.push(*y);
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut random = || {
        let mut w = [0u32; 8];
        w.iter_mut().for_each(|x| *x = rng.next_u32());
        w
    };
    while a.len() < count {
        a.push(random());
        b.push(random());
    }
    (a, b)
}

/// The exact 512-bit product, by plain schoolbook (independent of the kernels' code).
fn wide_product(a: &Words, b: &Words) -> [u32; 16] {
    let mut t = [0u32; 16];
    for (i, &x) in a.iter().enumerate() {
        let mut carry = 0u64;
        for (j, &y) in b.iter().enumerate() {
            let v = t[i + j] as u64 + x as u64 * y as u64 + carry;
            t[i + j] = v as u32;
            carry = v >> 32;
        }
        t[i + 8] = carry as u32;
    }
    t
}

/// Compares the GPU self-test's words with the exact wide products and the host build's reduced
/// ones; one line per differing item (at most 8), empty when all agree.
pub fn field_check_compare(
    curve: HostCurve,
    a: &[Words],
    b: &[Words],
    got: &[[u32; 48]],
) -> Vec<String> {
    let mut diffs = Vec::new();
    if got.len() != a.len().min(b.len()) {
        diffs.push(format!("{} results for {} pairs", got.len(), a.len()));
        return diffs;
    }
    for (i, ((x, y), g)) in a.iter().zip(b).zip(got).enumerate() {
        let parts: [(&str, Vec<u32>, &[u32]); 4] = [
            ("a*b", wide_product(x, y).to_vec(), &g[0..16]),
            ("a^2", wide_product(x, x).to_vec(), &g[16..32]),
            ("a*b mod p", curve.fe_mul(x, y).to_vec(), &g[32..40]),
            ("a^2 mod p", curve.fe_mul(x, x).to_vec(), &g[40..48]),
        ];
        for (what, want, have) in parts {
            if want.as_slice() != have && diffs.len() < 8 {
                diffs.push(format!(
                    "item {i}, {what}: a={x:08x?} b={y:08x?} want {want:08x?} got {have:08x?}"
                ));
            }
        }
    }
    diffs
}

#[cfg(test)]
mod field_check_tests {
    use super::*;
    use crate::host::fe_mul;

    #[test]
    fn host_products_pass_their_own_check() {
        let (a, b) = field_check_inputs(HostCurve::Sm2, 600, 7);
        assert_eq!(a.len(), 600);
        let got: Vec<[u32; 48]> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| {
                let mut g = [0u32; 48];
                g[..16].copy_from_slice(&wide_product(x, y));
                g[16..32].copy_from_slice(&wide_product(x, x));
                g[32..40].copy_from_slice(&fe_mul(x, y));
                g[40..48].copy_from_slice(&fe_mul(x, x));
                g
            })
            .collect();
        assert!(field_check_compare(HostCurve::Sm2, &a, &b, &got).is_empty());
        // One flipped bit in any part is reported.
        for word in [0, 20, 35, 47] {
            let mut bad = got.clone();
            bad[300][word] ^= 1 << 9;
            let diffs = field_check_compare(HostCurve::Sm2, &a, &b, &bad);
            assert_eq!(diffs.len(), 1, "{diffs:?}");
            assert!(diffs[0].starts_with("item 300"));
        }
    }

    #[test]
    fn wide_product_matches_u128_arithmetic() {
        let a: Words = [u32::MAX, u32::MAX, 3, 0, 0, 0, 0, 0];
        let b: Words = [u32::MAX, 7, 0, 0, 0, 0, 0, 0];
        let x = (u32::MAX as u128) | ((u32::MAX as u128) << 32) | (3u128 << 64);
        let y = (u32::MAX as u128) | (7u128 << 32);
        // x < 2^66 and y < 2^35: the product fits in 101 bits.
        let want = x * y;
        let t = wide_product(&a, &b);
        let got = (0..4).fold(0u128, |acc, k| acc | ((t[k] as u128) << (32 * k)));
        assert_eq!(got, want);
        assert!(t[4..].iter().all(|&w| w == 0));
    }
}
