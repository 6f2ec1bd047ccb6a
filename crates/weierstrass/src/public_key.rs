//! The public-key type of a curve, defined once for SM2 ([`crate::PublicKey`]) and P-256
//! ([`crate::p256::PublicKey`]): the two differ only in the curve, and the curve trait is private,
//! so each is its own concrete type made by [`public_key_type!`] rather than one public generic.

/// Defines `PublicKey` in the calling module for the curve `$curve`: SEC1 and coordinate decoding
/// (through `affine_from_sec1` / `affine_from_coordinates`), the coordinates, both SEC1 encodings,
/// and a `Debug` that prints `$debug_name(` and the compressed encoding in hex.
macro_rules! public_key_type {
    ($(#[$doc:meta])* $curve:ty, $debug_name:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub struct PublicKey {
            point: $crate::point::Affine<$curve>,
        }

        impl core::fmt::Debug for PublicKey {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, concat!($debug_name, "("))?;
                for b in self.to_compressed() {
                    write!(f, "{b:02x}")?;
                }
                write!(f, ")")
            }
        }

        impl PublicKey {
            /// SEC1: `04‖x‖y` (65 bytes) or `02/03‖x` (33 bytes). The single byte `00` (SEC1's
            /// encoding of infinity) is reported as [`KeyError::Infinity`](crate::KeyError::Infinity).
            pub fn from_sec1(bytes: &[u8]) -> Result<PublicKey, $crate::KeyError> {
                Ok(PublicKey {
                    point: $crate::affine_from_sec1(bytes)?,
                })
            }

            /// From big-endian affine coordinates; checks both are below p and the point is on
            /// the curve.
            pub fn from_affine(x: &[u8; 32], y: &[u8; 32]) -> Result<PublicKey, $crate::KeyError> {
                Ok(PublicKey {
                    point: $crate::affine_from_coordinates(x, y)?,
                })
            }

            /// The affine x coordinate, big-endian.
            pub fn x(&self) -> [u8; 32] {
                self.point.x.to_bytes()
            }

            /// The affine y coordinate, big-endian.
            pub fn y(&self) -> [u8; 32] {
                self.point.y.to_bytes()
            }

            /// SEC1 uncompressed: `04‖x‖y`.
            pub fn to_uncompressed(&self) -> [u8; 65] {
                self.point.sec1_uncompressed()
            }

            /// SEC1 compressed: `02/03‖x` by the parity of y.
            pub fn to_compressed(&self) -> [u8; 33] {
                self.point.sec1_compressed()
            }
        }
    };
}
