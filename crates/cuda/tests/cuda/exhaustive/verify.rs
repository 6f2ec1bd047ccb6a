//! The SM2 and ECDSA verification equations and ECDSA recovery for every key and nonce, and the
//! scalar arithmetic mod n for every pair of residues.

use super::*;

#[test]
fn sm2_verification_for_every_key_and_nonce() {
    let checked: usize = curves()
        .par_iter()
        .flat_map(|t| (1..t.q - 1).into_par_iter().map(move |d| (t, d)))
        .map(|(t, d)| {
            let mut checked = 0;
            let key = t.affine(d);
            let (px, py) = (&key[..8], &key[8..]);
            let parity = key[8] & 1;
            let ktab = t.table(1, d);
            for k in 1..t.q {
                // Signing (GB/T 32918.2 6.1) with e = k + d mod q: r = (e + x(kG)) mod n,
                // s = (1 + d)^-1 (k − r d) mod q (d < q − 1, so 1 + d ≠ 0).
                let e = (k + d) % t.q;
                let r = (BigUint::from(e) + &t.point(k).0) % &t.n;
                let r_q = mod_q(&r, t.q);
                let s = inv_q(1 + d, t.q) * ((k + t.q * t.q - r_q * d % t.q) % t.q) % t.q;
                let cases = [
                    (e, r.clone(), s),
                    ((e + 1) % t.q, r.clone(), s),
                    (e, &r + 1u32, s),
                    (e, r.clone(), (s + 1) % t.q),
                ];
                for (n_case, (e, r, s)) in cases.into_iter().enumerate() {
                    let (e_big, s_big) = (BigUint::from(e), BigUint::from(s));
                    let want = t.sm2_valid(&e_big, &r, &s_big, d);
                    let (ew, rw, sw) = (small(e), words(&r), small(s));
                    // The fast mode for every case; the others (both key forms, both inversions)
                    // in turn.
                    let mut configs = vec![(MODE_FAST, 0, 0)];
                    let turn = (k as usize + n_case) % 5;
                    configs.push([(MODE_FAST, 0, 1), (MODE_SEPARATE, 0, 0), (MODE_SEPARATE, 1, 1), (MODE_PAPER, 0, 1), (MODE_PAPER, 1, 0)][turn]);
                    for (mode, inv, compress) in configs {
                        // SAFETY: 8-word operands and G's table.
                        let got = unsafe {
                            kern!(t, verify(
                                mode,
                                inv,
                                compress,
                                ew.as_ptr(),
                                rw.as_ptr(),
                                sw.as_ptr(),
                                px.as_ptr(),
                                py.as_ptr(),
                                parity,
                                t.gtab.as_ptr(),
                            ))
                        };
                        assert_eq!(
                            got,
                            i32::from(want),
                            "{}: SM2 mode {mode}/{inv}/{compress}, key {d}G, nonce {k}, case {n_case}",
                            t.name
                        );
                        checked += 1;
                    }
                    // SAFETY: 8-word operands, G's table and the key's.
                    let got = unsafe {
                        kern!(t, verify_signed(
                            ew.as_ptr(),
                            rw.as_ptr(),
                            sw.as_ptr(),
                            t.gtab.as_ptr(),
                            ktab.as_ptr(),
                        ))
                    };
                    assert_eq!(got, i32::from(want), "{}: known signer {d}G, nonce {k}", t.name);
                    checked += 1;
                    if n_case == 0 && s != 0 && r != BigUint::ZERO {
                        assert!(want, "{}: the signature of key {d}G, nonce {k}", t.name);
                    }
                }
            }
            checked
        })
        .sum();
    eprintln!("{checked} SM2 verifications checked");
}

#[test]
fn ecdsa_verification_and_recovery_for_every_key_and_nonce() {
    let checked: usize = curves()
        .par_iter()
        .flat_map(|t| (1..t.q).into_par_iter().map(move |d| (t, d)))
        .map(|(t, d)| {
            let mut checked = 0;
            let key = t.affine(d);
            let (px, py) = (&key[..8], &key[8..]);
            for k in 1..t.q {
                // Signing (SEC 1 4.1.3) with e = k·d mod q: r = x(kG) mod n, s = (e + r d)/k.
                let e = k * d % t.q;
                let (x, y) = t.point(k);
                let r = x % &t.n;
                let r_q = mod_q(&r, t.q);
                let s = inv_q(k, t.q) * ((e + r_q * d) % t.q) % t.q;
                if s == 0 {
                    continue;
                }
                // s stays prime to n in every case: the kernels invert it (n = q·c here).
                let s_other = if s + 1 < t.q { s + 1 } else { 1 };
                for (e, r, s) in [
                    (e, r.clone(), s),
                    ((e + 1) % t.q, r.clone(), s),
                    (e, &r + 1u32, s),
                    (e, r.clone(), s_other),
                ] {
                    let (ew, rw, sw) = (small(e), words(&r), small(s));
                    for low_s in [0, 1] {
                        let want = t.ecdsa_valid(low_s == 1, e, &r, s, d);
                        // SAFETY: 8-word operands and G's table.
                        let got = unsafe {
                            kern!(
                                t,
                                verify_ecdsa(
                                    low_s,
                                    ew.as_ptr(),
                                    rw.as_ptr(),
                                    sw.as_ptr(),
                                    px.as_ptr(),
                                    py.as_ptr(),
                                    t.gtab.as_ptr(),
                                )
                            )
                        };
                        assert_eq!(
                            got,
                            i32::from(want),
                            "{}: ECDSA low_s {low_s}, key {d}G, nonce {k}, e {e}, s {s}",
                            t.name
                        );
                        checked += 1;
                    }
                }
                // Recovery: Q = r^-1 (s R − e G) for R = ±kG by the parity id; r must be
                // prime to n (the kernels invert it), which excludes r = 0 mod q, and x(kG) below
                // n so that r is R's x.
                if r_q == 0 || r != *x {
                    continue;
                }
                let (ew, rw, sw) = (small(e), words(&r), small(s));
                for id in 0..4u32 {
                    let r_mult = if u32::from(y.bit(0)) == id & 1 {
                        k
                    } else {
                        t.q - k
                    };
                    let want_k = inv_q(r_q, t.q) * ((s * r_mult + t.q - e) % t.q) % t.q;
                    let want = id <= 1 && want_k != 0;
                    let (mut qx, mut qy) = ([0u32; 8], [0u32; 8]);
                    // SAFETY: 8-word operands and results, G's table.
                    let found = unsafe {
                        kern!(
                            t,
                            recover_ecdsa(
                                ew.as_ptr(),
                                rw.as_ptr(),
                                sw.as_ptr(),
                                id,
                                t.gtab.as_ptr(),
                                qx.as_mut_ptr(),
                                qy.as_mut_ptr(),
                            )
                        )
                    };
                    assert_eq!(
                        found,
                        i32::from(want),
                        "{}: recovery id {id}, key {d}G",
                        t.name
                    );
                    if want {
                        let mut q_aff = [0u32; 16];
                        q_aff[..8].copy_from_slice(&qx);
                        q_aff[8..].copy_from_slice(&qy);
                        assert_eq!(
                            q_aff,
                            t.affine(want_k),
                            "{}: recovered key, id {id}",
                            t.name
                        );
                        if id == u32::from(y.bit(0)) {
                            assert_eq!(want_k, d, "{}: the signer's own key", t.name);
                        }
                    }
                    checked += 1;
                }
            }
            checked
        })
        .sum();
    eprintln!("{checked} ECDSA verifications and recoveries checked");
}

#[test]
fn scalar_arithmetic_mod_n_for_every_pair_of_residues() {
    let mut checked = 0;
    for t in curves() {
        let r_mod_n = (BigUint::from(1u32) << 256) % &t.n;
        for a in 0..t.q {
            for b in 0..t.q {
                // Representatives below n of a and b: themselves, + q, and the largest.
                let below_n = &t.n - 1u32;
                for (ai, aw) in t.reps(a, &below_n).into_iter().enumerate() {
                    let bw = t.reps(b, &below_n)[(ai + b as usize) % 3];
                    let (x, y) = (big(&aw), big(&bw));
                    let op = |code: i32| {
                        let mut out = [0u32; 8];
                        // SAFETY: 8-word operands and result.
                        let known = unsafe {
                            kern!(
                                t,
                                scalar_op(code, aw.as_ptr(), bw.as_ptr(), out.as_mut_ptr())
                            )
                        };
                        assert_eq!(known, 1);
                        big(&out)
                    };
                    let n = &t.n;
                    assert_eq!(op(0), &x * &y % n, "{}: {a}·{b} mod n", t.name);
                    assert_eq!(op(2), (&x + &y) % n, "{}: {a} + {b} mod n", t.name);
                    assert_eq!(op(3), (&x + n - &y) % n, "{}: {a} − {b} mod n", t.name);
                    let half = op(4);
                    assert!(
                        half < *n && (&half * 2u32) % n == x,
                        "{}: {a}/2 mod n",
                        t.name
                    );
                    let mont = op(5);
                    assert!(
                        mont < *n && &mont * &r_mod_n % n == &x * &y % n,
                        "{}: mont",
                        t.name
                    );
                    if a != 0 {
                        let inv = op(1);
                        assert!(
                            inv < *n && &inv * &x % n == BigUint::from(1u32),
                            "{}: 1/{a}",
                            t.name
                        );
                    }
                    checked += 6;
                }
            }
        }
    }
    eprintln!("{checked} scalar operations checked");
}
