//! Fresh random SM2 test records with reference verdicts, for tests, the device check and the
//! benchmark: many keys, random digests signed as prehashed by the RustCrypto `sm2` crate (an
//! independent implementation), about a tenth corrupted in varied ways, and hand-built edge cases.
//! Verdicts always come from the reference verifier, never from how a record was made.

use crate::codegen::{words_from_be, Words};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use sm2::dsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use sm2::dsa::{Signature, SigningKey, VerifyingKey};
use sm2::elliptic_curve::ff::PrimeField;
use sm2::Scalar;

const DIST_ID: &str = "1234567812345678";

/// One signature record: digest e, signature (r, s), public key (x, y), all big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub e: [u8; 32],
    pub r: [u8; 32],
    pub s: [u8; 32],
    pub px: [u8; 32],
    pub py: [u8; 32],
}

struct Key {
    sk: SigningKey,
    d: Scalar,
    px: [u8; 32],
    py: [u8; 32],
}

fn key_from_scalar(d: Scalar) -> Key {
    let bytes: [u8; 32] = d.to_repr().into();
    let sk = SigningKey::from_bytes(DIST_ID, &bytes.into()).expect("nonzero secret key");
    let sec1 = sk.verifying_key().to_sec1_bytes();
    let mut px = [0u8; 32];
    let mut py = [0u8; 32];
    px.copy_from_slice(&sec1[1..33]);
    py.copy_from_slice(&sec1[33..65]);
    Key { sk, d, px, py }
}

fn random_scalar(rng: &mut ChaCha20Rng) -> Scalar {
    loop {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        let s = Scalar::from_repr(b.into());
        if bool::from(s.is_some()) {
            let s = s.unwrap();
            if !bool::from(s.is_zero()) {
                return s;
            }
        }
    }
}

fn scalar_bytes(s: &Scalar) -> [u8; 32] {
    s.to_repr().into()
}

/// The reference's signature and key for raw bytes under identifier `id`; `None` when either does
/// not parse (r or s out of range, a key off the curve), which the reference rejects.
fn reference_parts(
    id: &str,
    r: &[u8; 32],
    s: &[u8; 32],
    px: &[u8; 32],
    py: &[u8; 32],
) -> Option<(Signature, VerifyingKey)> {
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(r);
    sig[32..].copy_from_slice(s);
    let sig = Signature::from_slice(&sig).ok()?;
    let mut sec1 = [0u8; 65];
    sec1[0] = 4;
    sec1[1..33].copy_from_slice(px);
    sec1[33..].copy_from_slice(py);
    let vk = VerifyingKey::from_sec1_bytes(id, &sec1).ok()?;
    Some((sig, vk))
}

/// The reference verdict for raw bytes (r or s out of range parses to a rejection).
pub fn reference_verify(rec: &Record) -> bool {
    reference_parts(DIST_ID, &rec.r, &rec.s, &rec.px, &rec.py)
        .is_some_and(|(sig, vk)| vk.verify_prehash(&rec.e, &sig).is_ok())
}

const N_BE: [u8; 32] = chainsig_core::curve::SM2.n;

/// Signs e; the key d = n - 1 (P = -G) cannot sign, so it gets random scalars instead.
fn sign(key: &Key, e: &[u8; 32], rng: &mut ChaCha20Rng) -> ([u8; 32], [u8; 32]) {
    let Ok(sig) = PrehashSigner::<Signature>::sign_prehash(&key.sk, e) else {
        return (
            scalar_bytes(&random_scalar(rng)),
            scalar_bytes(&random_scalar(rng)),
        );
    };
    let b = sig.to_bytes();
    let mut r = [0u8; 32];
    let mut s = [0u8; 32];
    r.copy_from_slice(&b[..32]);
    s.copy_from_slice(&b[32..]);
    (r, s)
}

fn corrupt(rec: &mut Record, rng: &mut ChaCha20Rng, other: &Key) {
    match rng.gen_range(0..10u32) {
        0 => rec.e[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
        1 => rec.r[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
        2 => rec.s[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
        3 => {
            rec.px = other.px;
            rec.py = other.py;
        }
        4 => rec.r = [0; 32],
        5 => rec.s = [0; 32],
        6 => rec.r = chainsig_core::be256::add_small(&N_BE, rng.gen_range(0..3)),
        7 => rec.s = chainsig_core::be256::add_small(&N_BE, rng.gen_range(0..3)),
        8 => rng.fill_bytes(&mut rec.e),
        _ => std::mem::swap(&mut rec.r, &mut rec.s),
    }
}

/// Edge cases that each exercise one rejection (or acceptance) path, with their reference verdicts
/// computed like every other record's.
fn edge_cases(keys: &[Key], rng: &mut ChaCha20Rng) -> Vec<Record> {
    let mut out = Vec::new();
    let k = &keys[0];
    let mut e = [0u8; 32];
    rng.fill_bytes(&mut e);
    let (r, s) = sign(k, &e, rng);
    let base = Record {
        e,
        r,
        s,
        px: k.px,
        py: k.py,
    };
    out.push(base);
    for (rv, sv) in [
        ([0u8; 32], s),
        (r, [0u8; 32]),
        (N_BE, s),
        (r, N_BE),
        ([0xff; 32], s),
        (r, [0xff; 32]),
    ] {
        out.push(Record {
            r: rv,
            s: sv,
            ..base
        });
    }
    // t = r + s = 0 mod n: s = n - r.
    let rs = Scalar::from_repr(r.into()).unwrap();
    out.push(Record {
        s: scalar_bytes(&(-rs)),
        ..base
    });
    // s*G + t*P = infinity: s + (r + s) d = 0, so s = -r d / (1 + d).
    for key in keys.iter().take(5) {
        let Some(inv) = Option::<Scalar>::from((Scalar::ONE + key.d).invert()) else {
            continue; // d = n - 1 has no such signature
        };
        let r = random_scalar(rng);
        let s = -(r * key.d) * inv;
        let mut e = [0u8; 32];
        rng.fill_bytes(&mut e);
        out.push(Record {
            e,
            r: scalar_bytes(&r),
            s: scalar_bytes(&s),
            px: key.px,
            py: key.py,
        });
    }
    // Valid signatures by the special keys (d = 1: P = G; d = n - 1: P = -G), and r = n - 1.
    for key in [&keys[0], &keys[2], &keys[3]] {
        let mut e = [0u8; 32];
        rng.fill_bytes(&mut e);
        let (r, s) = sign(key, &e, rng);
        out.push(Record {
            e,
            r,
            s,
            px: key.px,
            py: key.py,
        });
    }
    // e >= n (digests are any 256-bit value) and e = 0.
    let (r2, s2) = sign(k, &[0xff; 32], rng);
    out.push(Record {
        e: [0xff; 32],
        r: r2,
        s: s2,
        ..base
    });
    let (r3, s3) = sign(k, &[0; 32], rng);
    out.push(Record {
        e: [0; 32],
        r: r3,
        s: s3,
        ..base
    });
    out
}

/// `count` items made in parallel, in chunks of 4096 with a generator each, seeded from `seed` and
/// the chunk's number shifted left by `shift`: the same items whatever the number of threads.
pub(crate) fn in_parallel_chunks<T: Send>(
    count: usize,
    seed: u64,
    shift: u32,
    make: impl Fn(&mut ChaCha20Rng) -> T + Sync,
) -> Vec<T> {
    const CHUNK: usize = 4096;
    (0..count.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((c as u64 + 1) << shift));
            let len = CHUNK.min(count - c * CHUNK);
            let make = &make;
            (0..len).map(move |_| make(&mut rng))
        })
        .collect()
}

/// Generates `count` records (edge cases first) from `seed` with `keys` distinct signers, about
/// `corrupt_per_mille`/1000 of the random ones corrupted; returns them with reference verdicts.
pub fn generate(
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<Record>, Vec<bool>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut pool = vec![key_from_scalar(Scalar::ONE), key_from_scalar(-Scalar::ONE)];
    pool.push(key_from_scalar(random_scalar(&mut rng)));
    pool.swap(0, 2); // keys[0] is an ordinary key; keys[1] has P = -G, keys[2] has P = G
    let scalars: Vec<Scalar> = (pool.len()..keys.max(4))
        .map(|_| random_scalar(&mut rng))
        .collect();
    pool.par_extend(scalars.into_par_iter().map(key_from_scalar));
    let mut records = edge_cases(&pool, &mut rng);
    records.truncate(count);
    let rest = count - records.len();
    let random = in_parallel_chunks(rest, seed, 20, |rng| {
        let key = &pool[rng.gen_range(0..pool.len())];
        let mut e = [0u8; 32];
        rng.fill_bytes(&mut e);
        let (r, s) = sign(key, &e, rng);
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

/// A record that carries its message: the GPU hashes e = SM3(Z_A ‖ msg), Z_A from `id` and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub id: Vec<u8>,
    pub msg: Vec<u8>,
    pub r: [u8; 32],
    pub s: [u8; 32],
    pub px: [u8; 32],
    pub py: [u8; 32],
}

/// The reference verdict: RustCrypto `sm2` computes Z_A from the identifier and hashes the message
/// itself.
pub fn reference_verify_message(rec: &MessageRecord) -> bool {
    use sm2::dsa::signature::Verifier;
    let Ok(id) = std::str::from_utf8(&rec.id) else {
        return false;
    };
    reference_parts(id, &rec.r, &rec.s, &rec.px, &rec.py)
        .is_some_and(|(sig, vk)| vk.verify(&rec.msg, &sig).is_ok())
}

/// Message lengths that put the padding on each side of an SM3 block boundary (Z_A's 32 bytes come
/// first: 32 + len = 55, 56, 64, 119, 120, 128, ...).
const BOUNDARY_LENGTHS: [usize; 12] = [0, 1, 23, 24, 31, 32, 33, 87, 88, 95, 96, 151];

/// Generates `count` message records from `seed` with `keys` distinct signers (one in eight using
/// the identifier of the standard's example, the rest the default), messages of 0 to 300 bytes
/// with block-boundary lengths overrepresented, about `corrupt_per_mille`/1000 corrupted (message
/// bit, message length, identifier, r, s or key); returns them with reference verdicts.
pub fn generate_messages(
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<MessageRecord>, Vec<bool>) {
    use sm2::dsa::signature::Signer;
    const OTHER_ID: &str = "ALICE123@YAHOO.COM";
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5133_0000);
    let scalars: Vec<Scalar> = (0..keys.max(2)).map(|_| random_scalar(&mut rng)).collect();
    let pool: Vec<(&str, SigningKey, [u8; 32], [u8; 32])> = scalars
        .into_par_iter()
        .enumerate()
        .map(|(i, d)| {
            let id = if i % 8 == 7 { OTHER_ID } else { DIST_ID };
            let bytes: [u8; 32] = d.to_repr().into();
            let sk = SigningKey::from_bytes(id, &bytes.into()).expect("nonzero secret key");
            let sec1 = sk.verifying_key().to_sec1_bytes();
            let (mut px, mut py) = ([0u8; 32], [0u8; 32]);
            px.copy_from_slice(&sec1[1..33]);
            py.copy_from_slice(&sec1[33..65]);
            (id, sk, px, py)
        })
        .collect();
    let records = in_parallel_chunks(count, seed, 24, |rng| {
        let (id, sk, px, py) = &pool[rng.gen_range(0..pool.len())];
        let mlen = if rng.gen_range(0..4) == 0 {
            BOUNDARY_LENGTHS[rng.gen_range(0..BOUNDARY_LENGTHS.len())]
        } else {
            rng.gen_range(0..=300)
        };
        let mut msg = vec![0u8; mlen];
        rng.fill_bytes(&mut msg);
        let sig: Signature = sk.sign(&msg);
        let b = sig.to_bytes();
        let mut rec = MessageRecord {
            id: id.as_bytes().to_vec(),
            msg,
            r: b[..32].try_into().expect("32 bytes"),
            s: b[32..].try_into().expect("32 bytes"),
            px: *px,
            py: *py,
        };
        if rng.gen_range(0..1000) < corrupt_per_mille {
            let other = &pool[rng.gen_range(0..pool.len())];
            match rng.gen_range(0..6u32) {
                0 if !rec.msg.is_empty() => {
                    let i = rng.gen_range(0..rec.msg.len());
                    rec.msg[i] ^= 1 << rng.gen_range(0..8);
                }
                1 => rec.msg.push(rng.gen()),
                2 => rec.id = if *id == DIST_ID { OTHER_ID } else { DIST_ID }.into(),
                3 => rec.r[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
                4 => rec.s[rng.gen_range(0..32)] ^= 1 << rng.gen_range(0..8),
                _ => {
                    rec.px = other.2;
                    rec.py = other.3;
                }
            }
        }
        rec
    });
    let verdicts = records.par_iter().map(reference_verify_message).collect();
    (records, verdicts)
}

/// The records as an SM2 verification [`Batch`](chainsig_core::batch::Batch), in order.
pub fn batch(records: &[Record]) -> chainsig_core::batch::Batch {
    batch_for(chainsig_core::algorithm::Algorithm::Sm2, false, records)
}

/// The records as a verification batch of `alg` (`low_s` as [`Batch::with_capacity`] takes it).
///
/// [`Batch::with_capacity`]: chainsig_core::batch::Batch::with_capacity
pub fn batch_for(
    alg: chainsig_core::algorithm::Algorithm,
    low_s: bool,
    records: &[Record],
) -> chainsig_core::batch::Batch {
    use chainsig_core::batch::{Batch, PreparedItem};
    let mut b = Batch::with_capacity(alg, low_s, records.len());
    for r in records {
        b.push(&PreparedItem {
            e: r.e,
            r: r.r,
            s: r.s,
            px: r.px,
            py: r.py,
        });
    }
    b
}

/// The records as a [`MessageBatch`], Z_A from `z_a` (the caller's per-signer cache).
pub fn message_batch(
    records: &[MessageRecord],
    mut z_a: impl FnMut(&[u8], &[u8; 32], &[u8; 32]) -> [u8; 32],
) -> crate::messages::MessageBatch {
    let bytes = records.iter().map(|r| r.msg.len()).sum();
    let mut b = crate::messages::MessageBatch::with_capacity(records.len(), bytes);
    for rec in records {
        let za = z_a(&rec.id, &rec.px, &rec.py);
        b.push(&crate::messages::MessageItem {
            za: &za,
            msg: &rec.msg,
            r: &rec.r,
            s: &rec.s,
            px: &rec.px,
            py: &rec.py,
        });
    }
    b
}

/// A point's affine coordinates as the kernels hold them: 8 little-endian words each.
pub fn affine_words(pt: &sm2::AffinePoint) -> (Words, Words) {
    use sm2::elliptic_curve::sec1::ToSec1Point;
    let enc = pt.to_sec1_point(false);
    let bytes = enc.as_bytes();
    (
        words_from_be(bytes[1..33].try_into().expect("32 bytes")),
        words_from_be(bytes[33..65].try_into().expect("32 bytes")),
    )
}

/// Entry (j, m) of P's fixed-base table in signed windows of `bits` bits, m·2^(bits·j)·P, by
/// RustCrypto: its index in the table and the 16 words the kernels store there (x, then y).
pub fn table_entry_reference(
    p: &sm2::ProjectivePoint,
    bits: usize,
    j: usize,
    m: usize,
) -> (usize, [u32; 16]) {
    let mut k = Scalar::from(m as u64);
    for _ in 0..bits * j {
        k = k + k;
    }
    let (x, y) = affine_words(&(*p * k).to_affine());
    let mut words = [0u32; 16];
    words[..8].copy_from_slice(&x);
    words[8..].copy_from_slice(&y);
    (j * (1 << (bits - 1)) + m - 1, words)
}
