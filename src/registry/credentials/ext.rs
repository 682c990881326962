//! `ext:PATH`: a program that prints `user:password` (argocd-image-updater's `ext:` source).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::{Credential, Error, Fetched};
use imagebump_model::env::EnvVars;

/// How long a script may run unless `credentialsTimeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Output beyond this is not credentials.
const OUTPUT_LIMIT: u64 = 64 * 1024;
/// How much of the script's stderr an error quotes.
const STDERR_QUOTE: usize = 800;

/// The program must exist and be executable.
pub(super) fn check(path: &Path) -> Result<(), Error> {
    let shown = path.display();
    let fail = |message: String| Error::program(path, message);
    let meta =
        std::fs::metadata(path).map_err(|e| fail(format!("credentials ext:{shown}: {e}")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(fail(format!(
                "credentials ext:{shown}: the file is not executable (chmod +x)"
            )));
        }
    }
    if !meta.is_file() {
        return Err(fail(format!("credentials ext:{shown}: not a file")));
    }
    Ok(())
}

/// Run the program (no arguments, `IMAGEBUMP_REGISTRY` set to the host, the forge tokens
/// taken out of its environment) and read `user:password` from the first non-empty line of
/// its stdout. Its stderr goes into the error when it fails; its stdout never does.
pub(super) async fn run(path: &Path, host: &str, timeout: Duration) -> Result<Fetched, Error> {
    let shown = path.display();
    let fail = |message: String| Error::program(path, message);
    let mut command = tokio::process::Command::new(path);
    for name in EnvVars::FORGE_TOKENS {
        command.env_remove(name);
    }
    let mut child = command
        .env(EnvVars::IMAGEBUMP_REGISTRY, host)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("credentials ext:{shown}: cannot run it: {e}")))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // Both were requested as pipes just above.
        return Err(fail(format!("credentials ext:{shown}: no output pipes")));
    };
    let work = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut stdout = stdout.take(OUTPUT_LIMIT);
        let mut stderr = stderr.take(OUTPUT_LIMIT);
        let (r1, r2, status) = tokio::join!(
            stdout.read_to_end(&mut out),
            stderr.read_to_end(&mut err),
            child.wait()
        );
        r1.and(r2).map_err(|e| e.to_string())?;
        Ok::<_, String>((status.map_err(|e| e.to_string())?, out, err))
    };
    let (status, out, err) = match tokio::time::timeout(timeout, work).await {
        Ok(result) => result.map_err(|e| fail(format!("credentials ext:{shown}: {e}")))?,
        Err(_) => {
            return Err(fail(format!(
            "credentials ext:{shown}: no answer within {}s (raise registries[].credentialsTimeout)",
            timeout.as_secs_f64()
        )))
        }
    };
    let text = String::from_utf8_lossy(&out);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    // Made before stderr is quoted: its password is then held, should stderr repeat it.
    let credential = line.and_then(Credential::from_pair);
    let stderr = quote(&err);
    if !status.success() {
        let code = status
            .code()
            .map_or("a signal".to_string(), |c| format!("status {c}"));
        return Err(fail(format!(
            "credentials ext:{shown}: exited with {code}{stderr}"
        )));
    }
    let credential = credential.ok_or_else(|| {
        fail(format!(
            "credentials ext:{shown}: expected user:password on stdout{stderr}"
        ))
    })?;
    Ok(Fetched {
        credential,
        expires_at: None,
        via: format!("program {shown}"),
    })
}

/// `: stderr: <last lines>` for an error, or nothing. The program is the operator's, but
/// what it prints is not checked: the secrets the run holds and anything shaped like one
/// are taken out before it is quoted (the whole text, so a cut cannot split a secret).
fn quote(stderr: &[u8]) -> String {
    let text = imagebump_http::redact(&String::from_utf8_lossy(stderr));
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let start = text
        .char_indices()
        .rev()
        .nth(STDERR_QUOTE)
        .map_or(0, |(i, _)| i);
    // `start` comes from `char_indices`, so it is on a character boundary.
    let tail = text.get(start..).unwrap_or(text).replace('\n', " | ");
    format!("; stderr: {tail}")
}
