//! Cross-check of `chainsig_weierstrass::p256` against RustCrypto `p256` (an independent implementation):
//! keys and signatures made by `p256::ecdsa::SigningKey::sign_prehash`, about half of them then
//! corrupted (a flipped bit in r, s, z or the key; r or s zero, n, or above), the high-s twin
//! n − s of every valid signature, and identical verdicts required on all. Also SEC1 key decoding,
//! compressed and uncompressed, on valid and invalid encodings.
//!
//! `CHAINSIG_P256_RECORDS` sets the number of random records (default 10,000).

use chainsig_weierstrass::p256::{verify_prehashed, KeyError, PublicKey};
use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use chainsig_core::be256;

const N: [u8; 32] = chainsig_core::curve::P256.n;
const P: [u8; 32] = chainsig_core::curve::P256.p;

fn records() -> usize {
    std::env::var("CHAINSIG_P256_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// RustCrypto's verdict; keys or signatures its parsers refuse count as rejected.
fn theirs_verify(key: &[u8], z: &[u8; 32], r: &[u8; 32], s: &[u8; 32]) -> bool {
    let Ok(key) = VerifyingKey::from_sec1_bytes(key) else {
        return false;
    };
    let Ok(sig) = Signature::from_scalars(*r, *s) else {
        return false;
    };
    key.verify_prehash(z, &sig).is_ok()
}

fn ours_verify(key: &[u8], z: &[u8; 32], r: &[u8; 32], s: &[u8; 32]) -> bool {
    match PublicKey::from_sec1(key) {
        Ok(key) => verify_prehashed(&key, z, r, s),
        Err(_) => false,
    }
}

fn flip_bit(bytes: &mut [u8], rng: &mut ChaCha20Rng) {
    let bit = rng.gen_range(0..bytes.len() * 8);
    bytes[bit / 8] ^= 1 << (bit % 8);
}

fn random_signing_key(rng: &mut ChaCha20Rng) -> SigningKey {
    loop {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        if let Ok(key) = SigningKey::from_slice(&bytes) {
            return key;
        }
    }
}

#[test]
fn verdicts_match_rustcrypto() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x9256);
    let count = records();
    let (mut accepted, mut rejected) = (0usize, 0usize);
    for i in 0..count {
        let signing = random_signing_key(&mut rng);
        let key: Vec<u8> = signing
            .verifying_key()
            .to_sec1_point(false)
            .as_bytes()
            .to_vec();
        let mut z = [0u8; 32];
        rng.fill_bytes(&mut z);
        // Some digests at or above n exercise the reduction of z.
        if i % 97 == 0 {
            z = be256::add_small(&N, (i % 5) as u8);
        } else if i % 101 == 0 {
            z = [0xff; 32];
        }
        let sig: Signature = signing.sign_prehash(&z).expect("signing succeeds");
        let (r, s) = sig.split_bytes();
        let (r, s): ([u8; 32], [u8; 32]) = (r.into(), s.into());

        // The signature itself and its high-s twin: both must verify in both.
        assert!(ours_verify(&key, &z, &r, &s), "record {i}: valid signature");
        assert!(theirs_verify(&key, &z, &r, &s));
        let twin = be256::sub(&N, &s);
        assert!(ours_verify(&key, &z, &r, &twin), "record {i}: n − s");
        assert!(theirs_verify(&key, &z, &r, &twin));

        // Half the records are then corrupted in one way.
        let (mut key, mut z, mut r, mut s) = (key, z, r, s);
        let kind = i % 14;
        match kind {
            0..=6 => {}
            7 => flip_bit(&mut r, &mut rng),
            8 => flip_bit(&mut s, &mut rng),
            9 => flip_bit(&mut z, &mut rng),
            10 => flip_bit(&mut key[1..], &mut rng),
            11 => match rng.gen_range(0..4) {
                0 => r = [0; 32],
                1 => r = N,
                2 => r = be256::add_small(&N, rng.gen_range(1..=255)),
                _ => r = [0xff; 32],
            },
            12 => match rng.gen_range(0..4) {
                0 => s = [0; 32],
                1 => s = N,
                2 => s = be256::add_small(&N, rng.gen_range(1..=255)),
                _ => s = [0xff; 32],
            },
            _ => {
                // A valid point that is not the signer's key.
                let other = random_signing_key(&mut rng);
                key = other
                    .verifying_key()
                    .to_sec1_point(false)
                    .as_bytes()
                    .to_vec();
            }
        }
        let ours = ours_verify(&key, &z, &r, &s);
        let theirs = theirs_verify(&key, &z, &r, &s);
        assert_eq!(ours, theirs, "record {i} (corruption {kind})");
        if kind <= 6 {
            assert!(ours, "record {i}: untouched signature");
        }
        if ours {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    // Corruptions reject except in a vanishing fraction of cases.
    assert!(accepted >= count / 2 && rejected >= count * 6 / 14 - 10);
}

#[test]
fn key_decoding_matches_rustcrypto() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5ec1);
    for i in 0..2_000 {
        // Valid keys: compressed and uncompressed agree on the point.
        let signing = random_signing_key(&mut rng);
        let vk = signing.verifying_key();
        let uncompressed = vk.to_sec1_point(false).as_bytes().to_vec();
        let compressed = vk.to_sec1_point(true).as_bytes().to_vec();
        let from_c = PublicKey::from_sec1(&compressed).expect("compressed key decodes");
        let from_u = PublicKey::from_sec1(&uncompressed).expect("uncompressed key decodes");
        assert_eq!(from_c, from_u);
        assert_eq!(from_c.to_uncompressed().as_slice(), uncompressed.as_slice());
        assert_eq!(from_c.to_compressed().as_slice(), compressed.as_slice());
        let x: [u8; 32] = uncompressed[1..33].try_into().unwrap();
        let y: [u8; 32] = uncompressed[33..].try_into().unwrap();
        assert_eq!(PublicKey::from_affine(&x, &y), Ok(from_u));

        // Random x: about half have no point; both must say the same, and agree on y.
        let mut candidate = [0u8; 33];
        candidate[0] = if i % 2 == 0 { 0x02 } else { 0x03 };
        rng.fill_bytes(&mut candidate[1..]);
        if i % 50 == 0 {
            candidate[1..].copy_from_slice(&be256::add_small(&P, (i % 7) as u8));
        }
        let ours = PublicKey::from_sec1(&candidate);
        let theirs = VerifyingKey::from_sec1_bytes(&candidate);
        assert_eq!(ours.is_ok(), theirs.is_ok(), "compressed {candidate:02x?}");
        if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
            assert_eq!(
                ours.to_uncompressed().as_slice(),
                theirs.to_sec1_point(false).as_bytes()
            );
        }

        // A flipped bit in an uncompressed key: off the curve (or out of range) for both.
        let mut broken = uncompressed.clone();
        flip_bit(&mut broken[1..], &mut rng);
        assert_eq!(
            PublicKey::from_sec1(&broken).is_ok(),
            VerifyingKey::from_sec1_bytes(&broken).is_ok()
        );
    }
}

#[test]
fn malformed_keys_give_clear_errors() {
    assert_eq!(PublicKey::from_sec1(&[0x00]), Err(KeyError::Infinity));
    assert_eq!(PublicKey::from_sec1(&[]), Err(KeyError::Length));
    assert_eq!(PublicKey::from_sec1(&[0x04; 64]), Err(KeyError::Length));
    assert_eq!(PublicKey::from_sec1(&[0x05; 65]), Err(KeyError::Prefix));
    assert_eq!(PublicKey::from_sec1(&[0x04; 33]), Err(KeyError::Prefix));
    let mut at_p = [0u8; 65];
    at_p[0] = 0x04;
    at_p[1..33].copy_from_slice(&P);
    assert_eq!(
        PublicKey::from_sec1(&at_p),
        Err(KeyError::CoordinateOutOfRange)
    );
    let mut off_curve = [0u8; 65];
    off_curve[0] = 0x04;
    off_curve[32] = 1;
    off_curve[64] = 1;
    assert_eq!(PublicKey::from_sec1(&off_curve), Err(KeyError::NotOnCurve));
    let mut compressed_at_p = [0x02u8; 33];
    compressed_at_p[1..].copy_from_slice(&P);
    assert_eq!(
        PublicKey::from_sec1(&compressed_at_p),
        Err(KeyError::CoordinateOutOfRange)
    );
    // x = 0 has no point on P-256's curve? Whatever the answer, ours and theirs agree.
    let zero_x = [0x02u8; 33];
    let mut zero_x = zero_x;
    zero_x[1..].fill(0);
    assert_eq!(
        PublicKey::from_sec1(&zero_x).is_ok(),
        VerifyingKey::from_sec1_bytes(&zero_x).is_ok()
    );
}

#[test]
fn known_answer_from_rustcrypto_key_and_fixed_digest() {
    // A fixed key and digest: the verdict of both on the signature and on r off by one.
    let signing = SigningKey::from_slice(&[0x42; 32]).unwrap();
    let key = signing
        .verifying_key()
        .to_sec1_point(true)
        .as_bytes()
        .to_vec();
    let z = [0x17u8; 32];
    let sig: Signature = signing.sign_prehash(&z).unwrap();
    let (r, s) = sig.split_bytes();
    let (r, s): ([u8; 32], [u8; 32]) = (r.into(), s.into());
    assert!(ours_verify(&key, &z, &r, &s));
    let r_off = be256::add_small(&r, 1);
    assert_eq!(
        ours_verify(&key, &z, &r_off, &s),
        theirs_verify(&key, &z, &r_off, &s)
    );
    assert!(!ours_verify(&key, &z, &r_off, &s));
}
