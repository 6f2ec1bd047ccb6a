//! The methods of geth and clef over real sockets: chain ids and their policy, strict quantities,
//! `{raw, tx}`, `personal_sign`, EIP-712, clef's `account_*`, EIP-7702 authorizations, types 3 and 4.

use crate::common::*;
use alloy_primitives::{keccak256, Address, B256, U256};
use chainsig_eth::signing::recover_prehash;
use chainsig_eth::{decode_raw, recover_eip191, ChainPolicy, TxType};
use chainsig_server::eth_rpc::SignTxResult;
use chainsig_server::RpcOptions;
use serde_json::{json, Value};

const SENDER: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";

fn on_chain(chain_id: u64) -> Options {
    Options {
        chain: ChainPolicy::for_chain(chain_id),
        ..Options::default()
    }
}

fn tx_1559() -> Value {
    json!({
        "from": SENDER, "nonce": "0x1", "gas": "0x5208", "maxFeePerGas": "0x64",
        "maxPriorityFeePerGas": "0x1", "to": "0x3535353535353535353535353535353535353535",
        "value": "0xde0b6b3a7640000"
    })
}

fn signature_of(value: &Value) -> alloy_primitives::Signature {
    let bytes = unhex(value.as_str().unwrap());
    alloy_primitives::Signature::from_raw(&bytes).unwrap()
}

#[tokio::test]
async fn chain_id_methods_answer_as_geth() {
    let server = TestServer::start(on_chain(5)).await;
    assert_eq!(server.result("eth_chainId", json!([])).await, "0x5");
    assert_eq!(server.result("net_version", json!([])).await, "5");
    let version = server.result("web3_clientVersion", json!([])).await;
    assert!(version.as_str().unwrap().starts_with("chainsig/v"));
    assert_eq!(
        server.result("account_list", json!([])).await,
        server.result("eth_accounts", json!([])).await
    );
    let (code, message) = error_of(&server.call("eth_sendTransaction", json!([{}])).await);
    assert_eq!(code, -32601);
    assert_eq!(
        message,
        "the method eth_sendTransaction does not exist/is not available"
    );
    // Without a configured chain there is no chain id to report.
    let unconfigured = TestServer::start(Options::default()).await;
    let (code, message) = error_of(&unconfigured.call("eth_chainId", json!([])).await);
    assert_eq!(code, -32000);
    assert!(message.contains("--chain-id"), "{message}");
}

#[tokio::test]
async fn the_chain_policy_fills_refuses_and_opts_in() {
    let server = TestServer::start(on_chain(5)).await;
    // Filled in for every type, legacy included.
    let mut legacy = tx_1559();
    let fields = legacy.as_object_mut().unwrap();
    fields.remove("maxFeePerGas");
    fields.remove("maxPriorityFeePerGas");
    fields.insert("gasPrice".into(), json!("0x1"));
    for tx in [tx_1559(), legacy.clone()] {
        let answer = server.result("eth_signTransaction", json!([tx])).await;
        assert_eq!(answer["tx"]["chainId"], "0x5");
        let decoded = decode_raw(&unhex(answer["raw"].as_str().unwrap())).unwrap();
        assert_eq!(decoded.to_json()["chainId"], "0x5");
    }
    // Another chain is refused by name.
    let mut other = tx_1559();
    other["chainId"] = json!("0x1");
    let (code, message) = error_of(&server.call("eth_signTransaction", json!([other])).await);
    assert_eq!(code, -32602);
    assert!(message.contains("chainId"), "{message}");

    // No chain configured: a request without chainId is refused, for every type ...
    let strict = TestServer::start(Options::default()).await;
    for tx in [tx_1559(), legacy.clone()] {
        let (code, message) = error_of(&strict.call("eth_signTransaction", json!([tx])).await);
        assert_eq!(code, -32602);
        assert!(message.contains("chainId"), "{message}");
    }
    // ... and chain id 0 too.
    let mut zero = tx_1559();
    zero["chainId"] = json!("0x0");
    assert_eq!(
        error_of(&strict.call("eth_signTransaction", json!([zero])).await).0,
        -32602
    );
    // Unless the operator opted in: then a legacy transaction is signed without a chain id.
    let open = TestServer::start(Options {
        chain: ChainPolicy {
            chain_id: None,
            allow_unprotected: true,
        },
        ..Options::default()
    })
    .await;
    let answer = open.result("eth_signTransaction", json!([legacy])).await;
    let v = answer["tx"]["v"].as_str().unwrap();
    assert!(v == "0x1b" || v == "0x1c", "{v}");
}

#[tokio::test]
async fn quantities_are_exact_or_refused_by_name() {
    let server = TestServer::start(on_chain(1)).await;
    for (field, value, hint) in [
        ("value", json!("1000000000000000000"), "0xde0b6b3a7640000"),
        ("nonce", json!("10"), "0xa"),
        (
            "value",
            serde_json::from_str::<Value>("1e+20").unwrap(),
            "digits",
        ),
        ("value", json!(-1), "negative"),
        ("gas", json!(1.5), "digits"),
    ] {
        let mut tx = tx_1559();
        tx[field] = value.clone();
        let (code, message) = error_of(&server.call("eth_signTransaction", json!([tx])).await);
        assert_eq!(code, -32602, "{value}");
        assert!(
            message.starts_with(&format!("params[0].{field}:")),
            "{message}"
        );
        assert!(message.contains(hint), "{message}");
    }
    // 100 ETH as a JSON integer, above 2^64, signed exactly (the body is sent as text, so the
    // number reaches the server as written).
    let mut tx = tx_1559();
    tx.as_object_mut().unwrap().remove("value");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"eth_signTransaction","params":[{}]}}"#,
        tx.to_string()
            .replacen('{', r#"{"value":100000000000000000000,"#, 1)
    );
    let (_, answer) = server.raw(body).await;
    assert_eq!(
        answer["result"]["tx"]["value"], "0x56bc75e2d63100000",
        "{answer}"
    );
}

#[tokio::test]
async fn messages_typed_data_and_clef_methods_recover_to_the_signer() {
    let server = TestServer::start(on_chain(1)).await;
    let sender: Address = SENDER.parse().unwrap();
    let message = b"chainsig";
    let data = format!("0x{}", hex::encode(message));
    let by_eth_sign = server.result("eth_sign", json!([SENDER, data])).await;
    let by_personal = server.result("personal_sign", json!([data, SENDER])).await;
    let by_clef = server
        .result("account_signData", json!(["text/plain", SENDER, data]))
        .await;
    assert_eq!(by_eth_sign, by_personal);
    assert_eq!(by_eth_sign, by_clef);
    let signature: [u8; 65] = unhex(by_personal.as_str().unwrap()).try_into().unwrap();
    assert_eq!(recover_eip191(message, &signature).unwrap(), sender);
    assert_eq!(
        server
            .result("account_ecRecover", json!([data, by_personal]))
            .await,
        SENDER
    );

    // EIP-712's own example: the hash the standard publishes, signed by every method name, the
    // typed data given as an object or as its text.
    let mail = json!({
        "types": {
            "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}],
            "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
            "Mail": [{"name": "from", "type": "Person"}, {"name": "to", "type": "Person"},
                {"name": "contents", "type": "string"}]
        },
        "primaryType": "Mail",
        "domain": {"name": "Ether Mail", "version": "1", "chainId": 1,
            "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
        "message": {
            "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
            "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
            "contents": "Hello, Bob!"
        }
    });
    let hash: B256 = "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"
        .parse()
        .unwrap();
    let reference = server
        .result("eth_signTypedData_v4", json!([SENDER, mail]))
        .await;
    assert_eq!(
        recover_prehash(&hash, &signature_of(&reference)).unwrap().1,
        sender
    );
    for (method, params) in [
        ("eth_signTypedData_v4", json!([SENDER, mail.to_string()])),
        ("eth_signTypedData", json!([SENDER, mail])),
        ("account_signTypedData", json!([SENDER, mail])),
        ("account_signData", json!(["data/typed", SENDER, mail])),
    ] {
        assert_eq!(server.result(method, params).await, reference, "{method}");
    }
    let (code, message) = error_of(
        &server
            .call("eth_signTypedData_v4", json!([SENDER, {"types": 1}]))
            .await,
    );
    assert_eq!(code, -32602);
    assert!(message.starts_with("params[1]"), "{message}");
    let stranger = "0x0000000000000000000000000000000000000001";
    assert_eq!(
        error_of(&server.call("personal_sign", json!([data, stranger])).await).0,
        -32000
    );
}

#[tokio::test]
async fn authorizations_and_types_3_and_4_sign_and_recover() {
    let server = TestServer::start(on_chain(7)).await;
    let sender: Address = SENDER.parse().unwrap();
    let tuple = json!({"chainId": "0x7", "address": "0x3535353535353535353535353535353535353535", "nonce": "0x2"});
    let signed = server
        .result("chainsig_signAuthorization", json!([SENDER, tuple]))
        .await;
    let auth = chainsig_eth::authorization::parse_signed(&signed, "").unwrap();
    let (_, authority) =
        recover_prehash(&auth.signature_hash(), &auth.signature().unwrap()).unwrap();
    assert_eq!(authority, sender);
    // Chain id 0 authorizes on every chain: refused without the opt-in.
    let any_chain = json!({"chainId": "0x0", "address": "0x3535353535353535353535353535353535353535", "nonce": "0x2"});
    assert_eq!(
        error_of(
            &server
                .call("chainsig_signAuthorization", json!([SENDER, any_chain]))
                .await
        )
        .0,
        -32602
    );

    let mut type4 = tx_1559();
    type4["authorizationList"] = json!([signed]);
    let mut type3 = tx_1559();
    type3["maxFeePerBlobGas"] = json!("0x3");
    type3["blobVersionedHashes"] = json!([format!("0x01{}", "ab".repeat(31))]);
    for (tx, tx_type) in [(type3, TxType::Eip4844), (type4, TxType::Eip7702)] {
        let answer = server.result("eth_signTransaction", json!([tx])).await;
        let raw = unhex(answer["raw"].as_str().unwrap());
        assert_eq!(raw[0], tx_type.byte());
        let decoded = decode_raw(&raw).unwrap();
        assert_eq!((decoded.tx_type, decoded.from), (tx_type, sender));
        assert_eq!(answer["tx"]["hash"], format!("{}", keccak256(&raw)));
        assert_eq!(answer["tx"]["type"], format!("{:#x}", tx_type.byte()));
        // geth reports the fee cap as the gas price of a transaction in no block.
        assert_eq!(answer["tx"]["gasPrice"], "0x64");
    }
}

#[tokio::test]
async fn the_bare_hex_result_is_an_operator_choice() {
    let server = TestServer::start(Options {
        rpc: RpcOptions {
            sign_tx_result: SignTxResult::Raw,
        },
        ..on_chain(1)
    })
    .await;
    let raw = server
        .result("eth_signTransaction", json!([tx_1559()]))
        .await;
    let decoded = decode_raw(&unhex(raw.as_str().unwrap())).unwrap();
    assert_eq!(
        decoded.to_json()["value"],
        format!("{:#x}", U256::from(10u64.pow(18)))
    );
}
