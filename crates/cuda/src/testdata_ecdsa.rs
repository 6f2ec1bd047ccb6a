//! Fresh random ECDSA records (P-256, secp256k1) with reference verdicts, for the ECDSA kernels'
//! tests, the backend's self-test and the device check: many keys, random digests signed as
//! prehashed by RustCrypto `p256` or `k256` (independent implementations), about a tenth
//! corrupted, and hand-built edge cases. Verdicts come from the reference verifier, given the low
//! s of the pair (k256 refuses a high s outright), with the low-s rule applied on top for the
//! low-s verdicts. One generator, instantiated per curve crate by `ecdsa_testdata!`.

use crate::testdata::Record;
use chainsig_core::Algorithm;

/// The reference verdicts of one record: either s accepted, and under the low-s rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts {
    pub any_s: bool,
    pub low_s: bool,
}

impl Verdicts {
    pub fn get(self, low_s: bool) -> bool {
        if low_s {
            self.low_s
        } else {
            self.any_s
        }
    }
}

macro_rules! ecdsa_testdata {
    ($module:ident, $krate:ident, $curve:path, $salt:literal) => {
        mod $module {
            use super::{Record, Verdicts};
            use rand::{Rng, RngCore, SeedableRng};
            use rand_chacha::ChaCha20Rng;
            use rayon::prelude::*;
            use $krate::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
            use $krate::ecdsa::{Signature, SigningKey, VerifyingKey};
            #[allow(unused_imports)] // Field gives p256's Scalar is_zero; k256's has its own
            use $krate::elliptic_curve::ff::{Field, PrimeField};
            use $krate::{ProjectivePoint, Scalar};

            const CURVE: chainsig_core::curve::CurveParams = $curve;
            const SEED_SALT: u64 = $salt;

            /// The reference's verdict on raw bytes (r or s out of range parses to a rejection).
            pub fn reference_verify(rec: &Record) -> Verdicts {
                let mut sec1 = [0u8; 65];
                sec1[0] = 4;
                sec1[1..33].copy_from_slice(&rec.px);
                sec1[33..].copy_from_slice(&rec.py);
                let any_s = match (
                    Signature::from_scalars(rec.r, low_of(&rec.s)),
                    VerifyingKey::from_sec1_bytes(&sec1),
                ) {
                    (Ok(sig), Ok(vk)) => vk.verify_prehash(&rec.e, &sig).is_ok(),
                    _ => false,
                };
                Verdicts {
                    any_s,
                    low_s: any_s && !CURVE.is_high_s(&rec.s),
                }
            }

            struct Key {
                sk: SigningKey,
                d: Scalar,
                px: [u8; 32],
                py: [u8; 32],
            }

            fn key_from_scalar(d: Scalar) -> Key {
                let sk = SigningKey::from_bytes(&d.to_repr()).expect("nonzero secret key");
                let (px, py) = affine_bytes(&(ProjectivePoint::GENERATOR * d));
                Key { sk, d, px, py }
            }

            fn affine_bytes(p: &ProjectivePoint) -> ([u8; 32], [u8; 32]) {
                use $krate::elliptic_curve::sec1::ToSec1Point;
                let enc = p.to_affine().to_sec1_point(false);
                let b = enc.as_bytes();
                (
                    b[1..33].try_into().expect("32 bytes"),
                    b[33..65].try_into().expect("32 bytes"),
                )
            }

            fn random_scalar(rng: &mut ChaCha20Rng) -> Scalar {
                loop {
                    let mut b = [0u8; 32];
                    rng.fill_bytes(&mut b);
                    if let Some(s) = Option::<Scalar>::from(Scalar::from_repr(b.into())) {
                        if !bool::from(s.is_zero()) {
                            return s;
                        }
                    }
                }
            }

            fn bytes(s: &Scalar) -> [u8; 32] {
                s.to_repr().into()
            }

            fn sign(key: &Key, e: &[u8; 32]) -> ([u8; 32], [u8; 32]) {
                let sig: Signature = key.sk.sign_prehash(e).expect("32-byte prehash");
                let b = sig.to_bytes();
                (
                    b[..32].try_into().expect("32 bytes"),
                    b[32..].try_into().expect("32 bytes"),
                )
            }

            /// n − s: the other valid s of a signature, high when s is low.
            fn negate_s(s: &[u8; 32]) -> [u8; 32] {
                Option::<Scalar>::from(Scalar::from_repr((*s).into())).map_or(*s, |v| bytes(&-v))
            }

            /// The low one of s and n − s (values out of range are left alone, to be refused).
            fn low_of(s: &[u8; 32]) -> [u8; 32] {
                if CURVE.is_high_s(s) {
                    negate_s(s)
                } else {
                    *s
                }
            }

            /// The high one of s and n − s.
            fn high_s(s: &[u8; 32]) -> [u8; 32] {
                if CURVE.is_high_s(s) {
                    *s
                } else {
                    negate_s(s)
                }
            }

            fn corrupt(rec: &mut Record, rng: &mut ChaCha20Rng, other: &Key) {
                match rng.gen_range(0..10u32) {
                    0 => rec.e[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
                    1 => rec.r[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
                    2 => rec.s[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
                    3 => (rec.px, rec.py) = (other.px, other.py),
                    4 => rec.r = [0; 32],
                    5 => rec.s = [0; 32],
                    6 => rec.r = chainsig_core::be256::add_small(&CURVE.n, rng.gen_range(0..3)),
                    7 => rec.s = chainsig_core::be256::add_small(&CURVE.n, rng.gen_range(0..3)),
                    8 => rng.fill_bytes(&mut rec.e),
                    _ => std::mem::swap(&mut rec.r, &mut rec.s),
                }
            }

            /// Edge cases, each for one path of the verification, with verdicts computed like every other's.
            fn edge_cases(keys: &[Key], rng: &mut ChaCha20Rng) -> Vec<Record> {
                let k = &keys[0];
                let mut e = [0u8; 32];
                rng.fill_bytes(&mut e);
                let (r, s) = sign(k, &e);
                let base = Record {
                    e,
                    r,
                    s,
                    px: k.px,
                    py: k.py,
                };
                let mut out = vec![base];
                for (rv, sv) in [
                    ([0u8; 32], s),
                    (r, [0u8; 32]),
                    (CURVE.n, s),
                    (r, CURVE.n),
                    ([0xff; 32], s),
                    (r, [0xff; 32]),
                    (r, high_s(&s)), // valid unless low-s applies
                ] {
                    out.push(Record {
                        r: rv,
                        s: sv,
                        ..base
                    });
                }
                // u1 G + u2 Q at infinity: e = -r d, so that e + r d = 0.
                for key in keys.iter().take(4) {
                    let r = random_scalar(rng);
                    out.push(Record {
                        e: bytes(&-(r * key.d)),
                        r: bytes(&r),
                        s: bytes(&random_scalar(rng)),
                        px: key.px,
                        py: key.py,
                    });
                }
                // u1 G = u2 Q (the final addition doubles): e = r d; a valid signature made by hand with nonce
                // kk: r = x(kk G) mod n, s = (e + r d) / kk.
                for key in keys.iter().take(4) {
                    let kk = random_scalar(rng);
                    let (x, _) = affine_bytes(&(ProjectivePoint::GENERATOR * kk));
                    let r = <Scalar as $krate::elliptic_curve::ops::Reduce<$krate::U256>>::reduce(
                        &$krate::U256::from_be_slice(&x),
                    );
                    let e = r * key.d;
                    let s = (e + r * key.d)
                        * Option::<Scalar>::from(kk.invert()).expect("nonzero nonce");
                    out.push(Record {
                        e: bytes(&e),
                        r: bytes(&r),
                        s: bytes(&s),
                        px: key.px,
                        py: key.py,
                    });
                }
                // Valid signatures by the special keys (P = G, P = -G).
                for key in &keys[1..3] {
                    let mut e = [0u8; 32];
                    rng.fill_bytes(&mut e);
                    let (r, s) = sign(key, &e);
                    out.push(Record {
                        e,
                        r,
                        s,
                        px: key.px,
                        py: key.py,
                    });
                }
                // Digests: all ones (above n), zero (u1 = 0) and n itself (also u1 = 0, reduced first).
                for digest in [[0xff; 32], [0; 32]] {
                    let (r, s) = sign(k, &digest);
                    out.push(Record {
                        e: digest,
                        r,
                        s,
                        ..base
                    });
                }
                let (r, s) = sign(k, &[0; 32]);
                out.push(Record {
                    e: CURVE.n,
                    r,
                    s,
                    ..base
                });
                out
            }

            pub fn generate(
                count: usize,
                keys: usize,
                corrupt_per_mille: u32,
                seed: u64,
            ) -> (Vec<Record>, Vec<Verdicts>) {
                let mut rng = ChaCha20Rng::seed_from_u64(seed ^ SEED_SALT);
                let mut pool = vec![
                    key_from_scalar(random_scalar(&mut rng)),
                    key_from_scalar(Scalar::ONE),
                    key_from_scalar(-Scalar::ONE),
                ];
                let scalars: Vec<Scalar> = (pool.len()..keys.max(4))
                    .map(|_| random_scalar(&mut rng))
                    .collect();
                pool.par_extend(scalars.into_par_iter().map(key_from_scalar));
                let mut records = edge_cases(&pool, &mut rng);
                records.truncate(count);
                let rest = count - records.len();
                let random = crate::testdata::in_parallel_chunks(rest, seed, 21, |rng| {
                    let key = &pool[rng.gen_range(0..pool.len())];
                    let mut e = [0u8; 32];
                    rng.fill_bytes(&mut e);
                    let (r, mut s) = sign(key, &e);
                    if rng.gen_range(0..4) == 0 {
                        s = negate_s(&s);
                    }
                    let mut rec = Record {
                        e,
                        r,
                        s,
                        px: key.px,
                        py: key.py,
                    };
                    if rng.gen_range(0..1000) < corrupt_per_mille {
                        let other = &pool[rng.gen_range(0..pool.len())];
                        corrupt(&mut rec, rng, other);
                    }
                    rec
                });
                records.extend(random);
                let verdicts = records.par_iter().map(reference_verify).collect();
                (records, verdicts)
            }
        }
    };
}

ecdsa_testdata!(p256_data, p256, chainsig_core::curve::P256, 0x9256_0000);
ecdsa_testdata!(
    k256_data,
    k256,
    chainsig_core::curve::SECP256K1,
    0x4256_0000
);

/// Generates `count` records of ECDSA `alg` (P-256 or secp256k1; edge cases first) from `seed`
/// with `keys` distinct signers, about `corrupt_per_mille`/1000 of the random ones corrupted and a
/// quarter of the valid ones given the high s; returns them with reference verdicts.
pub fn generate(
    alg: Algorithm,
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<Record>, Vec<Verdicts>) {
    match alg {
        Algorithm::P256 => p256_data::generate(count, keys, corrupt_per_mille, seed),
        Algorithm::Secp256k1 => k256_data::generate(count, keys, corrupt_per_mille, seed),
        Algorithm::Sm2 => panic!("SM2 records come from testdata::generate"),
    }
}

/// Recovery requests for the records, each under recovery ids 0 and 1 (one of them finds the
/// signer of a valid low-s record, the other another key or none), in record order.
pub fn recovery_items(records: &[Record]) -> Vec<chainsig_core::RecoverItem> {
    records
        .iter()
        .flat_map(|r| {
            (0..2).map(|id| chainsig_core::RecoverItem {
                digest: r.e,
                r: r.r,
                s: r.s,
                recovery_id: id,
            })
        })
        .collect()
}

/// The reference's verdicts on one record of ECDSA `alg`.
pub fn reference_verify(alg: Algorithm, rec: &Record) -> Verdicts {
    match alg {
        Algorithm::P256 => p256_data::reference_verify(rec),
        Algorithm::Secp256k1 => k256_data::reference_verify(rec),
        Algorithm::Sm2 => panic!("SM2 records are judged by testdata::reference_verify"),
    }
}
