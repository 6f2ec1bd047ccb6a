//! The `ecrecover` precompile's cases from the shared vectors: input = hash ‖ v (32 bytes, 27/28)
//! ‖ r ‖ s, zero-padded or cut to 128 bytes; expected = the left-padded address, or empty.

use alloy_primitives::{Signature, B256, U256};
use chainsig_eth::signing::recover_prehash_any_s;

fn ecrecover(input: &[u8]) -> Vec<u8> {
    let mut padded = [0u8; 128];
    let n = input.len().min(128);
    padded[..n].copy_from_slice(&input[..n]);
    let v = U256::from_be_slice(&padded[32..64]);
    let parity = if v == U256::from(27) {
        false
    } else if v == U256::from(28) {
        true
    } else {
        return Vec::new();
    };
    let signature = Signature::new(
        U256::from_be_slice(&padded[64..96]),
        U256::from_be_slice(&padded[96..128]),
        parity,
    );
    match recover_prehash_any_s(&B256::from_slice(&padded[..32]), &signature) {
        Ok((_, address)) => {
            let mut out = vec![0u8; 12];
            out.extend_from_slice(address.as_slice());
            out
        }
        Err(_) => Vec::new(),
    }
}

#[test]
fn ecrecover_precompile_cases() {
    let Some(dir) = chainsig_core::vectors::dir("ecrecover") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("ecRecover.json")).unwrap();
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = cases.as_array().unwrap();
    assert!(!cases.is_empty());
    let mut recovered = 0;
    for case in cases {
        let input = hex::decode(case["Input"].as_str().unwrap()).unwrap();
        let expected = hex::decode(case["Expected"].as_str().unwrap()).unwrap();
        assert_eq!(ecrecover(&input), expected, "{}", case["Name"]);
        recovered += usize::from(!expected.is_empty());
    }
    assert!(recovered > 0, "at least one case must recover an address");
}
