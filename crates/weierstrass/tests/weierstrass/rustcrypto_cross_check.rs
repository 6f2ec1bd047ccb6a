//! Cross-check against the RustCrypto `sm2` crate (an independent implementation): keys derived
//! by both, signatures made by each and verified by the other, and corrupted signatures on which
//! both must agree (and reject). Also SEC1 key decoding, compressed and not, valid and invalid.
//!
//! `CHAINSIG_SM2_RECORDS` sets the number of random records (default 10,000).

use chainsig_weierstrass::{
    message_digest, sign_prehashed, verify_prehashed, z_a, KeyError, PublicKey, SecretKey,
};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sm2::dsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use sm2::dsa::signature::{Signer, Verifier};

use chainsig_core::be256;

const N: [u8; 32] = chainsig_core::curve::SM2.n;
const P: [u8; 32] = chainsig_core::curve::SM2.p;

fn records() -> usize {
    std::env::var("CHAINSIG_SM2_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// RustCrypto's verdict on a prehashed signature; signatures its parser refuses (r or s not in
/// [1, n−1]) count as rejected.
fn theirs_verify(key: &sm2::dsa::VerifyingKey, e: &[u8; 32], r: &[u8; 32], s: &[u8; 32]) -> bool {
    let mut bytes = [0u8; 64];
    bytes[..32].copy_from_slice(r);
    bytes[32..].copy_from_slice(s);
    match sm2::dsa::Signature::from_bytes(&bytes.into()) {
        Ok(sig) => key.verify_prehash(e, &sig).is_ok(),
        Err(_) => false,
    }
}

fn split(sig: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    (sig[..32].try_into().unwrap(), sig[32..].try_into().unwrap())
}

#[test]
fn signatures_and_corruptions_agree_with_rustcrypto() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5332);
    let id = "1234567812345678";
    let count = records();
    let mut previous: Option<(PublicKey, sm2::dsa::VerifyingKey)> = None;
    let mut rejected_corruptions = 0usize;
    for i in 0..count {
        let mut d = [0u8; 32];
        rng.fill_bytes(&mut d);
        let Ok(ours) = SecretKey::from_bytes(&d) else {
            continue;
        };
        let theirs = sm2::dsa::SigningKey::from_bytes(id, &d.into()).expect("valid scalar");
        let public = ours.public_key();
        let their_public = theirs.verifying_key();
        assert_eq!(
            *their_public.to_sec1_bytes(),
            public.to_uncompressed()[..],
            "public key of record {i}"
        );

        let msg_len = rng.gen_range(0..100);
        let msg: Vec<u8> = (0..msg_len).map(|_| rng.gen()).collect();
        let e = message_digest(&z_a(id.as_bytes(), &public), &msg);

        // Ours signs, they verify (both the prehashed and the whole-message form, which checks Z_A).
        let our_sig = sign_prehashed(&ours, &e, &mut rng);
        let (r, s) = split(&our_sig);
        let parsed = sm2::dsa::Signature::from_bytes(&our_sig.into()).expect("in range");
        assert!(
            their_public.verify_prehash(&e, &parsed).is_ok(),
            "record {i}"
        );
        if i % 16 == 0 {
            assert!(their_public.verify(&msg, &parsed).is_ok(), "record {i}");
        }
        assert!(verify_prehashed(&public, &e, &r, &s));

        // They sign (alternating whole-message and prehashed), we verify.
        let their_sig: sm2::dsa::Signature = if i % 2 == 0 {
            theirs.sign(&msg)
        } else {
            theirs.sign_prehash(&e).expect("signs")
        };
        let (tr, ts) = split(&their_sig.to_bytes().into());
        assert!(verify_prehashed(&public, &e, &tr, &ts), "record {i}");

        // One corruption per record, rotating through the kinds.
        let (key, their_key, e2, r2, s2) = {
            let (mut e2, mut r2, mut s2) = (e, r, s);
            let (mut key, mut their_key) = (public, their_public.clone());
            let byte = rng.gen_range(0..32);
            let bit = 1u8 << rng.gen_range(0..8);
            match i % 12 {
                0 => r2[byte] ^= bit,
                1 => s2[byte] ^= bit,
                2 => e2[byte] ^= bit,
                3 => r2 = [0; 32],
                4 => s2 = [0; 32],
                5 => r2 = N,
                6 => s2 = N,
                7 => r2 = be256::add_small(&N, rng.gen_range(1..=255)),
                8 => s2 = [0xff; 32],
                9 => s2 = be256::sub(&N, &r), // t = r + s = 0 mod n
                10 => {
                    // another signer's key
                    if let Some((k, tk)) = &previous {
                        key = *k;
                        their_key = tk.clone();
                    } else {
                        r2[0] ^= 1;
                    }
                }
                _ => {
                    // the key with one coordinate bit flipped: both parsers must reject it, or
                    // (if by chance it is still a point) both verifiers must reject the signature
                    let mut bytes = public.to_uncompressed();
                    bytes[1 + rng.gen_range(0..64)] ^= bit;
                    let ours_parse = PublicKey::from_sec1(&bytes);
                    let theirs_parse = sm2::dsa::VerifyingKey::from_sec1_bytes(id, &bytes);
                    assert_eq!(ours_parse.is_ok(), theirs_parse.is_ok(), "record {i}");
                    match (ours_parse, theirs_parse) {
                        (Ok(k), Ok(tk)) => {
                            key = k;
                            their_key = tk;
                        }
                        _ => r2[31] ^= 1,
                    }
                }
            }
            (key, their_key, e2, r2, s2)
        };
        let ours_verdict = verify_prehashed(&key, &e2, &r2, &s2);
        let theirs_verdict = theirs_verify(&their_key, &e2, &r2, &s2);
        assert_eq!(
            ours_verdict,
            theirs_verdict,
            "corruption {} of record {i}",
            i % 12
        );
        assert!(
            !ours_verdict,
            "corruption {} of record {i} accepted",
            i % 12
        );
        rejected_corruptions += 1;
        previous = Some((public, their_public.clone()));
    }
    assert!(rejected_corruptions > count * 9 / 10);
}

#[test]
fn sec1_decoding_agrees_with_rustcrypto() {
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    for i in 0..300 {
        let key = SecretKey::random(&mut rng);
        let public = key.public_key();
        let compressed = public.to_compressed();
        let decoded = PublicKey::from_sec1(&compressed).expect("valid compressed key");
        assert_eq!(decoded, public);
        let theirs = sm2::dsa::VerifyingKey::from_sec1_bytes("1", &compressed).expect("valid");
        assert_eq!(
            *theirs.to_sec1_bytes(),
            public.to_uncompressed()[..],
            "key {i}"
        );
        // Random x: a point exists for about half; both must agree which, and on y.
        let mut x = [0u8; 33];
        rng.fill_bytes(&mut x[1..]);
        x[0] = 2 + (i % 2) as u8;
        let ours = PublicKey::from_sec1(&x);
        let theirs = sm2::dsa::VerifyingKey::from_sec1_bytes("1", &x);
        assert_eq!(ours.is_ok(), theirs.is_ok(), "x {}", hex::encode(x));
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => {
                assert_eq!(*theirs.to_sec1_bytes(), ours.to_uncompressed()[..]);
                assert_eq!(ours.to_compressed(), x);
            }
            (Err(err), _) => assert!(
                matches!(err, KeyError::NoSquareRoot | KeyError::CoordinateOutOfRange),
                "{err}"
            ),
            _ => unreachable!(),
        }
    }
}

#[test]
fn invalid_keys_are_rejected_with_the_right_error() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let public = SecretKey::random(&mut rng).public_key();
    let full = public.to_uncompressed();
    let compressed = public.to_compressed();

    assert_eq!(PublicKey::from_sec1(&[]), Err(KeyError::Length));
    assert_eq!(PublicKey::from_sec1(&full[..64]), Err(KeyError::Length));
    assert_eq!(
        PublicKey::from_sec1(&[&full[..], &[0]].concat()),
        Err(KeyError::Length)
    );
    assert_eq!(PublicKey::from_sec1(&[0x00]), Err(KeyError::Infinity));
    for prefix in [0x00, 0x01, 0x05, 0x06, 0x07, 0xff] {
        let mut bad = full;
        bad[0] = prefix;
        assert_eq!(PublicKey::from_sec1(&bad), Err(KeyError::Prefix));
        let mut bad = compressed;
        bad[0] = prefix;
        assert_eq!(PublicKey::from_sec1(&bad), Err(KeyError::Prefix));
    }
    // 04 with 32 bytes, 02 with 64 bytes: wrong prefix for the length.
    let mut bad = full;
    bad[0] = 0x02;
    assert_eq!(PublicKey::from_sec1(&bad), Err(KeyError::Prefix));
    let mut bad = compressed;
    bad[0] = 0x04;
    assert_eq!(PublicKey::from_sec1(&bad), Err(KeyError::Prefix));

    // Coordinates ≥ p, in both encodings.
    for too_big in [P, be256::add_small(&P, 1), [0xff; 32]] {
        assert_eq!(
            PublicKey::from_affine(&too_big, &public.y()),
            Err(KeyError::CoordinateOutOfRange)
        );
        assert_eq!(
            PublicKey::from_affine(&public.x(), &too_big),
            Err(KeyError::CoordinateOutOfRange)
        );
        let mut c = [0u8; 33];
        c[0] = 0x02;
        c[1..].copy_from_slice(&too_big);
        assert_eq!(
            PublicKey::from_sec1(&c),
            Err(KeyError::CoordinateOutOfRange)
        );
    }
    // Off the curve: y + 1, and (0, 0).
    assert_eq!(
        PublicKey::from_affine(&public.x(), &be256::add_small(&public.y(), 1)),
        Err(KeyError::NotOnCurve)
    );
    assert_eq!(
        PublicKey::from_affine(&[0; 32], &[0; 32]),
        Err(KeyError::NotOnCurve)
    );
    // A non-residue x: search deterministically from 0 (x = 0 gives rhs = b).
    let non_residue = (0u8..=255)
        .map(|v| {
            let mut x = [0u8; 33];
            x[0] = 0x02;
            x[32] = v;
            x
        })
        .find(|x| PublicKey::from_sec1(x).is_err())
        .expect("some small x has no point");
    assert_eq!(
        PublicKey::from_sec1(&non_residue),
        Err(KeyError::NoSquareRoot)
    );
    assert!(sm2::dsa::VerifyingKey::from_sec1_bytes("1", &non_residue).is_err());
    // The secret key range.
    assert_eq!(
        SecretKey::from_bytes(&[0; 32]).unwrap_err(),
        KeyError::SecretOutOfRange
    );
    assert_eq!(
        SecretKey::from_bytes(&N).unwrap_err(),
        KeyError::SecretOutOfRange
    );
    let n_minus_1 = be256::sub(&N, &be256::add_small(&[0; 32], 1));
    assert_eq!(
        SecretKey::from_bytes(&n_minus_1).unwrap_err(),
        KeyError::SecretOutOfRange
    );
    let n_minus_2 = be256::sub(&N, &be256::add_small(&[0; 32], 2));
    assert!(SecretKey::from_bytes(&n_minus_2).is_ok());
}
