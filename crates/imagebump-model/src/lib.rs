//! imagebump's vocabulary: the words every stage shares, with no I/O.
//!
//! This crate is the bottom floor of the workspace (docs/architecture.md): it depends on no
//! other imagebump crate, and everything else may depend on it. What lives here is data and
//! the pure functions that read or print it: [`Problem`], image names and references,
//! platforms, the policy keys, the `imagebump.yaml` schema, credentials sources as written,
//! the forge kinds, every environment variable imagebump reads ([`env`]), and the exit codes.

// Unit tests may count, slice and call `unreachable!`; clippy.toml lets them unwrap, expect,
// panic and index (Cargo.toml holds the library to the no-panic set).
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::string_slice,
        clippy::unreachable
    )
)]

pub mod config;
pub mod credentials;
pub mod duration;
pub mod env;
pub mod escape;
pub mod exit;
pub mod forge;
pub mod name;
pub mod platform;
pub mod policy;
mod problem;
pub mod promotion;
pub mod verify;

pub use forge::ForgeKind;
pub use problem::Problem;
