#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chainsig_fuzz::packed_rows(data));
