//! Signed EIP-1559 transactions per second on one core, and the cost of the pieces:
//! alloy's encoding and hashing alone, and signing with a per-thread blinded context against
//! re-randomising the context for every signature, and our RFC 6979 nonce function (SHA extensions)
//! against libsecp256k1's built-in one.

use alloy_consensus::{SignableTransaction, Signed, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{keccak256, B256};
use chainsig_eth::bulk::{bulk_tx, BulkConfig, FillerType};
use chainsig_eth::signing::{
    sign_prehash, sign_prehash_fresh_blinding, sign_prehash_libsecp_nonce,
};
use chainsig_eth::tx::sign_typed_into;
use chainsig_eth::PrivateKey;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

fn benches(c: &mut Criterion) {
    let key =
        PrivateKey::from_hex("4646464646464646464646464646464646464646464646464646464646464646")
            .unwrap();
    let config = BulkConfig {
        count: u64::MAX,
        chain_id: 1,
        tx_type: FillerType::Eip1559,
        threads: 1,
        seed: 7,
    };
    let mut group = c.benchmark_group("eth");
    group.throughput(Throughput::Elements(1));

    let mut k = 0u64;
    let mut scratch = Vec::with_capacity(512);
    group.bench_function("eip1559_build_encode_hash_sign_envelope", |b| {
        b.iter(|| {
            k += 1;
            black_box(sign_typed_into(bulk_tx(&config, 1, k), &key, &mut scratch))
        })
    });

    let template = bulk_tx(&config, 1, 1);
    let signature = sign_prehash_fresh_blinding(&PrivateKeyBytes::secret(&key), &B256::ZERO);
    group.bench_function("eip1559_alloy_encode_and_hashes_only", |b| {
        b.iter(|| {
            let tx = black_box(template.clone());
            let sighash = tx.signature_hash();
            let envelope: TxEnvelope = Signed::new_unhashed(tx, signature).into();
            let raw = envelope.encoded_2718();
            black_box((sighash, keccak256(&raw)))
        })
    });

    let secret = PrivateKeyBytes::secret(&key);
    let mut digest = B256::repeat_byte(0x42);
    group.bench_function("sign_prehash_context_blinded_per_thread", |b| {
        b.iter(|| {
            digest.0[0] = digest.0[0].wrapping_add(1);
            black_box(sign_prehash(&secret, &digest))
        })
    });
    group.bench_function("sign_prehash_libsecp_nonce", |b| {
        b.iter(|| {
            digest.0[0] = digest.0[0].wrapping_add(1);
            black_box(sign_prehash_libsecp_nonce(&secret, &digest))
        })
    });
    group.bench_function("sign_prehash_context_rerandomised_per_signature", |b| {
        b.iter(|| {
            digest.0[0] = digest.0[0].wrapping_add(1);
            black_box(sign_prehash_fresh_blinding(&secret, &digest))
        })
    });
    group.finish();
}

/// The benchmark needs the libsecp256k1 key itself to time the bare signature.
struct PrivateKeyBytes;

impl PrivateKeyBytes {
    fn secret(key: &PrivateKey) -> secp256k1::SecretKey {
        secp256k1::SecretKey::from_byte_array(*key.to_bytes()).unwrap()
    }
}

criterion_group!(sign, benches);
criterion_main!(sign);
