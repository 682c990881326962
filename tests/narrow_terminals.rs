//! Tables fitted to `COLUMNS`: the widest column gives way first (names and paths cut in
//! the middle, keeping their end; reasons and policies at the end), in `scan`, `run` and
//! `tags`, at 60 and at 120 columns.

// A test crate may panic, count, slice and read the environment: the no-panic lints of
// Cargo.toml are for the library.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::disallowed_methods
)]

mod support;

use std::fs;
use std::path::Path;

use support::cli::imagebump;
use support::{Registry, RegistryMode};

fn setup() -> (Registry, tempfile::TempDir, String) {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("jellyfin/jellyfin", &["10.9.0", "10.9.11"]);
    reg.push_tags("library/postgres", &["16.2-alpine", "16.4-alpine"]);
    reg.push_tags("library/busybox", &["1.36.0", "1.37.0"]);
    reg.push_tags("linuxserver/sonarr", &["4.0.0", "4.0.10"]);
    reg.push_tags("prometheus/prometheus", &["v2.54.1", "v2.55.0"]);
    reg.push_tags("restic/restic", &["0.16.0", "0.17.0"]);
    reg.push_tags("bitnami/kubectl", &["1.31.0", "1.31.2"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imagebump.yaml");
    let mut text = String::from("registries:\n");
    for prefix in ["docker.io", "lscr.io", "quay.io"] {
        text.push_str(&format!(
            "  - prefix: {prefix}\n    url: {}\n",
            reg.base_url()
        ));
    }
    fs::write(&path, text).unwrap();
    let cfg = path.to_string_lossy().to_string();
    (reg, dir, cfg)
}

/// Every line of `text` fits `columns` characters.
fn assert_fits(text: &str, columns: usize) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= columns || !line.contains("  "),
            "wider than {columns}: {line:?}\n{text}"
        );
    }
}

#[test]
fn scan_and_run_tables_fit_columns() {
    let (_reg, _c, cfg) = setup();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/homelab");
    let repo = support::copy_tree(&fixture);
    let dir = repo.path().to_str().unwrap();
    for columns in [60, 120] {
        let scan = imagebump()
            .args(["scan", dir, "--config", &cfg])
            .env("COLUMNS", columns.to_string())
            .run();
        let tables: String = scan
            .filtered_stdout()
            .lines()
            .filter(|l| l.starts_with("  ") || l.starts_with("app "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_fits(&tables, columns);
        insta::assert_snapshot!(format!("scan_{columns}"), scan.filtered_stdout());
        let run = imagebump()
            .args(["run", dir, "--config", &cfg, "--dry-run"])
            .env("COLUMNS", columns.to_string())
            .run();
        let stdout = run.filtered_stdout();
        let table = stdout
            .split("\nIMAGE ")
            .nth(1)
            .map(|t| format!("IMAGE {}", t.split("\n\n").next().unwrap_or_default()))
            .expect("the updates table");
        assert_fits(&table, columns);
        insta::assert_snapshot!(format!("run_{columns}"), table);
    }
}

#[test]
fn tags_table_fits_columns() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("tags.txt");
    let tags = [
        "1.25.3",
        "1.27.0",
        "1.27.0-alpine-slim-with-a-rather-long-variant-name",
        "1.28.0-rc.1",
        "latest",
    ];
    fs::write(&list, tags.join("\n")).unwrap();
    for columns in [60, 120] {
        let run = imagebump()
            .args([
                "tags",
                "registry.example.com/a-team/with-a-long-name/nginx:1.25.3",
            ])
            .args(["--tags-from", list.to_str().unwrap()])
            .env("COLUMNS", columns.to_string())
            .run();
        let table = run
            .stdout
            .split("\n\n")
            .nth(1)
            .expect("the candidates table")
            .to_string();
        assert_fits(&table, columns);
        insta::assert_snapshot!(format!("tags_{columns}"), table);
    }
}
