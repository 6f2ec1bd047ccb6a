//! Chain ids and replay protection: which chain a transaction is signed for.
//!
//! A signature without a chain id (a pre-EIP-155 legacy transaction, v = 27/28) is valid on every
//! chain that shares the sender's nonce; so is a typed transaction or an EIP-7702 authorization
//! with chain id 0 (EIP-7702: "chain_id 0 is valid on any chain"). Signing one can lose funds on a
//! chain the caller never meant, so [`ChainPolicy`] refuses them unless the caller opts in, as
//! geth's `--rpc.allow-unprotected-txs` does.

use crate::tx::TxRequest;
use crate::EthError;

/// The chain id a signer fills in, the one it insists on, and whether unprotected signatures are allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChainPolicy {
    /// The chain this signer signs for. A request without `chainId` gets it; a request with a
    /// different `chainId` is refused. `None`: every request must carry its own.
    pub chain_id: Option<u64>,
    /// Sign without replay protection when asked to (legacy without `chainId`, or chain id 0).
    pub allow_unprotected: bool,
}

impl ChainPolicy {
    /// A policy for one chain, replay protection required.
    pub fn for_chain(chain_id: u64) -> Self {
        ChainPolicy {
            chain_id: Some(chain_id),
            allow_unprotected: false,
        }
    }

    /// Fills in or checks `request`'s chain id, and refuses an unprotected signature unless allowed.
    pub fn apply(&self, request: &mut TxRequest) -> Result<(), EthError> {
        match (request.chain_id, self.chain_id) {
            (Some(asked), Some(configured)) if asked != configured => {
                return Err(EthError::field(
                    "chainId",
                    format!("{asked} is not this signer's chain {configured}"),
                ));
            }
            (None, Some(configured)) => request.chain_id = Some(configured),
            (None, None) if !self.allow_unprotected => {
                return Err(EthError::field(
                    "chainId",
                    "missing: name the chain (or configure the signer's chain id); signing \
                     without one gives no replay protection and needs an explicit opt-in \
                     (--allow-unprotected)",
                ));
            }
            _ => {}
        }
        if request.chain_id == Some(0) {
            self.check_unprotected("chainId", "chain id 0")?;
        }
        if let Some(list) = &request.authorization_list {
            for (i, auth) in list.iter().enumerate() {
                if auth.chain_id.is_zero() {
                    self.check_unprotected(
                        &format!("authorizationList[{i}].chainId"),
                        "an authorization for chain id 0 (valid on every chain)",
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Refuses `what` (a signature valid on more than one chain) unless unprotected signing is allowed.
    pub fn check_unprotected(&self, field: &str, what: &str) -> Result<(), EthError> {
        if self.allow_unprotected {
            Ok(())
        } else {
            Err(EthError::field(
                field.to_owned(),
                format!(
                    "{what} would be signed without replay protection; refused unless \
                     unprotected signing is allowed (--allow-unprotected)"
                ),
            ))
        }
    }
}
