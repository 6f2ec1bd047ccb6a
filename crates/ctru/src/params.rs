//! The three CTRU-Prime parameter sets, in one place.
//!
//! Everything else (sizes, sampler, NTT tables, reduction constants) is derived from a [`Params`], so a
//! later GPU backend can take the same struct and be checked against this CPU code.

use crate::Error;

/// How the fast multiplier splits `x^N - 1` over the NTT prime (the spec's §9 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NttPlan {
    /// Transform length N ≥ 2n − 1 (the product is taken in Z_Q[x]/(x^N − 1) without wrap-around).
    pub len: usize,
    /// The NTT prime Q (Q ≡ 1 mod the number of leaves).
    pub prime: u32,
    /// Radices of the forward layers, outermost first. Their product is the number of leaves.
    pub radices: &'static [usize],
}

impl NttPlan {
    /// Number of leaf rings `Z_Q[x]/(x^b − ζ)`: the product of the radices.
    pub const fn leaves(&self) -> usize {
        let mut m = 1;
        let mut i = 0;
        while i < self.radices.len() {
            m *= self.radices[i];
            i += 1;
        }
        m
    }

    /// Degree b of each leaf ring: N / leaves.
    pub const fn leaf_len(&self) -> usize {
        self.len / self.leaves()
    }
}

/// One CTRU-Prime parameter set (spec §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Ring degree n (prime); the ring is Z_q[x]/(x^n − x − 1).
    pub n: usize,
    /// Public-key modulus q (prime).
    pub q: i32,
    /// Ciphertext modulus q2 (a power of two).
    pub q2: i32,
    /// log2 q2: bits per ciphertext coefficient.
    pub log2_q2: u32,
    /// Centered-binomial parameter η: f′, g, r ∈ [−η, η].
    pub eta: i32,
    /// Public-key length (the radix encoding's output length).
    pub pk_bytes: usize,
    /// The fast multiplier's transform.
    pub ntt: NttPlan,
}

/// Bytes of the public key that are hashed (spec §11.6): a fixed constant for all sets.
pub const HASH_PREFIX_BYTES: usize = 33;
/// Shared-secret length.
pub const SS_BYTES: usize = 32;
/// Length of the implicit-rejection secret z and of the randomness calls.
pub const SEED_BYTES: usize = 32;

impl Params {
    /// BOUND = 2η + 1: the offset of the secret-key nibbles, and the largest |f| coefficient.
    pub const fn bound(&self) -> i32 {
        2 * self.eta + 1
    }
    /// C = ⌈2ηn/8⌉: sampler input bytes per polynomial.
    pub const fn coin_bytes(&self) -> usize {
        (2 * self.eta as usize * self.n).div_ceil(8)
    }
    /// MSG = ⌊n/16⌋: message bytes.
    pub const fn msg_bytes(&self) -> usize {
        self.n / 16
    }
    /// S = ⌈4n/8⌉: packed PKE secret key (4 bits per coefficient).
    pub const fn sk_pke_bytes(&self) -> usize {
        (4 * self.n).div_ceil(8)
    }
    /// Ciphertext length ⌈n·log2 q2 / 8⌉.
    pub const fn ct_bytes(&self) -> usize {
        (self.n * self.log2_q2 as usize).div_ceil(8)
    }
    /// KEM secret key: sk_pke ‖ pk ‖ z.
    pub const fn sk_bytes(&self) -> usize {
        self.sk_pke_bytes() + self.pk_bytes + SEED_BYTES
    }
    /// Smallest and largest coefficient that unpacking any secret key can give: BOUND − 15 … BOUND.
    pub const fn unpacked_f_range(&self) -> (i32, i32) {
        (self.bound() - 15, self.bound())
    }
}

/// n = 653: q = 4621, q2 = 2048, η = 3.
pub const CTRU_653: Params = Params {
    n: 653,
    q: 4621,
    q2: 2048,
    log2_q2: 11,
    eta: 3,
    pk_bytes: 994,
    ntt: NttPlan {
        len: 1344,
        prime: (1 << 24) - 63,
        radices: &[2, 2, 2, 2, 2, 3, 2],
    },
};

/// n = 761: q = 4591, q2 = 1024, η = 2.
pub const CTRU_761: Params = Params {
    n: 761,
    q: 4591,
    q2: 1024,
    log2_q2: 10,
    eta: 2,
    pk_bytes: 1158,
    ntt: NttPlan {
        len: 1536,
        prime: (1 << 25) - (1 << 12) + 1,
        radices: &[2, 2, 2, 2, 2, 2, 2, 2, 2],
    },
};

/// n = 1277: q = 7879, q2 = 1024, η = 2.
pub const CTRU_1277: Params = Params {
    n: 1277,
    q: 7879,
    q2: 1024,
    log2_q2: 10,
    eta: 2,
    pk_bytes: 2067,
    ntt: NttPlan {
        len: 2560,
        prime: (1 << 25) - (1 << 12) + 1,
        radices: &[2, 2, 2, 2, 2, 2, 2, 2, 2],
    },
};

/// A parameter set by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamSet {
    /// CTRU-Prime-653.
    Ctru653,
    /// CTRU-Prime-761.
    Ctru761,
    /// CTRU-Prime-1277.
    Ctru1277,
}

impl ParamSet {
    /// All three, smallest first.
    pub const ALL: [ParamSet; 3] = [ParamSet::Ctru653, ParamSet::Ctru761, ParamSet::Ctru1277];

    /// The parameters.
    pub const fn params(self) -> &'static Params {
        match self {
            ParamSet::Ctru653 => &CTRU_653,
            ParamSet::Ctru761 => &CTRU_761,
            ParamSet::Ctru1277 => &CTRU_1277,
        }
    }

    /// The set with ring degree n.
    pub fn from_n(n: usize) -> Result<Self, Error> {
        match n {
            653 => Ok(ParamSet::Ctru653),
            761 => Ok(ParamSet::Ctru761),
            1277 => Ok(ParamSet::Ctru1277),
            other => Err(Error::UnknownParams(other.to_string())),
        }
    }

    pub(crate) const fn index(self) -> usize {
        match self {
            ParamSet::Ctru653 => 0,
            ParamSet::Ctru761 => 1,
            ParamSet::Ctru1277 => 2,
        }
    }
}

impl std::str::FromStr for ParamSet {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let digits = s
            .trim()
            .trim_start_matches("ctru")
            .trim_start_matches("prime")
            .trim_start_matches('-');
        match digits.parse::<usize>() {
            Ok(n) => ParamSet::from_n(n),
            Err(_) => Err(Error::UnknownParams(s.to_string())),
        }
    }
}

impl std::fmt::Display for ParamSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CTRU-Prime-{}", self.params().n)
    }
}
