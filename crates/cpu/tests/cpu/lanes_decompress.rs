//! Compressed keys made whole in lanes (`lanes::decompress_keys`) against RustCrypto's decoding
//! (`sm2`, `p256`, `k256`, through the testkit), the scalar path's (`decode_pubkey`:
//! libsecp256k1, chainsig-weierstrass) and the equation itself in big integers, in groups of
//! every size from 1 to 8: keys of points both parities, x with no point, x = 0, x at and above
//! p, and prefixes other than 02/03 (refused: the lanes answer only for 02 and 03). Then whole
//! batches prepared with the lanes and without: the same verdicts and the same errors.

use crate::support::{be, lanes_missing};
use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::Algorithm;
use chainsig_cpu::lanes;
use chainsig_cpu::pipeline::verify_records;
use chainsig_cpu::prepare::{decode_pubkey, Preparer};
use chainsig_testkit::curves::decode_key;
use chainsig_testkit::{record, GenSpec};
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// y for the compressed key (prefix, x) from the curve equation in big integers, or `None`.
fn equation_y(alg: Algorithm, key: &[u8; 33]) -> Option<[u8; 32]> {
    let c = alg.curve();
    let (p, a, b) = (
        BigUint::from_bytes_be(&c.p),
        BigUint::from_bytes_be(&c.a),
        BigUint::from_bytes_be(&c.b),
    );
    let x = BigUint::from_bytes_be(&key[1..]);
    if !matches!(key[0], 2 | 3) || x >= p {
        return None;
    }
    let rhs = (x.modpow(&BigUint::from(3u32), &p) + &a * &x + &b) % &p;
    let mut y = rhs.modpow(&((&p + 1u32) >> 2), &p);
    if (&y * &y) % &p != rhs {
        return None;
    }
    if y.bit(0) != (key[0] == 3) {
        y = (&p - &y) % &p;
    }
    Some(be(&y))
}

/// Keys for `alg`: of points (both parities), random x (about half have no point), and edges.
fn keys(alg: Algorithm, rng: &mut ChaCha20Rng, count: usize) -> Vec<[u8; 33]> {
    let p = BigUint::from_bytes_be(&alg.curve().p);
    let edges = [
        BigUint::from(0u32),
        BigUint::from(1u32),
        &p - 1u32,
        p.clone(),
        &p + 1u32,
        (BigUint::from(1u32) << 256) - 1u32,
    ];
    let mut out = Vec::new();
    for (i, x) in edges.iter().enumerate() {
        for prefix in [2u8, 3, 4, 5] {
            let mut key = [prefix; 33];
            key[1..].copy_from_slice(&be(x));
            if i == 0 || prefix < 4 {
                out.push(key);
            }
        }
    }
    let spec = GenSpec {
        alg,
        seed: rng.gen(),
        invalid_ratio: 0.0,
        msg_len: 8,
    };
    for i in 0..count as u64 {
        let mut key = [0u8; 33];
        if i % 2 == 0 {
            // A key of a point: the generator compresses odd indices.
            key.copy_from_slice(&record(&spec, 2 * i + 1).pubkey);
        } else {
            key[0] = 2 + (rng.gen::<u8>() & 1);
            rng.fill(&mut key[1..]);
        }
        out.push(key);
    }
    out
}

#[test]
fn compressed_keys_come_out_as_the_references_decode_them() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0xdec0);
    for alg in Algorithm::ALL {
        let keys = keys(alg, &mut rng, 1200);
        let (mut found, mut refused) = (0, 0);
        let mut start = 0;
        for size in (1..=8).cycle() {
            if start >= keys.len() {
                break;
            }
            let group = &keys[start..(start + size).min(keys.len())];
            let ys = lanes::decompress_keys(alg, group).expect("lanes present");
            assert!(ys[group.len()..].iter().all(Option::is_none));
            for (key, y) in group.iter().zip(ys) {
                let scalar = decode_pubkey(alg, key).ok();
                let rust_crypto = decode_key(alg, key);
                assert_eq!(y, equation_y(alg, key), "{alg} {}", hex::encode(key));
                assert_eq!(scalar.map(|k| k.1), y, "{alg} {}", hex::encode(key));
                // RustCrypto also reads a 33-byte key tagged 05 (its x-only "compact" form, not
                // SEC1's); only 02 and 03 are compared with it.
                if matches!(key[0], 2 | 3) {
                    assert_eq!(rust_crypto.map(|k| k.1), y, "{alg} {}", hex::encode(key));
                }
                if y.is_some() {
                    found += 1;
                } else {
                    refused += 1;
                }
            }
            start += size;
        }
        assert!(
            found > 700 && refused > 250,
            "{alg}: {found} found, {refused} refused"
        );
    }
}

#[test]
fn batches_prepared_with_lanes_verify_as_without() {
    if lanes_missing() {
        return;
    }
    let registry = chainsig_cpu::cpu_registry();
    let mut rng = ChaCha20Rng::seed_from_u64(0xba7c);
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: rng.gen(),
            invalid_ratio: 0.2,
            msg_len: 40,
        };
        let bad_keys = keys(alg, &mut rng, 40);
        let records: Vec<_> = (0..600u64)
            .map(|i| {
                let g = record(&spec, i);
                // Every tenth record carries a key of the adversarial set instead.
                let pubkey = match i % 10 {
                    9 => bad_keys[(i / 10) as usize % bad_keys.len()].to_vec(),
                    _ => g.pubkey.clone(),
                };
                Ok(VerifyRecord {
                    alg,
                    pubkey,
                    payload: Payload::Message {
                        msg: g.msg.clone(),
                        hash: alg.default_hash(),
                    },
                    r: g.r(),
                    s: g.s(),
                    sm2_id: g.sm2_id.clone(),
                })
            })
            .collect();
        let with = Preparer::new().with_lanes(true);
        let without = Preparer::new().with_lanes(false);
        let a = verify_records(&registry, "cpu", false, &with, &records).unwrap();
        let b = verify_records(&registry, "cpu", false, &without, &records).unwrap();
        assert_eq!(a.verdicts, b.verdicts, "{alg}");
        let errors = a
            .verdicts
            .iter()
            .filter(|v| matches!(v, chainsig_cpu::pipeline::Verdict::Error(_)))
            .count();
        assert!(errors > 10, "{alg}: {errors} key errors");
        let decoded = with.decompress_keys(&records, |_| true);
        assert!(
            decoded.iter().flatten().count() > 250,
            "{alg}: the lanes decoded the keys"
        );
    }
}
