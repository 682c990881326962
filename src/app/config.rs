//! `imagebump config check` and `imagebump config schema`.

use std::path::PathBuf;

use super::output::print;
use super::source::{self, Source};
use super::{Error, Status};
use crate::config;
use imagebump_policy::Policy;

/// `config schema [--report]`: the JSON Schema of imagebump.yaml or of the run report.
pub fn schema(report: bool) -> Status {
    if report {
        print(format_args!("{}", crate::report::schema()));
    } else {
        print(format_args!("{}", config::schema()));
    }
    Status::Done
}

/// `config check`: load and validate, then list what applies to what.
pub fn check(location: String, explicit: Option<PathBuf>) -> Result<Status, Error> {
    let source = Source {
        location,
        git_ref: None,
        config: explicit,
    };
    let loaded = source::open(&source, super::git_token(), 1)?;
    let Some(path) = loaded.config_path else {
        print(format_args!(
            "no configuration file (looked for {}); built-in defaults apply\n",
            imagebump_model::config::CONFIG_NAMES.join(", ")
        ));
        return Ok(Status::Done);
    };
    let config = loaded.config;
    let term = |s: String| imagebump_model::escape::terminal(&s).into_owned();
    print(format_args!(
        "{}: valid\n",
        term(path.display().to_string())
    ));
    // Findings are part of the check's answer, not log lines.
    for w in &loaded.config_warnings {
        print(format_args!("  warning: {}\n", term(w.to_string())));
    }
    if let Ok(p) = Policy::compile(config.defaults.clone(), Default::default()) {
        print(format_args!("  defaults: {}\n", p.summary()));
    }
    for (i, rule) in config.images.iter().enumerate() {
        let spec = config.defaults.overlay(&rule.policy());
        if let Ok(p) = Policy::compile(spec, Default::default()) {
            print(format_args!(
                "  images[{i}] {}\n",
                term(format!("{}: {}", rule.glob, p.summary()))
            ));
        }
    }
    for r in &config.registries {
        print(format_args!("  registry {}\n", term(r.prefix.to_string())));
    }
    Ok(Status::Done)
}
