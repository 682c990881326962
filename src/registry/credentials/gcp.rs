//! Google Container Registry and Artifact Registry (the `gcp` source).
//!
//! The first of these that is configured gives the credential:
//! 1. a service-account key file named in the configuration (`credentials: gcp:/path/key.json`),
//!    as JSON or base64-encoded JSON. GCR and Artifact Registry take the key itself as the
//!    Basic-auth password of user `_json_key` (or `_json_key_base64`), so it never expires;
//! 2. the file `GOOGLE_APPLICATION_CREDENTIALS` names (Application Default Credentials): a
//!    service-account key as above, or a gcloud user credential (`authorized_user`) whose
//!    refresh token is traded for an access token;
//! 3. the metadata server of GCE, GKE and Cloud Run, at `metadata.google.internal` unless
//!    `GCE_METADATA_HOST` (`host[:port]`, as in Google's own libraries) says otherwise.
//!
//! Access tokens go to the registry as the password of user `oauth2accesstoken`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Credential, Ctx, Error, Fetched};
use imagebump_model::env::EnvVars;

const ADC_VAR: &str = EnvVars::GOOGLE_APPLICATION_CREDENTIALS;
const METADATA_HOST_VAR: &str = EnvVars::GCE_METADATA_HOST;
const DEFAULT_METADATA_HOST: &str = "metadata.google.internal";
const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// Short, so that a machine outside Google Cloud fails fast instead of hanging.
const METADATA_TIMEOUT: Duration = Duration::from_secs(2);

const JSON_KEY_USER: &str = "_json_key";
const JSON_KEY_BASE64_USER: &str = "_json_key_base64";
const ACCESS_TOKEN_USER: &str = "oauth2accesstoken";

/// Standard base64 as `base64 key.json` writes it; padding is optional so that text copied
/// without its trailing `=` still decodes.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Whether `host` is Google Container Registry (`gcr.io`, `eu.gcr.io`...) or Artifact
/// Registry (`europe-west1-docker.pkg.dev`...).
pub fn is_gcp_host(host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    host == "gcr.io"
        || host.ends_with(".gcr.io")
        || host
            .strip_suffix("-docker.pkg.dev")
            .is_some_and(|location| !location.is_empty())
}

/// A credential for GCR or Artifact Registry, from `key_file` if the configuration names one,
/// else from Application Default Credentials, else from the metadata server.
pub async fn fetch(ctx: &Ctx<'_>, key_file: Option<&Path>) -> Result<Fetched, Error> {
    if let Some(path) = key_file {
        return from_key_file(path).await;
    }
    if let Some(path) = ctx.env.get(ADC_VAR) {
        return from_adc_file(ctx, Path::new(path)).await;
    }
    from_metadata_server(ctx).await
}

/// What a `gcp:` key file must hold.
pub(super) const KEY_FILE_HOLDS: &str =
    "a service-account JSON key (as downloaded, or base64-encoded)";

/// What the file `GOOGLE_APPLICATION_CREDENTIALS` names must hold.
const ADC_FILE_HOLDS: &str =
    "a service-account JSON key or a gcloud user login (`gcloud auth application-default login`)";

/// A service-account key named in the configuration, as JSON or as base64-encoded JSON.
async fn from_key_file(path: &Path) -> Result<Fetched, Error> {
    let what = format!("GCP key file {}", path.display());
    let fail = |why: String| Error::file(path, KEY_FILE_HOLDS, format!("{what}: {why}"));
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let malformed = |why: Malformed| fail(why.to_string());

    let (credential, key) = if text.trim_start().starts_with('{') {
        let key = parse_object(&text).map_err(malformed)?;
        (Credential::new(JSON_KEY_USER, text), key)
    } else {
        // `base64` wraps its output at 76 columns; the line breaks are not part of the key.
        let encoded: String = text.split_ascii_whitespace().collect();
        let decoded = BASE64
            .decode(&encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                fail("neither a JSON service-account key nor a base64-encoded one".into())
            })?;
        let key = parse_object(&decoded).map_err(|why| fail(format!("decoded base64 is {why}")))?;
        (Credential::new(JSON_KEY_BASE64_USER, encoded), key)
    };
    let email = service_account_email(&key).map_err(malformed)?;
    Ok(Fetched {
        credential,
        expires_at: None,
        via: format!("GCP service-account key {email}"),
    })
}

/// The Application Default Credentials file: a service-account key or a gcloud user login.
async fn from_adc_file(ctx: &Ctx<'_>, path: &Path) -> Result<Fetched, Error> {
    let what = format!("{ADC_VAR} file {}", path.display());
    let fail = |why: String| Error::file(path, ADC_FILE_HOLDS, format!("{what}: {why}"));
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let malformed = |why: Malformed| fail(why.to_string());
    let file = parse_object(&text).map_err(malformed)?;

    match string_field(&file, "type") {
        Some("service_account") => {
            let email = service_account_email(&file).map_err(malformed)?;
            let via = format!("GCP service-account key {email} ({ADC_VAR})");
            Ok(Fetched {
                credential: Credential::new(JSON_KEY_USER, text),
                expires_at: None,
                via,
            })
        }
        Some("authorized_user") => refresh_user_login(ctx, &file, path)
            .await
            .map_err(|e| e.within(&what)),
        Some("external_account") => Err(fail(format!(
            "workload identity federation credentials (\"type\": \"external_account\") are not \
             supported yet; on GKE unset {ADC_VAR} to use the metadata server, or configure a \
             service-account key (`credentials: gcp:/path/key.json`), or an `ext:` command that \
             prints a token from `gcloud auth print-access-token` (user {ACCESS_TOKEN_USER})"
        ))),
        Some(other) => Err(fail(format!(
            "credential type {other:?} is not supported; use a service-account key or a \
             gcloud user login (`gcloud auth application-default login`)"
        ))),
        None => Err(fail("has no \"type\" field".into())),
    }
}

/// Trades a gcloud user login's refresh token for an access token.
async fn refresh_user_login(
    ctx: &Ctx<'_>,
    file: &Map<String, Value>,
    path: &Path,
) -> Result<Fetched, Error> {
    let field = |name: &str| {
        string_field(file, name).ok_or_else(|| {
            Error::file(
                path,
                ADC_FILE_HOLDS,
                format!("gcloud user login has no {name:?}"),
            )
        })
    };
    ["client_secret", "refresh_token"]
        .into_iter()
        .filter_map(|name| string_field(file, name))
        .for_each(imagebump_http::hold);
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", field("client_id")?),
        ("client_secret", field("client_secret")?),
        ("refresh_token", field("refresh_token")?),
    ];
    let token_uri = string_field(file, "token_uri").unwrap_or(DEFAULT_TOKEN_URI);
    let source = format!("Google token endpoint {token_uri}");

    let response = ctx
        .http
        .post(token_uri)
        .form(&form)
        .send()
        .await
        .map_err(|e| Error::service(format!("{source}: {}", super::http_error(e))))?;
    let token = read_token(response, &source).await?;
    Ok(Fetched {
        expires_at: token.expires_at(),
        credential: Credential::new(ACCESS_TOKEN_USER, token.access_token),
        via: format!("GCP gcloud user login ({})", path.display()),
    })
}

/// The default service account's access token from the metadata server.
async fn from_metadata_server(ctx: &Ctx<'_>) -> Result<Fetched, Error> {
    let host = ctx
        .env
        .get(METADATA_HOST_VAR)
        .unwrap_or(DEFAULT_METADATA_HOST);
    let base = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default");
    let token_url = format!("{base}/token");
    let email_url = format!("{base}/email");
    let source = format!("GCP metadata server {token_url}");

    // The e-mail only names the account in `via`; ask for it alongside, at no extra wait.
    let (response, email) = tokio::join!(
        metadata_get(ctx, &token_url),
        metadata_email(ctx, &email_url),
    );
    let response = response.map_err(|e| {
        Error::service(format!(
            "no GCP credentials: no key file is configured, {ADC_VAR} is not set, and the \
             metadata server {token_url} did not answer ({}); configure a service-account key \
             (`credentials: gcp:/path/key.json`), set {ADC_VAR}, or run on GCE, GKE or Cloud \
             Run with a service account",
            super::http_error(e)
        ))
    })?;
    if !has_google_flavor(&response) {
        return Err(Error::setting(format!(
            "{source}: the response lacks `Metadata-Flavor: Google`, so it does not come from \
             a GCP metadata server (check {METADATA_HOST_VAR})"
        )));
    }
    let token = read_token(response, &source).await?;
    Ok(Fetched {
        expires_at: token.expires_at(),
        credential: Credential::new(ACCESS_TOKEN_USER, token.access_token),
        via: format!(
            "GCP metadata server ({})",
            email.as_deref().unwrap_or("default")
        ),
    })
}

async fn metadata_get(ctx: &Ctx<'_>, url: &str) -> Result<reqwest::Response, reqwest::Error> {
    ctx.http
        .get(url)
        .header("Metadata-Flavor", "Google")
        .timeout(METADATA_TIMEOUT)
        .send()
        .await
}

/// The default service account's e-mail address, if the metadata server tells it.
async fn metadata_email(ctx: &Ctx<'_>, url: &str) -> Option<String> {
    let response = metadata_get(ctx, url).await.ok()?;
    if !response.status().is_success() || !has_google_flavor(&response) {
        return None;
    }
    let email = response.text().await.ok()?;
    let email = email.trim();
    (!email.is_empty()).then(|| email.to_owned())
}

/// Google's metadata server marks its answers, so that a proxy or captive portal answering
/// for `metadata.google.internal` is not mistaken for it.
fn has_google_flavor(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("Metadata-Flavor")
        .is_some_and(|flavor| flavor == "Google")
}

/// An OAuth2 access token as Google's token endpoint and metadata server return it.
// No `Debug`: it holds the token.
#[derive(Deserialize)]
struct AccessToken {
    access_token: String,
    expires_in: Option<u64>,
}

impl AccessToken {
    fn expires_at(&self) -> Option<SystemTime> {
        SystemTime::now().checked_add(Duration::from_secs(self.expires_in?))
    }
}

/// Reads a token response, turning an HTTP error into the service's own error code and text.
async fn read_token(response: reqwest::Response, source: &str) -> Result<AccessToken, Error> {
    let status = response.status();
    let body = response.bytes().await.map_err(|e| {
        Error::service(format!(
            "{source}: reading the response: {}",
            super::http_error(e)
        ))
    })?;
    if !status.is_success() {
        return Err(Error::service(format!(
            "{source}: HTTP {status}{}",
            super::service_error(&body)
        )));
    }
    serde_json::from_slice(&body)
        .map_err(|e| Error::service(format!("{source}: unexpected response: {e}")))
}

/// What is wrong with a credentials file's JSON. Never what is there: the text may be a
/// private key.
#[derive(Debug, thiserror::Error)]
enum Malformed {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("not valid JSON (line {line}, column {column})")]
    Syntax { line: usize, column: usize },
    #[error("has \"type\": {0:?}, expected a service-account key (\"service_account\")")]
    OtherType(String),
    #[error("has no \"type\" field; expected a service-account key")]
    NoType,
    #[error("service-account key has no {0:?}")]
    NoField(&'static str),
}

/// Parses a credentials file as a JSON object. The error says where the syntax breaks, never
/// what is there: the text may be a private key.
fn parse_object(text: &str) -> Result<Map<String, Value>, Malformed> {
    match serde_json::from_str(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Malformed::NotAnObject),
        Err(e) => Err(Malformed::Syntax {
            line: e.line(),
            column: e.column(),
        }),
    }
}

/// The `client_email` of a service-account key, after checking that it is one.
fn service_account_email(key: &Map<String, Value>) -> Result<&str, Malformed> {
    match string_field(key, "type") {
        Some("service_account") => {}
        Some(other) => return Err(Malformed::OtherType(other.to_string())),
        None => return Err(Malformed::NoType),
    }
    if string_field(key, "private_key").is_none() {
        return Err(Malformed::NoField("private_key"));
    }
    string_field(key, "client_email").ok_or(Malformed::NoField("client_email"))
}

/// A non-empty string field.
fn string_field<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    object
        .get(name)
        .and_then(Value::as_str)
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{closed_port, form_is};
    use std::io::Write;

    use secrecy::ExposeSecret;
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::super::Environment;
    use super::*;

    const EMAIL: &str = "pusher@proj.iam.gserviceaccount.com";
    const PRIVATE_KEY: &str =
        "-----BEGIN PRIVATE KEY-----\\nTEST-PRIVATE-KEY\\n-----END PRIVATE KEY-----\\n";
    const CLIENT_SECRET: &str = "test-client-secret";
    const REFRESH_TOKEN: &str = "test-refresh-token";
    const ACCESS_TOKEN: &str = "ya29.test-access-token";

    fn service_account_key() -> String {
        format!(
            r#"{{"type": "service_account", "project_id": "proj", "private_key_id": "k1",
  "private_key": "{PRIVATE_KEY}", "client_email": "{EMAIL}"}}
"#
        )
    }

    fn temp_file(content: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(content.as_bytes()).unwrap();
        file
    }

    async fn run(env: &[(&str, &str)], key_file: Option<&Path>) -> Result<Fetched, String> {
        let http = reqwest::Client::new();
        let env = Environment::from_pairs(env.iter().copied());
        let ctx = Ctx {
            http: &http,
            env: &env,
            host: "europe-docker.pkg.dev",
            endpoint: "https://europe-docker.pkg.dev",
        };
        fetch(&ctx, key_file).await.map_err(|e| e.to_string())
    }

    fn assert_no_secret(error: &str) {
        for secret in [
            "TEST-PRIVATE-KEY",
            CLIENT_SECRET,
            REFRESH_TOKEN,
            ACCESS_TOKEN,
        ] {
            assert!(!error.contains(secret), "{secret:?} leaked into {error:?}");
        }
    }

    #[test]
    fn recognises_gcr_and_artifact_registry_hosts() {
        for host in [
            "gcr.io",
            "eu.gcr.io",
            "US.GCR.IO",
            "europe-west1-docker.pkg.dev",
        ] {
            assert!(is_gcp_host(host), "{host}");
        }
        for host in [
            "docker.pkg.dev",
            "-docker.pkg.dev",
            "evilgcr.io",
            "gcr.io.example.com",
        ] {
            assert!(!is_gcp_host(host), "{host}");
        }
    }

    #[tokio::test]
    async fn key_file_json_is_sent_as_json_key() {
        let key = service_account_key();
        let file = temp_file(&key);
        let fetched = run(&[], Some(file.path())).await.unwrap();
        assert_eq!(fetched.credential.username, "_json_key");
        assert_eq!(fetched.credential.password.expose_secret(), key);
        assert_eq!(fetched.expires_at, None);
        assert_eq!(fetched.via, format!("GCP service-account key {EMAIL}"));
    }

    #[tokio::test]
    async fn base64_key_file_is_sent_as_json_key_base64() {
        let encoded = BASE64.encode(service_account_key());
        // As `base64 key.json` writes it: wrapped at 76 columns, with a final newline.
        let wrapped: Vec<&str> = encoded
            .as_bytes()
            .chunks(76)
            .map(|line| std::str::from_utf8(line).unwrap())
            .collect();
        let file = temp_file(&(wrapped.join("\n") + "\n"));
        let fetched = run(&[], Some(file.path())).await.unwrap();
        assert_eq!(fetched.credential.username, "_json_key_base64");
        assert_eq!(fetched.credential.password.expose_secret(), encoded);
        assert_eq!(fetched.expires_at, None);
        assert_eq!(fetched.via, format!("GCP service-account key {EMAIL}"));
    }

    #[tokio::test]
    async fn malformed_key_files_are_named_without_their_content() {
        let cases = [
            (
                service_account_key().replace('}', ""),
                "not valid JSON (line 3, column 0)",
            ),
            (
                format!("TEST-PRIVATE-KEY {PRIVATE_KEY}"),
                "neither a JSON service-account key nor a base64-encoded one",
            ),
            (
                BASE64.encode("TEST-PRIVATE-KEY"),
                "decoded base64 is not valid JSON",
            ),
            (
                service_account_key().replace("client_email", "email"),
                "service-account key has no \"client_email\"",
            ),
            (
                service_account_key().replace("\"private_key\"", "\"key\""),
                "service-account key has no \"private_key\"",
            ),
            (
                format!(r#"{{"type": "authorized_user", "client_secret": "{CLIENT_SECRET}"}}"#),
                "has \"type\": \"authorized_user\", expected a service-account key",
            ),
            (
                BASE64.encode(format!(r#"["{CLIENT_SECRET}"]"#)),
                "decoded base64 is not a JSON object",
            ),
        ];
        for (content, why) in cases {
            let file = temp_file(&content);
            let error = run(&[], Some(file.path())).await.unwrap_err();
            let expected = format!("GCP key file {}: {why}", file.path().display());
            assert!(
                error.starts_with(&expected),
                "{error:?} should start with {expected:?}"
            );
            assert_no_secret(&error);
        }
    }

    #[tokio::test]
    async fn missing_key_file_is_named() {
        let error = run(&[], Some(Path::new("/nonexistent/key.json")))
            .await
            .unwrap_err();
        assert!(
            error.starts_with("GCP key file /nonexistent/key.json: "),
            "{error}"
        );
    }

    #[tokio::test]
    async fn adc_service_account_key_is_sent_as_json_key() {
        let key = service_account_key();
        let file = temp_file(&key);
        let adc = file.path().to_str().unwrap();
        let fetched = run(&[(ADC_VAR, adc)], None).await.unwrap();
        assert_eq!(fetched.credential.username, "_json_key");
        assert_eq!(fetched.credential.password.expose_secret(), key);
        assert_eq!(fetched.expires_at, None);
        assert_eq!(
            fetched.via,
            format!("GCP service-account key {EMAIL} (GOOGLE_APPLICATION_CREDENTIALS)")
        );
    }

    #[tokio::test]
    async fn adc_user_login_refreshes_an_access_token() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .and(form_is(&[
                ("grant_type", "refresh_token"),
                ("client_id", "cid.apps.googleusercontent.com"),
                ("client_secret", CLIENT_SECRET),
                ("refresh_token", REFRESH_TOKEN),
            ]))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer",
                "scope": "https://www.googleapis.com/auth/cloud-platform",
            })))
            .expect(1)
            .mount(&server)
            .await;
        let file = temp_file(&format!(
            r#"{{"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
                "client_secret": "{CLIENT_SECRET}", "refresh_token": "{REFRESH_TOKEN}",
                "token_uri": "{}/token"}}"#,
            server.uri()
        ));
        let adc = file.path().to_str().unwrap();

        let before = SystemTime::now();
        let fetched = run(&[(ADC_VAR, adc)], None).await.unwrap();
        let after = SystemTime::now();

        assert_eq!(fetched.credential.username, "oauth2accesstoken");
        assert_eq!(fetched.credential.password.expose_secret(), ACCESS_TOKEN);
        let expires_at = fetched.expires_at.unwrap();
        let lifetime = Duration::from_secs(3599);
        assert!(before + lifetime <= expires_at && expires_at <= after + lifetime);
        assert_eq!(fetched.via, format!("GCP gcloud user login ({adc})"));
    }

    #[tokio::test]
    async fn adc_user_login_refusal_reports_the_oauth_error() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(ResponseTemplate::new(400).set_body_json(serde_json::json!({
                "error": "invalid_grant",
                "error_description": "Token has been\n expired or revoked.",
            })))
            .expect(1)
            .mount(&server)
            .await;
        let file = temp_file(&format!(
            r#"{{"type": "authorized_user", "client_id": "cid", "client_secret": "{CLIENT_SECRET}",
                "refresh_token": "{REFRESH_TOKEN}", "token_uri": "{}/token"}}"#,
            server.uri()
        ));
        let adc = file.path().to_str().unwrap();
        let error = run(&[(ADC_VAR, adc)], None).await.unwrap_err();
        assert_eq!(
            error,
            format!(
                "GOOGLE_APPLICATION_CREDENTIALS file {adc}: Google token endpoint {}/token: \
                 HTTP 400 Bad Request: invalid_grant: Token has been expired or revoked.",
                server.uri()
            )
        );
        assert_no_secret(&error);
    }

    #[tokio::test]
    async fn adc_external_account_is_refused_with_alternatives() {
        let file = temp_file(
            r#"{"type": "external_account", "audience": "//iam.googleapis.com/projects/1/x",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "credential_source": {"file": "/var/run/token"}}"#,
        );
        let adc = file.path().to_str().unwrap();
        let error = run(&[(ADC_VAR, adc)], None).await.unwrap_err();
        assert!(error.starts_with(&format!("GOOGLE_APPLICATION_CREDENTIALS file {adc}: ")));
        for needle in [
            "workload identity federation",
            "not supported yet",
            "metadata server",
            "gcp:/path/key.json",
            "`ext:`",
            "gcloud auth print-access-token",
        ] {
            assert!(error.contains(needle), "{needle:?} missing from {error:?}");
        }
    }

    async fn metadata_server() -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(
                "/computeMetadata/v1/instance/service-accounts/default/token",
            ))
            .and(header("Metadata-Flavor", "Google"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Metadata-Flavor", "Google")
                    .set_body_json(serde_json::json!({
                        "access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer",
                    })),
            )
            .expect(1)
            .mount(&server)
            .await;
        server
    }

    #[tokio::test]
    async fn metadata_server_token_names_the_service_account() {
        let server = metadata_server().await;
        Mock::given(method("GET"))
            .and(path(
                "/computeMetadata/v1/instance/service-accounts/default/email",
            ))
            .and(header("Metadata-Flavor", "Google"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Metadata-Flavor", "Google")
                    .set_body_string(EMAIL),
            )
            .expect(1)
            .mount(&server)
            .await;
        let host = server.address().to_string();

        let before = SystemTime::now();
        let fetched = run(&[(METADATA_HOST_VAR, host.as_str())], None)
            .await
            .unwrap();
        let after = SystemTime::now();

        assert_eq!(fetched.credential.username, "oauth2accesstoken");
        assert_eq!(fetched.credential.password.expose_secret(), ACCESS_TOKEN);
        let expires_at = fetched.expires_at.unwrap();
        let lifetime = Duration::from_secs(3599);
        assert!(before + lifetime <= expires_at && expires_at <= after + lifetime);
        assert_eq!(fetched.via, format!("GCP metadata server ({EMAIL})"));
    }

    #[tokio::test]
    async fn metadata_server_without_email_is_default() {
        let server = metadata_server().await;
        let host = server.address().to_string();
        let fetched = run(&[(METADATA_HOST_VAR, host.as_str())], None)
            .await
            .unwrap();
        assert_eq!(fetched.credential.password.expose_secret(), ACCESS_TOKEN);
        assert_eq!(fetched.via, "GCP metadata server (default)");
    }

    #[tokio::test]
    async fn answer_without_metadata_flavor_is_refused() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path(
                "/computeMetadata/v1/instance/service-accounts/default/token",
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "access_token": ACCESS_TOKEN, "expires_in": 3599,
            })))
            .mount(&server)
            .await;
        let host = server.address().to_string();
        let error = run(&[(METADATA_HOST_VAR, host.as_str())], None)
            .await
            .unwrap_err();
        assert_eq!(
            error,
            format!(
                "GCP metadata server http://{host}/computeMetadata/v1/instance/service-accounts/\
                 default/token: the response lacks `Metadata-Flavor: Google`, so it does not \
                 come from a GCP metadata server (check GCE_METADATA_HOST)"
            )
        );
        assert_no_secret(&error);
    }

    #[tokio::test]
    async fn nothing_available_lists_what_was_tried() {
        let host = format!("127.0.0.1:{}", closed_port());
        let error = run(&[(METADATA_HOST_VAR, host.as_str())], None)
            .await
            .unwrap_err();
        for needle in [
            "no key file is configured",
            "GOOGLE_APPLICATION_CREDENTIALS is not set",
            &format!("metadata server http://{host}/computeMetadata/v1/"),
            "Connection refused",
            "`credentials: gcp:/path/key.json`",
        ] {
            assert!(error.contains(needle), "{needle:?} missing from {error:?}");
        }
    }
}
