//! The published SM2 examples: GM/T 0003.5 Annex A (Z_A, e, r, s from d and k), OpenSSL's
//! prehash examples and RustCrypto's openssl-made signature, all read from the shared vectors.

use chainsig_weierstrass::{
    message_digest, sign_prehashed_with_nonce, verify_prehashed, z_a, PublicKey, SecretKey,
};
use serde_json::Value;

fn arr(v: &Value, field: &str) -> [u8; 32] {
    let text = v[field]
        .as_str()
        .unwrap_or_else(|| panic!("vector lacks {field}"));
    hex::decode(text)
        .expect("hex")
        .try_into()
        .expect("32 bytes")
}

fn bytes(v: &Value, field: &str) -> Vec<u8> {
    hex::decode(
        v[field]
            .as_str()
            .unwrap_or_else(|| panic!("vector lacks {field}")),
    )
    .expect("hex")
}

fn vectors() -> Option<Vec<Value>> {
    let dir = chainsig_core::vectors::dir("sm2")?;
    let text = std::fs::read_to_string(dir.join("sm2_standard_vectors.json")).expect("readable");
    Some(serde_json::from_str(&text).expect("json"))
}

#[test]
fn gmt_0003_5_annex_a() {
    let Some(vectors) = vectors() else { return };
    let v = vectors
        .iter()
        .find(|v| v["curve"] == "sm2p256v1" && v.get("k").is_some())
        .expect("the Annex A example");
    let key = SecretKey::from_bytes(&arr(v, "d")).expect("valid d");
    let public = key.public_key();
    assert_eq!(public.x(), arr(v, "Px"));
    assert_eq!(public.y(), arr(v, "Py"));
    let za = z_a(&bytes(v, "id_hex"), &public);
    assert_eq!(za, arr(v, "ZA"));
    let e = message_digest(&za, &bytes(v, "msg_hex"));
    assert_eq!(e, arr(v, "e"));
    let sig = sign_prehashed_with_nonce(&key, &e, &arr(v, "k")).expect("usable nonce");
    assert_eq!(sig[..32], arr(v, "r"));
    assert_eq!(sig[32..], arr(v, "s"));
    assert!(verify_prehashed(&public, &e, &arr(v, "r"), &arr(v, "s")));
    // The same key through both SEC1 encodings.
    assert_eq!(PublicKey::from_sec1(&public.to_compressed()), Ok(public));
    assert_eq!(PublicKey::from_sec1(&public.to_uncompressed()), Ok(public));
}

#[test]
fn every_recommended_curve_vector_verifies() {
    let Some(vectors) = vectors() else { return };
    let mut checked = 0;
    for v in &vectors {
        if v["curve"] != "sm2p256v1" {
            // The GB/T 32918 example uses the Fp-256 test curve; this crate is for sm2p256v1 only.
            continue;
        }
        let public = PublicKey::from_affine(&arr(v, "Px"), &arr(v, "Py")).expect("valid key");
        let e = if v.get("e").is_some() {
            arr(v, "e")
        } else {
            let za = z_a(v["id"].as_str().expect("id").as_bytes(), &public);
            if v.get("ZA").is_some() {
                assert_eq!(za, arr(v, "ZA"), "{}", v["source"]);
            }
            message_digest(&za, &bytes(v, "msg_hex"))
        };
        let (r, s) = (arr(v, "r"), arr(v, "s"));
        let expected = v["result"] == "valid";
        assert_eq!(
            verify_prehashed(&public, &e, &r, &s),
            expected,
            "{}",
            v["source"]
        );
        // Any single flipped bit of e, r or s breaks it.
        for (byte, bit) in [(0usize, 7u8), (17, 0), (31, 3)] {
            let mut e2 = e;
            e2[byte] ^= 1 << bit;
            assert!(!verify_prehashed(&public, &e2, &r, &s));
            let mut r2 = r;
            r2[byte] ^= 1 << bit;
            assert!(!verify_prehashed(&public, &e, &r2, &s));
            let mut s2 = s;
            s2[byte] ^= 1 << bit;
            assert!(!verify_prehashed(&public, &e, &r, &s2));
        }
        checked += 1;
    }
    assert_eq!(checked, 4, "four sm2p256v1 vectors expected");
}
