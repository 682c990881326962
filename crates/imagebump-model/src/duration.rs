//! Durations as users write them: `3d`, `12h`, `1h30m`, `2w`.

use std::time::Duration;

/// A duration that could not be read, or that is longer than a setting allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a number followed by a unit; holds the text as written.
    #[error("{0:?} is not a duration (use a number and a unit: s, m, h, d, w)")]
    Malformed(String),
    /// A setting's duration over a year; holds the text as written.
    #[error("{0} is longer than a year")]
    OverAYear(String),
}

/// A duration such as `3d`, `12h`, `1h30m`, `90s`, `2w` or `0`.
pub fn parse_age(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let bad = || DurationError::Malformed(text.to_string());
    let mut total: u64 = 0;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (number, after) = rest.split_at_checked(digits).ok_or_else(bad)?;
        if number.is_empty() {
            return Err(bad());
        }
        let n: u64 = number.parse().map_err(|_| bad())?;
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at_checked(unit_len).ok_or_else(bad)?;
        let unit = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            "w" => 7 * 86_400,
            _ => return Err(bad()),
        };
        rest = after.trim_start();
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
    }
    Ok(Duration::from_secs(total))
}

/// `3d`, `1h30m` — the shortest spelling of a duration, for reasons shown to users.
pub fn format_age(d: Duration) -> String {
    let secs = d.as_secs();
    if secs == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    let parts = [
        ("d", secs / 86_400),
        ("h", secs % 86_400 / 3600),
        ("m", secs % 3600 / 60),
        ("s", secs % 60),
    ];
    for (unit, count) in parts {
        if count > 0 {
            out.push_str(&format!("{count}{unit}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(parse_age("3d").unwrap(), Duration::from_secs(3 * 86_400));
        assert_eq!(parse_age("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_age("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_age("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_age("0h").unwrap(), Duration::ZERO);
        for bad in ["", "3", "d", "3x", "1.5h", "-1h"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_age(" 3x ").map_err(|e| e.to_string()),
            Err(r#""3x" is not a duration (use a number and a unit: s, m, h, d, w)"#.to_string())
        );
        assert_eq!(format_age(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_age(Duration::from_secs(3 * 86_400 + 7)), "3d7s");
    }
}
