//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-ctru-cuda --test ctru_cuda -- host_kernel::`.

mod gpu;
mod host_kem;
mod host_kernel;
mod nvrtc;
