#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chainsig_fuzz::grpc_messages(data));
