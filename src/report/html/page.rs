//! The page itself (every outside string through `escape::html`, links through
//! `escape::https_link`): one HTML document with its stylesheet and its one small script inline,
//! no external resource, readable with scripting off (the filter box then stays hidden and
//! every row shows). A Content-Security-Policy allows that stylesheet and that script alone
//! (by their hashes), so even markup that slipped through escaping could not run or restyle
//! the page.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use sha2::Digest as _;

use super::{App, Entry, Event, Fleet, State, Summary};
use imagebump_model::escape::html as text;

/// The stylesheet: a table that scrolls in its own box, cells that wrap, a print layout.
const STYLE: &str = include_str!("page.css");

/// The filter box: shown by the script, applied as one types or from `?q=`.
const SCRIPT: &str = include_str!("page.js");

/// The page of `fleet`.
pub fn page(fleet: &Fleet) -> String {
    let mut out = String::new();
    head(&mut out, fleet);
    if let Some(summary) = &fleet.summary {
        summary_section(&mut out, summary);
    }
    matrix(&mut out, fleet);
    legend(&mut out);
    timeline(&mut out, fleet);
    let _ = write!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

fn head(out: &mut String, fleet: &Fleet) {
    let script = hash(SCRIPT);
    let style = hash(STYLE);
    let title = text(&fleet.title);
    let repository = text(&fleet.repository);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'sha256-{style}'; script-src 'sha256-{script}'; base-uri 'none'; \
         form-action 'none'\">\n<meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"generator\" content=\"imagebump\">\n\
         <title>{title}: {repository}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <header>\n<h1>{title}</h1>\n<p class=\"meta\"><span class=\"repository\">{repository}</span> \
         · as of <time datetime=\"{}\">{} UTC</time></p>\n</header>\n<main>\n",
        rfc3339(fleet.now),
        date(fleet.now),
    );
}

/// The `sha256-…` source of an inline element's text, for the Content-Security-Policy.
fn hash(text: &str) -> String {
    base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        sha2::Sha256::digest(text.as_bytes()),
    )
}

fn summary_section(out: &mut String, s: &Summary) {
    let _ = write!(
        out,
        "<section id=\"summary\" aria-labelledby=\"summary-h\">\n<h2 id=\"summary-h\">This run</h2>\n\
         <p>mode <strong>{}</strong>",
        text(&s.mode)
    );
    if let Some(commit) = &s.commit {
        let _ = write!(out, " · commit <code>{}</code>", text(commit));
    }
    out.push_str("</p>\n<dl class=\"counts\">\n");
    for (name, n) in &s.counts {
        let _ = writeln!(
            out,
            "<div data-count=\"{name}\"><dt>{name}</dt><dd>{n}</dd></div>"
        );
    }
    out.push_str("</dl>\n<h3>Registry traffic</h3>\n<p class=\"requests\">");
    let requests: Vec<String> = (s.requests.iter())
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "{}; rate-limit waits {} s</p>",
        requests.join(" · "),
        s.rate_limit_wait_seconds
    );
    traffic(out, &s.traffic);
    errors(out, &s.errors);
    out.push_str("</section>\n");
}

fn traffic(out: &mut String, rows: &[(String, String, usize)]) {
    if rows.is_empty() {
        out.push_str("<p>No registry was asked.</p>\n");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"traffic\">\n<thead><tr><th scope=\"col\">Registry</th>\
         <th scope=\"col\">Outcome</th><th scope=\"col\">Requests</th></tr></thead>\n<tbody>\n",
    );
    for (registry, outcome, n) in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{n}</td></tr>",
            text(registry),
            text(outcome)
        );
    }
    out.push_str("</tbody></table></div>\n");
}

fn errors(out: &mut String, errors: &[(String, String)]) {
    let _ = writeln!(out, "<h3>Errors ({})</h3>", errors.len());
    if errors.is_empty() {
        out.push_str("<p>None.</p>\n");
        return;
    }
    out.push_str("<ul class=\"errors\">\n");
    for (at, message) in errors {
        let _ = writeln!(out, "<li><code>{}</code> {}</li>", text(at), text(message));
    }
    out.push_str("</ul>\n");
}

/// The most cells the matrix draws (applications × environments). Past it each
/// application lists only the environments it runs in, so the page grows with the
/// references, never with the product of applications and environments (a monorepo of
/// `apps/<svc>/` directories has one environment per application).
pub const MATRIX_CELLS: usize = 20_000;

fn matrix(out: &mut String, fleet: &Fleet) {
    out.push_str(
        "<section id=\"fleet\" aria-labelledby=\"fleet-h\">\n<h2 id=\"fleet-h\">What runs where</h2>\n\
         <p class=\"filter\" id=\"filter-box\" hidden><label for=\"filter\">Filter</label> \
         <input id=\"filter\" type=\"search\" placeholder=\"application, version, state\" \
         autocomplete=\"off\"> <output id=\"shown\" for=\"filter\"></output></p>\n",
    );
    if fleet.apps.is_empty() {
        out.push_str("<p>No application to show.</p>\n</section>\n");
        return;
    }
    if fleet.apps.len().saturating_mul(fleet.environments.len()) > MATRIX_CELLS {
        listed(out, fleet);
        return;
    }
    out.push_str(
        "<div class=\"scroll\" role=\"region\" aria-labelledby=\"fleet-h\" tabindex=\"0\">\n\
         <table id=\"matrix\">\n<thead><tr><th scope=\"col\">Application</th>",
    );
    for env in &fleet.environments {
        let env = text(env);
        let _ = write!(out, "<th scope=\"col\" data-env=\"{env}\">{env}</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for app in &fleet.apps {
        row(out, fleet, app);
    }
    out.push_str("</tbody>\n</table>\n</div>\n</section>\n");
}

/// The matrix past [`MATRIX_CELLS`]: one row per application, its one cell listing each
/// environment it runs in (upstream first), named, with what runs there.
fn listed(out: &mut String, fleet: &Fleet) {
    let _ = write!(
        out,
        "<p class=\"listed-note\">{} applications in {} environments: too many for one \
         matrix, so each application lists the environments it runs in.</p>\n\
         <div class=\"scroll\" role=\"region\" aria-labelledby=\"fleet-h\" tabindex=\"0\">\n\
         <table id=\"matrix\" class=\"listed\">\n<thead><tr><th scope=\"col\">Application</th>\
         <th scope=\"col\">Environments</th></tr></thead>\n<tbody>\n",
        fleet.apps.len(),
        fleet.environments.len()
    );
    let order: BTreeMap<&str, usize> = (fleet.environments.iter())
        .enumerate()
        .map(|(i, env)| (env.as_str(), i))
        .collect();
    for app in &fleet.apps {
        row_head(out, app);
        let mut present: Vec<(usize, &str, &[Entry])> = (app.cells.iter())
            .map(|(env, entries)| {
                let rank = order.get(env.as_str()).copied().unwrap_or(usize::MAX);
                (rank, env.as_str(), entries.as_slice())
            })
            .collect();
        present.sort_by_key(|&(rank, env, _)| (rank, env));
        out.push_str("<td class=\"listed\"><ul>\n");
        let mut upstream: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
        for (_, env, entries) in present {
            cell(out, fleet, Tag::Item, (env, entries), &upstream);
            for e in entries {
                upstream.insert(&e.image, (env, &e.version));
            }
        }
        out.push_str("</ul></td>\n</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</div>\n</section>\n");
}

/// An application's row; an image whose versions differ between environments is drift,
/// said in words on the row and on each cell that differs from the one upstream of it.
fn row(out: &mut String, fleet: &Fleet, app: &App) {
    row_head(out, app);
    // By image: the nearest environment upstream that runs it, and its version there.
    let mut upstream: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for env in &fleet.environments {
        let entries = app.cells.get(env).map(Vec::as_slice).unwrap_or_default();
        cell(out, fleet, Tag::Cell, (env, entries), &upstream);
        for e in entries {
            upstream.insert(&e.image, (env, &e.version));
        }
    }
    out.push_str("</tr>\n");
}

/// A row's opening and its heading: the application, and its drift in words.
fn row_head(out: &mut String, app: &App) {
    let name = text(&app.name);
    let drift = app.drift();
    let _ = write!(
        out,
        "<tr data-app=\"{name}\" data-drift=\"{}\"{}><th scope=\"row\">{name}",
        if drift > 1 { "yes" } else { "no" },
        if drift > 1 { " class=\"drift\"" } else { "" }
    );
    if drift > 1 {
        let _ = write!(
            out,
            " <span class=\"drift-label\">≠ drift: {drift} versions</span>"
        );
    }
    out.push_str("</th>\n");
}

/// What holds one environment's entries: a matrix cell, or an item of a listed row (which
/// names its environment).
#[derive(Clone, Copy)]
enum Tag {
    Cell,
    Item,
}

/// One environment's cell: its entries, each marked when its version differs from the
/// one `upstream` holds for its image.
fn cell(
    out: &mut String,
    fleet: &Fleet,
    tag: Tag,
    (env, entries): (&str, &[Entry]),
    upstream: &BTreeMap<&str, (&str, &str)>,
) {
    let env_text = text(env);
    let element = match tag {
        Tag::Cell => "td",
        Tag::Item => "li",
    };
    let Some(first) = entries.first() else {
        let _ = writeln!(
            out,
            "<td data-env=\"{env_text}\" data-state=\"absent\" class=\"st st-absent\">\
             <span class=\"absent\">— not here</span></td>"
        );
        return;
    };
    let key = first.state.key();
    let _ = write!(
        out,
        "<{element} data-env=\"{env_text}\" data-state=\"{key}\" class=\"st st-{key}\">"
    );
    if let Tag::Item = tag {
        let _ = write!(out, "<span class=\"env\">{env_text}</span> ");
    }
    for e in entries {
        entry(out, fleet, e, entries.len() > 1);
        let differs = upstream
            .get(e.image.as_str())
            .filter(|(_, v)| *v != e.version);
        if let Some((from, version)) = differs {
            let _ = write!(
                out,
                "<span class=\"drift-mark\">≠ {} in {}</span>",
                text(version),
                text(from)
            );
        }
    }
    let _ = writeln!(out, "</{element}>");
}

fn entry(out: &mut String, fleet: &Fleet, e: &Entry, named: bool) {
    let key = e.state.key();
    let (symbol, words) = e.state.label();
    let _ = write!(
        out,
        "<div class=\"entry st-{key}\" data-state=\"{key}\" title=\"{}\">\
         <span class=\"state\"><span aria-hidden=\"true\">{symbol}</span> {words}</span> ",
        text(&e.file)
    );
    if named {
        let _ = write!(out, "<span class=\"image\">{}</span> ", text(&e.image));
    }
    let version = if e.version.is_empty() {
        "no tag"
    } else {
        &e.version
    };
    let _ = write!(out, "<span class=\"version\">{}</span>", text(version));
    if let Some((since, cut)) = e.since {
        let at_least = if cut { "≤ " } else { "" };
        let _ = write!(
            out,
            " <span class=\"age\">here since {at_least}<time datetime=\"{}\">{}</time> ({})</span>",
            rfc3339(since),
            date(since),
            age(fleet.now.saturating_sub(since))
        );
    }
    if let State::Soaking(until) = e.state {
        let _ = write!(
            out,
            " <span class=\"until\">until <time datetime=\"{}\">{}</time></span>",
            rfc3339(until),
            date(until)
        );
    }
    let detail = (!e.detail.is_empty() && e.detail != words).then(|| text(&e.detail));
    // The build age is the proposed version's: said with it.
    let built = e.released_days.map(|days| format!("built {days}d ago"));
    match (detail, built) {
        (Some(d), Some(b)) => {
            let _ = write!(out, " <span class=\"detail\">{d} · {b}</span>");
        }
        (Some(d), None) | (None, Some(d)) => {
            let _ = write!(out, " <span class=\"detail\">{d}</span>");
        }
        (None, None) => {}
    }
    if let Some(href) = e.link.as_deref().and_then(https) {
        let _ = write!(
            out,
            " <a href=\"{href}\" rel=\"noopener noreferrer\">pull request</a>"
        );
    }
    out.push_str("</div>");
}

fn legend(out: &mut String) {
    out.push_str("<ul class=\"legend\" aria-label=\"States\">\n");
    for state in State::ALL {
        let (symbol, words) = state.label();
        let _ = writeln!(
            out,
            "<li class=\"st-{}\"><span aria-hidden=\"true\">{symbol}</span> {words}</li>",
            state.key()
        );
    }
    out.push_str(
        "<li class=\"drift-label\">≠ drift: versions differ between environments</li>\n</ul>\n",
    );
}

fn timeline(out: &mut String, fleet: &Fleet) {
    out.push_str(
        "<section id=\"timeline\" aria-labelledby=\"timeline-h\">\n\
         <h2 id=\"timeline-h\">Recent promotions</h2>\n",
    );
    if fleet.timeline.is_empty() {
        out.push_str(
            "<p>No history read: no <code>promoteFrom</code> rule, or no git history.</p>\n",
        );
    }
    for (app, events) in &fleet.timeline {
        let name = text(app);
        let _ = write!(
            out,
            "<section data-app=\"{name}\">\n<h3>{name}</h3>\n<ol>\n"
        );
        for e in events {
            event(out, e);
        }
        out.push_str("</ol>\n</section>\n");
    }
    out.push_str("</section>\n");
}

fn event(out: &mut String, e: &Event) {
    let at_least = if e.cut { "≤ " } else { "" };
    let _ = write!(
        out,
        "<li>{at_least}<time datetime=\"{}\">{}</time> <span class=\"env\">{}</span> \
         <span class=\"version\">{}</span> <code>{}</code>",
        rfc3339(e.at),
        date(e.at),
        text(&e.environment),
        text(&e.version),
        text(&e.commit)
    );
    if e.reverted {
        out.push_str(" <span class=\"reverted\">↩ rolled back</span>");
    }
    out.push_str("</li>\n");
}

/// `url` for an `href`: an `https://` link (`escape::https_link`), escaped for the
/// attribute; `None`: no link.
fn https(url: &str) -> Option<String> {
    imagebump_model::escape::https_link(url).map(|u| text(&u))
}

/// `2026-11-20 05:00` (UTC).
fn date(t: i64) -> String {
    crate::promote::render::date(t)
}

/// `2026-11-20T05:00:00Z`.
fn rfc3339(t: i64) -> String {
    jiff::Timestamp::from_second(t)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// `3d 4h`, `5h 20m`, `12m`: how long ago, to the two largest units.
fn age(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match (d, h) {
        (0, 0) => format!("{m}m"),
        (0, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

impl App {
    /// The most versions one image runs over the application's environments (drift when
    /// more than one).
    pub fn drift(&self) -> usize {
        let mut by_image: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for e in self.cells.values().flatten() {
            by_image.entry(&e.image).or_default().insert(&e.version);
        }
        by_image
            .values()
            .map(BTreeSet::len)
            .max()
            .unwrap_or_default()
    }
}
