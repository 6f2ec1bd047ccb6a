//! Our RFC 6979 nonce function against RustCrypto's `rfc6979` (retries included) and against
//! libsecp256k1's built-in one (whole signatures).

use alloy_primitives::{B256, U256};
use chainsig_eth::rfc6979::nonce;
use chainsig_eth::signing::{sign_prehash, sign_prehash_libsecp_nonce};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::Sha256;

const ORDER_HEX: &str = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141";

fn random_message(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut m: [u8; 32] = rng.gen();
    if rng.gen_bool(0.25) {
        // At or above n: the message must be reduced first (bits2octets).
        m[..15].fill(0xff);
    }
    m
}

#[test]
fn matches_rustcrypto_hmac_drbg_with_retries() {
    let order = U256::from_str_radix(ORDER_HEX, 16).unwrap();
    let no_modulus = rfc6979::bigint::U256::MAX;
    let mut rng = ChaCha20Rng::seed_from_u64(6979);
    for _ in 0..1000 {
        let secret: [u8; 32] = rng.gen();
        let message = random_message(&mut rng);
        let reduced: [u8; 32] = (U256::from_be_bytes(message) % order).to_be_bytes();
        // With the modulus 2^256 - 1 every DRBG output is a candidate, so successive calls are
        // attempts 0, 1, 2 of RFC 6979 §3.2 h.
        let mut theirs = rfc6979::KGenerator::<Sha256, _>::new(&secret, &reduced, b"", &no_modulus);
        for attempt in 0..3 {
            let mut expected = [0u8; 32];
            theirs.fill_next_k(&mut expected);
            let mut ours = [0u8; 32];
            nonce(&secret, &message, attempt, &mut ours);
            assert_eq!(ours, expected, "attempt {attempt}");
        }
    }
}

#[test]
fn signatures_match_libsecp256k1_builtin_nonce() {
    let mut rng = ChaCha20Rng::seed_from_u64(6980);
    let mut done = 0;
    while done < 3000 {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        let Ok(secret) = secp256k1::SecretKey::from_byte_array(bytes) else {
            continue;
        };
        let hash = B256::from(random_message(&mut rng));
        assert_eq!(
            sign_prehash(&secret, &hash),
            sign_prehash_libsecp_nonce(&secret, &hash)
        );
        done += 1;
    }
}

/// Batches (`sign_prehash_batch`, `sign_typed_batch`) give the bytes of one-at-a-time signing,
/// in lanes (where the CPU has them) and without, for every batch length 0..=19 (ragged groups,
/// groups below `LANES_FROM`).
#[test]
fn batches_sign_as_single_signatures_in_lanes_and_without() {
    use chainsig_eth::bulk::{bulk_tx, BulkConfig, FillerType};
    use chainsig_eth::tx::{sign_typed, sign_typed_batch};
    use chainsig_eth::PrivateKey;
    let mut rng = ChaCha20Rng::seed_from_u64(6981);
    let keys: Vec<secp256k1::SecretKey> = (0..19)
        .map(|_| secp256k1::SecretKey::from_byte_array(rng.gen()).unwrap())
        .collect();
    let hashes: Vec<B256> = (0..19)
        .map(|_| B256::from(random_message(&mut rng)))
        .collect();
    let lanes_here = chainsig_cpu::lanes::available();
    for len in 0..=keys.len() {
        let refs: Vec<&secp256k1::SecretKey> = keys[..len].iter().collect();
        let want: Vec<_> = refs
            .iter()
            .zip(&hashes)
            .map(|(k, h)| sign_prehash(k, h))
            .collect();
        for lanes in [false, lanes_here] {
            let got = chainsig_eth::signing::sign_prehash_batch(&refs, &hashes[..len], lanes);
            assert_eq!(got, want, "{len} hashes, lanes {lanes}");
        }
    }
    let wallets: Vec<PrivateKey> = (1..=3u8)
        .map(|i| PrivateKey::from_bytes(&[i; 32]).unwrap())
        .collect();
    let config = BulkConfig {
        count: 21,
        chain_id: 5,
        tx_type: FillerType::Eip1559,
        threads: 1,
        seed: 9,
    };
    let txs = |n: u64| (0..n).map(|k| (bulk_tx(&config, 3, k), &wallets[(k % 3) as usize]));
    let want: Vec<_> = txs(21).map(|(tx, key)| sign_typed(tx, key)).collect();
    for lanes in [false, lanes_here] {
        let got = sign_typed_batch(txs(21).collect(), lanes, &mut Vec::new());
        assert_eq!(got, want, "typed transactions, lanes {lanes}");
    }
}

/// `Signer::sign_transactions` answers each request as `sign_transaction` does, in its place:
/// the same bytes for the valid ones (signed together, in lanes where the CPU has them), the same
/// errors for unknown senders, a missing `from` with several keys and refused fields.
#[test]
fn a_signers_batch_answers_each_request_as_one_at_a_time() {
    use chainsig_eth::{ChainPolicy, PrivateKey, Signer, TxRequest};
    let mut signer = Signer::new();
    let a = signer.add_key(PrivateKey::from_bytes(&[0x31; 32]).unwrap());
    let b = signer.add_key(PrivateKey::from_bytes(&[0x32; 32]).unwrap());
    signer.set_policy(ChainPolicy::for_chain(5));
    let requests: Vec<TxRequest> = (0..40u64)
        .map(|i| {
            let from = match i % 10 {
                3 => Some(alloy_primitives::Address::repeat_byte(9)),
                6 => None,
                k if k % 2 == 0 => Some(a),
                _ => Some(b),
            };
            TxRequest {
                from,
                chain_id: Some(if i % 10 == 8 { 1 } else { 5 }),
                nonce: i,
                gas: 21000 + i,
                max_fee_per_gas: Some(100 + i as u128),
                max_priority_fee_per_gas: Some(1),
                ..TxRequest::default()
            }
        })
        .collect();
    let batch = signer.sign_transactions(&requests);
    assert_eq!(batch.len(), requests.len());
    let mut signed = 0;
    for (i, (request, got)) in requests.iter().zip(&batch).enumerate() {
        match (got, signer.sign_transaction(request)) {
            (Ok(got), Ok(want)) => {
                assert_eq!(got, &want, "request {i}");
                signed += 1;
            }
            (Err(got), Err(want)) => assert_eq!(got.to_string(), want.to_string(), "request {i}"),
            (got, want) => panic!("request {i}: {got:?} against {want:?}"),
        }
    }
    // Unknown sender, missing from, wrong chain: 3 of every 10 refused.
    assert_eq!(signed, 28);
}
