//! Bounded fuzzing of every public entry point: whatever the text, nothing panics, failures
//! come back as errors, and a successful scalar edit changes no byte outside its span.
//!
//! The inputs are arbitrary bytes and strings, token soups of the characters YAML gives a
//! meaning to (`:`, `-`, `[`, `{`, anchors, aliases, merge keys, block and flow scalars,
//! quotes, tabs, a BOM, CRLF, `---`), generated documents that mostly parse (so that the
//! edits and inserts run), the same with one token spliced in somewhere, nesting a few
//! hundred levels deep, and far deeper runs of byte order marks, brackets, dashes and `?`.
//!
//! The case counts keep the file within a few seconds in a debug build, so it runs with
//! every `cargo test`. For a longer search, multiply them:
//! `FUZZ_SCALE=30 cargo test -p imagebump-yaml --test fuzz`.

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

use std::ops::Range;

use imagebump_yaml::{
    apply_edits, apply_upserts, json_documents, parse_located, parse_located_fingerprinted,
    path_to_string, render_scalar, set_path, BlockText, Edit, Inner, LineIndex, Node, ParseError,
    PathSeg, Scalar, Style, Upsert,
};
use proptest::prelude::*;
use serde_json::{json, Value};

// ------------------------------------------------------------------------------------------
// Inputs
// ------------------------------------------------------------------------------------------

/// Pieces of text that mean something to a YAML reader.
const TOKENS: &[&str] = &[
    "a",
    "b",
    "image",
    "tag",
    "1.2.3",
    "1.10",
    "v1",
    "é",
    "日本",
    "~",
    "null",
    "true",
    "0x1F",
    ":",
    ": ",
    "-",
    "- ",
    "? ",
    ",",
    "[",
    "]",
    "{",
    "}",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "<<: ",
    "<<: *a",
    "|",
    "|-",
    "|+",
    "|2",
    "|9-",
    ">",
    ">-",
    "'",
    "''",
    "\"",
    "\\\"",
    "\\",
    "\t",
    "\u{feff}",
    "\r\n",
    "\n",
    "\r",
    " ",
    "  ",
    "    ",
    "---\n",
    "--- ",
    "...\n",
    "# c",
    "#",
    "!",
    "!!str ",
    "!t ",
    "%YAML 1.2\n",
    "%TAG ! x\n",
    "@",
    "`",
    "%",
    "\u{0}",
    "\u{85}",
    "\u{2028}",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|t| t.concat())
}

/// A scalar as written, in each of the ways a file writes one.
const SCALARS: &[&str] = &[
    "1.2.3",
    "\"1.2.3\"",
    "'1.2.3'",
    "1.10",
    "v1",
    "\"a\\\"b\\\\c\"",
    "'it''s'",
    "~",
    "",
    "true",
    "&a 1.0",
    "*a",
    "!!str 5",
    "é",
    "\"\\u00e9\\t\"",
    "nginx:1.27",
    "a b c",
    "'multi word'",
    "[1, 2]",
    "{k: v}",
    "[]",
    "{}",
];

const KEYS: &[&str] = &[
    "a",
    "b",
    "image",
    "tag",
    "values",
    "\"quoted key\"",
    "'single'",
    "é",
    "1",
];

/// A generated YAML value in block style (mostly valid, so that edits run).
#[derive(Debug, Clone)]
enum Gen {
    Scalar(&'static str),
    /// A literal or folded block scalar: header, then lines (which may hold YAML).
    Block(&'static str, Vec<&'static str>),
    Map(Vec<(&'static str, Gen)>),
    Seq(Vec<Gen>),
    Merge(Box<Gen>),
}

fn gen_value() -> impl Strategy<Value = Gen> {
    let leaf = prop_oneof![
        4 => prop::sample::select(SCALARS).prop_map(Gen::Scalar),
        1 => (
            prop::sample::select(&["|", "|-", "|+", "|2", ">", "|1-", "| # c"][..]),
            prop::collection::vec(
                prop::sample::select(
                    &["image:", "  tag: 1.0", "  tag: \"2\"", "", "x: [1, 2]", "\ttab", "é: 1", "- a"][..],
                ),
                0..5,
            ),
        )
            .prop_map(|(h, l)| Gen::Block(h, l)),
    ];
    leaf.prop_recursive(5, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec((prop::sample::select(KEYS), inner.clone()), 0..5)
                .prop_map(Gen::Map),
            prop::collection::vec(inner.clone(), 0..5).prop_map(Gen::Seq),
            inner.prop_map(|v| Gen::Merge(Box::new(v))),
        ]
    })
}

fn render(g: &Gen, indent: usize, step: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match g {
        Gen::Scalar(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Gen::Block(header, lines) => {
            out.push_str(header);
            out.push('\n');
            for l in lines {
                if !l.is_empty() {
                    out.push_str(&" ".repeat(indent + step));
                }
                out.push_str(l);
                out.push('\n');
            }
        }
        Gen::Map(entries) if entries.is_empty() => out.push_str("{}\n"),
        Gen::Map(entries) => {
            out.push('\n');
            for (k, v) in entries {
                out.push_str(&format!("{pad}{k}: "));
                render(v, indent + step, step, out);
            }
        }
        Gen::Seq(items) if items.is_empty() => out.push_str("[]\n"),
        Gen::Seq(items) => {
            out.push('\n');
            for v in items {
                out.push_str(&format!("{pad}- "));
                render(v, indent + step, step, out);
            }
        }
        Gen::Merge(v) => {
            out.push_str(&format!("\n{pad}base: &a "));
            render(v, indent + step, step, out);
            out.push_str(&format!("{pad}<<: *a\n"));
        }
    }
}

/// One to three generated documents, then a BOM, CRLF line breaks and a stray token in
/// some of them.
fn generated_yaml() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(gen_value(), 1..4),
        1usize..5,
        any::<bool>(),
        any::<bool>(),
        prop::option::weighted(
            0.3,
            (any::<prop::sample::Index>(), prop::sample::select(TOKENS)),
        ),
    )
        .prop_map(|(docs, step, bom, crlf, splice)| {
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            for (i, d) in docs.iter().enumerate() {
                if i > 0 {
                    text.push_str("---\n");
                }
                let mut body = String::new();
                render(d, 0, step, &mut body);
                text.push_str(body.trim_start_matches('\n'));
            }
            if crlf {
                text = text.replace('\n', "\r\n");
            }
            if let Some((at, token)) = splice {
                insert_at(&mut text, at, token);
            }
            text
        })
}

/// Nesting a few hundred levels deep, in every way YAML nests; and some of it far deeper,
/// where the refusal must come before anything recurses.
fn deep_yaml() -> impl Strategy<Value = String> {
    let nested = (0usize..8, 0usize..400).prop_map(|(kind, n)| match kind {
        0 => format!("a: {}1{}\n", "[".repeat(n), "]".repeat(n)),
        1 => format!("{}1{}\n", "{a: ".repeat(n), "}".repeat(n)),
        2 => format!("{}x\n", "- ".repeat(n)),
        3 => (0..n)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect(),
        4 => (0..n).map(|i| format!("{}-\n", " ".repeat(i))).collect(),
        5 => format!("{}1\n", "? ".repeat(n)),
        6 => format!("{}x", "\u{feff}".repeat(n)),
        _ => format!("{}{}", "[{\"a\": ".repeat(n), "]".repeat(n)),
    });
    let huge = prop_oneof![
        (0usize..20_000).prop_map(|n| format!("{}a: 1\n", "\u{feff}".repeat(n))),
        (0usize..20_000).prop_map(|n| format!("a: {}", "[".repeat(n))),
        (0usize..5_000).prop_map(|n| format!("{}x\n", "- ".repeat(n))),
        (0usize..5_000).prop_map(|n| format!("{}1\n", "? ".repeat(n))),
    ];
    prop_oneof![4 => nested, 1 => huge]
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        any::<String>(),
        token_soup(),
        generated_yaml(),
        deep_yaml(),
    ]
}

fn path_seg() -> impl Strategy<Value = PathSeg> {
    prop_oneof![
        prop::sample::select(&["a", "b", "image", "tag", "values", "", "é"][..])
            .prop_map(|k| PathSeg::Key(k.to_string())),
        prop_oneof![0usize..4, Just(usize::MAX)].prop_map(PathSeg::Index),
    ]
}

fn any_path() -> impl Strategy<Value = Vec<PathSeg>> {
    prop::collection::vec(path_seg(), 0..5)
}

fn any_range() -> impl Strategy<Value = Range<usize>> {
    let bound = prop_oneof![0usize..300, Just(usize::MAX)];
    (bound.clone(), bound).prop_map(|(a, b)| a..b)
}

fn new_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &[
                "1.3.0", "1.10", "2", "v2", "", "a\"b", "it's", "x: y", "- z", "#", "é", "\n",
                "a\nb", " lead", "trail ", "[1]", "*a", "&b", "null", "true", "\t", "\\",
            ][..]
        )
        .prop_map(str::to_string),
        any::<String>(),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        new_value().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((new_value(), inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

// ------------------------------------------------------------------------------------------
// Checks
// ------------------------------------------------------------------------------------------

/// Every scalar with its document and path; every mapping and sequence with its path.
fn walk<'a>(
    doc: usize,
    path: &mut Vec<PathSeg>,
    node: &'a Node,
    scalars: &mut Vec<(usize, Vec<PathSeg>, &'a Scalar)>,
    parents: &mut Vec<(usize, Vec<PathSeg>, &'a Node)>,
) {
    match node {
        Node::Scalar(s) => scalars.push((doc, path.clone(), s)),
        Node::Map { .. } | Node::Seq { .. } => parents.push((doc, path.clone(), node)),
        Node::Other { .. } => {}
    }
    for (seg, child) in node.children() {
        path.push(seg);
        walk(doc, path, child, scalars, parents);
        path.pop();
    }
}

/// `after` is `before` with the bytes of `span` replaced, and nothing else changed.
fn only_span_changed(before: &str, after: &str, span: &Range<usize>) -> Result<(), TestCaseError> {
    let head = &before[..span.start];
    let tail = &before[span.end..];
    prop_assert!(
        after.len() >= head.len() + tail.len() && after.starts_with(head) && after.ends_with(tail),
        "bytes outside {span:?} changed:\n{before:?}\n{after:?}"
    );
    Ok(())
}

/// Parse, then read, edit and insert at every place the parse found (a few per document),
/// checking the properties on the way.
fn exercise(text: &str) -> Result<(), TestCaseError> {
    let index = LineIndex::new(text);
    for offset in [0, 1, text.len(), text.len() + 1, usize::MAX] {
        let _ = index.line_col(offset);
    }
    let parsed = parse_located(text);
    // `json_documents` has no nesting guard of its own: its callers parse_located the text
    // first, and libyaml takes seconds over tens of thousands of unclosed brackets. So the
    // huge inputs reach it only once parse_located accepted them.
    if parsed.is_ok() || text.len() < 4096 {
        let _ = json_documents(text);
    }
    let docs = match parsed {
        Ok(docs) => docs,
        Err(ParseError { line, column, .. }) => {
            prop_assert!(line >= 1 && column >= 1, "{line}:{column}");
            return Ok(());
        }
    };
    let mut scalars = Vec::new();
    let mut parents = Vec::new();
    for d in &docs {
        if let Some(root) = &d.root {
            walk(d.index, &mut Vec::new(), root, &mut scalars, &mut parents);
            let _ = root.offset();
            let mut shifted = root.clone();
            shifted.shift(usize::MAX);
        }
    }
    for (i, (doc, path, s)) in scalars.iter().take(4).enumerate() {
        let raw = text.get(s.span.clone());
        prop_assert!(raw.is_some(), "span {:?} is not text of {text:?}", s.span);
        let raw = raw.unwrap_or_default();
        let _ = index.line_col(s.span.start);
        let new = if i % 2 == 0 { "1.3.0" } else { "a\"b'c #" };
        edit_scalar(text, *doc, path, s, raw, new)?;
        let up = Upsert {
            doc: *doc,
            path: path.clone(),
            value: json!("1.3.0"),
        };
        if let Ok(after) = apply_upserts(text, &[up]) {
            only_span_changed(text, &after, &s.span)?;
        }
        if s.style == Style::Block {
            block_edits(text, *doc, path, s)?;
        }
    }
    for (doc, path, node) in parents.iter().take(3) {
        insert_below(text, *doc, path, node);
    }
    Ok(())
}

/// Add an entry or an item to a mapping or a sequence, and a key below a new one.
fn insert_below(text: &str, doc: usize, path: &[PathSeg], node: &Node) {
    let mut grown = path.to_vec();
    grown.push(match node {
        Node::Seq { items, .. } => PathSeg::Index(items.len()),
        _ => PathSeg::Key("imagebump-new".into()),
    });
    let mut deeper = grown.clone();
    deeper.push(PathSeg::Key("tag".into()));
    for (path, value) in [
        (grown, json!({"name": "x", "tag": "1.0"})),
        (deeper, json!(["a"])),
    ] {
        let _ = apply_upserts(text, &[Upsert { doc, path, value }]);
    }
}

/// Replace one scalar as the planner does; when that succeeds only its bytes changed.
fn edit_scalar(
    text: &str,
    doc: usize,
    path: &[PathSeg],
    s: &Scalar,
    raw: &str,
    new: &str,
) -> Result<(), TestCaseError> {
    let Ok(new_raw) = render_scalar(s, raw, new) else {
        return Ok(());
    };
    let edit = Edit {
        doc,
        path: path.to_vec(),
        span: s.span.clone(),
        new_raw: new_raw.clone(),
        new_value: new.to_string(),
        inner: None,
    };
    if let Ok(after) = apply_edits(text, &[edit]) {
        only_span_changed(text, &after, &s.span)?;
        prop_assert_eq!(
            &after[s.span.start..after.len() - (text.len() - s.span.end)],
            new_raw
        );
    }
    Ok(())
}

/// The YAML inside a literal block scalar, edited through the file as an Argo CD
/// Application's `helm.values` is.
fn block_edits(text: &str, doc: usize, path: &[PathSeg], s: &Scalar) -> Result<(), TestCaseError> {
    let Some(b) = BlockText::literal(text, s.span.clone(), &s.value) else {
        return Ok(());
    };
    let _ = b.position(usize::MAX, usize::MAX);
    let lines = b.line_index();
    let _ = lines.line_col(usize::MAX);
    let backwards = Range {
        start: usize::MAX,
        end: 0,
    };
    for r in [0..0, 0..usize::MAX, backwards, 1..b.text.len() + 5] {
        let _ = b.file_span(r);
    }
    let Ok(inner_docs) = parse_located(&b.text) else {
        return Ok(());
    };
    let mut scalars = Vec::new();
    for d in &inner_docs {
        if let Some(root) = &d.root {
            walk(
                d.index,
                &mut Vec::new(),
                root,
                &mut scalars,
                &mut Vec::new(),
            );
        }
    }
    for (inner_doc, inner_path, inner) in scalars.iter().take(3) {
        let Some(span) = b.file_span(inner.span.clone()) else {
            continue;
        };
        let raw = text.get(span.clone());
        prop_assert!(raw.is_some(), "file span {span:?} of {:?}", inner.span);
        let Ok(new_raw) = render_scalar(inner, raw.unwrap_or_default(), "9.9.9") else {
            continue;
        };
        let edit = Edit {
            doc,
            path: path.to_vec(),
            span: span.clone(),
            new_raw,
            new_value: "9.9.9".into(),
            inner: Some(Inner {
                doc: *inner_doc,
                path: inner_path.clone(),
                span: inner.span.clone(),
            }),
        };
        if let Ok(after) = apply_edits(text, &[edit]) {
            only_span_changed(text, &after, &span)?;
        }
    }
    Ok(())
}

/// Texts of the one-pass reader's subset (block mappings and sequences, one-line scalars
/// and flow collections, comments), most with one tricky piece spliced in: a character
/// libyaml refuses or takes for a line break, an indicator, a quote, a key it would type,
/// a change of indentation. What the one-pass reader accepts, libyaml must read the same
/// (debug builds compare the two on every read, `located.rs`'s `cross_check`).
fn subset_yaml() -> impl Strategy<Value = String> {
    const VALUES: &[&str] = &[
        "1.2.3",
        "v1.2.3",
        "-1",
        "1.10",
        "true",
        "~",
        "null",
        "a b",
        "http://x:80/y",
        "\"q\"",
        "'s'",
        "\"a # b\"",
        "[a, 'b', {c: d}]",
        "{}",
        "[]",
        "[http://x:80/y]",
        "x # c",
        "r.io/a:1@sha256:ab",
        "é",
        "0x1F",
        ".inf",
        "a:b",
        "[a:b]",
        "{a: [1, {b: c}]}",
    ];
    const KEYS: &[&str] = &[
        "a", "b", "image", "tag", "k.s/x", "on", "True", "1", "_x", "a-b",
    ];
    const SPLICE: &[&str] = &[
        ":", ": ", " #", "#", "-", "- ", "[", "]", "{", "}", ",", "\"", "'", "\\", "?", "%", "@",
        "`", "&a ", "*a", "!t ", "|", ">", "\n", "\n  ", " ", "\u{1}", "\u{7f}", "\u{85}",
        "\u{2028}", "\u{feff}", "\t", "\r", "---", "...", "a: 1", "true: 1", "1: x", "x\n- y",
        "\n# c\n", ":x", "-x", "a,b", "{a: b}", "[a]: b",
    ];
    let leaf = prop::sample::select(VALUES).prop_map(|v| (v.to_string(), false));
    let node = leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec((prop::sample::select(KEYS), inner.clone()), 1..4)
                .prop_map(|entries| (block_mapping(&entries), true)),
            prop::collection::vec(inner, 1..4).prop_map(|items| (block_sequence(&items), true)),
        ]
    });
    (
        node,
        prop::option::weighted(
            0.8,
            (any::<prop::sample::Index>(), prop::sample::select(SPLICE)),
        ),
    )
        .prop_map(|((body, block), splice)| {
            let mut text = if block { body } else { format!("k: {body}\n") };
            if let Some((at, token)) = splice {
                insert_at(&mut text, at, token);
            }
            text
        })
}

/// A block mapping of `entries`: a block value (`true`) on the lines below its key,
/// indented; a one-line value after it.
fn block_mapping(entries: &[(&str, (String, bool))]) -> String {
    entries
        .iter()
        .map(|(k, (v, block))| {
            if *block {
                format!("{k}:\n{}", indent(v))
            } else {
                format!("{k}: {v}\n")
            }
        })
        .collect()
}

/// A block sequence of `items`: a block item starts on its dash's line, a one-line item
/// after its dash.
fn block_sequence(items: &[(String, bool)]) -> String {
    items
        .iter()
        .map(|(v, block)| {
            if *block {
                format!("-\n{}", indent(v)).replacen("-\n  ", "- ", 1)
            } else {
                format!("- {v}\n")
            }
        })
        .collect()
}

/// `token` inserted into `text` at one of its character boundaries, chosen by `at`.
fn insert_at(text: &mut String, at: prop::sample::Index, token: &str) {
    let boundaries: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    text.insert_str(*at.get(&boundaries), token);
}

/// `text`'s lines two spaces further in.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
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
    #![proptest_config(config(600))]

    #[test]
    fn arbitrary_text_never_panics(text in any_text()) {
        exercise(&text)?;
    }
}

proptest! {
    #![proptest_config(config(3000))]

    /// Whatever the one-pass reader accepts, libyaml accepts too, and reads the same (the
    /// cross-check of debug builds compares every value and panics otherwise); nothing
    /// panics.
    #[test]
    fn the_one_pass_reader_accepts_only_what_libyaml_reads_the_same(text in subset_yaml()) {
        if let Ok((_, fingerprint)) = parse_located_fingerprinted(&text) {
            if fingerprint.read_in_one_pass() {
                // Leading byte order marks are not content: the parse reads what follows.
                let content = text.trim_start_matches('\u{feff}');
                let libyaml: Result<Vec<yaml_serde::Value>, _> =
                    yaml_serde::Deserializer::from_str(content)
                        .map(serde::Deserialize::deserialize)
                        .collect();
                prop_assert!(libyaml.is_ok(), "libyaml refuses {text:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn generated_documents_edit_only_their_spans(text in generated_yaml()) {
        exercise(&text)?;
    }
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn edits_with_arbitrary_fields_are_refused_not_panicked(
        text in prop_oneof![token_soup(), generated_yaml()],
        doc in prop_oneof![0usize..3, Just(usize::MAX)],
        path in any_path(),
        span in any_range(),
        new_raw in new_value(),
        new_value in new_value(),
        inner in prop::option::of((prop_oneof![0usize..2, Just(usize::MAX)], any_path(), any_range())),
    ) {
        let edit = Edit {
            doc,
            path,
            span,
            new_raw,
            new_value,
            inner: inner.map(|(doc, path, span)| Inner { doc, path, span }),
        };
        let _ = apply_edits(&text, &[edit.clone(), edit]);
    }

    #[test]
    fn upserts_with_arbitrary_fields_are_refused_not_panicked(
        text in prop_oneof![token_soup(), generated_yaml()],
        doc in prop_oneof![0usize..3, Just(usize::MAX)],
        path in any_path(),
        value in json_value(),
    ) {
        let _ = apply_upserts(&text, &[Upsert { doc, path, value }]);
    }

    #[test]
    fn set_path_and_path_to_string_never_panic(
        mut doc in json_value(),
        path in any_path(),
        value in json_value(),
    ) {
        let _ = path_to_string(&path);
        let _ = set_path(&mut doc, &path, value);
    }

    #[test]
    fn render_scalar_and_block_text_never_panic(
        text in any_text(),
        span in any_range(),
        decoded in new_value(),
        new in new_value(),
        style in prop::sample::select(&[Style::Plain, Style::Single, Style::Double, Style::Block][..]),
    ) {
        let old = Scalar { value: decoded.clone(), span: span.clone(), style };
        let _ = render_scalar(&old, text.get(span.clone()).unwrap_or(&text), &new);
        if let Some(b) = BlockText::literal(&text, span, &decoded) {
            let _ = b.file_span(0..b.text.len());
            let _ = b.line_index().line_col(b.text.len());
        }
    }

    #[test]
    fn shifted_line_indexes_never_panic(
        text in any_text(),
        line_base in prop_oneof![0usize..10, Just(usize::MAX)],
        column_base in prop_oneof![0usize..10, Just(usize::MAX)],
        offset in prop_oneof![0usize..300, Just(usize::MAX)],
    ) {
        let (line, column) = LineIndex::shifted(&text, line_base, column_base).line_col(offset);
        prop_assert!(line >= 1 && column >= 1);
    }
}
