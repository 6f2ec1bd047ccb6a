//! The KEM (spec §8): key generation, encapsulation, decapsulation with implicit rejection.

use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{Digest, Sha3_512, Shake256};
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::encode;
use crate::ntt::multiplier;
use crate::params::{ParamSet, Params, HASH_PREFIX_BYTES, SEED_BYTES, SS_BYTES};
use crate::poly::invert_mod_q;
use crate::rng::RandomSource;
use crate::Error;

fn check_len(field: &'static str, bytes: &[u8], expected: usize) -> Result<(), Error> {
    if bytes.len() == expected {
        Ok(())
    } else {
        Err(Error::WrongLength {
            field,
            expected,
            got: bytes.len(),
        })
    }
}

/// The methods every encoded KEM object shares: `from_bytes` (the length must be `$len` of the
/// set's parameters, else [`Error::WrongLength`] naming `$field`), `as_bytes` and `param_set`. One
/// macro for the public key, the secret key and the ciphertext, which differ only in field name,
/// length and documentation.
macro_rules! encoded_bytes {
    ($ty:ident, $field:literal, $len:expr, $(#[$from_doc:meta])*) => {
        impl $ty {
            $(#[$from_doc])*
            pub fn from_bytes(set: ParamSet, bytes: &[u8]) -> Result<Self, Error> {
                let len: fn(&Params) -> usize = $len;
                check_len($field, bytes, len(set.params()))?;
                Ok($ty {
                    set,
                    bytes: bytes.to_vec(),
                })
            }
            /// The encoding (secret for the secret key).
            pub fn as_bytes(&self) -> &[u8] {
                &self.bytes
            }
            /// Its parameter set.
            pub fn param_set(&self) -> ParamSet {
                self.set
            }
        }
    };
}

/// `Debug` of a public encoding: the type, the set and the first 8 bytes in hex.
fn debug_public(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    set: ParamSet,
    bytes: &[u8],
) -> std::fmt::Result {
    write!(f, "{name}({set}, {}…)", hex::encode(&bytes[..8]))
}

/// A public key: the radix encoding of h = g/f.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    set: ParamSet,
    bytes: Vec<u8>,
}

encoded_bytes!(
    PublicKey,
    "pk",
    |p| p.pk_bytes,
    /// Wrap pk bytes; the length must match the set. Any string of that length is a valid key.
);

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_public(f, "PublicKey", self.set, &self.bytes)
    }
}

/// A secret key: sk_pke ‖ pk ‖ z. Zeroised on drop; never printed.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SecretKey {
    #[zeroize(skip)]
    set: ParamSet,
    bytes: Vec<u8>,
}

encoded_bytes!(
    SecretKey,
    "sk",
    Params::sk_bytes,
    /// Wrap sk bytes; the length must match the set. The contents are not validated (as in the
    /// reference): a malformed key decapsulates to some key, never to a panic.
);

impl SecretKey {
    /// The public key embedded in it.
    pub fn public_key(&self) -> PublicKey {
        let p = self.set.params();
        let start = p.sk_pke_bytes();
        PublicKey {
            set: self.set,
            bytes: self.bytes[start..start + p.pk_bytes].to_vec(),
        }
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({}, <redacted>)", self.set)
    }
}

/// A ciphertext.
#[derive(Clone, PartialEq, Eq)]
pub struct Ciphertext {
    set: ParamSet,
    bytes: Vec<u8>,
}

encoded_bytes!(
    Ciphertext,
    "ct",
    Params::ct_bytes,
    /// Wrap ciphertext bytes; the length must match the set.
);

impl std::fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_public(f, "Ciphertext", self.set, &self.bytes)
    }
}

/// The 32-byte shared secret. Zeroised on drop; compared in constant time; never printed.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SharedSecret([u8; SS_BYTES]);

impl SharedSecret {
    /// Wraps 32 key bytes, e.g. a shared secret computed by another backend (the GPU batch KEM).
    pub fn from_bytes(bytes: [u8; SS_BYTES]) -> Self {
        SharedSecret(bytes)
    }
    /// The key bytes (secret).
    pub fn as_bytes(&self) -> &[u8; SS_BYTES] {
        &self.0
    }
}

impl ConstantTimeEq for SharedSecret {
    fn ct_eq(&self, other: &Self) -> Choice {
        self.0.ct_eq(&other.0)
    }
}

impl PartialEq for SharedSecret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other).into()
    }
}

impl Eq for SharedSecret {}

impl std::fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedSecret(<redacted>)")
    }
}

fn shake256(input: &[&[u8]], len: usize) -> Zeroizing<Vec<u8>> {
    let mut hasher = Shake256::default();
    for part in input {
        Update::update(&mut hasher, part);
    }
    let mut out = Zeroizing::new(vec![0u8; len]);
    hasher.finalize_xof().read(&mut out);
    out
}

fn sha3_512(input: &[&[u8]]) -> Zeroizing<[u8; 64]> {
    let mut hasher = Sha3_512::new();
    for part in input {
        Digest::update(&mut hasher, part);
    }
    let mut out = Zeroizing::new([0u8; 64]);
    out.copy_from_slice(&hasher.finalize());
    out
}

/// PKE.Enc with an already decoded h.
fn pke_encrypt(set: ParamSet, h: &[i32], msg: &[u8], rho: &[u8]) -> Vec<u8> {
    let p = set.params();
    let r = Zeroizing::new(encode::sample_cbd(p, rho));
    let sigma = Zeroizing::new(
        multiplier(set)
            .mul_mod_q(h, &r)
            .expect("sampler output |r| ≤ η lies in the exact range"),
    );
    let c = encode::compress_with_message(p, &sigma, msg);
    encode::pack_ct(p, &c)
}

/// PKE.Dec: the E8-decoded message of c·f mod q2.
fn pke_decrypt(set: ParamSet, sk_pke: &[u8], ct: &[u8]) -> Zeroizing<Vec<u8>> {
    let p = set.params();
    let c = encode::unpack_ct(p, ct);
    let f = Zeroizing::new(encode::unpack_sk(p, sk_pke));
    let w = Zeroizing::new(
        multiplier(set)
            .mul_mod_q2(&c, &f)
            .expect("unpacked keys lie in BOUND−15…BOUND, inside the exact range"),
    );
    Zeroizing::new(encode::e8_decode_message(p, &w))
}

/// KeyGen: d ← 32 random bytes, (f′, g) from SHAKE256(d), f = 2f′ + 1, h = g/f, then z ← 32 bytes.
pub fn keygen(set: ParamSet, rng: &mut impl RandomSource) -> (PublicKey, SecretKey) {
    let p = set.params();
    let mut d = Zeroizing::new([0u8; SEED_BYTES]);
    rng.fill(&mut d[..]);
    let coins = shake256(&[&d[..]], 2 * p.coin_bytes());
    let f_prime = Zeroizing::new(encode::sample_cbd(p, &coins[..p.coin_bytes()]));
    let g = Zeroizing::new(encode::sample_cbd(p, &coins[p.coin_bytes()..]));
    let mut f = Zeroizing::new(f_prime.iter().map(|&c| 2 * c).collect::<Vec<i8>>());
    f[0] += 1;
    let f_wide = Zeroizing::new(f.iter().map(|&c| c as i32).collect::<Vec<i32>>());
    // R_q is a field and f ≠ 0 (f_0 is odd and |f_0| < q), so the inverse always exists.
    let (f_inv, invertible) = invert_mod_q(p, &f_wide);
    debug_assert!(invertible);
    let f_inv = Zeroizing::new(f_inv);
    let h = multiplier(set)
        .mul_mod_q(&f_inv, &g)
        .expect("|g| ≤ η lies in the exact range");
    let pk = encode::encode_pk(p, &h);
    let mut sk = encode::pack_sk(p, &f);
    sk.reserve(pk.len() + SEED_BYTES);
    sk.extend_from_slice(&pk);
    let mut z = Zeroizing::new([0u8; SEED_BYTES]);
    rng.fill(&mut z[..]);
    sk.extend_from_slice(&z[..]);
    (PublicKey { set, bytes: pk }, SecretKey { set, bytes: sk })
}

/// Encaps: b ← 32 random bytes, m = SHAKE256(b), (K ‖ s) = SHA3-512(pk[0..33) ‖ m), ct = Enc(pk, m; s).
pub fn encaps(pk: &PublicKey, rng: &mut impl RandomSource) -> (Ciphertext, SharedSecret) {
    let set = pk.set;
    let p = set.params();
    let mut b = Zeroizing::new([0u8; SEED_BYTES]);
    rng.fill(&mut b[..]);
    let msg = shake256(&[&b[..]], p.msg_bytes());
    let (ct, key) = encrypt_message(p, set, &pk.bytes, &encode::decode_pk(p, &pk.bytes), &msg);
    (Ciphertext { set, bytes: ct }, key)
}

/// The deterministic core shared by encaps and the re-encryption in decaps.
fn encrypt_message(
    p: &Params,
    set: ParamSet,
    pk: &[u8],
    h: &[i32],
    msg: &[u8],
) -> (Vec<u8>, SharedSecret) {
    let digest = sha3_512(&[&pk[..HASH_PREFIX_BYTES], msg]);
    let rho = shake256(&[&digest[32..]], p.coin_bytes());
    let ct = pke_encrypt(set, h, msg, &rho);
    let mut key = SharedSecret([0; SS_BYTES]);
    key.0.copy_from_slice(&digest[..32]);
    (ct, key)
}

/// Decaps with implicit rejection: the shared secret, and whether the ciphertext re-encrypted equal.
///
/// The verdict is for tests and diagnostics; a protocol should use [`decaps`] and never branch on it.
/// On rejection the **whole** key is K̄ = SHA3-512(pk[0..33) ‖ z ‖ ct)[0..32) (see the crate docs for
/// how this differs from the reference).
pub fn decaps_with_verdict(
    sk: &SecretKey,
    ct: &Ciphertext,
) -> Result<(SharedSecret, Choice), Error> {
    let set = sk.set;
    let p = set.params();
    check_len("ct", &ct.bytes, p.ct_bytes())?;
    let (sk_pke, rest) = sk.bytes.split_at(p.sk_pke_bytes());
    let (pk, z) = rest.split_at(p.pk_bytes);

    let msg = pke_decrypt(set, sk_pke, &ct.bytes);
    let (reencrypted, candidate) = encrypt_message(p, set, pk, &encode::decode_pk(p, pk), &msg);
    let accepted = reencrypted.as_slice().ct_eq(ct.bytes.as_slice());

    let rejection = sha3_512(&[&pk[..HASH_PREFIX_BYTES], z, &ct.bytes]);
    let mut key = SharedSecret([0; SS_BYTES]);
    for (i, out) in key.0.iter_mut().enumerate() {
        *out = u8::conditional_select(&rejection[i], &candidate.0[i], accepted);
    }
    Ok((key, accepted))
}

/// Decaps: the shared secret for `ct`, or the implicit-rejection key when `ct` is not honest.
/// Errors only when the ciphertext length does not match the key's parameter set.
pub fn decaps(sk: &SecretKey, ct: &Ciphertext) -> Result<SharedSecret, Error> {
    decaps_with_verdict(sk, ct).map(|(key, _)| key)
}
