//! A real headless Chromium (Debian's `chromium`) for the HTML page's tests: DOM dumps
//! (scripts run, then the document is printed) and screenshots. Each call runs in its own
//! process group with a temporary profile, and the whole group is killed afterwards, so no
//! browser process outlives it.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long one browser call may take.
const LIMIT: Duration = Duration::from_secs(120);

/// `chromium --headless … <extra> <url>`: its stdout.
fn chromium(extra: &[String], url: &str) -> String {
    super::require_tool("chromium", "chromium");
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        // Root in a container has no user namespace for the sandbox; the page is our own.
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-crash-reporter",
        "--disable-extensions",
        "--disable-sync",
        "--hide-scrollbars",
        "--mute-audio",
        // The layout frame reads the page in its iframe (both file:// URLs).
        "--allow-file-access-from-files",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(url)
    .env("HOME", profile.path())
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = super::spawn_group(&mut cmd, "chromium");
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    let text = rx.recv_timeout(LIMIT);
    let group = child.id();
    super::kill_group(&mut child);
    gone(group);
    text.unwrap_or_else(|_| panic!("chromium took longer than {LIMIT:?} on {url}"))
}

/// Waits until no process of the group `group` is left (the killed ones are reaped by
/// init), so a test ends with none of the browser's processes running.
fn gone(group: u32) {
    for _ in 0..100 {
        let alive = Command::new("kill")
            .args(["-0", "--", &format!("-{group}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("chromium's processes (group {group}) outlived a kill");
}

/// The DOM of `url` after its scripts ran, at a 1280x800 window.
pub fn dump_dom(url: &str) -> String {
    let dom = chromium(&["--window-size=1280,800".into(), "--dump-dom".into()], url);
    assert!(
        dom.contains("<html"),
        "chromium printed no DOM for {url}: {dom:?}"
    );
    dom
}

/// A PNG screenshot of `url` at a `width`x`height` window, written to `png`.
pub fn screenshot(url: &str, (width, height): (u32, u32), png: &Path) {
    chromium(
        &[
            format!("--window-size={width},{height}"),
            format!("--screenshot={}", png.display()),
        ],
        url,
    );
}

/// `url` printed to `pdf` (the page's print stylesheet applies).
pub fn print_to_pdf(url: &str, pdf: &Path) {
    chromium(
        &[
            "--no-pdf-header-footer".into(),
            format!("--print-to-pdf={}", pdf.display()),
        ],
        url,
    );
    let bytes = std::fs::read(pdf).unwrap_or_else(|e| panic!("{}: {e}", pdf.display()));
    assert!(
        bytes.starts_with(b"%PDF-") && bytes.len() > 1000,
        "{}",
        pdf.display()
    );
}

/// `expression` evaluated over `page` opened in a `width`x`height` frame (headless
/// Chromium does not make its window narrower than it likes, an iframe can be): `d` is the
/// page's document, `w` its window. `scripts`: whether the page's own script runs (a
/// sandboxed frame without `allow-scripts` stands for a reader with scripting off).
pub fn in_frame(
    page: &Path,
    (width, height): (u32, u32),
    scripts: bool,
    expression: &str,
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let frame = dir.path().join("frame.html");
    let sandbox = if scripts {
        ""
    } else {
        " sandbox=\"allow-same-origin\""
    };
    std::fs::write(
        &frame,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\">\
             <iframe id=\"f\"{sandbox} src=\"file://{}\" style=\"border:0;width:{width}px;height:{height}px\"></iframe>\
             <script>document.getElementById(\"f\").addEventListener(\"load\", function () {{\
             var d = this.contentDocument, w = this.contentWindow;\
             document.body.setAttribute(\"data-result\", String({expression}));\
             }});</script></body></html>",
            page.display()
        ),
    )
    .unwrap();
    let dom = dump_dom(&format!("file://{}", frame.display()));
    let at = dom
        .find("data-result=\"")
        .unwrap_or_else(|| panic!("the frame wrote no result for {expression}:\n{dom}"));
    let rest = &dom[at + "data-result=\"".len()..];
    rest[..rest.find('"').unwrap()]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// How wide `page` lays out in a `width`x`height` viewport: (the document's scroll width,
/// the viewport's width).
pub fn layout(page: &Path, size: (u32, u32)) -> (u32, u32) {
    let figures = in_frame(
        page,
        size,
        true,
        "d.documentElement.scrollWidth + \"/\" + w.innerWidth",
    );
    let (scroll, inner) = figures.split_once('/').unwrap();
    (scroll.parse().unwrap(), inner.parse().unwrap())
}

/// `png` is a PNG image of `width`x`height` pixels with something in it.
pub fn assert_png(png: &Path, (width, height): (u32, u32)) {
    let bytes = std::fs::read(png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert!(
        bytes.len() > 1000,
        "{}: {} bytes",
        png.display(),
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", png.display());
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((w, h), (width, height), "{}", png.display());
}
