//! The moduli the lanes compute with, in radix 2⁵²: each curve's prime p and group order n,
//! with the Montgomery constants for R = 2²⁶⁰ (five 52-bit limbs), all derived at compile time
//! from [`chainsig_core::curve::CurveParams`], so no constant is typed twice.
//!
//! The integer helpers here are `const fn`s over four 64-bit limbs; the byte-to-limb conversion is
//! `chainsig-weierstrass`'s (the way back to bytes, for recovered keys, is here: that crate keeps
//! its own private), while the Montgomery constants differ from that crate's own form
//! (R = 2²⁵⁶ there, 2²⁶⁰ here), so they are derived here.

use chainsig_core::curve::CurveParams;

/// Limbs per element: 5 × 52 = 260 bits, four more than the 256-bit moduli, which is the room
/// the almost-Montgomery multiplication needs (see [`crate::lanes::field`]).
pub(crate) const LIMBS: usize = 5;
/// The low 52 bits.
pub(crate) const MASK52: u64 = (1 << 52) - 1;

/// A modulus m with 2²⁵⁵ < m < 2²⁵⁶ and its constants, limbs least significant first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Modulus52 {
    /// m in radix 2⁵².
    pub(crate) m: [u64; LIMBS],
    /// 2m in radix 2⁵², the bound lazily reduced values stay below.
    pub(crate) m2: [u64; LIMBS],
    /// −m⁻¹ mod 2⁵², the Montgomery quotient factor.
    pub(crate) k0: u64,
    /// R² mod m (R = 2²⁶⁰): a Montgomery product with it converts into Montgomery form.
    pub(crate) r2: [u64; LIMBS],
    /// R mod m, the Montgomery form of 1.
    pub(crate) one: [u64; LIMBS],
}

/// A modulus as a type, so that elements mod p and mod n never mix.
pub(crate) trait LaneModulus: Copy + 'static {
    const M: Modulus52;
}

pub(crate) use chainsig_weierstrass::limbs_from_be_bytes as limbs64_from_be;

/// 256 bits in four 64-bit limbs to five 52-bit limbs.
pub(crate) const fn to_radix52(a: &[u64; 4]) -> [u64; LIMBS] {
    [
        a[0] & MASK52,
        ((a[0] >> 52) | (a[1] << 12)) & MASK52,
        ((a[1] >> 40) | (a[2] << 24)) & MASK52,
        ((a[2] >> 28) | (a[3] << 36)) & MASK52,
        a[3] >> 16,
    ]
}

/// (p + 1)/4 in four 64-bit limbs, from p big-endian: the exponent that takes a square to a
/// square root when p ≡ 3 (mod 4), as SM2's, P-256's and secp256k1's primes all are.
pub(crate) const fn sqrt_exponent(p_be: &[u8; 32]) -> [u64; 4] {
    let p = limbs64_from_be(p_be);
    assert!(p[0] & 3 == 3, "the square root needs p ≡ 3 mod 4");
    // p is odd and below 2²⁵⁶ − 1, so p + 1 only carries within the limbs.
    let mut q = [0u64; 4];
    let mut carry = 1u64;
    let mut i = 0;
    while i < 4 {
        let (sum, over) = p[i].overflowing_add(carry);
        q[i] = sum;
        carry = over as u64;
        i += 1;
    }
    assert!(carry == 0, "p + 1 fits in 256 bits");
    let mut i = 0;
    while i < 4 {
        let high = if i < 3 { q[i + 1] << 62 } else { 0 };
        q[i] = (q[i] >> 2) | high;
        i += 1;
    }
    q
}

/// Five normalised 52-bit limbs (value below 2²⁵⁶) to 32 big-endian bytes.
pub(crate) fn be_from_radix52(a: &[u64; LIMBS]) -> [u8; 32] {
    let limbs = from_radix52(a);
    let mut out = [0u8; 32];
    for (i, limb) in limbs.iter().enumerate() {
        out[32 - 8 * (i + 1)..32 - 8 * i].copy_from_slice(&limb.to_be_bytes());
    }
    out
}

/// 32 big-endian bytes to five 52-bit limbs.
pub(crate) const fn radix52_from_be(bytes: &[u8; 32]) -> [u64; LIMBS] {
    to_radix52(&limbs64_from_be(bytes))
}

/// Five normalised 52-bit limbs (value below 2²⁵⁶) to four 64-bit limbs.
pub(crate) const fn from_radix52(a: &[u64; LIMBS]) -> [u64; 4] {
    [
        a[0] | (a[1] << 52),
        (a[1] >> 12) | (a[2] << 40),
        (a[2] >> 24) | (a[3] << 28),
        (a[3] >> 36) | (a[4] << 16),
    ]
}

const fn add64(a: &[u64; 4], b: &[u64; 4]) -> ([u64; 4], u64) {
    let mut out = [0u64; 4];
    let mut carry = 0u64;
    let mut i = 0;
    while i < 4 {
        let (s1, o1) = a[i].overflowing_add(b[i]);
        let (s2, o2) = s1.overflowing_add(carry);
        out[i] = s2;
        carry = (o1 | o2) as u64;
        i += 1;
    }
    (out, carry)
}

const fn sub64(a: &[u64; 4], b: &[u64; 4]) -> ([u64; 4], u64) {
    let mut out = [0u64; 4];
    let mut borrow = 0u64;
    let mut i = 0;
    while i < 4 {
        let (d1, o1) = a[i].overflowing_sub(b[i]);
        let (d2, o2) = d1.overflowing_sub(borrow);
        out[i] = d2;
        borrow = (o1 | o2) as u64;
        i += 1;
    }
    (out, borrow)
}

/// (a + b) mod m for a, b < m.
const fn add_mod64(a: &[u64; 4], b: &[u64; 4], m: &[u64; 4]) -> [u64; 4] {
    let (s, carry) = add64(a, b);
    let (d, borrow) = sub64(&s, m);
    if carry == 1 || borrow == 0 {
        d
    } else {
        s
    }
}

impl Modulus52 {
    /// The constants of the modulus whose big-endian bytes are `bytes`; stops the build unless
    /// 2²⁵⁵ < m < 2²⁵⁶ and m is odd.
    pub(crate) const fn new(bytes: &[u8; 32]) -> Modulus52 {
        let m64 = limbs64_from_be(bytes);
        assert!(m64[3] >> 63 == 1, "the modulus must exceed 2^255");
        assert!(m64[0] & 1 == 1, "the modulus must be odd");
        // Newton's iteration for m⁻¹ mod 2⁶⁴: 1 → 64 correct bits in 6 steps.
        let mut inv: u64 = 1;
        let mut i = 0;
        while i < 6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(m64[0].wrapping_mul(inv)));
            i += 1;
        }
        let k0 = inv.wrapping_neg() & MASK52;
        // 2²⁵⁶ mod m = 2²⁵⁶ − m (m > 2²⁵⁵); then double to 2²⁶⁰ (R) and on to 2⁵²⁰ (R²).
        let mut r = sub64(&[0; 4], &m64).0;
        let mut i = 0;
        while i < 4 {
            r = add_mod64(&r, &r, &m64);
            i += 1;
        }
        let one = r;
        let mut i = 0;
        while i < 260 {
            r = add_mod64(&r, &r, &m64);
            i += 1;
        }
        let m = to_radix52(&m64);
        let (twice, _) = add64(&m64, &m64);
        // 2m has 257 bits: the carry out of the 64-bit limbs is bit 256, bit 48 of limb 4.
        let twice_carry = m64[3] >> 63;
        let mut m2 = to_radix52(&twice);
        m2[4] |= twice_carry << 48;
        Modulus52 {
            m,
            m2,
            k0,
            r2: to_radix52(&r),
            one: to_radix52(&one),
        }
    }
}

macro_rules! lane_modulus {
    ($(#[$doc:meta])* $name:ident, $bytes:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) struct $name;
        impl LaneModulus for $name {
            const M: Modulus52 = Modulus52::new(&$bytes);
        }
    };
}

const SM2: CurveParams = chainsig_core::curve::SM2;
const P256: CurveParams = chainsig_core::curve::P256;
const SECP256K1: CurveParams = chainsig_core::curve::SECP256K1;

lane_modulus!(
    /// The SM2 field prime.
    Sm2P,
    SM2.p
);
lane_modulus!(
    /// The SM2 group order.
    Sm2N,
    SM2.n
);
lane_modulus!(
    /// The P-256 field prime.
    P256P,
    P256.p
);
lane_modulus!(
    /// The P-256 group order.
    P256N,
    P256.n
);
lane_modulus!(
    /// The secp256k1 field prime.
    K256P,
    SECP256K1.p
);
lane_modulus!(
    /// The secp256k1 group order.
    K256N,
    SECP256K1.n
);

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;

    fn big(l: &[u64; LIMBS]) -> BigUint {
        l.iter()
            .rev()
            .fold(BigUint::from(0u32), |acc, &x| (acc << 52) + x)
    }

    fn check<M: LaneModulus>(bytes: &[u8; 32]) {
        let m = BigUint::from_bytes_be(bytes);
        let c = M::M;
        let r = BigUint::from(1u32) << 260;
        assert_eq!(big(&c.m), m);
        assert_eq!(big(&c.m2), &m * 2u32);
        assert_eq!(big(&c.one), &r % &m);
        assert_eq!(big(&c.r2), (&r * &r) % &m);
        let two52 = BigUint::from(1u64 << 52);
        assert_eq!((&m * c.k0 + 1u32) % &two52, BigUint::from(0u32));
        assert!(c.m.iter().all(|&l| l <= MASK52) && c.m2.iter().all(|&l| l <= MASK52));
        assert_eq!(
            from_radix52(&c.m),
            limbs64_from_be(bytes),
            "radix conversion round trip"
        );
    }

    #[test]
    fn constants_match_bigint() {
        check::<Sm2P>(&SM2.p);
        check::<Sm2N>(&SM2.n);
        check::<P256P>(&P256.p);
        check::<P256N>(&P256.n);
        check::<K256P>(&SECP256K1.p);
        check::<K256N>(&SECP256K1.n);
        // The primes with p ≡ −1 mod 2⁵² need no multiplication for the quotient digit.
        assert_eq!(Sm2P::M.k0, 1);
        assert_eq!(P256P::M.k0, 1);
    }
}
