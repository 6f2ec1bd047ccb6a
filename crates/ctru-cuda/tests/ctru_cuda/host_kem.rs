//! The batch KEM's kernels compiled for the host (kernels/keccak.cuh, kem.cuh and the Tensor Core
//! product arithmetic, run by `HostKem` in the GPU pipeline's order) against RustCrypto's sha3 and
//! chainsig_ctru's CPU KEM: random keys, seeds and ciphertexts for n = 653, 761, 1277, honest and
//! tampered ciphertexts (the latter must take the whole-key rejection path). Runs in CI without a GPU.

use chainsig_ctru::encode;
use chainsig_ctru::{decaps_with_verdict, encaps, keygen, ParamSet, RandomSource};
use chainsig_ctru_cuda::kem_host::{
    host_decode_message, host_pack_ct, host_sha3_512, host_shake256,
};
use chainsig_ctru_cuda::{Error, HostKem};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha3::digest::{Digest, ExtendableOutput, Update, XofReader};

struct Seeded(ChaCha20Rng);
impl RandomSource for Seeded {
    fn fill(&mut self, out: &mut [u8]) {
        self.0.fill_bytes(out)
    }
}

/// Hands out one fixed 32-byte seed: encaps' only randomness call.
struct Fixed([u8; 32]);
impl RandomSource for Fixed {
    fn fill(&mut self, out: &mut [u8]) {
        out.copy_from_slice(&self.0[..out.len()]);
    }
}

#[test]
fn keccak_matches_rustcrypto_on_block_boundaries_and_random_lengths() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x6b65_6363_616b);
    let mut lens: Vec<usize> = vec![
        0, 1, 7, 8, 9, 71, 72, 73, 135, 136, 137, 143, 144, 145, 271, 272, 273, 407, 408, 409,
        1017, 1662,
    ];
    lens.extend((0..40).map(|_| rng.gen_range(0..2000)));
    let out_lens = [
        0usize, 1, 32, 64, 135, 136, 137, 271, 272, 273, 381, 490, 639, 1000,
    ];
    for &len in &lens {
        let mut input = vec![0u8; len];
        rng.fill_bytes(&mut input);
        let want: [u8; 64] = sha3::Sha3_512::digest(&input).into();
        assert_eq!(host_sha3_512(&input), want, "SHA3-512 of {len} bytes");
        for &out_len in &out_lens {
            let mut h = sha3::Shake256::default();
            h.update(&input);
            let mut want = vec![0u8; out_len];
            h.finalize_xof().read(&mut want);
            assert_eq!(
                host_shake256(&input, out_len),
                want,
                "SHAKE256 of {len} bytes, {out_len} out"
            );
        }
    }
}

#[test]
fn keccak_check_can_fail() {
    // One flipped input bit changes the digest, so the comparison above is not vacuous.
    let a = host_sha3_512(b"abc");
    let b = host_sha3_512(b"abb");
    assert_ne!(a, b);
    assert_eq!(
        hex(&a[..8]),
        "b751850b1a57168a",
        "SHA3-512(\"abc\") from FIPS 202"
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn host_batch_kem_equals_cpu_kem_for_every_n() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x6b65_6d5f_686f_7374);
    for set in ParamSet::ALL {
        let (pk, sk) = keygen(set, &mut Seeded(ChaCha20Rng::from_rng(&mut rng).unwrap()));
        let kem = HostKem::new(set, &pk, Some(&sk)).expect("host KEM");
        let seeds: Vec<[u8; 32]> = (0..12).map(|_| rng.gen()).collect();
        let got = kem.encaps_batch(&seeds).expect("host encaps");
        assert_eq!(got.len(), seeds.len());
        let mut cts = Vec::new();
        let mut want_ss = Vec::new();
        for (i, (seed, (ct, ss))) in seeds.iter().zip(&got).enumerate() {
            let (want_ct, want_key) = encaps(&pk, &mut Fixed(*seed));
            assert!(*ct == want_ct, "{set} encaps {i}: ciphertext differs");
            assert!(*ss == want_key, "{set} encaps {i}: key differs");
            cts.push(want_ct);
            want_ss.push(want_key);
        }
        // Tampered ciphertexts, interleaved with the honest ones.
        let honest = cts.len();
        for i in 0..honest {
            let t = chainsig_bench::ctru::tamper(&cts[i], &mut rng, i % 3);
            cts.push(t);
        }
        let got = kem.decaps_batch(&cts).expect("host decaps");
        let mut rejected = 0;
        for (i, (ct, ss)) in cts.iter().zip(&got).enumerate() {
            let (want, accepted) = decaps_with_verdict(&sk, ct).unwrap();
            let accepted = bool::from(accepted);
            assert_eq!(accepted, i < honest, "{set} ct {i}: CPU verdict");
            if !accepted {
                rejected += 1;
            }
            assert!(
                *ss == want,
                "{set} decaps {i} (accepted {accepted}) differs"
            );
            if i < honest {
                assert!(*ss == want_ss[i], "{set} decaps {i}: not the encaps key");
            }
        }
        assert_eq!(
            rejected, honest,
            "{set}: every tampered ct must be rejected"
        );
    }
}

#[test]
fn host_batch_kem_inputs_are_checked_and_named() {
    let set = ParamSet::Ctru761;
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (pk, sk) = keygen(set, &mut Seeded(ChaCha20Rng::from_rng(&mut rng).unwrap()));
    let enc_only = HostKem::new(set, &pk, None).unwrap();
    let (ct, _) = encaps(&pk, &mut Fixed([1; 32]));
    assert!(matches!(
        enc_only.decaps_batch(std::slice::from_ref(&ct)),
        Err(Error::Key { field: "sk", .. })
    ));
    let kem = HostKem::new(set, &pk, Some(&sk)).unwrap();
    let short = vec![0u8; ct.as_bytes().len() - 1];
    match kem.decaps_bytes(&[ct.as_bytes(), &short[..]]) {
        Err(e @ Error::WrongLength { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with("ct[1]: expected 952 bytes"), "{msg}");
        }
        other => panic!("expected a length error, got {:?}", other.map(|v| v.len())),
    }
    let (other_ct, _) = {
        let (pk653, _) = keygen(
            ParamSet::Ctru653,
            &mut Seeded(ChaCha20Rng::seed_from_u64(1)),
        );
        encaps(&pk653, &mut Fixed([2; 32]))
    };
    assert!(matches!(
        kem.decaps_batch(&[ct.clone(), other_ct]),
        Err(Error::WrongLength { field, .. }) if field == "ct[1]"
    ));
    assert!(matches!(kem.decaps_batch(&[]), Err(Error::Batch(_))));
    assert!(matches!(kem.encaps_batch(&[]), Err(Error::Batch(_))));
    let (pk2, _) = keygen(set, &mut Seeded(ChaCha20Rng::seed_from_u64(3)));
    assert!(matches!(
        HostKem::new(set, &pk2, Some(&sk)),
        Err(Error::Key { field: "sk", .. })
    ));
    assert!(matches!(
        HostKem::new(ParamSet::Ctru653, &pk, None),
        Err(Error::WrongLength { field, .. }) if field == "pk"
    ));
    // The GPU backend checks its keys before it looks for a device, so these hold without one.
    assert!(matches!(
        chainsig_ctru_cuda::GpuKem::new(ParamSet::Ctru653, &pk, None),
        Err(Error::WrongLength { field, .. }) if field == "pk"
    ));
    assert!(matches!(
        chainsig_ctru_cuda::GpuKem::new(set, &pk2, Some(&sk)),
        Err(Error::Key { field: "sk", .. })
    ));
}

#[test]
fn compression_and_packing_match_for_every_sigma() {
    // Every σ ∈ [0, q) at some coefficient, with random messages: the kernel's multiply-shift
    // division and bit packing against chainsig_ctru::encode.
    let mut rng = ChaCha20Rng::seed_from_u64(0x7061_636b);
    for set in ParamSet::ALL {
        let p = set.params();
        let mut sigma: Vec<i32> = (0..p.q).collect();
        sigma.extend((0..p.n - p.q as usize % p.n).map(|_| rng.gen_range(0..p.q)));
        for (row, chunk) in sigma.chunks(p.n).enumerate() {
            let mut msg = vec![0u8; p.msg_bytes()];
            rng.fill_bytes(&mut msg);
            let want = encode::pack_ct(p, &encode::compress_with_message(p, chunk, &msg));
            assert_eq!(host_pack_ct(set, chunk, &msg), want, "{set} row {row}");
        }
    }
}

#[test]
fn e8_decoding_matches_on_ties_and_random_values() {
    // Values on and next to the decision boundaries (multiples of q2/8) make ties in the costs
    // and gaps; random values cover the rest.
    let mut rng = ChaCha20Rng::seed_from_u64(0x6538);
    for set in ParamSet::ALL {
        let p = set.params();
        let e = p.q2 / 8;
        let points: Vec<i32> = (0..8)
            .flat_map(|k| [k * e - 1, k * e, k * e + 1])
            .map(|v| v.rem_euclid(p.q2))
            .collect();
        for round in 0..200 {
            let w: Vec<i32> = (0..p.n)
                .map(|_| {
                    if round % 2 == 0 {
                        points[rng.gen_range(0..points.len())]
                    } else {
                        rng.gen_range(0..p.q2)
                    }
                })
                .collect();
            assert_eq!(
                host_decode_message(set, &w),
                encode::e8_decode_message(p, &w),
                "{set} round {round}"
            );
        }
    }
}
