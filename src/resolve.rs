//! The resolve stage: ask the registries, once per distinct repository, and apply each
//! reference's policy to the answer.

use std::collections::{BTreeMap, BTreeSet};

use futures::stream::{self, StreamExt};

use crate::discover::ImageRef;
use crate::policy::{self, Choice};
use crate::registry::client::TagList;
use crate::registry::name::ImageName;
use crate::registry::{Error, Registries};
use crate::report::Problem;

/// What the run decided for one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Update {
        tag: String,
        digest: Option<String>,
    },
    UpToDate,
    /// The policy could not judge it (e.g. the current tag is not a version).
    Skipped(String),
    /// imagebump does not manage it (discovery said why).
    Unmanaged(String),
    /// The registry could not be asked.
    Failed(String),
}

#[derive(Debug, Default)]
pub struct Resolved {
    /// One outcome per reference, in the order of the input.
    pub outcomes: Vec<Outcome>,
    pub problems: Vec<Problem>,
    pub repositories: usize,
}

fn current(r: &ImageRef) -> &str {
    r.tag.as_deref().unwrap_or_default()
}

/// Resolve every managed reference. At most `concurrency` requests are in flight overall
/// (each registry also has its own bound).
pub async fn resolve(refs: &[ImageRef], registries: &Registries, concurrency: usize) -> Resolved {
    let precheck: Vec<Option<String>> = refs
        .iter()
        .map(|r| match &r.unmanaged {
            Some(_) => None,
            None => policy::cannot_judge(&r.policy, current(r)),
        })
        .collect();
    let wanted = |i: usize| refs[i].is_managed() && precheck[i].is_none();
    let names: BTreeSet<&ImageName> = (0..refs.len())
        .filter(|&i| wanted(i))
        .map(|i| &refs[i].image)
        .collect();
    let mut users: BTreeMap<&ImageName, usize> = BTreeMap::new();
    for i in (0..refs.len()).filter(|&i| wanted(i)) {
        *users.entry(&refs[i].image).or_default() += 1;
    }
    let mut out = Resolved {
        repositories: names.len(),
        ..Default::default()
    };
    let lists: BTreeMap<ImageName, Result<TagList, Error>> = stream::iter(names)
        .map(|name| async move {
            let result = match registries.client_for(name) {
                Ok(client) => client.list_tags(&name.repository).await,
                Err(e) => Err(e),
            };
            (name.clone(), result)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;

    for (name, result) in &lists {
        let users = users.get(name).copied().unwrap_or_default();
        match result {
            Err(e) => out.problems.push(Problem::registry(
                name,
                format!("{e}; {users} reference(s) not checked"),
                e.hint(),
            )),
            Ok(list) if !list.invalid.is_empty() => out.problems.push(Problem::registry(
                name,
                format!(
                    "the registry listed {} invalid tag name(s), ignored (first: {:?})",
                    list.invalid.len(),
                    list.invalid[0]
                ),
                None,
            )),
            Ok(_) => {}
        }
    }

    let mut choices: Vec<Outcome> = refs
        .iter()
        .zip(&precheck)
        .map(|(r, pre)| {
            if let Some(reason) = &r.unmanaged {
                return Outcome::Unmanaged(reason.clone());
            }
            if let Some(reason) = pre {
                return Outcome::Skipped(reason.clone());
            }
            match lists.get(&r.image) {
                Some(Ok(list)) => match policy::choose(&r.policy, current(r), &list.tags) {
                    Choice::Update(tag) => Outcome::Update { tag, digest: None },
                    Choice::Current => Outcome::UpToDate,
                    Choice::Skip(reason) => Outcome::Skipped(reason),
                },
                Some(Err(e)) => Outcome::Failed(e.to_string()),
                None => Outcome::Failed("not resolved".into()),
            }
        })
        .collect();

    // References pinned by digest move to the new tag's digest: one HEAD per distinct
    // (repository, tag), however many references need it.
    let wanted: BTreeSet<(ImageName, String)> = refs
        .iter()
        .zip(&choices)
        .filter_map(|(r, o)| match o {
            Outcome::Update { tag, .. } if r.digest.is_some() => {
                Some((r.image.clone(), tag.clone()))
            }
            _ => None,
        })
        .collect();
    let digests: BTreeMap<(ImageName, String), Result<String, Error>> = stream::iter(wanted)
        .map(|(name, tag)| async move {
            let result = match registries.client_for(&name) {
                Ok(client) => client.manifest_digest(&name.repository, &tag).await,
                Err(e) => Err(e),
            };
            ((name, tag), result)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for ((name, tag), result) in &digests {
        if let Err(e) = result {
            out.problems.push(Problem::registry(
                name,
                format!("digest of {tag}: {e}"),
                e.hint(),
            ));
        }
    }
    for (r, o) in refs.iter().zip(choices.iter_mut()) {
        if let (Outcome::Update { tag, digest }, Some(_)) = (&mut *o, &r.digest) {
            match digests.get(&(r.image.clone(), tag.clone())) {
                Some(Ok(d)) => *digest = Some(d.clone()),
                Some(Err(e)) => *o = Outcome::Failed(e.to_string()),
                None => *o = Outcome::Failed("digest not resolved".into()),
            }
        }
    }
    out.outcomes = choices;
    out
}
