//! Randomness sources. The KEM draws its randomness only through [`RandomSource::fill`], one call per
//! `randombytes` call of the reference (keygen: 32 + 32 bytes, encaps: 32 bytes), because the NIST
//! DRBG updates its state after every call: two 32-byte calls differ from one 64-byte call.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes256;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// Where the KEM gets its randomness.
pub trait RandomSource {
    /// Fill `out` with random bytes: one `randombytes(out, out.len())` call.
    fn fill(&mut self, out: &mut [u8]);
}

impl<T: RandomSource + ?Sized> RandomSource for &mut T {
    fn fill(&mut self, out: &mut [u8]) {
        (**self).fill(out)
    }
}

/// The operating system's random number generator.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&mut self, out: &mut [u8]) {
        use rand::RngCore;
        rand::rngs::OsRng.fill_bytes(out);
    }
}

/// The NIST PQC known-answer DRBG: AES-256 CTR_DRBG (SP 800-90A) without derivation function,
/// personalisation or reseeding, exactly as NIST's `rng.c` (see the vectors README).
///
/// Hand-written because the KATs need this exact construction, which no maintained crate offers in
/// this form; the AES block function is the RustCrypto `aes` crate.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct NistDrbg {
    key: [u8; 32],
    counter: [u8; 16],
}

impl std::fmt::Debug for NistDrbg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NistDrbg { .. }")
    }
}

impl NistDrbg {
    /// `randombytes_init(entropy)`: K = 0, V = 0, then Update(entropy).
    pub fn new(entropy: &[u8; 48]) -> Self {
        let mut drbg = NistDrbg {
            key: [0; 32],
            counter: [0; 16],
        };
        drbg.update(Some(entropy));
        drbg
    }

    /// V ← V + 1 as a 128-bit big-endian integer.
    fn increment(&mut self) {
        let v = u128::from_be_bytes(self.counter).wrapping_add(1);
        self.counter = v.to_be_bytes();
    }

    fn next_block(&mut self, cipher: &Aes256) -> [u8; 16] {
        self.increment();
        let mut block = self.counter.into();
        cipher.encrypt_block(&mut block);
        block.into()
    }

    fn update(&mut self, data: Option<&[u8; 48]>) {
        let cipher = Aes256::new(&self.key.into());
        let mut t = [0u8; 48];
        for chunk in t.chunks_exact_mut(16) {
            chunk.copy_from_slice(&self.next_block(&cipher));
        }
        if let Some(data) = data {
            for (x, d) in t.iter_mut().zip(data) {
                *x ^= d;
            }
        }
        self.key.copy_from_slice(&t[..32]);
        self.counter.copy_from_slice(&t[32..]);
        t.zeroize();
    }
}

impl RandomSource for NistDrbg {
    fn fill(&mut self, out: &mut [u8]) {
        let cipher = Aes256::new(&self.key.into());
        for chunk in out.chunks_mut(16) {
            let mut block = self.next_block(&cipher);
            chunk.copy_from_slice(&block[..chunk.len()]);
            block.zeroize();
        }
        self.update(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drbg_reproduces_the_nist_kat_seeds() {
        let mut entropy = [0u8; 48];
        for (i, b) in entropy.iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut outer = NistDrbg::new(&entropy);
        let mut seed = [0u8; 48];
        outer.fill(&mut seed);
        assert_eq!(
            hex::encode_upper(seed),
            "061550234D158C5EC95595FE04EF7A25767F2E24CC2BC479D09D86DC9ABCFDE7056A8C266F9EF97ED08541DBD2E1FFA1"
        );
        outer.fill(&mut seed);
        assert_eq!(
            hex::encode_upper(seed),
            "D81C4D8D734FCBFBEADE3D3F8A039FAA2A2C9957E835AD55B22E75BF57BB556AC81ADDE6AEEB4A5A875C3BFCADFA958F"
        );
    }
}
