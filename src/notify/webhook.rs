//! The generic webhook: a versioned JSON body (docs/configuration.md, "notify"), POSTed,
//! signed with HMAC-SHA256 when the receiver has a `secret`.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use sha2::Sha256;

use super::{News, Outgoing};
use imagebump_http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use imagebump_model::config::NotifyEvent;

/// The body's `version`: raised when a field changes meaning or goes away (added fields
/// keep it).
pub const VERSION: u32 = 1;

/// The header holding `sha256=<hex>`, the HMAC-SHA256 of the body under the secret.
pub const SIGNATURE: &str = "x-imagebump-signature";
/// The header holding the events, comma-separated.
pub const EVENT: &str = "x-imagebump-event";
/// The header holding the delivery id (the same on every attempt).
pub const DELIVERY: &str = "x-imagebump-delivery";

/// The webhook body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Body<'a> {
    pub version: u32,
    /// The delivery id: a repeat of a delivery (after a lost answer) carries the same one.
    pub id: &'a str,
    pub events: Vec<&'static str>,
    #[serde(flatten)]
    pub news: &'a News,
}

/// The request for one receiver.
pub fn request(
    url: SecretString,
    key: Option<SecretString>,
    news: &News,
    events: &[NotifyEvent],
) -> Result<Outgoing, super::NotifyError> {
    let parsed = super::parse_url(&url).map_err(|e| e.of("webhook"))?;
    let id = delivery_id();
    let body = Body {
        version: VERSION,
        id: &id,
        events: events.iter().map(|e| e.name()).collect(),
        news,
    };
    let build = |e: &dyn std::fmt::Display| super::NotifyError::Build(e.to_string());
    let body = serde_json::to_vec(&body).map_err(|e| build(&e))?;
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let names: Vec<&str> = events.iter().map(|e| e.name()).collect();
    let value = |s: &str| HeaderValue::from_str(s).map_err(|e| build(&e));
    headers.insert(HeaderName::from_static(EVENT), value(&names.join(","))?);
    headers.insert(HeaderName::from_static(DELIVERY), value(&id)?);
    let mut secrets = vec![url];
    if let Some(key) = key {
        let mut signature = value(&sign(key.expose_secret().as_bytes(), &body))?;
        signature.set_sensitive(true);
        headers.insert(HeaderName::from_static(SIGNATURE), signature);
        secrets.push(key);
    }
    Ok(Outgoing {
        url: parsed,
        headers,
        body,
        secrets,
    })
}

/// `sha256=<hex>` of `body` under `key`.
pub fn sign(key: &[u8], body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// 16 random bytes, hex.
fn delivery_id() -> String {
    (0..16)
        .map(|_| format!("{:02x}", fastrand::u8(..)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_rfc_4231_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
