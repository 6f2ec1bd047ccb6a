//! Random transactions of all five types (0–4): sign → decode → recover, and agreement with
//! RustCrypto's `k256` (an independent secp256k1 and RFC 6979 implementation: we sign with
//! libsecp256k1) through alloy's encodings.

use alloy_consensus::{SignableTransaction, Transaction, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
use alloy_primitives::{Address, Bytes, Signature, B256, U256};
use chainsig_eth::{decode_raw, ChainPolicy, PrivateKey, Signer, TxRequest, TxType};

const ALL_TYPES: [TxType; 5] = [
    TxType::Legacy,
    TxType::Eip2930,
    TxType::Eip1559,
    TxType::Eip4844,
    TxType::Eip7702,
];

/// Tests sign what they build, pre-EIP-155 legacy and chain id 0 included.
const PERMISSIVE: ChainPolicy = ChainPolicy {
    chain_id: None,
    allow_unprotected: true,
};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn random_key(rng: &mut ChaCha20Rng) -> PrivateKey {
    loop {
        let mut bytes = [0u8; 32];
        rng.fill_bytes(&mut bytes);
        if let Ok(k) = PrivateKey::from_bytes(&bytes) {
            return k;
        }
    }
}

/// The reference signer: RustCrypto `k256`, RFC 6979 with low s, as alloy's local signer uses it.
fn reference_key(key: &PrivateKey) -> k256::ecdsa::SigningKey {
    k256::ecdsa::SigningKey::from_bytes(&(*key.to_bytes()).into()).unwrap()
}

/// The reference's signature of a 32-byte hash, with the y parity of R.
fn reference_sign_hash(key: &PrivateKey, hash: &B256) -> Signature {
    let (signature, id) = reference_key(key).sign_prehash_recoverable(hash.as_slice());
    let (r, s) = signature.split_bytes();
    Signature::new(
        U256::from_be_slice(&r),
        U256::from_be_slice(&s),
        id.is_y_odd(),
    )
}

/// The reference's address: Keccak-256 of the uncompressed key, last 20 bytes.
fn reference_address(key: &PrivateKey) -> Address {
    let point = reference_key(key).verifying_key().to_sec1_point(false);
    Address::from_raw_public_key(&point.as_bytes()[1..])
}

/// A random integer of random bit length (zero, small and full-width values all occur).
fn random_u128(rng: &mut ChaCha20Rng) -> u128 {
    let bits = rng.gen_range(0..=128u32);
    if bits == 0 {
        0
    } else {
        rng.gen::<u128>() >> (128 - bits)
    }
}

fn random_request(rng: &mut ChaCha20Rng, tx_type: TxType) -> TxRequest {
    let access_list = (0..rng.gen_range(0..3))
        .map(|_| AccessListItem {
            address: Address::from(rng.gen::<[u8; 20]>()),
            storage_keys: (0..rng.gen_range(0..3))
                .map(|_| B256::from(rng.gen::<[u8; 32]>()))
                .collect(),
        })
        .collect::<Vec<_>>();
    let mut data = vec![0u8; rng.gen_range(0..200)];
    rng.fill_bytes(&mut data);
    let value_bits = rng.gen_range(0..=256usize);
    let value = if value_bits == 0 {
        U256::ZERO
    } else {
        U256::from_be_bytes(rng.gen::<[u8; 32]>()) >> (256 - value_bits)
    };
    let mut request = TxRequest {
        chain_id: Some(rng.gen_range(1..u64::MAX / 4)),
        nonce: rng.gen::<u64>() >> rng.gen_range(0..64),
        gas: rng.gen::<u64>() >> rng.gen_range(0..64),
        to: if rng.gen_bool(0.2) {
            None
        } else {
            Some(Address::from(rng.gen::<[u8; 20]>()))
        },
        value,
        input: Bytes::from(data),
        tx_type: Some(tx_type),
        ..TxRequest::default()
    };
    match tx_type {
        TxType::Legacy => {
            request.gas_price = Some(random_u128(rng));
            if rng.gen_bool(0.3) {
                request.chain_id = None;
            }
        }
        TxType::Eip2930 => {
            request.gas_price = Some(random_u128(rng));
            request.access_list = Some(AccessList(access_list));
        }
        TxType::Eip1559 | TxType::Eip4844 | TxType::Eip7702 => {
            let a = random_u128(rng);
            let b = random_u128(rng);
            request.max_fee_per_gas = Some(a.max(b));
            request.max_priority_fee_per_gas = Some(a.min(b));
            request.access_list = Some(AccessList(access_list));
        }
    }
    if tx_type == TxType::Eip4844 {
        request.to = Some(Address::from(rng.gen::<[u8; 20]>()));
        request.max_fee_per_blob_gas = Some(random_u128(rng));
        request.blob_versioned_hashes = Some(
            (0..rng.gen_range(1..7))
                .map(|_| {
                    let mut hash = rng.gen::<[u8; 32]>();
                    hash[0] = 1;
                    B256::from(hash)
                })
                .collect(),
        );
    }
    if tx_type == TxType::Eip7702 {
        request.to = Some(Address::from(rng.gen::<[u8; 20]>()));
        request.authorization_list = Some(
            (0..rng.gen_range(1..4))
                .map(|_| {
                    let inner = Authorization {
                        chain_id: U256::from(rng.gen::<u64>() >> rng.gen_range(0..64)),
                        address: Address::from(rng.gen::<[u8; 20]>()),
                        nonce: rng.gen::<u64>() >> rng.gen_range(0..64),
                    };
                    let r = U256::from_be_bytes(rng.gen::<[u8; 32]>());
                    let s = U256::from_be_bytes(rng.gen::<[u8; 32]>()) >> 1;
                    SignedAuthorization::new_unchecked(inner, rng.gen_range(0..2), r, s)
                })
                .collect(),
        );
    }
    request
}

#[test]
fn sign_decode_recover_all_types() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed_0001);
    for round in 0..1000 {
        let tx_type = ALL_TYPES[round % ALL_TYPES.len()];
        let key = random_key(&mut rng);
        let request = random_request(&mut rng, tx_type);
        let signed = request.sign_with(&key, &PERMISSIVE).unwrap();
        assert_eq!(signed.tx_type, tx_type);
        assert_eq!(signed.hash, alloy_primitives::keccak256(&signed.raw));
        if tx_type != TxType::Legacy {
            assert_eq!(signed.raw[0], tx_type.byte());
        } else {
            assert!(signed.raw[0] >= 0xc0);
        }
        let decoded = decode_raw(&signed.raw).unwrap();
        assert_eq!(decoded.from, key.address(), "round {round}");
        assert_eq!(decoded.public_key, key.public_key_uncompressed());
        assert_eq!(decoded.tx_type, tx_type);
        assert_eq!(decoded.hash, signed.hash);
        assert_eq!(decoded.signing_hash, request.signing_hash().unwrap());
        let tx = &decoded.envelope;
        assert_eq!(tx.chain_id(), request.chain_id);
        assert_eq!(tx.nonce(), request.nonce);
        assert_eq!(tx.gas_limit(), request.gas);
        assert_eq!(tx.to(), request.to);
        assert_eq!(tx.value(), request.value);
        assert_eq!(tx.input(), &request.input);
        assert_eq!(tx.max_fee_per_blob_gas(), request.max_fee_per_blob_gas);
        assert_eq!(
            tx.blob_versioned_hashes(),
            request.blob_versioned_hashes.as_deref()
        );
        assert_eq!(
            tx.authorization_list(),
            request.authorization_list.as_deref()
        );
        match tx_type {
            TxType::Eip1559 | TxType::Eip4844 | TxType::Eip7702 => {
                assert_eq!(tx.max_fee_per_gas(), request.max_fee_per_gas.unwrap());
                assert_eq!(
                    tx.max_priority_fee_per_gas(),
                    request.max_priority_fee_per_gas
                );
            }
            _ => assert_eq!(tx.gas_price(), request.gas_price),
        }
        assert_eq!(tx.access_list(), request.access_list.as_ref());
        // The JSON view parses back into the same request.
        let mut fields = decoded.to_json();
        fields["from"] = serde_json::Value::String(key.address().to_string());
        let reparsed = TxRequest::from_json(&fields).unwrap();
        assert_eq!(
            reparsed.sign_with(&key, &PERMISSIVE).unwrap().raw,
            signed.raw,
            "round {round}"
        );
        // And geth's RPC form of the signed transaction is the decoder's, with the null block fields.
        let rpc = signed.to_rpc_json();
        assert_eq!(rpc, decoded.to_rpc_json());
        assert!(rpc["blockHash"].is_null() && rpc.get("signingHash").is_none());
    }
}

#[test]
fn agrees_with_k256_through_alloys_encoding() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed_0002);
    for round in 0..500 {
        let tx_type = ALL_TYPES[round % ALL_TYPES.len()];
        let key = random_key(&mut rng);
        assert_eq!(reference_address(&key), key.address());
        let request = random_request(&mut rng, tx_type);
        let typed = request.to_typed().unwrap();
        let their_signature = reference_sign_hash(&key, &typed.signature_hash());
        let their_envelope: TxEnvelope = typed.into_signed(their_signature).into();
        let ours = request.sign_with(&key, &PERMISSIVE).unwrap();
        assert_eq!(ours.signature, their_signature, "round {round}");
        assert_eq!(ours.raw, their_envelope.encoded_2718(), "round {round}");
        assert_eq!(ours.hash, *their_envelope.tx_hash());
    }
}

#[test]
fn eip191_agrees_with_k256_and_recovers() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed_0003);
    let mut signer = Signer::new();
    let keys: Vec<PrivateKey> = (0..5).map(|_| random_key(&mut rng)).collect();
    for k in &keys {
        signer.add_key(k.clone());
    }
    assert_eq!(signer.addresses().len(), 5);
    for round in 0..100 {
        let key = &keys[round % keys.len()];
        let mut message = vec![0u8; rng.gen_range(0..100)];
        rng.fill_bytes(&mut message);
        let ours = signer.sign_eip191(&key.address(), &message).unwrap();
        let theirs = reference_sign_hash(key, &alloy_primitives::eip191_hash_message(&message));
        assert_eq!(ours, theirs.as_bytes());
        assert_eq!(
            chainsig_eth::recover_eip191(&message, &ours).unwrap(),
            key.address()
        );
    }
    // Signing by `from`: the matching key, or an error naming `from`.
    let request = TxRequest {
        from: Some(keys[2].address()),
        chain_id: Some(1),
        gas: 21000,
        gas_price: Some(1),
        ..TxRequest::default()
    };
    assert_eq!(
        signer.sign_transaction(&request).unwrap().from,
        keys[2].address()
    );
    let stranger = TxRequest {
        from: Some(Address::repeat_byte(7)),
        ..request.clone()
    };
    assert_eq!(
        signer.sign_transaction(&stranger).unwrap_err().field_name(),
        "from"
    );
    let anonymous = TxRequest {
        from: None,
        ..request
    };
    assert_eq!(
        signer
            .sign_transaction(&anonymous)
            .unwrap_err()
            .field_name(),
        "from"
    );
}

#[test]
fn tampered_transactions_do_not_recover_the_signer() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed_0004);
    let key = random_key(&mut rng);
    for round in 0..250 {
        let tx_type = ALL_TYPES[round % ALL_TYPES.len()];
        let signed = random_request(&mut rng, tx_type)
            .sign_with(&key, &PERMISSIVE)
            .unwrap();
        let mut raw = signed.raw.clone();
        let at = rng.gen_range(0..raw.len());
        raw[at] ^= 1 << rng.gen_range(0..8);
        // A flipped bit either breaks the encoding, or yields another sender (or no sender).
        if let Ok(decoded) = decode_raw(&raw) {
            assert_ne!(decoded.from, key.address(), "round {round}, byte {at}");
        }
        // Truncations never panic and never decode.
        let cut = rng.gen_range(0..raw.len());
        assert!(decode_raw(&signed.raw[..cut]).is_err());
    }
}

#[test]
fn eip7702_authorizations_agree_with_k256_and_recover() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed_0005);
    let strict = ChainPolicy::default();
    for round in 0..200 {
        let key = random_key(&mut rng);
        let auth = Authorization {
            chain_id: U256::from(rng.gen_range(1..u64::MAX)),
            address: Address::from(rng.gen::<[u8; 20]>()),
            nonce: rng.gen::<u64>() >> rng.gen_range(0..64),
        };
        let ours = chainsig_eth::authorization::sign(auth.clone(), &key, &strict).unwrap();
        let theirs = reference_sign_hash(&key, &auth.signature_hash());
        assert_eq!(ours.signature().unwrap(), theirs, "round {round}");
        let (_, authority) =
            chainsig_eth::signing::recover_prehash(&auth.signature_hash(), &theirs).unwrap();
        assert_eq!(authority, key.address());
        // The JSON form reads back into the same signed tuple.
        let json = chainsig_eth::authorization::to_json(&ours);
        assert_eq!(
            chainsig_eth::authorization::parse_signed(&json, "").unwrap(),
            ours
        );
    }
    // Chain id 0 (valid on every chain) only with the explicit opt-in.
    let key = random_key(&mut rng);
    let any_chain = Authorization {
        chain_id: U256::ZERO,
        address: Address::repeat_byte(1),
        nonce: 0,
    };
    let refused = chainsig_eth::authorization::sign(any_chain.clone(), &key, &strict);
    assert_eq!(refused.unwrap_err().field_name(), "chainId");
    assert!(chainsig_eth::authorization::sign(any_chain, &key, &PERMISSIVE).is_ok());
}

#[test]
fn chain_policy_fills_checks_and_refuses_unprotected() {
    let key = PrivateKey::from_bytes(&[0x46; 32]).unwrap();
    let legacy = TxRequest {
        gas: 21000,
        gas_price: Some(1),
        to: Some(Address::repeat_byte(0x35)),
        ..TxRequest::default()
    };
    let typed = TxRequest {
        max_fee_per_gas: Some(2),
        max_priority_fee_per_gas: Some(1),
        gas_price: None,
        ..legacy.clone()
    };
    let chain_of = |raw: &[u8]| decode_raw(raw).unwrap().envelope.chain_id();
    // No chain anywhere: refused for every type, unless unprotected signing is allowed.
    for request in [&legacy, &typed] {
        assert_eq!(request.sign(&key).unwrap_err().field_name(), "chainId");
    }
    let unprotected = legacy.sign_with(&key, &PERMISSIVE).unwrap();
    assert_eq!(chain_of(&unprotected.raw), None);
    assert!(typed.sign_with(&key, &PERMISSIVE).is_err());
    // A configured chain is filled in, and a different one refused.
    let chain5 = ChainPolicy::for_chain(5);
    assert_eq!(
        chain_of(&legacy.sign_with(&key, &chain5).unwrap().raw),
        Some(5)
    );
    assert_eq!(
        chain_of(&typed.sign_with(&key, &chain5).unwrap().raw),
        Some(5)
    );
    let other = TxRequest {
        chain_id: Some(6),
        ..typed.clone()
    };
    assert_eq!(
        other.sign_with(&key, &chain5).unwrap_err().field_name(),
        "chainId"
    );
    // Chain id 0 is unprotected in every type.
    let zero = TxRequest {
        chain_id: Some(0),
        ..typed
    };
    assert_eq!(zero.sign(&key).unwrap_err().field_name(), "chainId");
    assert!(zero.sign_with(&key, &PERMISSIVE).is_ok());
}
