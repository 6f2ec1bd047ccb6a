//! On a machine with a CUDA GPU: raw transactions through `CudaBackend::recover_raw` give the CPU
//! path's sender or fault (`chainsig_eth::rawtx::recover_raw`) for every record, and the run is
//! timed. Records as a node sees them (mostly EIP-1559, some legacy and EIP-2930, a few blob and
//! EIP-7702 transactions) with 5% broken ones (chainsig_eth::rawtx::corpus).
//!
//! CHAINSIG_ETHTX_RECORDS sets the count (default 20,000; the device check runs 1,048,576) and
//! CHAINSIG_ETHTX_SEED the seed (default: fresh from the clock, printed). Without a driver or GPU
//! the test prints why it skipped.

use super::gpu::{env_number, open_or_skip};
use chainsig_cuda::ethtx::FAULT_DEFER;
use chainsig_cuda::CudaConfig;
use chainsig_eth::rawtx::corpus::Corpus;
use chainsig_eth::rawtx::recover_raw;
use rayon::prelude::*;
use std::time::Instant;

#[test]
fn gpu_raw_transactions_give_the_cpus_senders_and_faults() {
    let Some(gpu) = open_or_skip(CudaConfig::default()) else {
        return;
    };
    let count: usize = env_number("CHAINSIG_ETHTX_RECORDS", 20_000);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let seed: u64 = env_number("CHAINSIG_ETHTX_SEED", clock);
    let started = Instant::now();
    const PART: usize = 4096;
    let records: Vec<Vec<u8>> = (0..count.div_ceil(PART))
        .into_par_iter()
        .flat_map_iter(|part| {
            let n = PART.min(count - part * PART);
            Corpus::new(seed ^ (part as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15), 16).mixed(n, 0.05)
        })
        .collect();
    println!(
        "seed {seed}: {count} records generated in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let txs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    // The first call compiles (or loads) and checks the modules and grows the buffers; then the
    // median of three timed calls, each answering as the first.
    let got = gpu.recover_raw(&txs).expect("recover_raw");
    let mut times: Vec<(f64, chainsig_cuda::PipelineTimes)> = (0..3)
        .map(|_| {
            let before = gpu.pipeline_times();
            let started = Instant::now();
            let again = gpu.recover_raw(&txs).expect("recover_raw");
            let secs = started.elapsed().as_secs_f64();
            let phases = gpu.pipeline_times().since(&before);
            assert!(again == got, "the same transactions answered differently");
            (secs, phases)
        })
        .collect();
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (gpu_s, phases) = times[1];
    println!(
        "the median run's host time: staging and launching {:.1} ms, waiting for the GPU {:.1} ms, \
         decoding answers {:.1} ms",
        phases.stage.as_secs_f64() * 1e3,
        phases.wait.as_secs_f64() * 1e3,
        phases.decode.as_secs_f64() * 1e3
    );
    // The same through the library's entry (the backend trait: the path of the C ABI, the
    // service and the CLI), answers converted for the caller.
    let started = Instant::now();
    let through_trait =
        chainsig_core::backend::Backend::recover_transactions(&gpu, &txs).expect("the trait");
    let trait_s = started.elapsed().as_secs_f64();
    assert_eq!(through_trait.len(), count);
    println!(
        "through Backend::recover_transactions: {:.3} s ({:.3e}/s)",
        trait_s,
        count as f64 / trait_s
    );
    assert_eq!(got.len(), count);
    let started = Instant::now();
    let want: Vec<_> = records.par_iter().map(|raw| recover_raw(raw)).collect();
    let cpu_s = started.elapsed().as_secs_f64();
    let (mut senders, mut faults, mut deferred, mut bad) = (0usize, 0usize, 0usize, Vec::new());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let agree = match (g, w) {
            (Ok((address, key)), Ok(rec)) => {
                senders += 1;
                *address == rec.address && key[..] == rec.pubkey[..]
            }
            (Err(code), _) if *code == FAULT_DEFER => {
                deferred += 1;
                true
            }
            (Err(code), Err(e)) => {
                faults += 1;
                *code == e.fault.code()
            }
            _ => false,
        };
        if !agree {
            bad.push(i);
        }
    }
    println!(
        "{count} raw transactions: GPU {:.3} s ({:.3e}/s, copies included; median of 3), CPU path on {} threads {:.3} s ({:.3e}/s); {senders} senders, {faults} faults, {deferred} deferred, {} disagreements",
        gpu_s,
        count as f64 / gpu_s,
        rayon::current_num_threads(),
        cpu_s,
        count as f64 / cpu_s,
        bad.len()
    );
    assert!(
        bad.is_empty(),
        "seed {seed}: {} disagreements, first records {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}
