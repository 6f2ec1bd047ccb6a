#![no_main]

/// FNV-1a (64 bits) of the input: one input in eight, picked by it, is verified through
/// `cs_verify` too (a failing input then fails again alone); the replay test verifies every one.
fn verify_this(data: &[u8]) -> bool {
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    hash % 8 == 0
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    chainsig_fuzz::rows::packed_rows_with(data, verify_this(data))
});
