//! The manifest repository of the workload, as `../shared/bench/genrepo.py` makes it: apps
//! under `apps/teamNN/appNNNN/`, even ones Kustomize overlays with an `images:` list, odd
//! ones Helm `values.yaml` files with `componentN.image.{repository,tag}`, each with a few
//! references to random repositories at old tags, comments on the lines.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Which tags the references are at.
#[derive(Clone, Copy, Debug)]
pub enum Current {
    /// Old versions (`1.N.0`, `"1.N.1"`): every reference has a newer semver tag.
    Versions,
    /// `build-N`, one of the dated tags (newest-build).
    Builds(usize),
}

/// Writes the repository into `dir`; returns the registry repositories it refers to.
pub fn generate(
    dir: &Path,
    host: &str,
    apps: usize,
    repos: usize,
    per_app: usize,
    current: Current,
) -> BTreeSet<usize> {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut used = BTreeSet::new();
    for a in 0..apps {
        let app = format!("app{a:04}");
        let d = dir
            .join("apps")
            .join(format!("team{:02}", a % 20))
            .join(&app);
        fs::create_dir_all(&d).expect("create the app dir");
        let images: Vec<usize> = (0..per_app).map(|_| rng.usize(..repos)).collect();
        used.extend(&images);
        let mut tag = |patch: u32| match current {
            Current::Versions => format!("1.{}.{patch}", rng.u32(..3)),
            Current::Builds(n) => format!("build-{}", rng.usize(1..=n)),
        };
        if a % 2 == 0 {
            let mut k = String::from(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\nimages:\n",
            );
            let mut dep = format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {app}}}\nspec:\n  template:\n    spec:\n      containers:\n"
            );
            for (n, i) in images.iter().enumerate() {
                k.push_str(&format!(
                    "# component {n}\n- name: svc{i:04}\n  newName: {host}/bench/svc{i:04}\n  newTag: {}\n",
                    tag(0)
                ));
                dep.push_str(&format!("      - name: c{n}\n        image: svc{i:04}\n"));
            }
            fs::write(d.join("kustomization.yaml"), k).expect("write kustomization.yaml");
            fs::write(d.join("deployment.yaml"), dep).expect("write deployment.yaml");
        } else {
            let mut v = format!("# values for {app}\nreplicaCount: 2\n");
            for (n, i) in images.iter().enumerate() {
                v.push_str(&format!(
                    "component{n}:\n  image:\n    repository: {host}/bench/svc{i:04}\n    tag: \"{}\"  # pinned\n  resources: {{}}\n",
                    tag(1)
                ));
            }
            fs::write(d.join("values.yaml"), v).expect("write values.yaml");
        }
    }
    used
}
