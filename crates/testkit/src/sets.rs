//! Data sets for the batch engines and the GPU tests: edge cases first ([`crate::edges`]), then
//! records of the one generator ([`crate::records`]) signed by a set of keys, each with the
//! reference's verdict (RustCrypto), never the verdict by construction.

use crate::corruption::{negate_s, Form};
use crate::curves::{reference_verdicts, reference_verify_sm2_message, Verdicts};
use crate::records::{make_record, signer_set, GenSpec, GeneratedRecord, Keys};
use chainsig_core::{Algorithm, PreparedItem, RecoverItem};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// A prepared record (digest, r, s, key), as the engines and the kernels take it.
pub type Record = PreparedItem;

/// Message length of the generated records of a set (only their digests are used).
const SET_MSG_LEN: usize = 32;

fn spec(alg: Algorithm, per_mille: u32, seed: u64) -> GenSpec {
    GenSpec {
        alg,
        seed,
        invalid_ratio: f64::from(per_mille.min(1000)) / 1000.0,
        msg_len: SET_MSG_LEN,
    }
}

/// `count` records of `alg` (edge cases first) from `seed`, signed by `keys` distinct keys,
/// about `corrupt_per_mille`/1000 of the generated ones spoiled and, for ECDSA, one in four of
/// them given the high s (n − s); with the reference's verdicts under both s rules.
pub fn generate_for(
    alg: Algorithm,
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<Record>, Vec<Verdicts>) {
    let spec = spec(alg, corrupt_per_mille, seed);
    let set = signer_set(&spec, keys.max(3) as u64);
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0xed9e_ca5e);
    let mut records = match alg {
        Algorithm::Sm2 => crate::edges::sm2(&set, &mut rng),
        Algorithm::P256 => crate::edges::p256(&set, &mut rng),
        Algorithm::Secp256k1 => crate::edges::secp256k1(&set, &mut rng),
    };
    records.truncate(count);
    let start = records.len() as u64;
    let generated: Vec<Record> = (start..count as u64)
        .into_par_iter()
        .map(|i| {
            let mut item = make_record(&spec, i, Keys::Made(&set), Form::Digests).item();
            if alg != Algorithm::Sm2 && i % 4 == 1 {
                item.s = negate_s(alg, &item.s);
            }
            item
        })
        .collect();
    records.extend(generated);
    let verdicts = records
        .par_iter()
        .map(|r| reference_verdicts(alg, r))
        .collect();
    (records, verdicts)
}

/// SM2 records from [`generate_for`], with the verdicts as booleans.
pub fn generate(
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<Record>, Vec<bool>) {
    let (records, verdicts) = generate_for(Algorithm::Sm2, count, keys, corrupt_per_mille, seed);
    (records, verdicts.into_iter().map(|v| v.any_s).collect())
}

/// ECDSA records (P-256 or secp256k1) from [`generate_for`].
pub fn generate_ecdsa(
    alg: Algorithm,
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<Record>, Vec<Verdicts>) {
    assert_ne!(alg, Algorithm::Sm2, "SM2 sets come from generate");
    generate_for(alg, count, keys, corrupt_per_mille, seed)
}

/// The reference's verdict on an SM2 record (default identifier).
pub fn reference_verify(rec: &Record) -> bool {
    reference_verdicts(Algorithm::Sm2, rec).any_s
}

/// An SM2 record that carries its message and identifier: the GPU hashes e = SM3(Z_A ‖ msg).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub id: Vec<u8>,
    pub msg: Vec<u8>,
    pub r: [u8; 32],
    pub s: [u8; 32],
    pub px: [u8; 32],
    pub py: [u8; 32],
}

impl MessageRecord {
    fn of(g: &GeneratedRecord) -> MessageRecord {
        MessageRecord {
            id: g.sm2_id.clone(),
            msg: g.msg.clone(),
            r: g.r(),
            s: g.s(),
            px: g.px,
            py: g.py,
        }
    }
}

/// RustCrypto's verdict on a message record (it computes Z_A and e itself).
pub fn reference_verify_message(rec: &MessageRecord) -> bool {
    let item = PreparedItem {
        e: [0; 32],
        r: rec.r,
        s: rec.s,
        px: rec.px,
        py: rec.py,
    };
    reference_verify_sm2_message(&rec.id, &rec.msg, &item)
}

/// `count` SM2 message records from `seed`, signed by `keys` distinct keys (one in eight under
/// the identifier "ALICE123@YAHOO.COM", the rest the default), messages of 0 to 300 bytes with
/// SM3 block-boundary lengths overrepresented, about `corrupt_per_mille`/1000 spoiled (message
/// bit, length or content, identifier, r, s, key, ...); with RustCrypto's verdicts.
pub fn generate_messages(
    count: usize,
    keys: usize,
    corrupt_per_mille: u32,
    seed: u64,
) -> (Vec<MessageRecord>, Vec<bool>) {
    let spec = spec(Algorithm::Sm2, corrupt_per_mille, seed ^ 0x5133_0000);
    let set = signer_set(&spec, keys.max(2) as u64);
    let records: Vec<MessageRecord> = (0..count as u64)
        .into_par_iter()
        .map(|i| MessageRecord::of(&make_record(&spec, i, Keys::Made(&set), Form::Sm2Messages)))
        .collect();
    let verdicts = records.par_iter().map(reference_verify_message).collect();
    (records, verdicts)
}

/// The records as a [`MessageBatch`](chainsig_core::messages::MessageBatch) for the SM3 kernel, Z_A from `z_a`
/// (the caller's per-signer cache).
pub fn message_batch(
    records: &[MessageRecord],
    mut z_a: impl FnMut(&[u8], &[u8; 32], &[u8; 32]) -> [u8; 32],
) -> chainsig_core::messages::MessageBatch {
    let bytes = records.iter().map(|r| r.msg.len()).sum();
    let mut b = chainsig_core::messages::MessageBatch::with_capacity(records.len(), bytes);
    for rec in records {
        let za = z_a(&rec.id, &rec.px, &rec.py);
        b.push(&chainsig_core::messages::MessageItem {
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

/// Recovery requests for the records, each under recovery ids 0 and 1 (one of them finds the
/// signer of a valid low-s record, the other another key or none), in record order.
pub fn recovery_items(records: &[Record]) -> Vec<RecoverItem> {
    records.iter().flat_map(RecoverItem::both_ids).collect()
}

/// The records as an SM2 verification batch, in order.
pub fn batch(records: &[Record]) -> chainsig_core::Batch {
    batch_for(Algorithm::Sm2, false, records)
}

/// The records as a verification batch of `alg` (`low_s` as `Batch::with_capacity` takes it).
pub fn batch_for(alg: Algorithm, low_s: bool, records: &[Record]) -> chainsig_core::Batch {
    let mut b = chainsig_core::Batch::with_capacity(alg, low_s, records.len());
    for r in records {
        b.push(r);
    }
    b
}
