use super::corpus::Corpus;
use super::*;
use crate::TxType;
use std::collections::BTreeMap;

const TYPES: [TxType; 5] = [
    TxType::Legacy,
    TxType::Eip2930,
    TxType::Eip1559,
    TxType::Eip4844,
    TxType::Eip7702,
];

#[test]
fn every_type_recovers_the_sender_decode_raw_finds() {
    let mut corpus = Corpus::new(1, 4);
    for ty in TYPES {
        for _ in 0..40 {
            let raw = corpus.signed(ty);
            let decoded = crate::decode_raw(&raw).expect("a signed transaction decodes");
            let got = recover_raw(&raw).expect("a signed transaction has a sender");
            assert_eq!(got.address, decoded.from.into_array(), "{ty:?}");
            assert_eq!(got.pubkey, decoded.public_key, "{ty:?}");
        }
    }
}

fn fault_of(raw: &[u8]) -> Option<TxFault> {
    recover_raw(raw).err().map(|e| e.fault)
}

#[test]
fn each_refusal_has_its_fault() {
    let mut corpus = Corpus::new(2, 1);
    assert_eq!(fault_of(&[]), Some(TxFault::Empty));
    assert_eq!(
        fault_of(&vec![0xc0; MAX_RAW_TX_LEN + 1]),
        Some(TxFault::TooLong)
    );
    let typed = corpus.signed(TxType::Eip1559);
    for ty in [0x00, 0x05, 0x7f] {
        let mut raw = typed.clone();
        raw[0] = ty;
        assert_eq!(
            fault_of(&raw),
            Some(TxFault::UnsupportedType),
            "type {ty:#x}"
        );
    }
    let mut trailing = typed.clone();
    trailing.push(0);
    assert_eq!(fault_of(&trailing), Some(TxFault::TrailingBytes));
    assert_eq!(
        fault_of(&typed[..typed.len() - 1]),
        Some(TxFault::MalformedRlp)
    );
    // A legacy transaction's failures are sorted too, not all "unexpected type 0".
    let legacy = corpus.signed(TxType::Legacy);
    assert_eq!(
        fault_of(&legacy[..legacy.len() - 1]),
        Some(TxFault::MalformedRlp)
    );
    let message = recover_raw(&legacy[..legacy.len() - 1])
        .unwrap_err()
        .to_string();
    assert!(!message.contains("type"), "{message}");
}

#[test]
fn adversarial_records_meet_every_fault() {
    let mut corpus = Corpus::new(3, 3);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..3000 {
        let raw = corpus.adversarial();
        let key = match recover_raw(&raw) {
            Ok(_) => "sender".to_string(),
            Err(e) => {
                assert!(e.to_string().len() < 200, "{e}");
                format!("{:?}", e.fault)
            }
        };
        *seen.entry(key).or_default() += 1;
    }
    for fault in TxFault::ALL {
        if fault == TxFault::TooLong {
            continue; // records of the corpus stay below the limit
        }
        assert!(
            seen.get(&format!("{fault:?}")).is_some_and(|&c| c >= 5),
            "{fault:?} too rare: {seen:?}"
        );
    }
    assert!(seen["sender"] > 100, "{seen:?}");
}

#[test]
fn codes_round_trip() {
    for fault in TxFault::ALL {
        assert_eq!(TxFault::from_code(fault.code()), Some(fault));
    }
    assert_eq!(TxFault::from_code(0), None);
    assert_eq!(TxFault::from_code(10), None);
}
