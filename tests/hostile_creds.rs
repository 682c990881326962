//! Credentials are the operator's alone. Nothing a repository writes (an inline marker, an
//! argocd-image-updater `pull-secret` annotation, an `ImageUpdater`'s `pullSecret`) selects
//! a credentials source, a file, a program, a variable or a host that receives credentials;
//! the operator maps pull-secret names in `credentials.pullSecrets`, for the registries it
//! lists. What a helper prints is quoted scrubbed of the run's secrets, and credentials never
//! follow a challenge to another origin over plain HTTP. The real binary, a real registry
//! where credentials must be accepted, and a recording server standing in for a registry
//! the repository names (it sees every request's head).

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

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use support::cli::{imagebump, Run};
use support::{Registry, RegistryMode};

/// The job's secrets, in the variables a repository would aim at.
const GITHUB_SECRET: &str = "ghp_jobTokenTheRepositoryMustNeverSee0123";
const REGCRED_SECRET: &str = "regcred-password-never-sent-3fa9";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYjobSECRETKEY";
const AZURE_SECRET: &str = "azure-client-secret-of-the-job-77Qx";
const GCP_SECRET: &str = "gcp-private-key-material-of-the-job";

/// A plain-HTTP server standing in for a registry the repository names: it keeps every
/// request's head and answers 401 with a Basic challenge, so a client holding credentials
/// for it would send them on the next request.
struct Recorder {
    addr: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// A server answering each request with a 401 whose challenge `challenge` gives from
    /// the server's own address and the request's path.
    fn start(challenge: impl Fn(&str, &str) -> String + Send + 'static) -> Recorder {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let own = addr.clone();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let record = heads.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let head = read_head(&mut stream);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                record.lock().unwrap().push(head);
                let answer = format!(
                    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    challenge(&own, &path)
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        Recorder { addr, heads }
    }

    /// A registry that asks for Basic credentials.
    fn basic() -> Recorder {
        Recorder::start(|_, _| "Basic realm=\"registry\"".to_string())
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// The run asked this server (the control), and never with credentials.
    fn assert_asked_without_credentials(&self, run: &Run) {
        let heads = self.heads();
        assert!(!heads.is_empty(), "the server was never asked:\n{run}");
        for head in &heads {
            assert!(
                !head.to_ascii_lowercase().contains("\nauthorization:"),
                "credentials arrived:\n{head}\n{run}"
            );
        }
    }
}

/// A request's head, up to the blank line.
fn read_head(stream: &mut std::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16384 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// The job's side of a run: its secrets in the environment, a GCP key file, and a program
/// on its disk that leaves a file behind if it ever runs. All outside the repository.
struct Job {
    dir: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("login.sh");
        fs::write(
            &program,
            format!(
                "#!/bin/sh\ntouch '{}'\necho robot:{REGCRED_SECRET}\n",
                dir.path().join("ran").display()
            ),
        )
        .unwrap();
        make_executable(&program);
        fs::write(
            dir.path().join("gcp.json"),
            format!("{{\"type\": \"service_account\", \"private_key\": \"{GCP_SECRET}\", \"client_email\": \"job@p.iam.gserviceaccount.com\"}}"),
        )
        .unwrap();
        Job { dir }
    }

    fn program(&self) -> PathBuf {
        self.dir.path().join("login.sh")
    }

    fn key_file(&self) -> PathBuf {
        self.dir.path().join("gcp.json")
    }

    fn program_ran(&self) -> bool {
        self.dir.path().join("ran").exists()
    }

    /// The operator's configuration: `evil.example` is routed to `server` (standing in for
    /// the DNS of a host the repository names), without credentials.
    fn config(&self, server: &str) -> PathBuf {
        self.write_config(&format!(
            "registries:\n  - prefix: evil.example\n    url: http://{server}\nhelm:\n  charts: false\n"
        ))
    }

    /// The operator's configuration file holding `text`.
    fn write_config(&self, text: &str) -> PathBuf {
        let path = self.dir.path().join("operator.yaml");
        fs::write(&path, text).unwrap();
        path
    }

    /// `imagebump run --dry-run` over `tree` with the job's environment.
    fn run(&self, tree: &Path, config: &Path, code: i32) -> Run {
        let run = imagebump()
            .args(["run", "--dry-run"])
            .arg(tree)
            .arg("--config")
            .arg(config)
            .env("GITHUB_TOKEN", GITHUB_SECRET)
            .env("REGCRED", format!("robot:{REGCRED_SECRET}"))
            .env("AWS_ACCESS_KEY_ID", "AKIAJOBKEYID00000000")
            .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
            .env("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000000")
            .env("AZURE_TENANT_ID", "00000000-0000-0000-0000-000000000001")
            .env("AZURE_CLIENT_SECRET", AZURE_SECRET)
            .env("GOOGLE_APPLICATION_CREDENTIALS", self.key_file())
            .code(code)
            .run();
        for secret in [
            GITHUB_SECRET,
            REGCRED_SECRET,
            AWS_SECRET,
            AZURE_SECRET,
            GCP_SECRET,
        ] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{secret} quoted:\n{run}"
            );
        }
        run
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// What a repository may write after `credentials` to aim the job's secrets (`{program}`
/// and `{key}` are files on the job's disk): every kind of source there is.
fn marker_sources(job: &Job) -> Vec<String> {
    vec![
        "github".into(),
        "env:GITHUB_TOKEN".into(),
        "file:/proc/self/environ".into(),
        format!("file:{}", job.key_file().display()),
        format!("gcp:{}", job.key_file().display()),
        "acr".into(),
        "ecr:us-east-1".into(),
        format!("ext:{}", job.program().display()),
    ]
}

/// A file with two images, the first marked `marker`: a kustomization or Helm values, and
/// where the marker is.
fn marked_files(marker: &str) -> [(&'static str, String, &'static str); 2] {
    [
        (
            "app/kustomization.yaml",
            format!("images:\n  - name: web\n    newName: evil.example/acme/web\n    newTag: 1.0.0 # {marker}\n  - name: api\n    newName: evil.example/acme/api\n    newTag: 1.0.0\n"),
            "app/kustomization.yaml:4:",
        ),
        (
            "chart/values.yaml",
            format!("image:\n  repository: evil.example/acme/web\n  tag: 1.0.0 # {marker}\napi:\n  image:\n    repository: evil.example/acme/api\n    tag: 1.0.0\n"),
            "chart/values.yaml:3:",
        ),
    ]
}

/// 8 cases, each in a kustomization and in Helm values. An inline marker naming credentials
/// is refused at its line (file:line, exit 1), its reference is left alone, the rest of the
/// run goes on: the other image of the file is asked for (the control), without
/// credentials; no program runs.
#[test]
fn marker_credentials_refused() {
    let job = Job::new();
    let chart = (
        "chart/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 0.1.0\n".to_string(),
    );
    for source in marker_sources(&job) {
        for (file, text, at) in marked_files(&format!("imagebump: {{credentials: \"{source}\"}}")) {
            let server = Recorder::basic();
            let tree = support::tree(&[(file, text), chart.clone()]);
            let run = job.run(tree.path(), &job.config(&server.addr), 1);
            run.assert_stderr_contains(at).assert_stderr_contains(
                "bad imagebump marker: credentials can only be set in the operator's configuration",
            );
            server.assert_asked_without_credentials(&run);
            assert!(
                server.heads().iter().all(|h| !h.contains("acme/web")),
                "{source}: the refused reference was looked up:\n{run}"
            );
            assert!(!job.program_ran(), "{source}: the program ran:\n{run}");
        }
    }
}

/// An Argo CD Application whose argocd-image-updater annotations name `pull_secret`.
fn annotated_app(pull_secret: &str) -> tempfile::TempDir {
    let app = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=evil.example/acme/web\n    argocd-image-updater.argoproj.io/web.pull-secret: \"{pull_secret}\"\nspec:\n  source:\n    path: apps/web\n    kustomize:\n      images:\n      - evil.example/acme/web:1.0.0\n"
    );
    support::tree(&[
        ("argocd/web.yaml", app.as_str()),
        ("apps/web/kustomization.yaml", "resources: []\n"),
    ])
}

/// An Application and the `ImageUpdater` that names `pull_secret` for its image.
fn image_updater(pull_secret: &str) -> tempfile::TempDir {
    let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  source:\n    path: apps/web\n    kustomize:\n      images:\n      - evil.example/acme/web:1.0.0\n";
    let iu = format!(
        "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata:\n  name: iu\n  namespace: argocd\nspec:\n  applicationRefs:\n  - namePattern: web\n    images:\n    - alias: web\n      imageName: evil.example/acme/web\n      commonUpdateSettings:\n        pullSecret: \"{pull_secret}\"\n"
    );
    support::tree(&[
        ("argocd/web.yaml", app),
        ("argocd/iu.yaml", iu.as_str()),
        ("apps/web/kustomization.yaml", "resources: []\n"),
    ])
}

/// 4 cases. A `pull-secret` annotation or an `ImageUpdater`'s `pullSecret` of `env:` or
/// `ext:` is only a name: unmapped by the operator, it is ignored with a note at the
/// Application's file:line; the image is asked for without credentials and nothing runs.
#[test]
fn pull_secret_names_select_nothing() {
    let job = Job::new();
    let sources = [
        "env:REGCRED".to_string(),
        format!("ext:{}", job.program().display()),
    ];
    for source in &sources {
        for (kind, tree) in [
            ("annotation", annotated_app(source)),
            ("ImageUpdater", image_updater(source)),
        ] {
            let server = Recorder::basic();
            let run = job.run(tree.path(), &job.config(&server.addr), 1);
            let key = match kind {
                "annotation" => "argocd-image-updater.argoproj.io/web.pull-secret",
                _ => "ImageUpdater argocd/iu: spec.applicationRefs[0].images[0].commonUpdateSettings.pullSecret",
            };
            run.assert_stderr_contains(&format!(
                "warning: argocd/web.yaml:4:9: Application web: {key}: the pull secret \"{source}\" is not used: the operator's configuration does not map it (credentials.pullSecrets)"
            ));
            server.assert_asked_without_credentials(&run);
            assert!(
                !job.program_ran(),
                "{kind} {source}: the program ran:\n{run}"
            );
        }
    }
}

/// The operator maps a pull secret's exact name to its own source, for the registries it
/// lists: the registry (real, htpasswd) accepts it and the update is proposed. The same
/// mapped name on an image of another host is not sent there (a note says so).
#[test]
fn mapped_pull_secret_goes_only_to_its_registries() {
    let reg = Registry::start(RegistryMode::PlainBasicAuth {
        user: "robot".into(),
        password: REGCRED_SECRET.into(),
    });
    reg.push_tags("acme/web", &["1.0.0", "1.1.0"]);
    let job = Job::new();
    let server = Recorder::basic();
    let app = |host: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web={host}/acme/web\n    argocd-image-updater.argoproj.io/web.pull-secret: pullsecret:argocd/regcred\nspec:\n  source:\n    path: apps/web\n    kustomize:\n      images:\n      - {host}/acme/web:1.0.0\n"
        )
    };
    let tree = |host: &str| {
        support::tree(&[
            ("argocd/web.yaml", app(host)),
            ("apps/web/kustomization.yaml", "resources: []\n".into()),
        ])
    };
    // Mapped for registry.test: accepted, the update is proposed.
    let config = job.write_config(&format!(
        "registries:\n  - prefix: evil.example\n    url: http://{}\n  - prefix: registry.test\n    url: {}\nhelm:\n  charts: false\ncredentials:\n  pullSecrets:\n    \"pullsecret:argocd/regcred\":\n      secret: env:REGCRED\n      registries: [registry.test]\n",
        server.addr,
        reg.base_url()
    ));
    let run = job.run(tree("registry.test").path(), &config, 0);
    run.assert_stdout_contains("1.1.0");
    // The same name on evil.example: not sent there.
    let run = job.run(tree("evil.example").path(), &config, 1);
    run.assert_stderr_contains(
        "the pull secret \"pullsecret:argocd/regcred\" is not sent to evil.example: the operator's credentials.pullSecrets allows it only for registry.test",
    );
    server.assert_asked_without_credentials(&run);
}

/// The operator's own `ext:` helper runs without the forge and git tokens, fails and prints
/// what secrets it has on stderr (AWS keys, a GitHub-shaped token): the error quotes its
/// stderr with every one of them taken out, and shows the forge tokens' variables empty.
#[test]
fn helper_stderr_is_quoted_scrubbed() {
    let job = Job::new();
    let server = Recorder::basic();
    let helper = job.dir.path().join("noisy.sh");
    // The forge tokens are not in the helper's environment; the cloud secret is, and a
    // token it found elsewhere (written into the script here) is shaped like one.
    fs::write(
        &helper,
        format!(
            "#!/bin/sh\necho \"debug: github=[$GITHUB_TOKEN] gitlab=[$GITLAB_TOKEN] forge=[$IMAGEBUMP_FORGE_TOKEN] git=[$IMAGEBUMP_GIT_TOKEN]\" >&2\n\
             echo \"aws_access_key_id=AKIAJOBKEYID00000000 aws_secret_access_key=$AWS_SECRET_ACCESS_KEY\" >&2\n\
             echo \"cached {GITHUB_SECRET} refused\" >&2\nexit 3\n"
        ),
    )
    .unwrap();
    make_executable(&helper);
    let config = job.write_config(&format!(
        "registries:\n  - prefix: evil.example\n    url: http://{}\n    credentials: ext:{}\n",
        server.addr,
        helper.display()
    ));
    let tree = support::tree(&[(
        "app/kustomization.yaml",
        "images:\n  - name: web\n    newName: evil.example/acme/web\n    newTag: 1.0.0\n",
    )]);
    let gitlab = "glpat-jobGitLabToken0123456789";
    let forge = "plain-forge-token-without-shape-91";
    let run = imagebump()
        .args(["run", "--dry-run"])
        .arg(tree.path())
        .arg("--config")
        .arg(&config)
        .env("GITHUB_TOKEN", GITHUB_SECRET)
        .env("GITLAB_TOKEN", gitlab)
        .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
        .env("IMAGEBUMP_FORGE_TOKEN", forge)
        .env("IMAGEBUMP_GIT_TOKEN", forge)
        .code(1)
        .run();
    let quoted = format!(
        "ext:{}: exited with status 3; stderr: debug: github=[] gitlab=[] forge=[] git=[] | aws_access_key_id=<redacted> aws_secret_access_key=<redacted> | cached <redacted> refused",
        helper.display()
    );
    run.assert_stdout_contains(&quoted);
    for secret in [
        GITHUB_SECRET,
        gitlab,
        AWS_SECRET,
        forge,
        "AKIAJOBKEYID00000000",
    ] {
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "{secret} quoted:\n{run}"
        );
    }
}

/// A plain-HTTP registry's Bearer challenge naming a token service on another origin does
/// not get the registry's Basic credentials sent there in clear text; on the registry's own
/// origin (the control) it does.
#[test]
fn credentials_never_follow_a_plain_http_realm_to_another_origin() {
    let job = Job::new();
    let token_service = Recorder::basic();
    let realm = format!("http://{}/token", token_service.addr);
    let elsewhere = Recorder::start(move |_, _| format!("Bearer realm=\"{realm}\",service=\"r\""));
    let own =
        Recorder::start(|own, _| format!("Bearer realm=\"http://{own}/token\",service=\"r\""));
    let tree = support::tree(&[(
        "app/kustomization.yaml",
        "images:\n  - name: web\n    newName: evil.example/acme/web\n    newTag: 1.0.0\n",
    )]);
    let basic = format!(
        "authorization: basic {}",
        support::base64_encode(format!("robot:{REGCRED_SECRET}").as_bytes()).to_ascii_lowercase()
    );
    let with_credentials = |heads: Vec<String>| {
        heads
            .iter()
            .filter(|h| h.to_ascii_lowercase().contains(&basic))
            .count()
    };
    let config = |server: &Recorder| {
        job.write_config(&format!(
            "registries:\n  - prefix: evil.example\n    url: http://{}\n    credentials: env:REGCRED\n",
            server.addr
        ))
    };
    let run = job.run(tree.path(), &config(&elsewhere), 1);
    run.assert_stdout_contains(&format!(
        "http://{}/token: the registry evil.example asks for its credentials at another origin over plain HTTP; they are not sent",
        token_service.addr
    ));
    assert!(
        token_service.heads().is_empty(),
        "{:?}",
        token_service.heads()
    );
    // The control: the realm on the registry's own origin gets them.
    let run = job.run(tree.path(), &config(&own), 1);
    assert!(
        with_credentials(own.heads()) > 0,
        "{:?}\n{run}",
        own.heads()
    );
}

/// The repository's own imagebump.yaml cannot map pull secrets, nor give an `images` rule
/// credentials in any YAML spelling (here through an anchor): a configuration error naming
/// the key (exit 2), and the program named is never run.
#[test]
fn repository_config_cannot_choose_credentials() {
    let job = Job::new();
    let server = Recorder::basic();
    let program = job.program();
    for (text, key) in [
        (
            format!("credentials:\n  pullSecrets:\n    \"pullsecret:argocd/regcred\":\n      secret: \"ext:{}\"\n      registries: [evil.example]\n", program.display()),
            "credentials can only be set in the operator's configuration",
        ),
        (
            format!("defaults:\n  constraint: &c \"ext:{}\"\nimages:\n  - match: \"**\"\n    credentials: *c\n", program.display()),
            "images[0].credentials can only be set in the operator's configuration",
        ),
    ] {
        let tree = support::tree(&[
            ("imagebump.yaml", text.as_str()),
            (
                "app/kustomization.yaml",
                "images:\n  - name: web\n    newName: evil.example/acme/web\n    newTag: 1.0.0\n",
            ),
        ]);
        let run = job.run(tree.path(), &job.config(&server.addr), 2);
        run.assert_stderr_contains(key);
        assert!(server.heads().is_empty(), "{:?}", server.heads());
        assert!(!job.program_ran(), "the program ran:\n{run}");
    }
}

/// Flux objects name credentials too (an `ImageRepository`'s `secretRef`, a cloud
/// `provider`): they are noted, never used. The image is asked for without credentials.
#[test]
fn flux_objects_select_no_credentials() {
    let job = Job::new();
    let server = Recorder::basic();
    let resources = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  image: evil.example/acme/web\n  interval: 5m\n  provider: aws\n  secretRef:\n    name: regcred\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: web\n  policy:\n    semver:\n      range: '>=1.0.0'\n";
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: evil.example/acme/web:1.0.0 # {\"$imagepolicy\": \"flux-system:web\"}\n";
    let tree = support::tree(&[
        ("flux-system/images.yaml", resources),
        ("apps/deploy.yaml", deploy),
    ]);
    let run = job.run(tree.path(), &job.config(&server.addr), 1);
    run.assert_stderr_contains("spec.secretRef is not read")
        .assert_stderr_contains("spec.provider aws is the cluster's workload identity");
    server.assert_asked_without_credentials(&run);
}
