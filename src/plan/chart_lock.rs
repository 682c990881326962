//! `Chart.lock` kept consistent with the `Chart.yaml` beside it: when a dependency's
//! version moves in both, the lock's `digest` is computed again as Helm computes it
//! (`chart::lock`) and its `generated` time is the run's (or `SOURCE_DATE_EPOCH`'s).

use serde_json::Value;

use super::FileChange;
use imagebump_model::env::EnvVars;
use imagebump_yaml::{self as yaml, Edit, Node, PathSeg};

/// The time written as `generated`: `SOURCE_DATE_EPOCH` when set, else now (RFC 3339 in
/// UTC, as Helm's Go time prints it).
pub(super) fn generated_time() -> String {
    let epoch = EnvVars::get(EnvVars::SOURCE_DATE_EPOCH)
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|s| jiff::Timestamp::from_second(s).ok());
    let t = epoch.unwrap_or_else(jiff::Timestamp::now);
    t.to_string()
}

/// A file [`complete`] reads or completes.
pub(super) fn involved(file: &str) -> bool {
    file.ends_with("Chart.yaml") || file.ends_with("Chart.lock")
}

/// Complete every `Chart.lock` among `changes` whose `Chart.yaml` changes too. A lock that
/// cannot be completed is left as the slot edits made it, and said why.
pub(super) fn complete(changes: &mut [FileChange], now: &str) -> Vec<(String, RelockError)> {
    let charts: Vec<(String, String)> = changes
        .iter()
        .filter(|c| c.file.ends_with("Chart.yaml"))
        .map(|c| (c.file.clone(), c.after.clone()))
        .collect();
    let mut problems = Vec::new();
    for c in changes
        .iter_mut()
        .filter(|c| c.file.ends_with("Chart.lock"))
    {
        let chart_file = format!(
            "{}Chart.yaml",
            c.file.strip_suffix("Chart.lock").unwrap_or("")
        );
        let Some((_, chart)) = charts.iter().find(|(f, _)| *f == chart_file) else {
            continue;
        };
        match relock(chart, &c.after, now) {
            Ok(after) => c.after = after,
            Err(e) => problems.push((c.file.clone(), e)),
        }
    }
    problems
}

/// Why a `Chart.lock` could not be completed.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum RelockError {
    #[error(transparent)]
    Read(#[from] yaml::ReadError),
    #[error("{}", .0.reason())]
    Parse(yaml::ParseError),
    /// The key (`digest`, `generated`) the lock lacks.
    #[error("Chart.lock has no `{0}:` to update")]
    NoKey(&'static str),
    #[error(transparent)]
    Edit(#[from] yaml::EditError),
}

fn dependencies(text: &str) -> Result<Vec<Value>, yaml::ReadError> {
    let docs = yaml::json_documents(text)?;
    Ok(docs
        .first()
        .and_then(|d| d.get("dependencies"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The lock's text with `digest` and `generated` set for `chart`'s dependencies.
fn relock(chart: &str, lock: &str, now: &str) -> Result<String, RelockError> {
    let digest = crate::chart::lock::digest(&dependencies(chart)?, &dependencies(lock)?);
    let docs = yaml::parse_located(lock).map_err(RelockError::Parse)?;
    let root = docs.first().and_then(|d| d.root.as_ref());
    let mut edits = Vec::new();
    for (k, value) in [("digest", digest.as_str()), ("generated", now)] {
        let path = vec![PathSeg::Key(k.to_string())];
        let Some(Node::Scalar(s)) = root.and_then(|r| r.at(&path)) else {
            return Err(RelockError::NoKey(k));
        };
        let raw = lock.get(s.span.clone()).unwrap_or_default();
        let new_raw = yaml::render_scalar(s, raw, value)?;
        edits.push(Edit {
            doc: 0,
            path,
            span: s.span.clone(),
            new_raw,
            new_value: value.to_string(),
            inner: None,
        });
    }
    edits.sort_by_key(|e| e.span.start);
    Ok(yaml::apply_edits(lock, &edits)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_without_its_keys_says_which() {
        let chart = "name: app\ndependencies: []\n";
        let e = relock(chart, "dependencies: []\ndigest: x\n", "now").unwrap_err();
        assert_eq!(e.to_string(), "Chart.lock has no `generated:` to update");
        let e = relock(chart, "a: [\n", "now").unwrap_err();
        assert!(matches!(e, RelockError::Read(_)), "{e:?}");
    }

    #[test]
    fn a_lock_follows_its_chart() {
        let chart = "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: web\n    version: 1.2.0\n    repository: https://charts.example.com\n";
        let lock = "dependencies:\n- name: web\n  repository: https://charts.example.com\n  version: 1.2.0\ndigest: sha256:old\ngenerated: \"2024-01-01T00:00:00Z\"\n";
        let mut changes = vec![
            FileChange {
                file: "c/Chart.yaml".into(),
                before: "".into(),
                after: chart.into(),
                created: false,
            },
            FileChange {
                file: "c/Chart.lock".into(),
                before: lock.into(),
                after: lock.into(),
                created: false,
            },
        ];
        let problems = complete(&mut changes, "2026-01-02T03:04:05Z");
        assert!(problems.is_empty());
        let dep = serde_json::json!({"name": "web", "version": "1.2.0", "repository": "https://charts.example.com"});
        let digest =
            crate::chart::lock::digest(std::slice::from_ref(&dep), std::slice::from_ref(&dep));
        assert_eq!(
            changes[1].after,
            format!("dependencies:\n- name: web\n  repository: https://charts.example.com\n  version: 1.2.0\ndigest: {digest}\ngenerated: \"2026-01-02T03:04:05Z\"\n")
        );
    }
}
