//! The CUDA backend's configuration ([`CudaConfig`]): kernel, streams, blocks, chunking and the
//! batch sizes below which the small-batch kernels take over; its defaults, and the overrides a
//! machine can apply without a rebuild (JSON, or the environment variable `CHAINSIG_CUDA_CONFIG`).
//!
//! The measurements behind each default are in BENCHMARKS.md ("Why the CUDA defaults are what
//! they are"); the docs here say what each field does and why it exists.

use crate::kernels::KernelConfig;
use crate::Mode;

mod devices;
pub use devices::{Devices, MAX_DEVICES};

/// Switches of the CUDA backend; the default is the fast mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CudaConfig {
    pub kernel: KernelConfig,
    /// CUDA streams the batch is spread over (1 to 16): copies and kernels of different chunks
    /// overlap across streams.
    pub streams: usize,
    /// Threads per block of the main kernel and the ECDSA kernels, a multiple of 32 up to 1024;
    /// a batch too small to give every multiprocessor a block gets smaller ones
    /// (`Loaded::block_for` in the launch geometry).
    pub block_size: u32,
    /// Threads per block of the forms for small batches (compact, lane pairs, quads), a multiple
    /// of 32 up to 1024.
    #[serde(default = "default_small_block")]
    pub small_block_size: u32,
    /// Items per chunk; None cuts the batch into `streams` equal chunks of at least
    /// `min_chunk_items`.
    pub chunk_items: Option<usize>,
    /// The fewest items a chunk gets when the batch is cut into `streams` chunks: smaller chunks
    /// overlap too little to pay for their own copies and launches.
    #[serde(default = "default_min_chunk")]
    pub min_chunk_items: usize,
    /// The devices to open, one engine each (its own streams, pinned buffers, modules and
    /// tables): every device the driver shows (the default, `null`), or a list of ordinals such
    /// as `[0, 1]`; an ordinal may repeat, `[0, 0]` opening two logical shards on one card (how
    /// the sharding is tested on a host of one GPU). Ordinals count the devices the driver shows
    /// after `CUDA_VISIBLE_DEVICES` ([`Devices`]). Each batch is split among the engines in
    /// proportion to their measured rates ([`crate::shards`]).
    #[serde(default)]
    pub devices: Devices,
    /// Batches of fewer records than this are not split among devices: they go whole to one
    /// device (the fastest of those idle), since below it a device's answer costs about its
    /// fixed latency whatever its share.
    #[serde(default = "default_shard_below")]
    pub shard_below: usize,
    /// Batches of at most this many items run the compact form of a fast-mode kernel
    /// ([`KernelConfig::compacted`]); 0 never does. A small batch leaves one warp per scheduler,
    /// which then waits on instruction fetch more than on arithmetic: there the compact kernel,
    /// one copy of the doubling, is faster; at high occupancy the inlined one is.
    pub compact_below: usize,
    /// Batches of at most this many items run the split lane-pair form of a fast-mode kernel,
    /// four threads per signature: lane pairs for t·P and, beside them, for s·G
    /// ([`KernelConfig::split`]), compact; 0 never does. It shortens the chain each signature
    /// waits on where the batch leaves schedulers idle, and costs throughput where it does not.
    /// Its blocks are `small_block_size` rounded up to a multiple of 256.
    #[serde(default)]
    pub pairs_below: usize,
    /// Whether a work smaller than one round of the GPU (every multiprocessor full of its
    /// kernel) runs in one block per multiprocessor, as small as covers it
    /// (`tail_block` in the launch geometry), instead of the configured block halved until every
    /// multiprocessor has one. A partial round in whole-round blocks would fill some
    /// multiprocessors and leave the rest idle. Only works under one round: cutting the partial
    /// round off a larger work and spreading it the same way was slower, since its blocks mix
    /// into the whole rounds.
    #[serde(default = "default_on")]
    pub spread_small: bool,
    /// Whether a work of at least one round of the GPU (every multiprocessor full of its kernel)
    /// is cut into chunks of one round each, instead of `streams` equal chunks; `chunk_items`
    /// overrides both. Whole rounds keep every multiprocessor busy until the last chunk.
    #[serde(default = "default_on")]
    pub round_chunks: bool,
    /// Batches of at most this many items run the same with quads ([`KernelConfig::quad`]),
    /// eight threads per signature; 0 (the default, [`QUADS_BELOW`]) never does: a switch for
    /// measurements.
    #[serde(default)]
    pub quads_below: usize,
    /// Whether SM2 records that carry their messages reach the GPU as their own bytes
    /// ([`crate::raw`]: keys decoded and checked, Z_A and e computed on the device) instead of
    /// prepared on the host. On by default: on an H100 (2026-12-07, BENCHMARKS.md) it gave the
    /// CPU backend's outcome on every one of 262,144 fresh records and ran 1.86 × 10⁷ records/s
    /// from their bytes, against 9.4 × 10⁵/s with the host preparing them;
    /// `CHAINSIG_CUDA_CONFIG='{"raw_sm2":false}'` turns it off.
    #[serde(default = "default_on")]
    pub raw_sm2: bool,
    /// The most calls an engine runs at once (1 to 64), each on a set of `streams` streams and
    /// buffers of its own, made as calls overlap; a call beyond them waits for a set. 1 runs
    /// one call at a time, as every engine did before 2026-12-08. Eight covers the CLI's
    /// workers (four by default) and a node's few verifying threads; each set's buffers grow
    /// to a chunk (tens of MB of pinned and device memory).
    #[serde(default = "default_calls_at_once")]
    pub calls_at_once: usize,
}

impl Default for CudaConfig {
    fn default() -> Self {
        CudaConfig {
            kernel: KernelConfig::default_fast(),
            // Four streams: enough overlap of copies and kernels for a work under one round;
            // more streams cut such a work into chunks too small to pay for their launches.
            streams: 4,
            // At 128 registers, one block of 512 threads fills a multiprocessor's registers:
            // one block an SM.
            block_size: 512,
            small_block_size: SMALL_BLOCK,
            chunk_items: None,
            min_chunk_items: MIN_CHUNK_ITEMS,
            devices: Devices::all(),
            shard_below: SHARD_BELOW,
            compact_below: COMPACT_BELOW,
            pairs_below: PAIRS_BELOW,
            quads_below: QUADS_BELOW,
            spread_small: true,
            round_chunks: true,
            raw_sm2: true,
            calls_at_once: CALLS_AT_ONCE,
        }
    }
}

/// The default [`CudaConfig::calls_at_once`].
pub const CALLS_AT_ONCE: usize = 8;

fn default_calls_at_once() -> usize {
    CALLS_AT_ONCE
}

fn default_on() -> bool {
    true
}

/// The default [`CudaConfig::compact_below`]: where the inlined kernel, in its larger blocks,
/// overtakes the compact one.
pub const COMPACT_BELOW: usize = 98_304;

/// The default [`CudaConfig::shard_below`]: twice the largest batch of the lane-pair kernels
/// ([`PAIRS_BELOW`]), whose answer takes about 1–2 ms on one device whatever the size. A starting
/// point, not yet measured on a host of several GPUs.
pub const SHARD_BELOW: usize = 32_768;

fn default_shard_below() -> usize {
    SHARD_BELOW
}

/// The default [`CudaConfig::min_chunk_items`].
pub const MIN_CHUNK_ITEMS: usize = 4096;

fn default_min_chunk() -> usize {
    MIN_CHUNK_ITEMS
}

/// The default [`CudaConfig::small_block_size`]: a split kernel needs 256 threads a block (so
/// that its t·P half has a warp on each of a multiprocessor's four schedulers), and the compact
/// kernel runs best in blocks of that size too.
pub const SMALL_BLOCK: u32 = 256;

fn default_small_block() -> u32 {
    SMALL_BLOCK
}

/// The default [`CudaConfig::pairs_below`]: up to about one round of the split lane-pair kernel
/// (four threads a signature); above it the compact kernel is faster.
pub const PAIRS_BELOW: usize = 16_384;

/// The default [`CudaConfig::quads_below`]: none. Since the window's odd multiples share one Z
/// the quads take longer than the lane pairs at every size measured; they stay a switch.
pub const QUADS_BELOW: usize = 0;

// pick_kernel takes the first small-batch form that fits, so the bounds must grow in the order
// of small_kernels: quads (when on), then pairs, then the compact kernel.
const _: () = assert!(QUADS_BELOW < PAIRS_BELOW && PAIRS_BELOW < COMPACT_BELOW);

impl CudaConfig {
    /// The default configuration running kernel `k`: in the default block, or in the largest
    /// multiple of 64 threads that one multiprocessor's 65536 registers hold at `k`'s register
    /// cap (255, the most a thread may use, where it has none), so that any kernel opens.
    pub fn with_kernel(k: KernelConfig) -> CudaConfig {
        let base = CudaConfig::default();
        let registers = k.max_registers.unwrap_or(255).max(1);
        let fits = (65536 / registers) / 64 * 64;
        CudaConfig {
            kernel: k,
            block_size: base.block_size.min(fits.max(64)),
            ..base
        }
    }

    /// This configuration running exactly its kernel, over exactly its streams, at every batch
    /// size (for ablations, where a measurement must belong to the configuration it names).
    pub fn exact(self) -> CudaConfig {
        CudaConfig {
            compact_below: 0,
            pairs_below: 0,
            quads_below: 0,
            min_chunk_items: 1,
            spread_small: false,
            round_chunks: false,
            ..self
        }
    }

    /// The default configuration with the overrides of the environment variable
    /// `CHAINSIG_CUDA_CONFIG` ([`CudaConfig::with_overrides`]; unset or blank: the default). An
    /// error names the variable and the field.
    pub fn from_env() -> Result<CudaConfig, String> {
        match std::env::var("CHAINSIG_CUDA_CONFIG") {
            Ok(json) if !json.trim().is_empty() => CudaConfig::default()
                .with_overrides(&json)
                .map_err(|e| format!("CHAINSIG_CUDA_CONFIG: {e}")),
            _ => Ok(CudaConfig::default()),
        }
    }

    /// This configuration with the fields a JSON object names replaced, nested objects merged
    /// field by field: `{"block_size": 256, "kernel": {"max_registers": 128}}` changes those two
    /// and keeps the rest. For tuning on a machine without rebuilding (the CLI reads the
    /// environment variable `CHAINSIG_CUDA_CONFIG`). The result is validated; an error names the
    /// field.
    pub fn with_overrides(self, json: &str) -> Result<CudaConfig, String> {
        fn merge(base: &mut serde_json::Value, over: serde_json::Value) {
            match (base, over) {
                (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
                    for (k, v) in o {
                        merge(b.entry(k).or_insert(serde_json::Value::Null), v);
                    }
                }
                (b, o) => *b = o,
            }
        }
        let over: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
        if !over.is_object() {
            return Err("expected a JSON object of CudaConfig fields".into());
        }
        let known = serde_json::to_value(self).map_err(|e| e.to_string())?;
        let mut merged = known.clone();
        merge(&mut merged, over);
        unknown_field(&merged, &known, "")?;
        // A value of the wrong type: the error names the field by its path and quotes at most
        // about 80 characters of the value (serde's message quotes it whole).
        let cfg: CudaConfig = serde_path_to_error::deserialize(merged).map_err(|e| {
            let reason = chainsig_core::error::shorten(&e.inner().to_string(), 100);
            format!("{}: {reason}", e.path())
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Items per chunk of a batch (or of the works run together) of `len` items.
    pub(crate) fn chunk_len(&self, len: usize) -> usize {
        let c = self.chunk_items.unwrap_or_else(|| {
            len.div_ceil(self.streams)
                .max(self.min_chunk_items.min(len))
        });
        c.max(1).next_multiple_of(64)
    }

    /// The SM2 kernel configurations a backend of this configuration loads, one module each: its
    /// main kernel first, then its forms for small batches (`CudaConfig::small_kernels`).
    pub fn sm2_kernels(&self) -> Vec<KernelConfig> {
        std::iter::once(self.kernel)
            .chain(self.small_kernels().into_iter().map(|(k, _)| k))
            .collect()
    }

    /// The kernels loaded beside the main one for smaller batches, each with the largest batch
    /// it takes, smallest first: the split quad form, the split lane-pair form, the compact form.
    pub(crate) fn small_kernels(&self) -> Vec<(KernelConfig, usize)> {
        let k = self.kernel;
        if k.mode != Mode::Fast || k.compact || k.pair {
            return Vec::new();
        }
        [
            (k.compacted().quad().split(), self.quads_below),
            (k.compacted().split(), self.pairs_below),
            (k.compacted(), self.compact_below),
        ]
        .into_iter()
        .filter(|&(_, below)| below > 0)
        .collect()
    }
}

impl CudaConfig {
    /// Refuses, by field name, settings the engine cannot run.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.streams) {
            return Err(format!("streams must be 1..=16, got {}", self.streams));
        }
        for (name, block) in [
            ("block_size", self.block_size),
            ("small_block_size", self.small_block_size),
        ] {
            if block == 0 || block % 32 != 0 || block > 1024 {
                return Err(format!(
                    "{name} must be a multiple of 32 up to 1024, got {block}"
                ));
            }
        }
        if self.chunk_items == Some(0) {
            return Err("chunk_items must be positive".into());
        }
        if !(1..=64).contains(&self.calls_at_once) {
            return Err(format!(
                "calls_at_once must be 1..=64, got {}",
                self.calls_at_once
            ));
        }
        Ok(())
    }
}
/// An error naming the first field of `merged` that `known` (a serialised configuration) lacks:
/// a misspelt override must not pass silently.
fn unknown_field(
    merged: &serde_json::Value,
    known: &serde_json::Value,
    path: &str,
) -> Result<(), String> {
    if let (serde_json::Value::Object(m), serde_json::Value::Object(k)) = (merged, known) {
        for (name, v) in m {
            let here = format!("{path}{name}");
            match k.get(name) {
                None if here == "device" => {
                    return Err(
                        "unknown field `device` (now `devices`, a list of ordinals: [1])".into(),
                    )
                }
                None => return Err(format!("unknown field `{here}`")),
                Some(kv) => unknown_field(v, kv, &format!("{here}."))?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_batches_are_cut_into_fewer_chunks_unless_exact() {
        let c = CudaConfig {
            streams: 8,
            ..CudaConfig::default()
        }; // chunks of at least 4096
        assert_eq!(c.chunk_len(1000), 1024);
        assert_eq!(c.chunk_len(4096), 4096);
        assert_eq!(c.chunk_len(8192), 4096);
        assert_eq!(c.chunk_len(1 << 20), 1 << 17);
        assert_eq!(c.exact().chunk_len(4096), 512);
        assert_eq!(CudaConfig::default().chunk_len(65536), 16384);
        let fixed = CudaConfig {
            chunk_items: Some(100),
            ..c
        };
        assert_eq!(fixed.chunk_len(4096), 128);
    }

    #[test]
    fn overrides_replace_the_fields_they_name_and_refuse_unknown_ones() {
        let base = CudaConfig::default();
        let c = base
            .with_overrides(r#"{"block_size": 256, "kernel": {"max_registers": 128}}"#)
            .unwrap();
        assert_eq!(c.block_size, 256);
        assert_eq!(c.kernel.max_registers, Some(128));
        assert_eq!(c.kernel.mode, base.kernel.mode);
        assert_eq!(c.streams, base.streams);
        let e = base
            .with_overrides(r#"{"kernel": {"max_regs": 128}}"#)
            .unwrap_err();
        assert!(e.contains("kernel.max_regs"), "{e}");
        assert!(base
            .with_overrides(r#"{"streams": 17}"#)
            .unwrap_err()
            .contains("streams"));
        assert_eq!(
            base.with_overrides(r#"{"calls_at_once": 1}"#)
                .unwrap()
                .calls_at_once,
            1
        );
        for bad in ["0", "65", "\"8\"", "8.5", "1e40", "-1"] {
            let e = base
                .with_overrides(&format!(r#"{{"calls_at_once": {bad}}}"#))
                .unwrap_err();
            assert!(e.contains("calls_at_once"), "{bad}: {e}");
        }
        assert!(base.with_overrides("[1]").is_err());
        assert!(base.with_overrides("{").unwrap_err().contains("JSON"));
        // A value of the wrong type names its field, nested or not, and a long one is cut.
        let e = base.with_overrides(r#"{"raw_sm2": "1"}"#).unwrap_err();
        assert!(e.starts_with("raw_sm2: invalid type"), "{e}");
        let e = base
            .with_overrides(r#"{"kernel": {"max_registers": "128"}}"#)
            .unwrap_err();
        assert!(e.starts_with("kernel.max_registers: "), "{e}");
        let long = format!(r#"{{"raw_sm2": "{}"}}"#, "a".repeat(10_000));
        let e = base.with_overrides(&long).unwrap_err();
        assert!(e.starts_with("raw_sm2: ") && e.len() < 160, "{e}");
    }

    #[test]
    fn the_device_list_is_read_from_json_and_a_bad_one_is_named() {
        let base = CudaConfig::default();
        assert_eq!(base.devices, Devices::all());
        let c = base.with_overrides(r#"{"devices": [0, 0, 0]}"#).unwrap();
        assert_eq!(c.devices.named(), Some(vec![0, 0, 0]));
        assert_eq!(c.streams, base.streams);
        let back = c.with_overrides(r#"{"devices": null}"#).unwrap();
        assert_eq!(back.devices, Devices::all());
        for (json, want) in [
            (r#"{"devices": []}"#, "devices: an empty list"),
            (r#"{"devices": [0, -1]}"#, "devices[1]: invalid"),
            (r#"{"devices": "0,1"}"#, "devices: invalid type"),
            (r#"{"devices": {"gpu": 1}}"#, "devices: invalid type"),
            (r#"{"devices": [300]}"#, "devices: ordinal 300"),
            (r#"{"device": 1}"#, "unknown field `device` (now `devices`"),
            (r#"{"shard_below": "1"}"#, "shard_below: invalid type"),
        ] {
            let e = base.with_overrides(json).unwrap_err();
            assert!(e.starts_with(want), "{json}: {e}");
        }
        let c = base.with_overrides(r#"{"shard_below": 0}"#).unwrap();
        assert_eq!(c.shard_below, 0);
        // A configuration without the new fields (written before them) still reads.
        let mut old = serde_json::to_value(base).unwrap();
        let fields = old.as_object_mut().unwrap();
        fields.remove("devices");
        fields.remove("shard_below");
        let read: CudaConfig = serde_json::from_value(old).unwrap();
        assert_eq!(read, base);
    }

    #[test]
    fn bad_configurations_are_refused_by_name() {
        let mut c = CudaConfig {
            streams: 17,
            ..CudaConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("streams"));
        c.streams = 4;
        c.block_size = 100;
        assert!(c.validate().unwrap_err().contains("block_size"));
        c.block_size = 544; // 17 warps: 120 registers a thread fill an SM
        assert!(c.validate().is_ok());
        c.block_size = 128;
        c.chunk_items = Some(0);
        assert!(c.validate().unwrap_err().contains("chunk_items"));
    }

    #[test]
    fn small_batch_kernels_are_loaded_only_for_the_fast_mode_and_never_by_exact() {
        // The quads load only where a configuration asks for them (off by default).
        let c = CudaConfig {
            quads_below: 4096,
            ..CudaConfig::default()
        };
        let small = c.small_kernels();
        let quads = KernelConfig::default_fast().compacted().quad().split();
        let split = KernelConfig::default_fast().compacted().split();
        let compact = KernelConfig::default_fast().compacted();
        assert_eq!(
            small,
            vec![
                (quads, 4096),
                (split, PAIRS_BELOW),
                (compact, COMPACT_BELOW)
            ]
        );
        assert_eq!(
            CudaConfig::default().small_kernels(),
            vec![(split, PAIRS_BELOW), (compact, COMPACT_BELOW)]
        );
        assert_eq!(quads.threads_per_item(), 8);
        assert_eq!(split.threads_per_item(), 4);
        assert!(quads.name().ends_with("_compact_quad_split"));
        assert!(split.name().ends_with("_compact_split"));
        assert!(compact.name().ends_with("_compact"));
        assert!(c.exact().small_kernels().is_empty());
        let no_pairs = CudaConfig {
            pairs_below: 0,
            quads_below: 0,
            ..c
        };
        assert_eq!(no_pairs.small_kernels(), vec![(compact, COMPACT_BELOW)]);
        let mut paper = CudaConfig::default();
        paper.kernel.mode = Mode::Paper;
        assert!(paper.small_kernels().is_empty());
        let mut already = CudaConfig::default();
        already.kernel = already.kernel.compacted();
        assert!(already.small_kernels().is_empty());
    }

    #[test]
    fn a_kernel_gets_a_block_its_register_cap_lets_open() {
        let fast = KernelConfig::default_fast();
        assert_eq!(CudaConfig::with_kernel(fast), CudaConfig::default());
        let r168 = KernelConfig {
            max_registers: Some(168),
            ..fast
        };
        assert_eq!(CudaConfig::with_kernel(r168).block_size, 384);
        let uncapped = KernelConfig {
            max_registers: None,
            ..fast
        };
        assert_eq!(CudaConfig::with_kernel(uncapped).block_size, 256);
        assert_eq!(CudaConfig::with_kernel(uncapped).kernel, uncapped);
    }
}
