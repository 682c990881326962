//! The floor plan (docs/architecture.md, "Layers"), checked on the source text: every import
//! points down. A file may use modules of its own top-level module and of the modules below
//! it in [`LAYERS`]; the workspace crates may depend only on the crates below them in
//! [`CRATES`]; environment variable names are spelled only in the model's list.

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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The top-level modules of the `imagebump` package, lowest first. The same order is written
/// in docs/architecture.md (checked below).
const LAYERS: &[&str] = &[
    "limits", "chunked", "parallel", "progress", "registry", "verify", "chart", "source", "forge",
    "config", "discover", "resolve", "promote", "plan", "deliver", "report", "notify", "cli",
    "app",
];

/// The workspace crates under crates/, lowest first.
const CRATES: &[&str] = &[
    "imagebump-model",
    "imagebump-yaml",
    "imagebump-http",
    "imagebump-forge",
    "imagebump-policy",
    "imagebump-flux",
    "imagebump-argocd",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `src/discover/helm.rs` → `discover`; `src/parallel.rs` → `parallel`.
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a `use crate::…;` tree names: `{a::b, c, d::{e, f}}` → a, c, d.
fn use_tree_heads(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return vec![tree.split("::").next().unwrap_or("").trim().to_string()];
    };
    let (mut depth, mut current, mut heads) = (0, String::new(), Vec::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.extend(use_tree_heads(&current));
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    heads.extend(use_tree_heads(&current));
    heads.retain(|h| !h.is_empty() && h != "self");
    heads
}

/// Every (line, module) a file's code refers to through `crate::`.
fn crate_references(text: &str) -> Vec<(usize, String)> {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(at) = text[rest..].find("crate::") {
        let start = rest + at;
        rest = start + "crate::".len();
        let before = text[..start].trim_end();
        let is_path_start = !text[..start].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        if !is_path_start {
            continue;
        }
        let after = &text[rest..];
        if before.ends_with("use") && after.starts_with('{') {
            let end = after.find(';').unwrap_or(after.len());
            for head in use_tree_heads(&after[..end]) {
                found.push((line_of(start), head));
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push((line_of(start), name));
        }
    }
    found
}

#[test]
fn every_import_points_down_the_layers() {
    let src = root().join("src");
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut wrong = Vec::new();
    for file in rust_files(&src) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if file.parent() == Some(src.as_path()) && (name == "lib.rs" || name == "main.rs") {
            continue;
        }
        let own = top_module(&src, &file);
        let own_rank = rank(&own)
            .unwrap_or_else(|| panic!("{}: module {own:?} is not in LAYERS", file.display()));
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, used) in crate_references(&text) {
            if used == own {
                continue;
            }
            match rank(&used) {
                Some(r) if r < own_rank => {}
                Some(_) => wrong.push(format!(
                    "{}:{line}: {own} imports {used}, which is not below it",
                    file.strip_prefix(root()).unwrap().display()
                )),
                None => wrong.push(format!(
                    "{}:{line}: crate::{used} is not a module in LAYERS",
                    file.strip_prefix(root()).unwrap().display()
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports pointing up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_modules_in_lib_rs_are_the_layers() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect();
    let layers: BTreeSet<String> = LAYERS.iter().map(|s| s.to_string()).collect();
    assert_eq!(declared, layers, "src/lib.rs and LAYERS disagree");
}

#[test]
fn docs_state_the_same_order() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let crates = CRATES.join(" → ");
    let layers = LAYERS.join(" → ");
    assert!(
        doc.contains(&crates),
        "docs/architecture.md must state the crate order:\n{crates}"
    );
    assert!(
        doc.contains(&layers),
        "docs/architecture.md must state the module order:\n{layers}"
    );
}

/// `[dependencies]` entries of a Cargo.toml that are workspace crates.
fn workspace_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut section = "";
    let mut deps = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section != "[dependencies]" {
            continue;
        }
        // `name = { … }`, `name = "1"` or `name.workspace = true`.
        let name = line.split(['=', ' ', '.']).next().unwrap_or("");
        if CRATES.contains(&name) {
            deps.push(name.to_string());
        }
    }
    deps
}

#[test]
fn each_crate_depends_only_on_crates_below_it() {
    let mut wrong = Vec::new();
    for (i, krate) in CRATES.iter().enumerate() {
        let manifest = root().join("crates").join(krate).join("Cargo.toml");
        if !manifest.exists() {
            wrong.push(format!("{krate}: no crates/{krate}/Cargo.toml"));
            continue;
        }
        for dep in workspace_dependencies(&manifest) {
            if !CRATES[..i].contains(&dep.as_str()) {
                wrong.push(format!("{krate} depends on {dep}, which is not below it"));
            }
        }
        let text = std::fs::read_to_string(&manifest).unwrap();
        assert!(
            !text.contains("imagebump = ") && !text.contains("[dependencies.imagebump]"),
            "{krate} must not depend on the imagebump package"
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn environment_variables_are_named_only_in_the_model_list() {
    let list_file = root().join("crates/imagebump-model/src/env.rs");
    let list = std::fs::read_to_string(&list_file).unwrap();
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert!(names.len() > 50, "the list in env.rs was not read");
    let mut files = rust_files(&root().join("src"));
    for krate in std::fs::read_dir(root().join("crates")).unwrap() {
        files.extend(rust_files(&krate.unwrap().path().join("src")));
    }
    let mut wrong = Vec::new();
    for file in files.iter().filter(|f| **f != list_file) {
        let text = std::fs::read_to_string(file).unwrap();
        // Unit tests set variables by name on purpose; only the code itself is checked.
        let code = text.split("\n#[cfg(test)]\nmod ").next().unwrap_or("");
        for name in &names {
            if let Some(at) = code.find(&format!("\"{name}\"")) {
                let line = code[..at].matches('\n').count() + 1;
                wrong.push(format!(
                    "{}:{line}: \"{name}\": use imagebump_model::env::EnvVars::{name}",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_parser_sees_nested_use_trees_and_paths() {
    let text = "use crate::{a::b, c, d::{e, f}};\nfn x() { crate::g::h(); my_crate::i::j(); }\n";
    let found: Vec<String> = crate_references(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(found, ["a", "c", "d", "g"]);
}

/// `text` with the insides of comments, string literals and character literals blanked
/// (newlines kept), so that a brace in `'{'`, `"{x}"` or `// }` is not counted as code.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        let end = match (c, next) {
            ('/', Some('/')) => (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len()),
            ('/', Some('*')) => (i + 2..chars.len())
                .find(|&j| chars[j - 1] == '*' && chars[j] == '/')
                .map_or(chars.len(), |j| j + 1),
            ('r', Some('"' | '#')) if i == 0 || !chars[i - 1].is_alphanumeric() => {
                let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                let close: String = std::iter::once('"')
                    .chain("#".repeat(hashes).chars())
                    .collect();
                let from = i + 2 + hashes;
                let rest: String = chars[from.min(chars.len())..].iter().collect();
                rest.find(&close).map_or(chars.len(), |k| {
                    from + rest[..k].chars().count() + close.len()
                })
            }
            ('"', _) => {
                let mut j = i + 1;
                while j < chars.len() && chars[j] != '"' {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                j + 1
            }
            ('\'', Some('\\')) => (i + 2..chars.len())
                .find(|&j| chars[j] == '\'')
                .map_or(i + 1, |j| j + 1),
            ('\'', Some(_)) if chars.get(i + 2) == Some(&'\'') => i + 3,
            _ => i + 1,
        };
        let end = end.min(chars.len());
        if end == i + 1 {
            out.push(c);
        } else {
            out.extend(chars[i..end].iter().map(|&c| blank(c)));
        }
        i = end;
    }
    out
}

/// The length in lines of every `fn` in `text` with a body: (name, first line, lines).
/// Braces are counted in code only ([`code_only`]).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let code = code.strip_prefix("pub(crate) ").unwrap_or(code);
        let code = code.strip_prefix("pub(super) ").unwrap_or(code);
        let code = code.strip_prefix("pub ").unwrap_or(code);
        let code = code.strip_prefix("const ").unwrap_or(code);
        let code = code.strip_prefix("async ").unwrap_or(code);
        let Some(rest) = code.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut opened) = (0i32, false);
        for (j, body) in lines.iter().enumerate().skip(i) {
            if !opened && body.trim_end().ends_with(';') {
                break;
            }
            for ch in body.chars() {
                match ch {
                    '{' => (depth, opened) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth == 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
    out
}

/// The functions allowed over 80 lines, as `path fn name`. The list only shrinks: split a
/// function and take it off; a new long function is split before it lands.
const LONG_FUNCTIONS: &[&str] = &[];

/// No function of the package or a workspace crate (library code, unit tests and the
/// crates' own integration tests) is over 80 lines: a reader sees each one whole, and a
/// long one is a story of steps that want names.
#[test]
fn no_function_is_over_80_lines() {
    let mut files = rust_files(&root().join("src"));
    files.extend(rust_files(&root().join("crates")));
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let path = file.strip_prefix(root()).unwrap().display().to_string();
        for (name, line, lines) in function_lengths(&text) {
            if lines > 80 && !LONG_FUNCTIONS.contains(&format!("{path} fn {name}").as_str()) {
                long.push(format!("{path}:{line}: fn {name} is {lines} lines"));
            }
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}

#[test]
fn function_lengths_are_counted_from_fn_to_its_closing_brace() {
    let text = "fn a() {\n    let s = format!(\"{x}\");\n}\npub fn b();\nasync fn c() {\n}\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_string(), 1, 3), ("c".to_string(), 5, 2)]
    );
}

#[test]
fn braces_in_literals_and_comments_are_not_code() {
    let text = "fn a() {\n    let c = '{';\n    // }\n    let s = r#\"}\"#;\n    let e = \"\\\"}\";\n}\nfn b<'x>(v: &'x str) {\n    let d = '\\'';\n}\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_string(), 1, 6), ("b".to_string(), 7, 3)]
    );
}
