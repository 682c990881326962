//! `Chart.lock`: the digest Helm keeps of a chart's dependencies, computed as Helm computes
//! it (`HashReq` of Helm's resolver: SHA-256 of Go's `json.Marshal` of
//! `[2][]*chart.Dependency{Chart.yaml's dependencies, Chart.lock's}`), so that
//! `helm dependency build` accepts the lock imagebump writes.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The fields of Helm's `chart.Dependency`, in its struct's order: JSON name, and whether
/// it is left out when empty (`omitempty`).
const FIELDS: [(&str, bool); 9] = [
    ("name", false),
    ("version", true),
    ("repository", false),
    ("condition", true),
    ("tags", true),
    ("enabled", true),
    ("import-values", true),
    ("export-values", true),
    ("alias", true),
];

/// `sha256:<hex>` of the dependencies of `Chart.yaml` (`req`) and of `Chart.lock`
/// (`lock`), each a list of mappings as read from YAML.
pub fn digest(req: &[Value], lock: &[Value]) -> String {
    let mut json = String::from("[");
    list(&mut json, req);
    json.push(',');
    list(&mut json, lock);
    json.push(']');
    let sum = Sha256::digest(json.as_bytes());
    let hex: String = sum.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn list(out: &mut String, deps: &[Value]) {
    out.push('[');
    for (i, d) in deps.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        dependency(out, d);
    }
    out.push(']');
}

/// One dependency as Go marshals the struct: every field in order, empty `omitempty` ones
/// left out, strings for string fields whatever YAML made of them.
fn dependency(out: &mut String, d: &Value) {
    if d.is_null() {
        out.push_str("null");
        return;
    }
    out.push('{');
    let mut first = true;
    for (key, omit_empty) in FIELDS {
        let v = d.get(key).unwrap_or(&Value::Null);
        let field = match key {
            "tags" | "import-values" | "export-values" => match v {
                Value::Array(a) if !a.is_empty() => Some(v.clone()),
                _ => None,
            },
            "enabled" => v.as_bool().filter(|b| *b).map(Value::Bool),
            _ => {
                let s = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                (!(omit_empty && s.is_empty())).then_some(Value::String(s))
            }
        };
        let Some(field) = field else { continue };
        if !first {
            out.push(',');
        }
        first = false;
        go_string(out, key);
        out.push(':');
        go_value(out, &field);
    }
    out.push('}');
}

/// A value as Go's `encoding/json` writes an `interface{}`: map keys sorted.
fn go_value(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => go_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(out, k);
                out.push(':');
                go_value(out, m.get(k.as_str()).unwrap_or(&Value::Null));
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A string as Go's `encoding/json` escapes it (HTML characters too).
fn go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)))
            }
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_json_of_dependencies() {
        let req = vec![
            json!({"name": "redis", "version": "~17.0", "repository": "https://charts.example.com", "condition": "redis.enabled", "tags": ["cache"], "alias": "db", "enabled": false, "import-values": [{"parent": "p", "child": "c"}]}),
        ];
        let mut s = String::new();
        list(&mut s, &req);
        assert_eq!(
            s,
            r#"[{"name":"redis","version":"~17.0","repository":"https://charts.example.com","condition":"redis.enabled","tags":["cache"],"import-values":[{"child":"c","parent":"p"}],"alias":"db"}]"#
        );
        let mut s = String::new();
        go_string(&mut s, "a<b>&\u{1}");
        assert_eq!(s, r#""a\u003cb\u003e\u0026\u0001""#);
    }

    /// The digest is the SHA-256 of the pair of lists, in that order.
    #[test]
    fn digest_of_the_pair() {
        let dep = json!({"name": "nginx", "version": "15.0.0", "repository": "https://charts.bitnami.com/bitnami"});
        let d = digest(std::slice::from_ref(&dep), std::slice::from_ref(&dep));
        let expected = {
            let text = r#"[[{"name":"nginx","version":"15.0.0","repository":"https://charts.bitnami.com/bitnami"}],[{"name":"nginx","version":"15.0.0","repository":"https://charts.bitnami.com/bitnami"}]]"#;
            let sum = Sha256::digest(text.as_bytes());
            let hex: String = sum.iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256:{hex}")
        };
        assert_eq!(d, expected);
    }
}
