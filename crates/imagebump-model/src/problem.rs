//! Problems: what went wrong for one file, registry or setting, as data. The run carries on.

use serde::Serialize;

use crate::name::ImageName;

/// Something that went wrong for one file, registry or setting. The run carries on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// `file:line:column`, `registry/repository`, or `config`.
    pub location: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Problem {
    pub fn at_file(file: &str, line: usize, column: usize, message: impl Into<String>) -> Problem {
        let location = if line == 0 {
            file.to_string()
        } else {
            format!("{file}:{line}:{column}")
        };
        Problem {
            location,
            message: message.into(),
            hint: None,
        }
    }

    pub fn registry(name: &ImageName, message: impl Into<String>, hint: Option<String>) -> Problem {
        Problem {
            location: name.to_string(),
            message: message.into(),
            hint,
        }
    }

    pub fn config(message: impl Into<String>) -> Problem {
        Problem {
            location: "config".into(),
            message: message.into(),
            hint: None,
        }
    }

    pub fn general(message: impl Into<String>) -> Problem {
        Problem {
            location: "imagebump".into(),
            message: message.into(),
            hint: None,
        }
    }
}

/// One line for a terminal or a log: file names, registry answers and the like in it show
/// their hidden characters (an escape sequence, a newline) as `\u{…}`.
impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::escape::terminal;
        write!(
            f,
            "{}: {}",
            terminal(&self.location),
            terminal(&self.message)
        )?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {})", terminal(h))?;
        }
        Ok(())
    }
}
