//! TLS trust for registries with a `caFile`.
//!
//! The certificates in `caFile` are added to the usual roots (system store and Mozilla's
//! list). A certificate from `caFile` that the server presents *as itself* is also accepted:
//! self-signed registry certificates are common in private set-ups (the reference benchmark
//! registry uses one), `curl --cacert` accepts them, but webpki refuses a CA certificate used
//! as an end-entity certificate. Accepting exactly the bytes the user pinned keeps that
//! working without loosening anything else; signatures are still checked.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{VerifierBuilderError, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

#[derive(Debug)]
struct PinnedOrWebPki {
    /// Built at the first certificate that is not a pinned one: loading the system's roots
    /// reads and parses every file of its certificate directory (about 150 on Debian),
    /// which a registry serving a pinned certificate never needs.
    webpki: OnceLock<Result<Arc<WebPkiServerVerifier>, VerifierBuilderError>>,
    /// The certificates of `caFile`: accepted as the server's own, and trust anchors.
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
}

impl PinnedOrWebPki {
    fn webpki(&self) -> Result<&Arc<WebPkiServerVerifier>, rustls::Error> {
        self.webpki
            .get_or_init(|| webpki_verifier(&self.pinned, &self.provider))
            .as_ref()
            .map_err(|e| rustls::Error::General(e.to_string()))
    }
}

/// The usual roots (Mozilla's list and the system store) plus the certificates of `caFile`.
fn webpki_verifier(
    extra: &[CertificateDer<'static>],
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, VerifierBuilderError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    for cert in extra {
        // A leaf certificate is not a valid trust anchor; it is still pinned.
        let _ = roots.add(cert.clone());
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build()
}

impl ServerCertVerifier for PinnedOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The exact bytes the user pinned are accepted whatever webpki says of them, so
        // they are looked at first (the same decisions as webpki first, then the pin).
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return Ok(ServerCertVerified::assertion());
        }
        self.webpki()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Why a `caFile` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaFileError {
    #[error("not PEM certificates: {0}")]
    NotPem(String),
    #[error("no certificate found")]
    Empty,
    /// rustls refused the protocol versions (not expected with its own defaults).
    #[error("{0}")]
    Tls(String),
}

/// A rustls configuration trusting the usual roots plus the PEM certificates in `pem`.
pub fn client_config(pem: &[u8]) -> Result<ClientConfig, CaFileError> {
    let extra: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| CaFileError::NotPem(e.to_string()))?;
    if extra.is_empty() {
        return Err(CaFileError::Empty);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = PinnedOrWebPki {
        webpki: OnceLock::new(),
        pinned: extra,
        provider: provider.clone(),
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| CaFileError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two self-signed certificates (for 127.0.0.1, valid to 2126): public test data.
    const PINNED: &str = "-----BEGIN CERTIFICATE-----
MIIBpTCCAUygAwIBAgIUDioNV7WzehHYYQvR/tW/BH4PBr4wCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUaW1hZ2VidW1wIHBpbiB0ZXN0IGEwIBcNMjYxMTI4MDQ1MTA4
WhgPMjEyNjExMDQwNDUxMDhaMB8xHTAbBgNVBAMMFGltYWdlYnVtcCBwaW4gdGVz
dCBhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEOop4GqkW5u9KnglksDjN0eGb
mlNkVoN+YAHOPiSkS/kvR2SWV7VxfQUSLMGvFClIma71seCItH1mLAHkX2oO46Nk
MGIwHQYDVR0OBBYEFHqIo2BHPa2UHHkpjP0PHxI6KAO6MB8GA1UdIwQYMBaAFHqI
o2BHPa2UHHkpjP0PHxI6KAO6MA8GA1UdEwEB/wQFMAMBAf8wDwYDVR0RBAgwBocE
fwAAATAKBggqhkjOPQQDAgNHADBEAiAGo3uB5eW3F19gH0ERlr7yD1bp3mxB0lCN
LJOQPOXUFwIga8U6GoeFdkMntV78KNMQw5FNjOH+gmzRtMQ55VEu0UY=
-----END CERTIFICATE-----";
    const OTHER: &str = "-----BEGIN CERTIFICATE-----
MIIBpjCCAUygAwIBAgIUX+N4QwvWE1W9v51yPZf/4f1q8TwwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUaW1hZ2VidW1wIHBpbiB0ZXN0IGIwIBcNMjYxMTI4MDQ1MTA4
WhgPMjEyNjExMDQwNDUxMDhaMB8xHTAbBgNVBAMMFGltYWdlYnVtcCBwaW4gdGVz
dCBiMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEw+KejUeI0hPIbXcAgKxcrU7K
H13YWfRpcWzK0yc9lx3beLdSFArr/FMVE5y38NtjPXMW1xVSyuAB38PqzDswsKNk
MGIwHQYDVR0OBBYEFAb8aZAJccGQnxderMsQf60t2OdJMB8GA1UdIwQYMBaAFAb8
aZAJccGQnxderMsQf60t2OdJMA8GA1UdEwEB/wQFMAMBAf8wDwYDVR0RBAgwBocE
fwAAATAKBggqhkjOPQQDAgNIADBFAiAsvkO2+kPh3YXC7HFK9odrMho6aeXStUCp
OKWYL9aK8wIhAIIYNOc4uQGWf/dFLRto2YanaDI4ywKE/C+2hjC6L1P0
-----END CERTIFICATE-----";

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).expect("test certificate")
    }

    #[test]
    fn a_pinned_certificate_is_accepted_without_loading_the_system_roots() {
        let v = PinnedOrWebPki {
            webpki: OnceLock::new(),
            pinned: vec![der(PINNED)],
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        };
        let name = ServerName::try_from("127.0.0.1").expect("name");
        let now = UnixTime::now();
        assert!(v
            .verify_server_cert(&der(PINNED), &[], &name, &[], now)
            .is_ok());
        assert!(
            v.webpki.get().is_none(),
            "roots loaded for a pinned certificate"
        );
        // Any other certificate is webpki's to judge (the roots are loaded then): a
        // self-signed one that nobody pinned is refused.
        assert!(v
            .verify_server_cert(&der(OTHER), &[], &name, &[], now)
            .is_err());
        assert!(v.webpki.get().is_some_and(|w| w.is_ok()));
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let empty = client_config(b"not pem").err();
        assert_eq!(empty, Some(CaFileError::Empty));
        assert_eq!(
            empty.map(|e| e.to_string()).as_deref(),
            Some("no certificate found")
        );
        assert!(client_config(PINNED.as_bytes()).is_ok());
    }
}
