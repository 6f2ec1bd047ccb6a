//! Compiles `proto/chainsig.proto` with protox (a protobuf compiler in Rust), so building needs no
//! `protoc` on the machine, and generates the tonic services and prost messages from the descriptor
//! set. The encoded descriptor set is written beside them for gRPC reflection.

use prost::Message;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/chainsig.proto");
    let descriptors = protox::compile(["chainsig.proto"], ["proto"])?;
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    std::fs::write(
        out.join("chainsig_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .compile_fds(descriptors)?;
    Ok(())
}
