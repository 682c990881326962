//! Where and how a command speaks: results on stdout (text or JSON), problems on stderr
//! (or through the log when it is JSON), a progress bar on a terminal.

use std::io::{IsTerminal, Write};

use crate::cli::Format;
use crate::progress::Progress;
use imagebump_model::env::EnvVars;
use imagebump_model::Problem;

/// The output settings of one invocation, made once from the command line.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Results on stdout as text or as JSON.
    pub format: Format,
    /// `-q`: no progress bar either.
    pub quiet: bool,
    /// Logs are JSON lines: then the run's errors, warnings and notes go through the log
    /// too, so that a log collector sees every line as JSON.
    pub log_json: bool,
    /// Diffs in colour: stdout is a terminal and `NO_COLOR` is unset.
    pub color: bool,
    /// The width tables are fitted to: `COLUMNS`, else the terminal's; `None` (every cell
    /// whole) with `-v` or when stdout is not a terminal.
    pub width: Option<usize>,
    /// When the command started (a run's duration, for its metrics).
    pub started: std::time::Instant,
    /// `--request-timeout`: how long a registry may stay silent (it sets every registry
    /// client's transport; kept here as the one value every command is handed).
    pub request_timeout: std::time::Duration,
}

impl Output {
    pub fn new(format: Format, quiet: bool, log_json: bool, verbose: u8) -> Output {
        let terminal = std::io::stdout().is_terminal();
        Output {
            format,
            quiet,
            log_json,
            color: terminal && EnvVars::get_os(EnvVars::NO_COLOR).is_none(),
            width: (verbose == 0).then(|| width(terminal)).flatten(),
            started: std::time::Instant::now(),
            request_timeout: imagebump_http::DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// The progress bar for long registry work (hidden off a terminal, with JSON logs, `-q`).
    pub fn progress(&self) -> Progress {
        Progress::stderr(!self.log_json && !self.quiet)
    }

    pub fn errors(&self, problems: &[Problem]) {
        self.problems("error", problems);
    }

    pub fn notes(&self, notes: &[Problem]) {
        self.problems("note", notes);
    }

    pub fn warnings(&self, warnings: &[Problem]) {
        self.problems("warning", warnings);
    }

    /// One `warning: …` line about the run itself (not a file or registry), or a JSON log
    /// event.
    pub fn warning(&self, message: &str) {
        if self.log_json {
            tracing::warn!("{message}");
        } else {
            let _ = writeln!(
                std::io::stderr().lock(),
                "warning: {}",
                imagebump_model::escape::terminal(&imagebump_http::redact(message))
            );
        }
    }

    /// `error: location: message (hint: …)` lines on stderr, or JSON log events.
    fn problems(&self, kind: &str, problems: &[Problem]) {
        if self.log_json {
            for p in problems {
                let hint = p.hint.as_deref().unwrap_or_default();
                match kind {
                    "error" => tracing::error!(location = %p.location, hint, "{}", p.message),
                    // Notes are shown by default, as in text mode.
                    _ => tracing::warn!(kind, location = %p.location, hint, "{}", p.message),
                }
            }
            return;
        }
        let mut err = std::io::stderr().lock();
        for p in problems {
            // As every log line: nothing the run holds as a secret is quoted.
            let _ = writeln!(err, "{kind}: {}", imagebump_http::redact(&p.to_string()));
        }
    }
}

/// `COLUMNS` when it is a number, else the terminal's width when stdout is one.
fn width(terminal: bool) -> Option<usize> {
    let columns = EnvVars::get(EnvVars::COLUMNS)
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0);
    columns.or_else(|| {
        terminal
            .then(terminal_size::terminal_size)
            .flatten()
            .map(|(w, _)| usize::from(w.0))
    })
}

/// `value` as pretty JSON on stdout; a value that cannot be serialised is reported instead.
///
/// Streamed through a buffer rather than built as one string: a report of 10,000 apps is
/// tens of megabytes, and holding it whole was the run's largest single allocation.
pub fn print_json<T: serde::Serialize>(value: &T) {
    print_json_with(|out| write_json(out, value));
}

/// JSON on stdout, written by `write` (as [`print_json`]).
pub fn print_json_with(
    write: impl FnOnce(&mut std::io::BufWriter<JsonShown<std::io::StdoutLock>>) -> std::io::Result<()>,
) {
    let stdout = JsonShown::new(std::io::stdout().lock());
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout);
    let written = write(&mut out)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        // A reader that has gone away is no error (see `print`).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("error: cannot write the report: {e}"),
        Ok(()) => {}
    }
}

/// A JSON text on its way to `W`, with the hidden characters JSON leaves raw (DEL, C1
/// controls, bidirectional marks) as `\uXXXX` ([`imagebump_model::escape::json`]): the
/// document reads back the same, and a terminal shows nothing hidden. A character cut
/// between two writes waits for its rest.
pub struct JsonShown<W: Write> {
    inner: W,
    carry: Vec<u8>,
}

impl<W: Write> JsonShown<W> {
    pub fn new(inner: W) -> JsonShown<W> {
        JsonShown {
            inner,
            carry: Vec::new(),
        }
    }

    #[cfg(test)]
    fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for JsonShown<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut data = std::mem::take(&mut self.carry);
        data.extend_from_slice(buf);
        // Up to the last whole character; bytes that are no UTF-8 at all go as they are.
        let whole = match std::str::from_utf8(&data) {
            Ok(_) => data.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => data.len(),
        };
        let (head, tail) = data.split_at(whole);
        match std::str::from_utf8(head) {
            Ok(text) => self
                .inner
                .write_all(imagebump_model::escape::json(text).as_bytes())?,
            Err(_) => self.inner.write_all(head)?,
        }
        self.carry = tail.to_vec();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.carry);
        self.inner.write_all(&rest)?;
        self.inner.flush()
    }
}

/// `value` as `serde_json::to_writer_pretty` writes it, byte for byte, with fewer writes:
/// see [`Pretty`].
pub fn write_json<W: Write, T: serde::Serialize + ?Sized>(
    out: &mut W,
    value: &T,
) -> std::io::Result<()> {
    write_json_at(out, value, 0)
}

/// As [`write_json`], for a value written `depth` levels deep in a larger document (an
/// element of a list `depth - 1` levels deep): its lines are indented as they are there.
pub fn write_json_at<W: Write, T: serde::Serialize + ?Sized>(
    out: &mut W,
    value: &T,
    depth: usize,
) -> std::io::Result<()> {
    let pretty = Pretty {
        depth,
        has_value: false,
    };
    let mut serializer = serde_json::Serializer::with_formatter(out, pretty);
    value
        .serialize(&mut serializer)
        .map_err(std::io::Error::from)
}

/// serde_json's `PrettyFormatter` (two spaces a level), writing each line break with its
/// comma and indentation in one copy, where serde_json's writes one per level: a large
/// run's report is written by one thread after everything else is done, so its cost is
/// the run's wall time (docs/performance.md).
#[derive(Default)]
struct Pretty {
    depth: usize,
    has_value: bool,
}

/// A comma, a line break and the indentation of [`INDENTED`] levels at most.
const BREAK: &[u8; 2 + 2 * INDENTED] =
    b",\n                                                                ";
/// The levels [`BREAK`] indents; deeper ones are written a level at a time.
const INDENTED: usize = 32;

impl Pretty {
    /// A line break (after a comma unless `first`), indented to the current level.
    fn line<W: ?Sized + Write>(&self, out: &mut W, first: bool) -> std::io::Result<()> {
        let from = usize::from(first);
        let spaces = self.depth.min(INDENTED).saturating_mul(2);
        out.write_all(
            BREAK
                .get(from..2usize.saturating_add(spaces))
                .unwrap_or(b"\n"),
        )?;
        for _ in INDENTED..self.depth {
            out.write_all(b"  ")?;
        }
        Ok(())
    }

    /// An array or an object begins: a level deeper, nothing in it yet.
    fn open<W: ?Sized + Write>(&mut self, out: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.depth = self.depth.saturating_add(1);
        self.has_value = false;
        out.write_all(bracket)
    }

    /// It ends: on a line of its own when it holds anything.
    fn close<W: ?Sized + Write>(&mut self, out: &mut W, bracket: &[u8]) -> std::io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            self.line(out, true)?;
        }
        out.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.open(out, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.close(out, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(out, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.open(out, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.close(out, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(out, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> std::io::Result<()> {
        out.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `text` on stdout. A reader that has gone away (`imagebump scan | head -1`) is no error:
/// the rest is dropped and the command ends with its usual status, as `print!` would not
/// (it panics).
pub fn print(text: std::fmt::Arguments<'_>) {
    // The secret values the run holds are taken out of the text it prints (only those: a
    // table's image names and URLs are left as they are).
    let text = imagebump_http::redact::held_removed(&text.to_string());
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Standard error for the log. A JSON line shows the hidden characters JSON leaves raw as
/// `\uXXXX` ([`imagebump_model::escape::json`]). A text log line is one event: tracing-subscriber shows the
/// escape sequences of the values it prints but not their other hidden characters (a
/// carriage return, a newline that would start a forged line, a bidirectional override),
/// so this shows those as `\u{…}` too. With colours on, the escape sequences left are
/// tracing's own colours; without, none is left.
pub struct LogWriter {
    escape: bool,
    colours: bool,
    line: Vec<u8>,
}

impl LogWriter {
    /// `escape`: text lines (else JSON lines); `colours`: tracing writes ANSI colours.
    pub fn new(escape: bool, colours: bool) -> LogWriter {
        LogWriter {
            escape,
            colours,
            line: Vec::new(),
        }
    }
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The event is written whole when the formatter is done with it: first the secret values
/// the run holds (and anything shaped like a credential) are taken out, then what is
/// hidden is shown.
impl Drop for LogWriter {
    fn drop(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let text = imagebump_http::redact(&String::from_utf8_lossy(&self.line));
        let line = if self.escape {
            log_line(&text, self.colours)
        } else {
            imagebump_model::escape::json(&text).into_owned()
        };
        // Nowhere left to report a failed write to stderr.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

/// `text` (one formatted event) with every hidden character but its final line break as
/// `\u{…}`; with `colours`, ESC stays too (tracing's colours: it has already shown a
/// value's own as `\x1b`).
fn log_line(text: &str, colours: bool) -> String {
    let (body, end) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (text, ""),
    };
    if !colours {
        return format!("{}{end}", imagebump_model::escape::terminal(body));
    }
    let mut out = String::with_capacity(text.len());
    for (i, part) in body.split('\x1b').enumerate() {
        if i > 0 {
            out.push('\x1b');
        }
        out.push_str(&imagebump_model::escape::terminal(part));
    }
    out.push_str(end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    #[test]
    fn a_log_line_stays_one_line_with_its_colours() {
        assert_eq!(
            log_line(
                "\x1b[33mWARN\x1b[0m apps/a\rb\nERROR forged \u{202e}x\\x1b[2J\n",
                true
            ),
            "\x1b[33mWARN\x1b[0m apps/a\\u{d}b\\u{a}ERROR forged \\u{202e}x\\x1b[2J\n"
        );
        assert_eq!(
            log_line(" WARN apps/\x1b[2Ja\nERROR forged\n", false),
            " WARN apps/\\u{1b}[2Ja\\u{a}ERROR forged\n"
        );
        assert_eq!(log_line("plain\n", true), "plain\n");
    }

    fn ours(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        write_json(&mut out, v).expect("writes to memory");
        out
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            // Escapes, control characters and multi-byte text among them.
            "[a-z\"\\\\\n\t\u{1}é☃]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\n]{0,4}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_report_is_written_as_serde_json_writes_it(v in value()) {
            prop_assert_eq!(ours(&v), serde_json::to_vec_pretty(&v).expect("serializes"));
        }
    }

    #[test]
    fn json_on_stdout_shows_nothing_hidden_however_it_is_cut() {
        let v = serde_json::json!({"file": "a\u{9b}b\u{202e}\u{1b}\u{7f}é"});
        let text = serde_json::to_vec_pretty(&v).expect("serializes");
        // Written in pieces of every size, cutting characters in two.
        for size in 1..text.len() {
            let mut shown = JsonShown::new(Vec::new());
            for piece in text.chunks(size) {
                shown.write_all(piece).expect("writes to memory");
            }
            shown.flush().expect("flushes");
            let out = String::from_utf8(shown.into_inner()).expect("UTF-8");
            assert_eq!(
                out, "{\n  \"file\": \"a\\u009bb\\u202e\\u001b\\u007fé\"\n}",
                "{size}"
            );
            assert_eq!(serde_json::from_str::<Value>(&out).expect("JSON"), v);
        }
    }

    #[test]
    fn levels_deeper_than_one_indentation_are_written_alike() {
        let mut v = serde_json::json!({"leaf": [1, {"a": []}, {}], "empty": {}});
        for depth in 0..40 {
            v = if depth % 2 == 0 {
                serde_json::json!([v, depth])
            } else {
                serde_json::json!({ "k": v, "n": depth })
            };
            assert_eq!(
                ours(&v),
                serde_json::to_vec_pretty(&v).expect("serializes"),
                "at depth {depth}"
            );
        }
    }
}
