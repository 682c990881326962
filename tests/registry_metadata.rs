//! Image metadata through the library API (`imagebump::registry`): manifests, indexes and
//! config blobs, against a real `docker-registry` (multi-arch OCI indexes pushed by the test
//! support) and against wiremock for what the real one cannot show (Docker media types,
//! schema 1, corrupt blobs, oversized bodies, attestation entries, redirects to storage on
//! another origin behind Bearer auth).

// A test crate may panic, count, slice and read the environment: the no-panic lints of
// Cargo.toml are for the library.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::string_slice,
    clippy::disallowed_methods
)]

mod support;

use std::sync::Arc;

use imagebump::registry::client::Client;
use imagebump::registry::manifest::{ImageConfig, IndexEntry, Manifest, OciLabels};
use imagebump::registry::{Error, Registries, StatsSnapshot};
use imagebump_model::name::parse_name;
use imagebump_model::platform::Platform;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use support::{Registry, RegistryMode};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
/// The manifest and config caps in src/registry/client.rs.
const CAP: usize = 4 * 1024 * 1024;

/// `Registries` with one entry sending `prefix` to `url`, built from imagebump.yaml text so
/// that fields added to `RegistryConfig` later keep their defaults.
fn registries(prefix: &str, url: &str) -> Registries {
    let yaml = format!("registries:\n- prefix: {prefix}\n  url: {url}\n");
    let config = imagebump::config::parse(&yaml)
        .unwrap_or_else(|(line, col, msg)| panic!("config {line}:{col}: {msg}\n{yaml}"));
    support::isolate_process_env();
    Registries::new(config.registries).expect("registries")
}

fn client(registries: &Registries, image: &str) -> Arc<Client> {
    registries
        .client_for(&parse_name(image).expect("image name"))
        .expect("client")
}

fn platform(s: &str) -> Platform {
    s.parse().expect("platform")
}

fn ts(s: &str) -> jiff::Timestamp {
    s.parse().expect("timestamp")
}

fn sha256(data: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(data))
}

fn stats(manifests: usize, blobs: usize, tokens: usize) -> StatsSnapshot {
    StatsSnapshot {
        tag_list_pages: 0,
        tokens,
        manifests,
        blobs,
        retries: 0,
    }
}

// -------------------------------------------------------------------------------------------
// against the real registry
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn real_registry_multi_arch_index_children_and_configs() {
    let reg = Registry::start(RegistryMode::Plain);
    let index_digest = reg.push_index(
        "team/multi",
        "1.0",
        &[
            ("linux/amd64", "2024-01-01T00:00:00Z"),
            ("linux/arm64", "2024-02-01T00:00:00Z"),
        ],
    );
    let single_digest = reg.push_image_for(
        "team/single",
        &["2.0"],
        "linux/arm/v7",
        "2024-03-01T00:00:00Z",
    );
    assert_eq!(reg.manifest_digest("team/multi", "1.0"), index_digest);
    assert_eq!(reg.manifest_digest("team/single", "2.0"), single_digest);

    let registries = registries(&reg.host(), &reg.base_url());
    let multi = client(&registries, &format!("{}/team/multi", reg.host()));

    let (digest, index) = multi.manifest("team/multi", "1.0").await.expect("index");
    assert_eq!(digest, index_digest);
    let Manifest::Index { manifests } = index else {
        panic!("expected an index, got {index:?}");
    };
    let platforms: Vec<Option<Platform>> = manifests.iter().map(|e| e.platform.clone()).collect();
    assert_eq!(
        platforms,
        vec![Some(platform("linux/amd64")), Some(platform("linux/arm64"))]
    );
    assert_ne!(manifests[0].digest, manifests[1].digest);

    let mut seen = Vec::new();
    for (entry, created) in manifests
        .iter()
        .zip(["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"])
    {
        let (child_digest, child) = multi
            .manifest("team/multi", &entry.digest)
            .await
            .expect("child manifest");
        assert_eq!(
            child_digest, entry.digest,
            "by digest, the digest comes back"
        );
        let Manifest::Image { config_digest } = child else {
            panic!("expected an image manifest, got {child:?}");
        };
        let config = multi
            .image_config("team/multi", &config_digest)
            .await
            .expect("config");
        assert_eq!(
            config,
            ImageConfig {
                created: Some(ts(created)),
                platform: entry.platform.clone(),
                labels: OciLabels {
                    source: Some("imagebump-tests".into()),
                    ..OciLabels::default()
                },
            }
        );
        seen.push(config_digest);
    }
    assert_ne!(seen[0], seen[1], "configs differ per platform");

    let single = client(&registries, &format!("{}/team/single", reg.host()));
    let (digest, manifest) = single.manifest("team/single", "2.0").await.expect("image");
    assert_eq!(digest, single_digest);
    let Manifest::Image { config_digest } = manifest else {
        panic!("expected an image manifest, got {manifest:?}");
    };
    let config = single
        .image_config("team/single", &config_digest)
        .await
        .expect("config");
    assert_eq!(config.created, Some(ts("2024-03-01T00:00:00Z")));
    assert_eq!(config.platform, Some(platform("linux/arm/v7")));
    assert!(config
        .platform
        .as_ref()
        .is_some_and(|p| p.satisfies(&platform("linux/arm/v7"))));

    // index + 2 children + the single image; 3 configs; plain registry: no token.
    assert_eq!(registries.stats.snapshot(), stats(4, 3, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn real_registry_unknown_tag_and_blob_are_not_found() {
    let reg = Registry::start(RegistryMode::Plain);
    reg.push_tags("team/app", &["1.0"]);
    let registries = registries(&reg.host(), &reg.base_url());
    let c = client(&registries, &format!("{}/team/app", reg.host()));

    let err = c.manifest("team/app", "9.9").await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    let missing = sha256(b"nothing");
    let err = c.image_config("team/app", &missing).await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert_eq!(registries.stats.snapshot(), stats(1, 1, 0));
}

// -------------------------------------------------------------------------------------------
// wiremock helpers
// -------------------------------------------------------------------------------------------

/// The mock as `registry.test`.
fn mock_registries(server: &MockServer) -> (Registries, Arc<Client>) {
    let r = registries("registry.test", &server.uri());
    let c = client(&r, "registry.test/team/app");
    (r, c)
}

fn json_bytes(v: serde_json::Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// Serves `body` for GET `p` with `content_type`, plus `Docker-Content-Digest` if given.
async fn serve(
    server: &MockServer,
    p: &str,
    content_type: &str,
    body: Vec<u8>,
    digest: Option<&str>,
) {
    let mut t = ResponseTemplate::new(200).set_body_raw(body, content_type);
    if let Some(d) = digest {
        t = t.insert_header("Docker-Content-Digest", d);
    }
    Mock::given(method("GET"))
        .and(path(p))
        .respond_with(t)
        .mount(server)
        .await;
}

fn manifest_path(reference: &str) -> String {
    format!("/v2/team/app/manifests/{reference}")
}

fn blob_path(digest: &str) -> String {
    format!("/v2/team/app/blobs/{digest}")
}

async fn received(server: &MockServer) -> Vec<Request> {
    server
        .received_requests()
        .await
        .expect("request recording is on")
}

fn header_of<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

fn docker_config(created: &str, arch: &str) -> Vec<u8> {
    json_bytes(json!({
        "architecture": arch,
        "os": "linux",
        "created": created,
        "config": {"Labels": {"org.opencontainers.image.source": "https://github.com/acme/app"}},
        "container_config": {"Hostname": "x"},
        "docker_version": "24.0.7",
        "rootfs": {"type": "layers", "diff_ids": []}
    }))
}

/// The reason of an `Error::Invalid`, or a panic naming what came instead.
fn invalid_reason(err: &Error) -> (&str, &str) {
    match err {
        Error::Invalid { url, reason } => (url, reason),
        other => panic!("expected Error::Invalid, got {other:?}"),
    }
}

// -------------------------------------------------------------------------------------------
// wiremock: media types
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn docker_manifest_list_and_schema2_manifest() {
    let server = MockServer::start().await;
    let config = docker_config("2023-06-01T10:00:00.5Z", "arm64");
    let config_digest = sha256(&config);
    let image = json_bytes(json!({
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": {"mediaType": DOCKER_CONFIG, "size": config.len(), "digest": config_digest},
        "layers": []
    }));
    let image_digest = sha256(&image);
    let amd = sha256(b"amd64 image");
    let list = json_bytes(json!({
        "schemaVersion": 2,
        "mediaType": DOCKER_LIST,
        "manifests": [
            {"mediaType": DOCKER_MANIFEST, "size": 1, "digest": amd,
             "platform": {"architecture": "amd64", "os": "linux"}},
            {"mediaType": DOCKER_MANIFEST, "size": image.len(), "digest": image_digest,
             "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}}
        ]
    }));
    let list_digest = sha256(&list);
    serve(
        &server,
        &manifest_path("1.0"),
        DOCKER_LIST,
        list,
        Some(&list_digest),
    )
    .await;
    // No Docker-Content-Digest: the body's hash, checked against the requested digest.
    serve(
        &server,
        &manifest_path(&image_digest),
        DOCKER_MANIFEST,
        image,
        None,
    )
    .await;
    serve(
        &server,
        &blob_path(&config_digest),
        "application/octet-stream",
        config,
        None,
    )
    .await;
    let (registries, c) = mock_registries(&server);

    let (digest, manifest) = c.manifest("team/app", "1.0").await.expect("list");
    assert_eq!(digest, list_digest);
    assert_eq!(
        manifest,
        Manifest::Index {
            manifests: vec![
                IndexEntry {
                    digest: amd,
                    platform: Some(platform("linux/amd64"))
                },
                IndexEntry {
                    digest: image_digest.clone(),
                    platform: Some(platform("linux/arm64/v8"))
                },
            ]
        }
    );
    let (digest, manifest) = c.manifest("team/app", &image_digest).await.expect("image");
    assert_eq!(digest, image_digest);
    assert_eq!(
        manifest,
        Manifest::Image {
            config_digest: config_digest.clone()
        }
    );
    let config = c
        .image_config("team/app", &config_digest)
        .await
        .expect("config");
    assert_eq!(
        config,
        ImageConfig {
            created: Some(ts("2023-06-01T10:00:00.5Z")),
            platform: Some(platform("linux/arm64")),
            labels: OciLabels {
                source: Some("https://github.com/acme/app".into()),
                ..OciLabels::default()
            },
        }
    );
    assert_eq!(registries.stats.snapshot(), stats(2, 1, 0));

    let reqs = received(&server).await;
    assert_eq!(reqs.len(), 3, "one request each, no auth needed");
    for r in &reqs[..2] {
        let accept = header_of(r, "accept").unwrap_or_default();
        for t in [OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST] {
            assert!(accept.contains(t), "Accept {accept:?} lacks {t}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn attestation_entries_are_skipped() {
    let server = MockServer::start().await;
    let (a, b, att_a, att_b) = (
        sha256(b"a"),
        sha256(b"b"),
        sha256(b"att a"),
        sha256(b"att b"),
    );
    let attestation = |of: &str, d: &str| {
        json!({"mediaType": OCI_MANIFEST, "size": 1, "digest": d,
               "platform": {"architecture": "unknown", "os": "unknown"},
               "annotations": {"vnd.docker.reference.digest": of,
                               "vnd.docker.reference.type": "attestation-manifest"}})
    };
    let index = json_bytes(json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {"mediaType": OCI_MANIFEST, "size": 1, "digest": a,
             "platform": {"architecture": "amd64", "os": "linux"}},
            {"mediaType": OCI_MANIFEST, "size": 1, "digest": b,
             "platform": {"architecture": "arm", "os": "linux", "variant": "v7"}},
            attestation(&a, &att_a),
            attestation(&b, &att_b),
        ]
    }));
    serve(&server, &manifest_path("1.0"), OCI_INDEX, index, None).await;
    let (registries, c) = mock_registries(&server);

    let (_, manifest) = c.manifest("team/app", "1.0").await.expect("index");
    assert_eq!(
        manifest,
        Manifest::Index {
            manifests: vec![
                IndexEntry {
                    digest: a,
                    platform: Some(platform("linux/amd64"))
                },
                IndexEntry {
                    digest: b,
                    platform: Some(platform("linux/arm/v7"))
                },
            ]
        }
    );
    assert_eq!(registries.stats.snapshot(), stats(1, 0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn schema1_is_refused_with_a_clear_message() {
    let server = MockServer::start().await;
    let body = json_bytes(json!({
        "schemaVersion": 1,
        "name": "team/app",
        "tag": "old",
        "architecture": "amd64",
        "fsLayers": [{"blobSum": sha256(b"layer")}],
        "history": [{"v1Compatibility": "{}"}],
        "signatures": [{"header": {}, "signature": "x", "protected": "y"}]
    }));
    serve(
        &server,
        &manifest_path("old"),
        "application/vnd.docker.distribution.manifest.v1+prettyjws",
        body,
        None,
    )
    .await;
    let (_registries, c) = mock_registries(&server);

    let err = c.manifest("team/app", "old").await.unwrap_err();
    let (url, reason) = invalid_reason(&err);
    assert!(url.ends_with("/v2/team/app/manifests/old"), "{url}");
    assert!(reason.contains("team/app:old"), "{reason}");
    assert!(reason.contains("Docker schema 1"), "{reason}");
    assert!(reason.contains("push the image again"), "{reason}");
}

/// An index of 25,000 made-up platforms (within the 4 MiB manifest cap) is refused with an
/// error naming its URL, before any platform of it is compared.
#[tokio::test(flavor = "multi_thread")]
async fn an_index_of_thousands_of_platforms_is_refused() {
    let server = MockServer::start().await;
    let digest = sha256(b"child");
    let entries: Vec<serde_json::Value> = (0..25_000)
        .map(|i| json!({"digest": digest, "size": 1, "platform": {"os": "linux", "architecture": format!("a{i}")}}))
        .collect();
    let body =
        json_bytes(json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}));
    assert!(body.len() < 4 << 20, "{}", body.len());
    serve(&server, &manifest_path("1.0.0"), OCI_INDEX, body, None).await;
    let (_registries, c) = mock_registries(&server);

    let err = c.manifest("team/app", "1.0.0").await.unwrap_err();
    let (url, reason) = invalid_reason(&err);
    assert_eq!(url, format!("{}/v2/team/app/manifests/1.0.0", server.uri()));
    assert_eq!(
        reason,
        "manifest of team/app:1.0.0: index has 25000 entries, more than the 256 imagebump reads"
    );
}

// -------------------------------------------------------------------------------------------
// wiremock: integrity and size
// -------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn blob_not_matching_its_digest_is_invalid() {
    let server = MockServer::start().await;
    let good = docker_config("2024-01-01T00:00:00Z", "amd64");
    let digest = sha256(&good);
    let tampered = docker_config("2099-01-01T00:00:00Z", "amd64");
    serve(
        &server,
        &blob_path(&digest),
        DOCKER_CONFIG,
        tampered.clone(),
        None,
    )
    .await;
    let (registries, c) = mock_registries(&server);

    let err = c.image_config("team/app", &digest).await.unwrap_err();
    let (_, reason) = invalid_reason(&err);
    assert!(reason.contains("team/app"), "{reason}");
    assert!(reason.contains(&digest), "{reason}");
    assert!(reason.contains(&sha256(&tampered)), "{reason}");
    assert!(!err.is_retryable());
    assert_eq!(registries.stats.snapshot(), stats(0, 1, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn manifest_not_matching_the_requested_or_announced_digest_is_invalid() {
    let server = MockServer::start().await;
    let body = json_bytes(json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"digest": sha256(b"c"), "size": 1, "mediaType": "x"}, "layers": []
    }));
    let wanted = sha256(b"something else");
    serve(
        &server,
        &manifest_path(&wanted),
        OCI_MANIFEST,
        body.clone(),
        None,
    )
    .await;
    let lie = sha256(b"lie");
    serve(
        &server,
        &manifest_path("1.0"),
        OCI_MANIFEST,
        body,
        Some(&lie),
    )
    .await;
    let (registries, c) = mock_registries(&server);

    let err = c.manifest("team/app", &wanted).await.unwrap_err();
    let (_, reason) = invalid_reason(&err);
    assert!(
        reason.contains(&wanted) && reason.contains("team/app"),
        "{reason}"
    );

    let err = c.manifest("team/app", "1.0").await.unwrap_err();
    let (_, reason) = invalid_reason(&err);
    assert!(
        reason.contains(&format!("Docker-Content-Digest {lie}")),
        "{reason}"
    );
    assert_eq!(registries.stats.snapshot(), stats(2, 0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_over_the_cap_are_refused() {
    let server = MockServer::start().await;
    // Valid JSON, so only the cap can refuse it.
    let mut big = br#"{"schemaVersion":2,"config":{"digest":"sha256:"#.to_vec();
    big.extend_from_slice(format!("{:x}", Sha256::digest(b"c")).as_bytes());
    big.extend_from_slice(br#""}}"#);
    big.resize(CAP + 1, b' ');
    let big_digest = sha256(&big);
    serve(
        &server,
        &manifest_path("big"),
        OCI_MANIFEST,
        big.clone(),
        None,
    )
    .await;
    serve(&server, &blob_path(&big_digest), DOCKER_CONFIG, big, None).await;
    // Exactly at the cap is fine.
    let mut edge = br#"{"created":"2024-01-01T00:00:00Z"}"#.to_vec();
    edge.resize(CAP, b' ');
    let edge_digest = sha256(&edge);
    serve(&server, &blob_path(&edge_digest), DOCKER_CONFIG, edge, None).await;
    let (registries, c) = mock_registries(&server);

    let err = c.manifest("team/app", "big").await.unwrap_err();
    assert!(
        matches!(err, Error::TooLarge { limit, .. } if limit == CAP),
        "{err:?}"
    );
    let err = c.image_config("team/app", &big_digest).await.unwrap_err();
    assert!(
        matches!(err, Error::TooLarge { limit, .. } if limit == CAP),
        "{err:?}"
    );
    let config = c
        .image_config("team/app", &edge_digest)
        .await
        .expect("a body of exactly the cap");
    assert_eq!(config.created, Some(ts("2024-01-01T00:00:00Z")));
    assert_eq!(registries.stats.snapshot(), stats(1, 2, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_and_bad_references_are_invalid() {
    let server = MockServer::start().await;
    serve(
        &server,
        &manifest_path("1.0"),
        OCI_MANIFEST,
        b"{not json".to_vec(),
        None,
    )
    .await;
    let not_json = b"<html>".to_vec();
    let not_json_digest = sha256(&not_json);
    serve(
        &server,
        &blob_path(&not_json_digest),
        DOCKER_CONFIG,
        not_json,
        None,
    )
    .await;
    let (registries, c) = mock_registries(&server);

    let err = c.manifest("team/app", "1.0").await.unwrap_err();
    assert!(
        invalid_reason(&err).1.contains("not a valid JSON object"),
        "{err}"
    );
    let err = c
        .image_config("team/app", &not_json_digest)
        .await
        .unwrap_err();
    assert!(
        invalid_reason(&err).1.contains("not a valid JSON object"),
        "{err}"
    );
    // Refused before any request.
    let err = c.manifest("team/app", "../../x").await.unwrap_err();
    assert!(
        invalid_reason(&err)
            .1
            .contains("neither a tag nor a digest"),
        "{err}"
    );
    let err = c.image_config("team/app", "latest").await.unwrap_err();
    assert!(invalid_reason(&err).1.contains("not a digest"), "{err}");
    assert_eq!(registries.stats.snapshot(), stats(1, 1, 0));
    assert_eq!(received(&server).await.len(), 2);
}

// -------------------------------------------------------------------------------------------
// wiremock: Bearer auth and a redirect to storage on another origin
// -------------------------------------------------------------------------------------------

/// A Bearer-protected registry whose blob endpoint answers `307` to `storage` (another
/// wiremock server, so another origin), like S3/GCS-backed registries do.
#[tokio::test(flavor = "multi_thread")]
async fn blob_redirect_to_another_origin_carries_no_authorization() {
    let server = MockServer::start().await;
    let storage = MockServer::start().await;
    let realm = format!("{}/token", server.uri());
    let config = docker_config("2024-05-05T05:05:05Z", "amd64");
    let digest = sha256(&config);
    let signed = format!(
        "{}/bucket/{}?X-Amz-Signature=abc",
        storage.uri(),
        digest.replace(':', "/")
    );

    Mock::given(method("GET"))
        .and(path(blob_path(&digest)))
        .and(header("authorization", "Bearer tok123"))
        .respond_with(ResponseTemplate::new(307).insert_header("Location", signed.as_str()))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(blob_path(&digest)))
        .respond_with(ResponseTemplate::new(401).insert_header(
            "WWW-Authenticate",
            format!(
                r#"Bearer realm="{realm}",service="registry.test",scope="repository:team/app:pull""#
            )
            .as_str(),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/token"))
        .and(query_param("service", "registry.test"))
        .and(query_param("scope", "repository:team/app:pull"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"token": "tok123", "expires_in": 300})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/bucket/{}", digest.replace(':', "/"))))
        .and(query_param("X-Amz-Signature", "abc"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(config, "application/octet-stream"))
        .mount(&storage)
        .await;
    let (registries, c) = mock_registries(&server);

    let got = c.image_config("team/app", &digest).await.expect("config");
    assert_eq!(got.created, Some(ts("2024-05-05T05:05:05Z")));

    let at_registry = received(&server).await;
    let summary: Vec<(String, Option<&str>)> = at_registry
        .iter()
        .map(|r| (r.url.path().to_string(), header_of(r, "authorization")))
        .collect();
    assert_eq!(
        summary,
        vec![
            (blob_path(&digest), None),
            ("/token".to_string(), None),
            (blob_path(&digest), Some("Bearer tok123")),
        ],
        "anonymous try, anonymous token, authenticated try"
    );
    let at_storage = received(&storage).await;
    assert_eq!(at_storage.len(), 1, "the redirect was followed once");
    assert_eq!(
        header_of(&at_storage[0], "authorization"),
        None,
        "the registry's token was forwarded to {}",
        storage.uri()
    );
    assert_eq!(registries.stats.snapshot(), stats(0, 1, 1));
}

/// The same redirect to a path on the registry's own origin keeps the token (so a same-origin
/// blob store still works), and the manifest endpoint reuses the cached token.
#[tokio::test(flavor = "multi_thread")]
async fn same_origin_redirect_keeps_the_token_and_the_token_is_reused() {
    let server = MockServer::start().await;
    let realm = format!("{}/token", server.uri());
    let config = docker_config("2024-05-05T05:05:05Z", "amd64");
    let digest = sha256(&config);
    let image = json_bytes(json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"digest": digest, "size": config.len(), "mediaType": "x"}, "layers": []
    }));
    let image_digest = sha256(&image);
    let challenge = format!(r#"Bearer realm="{realm}",service="registry.test""#);
    for (p, priority) in [(blob_path(&digest), 2), (manifest_path("1.0"), 2)] {
        Mock::given(method("GET"))
            .and(path(p))
            .respond_with(
                ResponseTemplate::new(401).insert_header("WWW-Authenticate", challenge.as_str()),
            )
            .with_priority(priority)
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path(manifest_path("1.0")))
        .and(header("authorization", "Bearer tok123"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(image, OCI_MANIFEST)
                .insert_header("Docker-Content-Digest", image_digest.as_str()),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(blob_path(&digest)))
        .and(header("authorization", "Bearer tok123"))
        .respond_with(ResponseTemplate::new(307).insert_header("Location", "/local-store/cfg"))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/local-store/cfg"))
        .and(header("authorization", "Bearer tok123"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(config, "application/octet-stream"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/token"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"token": "tok123", "expires_in": 300})),
        )
        .mount(&server)
        .await;
    let (registries, c) = mock_registries(&server);

    let (d, manifest) = c.manifest("team/app", "1.0").await.expect("manifest");
    assert_eq!(d, image_digest);
    let Manifest::Image { config_digest } = manifest else {
        panic!("expected an image, got {manifest:?}");
    };
    let got = c
        .image_config("team/app", &config_digest)
        .await
        .expect("config");
    assert_eq!(got.created, Some(ts("2024-05-05T05:05:05Z")));
    let reqs = received(&server).await;
    let summary: Vec<(String, Option<&str>)> = reqs
        .iter()
        .map(|r| (r.url.path().to_string(), header_of(r, "authorization")))
        .collect();
    assert_eq!(
        summary,
        vec![
            (manifest_path("1.0"), None),
            ("/token".to_string(), None),
            (manifest_path("1.0"), Some("Bearer tok123")),
            (blob_path(&digest), Some("Bearer tok123")),
            ("/local-store/cfg".to_string(), Some("Bearer tok123")),
        ]
    );
    assert_eq!(registries.stats.snapshot(), stats(1, 1, 1));
}
