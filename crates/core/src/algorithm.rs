//! What is verified (the signature scheme) and how messages are hashed.

use std::fmt;
use std::str::FromStr;

/// A signature scheme chainsig verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// SM2 (GB/T 32918.2) on sm2p256v1: Chinese permissioned chains.
    Sm2,
    /// ECDSA on secp256k1: Bitcoin, Ethereum.
    Secp256k1,
    /// ECDSA on NIST P-256: Hyperledger Fabric.
    P256,
}

impl Algorithm {
    pub const ALL: [Algorithm; 3] = [Algorithm::Sm2, Algorithm::Secp256k1, Algorithm::P256];

    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Sm2 => "sm2",
            Algorithm::Secp256k1 => "secp256k1",
            Algorithm::P256 => "p256",
        }
    }

    /// The hash applied to `msg` when a record does not name one.
    pub fn default_hash(self) -> HashAlg {
        match self {
            Algorithm::Sm2 => HashAlg::Sm3,
            Algorithm::Secp256k1 => HashAlg::Keccak256,
            Algorithm::P256 => HashAlg::Sha256,
        }
    }

    /// The curve this scheme works on.
    pub fn curve(self) -> &'static crate::curve::CurveParams {
        match self {
            Algorithm::Sm2 => &crate::curve::SM2,
            Algorithm::Secp256k1 => &crate::curve::SECP256K1,
            Algorithm::P256 => &crate::curve::P256,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "sm2" => Ok(Algorithm::Sm2),
            "secp256k1" | "k256" => Ok(Algorithm::Secp256k1),
            "p256" | "p-256" | "secp256r1" | "prime256v1" => Ok(Algorithm::P256),
            _ => Err(format!(
                "unknown algorithm {} (expected sm2, secp256k1 or p256)",
                crate::error::quote(s)
            )),
        }
    }
}

/// A message hash. For SM2, `Sm3` means e = SM3(Z_A ‖ M); the others hash M alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlg {
    Sm3,
    Keccak256,
    Sha256,
    Sha3_256,
}

impl HashAlg {
    pub fn as_str(self) -> &'static str {
        match self {
            HashAlg::Sm3 => "sm3",
            HashAlg::Keccak256 => "keccak256",
            HashAlg::Sha256 => "sha256",
            HashAlg::Sha3_256 => "sha3-256",
        }
    }
}

impl fmt::Display for HashAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HashAlg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "sm3" => Ok(HashAlg::Sm3),
            "keccak256" | "keccak-256" => Ok(HashAlg::Keccak256),
            "sha256" | "sha-256" => Ok(HashAlg::Sha256),
            "sha3-256" | "sha3_256" => Ok(HashAlg::Sha3_256),
            _ => Err(format!(
                "unknown hash {} (expected sm3, keccak256, sha256 or sha3-256)",
                crate::error::quote(s)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for alg in Algorithm::ALL {
            assert_eq!(alg.as_str().parse::<Algorithm>().unwrap(), alg);
        }
        for h in [
            HashAlg::Sm3,
            HashAlg::Keccak256,
            HashAlg::Sha256,
            HashAlg::Sha3_256,
        ] {
            assert_eq!(h.as_str().parse::<HashAlg>().unwrap(), h);
        }
        assert!("ed25519".parse::<Algorithm>().is_err());
        assert!("md5".parse::<HashAlg>().is_err());
    }
}
