//! Exhaustive test of the kernels' generic point and scalar code on curves whose group has a small
//! prime order q (`chainsig_core::curve::small_order`), in the manner of libsecp256k1's
//! `tests_exhaustive.c`: every doubling and every sum of two points in each addition formula,
//! every multiple k·P by the fixed-base tables and by the signed window, s·G + t·P for every s and
//! t in each mode, and the SM2 and ECDSA verification equations (and ECDSA key recovery) for every
//! key and nonce, each checked against a reference built here by repeated affine addition with
//! `num-bigint`.
//!
//! The curves keep the real field and a (−3 over SM2's and P-256's primes, 0 over secp256k1's) and
//! change only b. The kernels' doublings and additions never use b (kernels/point.cuh says so in
//! its contract); b enters only key decompression, which is checked here too. The host builds
//! (kernels/host_exhaustive.cpp, one per curve, see build.rs) use the kernels' own sources with
//! smaller fixed-base windows, so that no table entry is infinity.
//!
//! What a group of order q cannot reach, and where it is covered instead:
//! - The field arithmetic is the real one (same p), so it is not exhaustive here; host_kernel.rs
//!   checks it against a bit-serial reference, the reduction on every carry path.
//! - The kernels' n is a 256-bit multiple N = q·c of q (see `small_order`), not prime. Scalar
//!   results are checked exactly mod N and the group sees them mod q; the scalar code's bounds for
//!   the real prime n (and Euclid on any nonzero value) are checked in host_ecdsa.rs.
//! - The production fixed-base widths (13 and 9 bits) need an order above 2^12, so here G's table
//!   has 5-bit windows (3-bit for q = 13) and a key's 3-bit ones: the same template, mul_fixed<W>.
//! - secp256k1's q = 13 takes the 3-bit signed window (the 4-bit window's table of eight odd
//!   multiples would reach 13·P); the a = −3 curves run the one-thread default, 4 bits.
//! - The lane-pair and quad forms of the products (lanes.cuh) are the same products exchanged by
//!   shuffles; they run in host_kernel.rs's lane emulation. The quads' modified-Jacobian walk runs
//!   here through `mul_window(modified = 1)`.
//! - The comparison's rare branch x(R) ≥ n is not reached (n is within 2^16 of p here);
//!   host_kernel.rs and the CPU crate build points with x in [n, p) for it.

use chainsig_core::curve::small_order::{SmallOrderCurve, P256_FIELD, SECP256K1_FIELD, SM2_FIELD};
use chainsig_cuda::codegen::{be_from_words, words_from_be, Words};
use num_bigint::BigUint;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::collections::HashMap;

/// The C ABI of one build of kernels/host_exhaustive.cpp, under its prefix.
macro_rules! tiny_ffi {
    ($module:ident, $prefix:literal) => {
        mod $module {
            extern "C" {
                #[link_name = concat!($prefix, "dbl")]
                pub fn dbl(r: *mut u32);
                #[link_name = concat!($prefix, "dbl_w")]
                pub fn dbl_w(r: *mut u32, w: *mut u32);
                #[link_name = concat!($prefix, "add_affine")]
                pub fn add_affine(r: *mut u32, q: *const u32, q_inf: i32);
                #[link_name = concat!($prefix, "add_jac")]
                pub fn add_jac(r: *mut u32, q: *const u32);
                #[link_name = concat!($prefix, "add_coz")]
                pub fn add_coz(
                    with_w: i32,
                    r: *mut u32,
                    w: *mut u32,
                    q: *const u32,
                    lam: *const u32,
                );
                #[link_name = concat!($prefix, "table_words")]
                pub fn table_words(key: i32) -> u64;
                #[link_name = concat!($prefix, "build_table")]
                pub fn build_table(key: i32, b: *const u32, out: *mut u32);
                #[link_name = concat!($prefix, "mul_fixed")]
                pub fn mul_fixed(key: i32, k: *const u32, tab: *const u32, r: *mut u32);
                #[link_name = concat!($prefix, "mul_window")]
                pub fn mul_window(modified: i32, t: *const u32, p: *const u32, r: *mut u32);
                #[link_name = concat!($prefix, "double_mul")]
                pub fn double_mul(
                    mode: i32,
                    inv: i32,
                    s: *const u32,
                    t: *const u32,
                    p: *const u32,
                    gtab: *const u32,
                    r: *mut u32,
                ) -> i32;
                #[link_name = concat!($prefix, "verify")]
                pub fn verify(
                    mode: i32,
                    inv: i32,
                    compress: i32,
                    e: *const u32,
                    r: *const u32,
                    s: *const u32,
                    px: *const u32,
                    py: *const u32,
                    parity: u32,
                    gtab: *const u32,
                ) -> i32;
                #[link_name = concat!($prefix, "verify_signed")]
                pub fn verify_signed(
                    e: *const u32,
                    r: *const u32,
                    s: *const u32,
                    gtab: *const u32,
                    ktab: *const u32,
                ) -> i32;
                #[link_name = concat!($prefix, "verify_ecdsa")]
                pub fn verify_ecdsa(
                    low_s: i32,
                    e: *const u32,
                    r: *const u32,
                    s: *const u32,
                    px: *const u32,
                    py: *const u32,
                    gtab: *const u32,
                ) -> i32;
                #[link_name = concat!($prefix, "recover_ecdsa")]
                pub fn recover_ecdsa(
                    e: *const u32,
                    r: *const u32,
                    s: *const u32,
                    id: u32,
                    gtab: *const u32,
                    x: *mut u32,
                    y: *mut u32,
                ) -> i32;
                #[link_name = concat!($prefix, "scalar_op")]
                pub fn scalar_op(op: i32, a: *const u32, b: *const u32, r: *mut u32) -> i32;
                #[link_name = concat!($prefix, "decompress")]
                pub fn decompress(x: *const u32, parity: u32, y: *mut u32) -> i32;
            }
        }
    };
}
tiny_ffi!(sm2_ffi, "cs_tiny_sm2_");
tiny_ffi!(p256_ffi, "cs_tiny_p256_");
tiny_ffi!(k256_ffi, "cs_tiny_k256_");

/// A point as the kernels take it: Jacobian (X, Y, Z) in 24 words.
type Jac = [u32; 24];
/// An affine point: x, then y.
type Aff = [u32; 16];

/// Which build of kernels/host_exhaustive.cpp a curve runs on.
#[derive(Clone, Copy)]
enum Build {
    Sm2,
    P256,
    K256,
}

/// Calls the routine of the curve's build, e.g. `kern!(t, dbl(r.as_mut_ptr()))` (unsafe: the
/// pointers must hold the word counts the C ABI names).
macro_rules! kern {
    ($t:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $t.build {
            Build::Sm2 => sm2_ffi::$f($($arg),*),
            Build::P256 => p256_ffi::$f($($arg),*),
            Build::K256 => k256_ffi::$f($($arg),*),
        }
    };
}

// The kernels' mode and inversion codes (kernels/sm2.cuh, kernels/field.cuh).
const MODE_PAPER: i32 = 0;
const MODE_SEPARATE: i32 = 1;
const MODE_FAST: i32 = 2;

fn big(w: &Words) -> BigUint {
    BigUint::from_bytes_be(&be_from_words(w))
}

fn words(v: &BigUint) -> Words {
    let b = v.to_bytes_be();
    assert!(b.len() <= 32, "a value above 2^256");
    let mut bytes = [0u8; 32];
    bytes[32 - b.len()..].copy_from_slice(&b);
    words_from_be(&bytes)
}

fn small(v: u32) -> Words {
    [v, 0, 0, 0, 0, 0, 0, 0]
}

/// One small-order curve: the kernels' build for it and the reference, the multiples k·G for
/// k < q formed by repeated affine addition.
struct Tiny {
    name: &'static str,
    build: Build,
    q: u32,
    p: BigUint,
    a: BigUint,
    b: BigUint,
    /// The kernels' n: a 256-bit multiple of q.
    n: BigUint,
    /// multiples[k] = k·G, None for infinity (k = 0).
    multiples: Vec<Option<(BigUint, BigUint)>>,
    /// k of each finite multiple, by its affine coordinates.
    index: HashMap<(Words, Words), u32>,
    gtab: Vec<u32>,
}

impl Tiny {
    fn new(curve: &SmallOrderCurve, build: Build) -> Tiny {
        let c = &curve.params;
        let p = BigUint::from_bytes_be(&c.p);
        let mut t = Tiny {
            name: c.name,
            build,
            q: curve.q,
            a: BigUint::from_bytes_be(&c.a),
            b: BigUint::from_bytes_be(&c.b),
            n: BigUint::from_bytes_be(&c.n),
            multiples: vec![None],
            index: HashMap::new(),
            gtab: Vec::new(),
            p,
        };
        let g = (BigUint::from_bytes_be(&c.gx), BigUint::from_bytes_be(&c.gy));
        assert!(t.on_curve(&g), "{}: G is not on the curve", t.name);
        for k in 1..t.q {
            let next = t.add(&t.multiples[k as usize - 1], &Some(g.clone()));
            let point = next.unwrap_or_else(|| panic!("{}: {k}·G is infinity", t.name));
            t.index.insert((words(&point.0), words(&point.1)), k);
            t.multiples.push(Some(point));
        }
        assert!(
            t.add(&t.multiples[t.q as usize - 1], &Some(g)).is_none(),
            "{}: q·G is not infinity",
            t.name
        );
        assert_eq!(
            t.index.len(),
            t.q as usize - 1,
            "{}: repeated multiples",
            t.name
        );
        t.gtab = t.table(0, 1);
        t
    }

    fn fp(&self, v: BigUint) -> BigUint {
        v % &self.p
    }

    fn fsub(&self, a: &BigUint, b: &BigUint) -> BigUint {
        self.fp(a + &self.p - b)
    }

    fn finv(&self, a: &BigUint) -> BigUint {
        a.modpow(&(&self.p - 2u32), &self.p)
    }

    fn on_curve(&self, (x, y): &(BigUint, BigUint)) -> bool {
        self.fp(y * y) == self.fp(x * x * x + &self.a * x + &self.b)
    }

    /// The affine group law, the reference for everything below.
    fn add(
        &self,
        p1: &Option<(BigUint, BigUint)>,
        p2: &Option<(BigUint, BigUint)>,
    ) -> Option<(BigUint, BigUint)> {
        let (Some((x1, y1)), Some((x2, y2))) = (p1, p2) else {
            return p1.clone().or_else(|| p2.clone());
        };
        let lambda = if x1 == x2 {
            if self.fp(y1 + y2) == BigUint::ZERO {
                return None;
            }
            let num = self.fp(x1 * x1 * 3u32 + &self.a);
            self.fp(num * self.finv(&self.fp(y1 * 2u32)))
        } else {
            self.fp(self.fsub(y2, y1) * self.finv(&self.fsub(x2, x1)))
        };
        let x3 = self.fsub(&self.fsub(&self.fp(&lambda * &lambda), x1), x2);
        let y3 = self.fsub(&self.fp(&lambda * self.fsub(x1, &x3)), y1);
        Some((x3, y3))
    }

    fn point(&self, k: u32) -> &(BigUint, BigUint) {
        self.multiples[(k % self.q) as usize]
            .as_ref()
            .expect("a finite multiple")
    }

    fn affine(&self, k: u32) -> Aff {
        let (x, y) = self.point(k);
        let mut a = [0u32; 16];
        a[..8].copy_from_slice(&words(x));
        a[8..].copy_from_slice(&words(y));
        a
    }

    /// k·G in Jacobian coordinates on Z = lam (lam ≠ 0), or infinity with junk X, Y for k = 0
    /// mod q (any Z = 0 is infinity).
    fn jacobian(&self, k: u32, lam: &BigUint) -> Jac {
        let mut j = [0u32; 24];
        match &self.multiples[(k % self.q) as usize] {
            None => {
                j[..8].copy_from_slice(&words(&self.fp(lam * 3u32)));
                j[8..16].copy_from_slice(&words(&self.fp(lam * 5u32)));
            }
            Some((x, y)) => {
                let l2 = self.fp(lam * lam);
                j[..8].copy_from_slice(&words(&self.fp(x * &l2)));
                j[8..16].copy_from_slice(&words(&self.fp(y * &l2 * lam)));
                j[16..].copy_from_slice(&words(lam));
            }
        }
        j
    }

    /// a·Z⁴ of a Jacobian point (the W of the modified coordinates).
    fn w_of(&self, j: &Jac) -> Words {
        let z = big(j[16..].try_into().expect("8 words"));
        let z2 = self.fp(&z * &z);
        words(&self.fp(&self.a * &z2 * &z2))
    }

    /// Whether the kernels' Jacobian point j is k·G, without inverting its Z.
    fn is(&self, j: &Jac, k: u32) -> bool {
        let z = big(j[16..].try_into().expect("8 words"));
        match &self.multiples[(k % self.q) as usize] {
            None => z == BigUint::ZERO,
            Some((x, y)) => {
                let x_j = big(j[..8].try_into().expect("8 words"));
                let y_j = big(j[8..16].try_into().expect("8 words"));
                let z2 = self.fp(&z * &z);
                z != BigUint::ZERO
                    && x_j < self.p
                    && y_j < self.p
                    && z < self.p
                    && x_j == self.fp(x * &z2)
                    && y_j == self.fp(y * &z2 * &z)
            }
        }
    }

    /// k of the kernels' result, for the failure message.
    fn which(&self, j: &Jac) -> String {
        (0..self.q)
            .find(|&k| self.is(j, k))
            .map_or("no multiple of G".into(), |k| format!("{k}·G"))
    }

    /// A deterministic nonzero Z < p for the case (i, j).
    fn lam(&self, i: u32, j: u32) -> BigUint {
        let mut rng = ChaCha20Rng::seed_from_u64(u64::from(i) << 32 | u64::from(j));
        let mut w = [0u32; 8];
        for x in w.iter_mut() {
            *x = rng.next_u32();
        }
        big(&w) % (&self.p - 1u32) + 1u32
    }

    /// The fixed-base table (G's for key = 0, else a key's) of k·G, checked entry by entry.
    fn table(&self, key: i32, k: u32) -> Vec<u32> {
        // SAFETY: table_words only reads its argument.
        let len = unsafe { kern!(self, table_words(key)) } as usize;
        let mut tab = vec![0u32; len];
        // SAFETY: a 16-word point and a table of the size the build reports.
        unsafe {
            kern!(
                self,
                build_table(key, self.affine(k).as_ptr(), tab.as_mut_ptr())
            )
        };
        // Entry (j, m) at j·2^(W−1) + m − 1 is m·2^(W j)·B (kernels/ecmult.cuh): W from the size.
        let entries = len / 16;
        let width = (2..=13u32)
            .find(|w| 256u32.div_ceil(*w) << (w - 1) == entries as u32)
            .expect("a table width");
        let half = 1u32 << (width - 1);
        for (e, entry) in tab.chunks_exact(16).enumerate() {
            let (j, m) = (e as u32 / half, e as u32 % half + 1);
            let mult = BigUint::from(m) * (BigUint::from(1u32) << (width * j)) * k;
            let mult = (mult % self.q)
                .to_u32_digits()
                .first()
                .copied()
                .unwrap_or(0);
            assert_eq!(
                entry,
                &self.affine(mult)[..],
                "{}: table entry {e} of {k}·G",
                self.name
            );
        }
        tab
    }

    /// Representatives of the residue k mod q: k itself, k + q (the other parity), and the
    /// largest one not above `top`.
    fn reps(&self, k: u32, top: &BigUint) -> [Words; 3] {
        let q = BigUint::from(self.q);
        let k_big = BigUint::from(k);
        let high = &k_big + (top - &k_big) / &q * &q;
        [small(k), small(k + self.q), words(&high)]
    }
}

fn curves() -> &'static [Tiny] {
    static CURVES: std::sync::OnceLock<Vec<Tiny>> = std::sync::OnceLock::new();
    CURVES.get_or_init(|| {
        vec![
            Tiny::new(&SM2_FIELD, Build::Sm2),
            Tiny::new(&P256_FIELD, Build::P256),
            Tiny::new(&SECP256K1_FIELD, Build::K256),
        ]
    })
}

fn two_256_minus_1() -> BigUint {
    (BigUint::from(1u32) << 256) - 1u32
}

/// Modular inverse mod the prime q.
fn inv_q(a: u32, q: u32) -> u32 {
    BigUint::from(a)
        .modpow(&BigUint::from(q - 2), &BigUint::from(q))
        .to_u32_digits()
        .first()
        .copied()
        .expect("a nonzero value")
}

fn mod_q(v: &BigUint, q: u32) -> u32 {
    (v % q).to_u32_digits().first().copied().unwrap_or(0)
}

impl Tiny {
    /// The SM2 verification equation by the reference: r, s in [1, n), t = r + s mod n ≠ 0,
    /// R = s G + t (d G) ≠ ∞, (e + x(R)) mod n = r.
    fn sm2_valid(&self, e: &BigUint, r: &BigUint, s: &BigUint, d: u32) -> bool {
        let zero = BigUint::ZERO;
        if *r == zero || *s == zero || *r >= self.n || *s >= self.n {
            return false;
        }
        let t = (r + s) % &self.n;
        if t == zero {
            return false;
        }
        let k = (mod_q(s, self.q) + mod_q(&t, self.q) * d) % self.q;
        k != 0 && (e % &self.n + &self.point(k).0) % &self.n == *r
    }

    /// The ECDSA verification equation by the reference: r, s in [1, n) (s ≤ n/2 for low_s),
    /// R = (e/s) G + (r/s)(d G) ≠ ∞ (mod q), x(R) mod n = r.
    fn ecdsa_valid(&self, low_s: bool, e: u32, r: &BigUint, s: u32, d: u32) -> bool {
        let (q, zero) = (self.q, BigUint::ZERO);
        if *r == zero || *r >= self.n || s == 0 || (low_s && BigUint::from(s) > (&self.n >> 1)) {
            return false;
        }
        let w = inv_q(s, q);
        let k = (e * w % q + mod_q(r, q) * w % q * d) % q;
        k != 0 && &self.point(k).0 % &self.n == *r
    }
}

// The checks, by layer: the group law and the multiplications, then the verifications and the
// scalars.
mod group;
mod verify;
