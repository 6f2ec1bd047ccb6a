//! The three curves in lanes: each names its moduli and the shape of a; every constant comes from
//! [`chainsig_core::curve`].

use super::modulus::{Sm2N, Sm2P, K256N, K256P, P256N, P256P};
use super::point::LaneCurve;
use chainsig_core::curve::CurveParams;
use std::sync::OnceLock;

macro_rules! lane_curve {
    ($(#[$doc:meta])* $name:ident, $p:ty, $n:ty, $params:expr, a_is_zero: $a0:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) struct $name;
        impl LaneCurve for $name {
            type P = $p;
            type N = $n;
            const PARAMS: CurveParams = $params;
            const A_IS_ZERO: bool = $a0;
            fn g_table_cell() -> &'static OnceLock<Vec<u64>> {
                static CELL: OnceLock<Vec<u64>> = OnceLock::new();
                &CELL
            }
        }
    };
}

lane_curve!(
    /// sm2p256v1 (a = −3).
    Sm2Curve,
    Sm2P,
    Sm2N,
    chainsig_core::curve::SM2,
    a_is_zero: false
);
lane_curve!(
    /// NIST P-256 (a = −3).
    P256Curve,
    P256P,
    P256N,
    chainsig_core::curve::P256,
    a_is_zero: false
);
lane_curve!(
    /// secp256k1 (a = 0).
    K256Curve,
    K256P,
    K256N,
    chainsig_core::curve::SECP256K1,
    a_is_zero: true
);
