//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-cuda --test cuda -- host_kernel::`.

mod exhaustive; // every point and scalar of tiny groups, through the host build of the kernels
mod gpu; // the reference sets on the GPU, and the GPU tests' shared opening and counts
mod gpu_ethtx; // raw transactions on the GPU against the CPU path, timed
mod gpu_raw; // SM2 records from their bytes on the GPU against the CPU path, timed
mod gpu_shards; // one, two and three logical shards of device 0 against the CPU backend
mod host_ecdsa;
mod host_ethtx;
mod host_kernel;
mod host_raw; // SM2 from raw bytes: keys, Z_A and e by the kernel code against the CPU path
mod host_signers;
mod host_sm3;
mod nvrtc;
mod open; // the GPU tests' backend, or why they skip (tests/gpu_fault.rs includes it too)
mod slow; // bit-serial references shared by host_kernel and host_ecdsa
