//! `chainsig.v1.Verifier`: batch verification (a packed bitmap of verdicts) and sender
//! recovery, through the same record rules and batcher as JSON-RPC.

use super::*;

/// `chainsig.v1.Verifier`.
pub struct VerifierService {
    pub(super) state: Arc<AppState>,
}

/// Packs verdicts into the response's bitmap and error list.
pub fn pack_verdicts(verdicts: Vec<Verdict>) -> pb::VerifyBatchResponse {
    let mut valid = vec![0u8; verdicts.len().div_ceil(8)];
    let mut errors = Vec::new();
    let count = verdicts.len() as u32;
    for (i, verdict) in verdicts.into_iter().enumerate() {
        match verdict {
            Verdict::Valid => valid[i / 8] |= 1 << (i % 8),
            Verdict::Invalid => {}
            Verdict::Error(e) => errors.push(pb::RecordError {
                index: i as u32,
                message: e.to_string(),
            }),
        }
    }
    pb::VerifyBatchResponse {
        count,
        valid,
        errors,
    }
}

#[tonic::async_trait]
impl pb::verifier_server::Verifier for VerifierService {
    async fn verify_batch(
        &self,
        request: Request<pb::VerifyBatchRequest>,
    ) -> Result<Response<pb::VerifyBatchResponse>, Status> {
        let started = Instant::now();
        let outcome = self.verify(request.into_inner()).await;
        self.state
            .metrics
            .request(VERIFY_BATCH, started.elapsed(), outcome.is_err());
        outcome.map(Response::new)
    }

    async fn recover_batch(
        &self,
        request: Request<pb::RecoverBatchRequest>,
    ) -> Result<Response<pb::RecoverBatchResponse>, Status> {
        let started = Instant::now();
        let outcome = self.recover(request.into_inner()).await;
        self.state
            .metrics
            .request(RECOVER_BATCH, started.elapsed(), outcome.is_err());
        outcome.map(Response::new)
    }
}

impl VerifierService {
    async fn verify(
        &self,
        request: pb::VerifyBatchRequest,
    ) -> Result<pb::VerifyBatchResponse, Status> {
        let records =
            Records::of(request.records, request.items).map_err(Status::invalid_argument)?;
        ops::check_count(&self.state, records.len()).map_err(Status::invalid_argument)?;
        let defaults = grpc_records::verify_defaults(request.alg, &request.hash)
            .map_err(Status::invalid_argument)?;
        let records = grpc_records::verify_records(records, &defaults);
        let verdicts = self
            .state
            .batcher
            .verify(records, request.low_s)
            .await
            .map_err(Status::internal)?;
        Ok(pack_verdicts(verdicts))
    }

    async fn recover(
        &self,
        request: pb::RecoverBatchRequest,
    ) -> Result<pb::RecoverBatchResponse, Status> {
        let records =
            Records::of(request.records, request.items).map_err(Status::invalid_argument)?;
        ops::check_count(&self.state, records.len()).map_err(Status::invalid_argument)?;
        let records = grpc_records::recover_records(records);
        let results = ops::recover(&self.state, records)
            .await
            .map_err(Status::internal)?;
        Ok(pb::RecoverBatchResponse {
            results: results
                .into_iter()
                .map(|r| pb::RecoverResult {
                    outcome: Some(match r {
                        Ok(found) => pb::recover_result::Outcome::Recovered(pb::Recovered {
                            address: found.address.to_vec(),
                            pubkey: found.pubkey.to_vec(),
                        }),
                        Err(e) => pb::recover_result::Outcome::Error(e.to_string()),
                    }),
                })
                .collect(),
        })
    }
}
