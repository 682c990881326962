//! `imagebump config schema|check`: the committed JSON Schema is the one the types
//! generate, and `check` reports what applies where.

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
        "DIR/imagebump.yaml: valid\n  defaults: semver ^1\n  images[0] ghcr.io/acme/*: newest-build allow regexp:^main-\n  images[1] nginx: semver 1.25.3\n"
    );
    run.assert_stderr_contains("images[1]: constraint \"1.25.3\" means exactly 1.25.3");
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
