//! Forges: the `Forge` trait and the three clients live in the `imagebump-forge` crate;
//! `connect.rs` (which forge a remote is, from the command line) stays with the package.

pub use imagebump_forge::*;

pub mod connect;
