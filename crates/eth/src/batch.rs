//! Signing the user's own transactions in bulk (`chainsig eth sign-bulk`): requests in the
//! `eth sign` format, nonces filled in per sender where absent, signed on every core, answers in
//! input order.
//!
//! A batch goes through three passes: the requests are parsed in parallel; nonces are then
//! assigned in input order (the only sequential step: each sender's next nonce depends on the
//! records before it); the signatures are made in parallel, in groups of eight that sign in the
//! CPU's lanes where it has them ([`crate::signing::sign_prehash_batch`]). A bad record gets its error and
//! takes no nonce (a gap would hold back every later transaction of its sender); the rest of the
//! batch goes on.

use std::collections::HashMap;

use alloy_primitives::Address;
use rayon::prelude::*;
use serde_json::Value;

use crate::tx::json::{object, present};
use crate::tx::sign_checked_batch;
use crate::{EthError, SignedTx, Signer, TxRequest};
use chainsig_cpu::lanes::LANES;

/// The next nonce of each sender, carried from batch to batch.
#[derive(Clone, Debug, Default)]
pub struct NonceBook {
    first: u64,
    next: HashMap<Address, u64>,
}

impl NonceBook {
    /// Every sender starts at `first` (its account's next nonce on chain, which the caller knows).
    pub fn starting_at(first: u64) -> Self {
        NonceBook {
            first,
            next: HashMap::new(),
        }
    }

    /// The nonce for `sender`'s next transaction: `given` when the request names one, else the
    /// one after the sender's last; either way the sender's count moves past it.
    fn take(&mut self, sender: Address, given: Option<u64>) -> Result<u64, EthError> {
        let next = self.next.entry(sender).or_insert(self.first);
        let nonce = given.unwrap_or(*next);
        *next = nonce
            .checked_add(1)
            .ok_or_else(|| EthError::field("nonce", "2^64 − 1 leaves no next nonce"))?;
        Ok(nonce)
    }
}

/// One input line read: the request, and whether it named its nonce.
pub struct ParsedLine {
    request: TxRequest,
    nonce_given: bool,
}

/// Reads one line in the `eth sign` format, where `nonce` may be absent.
pub fn parse_line(line: &[u8]) -> Result<ParsedLine, EthError> {
    let text = std::str::from_utf8(line).map_err(|_| EthError::field("json", "not UTF-8"))?;
    if text.trim().is_empty() {
        return Err(EthError::field("json", "empty line"));
    }
    let mut value: Value = serde_json::from_str(text)
        .map_err(|e| EthError::field("json", format!("not JSON: {e}")))?;
    let nonce_given = present(object(&value, "json")?, "nonce").is_some();
    if !nonce_given {
        // A placeholder the nonce pass replaces; `from_json` checks every other field now.
        value["nonce"] = Value::from(0u64);
    }
    Ok(ParsedLine {
        request: TxRequest::from_json(&value)?,
        nonce_given,
    })
}

/// Signs a batch of parsed lines with `signer`, in order: nonces from `nonces`, signatures on
/// every core.
pub fn sign_batch(
    signer: &Signer,
    lines: Vec<Result<ParsedLine, EthError>>,
    nonces: &mut NonceBook,
) -> Vec<Result<SignedTx, EthError>> {
    let requests: Vec<Result<TxRequest, EthError>> = lines
        .into_iter()
        .map(|line| {
            let ParsedLine {
                mut request,
                nonce_given,
            } = line?;
            let sender = signer.sender(request.from)?;
            // Every check that can refuse the record runs before it takes a nonce, so a refused
            // record leaves no gap in its sender's sequence.
            signer.policy().apply(&mut request)?;
            request.to_typed()?;
            let given = nonce_given.then_some(request.nonce);
            request.nonce = nonces.take(sender, given)?;
            request.from = Some(sender);
            Ok(request)
        })
        .collect();
    let lanes = match crate::signing::lanes_for_batches() {
        Ok(lanes) => lanes,
        // A misconfigured switch refuses every record, naming the variable.
        Err(e) => {
            return requests
                .into_iter()
                .map(|r| r.and(Err(e.clone())))
                .collect()
        }
    };
    // Groups of eight records in input order; each group's valid transactions sign together
    // (in lanes where `lanes`), its refused records keep their errors in place.
    requests
        .par_chunks(LANES)
        .flat_map_iter(|group| {
            let checked = group
                .iter()
                .map(|request| {
                    let request = request.as_ref().map_err(Clone::clone)?;
                    let key = signer.key_for(request.from)?;
                    Ok((request.typed_for(key, signer.policy())?, key))
                })
                .collect();
            sign_checked_batch(checked, lanes, &mut Vec::with_capacity(512)).into_iter()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChainPolicy, PrivateKey};

    fn signer() -> (Signer, Address, Address) {
        let mut signer = Signer::new();
        let a = signer.add_key(PrivateKey::from_bytes(&[0x11; 32]).unwrap());
        let b = signer.add_key(PrivateKey::from_bytes(&[0x22; 32]).unwrap());
        signer.set_policy(ChainPolicy::for_chain(5));
        (signer, a, b)
    }

    fn line(from: Address, nonce: Option<u64>) -> Vec<u8> {
        let mut v = serde_json::json!({
            "from": from.to_string(), "to": "0x3535353535353535353535353535353535353535",
            "gas": "0x5208", "maxFeePerGas": "0x64", "maxPriorityFeePerGas": "0x1", "value": "0x1"
        });
        if let Some(n) = nonce {
            v["nonce"] = Value::from(n);
        }
        v.to_string().into_bytes()
    }

    #[test]
    fn nonces_count_per_sender_in_input_order_and_bad_lines_take_none() {
        let (signer, a, b) = signer();
        let mut book = NonceBook::starting_at(7);
        let other_chain = String::from_utf8(line(a, None))
            .unwrap()
            .replacen('{', "{\"chainId\":\"0x6\",", 1)
            .into_bytes();
        let input = [
            line(a, None),
            other_chain,
            line(b, None),
            String::from_utf8(line(a, None))
                .unwrap()
                .replacen('{', "{\"nonce\":\"10\",", 1)
                .into_bytes(),
            line(a, None),
            line(a, Some(20)),
            line(a, None),
            line(b, None),
        ];
        let parsed = input.iter().map(|l| parse_line(l)).collect();
        let signed = sign_batch(&signer, parsed, &mut book);
        let nonce_of = |i: usize| crate::decode_raw(&signed[i].as_ref().unwrap().raw).unwrap();
        use alloy_consensus::Transaction;
        let nonces: Vec<Option<u64>> = (0..input.len())
            .map(|i| {
                signed[i]
                    .as_ref()
                    .ok()
                    .map(|_| nonce_of(i).envelope.nonce())
            })
            .collect();
        assert_eq!(
            nonces,
            vec![
                Some(7),
                None,
                Some(7),
                None,
                Some(8),
                Some(20),
                Some(21),
                Some(8)
            ]
        );
        assert_eq!(signed[1].as_ref().unwrap_err().field_name(), "chainId");
        assert_eq!(signed[3].as_ref().unwrap_err().field_name(), "nonce");
        assert_eq!(nonce_of(2).from, b);
        assert_eq!(nonce_of(2).envelope.chain_id(), Some(5));
        // The book carries over to the next batch.
        let more = sign_batch(&signer, vec![parse_line(&line(a, None))], &mut book);
        let tx = crate::decode_raw(&more[0].as_ref().unwrap().raw).unwrap();
        assert_eq!(tx.envelope.nonce(), 22);
    }
}
