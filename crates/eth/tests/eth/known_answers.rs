//! Public known answers: EIP-155, EIP-1559, key 1, keystore v3, BIP-39 and BIP-32.

use alloy_consensus::SignableTransaction;
use alloy_primitives::{address, keccak256, Address};
use chainsig_eth::hd::{mnemonic_seed, EthWallet, ExtendedKey};
use chainsig_eth::keystore::{self, Kdf, KeystoreNonces};
use chainsig_eth::{decode_raw, PrivateKey, TxRequest, TxType};
use serde_json::json;

fn key(hex: &str) -> PrivateKey {
    PrivateKey::from_hex(hex).unwrap()
}

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

const EIP155_RAW: &str = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
const EIP1559_RAW: &str = "02f870821e8e8203338301284d8301d97c828ae094000000000000000000000000000000000000aaaa8402933bc980c080a0d067f2167008c59219652f91cbf8788dbca5f771f6e91e2b7657e85b78b472e0a01d305af9fe81fdba43f0dfcd400ed24dcace0a7e30d4e85701dcaaf484cd079e";

#[test]
fn keccak_is_original_keccak() {
    assert_eq!(
        hex::encode(keccak256(b"")),
        "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    );
}

#[test]
fn eip155_example() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    assert_eq!(
        k.address(),
        address!("9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f")
    );
    let request = TxRequest::from_json(&json!({
        "chainId": 1, "nonce": 9, "gasPrice": "0x4a817c800", "gas": 21000,
        "to": "0x3535353535353535353535353535353535353535", "value": "0xde0b6b3a7640000", "data": "0x"
    }))
    .unwrap();
    assert_eq!(request.resolve_type().unwrap(), TxType::Legacy);
    let typed = request.to_typed().unwrap();
    assert_eq!(
        hex::encode(typed.encoded_for_signing()),
        "ec098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a764000080018080"
    );
    assert_eq!(
        hex::encode(request.signing_hash().unwrap()),
        "daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53"
    );
    let signed = request.sign(&k).unwrap();
    assert_eq!(hex::encode(&signed.raw), EIP155_RAW);
    assert_eq!(signed.hash, keccak256(h(EIP155_RAW)));
    assert_eq!(signed.from, k.address());
    let decoded = decode_raw(&signed.raw).unwrap();
    assert_eq!(decoded.from, k.address());
    assert_eq!(decoded.tx_type, TxType::Legacy);
    let fields = decoded.to_json();
    assert_eq!(fields["v"], "0x25");
    assert_eq!(fields["nonce"], "0x9");
    assert_eq!(fields["value"], "0xde0b6b3a7640000");
}

#[test]
fn eip1559_example() {
    let k = key("8f2a55949038a9610f50fb23b5883af3b4ecb3c3bb792cbcefbd1542c692be63");
    assert_eq!(
        k.address(),
        address!("fe3b557e8fb62b89f4916b721be55ceb828dbd73")
    );
    let request = TxRequest::from_json(&json!({
        "chainId": 7822, "nonce": 819, "maxPriorityFeePerGas": 75853, "maxFeePerGas": 121212,
        "gas": 35552, "to": "0x000000000000000000000000000000000000aaaa", "value": 43203529,
        "from": "0xFE3B557E8Fb62b89F4916B721be55cEb828dBd73", "accessList": []
    }))
    .unwrap();
    assert_eq!(request.resolve_type().unwrap(), TxType::Eip1559);
    let signed = request.sign(&k).unwrap();
    assert_eq!(hex::encode(&signed.raw), EIP1559_RAW);
    let decoded = decode_raw(&h(EIP1559_RAW)).unwrap();
    assert_eq!(decoded.from, k.address());
    assert_eq!(decoded.hash, signed.hash);
    assert_eq!(decoded.to_json()["chainId"], "0x1e8e");
}

#[test]
fn pre_eip155_legacy_uses_v_27_or_28() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let request = TxRequest::from_json(&json!({
        "nonce": 9, "gasPrice": "0x4a817c800", "gas": 21000,
        "to": "0x3535353535353535353535353535353535353535", "value": "0xde0b6b3a7640000"
    }))
    .unwrap();
    // Refused by default (no replay protection), signed only with the explicit opt-in.
    assert_eq!(request.sign(&k).unwrap_err().field_name(), "chainId");
    let opt_in = chainsig_eth::ChainPolicy {
        chain_id: None,
        allow_unprotected: true,
    };
    let signed = request.sign_with(&k, &opt_in).unwrap();
    let decoded = decode_raw(&signed.raw).unwrap();
    assert_eq!(decoded.from, k.address());
    let v = decoded.to_json()["v"].as_str().unwrap().to_owned();
    assert!(v == "0x1b" || v == "0x1c", "{v}");
    // The signing hash is over the six-field list: keccak256(rlp([nonce, gasPrice, gas, to, value, data])).
    let mut six = vec![
        0xe9u8, 0x09, 0x85, 0x04, 0xa8, 0x17, 0xc8, 0x00, 0x82, 0x52, 0x08, 0x94,
    ];
    six.extend_from_slice(&[0x35; 20]);
    six.extend_from_slice(&h("880de0b6b3a764000080"));
    assert_eq!(request.signing_hash().unwrap(), keccak256(&six));
}

#[test]
fn address_of_key_one() {
    let k = key("0000000000000000000000000000000000000000000000000000000000000001");
    assert_eq!(
        k.address().to_checksum(None),
        "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf"
    );
}

#[test]
fn invalid_private_keys_are_refused() {
    assert!(PrivateKey::from_hex(&"00".repeat(32)).is_err());
    assert!(PrivateKey::from_hex(
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
    )
    .is_err());
    assert!(PrivateKey::from_hex(
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140"
    )
    .is_ok());
    assert!(PrivateKey::from_hex("abc").is_err());
}

#[test]
fn debug_hides_the_secret() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let shown = format!("{k:?}");
    assert!(!shown.contains("4646464646"), "{shown}");
    assert!(
        shown
            .to_lowercase()
            .contains("9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"),
        "{shown}"
    );
}

#[test]
fn rfc6979_signatures_are_deterministic_and_low_s() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let mut signer = chainsig_eth::Signer::new();
    signer.add_key(k.clone());
    let half_n = alloy_primitives::U256::from_str_radix(
        "7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0",
        16,
    )
    .unwrap();
    for i in 0u32..300 {
        let message = i.to_be_bytes();
        let a = signer.sign_eip191(&k.address(), &message).unwrap();
        // Spans re-randomisations of the thread's context (every 4096 signatures) in between.
        for _ in 0..20 {
            signer.sign_eip191(&k.address(), b"filler").unwrap();
        }
        let b = signer.sign_eip191(&k.address(), &message).unwrap();
        assert_eq!(a, b);
        assert!(alloy_primitives::U256::from_be_slice(&a[32..64]) <= half_n);
        assert_eq!(
            chainsig_eth::recover_eip191(&message, &a).unwrap(),
            k.address()
        );
    }
}

const PASSWORD: &[u8] = b"testpassword";
const KEYSTORE_SECRET: &str = "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d";

fn nonces(salt: &str, iv: &str) -> KeystoreNonces {
    KeystoreNonces {
        salt: h(salt).try_into().unwrap(),
        iv: h(iv).try_into().unwrap(),
        uuid: [0x11; 16],
    }
}

fn check_vector(
    kdf: Kdf,
    kdfparams: serde_json::Value,
    salt: &str,
    iv: &str,
    ciphertext: &str,
    mac: &str,
) {
    let document = json!({
        "crypto": {
            "cipher": "aes-128-ctr", "cipherparams": {"iv": iv}, "ciphertext": ciphertext,
            "kdf": if matches!(kdf, Kdf::Pbkdf2 { .. }) { "pbkdf2" } else { "scrypt" },
            "kdfparams": kdfparams, "mac": mac
        },
        "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6", "version": 3
    });
    let text = document.to_string();
    let k = keystore::decrypt(&text, PASSWORD).unwrap();
    assert_eq!(hex::encode(*k.to_bytes()), KEYSTORE_SECRET);
    let wrong = keystore::decrypt(&text, b"testpassworD").unwrap_err();
    assert_eq!(wrong.field_name(), "password");
    assert!(!wrong.to_string().contains(KEYSTORE_SECRET));
    // Writing with the vector's salt and IV reproduces its ciphertext and MAC.
    let written: serde_json::Value = serde_json::from_str(
        &keystore::encrypt_with(&k, PASSWORD, kdf, &nonces(salt, iv)).unwrap(),
    )
    .unwrap();
    assert_eq!(written["crypto"]["ciphertext"], ciphertext);
    assert_eq!(written["crypto"]["mac"], mac);
    assert_eq!(written["address"], hex::encode(k.address()));
}

#[test]
fn keystore_pbkdf2_vector() {
    let salt = "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd";
    let iv = "6087dab2f9fdbbfaddc31a909735c1e6";
    check_vector(
        Kdf::Pbkdf2 { c: 262144 },
        json!({"c": 262144, "dklen": 32, "prf": "hmac-sha256", "salt": salt}),
        salt,
        iv,
        "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
        "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2",
    );
}

#[test]
fn keystore_scrypt_vector() {
    let salt = "ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19";
    let iv = "83dbcc02d8ccb40e466191a123791e0e";
    check_vector(
        Kdf::Scrypt {
            log_n: 18,
            r: 1,
            p: 8,
        },
        json!({"dklen": 32, "n": 262144, "r": 1, "p": 8, "salt": salt}),
        salt,
        iv,
        "d172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c",
        "2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097",
    );
}

#[test]
fn keystore_round_trip_with_random_nonces() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    for kdf in [
        Kdf::Scrypt {
            log_n: 10,
            r: 8,
            p: 1,
        },
        Kdf::Pbkdf2 { c: 1000 },
    ] {
        let a = keystore::encrypt(&k, b"pw", kdf).unwrap();
        let b = keystore::encrypt(&k, b"pw", kdf).unwrap();
        assert_ne!(a, b, "salt and IV must be fresh");
        assert_eq!(keystore::decrypt(&a, b"pw").unwrap().address(), k.address());
        assert!(keystore::decrypt(&a, b"pW").is_err());
        let parsed: serde_json::Value = serde_json::from_str(&a).unwrap();
        let id = parsed["id"].as_str().unwrap();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
    }
}

type Mutation = Box<dyn Fn(&mut serde_json::Value)>;

#[test]
fn keystore_errors_name_the_field() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let good: serde_json::Value =
        serde_json::from_str(&keystore::encrypt(&k, b"pw", Kdf::Pbkdf2 { c: 10 }).unwrap())
            .unwrap();
    let cases: Vec<(&str, Mutation)> = vec![
        ("version", Box::new(|d| d["version"] = json!(2))),
        (
            "crypto.cipher",
            Box::new(|d| d["crypto"]["cipher"] = json!("aes-256-gcm")),
        ),
        (
            "crypto.cipherparams.iv",
            Box::new(|d| d["crypto"]["cipherparams"]["iv"] = json!("zz")),
        ),
        (
            "crypto.ciphertext",
            Box::new(|d| d["crypto"]["ciphertext"] = json!("00")),
        ),
        (
            "crypto.kdf",
            Box::new(|d| d["crypto"]["kdf"] = json!("argon2")),
        ),
        (
            "crypto.kdfparams.prf",
            Box::new(|d| d["crypto"]["kdfparams"]["prf"] = json!("hmac-sha512")),
        ),
        (
            "crypto.kdfparams.dklen",
            Box::new(|d| d["crypto"]["kdfparams"]["dklen"] = json!(16)),
        ),
        (
            "password",
            Box::new(|d| d["crypto"]["mac"] = json!("00".repeat(32))),
        ),
    ];
    for (field, mutate) in cases {
        let mut document = good.clone();
        mutate(&mut document);
        let err = keystore::decrypt(&document.to_string(), b"pw").unwrap_err();
        assert_eq!(err.field_name(), field, "{err}");
    }
    let mut huge = good.clone();
    huge["crypto"]["kdf"] = json!("scrypt");
    huge["crypto"]["kdfparams"] =
        json!({"dklen": 32, "n": 1u64 << 40, "r": 8, "p": 1, "salt": "00"});
    assert_eq!(
        keystore::decrypt(&huge.to_string(), b"pw")
            .unwrap_err()
            .field_name(),
        "crypto.kdfparams.n"
    );
}

/// A valid PBKDF2 keystore (two iterations) of `key` with its `crypto.kdf` and
/// `crypto.kdfparams` replaced.
fn with_kdf(kdf: &str, kdfparams: serde_json::Value) -> String {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let mut document: serde_json::Value =
        serde_json::from_str(&keystore::encrypt(&k, b"pw", Kdf::Pbkdf2 { c: 2 }).unwrap()).unwrap();
    document["crypto"]["kdf"] = json!(kdf);
    document["crypto"]["kdfparams"] = kdfparams;
    document.to_string()
}

#[test]
fn hostile_kdf_parameters_are_refused_before_any_work() {
    let salt = "00".repeat(32);
    let scrypt = |n: u64, r: u64, p: u64, dklen: u64| {
        with_kdf(
            "scrypt",
            json!({"dklen": dklen, "n": n, "r": r, "p": p, "salt": salt}),
        )
    };
    let pbkdf2 = |c: u64, dklen: u64| {
        with_kdf(
            "pbkdf2",
            json!({"dklen": dklen, "c": c, "prf": "hmac-sha256", "salt": salt}),
        )
    };
    let cases = [
        // Each would take from minutes to forever, or terabytes, if derived.
        (scrypt(2, 1, 1 << 29, 32), "crypto.kdfparams.p"),
        (scrypt(1 << 14, 1 << 16, 1 << 16, 32), "crypto.kdfparams.r"),
        (scrypt(1 << 14, 8, 1 << 16, 32), "crypto.kdfparams.p"),
        (pbkdf2(u64::from(u32::MAX), 32), "crypto.kdfparams.c"),
        (scrypt(1 << 12, 8, 1, 16), "crypto.kdfparams.dklen"),
        (pbkdf2(2, 64), "crypto.kdfparams.dklen"),
        // The edges of the limits.
        (scrypt(1, 8, 1, 32), "crypto.kdfparams.n"),
        (scrypt(3, 8, 1, 32), "crypto.kdfparams.n"),
        (scrypt(1 << 21, 1, 1, 32), "crypto.kdfparams.n"),
        (scrypt(1 << 20, 16, 1, 32), "crypto.kdfparams.n"), // 2 GiB
        (scrypt(1 << 12, 0, 1, 32), "crypto.kdfparams.r"),
        (scrypt(1 << 12, 17, 1, 32), "crypto.kdfparams.r"),
        (scrypt(1 << 12, 8, 0, 32), "crypto.kdfparams.p"),
        (scrypt(1 << 12, 8, 17, 32), "crypto.kdfparams.p"),
        (pbkdf2(0, 32), "crypto.kdfparams.c"),
        (pbkdf2(10_000_001, 32), "crypto.kdfparams.c"),
        (
            with_kdf(
                "scrypt",
                json!({"dklen": 32, "n": 1.5e3, "r": 8, "p": 1, "salt": salt}),
            ),
            "crypto.kdfparams.n",
        ),
    ];
    for (text, field) in cases {
        let start = std::time::Instant::now();
        let err = keystore::decrypt(&text, b"pw").unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.field_name(), field, "{err}");
        assert!(
            took < std::time::Duration::from_secs(1),
            "{field}: {took:?}"
        );
    }
    // The limits themselves are accepted (checked without deriving), and so are geth's settings.
    assert!(Kdf::scrypt(1 << 20, 8, 16).is_ok());
    assert!(Kdf::scrypt(2, 1, 1).is_ok());
    assert!(Kdf::pbkdf2(10_000_000).is_ok());
    assert!(Kdf::STANDARD.check().is_ok() && Kdf::LIGHT.check().is_ok());
    // Nothing is written that could not be read back.
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let too_costly = Kdf::Scrypt {
        log_n: 21,
        r: 8,
        p: 1,
    };
    assert_eq!(
        keystore::encrypt(&k, b"pw", too_costly)
            .unwrap_err()
            .field_name(),
        "crypto.kdfparams.n"
    );
}

#[test]
fn keystore_mac_and_address_are_checked() {
    let k = key("0x4646464646464646464646464646464646464646464646464646464646464646");
    let good: serde_json::Value =
        serde_json::from_str(&keystore::encrypt(&k, b"pw", Kdf::LIGHT).unwrap()).unwrap();
    assert_eq!(
        keystore::decrypt(&good.to_string(), b"pw")
            .unwrap()
            .address(),
        k.address()
    );
    let mut short_mac = good.clone();
    short_mac["crypto"]["mac"] = json!("00".repeat(31));
    let err = keystore::decrypt(&short_mac.to_string(), b"pw").unwrap_err();
    assert_eq!(err.field_name(), "crypto.mac");
    let mut other_address = good.clone();
    other_address["address"] = json!("0x0000000000000000000000000000000000000001");
    let err = keystore::decrypt(&other_address.to_string(), b"pw").unwrap_err();
    assert_eq!(err.field_name(), "address");
    let mut checksummed = good.clone();
    checksummed["address"] = json!(k.address().to_checksum(None));
    assert!(keystore::decrypt(&checksummed.to_string(), b"pw").is_ok());
    let mut no_address = good;
    no_address.as_object_mut().unwrap().remove("address");
    assert!(keystore::decrypt(&no_address.to_string(), b"pw").is_ok());
}

/// A key file as geth writes it (from geth's keystore test data: scrypt n = 8, r = 8, p = 16,
/// password `foobar`): another implementation's file decrypts to the address it declares.
#[test]
fn geth_written_keystore() {
    let text = r#"{"address":"f466859ead1932d743d622cb74fc058882e8648a","crypto":{"cipher":"aes-128-ctr","ciphertext":"cb664472deacb41a2e995fa7f96fe29ce744471deb8d146a0e43c7898c9ddd4d","cipherparams":{"iv":"dfd9ee70812add5f4b8f89d0811c9158"},"kdf":"scrypt","kdfparams":{"dklen":32,"n":8,"p":16,"r":8,"salt":"0d6769bf016d45c479213990d6a08d938469c4adad8a02ce507b4a4e7b7739f1"},"mac":"bac9af994b15a45dd39669fc66f9aa8a3b9dd8c22cb16e4d8d7ea089d0f1a1a9"},"id":"472e8b3d-afb6-45b5-8111-72c89895099a","version":3}"#;
    let k = keystore::decrypt(text, b"foobar").unwrap();
    assert_eq!(
        k.address(),
        address!("f466859ead1932d743d622cb74fc058882e8648a")
    );
    assert_eq!(
        keystore::decrypt(text, b"foobaz").unwrap_err().field_name(),
        "password"
    );
}

const DEV_MNEMONIC: &str = "test test test test test test test test test test test junk";

#[test]
fn development_mnemonic_addresses() {
    let wallet = EthWallet::from_mnemonic(DEV_MNEMONIC, "").unwrap();
    let expected: [Address; 3] = [
        address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266"),
        address!("70997970C51812dc3A010C7d01b50e0d17dc79C8"),
        address!("3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"),
    ];
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(wallet.key(i as u32).unwrap().address(), *want, "index {i}");
    }
    assert_eq!(
        hex::encode(*wallet.key(0).unwrap().to_bytes()),
        "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
    );
    assert!(EthWallet::from_mnemonic(
        "test test test test test test test test test test test test",
        ""
    )
    .is_err());
}

#[test]
fn bip39_trezor_vector() {
    let seed = mnemonic_seed(
        "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
        "TREZOR",
    )
    .unwrap();
    assert_eq!(
        hex::encode(seed.as_ref()),
        "c55257c360c07c72029aebc1b53c05ed0362ada38ead3e3e9efa3708e53495531f09a6987599d18264c1e1c92f2cf141630c7a3c4ab7c81b2f001698e7463b04"
    );
}

#[test]
fn bip32_test_vector_1() {
    let master = ExtendedKey::from_seed(&h("000102030405060708090a0b0c0d0e0f")).unwrap();
    let cases = [
        (
            "m",
            "e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35",
            "873dff81c02f525623fd1fe5167eac3a55a049de3d314bb42ee227ffed37d508",
        ),
        (
            "m/0'",
            "edb2e14f9ee77d26dd93b4ecede8d16ed408ce149b6cd80b0715a2d911a0afea",
            "47fdacbd0f1097043b78c63c20c34ef4ed9a111d980047ad16282c7ae6236141",
        ),
        (
            "m/0'/1",
            "3c6cb8d0f6a264c91ea8b5030fadaa8e538b020f0a387421a12de9319dc93368",
            "2a7857631386ba23dacac34180dd1983734e444fdbf774041578e9b6adb37c19",
        ),
        (
            "m/0H/1/2h",
            "cbce0d719ecf7431d88e6a89fa1483e02e35092af60c042b1df2ff59fa424dca",
            "04466b9cc8e161e966409ca52986c584f07e9dc81f735db683c3ff6ec7b1503f",
        ),
        (
            "m/0'/1/2'/2",
            "0f479245fb19a38a1954c5c7c0ebab2f9bdfd96a17563ef28a6a4b1a2a764ef4",
            "cfb71883f01676f587d023cc53a35bc7f88f724b1f8c2892ac1275ac822a3edd",
        ),
        (
            "m/0'/1/2'/2/1000000000",
            "471b76e389e528d6de6d816857e012c5455051cad6660850e58372a6c3e6e7c8",
            "c783e67b921d2beb8f6b389cc646d7263b4145701dadd2161548a8b078e65e9e",
        ),
    ];
    for (path, secret, chain_code) in cases {
        let node = master.derive_path(path).unwrap();
        assert_eq!(
            hex::encode(*node.private_key().unwrap().to_bytes()),
            secret,
            "{path}"
        );
        assert_eq!(hex::encode(node.chain_code()), chain_code, "{path}");
    }
    for bad in ["", "x/0", "m/a", "m/2147483648", "m/0''"] {
        assert!(master.derive_path(bad).is_err(), "{bad}");
    }
}
