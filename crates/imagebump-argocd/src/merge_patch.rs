//! JSON Merge Patch (RFC 7396) and the source Argo CD renders after its parameter
//! override files (`.argocd-source.yaml`, `.argocd-source-<app>.yaml`).

use serde_json::{Map, Value};

/// RFC 7396 JSON Merge Patch, applied to `target` in place: a mapping in `patch` is merged
/// key by key (a `null` value removes the key), anything else replaces the target whole;
/// lists are never merged.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// The fields an override file cannot change (Argo CD puts them back after merging).
const PROTECTED: [&str; 4] = ["chart", "path", "repoURL", "targetRevision"];

/// What Argo CD renders for `source` (an Application source as written) given the
/// override files of its path, in order: `.argocd-source.yaml`, then
/// `.argocd-source-<app>.yaml` (YAML read to JSON; pass only the files that exist).
///
/// Argo CD's repo-server (`mergeSourceParameters` in reposerver/repository/repository.go)
/// marshals the typed source to JSON, applies each file as an RFC 7396 merge patch, and
/// decodes the result back *into the previous typed value* with Go's `encoding/json`.
/// Then it restores `chart`, `path`, `repoURL` and `targetRevision`. Go's decoding into
/// an existing value has two visible effects that are reproduced here:
/// - a key set to `null` in an override file is not removed: the decoder leaves a field
///   that is absent from the JSON untouched (except inside `helm.valuesObject`, which is
///   raw JSON and replaced whole);
/// - lists are replaced (their length and values come from the file), but a list of
///   mappings is decoded element by element into the old elements, so a field the file
///   leaves out keeps the old element's value at the same index (for example
///   `forceString: true` of the app's first `helm.parameters` entry carries over to the
///   file's first entry).
///
/// An override that is not a mapping (an empty file is `null`) changes nothing. Key names
/// are compared exactly; Go matches struct fields case-insensitively, so Argo CD also
/// accepts `forcestring`, the spelling argocd-image-updater writes.
pub fn effective_source(source: &Value, overrides: &[&Value]) -> Value {
    let Value::Object(original) = source else {
        return source.clone();
    };
    let mut merged = source.clone();
    for patch in overrides.iter().filter(|p| p.is_object()) {
        let mut patched = merged.clone();
        merge_patch(&mut patched, patch);
        merged = decode_into(&merged, patched, &mut Vec::new());
    }
    if let Value::Object(m) = &mut merged {
        for key in PROTECTED {
            match original.get(key) {
                Some(v) => {
                    m.insert(key.to_string(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
    }
    merged
}

/// Go's `json.Unmarshal(new, &old)`: mappings keep keys that `new` lacks, lists of
/// mappings reuse the old element at each index, everything else is replaced.
fn decode_into(old: &Value, new: Value, path: &mut Vec<String>) -> Value {
    if matches!(path.as_slice(), [a, b] if a == "helm" && b == "valuesObject") {
        return new;
    }
    match (old, new) {
        (_, Value::Null) => old.clone(),
        (Value::Object(o), Value::Object(n)) => {
            let mut out = o.clone();
            for (k, v) in n {
                path.push(k.clone());
                let merged = match o.get(&k) {
                    Some(prev) => decode_into(prev, v, path),
                    None => v,
                };
                path.pop();
                out.insert(k, merged);
            }
            Value::Object(out)
        }
        (Value::Array(o), Value::Array(n)) => Value::Array(
            n.into_iter()
                .enumerate()
                .map(|(i, v)| match o.get(i) {
                    Some(prev) => decode_into(prev, v, path),
                    None => v,
                })
                .collect(),
        ),
        (_, new) => new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc7396_appendix_a() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (target, patch, want) in cases {
            let mut got = target.clone();
            merge_patch(&mut got, &patch);
            assert_eq!(got, want, "{target} + {patch}");
        }
    }

    #[test]
    fn rfc7396_section_3_example() {
        let mut target = json!({
            "title": "Goodbye!",
            "author": {"givenName": "John", "familyName": "Doe"},
            "tags": ["example", "sample"],
            "content": "This will be unchanged"
        });
        let patch = json!({
            "title": "Hello!",
            "phoneNumber": "+01-123-456-7890",
            "author": {"familyName": null},
            "tags": ["example"]
        });
        merge_patch(&mut target, &patch);
        assert_eq!(
            target,
            json!({
                "title": "Hello!",
                "author": {"givenName": "John"},
                "tags": ["example"],
                "content": "This will be unchanged",
                "phoneNumber": "+01-123-456-7890"
            })
        );
    }

    #[test]
    fn lists_are_replaced_wholesale() {
        let source = json!({
            "repoURL": "https://git.example/repo.git",
            "path": "apps/web",
            "targetRevision": "main",
            "helm": {
                "parameters": [
                    {"name": "image.tag", "value": "1.0"},
                    {"name": "replicas", "value": "2"}
                ],
                "valueFiles": ["values.yaml"]
            },
            "kustomize": {"images": ["nginx:1.0", "redis:7"]}
        });
        let file = json!({
            "helm": {"parameters": [{"name": "image.tag", "value": "1.1", "forcestring": true}]},
            "kustomize": {"images": ["nginx:1.1"]}
        });
        let got = effective_source(&source, &[&file]);
        assert_eq!(
            got["helm"]["parameters"],
            json!([{"name": "image.tag", "value": "1.1", "forcestring": true}])
        );
        assert_eq!(got["helm"]["valueFiles"], json!(["values.yaml"]));
        assert_eq!(got["kustomize"]["images"], json!(["nginx:1.1"]));
    }

    #[test]
    fn overrides_apply_in_order_and_protected_fields_are_restored() {
        let source = json!({
            "repoURL": "https://git.example/repo.git",
            "path": "apps/web",
            "targetRevision": "main",
            "kustomize": {"images": ["nginx:1.0"], "namePrefix": "a-"}
        });
        let repo_file = json!({
            "kustomize": {"images": ["nginx:1.1"], "namePrefix": "b-"},
            "path": "elsewhere",
            "repoURL": "https://evil.example",
            "targetRevision": "other",
            "chart": "injected"
        });
        let app_file = json!({"kustomize": {"images": ["nginx:1.2"]}});
        let got = effective_source(&source, &[&repo_file, &app_file]);
        assert_eq!(
            got,
            json!({
                "repoURL": "https://git.example/repo.git",
                "path": "apps/web",
                "targetRevision": "main",
                "kustomize": {"images": ["nginx:1.2"], "namePrefix": "b-"}
            })
        );
    }

    #[test]
    fn go_decoding_keeps_nulled_keys_and_reuses_list_elements() {
        let source = json!({
            "path": "p",
            "helm": {
                "parameters": [{"name": "image.tag", "value": "1.0", "forceString": true}],
                "releaseName": "web",
                "valuesObject": {"a": 1, "b": 2}
            }
        });
        let file = json!({
            "helm": {
                "parameters": [{"name": "other", "value": "x"}],
                "releaseName": null,
                "valuesObject": {"b": null}
            }
        });
        let got = effective_source(&source, &[&file]);
        // The old first element's forceString survives in the new first element.
        assert_eq!(
            got["helm"]["parameters"],
            json!([{"name": "other", "value": "x", "forceString": true}])
        );
        // `null` does not remove a typed field...
        assert_eq!(got["helm"]["releaseName"], "web");
        // ...but valuesObject is raw JSON, so the merge patch's deletion stands.
        assert_eq!(got["helm"]["valuesObject"], json!({"a": 1}));
    }

    #[test]
    fn empty_or_non_mapping_overrides_change_nothing() {
        let source = json!({"path": "p", "helm": {"parameters": []}});
        assert_eq!(
            effective_source(&source, &[&Value::Null, &json!(["x"])]),
            source
        );
        assert_eq!(effective_source(&source, &[]), source);
    }
}
