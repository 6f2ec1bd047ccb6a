#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| chainsig_fuzz::sec1_point(data));
