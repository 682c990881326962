//! Amazon ECR registry credentials, fetched natively (like `docker-credential-ecr-login`,
//! without the AWS SDK).
//!
//! AWS credentials come from the standard chain, in botocore's order: environment keys,
//! web identity (EKS IRSA, GitHub Actions OIDC), the shared credentials file, container
//! credentials (ECS, EKS Pod Identity) and EC2 instance metadata (IMDSv2). A link that is not
//! configured is skipped; a link that is configured but fails is an error, so a broken setup
//! is reported instead of silently masked by the next link. With those credentials we call
//! ECR `GetAuthorizationToken`, signed with SigV4, and decode its `AWS:<password>` token.
//!
//! Every variable is read through [`Environment`]. Errors name the source, the endpoint, the
//! HTTP status and the AWS error code and message; every secret sent or received is scrubbed
//! from anything quoted back from a server.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use super::{Credential, Ctx, Environment, Error, Fetched};
use imagebump_model::env::EnvVars;

/// Timeout for the link-local metadata endpoints, so a machine without them fails fast.
const METADATA_TIMEOUT: Duration = Duration::from_secs(2);
const IMDS_DEFAULT_ENDPOINT: &str = "http://169.254.169.254";
const IMDS_IPV6_ENDPOINT: &str = "http://[fd00:ec2::254]";
const ECS_CREDENTIALS_HOST: &str = "http://169.254.170.2";
const DEFAULT_SESSION_NAME: &str = "imagebump";
const ECR_TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";
const ECR_CONTENT_TYPE: &str = "application/x-amz-json-1.1";
const ECR_BODY: &str = "{}";
/// How much of a server's error text is quoted in an error message.
const EXCERPT_CHARS: usize = 300;

/// The DNS suffixes of ECR registry hosts, per AWS partition (as docker-credential-ecr-login).
const ECR_DOMAINS: [&str; 9] = [
    "amazonaws.com",
    "amazonaws.com.cn",
    "amazonaws.eu",
    "on.aws",
    "on.amazonwebservices.com.cn",
    "sc2s.sgov.gov",
    "c2s.ic.gov",
    "cloud.adc-e.uk",
    "csp.hci.ic.gov",
];

/// The region of an ECR registry host: `<account>.dkr.ecr[-fips].<region>.<domain>` or the
/// dual-stack `<account>.dkr-ecr[-fips].<region>.<domain>`, `<domain>` being one of the
/// partitions' (`amazonaws.com`, `amazonaws.com.cn`, `on.aws`, …).
pub fn region_of(host: &str) -> Option<String> {
    let host = host.to_ascii_lowercase();
    let (account, rest) = host.split_once('.')?;
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = rest
        .strip_prefix("dkr.ecr")
        .or_else(|| rest.strip_prefix("dkr-ecr"))?;
    let rest = rest.strip_prefix("-fips").unwrap_or(rest);
    let (region, domain) = rest.strip_prefix('.')?.split_once('.')?;
    (is_region(region) && ECR_DOMAINS.contains(&domain)).then(|| region.to_owned())
}

/// Whether `host` is a private ECR registry (see [`region_of`]).
pub fn is_ecr_host(host: &str) -> bool {
    region_of(host).is_some()
}

/// A plausible region name (`[a-z0-9][a-z0-9-]*`); it becomes part of endpoint host names
/// and of the signature's scope, so nothing else passes.
fn is_region(region: &str) -> bool {
    let lower_alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    region.starts_with(lower_alnum) && region.chars().all(|c| lower_alnum(c) || c == '-')
}

/// The DNS suffix of AWS API endpoints in `region`'s partition.
fn dns_suffix(region: &str) -> &'static str {
    const PARTITIONS: [(&str, &str); 6] = [
        ("cn-", "amazonaws.com.cn"),
        ("eusc-", "amazonaws.eu"),
        ("us-iso-", "c2s.ic.gov"),
        ("us-isob-", "sc2s.sgov.gov"),
        ("us-isof-", "csp.hci.ic.gov"),
        ("eu-isoe-", "cloud.adc-e.uk"),
    ];
    PARTITIONS
        .iter()
        .find(|(prefix, _)| region.starts_with(prefix))
        .map_or("amazonaws.com", |&(_, suffix)| suffix)
}

/// Fetches a registry credential for the ECR registry `ctx.host`, in `region` if given,
/// else the host's region, else `AWS_REGION` / `AWS_DEFAULT_REGION`.
pub async fn fetch(ctx: &Ctx<'_>, region: Option<&str>) -> Result<Fetched, Error> {
    let region = resolve_region(ctx, region)?;
    let creds = credentials(ctx, &region).await?;
    // Keys read from a file or a metadata service are secrets in every later message too.
    creds.secrets().into_iter().for_each(imagebump_http::hold);
    tracing::debug!(host = ctx.host, source = %creds.source, "requesting an ECR token");
    get_authorization_token(ctx, &region, &creds).await
}

fn resolve_region(ctx: &Ctx<'_>, explicit: Option<&str>) -> Result<String, Error> {
    let region = explicit
        .map(str::to_owned)
        .or_else(|| region_of(ctx.host))
        .or_else(|| {
            let env = ctx.env;
            env.get(EnvVars::AWS_REGION)
                .or_else(|| env.get(EnvVars::AWS_DEFAULT_REGION))
                .map(str::to_owned)
        })
        .ok_or_else(|| {
            Error::unset(
                EnvVars::AWS_REGION,
                format!(
                    "cannot tell the AWS region of ECR registry {}; set `credentials: ecr:<region>` \
                     (or AWS_REGION)",
                    ctx.host
                ),
            )
        })?;
    if is_region(&region) {
        Ok(region)
    } else {
        Err(Error::setting(format!(
            "{region:?} is not an AWS region name"
        )))
    }
}

/// AWS credentials, and where they came from.
struct AwsCredentials {
    access_key_id: String,
    secret_access_key: SecretString,
    session_token: Option<SecretString>,
    expires_at: Option<SystemTime>,
    /// e.g. "AWS web identity (role arn:aws:iam::1:role/x)"; never a secret.
    source: String,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AwsCredentials({}, ***)", self.source)
    }
}

impl AwsCredentials {
    /// The secrets these credentials hold, to scrub from anything a server sends back.
    fn secrets(&self) -> Vec<&str> {
        let mut secrets = vec![self.secret_access_key.expose_secret()];
        secrets.extend(self.session_token.as_ref().map(|t| t.expose_secret()));
        secrets
    }
}

/// One link of the chain: credentials, or why the link does not apply (for the final error).
enum Link {
    Found(AwsCredentials),
    Absent(String),
}

async fn credentials(ctx: &Ctx<'_>, region: &str) -> Result<AwsCredentials, Error> {
    let mut tried = Vec::new();
    let mut found = |link: Link| match link {
        Link::Found(creds) => Some(creds),
        Link::Absent(why) => {
            tried.push(why);
            None
        }
    };
    if let Some(creds) = found(environment_keys(ctx.env)?) {
        return Ok(creds);
    }
    if let Some(creds) = found(web_identity(ctx, region).await?) {
        return Ok(creds);
    }
    if let Some(creds) = found(shared_credentials_file(ctx.env).await?) {
        return Ok(creds);
    }
    if let Some(creds) = found(container(ctx).await?) {
        return Ok(creds);
    }
    if let Some(creds) = found(instance_metadata(ctx).await?) {
        return Ok(creds);
    }
    Err(Error::setting(format!(
        "no AWS credentials found for ECR; tried {}",
        tried.join("; ")
    )))
}

/// (a) `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and optionally `AWS_SESSION_TOKEN`.
fn environment_keys(env: &Environment) -> Result<Link, Error> {
    match (
        env.get(EnvVars::AWS_ACCESS_KEY_ID),
        env.get(EnvVars::AWS_SECRET_ACCESS_KEY),
    ) {
        (Some(id), Some(secret)) => Ok(Link::Found(AwsCredentials {
            access_key_id: id.to_owned(),
            secret_access_key: SecretString::from(secret),
            session_token: env.get(EnvVars::AWS_SESSION_TOKEN).map(SecretString::from),
            expires_at: None,
            source: "AWS environment variables (AWS_ACCESS_KEY_ID)".to_owned(),
        })),
        (None, None) => Ok(Link::Absent(
            "environment variables (AWS_ACCESS_KEY_ID not set)".to_owned(),
        )),
        (Some(_), None) => Err(Error::unset(
            EnvVars::AWS_SECRET_ACCESS_KEY,
            "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
        )),
        (None, Some(_)) => Err(Error::unset(
            EnvVars::AWS_ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not",
        )),
    }
}

/// (b) `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN` → STS `AssumeRoleWithWebIdentity`.
async fn web_identity(ctx: &Ctx<'_>, region: &str) -> Result<Link, Error> {
    let env = ctx.env;
    let Some(token_file) = env.get(EnvVars::AWS_WEB_IDENTITY_TOKEN_FILE) else {
        return Ok(Link::Absent(
            "web identity (AWS_WEB_IDENTITY_TOKEN_FILE not set)".to_owned(),
        ));
    };
    let role_arn = env.get(EnvVars::AWS_ROLE_ARN).ok_or_else(|| {
        Error::unset(
            EnvVars::AWS_ROLE_ARN,
            "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not",
        )
    })?;
    let session_name = env
        .get(EnvVars::AWS_ROLE_SESSION_NAME)
        .unwrap_or(DEFAULT_SESSION_NAME);
    let source = format!("AWS web identity (role {role_arn})");
    let token = read_secret_file(Path::new(token_file), "web identity token file").await?;
    let url = service_endpoint(
        env,
        "STS",
        format!("https://sts.{region}.{}/", dns_suffix(region)),
    )?;

    let form = [
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", role_arn),
        ("RoleSessionName", session_name),
        ("WebIdentityToken", token.expose_secret()),
    ];
    let what = "STS AssumeRoleWithWebIdentity";
    let (status, body) = call(ctx.http.post(url.clone()).form(&form), what, url.as_str()).await?;
    let xml = String::from_utf8_lossy(&body);
    if !status.is_success() {
        // STS errors: <ErrorResponse><Error><Code>…</Code><Message>…</Message></Error>…
        let detail = match (xml_element(&xml, "Code"), xml_element(&xml, "Message")) {
            (Some(code), Some(message)) => format!("{code}: {}", xml_unescape(message)),
            (Some(code), None) => code.to_owned(),
            _ => xml.into_owned(),
        };
        let detail = excerpt(&detail, &[token.expose_secret()]);
        return Err(Error::service(format!(
            "{source}: {}",
            http_error(what, url.as_str(), status, &detail)
        )));
    }

    let malformed = |missing: &str| {
        Error::service(format!("{source}: {what} {url} answered without {missing}"))
    };
    let creds = xml_element(&xml, "Credentials").ok_or_else(|| malformed("Credentials"))?;
    let field = |name: &str| {
        xml_element(creds, name)
            .map(xml_unescape)
            .ok_or_else(|| malformed(name))
    };
    Ok(Link::Found(AwsCredentials {
        access_key_id: field("AccessKeyId")?,
        secret_access_key: SecretString::from(field("SecretAccessKey")?),
        session_token: Some(SecretString::from(field("SessionToken")?)),
        expires_at: Some(parse_timestamp(&field("Expiration")?, &source)?),
        source,
    }))
}

/// (c) Static keys of profile `AWS_PROFILE` (else `default`) in `AWS_SHARED_CREDENTIALS_FILE`
/// (else `~/.aws/credentials`).
async fn shared_credentials_file(env: &Environment) -> Result<Link, Error> {
    let Some(path) = shared_file_path(env) else {
        return Ok(Link::Absent(
            "shared credentials file (neither AWS_SHARED_CREDENTIALS_FILE nor HOME set)".to_owned(),
        ));
    };
    let text = match tokio::fs::read_to_string(&path).await {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Link::Absent(format!(
                "shared credentials file {} (not found)",
                path.display()
            )))
        }
        Err(e) => {
            return Err(Error::file(
                &path,
                SHARED_FILE_HOLDS,
                format!(
                    "cannot read AWS shared credentials file {}: {e}",
                    path.display()
                ),
            ))
        }
    };
    let explicit_profile = env.get(EnvVars::AWS_PROFILE);
    let profile = explicit_profile.unwrap_or("default");
    let source = format!(
        "AWS shared credentials file ({}, profile {profile})",
        path.display()
    );
    let Some(keys) = profile_keys(&text, profile) else {
        return match explicit_profile {
            Some(_) => Err(Error::file(
                &path,
                SHARED_FILE_HOLDS,
                format!("{source}: no such profile"),
            )),
            None => Ok(Link::Absent(format!(
                "shared credentials file {} (no [default] profile)",
                path.display()
            ))),
        };
    };
    let key = |name: &str| {
        keys.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    match (key("aws_access_key_id"), key("aws_secret_access_key")) {
        (Some(id), Some(secret)) => Ok(Link::Found(AwsCredentials {
            access_key_id: id.to_owned(),
            secret_access_key: SecretString::from(secret),
            session_token: key("aws_session_token").map(SecretString::from),
            expires_at: None,
            source,
        })),
        _ => Err(Error::file(
            &path,
            SHARED_FILE_HOLDS,
            format!(
                "{source}: the profile has no aws_access_key_id and aws_secret_access_key \
                 (only static keys are supported)"
            ),
        )),
    }
}

/// `AWS_SHARED_CREDENTIALS_FILE` (a leading `~/` is the home directory), else
/// `~/.aws/credentials`; `None` when neither it nor a home directory is set.
fn shared_file_path(env: &Environment) -> Option<PathBuf> {
    let home = env.get(EnvVars::HOME).or_else(|| env.get("USERPROFILE"));
    match (env.get(EnvVars::AWS_SHARED_CREDENTIALS_FILE), home) {
        (Some(path), home) => Some(match (path.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => Path::new(home).join(rest),
            _ => PathBuf::from(path),
        }),
        (None, Some(home)) => Some(Path::new(home).join(".aws").join("credentials")),
        (None, None) => None,
    }
}

/// What the shared credentials file must hold.
const SHARED_FILE_HOLDS: &str =
    "a [profile] section (AWS_PROFILE, else default) with aws_access_key_id and \
     aws_secret_access_key";

/// The `key = value` pairs of the `[<profile>]` sections of an INI credentials file, keys
/// lower-cased, or `None` if there is no such section. Indented lines continue a previous
/// value (nested settings) and are skipped, as the SDKs do.
fn profile_keys(text: &str, profile: &str) -> Option<Vec<(String, String)>> {
    let mut keys = None;
    let mut in_profile = false;
    for line in text.lines() {
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let line = line.trim_end();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_profile = section.trim() == profile;
            if in_profile {
                keys.get_or_insert_with(Vec::new);
            }
        } else if let (true, Some((key, value))) = (in_profile, line.split_once('=')) {
            keys.get_or_insert_with(Vec::new)
                .push((key.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    keys
}

/// (d) ECS task roles and EKS Pod Identity: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` or
/// `AWS_CONTAINER_CREDENTIALS_FULL_URI`, authorized by `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`
/// or `AWS_CONTAINER_AUTHORIZATION_TOKEN`.
async fn container(ctx: &Ctx<'_>) -> Result<Link, Error> {
    let env = ctx.env;
    let url = if let Some(relative) = env.get(EnvVars::AWS_CONTAINER_CREDENTIALS_RELATIVE_URI) {
        let separator = if relative.starts_with('/') { "" } else { "/" };
        format!("{ECS_CREDENTIALS_HOST}{separator}{relative}")
    } else if let Some(full) = env.get(EnvVars::AWS_CONTAINER_CREDENTIALS_FULL_URI) {
        check_container_url(full)?;
        full.to_owned()
    } else {
        return Ok(Link::Absent(
            "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and \
             AWS_CONTAINER_CREDENTIALS_FULL_URI not set)"
                .to_owned(),
        ));
    };
    let token = match (
        env.get(EnvVars::AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE),
        env.get(EnvVars::AWS_CONTAINER_AUTHORIZATION_TOKEN),
    ) {
        (Some(file), _) => {
            Some(read_secret_file(Path::new(file), "container authorization token file").await?)
        }
        (None, Some(token)) => Some(SecretString::from(token)),
        (None, None) => None,
    };

    let what = "container credentials endpoint";
    let mut request = ctx.http.get(&url).timeout(METADATA_TIMEOUT);
    if let Some(token) = &token {
        request = request.header(
            AUTHORIZATION,
            secret_header(token.expose_secret(), "the container authorization token")?,
        );
    }
    let (status, body) = call(request, what, &url).await?;
    if !status.is_success() {
        let secrets: Vec<&str> = token.iter().map(|t| t.expose_secret()).collect();
        return Err(failure(what, &url, status, &body, &secrets));
    }
    let source = format!("AWS container credentials ({url})");
    credentials_from_json(&body, &url, source).map(Link::Found)
}

/// Plain-http container endpoints are only trusted on loopback and the addresses ECS and EKS
/// use, as the SDKs do: the authorization token must not go elsewhere in clear text.
fn check_container_url(url: &str) -> Result<(), Error> {
    const NAME: &str = EnvVars::AWS_CONTAINER_CREDENTIALS_FULL_URI;
    let parsed =
        Url::parse(url).map_err(|e| Error::setting(format!("{NAME} {url} is not a URL: {e}")))?;
    let host = parsed.host_str().unwrap_or_default();
    let trusted = match host.trim_start_matches('[').trim_end_matches(']').parse() {
        Ok(IpAddr::V4(ip)) => {
            ip.is_loopback() || [[169, 254, 170, 2], [169, 254, 170, 23]].contains(&ip.octets())
        }
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.segments() == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23]
        }
        Err(_) => host == "localhost",
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if trusted => Ok(()),
        _ => Err(Error::setting(format!(
            "{NAME} {url}: only https, or http to loopback or the ECS/EKS credential \
             addresses, is allowed"
        ))),
    }
}

/// (e) EC2 instance metadata, IMDSv2: a session token, the role name, then its credentials.
async fn instance_metadata(ctx: &Ctx<'_>) -> Result<Link, Error> {
    let env = ctx.env;
    if env
        .get(EnvVars::AWS_EC2_METADATA_DISABLED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Ok(Link::Absent(
            "EC2 instance metadata (disabled by AWS_EC2_METADATA_DISABLED)".to_owned(),
        ));
    }
    let base = imds_endpoint(env);
    let token = match imds_session(ctx, base).await? {
        Session::Token(token) => token,
        Session::Absent(link) => return Ok(link),
    };
    let token_header = secret_header(token.expose_secret(), "the IMDSv2 session token")?;
    let secrets = [token.expose_secret()];
    let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
    let role = imds_role(ctx, &roles_url, token_header.clone(), &secrets).await?;

    let role_url = format!("{roles_url}{role}");
    let request = ctx
        .http
        .get(&role_url)
        .header("x-aws-ec2-metadata-token", token_header)
        .timeout(METADATA_TIMEOUT);
    let (status, body) = call(request, IMDS, &role_url).await?;
    if !status.is_success() {
        return Err(failure(IMDS, &role_url, status, &body, &secrets));
    }
    let source = format!("AWS EC2 instance metadata (role {role})");
    credentials_from_json(&body, &role_url, source).map(Link::Found)
}

/// How the instance metadata link names itself in errors.
const IMDS: &str = "EC2 instance metadata";

/// The instance metadata endpoint: the one configured, else IPv4's or IPv6's default.
fn imds_endpoint(env: &Environment) -> &str {
    match env.get(EnvVars::AWS_EC2_METADATA_SERVICE_ENDPOINT) {
        Some(endpoint) => endpoint.trim_end_matches('/'),
        None if env
            .get(EnvVars::AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE)
            .is_some_and(|mode| mode.eq_ignore_ascii_case("ipv6")) =>
        {
            IMDS_IPV6_ENDPOINT
        }
        None => IMDS_DEFAULT_ENDPOINT,
    }
}

/// What the IMDSv2 session token request found.
enum Session {
    Token(SecretString),
    /// Nothing answering as instance metadata: the link does not apply.
    Absent(Link),
}

/// An IMDSv2 session token from `base`. The request doubles as the probe: off EC2 (or with
/// IMDS firewalled or answering something else) this link does not apply.
async fn imds_session(ctx: &Ctx<'_>, base: &str) -> Result<Session, Error> {
    let token_url = format!("{base}/latest/api/token");
    let request = ctx
        .http
        .put(&token_url)
        .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
        .timeout(METADATA_TIMEOUT);
    let absent = |why: String| {
        Ok(Session::Absent(Link::Absent(format!(
            "EC2 instance metadata at {base} ({why})"
        ))))
    };
    let response = match request.send().await {
        Ok(response) if response.status().is_success() => response,
        Ok(response) => {
            return absent(format!("token request answered HTTP {}", response.status()))
        }
        Err(e) if e.is_connect() || e.is_timeout() => return absent("not reachable".to_owned()),
        Err(e) => return Err(transport_error(IMDS, &token_url, &e)),
    };
    response
        .text()
        .await
        .map(|token| Session::Token(SecretString::from(token)))
        .map_err(|e| transport_error(IMDS, &token_url, &e))
}

/// The name of the instance's IAM role, the first line `roles_url` lists.
async fn imds_role(
    ctx: &Ctx<'_>,
    roles_url: &str,
    token_header: HeaderValue,
    secrets: &[&str],
) -> Result<String, Error> {
    let request = ctx
        .http
        .get(roles_url)
        .header("x-aws-ec2-metadata-token", token_header)
        .timeout(METADATA_TIMEOUT);
    let (status, body) = call(request, IMDS, roles_url).await?;
    let no_role = || {
        Error::service(format!(
            "{IMDS} {roles_url}: this instance has no IAM role (instance profile)"
        ))
    };
    if status == StatusCode::NOT_FOUND {
        return Err(no_role());
    }
    if !status.is_success() {
        return Err(failure(IMDS, roles_url, status, &body, secrets));
    }
    let roles = String::from_utf8_lossy(&body);
    roles
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_owned)
        .ok_or_else(no_role)
}

/// `{AccessKeyId, SecretAccessKey, Token, Expiration}` from the container or IMDS endpoint.
fn credentials_from_json(body: &[u8], url: &str, source: String) -> Result<AwsCredentials, Error> {
    let fail = |why: String| Error::service(format!("{source}: {url} answered {why}"));
    // Parsed as a `Value` and read field by field so no error can quote a field's value.
    let json: Value =
        serde_json::from_slice(body).map_err(|e| fail(format!("with invalid JSON: {e}")))?;
    if let Some(code) = json.get("Code").and_then(Value::as_str) {
        if code != "Success" {
            return Err(fail(format!("Code {code:?}")));
        }
    }
    let field = |name: &str| {
        json.get(name)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| fail(format!("without {name}")))
    };
    let expires_at = match json.get("Expiration").and_then(Value::as_str) {
        Some(expiration) => Some(parse_timestamp(expiration, &source)?),
        None => None,
    };
    Ok(AwsCredentials {
        access_key_id: field("AccessKeyId")?.to_owned(),
        secret_access_key: SecretString::from(field("SecretAccessKey")?),
        session_token: json
            .get("Token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(SecretString::from),
        expires_at,
        source,
    })
}

/// A signed, ready-to-send HTTP request.
struct SignedRequest {
    url: Url,
    headers: HeaderMap,
    body: &'static str,
}

/// The ECR `GetAuthorizationToken` request to `endpoint`, signed with SigV4 at `time`.
/// Pure, so the signature can be checked against an independent implementation.
fn signed_request(
    creds: &AwsCredentials,
    region: &str,
    endpoint: &Url,
    time: SystemTime,
) -> Result<SignedRequest, Error> {
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
    use aws_sigv4::sign::v4;

    let identity = aws_credential_types::Credentials::new(
        &creds.access_key_id,
        creds.secret_access_key.expose_secret(),
        creds
            .session_token
            .as_ref()
            .map(|t| t.expose_secret().to_owned()),
        None,
        "imagebump",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("ecr")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| Error::setting(format!("cannot sign the ECR request: {e}")))?
        .into();
    let unsigned = [
        (CONTENT_TYPE.as_str(), ECR_CONTENT_TYPE),
        ("x-amz-target", ECR_TARGET),
    ];
    let signable = SignableRequest::new(
        "POST",
        endpoint.as_str(),
        unsigned.into_iter(),
        SignableBody::Bytes(ECR_BODY.as_bytes()),
    )
    .and_then(|request| sign(request, &params))
    .map_err(|e| Error::setting(format!("cannot sign the ECR request to {endpoint}: {e}")))?;
    let (instructions, _signature) = signable.into_parts();
    let (signing_headers, _query_params) = instructions.into_parts();

    let mut headers = HeaderMap::new();
    // Both names and values are constants and valid, so `insert` and `from_static` can't panic.
    for (name, value) in unsigned {
        headers.insert(name, HeaderValue::from_static(value));
    }
    for header in signing_headers {
        let invalid = || {
            Error::setting(format!(
                "signed header {} is not valid in HTTP",
                header.name()
            ))
        };
        let name = HeaderName::from_bytes(header.name().as_bytes()).map_err(|_| invalid())?;
        let mut value = HeaderValue::from_str(header.value()).map_err(|_| invalid())?;
        value.set_sensitive(header.sensitive());
        headers.insert(name, value);
    }
    Ok(SignedRequest {
        url: endpoint.clone(),
        headers,
        body: ECR_BODY,
    })
}

async fn get_authorization_token(
    ctx: &Ctx<'_>,
    region: &str,
    creds: &AwsCredentials,
) -> Result<Fetched, Error> {
    let default = format!("https://api.ecr.{region}.{}/", dns_suffix(region));
    let endpoint = service_endpoint(ctx.env, "ECR", default)?;
    let signed = signed_request(creds, region, &endpoint, SystemTime::now())?;
    let what = format!("ECR GetAuthorizationToken with {}", creds.source);
    let request = ctx
        .http
        .post(signed.url)
        .headers(signed.headers)
        .body(signed.body);
    let (status, body) = call(request, &what, endpoint.as_str()).await?;
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    if !status.is_success() {
        // awsJson errors: {"__type": "<namespace>#AccessDeniedException", "message": "…"}
        let field = |name: &str| json.as_ref()?.get(name)?.as_str();
        let kind = field("__type").map(|t| t.rsplit('#').next().unwrap_or(t));
        let message = field("message").or_else(|| field("Message"));
        let detail = match (kind, message) {
            (Some(kind), Some(message)) => format!("{kind}: {message}"),
            (Some(kind), None) => kind.to_owned(),
            _ => String::from_utf8_lossy(&body).into_owned(),
        };
        let detail = excerpt(&detail, &creds.secrets());
        return Err(Error::service(http_error(
            &what,
            endpoint.as_str(),
            status,
            &detail,
        )));
    }

    let malformed =
        |problem: &str| Error::service(format!("{what}: {endpoint} answered {problem}"));
    let data = json
        .as_ref()
        .and_then(|json| json.get("authorizationData")?.get(0))
        .ok_or_else(|| malformed("without authorizationData"))?;
    let token = data
        .get("authorizationToken")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("without an authorizationToken"))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| malformed("with an authorizationToken that is not base64 text"))?;
    let credential = decoded
        .split_once(':')
        .filter(|(user, _)| !user.is_empty())
        .map(|(user, password)| Credential::new(user, password))
        .ok_or_else(|| malformed("with an authorizationToken that is not user:password"))?;
    let token_expiry = data
        .get("expiresAt")
        .and_then(Value::as_f64)
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .and_then(|since_epoch| UNIX_EPOCH.checked_add(since_epoch));
    // Conservatively, never trust the token beyond the credentials that obtained it.
    let expires_at = match (token_expiry, creds.expires_at) {
        (Some(token), Some(creds)) => Some(token.min(creds)),
        (token, creds) => token.or(creds),
    };
    Ok(Fetched {
        credential,
        expires_at,
        via: format!("ECR GetAuthorizationToken ({region}) with {}", creds.source),
    })
}

/// The endpoint of an AWS service: `AWS_ENDPOINT_URL_<SERVICE>`, else `AWS_ENDPOINT_URL`,
/// else `default`.
fn service_endpoint(env: &Environment, service: &str, default: String) -> Result<Url, Error> {
    let specific = format!("AWS_ENDPOINT_URL_{service}");
    let configured = [specific.as_str(), EnvVars::AWS_ENDPOINT_URL]
        .into_iter()
        .find_map(|name| Some((name, env.get(name)?)));
    match configured {
        Some((name, url)) => {
            Url::parse(url).map_err(|e| Error::setting(format!("{name} ({url}) is not a URL: {e}")))
        }
        None => Url::parse(&default)
            .map_err(|e| Error::setting(format!("bad {service} endpoint {default}: {e}"))),
    }
}

/// Sends `request` and reads the whole response.
async fn call(
    request: RequestBuilder,
    what: &str,
    url: &str,
) -> Result<(StatusCode, Vec<u8>), Error> {
    let response = request
        .send()
        .await
        .map_err(|e| transport_error(what, url, &e))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| transport_error(what, url, &e))?;
    Ok((status, body.to_vec()))
}

/// An error for a non-success answer, quoting an excerpt of its body.
fn failure(what: &str, url: &str, status: StatusCode, body: &[u8], secrets: &[&str]) -> Error {
    let detail = excerpt(&String::from_utf8_lossy(body), secrets);
    Error::service(http_error(what, url, status, &detail))
}

fn http_error(what: &str, url: &str, status: StatusCode, detail: &str) -> String {
    if detail.is_empty() {
        format!("{what}: {url} answered HTTP {status}")
    } else {
        format!("{what}: {url} answered HTTP {status}: {detail}")
    }
}

/// A transport error with its causes (reqwest's own message alone says little).
fn transport_error(what: &str, url: &str, error: &reqwest::Error) -> Error {
    // reqwest's own message repeats the URL; its causes say what happened.
    let detail = match std::error::Error::source(error) {
        _ if error.is_timeout() => "timed out".to_owned(),
        Some(cause) => imagebump_http::error_chain(cause),
        None => error.to_string(),
    };
    Error::service(format!("{what}: {url}: {detail}"))
}

/// Server text fit for an error message: secrets replaced, first paragraph only, whitespace
/// collapsed, at most [`EXCERPT_CHARS`] characters. (AWS signature errors, for one, quote the
/// canonical request, session token included.)
fn excerpt(text: &str, secrets: &[&str]) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        text = text.replace(secret, "***");
    }
    let text = imagebump_http::redact(&text);
    let paragraph = text.split("\n\n").next().unwrap_or_default();
    let mut words = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((cut, _)) = words.char_indices().nth(EXCERPT_CHARS) {
        words.truncate(cut);
        words.push('…');
    }
    words
}

/// A header value that is never printed by `Debug` (reqwest and hyper honour the flag).
fn secret_header(value: &str, what: &str) -> Result<HeaderValue, Error> {
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| Error::setting(format!("{what} is not a valid HTTP header value")))?;
    value.set_sensitive(true);
    Ok(value)
}

/// A file holding a token, trimmed.
async fn read_secret_file(path: &Path, what: &str) -> Result<SecretString, Error> {
    let fail = |message: String| Error::file(path, "a token", message);
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| fail(format!("cannot read AWS {what} {}: {e}", path.display())))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(fail(format!("AWS {what} {} is empty", path.display())));
    }
    Ok(SecretString::from(token))
}

/// An RFC 3339 timestamp such as `2026-01-02T04:04:05Z`.
fn parse_timestamp(text: &str, source: &str) -> Result<SystemTime, Error> {
    text.parse::<jiff::Timestamp>()
        .map(SystemTime::from)
        .map_err(|e| Error::service(format!("{source}: bad Expiration {text:?}: {e}")))
}

/// The content of the first `<name>…</name>` element in `xml`. Enough for the flat,
/// attribute-free elements of STS responses; not a general XML parser.
fn xml_element<'x>(xml: &'x str, name: &str) -> Option<&'x str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let (_, after) = xml.split_once(&open)?;
    let (content, _) = after.split_once(&close)?;
    Some(content)
}

/// Resolves XML's five predefined entities (`&amp;` last, so `&amp;lt;` stays `&lt;`).
/// Numeric character references are left as they are: STS doesn't use them for these fields.
fn xml_unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;
    use wiremock::matchers::{any, header, method, path};
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    const KEY_ID: &str = "AKIDEXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const SESSION: &str = "FQoGZXIvYXdzEXAMPLESESSIONTOKEN";
    const WEB_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.web-identity-token.signature";
    const TEMP_SECRET: &str = "temporary/secret+access+key";
    const TEMP_SESSION: &str = "temporary-session-token";
    const CONTAINER_TOKEN: &str = "container-authorization-token";
    const IMDS_TOKEN: &str = "imds-session-token";
    const ECR_PASSWORD: &str = "ecr-registry-password";
    const SECRETS: [&str; 9] = [
        SECRET,
        SESSION,
        WEB_TOKEN,
        TEMP_SECRET,
        TEMP_SESSION,
        CONTAINER_TOKEN,
        IMDS_TOKEN,
        ECR_PASSWORD,
        "ZWNyLXJlZ2lzdHJ5LXBhc3N3b3Jk", // base64 of the ECR password
    ];

    const HOST: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
    const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/ci";
    /// 2026-01-02T15:04:05.25Z, as ECR sends it.
    const ECR_EXPIRES_AT: f64 = 1_767_366_245.25;
    const TEMP_EXPIRATION: &str = "2026-01-02T04:04:05Z";

    fn assert_no_secret(text: &str) {
        for secret in SECRETS {
            assert!(!text.contains(secret), "leaks a secret: {text}");
        }
    }

    fn ecr_expiry() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_767_366_245_250)
    }

    fn timestamp(text: &str) -> SystemTime {
        text.parse::<jiff::Timestamp>().unwrap().into()
    }

    async fn fetch_for(
        host: &str,
        region: Option<&str>,
        env: &[(&str, &str)],
    ) -> Result<Fetched, String> {
        let env = Environment::from_pairs(env.iter().copied());
        let http = reqwest::Client::new();
        let endpoint = format!("https://{host}");
        let ctx = Ctx {
            http: &http,
            env: &env,
            host,
            endpoint: &endpoint,
        };
        fetch(&ctx, region).await.map_err(|e| e.to_string())
    }

    async fn fetch_with(env: &[(&str, &str)]) -> Result<Fetched, String> {
        fetch_for(HOST, None, env).await
    }

    /// An ECR endpoint that answers one well-formed GetAuthorizationToken call.
    async fn ecr_server() -> MockServer {
        let server = MockServer::start().await;
        let token = STANDARD.encode(format!("AWS:{ECR_PASSWORD}"));
        let answer = json!({"authorizationData": [{
            "authorizationToken": token,
            "expiresAt": ECR_EXPIRES_AT,
            "proxyEndpoint": format!("https://{HOST}"),
        }]});
        Mock::given(method("POST"))
            .and(path("/"))
            .and(header("x-amz-target", ECR_TARGET))
            .and(header("content-type", ECR_CONTENT_TYPE))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .expect(1)
            .mount(&server)
            .await;
        server
    }

    /// A server that must not be asked anything.
    async fn untouchable_server() -> MockServer {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(500))
            .expect(0)
            .mount(&server)
            .await;
        server
    }

    async fn requests(server: &MockServer) -> Vec<Request> {
        server.received_requests().await.unwrap()
    }

    async fn only_request(server: &MockServer) -> Request {
        let mut received = requests(server).await;
        assert_eq!(received.len(), 1);
        received.remove(0)
    }

    fn header_of<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
        request.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Checks the GetAuthorizationToken request ECR received was signed with `key_id`.
    fn assert_signed(request: &Request, key_id: &str, session_token: Option<&str>) {
        assert_eq!(header_of(request, "x-amz-target"), Some(ECR_TARGET));
        assert_eq!(header_of(request, "content-type"), Some(ECR_CONTENT_TYPE));
        assert_eq!(request.body, b"{}");
        let date = &header_of(request, "x-amz-date").unwrap()[..8];
        let authorization = header_of(request, "authorization").unwrap();
        let scope =
            format!("AWS4-HMAC-SHA256 Credential={key_id}/{date}/eu-west-1/ecr/aws4_request, ");
        assert!(authorization.starts_with(&scope), "{authorization}");
        assert_eq!(header_of(request, "x-amz-security-token"), session_token);
    }

    fn temp_file(dir: &tempfile::TempDir, name: &str, contents: &str) -> String {
        let file = dir.path().join(name);
        std::fs::write(&file, contents).unwrap();
        file.to_str().unwrap().to_owned()
    }

    fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
        let mut url = Url::parse("http://form.invalid/").unwrap();
        url.set_query(Some(std::str::from_utf8(body).unwrap()));
        url.query_pairs().into_owned().collect()
    }

    /// A loopback URL nothing listens on.
    fn closed_port_url() -> String {
        format!(
            "http://127.0.0.1:{}",
            super::super::test_support::closed_port()
        )
    }

    // --- SigV4 known answers -------------------------------------------------------------

    /// The expected `Authorization` values come from botocore 1.44.5, an independent SigV4
    /// implementation (`python3 -m venv /tmp/botovenv && /tmp/botovenv/bin/pip install
    /// botocore`, then run this with /tmp/botovenv/bin/python):
    ///
    /// ```python
    /// import datetime
    /// from unittest import mock
    /// from botocore.auth import SigV4Auth
    /// from botocore.awsrequest import AWSRequest
    /// from botocore.credentials import Credentials
    ///
    /// def sign(token):
    ///     req = AWSRequest(
    ///         method="POST",
    ///         url="https://api.ecr.eu-west-1.amazonaws.com/",
    ///         headers={
    ///             "Content-Type": "application/x-amz-json-1.1",
    ///             "X-Amz-Target": "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken",
    ///         },
    ///         data=b"{}",
    ///     )
    ///     creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    ///     frozen = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    ///     with mock.patch("botocore.auth.get_current_datetime", return_value=frozen):
    ///         SigV4Auth(creds, "ecr", "eu-west-1").add_auth(req)
    ///     for name in ("X-Amz-Date", "X-Amz-Security-Token", "Authorization"):
    ///         print(name, "=", req.headers.get(name))
    ///
    /// sign(None)
    /// sign("FQoGZXIvYXdzEXAMPLESESSIONTOKEN")
    /// ```
    fn known_answer(session_token: Option<&str>) -> HeaderMap {
        let creds = AwsCredentials {
            access_key_id: KEY_ID.to_owned(),
            secret_access_key: SecretString::from(SECRET),
            session_token: session_token.map(SecretString::from),
            expires_at: None,
            source: "test".to_owned(),
        };
        let endpoint = Url::parse("https://api.ecr.eu-west-1.amazonaws.com/").unwrap();
        let time = timestamp("2026-01-02T03:04:05Z");
        let signed = signed_request(&creds, "eu-west-1", &endpoint, time).unwrap();
        assert_eq!(signed.url, endpoint);
        assert_eq!(signed.body, "{}");
        signed.headers
    }

    fn signed_headers_list(headers: &HeaderMap) -> &str {
        let authorization = headers[AUTHORIZATION].to_str().unwrap();
        let (_, rest) = authorization.split_once("SignedHeaders=").unwrap();
        rest.split(',').next().unwrap()
    }

    #[test]
    fn signature_matches_botocore() {
        let headers = known_answer(None);
        assert_eq!(
            headers[AUTHORIZATION],
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/eu-west-1/ecr/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-target, \
             Signature=410b4a629d28fc8103515157591eaf7a694230d1230ed4251f6af21b87f129dc"
        );
        assert_eq!(
            signed_headers_list(&headers),
            "content-type;host;x-amz-date;x-amz-target"
        );
        assert_eq!(headers["x-amz-date"], "20260102T030405Z");
        assert_eq!(headers[CONTENT_TYPE], ECR_CONTENT_TYPE);
        assert_eq!(headers["x-amz-target"], ECR_TARGET);
        assert!(!headers.contains_key("x-amz-security-token"));
        assert_eq!(headers.len(), 4);
    }

    #[test]
    fn signature_with_session_token_matches_botocore() {
        let headers = known_answer(Some(SESSION));
        assert_eq!(
            headers[AUTHORIZATION],
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/eu-west-1/ecr/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, \
             Signature=5aeb58c1e806d6d9a3453547f1a926b505cd96b774cfc7cfc0bdeaaa68d789ad"
        );
        assert_eq!(
            signed_headers_list(&headers),
            "content-type;host;x-amz-date;x-amz-security-token;x-amz-target"
        );
        assert_eq!(headers["x-amz-date"], "20260102T030405Z");
        assert_eq!(headers["x-amz-security-token"], SESSION);
        assert!(headers["x-amz-security-token"].is_sensitive());
        assert_eq!(headers.len(), 5);
    }

    // --- Hosts and regions ---------------------------------------------------------------

    #[test]
    fn regions_of_registry_hosts() {
        let cases = [
            (
                "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
                Some("eu-west-1"),
            ),
            (
                "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
                Some("cn-north-1"),
            ),
            (
                "123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com",
                Some("us-gov-west-1"),
            ),
            (
                "123456789012.dkr-ecr.ap-southeast-2.on.aws",
                Some("ap-southeast-2"),
            ),
            (
                "123456789012.dkr-ecr-fips.us-east-1.on.aws",
                Some("us-east-1"),
            ),
            (
                "123456789012.dkr-ecr.cn-northwest-1.on.amazonwebservices.com.cn",
                Some("cn-northwest-1"),
            ),
            (
                "123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov",
                Some("us-iso-east-1"),
            ),
            (
                "123456789012.DKR.ECR.EU-WEST-1.AMAZONAWS.COM",
                Some("eu-west-1"),
            ),
            ("public.ecr.aws", None),
            ("ghcr.io", None),
            ("12345678901.dkr.ecr.eu-west-1.amazonaws.com", None),
            ("1234567890123.dkr.ecr.eu-west-1.amazonaws.com", None),
            ("12345678901a.dkr.ecr.eu-west-1.amazonaws.com", None),
            (
                "123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example",
                None,
            ),
            ("123456789012.dkr.ecr.eu-west-1.example.com", None),
            ("123456789012.dkr.ecr..amazonaws.com", None),
            ("123456789012.dkr.ecrx.eu-west-1.amazonaws.com", None),
            ("123456789012.dkr.ecr.eu-west-1.amazonaws.com:443", None),
        ];
        for (host, region) in cases {
            assert_eq!(region_of(host).as_deref(), region, "{host}");
            assert_eq!(is_ecr_host(host), region.is_some(), "{host}");
        }
    }

    #[test]
    fn partition_endpoints() {
        assert_eq!(dns_suffix("eu-west-1"), "amazonaws.com");
        assert_eq!(dns_suffix("us-gov-west-1"), "amazonaws.com");
        assert_eq!(dns_suffix("cn-north-1"), "amazonaws.com.cn");
        assert_eq!(dns_suffix("us-isob-east-1"), "sc2s.sgov.gov");
    }

    #[tokio::test]
    async fn region_must_be_known_and_well_formed() {
        let err = fetch_for("registry.example.com", None, &[])
            .await
            .unwrap_err();
        assert!(err.contains("`credentials: ecr:<region>`"), "{err}");
        assert!(err.contains("registry.example.com"), "{err}");

        let err = fetch_for(HOST, Some("eu-west-1.evil.example/"), &[])
            .await
            .unwrap_err();
        assert!(err.contains("is not an AWS region name"), "{err}");

        let env = Environment::from_pairs([("AWS_DEFAULT_REGION", "us-east-2")]);
        let http = reqwest::Client::new();
        let ctx = Ctx {
            http: &http,
            env: &env,
            host: "registry.example.com",
            endpoint: "https://registry.example.com",
        };
        assert_eq!(resolve_region(&ctx, None).unwrap(), "us-east-2");
        assert_eq!(
            resolve_region(&ctx, Some("eu-central-1")).unwrap(),
            "eu-central-1"
        );
        let ctx = Ctx { host: HOST, ..ctx };
        assert_eq!(resolve_region(&ctx, None).unwrap(), "eu-west-1");
    }

    // --- The chain -----------------------------------------------------------------------

    #[tokio::test]
    async fn environment_keys() {
        let ecr = ecr_server().await;
        let fetched = fetch_with(&[
            ("AWS_ACCESS_KEY_ID", KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
            ("AWS_SESSION_TOKEN", SESSION),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
        ])
        .await
        .unwrap();

        assert_eq!(fetched.credential.username, "AWS");
        assert_eq!(fetched.credential.password.expose_secret(), ECR_PASSWORD);
        assert_eq!(fetched.expires_at, Some(ecr_expiry()));
        assert_eq!(
            fetched.via,
            "ECR GetAuthorizationToken (eu-west-1) with AWS environment variables (AWS_ACCESS_KEY_ID)"
        );
        assert_signed(&only_request(&ecr).await, KEY_ID, Some(SESSION));
    }

    #[tokio::test]
    async fn environment_keys_without_session_token_and_generic_endpoint() {
        let ecr = ecr_server().await;
        let fetched = fetch_for(
            "registry.example.com",
            Some("eu-west-1"),
            &[
                ("AWS_ACCESS_KEY_ID", KEY_ID),
                ("AWS_SECRET_ACCESS_KEY", SECRET),
                ("AWS_ENDPOINT_URL", &ecr.uri()),
            ],
        )
        .await
        .unwrap();
        assert_eq!(fetched.credential.password.expose_secret(), ECR_PASSWORD);
        assert_signed(&only_request(&ecr).await, KEY_ID, None);
    }

    #[tokio::test]
    async fn half_configured_environment_keys_are_an_error() {
        let err = fetch_with(&[("AWS_ACCESS_KEY_ID", KEY_ID)])
            .await
            .unwrap_err();
        assert!(err.contains("AWS_SECRET_ACCESS_KEY is not"), "{err}");
    }

    fn sts_answer() -> String {
        format!(
            r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>repo:example/app:ref:refs/heads/main</SubjectFromWebIdentityToken>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/ci/imagebump</Arn>
      <AssumedRoleId>AROAEXAMPLE:imagebump</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>ASIAWEBIDENTITY</AccessKeyId>
      <SecretAccessKey>{TEMP_SECRET}</SecretAccessKey>
      <SessionToken>{TEMP_SESSION}</SessionToken>
      <Expiration>{TEMP_EXPIRATION}</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>b6c7d1e2-0000-4000-8000-000000000000</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#
        )
    }

    #[tokio::test]
    async fn web_identity() {
        let sts = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/"))
            .respond_with(ResponseTemplate::new(200).set_body_string(sts_answer()))
            .expect(1)
            .mount(&sts)
            .await;
        let ecr = ecr_server().await;
        let dir = tempfile::tempdir().unwrap();
        let token_file = temp_file(&dir, "token", &format!("{WEB_TOKEN}\n"));

        let fetched = fetch_with(&[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file),
            ("AWS_ROLE_ARN", ROLE_ARN),
            ("AWS_ENDPOINT_URL_STS", &sts.uri()),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
        ])
        .await
        .unwrap();

        let request = only_request(&sts).await;
        assert_eq!(
            header_of(&request, "content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(header_of(&request, "authorization"), None);
        let expected = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", ROLE_ARN),
            ("RoleSessionName", "imagebump"),
            ("WebIdentityToken", WEB_TOKEN),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        assert_eq!(form_pairs(&request.body), expected);

        assert_signed(
            &only_request(&ecr).await,
            "ASIAWEBIDENTITY",
            Some(TEMP_SESSION),
        );
        assert_eq!(fetched.credential.password.expose_secret(), ECR_PASSWORD);
        // The temporary credentials expire before the ECR token does.
        assert_eq!(fetched.expires_at, Some(timestamp(TEMP_EXPIRATION)));
        assert_eq!(
            fetched.via,
            format!(
                "ECR GetAuthorizationToken (eu-west-1) with AWS web identity (role {ROLE_ARN})"
            )
        );
    }

    #[tokio::test]
    async fn rejected_web_identity_is_an_error_not_a_fallthrough() {
        let sts = MockServer::start().await;
        let refusal = format!(
            "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
             <Error><Type>Sender</Type><Code>AccessDenied</Code>\
             <Message>Not authorized to perform sts:AssumeRoleWithWebIdentity with {WEB_TOKEN}</Message>\
             </Error><RequestId>1</RequestId></ErrorResponse>"
        );
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(403).set_body_string(refusal))
            .expect(1)
            .mount(&sts)
            .await;
        let elsewhere = untouchable_server().await;
        let dir = tempfile::tempdir().unwrap();
        let token_file = temp_file(&dir, "token", WEB_TOKEN);
        let container_url = format!("{}/creds", elsewhere.uri());

        let err = fetch_with(&[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", &token_file),
            ("AWS_ROLE_ARN", ROLE_ARN),
            ("AWS_ENDPOINT_URL_STS", &sts.uri()),
            ("AWS_ENDPOINT_URL_ECR", &elsewhere.uri()),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &container_url),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &elsewhere.uri()),
        ])
        .await
        .unwrap_err();

        assert!(
            err.contains(&format!("AWS web identity (role {ROLE_ARN})")),
            "{err}"
        );
        assert!(err.contains("STS AssumeRoleWithWebIdentity"), "{err}");
        assert!(err.contains(&sts.uri()), "{err}");
        assert!(err.contains("HTTP 403"), "{err}");
        assert!(
            err.contains(
                "AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity with ***"
            ),
            "{err}"
        );
        assert_no_secret(&err);
    }

    #[tokio::test]
    async fn unreadable_web_identity_token_file_is_an_error() {
        let err = fetch_with(&[
            (
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "/nonexistent/imagebump/token",
            ),
            ("AWS_ROLE_ARN", ROLE_ARN),
        ])
        .await
        .unwrap_err();
        assert!(
            err.contains("web identity token file /nonexistent/imagebump/token"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn shared_credentials_file() {
        let ecr = ecr_server().await;
        let dir = tempfile::tempdir().unwrap();
        let file = temp_file(
            &dir,
            "credentials",
            &format!(
                "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\n\
                 aws_secret_access_key = default-secret\n\n\
                 [ci]\nAWS_ACCESS_KEY_ID={KEY_ID}\naws_secret_access_key = {SECRET}\n\
                 aws_session_token = {SESSION}\ns3 =\n  max_concurrent_requests = 2\n"
            ),
        );
        let fetched = fetch_with(&[
            ("AWS_SHARED_CREDENTIALS_FILE", file.as_str()),
            ("AWS_PROFILE", "ci"),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
        ])
        .await
        .unwrap();
        assert_signed(&only_request(&ecr).await, KEY_ID, Some(SESSION));
        assert!(
            fetched.via.ends_with(&format!("({file}, profile ci)")),
            "{}",
            fetched.via
        );

        let err = fetch_with(&[
            ("AWS_SHARED_CREDENTIALS_FILE", file.as_str()),
            ("AWS_PROFILE", "missing"),
        ])
        .await
        .unwrap_err();
        assert!(err.contains("profile missing): no such profile"), "{err}");
        assert_no_secret(&err);
    }

    #[test]
    fn profile_sections() {
        let text = "[default]\na = 1\n[other]\na = 2\n[default]\nb = x=y\n  nested = 3\n; c = 4\n";
        let pairs = |list: &[(&str, &str)]| {
            list.iter()
                .map(|&(k, v)| (k.to_owned(), v.to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            profile_keys(text, "default"),
            Some(pairs(&[("a", "1"), ("b", "x=y")]))
        );
        assert_eq!(profile_keys(text, "other"), Some(pairs(&[("a", "2")])));
        assert_eq!(profile_keys("[empty]\n", "empty"), Some(vec![]));
        assert_eq!(profile_keys(text, "none"), None);
    }

    #[tokio::test]
    async fn container_credentials_with_token_file() {
        let container = MockServer::start().await;
        let answer = json!({
            "AccessKeyId": "ASIACONTAINER",
            "SecretAccessKey": TEMP_SECRET,
            "Token": TEMP_SESSION,
            "Expiration": TEMP_EXPIRATION,
        });
        Mock::given(method("GET"))
            .and(path("/v1/credentials"))
            .and(header("authorization", CONTAINER_TOKEN))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .expect(1)
            .mount(&container)
            .await;
        let ecr = ecr_server().await;
        let dir = tempfile::tempdir().unwrap();
        let token_file = temp_file(&dir, "token", &format!("{CONTAINER_TOKEN}\n"));
        let url = format!("{}/v1/credentials", container.uri());

        let fetched = fetch_with(&[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.as_str()),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", &token_file),
            // The file wins over the variable.
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "not-this-one"),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
        ])
        .await
        .unwrap();

        assert_signed(
            &only_request(&ecr).await,
            "ASIACONTAINER",
            Some(TEMP_SESSION),
        );
        assert_eq!(fetched.expires_at, Some(timestamp(TEMP_EXPIRATION)));
        assert_eq!(
            fetched.via,
            format!("ECR GetAuthorizationToken (eu-west-1) with AWS container credentials ({url})")
        );
    }

    #[tokio::test]
    async fn container_endpoint_failure_is_an_error() {
        let container = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(401).set_body_string(format!(
                "{{\"code\":\"AccessDenied\",\"message\":\"bad token {CONTAINER_TOKEN}\"}}"
            )))
            .mount(&container)
            .await;
        let url = format!("{}/v1/credentials", container.uri());
        let err = fetch_with(&[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.as_str()),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN", CONTAINER_TOKEN),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ])
        .await
        .unwrap_err();
        assert!(err.contains(&url), "{err}");
        assert!(err.contains("HTTP 401"), "{err}");
        assert!(err.contains("bad token ***"), "{err}");
        assert_no_secret(&err);
    }

    #[test]
    fn container_urls_in_clear_text_only_to_trusted_hosts() {
        for url in [
            "https://creds.example.com/v1",
            "http://127.0.0.1:8080/creds",
            "http://localhost/creds",
            "http://[::1]:9/creds",
            "http://169.254.170.2/v2/credentials/x",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
        ] {
            assert_eq!(check_container_url(url), Ok(()), "{url}");
        }
        for url in [
            "http://creds.example.com/v1",
            "http://169.254.169.254/",
            "ftp://127.0.0.1/",
            "nonsense",
        ] {
            assert!(check_container_url(url).is_err(), "{url}");
        }
    }

    #[tokio::test]
    async fn instance_metadata_v2() {
        let imds = MockServer::start().await;
        let roles = "/latest/meta-data/iam/security-credentials/";
        Mock::given(method("PUT"))
            .and(path("/latest/api/token"))
            .and(header("x-aws-ec2-metadata-token-ttl-seconds", "21600"))
            .respond_with(ResponseTemplate::new(200).set_body_string(IMDS_TOKEN))
            .expect(1)
            .mount(&imds)
            .await;
        Mock::given(method("GET"))
            .and(path(roles))
            .and(header("x-aws-ec2-metadata-token", IMDS_TOKEN))
            .respond_with(ResponseTemplate::new(200).set_body_string("ec2-role\n"))
            .expect(1)
            .mount(&imds)
            .await;
        let answer = json!({
            "Code": "Success",
            "LastUpdated": "2026-01-02T03:00:00Z",
            "Type": "AWS-HMAC",
            "AccessKeyId": "ASIAIMDS",
            "SecretAccessKey": TEMP_SECRET,
            "Token": TEMP_SESSION,
            "Expiration": TEMP_EXPIRATION,
        });
        Mock::given(method("GET"))
            .and(path(format!("{roles}ec2-role")))
            .and(header("x-aws-ec2-metadata-token", IMDS_TOKEN))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .expect(1)
            .mount(&imds)
            .await;
        let ecr = ecr_server().await;

        let fetched = fetch_with(&[
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.uri()),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
        ])
        .await
        .unwrap();

        let order: Vec<_> = requests(&imds)
            .await
            .iter()
            .map(|r| format!("{} {}", r.method, r.url.path()))
            .collect();
        assert_eq!(
            order,
            [
                "PUT /latest/api/token".to_owned(),
                format!("GET {roles}"),
                format!("GET {roles}ec2-role"),
            ]
        );
        assert_signed(&only_request(&ecr).await, "ASIAIMDS", Some(TEMP_SESSION));
        assert_eq!(
            fetched.via,
            "ECR GetAuthorizationToken (eu-west-1) with AWS EC2 instance metadata (role ec2-role)"
        );
    }

    #[tokio::test]
    async fn instance_without_role_is_an_error() {
        let imds = MockServer::start().await;
        Mock::given(method("PUT"))
            .respond_with(ResponseTemplate::new(200).set_body_string(IMDS_TOKEN))
            .mount(&imds)
            .await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(404))
            .mount(&imds)
            .await;
        let err = fetch_with(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.uri())])
            .await
            .unwrap_err();
        assert!(err.contains("has no IAM role"), "{err}");
        assert_no_secret(&err);
    }

    #[tokio::test]
    async fn metadata_refusing_a_token_is_absent() {
        let imds = MockServer::start().await;
        Mock::given(method("PUT"))
            .respond_with(ResponseTemplate::new(403))
            .expect(1)
            .mount(&imds)
            .await;
        let err = fetch_with(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.uri())])
            .await
            .unwrap_err();
        let expected = format!(
            "; EC2 instance metadata at {} (token request answered HTTP 403 Forbidden)",
            imds.uri()
        );
        assert!(
            err.starts_with("no AWS credentials found for ECR; tried "),
            "{err}"
        );
        assert!(err.ends_with(&expected), "{err}");
    }

    #[tokio::test]
    async fn metadata_disabled() {
        let imds = untouchable_server().await;
        let err = fetch_with(&[
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.uri()),
        ])
        .await
        .unwrap_err();
        assert!(err.contains("no AWS credentials found"), "{err}");
        assert!(
            err.contains("EC2 instance metadata (disabled by AWS_EC2_METADATA_DISABLED)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn nothing_configured_lists_what_was_tried() {
        let imds = closed_port_url();
        let err = fetch_with(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.as_str())])
            .await
            .unwrap_err();
        for tried in [
            "no AWS credentials found for ECR; tried ",
            "environment variables (AWS_ACCESS_KEY_ID not set)",
            "web identity (AWS_WEB_IDENTITY_TOKEN_FILE not set)",
            "shared credentials file (neither AWS_SHARED_CREDENTIALS_FILE nor HOME set)",
            "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and \
             AWS_CONTAINER_CREDENTIALS_FULL_URI not set)",
            &format!("EC2 instance metadata at {imds} (not reachable)"),
        ] {
            assert!(err.contains(tried), "{err}\nlacks: {tried}");
        }

        let home = tempfile::tempdir().unwrap();
        let err = fetch_with(&[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ])
        .await
        .unwrap_err();
        let expected = format!(
            "shared credentials file {} (not found)",
            home.path().join(".aws/credentials").display()
        );
        assert!(err.contains(&expected), "{err}");
    }

    // --- ECR errors ----------------------------------------------------------------------

    async fn failing_ecr(status: u16, answer: Value) -> String {
        let ecr = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_json(answer))
            .expect(1)
            .mount(&ecr)
            .await;
        let err = fetch_with(&[
            ("AWS_ACCESS_KEY_ID", KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", SECRET),
            ("AWS_SESSION_TOKEN", SESSION),
            ("AWS_ENDPOINT_URL_ECR", &ecr.uri()),
        ])
        .await
        .unwrap_err();
        assert!(err.contains("ECR GetAuthorizationToken"), "{err}");
        assert!(err.contains(&ecr.uri()), "{err}");
        assert_no_secret(&err);
        err
    }

    #[tokio::test]
    async fn ecr_access_denied() {
        let message = "User: arn:aws:sts::123456789012:assumed-role/ci/imagebump is not \
                       authorized to perform: ecr:GetAuthorizationToken on resource: *";
        let err = failing_ecr(
            400,
            json!({"__type": "com.amazonaws.ecr#AccessDeniedException", "message": message}),
        )
        .await;
        assert!(err.contains("HTTP 400"), "{err}");
        assert!(
            err.contains(&format!("AccessDeniedException: {message}")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn ecr_errors_quoting_secrets_are_scrubbed() {
        let message = format!(
            "The security token {SESSION} included in the request is invalid.\n\n\
             The Canonical String for this request should have been\n'POST\n/\n\n\
             x-amz-security-token:{SESSION}\n'"
        );
        let err = failing_ecr(
            403,
            json!({"__type": "UnrecognizedClientException", "message": message}),
        )
        .await;
        assert!(
            err.ends_with(
                "HTTP 403 Forbidden: UnrecognizedClientException: \
                 The security token *** included in the request is invalid."
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn ecr_answer_without_token() {
        let err = failing_ecr(200, json!({"authorizationData": []})).await;
        assert!(err.contains("without authorizationData"), "{err}");
    }

    // --- Helpers -------------------------------------------------------------------------

    #[test]
    fn excerpts() {
        assert_eq!(excerpt("a  b\n c\n\nd", &[]), "a b c");
        assert_eq!(excerpt("key s3cr3t!", &["s3cr3t", ""]), "key ***!");
        let long = "é".repeat(EXCERPT_CHARS + 10);
        assert_eq!(excerpt(&long, &[]).chars().count(), EXCERPT_CHARS + 1);
    }

    #[test]
    fn xml() {
        let xml =
            "<a><Code>X</Code><Message>a &lt;b&gt; &amp;lt; &quot;&apos; &bogus; &</Message></a>";
        assert_eq!(xml_element(xml, "Code"), Some("X"));
        assert_eq!(xml_element(xml, "Missing"), None);
        assert_eq!(
            xml_unescape(xml_element(xml, "Message").unwrap()),
            "a <b> &lt; \"' &bogus; &"
        );
    }
}
