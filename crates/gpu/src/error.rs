//! The one error type of a GPU call: the device cannot be used here, or a driver call failed.
//!
//! Each GPU crate keeps its own public error for what its callers can get wrong (inputs, keys);
//! the driver's failures reach those through [`Error`], converted in one place.

use chainsig_core::backend::BackendError;

/// The name under which GPU failures reach `chainsig_core`'s backend API: the signature
/// backend (`chainsig-cuda`) registers under it.
pub const BACKEND_NAME: &str = "cuda";

/// A GPU call that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No usable driver, device or NVRTC here; the reason says which.
    #[error("GPU unavailable: {0}")]
    Unavailable(String),
    /// A driver call failed.
    #[error("{what}: {detail}")]
    Device {
        /// The operation (the driver function, or what it was for).
        what: &'static str,
        /// The driver's error.
        detail: String,
    },
}

/// A failed driver call as an [`Error::Device`] naming the operation.
pub fn device_err(what: &'static str, e: impl std::fmt::Debug) -> Error {
    Error::Device {
        what,
        detail: format!("{e:?}"),
    }
}

/// Unavailable stays unavailable (the registry then reports the reason); a failed driver call is
/// a device error, "what: detail" as the driver said it.
impl From<Error> for BackendError {
    fn from(e: Error) -> BackendError {
        match e {
            Error::Unavailable(reason) => BackendError::Unavailable {
                backend: BACKEND_NAME.into(),
                reason,
            },
            Error::Device { what, detail } => BackendError::Device {
                backend: BACKEND_NAME.into(),
                reason: format!("{what}: {detail}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_failure_keeps_its_operation_and_detail() {
        let e = device_err("cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(e.to_string(), "cuMemAlloc: \"CUDA_ERROR_OUT_OF_MEMORY\"");
        match BackendError::from(e) {
            BackendError::Device { backend, reason } => {
                assert_eq!(backend, BACKEND_NAME);
                assert_eq!(reason, "cuMemAlloc: \"CUDA_ERROR_OUT_OF_MEMORY\"");
            }
            other => panic!("wrong error: {other}"),
        }
        match BackendError::from(Error::Unavailable("no driver".into())) {
            BackendError::Unavailable { reason, .. } => assert_eq!(reason, "no driver"),
            other => panic!("wrong error: {other}"),
        }
    }
}
