//! Hand-built edge cases, each aimed at one path of verification. Their verdicts are never assumed:
//! the sets judge them with the reference like every other record.

use crate::corruption::high_of;
use crate::signer::{sm2_affine, Signer};
use chainsig_core::{Algorithm, PreparedItem};
use rand::RngCore;
use rand_chacha::ChaCha20Rng;
use sm2::elliptic_curve::ff::{Field, PrimeField};

/// Affine coordinates (x, y), big-endian.
type Point = ([u8; 32], [u8; 32]);

fn random_bytes(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b
}

fn item(e: [u8; 32], sig: [u8; 64], key: Point) -> PreparedItem {
    PreparedItem {
        e,
        r: sig[..32].try_into().expect("64 bytes"),
        s: sig[32..].try_into().expect("64 bytes"),
        px: key.0,
        py: key.1,
    }
}

/// r or s at 0, at n and at 2²⁵⁶ − 1 around the honest `base` (six records).
fn out_of_range(alg: Algorithm, base: &PreparedItem) -> Vec<PreparedItem> {
    let n = alg.curve().n;
    [
        ([0u8; 32], base.s),
        (base.r, [0u8; 32]),
        (n, base.s),
        (base.r, n),
        ([0xff; 32], base.s),
        (base.r, [0xff; 32]),
    ]
    .into_iter()
    .map(|(r, s)| PreparedItem { r, s, ..*base })
    .collect()
}

/// SM2 (17 records, in this order): an honest signature; r or s at 0, n, 2²⁵⁶ − 1; t = r + s = n;
/// s·G + t·P at infinity for four keys; honest signatures by an ordinary key, by d = 1 (P = G)
/// and by another key; digests 2²⁵⁶ − 1 (above n) and 0.
pub fn sm2(keys: &[Signer], rng: &mut ChaCha20Rng) -> Vec<PreparedItem> {
    let one = Signer::sm2_from_bytes(&sm2::Scalar::ONE.to_repr().into()).expect("d = 1 signs");
    let d_of = |s: &Signer| match s {
        Signer::Sm2 { d, .. } => *d,
        _ => unreachable!("SM2 keys"),
    };
    let (k0, k1, k2) = (&keys[0], &keys[1 % keys.len()], &keys[2 % keys.len()]);
    let e = random_bytes(rng);
    let base = item(e, k0.sign(&e, rng), k0.public_xy());
    let mut out = vec![base];
    out.extend(out_of_range(Algorithm::Sm2, &base));
    let r = Option::<sm2::Scalar>::from(sm2::Scalar::from_repr(base.r.into())).expect("r < n");
    out.push(PreparedItem {
        s: (-r).to_repr().into(),
        ..base
    });
    // s·G + t·P = ∞: s + (r + s)·d = 0, so s = −r·d / (1 + d). d = n − 1 (P = −G) has none.
    let minus_one = (
        sm2_affine(&-sm2::ProjectivePoint::GENERATOR),
        -sm2::Scalar::ONE,
    );
    let mut infinity_keys: Vec<(Point, sm2::Scalar)> = [k0, &one, k1, k2]
        .iter()
        .map(|k| (k.public_xy(), d_of(k)))
        .collect();
    infinity_keys.insert(1, minus_one);
    for (key, d) in infinity_keys {
        let Some(inv) = Option::<sm2::Scalar>::from((sm2::Scalar::ONE + d).invert()) else {
            continue;
        };
        let r = crate::signer::sm2_reduce(&random_bytes(rng));
        let s = -(r * d) * inv;
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r.to_repr());
        sig[32..].copy_from_slice(&s.to_repr());
        out.push(item(random_bytes(rng), sig, key));
    }
    for key in [k0, &one, k1] {
        let e = random_bytes(rng);
        out.push(item(e, key.sign(&e, rng), key.public_xy()));
    }
    for e in [[0xff; 32], [0; 32]] {
        out.push(item(e, k0.sign(&e, rng), k0.public_xy()));
    }
    out
}

macro_rules! ecdsa_edges {
    ($name:ident, $krate:ident, $alg:expr, $variant:ident) => {
        /// ECDSA (21 records, in this order): 0 an honest signature; 1–6 r or s at 0, n,
        /// 2²⁵⁶ − 1; 7 the high s of 0 (valid unless the low-s rule applies); 8–11 u₁·G + u₂·Q
        /// at infinity (e = −r·d); 12–15 u₁·G = u₂·Q, where the final addition doubles (e = r·d),
        /// honest; 16–17 honest signatures by d = 1 (Q = G) and d = n − 1 (Q = −G); 18–20
        /// digests 2²⁵⁶ − 1 (above n), 0 (u₁ = 0) and n (also u₁ = 0 once reduced).
        pub fn $name(keys: &[Signer], rng: &mut ChaCha20Rng) -> Vec<PreparedItem> {
            use $krate::ecdsa::signature::hazmat::PrehashSigner;
            use $krate::elliptic_curve::ops::Reduce;
            use $krate::{ProjectivePoint, Scalar};
            let alg = $alg;
            let n = alg.curve().n;
            let scalar = |b: [u8; 32]| {
                <Scalar as Reduce<$krate::U256>>::reduce(&$krate::U256::from_be_slice(&b))
            };
            let random_scalar = |rng: &mut ChaCha20Rng| loop {
                let s = scalar(random_bytes(rng));
                if !bool::from(s.is_zero()) {
                    break s;
                }
            };
            let bytes = |s: &Scalar| -> [u8; 32] { s.to_repr().into() };
            let special = |d: Scalar| {
                let sk = $krate::ecdsa::SigningKey::from_bytes(&d.to_repr()).expect("nonzero key");
                (Signer::$variant(sk), d)
            };
            let d_of = |s: &Signer| match s {
                Signer::$variant(sk) => *sk.as_nonzero_scalar().as_ref(),
                _ => unreachable!("keys of this curve"),
            };
            let xy_of = |p: &ProjectivePoint| {
                use $krate::elliptic_curve::sec1::ToSec1Point;
                let enc = p.to_affine().to_sec1_point(false);
                let b = enc.as_bytes();
                let x: [u8; 32] = b[1..33].try_into().expect("32 bytes");
                let y: [u8; 32] = b[33..65].try_into().expect("32 bytes");
                (x, y)
            };
            let k0 = &keys[0];
            let (g, minus_g) = (special(Scalar::ONE), special(-Scalar::ONE));
            let four = [
                (k0.clone(), d_of(k0)),
                g.clone(),
                minus_g.clone(),
                (keys[1 % keys.len()].clone(), d_of(&keys[1 % keys.len()])),
            ];
            let sign = |key: &Signer, e: &[u8; 32]| -> [u8; 64] {
                let Signer::$variant(sk) = key else {
                    unreachable!("keys of this curve")
                };
                let sig: $krate::ecdsa::Signature = sk.sign_prehash(e).expect("32-byte prehash");
                sig.to_bytes().into()
            };
            let e = random_bytes(rng);
            let base = item(e, sign(k0, &e), k0.public_xy());
            let mut out = vec![base];
            out.extend(out_of_range(alg, &base));
            out.push(PreparedItem {
                s: high_of(alg, &base.s),
                ..base
            });
            for (key, d) in &four {
                let r = random_scalar(rng);
                let s = random_scalar(rng);
                out.push(PreparedItem {
                    e: bytes(&-(r * d)),
                    r: bytes(&r),
                    s: bytes(&s),
                    px: key.public_xy().0,
                    py: key.public_xy().1,
                });
            }
            for (key, d) in &four {
                // By hand with nonce kk: r = x(kk·G) mod n, s = (e + r·d)/kk with e = r·d.
                let kk = random_scalar(rng);
                let r = scalar(xy_of(&(ProjectivePoint::GENERATOR * kk)).0);
                let e = r * d;
                let s = (e + r * d) * Option::<Scalar>::from(kk.invert()).expect("nonzero nonce");
                out.push(PreparedItem {
                    e: bytes(&e),
                    r: bytes(&r),
                    s: bytes(&s),
                    px: key.public_xy().0,
                    py: key.public_xy().1,
                });
            }
            for (key, _) in [&g, &minus_g] {
                let e = random_bytes(rng);
                out.push(item(e, sign(key, &e), key.public_xy()));
            }
            for e in [[0xff; 32], [0; 32]] {
                out.push(item(e, sign(k0, &e), k0.public_xy()));
            }
            let zero_sig = sign(k0, &[0; 32]);
            out.push(item(n, zero_sig, k0.public_xy()));
            out
        }
    };
}

ecdsa_edges!(p256, p256, Algorithm::P256, P256);
ecdsa_edges!(secp256k1, k256, Algorithm::Secp256k1, Secp256k1);
