//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-server --test server -- http::`.

mod common; // helpers shared by the modules below
mod faults;
mod grpc;
mod grpc_listener;
mod grpc_recover;
mod http;
mod openapi;
mod tls;
