//! On a machine with a CUDA GPU: SM2 records from their own bytes through
//! `CudaBackend::verify_raw` (keys decoded and checked, Z_A and e computed on the device) give
//! the CPU path's outcome for every record: `chainsig_cpu::Preparer` (SEC1 decoding, Z_A, e)
//! then `chainsig_cpu::verify_item`, the error text of every refused key included. Keys are
//! fresh (one a record), half compressed, with about 4% spoiled in the ways the CPU path
//! refuses (host_raw::key_bytes), a tenth of the signatures spoiled, messages of 0-300 bytes;
//! then records of eight known signers, whose records go through their tables, alone and
//! interleaved with the fresh ones; then
//! `chainsig_cpu::pipeline::verify_records` on the records as the CLI reads them (the raw path
//! chosen for the GPU) against the same on the CPU backend.
//! The runs are timed beside the CPU path's preparation alone.
//!
//! CHAINSIG_RAW_RECORDS sets the count (default 20,000; the device run takes 1,048,576) and
//! CHAINSIG_RAW_SEED the seed (default: fresh from the clock, printed). Without a driver or GPU
//! the test prints why it skipped.

use super::gpu::{env_number, open_or_skip};
use super::host_raw::{cpu_prepare, key_bytes};
use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::RecordError;
use chainsig_cpu::prepare::Preparer;
use chainsig_cuda::raw::{RawSm2Batch, RawSm2Item, RawVerdicts};
use chainsig_cuda::signers::SignerTables;
use chainsig_cuda::{CudaBackend, CudaConfig};
use chainsig_testkit::sets::{generate_messages, MessageRecord};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::time::Instant;

/// The records as raw bytes: keys compressed for even records, a few spoiled (case 8-12 of
/// key_bytes) where `spoil` holds.
fn raw_batch(records: &[MessageRecord], seed: u64, spoil: bool) -> RawSm2Batch {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let mut batch = RawSm2Batch::with_capacity(records.len(), records.len() * 300);
    for (i, rec) in records.iter().enumerate() {
        let case = if spoil && rng.gen_ratio(1, 25) {
            rng.gen_range(8..13)
        } else if i % 2 == 0 {
            0
        } else {
            5
        };
        let key = key_bytes(case, &rec.px, &rec.py, &mut rng);
        let item = RawSm2Item {
            r: &rec.r,
            s: &rec.s,
            pubkey: &key,
            id: &rec.id,
            msg: &rec.msg,
        };
        batch.push(&item).expect("identifiers of the kit fit ENTL");
    }
    batch
}

/// The CPU path's outcome per record, on every core; and its preparation time alone.
fn cpu_outcomes(batch: &RawSm2Batch) -> (Vec<Result<bool, RecordError>>, f64) {
    let prep = Preparer::new();
    let t = Instant::now();
    let prepared: Vec<_> = (0..batch.len())
        .into_par_iter()
        .map(|i| cpu_prepare(&prep, &batch.item(i)))
        .collect();
    let secs = t.elapsed().as_secs_f64();
    let out = prepared
        .into_par_iter()
        .map(|p| {
            p.map(|item| chainsig_cpu::verify_item(chainsig_core::Algorithm::Sm2, false, &item))
        })
        .collect();
    (out, secs)
}

/// The keys that sign at least one record in 64 of `records`: the generator's signers, not the
/// keys it corrupted (each of those signs a record or two).
fn signer_keys(records: &[MessageRecord]) -> Vec<([u8; 32], [u8; 32])> {
    let mut uses = std::collections::HashMap::new();
    for r in records {
        *uses.entry((r.px, r.py)).or_insert(0usize) += 1;
    }
    let mut keys: Vec<_> = uses
        .into_iter()
        .filter(|&(_, n)| n >= records.len() / 64)
        .map(|(key, _)| key)
        .collect();
    keys.sort();
    keys
}

/// The GPU's answer (after one warm-up run), timed: the median of three runs in seconds.
fn gpu_run(gpu: &CudaBackend, batch: &RawSm2Batch) -> (RawVerdicts, f64) {
    let first = gpu.verify_raw(batch).expect("raw SM2 on the GPU");
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            let t = Instant::now();
            let again = gpu.verify_raw(batch).expect("raw SM2 on the GPU");
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(again, first, "the same batch answered differently");
            secs
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (first, times[1])
}

/// The path the pipeline took before the raw one, on the same records, timed (the median of
/// three runs after a warm-up, each with a fresh Preparer, so every signer is new): keys decoded
/// and Z_A computed on the host's cores, then `verify_messages` (SM3 and verification on the
/// GPU); its verdicts must be the CPU path's too.
fn todays_path(gpu: &CudaBackend, batch: &RawSm2Batch, want: &[Result<bool, RecordError>]) -> f64 {
    use chainsig_core::messages::{MessageBatch, MessageItem};
    use chainsig_core::Backend;
    let run = || {
        let prep = Preparer::new();
        let t = Instant::now();
        let prepared: Vec<_> = (0..batch.len())
            .into_par_iter()
            .map(|i| {
                let it = batch.item(i);
                chainsig_cpu::prepare::decode_pubkey(chainsig_core::Algorithm::Sm2, it.pubkey)
                    .map(|(px, py)| (i, prep.z_a(it.id, &px, &py), px, py))
            })
            .collect();
        let ok: Vec<_> = prepared.iter().filter_map(|p| p.as_ref().ok()).collect();
        let items: Vec<MessageItem> = ok
            .iter()
            .map(|(i, za, px, py)| {
                let it = batch.item(*i);
                MessageItem {
                    za,
                    msg: it.msg,
                    r: it.r,
                    s: it.s,
                    px,
                    py,
                }
            })
            .collect();
        let map = gpu
            .verify_messages(&MessageBatch::from_items(&items))
            .expect("today's path on the GPU");
        let secs = t.elapsed().as_secs_f64();
        for (k, (i, ..)) in ok.iter().enumerate() {
            assert_eq!(Ok(map.get(k)), want[*i], "today's path, record {i}");
        }
        secs
    };
    run();
    let mut times: Vec<f64> = (0..3).map(|_| run()).collect();
    times.sort_by(f64::total_cmp);
    times[1]
}

fn compare(label: &str, got: &RawVerdicts, want: &[Result<bool, RecordError>]) {
    assert_eq!(got.len(), want.len());
    let mut tally = [0usize; 3]; // valid, invalid, refused
    for (i, w) in want.iter().enumerate() {
        let g = got.outcome(i);
        match (w, &g) {
            (Ok(a), Ok(b)) if a == b => tally[usize::from(!a)] += 1,
            (Err(a), Err(b)) if (a.field, &a.reason) == (b.field, &b.reason) => tally[2] += 1,
            _ => panic!("{label}: record {i}: CPU {w:?}, GPU {g:?}"),
        }
    }
    println!(
        "{label}: 0 disagreements on {} records ({} valid, {} invalid, {} refused keys)",
        want.len(),
        tally[0],
        tally[1],
        tally[2]
    );
}

#[test]
fn gpu_raw_sm2_records_give_the_cpu_paths_outcomes() {
    let Some(gpu) = open_or_skip(CudaConfig {
        raw_sm2: true,
        ..CudaConfig::default()
    }) else {
        return;
    };
    let count: usize = env_number("CHAINSIG_RAW_RECORDS", 20_000);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let seed: u64 = env_number("CHAINSIG_RAW_SEED", clock);
    println!("CHAINSIG_RAW_RECORDS={count} CHAINSIG_RAW_SEED={seed}");

    // Fresh signers: a key a record.
    let (records, _) = generate_messages(count, count, 100, seed);
    let batch = raw_batch(&records, seed, true);
    let (want, prep_secs) = cpu_outcomes(&batch);
    let (got, secs) = gpu_run(&gpu, &batch);
    compare("fresh signers", &got, &want);
    let before = todays_path(&gpu, &batch, &want);
    println!(
        "fresh signers, today's path (host: SEC1 decoding and Z_A by the Preparer, then SM3 and \
         verification on the GPU): {:.3} ms, {:.3e} records/s",
        before * 1e3,
        count as f64 / before
    );
    println!(
        "fresh signers: GPU {:.3} ms, {:.3e} records/s end to end from bytes; CPU preparation alone \
         (SEC1, Z_A, e) {:.3} ms on {} threads",
        secs * 1e3,
        count as f64 / secs,
        prep_secs * 1e3,
        rayon::current_num_threads()
    );

    // Eight known signers loaded (the generator's keys; records whose key it corrupted, or whose
    // key bytes raw_batch spoiled, are nobody's and go the fresh way). First a batch of theirs
    // alone, the known-signer target's case; then theirs interleaved with the fresh records.
    let (known, _) = generate_messages(count, 8, 100, seed ^ 0x4b);
    let keys = signer_keys(&known);
    let tables = SignerTables::build(&keys).expect("the known signers' tables");
    gpu.load_signers(&tables).expect("load the tables");
    let batch = raw_batch(&known, seed ^ 0x6b, true);
    let (want, _) = cpu_outcomes(&batch);
    let (got, secs) = gpu_run(&gpu, &batch);
    compare("known signers", &got, &want);
    println!(
        "known signers ({} keys): GPU {:.3} ms, {:.3e} records/s end to end from bytes",
        keys.len(),
        secs * 1e3,
        known.len() as f64 / secs
    );
    let mut mixed: Vec<MessageRecord> = Vec::with_capacity(count);
    for (a, b) in records.iter().zip(&known).take(count / 2) {
        mixed.push(b.clone());
        mixed.push(a.clone());
    }
    let batch = raw_batch(&mixed, seed ^ 0x6d, true);
    let (want, _) = cpu_outcomes(&batch);
    let (got, secs) = gpu_run(&gpu, &batch);
    compare("known and fresh signers", &got, &want);
    println!(
        "known and fresh signers, half each: GPU {:.3} ms, {:.3e} records/s",
        secs * 1e3,
        mixed.len() as f64 / secs
    );

    // The user's path: records as the CLI reads them, through the pipeline, which sends SM2
    // records with messages to this backend as their bytes.
    use chainsig_cpu::pipeline::verify_records;
    let records: Vec<Result<VerifyRecord, RecordError>> = (0..batch.len())
        .map(|i| {
            let it = batch.item(i);
            Ok(VerifyRecord {
                alg: chainsig_core::Algorithm::Sm2,
                pubkey: it.pubkey.to_vec(),
                payload: Payload::Message {
                    msg: it.msg.to_vec(),
                    hash: chainsig_core::HashAlg::Sm3,
                },
                r: *it.r,
                s: *it.s,
                sm2_id: it.id.to_vec(),
            })
        })
        .collect();
    let gpu = std::sync::Arc::new(gpu);
    let mut registry = chainsig_cpu::cpu_registry();
    registry.register(gpu.clone());
    let prep = Preparer::new();
    let t = Instant::now();
    let on_gpu = verify_records(&registry, chainsig_cuda::NAME, false, &prep, &records)
        .expect("the pipeline on the GPU");
    let secs = t.elapsed().as_secs_f64();
    assert!(
        on_gpu
            .batches
            .iter()
            .all(|(_, used, _)| used == chainsig_cuda::NAME),
        "{:?}",
        on_gpu.batches
    );
    let on_cpu = verify_records(&registry, "cpu", false, &Preparer::new(), &records)
        .expect("the pipeline on the CPU");
    assert_eq!(on_gpu.verdicts, on_cpu.verdicts, "the pipeline's verdicts");
    println!(
        "pipeline (records decoded, then the raw path): {:.3} ms for {} records, 0 disagreements \
         with the CPU backend",
        secs * 1e3,
        records.len()
    );
}
