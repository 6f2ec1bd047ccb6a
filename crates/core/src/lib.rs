//! chainsig-core: the data model every backend and surface shares.
pub mod curve;
pub mod vectors;
