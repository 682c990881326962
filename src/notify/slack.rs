//! Slack incoming webhooks: a Block Kit message (sections and a context, mrkdwn text),
//! within Slack's limits: at most 50 blocks, 3000 characters a section's text.

use secrecy::SecretString;
use serde_json::{json, Value};

use super::{News, Outgoing, UpdateNews};
use imagebump_http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use imagebump_model::config::NotifyEvent;

/// Blocks in one message at most (Slack's limit).
pub const MAX_BLOCKS: usize = 50;
/// Characters in a section's text at most (Slack's limit).
pub const MAX_TEXT: usize = 3000;
/// Updates listed under one pull request at most.
const UPDATES_SHOWN: usize = 10;

pub fn request(url: SecretString, news: &News) -> Result<Outgoing, super::NotifyError> {
    let parsed = super::parse_url(&url).map_err(|e| e.of("slack"))?;
    let body =
        serde_json::to_vec(&message(news)).map_err(|e| super::NotifyError::Build(e.to_string()))?;
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(Outgoing {
        url: parsed,
        headers,
        body,
        secrets: vec![url],
    })
}

/// The message: what happened in one line (also the notification's plain `text`), a
/// section per pull request, one for a push and one for a failure, and a context line.
pub fn message(news: &News) -> Value {
    let headline = headline(news);
    let mut sections: Vec<String> = news.pull_requests.iter().map(pull_section).collect();
    if let Some(p) = &news.pushed {
        let sha: String = p.commit.chars().take(12).collect();
        sections.push(format!(
            "*Pushed* `{sha}` to the base branch\n{}",
            updates(&p.updates)
        ));
    }
    if let Some(f) = &news.failed {
        sections.push(failed_section(f));
    }
    // The headline, the sections, perhaps an "and more" and the context: within the limit.
    let room = MAX_BLOCKS.saturating_sub(3);
    let hidden = sections.len().saturating_sub(room);
    sections.truncate(room);
    if hidden > 0 {
        sections.push(format!("… and {hidden} more (see the run's report)"));
    }
    let mut blocks = vec![section(&format!("*imagebump* · {}", escape(&headline)))];
    blocks.extend(sections.iter().map(|s| section(s)));
    let mut context = format!("`{}` · {}", escape(&news.repository), news.mode);
    if let Some(c) = &news.commit {
        context.push_str(&format!(
            " · base `{}`",
            c.chars().take(12).collect::<String>()
        ));
    }
    blocks
        .push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": cut(&context)}]}));
    json!({ "text": cut(&format!("imagebump: {headline}")), "blocks": blocks })
}

/// `*Opened* <url|#3 title>` and its updates.
fn pull_section(p: &super::PullNews) -> String {
    let verb = match p.event {
        NotifyEvent::Opened => "Opened",
        NotifyEvent::Updated => "Updated",
        _ => "Closed",
    };
    let name = match p.number {
        Some(n) => format!("#{n} {}", escape(&p.title)),
        None => escape(&p.title),
    };
    // Slack links only to the forge's plain https pages.
    let url = p
        .url
        .as_deref()
        .and_then(imagebump_model::escape::https_link);
    let link = match url {
        Some(u) => format!("<{}|{name}>", escape(&u)),
        None => name,
    };
    format!("*{verb}* {link}\n{}", updates(&p.updates))
}

/// `*Failed*`, why the run stopped, and its first 20 errors.
fn failed_section(f: &super::Failed) -> String {
    let mut text = String::from("*Failed*");
    if let Some(why) = &f.stopped {
        text.push_str(&format!("\n{}", escape(why)));
    }
    for e in f.errors.iter().take(20) {
        text.push_str(&format!(
            "\n• `{}`: {}",
            escape(&e.location),
            escape(&e.message)
        ));
    }
    if f.errors.len() > 20 {
        text.push_str(&format!(
            "\n… and {} more",
            f.errors.len().saturating_sub(20)
        ));
    }
    text
}

/// `2 pull requests opened, 1 updated in <repository>`.
fn headline(news: &News) -> String {
    let count = |e: NotifyEvent| news.pull_requests.iter().filter(|p| p.event == e).count();
    let mut parts = Vec::new();
    for (event, word) in [
        (NotifyEvent::Opened, "opened"),
        (NotifyEvent::Updated, "updated"),
        (NotifyEvent::Closed, "closed"),
    ] {
        match count(event) {
            0 => {}
            1 => parts.push(format!("1 pull request {word}")),
            n => parts.push(format!("{n} pull requests {word}")),
        }
    }
    if let Some(p) = &news.pushed {
        parts.push(format!("{} update(s) pushed", p.updates.len()));
    }
    if news.failed.is_some() {
        parts.push("the run failed".into());
    }
    format!("{} in {}", parts.join(", "), news.repository)
}

fn updates(list: &[UpdateNews]) -> String {
    let mut lines: Vec<String> = list
        .iter()
        .take(UPDATES_SHOWN)
        .map(|u| {
            format!(
                "• `{}` {} → {} ({}:{})",
                escape(&u.image),
                escape(&u.from),
                escape(&u.to),
                escape(&u.file),
                u.line
            )
        })
        .collect();
    if list.len() > UPDATES_SHOWN {
        lines.push(format!(
            "… and {} more",
            list.len().saturating_sub(UPDATES_SHOWN)
        ));
    }
    lines.join("\n")
}

fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": cut(text)}})
}

/// At most [`MAX_TEXT`] characters, cut with `…`.
fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        return text.to_string();
    }
    let mut s: String = text.chars().take(MAX_TEXT.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// Slack's three control characters in mrkdwn, and hidden characters (a newline that
/// would start a line of its own) as `\u{…}`.
fn escape(s: &str) -> String {
    imagebump_model::escape::terminal(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
