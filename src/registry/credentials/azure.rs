//! Azure Container Registry (the `acr` source).
//!
//! ACR does not take Entra ID (Azure AD) tokens as passwords. Like `az acr login`, we get an
//! Entra ID access token for Azure Resource Manager and exchange it at the registry's
//! `/oauth2/exchange` for an ACR refresh token, the password of the all-zero user name.
//!
//! The Entra ID token comes from the first of these that is configured:
//! 1. workload identity: `AZURE_FEDERATED_TOKEN_FILE` holds a federated token (a JWT from
//!    Kubernetes or another OIDC issuer trusted by the app registration), sent as a client
//!    assertion for `AZURE_CLIENT_ID` in `AZURE_TENANT_ID`. AKS's workload identity webhook
//!    sets all three; elsewhere set them yourself;
//! 2. a service principal's secret: `AZURE_CLIENT_SECRET`, with the same two variables;
//! 3. a managed identity, from the instance metadata service (IMDS) of Azure VMs and scale
//!    sets; `AZURE_CLIENT_ID`, if set, picks a user-assigned identity.
//!    `IMAGEBUMP_AZURE_IMDS_ENDPOINT` replaces IMDS's base URL (`http://169.254.169.254`),
//!    for tests and proxies. The App Service and Container Apps flavour of managed identity
//!    (`IDENTITY_ENDPOINT`, `IDENTITY_HEADER`) is not supported.
//!
//! `AZURE_AUTHORITY_HOST` overrides the Entra ID endpoint; by default it and the Resource
//! Manager audience follow the registry's cloud (`azurecr.io`, `.cn`, `.us`).

use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use super::{Credential, Ctx, Environment, Error, Fetched};
use imagebump_model::env::EnvVars;

const TENANT_VAR: &str = EnvVars::AZURE_TENANT_ID;
const CLIENT_ID_VAR: &str = EnvVars::AZURE_CLIENT_ID;
const CLIENT_SECRET_VAR: &str = EnvVars::AZURE_CLIENT_SECRET;
const FEDERATED_TOKEN_FILE_VAR: &str = EnvVars::AZURE_FEDERATED_TOKEN_FILE;
const AUTHORITY_HOST_VAR: &str = EnvVars::AZURE_AUTHORITY_HOST;
const IMDS_ENDPOINT_VAR: &str = EnvVars::IMAGEBUMP_AZURE_IMDS_ENDPOINT;

const DEFAULT_IMDS_ENDPOINT: &str = "http://169.254.169.254";
/// Short, so that a machine outside Azure fails fast instead of hanging.
const IMDS_TIMEOUT: Duration = Duration::from_secs(2);
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The user name ACR expects with a refresh token from `/oauth2/exchange`.
const ACR_REFRESH_TOKEN_USER: &str = "00000000-0000-0000-0000-000000000000";

/// JWT segments are unpadded base64url; tolerate padding anyway.
const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// An Azure cloud: where its Entra ID lives and the Resource Manager audience.
struct Cloud {
    registry_suffix: &'static str,
    authority: &'static str,
    resource_manager: &'static str,
}

static CLOUDS: [Cloud; 3] = [
    Cloud {
        registry_suffix: ".azurecr.io",
        authority: "https://login.microsoftonline.com/",
        resource_manager: "https://management.azure.com/",
    },
    Cloud {
        registry_suffix: ".azurecr.cn",
        authority: "https://login.chinacloudapi.cn/",
        resource_manager: "https://management.chinacloudapi.cn/",
    },
    Cloud {
        registry_suffix: ".azurecr.us",
        authority: "https://login.microsoftonline.us/",
        resource_manager: "https://management.usgovcloudapi.net/",
    },
];

fn cloud_of(host: &str) -> Option<&'static Cloud> {
    let host = host.to_ascii_lowercase();
    CLOUDS.iter().find(|cloud| {
        host.strip_suffix(cloud.registry_suffix)
            .is_some_and(|name| !name.is_empty())
    })
}

/// Whether `host` is an Azure Container Registry (`*.azurecr.io`, `*.azurecr.cn`,
/// `*.azurecr.us`).
pub fn is_acr_host(host: &str) -> bool {
    cloud_of(host).is_some()
}

/// An ACR refresh token for `ctx.host`, exchanged for an Entra ID token of the configured
/// identity.
pub async fn fetch(ctx: &Ctx<'_>) -> Result<Fetched, Error> {
    // A registry behind a custom domain is taken to be in the public cloud.
    let cloud = cloud_of(ctx.host).unwrap_or(&CLOUDS[0]);
    let identity = Identity::from_env(ctx.env)?;
    let aad = identity.token(ctx, cloud).await?;
    let refresh_token = exchange(ctx, identity.tenant(), &aad.access_token).await?;
    Ok(Fetched {
        expires_at: jwt_expiry(&refresh_token).or(aad.expires_at),
        credential: Credential::new(ACR_REFRESH_TOKEN_USER, refresh_token),
        via: format!("ACR token exchange with {identity}"),
    })
}

/// An app registration in a tenant.
struct App<'a> {
    tenant: &'a str,
    client_id: &'a str,
}

impl<'a> App<'a> {
    /// `AZURE_TENANT_ID` and `AZURE_CLIENT_ID`, which `set` (the variable that chose this
    /// way of signing in) needs.
    fn from_env(env: &'a Environment, set: &str) -> Result<App<'a>, Error> {
        let need = |name: &str| {
            env.get(name).ok_or_else(|| {
                Error::unset(
                    name,
                    format!(
                        "{set} is set but {name} is not; signing in with it needs both \
                         {TENANT_VAR} and {CLIENT_ID_VAR}"
                    ),
                )
            })
        };
        let tenant = need(TENANT_VAR)?;
        // The tenant becomes a path segment of the token URL.
        if !tenant
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        {
            return Err(Error::setting(format!(
                "{TENANT_VAR} is neither a tenant ID nor a domain name"
            )));
        }
        Ok(App {
            tenant,
            client_id: need(CLIENT_ID_VAR)?,
        })
    }
}

/// Who asks Entra ID for a token, borrowed from the environment.
enum Identity<'a> {
    Workload {
        app: App<'a>,
        token_file: &'a Path,
    },
    ServicePrincipal {
        app: App<'a>,
        secret: &'a str,
    },
    Managed {
        tenant: Option<&'a str>,
        client_id: Option<&'a str>,
    },
}

impl<'a> Identity<'a> {
    fn from_env(env: &'a Environment) -> Result<Identity<'a>, Error> {
        if let Some(file) = env.get(FEDERATED_TOKEN_FILE_VAR) {
            return Ok(Identity::Workload {
                app: App::from_env(env, FEDERATED_TOKEN_FILE_VAR)?,
                token_file: Path::new(file),
            });
        }
        if let Some(secret) = env.get(CLIENT_SECRET_VAR) {
            return Ok(Identity::ServicePrincipal {
                app: App::from_env(env, CLIENT_SECRET_VAR)?,
                secret,
            });
        }
        Ok(Identity::Managed {
            tenant: env.get(TENANT_VAR),
            client_id: env.get(CLIENT_ID_VAR),
        })
    }

    /// The tenant to name in the exchange, when known.
    fn tenant(&self) -> Option<&'a str> {
        match self {
            Identity::Workload { app, .. } | Identity::ServicePrincipal { app, .. } => {
                Some(app.tenant)
            }
            Identity::Managed { tenant, .. } => *tenant,
        }
    }

    async fn token(&self, ctx: &Ctx<'_>, cloud: &Cloud) -> Result<AadToken, Error> {
        match self {
            Identity::Workload { app, token_file } => {
                let assertion = read_federated_token(token_file).await?;
                let credential = [
                    ("client_assertion_type", JWT_BEARER),
                    ("client_assertion", &assertion),
                ];
                client_credentials(ctx, cloud, app, &credential).await
            }
            Identity::ServicePrincipal { app, secret } => {
                client_credentials(ctx, cloud, app, &[("client_secret", secret)]).await
            }
            Identity::Managed { client_id, .. } => managed_identity(ctx, cloud, *client_id).await,
        }
    }
}

impl std::fmt::Display for Identity<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Workload { app, .. } => {
                write!(f, "Azure workload identity (client {})", app.client_id)
            }
            Identity::ServicePrincipal { app, .. } => {
                write!(f, "Azure service principal (client {})", app.client_id)
            }
            Identity::Managed {
                client_id: Some(id),
                ..
            } => {
                write!(f, "Azure managed identity (client {id})")
            }
            Identity::Managed {
                client_id: None, ..
            } => f.write_str("Azure managed identity (system-assigned)"),
        }
    }
}

/// The federated token, read afresh each time: the kubelet rotates the file.
async fn read_federated_token(path: &Path) -> Result<String, Error> {
    let what = format!("{FEDERATED_TOKEN_FILE_VAR} {}", path.display());
    let fail =
        |why: String| Error::file(path, "a federated token (a JWT)", format!("{what}: {why}"));
    let token = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| fail(e.to_string()))?;
    // A JWT holds no whitespace; a hand-written file may end in a newline.
    let token = token.trim();
    if token.is_empty() {
        return Err(fail("the file is empty".into()));
    }
    Ok(token.to_owned())
}

/// An Entra ID token from the client-credentials grant, proving the client with `credential`
/// (a secret or an assertion).
async fn client_credentials(
    ctx: &Ctx<'_>,
    cloud: &Cloud,
    app: &App<'_>,
    credential: &[(&str, &str)],
) -> Result<AadToken, Error> {
    let authority = ctx.env.get(AUTHORITY_HOST_VAR).unwrap_or(cloud.authority);
    let url = format!(
        "{}/{}/oauth2/v2.0/token",
        authority.trim_end_matches('/'),
        app.tenant
    );
    let source = format!("Entra ID token endpoint {url}");
    let scope = format!("{}.default", cloud.resource_manager);
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_id", app.client_id),
        ("scope", &scope),
    ];
    form.extend_from_slice(credential);

    let response = ctx
        .http
        .post(&url)
        .form(&form)
        .send()
        .await
        .map_err(|e| Error::service(format!("{source}: {}", super::http_error(e))))?;
    read_token(response, &source).await
}

/// A managed identity's token from the instance metadata service.
async fn managed_identity(
    ctx: &Ctx<'_>,
    cloud: &Cloud,
    client_id: Option<&str>,
) -> Result<AadToken, Error> {
    let base = ctx
        .env
        .get(IMDS_ENDPOINT_VAR)
        .unwrap_or(DEFAULT_IMDS_ENDPOINT);
    let url = format!(
        "{}/metadata/identity/oauth2/token",
        base.trim_end_matches('/')
    );
    let mut query = vec![
        ("api-version", "2018-02-01"),
        ("resource", cloud.resource_manager),
    ];
    query.extend(client_id.map(|id| ("client_id", id)));

    let response = ctx
        .http
        .get(&url)
        .query(&query)
        .header("Metadata", "true")
        .timeout(IMDS_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            Error::service(format!(
                "no Azure credentials: {FEDERATED_TOKEN_FILE_VAR} and {CLIENT_SECRET_VAR} are \
                 not set, and the managed identity endpoint {url} did not answer ({}); set \
                 {TENANT_VAR} and {CLIENT_ID_VAR} with {CLIENT_SECRET_VAR} (service principal) \
                 or {FEDERATED_TOKEN_FILE_VAR} (workload identity), or run on an Azure VM \
                 with a managed identity",
                super::http_error(e)
            ))
        })?;
    read_token(response, &format!("Azure managed identity endpoint {url}")).await
}

/// Trades an Entra ID token for an ACR refresh token, as `az acr login` does.
async fn exchange(ctx: &Ctx<'_>, tenant: Option<&str>, aad_token: &str) -> Result<String, Error> {
    #[derive(Deserialize)]
    struct Exchanged {
        refresh_token: String,
    }

    let url = format!("{}/oauth2/exchange", ctx.endpoint.trim_end_matches('/'));
    let source = format!("ACR token exchange {url}");
    let mut form = vec![("grant_type", "access_token"), ("service", ctx.host)];
    form.extend(tenant.map(|tenant| ("tenant", tenant)));
    form.push(("access_token", aad_token));

    let response = ctx
        .http
        .post(&url)
        .form(&form)
        .send()
        .await
        .map_err(|e| Error::service(format!("{source}: {}", super::http_error(e))))?;
    let body = read_body(response, &source).await?;
    let exchanged: Exchanged = serde_json::from_slice(&body).map_err(|e| unexpected(&source, e))?;
    Ok(exchanged.refresh_token)
}

/// An Entra ID access token and when it expires.
// No `Debug`: it holds the token.
struct AadToken {
    access_token: String,
    expires_at: Option<SystemTime>,
}

async fn read_token(response: reqwest::Response, source: &str) -> Result<AadToken, Error> {
    #[derive(Deserialize)]
    struct TokenResponse {
        access_token: String,
        /// A number from Entra ID, a string of digits from IMDS.
        expires_in: Option<Value>,
    }

    let body = read_body(response, source).await?;
    let token: TokenResponse = serde_json::from_slice(&body).map_err(|e| unexpected(source, e))?;
    let lifetime = token
        .expires_in
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
    Ok(AadToken {
        access_token: token.access_token,
        expires_at: lifetime.and_then(|s| SystemTime::now().checked_add(Duration::from_secs(s))),
    })
}

/// The body of a successful response; otherwise an error with the status and the service's
/// own error code and description.
async fn read_body(response: reqwest::Response, source: &str) -> Result<Vec<u8>, Error> {
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
    Ok(body.to_vec())
}

/// A response of `source` that is not the JSON expected.
fn unexpected(source: &str, e: serde_json::Error) -> Error {
    Error::service(format!("{source}: unexpected response: {e}"))
}

/// The `exp` claim of a JWT, read without checking the signature: it only decides when to
/// ask again, and the registry checks the token.
fn jwt_expiry(token: &str) -> Option<SystemTime> {
    #[derive(Deserialize)]
    struct Claims {
        exp: u64,
    }

    let mut segments = token.split('.');
    let (Some(_header), Some(payload), Some(_signature), None) = (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) else {
        return None;
    };
    let claims: Claims = serde_json::from_slice(&BASE64URL.decode(payload).ok()?).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(claims.exp))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{closed_port, form_is, FormIs};
    use std::io::Write;

    use secrecy::ExposeSecret;
    use wiremock::matchers::{header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;

    const REGISTRY: &str = "myreg.azurecr.io";
    const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    const CLIENT_ID: &str = "11111111-2222-3333-4444-555555555555";
    const CLIENT_SECRET: &str = "test-client-secret";
    const FEDERATED_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.test-assertion-sig";
    const AAD_TOKEN: &str = "test-aad-access-token";
    /// The refresh token's `exp`, 2030-01-01T00:00:00Z.
    const REFRESH_EXP: u64 = 1_893_456_000;
    const ARM_SCOPE: &str = "https://management.azure.com/.default";

    fn refresh_token() -> String {
        let payload = BASE64URL.encode(format!(r#"{{"exp":{REFRESH_EXP},"tenant":"{TENANT}"}}"#));
        format!("eyJhbGciOiJSUzI1NiJ9.{payload}.test-refresh-sig")
    }

    fn assert_no_secret(error: &str) {
        for secret in [
            CLIENT_SECRET,
            FEDERATED_TOKEN,
            AAD_TOKEN,
            "test-refresh-sig",
        ] {
            assert!(!error.contains(secret), "{secret:?} leaked into {error:?}");
        }
        assert!(!error.contains('\n'), "{error:?} is not one line");
    }

    async fn run(server: &MockServer, host: &str, env: &[(&str, &str)]) -> Result<Fetched, String> {
        let http = reqwest::Client::new();
        let uri = server.uri();
        let mut env = env.to_vec();
        env.extend([
            (AUTHORITY_HOST_VAR, uri.as_str()),
            (IMDS_ENDPOINT_VAR, uri.as_str()),
        ]);
        let env = Environment::from_pairs(env);
        let ctx = Ctx {
            http: &http,
            env: &env,
            host,
            endpoint: &uri,
        };
        fetch(&ctx).await.map_err(|e| e.to_string())
    }

    async fn mount_aad_token(server: &MockServer, form: FormIs) {
        Mock::given(method("POST"))
            .and(path(format!("/{TENANT}/oauth2/v2.0/token")))
            .and(form)
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                "access_token": AAD_TOKEN,
            })))
            .expect(1)
            .mount(server)
            .await;
    }

    async fn mount_exchange(server: &MockServer, form: FormIs, refresh_token: &str) {
        Mock::given(method("POST"))
            .and(path("/oauth2/exchange"))
            .and(form)
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(serde_json::json!({ "refresh_token": refresh_token })),
            )
            .expect(1)
            .mount(server)
            .await;
    }

    fn exchange_form(tenant: Option<&str>) -> FormIs {
        let mut fields = vec![
            ("grant_type", "access_token"),
            ("service", REGISTRY),
            ("access_token", AAD_TOKEN),
        ];
        fields.extend(tenant.map(|t| ("tenant", t)));
        form_is(&fields)
    }

    #[test]
    fn recognises_acr_hosts() {
        for host in [
            "myreg.azurecr.io",
            "MyReg.AzureCR.io",
            "r.azurecr.cn",
            "r.azurecr.us",
        ] {
            assert!(is_acr_host(host), "{host}");
        }
        for host in [
            "azurecr.io",
            ".azurecr.io",
            "myreg.azurecr.io.example.com",
            "evilazurecr.io",
        ] {
            assert!(!is_acr_host(host), "{host}");
        }
    }

    #[test]
    fn reads_jwt_expiry_without_verifying() {
        assert_eq!(
            jwt_expiry(&refresh_token()),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(REFRESH_EXP))
        );
        for not_a_jwt in ["opaque", "a.b", "a.!!!.c", "a.e30.c", "a.e30.c.d"] {
            assert_eq!(jwt_expiry(not_a_jwt), None, "{not_a_jwt}");
        }
    }

    #[tokio::test]
    async fn workload_identity_sends_the_federated_token_and_exchanges() {
        let server = MockServer::start().await;
        mount_aad_token(
            &server,
            form_is(&[
                ("grant_type", "client_credentials"),
                ("client_id", CLIENT_ID),
                ("scope", ARM_SCOPE),
                (
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                ),
                ("client_assertion", FEDERATED_TOKEN),
            ]),
        )
        .await;
        let refresh = refresh_token();
        mount_exchange(&server, exchange_form(Some(TENANT)), &refresh).await;
        let mut token_file = tempfile::NamedTempFile::new().unwrap();
        // As written by hand, with a final newline.
        writeln!(token_file, "{FEDERATED_TOKEN}").unwrap();
        let token_path = token_file.path().to_str().unwrap();

        let fetched = run(
            &server,
            REGISTRY,
            &[
                (TENANT_VAR, TENANT),
                (CLIENT_ID_VAR, CLIENT_ID),
                (FEDERATED_TOKEN_FILE_VAR, token_path),
                // Workload identity wins over a secret also present.
                (CLIENT_SECRET_VAR, CLIENT_SECRET),
            ],
        )
        .await
        .unwrap();

        assert_eq!(
            fetched.credential.username,
            "00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(fetched.credential.password.expose_secret(), refresh);
        assert_eq!(
            fetched.expires_at,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(REFRESH_EXP))
        );
        assert_eq!(
            fetched.via,
            format!("ACR token exchange with Azure workload identity (client {CLIENT_ID})")
        );
    }

    #[tokio::test]
    async fn service_principal_secret_falls_back_to_the_aad_expiry() {
        let server = MockServer::start().await;
        mount_aad_token(
            &server,
            form_is(&[
                ("grant_type", "client_credentials"),
                ("client_id", CLIENT_ID),
                ("scope", ARM_SCOPE),
                ("client_secret", CLIENT_SECRET),
            ]),
        )
        .await;
        mount_exchange(&server, exchange_form(Some(TENANT)), "opaque-refresh-token").await;

        let before = SystemTime::now();
        let fetched = run(
            &server,
            REGISTRY,
            &[
                (TENANT_VAR, TENANT),
                (CLIENT_ID_VAR, CLIENT_ID),
                (CLIENT_SECRET_VAR, CLIENT_SECRET),
            ],
        )
        .await
        .unwrap();
        let after = SystemTime::now();

        assert_eq!(
            fetched.credential.password.expose_secret(),
            "opaque-refresh-token"
        );
        let expires_at = fetched.expires_at.unwrap();
        let lifetime = Duration::from_secs(3599);
        assert!(before + lifetime <= expires_at && expires_at <= after + lifetime);
        assert_eq!(
            fetched.via,
            format!("ACR token exchange with Azure service principal (client {CLIENT_ID})")
        );
    }

    async fn mount_imds(server: &MockServer, resource: &str, client_id: Option<&str>) {
        let mut mock = Mock::given(method("GET"))
            .and(path("/metadata/identity/oauth2/token"))
            .and(header("Metadata", "true"))
            .and(query_param("api-version", "2018-02-01"))
            .and(query_param("resource", resource));
        if let Some(id) = client_id {
            mock = mock.and(query_param("client_id", id));
        }
        // IMDS gives numbers as strings.
        mock.respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": AAD_TOKEN, "expires_in": "86399", "expires_on": "1700086399",
            "resource": resource, "token_type": "Bearer",
        })))
        .expect(1)
        .mount(server)
        .await;
    }

    #[tokio::test]
    async fn user_assigned_managed_identity_asks_imds() {
        let server = MockServer::start().await;
        mount_imds(&server, "https://management.azure.com/", Some(CLIENT_ID)).await;
        let refresh = refresh_token();
        mount_exchange(&server, exchange_form(None), &refresh).await;

        let fetched = run(&server, REGISTRY, &[(CLIENT_ID_VAR, CLIENT_ID)])
            .await
            .unwrap();

        assert_eq!(fetched.credential.password.expose_secret(), refresh);
        assert_eq!(
            fetched.via,
            format!("ACR token exchange with Azure managed identity (client {CLIENT_ID})")
        );
    }

    #[tokio::test]
    async fn system_assigned_managed_identity_in_azure_china() {
        let server = MockServer::start().await;
        mount_imds(&server, "https://management.chinacloudapi.cn/", None).await;
        let refresh = refresh_token();
        Mock::given(method("POST"))
            .and(path("/oauth2/exchange"))
            .and(form_is(&[
                ("grant_type", "access_token"),
                ("service", "myreg.azurecr.cn"),
                ("access_token", AAD_TOKEN),
            ]))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(serde_json::json!({ "refresh_token": refresh })),
            )
            .expect(1)
            .mount(&server)
            .await;

        let fetched = run(&server, "myreg.azurecr.cn", &[]).await.unwrap();

        assert_eq!(fetched.credential.password.expose_secret(), refresh);
        assert_eq!(
            fetched.via,
            "ACR token exchange with Azure managed identity (system-assigned)"
        );
        let requests = server.received_requests().await.unwrap();
        assert!(!requests[0]
            .url
            .query()
            .unwrap_or_default()
            .contains("client_id"));
    }

    #[tokio::test]
    async fn entra_id_error_is_reported_on_one_line() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(format!("/{TENANT}/oauth2/v2.0/token")))
            .respond_with(ResponseTemplate::new(401).set_body_json(serde_json::json!({
                "error": "invalid_client",
                "error_description": "AADSTS7000215: Invalid client secret provided.\r\n\
                    Trace ID: 0a1b\r\nCorrelation ID: 2c3d\r\nTimestamp: 2024-01-01 00:00:00Z",
                "error_codes": [7000215],
            })))
            .expect(1)
            .mount(&server)
            .await;

        let error = run(
            &server,
            REGISTRY,
            &[
                (TENANT_VAR, TENANT),
                (CLIENT_ID_VAR, CLIENT_ID),
                (CLIENT_SECRET_VAR, CLIENT_SECRET),
            ],
        )
        .await
        .unwrap_err();

        assert_eq!(
            error,
            format!(
                "Entra ID token endpoint {}/{TENANT}/oauth2/v2.0/token: HTTP 401 Unauthorized: \
                 invalid_client: AADSTS7000215: Invalid client secret provided. Trace ID: 0a1b \
                 Correlation ID: 2c3d Timestamp: 2024-01-01 00:00:00Z",
                server.uri()
            )
        );
        assert_no_secret(&error);
    }

    #[tokio::test]
    async fn registry_refusal_is_reported_without_the_aad_token() {
        let server = MockServer::start().await;
        mount_imds(&server, "https://management.azure.com/", None).await;
        Mock::given(method("POST"))
            .and(path("/oauth2/exchange"))
            .respond_with(ResponseTemplate::new(401).set_body_json(serde_json::json!({
                "errors": [{"code": "UNAUTHORIZED", "message": "identity has no AcrPull role"}],
            })))
            .expect(1)
            .mount(&server)
            .await;

        let error = run(&server, REGISTRY, &[]).await.unwrap_err();

        assert_eq!(
            error,
            format!(
                "ACR token exchange {}/oauth2/exchange: HTTP 401 Unauthorized: UNAUTHORIZED: \
                 identity has no AcrPull role",
                server.uri()
            )
        );
        assert_no_secret(&error);
    }

    #[tokio::test]
    async fn configuration_errors_name_the_variables() {
        let server = MockServer::start().await;
        let cases: [(&[(&str, &str)], &str); 3] = [
            (
                &[
                    (CLIENT_ID_VAR, CLIENT_ID),
                    (CLIENT_SECRET_VAR, CLIENT_SECRET),
                ],
                "AZURE_CLIENT_SECRET is set but AZURE_TENANT_ID is not; signing in with it \
                 needs both AZURE_TENANT_ID and AZURE_CLIENT_ID",
            ),
            (
                &[
                    (TENANT_VAR, "a/b"),
                    (CLIENT_ID_VAR, CLIENT_ID),
                    (CLIENT_SECRET_VAR, CLIENT_SECRET),
                ],
                "AZURE_TENANT_ID is neither a tenant ID nor a domain name",
            ),
            (
                &[
                    (TENANT_VAR, TENANT),
                    (CLIENT_ID_VAR, CLIENT_ID),
                    (FEDERATED_TOKEN_FILE_VAR, "/nonexistent/token"),
                ],
                "AZURE_FEDERATED_TOKEN_FILE /nonexistent/token: No such file or directory",
            ),
        ];
        for (env, expected) in cases {
            let error = run(&server, REGISTRY, env).await.unwrap_err();
            assert!(
                error.starts_with(expected),
                "{error:?} should start with {expected:?}"
            );
            assert_no_secret(&error);
        }
        assert!(server.received_requests().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn nothing_available_lists_what_was_tried() {
        let server = MockServer::start().await;
        let imds = format!("http://127.0.0.1:{}", closed_port());
        let http = reqwest::Client::new();
        let env = Environment::from_pairs([(IMDS_ENDPOINT_VAR, imds.as_str())]);
        let ctx = Ctx {
            http: &http,
            env: &env,
            host: REGISTRY,
            endpoint: &server.uri(),
        };

        let error = fetch(&ctx).await.unwrap_err();
        assert!(matches!(error, Error::Service { .. }), "{error:?}");
        let error = error.to_string();

        for needle in [
            "AZURE_FEDERATED_TOKEN_FILE and AZURE_CLIENT_SECRET are not set",
            &format!("managed identity endpoint {imds}/metadata/identity/oauth2/token"),
            "Connection refused",
            "AZURE_TENANT_ID and AZURE_CLIENT_ID with AZURE_CLIENT_SECRET",
        ] {
            assert!(error.contains(needle), "{needle:?} missing from {error:?}");
        }
        assert!(server.received_requests().await.unwrap().is_empty());
    }
}
