//! `--help` and the docs agree: every flag a command's `--help` lists is in its synopsis in
//! docs/configuration.md (the options every command takes, under "Global options" there and
//! in `--help`), and every flag the docs show with a command (synopses, examples in code
//! blocks of README.md and docs/*.md, the flag table) exists for it.

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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;
use support::cli::imagebump;

/// Every command, as its words after `imagebump`.
const COMMANDS: [&str; 8] = [
    "scan",
    "run",
    "tags",
    "promotions",
    "config check",
    "config schema",
    "registry check",
    "verify",
];

/// Flags clap adds to every command; not documented per command.
const CLAP_OWN: [&str; 2] = ["--help", "--version"];

/// A command's flags from its `--help`: its own, and those under "Global options".
#[derive(Debug, Default)]
struct Help {
    own: BTreeSet<String>,
    global: BTreeSet<String>,
}

fn help(command: &str) -> Help {
    let run = imagebump()
        .args(command.split(' '))
        .arg("--help")
        .env("COLUMNS", "200")
        .run();
    let flag = Regex::new(r"^\s{2,}(?:-[a-zA-Z], )?(--[a-z][a-z0-9-]*)").unwrap();
    let mut out = Help::default();
    let mut global = false;
    for line in run.stdout.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            global = line == "Global options:";
            continue;
        }
        if let Some(c) = flag.captures(line) {
            let name = c[1].to_string();
            if CLAP_OWN.contains(&name.as_str()) {
                continue;
            }
            if global {
                out.global.insert(name);
            } else {
                out.own.insert(name);
            }
        }
    }
    assert!(
        !out.global.is_empty(),
        "{command}: no Global options in\n{}",
        run.stdout
    );
    out
}

/// The text of every fenced code block of `text`, each as its lines.
fn code_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(Vec::new()),
            }
        } else if let Some(block) = current.as_mut() {
            block.push(line);
        }
    }
    blocks
}

/// The command a line of a code block runs (`$ imagebump tags …`, `imagebump run …`), and
/// the rest of the line.
fn command_of(line: &str) -> Option<(&'static str, &str)> {
    let rest = line.trim_start_matches("$ ").strip_prefix("imagebump ")?;
    let rest = rest.trim_start();
    // The longest name first: `config check` before `config`.
    let mut names = COMMANDS;
    names.sort_by_key(|c| std::cmp::Reverse(c.len()));
    names.into_iter().find_map(|c| {
        let after = rest.strip_prefix(c)?;
        (after.is_empty() || after.starts_with(' ')).then_some((c, after))
    })
}

fn flags_in(text: &str) -> BTreeSet<String> {
    let flag = Regex::new(r"(?:^|[\s\[|(])(--[a-z][a-z0-9-]*)").unwrap();
    flag.captures_iter(text).map(|c| c[1].to_string()).collect()
}

/// Each command's flags as a code block of `file` shows them (an `imagebump` line and the
/// indented lines after it), by file and line.
fn shown(file: &str, text: &str, out: &mut Vec<(String, &'static str, String)>) {
    for block in code_blocks(text) {
        let mut current: Option<&'static str> = None;
        for line in block {
            if let Some((command, rest)) = command_of(line) {
                current = Some(command);
                for f in flags_in(rest) {
                    out.push((file.to_string(), command, f));
                }
            } else if line.starts_with("  ") && current.is_some() {
                // A synopsis continues on indented lines.
                for f in flags_in(line) {
                    out.push((file.to_string(), current.unwrap_or_default(), f));
                }
            } else {
                current = None;
            }
        }
    }
}

/// The synopsis block of docs/configuration.md: each command's flags, and the global ones.
fn synopsis(text: &str) -> (BTreeMap<&'static str, BTreeSet<String>>, BTreeSet<String>) {
    let block = code_blocks(text)
        .into_iter()
        .find(|b| b.first().is_some_and(|l| l.starts_with("imagebump scan [")))
        .expect("the synopsis block (starting `imagebump scan [`) in docs/configuration.md");
    let mut by_command: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    let mut global = BTreeSet::new();
    let mut current: Option<&'static str> = None;
    for line in block {
        if line.starts_with("Global options") {
            current = None;
        } else if let Some((command, rest)) = command_of(line) {
            current = Some(command);
            by_command
                .entry(command)
                .or_default()
                .extend(flags_in(rest));
        } else if let Some(c) = current {
            by_command.entry(c).or_default().extend(flags_in(line));
        } else {
            global.extend(flags_in(line));
        }
    }
    (by_command, global)
}

/// The flags of the first column of docs/configuration.md's flag table.
fn table_flags(text: &str) -> BTreeSet<String> {
    let first = Regex::new(r"^\| (?:`-[a-z]`, )?`(--[a-z][a-z0-9-]*)").unwrap();
    text.lines()
        .filter_map(|l| first.captures(l).map(|c| c[1].to_string()))
        .collect()
}

#[test]
fn every_flag_of_help_is_documented_and_every_documented_flag_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let helps: BTreeMap<&str, Help> = COMMANDS.iter().map(|c| (*c, help(c))).collect();
    let configuration = std::fs::read_to_string(root.join("docs/configuration.md")).unwrap();
    let (synopses, global) = synopsis(&configuration);
    let mut wrong = Vec::new();
    for (command, h) in &helps {
        let documented = synopses.get(command).cloned().unwrap_or_default();
        for f in h.own.difference(&documented) {
            wrong.push(format!(
                "`{command} {f}` is not in its synopsis (docs/configuration.md)"
            ));
        }
        for f in documented.difference(&h.own) {
            let why = if h.global.contains(f) {
                "a global option"
            } else {
                "no such flag"
            };
            wrong.push(format!("the synopsis of `{command}` shows {f}: {why}"));
        }
        for f in h.global.difference(&global) {
            wrong.push(format!(
                "global {f} of `{command} --help` is not under Global options"
            ));
        }
    }
    let any_global: BTreeSet<&String> = helps.values().flat_map(|h| &h.global).collect();
    for f in &global {
        if !any_global.contains(f) {
            wrong.push(format!(
                "Global options in docs/configuration.md show {f}: no such global flag"
            ));
        }
    }
    let mut files = vec!["README.md".to_string()];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    files.sort();
    let mut examples = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        shown(file, &text, &mut examples);
    }
    for (file, command, f) in examples {
        let h = &helps[command];
        if !h.own.contains(&f) && !h.global.contains(&f) && !CLAP_OWN.contains(&f.as_str()) {
            wrong.push(format!(
                "{file} shows `imagebump {command} … {f}`: no such flag"
            ));
        }
    }
    let every: BTreeSet<&String> = helps
        .values()
        .flat_map(|h| h.own.iter().chain(&h.global))
        .collect();
    for f in table_flags(&configuration) {
        if !every.contains(&f) {
            wrong.push(format!(
                "the flag table of docs/configuration.md lists {f}: no command has it"
            ));
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "help and docs disagree:\n{}",
        wrong.join("\n")
    );
}

/// The readers above find what they look for (else the check above would pass on nothing).
#[test]
fn the_docs_readers_find_commands_and_flags() {
    let text = "text --not-read\n```\n$ imagebump config check . --config x.yaml\nimagebump run [SOURCE] [--write]\n       [--exit-code]\nother --nope\n```\n";
    let mut found = Vec::new();
    shown("f.md", text, &mut found);
    let found: Vec<(&str, &str)> = found.iter().map(|(_, c, f)| (*c, f.as_str())).collect();
    assert_eq!(
        found,
        [
            ("config check", "--config"),
            ("run", "--write"),
            ("run", "--exit-code")
        ]
    );
    let table = "| `--timeout D` | x |\n| `-q`, `--quiet` | y |\n| `SOURCE` | z |\n";
    assert_eq!(
        table_flags(table).into_iter().collect::<Vec<_>>(),
        ["--quiet", "--timeout"]
    );
}
