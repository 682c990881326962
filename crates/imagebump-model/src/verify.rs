//! `verify`: the signatures a candidate image must carry before imagebump proposes it
//! (docs/tag-selection.md, "Signed images"). Trust roots are the operator's alone: the
//! repository's own `imagebump.yaml` may not set them (docs/security.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifySpec {
    /// cosign public keys (PEM: ECDSA P-256/P-384, Ed25519 or RSA), as files; relative
    /// paths are relative to the operator's configuration file. A candidate passes when a
    /// cosign signature of its digest verifies with any of them.
    #[serde(default)]
    pub keys: Vec<String>,
}

impl VerifySpec {
    /// Nothing to verify against (an empty list is refused when the configuration loads).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}
