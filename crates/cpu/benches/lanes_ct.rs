//! A dudect-style constant-time test of the lane signer (Reparaz, Balasch and Verbauwhede, "Dude,
//! is my code constant time?", DATE 2017): two classes of secret input, "fixed" (one key, or one
//! digit pattern, every time) and "random" (fresh every time), interleaved in a random order; each
//! measurement is the time stamp counter around one eight-lane call; Welch's t-statistic between
//! the classes, on all measurements and on those below several percentiles (dudect's cropping,
//! which removes the long tail of interrupts from a shared machine). |t| above 4.5 is evidence of
//! a timing difference; below it over millions of measurements, none was found.
//!
//! Two targets:
//! - `signer`: `lanes::sign_secp256k1` on eight keys of the class with one fixed digest (RFC 6979
//!   nonce, comb, inversions, s, low-s, recovery id: the whole public call);
//! - `sm2` (on request): `lanes::sign_sm2_with_nonces`, a fixed key and nonce in all lanes
//!   against fresh ones, one fixed digest;
//! - `lookup`: the signing comb's table scans alone for its 43 windows of digits of the class
//!   (`lanes::timing::comb_lookups`).
//!
//! And a positive control, `control`, which shows the harness can see a leak: a deliberately
//! variable-time lookup written here (a branch on each digit being zero, and an index from the
//! digit into a table of the comb's size), under the same classes.
//!
//! `cargo bench -p chainsig-cpu --bench lanes_ct -- [signer|lookup|sm2|control] [measurements]`
//! (signer and lookup, 10⁶ each, by default). Exits with status 1 when some |t| reaches 4.5. Inputs are made before a
//! batch is timed and both classes' inputs sit in the same arrays, so the classes differ only in
//! the secret values.

use chainsig_cpu::lanes::timing::{COMB_MAX_DIGIT, COMB_WINDOWS};
use chainsig_cpu::lanes::{self, LANES};
use core::arch::x86_64::{_mm_lfence, _rdtsc};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use secp256k1::SecretKey;

/// Welford's running mean and variance of one class.
#[derive(Clone, Copy, Default)]
struct Moments {
    n: f64,
    mean: f64,
    m2: f64,
}

impl Moments {
    fn push(&mut self, x: f64) {
        self.n += 1.0;
        let delta = x - self.mean;
        self.mean += delta / self.n;
        self.m2 += delta * (x - self.mean);
    }

    fn variance(&self) -> f64 {
        self.m2 / (self.n - 1.0)
    }
}

/// Welch's t between two classes.
fn welch(a: &Moments, b: &Moments) -> f64 {
    (a.mean - b.mean) / (a.variance() / a.n + b.variance() / b.n).sqrt()
}

/// One t-test per crop: all measurements, then those below each percentile of a first sample.
struct Tests {
    thresholds: Vec<(String, u64)>,
    classes: Vec<[Moments; 2]>,
}

impl Tests {
    fn new(first: &[u64]) -> Tests {
        let mut sorted = first.to_vec();
        sorted.sort_unstable();
        let mut thresholds = vec![("all".to_string(), u64::MAX)];
        for p in [50.0, 75.0, 90.0, 95.0, 99.0, 99.9] {
            let at = ((sorted.len() as f64 - 1.0) * p / 100.0) as usize;
            thresholds.push((format!("< p{p}"), sorted[at]));
        }
        let classes = vec![[Moments::default(); 2]; thresholds.len()];
        Tests {
            thresholds,
            classes,
        }
    }

    fn push(&mut self, class: usize, cycles: u64) {
        for (k, (_, limit)) in self.thresholds.iter().enumerate() {
            if cycles < *limit {
                self.classes[k][class].push(cycles as f64);
            }
        }
    }

    /// Prints every test and returns the largest |t|.
    fn report(&self, what: &str) -> f64 {
        let mut worst = 0f64;
        println!("{what}:");
        for (k, (name, limit)) in self.thresholds.iter().enumerate() {
            let [fixed, random] = &self.classes[k];
            let t = welch(fixed, random);
            // Too few measurements in a class gives NaN: a failed test, not a pass.
            worst = if t.is_nan() {
                f64::INFINITY
            } else {
                worst.max(t.abs())
            };
            let limit = if *limit == u64::MAX {
                "-".to_string()
            } else {
                limit.to_string()
            };
            println!(
                "  {name:>8} (cycles < {limit:>8}): fixed n={:>8} mean={:>10.1}  random n={:>8} mean={:>10.1}  t={t:>7.2}",
                fixed.n, fixed.mean, random.n, random.mean
            );
        }
        println!(
            "  max |t| = {worst:.2} ({})",
            if worst < 4.5 {
                "below 4.5: no leak detected"
            } else {
                "AT OR ABOVE 4.5"
            }
        );
        worst
    }
}

/// Cycles of one call, fenced so the counter reads bracket it.
fn cycles(f: impl FnOnce() -> u64) -> (u64, u64) {
    // SAFETY: `lfence` and `rdtsc` have no preconditions on x86-64.
    unsafe {
        _mm_lfence();
        let start = _rdtsc();
        _mm_lfence();
        let out = f();
        _mm_lfence();
        let end = _rdtsc();
        _mm_lfence();
        (end.wrapping_sub(start), out)
    }
}

const BATCH: usize = 10_000;

fn random_key(rng: &mut ChaCha20Rng) -> SecretKey {
    loop {
        if let Ok(key) = SecretKey::from_byte_array(rng.gen()) {
            return key;
        }
    }
}

/// The measurement loop every target shares: batches of `batch` inputs, each of a random class
/// (0 fixed, 1 random), made by `make` before the batch is timed; `run` is timed once per input
/// (its result folded into a sink so the call is not optimised away). The first batch only sets
/// the crop thresholds (dudect's pre-processing); `count` counts the measurements tested after it.
fn measure<I>(
    count: usize,
    batch: usize,
    rng: &mut ChaCha20Rng,
    mut make: impl FnMut(usize, &mut ChaCha20Rng) -> I,
    mut run: impl FnMut(&I) -> u64,
) -> Tests {
    let mut tests: Option<Tests> = None;
    let mut warmup = Vec::new();
    let mut sink = 0u64;
    let mut done = 0;
    while done < count {
        let classes: Vec<usize> = (0..batch).map(|_| rng.gen_range(0..2)).collect();
        let inputs: Vec<I> = classes.iter().map(|&c| make(c, rng)).collect();
        for (class, input) in classes.iter().zip(&inputs) {
            let (t, out) = cycles(|| run(input));
            sink ^= out;
            match tests.as_mut() {
                Some(tests) => {
                    tests.push(*class, t);
                    done += 1;
                }
                None => {
                    warmup.push(t);
                    if warmup.len() == batch {
                        tests = Some(Tests::new(&warmup));
                    }
                }
            }
        }
    }
    std::hint::black_box(sink);
    tests.expect("a first batch")
}

fn test_signer(count: usize, rng: &mut ChaCha20Rng) -> f64 {
    let fixed_key = random_key(rng);
    let digests = [rng.gen::<[u8; 32]>(); LANES];
    let make = |c: usize, rng: &mut ChaCha20Rng| -> [SecretKey; LANES] {
        core::array::from_fn(|_| if c == 0 { fixed_key } else { random_key(rng) })
    };
    let run = |group: &[SecretKey; LANES]| {
        let refs: [&SecretKey; LANES] = core::array::from_fn(|l| &group[l]);
        let sigs = lanes::sign_secp256k1(&refs, &digests).expect("lanes available");
        sigs[0].serialize_compact().1[63] as u64
    };
    measure(count, BATCH, rng, make, run).report(&format!(
        "lane signer, 8 signatures per call, {count} calls"
    ))
}

/// SM2 signing with given nonces: the secrets are the keys and the nonces (fixed pair in all
/// lanes against fresh random ones), the digest fixed.
fn test_sm2(count: usize, rng: &mut ChaCha20Rng) -> f64 {
    use chainsig_weierstrass::SecretKey as Sm2Key;
    let sm2_key = |rng: &mut ChaCha20Rng| loop {
        if let Ok(key) = Sm2Key::from_bytes(&rng.gen()) {
            return key;
        }
    };
    let fixed_key = sm2_key(rng);
    let fixed_nonce: [u8; 32] = rng.gen();
    let digests = [rng.gen::<[u8; 32]>(); LANES];
    let make = |c: usize, rng: &mut ChaCha20Rng| -> (Vec<Sm2Key>, [[u8; 32]; LANES]) {
        let keys = (0..LANES)
            .map(|_| {
                if c == 0 {
                    fixed_key.clone()
                } else {
                    sm2_key(rng)
                }
            })
            .collect();
        let nonces = core::array::from_fn(|_| if c == 0 { fixed_nonce } else { rng.gen() });
        (keys, nonces)
    };
    let run = |(keys, nonces): &(Vec<Sm2Key>, [[u8; 32]; LANES])| {
        let refs: Vec<&Sm2Key> = keys.iter().collect();
        let sigs = lanes::sign_sm2_with_nonces(&refs, &digests, nonces).expect("lanes");
        sigs[0].map_or(0, |s| s[63] as u64)
    };
    measure(count, BATCH / 4, rng, make, run).report(&format!(
        "SM2 lane signer, 8 signatures per call, {count} calls"
    ))
}

/// Digits of the comb's windows for eight lanes.
type Digits = [[i64; LANES]; COMB_WINDOWS];

/// Digits in the comb's range, fresh.
fn random_digits(rng: &mut ChaCha20Rng) -> Digits {
    let most = COMB_MAX_DIGIT as i64;
    core::array::from_fn(|_| core::array::from_fn(|_| rng.gen_range(-most..=most)))
}

/// The fixed pattern, or fresh digits.
fn digits_of_class(fixed: &Digits) -> impl Fn(usize, &mut ChaCha20Rng) -> Digits + '_ {
    move |c, rng| {
        if c == 0 {
            *fixed
        } else {
            random_digits(rng)
        }
    }
}

fn test_lookup(count: usize, rng: &mut ChaCha20Rng) -> f64 {
    let fixed = random_digits(rng);
    let run = |digits: &Digits| lanes::timing::comb_lookups(digits).expect("lanes available");
    measure(count, BATCH, rng, digits_of_class(&fixed), run).report(&format!(
        "comb lookups ({COMB_WINDOWS} windows × {COMB_MAX_DIGIT} entries), {count} calls"
    ))
}

/// The positive control: the comb's lookups written the way signing must not (skip zero digits,
/// index the table by the digit), over a table of the comb's size.
fn leaky_lookups(table: &[u64], digits: &Digits) -> u64 {
    let mut fold = 0u64;
    for (window, lanes) in digits.iter().enumerate() {
        for &d in lanes {
            if d != 0 {
                let entry = window * COMB_MAX_DIGIT + d.unsigned_abs() as usize - 1;
                let at = (entry * 10) % table.len();
                fold ^= table[at..at + 10].iter().fold(0, |a, w| a ^ w);
            }
        }
    }
    fold
}

fn test_control(count: usize, rng: &mut ChaCha20Rng) -> f64 {
    let table: Vec<u64> = (0..COMB_WINDOWS * COMB_MAX_DIGIT * 10)
        .map(|_| rng.gen())
        .collect();
    let fixed = random_digits(rng);
    let run = |digits: &Digits| leaky_lookups(&table, std::hint::black_box(digits));
    measure(count, BATCH, rng, digits_of_class(&fixed), run).report(&format!(
        "positive control: a variable-time lookup (must show a leak), {count} calls"
    ))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: usize = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let named = |name: &str| args.iter().any(|a| a == name);
    let control = named("control");
    let sm2 = named("sm2");
    let any_named = named("signer") || named("lookup") || control || sm2;
    let signer = named("signer") || !any_named;
    let lookup = named("lookup") || !any_named;
    if !lanes::available() {
        eprintln!("this CPU lacks AVX-512 IFMA: nothing to test");
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0xd0de);
    let mut worst = 0f64;
    if lookup {
        worst = worst.max(test_lookup(count, &mut rng));
    }
    if signer {
        worst = worst.max(test_signer(count, &mut rng));
    }
    if sm2 {
        worst = worst.max(test_sm2(count, &mut rng));
    }
    if control {
        let t = test_control(count, &mut rng);
        // The control must fail; that it does is the check.
        println!(
            "  control {}",
            if t >= 4.5 {
                "leak detected, as it must be"
            } else {
                "NOT detected: the harness is blind"
            }
        );
        if t < 4.5 {
            std::process::exit(1);
        }
    }
    if worst >= 4.5 {
        std::process::exit(1);
    }
}
