//! The group law in each formula and the multiplications, for every point and every scalar.

use super::*;

#[test]
fn small_order_curves_have_order_q_and_decompress() {
    for t in curves() {
        // The reference built k·G ≠ ∞ for 0 < k < q and q·G = ∞ (Tiny::new); here the kernels'
        // n and the decompression, the one routine that uses b.
        assert_eq!(&t.n % t.q, BigUint::ZERO, "{}: q does not divide n", t.name);
        assert!(
            t.n > (BigUint::from(1u32) << 255) && t.n < t.p,
            "{}",
            t.name
        );
        for k in 1..t.q {
            let (x, y) = t.point(k);
            let mut out = [0u32; 8];
            let parity = y.bit(0) as u32;
            // SAFETY: 8-word operands.
            let ok = unsafe { kern!(t, decompress(words(x).as_ptr(), parity, out.as_mut_ptr())) };
            assert_eq!(
                (ok, big(&out)),
                (1, y.clone()),
                "{}: decompress {k}·G",
                t.name
            );
        }
        // An x with no point: x³ + ax + b' not a square.
        let no_point = (1u32..)
            .map(BigUint::from)
            .find(|x| {
                let rhs = t.fp(x * x * x + &t.a * x + &t.b);
                rhs.modpow(&((&t.p - 1u32) >> 1), &t.p) == &t.p - 1u32
            })
            .expect("a non-residue");
        let mut out = [0u32; 8];
        // SAFETY: 8-word operands.
        let ok = unsafe {
            kern!(
                t,
                decompress(words(&no_point).as_ptr(), 0, out.as_mut_ptr())
            )
        };
        assert_eq!(ok, 0, "{}: decompressed an x with no point", t.name);
    }
}

#[test]
fn every_doubling_and_every_sum_in_each_formula() {
    let mut checked = 0;
    for t in curves() {
        for i in 0..t.q {
            let lam = t.lam(i, 0);
            let r = t.jacobian(i, &lam);
            let mut d = r;
            // SAFETY: 24-word point, updated in place (so below).
            unsafe { kern!(t, dbl(d.as_mut_ptr())) };
            assert!(t.is(&d, 2 * i), "{}: 2·{i}G gave {}", t.name, t.which(&d));
            let mut d = r;
            let mut w = t.w_of(&r);
            unsafe { kern!(t, dbl_w(d.as_mut_ptr(), w.as_mut_ptr())) };
            assert!(
                t.is(&d, 2 * i),
                "{}: dbl_w 2·{i}G gave {}",
                t.name,
                t.which(&d)
            );
            assert_eq!(w, t.w_of(&d), "{}: W after dbl_w of {i}G", t.name);
            for j in 0..t.q {
                let mu = t.lam(i, j + 1);
                let mut s = r;
                unsafe { kern!(t, add_jac(s.as_mut_ptr(), t.jacobian(j, &mu).as_ptr())) };
                assert!(t.is(&s, i + j), "{}: {i}G + {j}G (Jacobian)", t.name);
                // Affine Q: j = 0 is Q at infinity (q_inf), its words then ignored.
                let q_aff = t.affine(if j == 0 { 1 } else { j });
                let mut s = r;
                unsafe {
                    kern!(
                        t,
                        add_affine(s.as_mut_ptr(), q_aff.as_ptr(), i32::from(j == 0))
                    )
                };
                assert!(t.is(&s, i + j), "{}: {i}G + {j}G (affine)", t.name);
                checked += 3;
                if j == 0 {
                    continue;
                }
                // A table entry (x μ², y μ³) on the common Z μ, with and without W.
                let entry = t.jacobian(j, &mu);
                let mut e16 = [0u32; 16];
                e16.copy_from_slice(&entry[..16]);
                for with_w in [0, 1] {
                    let mut s = r;
                    let mut w = t.w_of(&r);
                    unsafe {
                        kern!(
                            t,
                            add_coz(
                                with_w,
                                s.as_mut_ptr(),
                                w.as_mut_ptr(),
                                e16.as_ptr(),
                                entry[16..].as_ptr(),
                            )
                        )
                    };
                    assert!(
                        t.is(&s, i + j),
                        "{}: {i}G + {j}G (co-Z, W {with_w})",
                        t.name
                    );
                    if with_w == 1 {
                        assert_eq!(w, t.w_of(&s), "{}: W of {i}G + {j}G", t.name);
                    }
                    checked += 1;
                }
            }
        }
    }
    eprintln!("{checked} sums and doublings checked");
}

#[test]
fn every_multiple_from_the_fixed_base_tables() {
    let checked: usize = curves()
        .par_iter()
        .map(|t| {
            let mut checked = 0;
            let top = two_256_minus_1();
            for key in 1..t.q {
                // G's table for key 1; a key's own table (the known signers') for every key.
                let ktab = t.table(1, key);
                for k in 0..t.q {
                    for rep in t.reps(k, &top) {
                        let mut r = [0u32; 24];
                        // SAFETY: an 8-word scalar, the build's table, a 24-word result.
                        unsafe {
                            kern!(t, mul_fixed(1, rep.as_ptr(), ktab.as_ptr(), r.as_mut_ptr()))
                        };
                        assert!(t.is(&r, k * key), "{}: {k}·({key}G) by a key table", t.name);
                        if key == 1 {
                            unsafe {
                                kern!(
                                    t,
                                    mul_fixed(0, rep.as_ptr(), t.gtab.as_ptr(), r.as_mut_ptr())
                                )
                            };
                            assert!(t.is(&r, k), "{}: {k}·G by G's table", t.name);
                            checked += 1;
                        }
                        checked += 1;
                    }
                }
            }
            checked
        })
        .sum();
    eprintln!("{checked} fixed-base multiples checked");
}

#[test]
fn every_multiple_of_every_point_by_the_signed_window() {
    let checked: usize = curves()
        .par_iter()
        .flat_map(|t| (1..t.q).into_par_iter().map(move |j| (t, j)))
        .map(|(t, j)| {
            let mut checked = 0;
            let p = t.affine(j);
            for k in 0..t.q {
                // t and t + q (both parities: even t is walked as n − t), and the largest
                // representative not above n, for the plain and the modified-Jacobian walk.
                for rep in t.reps(k, &t.n) {
                    for modified in [0, 1] {
                        let mut r = [0u32; 24];
                        // SAFETY: an 8-word scalar, a 16-word point, a 24-word result.
                        unsafe {
                            kern!(
                                t,
                                mul_window(modified, rep.as_ptr(), p.as_ptr(), r.as_mut_ptr())
                            )
                        };
                        assert!(
                            t.is(&r, k * j),
                            "{}: {k}·({j}G) by the window (modified {modified}) gave {}",
                            t.name,
                            t.which(&r)
                        );
                        checked += 1;
                    }
                }
            }
            checked
        })
        .sum();
    eprintln!("{checked} window multiples checked");
}

#[test]
fn every_double_scalar_product_in_each_mode() {
    let checked: usize = curves()
        .par_iter()
        .flat_map(|t| (0..t.q).into_par_iter().map(move |s| (t, s)))
        .map(|(t, s)| {
            let mut checked = 0;
            let mut rng = ChaCha20Rng::seed_from_u64(u64::from(s));
            for u in 0..t.q {
                // s G + u P for P = G, −G and 2G in the fast mode; the paper mode (both
                // inversions) and the separate mode for one of them each, in turn.
                let s_reps = t.reps(s, &two_256_minus_1());
                let u_reps = t.reps(u, &t.n);
                for (pi, j) in [1, t.q - 1, 2].into_iter().enumerate() {
                    let p = t.affine(j);
                    let which = (s + u + pi as u32) % 3;
                    let mut modes = vec![(MODE_FAST, 0)];
                    modes.push(match which {
                        0 => (MODE_PAPER, 0),
                        1 => (MODE_PAPER, 1),
                        _ => (MODE_SEPARATE, 0),
                    });
                    for (mode, inv) in modes {
                        let sr = &s_reps[rng.next_u32() as usize % 3];
                        let ur = &u_reps[rng.next_u32() as usize % 3];
                        let mut r = [0u32; 24];
                        // SAFETY: 8-word scalars, a 16-word point, G's table, a 24-word result.
                        let ok = unsafe {
                            kern!(
                                t,
                                double_mul(
                                    mode,
                                    inv,
                                    sr.as_ptr(),
                                    ur.as_ptr(),
                                    p.as_ptr(),
                                    t.gtab.as_ptr(),
                                    r.as_mut_ptr(),
                                )
                            )
                        };
                        assert_eq!(ok, 1);
                        assert!(
                            t.is(&r, s + u * j),
                            "{}: mode {mode}/{inv}: {s}G + {u}·({j}G) gave {}",
                            t.name,
                            t.which(&r)
                        );
                        checked += 1;
                    }
                }
            }
            checked
        })
        .sum();
    eprintln!("{checked} double-scalar products checked");
}
