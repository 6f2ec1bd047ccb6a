//! The curve parameters, written once. The CPU code uses them for Z_A and range checks; the CUDA
//! backend generates its kernel constants from these same values, so there is no second hand-typed copy.

/// Short-Weierstrass curve y² = x³ + ax + b over F_p with base point G of prime order n.
/// Every value is a 256-bit big-endian integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurveParams {
    pub name: &'static str,
    pub p: [u8; 32],
    pub a: [u8; 32],
    pub b: [u8; 32],
    pub n: [u8; 32],
    pub gx: [u8; 32],
    pub gy: [u8; 32],
}

impl CurveParams {
    /// True when s > n/2: the high half that Bitcoin and Ethereum reject ("low-s" rule).
    pub fn is_high_s(&self, s: &[u8; 32]) -> bool {
        // n is odd, so the low half is [0, (n−1)/2]; (n−1)/2 is n shifted right by one bit.
        let mut half = [0u8; 32];
        let mut carry = 0u8;
        for (h, &b) in half.iter_mut().zip(self.n.iter()) {
            *h = (b >> 1) | (carry << 7);
            carry = b & 1;
        }
        s > &half
    }
}

/// Parses 64 hex digits at compile time.
const fn h(s: &str) -> [u8; 32] {
    let bytes = s.as_bytes();
    assert!(bytes.len() == 64, "a curve constant is 64 hex digits");
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = (nibble(bytes[2 * i]) << 4) | nibble(bytes[2 * i + 1]);
        i += 1;
    }
    out
}

const fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => panic!("not a hex digit"),
    }
}

/// sm2p256v1 (GB/T 32918.5, GM/T 0003.5).
pub const SM2: CurveParams = CurveParams {
    name: "sm2",
    p: h("FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF"),
    a: h("FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFC"),
    b: h("28E9FA9E9D9F5E344D5A9E4BCF6509A7F39789F515AB8F92DDBCBD414D940E93"),
    n: h("FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFF7203DF6B21C6052B53BBF40939D54123"),
    gx: h("32C4AE2C1F1981195F9904466A39C9948FE30BBFF2660BE1715A4589334C74C7"),
    gy: h("BC3736A2F4F6779C59BDCEE36B692153D0A9877CC62A474002DF32E52139F0A0"),
};

/// secp256k1 (SEC 2), a = 0.
pub const SECP256K1: CurveParams = CurveParams {
    name: "secp256k1",
    p: h("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F"),
    a: h("0000000000000000000000000000000000000000000000000000000000000000"),
    b: h("0000000000000000000000000000000000000000000000000000000000000007"),
    n: h("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141"),
    gx: h("79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798"),
    gy: h("483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8"),
};

/// NIST P-256 (secp256r1), a = −3.
pub const P256: CurveParams = CurveParams {
    name: "p256",
    p: h("FFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF"),
    a: h("FFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFC"),
    b: h("5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B"),
    n: h("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551"),
    gx: h("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"),
    gy: h("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5"),
};

/// Curves over the fields of SM2, P-256 and secp256k1, with the same a, whose group has a small
/// prime order q: the exhaustive tests of the generic point and scalar code run every point and
/// every scalar on them, as libsecp256k1's `tests_exhaustive.c` does. Test data, never for
/// signatures.
///
/// The point formulas never use b, so they hold on these curves as on the real ones; only b', G
/// and n differ. Each was found with PARI/GP: for b' = 1, 2, … the group order
/// `ellcard(ellinit([a, b'], p))` until it had a prime factor q ≥ 13 (19 for a = −3, so that the
/// kernels' 4-bit window's eight odd multiples of a point never meet an exceptional case; 13 for
/// secp256k1's a = 0, whose six classes of b' offer only 2, 3, 7, 13 and 199 below 1000); then G as the
/// first point (x, y) with x = 1, 2, …, y even, times #E / q^v (v the power of q in #E), times q
/// again until `ellorder` gave q. The tests check q·G = ∞ and k·G ≠ ∞ for 0 < k < q themselves.
///
/// `n` is not the group order: it is q·c for c the largest prime ≤ (p − 1)/q, a multiple of q
/// with 2²⁵⁵ < n < p. The code sized for a 256-bit prime order (its Montgomery constants, "p < 2n",
/// one-subtraction reductions) works unchanged, and every result mod n is right mod q because q
/// divides n. n is not prime, so only values prime to n may be inverted (a multiple of q or c has no
/// inverse).
pub mod small_order {
    use super::{h, CurveParams};

    /// A test curve and the prime order q of its generator.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct SmallOrderCurve {
        pub params: CurveParams,
        pub q: u32,
    }

    /// y² = x³ − 3x + 1 over SM2's field; 19 divides #E once.
    pub const SM2_FIELD: SmallOrderCurve = SmallOrderCurve {
        params: CurveParams {
            name: "sm2-field-q19",
            p: super::SM2.p,
            a: super::SM2.a,
            b: h("0000000000000000000000000000000000000000000000000000000000000001"),
            n: h("FFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFF7EB"),
            gx: h("DACADCB1504547409B31DB5BBB8CA1EB21E27470315153968F31E608EBF6F3AA"),
            gy: h("C860FAC3FB431087AA237FF8EFB7FD5E435A3E7852CDEB4AD0D94957D8390682"),
        },
        q: 19,
    };

    /// y² = x³ − 3x + 4 over P-256's field; 19 divides #E once.
    pub const P256_FIELD: SmallOrderCurve = SmallOrderCurve {
        params: CurveParams {
            name: "p256-field-q19",
            p: super::P256.p,
            a: super::P256.a,
            b: h("0000000000000000000000000000000000000000000000000000000000000004"),
            n: h("FFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFC733"),
            gx: h("BB4428AA667C2B9606DF77762EAA31CA6672AB9EBF2CE1AC3069D2424DAB0B83"),
            gy: h("165FC3349453C9B080EBC0DC55C531A46214CF8D2B59329FA771FBA1E46EDA1C"),
        },
        q: 19,
    };

    /// y² = x³ + 2 over secp256k1's field (libsecp256k1's curve for order 13); 13² divides #E,
    /// and G has order 13.
    pub const SECP256K1_FIELD: SmallOrderCurve = SmallOrderCurve {
        params: CurveParams {
            name: "secp256k1-field-q13",
            p: super::SECP256K1.p,
            a: super::SECP256K1.a,
            b: h("0000000000000000000000000000000000000000000000000000000000000002"),
            n: h("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFBB5"),
            gx: h("3AD3E1EC92DC070A346A975330B12E1D929C645BE56584AA88E489AA3D68746B"),
            gy: h("AB34E4942373ED8CF787BB15BC0B9FC1F15065BC091001AA6C607F91C8520383"),
        },
        q: 13,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_s_boundary() {
        // secp256k1: n/2 = 7FFFFFFF FFFFFFFF FFFFFFFF FFFFFFFF 5D576E73 57A4501D DFE92F46 681B20A0
        let half = h("7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0");
        assert!(!SECP256K1.is_high_s(&half));
        let mut above = half;
        above[31] += 1;
        assert!(SECP256K1.is_high_s(&above));
        assert!(!SECP256K1.is_high_s(&[0u8; 32]));
        assert!(P256.is_high_s(&P256.n));
    }
}
