//! Per-core timings of the SM2 operations, with the RustCrypto `sm2` crate's verification as the
//! reference point, and the P-256 ECDSA verifier against RustCrypto `p256`. Run:
//! `cargo bench -p chainsig-weierstrass` (or `-- p256` for the P-256 pair only).

use chainsig_weierstrass::{
    message_digest, sign_prehashed, verify_prehashed, z_a, PublicKey, SecretKey,
};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sm2::dsa::signature::hazmat::PrehashVerifier;

fn benches(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let key = SecretKey::random(&mut rng);
    let public = key.public_key();
    let id = b"1234567812345678";
    let za = z_a(id, &public);
    let e = message_digest(&za, b"benchmark message");
    let sig = sign_prehashed(&key, &e, &mut rng);
    let (r, s): ([u8; 32], [u8; 32]) =
        (sig[..32].try_into().unwrap(), sig[32..].try_into().unwrap());
    assert!(verify_prehashed(&public, &e, &r, &s));

    c.bench_function("chainsig verify_prehashed", |b| {
        b.iter(|| {
            verify_prehashed(
                black_box(&public),
                black_box(&e),
                black_box(&r),
                black_box(&s),
            )
        })
    });
    c.bench_function("chainsig sign_prehashed", |b| {
        b.iter(|| sign_prehashed(black_box(&key), black_box(&e), &mut rng))
    });
    c.bench_function("chainsig z_a", |b| {
        b.iter(|| z_a(black_box(id), black_box(&public)))
    });
    c.bench_function("chainsig from_sec1 compressed", |b| {
        let bytes = public.to_compressed();
        b.iter(|| PublicKey::from_sec1(black_box(&bytes)))
    });

    let theirs =
        sm2::dsa::VerifyingKey::from_sec1_bytes("1234567812345678", &public.to_uncompressed())
            .expect("valid key");
    let their_sig = sm2::dsa::Signature::from_bytes(&sig.into()).expect("valid signature");
    assert!(theirs.verify_prehash(&e, &their_sig).is_ok());
    c.bench_function("rustcrypto sm2 verify_prehash", |b| {
        b.iter(|| theirs.verify_prehash(black_box(&e), black_box(&their_sig)))
    });

    p256_benches(c);
}

fn p256_benches(c: &mut Criterion) {
    use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
    let signing = p256::ecdsa::SigningKey::from_slice(&[0x5a; 32]).expect("valid key");
    let z = [0x3cu8; 32];
    let sig: p256::ecdsa::Signature = signing.sign_prehash(&z).expect("signs");
    let (r, s) = sig.split_bytes();
    let (r, s): ([u8; 32], [u8; 32]) = (r.into(), s.into());
    let sec1 = signing.verifying_key().to_sec1_point(false);
    let ours =
        chainsig_weierstrass::p256::PublicKey::from_sec1(sec1.as_bytes()).expect("valid key");
    assert!(chainsig_weierstrass::p256::verify_prehashed(
        &ours, &z, &r, &s
    ));
    c.bench_function("chainsig p256 verify_prehashed", |b| {
        b.iter(|| {
            chainsig_weierstrass::p256::verify_prehashed(
                black_box(&ours),
                black_box(&z),
                black_box(&r),
                black_box(&s),
            )
        })
    });
    let theirs = signing.verifying_key();
    c.bench_function("rustcrypto p256 verify_prehash", |b| {
        b.iter(|| theirs.verify_prehash(black_box(&z), black_box(&sig)))
    });
}

criterion_group!(sm2_benches, benches);
criterion_main!(sm2_benches);
