//! Prints the record tables of chainsig-cuda's `src/known_answers.rs` (the GPU's ECDSA
//! self-test): `cargo run -p chainsig-testkit --example known_answers`. The cuda crate's test
//! `known_answers_agree_with_rustcrypto_and_the_host_build` rechecks every verdict.

use chainsig_core::Algorithm;
use chainsig_testkit::sets::generate_ecdsa;

/// Records per curve: the 21 edge cases and 27 generated ones.
const COUNT: usize = 48;

fn main() {
    for (name, alg) in [
        ("P256", Algorithm::P256),
        ("SECP256K1", Algorithm::Secp256k1),
    ] {
        let (records, verdicts) = generate_ecdsa(alg, COUNT, 8, 400, 0xec05a);
        println!("/// {alg}: `any_s low_s e r s px py` per line.");
        println!("const {name}: &str = \"");
        for (r, v) in records.iter().zip(&verdicts) {
            println!(
                "{} {} {} {} {} {} {}",
                u8::from(v.any_s),
                u8::from(v.low_s),
                hex::encode(r.e),
                hex::encode(r.r),
                hex::encode(r.s),
                hex::encode(r.px),
                hex::encode(r.py)
            );
        }
        println!("\";\n");
    }
}
