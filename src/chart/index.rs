//! Classic Helm repositories: the versions of their charts, from the repository's
//! `index.yaml`, fetched once per repository (and credentials) per run.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use futures::stream::{self, StreamExt};
use serde::Deserialize;

use crate::registry::client::TagList;
use crate::registry::{Error, Registries};
use imagebump_model::name::ImageName;

/// The largest `index.yaml` read. The biggest public repositories' indexes are a few tens
/// of megabytes; a larger one is refused, as a larger tag list is.
pub const INDEX_LIMIT: usize = 32 << 20;

/// One chart version of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub version: String,
    pub app_version: Option<String>,
    /// Where the archive is (relative to the repository, or absolute).
    pub urls: Vec<String>,
    pub digest: Option<String>,
}

/// A repository's index: every chart's versions, in the index's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub entries: BTreeMap<String, Vec<Entry>>,
}

/// A YAML scalar Helm writes as a string but a hand-made index may leave unquoted
/// (`version: 1.0`, `appVersion: 2`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    S(String),
    I(i64),
    F(f64),
    B(bool),
}

impl Text {
    fn into_string(self) -> String {
        match self {
            Text::S(s) => s,
            Text::I(i) => i.to_string(),
            Text::F(f) => f.to_string(),
            Text::B(b) => b.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct RawIndex {
    entries: Option<BTreeMap<String, Option<Vec<Option<RawEntry>>>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEntry {
    version: Option<Text>,
    app_version: Option<Text>,
    urls: Option<Vec<String>>,
    digest: Option<String>,
}

/// The most bytes of an index that are parsed: the entries of the charts a run asks for,
/// in Helm's layout, or a whole index written otherwise. Parsing holds every event of the
/// text at once, a dozen times its size, so a whole index of tens of megabytes is never
/// parsed.
pub const PARSED_LIMIT: usize = 8 << 20;

/// Parse the entries of `charts` in `index.yaml` (`url` names it in errors); the other
/// charts are left out. Entries without a version are dropped.
pub fn parse(url: &str, body: &[u8], charts: &[&str]) -> Result<Index, Error> {
    let invalid = |reason: String| Error::Invalid {
        url: url.to_string(),
        reason,
    };
    let text = std::str::from_utf8(body).map_err(|_| invalid("index.yaml is not UTF-8".into()))?;
    let selected = select(text, charts);
    let text = selected.as_deref().unwrap_or(text);
    if text.len() > PARSED_LIMIT {
        return Err(invalid(format!(
            "the entries to read are larger than {} MiB: not read",
            PARSED_LIMIT >> 20
        )));
    }
    if selected.as_deref() == Some(EMPTY) {
        return Ok(Index::default());
    }
    let raw: RawIndex = imagebump_yaml::from_str(text).map_err(|e| {
        // A login page or an error page is not YAML of the right shape: say so plainly.
        let mapping =
            imagebump_yaml::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object());
        let why = if mapping || e.message.ends_with(": not read") {
            e.to_string()
        } else {
            "not a YAML mapping (is this the repository's URL?)".into()
        };
        invalid(format!("not a Helm repository index: {why}"))
    })?;
    let Some(entries) = raw.entries else {
        return Err(invalid(
            "not a Helm repository index: no `entries` (is this the repository's URL?)".into(),
        ));
    };
    let entries = entries
        .into_iter()
        .filter(|(name, _)| charts.contains(&name.as_str()))
        .map(|(name, versions)| {
            let versions = versions
                .unwrap_or_default()
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some(Entry {
                        version: e.version?.into_string(),
                        app_version: e.app_version.map(Text::into_string),
                        urls: e.urls.unwrap_or_default(),
                        digest: e.digest,
                    })
                })
                .collect();
            (name, versions)
        })
        .collect();
    Ok(Index { entries })
}

/// What [`select`] gives for an index in Helm's layout without any chart asked for.
const EMPTY: &str = "entries:\n";

/// The entries of `charts` cut out of an index in the layout Helm writes (`entries:` at
/// the start of a line, each chart a plain key two spaces in, everything of a chart more
/// indented or a sequence item at two spaces), as an index of their own; `None` for a text
/// in any other layout. Cutting is one pass over the lines: what is parsed afterwards is
/// only what the run needs.
fn select(text: &str, charts: &[&str]) -> Option<String> {
    if text.contains('\r') {
        return None;
    }
    let mut lines = text.split_inclusive('\n');
    lines.by_ref().find(|l| l.trim_end() == "entries:")?;
    let mut out = String::from(EMPTY);
    let mut keep = false;
    for line in lines {
        let body = line.trim_start_matches(' ');
        let indent = line.len().saturating_sub(body.len());
        let blank = body.trim().is_empty() || body.starts_with('#');
        if blank || indent > 2 || (indent == 2 && body.starts_with("- ")) {
            if keep {
                out.push_str(line);
            }
            continue;
        }
        if indent == 0 {
            // The next top-level key: the entries end here. A sequence item or anything
            // else at the margin is not Helm's layout.
            if body.starts_with(['-', '"', '\'', '{', '[', '&', '*', '!', '?', '%', '@', '`']) {
                return None;
            }
            break;
        }
        if indent != 2 {
            return None;
        }
        let name = body.trim_end().strip_suffix(':')?;
        if name.is_empty() || name.contains([':', '"', '\'', '#', '&', '*', '!', '{', '[']) {
            return None;
        }
        keep = charts.contains(&name);
        if keep {
            out.push_str(line);
        }
    }
    Some(out)
}

/// Fetch the index of the repository at `repo` (its URL, without `/index.yaml`), through
/// the client `registries` has for `chart`'s host and `credentials`, and parse the entries
/// of `chart`'s chart.
pub async fn fetch(
    registries: &Registries,
    chart: &ImageName,
    credentials: Option<&str>,
    repo: &str,
) -> Result<Index, Error> {
    fetch_charts(registries, chart, credentials, repo, &[chart_of(chart)]).await
}

/// [`fetch`], parsing the entries of each of `charts`.
pub async fn fetch_charts(
    registries: &Registries,
    chart: &ImageName,
    credentials: Option<&str>,
    repo: &str,
    charts: &[&str],
) -> Result<Index, Error> {
    let url = format!("{}/index.yaml", repo.trim_end_matches('/'));
    if let Some(body) = registries.fetched(&url, credentials) {
        return parse(&url, &body?, charts);
    }
    let client = registries.client_with(chart, credentials)?;
    // An index is a repository's listing: counted with the tag list pages.
    registries.stats.tag_pages.fetch_add(1, Ordering::Relaxed);
    let body = client
        .fetch_file(&url, INDEX_LIMIT)
        .await
        .map(std::sync::Arc::new);
    // Kept even when it is no index or could not be read: the answer is the same for the
    // rest of the run, and a repository that failed is not asked again.
    registries.keep_fetched(&url, credentials, body.clone());
    parse(&url, &body?, charts)
}

/// The versions of one chart of the classic repository at `repo` (`imagebump tags --chart`).
pub async fn chart_versions(
    registries: &Registries,
    chart: &ImageName,
    credentials: Option<&str>,
    repo: &str,
) -> Result<Vec<String>, Error> {
    let index = fetch(registries, chart, credentials, repo).await?;
    versions(&index, chart, repo).map(|l| l.tags)
}

/// The chart name an [`ImageName`] of a classic repository's chart ends with.
pub fn chart_of(name: &ImageName) -> &str {
    name.repository
        .rsplit('/')
        .next()
        .unwrap_or(&name.repository)
}

/// A chart to list: its name, the credentials it is read with, its repository's URL.
pub type Wanted<'a> = (&'a ImageName, Option<&'a str>, &'a str);

/// The versions of every chart in `wanted`, as tag lists keyed like the registries' (name
/// and credentials): each repository's index is fetched once, at most `concurrency` at a
/// time.
pub async fn list_versions(
    wanted: &[Wanted<'_>],
    registries: &Registries,
    concurrency: usize,
) -> Vec<((ImageName, Option<String>), Result<TagList, Error>)> {
    // Each repository (and credentials) once, with a name to ask it by and its charts.
    type Charts<'n> = (&'n ImageName, Vec<&'n str>);
    let mut repos: BTreeMap<(&str, Option<&str>), Charts> = BTreeMap::new();
    for (name, creds, repo) in wanted {
        let (_, charts) = repos.entry((repo, *creds)).or_insert((name, Vec::new()));
        charts.push(chart_of(name));
    }
    let indexes: BTreeMap<(&str, Option<&str>), Result<Index, Error>> = stream::iter(repos)
        .map(|((repo, creds), (name, charts))| async move {
            let index = fetch_charts(registries, name, creds, repo, &charts).await;
            ((repo, creds), index)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    wanted
        .iter()
        .map(|&(name, creds, repo)| {
            let result = match indexes.get(&(repo, creds)) {
                Some(Ok(index)) => versions(index, name, repo),
                Some(Err(e)) => Err(e.clone()),
                None => Err(Error::Invalid {
                    url: repo.to_string(),
                    reason: "index not read".into(),
                }),
            };
            ((name.clone(), creds.map(str::to_string)), result)
        })
        .collect()
}

/// The versions of `name`'s chart in `index`, as a tag list.
fn versions(index: &Index, name: &ImageName, repo: &str) -> Result<TagList, Error> {
    let chart = chart_of(name);
    match index.entries.get(chart) {
        Some(list) => Ok(TagList {
            tags: list.iter().map(|e| e.version.clone()).collect(),
            invalid: Vec::new(),
        }),
        None => Err(Error::Invalid {
            url: format!("{}/index.yaml", repo.trim_end_matches('/')),
            reason: format!("the repository has no chart {chart}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_index_as_helm_writes_it() {
        let index = parse(
            "https://c.example.com/index.yaml",
            br#"apiVersion: v1
entries:
  web:
  - apiVersion: v2
    appVersion: "1.25.0"
    created: "2024-01-01T00:00:00Z"
    digest: 0123
    name: web
    urls:
    - web-1.2.0.tgz
    version: 1.2.0
  - name: web
    version: 1.0
    appVersion: 2
  - name: broken
  empty:
generated: "2024-01-01T00:00:00Z"
"#,
            &["web", "empty"],
        )
        .unwrap();
        let web = index.entries.get("web").unwrap();
        assert_eq!(web.len(), 2);
        assert_eq!(web[0].version, "1.2.0");
        assert_eq!(web[0].app_version.as_deref(), Some("1.25.0"));
        assert_eq!(web[0].urls, vec!["web-1.2.0.tgz".to_string()]);
        assert_eq!(web[1].version, "1");
        assert_eq!(index.entries.get("empty").unwrap().len(), 0);
    }

    #[test]
    fn only_the_charts_asked_for_are_parsed() {
        let text = "apiVersion: v1\nentries:\n  api:\n  - name: api\n    version: 2.0.0\n    description: |\n      x:\n  web:\n  # a comment\n  - name: web\n    version: 1.2.0\n    urls:\n    - web-1.2.0.tgz\n\n  - name: web\n    version: 1.1.0\n  zz:\n  - {name: zz, version: 1}\ngenerated: now\n";
        assert_eq!(
            select(text, &["web"]).unwrap(),
            "entries:\n  web:\n  # a comment\n  - name: web\n    version: 1.2.0\n    urls:\n    - web-1.2.0.tgz\n\n  - name: web\n    version: 1.1.0\n"
        );
        let index = parse("u", text.as_bytes(), &["web", "zz"]).unwrap();
        assert_eq!(index.entries.keys().collect::<Vec<_>>(), ["web", "zz"]);
        assert_eq!(index.entries["web"][1].version, "1.1.0");
        assert_eq!(index.entries["zz"][0].version, "1");
        assert!(parse("u", text.as_bytes(), &["none"])
            .unwrap()
            .entries
            .is_empty());
        // Another layout is parsed whole (the other charts dropped)...
        let flow = "entries: {web: [{version: 1.0.0}], api: [{version: 2.0.0}]}\n";
        assert_eq!(select(flow, &["web"]), None);
        let index = parse("u", flow.as_bytes(), &["web"]).unwrap();
        assert_eq!(index.entries.keys().collect::<Vec<_>>(), ["web"]);
        // ... only while it is small enough.
        let big = format!(
            "entries: {{web: [{}]}}\n",
            "{version: 1.0.0}, ".repeat(600_000)
        );
        let e = parse("u", big.as_bytes(), &["web"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "u: the entries to read are larger than 8 MiB: not read"
        );
    }

    #[test]
    fn what_is_not_an_index_says_so() {
        let e = parse(
            "https://c.example.com/index.yaml",
            b"<html>hello</html>",
            &["web"],
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a Helm repository index"), "{e}");
        let e = parse("https://c.example.com/index.yaml", b"a: [", &["web"]).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("https://c.example.com/index.yaml: not a Helm"));
        assert!(parse("u", &[0xff, 0xfe], &["web"]).is_err());
    }
}
