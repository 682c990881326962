//! Helm charts as references of their own: the name a chart carries through the pipeline,
//! and where its versions come from.
//!
//! A chart is an [`ImageName`] like an image, so that policies, markers, rejections,
//! grouping, pull requests and the report treat it as they treat an image:
//!
//! - an **OCI chart** (`oci://registry.example.com/charts` + `nginx`, or Argo CD's
//!   scheme-less `registry.example.com/charts`) *is* a registry repository
//!   (`registry.example.com/charts/nginx`): its versions are its tags, listed by the
//!   registry client like any image's;
//! - a chart of a **classic Helm repository** (`https://charts.example.com/stable` +
//!   `nginx`) is named `charts.example.com/stable/nginx`, and its reference keeps the
//!   repository's URL as written (`https://charts.example.com/stable/nginx`): its versions
//!   come from the repository's `index.yaml` ([`index`]), fetched once per repository per
//!   run through the client of that host, with the same `registries[]` entry (credentials,
//!   CA, `url`) a registry of that host would get.

pub mod app_version;
pub mod archive;
pub mod index;
pub mod lock;

use imagebump_model::name::{parse_name, ImageName};

/// A chart reference: the name it goes by and how it is written (`written` keeps a classic
/// repository's scheme, which tells where the versions are listed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartName {
    pub image: ImageName,
    pub written: String,
}

/// Why a chart reference does not make a [`ChartName`]; each variant holds the text as
/// written (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChartNameError {
    #[error("chart {0:?}: not a chart name (the repository belongs in repoURL)")]
    NotAChart(String),
    #[error("chart repository {0:?}: not a repository URL")]
    NotARepository(String),
    #[error("chart {chart} of {repo}: the repository and chart do not make a usable name")]
    Unusable { chart: String, repo: String },
    /// `--chart`'s value, as given.
    #[error("{0:?}: expected REPOSITORY/CHART[@VERSION] (https://charts.example.com/stable/nginx@1.2.3, oci://registry.example.com/charts/nginx)")]
    NotAChartArgument(String),
}

/// The name of chart `chart` of the repository `repo` (a classic repository's
/// `http(s)://` URL, an `oci://` URL, or Argo CD's scheme-less OCI form).
pub fn chart_name(repo: &str, chart: &str) -> Result<ChartName, ChartNameError> {
    let repo = repo.trim().trim_end_matches('/');
    let chart = chart.trim();
    if chart.is_empty() || chart.contains('/') || chart.contains(':') {
        return Err(ChartNameError::NotAChart(chart.to_string()));
    }
    let (rest, classic) = if let Some(r) = repo
        .strip_prefix("https://")
        .or_else(|| repo.strip_prefix("http://"))
    {
        (r, true)
    } else {
        (repo.strip_prefix("oci://").unwrap_or(repo), false)
    };
    if rest.is_empty() || rest.contains("://") || rest.contains(['?', '#', '@']) {
        return Err(ChartNameError::NotARepository(repo.to_string()));
    }
    let host = rest.split('/').next().unwrap_or_default();
    let image = parse_name(&format!("{rest}/{chart}"))
        .ok()
        // A host without a dot or port would be taken for a Docker Hub path.
        .filter(|n| n.registry == host)
        .ok_or_else(|| ChartNameError::Unusable {
            chart: chart.to_string(),
            repo: repo.to_string(),
        })?;
    let written = if classic {
        format!("{repo}/{chart}")
    } else {
        format!("oci://{rest}/{chart}")
    };
    Ok(ChartName { image, written })
}

/// The URL of the classic Helm repository a chart reference written as `written` comes
/// from, or `None` for an OCI chart (or an image).
pub fn classic_repository(written: &str) -> Option<&str> {
    if !(written.starts_with("https://") || written.starts_with("http://")) {
        return None;
    }
    written.rsplit_once('/').map(|(repo, _)| repo)
}

/// `REPO/CHART[@VERSION]` as `imagebump tags --chart` takes it: the chart's name and the
/// version, if one is given.
pub fn parse_chart_arg(arg: &str) -> Result<(ChartName, Option<String>), ChartNameError> {
    let (path, version) = match arg.rsplit_once('@') {
        Some((p, v)) if !v.is_empty() && !v.contains('/') => (p, Some(v.to_string())),
        _ => (arg, None),
    };
    let Some((repo, chart)) = path.trim_end_matches('/').rsplit_once('/') else {
        return Err(ChartNameError::NotAChartArgument(arg.to_string()));
    };
    Ok((chart_name(repo, chart)?, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_classic_and_oci_charts() {
        let c = chart_name("https://charts.example.com/stable/", "nginx").unwrap();
        assert_eq!(c.image.to_string(), "charts.example.com/stable/nginx");
        assert_eq!(c.written, "https://charts.example.com/stable/nginx");
        assert_eq!(
            classic_repository(&c.written),
            Some("https://charts.example.com/stable")
        );
        let c = chart_name("http://127.0.0.1:8080", "web").unwrap();
        assert_eq!(c.image.to_string(), "127.0.0.1:8080/web");
        assert_eq!(
            classic_repository(&c.written),
            Some("http://127.0.0.1:8080")
        );
        for repo in ["oci://ghcr.io/acme/charts", "ghcr.io/acme/charts"] {
            let c = chart_name(repo, "web").unwrap();
            assert_eq!(c.image.to_string(), "ghcr.io/acme/charts/web");
            assert_eq!(c.written, "oci://ghcr.io/acme/charts/web");
            assert_eq!(classic_repository(&c.written), None);
        }
    }

    #[test]
    fn unusable_names_are_errors() {
        assert!(chart_name("https://charts.example.com", "a/b").is_err());
        assert!(chart_name("https://charts.example.com", "").is_err());
        assert!(chart_name("https://", "web").is_err());
        assert!(chart_name("https://u:p@charts.example.com", "web").is_err());
        // A single-label host would be read as a Docker Hub path.
        assert!(chart_name("https://charts/stable", "web").is_err());
        assert!(chart_name("https://charts.example.com", "Web").is_err());
    }

    #[test]
    fn chart_arguments() {
        let (c, v) = parse_chart_arg("https://charts.example.com/stable/nginx@4.11.2").unwrap();
        assert_eq!(c.written, "https://charts.example.com/stable/nginx");
        assert_eq!(v.as_deref(), Some("4.11.2"));
        let (c, v) = parse_chart_arg("oci://ghcr.io/acme/web").unwrap();
        assert_eq!(c.image.to_string(), "ghcr.io/acme/web");
        assert_eq!(v, None);
        let e = parse_chart_arg("nginx").map(|_| ()).unwrap_err();
        assert_eq!(e, ChartNameError::NotAChartArgument("nginx".into()));
        let e = chart_name("https://charts.example.com", "a/b").unwrap_err();
        let want = r#"chart "a/b": not a chart name (the repository belongs in repoURL)"#;
        assert_eq!(e.to_string(), want);
    }
}
