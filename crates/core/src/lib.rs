//! chainsig-core: the data model every backend and surface shares.
//!
//! Data flows one way: records are parsed and hashed (`record`, `der`, `hash`), prepared into a
//! column-major [`Batch`], verified by a [`Backend`] chosen through the [`Registry`], and come back
//! as a [`Bitmap`] of verdicts, with a [`RecordError`] for each record that could not be checked.

pub mod algorithm;
pub mod backend;
pub mod batch;
pub mod be256;
pub mod bitmap;
pub mod checkmem;
pub mod curve;
pub mod der;
pub mod error;
pub mod fault;
pub mod flat_json;
pub mod hash;
pub mod hexstr;
pub mod messages;
pub mod raw_sm2;
pub mod record;
pub mod rows;
pub mod vectors;

pub use algorithm::{Algorithm, HashAlg};
pub use backend::{Backend, BackendError, Registry, TxAnswer, TX_DEFER};
pub use batch::{Batch, PreparedItem, RecoverItem, Recovered, Verdicts};
pub use bitmap::Bitmap;
pub use error::RecordError;
