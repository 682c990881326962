//! Opening the manifest tree and loading its configuration, shared by the commands.

use std::path::{Path, PathBuf};

use secrecy::SecretString;

use super::Error;
use crate::cli::SourceArgs;
use crate::config::{self, Config};
use crate::source::{self as tree, Workspace};

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

/// An opened tree with its configuration.
pub struct Loaded {
    pub ws: Workspace,
    pub config: Config,
    /// The file the configuration came from (`None`: built-in defaults).
    pub config_path: Option<PathBuf>,
}

/// Open the source (a shallow clone of `depth` commits for a remote) with this git token,
/// and load its configuration.
pub fn open(source: &Source, token: Option<SecretString>, depth: usize) -> Result<Loaded, Error> {
    let ws = tree::open(&source.location, source.git_ref.as_deref(), token, depth)?;
    let (config, config_path) = load_config(source.config.as_deref(), &ws.root)?;
    Ok(Loaded {
        ws,
        config,
        config_path,
    })
}

/// The configuration: `explicit`, else the one found under `root`, else the defaults; and
/// the file it came from.
pub fn load_config(
    explicit: Option<&Path>,
    root: &Path,
) -> Result<(Config, Option<PathBuf>), Error> {
    match config::locate(explicit, root) {
        Some(path) => Ok((config::load(&path)?, Some(path))),
        None => Ok((Config::default(), None)),
    }
}
