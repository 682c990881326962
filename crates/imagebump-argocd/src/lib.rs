//! Argo CD Applications and argocd-image-updater (AIU) configuration, read from the files of
//! a GitOps repository. Pure functions over parsed YAML (`serde_json::Value`): no cluster,
//! no I/O.
//!
//! - [`app`]: `Application` manifests, their sources, override file names, kustomize image
//!   strings.
//! - [`merge_patch`]: RFC 7396 and the source Argo CD renders after `.argocd-source*.yaml`.
//! - [`annotations`]: AIU annotations on an Application, mapped to imagebump policies, with
//!   notes for what imagebump does differently.
//! - [`image_updater`]: AIU v1 `ImageUpdater` resources and which one configures an app.
//! - [`appset`]: `ApplicationSet`s expanded into the Applications they generate, from git
//!   alone (list, git directories, matrix).
//! - [`helm_path`]: AIU's Helm key paths (`a.b[2].c`, literal dotted keys).
//!
//! The `imagebump` package's `discover/argocd.rs` turns what is read here into references.

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

pub mod annotations;
pub mod app;
pub mod appset;
mod glob;
pub mod helm_path;
mod identifier;
pub mod image_updater;
pub mod merge_patch;

pub use annotations::{
    from_annotations, HelmKeys, PullSecretName, UpdaterConfig, UpdaterImage, WriteBack,
    WriteBackMethod, WriteBackTarget,
};
pub use app::{
    find_apps, parse_kustomize_image, App, AppError, KustomizeImage, Source, SourceKind,
};
pub use image_updater::{config_for, find_image_updaters, BrokenUpdater, ImageUpdater};
