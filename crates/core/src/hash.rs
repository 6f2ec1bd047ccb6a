//! Message hashing through the RustCrypto hash crates.

use crate::algorithm::HashAlg;
use sha2::Digest as _;

/// Hashes `msg` with `alg` (for SM2 the caller prepends Z_A: see `sm3_concat`).
pub fn digest(alg: HashAlg, msg: &[u8]) -> [u8; 32] {
    match alg {
        HashAlg::Sm3 => sm3::Sm3::digest(msg).into(),
        HashAlg::Keccak256 => keccak256(msg),
        HashAlg::Sha256 => sha2::Sha256::digest(msg).into(),
        HashAlg::Sha3_256 => sha3::Sha3_256::digest(msg).into(),
    }
}

/// Keccak-256 with the original padding (Ethereum), not FIPS-202 SHA3-256.
pub fn keccak256(data: &[u8]) -> [u8; 32] {
    sha3::Keccak256::digest(data).into()
}

/// SM3 over the concatenation of `parts`, without copying them together.
pub fn sm3_concat(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = sm3::Sm3::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// SM2's signer digest Z_A = SM3(ENTL ‖ ID ‖ a ‖ b ‖ Gx ‖ Gy ‖ Px ‖ Py), ENTL the bit length of
/// the identifier as two big-endian bytes, from the core curve constants.
pub fn sm2_z_a(id: &[u8], px: &[u8; 32], py: &[u8; 32]) -> [u8; 32] {
    let c = &crate::curve::SM2;
    let entl = ((id.len() * 8) as u16).to_be_bytes();
    sm3_concat(&[&entl, id, &c.a, &c.b, &c.gx, &c.gy, px, py])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        let cases = [
            (
                HashAlg::Sm3,
                "abc",
                "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0",
            ),
            (
                HashAlg::Keccak256,
                "",
                "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
            ),
            (
                HashAlg::Sha256,
                "abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                HashAlg::Sha3_256,
                "abc",
                "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            ),
        ];
        for (alg, msg, want) in cases {
            assert_eq!(hex::encode(digest(alg, msg.as_bytes())), want, "{alg}");
        }
        assert_eq!(
            sm3_concat(&[b"a", b"", b"bc"]),
            digest(HashAlg::Sm3, b"abc")
        );
    }
}
