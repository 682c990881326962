"""An independent cosign signer for tests/signatures.rs, on PyPI's `cryptography`.

    cosign_signer.py keygen KIND PRIVATE.pem PUBLIC.pem   KIND: ecdsa-p256, ed25519, rsa
    cosign_signer.py payload DIGEST REFERENCE             the simple-signing payload, as cosign writes it
    cosign_signer.py sign PRIVATE.pem PAYLOAD_FILE        the base64 signature cosign puts in
                                                          dev.cosignproject.cosign/signature
    cosign_signer.py bundle PRIVATE.pem DIGEST REFERENCE [keyless]
                                                          a Sigstore bundle v0.3: a DSSE envelope
                                                          around cosign's in-toto signing
                                                          statement, signed with the key, no
                                                          transparency-log entry (`keyless`: with
                                                          a placeholder certificate instead of a key)

Signatures are what `cosign sign --key` makes: ECDSA P-256 over SHA-256 (ASN.1 DER),
Ed25519 over the payload, RSA PKCS#1 v1.5 over SHA-256.
"""

import base64
import json
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa


def keygen(kind, private_path, public_path):
    if kind == "ecdsa-p256":
        key = ec.generate_private_key(ec.SECP256R1())
    elif kind == "ed25519":
        key = ed25519.Ed25519PrivateKey.generate()
    elif kind == "rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        sys.exit(f"unknown key kind {kind}")
    with open(private_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    with open(public_path, "wb") as f:
        f.write(
            key.public_key().public_bytes(
                serialization.Encoding.PEM,
                serialization.PublicFormat.SubjectPublicKeyInfo,
            )
        )


def payload(digest, reference):
    body = {
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": None,
    }
    sys.stdout.write(json.dumps(body, separators=(",", ":")))


def signature(private_path, data):
    with open(private_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    if isinstance(key, ec.EllipticCurvePrivateKey):
        sig = key.sign(data, ec.ECDSA(hashes.SHA256()))
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        sig = key.sign(data)
    elif isinstance(key, rsa.RSAPrivateKey):
        sig = key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    else:
        sys.exit("unsupported key")
    return base64.b64encode(sig).decode()


def sign(private_path, payload_path):
    with open(payload_path, "rb") as f:
        sys.stdout.write(signature(private_path, f.read()))


def bundle(private_path, digest, reference, mode="key"):
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": reference, "digest": {"sha256": digest.split(":", 1)[1]}}],
        "predicateType": "https://sigstore.dev/cosign/sign/v1",
        "predicate": {},
    }
    payload = json.dumps(statement, separators=(",", ":")).encode()
    payload_type = "application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (
        len(payload_type), payload_type.encode(), len(payload), payload)
    material = {"publicKey": {"hint": ""}, "tlogEntries": []}
    if mode == "keyless":
        material = {"certificate": {"rawBytes": base64.b64encode(b"not a certificate").decode()},
                    "tlogEntries": []}
    body = {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": material,
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode(),
            "payloadType": payload_type,
            "signatures": [{"sig": signature(private_path, pae), "keyid": ""}],
        },
    }
    sys.stdout.write(json.dumps(body))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"keygen": keygen, "payload": payload, "sign": sign, "bundle": bundle}[command](*args)
