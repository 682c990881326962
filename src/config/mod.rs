//! `imagebump.yaml`: strict schema, discovery of the file, and errors with file and line.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::policy::Strategy;

/// Where imagebump looks for its configuration in the manifest tree, in this order.
pub const CONFIG_NAMES: [&str; 3] = [
    "imagebump.yaml",
    ".imagebump.yaml",
    ".github/imagebump.yaml",
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub scan: ScanConfig,
    #[serde(default)]
    pub registries: Vec<RegistryConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Defaults {
    #[serde(default)]
    pub strategy: Strategy,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScanConfig {
    /// Globs (relative to the root) a file must match to be scanned; empty = everything.
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs of files never scanned.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Globs of Helm values files.
    #[serde(default = "default_helm_values")]
    pub helm_values: Vec<String>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            include: Vec::new(),
            exclude: Vec::new(),
            helm_values: default_helm_values(),
        }
    }
}

fn default_helm_values() -> Vec<String> {
    vec!["**/values*.yaml".into(), "**/values*.yml".into()]
}

/// Settings for the registries whose normalised names (`host/repository`) start with `prefix`.
/// The first matching entry wins.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegistryConfig {
    pub prefix: String,
    /// Endpoint to use instead of `https://<host>`, e.g. a mirror or `http://127.0.0.1:5000`.
    pub url: Option<String>,
    /// PEM file with extra CA certificates (relative paths are relative to the config file).
    pub ca_file: Option<PathBuf>,
    /// Accept any TLS certificate. For test set-ups only.
    #[serde(default)]
    pub insecure: bool,
    /// `env:VAR` (holding `user:password`) or `dockerconfig` (the default).
    pub credentials: Option<String>,
    /// Concurrent requests to this registry (default 8).
    pub concurrency: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}{}: {message}", if *line > 0 { format!(":{line}:{column}") } else { String::new() })]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
}

impl Config {
    /// Checks serde cannot do: every glob compiles.
    pub fn validate(&self) -> Result<(), String> {
        let s = &self.scan;
        for (key, globs) in [
            ("scan.include", &s.include),
            ("scan.exclude", &s.exclude),
            ("scan.helmValues", &s.helm_values),
        ] {
            for g in globs {
                globset::Glob::new(g).map_err(|e| format!("{key}: bad glob {g:?}: {e}"))?;
            }
        }
        Ok(())
    }
}

/// The configuration file to use: `explicit`, else the first of [`CONFIG_NAMES`] in `root`.
pub fn locate(explicit: Option<&Path>, root: &Path) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(|| {
        CONFIG_NAMES
            .iter()
            .map(|n| root.join(n))
            .find(|p| p.is_file())
    })
}

pub fn load(path: &Path) -> Result<Config, Error> {
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: display.clone(),
        source,
    })?;
    let mut config = parse(&text).map_err(|(line, column, message)| Error::Invalid {
        path: display.clone(),
        line,
        column,
        message,
    })?;
    config.validate().map_err(|message| Error::Invalid {
        path: display,
        line: 0,
        column: 0,
        message,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    for r in &mut config.registries {
        if let Some(ca) = &r.ca_file {
            if ca.is_relative() {
                r.ca_file = Some(base.join(ca));
            }
        }
    }
    Ok(config)
}

pub fn parse(text: &str) -> Result<Config, (usize, usize, String)> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    yaml_serde::from_str(text).map_err(|e| {
        let p = crate::yaml::ParseError::from_serde(&e);
        (p.line, p.column, p.message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors_with_line() {
        let (line, _, msg) =
            parse("defaults:\n  strategy: semver\nregistries:\n- prefix: x\n  urll: y\n")
                .unwrap_err();
        assert_eq!(line, 5);
        assert!(msg.contains("unknown field `urll`"), "{msg}");
    }

    #[test]
    fn defaults_apply() {
        let c = parse("registries:\n- prefix: ghcr.io\n  url: http://127.0.0.1:5000\n").unwrap();
        assert_eq!(c.scan.helm_values, default_helm_values());
        assert_eq!(
            c.registries[0].url.as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert!(parse("").is_ok());
    }
}
