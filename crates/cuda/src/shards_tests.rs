//! The sharding layer driven by fake devices: answers are the verdicts of a fixed rule, so any
//! record lost, answered twice or out of place shows; speed is a sleep per record; failures are
//! chosen per device.

// The lists of ranges a device was given sometimes hold one range: that is the point, not a typo.
#![allow(clippy::single_range_in_vec_init)]

use super::*;
use std::sync::{Arc, Condvar};
use std::time::Duration;

/// The fake verdict of record i.
fn verdict(i: usize) -> bool {
    (i * 7 + i / 3) % 5 != 0
}

fn reference(len: usize) -> Bitmap {
    Bitmap::from_bools((0..len).map(verdict))
}

#[derive(Clone, Copy, PartialEq)]
enum Fail {
    Never,
    /// A device error on every part (a lost card).
    Device,
    /// The request refused (every device would refuse it).
    Input,
    /// A device error on the first n parts, then answers.
    First(usize),
}

/// A device that answers by the rule, sleeping `nanos_per_record` a record.
struct Fake {
    nanos_per_record: u64,
    fail: Fail,
    calls: Mutex<Vec<Range<usize>>>,
}

impl Fake {
    fn new(nanos_per_record: u64, fail: Fail) -> Fake {
        Fake {
            nanos_per_record,
            fail,
            calls: Mutex::new(Vec::new()),
        }
    }

    fn verify(&self, r: Range<usize>) -> Result<Bitmap, BackendError> {
        let call = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(r.clone());
            calls.len()
        };
        match self.fail {
            Fail::Never => {}
            Fail::First(n) if call > n => {}
            Fail::First(_) => return Err(chainsig_gpu::device_err("copy in", "lost").into()),
            Fail::Device => return Err(chainsig_gpu::device_err("kernel launch", "lost").into()),
            Fail::Input => {
                return Err(BackendError::Input {
                    backend: "fake".into(),
                    reason: "unknown signer".into(),
                })
            }
        }
        std::thread::sleep(Duration::from_nanos(self.nanos_per_record * r.len() as u64));
        Ok(Bitmap::from_bools(r.map(verdict)))
    }

    fn calls(&self) -> Vec<Range<usize>> {
        self.calls.lock().unwrap().clone()
    }
}

fn shards(devices: Vec<Fake>, whole_below: usize) -> Shards<Fake> {
    Shards::new(devices, whole_below)
}

fn verify(s: &Shards<Fake>, len: usize) -> Result<Bitmap, BackendError> {
    s.run(len, |d: &Fake, r| d.verify(r))
}

/// The ranges that succeeded, over every device, sorted: they must tile 0..len exactly.
fn answered(s: &Shards<Fake>) -> Vec<Range<usize>> {
    let mut all: Vec<Range<usize>> = s
        .devices()
        .iter()
        .filter(|d| d.fail == Fail::Never)
        .flat_map(Fake::calls)
        .collect();
    all.sort_by_key(|r| r.start);
    all
}

fn tiles(ranges: &[Range<usize>], len: usize) -> bool {
    let mut at = 0;
    for r in ranges {
        if r.start != at {
            return false;
        }
        at = r.end;
    }
    at == len
}

#[test]
fn every_size_comes_back_whole_and_in_order() {
    for len in [0, 1, 2, 63, 64, 65, 127, 129, 191, 1000, 4097, 10_001] {
        let s = shards((0..3).map(|_| Fake::new(0, Fail::Never)).collect(), 0);
        assert_eq!(verify(&s, len).unwrap(), reference(len), "len {len}");
        let ranges = answered(&s);
        assert!(tiles(&ranges, len), "len {len}: {ranges:?}");
        let starts_aligned = ranges.iter().all(|r| r.start % ALIGN == 0);
        assert!(starts_aligned, "len {len}: {ranges:?}");
        let records: u64 = s.stats().iter().map(|st| st.records).sum();
        assert_eq!(records, len as u64);
    }
}

#[test]
fn the_first_split_is_equal_and_later_ones_follow_the_measured_rates() {
    // 1 µs and 4 µs a record: the fast device should end up with about four fifths.
    let s = shards(
        vec![Fake::new(1_000, Fail::Never), Fake::new(4_000, Fail::Never)],
        0,
    );
    let len = 40_000;
    for _ in 0..3 {
        assert_eq!(verify(&s, len).unwrap(), reference(len));
    }
    let first = s.devices()[0].calls();
    assert_eq!(
        first[0],
        0..20_032,
        "the first split is equal, at a multiple of 64"
    );
    let last = first.last().unwrap().len() as f64 / len as f64;
    assert!(
        (0.7..0.9).contains(&last),
        "fast device's last share {last}"
    );
    let st = s.stats();
    let ratio = st[0].rate.unwrap() / st[1].rate.unwrap();
    assert!((2.5..5.0).contains(&ratio), "measured rate ratio {ratio}");
}

#[test]
fn a_split_follows_the_weights_at_multiples_of_64() {
    let s = shards((0..3).map(|_| Fake::new(0, Fail::Never)).collect(), 0);
    s.stats[0].lock().unwrap().rate = Some(3.0);
    s.stats[1].lock().unwrap().rate = Some(1.0);
    let ranges = |among: &[usize], r: Range<usize>| -> Vec<(usize, Range<usize>)> {
        s.split(r, among, false)
            .into_iter()
            .map(|p| (p.device, p.range))
            .collect()
    };
    assert_eq!(ranges(&[0, 1], 0..4096), [(0, 0..3072), (1, 3072..4096)]);
    // Device 2 has no rate yet: it counts as the mean of the others (2), weights 3, 1, 2.
    assert_eq!(
        ranges(&[0, 1, 2], 0..4096),
        [(0, 0..2048), (1, 2048..2752), (2, 2752..4096)]
    );
    // A redone range keeps its place; a range too short for everyone goes to one device.
    assert_eq!(ranges(&[1, 2], 640..1000), [(1, 640..832), (2, 832..1000)]);
    assert_eq!(ranges(&[0, 1], 0..10), [(1, 0..10)]);
    assert_eq!(ranges(&[0, 1], 5..5), [(0, 5..5)]);
}

#[test]
fn a_failing_devices_part_is_redone_on_the_others() {
    let s = shards(
        vec![
            Fake::new(0, Fail::Never),
            Fake::new(0, Fail::Device),
            Fake::new(0, Fail::Never),
        ],
        0,
    );
    let len = 10_001;
    assert_eq!(verify(&s, len).unwrap(), reference(len));
    let failed = s.devices()[1].calls();
    assert_eq!(failed.len(), 1, "one part, one failure: {failed:?}");
    let st = s.stats();
    assert_eq!((st[1].failures, st[1].records), (1, 0));
    assert_eq!(st[0].redone + st[2].redone, failed[0].len() as u64);
    assert!(st[0].redone > 0 && st[2].redone > 0, "{st:?}");
    assert!(tiles(&answered(&s), len));
    // The next batch still tries the device (a fault may pass) and still loses nothing.
    assert_eq!(verify(&s, 5000).unwrap(), reference(5000));
    assert_eq!(s.stats()[1].failures, 2);
}

#[test]
fn a_device_that_keeps_failing_gets_ever_smaller_parts_and_one_success_restores_it() {
    let s = shards(
        vec![Fake::new(0, Fail::Never), Fake::new(0, Fail::Device)],
        0,
    );
    for _ in 0..4 {
        assert_eq!(verify(&s, 4096).unwrap(), reference(4096));
    }
    let sizes: Vec<usize> = s.devices()[1].calls().iter().map(|r| r.len()).collect();
    assert_eq!(
        sizes,
        [2048, 1344, 832, 448],
        "halved weight for each failure in a row"
    );
    assert_eq!((s.stats()[1].failing, s.stats()[0].failing), (4, 0));
    // Failing twice, then answering: its third part succeeds and the fourth is a full share.
    let s = shards(
        vec![Fake::new(0, Fail::Never), Fake::new(0, Fail::First(2))],
        0,
    );
    for _ in 0..4 {
        assert_eq!(verify(&s, 4096).unwrap(), reference(4096));
    }
    let sizes: Vec<usize> = s.devices()[1].calls().iter().map(|r| r.len()).collect();
    assert_eq!(sizes, [2048, 1344, 832, 2048]);
    assert_eq!((s.stats()[1].failing, s.stats()[1].failures), (0, 2));
}

#[test]
fn a_small_batch_goes_whole_to_one_device_and_its_failure_is_redone() {
    let s = shards(
        vec![Fake::new(0, Fail::Device), Fake::new(0, Fail::Never)],
        1000,
    );
    assert_eq!(verify(&s, 999).unwrap(), reference(999));
    assert_eq!(s.devices()[0].calls(), [0..999]);
    assert_eq!(s.devices()[1].calls(), [0..999]);
    // With rates known, the faster idle device takes it.
    s.stats[1].lock().unwrap().rate = Some(2.0);
    s.stats[0].lock().unwrap().rate = Some(1.0);
    assert_eq!(s.pick(), 1);
    s.busy[1].store(1, Ordering::SeqCst);
    assert_eq!(s.pick(), 0, "the idle device before the faster busy one");
}

#[test]
fn when_every_device_fails_the_error_is_returned() {
    let s = shards(
        vec![Fake::new(0, Fail::Device), Fake::new(0, Fail::Device)],
        0,
    );
    match verify(&s, 5000) {
        Err(BackendError::Device { reason, .. }) => assert!(reason.contains("lost"), "{reason}"),
        other => panic!("expected the device error, got {other:?}"),
    }
    assert!(s
        .stats()
        .iter()
        .all(|st| st.failures == 1 && st.records == 0));
    let one = shards(vec![Fake::new(0, Fail::Device)], 0);
    assert!(verify(&one, 0).is_err());
}

#[test]
fn an_error_in_the_request_is_returned_at_once_not_redone() {
    let s = shards(
        vec![Fake::new(0, Fail::Never), Fake::new(0, Fail::Input)],
        0,
    );
    assert!(matches!(verify(&s, 5000), Err(BackendError::Input { .. })));
    assert_eq!(s.devices()[0].calls().len(), 1, "no redo on device 0");
    assert_eq!(s.stats()[0].redone, 0);
}

#[test]
fn parts_run_at_the_same_time() {
    // Each part waits until both have started: run one after the other, they would time out.
    let met = Arc::new((Mutex::new(0usize), Condvar::new()));
    let s = Shards::new(vec![(), ()], 0);
    let answer = s.run(256, |_: &(), r: Range<usize>| {
        let (count, cv) = &*met;
        let mut n = count.lock().unwrap();
        *n += 1;
        cv.notify_all();
        let (n, timeout) = cv
            .wait_timeout_while(n, Duration::from_secs(20), |n| *n < 2)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "parts ran one after the other ({})",
            *n
        );
        Ok(Bitmap::from_bools(r.map(verdict)))
    });
    assert_eq!(answer.unwrap(), reference(256));
}

#[test]
fn each_runs_on_every_device_and_reports_an_error() {
    let s = shards((0..3).map(|_| Fake::new(0, Fail::Never)).collect(), 0);
    s.each(|d| d.verify(0..1).map(|_| ())).unwrap();
    assert!(s.devices().iter().all(|d| d.calls() == [0..1]));
    let s = shards(
        vec![Fake::new(0, Fail::Never), Fake::new(0, Fail::Device)],
        0,
    );
    assert!(s.each(|d| d.verify(0..1).map(|_| ())).is_err());
    assert_eq!(
        s.devices()[0].calls(),
        [0..1],
        "every device was still asked"
    );
}

#[test]
fn answers_of_parts_join_in_order_aligned_or_not() {
    let bools: Vec<bool> = (0..300).map(verdict).collect();
    for cuts in [
        vec![0, 64, 128, 300],
        vec![0, 1, 65, 66, 299, 300],
        vec![0, 300],
    ] {
        let maps: Vec<Bitmap> = cuts
            .windows(2)
            .map(|w| Bitmap::from_bools(bools[w[0]..w[1]].iter().copied()))
            .collect();
        assert_eq!(Bitmap::concat(maps), reference(300), "{cuts:?}");
    }
    assert_eq!(Bitmap::concat(Vec::new()), Bitmap::new(0));
    assert_eq!(Vec::concat(vec![vec![1, 2], vec![], vec![3]]), [1, 2, 3]);
    let raw = |r: Range<usize>| RawVerdicts {
        verdicts: Bitmap::from_bools(r.clone().map(verdict)),
        faults: r.map(|i| (i % 7) as u8).collect(),
    };
    assert_eq!(
        RawVerdicts::concat(vec![raw(0..64), raw(64..100)]),
        raw(0..100)
    );
    assert_eq!(
        RawVerdicts::concat(vec![raw(0..3), raw(3..100)]),
        raw(0..100)
    );
}
