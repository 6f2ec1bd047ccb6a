//! Prometheus metrics, served as text at `/metrics`.
//!
//! Per method (a JSON-RPC method name, a REST route or a gRPC method such as
//! `chainsig.v1.Signer/SignStream`, where each item of a signing stream counts as a request): requests, errors and a latency histogram.
//! Method labels come from a fixed list, so a client sending random method names cannot grow the
//! label set without bound. Also counted: signatures by kind, verifications and recoveries by
//! backend, verification batches, and the process's resident memory (read at scrape time).
//!
//! Every request used to resolve its label three times in the `prometheus` vectors (a hash of
//! the label and a lock each, for the request counter, the error counter and the histogram), and
//! the HTTP middleware first built the label with `format!`. The resolved handles of each label
//! are now kept in a small map of our own the first time the label is seen, looked up once per
//! request under a read lock; the middleware looks up its route by method and matched path
//! without building the label string. A series still appears in `/metrics` only once it has been
//! counted (the error counter of a label is resolved at its first error), so the exposition is
//! unchanged. The map holds at most [`CACHED_LABELS`] labels; past
//! that a label is resolved the old way.

use axum::http::Method;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

/// Most labels whose handles [`Metrics`] keeps (the routes and methods number a few dozen).
pub const CACHED_LABELS: usize = 256;

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
    /// Handles by label (JSON-RPC and gRPC methods).
    labels: Arc<RwLock<HashMap<Box<str>, Cached>>>,
    /// Handles of HTTP routes, by matched path, then by HTTP method.
    routes: Arc<RwLock<RouteMap>>,
    /// The handles of requests no route matched.
    unmatched: Arc<OnceLock<Cached>>,
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
            // From 10 µs: one signature, and a stream's per-transaction time, are tens of µs.
            .buckets(vec![
                10e-6, 20e-6, 30e-6, 40e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3,
                10e-3, 25e-3, 50e-3, 0.1, 0.25, 0.5, 1.0, 2.5,
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
            labels: Arc::default(),
            routes: Arc::default(),
            unmatched: Arc::default(),
        }
    }

    /// Records one answered request under the label `method`.
    pub fn request(&self, method: &str, elapsed: Duration, failed: bool) {
        if let Some(handles) = read(&self.labels).get(method) {
            return self.observe(handles, elapsed, failed, || method.to_string());
        }
        let handles = self.cached(method);
        self.observe(&handles, elapsed, failed, || method.to_string());
        let mut labels = write(&self.labels);
        if labels.len() < CACHED_LABELS {
            labels.entry(method.into()).or_insert(handles);
        }
    }

    /// Records one answered HTTP request under its route: the label `"{method} {path}"` for a
    /// matched path, `unmatched` without one.
    pub fn route(&self, method: &Method, path: Option<&str>, elapsed: Duration, failed: bool) {
        let Some(path) = path else {
            let handles = self.unmatched.get_or_init(|| self.cached("unmatched"));
            return self.observe(handles, elapsed, failed, || "unmatched".to_string());
        };
        let label = || format!("{method} {path}");
        if let Some(handles) = read(&self.routes)
            .get(path)
            .and_then(|by_method| by_method.iter().find(|(m, _)| m == method))
        {
            return self.observe(&handles.1, elapsed, failed, label);
        }
        let handles = self.cached(&label());
        self.observe(&handles, elapsed, failed, label);
        let mut routes = write(&self.routes);
        let cached: usize = routes.values().map(Vec::len).sum();
        if cached < CACHED_LABELS {
            let by_method = routes.entry(path.into()).or_default();
            if !by_method.iter().any(|(m, _)| m == method) {
                by_method.push((method.clone(), handles));
            }
        }
    }

    /// The request and latency handles of `label`; the error counter is left for the first
    /// error, so that its series appears only then, as before the cache.
    fn cached(&self, label: &str) -> Cached {
        Cached {
            requests: self.requests.with_label_values(&[label]),
            latency: self.latency.with_label_values(&[label]),
            errors: OnceLock::new(),
        }
    }

    fn observe(
        &self,
        handles: &Cached,
        elapsed: Duration,
        failed: bool,
        label: impl FnOnce() -> String,
    ) {
        handles.requests.inc();
        if failed {
            handles
                .errors
                .get_or_init(|| self.errors.with_label_values(&[&label()]))
                .inc();
        }
        handles.latency.observe(elapsed.as_secs_f64());
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

/// Matched path, then HTTP method, to the route's handles.
type RouteMap = HashMap<Box<str>, Vec<(Method, Cached)>>;

/// A label's handles as the cache keeps them.
struct Cached {
    requests: prometheus::IntCounter,
    latency: prometheus::Histogram,
    errors: OnceLock<prometheus::IntCounter>,
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

/// The map for reading; a panic while it was held leaves it usable (it only ever grows).
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// VmRSS from /proc/self/status (Linux); `None` elsewhere.
fn resident_memory_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(series))
    }

    #[test]
    fn cached_handles_count_like_the_labels_they_stand_for() {
        let metrics = Metrics::new();
        let ms = Duration::from_millis(1);
        // Nothing counted yet: no series (the cache creates none ahead of use).
        assert!(!metrics.render().contains("chainsig_requests_total{"));
        for failed in [false, true, false] {
            metrics.route(&Method::POST, Some("/"), ms, failed);
            metrics.request("eth_sign", ms, failed);
        }
        metrics.route(&Method::GET, Some("/"), ms, true);
        metrics.route(&Method::GET, None, ms, false);
        let text = metrics.render();
        let count = |series: &str| line(&text, series).map(|l| l.rsplit(' ').next().unwrap());
        assert_eq!(
            count(r#"chainsig_requests_total{method="POST /"}"#),
            Some("3")
        );
        assert_eq!(
            count(r#"chainsig_request_errors_total{method="POST /"}"#),
            Some("1")
        );
        assert_eq!(
            count(r#"chainsig_requests_total{method="GET /"}"#),
            Some("1")
        );
        assert_eq!(
            count(r#"chainsig_request_errors_total{method="GET /"}"#),
            Some("1")
        );
        assert_eq!(
            count(r#"chainsig_requests_total{method="eth_sign"}"#),
            Some("3")
        );
        assert_eq!(
            count(r#"chainsig_requests_total{method="unmatched"}"#),
            Some("1")
        );
        assert_eq!(
            count(r#"chainsig_request_errors_total{method="unmatched"}"#),
            None,
            "no error series before an error"
        );
        assert_eq!(
            count(r#"chainsig_request_duration_seconds_count{method="eth_sign"}"#),
            Some("3")
        );
    }

    #[test]
    fn labels_past_the_cache_limit_are_still_counted() {
        let metrics = Metrics::new();
        let ms = Duration::from_millis(1);
        for round in 0..2 {
            for i in 0..CACHED_LABELS + 10 {
                metrics.request(&format!("m{i}"), ms, round == 1);
                metrics.route(&Method::PUT, Some(&format!("/p{i}")), ms, false);
            }
        }
        assert!(read(&metrics.labels).len() <= CACHED_LABELS);
        let cached: usize = read(&metrics.routes).values().map(Vec::len).sum();
        assert!(cached <= CACHED_LABELS);
        let text = metrics.render();
        let last = CACHED_LABELS + 9;
        assert!(text.contains(&format!("chainsig_requests_total{{method=\"m{last}\"}} 2")));
        assert!(text.contains(&format!(
            "chainsig_request_errors_total{{method=\"m{last}\"}} 1"
        )));
        assert!(text.contains(&format!(
            "chainsig_requests_total{{method=\"PUT /p{last}\"}} 2"
        )));
    }
}
