//! The seed inputs of `grpc_messages` and `packed_rows`, made by the project's own encoders:
//! prost's encoding of the service's messages, the row layout of [`super::rows::Row`], signatures
//! from chainsig-testkit's generator and transactions signed by chainsig-eth. Valid inputs, then a
//! few truncated or corrupted ones.
//!
//! They are checked in under `fuzz/corpus/<target>/`; the replay test checks the corpus still
//! holds each of them byte for byte, and writes them afresh when `CHAINSIG_WRITE_FUZZ_SEEDS=1`.

use super::rows::Row;
use chainsig_capi::{
    CS_ALG_P256, CS_ALG_SECP256K1, CS_ALG_SM2, CS_FLAG_LOW_S, CS_FLAG_MESSAGE, CS_FLAG_SM2_ID,
    CS_FLAG_TAG, CS_HASH_SHA256, CS_HASH_SHIFT,
};
use chainsig_core::Algorithm;
use chainsig_server::grpc::pb;
use chainsig_testkit::{record, GenSpec, GeneratedRecord};
use prost::Message;
use serde_json::json;

/// One seed: its target, its file name, its bytes.
pub struct Seed {
    pub target: &'static str,
    pub name: &'static str,
    pub bytes: Vec<u8>,
}

/// Every seed of the two targets.
pub fn seeds() -> Vec<Seed> {
    let mut out = grpc_seeds();
    out.extend(row_seeds());
    out
}

fn generated(alg: Algorithm, index: u64) -> GeneratedRecord {
    let spec = GenSpec {
        alg,
        seed: 30,
        invalid_ratio: 0.0,
        msg_len: 16,
    };
    record(&spec, index)
}

/// Keeps `keep` bytes of `bytes`.
fn cut(bytes: &[u8], keep: usize) -> Vec<u8> {
    bytes[..keep.min(bytes.len())].to_vec()
}

/// `bytes` with byte `at` replaced.
fn poke(bytes: &[u8], at: usize, value: u8) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at] = value;
    out
}

// ---------------------------------------------------------------------------------------------
// gRPC messages

fn typed_verify(g: &GeneratedRecord, message: bool) -> pb::VerifyRecord {
    let alg = match g.alg {
        Algorithm::Sm2 => pb::Algorithm::Sm2,
        Algorithm::Secp256k1 => pb::Algorithm::Secp256k1,
        Algorithm::P256 => pb::Algorithm::P256,
    };
    pb::VerifyRecord {
        alg: alg as i32,
        pubkey: g.pubkey.clone(),
        msg: message.then(|| g.msg.clone()),
        digest: (!message).then(|| g.digest.to_vec()),
        sig: Some(g.sig.to_vec()),
        id: (g.alg == Algorithm::Sm2 && message).then(|| g.sm2_id.clone()),
        ..Default::default()
    }
}

/// A transaction of each envelope type, as `eth_signTransaction` JSON and as a proto message.
fn transactions() -> Vec<(&'static str, serde_json::Value, pb::Transaction)> {
    let to = vec![0x35; 20];
    let base = pb::Transaction {
        chain_id: Some(1),
        nonce: 7,
        gas: 21_000,
        to: to.clone(),
        value: vec![0x0d, 0xe0, 0xb6, 0xb3, 0xa7, 0x64, 0x00, 0x00],
        ..Default::default()
    };
    let eip1559 = pb::Transaction {
        max_fee_per_gas: Some(vec![0x77, 0x35, 0x94, 0x00]),
        max_priority_fee_per_gas: Some(vec![0x3b, 0x9a, 0xca, 0x00]),
        data: vec![0xa9, 0x05, 0x9c, 0xbb],
        ..base.clone()
    };
    let json_1559 = json!({
        "chainId": "0x1", "nonce": "0x7", "gas": "0x5208", "to": format!("0x{}", hex::encode(&to)),
        "value": "0xde0b6b3a7640000", "maxFeePerGas": "0x77359400",
        "maxPriorityFeePerGas": "0x3b9aca00", "data": "0xa9059cbb",
    });
    let legacy = pb::Transaction {
        gas_price: Some(vec![0x04, 0xa8, 0x17, 0xc8, 0x00]),
        ..base.clone()
    };
    let json_legacy = json!({
        "chainId": "0x1", "nonce": "0x7", "gas": "0x5208", "to": format!("0x{}", hex::encode(&to)),
        "value": "0xde0b6b3a7640000", "gasPrice": "0x4a817c800",
    });
    let eip2930 = pb::Transaction {
        access_list: Some(pb::AccessList {
            items: vec![pb::AccessListItem {
                address: vec![0x11; 20],
                storage_keys: vec![vec![0; 32], vec![0x22; 32]],
            }],
        }),
        ..legacy.clone()
    };
    let eip4844 = pb::Transaction {
        max_fee_per_blob_gas: Some(vec![0x01]),
        blob_versioned_hashes: vec![[vec![0x01], vec![0x44; 31]].concat()],
        ..eip1559.clone()
    };
    let eip7702 = pb::Transaction {
        authorization_list: vec![pb::Authorization {
            chain_id: vec![1],
            address: vec![0x77; 20],
            nonce: 3,
            y_parity: 1,
            r: vec![0x12; 32],
            s: vec![0x34; 32],
        }],
        ..eip1559.clone()
    };
    vec![
        ("1559", json_1559, eip1559),
        ("legacy", json_legacy, legacy),
        ("2930", json!(null), eip2930),
        ("4844", json!(null), eip4844),
        ("7702", json!(null), eip7702),
    ]
}

/// A raw signed transaction from `json`, signed by a fixed key.
fn raw(json: &serde_json::Value) -> Vec<u8> {
    let key = chainsig_eth::PrivateKey::from_bytes(&[0x11; 32]).expect("a valid key");
    let request = chainsig_eth::TxRequest::from_json(json).expect("a valid request");
    request.sign(&key).expect("signs").raw
}

fn grpc_seeds() -> Vec<Seed> {
    let seed = |name, bytes| Seed {
        target: "grpc_messages",
        name,
        bytes,
    };
    let mut out = Vec::new();

    let records: Vec<GeneratedRecord> = [Algorithm::Sm2, Algorithm::Secp256k1, Algorithm::P256]
        .iter()
        .flat_map(|&alg| [generated(alg, 0), generated(alg, 1)])
        .collect();
    let mut items: Vec<pb::VerifyRecord> = records
        .iter()
        .enumerate()
        .map(|(i, g)| typed_verify(g, i % 2 == 0))
        .collect();
    items.push(pb::VerifyRecord {
        sig: None,
        sig_der: Some(chainsig_core::der::encode_signature(
            &records[5].r(),
            &records[5].s(),
        )),
        ..typed_verify(&records[5], false)
    });
    items.push(pb::VerifyRecord {
        pubkey: vec![4; 31],
        ..typed_verify(&records[3], false)
    });
    let typed = pb::VerifyBatchRequest {
        low_s: true,
        items,
        ..Default::default()
    }
    .encode_to_vec();
    let json_lines = pb::VerifyBatchRequest {
        alg: pb::Algorithm::Secp256k1 as i32,
        hash: "keccak256".into(),
        records: records[2..4]
            .iter()
            .enumerate()
            .map(|(i, g)| g.to_json_line(i as u64))
            .chain([r#"{"pubkey":"02","sig":"00"}"#.to_string()])
            .collect(),
        ..Default::default()
    }
    .encode_to_vec();
    out.push(seed("verify-truncated", cut(&typed, typed.len() / 2)));
    out.push(seed("verify-corrupt-length", poke(&typed, 1, 0x7f)));
    out.push(seed("verify-typed", typed));
    out.push(seed("verify-json", json_lines));
    out.push(seed(
        "verify-both-kinds",
        pb::VerifyBatchRequest {
            records: vec!["{}".into()],
            items: vec![pb::VerifyRecord::default()],
            ..Default::default()
        }
        .encode_to_vec(),
    ));

    let transactions = transactions();
    let raw_1559 = raw(&transactions[0].1);
    let raw_legacy = raw(&transactions[1].1);
    let signed = |g: &GeneratedRecord, v| pb::RecoverRecord {
        record: Some(pb::recover_record::Record::SignedDigest(pb::SignedDigest {
            digest: g.digest.to_vec(),
            sig: g.sig.to_vec(),
            v,
        })),
    };
    let tx = |raw: &[u8]| pb::RecoverRecord {
        record: Some(pb::recover_record::Record::Tx(raw.to_vec())),
    };
    let recover = pb::RecoverBatchRequest {
        items: vec![
            tx(&raw_1559),
            signed(&records[2], 27),
            tx(&raw_legacy),
            signed(&records[3], 1),
            pb::RecoverRecord { record: None },
        ],
        ..Default::default()
    }
    .encode_to_vec();
    out.push(seed("recover-truncated", cut(&recover, recover.len() - 9)));
    out.push(seed("recover-typed", recover));
    out.push(seed(
        "recover-json",
        pb::RecoverBatchRequest {
            records: vec![
                json!({ "tx": format!("0x{}", hex::encode(&raw_1559)) }).to_string(),
                json!({
                    "digest": hex::encode(records[2].digest),
                    "sig": hex::encode(records[2].sig),
                    "v": 28,
                })
                .to_string(),
            ],
            ..Default::default()
        }
        .encode_to_vec(),
    ));

    for (name, _, tx) in &transactions {
        let bytes = pb::SignTransactionRequest {
            tx: Some(tx.clone()),
        }
        .encode_to_vec();
        out.push(seed(
            match *name {
                "1559" => "sign-1559",
                "legacy" => "sign-legacy",
                "2930" => "sign-2930",
                "4844" => "sign-4844",
                _ => "sign-7702",
            },
            bytes,
        ));
    }
    let stream = pb::SignStreamRequest {
        id: 42,
        tx: Some(transactions[0].2.clone()),
    }
    .encode_to_vec();
    out.push(seed(
        "sign-stream-truncated",
        cut(&stream, stream.len() - 3),
    ));
    out.push(seed("sign-stream", stream));
    out.push(seed(
        "sign-bad-lengths",
        pb::SignTransactionRequest {
            tx: Some(pb::Transaction {
                to: vec![1; 19],
                value: vec![1; 33],
                r#type: Some(9),
                ..transactions[0].2.clone()
            }),
        }
        .encode_to_vec(),
    ));
    out
}

// ---------------------------------------------------------------------------------------------
// Packed rows

/// A generated record as a row: its message hashed by the library, or its digest.
fn row_bytes(g: &GeneratedRecord, flags: u8, tag: Option<u64>) -> Vec<u8> {
    let alg = match g.alg {
        Algorithm::Sm2 => CS_ALG_SM2,
        Algorithm::Secp256k1 => CS_ALG_SECP256K1,
        Algorithm::P256 => CS_ALG_P256,
    };
    let message = flags & CS_FLAG_MESSAGE != 0;
    let digest = g.digest;
    Row {
        alg,
        flags: flags | tag.map_or(0, |_| CS_FLAG_TAG),
        pubkey: &g.pubkey,
        sig: &g.sig,
        payload: if message { &g.msg } else { &digest },
        id: if flags & CS_FLAG_SM2_ID != 0 {
            &g.sm2_id
        } else {
            b""
        },
        tag,
    }
    .bytes()
}

/// A seed of `n` rows: the count byte (n − 1), then the rows.
fn batch(n: u8, rows: &[Vec<u8>]) -> Vec<u8> {
    let mut out = vec![n - 1];
    for row in rows {
        out.extend_from_slice(row);
    }
    out
}

fn row_seeds() -> Vec<Seed> {
    let seed = |name, bytes| Seed {
        target: "packed_rows",
        name,
        bytes,
    };
    let sm2 = generated(Algorithm::Sm2, 0);
    let k1 = generated(Algorithm::Secp256k1, 1);
    let p256 = generated(Algorithm::P256, 2);
    let digests: Vec<Vec<u8>> = [&sm2, &k1, &p256]
        .iter()
        .map(|g| row_bytes(g, 0, None))
        .collect();
    let messages = vec![
        row_bytes(&sm2, CS_FLAG_MESSAGE | CS_FLAG_SM2_ID, Some(1)),
        row_bytes(&k1, CS_FLAG_MESSAGE | CS_FLAG_LOW_S, None),
        row_bytes(
            &p256,
            CS_FLAG_MESSAGE | (CS_HASH_SHA256 << CS_HASH_SHIFT),
            Some(u64::MAX),
        ),
    ];
    let bad_alg = poke(&digests[1], 0, 9);
    let reserved = poke(&digests[2], 3, 1);
    let unknown_flag = poke(&digests[0], 1, 0x80);
    let padding = {
        let mut row = digests[1].clone();
        *row.last_mut().expect("a row") = 1;
        row
    };
    let all = batch(3, &digests);
    vec![
        seed("digests", all.clone()),
        seed("messages", batch(3, &messages)),
        seed(
            "refused-between-valid",
            batch(
                5,
                &[
                    digests[0].clone(),
                    bad_alg,
                    reserved,
                    unknown_flag,
                    messages[1].clone(),
                ],
            ),
        ),
        seed("padding-not-zero", batch(2, &[padding, digests[2].clone()])),
        seed("truncated", cut(&all, all.len() - 40)),
        seed("bytes-left-over", batch(2, &digests)),
        seed("more-rows-than-bytes", poke(&all, 0, 15)),
    ]
}
