//! The KEM end to end: the spec's counter-RNG vectors, implicit rejection on corrupted ciphertexts,
//! wrong-length errors, and secrets kept out of Debug output.

use chainsig_ctru::{
    decaps, decaps_with_verdict, encaps, keygen, Ciphertext, Error, OsRandom, ParamSet, PublicKey,
    RandomSource, SecretKey,
};
use sha3::{Digest, Sha3_256, Sha3_512};

/// randombytes returning consecutive byte values across calls (spec §10).
struct Counter(u8);

impl RandomSource for Counter {
    fn fill(&mut self, out: &mut [u8]) {
        for b in out {
            *b = self.0;
            self.0 = self.0.wrapping_add(1);
        }
    }
}

fn sha3_256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha3_256::digest(bytes))
}

struct CounterVector {
    set: ParamSet,
    pk: &'static str,
    sk: &'static str,
    ct: &'static str,
    ss: &'static str,
    /// Rejection key K̄ after flipping bit 0 of ct[0].
    reject: &'static str,
}

const COUNTER_VECTORS: [CounterVector; 3] = [
    CounterVector {
        set: ParamSet::Ctru653,
        pk: "b8f434b950f3747dbc06acf261cad4a84d17df7d042d87491a2297cd366bf4a4",
        sk: "be113540a5a79fa4410c785d21bc155b59b2b836835c32002a546041b1b2e2f3",
        ct: "04239f111efadbf632d3b02caa92dcd8b85b45687e250c393ccbbf64012fdbcf",
        ss: "cdd4dc9f3bd633f601c3cad50c763aee6261f754303118d4af0046e3f503877c",
        reject: "abd5933dcbbf6d55879574d1271c6d8b5e01e182617ac0b5b393a9c36e108a6b",
    },
    CounterVector {
        set: ParamSet::Ctru761,
        pk: "efd84a58ef513cf49a1ca02853b50552289d8dd61464edebed33c1809ed64af2",
        sk: "39f52e73e8ad012ab51075056f1a69de53005974a10379dd7c53e26a818e52da",
        ct: "c055356abc3a322ebd96d615fd41deb46e6a5f381dca0fdb653bcb227b69ff23",
        ss: "f4066027010daddb848ff4151a3e8050fb6b8e640a7d9f63c5c74f4ece39c780",
        reject: "7fad877dcad3e5ab30f71705ad0b90f9c632cedc1d627599165d7d1ff5d918f6",
    },
    CounterVector {
        set: ParamSet::Ctru1277,
        pk: "92f8fe6947f85df70deafd95d057f648c165cf3818ef740f6020b3bc5d6b39c9",
        sk: "5f6a4b4c2a95a40cea6181e60a75e84225b770d3bd876e7e7754067ed7681467",
        ct: "b31375c1a2d6043f79cce2d65762b5127055cfbb0288095ba2ffa50b60e8ca50",
        ss: "89431a736d487862271ba0d38c2bba90157bd991917b0f2a77793834a27a218d",
        reject: "2e0db6771a7ed1d5a79ab2b30a743997229cddd428ce2cfaa075cd4bb93c68da",
    },
];

#[test]
fn counter_rng_vectors_match_the_spec() {
    for v in &COUNTER_VECTORS {
        let mut rng = Counter(0);
        let (pk, sk) = keygen(v.set, &mut rng);
        let (ct, ss) = encaps(&pk, &mut rng);
        assert_eq!(sha3_256_hex(pk.as_bytes()), v.pk, "{}: pk", v.set);
        assert_eq!(sha3_256_hex(sk.as_bytes()), v.sk, "{}: sk", v.set);
        assert_eq!(sha3_256_hex(ct.as_bytes()), v.ct, "{}: ct", v.set);
        assert_eq!(hex::encode(ss.as_bytes()), v.ss, "{}: ss", v.set);
        let (back, accepted) = decaps_with_verdict(&sk, &ct).unwrap();
        assert!(bool::from(accepted));
        assert_eq!(back, ss);
        assert_eq!(sk.public_key(), pk);
    }
}

#[test]
fn flipped_bit_returns_the_whole_rejection_key() {
    for v in &COUNTER_VECTORS {
        let mut rng = Counter(0);
        let (pk, sk) = keygen(v.set, &mut rng);
        let (ct, ss) = encaps(&pk, &mut rng);
        let mut bad = ct.as_bytes().to_vec();
        bad[0] ^= 1;
        let bad = Ciphertext::from_bytes(v.set, &bad).unwrap();
        let (key, accepted) = decaps_with_verdict(&sk, &bad).unwrap();
        assert!(!bool::from(accepted), "{}", v.set);
        // The spec's K̄: the whole key, not the reference's low-bit mix.
        assert_eq!(hex::encode(key.as_bytes()), v.reject, "{}", v.set);
        assert_ne!(key, ss);
        assert_eq!(decaps(&sk, &bad).unwrap(), key, "deterministic");
    }
}

/// K̄ computed independently of the crate: SHA3-512(pk[0..33) ‖ z ‖ ct)[0..32).
fn rejection_key(sk: &SecretKey, ct: &[u8]) -> Vec<u8> {
    let p = sk.param_set().params();
    let bytes = sk.as_bytes();
    let pk = &bytes[p.sk_pke_bytes()..p.sk_pke_bytes() + p.pk_bytes];
    let z = &bytes[p.sk_bytes() - 32..];
    let mut h = Sha3_512::new();
    h.update(&pk[..33]);
    h.update(z);
    h.update(ct);
    h.finalize()[..32].to_vec()
}

#[test]
fn corrupted_ciphertexts_are_rejected_deterministically() {
    for set in ParamSet::ALL {
        let p = set.params();
        let (pk, sk) = keygen(set, &mut OsRandom);
        let (ct, ss) = encaps(&pk, &mut OsRandom);
        assert_eq!(decaps(&sk, &ct).unwrap(), ss);
        let len = ct.as_bytes().len();
        let mut corruptions: Vec<(String, Vec<u8>)> = Vec::new();
        for (pos, bit) in [(0, 0), (1, 7), (len / 2, 3), (len - 2, 5)] {
            let mut bytes = ct.as_bytes().to_vec();
            bytes[pos] ^= 1 << bit;
            corruptions.push((format!("bit {bit} of byte {pos}"), bytes));
        }
        // A padding bit of the last byte: unpacking ignores it, the byte-wise compare does not.
        let mut padded = ct.as_bytes().to_vec();
        padded[len - 1] |= 0x80;
        corruptions.push(("padding bit".into(), padded));
        corruptions.push(("all zero".into(), vec![0; len]));
        corruptions.push(("all 0xff".into(), vec![0xff; len]));
        for (what, bytes) in corruptions {
            let bad = Ciphertext::from_bytes(set, &bytes).unwrap();
            let (key, accepted) = decaps_with_verdict(&sk, &bad).unwrap();
            assert!(!bool::from(accepted), "{set}: {what} accepted");
            assert_eq!(
                key.as_bytes().to_vec(),
                rejection_key(&sk, &bytes),
                "{set}: {what}"
            );
            assert_ne!(key, ss, "{set}: {what}");
            assert_eq!(
                decaps(&sk, &bad).unwrap(),
                key,
                "{set}: {what}: not deterministic"
            );
        }
        // A ciphertext for another key is rejected too.
        let (other_pk, _) = keygen(set, &mut OsRandom);
        let (foreign, foreign_ss) = encaps(&other_pk, &mut OsRandom);
        let key = decaps(&sk, &foreign).unwrap();
        assert_ne!(key, foreign_ss);
        assert_eq!(
            key.as_bytes().to_vec(),
            rejection_key(&sk, foreign.as_bytes())
        );
        assert_eq!(p.ct_bytes(), len);
    }
}

#[test]
fn wrong_lengths_are_errors_naming_the_field() {
    for set in ParamSet::ALL {
        let p = set.params();
        for (field, expected) in [
            ("pk", p.pk_bytes),
            ("sk", p.sk_bytes()),
            ("ct", p.ct_bytes()),
        ] {
            for got in [0, expected - 1, expected + 1] {
                let bytes = vec![0u8; got];
                let err = match field {
                    "pk" => PublicKey::from_bytes(set, &bytes).unwrap_err(),
                    "sk" => SecretKey::from_bytes(set, &bytes).unwrap_err(),
                    _ => Ciphertext::from_bytes(set, &bytes).unwrap_err(),
                };
                assert_eq!(
                    err,
                    Error::WrongLength {
                        field,
                        expected,
                        got
                    }
                );
                assert!(err.to_string().starts_with(field));
            }
        }
    }
    // A ciphertext of another parameter set has the wrong length for the key.
    let (_, sk) = keygen(ParamSet::Ctru653, &mut OsRandom);
    let (pk761, _) = keygen(ParamSet::Ctru761, &mut OsRandom);
    let (ct761, _) = encaps(&pk761, &mut OsRandom);
    let err = decaps(&sk, &ct761).unwrap_err();
    assert_eq!(
        err,
        Error::WrongLength {
            field: "ct",
            expected: 898,
            got: 952
        }
    );
}

#[test]
fn arbitrary_key_bytes_never_panic() {
    for set in ParamSet::ALL {
        let p = set.params();
        for fill in [0x00u8, 0xff, 0x5a] {
            let pk = PublicKey::from_bytes(set, &vec![fill; p.pk_bytes]).unwrap();
            let (ct, _) = encaps(&pk, &mut OsRandom);
            let sk = SecretKey::from_bytes(set, &vec![fill; p.sk_bytes()]).unwrap();
            let first = decaps(&sk, &ct).unwrap();
            assert_eq!(decaps(&sk, &ct).unwrap(), first);
        }
    }
}

#[test]
fn secrets_stay_out_of_debug_output() {
    let (pk, sk) = keygen(ParamSet::Ctru761, &mut OsRandom);
    let (_, ss) = encaps(&pk, &mut OsRandom);
    let sk_text = format!("{sk:?}");
    let ss_text = format!("{ss:?}");
    assert!(sk_text.contains("redacted") && ss_text.contains("redacted"));
    let sk_hex = hex::encode(&sk.as_bytes()[..8]);
    let ss_hex = hex::encode(&ss.as_bytes()[..8]);
    assert!(!sk_text.contains(&sk_hex) && !ss_text.contains(&ss_hex));
}

#[test]
fn public_encodings_debug_as_set_and_first_bytes() {
    let (pk, _) = keygen(ParamSet::Ctru761, &mut OsRandom);
    let (ct, _) = encaps(&pk, &mut OsRandom);
    assert_eq!(
        format!("{pk:?}"),
        format!(
            "PublicKey(CTRU-Prime-761, {}…)",
            hex::encode(&pk.as_bytes()[..8])
        )
    );
    assert_eq!(
        format!("{ct:?}"),
        format!(
            "Ciphertext(CTRU-Prime-761, {}…)",
            hex::encode(&ct.as_bytes()[..8])
        )
    );
}
