//! Prometheus metrics, served as text at `/metrics`.
//!
//! Per method (a JSON-RPC method name, a REST route or a gRPC method such as
//! `chainsig.v1.Signer/SignStream`, where each item of a signing stream counts as a request): requests, errors and a latency histogram.
//! Method labels come from a fixed list, so a client sending random method names cannot grow the
//! label set without bound. Also counted: signatures by kind, verifications and recoveries by
//! backend, verification batches, and the process's resident memory (read at scrape time).

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use std::time::Duration;

/// The label used for every JSON-RPC method the server does not know.
pub const UNKNOWN_METHOD: &str = "unknown";

/// Every counter and histogram the server keeps.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    errors: IntCounterVec,
    latency: HistogramVec,
    signatures: IntCounterVec,
    verifications: IntCounterVec,
    recoveries: IntCounterVec,
    verify_batches: IntCounterVec,
    resident_memory: IntGauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let requests = counter(
            "chainsig_requests_total",
            "Requests (JSON-RPC calls and REST requests) by method",
            &["method"],
        );
        let errors = counter(
            "chainsig_request_errors_total",
            "Requests answered with an error, by method",
            &["method"],
        );
        let signatures = counter(
            "chainsig_signatures_total",
            "Signatures made, by kind (transaction, message)",
            &["kind"],
        );
        let verifications = counter(
            "chainsig_verifications_total",
            "Signatures verified, by algorithm and backend",
            &["alg", "backend"],
        );
        let recoveries = counter(
            "chainsig_recoveries_total",
            "Bare signatures whose signer was recovered, by backend",
            &["backend"],
        );
        let verify_batches = counter(
            "chainsig_verify_batches_total",
            "Batches the verification batcher sent to the backends",
            &["backend"],
        );
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "chainsig_request_duration_seconds",
                "Time to answer a request, by method",
            )
            .buckets(vec![
                50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 0.1, 0.25,
                0.5, 1.0, 2.5,
            ]),
            &["method"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(latency.clone()))
            .expect("unique metric");
        let resident_memory = IntGauge::new(
            "process_resident_memory_bytes",
            "Resident memory of the server process",
        )
        .expect("valid metric");
        registry
            .register(Box::new(resident_memory.clone()))
            .expect("unique metric");
        Metrics {
            registry,
            requests,
            errors,
            latency,
            signatures,
            verifications,
            recoveries,
            verify_batches,
            resident_memory,
        }
    }

    /// Records one answered request.
    pub fn request(&self, method: &str, elapsed: Duration, failed: bool) {
        self.requests.with_label_values(&[method]).inc();
        if failed {
            self.errors.with_label_values(&[method]).inc();
        }
        self.latency
            .with_label_values(&[method])
            .observe(elapsed.as_secs_f64());
    }

    /// The request, error and latency series of one method, resolved once, for callers that
    /// count many requests (the items of a gRPC signing stream).
    pub fn method(&self, method: &str) -> MethodMetrics {
        MethodMetrics {
            requests: self.requests.with_label_values(&[method]),
            errors: self.errors.with_label_values(&[method]),
            latency: self.latency.with_label_values(&[method]),
        }
    }

    pub fn signature(&self, kind: &str) {
        self.signatures.with_label_values(&[kind]).inc();
    }

    pub fn verified(&self, alg: &str, backend: &str, count: usize) {
        self.verifications
            .with_label_values(&[alg, backend])
            .inc_by(count as u64);
    }

    pub fn verify_batch(&self, backend: &str) {
        self.verify_batches.with_label_values(&[backend]).inc();
    }

    pub fn recovered(&self, backend: &str, count: usize) {
        self.recoveries
            .with_label_values(&[backend])
            .inc_by(count as u64);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        if let Some(bytes) = resident_memory_bytes() {
            self.resident_memory.set(bytes);
        }
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("text encoding into a Vec does not fail");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

/// One method's series (see [`Metrics::method`]).
#[derive(Clone)]
pub struct MethodMetrics {
    requests: prometheus::IntCounter,
    errors: prometheus::IntCounter,
    latency: prometheus::Histogram,
}

impl MethodMetrics {
    /// Records one answered request.
    pub fn observe(&self, elapsed: Duration, failed: bool) {
        self.requests.inc();
        if failed {
            self.errors.inc();
        }
        self.latency.observe(elapsed.as_secs_f64());
    }
}

/// VmRSS from /proc/self/status (Linux); `None` elsewhere.
fn resident_memory_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
