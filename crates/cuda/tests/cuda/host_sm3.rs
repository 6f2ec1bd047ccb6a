//! The GPU's SM3 routine (kernels/sm3.cuh, host build) against RustCrypto `sm3`: e = SM3(Z_A ‖ M)
//! for every message length from 0 to 300 bytes (each padding case on both sides of the block
//! boundaries), long messages, and the standard's example record.

use chainsig_core::hash::{sm2_z_a, sm3_concat};
use chainsig_cuda::host::sm3_e;
use rand::{RngCore, SeedableRng};

#[test]
fn gpu_sm3_equals_rustcrypto_for_every_length_up_to_300_and_long_messages() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5133);
    let mut lengths: Vec<usize> = (0..=300).collect();
    lengths.extend([1000, 4096, 65_537]);
    for len in lengths {
        for _ in 0..3 {
            let mut za = [0u8; 32];
            rng.fill_bytes(&mut za);
            let mut msg = vec![0u8; len];
            rng.fill_bytes(&mut msg);
            assert_eq!(
                sm3_e(&za, &msg),
                sm3_concat(&[&za, &msg]),
                "message length {len}"
            );
        }
    }
    // All-ones bytes catch sign extension of message bytes.
    let msg = vec![0xffu8; 77];
    assert_eq!(sm3_e(&[0xff; 32], &msg), sm3_concat(&[&[0xff; 32], &msg]));
}

fn hex_field(v: &serde_json::Value, field: &str) -> Vec<u8> {
    hex::decode(
        v[field]
            .as_str()
            .unwrap_or_else(|| panic!("vector lacks {field}")),
    )
    .expect("hex")
}

#[test]
fn gpu_sm3_reproduces_every_recommended_curve_vectors_digest() {
    let Some(dir) = chainsig_core::vectors::dir("sm2") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("sm2_standard_vectors.json")).expect("readable");
    let vectors: Vec<serde_json::Value> = serde_json::from_str(&text).expect("json");
    let mut checked = 0;
    for v in vectors.iter().filter(|v| v["curve"] == "sm2p256v1") {
        let (Some(_), Some(_)) = (v.get("ZA"), v.get("e")) else {
            continue;
        };
        let px: [u8; 32] = hex_field(v, "Px").try_into().expect("32 bytes");
        let py: [u8; 32] = hex_field(v, "Py").try_into().expect("32 bytes");
        let za = sm2_z_a(&hex_field(v, "id_hex"), &px, &py);
        assert_eq!(za.to_vec(), hex_field(v, "ZA"), "Z_A of {}", v["source"]);
        assert_eq!(
            sm3_e(&za, &hex_field(v, "msg_hex")).to_vec(),
            hex_field(v, "e"),
            "e of {}",
            v["source"]
        );
        checked += 1;
    }
    assert!(checked > 0, "no recommended-curve vector with Z_A and e");
}

/// The GPU's message path run on the host: a chunk staged as the backend stages it, each record's
/// e hashed from the staged Z_A column, offsets and bytes by the kernels' SM3, then verified by the
/// kernels' fast mode; every verdict must equal RustCrypto's, which hashes the message itself.
#[test]
fn staged_messages_hashed_and_verified_by_the_kernel_code_match_the_reference() {
    use chainsig_cuda::{codegen::words_from_be, host, Inversion, Mode};
    use chainsig_testkit::sets as testdata;
    let (records, want) = testdata::generate_messages(600, 24, 400, 0x6e53);
    assert!(want.iter().any(|v| *v) && want.iter().any(|v| !*v));
    let batch = testdata::message_batch(&records, sm2_z_a);
    let gtab = host::build_gtable().expect("fixed-base table");
    let (i0, m) = (40usize, 520usize);
    let mp = m.next_multiple_of(64);
    let mut staged = vec![0u32; chainsig_cuda::messages::chunk_words(&batch, i0, m, mp)];
    chainsig_cuda::messages::stage(&batch, i0, m, mp, &mut staged).expect("stage");
    let bytes: Vec<u8> = staged[9 * mp + 1..]
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    for i in 0..m {
        let rec = &records[i0 + i];
        let za: [u8; 32] = std::array::from_fn(|k| staged[(k / 4) * mp + i].to_be_bytes()[k % 4]);
        let (o0, o1) = (staged[8 * mp + i] as usize, staged[8 * mp + i + 1] as usize);
        let e = host::sm3_e(&za, &bytes[o0..o1]);
        let words = host::HostRecord {
            e: words_from_be(&e),
            r: words_from_be(&rec.r),
            s: words_from_be(&rec.s),
            px: words_from_be(&rec.px),
            py: words_from_be(&rec.py),
        };
        for compress in [false, true] {
            assert_eq!(
                host::verify(Mode::Fast, Inversion::Euclid, compress, &words, &gtab),
                want[i0 + i],
                "record {} ({} message bytes, compress={compress})",
                i0 + i,
                rec.msg.len()
            );
        }
    }
}
