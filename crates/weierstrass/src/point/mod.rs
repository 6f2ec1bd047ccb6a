//! Curve points: affine and Jacobian (X/Z², Y/Z³) coordinates, a = −3 doubling, mixed and full
//! addition, the fixed-base tables for G, and the two scalar multiplications the crate needs:
//! s·G + t·P for verification (variable time: everything in it is public) and k·G for signing and
//! key generation (constant time: k is secret).

use crate::curve::{Curve, Sm2};
use crate::field::FieldElement;
use crate::limbs::{self, Limbs};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Affine<C: Curve = Sm2> {
    pub(crate) x: FieldElement<C>,
    pub(crate) y: FieldElement<C>,
}

/// Z = 0 is the point at infinity.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Jacobian<C: Curve = Sm2> {
    pub(crate) x: FieldElement<C>,
    pub(crate) y: FieldElement<C>,
    pub(crate) z: FieldElement<C>,
}

/// The SM2 generator.
#[cfg(test)]
pub(crate) const GENERATOR: Affine<Sm2> = Affine::<Sm2>::GENERATOR;

impl<C: Curve> Affine<C> {
    /// The curve's generator G, converted at compile time.
    pub(crate) const GENERATOR: Affine<C> = Affine {
        x: FieldElement::<C>::from_int(limbs::from_be_bytes(&C::PARAMS.gx)),
        y: FieldElement::<C>::from_int(limbs::from_be_bytes(&C::PARAMS.gy)),
    };

    /// SEC1 uncompressed encoding `04‖x‖y`.
    pub(crate) fn sec1_uncompressed(&self) -> [u8; 65] {
        let mut out = [0u8; 65];
        out[0] = 0x04;
        out[1..33].copy_from_slice(&self.x.to_bytes());
        out[33..].copy_from_slice(&self.y.to_bytes());
        out
    }

    /// SEC1 compressed encoding `02/03‖x`, the prefix carrying the parity of y.
    pub(crate) fn sec1_compressed(&self) -> [u8; 33] {
        let mut out = [0u8; 33];
        out[0] = if self.y.is_odd() { 0x03 } else { 0x02 };
        out[1..].copy_from_slice(&self.x.to_bytes());
        out
    }

    /// y² = x³ − 3x + b.
    pub(crate) fn is_on_curve(&self) -> bool {
        self.y.square() == curve_rhs(&self.x)
    }

    pub(crate) fn neg(&self) -> Affine<C> {
        Affine {
            x: self.x,
            y: self.y.neg(),
        }
    }

    pub(crate) fn to_jacobian(self) -> Jacobian<C> {
        Jacobian {
            x: self.x,
            y: self.y,
            z: FieldElement::<C>::ONE,
        }
    }
}

/// x³ − 3x + b.
pub(crate) fn curve_rhs<C: Curve>(x: &FieldElement<C>) -> FieldElement<C> {
    let x3 = x.square().mul(x);
    let three_x = x.double().add(x);
    x3.sub(&three_x).add(&FieldElement::<C>::CURVE_B)
}

impl<C: Curve> Jacobian<C> {
    pub(crate) const INFINITY: Self = Self {
        x: FieldElement::<C>::ONE,
        y: FieldElement::<C>::ONE,
        z: FieldElement::<C>::ZERO,
    };

    #[inline(always)]
    pub(crate) fn is_infinity(&self) -> bool {
        self.z.is_zero()
    }

    /// Whether x mod n = c for the finite point self, without inverting Z: x = X/Z² lies in
    /// [0, p) and p < 2n, so x is either c or c + n (the latter only when c + n < p); compare X
    /// with c·Z² and (c + n)·Z². The final comparison of SM2 (c = r − e) and ECDSA (c = r)
    /// verification.
    #[inline]
    pub(crate) fn x_mod_n_equals(&self, c: &Limbs) -> bool {
        let z2 = self.z.square();
        if self.x == FieldElement::<C>::from_int(*c).mul(&z2) {
            return true;
        }
        let (c_plus_n, carry) = limbs::add(c, &C::N.m);
        carry == 0
            && limbs::lt(&c_plus_n, &C::P.m)
            && self.x == FieldElement::<C>::from_int(c_plus_n).mul(&z2)
    }

    pub(crate) fn neg(&self) -> Jacobian<C> {
        Jacobian {
            x: self.x,
            y: self.y.neg(),
            z: self.z,
        }
    }

    /// 2·self for a = −3 (4M + 4S; Z3 = 2·Y·Z, which measured as fast as (Y + Z)² − Y² − Z²
    /// with fewer additions). Infinity (Z = 0) maps to Z = 0; no affine point has y = 0
    /// on these curves (their order is odd), so there is no other exception.
    #[inline(always)]
    pub(crate) fn double(&self) -> Jacobian<C> {
        let delta = self.z.square();
        let gamma = self.y.square();
        let beta = self.x.mul(&gamma);
        let t = self.x.sub(&delta).mul(&self.x.add(&delta));
        let alpha = t.double().add(&t);
        let beta4 = beta.double().double();
        let x3 = alpha.square().sub(&beta4.double());
        let z3 = self.y.mul(&self.z).double();
        let gamma_sq8 = gamma.square().double().double().double();
        let y3 = alpha.mul(&beta4.sub(&x3)).sub(&gamma_sq8);
        Jacobian {
            x: x3,
            y: y3,
            z: z3,
        }
    }

    /// self + q for affine q (7M + 4S), valid when self is not infinity and self ≠ ±q.
    /// Also returns H = U2 − X1 and R = 2(S2 − Y1), which expose the exceptional cases.
    #[inline(always)]
    fn add_affine_unchecked(
        &self,
        q: &Affine<C>,
    ) -> (Jacobian<C>, FieldElement<C>, FieldElement<C>) {
        let z1z1 = self.z.square();
        let u2 = q.x.mul(&z1z1);
        let s2 = q.y.mul(&self.z).mul(&z1z1);
        let h = u2.sub(&self.x);
        let hh = h.square();
        let i = hh.double().double();
        let j = h.mul(&i);
        let r = s2.sub(&self.y).double();
        let v = self.x.mul(&i);
        let x3 = r.square().sub(&j).sub(&v.double());
        let y3 = r.mul(&v.sub(&x3)).sub(&self.y.mul(&j).double());
        let z3 = self.z.add(&h).square().sub(&z1z1).sub(&hh);
        (
            Jacobian {
                x: x3,
                y: y3,
                z: z3,
            },
            h,
            r,
        )
    }

    /// self + q for affine q, any inputs (variable time).
    #[inline(always)]
    pub(crate) fn add_affine_vartime(&self, q: &Affine<C>) -> Jacobian<C> {
        if self.is_infinity() {
            return q.to_jacobian();
        }
        let (sum, h, r) = self.add_affine_unchecked(q);
        if h.is_zero() {
            if r.is_zero() {
                return q.to_jacobian().double();
            }
            return Jacobian::INFINITY;
        }
        sum
    }

    /// self + q, any inputs (variable time; 11M + 5S).
    pub(crate) fn add_vartime(&self, q: &Jacobian<C>) -> Jacobian<C> {
        self.add_cached_vartime(&CachedJacobian::new(q))
    }

    /// self + q with q's Z² and Z³ precomputed (variable time; 10M + 4S with them).
    #[inline(always)]
    pub(crate) fn add_cached_vartime(&self, q: &CachedJacobian<C>) -> Jacobian<C> {
        if self.is_infinity() {
            return q.point;
        }
        if q.point.is_infinity() {
            return *self;
        }
        let z1z1 = self.z.square();
        let u1 = self.x.mul(&q.zz);
        let u2 = q.point.x.mul(&z1z1);
        let s1 = self.y.mul(&q.zzz);
        let s2 = q.point.y.mul(&self.z).mul(&z1z1);
        let h = u2.sub(&u1);
        let r = s2.sub(&s1).double();
        if h.is_zero() {
            if r.is_zero() {
                return self.double();
            }
            return Jacobian::INFINITY;
        }
        let i = h.double().square();
        let j = h.mul(&i);
        let v = u1.mul(&i);
        let x3 = r.square().sub(&j).sub(&v.double());
        let y3 = r.mul(&v.sub(&x3)).sub(&s1.mul(&j).double());
        let z3 = self
            .z
            .add(&q.point.z)
            .square()
            .sub(&z1z1)
            .sub(&q.zz)
            .mul(&h);
        Jacobian {
            x: x3,
            y: y3,
            z: z3,
        }
    }

    /// The affine point, or `None` at infinity. Uses the constant-time inversion.
    #[cfg(test)]
    pub(crate) fn to_affine(self) -> Option<Affine<C>> {
        if self.is_infinity() {
            return None;
        }
        Some(self.to_affine_finite())
    }

    /// The affine point of a point known to be finite, without a branch on Z (a secret point's
    /// Z is secret); meaningless at infinity. Constant time.
    pub(crate) fn to_affine_finite(self) -> Affine<C> {
        let z_inv = self.z.invert();
        let z_inv2 = z_inv.square();
        Affine {
            x: self.x.mul(&z_inv2),
            y: self.y.mul(&z_inv2).mul(&z_inv),
        }
    }

    fn select(mask: u64, a: &Jacobian<C>, b: &Jacobian<C>) -> Jacobian<C> {
        Jacobian {
            x: FieldElement::<C>::select(mask, &a.x, &b.x),
            y: FieldElement::<C>::select(mask, &a.y, &b.y),
            z: FieldElement::<C>::select(mask, &a.z, &b.z),
        }
    }
}

/// A Jacobian point with Z² and Z³ kept, for a table that is added many times.
#[derive(Clone, Copy)]
pub(crate) struct CachedJacobian<C: Curve> {
    point: Jacobian<C>,
    zz: FieldElement<C>,
    zzz: FieldElement<C>,
}

impl<C: Curve> CachedJacobian<C> {
    fn new(point: &Jacobian<C>) -> CachedJacobian<C> {
        let zz = point.z.square();
        CachedJacobian {
            point: *point,
            zz,
            zzz: zz.mul(&point.z),
        }
    }

    fn neg(&self) -> CachedJacobian<C> {
        CachedJacobian {
            point: self.point.neg(),
            zz: self.zz,
            zzz: self.zzz,
        }
    }
}

/// Converts points none of which is infinity to affine with one inversion (Montgomery's trick).
fn batch_to_affine<C: Curve>(points: &[Jacobian<C>]) -> Vec<Affine<C>> {
    let mut prefix = Vec::with_capacity(points.len());
    let mut acc = FieldElement::<C>::ONE;
    for p in points {
        assert!(!p.is_infinity(), "table points are never infinity");
        acc = acc.mul(&p.z);
        prefix.push(acc);
    }
    let mut inv = acc.invert();
    let mut out = vec![
        Affine {
            x: FieldElement::<C>::ZERO,
            y: FieldElement::<C>::ZERO
        };
        points.len()
    ];
    for i in (0..points.len()).rev() {
        // inv = (z_0 ⋯ z_i)⁻¹ here.
        let z_inv = if i == 0 { inv } else { inv.mul(&prefix[i - 1]) };
        inv = inv.mul(&points[i].z);
        let z_inv2 = z_inv.square();
        out[i] = Affine {
            x: points[i].x.mul(&z_inv2),
            y: points[i].y.mul(&z_inv2).mul(&z_inv),
        };
    }
    out
}

/// Window width of the wNAF digits of s in s·G (odd multiples up to 2^(W−1) − 1 in the table).
const G_WINDOW: usize = 10;
/// Window width for t in t·P (the table of P is built per verification).
const P_WINDOW: usize = 5;

/// Odd multiples G, 3G, …, (2^(G_WINDOW−1) − 1)·G in affine form.
fn g_odd_multiples<C: Curve>() -> &'static [Affine<C>] {
    C::g_odd_multiples_cell().get_or_init(|| {
        let count = 1 << (G_WINDOW - 2);
        let g = Affine::<C>::GENERATOR.to_jacobian();
        let g2 = g.double();
        let mut points = Vec::with_capacity(count);
        points.push(g);
        for i in 1..count {
            points.push(points[i - 1].add_vartime(&g2));
        }
        batch_to_affine(&points)
    })
}

/// Signed-digit fixed-base table: COMB[i][j] = (j + 1)·16^i·G for 64 windows, j < 8.
fn comb_table<C: Curve>() -> &'static [[Affine<C>; 8]] {
    C::comb_cell().get_or_init(|| {
        let mut points = Vec::with_capacity(64 * 8);
        let mut base = Affine::<C>::GENERATOR.to_jacobian();
        for _ in 0..64 {
            let mut multiple = base;
            points.push(multiple);
            for _ in 1..8 {
                multiple = multiple.add_vartime(&base);
                points.push(multiple);
            }
            // 16·base = 2·(8·base)
            base = multiple.double();
        }
        let affine = batch_to_affine(&points);
        affine
            .chunks_exact(8)
            .map(|c| c.try_into().expect("chunks of 8"))
            .collect()
    })
}

/// Width-w non-adjacent form: digits odd, |d| < 2^(w−1), any two non-zero digits at least w
/// apart. digit[256] holds a final carry.
fn wnaf(k: &Limbs, w: usize) -> [i32; 257] {
    let bits = |start: usize, count: usize| -> u64 {
        let limb = start / 64;
        let offset = start % 64;
        let mut v = k[limb] >> offset;
        if offset + count > 64 && limb + 1 < 4 {
            v |= k[limb + 1] << (64 - offset);
        }
        v & ((1u64 << count) - 1)
    };
    let mut digits = [0i32; 257];
    let mut carry = 0u64;
    let mut bit = 0;
    while bit < 256 {
        // The pending carry turns a 1 bit into a 0 (carry goes on) and a 0 into a 1.
        if bits(bit, 1) == carry {
            bit += 1;
            continue;
        }
        let now = w.min(256 - bit);
        let word = bits(bit, now) + carry;
        carry = (word >> (w - 1)) & 1;
        digits[bit] = word as i32 - ((carry as i32) << w);
        bit += now;
    }
    digits[256] = carry as i32;
    digits
}

/// s·G + t·P, variable time (all inputs are public in verification).
pub(crate) fn lincomb_vartime<C: Curve>(s: &Limbs, t: &Limbs, p: &Affine<C>) -> Jacobian<C> {
    let g_table = g_odd_multiples::<C>();
    let s_digits = wnaf(s, G_WINDOW);
    let t_digits = wnaf(t, P_WINDOW);

    let pj = p.to_jacobian();
    let p2 = CachedJacobian::new(&pj.double());
    let mut multiple = pj;
    let mut p_table = [CachedJacobian::new(&pj); 1 << (P_WINDOW - 2)];
    for entry in p_table.iter_mut().skip(1) {
        multiple = multiple.add_cached_vartime(&p2);
        *entry = CachedJacobian::new(&multiple);
    }

    let top = (0..257)
        .rev()
        .find(|&i| s_digits[i] != 0 || t_digits[i] != 0);
    let Some(top) = top else {
        return Jacobian::INFINITY;
    };
    let mut acc = Jacobian::INFINITY;
    for i in (0..=top).rev() {
        if !acc.is_infinity() {
            acc = acc.double();
        }
        let d = t_digits[i];
        if d > 0 {
            acc = acc.add_cached_vartime(&p_table[(d / 2) as usize]);
        } else if d < 0 {
            acc = acc.add_cached_vartime(&p_table[(-d / 2) as usize].neg());
        }
        let d = s_digits[i];
        if d > 0 {
            acc = acc.add_affine_vartime(&g_table[(d / 2) as usize]);
        } else if d < 0 {
            acc = acc.add_affine_vartime(&g_table[(-d / 2) as usize].neg());
        }
    }
    acc
}

/// k·G in constant time for a secret k in [1, n−1].
///
/// k is replaced by n − k when it exceeds n/2 (and the result negated back), so it is below
/// 2²⁵⁵ and recodes into exactly 64 signed 4-bit digits in [−7, 8] with no final carry. The sum
/// of the lower windows is smaller in absolute value than 16^i, so adding window i's non-zero
/// multiple is never a doubling or a cancellation: the unchecked mixed addition is exact, and
/// zero digits and the initial infinity are handled by masked selection.
pub(crate) fn mul_base_ct<C: Curve>(k: &Limbs) -> Jacobian<C> {
    // (n − 1)/2 < k  ⇔  use n − k.
    let half = {
        let (h, _) = limbs::sub(&C::N.m, &[1, 0, 0, 0]);
        [
            (h[0] >> 1) | (h[1] << 63),
            (h[1] >> 1) | (h[2] << 63),
            (h[2] >> 1) | (h[3] << 63),
            h[3] >> 1,
        ]
    };
    let negate = limbs::opaque_mask(limbs::sub(&half, k).1.wrapping_neg());
    let k_neg = limbs::sub(&C::N.m, k).0;
    let k = limbs::select(negate, &k_neg, k);

    let mut digits = [0i64; 64];
    let mut carry = 0i64;
    for (i, digit) in digits.iter_mut().enumerate() {
        let nibble = ((k[i / 16] >> ((i % 16) * 4)) & 0xf) as i64;
        let v = nibble + carry;
        carry = (v + 7) >> 4;
        *digit = v - (carry << 4);
    }

    let table = comb_table::<C>();
    let mut acc = Jacobian::INFINITY;
    let mut acc_is_infinity = u64::MAX;
    for (window, &digit) in table.iter().zip(digits.iter()) {
        // |digit| and its sign without branches.
        let sign = limbs::opaque_mask((digit >> 63) as u64); // all ones when negative
        let magnitude = ((digit as u64) ^ sign).wrapping_sub(sign);
        let mut q = Affine {
            x: FieldElement::<C>::ZERO,
            y: FieldElement::<C>::ZERO,
        };
        for (j, entry) in window.iter().enumerate() {
            let hit = limbs::opaque_mask(limbs::zero_mask(&[magnitude ^ (j as u64 + 1), 0, 0, 0]));
            q.x = FieldElement::<C>::select(hit, &entry.x, &q.x);
            q.y = FieldElement::<C>::select(hit, &entry.y, &q.y);
        }
        q.y = FieldElement::<C>::select(sign, &q.y.neg(), &q.y);
        let (sum, _, _) = acc.add_affine_unchecked(&q);
        let nonzero = limbs::opaque_mask(!limbs::zero_mask(&[magnitude, 0, 0, 0]));
        let candidate = Jacobian::select(acc_is_infinity, &q.to_jacobian(), &sum);
        acc = Jacobian::select(nonzero, &candidate, &acc);
        acc_is_infinity &= !nonzero;
    }
    Jacobian::select(negate, &acc.neg(), &acc)
}

#[cfg(test)]
pub(crate) mod tests;
