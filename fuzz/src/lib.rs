//! The fuzz targets' entry functions: each takes arbitrary bytes, feeds them to one parser of
//! hostile input, and checks what must hold for every input: no panic, error messages of bounded
//! length, and where a parser accepts, that its answer round-trips or agrees with a second path.
//!
//! They live here, not in the targets, so the checked-in corpora can be replayed by an ordinary
//! `cargo test` (`crates/cli/tests/cli/verify_cli.rs` includes this file) without nightly or
//! libFuzzer; the targets in `fuzz_targets/` are one line each.

mod grpc;
pub mod rows;
pub mod seeds;

pub use grpc::grpc_messages;
pub use rows::packed_rows;

use chainsig_core::record::{parse_recover_line, parse_verify_line, RecoverRecord, VerifyDefaults};
use chainsig_core::{der, hexstr, Algorithm, HashAlg};
use serde_json::Value;

/// The longest error message any entry accepts, in characters: a field name, a reason cut at
/// `REASON_LIMIT`, and the words around them.
const MESSAGE_LIMIT: usize = chainsig_core::error::REASON_LIMIT + 100;

fn short(message: impl std::fmt::Display) {
    let text = message.to_string();
    let n = text.chars().count();
    assert!(
        n <= MESSAGE_LIMIT,
        "error message of {n} characters: {text}"
    );
}

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// An entry function: arbitrary bytes in, a panic when something that must hold does not.
pub type Entry = fn(&[u8]);

/// The fuzz targets, by name (the directory names under `fuzz/corpus/`).
pub const TARGETS: &[(&str, Entry)] = &[
    ("verify_record", verify_record),
    ("recover_record", recover_record),
    ("hex", hex_field),
    ("der", der_signature),
    ("sec1", sec1_point),
    ("tx_json", tx_json),
    ("raw_tx", raw_tx),
    ("raw_frames", raw_frames),
    ("keystore", keystore_json),
    ("bip39", bip39_phrase),
    ("ctru_kat", ctru_kat),
    ("grpc_messages", grpc_messages),
    ("packed_rows", packed_rows),
];

/// A `verify` line, with and without command-line defaults, then prepared (curve checks and
/// hashing) as the pipeline would.
pub fn verify_record(data: &[u8]) {
    let Some(line) = text(data) else { return };
    let preparer = chainsig_cpu::prepare::Preparer::new();
    for defaults in [
        VerifyDefaults::default(),
        VerifyDefaults {
            alg: Some(Algorithm::Secp256k1),
            hash: Some(HashAlg::Sha3_256),
        },
    ] {
        let parsed = parse_verify_line(line, &defaults);
        // The fast path (flat objects, chainsig_core::flat_json) must answer exactly as the
        // serde_json path does for the same line.
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            let slow = chainsig_core::record::parse_verify_value(&value, &defaults);
            match (&parsed, &slow) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "fast and serde paths differ on {line:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                _ => panic!("fast and serde paths disagree on {line:?}: {parsed:?} / {slow:?}"),
            }
        }
        match parsed {
            Ok(record) => {
                if let Err(e) = preparer.prepare(&record, None) {
                    short(e);
                }
            }
            Err(e) => short(e),
        }
    }
}

/// A `recover` line; a transaction in it is decoded as `recover` decodes it.
pub fn recover_record(data: &[u8]) {
    let Some(line) = text(data) else { return };
    match parse_recover_line(line) {
        Ok(RecoverRecord::Transaction(raw)) => raw_tx(&raw),
        Ok(RecoverRecord::Signature(item)) => assert!(item.recovery_id <= 1),
        Err(e) => short(e),
    }
}

/// A hex field: what decodes re-encodes to the same digits, less any `0x`, in lower case.
pub fn hex_field(data: &[u8]) {
    let Some(field) = text(data) else { return };
    match hexstr::decode("f", field) {
        Ok(bytes) => {
            let digits = field
                .strip_prefix("0x")
                .or_else(|| field.strip_prefix("0X"))
                .unwrap_or(field);
            assert_eq!(hex::encode(&bytes), digits.to_ascii_lowercase());
            if let Ok(array) = hexstr::decode_array::<32>("f", field) {
                assert_eq!(array.as_slice(), bytes.as_slice());
            }
        }
        Err(e) => short(e),
    }
}

/// A strict DER signature: what parses must be the one minimal encoding of its (r, s).
pub fn der_signature(data: &[u8]) {
    if let Ok((r, s)) = der::parse_signature(data) {
        assert_eq!(
            der::encode_signature(&r, &s),
            data,
            "accepted a non-canonical encoding"
        );
    }
}

/// A SEC1 public key (first byte: the curve, the rest: the key). A key that decodes must decode
/// to the same point from its uncompressed and its compressed form.
pub fn sec1_point(data: &[u8]) {
    let Some((&which, key)) = data.split_first() else {
        return;
    };
    let alg = Algorithm::ALL[usize::from(which) % 3];
    match chainsig_cpu::prepare::decode_pubkey(alg, key) {
        Ok((x, y)) => {
            let mut uncompressed = vec![4];
            uncompressed.extend_from_slice(&x);
            uncompressed.extend_from_slice(&y);
            let mut compressed = vec![2 | (y[31] & 1)];
            compressed.extend_from_slice(&x);
            for form in [uncompressed, compressed] {
                let again = chainsig_cpu::prepare::decode_pubkey(alg, &form);
                assert_eq!(again, Ok((x, y)), "{alg}: {}", hex::encode(&form));
            }
        }
        Err(e) => short(e),
    }
}

/// A transaction request as `eth_signTransaction` and `chainsig eth sign` read it.
pub fn tx_json(data: &[u8]) {
    let Some(json) = text(data) else { return };
    match chainsig_eth::TxRequest::from_json_str(json) {
        Ok(request) => {
            if let Err(e) = request.signing_hash() {
                short(e);
            }
        }
        Err(e) => short(e),
    }
}

/// A raw signed transaction; what decodes must describe itself as JSON.
pub fn raw_tx(data: &[u8]) {
    match chainsig_eth::decode_raw(data) {
        Ok(decoded) => {
            let _ = decoded.to_json();
        }
        Err(e) => short(e),
    }
}

/// A stream of length-prefixed raw transactions (`chainsig recover --raw`): records numbered
/// 0, 1, … in order with none skipped, every framed record answered by the CPU's recovery or
/// refused with a short message naming a fault.
pub fn raw_frames(data: &[u8]) {
    use chainsig_eth::rawtx::{frames::FrameReader, recover_raw};
    let mut reader = FrameReader::new(data);
    let mut expected = 0u64;
    loop {
        let chunk = reader.chunk(7, 0).expect("reading from memory cannot fail");
        if chunk.is_empty() {
            break;
        }
        assert_eq!(chunk.first, expected, "records out of order");
        expected += chunk.len() as u64;
        for k in 0..chunk.len() {
            match chunk.record(k) {
                Ok(raw) => {
                    if let Err(e) = recover_raw(raw) {
                        short(&e);
                    }
                }
                Err(e) => short(e),
            }
        }
    }
}

/// A keystore v3 document, decoded and validated. Key derivation parameters above a few rounds
/// are lowered first: the fuzzer is after the parser, not after a 2 GiB scrypt.
pub fn keystore_json(data: &[u8]) {
    let Some(json) = text(data) else { return };
    let mut document: Value = match serde_json::from_str(json) {
        Ok(value) => value,
        Err(_) => {
            if let Err(e) = chainsig_eth::keystore::decrypt(json, b"password") {
                short(e);
            }
            return;
        }
    };
    for crypto in ["crypto", "Crypto"] {
        if let Some(params) = document
            .get_mut(crypto)
            .and_then(|c| c.get_mut("kdfparams"))
            .and_then(Value::as_object_mut)
        {
            for (name, most) in [("n", 16), ("r", 4), ("p", 2), ("c", 16)] {
                if params
                    .get(name)
                    .and_then(Value::as_u64)
                    .is_some_and(|v| v > most)
                {
                    params.insert(name.to_string(), Value::from(2));
                }
            }
        }
    }
    if let Err(e) = chainsig_eth::keystore::decrypt(&document.to_string(), b"password") {
        short(e);
    }
}

/// A BIP-39 phrase, then (after a newline) a BIP-32 derivation path.
pub fn bip39_phrase(data: &[u8]) {
    let Some(input) = text(data) else { return };
    let (phrase, path) = input
        .split_once('\n')
        .unwrap_or((input, "m/44'/60'/0'/0/0"));
    if let Err(e) = chainsig_eth::hd::mnemonic_seed(phrase, "") {
        short(e);
    }
    let root = chainsig_eth::hd::ExtendedKey::from_seed(&[7; 64]).expect("a valid seed");
    if let Err(e) = root.derive_path(path) {
        short(e);
    }
}

/// A CTRU-Prime known-answer file; at most two of its records are checked.
pub fn ctru_kat(data: &[u8]) {
    let Some(file) = text(data) else { return };
    match chainsig_ctru::kat::parse_rsp(file) {
        Ok(records) => {
            for record in records.iter().take(2) {
                let outcome =
                    chainsig_ctru::kat::check_record(chainsig_ctru::ParamSet::Ctru653, record);
                outcome.failures.iter().for_each(short);
            }
        }
        Err(e) => short(e),
    }
}
