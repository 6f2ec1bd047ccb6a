//! Bearer-token authentication.
//!
//! Tokens come from a file, one a line (blank lines ignored). Only their keccak-256 digests are
//! kept, and a presented token is hashed the same way and compared with every digest in constant
//! time (`subtle`), so neither the position of the first differing byte nor the token's length
//! shows in the response time, and which token matched is not revealed by an early exit.

use alloy_primitives::keccak256;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// The accepted tokens, as digests.
#[derive(Clone)]
pub struct Tokens {
    digests: Vec<[u8; 32]>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tokens({} tokens)", self.digests.len())
    }
}

impl Tokens {
    /// Tokens from text, one a line; surrounding whitespace is not part of a token.
    pub fn parse(text: &str) -> Result<Self, String> {
        let digests: Vec<[u8; 32]> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(|token| keccak256(token.as_bytes()).0)
            .collect();
        if digests.is_empty() {
            return Err("holds no token".into());
        }
        Ok(Tokens { digests })
    }

    /// Tokens from a file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = zeroize::Zeroizing::new(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
        );
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The 1-based line position of the token that matches `presented`, if one does.
    pub fn check(&self, presented: &[u8]) -> Option<usize> {
        let digest = keccak256(presented).0;
        let mut found = subtle::Choice::from(0);
        let mut index = 0u64;
        for (i, known) in self.digests.iter().enumerate() {
            let hit = known.ct_eq(&digest);
            index.conditional_assign(&(i as u64 + 1), hit);
            found |= hit;
        }
        bool::from(found).then_some(index as usize)
    }
}

/// Who sent a request, for the audit log: the peer's address and the token it used.
#[derive(Clone, Copy, Debug, Default)]
pub struct Client {
    pub peer: Option<SocketAddr>,
    /// The token's position in the tokens file, when authentication is on.
    pub token: Option<usize>,
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.peer {
            Some(peer) => write!(f, "{peer}")?,
            None => f.write_str("unknown")?,
        }
        match self.token {
            Some(token) => write!(f, " token#{token}"),
            None => Ok(()),
        }
    }
}

/// Middleware: attaches the [`Client`] to the request and, when tokens are configured, refuses
/// requests without a valid `Authorization: Bearer TOKEN` with 401 (gRPC: `UNAUTHENTICATED`; the
/// token is then the `authorization` metadata, the same header). `/upcheck` stays open, as
/// load balancers probe it without credentials.
pub async fn authenticate(
    State(tokens): State<Option<Arc<Tokens>>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let mut client = Client { peer, token: None };
    if let Some(tokens) = &tokens {
        if request.uri().path() != "/upcheck" {
            let presented = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| bearer_token(v.as_bytes()));
            match presented.and_then(|token| tokens.check(token)) {
                Some(index) => client.token = Some(index),
                None => {
                    tracing::warn!(client = %client, path = request.uri().path(), "unauthorised request refused");
                    if crate::is_grpc(&request) {
                        return crate::grpc_refusal(tonic::Status::unauthenticated(
                            unauthorised_message(presented.is_some()),
                        ));
                    }
                    return unauthorised(presented.is_some());
                }
            }
        }
    }
    request.extensions_mut().insert(client);
    next.run(request).await
}

/// The token of an `Authorization` value of the Bearer scheme (RFC 6750 §2.1). The scheme name is
/// case-insensitive (RFC 7235 §2.1: `bearer`, `BEARER` and `Bearer` are one scheme) and is
/// followed by one or more spaces; the token itself is compared exactly, in constant time, by
/// [`Tokens::check`].
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let start = rest.iter().position(|&b| b != b' ')?;
    Some(&rest[start..])
}

fn unauthorised_message(had_token: bool) -> &'static str {
    if had_token {
        "invalid bearer token"
    } else {
        "missing bearer token (Authorization: Bearer TOKEN)"
    }
}

fn unauthorised(had_token: bool) -> Response {
    let message = unauthorised_message(had_token);
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(serde_json::json!({ "error": message })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_exact_tokens_only() {
        let tokens = Tokens::parse("alpha\n\n  beta  \n").unwrap();
        assert_eq!(tokens.check(b"alpha"), Some(1));
        assert_eq!(tokens.check(b"beta"), Some(2));
        assert_eq!(tokens.check(b"alph"), None);
        assert_eq!(tokens.check(b"alphaa"), None);
        assert_eq!(tokens.check(b""), None);
        assert!(Tokens::parse(" \n\n").is_err());
        assert!(!format!("{tokens:?}").contains("alpha"));
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_is_not() {
        for value in ["Bearer tok", "bearer tok", "BEARER tok", "bEaReR   tok"] {
            assert_eq!(bearer_token(value.as_bytes()), Some(&b"tok"[..]), "{value}");
        }
        assert_eq!(bearer_token(b"Bearer TOK"), Some(&b"TOK"[..]));
        for value in [
            "Basic tok",
            "Bearertok",
            "Bearer",
            "Bearer ",
            "Bearerx tok",
            "",
            " tok",
        ] {
            assert_eq!(bearer_token(value.as_bytes()), None, "{value:?}");
        }
    }
}
