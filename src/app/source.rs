//! Opening the manifest tree and loading its configuration, shared by the commands.

use std::path::{Path, PathBuf};

use secrecy::SecretString;

use super::Error;
use crate::cli::{PromotionsArgs, SourceArgs};
use crate::config;
use crate::source::{self as tree, Workspace};
use imagebump_model::config::Config;

/// Where the manifests come from, as the command line names them.
#[derive(Debug, Clone)]
pub struct Source {
    /// A local directory or a git URL.
    pub location: String,
    /// `--ref`: the branch or tag to clone.
    pub git_ref: Option<String>,
    /// `--config`: the configuration file, instead of looking for one in the tree.
    pub config: Option<PathBuf>,
}

impl From<&SourceArgs> for Source {
    fn from(args: &SourceArgs) -> Source {
        Source {
            location: args.source.clone(),
            git_ref: args.git_ref.clone(),
            config: args.config.clone(),
        }
    }
}

impl From<&PromotionsArgs> for Source {
    fn from(args: &PromotionsArgs) -> Source {
        Source {
            location: args.source.clone(),
            git_ref: args.git_ref.clone(),
            config: args.config.clone(),
        }
    }
}

/// An opened tree with its configuration.
pub struct Loaded {
    pub ws: Workspace,
    pub config: Config,
    /// The file the configuration came from (`None`: built-in defaults).
    pub config_path: Option<PathBuf>,
    /// What is valid but probably not meant, `file: what` (the command shows them).
    pub config_warnings: Vec<String>,
    /// A local tree below the top of its git work tree: where that top is, for the notes
    /// about includes that leave the tree.
    pub subdir: Option<super::subdir::Subdir>,
}

impl Loaded {
    /// Say, in the notes about includes that leave a subdirectory's tree but stay in its
    /// repository, where to run to read them.
    pub fn explain_outside(&self, found: &mut crate::discover::Discovery) {
        if let Some(s) = &self.subdir {
            s.explain(&mut found.notes);
            s.explain(&mut found.problems);
        }
    }
}

/// The configuration in force, where it came from, and its warnings (`file: what`).
pub struct Configured {
    pub config: Config,
    /// The file it came from (the repository's when there is one; `None`: the defaults).
    pub path: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// `path: warning` for each of `config`'s warnings.
fn warnings_of(config: &Config, path: &Path) -> Vec<String> {
    config::validate(config)
        .1
        .into_iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect()
}

/// Open the source (a shallow clone of `depth` commits for a remote) with this git token,
/// and load its configuration.
pub fn open(source: &Source, token: Option<SecretString>, depth: usize) -> Result<Loaded, Error> {
    let mut ws = tree::open(
        &source.location,
        source.git_ref.as_deref(),
        token,
        depth,
        &imagebump_model::config::CONFIG_NAMES,
    )?;
    if ws.remote.is_none() {
        if let Some(root) = repository_root(&ws.root) {
            ws = ws.rooted_at(&root);
            tracing::info!(
                "{} is below {}: its imagebump.yaml and Argo CD Applications apply; only {} is updated",
                source.location,
                root.display(),
                ws.scope.as_deref().unwrap_or_default()
            );
        }
    }
    let Configured {
        config,
        path: config_path,
        warnings,
    } = load_config(source.config.as_deref(), &ws.root)?;
    check_signing(&config, config_path.as_deref())?;
    ws.git = ws.git.map(|g| g.with_signing(config.signing.clone()));
    let subdir = ws
        .remote
        .is_none()
        .then(|| super::subdir::Subdir::of(&source.location, &ws.root))
        .flatten();
    Ok(Loaded {
        ws,
        config,
        config_path,
        config_warnings: warnings,
        subdir,
    })
}

/// For a directory without a configuration file of its own, inside a git work tree: the
/// nearest directory above it, up to the work tree's top, that has one. That is where the
/// repository's settings (and its Argo CD Applications) are, so that a run on
/// `gitops/apps/web` keeps the constraints `gitops/imagebump.yaml` sets.
fn repository_root(dir: &Path) -> Option<PathBuf> {
    // A name taken by anything (a pipe, a directory) counts: reading it then stops the run.
    let has_config = |d: &Path| {
        (imagebump_model::config::CONFIG_NAMES.iter()).any(|n| d.join(n).symlink_metadata().is_ok())
    };
    if has_config(dir) {
        return None;
    }
    let top = tree::git_top_level(dir)?;
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(&top))
        .find(|a| has_config(a))
        .map(Path::to_path_buf)
}

/// A `--config` file that cannot be read names the flag: the path alone does not say where
/// it came from.
fn flag(e: config::Error) -> config::Error {
    match e {
        config::Error::Read { path, source } => config::Error::Read {
            path: format!("--config {path}"),
            source,
        },
        other => other,
    }
}

/// The configuration: the operator's (`explicit`, trusted) with the repository's own file
/// found under `root` (restricted: no registries, no credentials) on top; and the file it
/// came from (the repository's when there is one).
pub fn load_config(explicit: Option<&Path>, root: &Path) -> Result<Configured, Error> {
    let operator = match explicit {
        Some(path) => Some((config::load(path).map_err(flag)?, path.to_path_buf())),
        None => None,
    };
    let mut warnings: Vec<String> = operator
        .as_ref()
        .map(|(c, p)| warnings_of(c, p))
        .unwrap_or_default();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let repository =
        config::locate(None, root).filter(|found| !explicit.is_some_and(|e| same(e, found)));
    let (config, path) = match (operator, repository) {
        (None, None) => (Config::default(), None),
        (Some((config, path)), None) => (config, Some(path)),
        (operator, Some(path)) => {
            let text = read_repository_config(root, &path)?;
            let (repo, keys) = config::load_repository(&path, &text)?;
            warnings.extend(warnings_of(&repo, &path));
            let config = match operator {
                Some((operator, _)) => config::merge(operator, repo, &keys),
                None => repo,
            };
            (config, Some(path))
        }
    };
    Ok(Configured {
        config,
        path,
        warnings,
    })
}

/// The text of the repository's configuration file `path` (found under `root`). The tree
/// is a jail: a link is followed only to a file inside the tree, and what is read is a
/// regular file reached through no link, opened without blocking (a pipe cannot hang the
/// run) and read up to [`config::CONFIG_LIMIT`]. Anything else stops the run,
/// naming the file: a run without the repository's settings would ignore its pins.
fn read_repository_config(root: &Path, path: &Path) -> Result<String, config::Error> {
    let refuse = |message: String| config::Error::Invalid {
        path: path.display().to_string(),
        line: 0,
        column: 0,
        message,
        hint: Some("imagebump.yaml must be a regular file of the repository".into()),
    };
    let (Ok(real), Ok(top)) = (path.canonicalize(), root.canonicalize()) else {
        return Err(refuse("a link that leads nowhere: not read".into()));
    };
    let Some(rel) = real.strip_prefix(&top).ok().and_then(Path::to_str) else {
        return Err(refuse(
            "a link to a file outside the repository: not read".into(),
        ));
    };
    crate::source::jail::read_beneath(&top, rel, config::CONFIG_LIMIT).map_err(|e| refuse(e.into()))
}

/// An SSH signing key must be a readable file before anything is built: a run that would
/// fail at its first commit says so at once, naming the setting (not the key's content).
fn check_signing(config: &Config, path: Option<&Path>) -> Result<(), Error> {
    let Some(signing) = &config.signing else {
        return Ok(());
    };
    let problem = match signing.format {
        imagebump_model::config::SigningFormat::Ssh if signing.key.trim().is_empty() => {
            Some("signing.key is empty: give the path of an SSH private key".to_string())
        }
        imagebump_model::config::SigningFormat::Ssh if !Path::new(&signing.key).is_file() => {
            Some(format!(
                "signing.key {:?} is not a readable file (an SSH private key without a passphrase)",
                signing.key
            ))
        }
        imagebump_model::config::SigningFormat::Openpgp if signing.key.trim().is_empty() => {
            Some("signing.key is empty: give a GnuPG key id or fingerprint".to_string())
        }
        imagebump_model::config::SigningFormat::Github if !signing.key.trim().is_empty() => Some(
            "signing.key is not used with format github (GitHub signs the commits it creates)"
                .to_string(),
        ),
        _ => None,
    };
    match problem {
        None => Ok(()),
        Some(message) => Err(config::Error::Invalid {
            path: path.map(|p| p.display().to_string()).unwrap_or_default(),
            line: 0,
            column: 0,
            message,
            hint: Some("see docs/pull-requests.md, \"Signed commits\"".into()),
        }
        .into()),
    }
}
