//! Per-client rate limits: a token bucket for each client, 429 when it is empty (gRPC:
//! `RESOURCE_EXHAUSTED`; a gRPC call, a whole stream included, is one request).
//!
//! A client is its bearer token when authentication is on (so one caller cannot spread its load
//! over many connections), otherwise its IP address. `/upcheck` is never limited, so a busy
//! client cannot make the server look down to its load balancer. The table of buckets is pruned
//! of full (idle) buckets when it grows large, so many short-lived clients cannot fill memory.

use crate::auth::Client;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Requests a client may send: `per_second` on average, `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ClientKey {
    Token(usize),
    Ip(IpAddr),
    Unknown,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

/// The buckets of every client seen.
pub struct Limiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<ClientKey, Bucket>>,
}

const PRUNE_ABOVE: usize = 10_000;

impl Limiter {
    pub fn new(limit: RateLimit) -> Self {
        Limiter {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from the client's bucket; `Err(seconds)` until the next one is allowed.
    fn take(&self, client: &Client, now: Instant) -> Result<(), f64> {
        let key = match (client.token, client.peer) {
            (Some(token), _) => ClientKey::Token(token),
            (None, Some(peer)) => ClientKey::Ip(peer.ip()),
            (None, None) => ClientKey::Unknown,
        };
        let RateLimit { per_second, burst } = self.limit;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.last).as_secs_f64() * per_second < burst
            });
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let refill = now.duration_since(bucket.last).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err((1.0 - bucket.tokens) / per_second)
        }
    }
}

/// Middleware (inside authentication, which identifies the client).
pub async fn limit(
    State(limiter): State<Option<Arc<Limiter>>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(limiter) = &limiter {
        if request.uri().path() != "/upcheck" {
            let client = request
                .extensions()
                .get::<Client>()
                .copied()
                .unwrap_or_default();
            if let Err(wait) = limiter.take(&client, Instant::now()) {
                tracing::warn!(client = %client, "rate limit exceeded");
                let retry = wait.ceil().max(1.0) as u64;
                if crate::is_grpc(&request) {
                    return crate::grpc_refusal(tonic::Status::resource_exhausted(format!(
                        "rate limit of {} requests per second exceeded; retry in {retry} s",
                        limiter.limit.per_second
                    )));
                }
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, retry.to_string())],
                    axum::Json(serde_json::json!({
                        "error": format!(
                            "rate limit of {} requests per second exceeded; retry in {retry} s",
                            limiter.limit.per_second
                        )
                    })),
                )
                    .into_response();
            }
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn buckets_refill_at_the_rate_and_are_per_client() {
        let limiter = Limiter::new(RateLimit {
            per_second: 10.0,
            burst: 3.0,
        });
        let a = Client {
            peer: None,
            token: Some(1),
        };
        let b = Client {
            peer: None,
            token: Some(2),
        };
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.take(&a, t0).is_ok());
        }
        let wait = limiter.take(&a, t0).unwrap_err();
        assert!((wait - 0.1).abs() < 1e-9, "{wait}");
        assert!(limiter.take(&b, t0).is_ok());
        assert!(limiter.take(&a, t0 + Duration::from_millis(100)).is_ok());
        assert!(limiter.take(&a, t0 + Duration::from_millis(100)).is_err());
        // Refill stops at the burst size.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(limiter.take(&a, later).is_ok());
        }
        assert!(limiter.take(&a, later).is_err());
    }
}
