//! Eight curve points at once in Jacobian coordinates (x = X/Z², y = Y/Z³), for the short
//! Weierstrass curves y² = x³ + ax + b with a = −3 (SM2, P-256) or a = 0 (secp256k1).
//!
//! Lanes follow one instruction stream, so the exceptional cases of the addition formulas are not
//! branches but lane masks: each point carries the lanes where it is the point at infinity, and
//! an addition that meets P + P (the formula's H = R = 0) takes the doubling in those lanes,
//! P + (−P) (H = 0, R ≠ 0) gives infinity, and an infinite operand yields the other one. No
//! affine point of these curves has y = 0 (their orders are odd primes), so doubling has no
//! exception besides infinity, which it maps to itself.

use super::field::{Fe8, Mask};
use super::modulus::{radix52_from_be, LaneModulus, Modulus52};
use chainsig_core::curve::CurveParams;
use std::sync::OnceLock;

/// A curve the lanes serve: its parameters, its two moduli and where its table of G lives.
pub(crate) trait LaneCurve: Copy + 'static {
    type P: LaneModulus;
    type N: LaneModulus;
    const PARAMS: CurveParams;
    /// a = 0 (secp256k1); otherwise a = −3, checked by [`LaneCurve::CHECKED`].
    const A_IS_ZERO: bool;
    /// Stops the build when a is neither 0 nor −3 or the moduli are not the curve's.
    const CHECKED: () = check_params(&Self::PARAMS, Self::A_IS_ZERO, Self::P::M, Self::N::M);
    /// Storage for the lazily built fixed-base table of G ([`super::g_table`]).
    fn g_table_cell() -> &'static OnceLock<Vec<u64>>;
}

const fn check_params(c: &CurveParams, a_is_zero: bool, p: Modulus52, n: Modulus52) {
    let pm = Modulus52::new(&c.p);
    let nm = Modulus52::new(&c.n);
    let mut i = 0;
    while i < 5 {
        assert!(
            pm.m[i] == p.m[i] && nm.m[i] == n.m[i],
            "moduli of another curve"
        );
        i += 1;
    }
    let mut i = 0;
    while i < 32 {
        let want = if a_is_zero {
            0
        } else if i == 31 {
            c.p[31].wrapping_sub(3)
        } else {
            c.p[i]
        };
        assert!(c.a[i] == want, "a must be 0 or −3 as declared");
        i += 1;
    }
}

/// An element of the curve's field.
pub(crate) type Fp<C> = Fe8<<C as LaneCurve>::P>;

/// Eight points; lanes in `inf` are the point at infinity whatever their coordinates.
#[derive(Clone, Copy)]
pub(crate) struct Jac8<C: LaneCurve> {
    pub(crate) x: Fp<C>,
    pub(crate) y: Fp<C>,
    pub(crate) z: Fp<C>,
    pub(crate) inf: Mask,
}

/// A point with Z² and Z³ kept, for table entries added many times.
#[derive(Clone, Copy)]
pub(crate) struct Cached8<C: LaneCurve> {
    pub(crate) point: Jac8<C>,
    pub(crate) zz: Fp<C>,
    pub(crate) zzz: Fp<C>,
}

impl<C: LaneCurve> Jac8<C> {
    /// Infinity in every lane.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn infinity() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = C::CHECKED;
        Jac8 {
            x: Fp::<C>::one(),
            y: Fp::<C>::one(),
            z: Fp::<C>::zero(),
            inf: 0xff,
        }
    }

    /// From affine coordinates in Montgomery form (no lane infinite).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn from_affine(x: &Fp<C>, y: &Fp<C>) -> Self {
        Jac8 {
            x: *x,
            y: *y,
            z: Fp::<C>::one(),
            inf: 0,
        }
    }

    /// Lane l from `a` where bit l of `mask` is set, else from `self`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn select(&self, mask: Mask, a: &Self) -> Self {
        Jac8 {
            x: self.x.select(mask, &a.x),
            y: self.y.select(mask, &a.y),
            z: self.z.select(mask, &a.z),
            inf: (self.inf & !mask) | (a.inf & mask),
        }
    }

    /// 2·self: M = 3X² + aZ⁴, S = 4XY², X₃ = M² − 2S, Y₃ = M(S − X₃) − 8Y⁴, Z₃ = 2YZ; for
    /// a = −3, M = 3(X − Z²)(X + Z²) (4M + 4S), for a = 0, M = 3X² (3M + 4S).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn double(&self) -> Self {
        let yy = self.y.square();
        let s = self.x.mul(&yy).double().double();
        let t = if C::A_IS_ZERO {
            self.x.square()
        } else {
            let zz = self.z.square();
            self.x.sub(&zz).mul(&self.x.add(&zz))
        };
        let m = t.double().add(&t);
        let x3 = m.square().sub(&s.double());
        let yyyy8 = yy.square().double().double().double();
        let y3 = m.mul(&s.sub(&x3)).sub(&yyyy8);
        let z3 = self.y.mul(&self.z).double();
        Jac8 {
            x: x3,
            y: y3,
            z: z3,
            inf: self.inf,
        }
    }

    /// self + q in the lanes of `active` (the others keep self), every case exact.
    /// The general formula: U₁ = X₁Z₂², U₂ = X₂Z₁², S₁ = Y₁Z₂³, S₂ = Y₂Z₁³, H = U₂ − U₁,
    /// R = 2(S₂ − S₁), I = (2H)², J = HI, V = U₁I, X₃ = R² − J − 2V, Y₃ = R(V − X₃) − 2S₁J,
    /// Z₃ = 2Z₁Z₂H.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn add_cached(&self, q: &Cached8<C>, active: Mask) -> Self {
        let z1z1 = self.z.square();
        let u1 = self.x.mul(&q.zz);
        let u2 = q.point.x.mul(&z1z1);
        let s1 = self.y.mul(&q.zzz);
        let s2 = q.point.y.mul(&self.z.mul(&z1z1));
        let h = u2.sub(&u1);
        let r = s2.sub(&s1).double();
        let z3 = self.z.mul(&q.point.z).mul(&h).double();
        self.finish_add(&q.point, u1, s1, h, r, z3, active)
    }

    /// self + (x, y) for an affine point (infinite in no lane) in the lanes of `active`:
    /// the formula above with Z₂ = 1.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn add_affine(&self, x: &Fp<C>, y: &Fp<C>, active: Mask) -> Self {
        let z1z1 = self.z.square();
        let u2 = x.mul(&z1z1);
        let s2 = y.mul(&self.z.mul(&z1z1));
        let h = u2.sub(&self.x);
        let r = s2.sub(&self.y).double();
        let z3 = self.z.mul(&h).double();
        let q = Jac8::from_affine(x, y);
        self.finish_add(&q, self.x, self.y, h, r, z3, active)
    }

    /// The common tail of both additions, with the exceptional lanes patched by masks.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn finish_add(
        &self,
        q: &Jac8<C>,
        u1: Fp<C>,
        s1: Fp<C>,
        h: Fp<C>,
        r: Fp<C>,
        z3: Fp<C>,
        active: Mask,
    ) -> Self {
        let i = h.double().square();
        let j = h.mul(&i);
        let v = u1.mul(&i);
        let x3 = r.square().sub(&j).sub(&v.double());
        let y3 = r.mul(&v.sub(&x3)).sub(&s1.mul(&j).double());
        let finite = !self.inf & !q.inf;
        let h_zero = h.is_zero();
        let r_zero = r.is_zero();
        let mut sum = Jac8 {
            x: x3,
            y: y3,
            z: z3,
            // P + (−P); Z₃ = 0 there already, the mask makes it explicit.
            inf: finite & h_zero & !r_zero,
        };
        let doubling = finite & h_zero & r_zero & active;
        if doubling != 0 {
            sum = sum.select(doubling, &self.double());
        }
        sum = sum.select(self.inf & !q.inf, q);
        sum = sum.select(q.inf, self);
        self.select(active, &sum)
    }
}

impl<C: LaneCurve> Cached8<C> {
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn new(point: &Jac8<C>) -> Self {
        let zz = point.z.square();
        Cached8 {
            point: *point,
            zz,
            zzz: zz.mul(&point.z),
        }
    }

    /// −self in the lanes of `mask`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn negate_where(&self, mask: Mask) -> Self {
        let mut out = *self;
        out.point.y = self.point.y.select(mask, &self.point.y.neg());
        out
    }

    /// Lane l from `a` where bit l of `mask` is set, else from `self`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(crate) fn select(&self, mask: Mask, a: &Self) -> Self {
        Cached8 {
            point: self.point.select(mask, &a.point),
            zz: self.zz.select(mask, &a.zz),
            zzz: self.zzz.select(mask, &a.zzz),
        }
    }
}

/// x³ + ax + b, the curve equation's right side, for x in Montgomery form (the result is too).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn curve_rhs<C: LaneCurve>(x: &Fp<C>) -> Fp<C> {
    let b = Fp::<C>::constant(&radix52_from_be(&C::PARAMS.b)).to_mont();
    let rhs = x.square().mul(x).add(&b);
    if C::A_IS_ZERO {
        rhs
    } else {
        rhs.sub(&x.double().add(x))
    }
}

/// The lanes where (x, y), in Montgomery form, satisfies y² = x³ + ax + b.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn on_curve<C: LaneCurve>(x: &Fp<C>, y: &Fp<C>) -> Mask {
    y.square().equals(&curve_rhs::<C>(x))
}
