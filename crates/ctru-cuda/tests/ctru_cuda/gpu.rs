//! GPU results against chainsig_ctru's schoolbook product, for every n, method and product, on random
//! inputs in the KEM's ranges and on extreme inputs. Skips with a printed reason when no GPU is usable,
//! unless CHAINSIG_REQUIRE_GPU=1, when that fails.

use chainsig_ctru::poly::{schoolbook_mul_mod_q, schoolbook_mul_mod_q2};
use chainsig_ctru::ParamSet;
use chainsig_ctru_cuda::{small_limit, Error, GpuError, GpuPolyMul, Method, Product};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn open(set: ParamSet, method: Method) -> Option<GpuPolyMul> {
    match GpuPolyMul::new(set, method) {
        Ok(g) => Some(g),
        Err(Error::Gpu(GpuError::Unavailable(why))) => {
            assert!(
                std::env::var("CHAINSIG_REQUIRE_GPU").as_deref() != Ok("1"),
                "CHAINSIG_REQUIRE_GPU=1 but: {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
        Err(e) => panic!("{set} {}: {e}", method.name()),
    }
}

#[test]
fn gpu_products_equal_schoolbook() {
    let mut rng = ChaCha20Rng::seed_from_u64(0x0067_7075_6374_7275);
    for set in ParamSet::ALL {
        let p = set.params();
        let n = p.n;
        for method in Method::ALL {
            let Some(gpu) = open(set, method) else { return };
            for product in Product::ALL {
                let limit = small_limit(set, product);
                let (shared, mut batch): (Vec<i32>, Vec<Vec<i32>>) = match product {
                    Product::ModQ => (
                        (0..n).map(|_| rng.gen_range(0..p.q)).collect(),
                        (0..45)
                            .map(|_| (0..n).map(|_| rng.gen_range(-limit..=limit)).collect())
                            .collect(),
                    ),
                    Product::ModQ2 => (
                        (0..n).map(|_| rng.gen_range(-limit..=limit)).collect(),
                        (0..45)
                            .map(|_| (0..n).map(|_| rng.gen_range(0..p.q2)).collect())
                            .collect(),
                    ),
                };
                // Extreme instances at the ends of the batch operand's range.
                let ext = match product {
                    Product::ModQ => [limit, -limit],
                    Product::ModQ2 => [p.q2 / 2 - 1, -p.q2 / 2],
                };
                for e in ext {
                    batch.push(vec![e; n]);
                }
                let got = gpu
                    .mul_batch(product, &shared, &batch)
                    .expect("GPU product");
                for (i, (g, b)) in got.iter().zip(&batch).enumerate() {
                    let want = match product {
                        Product::ModQ => schoolbook_mul_mod_q(p, &shared, b),
                        Product::ModQ2 => {
                            let c: Vec<i32> = b.iter().map(|&v| v.rem_euclid(p.q2)).collect();
                            schoolbook_mul_mod_q2(p, &shared, &c)
                        }
                    };
                    assert!(
                        *g == want,
                        "{set} {} {} instance {i} differs",
                        method.name(),
                        product.name()
                    );
                }
            }
        }
    }
}

/// The whole batch KEM on the GPU against the CPU KEM: encaps on the same seeds, decaps of honest and
/// tampered ciphertexts (which must take the whole-key rejection path), every n.
#[test]
fn gpu_kem_equals_cpu_kem() {
    use chainsig_bench::ctru::{check_gpu_kem, random_keys};
    use chainsig_ctru_cuda::GpuKem;
    let mut rng = ChaCha20Rng::seed_from_u64(0x0067_7075_5f6b_656d);
    for set in ParamSet::ALL {
        let (pk, sk) = random_keys(set, &mut rng);
        let mut gpu = match GpuKem::new(set, &pk, Some(&sk)) {
            Ok(g) => g,
            Err(Error::Gpu(GpuError::Unavailable(why))) => {
                assert!(
                    std::env::var("CHAINSIG_REQUIRE_GPU").as_deref() != Ok("1"),
                    "CHAINSIG_REQUIRE_GPU=1 but: {why}"
                );
                eprintln!("skipped: {why}");
                return;
            }
            Err(e) => panic!("{set}: {e}"),
        };
        let checks = check_gpu_kem(&mut gpu, &pk, &sk, &mut rng, 77);
        assert_eq!(checks.len(), 3);
        for c in &checks {
            assert!(c.ok, "{set} {}: {:?}", c.case, c.error);
            println!("{set} {}: {} items ok", c.case, c.items);
        }
    }
}
