//! Bit-serial modular arithmetic: slow, independent and obviously correct references for the
//! kernels' field and scalar routines (shared by the host test files).
#![allow(dead_code)] // each test file uses its own part

use chainsig_cuda::codegen::{ge, sub, Words};

/// (a + b) mod m for a, b < m.
pub fn add_mod(a: &Words, b: &Words, m: &Words) -> Words {
    let mut out = [0u32; 8];
    let mut c = 0u64;
    for j in 0..8 {
        c += a[j] as u64 + b[j] as u64;
        out[j] = c as u32;
        c >>= 32;
    }
    if c == 1 || ge(&out, m) {
        out = sub(&out, m);
    }
    out
}

/// Bit-serial a·b mod m for a, b < m.
pub fn mul_mod_slow(a: &Words, b: &Words, m: &Words) -> Words {
    let mut acc = [0u32; 8];
    for j in (0..8).rev() {
        for bit in (0..32).rev() {
            acc = add_mod(&acc, &acc, m);
            if (b[j] >> bit) & 1 == 1 {
                acc = add_mod(&acc, a, m);
            }
        }
    }
    acc
}

/// t mod m for a 512-bit t (16 little-endian words) and m > 2^255.
pub fn reduce_mod(t: &[u32; 16], m: &Words) -> Words {
    let canonical = |w: Words| if ge(&w, m) { sub(&w, m) } else { w };
    let low = canonical(t[..8].try_into().unwrap());
    let high = canonical(t[8..].try_into().unwrap());
    let two_256 = sub(&[0; 8], m); // 2^256 mod m
    add_mod(&mul_mod_slow(&high, &two_256, m), &low, m)
}
