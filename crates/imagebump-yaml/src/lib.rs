//! Lossless YAML: a located read view (every scalar with its byte span) and byte-exact
//! scalar edits that are verified by parsing the result again.
//!
//! Reading uses two parsers on purpose: `yaml_serde` (libyaml) decides whether the file is
//! valid YAML and is the reference for verification, `yaml-edit` (a lossless CST) gives the
//! byte spans. Plain block YAML (most files) is read instead by a strict one-pass reader
//! (`simple.rs`) that accepts only what libyaml reads the same way. An edit replaces only the
//! bytes of one scalar; afterwards the new text is read again and must equal the old document
//! with exactly the intended values changed, otherwise the edit is refused.

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

mod block;
mod edit;
mod fingerprint;
mod insert;
mod keys;
mod located;
mod one_line;
mod simple;

pub use block::BlockText;
pub use edit::{
    alone_in_its_line, apply_edits, apply_edits_known, provable_in_lines, proven_in_their_lines,
    render_alone, render_scalar, Edit, EditError, Inner,
};
pub use fingerprint::Fingerprint;
pub use insert::{apply_upserts, json_documents, set_path, ReadError, SetPathError, Upsert};
pub use located::{
    check_depth, check_nesting, parse_located, parse_located_fingerprinted, Doc, Key, LineIndex,
    Node, ParseError, PathSeg, Scalar, Style,
};
pub use one_line::{one_line_value, OneLineBlock};

/// `text` read by libyaml as a `T`, after [`check_nesting`] (which refuses deep nesting at
/// its line before libyaml spends its time on it). The one way code outside this crate reads
/// YAML through serde: tests/hostile_config.rs (`every_yaml_read_checks_its_depth_first`)
/// fails on any other call of `yaml_serde::from_str` or its kin.
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ParseError> {
    check_nesting(text)?;
    yaml_serde::from_str(text).map_err(|e| ParseError::from_serde(&e))
}

/// A YAML path inside one document, printed as `a.b[2].c`.
pub fn path_to_string(path: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            PathSeg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            PathSeg::Index(i) => {
                out.push_str(&format!("[{i}]"));
            }
        }
    }
    out
}
