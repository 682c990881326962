//! imagebump's vocabulary: the words every stage shares, with no I/O.
//!
//! This crate is the bottom floor of the workspace (docs/architecture.md): it depends on no
//! other imagebump crate, and everything else may depend on it. What lives here is data and
//! the pure functions that read or print it: [`Problem`], image names and references,
//! platforms, the policy keys, the `imagebump.yaml` schema, credentials sources as written,
//! the forge kinds, every environment variable imagebump reads ([`env`]), and the exit codes.

// Library code never panics, whatever the input: no unwrap/expect/panic, no unchecked
// arithmetic, no indexing or slicing that could go out of bounds. `indexing_slicing` does not
// look at `str`, so `string_slice` covers `&text[a..b]` (which also panics inside a multi-byte
// character), and `panic` does not cover `unreachable!`, `todo!` and `unimplemented!`.
// Tests may panic.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented,
        clippy::arithmetic_side_effects,
        clippy::indexing_slicing,
        clippy::string_slice
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
