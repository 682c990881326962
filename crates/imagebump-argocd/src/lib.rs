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
//! The `imagebump` package's `discover/argo_apps/` turns what is read here into references.

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
