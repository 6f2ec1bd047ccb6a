//! The OpenAPI document (`GET /openapi.json`) against the service it describes: every path and
//! operation it names is routed (a request to it is not answered "no such route" or 405), no
//! other path is, and its JSON-RPC method list is exactly the methods the service dispatches.

use crate::common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The paths the router serves over HTTP (gRPC's are described by its protobuf files).
const ROUTES: &[(&str, &str)] = &[
    ("/", "post"),
    ("/api/v1/eth1/sign/{identifier}", "post"),
    ("/api/v1/eth1/publicKeys", "get"),
    ("/upcheck", "get"),
    ("/healthcheck", "get"),
    ("/metrics", "get"),
    ("/openapi.json", "get"),
];

#[tokio::test]
async fn the_document_describes_exactly_the_routes_and_methods_served() {
    let server = TestServer::start(Options {
        tokens: Some("tok\n"),
        ..Options::default()
    })
    .await;
    let response = server.get("/openapi.json").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let doc: Value = response.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.0.3");

    let described: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |op| (path.clone(), op.clone()))
        })
        .collect();
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(p, m)| (p.to_string(), m.to_string()))
        .collect();
    assert_eq!(described, routed);
    for (path, method) in &described {
        let url = path.replace("{identifier}", "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f");
        let request = match method.as_str() {
            "get" => server.get(&url),
            _ => server.post(&url).json(&json!({})),
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert!(
            status != 405 && !body.contains("no such route"),
            "{method} {path}: {status} {body}"
        );
    }
    // And a path it does not describe is not served.
    let stray = server.get("/api/v1/eth1/sign").send().await.unwrap();
    assert_eq!(stray.status(), 404);

    let methods: BTreeSet<&str> = doc["components"]["schemas"]["RpcRequest"]["properties"]
        ["method"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let dispatched: BTreeSet<&str> = chainsig_server::rpc::METHODS
        .iter()
        .chain(chainsig_server::eth_rpc::METHODS)
        .copied()
        .collect();
    assert_eq!(methods, dispatched);
    for method in &methods {
        let answer = server.call(method, json!([])).await;
        assert_ne!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    assert_eq!(
        server.call("eth_mine", json!([])).await["error"]["code"],
        -32601
    );
}
