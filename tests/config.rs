//! `imagebump config schema|check`: the committed JSON Schema is the one the types
//! generate, and `check` reports what applies where.

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

use support::cli::{imagebump, Run};
use support::tree;

/// `imagebump config check DIR` where DIR holds `file` with `text`, expecting exit code
/// `code`; DIR reads `DIR` in the filtered output.
fn check(file: &str, text: &str, code: i32) -> Run {
    let dir = tree(&[(file, text)]);
    imagebump()
        .args(["config", "check"])
        .arg(dir.path())
        .filter_path(dir.path(), "DIR")
        .code(code)
        .run()
}

#[test]
fn committed_schema_is_current() {
    let generated = imagebump().args(["config", "schema"]).run().stdout;
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/imagebump.schema.json"),
    )
    .unwrap();
    assert!(
        generated == committed,
        "docs/imagebump.schema.json is stale: run `cargo run -- config schema > docs/imagebump.schema.json`"
    );
    // Every policy key is in the schema, for defaults and rules alike.
    let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
    for def in ["PolicySpec", "ImageRule"] {
        let props = schema["$defs"][def]["properties"].as_object().unwrap();
        for key in [
            "strategy",
            "constraint",
            "semverMode",
            "allowTags",
            "ignoreTags",
            "pattern",
            "platforms",
            "minAge",
            "allowDowngrade",
            "pin",
            "ignore",
            "delivery",
            "group",
        ] {
            assert!(props.contains_key(key), "{def} lacks {key}");
        }
        assert_eq!(schema["$defs"][def]["additionalProperties"], false);
    }
    // A rule may name images, files or both: `match` defaults to every image.
    let rule = &schema["$defs"]["ImageRule"];
    assert!(rule["properties"]["path"].is_object());
    assert_eq!(rule["properties"]["match"]["default"], "**");
}

#[test]
fn check_lists_rules_and_warns_about_exact_constraints() {
    let run = check(
        "imagebump.yaml",
        "defaults:\n  constraint: ^1\nimages:\n  - match: ghcr.io/acme/*\n    strategy: newest-build\n    allowTags: 'regexp:^main-'\n  - match: nginx\n    constraint: 1.25.3\n",
        0,
    );
    assert_eq!(
        run.filtered_stdout(),
        "DIR/imagebump.yaml: valid\n  warning: DIR/imagebump.yaml: images[1]: constraint \"1.25.3\" means exactly 1.25.3, so nothing will be updated; use \"~1.25\" or \"1.25\" for a range\n  defaults: semver ^1\n  images[0] ghcr.io/acme/*: newest-build allow regexp:^main-\n  images[1] nginx: semver 1.25.3\n"
    );
    // The finding is the check's output, not a log line.
    assert_eq!(run.stderr, "");
}

#[test]
fn check_fails_with_the_line_of_the_mistake() {
    let run = check(
        ".imagebump.yaml",
        "images:\n  - match: nginx\n    ignoreTags: ['[']\n",
        2,
    );
    run.assert_stderr_contains(".imagebump.yaml:3:")
        .assert_stderr_contains("images[0].ignoreTags");
}

#[test]
fn committed_report_schema_is_current() {
    let generated = imagebump()
        .args(["config", "schema", "--report"])
        .run()
        .stdout;
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json"),
    )
    .unwrap();
    assert!(
        generated == committed,
        "docs/report.schema.json is stale: run `cargo run -- config schema --report > docs/report.schema.json`"
    );
}

/// `imagebump ARGS… --config DIR/operator.yaml` where operator.yaml holds `text`; DIR reads
/// `DIR` in the filtered output.
fn with_operator_config(args: &[&str], text: &str, code: i32) -> Run {
    let dir = tree(&[
        ("operator.yaml", text),
        ("app/deploy.yaml", "image: nginx:1.25.3\n"),
    ]);
    imagebump()
        .current_dir(dir.path())
        .args(args)
        .arg("--config")
        .arg(dir.path().join("operator.yaml"))
        .filter_path(dir.path(), "DIR")
        .code(code)
        .run()
}

#[test]
fn a_registry_url_without_scheme_is_a_configuration_error_with_its_line() {
    let text = "registries:\n  - prefix: ghcr.io/acme\n    url: https://mirror.example.com\n  - prefix: 127.0.0.1:5000\n    url: 127.0.0.1:5000\n";
    let expected = "error: DIR/operator.yaml:5:10: registries[1].url: \"127.0.0.1:[PORT]\" has no scheme (http:// or https://) (hint: write http://127.0.0.1:[PORT] (a plain-HTTP registry) or https://127.0.0.1:[PORT])\n";
    let run = with_operator_config(&["config", "check"], text, 2);
    // The loopback-port filter writes 5000 as [PORT].
    assert!(run
        .stderr
        .contains("127.0.0.1:5000 (a plain-HTTP registry)"));
    assert_eq!(run.filtered_stdout(), "");
    assert_eq!(run.filtered_stderr(), expected);
    // Every command loads the configuration the same way, before any request.
    for args in [
        &["registry", "check"][..],
        &["run", "--dry-run", "."],
        &["scan", "."],
    ] {
        let run = with_operator_config(args, text, 2);
        assert_eq!(run.filtered_stderr(), expected, "{args:?}");
    }
}

#[test]
fn other_registry_urls_that_are_no_registry_endpoint_are_refused() {
    let cases = [
        (
            "registry.example.com",
            "\"registry.example.com\" has no scheme (http:// or https://) (hint: write http://registry.example.com (a plain-HTTP registry) or https://registry.example.com)",
        ),
        (
            "ftp://registry.example.com",
            "unsupported scheme ftp:// in \"ftp://registry.example.com\": registries are spoken to over HTTP (hint: write https://registry.example.com, or http://registry.example.com for a plain-HTTP registry)",
        ),
        (
            "https://registry.example.com:8443/v2/",
            "\"https://registry.example.com:8443/v2/\" has a path (/v2/): a registry is spoken to at the root of its host (imagebump adds /v2/…) (hint: write https://registry.example.com:8443)",
        ),
        (
            "https://registry.example.com?ns=acme",
            "\"https://registry.example.com?ns=acme\" has a query (?…): a registry is spoken to at the root of its host (imagebump adds /v2/…) (hint: write https://registry.example.com)",
        ),
        (
            "https://robot:s3cret-in-url@registry.example.com",
            "a user name or password in the URL: credentials are never sent that way (hint: give only scheme, host and port, and the credentials with registries[].credentials (e.g. env:VAR))",
        ),
    ];
    for (url, message) in cases {
        let text = format!("registries:\n  - prefix: registry.example.com\n    url: {url}\n");
        let run = with_operator_config(&["config", "check"], &text, 2);
        assert_eq!(
            run.filtered_stderr(),
            format!("error: DIR/operator.yaml:3:10: registries[0].url: {message}\n"),
            "{url}"
        );
    }
    // Good endpoints pass, with or without a port or a trailing slash.
    for url in [
        "http://127.0.0.1:5000",
        "https://registry.example.com/",
        "http://[::1]:5000",
    ] {
        let text = format!("registries:\n  - prefix: registry.example.com\n    url: {url}\n");
        with_operator_config(&["config", "check"], &text, 0);
    }
}
