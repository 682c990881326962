//! Which forge a remote is, from the command line (`connect.rs`). The `Forge` trait and the
//! three clients live in the `imagebump-forge` crate.

pub mod connect;
