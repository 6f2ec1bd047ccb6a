//! 256-bit integers as four little-endian 64-bit limbs, and generic Montgomery arithmetic for a
//! modulus m with 2²⁵⁵ < m < 2²⁵⁶ (both the SM2 field prime p and the group order n qualify).
//!
//! Everything here is branch-free in the values it handles (selections use masks), so the same
//! code serves signing, where the values are secret.

pub(crate) type Limbs = [u64; 4];

#[inline(always)]
pub(crate) const fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    // overflowing_add is the shape LLVM turns into an add-with-carry chain (measured ~7% faster
    // verification than the u128 form).
    let (s1, o1) = a.overflowing_add(b);
    let (s2, o2) = s1.overflowing_add(carry);
    (s2, (o1 | o2) as u64)
}

/// a − b − borrow, borrow in {0, 1}; returns (difference, borrow out in {0, 1}).
#[inline(always)]
pub(crate) const fn sbb(a: u64, b: u64, borrow: u64) -> (u64, u64) {
    let (d1, o1) = a.overflowing_sub(b);
    let (d2, o2) = d1.overflowing_sub(borrow);
    (d2, (o1 | o2) as u64)
}

/// a + b·c + carry, which always fits in 128 bits.
#[inline(always)]
pub(crate) const fn mac(a: u64, b: u64, c: u64, carry: u64) -> (u64, u64) {
    let t = a as u128 + (b as u128) * (c as u128) + carry as u128;
    (t as u64, (t >> 64) as u64)
}

pub const fn from_be_bytes(bytes: &[u8; 32]) -> Limbs {
    let mut out = [0u64; 4];
    let mut i = 0;
    while i < 32 {
        // byte 0 is the most significant: it lands in limb 3.
        let limb = 3 - i / 8;
        out[limb] = (out[limb] << 8) | bytes[i] as u64;
        i += 1;
    }
    out
}

pub(crate) fn to_be_bytes(limbs: &Limbs) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, limb) in limbs.iter().enumerate() {
        out[(3 - i) * 8..(4 - i) * 8].copy_from_slice(&limb.to_be_bytes());
    }
    out
}

#[inline(always)]
pub(crate) const fn add(a: &Limbs, b: &Limbs) -> (Limbs, u64) {
    let (r0, c) = adc(a[0], b[0], 0);
    let (r1, c) = adc(a[1], b[1], c);
    let (r2, c) = adc(a[2], b[2], c);
    let (r3, c) = adc(a[3], b[3], c);
    ([r0, r1, r2, r3], c)
}

#[inline(always)]
pub(crate) const fn sub(a: &Limbs, b: &Limbs) -> (Limbs, u64) {
    let (r0, c) = sbb(a[0], b[0], 0);
    let (r1, c) = sbb(a[1], b[1], c);
    let (r2, c) = sbb(a[2], b[2], c);
    let (r3, c) = sbb(a[3], b[3], c);
    ([r0, r1, r2, r3], c)
}

/// `mask` is all ones (pick `a`) or zero (pick `b`).
#[inline(always)]
pub(crate) const fn select(mask: u64, a: &Limbs, b: &Limbs) -> Limbs {
    [
        (a[0] & mask) | (b[0] & !mask),
        (a[1] & mask) | (b[1] & !mask),
        (a[2] & mask) | (b[2] & !mask),
        (a[3] & mask) | (b[3] & !mask),
    ]
}

/// `mask` (all ones or zero) hidden from the optimiser. Where LLVM can prove a value is all ones
/// or zero it may turn the masked selection above into a conditional move or a branch on it, as
/// valgrind's memcheck found in the fixed-base comb's table scan (RELIABILITY.md, "Constant
/// time"); through `subtle`'s optimisation barrier the mask is an opaque value and the selection
/// stays arithmetic. For masks computed from secrets.
#[inline(always)]
pub(crate) fn opaque_mask(mask: u64) -> u64 {
    use subtle::ConditionallySelectable;
    u64::conditional_select(&0, &u64::MAX, subtle::Choice::from((mask & 1) as u8))
}

/// a < b, computed without branching on the values.
#[inline(always)]
pub(crate) const fn lt(a: &Limbs, b: &Limbs) -> bool {
    sub(a, b).1 == 1
}

#[inline(always)]
pub(crate) const fn is_zero(a: &Limbs) -> bool {
    (a[0] | a[1] | a[2] | a[3]) == 0
}

/// All ones when a is zero, else zero; without branching.
#[inline(always)]
pub(crate) const fn zero_mask(a: &Limbs) -> u64 {
    let t = a[0] | a[1] | a[2] | a[3];
    // (t | −t) has its top bit set exactly when t ≠ 0.
    (((t | t.wrapping_neg()) >> 63) ^ 1).wrapping_neg()
}

/// Given r + carry·2²⁵⁶ < 2m, returns that value mod m.
#[inline(always)]
pub(crate) const fn reduce_once(r: &Limbs, carry: u64, m: &Limbs) -> Limbs {
    let (d, borrow) = sub(r, m);
    let take_difference = carry | (borrow ^ 1);
    select(take_difference.wrapping_neg(), &d, r)
}

#[inline(always)]
pub(crate) const fn add_mod(a: &Limbs, b: &Limbs, m: &Limbs) -> Limbs {
    let (s, carry) = add(a, b);
    reduce_once(&s, carry, m)
}

#[inline(always)]
pub(crate) const fn sub_mod(a: &Limbs, b: &Limbs, m: &Limbs) -> Limbs {
    let (d, borrow) = sub(a, b);
    let masked = select(borrow.wrapping_neg(), m, &[0; 4]);
    add(&d, &masked).0
}

/// A modulus with its Montgomery constants (R = 2²⁵⁶), all derived at compile time.
pub(crate) struct Modulus {
    pub(crate) m: Limbs,
    /// −m⁻¹ mod 2⁶⁴.
    pub(crate) inv: u64,
    /// R mod m, i.e. 1 in Montgomery form.
    pub(crate) r: Limbs,
    /// R² mod m, which converts into Montgomery form.
    pub(crate) r2: Limbs,
}

impl Modulus {
    pub(crate) const fn new(m: Limbs) -> Modulus {
        assert!(m[3] >> 63 == 1, "the modulus must exceed 2^255");
        assert!(m[0] & 1 == 1, "the modulus must be odd");
        // Newton's iteration doubles the number of correct low bits each step: 1 → 64 in 6.
        let mut x: u64 = 1;
        let mut i = 0;
        while i < 6 {
            x = x.wrapping_mul(2u64.wrapping_sub(m[0].wrapping_mul(x)));
            i += 1;
        }
        // m > 2²⁵⁵, so 2²⁵⁶ − m < m is already reduced.
        let r = sub(&[0; 4], &m).0;
        let mut r2 = r;
        let mut i = 0;
        while i < 256 {
            r2 = add_mod(&r2, &r2, &m);
            i += 1;
        }
        Modulus {
            m,
            inv: x.wrapping_neg(),
            r,
            r2,
        }
    }
}

#[inline(always)]
pub(crate) const fn mul_wide(a: &Limbs, b: &Limbs) -> [u64; 8] {
    let mut t = [0u64; 8];
    let mut i = 0;
    while i < 4 {
        let mut carry = 0;
        let mut j = 0;
        while j < 4 {
            let (lo, hi) = mac(t[i + j], a[i], b[j], carry);
            t[i + j] = lo;
            carry = hi;
            j += 1;
        }
        t[i + 4] = carry;
        i += 1;
    }
    t
}

/// a², with the cross products computed once and doubled.
#[inline(always)]
pub(crate) const fn sqr_wide(a: &Limbs) -> [u64; 8] {
    let (t1, c) = mac(0, a[0], a[1], 0);
    let (t2, c) = mac(0, a[0], a[2], c);
    let (t3, t4) = mac(0, a[0], a[3], c);
    let (t3, c) = mac(t3, a[1], a[2], 0);
    let (t4, t5) = mac(t4, a[1], a[3], c);
    let (t5, t6) = mac(t5, a[2], a[3], 0);
    let t7 = t6 >> 63;
    let t6 = (t6 << 1) | (t5 >> 63);
    let t5 = (t5 << 1) | (t4 >> 63);
    let t4 = (t4 << 1) | (t3 >> 63);
    let t3 = (t3 << 1) | (t2 >> 63);
    let t2 = (t2 << 1) | (t1 >> 63);
    let t1 = t1 << 1;
    let (t0, h0) = mac(0, a[0], a[0], 0);
    let (l1, h1) = mac(0, a[1], a[1], 0);
    let (l2, h2) = mac(0, a[2], a[2], 0);
    let (l3, h3) = mac(0, a[3], a[3], 0);
    let (t1, c) = adc(t1, h0, 0);
    let (t2, c) = adc(t2, l1, c);
    let (t3, c) = adc(t3, h1, c);
    let (t4, c) = adc(t4, l2, c);
    let (t5, c) = adc(t5, h2, c);
    let (t6, c) = adc(t6, l3, c);
    let (t7, _) = adc(t7, h3, c);
    [t0, t1, t2, t3, t4, t5, t6, t7]
}

/// Montgomery reduction: t·R⁻¹ mod m for t < m·R.
#[inline(always)]
pub(crate) const fn redc(t: [u64; 8], md: &Modulus) -> Limbs {
    let mut t = t;
    let mut top = 0u64;
    let mut i = 0;
    while i < 4 {
        let k = t[i].wrapping_mul(md.inv);
        let mut carry = 0;
        let mut j = 0;
        while j < 4 {
            let (lo, hi) = mac(t[i + j], k, md.m[j], carry);
            t[i + j] = lo;
            carry = hi;
            j += 1;
        }
        let (s, c) = adc(t[i + 4], carry, top);
        t[i + 4] = s;
        top = c;
        i += 1;
    }
    reduce_once(&[t[4], t[5], t[6], t[7]], top, &md.m)
}

#[inline(always)]
pub(crate) const fn mont_mul(a: &Limbs, b: &Limbs, md: &Modulus) -> Limbs {
    redc(mul_wide(a, b), md)
}

#[inline(always)]
pub(crate) const fn mont_sqr(a: &Limbs, md: &Modulus) -> Limbs {
    redc(sqr_wide(a), md)
}

/// base^exponent for base in Montgomery form (result in Montgomery form), with a fixed 4-bit
/// window. The exponent is public and indexes the table, so the time is independent of base.
pub(crate) fn mont_pow(base: &Limbs, exponent: &Limbs, md: &Modulus) -> Limbs {
    let mut powers = [md.r; 16];
    for i in 1..16 {
        powers[i] = mont_mul(&powers[i - 1], base, md);
    }
    let mut acc = md.r;
    for nibble_index in (0..64).rev() {
        for _ in 0..4 {
            acc = mont_sqr(&acc, md);
        }
        let nibble = (exponent[nibble_index / 16] >> ((nibble_index % 16) * 4)) & 0xf;
        acc = mont_mul(&acc, &powers[nibble as usize], md);
    }
    acc
}
