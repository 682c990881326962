//! What the base branch's history says about a few files: the first-parent commits that
//! changed them (committer time, message, blob before and after) and the blobs themselves.
//! Two `git log`s, one `ls-tree` and one `cat-file --batch`, however many commits and files
//! (docs/promotion.md); a thousand files per command line.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::{object_id, revision, tree_path, Error, Git};

/// Paths on one `git log` or `ls-tree` command line.
const PATHS_PER_COMMAND: usize = 1000;

/// A blob id that means "no file" in `--raw` output.
const NO_BLOB: &str = "0000000000000000000000000000000000000000";

/// One first-parent commit of the branch that changed some of the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCommit {
    pub sha: String,
    /// Committer time, seconds since the epoch: when it reached the branch.
    pub time: i64,
    /// No parent in this clone: the root, or the shallow boundary.
    pub parentless: bool,
    pub subject: String,
    pub body: String,
    /// (path, blob before, blob after); `None`: no file.
    pub changes: Vec<(String, Option<String>, Option<String>)>,
}

/// The history of some files on one branch, newest commit first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileHistory {
    /// The blob of each file at the tip (files absent there are left out).
    pub tip: BTreeMap<String, String>,
    pub commits: Vec<FileCommit>,
    /// The oldest first-parent commit read (sha, committer time): where the window ends.
    pub oldest: Option<(String, i64)>,
    /// The clone is shallow: history before `oldest` was not fetched.
    pub shallow: bool,
}

impl Git {
    /// The first-parent commits of `rev` (at most `max` commits back) that changed `paths`,
    /// newest first, with each file's blob at `rev`.
    pub fn file_history(
        &self,
        dir: &Path,
        rev: &str,
        paths: &[String],
        max: usize,
    ) -> Result<FileHistory, Error> {
        self.file_history_in(dir, rev, paths, (max, PATHS_PER_COMMAND))
    }

    /// As [`Git::file_history`], with at most `chunk` paths on one command line (many
    /// applications would outgrow the system's limit on arguments).
    pub fn file_history_in(
        &self,
        dir: &Path,
        rev: &str,
        paths: &[String],
        (max, chunk): (usize, usize),
    ) -> Result<FileHistory, Error> {
        let rev = revision(rev)?;
        for p in paths {
            tree_path(p)?;
        }
        let mut out = FileHistory::default();
        if paths.is_empty() || max == 0 {
            return Ok(out);
        }
        // The window: the `max` first-parent commits, newest first.
        let mut cmd = self.local(dir);
        cmd.args(["log", "--first-parent", "--format=%H %ct"])
            .arg(format!("--max-count={max}"))
            .args(["--end-of-options", rev, "--"]);
        let window = self.run(cmd, "log")?;
        let window: Vec<(String, i64)> = String::from_utf8_lossy(&window.stdout)
            .lines()
            .filter_map(|l| {
                let (sha, time) = l.split_once(' ')?;
                Some((sha.to_string(), time.trim().parse::<i64>().ok()?))
            })
            .collect();
        // The earliest committer time in the window (dates need not be in order).
        out.oldest = window.iter().min_by_key(|(_, t)| *t).cloned();
        let order: HashMap<&str, usize> = window
            .iter()
            .enumerate()
            .map(|(i, (sha, _))| (sha.as_str(), i))
            .collect();
        let mut found: BTreeMap<usize, FileCommit> = BTreeMap::new();
        for part in paths.chunks(chunk.max(1)) {
            for c in self.path_log(dir, rev, part, max)? {
                // Only the window's commits: older ones would precede its start.
                let Some(&i) = order.get(c.sha.as_str()) else {
                    continue;
                };
                match found.get_mut(&i) {
                    Some(seen) => seen.changes.extend(c.changes),
                    None => {
                        found.insert(i, c);
                    }
                }
            }
            out.tip.extend(self.tree_blobs(dir, rev, part)?);
        }
        out.commits = found.into_values().collect();
        for c in &mut out.commits {
            c.changes.sort();
        }
        let mut cmd = self.local(dir);
        cmd.args(["rev-parse", "--is-shallow-repository"]);
        out.shallow = super::stdout_line(self.run(cmd, "rev-parse")?) == "true";
        Ok(out)
    }

    /// `git log --first-parent --raw -z` of `paths`, newest first (paths NUL-terminated,
    /// never quoted).
    fn path_log(
        &self,
        dir: &Path,
        rev: &str,
        paths: &[String],
        max: usize,
    ) -> Result<Vec<FileCommit>, Error> {
        let mut cmd = self.local(dir);
        cmd.args([
            "--literal-pathspecs",
            "log",
            "-z",
            "--first-parent",
            "--diff-merges=first-parent",
            "--raw",
            "--no-abbrev",
            "--no-renames",
            "--relative",
            "--no-color",
            "--encoding=UTF-8",
            "--format=%x1e%H%x1f%ct%x1f%P%x1f%s%x1f%b%x1f",
        ])
        .arg(format!("--max-count={max}"))
        .args(["--end-of-options", rev, "--"])
        .args(paths);
        let log = self.run(cmd, "log")?;
        parse_file_log(&String::from_utf8_lossy(&log.stdout))
    }

    /// The blob of each of `paths` at `rev` (absent files left out).
    fn tree_blobs(
        &self,
        dir: &Path,
        rev: &str,
        paths: &[String],
    ) -> Result<BTreeMap<String, String>, Error> {
        let mut cmd = self.local(dir);
        cmd.args([
            "--literal-pathspecs",
            "ls-tree",
            "-r",
            "-z",
            "--end-of-options",
            rev,
            "--",
        ])
        .args(paths);
        let tree = self.run(cmd, "ls-tree")?;
        let mut out = BTreeMap::new();
        for line in String::from_utf8_lossy(&tree.stdout).split('\0') {
            // `<mode> blob <sha>\t<path>`
            let Some((meta, path)) = line.split_once('\t') else {
                continue;
            };
            let mut f = meta.split(' ');
            if let (Some(_), Some("blob"), Some(sha)) = (f.next(), f.next(), f.next()) {
                out.insert(path.to_string(), sha.to_string());
            }
        }
        Ok(out)
    }

    /// The content of each blob (by id), in one `cat-file --batch`. Blobs larger than
    /// `cap` bytes, missing ones and other objects are left out.
    pub fn blobs(
        &self,
        dir: &Path,
        ids: &[String],
        cap: usize,
    ) -> Result<BTreeMap<String, Vec<u8>>, Error> {
        let mut query = String::new();
        for id in ids {
            query.push_str(object_id(id)?);
            query.push('\n');
        }
        if ids.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut cmd = self.local(dir);
        cmd.args(["cat-file", "--batch"]);
        let out = self.run_with_input(cmd, "cat-file", query.as_bytes())?;
        parse_batch(&out.stdout, cap)
    }
}

fn parse_file_log(text: &str) -> Result<Vec<FileCommit>, Error> {
    let bad = |detail: &str| Error::Output {
        command: "log".to_string(),
        detail: detail.to_string(),
    };
    let mut commits = Vec::new();
    for record in text.split('\x1e').filter(|r| !r.trim().is_empty()) {
        let mut f = record.splitn(6, '\x1f');
        let (Some(sha), Some(time), Some(parents), Some(subject), Some(body), Some(raw)) =
            (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad("a commit record with missing fields"));
        };
        let time = time
            .trim()
            .parse()
            .map_err(|_| bad("a committer time that is not a number"))?;
        let changes = parse_raw(raw);
        commits.push(FileCommit {
            sha: sha.trim().to_string(),
            time,
            parentless: parents.trim().is_empty(),
            subject: subject.to_string(),
            body: body.trim_end().to_string(),
            changes,
        });
    }
    Ok(commits)
}

/// `--raw -z` entries, `:<modes> <old> <new> <status>` NUL `<path>` NUL each, as
/// (path, old blob, new blob). Paths come as written, whatever bytes they hold.
fn parse_raw(raw: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let blob = |s: &str| (s != NO_BLOB).then(|| s.to_string());
    let mut out = Vec::new();
    let mut fields = raw.split('\0');
    while let Some(field) = fields.next() {
        let Some(meta) = field.trim_start_matches('\n').strip_prefix(':') else {
            continue;
        };
        let Some(path) = fields.next() else {
            break;
        };
        let mut f = meta.split(' ');
        if let (Some(_), Some(_), Some(old), Some(new)) = (f.next(), f.next(), f.next(), f.next()) {
            out.push((path.to_string(), blob(old), blob(new)));
        }
    }
    out
}

/// A sequence of `cat-file --batch` answers: the blobs of at most `cap` bytes, by id.
fn parse_batch(mut out: &[u8], cap: usize) -> Result<BTreeMap<String, Vec<u8>>, Error> {
    let mut blobs = BTreeMap::new();
    while let Some(answer) = super::read_batch_answer(&mut out, cap as u64)? {
        if let super::BatchAnswer::Object {
            id,
            kind,
            content: Some(content),
        } = answer
        {
            if kind == "blob" {
                blobs.insert(id, content);
            }
        }
    }
    Ok(blobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_log_records_are_read() {
        // As `git log -z --raw` writes it: paths NUL-terminated and never quoted, even one
        // with a quote and a non-ASCII letter.
        let text = "\x1eabc\x1f1700000000\x1fp1\x1fRevert \"bump\"\x1fThis reverts commit x.\n\x1f\0\n:100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 M\0apps/w\u{e9}\"b/dev/kustomization.yaml\0:000000 100644 0000000000000000000000000000000000000000 3333333333333333333333333333333333333333 A\0apps/web/dev/new.yaml\0\x1edef\x1f1600000000\x1f\x1finitial\x1f\x1f\0\n:000000 100644 0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 A\0apps/web/dev/kustomization.yaml\0";
        let c = parse_file_log(text).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].sha, "abc");
        assert_eq!(c[0].time, 1_700_000_000);
        assert!(!c[0].parentless && c[1].parentless);
        assert_eq!(c[0].subject, "Revert \"bump\"");
        assert_eq!(c[0].body, "This reverts commit x.");
        assert_eq!(
            c[0].changes,
            vec![
                (
                    "apps/w\u{e9}\"b/dev/kustomization.yaml".to_string(),
                    Some("1".repeat(40)),
                    Some("2".repeat(40))
                ),
                (
                    "apps/web/dev/new.yaml".to_string(),
                    None,
                    Some("3".repeat(40))
                ),
            ]
        );
    }

    #[test]
    fn batch_answers_are_split_and_capped() {
        let out = b"aa blob 3\nabc\nbb missing\ncc blob 5\nhello\ndd tree 2\nxx\n";
        let blobs = parse_batch(out, 4).unwrap();
        assert_eq!(blobs.len(), 1);
        assert_eq!(blobs["aa"], b"abc");
        assert!(parse_batch(b"aa blob 9\nabc\n", 100).is_err());
    }
}
