//! Bounded fuzzing of the model's string parsers: image names and references, tag and
//! digest checks, placeholder detection, durations, platforms, credentials sources, forge
//! kinds, Helm key paths and the policy spec. Whatever the input, nothing panics, and what
//! parses prints back to something that parses to the same value.
//!
//! The case counts keep the file within a few seconds in a debug build, so it runs with
//! every `cargo test`. For a longer search, multiply them:
//! `FUZZ_SCALE=30 cargo test -p imagebump-model --test fuzz`.

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

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use imagebump_model::config::{Config, HelmKeyPath, RegistryConfig, MAX_SETTING_DURATION};
use imagebump_model::credentials::Source;
use imagebump_model::duration::{format_age, parse_age};
use imagebump_model::name::{
    is_valid_digest, is_valid_tag, parse_name, parse_reference, placeholder, ImageName,
};
use imagebump_model::platform::Platform;
use imagebump_model::policy::{Delivery, PolicySpec, SemverMode, Strategy as TagStrategy};
use imagebump_model::ForgeKind;
use proptest::prelude::*;

// ------------------------------------------------------------------------------------------
// Inputs
// ------------------------------------------------------------------------------------------

const DIGEST_HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Pieces image references are made of, and the ones that break them.
const NAME_TOKENS: &[&str] = &[
    "ghcr.io",
    "docker.io",
    "index.docker.io",
    "registry-1.docker.io",
    "localhost",
    "[::1]",
    "127.0.0.1",
    ":5000",
    ":",
    "/",
    "//",
    "@",
    "@sha256:",
    "sha256:",
    DIGEST_HEX,
    "nginx",
    "library",
    "a",
    "A",
    "_",
    "__",
    "-",
    "--",
    ".",
    "..",
    "1.27",
    "v1.2.3",
    "latest",
    "é",
    "日本",
    "{{ .Values.image }}",
    "${TAG}",
    "$(IMAGE)",
    "$",
    "<OWNER>",
    "IMAGE",
    "_image_",
    " ",
    "\t",
    "\n",
    "\u{0}",
    "%{",
    "+",
    "=",
];

fn token_soup(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(tokens), 0..12).prop_map(|t| t.concat())
}

/// Mostly-valid references: `[host[:port]/]path[:tag][@digest]`.
fn reference_text() -> impl Strategy<Value = String> {
    (
        prop::option::of(prop::sample::select(
            &[
                "ghcr.io",
                "localhost:5000",
                "registry.example.com:443",
                "[::1]:5000",
                "index.docker.io",
                "Registry.Example.com",
            ][..],
        )),
        prop::collection::vec("[a-z0-9]{1,4}([._-][a-z0-9]{1,3})?", 1..4),
        prop::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,12}"),
        prop::option::of(prop::sample::select(
            &["sha256:", "sha512:", "x+y.z:", "SHA256:"][..],
        )),
    )
        .prop_map(|(host, path, tag, digest)| {
            let mut s = host.map(|h| format!("{h}/")).unwrap_or_default();
            s.push_str(&path.join("/"));
            if let Some(t) = tag {
                s.push(':');
                s.push_str(&t);
            }
            if let Some(d) = digest {
                s.push('@');
                s.push_str(d);
                s.push_str(DIGEST_HEX);
            }
            s
        })
}

fn name_input() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        token_soup(NAME_TOKENS),
        reference_text(),
        prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

const AGE_TOKENS: &[&str] = &[
    "0",
    "1",
    "3",
    "12",
    "90",
    "18446744073709551615",
    "99999999999999999999",
    "s",
    "m",
    "h",
    "d",
    "w",
    "x",
    "ms",
    " ",
    "\t",
    "-",
    ".",
    "é",
    "٣",
    "１",
];

const PLATFORM_TOKENS: &[&str] = &[
    "linux", "windows", "amd64", "arm64", "arm", "x86_64", "x86-64", "aarch64", "v7", "v8", "/",
    "//", " ", "Linux", "é", "_", ".", "-", "",
];

const SOURCE_TOKENS: &[&str] = &[
    "env",
    "file",
    "ext",
    "ecr",
    "gcp",
    "acr",
    "github",
    "anonymous",
    "dockerconfig",
    ":",
    "::",
    " ",
    "\t",
    "VAR",
    "/path/to",
    "./rel",
    "us-east-1",
    "é",
    "\n",
    "ENV",
    "",
];

fn text_from(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), token_soup(tokens)]
}

fn policy_spec() -> impl Strategy<Value = PolicySpec> {
    let strategy = prop::sample::select(
        &[
            TagStrategy::Semver,
            TagStrategy::NewestBuild,
            TagStrategy::Digest,
            TagStrategy::Alphabetical,
            TagStrategy::Numeric,
            TagStrategy::Regex,
        ][..],
    );
    let mode = prop::sample::select(&[SemverMode::Variant, SemverMode::Masterminds][..]);
    let word = || prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter);
    let text = move || prop::option::of(word());
    let list = move || prop::option::of(prop::collection::vec(word(), 0..3));
    (
        (
            prop::option::of(strategy),
            text(),
            prop::option::of(mode),
            text(),
        ),
        (text(), list(), text(), list(), text()),
        (
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
            prop::option::of(prop_oneof![
                Just(Delivery::Push),
                Just(Delivery::PullRequest)
            ]),
            prop::option::of(any::<bool>()),
        ),
        (list(), text()),
    )
        .prop_map(
            |(
                (strategy, constraint, semver_mode, group),
                (allow_tags, ignore_tags, pattern, platforms, min_age),
                (allow_downgrade, pin, ignore, delivery, automerge),
                (schedule, timezone),
            )| PolicySpec {
                strategy,
                constraint,
                semver_mode,
                allow_tags,
                ignore_tags,
                pattern,
                platforms,
                min_age,
                allow_downgrade,
                pin,
                ignore,
                delivery,
                automerge,
                group,
                verify: None,
                schedule,
                timezone,
                freeze: None,
            },
        )
}

/// JSON-ish text: arbitrary, or pieces of the configuration's keys and values.
fn json_text() -> impl Strategy<Value = String> {
    const TOKENS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "\"strategy\"",
        "\"semver\"",
        "\"minAge\"",
        "\"3d\"",
        "\"pin\"",
        "true",
        "null",
        "1e999",
        "-0",
        "18446744073709551616",
        "\"images\"",
        "\"match\"",
        "\"defaults\"",
        "\"registries\"",
        "\"prefix\"",
        "\"rateLimit\"",
        "NaN",
        "\"\\ud800\"",
        "\"é\"",
        " ",
    ];
    prop_oneof![any::<String>(), token_soup(TOKENS)]
}

/// `cases` cases, times `FUZZ_SCALE` when that is set (a longer search, by hand). A failure
/// prints its shrunk input; its regression test goes next to the code, so proptest keeps no
/// regressions file.
fn config(cases: u32) -> ProptestConfig {
    let scale: u32 = std::env::var("FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    ProptestConfig {
        cases: cases.saturating_mul(scale),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------------------------------------------
// Properties
// ------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn image_names_never_panic_and_print_back(input in name_input()) {
        let _ = placeholder(&input);
        let _ = is_valid_tag(&input);
        let _ = is_valid_digest(&input);
        let _ = ImageName::unparsed(&input).to_string();
        if let Ok(name) = parse_name(&input) {
            prop_assert!(!name.registry.is_empty() && !name.repository.is_empty());
            prop_assert_eq!(parse_name(&name.to_string()), Ok(name));
        }
    }

    #[test]
    fn references_never_panic_and_print_back(input in name_input()) {
        let Ok(r) = parse_reference(&input) else {
            return Ok(());
        };
        // The parts are the input, cut.
        let mut written = r.written.clone();
        if let Some(tag) = &r.tag {
            prop_assert!(is_valid_tag(tag), "{tag:?}");
            written.push(':');
            written.push_str(tag);
        }
        if let Some(digest) = &r.digest {
            prop_assert!(is_valid_digest(digest), "{digest:?}");
            written.push('@');
            written.push_str(digest);
        }
        prop_assert_eq!(&written, &input);
        prop_assert_eq!(parse_name(&r.written), Ok(r.name.clone()));
        // The normalised name with the same tag is the same reference.
        let normal = match &r.tag {
            Some(tag) => format!("{}:{tag}", r.name),
            None => r.name.to_string(),
        };
        let again = parse_reference(&normal);
        prop_assert_eq!(again.map(|a| (a.name, a.tag)), Ok((r.name, r.tag)));
    }

}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn valid_tags_and_digests_are_accepted(
        tag in "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}",
        algorithm in "[a-z0-9]{1,6}([.+_-][a-z0-9]{1,4}){0,2}",
        hex in "[a-zA-Z0-9=_-]{32,80}",
    ) {
        prop_assert!(is_valid_tag(&tag));
        let digest = format!("{algorithm}:{hex}");
        prop_assert!(is_valid_digest(&digest));
        let reference = format!("ghcr.io/acme/web:{tag}@{digest}");
        let r = parse_reference(&reference);
        prop_assert!(r.is_ok(), "{reference}: {r:?}");
    }

}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn durations_never_panic_and_print_back(input in text_from(AGE_TOKENS)) {
        if let Ok(d) = parse_age(&input) {
            prop_assert_eq!(parse_age(&format_age(d)), Ok(d));
        }
    }

    #[test]
    fn every_duration_prints_as_one_that_parses(secs: u64, nanos in 0u32..1_000_000_000) {
        let shown = format_age(Duration::new(secs, nanos));
        prop_assert_eq!(parse_age(&shown), Ok(Duration::from_secs(secs)), "{}", shown);
    }

    #[test]
    fn registry_durations_are_bounded(
        expire in prop::option::of(text_from(AGE_TOKENS)),
        timeout in prop::option::of(text_from(AGE_TOKENS)),
    ) {
        let registry = RegistryConfig {
            prefix: "ghcr.io".into(),
            url: None,
            ca_file: None,
            insecure: false,
            credentials: None,
            credentials_expire: expire,
            credentials_timeout: timeout,
            concurrency: None,
            rate_limit: None,
        };
        for d in [registry.credentials_expire(), registry.credentials_timeout()] {
            if let Ok(Some(d)) = d {
                prop_assert!(!d.is_zero() && d <= MAX_SETTING_DURATION, "{d:?}");
            }
        }
    }

    #[test]
    fn platforms_never_panic_and_print_back(input in text_from(PLATFORM_TOKENS)) {
        if let Ok(p) = Platform::from_str(&input) {
            prop_assert!(p.satisfies(&p));
            prop_assert_eq!(Platform::from_str(&p.to_string()), Ok(p));
        }
    }

    #[test]
    fn credentials_sources_never_panic_and_print_back(input in text_from(SOURCE_TOKENS)) {
        if let Ok(source) = Source::parse(&input) {
            let _ = source.refreshable();
            prop_assert_eq!(Source::parse(&source.describe()), Ok(source.clone()));
            let _ = source.relative_to(Path::new("/config")).describe();
        }
    }

    #[test]
    fn forge_kinds_never_panic_and_print_back(input in text_from(&["github", "GitLab", " gitea ", "forgejo", "x", "é"])) {
        if let Ok(kind) = ForgeKind::from_str(&input) {
            prop_assert_eq!(ForgeKind::from_str(&kind.to_string()), Ok(kind));
        }
    }

    #[test]
    fn helm_key_paths_never_panic_and_keep_their_text(
        input in text_from(&["a", "image", ".", "[", "]", "[0]", "[12]", "[x]", "[-1]", "", "é"]),
    ) {
        if let Ok(path) = HelmKeyPath::try_from(input.clone()) {
            prop_assert_eq!(path.as_str(), input.as_str());
            prop_assert_eq!(String::from(path), input);
        }
    }

}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn policy_specs_print_back(spec in policy_spec(), over in policy_spec()) {
        let json = serde_json::to_string(&spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: Result<PolicySpec, _> = serde_json::from_str(&json);
        prop_assert_eq!(back.ok(), Some(spec.clone()), "{}", json);
        let merged = spec.overlay(&over);
        prop_assert!(merged.keys().len() >= over.keys().len());
    }

    #[test]
    fn configuration_json_never_panics(text in json_text()) {
        let _ = serde_json::from_str::<PolicySpec>(&text);
        let _ = serde_json::from_str::<Config>(&text);
    }
}
