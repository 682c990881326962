//! cosign public keys: a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) read into the algorithm
//! cosign signs with for that key type. The signature math is ring's; this file only reads
//! the key's algorithm and bits.

use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use spki::der::Decode;
use spki::ObjectIdentifier;

const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// A public key cosign signatures are checked against, named for messages.
#[derive(Debug)]
pub struct PublicKey {
    /// What the operator wrote (`keys/cosign.pub`): the signer a report names.
    pub name: String,
    /// `ecdsa-p256`, `ed25519`, ...
    pub kind: &'static str,
    algorithm: &'static dyn VerificationAlgorithm,
    bits: Vec<u8>,
    /// The SubjectPublicKeyInfo as read: what a fingerprint is taken of.
    der: Vec<u8>,
}

/// A signature algorithm a certificate-signed structure names (CMS `signatureAlgorithm`):
/// the allow-list of pairs an RFC 3161 timestamp may be signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureAlgorithm {
    EcdsaSha256,
    EcdsaSha384,
    RsaPkcs1Sha256,
    RsaPkcs1Sha384,
    RsaPkcs1Sha512,
    Ed25519,
}

/// Why bytes are not a public key imagebump can verify with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not a PEM public key: {0}")]
    NotPem(String),
    #[error("a PEM {0:?}, not a \"PUBLIC KEY\" (give the .pub file cosign wrote)")]
    NotPublic(String),
    #[error("not a public key (SubjectPublicKeyInfo): {0}")]
    NotSpki(String),
    #[error("an elliptic curve key on {0}: only P-256 and P-384")]
    Curve(String),
    #[error("an elliptic curve key without its curve: {0}")]
    NoCurve(String),
    #[error("a key of algorithm {0}: only ECDSA P-256/P-384, Ed25519 and RSA")]
    Algorithm(String),
    #[error("the key's bit string is not whole bytes")]
    Bits,
}

impl KeyError {
    /// What to give instead.
    pub fn hint(&self) -> Option<String> {
        Some(
            "give the public key cosign wrote (cosign.pub, `-----BEGIN PUBLIC KEY-----`): \
             ECDSA P-256/P-384, Ed25519 or RSA"
                .into(),
        )
    }
}

impl PublicKey {
    /// Read a PEM public key (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair`
    /// writes it). `name` names it in messages.
    pub fn from_pem(name: &str, pem: &[u8]) -> Result<PublicKey, KeyError> {
        let (label, der) =
            pem_rfc7468::decode_vec(pem).map_err(|e| KeyError::NotPem(e.to_string()))?;
        if label != "PUBLIC KEY" {
            return Err(KeyError::NotPublic(label.to_string()));
        }
        Self::from_der(name, &der)
    }

    /// Read a DER SubjectPublicKeyInfo.
    pub fn from_der(name: &str, der: &[u8]) -> Result<PublicKey, KeyError> {
        let spki = spki::SubjectPublicKeyInfoRef::from_der(der)
            .map_err(|e| KeyError::NotSpki(e.to_string()))?;
        let oid = spki.algorithm.oid;
        // cosign signs with SHA-256 for P-256 and RSA (PKCS#1 v1.5), SHA-384 for P-384, and
        // plain Ed25519 over the payload.
        let (kind, algorithm): (_, &'static dyn VerificationAlgorithm) = if oid == EC_PUBLIC_KEY {
            match spki.algorithm.parameters_oid() {
                Ok(c) if c == P256 => ("ecdsa-p256", &signature::ECDSA_P256_SHA256_ASN1),
                Ok(c) if c == P384 => ("ecdsa-p384", &signature::ECDSA_P384_SHA384_ASN1),
                Ok(c) => return Err(KeyError::Curve(c.to_string())),
                Err(e) => return Err(KeyError::NoCurve(e.to_string())),
            }
        } else if oid == ED25519 {
            ("ed25519", &signature::ED25519)
        } else if oid == RSA {
            ("rsa", &signature::RSA_PKCS1_2048_8192_SHA256)
        } else {
            return Err(KeyError::Algorithm(oid.to_string()));
        };
        let bits = spki
            .subject_public_key
            .as_bytes()
            .ok_or(KeyError::Bits)?
            .to_vec();
        Ok(PublicKey {
            name: name.to_string(),
            kind,
            algorithm,
            bits,
            der: der.to_vec(),
        })
    }

    /// The bytes a fingerprint of the key is taken of (its DER form).
    pub fn fingerprint_source(&self) -> &[u8] {
        &self.der
    }

    /// Does `sig` sign `message` with this key?
    pub fn verifies(&self, message: &[u8], sig: &[u8]) -> bool {
        UnparsedPublicKey::new(self.algorithm, &self.bits)
            .verify(message, sig)
            .is_ok()
    }

    /// Does `sig` sign `message` with this key under `algorithm` (named by the signed
    /// structure, not the key's default)? `None` when the key is not of the algorithm's
    /// kind, or ring has no such pair.
    pub fn verifies_with(
        &self,
        algorithm: SignatureAlgorithm,
        message: &[u8],
        sig: &[u8],
    ) -> Option<bool> {
        use SignatureAlgorithm as A;
        let ring: &'static dyn VerificationAlgorithm = match (self.kind, algorithm) {
            ("ecdsa-p256", A::EcdsaSha256) => &signature::ECDSA_P256_SHA256_ASN1,
            ("ecdsa-p256", A::EcdsaSha384) => &signature::ECDSA_P256_SHA384_ASN1,
            ("ecdsa-p384", A::EcdsaSha256) => &signature::ECDSA_P384_SHA256_ASN1,
            ("ecdsa-p384", A::EcdsaSha384) => &signature::ECDSA_P384_SHA384_ASN1,
            ("rsa", A::RsaPkcs1Sha256) => &signature::RSA_PKCS1_2048_8192_SHA256,
            ("rsa", A::RsaPkcs1Sha384) => &signature::RSA_PKCS1_2048_8192_SHA384,
            ("rsa", A::RsaPkcs1Sha512) => &signature::RSA_PKCS1_2048_8192_SHA512,
            ("ed25519", A::Ed25519) => &signature::ED25519,
            _ => return None,
        };
        Some(
            UnparsedPublicKey::new(ring, &self.bits)
                .verify(message, sig)
                .is_ok(),
        )
    }

    /// Does `sig` (ASN.1 DER) sign the SHA-256 `digest` with this key? `None` for keys
    /// other than ECDSA P-256, the only kind that signs a digest given alone.
    pub fn verifies_prehash(&self, digest: &[u8; 32], sig: &[u8]) -> Option<bool> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
        if self.kind != "ecdsa-p256" {
            return None;
        }
        let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&self.bits).ok()?;
        let sig = p256::ecdsa::Signature::from_der(sig).ok()?;
        Some(key.verify_prehash(digest, &sig).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start of a P-256 key, cut short. (Whole keys of every kind, with signatures from
    /// an independent signer, are in tests/signatures.rs.)
    const TRUNCATED_PEM: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
-----END PUBLIC KEY-----";

    #[test]
    fn refuses_what_is_not_a_public_key() {
        assert!(PublicKey::from_pem("k", b"not pem").is_err());
        let private = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let e = PublicKey::from_pem("k", private.as_bytes()).unwrap_err();
        assert_eq!(e, KeyError::NotPublic("PRIVATE KEY".into()));
        assert!(e.to_string().contains("\"PRIVATE KEY\""), "{e}");
        assert!(PublicKey::from_pem("k", TRUNCATED_PEM.as_bytes()).is_err());
        assert!(PublicKey::from_der("k", &[0x30, 0x03, 0x02, 0x01, 0x00]).is_err());
    }
}
