//! The NTT multiplier against the schoolbook reference: random inputs in the KEM's ranges, extreme
//! inputs at the ends of those ranges (where the C reference's NTT overflows for n = 653 and 1277),
//! and the products exactly as the KEM forms them from arbitrary pk, sk and ct bytes.

use chainsig_ctru::encode::{decode_pk, unpack_ct, unpack_sk};
use chainsig_ctru::ntt::{multiplier, NttMultiplier};
use chainsig_ctru::poly::{schoolbook_exact, schoolbook_mul_mod_q, schoolbook_mul_mod_q2};
use chainsig_ctru::{Error, ParamSet, Params};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn widen(b: &[i8]) -> Vec<i32> {
    b.iter().map(|&v| v as i32).collect()
}

fn check_q(p: &Params, m: &NttMultiplier, a: &[i32], b: &[i8], what: &str) {
    let reduced: Vec<i32> = a.iter().map(|&v| v.rem_euclid(p.q)).collect();
    let want = schoolbook_mul_mod_q(p, &reduced, &widen(b));
    assert_eq!(
        m.mul_mod_q(a, b).unwrap(),
        want,
        "n = {}: {what} (mod q)",
        p.n
    );
}

fn check_q2(p: &Params, m: &NttMultiplier, a: &[i32], b: &[i8], what: &str) {
    let reduced: Vec<i32> = a.iter().map(|&v| v.rem_euclid(p.q2)).collect();
    let want = schoolbook_mul_mod_q2(p, &reduced, &widen(b));
    assert_eq!(
        m.mul_mod_q2(a, b).unwrap(),
        want,
        "n = {}: {what} (mod q2)",
        p.n
    );
}

#[test]
fn random_inputs_agree_with_schoolbook() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x6374_7275);
    for set in ParamSet::ALL {
        let p = set.params();
        let m = multiplier(set);
        let (f_lo, f_hi) = p.unpacked_f_range();
        for round in 0..6 {
            let a: Vec<i32> = (0..p.n).map(|_| rng.gen_range(0..p.q)).collect();
            let eta: Vec<i8> = (0..p.n)
                .map(|_| rng.gen_range(-p.eta..=p.eta) as i8)
                .collect();
            check_q(
                p,
                m,
                &a,
                &eta,
                &format!("random [0,q) × [−η,η], round {round}"),
            );
            let limit = m.small_limit_q();
            let wide: Vec<i8> = (0..p.n)
                .map(|_| rng.gen_range(-limit..=limit) as i8)
                .collect();
            check_q(
                p,
                m,
                &a,
                &wide,
                &format!("random [0,q) × [−limit,limit], round {round}"),
            );
            let any: Vec<i32> = (0..p.n).map(|_| rng.next_u32() as i32).collect();
            check_q(
                p,
                m,
                &any,
                &eta,
                &format!("arbitrary i32 × [−η,η], round {round}"),
            );

            let c: Vec<i32> = (0..p.n).map(|_| rng.gen_range(0..p.q2)).collect();
            let f: Vec<i8> = (0..p.n).map(|_| rng.gen_range(f_lo..=f_hi) as i8).collect();
            check_q2(
                p,
                m,
                &c,
                &f,
                &format!("random [0,q2) × unpacked-f range, round {round}"),
            );
            let limit = m.small_limit_q2();
            let wide: Vec<i8> = (0..p.n)
                .map(|_| rng.gen_range(-limit..=limit) as i8)
                .collect();
            check_q2(
                p,
                m,
                &c,
                &wide,
                &format!("random [0,q2) × [−limit,limit], round {round}"),
            );
        }
    }
}

#[test]
fn extreme_inputs_agree_with_schoolbook() {
    for set in ParamSet::ALL {
        let p = set.params();
        let m = multiplier(set);
        let n = p.n;
        let (q, q2, eta) = (p.q, p.q2, p.eta as i8);
        let (f_lo, f_hi) = p.unpacked_f_range();
        let alternate = |x: i32, y: i32| -> Vec<i32> {
            (0..n).map(|i| if i % 2 == 0 { x } else { y }).collect()
        };
        let large_q = [
            ("all q−1", vec![q - 1; n]),
            ("all (q−1)/2", vec![(q - 1) / 2; n]),
            ("all (q+1)/2", vec![(q + 1) / 2; n]),
            ("all 0", vec![0; n]),
            ("alternating 0, q−1", alternate(0, q - 1)),
            (
                "alternating (q−1)/2, (q+1)/2",
                alternate((q - 1) / 2, (q + 1) / 2),
            ),
        ];
        let limit_q = m.small_limit_q() as i8;
        let small_q: Vec<(&str, Vec<i8>)> = vec![
            ("all +η", vec![eta; n]),
            ("all −η", vec![-eta; n]),
            (
                "alternating +η, −η",
                (0..n)
                    .map(|i| if i % 2 == 0 { eta } else { -eta })
                    .collect(),
            ),
            ("all +limit", vec![limit_q; n]),
            ("all −limit", vec![-limit_q; n]),
        ];
        // The inputs reach the range where folding mod Q (as the reference does) would wrap.
        let folded = schoolbook_exact(&vec![q - 1; n], &vec![eta as i32; n]);
        let largest = folded.iter().map(|v| v.abs()).max().unwrap();
        let wraps = largest > (p.ntt.prime as i64 - 1) / 2;
        assert_eq!(
            wraps,
            set != ParamSet::Ctru761,
            "n = {n}: largest folded coefficient {largest}"
        );
        for (an, a) in &large_q {
            for (bn, b) in &small_q {
                check_q(p, m, a, b, &format!("{an} × {bn}"));
            }
        }
        let large_q2 = [
            ("all q2−1", vec![q2 - 1; n]),
            ("all q2/2", vec![q2 / 2; n]),
            ("all q2/2 − 1", vec![q2 / 2 - 1; n]),
            ("alternating q2/2, q2/2 − 1", alternate(q2 / 2, q2 / 2 - 1)),
        ];
        let limit_q2 = m.small_limit_q2() as i8;
        let small_q2: Vec<(&str, Vec<i8>)> = vec![
            ("all BOUND", vec![f_hi as i8; n]),
            ("all BOUND−15", vec![f_lo as i8; n]),
            (
                "alternating BOUND, BOUND−15",
                (0..n)
                    .map(|i| if i % 2 == 0 { f_hi } else { f_lo } as i8)
                    .collect(),
            ),
            ("all +limit", vec![limit_q2; n]),
            ("all −limit", vec![-limit_q2; n]),
        ];
        for (an, a) in &large_q2 {
            for (bn, b) in &small_q2 {
                check_q2(p, m, a, b, &format!("{an} × {bn}"));
            }
        }
    }
}

#[test]
fn products_formed_from_arbitrary_key_and_ciphertext_bytes_agree() {
    let mut rng = ChaCha20Rng::seed_from_u64(761);
    for set in ParamSet::ALL {
        let p = set.params();
        let m = multiplier(set);
        for fill in [0x00u8, 0xff, 0x55, 0xaa] {
            let h = decode_pk(p, &vec![fill; p.pk_bytes]);
            let c = unpack_ct(p, &vec![fill; p.ct_bytes()]);
            let f = unpack_sk(p, &vec![fill; p.sk_pke_bytes()]);
            let r = vec![p.eta as i8; p.n];
            check_q(p, m, &h, &r, &format!("Decode(pk of 0x{fill:02x}) × η"));
            check_q2(
                p,
                m,
                &c,
                &f,
                &format!("UnpackCT × UnpackSK of 0x{fill:02x}"),
            );
        }
        for _ in 0..3 {
            let mut bytes = vec![0u8; p.sk_bytes()];
            rng.fill_bytes(&mut bytes);
            let h = decode_pk(p, &bytes[..p.pk_bytes]);
            let c = unpack_ct(p, &bytes[..p.ct_bytes()]);
            let f = unpack_sk(p, &bytes[..p.sk_pke_bytes()]);
            let r: Vec<i8> = (0..p.n)
                .map(|_| rng.gen_range(-p.eta..=p.eta) as i8)
                .collect();
            check_q(p, m, &h, &r, "Decode(random pk) × random r");
            check_q2(p, m, &c, &f, "UnpackCT(random) × UnpackSK(random)");
        }
    }
}

#[test]
fn out_of_range_and_wrong_degree_operands_are_errors() {
    for set in ParamSet::ALL {
        let p = set.params();
        let m = multiplier(set);
        let a = vec![1; p.n];
        let too_big = vec![(m.small_limit_q() + 1) as i8; p.n];
        assert!(matches!(
            m.mul_mod_q(&a, &too_big),
            Err(Error::SmallOperandOutOfRange { .. })
        ));
        let too_big = vec![(m.small_limit_q2() + 1) as i8; p.n];
        assert!(matches!(
            m.mul_mod_q2(&a, &too_big),
            Err(Error::SmallOperandOutOfRange { .. })
        ));
        let b = vec![0i8; p.n];
        assert!(matches!(
            m.mul_mod_q(&a[1..], &b),
            Err(Error::WrongDegree { field: "large operand", got, .. }) if got == p.n - 1
        ));
        assert!(matches!(
            m.mul_mod_q2(&a, &b[1..]),
            Err(Error::WrongDegree {
                field: "small operand",
                ..
            })
        ));
    }
}
