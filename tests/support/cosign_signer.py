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

    cosign_signer.py ca DIR                               a test Fulcio: a root and an intermediate CA
                                                          (code-signing EKU), as DER and PEM keys, and
                                                          its certificate transparency log key
    cosign_signer.py rekor DIR                            a test Rekor log key (ECDSA P-256), and a
                                                          test timestamp authority (a root and a
                                                          P-384 signing certificate with the
                                                          timeStamping EKU)
    cosign_signer.py trusted-root CA_DIR REKOR_DIR        the Sigstore trusted_root.json trusting them
    cosign_signer.py keyless CA_DIR REKOR_DIR LAYOUT DIGEST REFERENCE SUBJECT ISSUER [OPTION...]
                                                          a keyless signature as JSON: LAYOUT `sig` gives
                                                          the payload and the `.sig` layer annotations
                                                          (certificate, chain, bundle with the SET);
                                                          `bundle` gives a Sigstore bundle v0.3 (DSSE,
                                                          certificate, tlog entry with the SET and an
                                                          inclusion proof in a real RFC 6962 tree with a
                                                          signed checkpoint). OPTIONs: expired (logged
                                                          after the certificate's ten minutes),
                                                          tamper-set, tamper-proof, no-tlog,
                                                          signed=DIGEST (the payload names DIGEST),
                                                          no-sct (the certificate has no SCT),
                                                          sct-unknown-log (its SCT is from a CT log
                                                          the trusted root does not list);
                                                          for `bundle`: timestamp (an RFC 3161
                                                          timestamp of the signature, a minute after
                                                          signing), late-timestamp (twenty minutes
                                                          after), rekor-v2 (a Rekor v2 entry:
                                                          hashedrekord 0.0.2 of the envelope's PAE, no
                                                          SET, no integrated time)

Signatures are what `cosign sign --key` makes: ECDSA P-256 over SHA-256 (ASN.1 DER),
Ed25519 over the payload, RSA PKCS#1 v1.5 over SHA-256. Keyless ones are what `cosign sign`
makes with a Fulcio certificate (ten minutes of validity, the SAN URI, the OIDC issuer
extension 1.3.6.1.4.1.57264.1.8 and the deprecated .1.1, and an embedded SCT of the CA's CT
log) logged in Rekor.
"""

import base64
import datetime
import hashlib
import json
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier


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


# Keyless: a test Fulcio and a test Rekor.

SIGNED_AT = datetime.datetime(2024, 2, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
FULCIO_ISSUER = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
FULCIO_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
b64 = lambda b: base64.b64encode(b).decode()


def _save_key(key, path):
    with open(path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


def _load(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".der"):
        return x509.load_der_x509_certificate(data)
    return serialization.load_pem_private_key(data, password=None)


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "imagebump.test"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def ca(directory):
    os.makedirs(directory, exist_ok=True)
    start = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    end = datetime.datetime(2035, 1, 1, tzinfo=datetime.timezone.utc)
    root_key = ec.generate_private_key(ec.SECP384R1())
    root = (x509.CertificateBuilder().subject_name(_name("test-fulcio"))
            .issuer_name(_name("test-fulcio")).public_key(root_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(root_key.public_key()),
                           critical=False)
            .sign(root_key, hashes.SHA384()))
    inter_key = ec.generate_private_key(ec.SECP384R1())
    inter = (x509.CertificateBuilder().subject_name(_name("test-fulcio-intermediate"))
             .issuer_name(root.subject).public_key(inter_key.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(start)
             .not_valid_after(end)
             .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
             .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                            critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
             .add_extension(x509.SubjectKeyIdentifier.from_public_key(inter_key.public_key()),
                            critical=False)
             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()),
                            critical=False)
             .sign(root_key, hashes.SHA384()))
    for name, cert in (("root", root), ("intermediate", inter)):
        with open(os.path.join(directory, name + ".der"), "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.DER))
    _save_key(inter_key, os.path.join(directory, "intermediate.key"))
    _ct_log(directory)


def rekor(directory):
    os.makedirs(directory, exist_ok=True)
    _save_key(ec.generate_private_key(ec.SECP256R1()), os.path.join(directory, "rekor.key"))
    _tsa(directory)


def _tsa(directory):
    """A timestamp authority: a self-signed root and a P-384 signing certificate."""
    start = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    end = datetime.datetime(2035, 1, 1, tzinfo=datetime.timezone.utc)
    root_key = ec.generate_private_key(ec.SECP384R1())
    root = (x509.CertificateBuilder().subject_name(_name("test-tsa-root"))
            .issuer_name(_name("test-tsa-root")).public_key(root_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                           critical=True)
            .sign(root_key, hashes.SHA384()))
    key = ec.generate_private_key(ec.SECP384R1())
    leaf = (x509.CertificateBuilder().subject_name(_name("test-tsa"))
            .issuer_name(root.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                           critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
            .sign(root_key, hashes.SHA384()))
    for name, cert in (("tsa-root", root), ("tsa", leaf)):
        with open(os.path.join(directory, name + ".der"), "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.DER))
    _save_key(key, os.path.join(directory, "tsa.key"))


def _der(tag, content):
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


def _oid(dotted):
    parts = [int(p) for p in dotted.split(".")]
    out = bytes([parts[0] * 40 + parts[1]])
    for p in parts[2:]:
        chunk = [p & 0x7F]
        p >>= 7
        while p:
            chunk.append(0x80 | (p & 0x7F))
            p >>= 7
        out += bytes(reversed(chunk))
    return _der(0x06, out)


def _int(n):
    return _der(0x02, n.to_bytes(n.bit_length() // 8 + 1, "big"))


def _seq(*items):
    return _der(0x30, b"".join(items))


def _timestamp(rekor_dir, signature, at):
    """An RFC 3161 TimeStampResp for `signature` at `at`, as sigstore's TSA writes it: CMS
    SignedData around a TSTInfo, ecdsa-with-SHA256 by a P-384 key, the certificate embedded."""
    key = _load(os.path.join(rekor_dir, "tsa.key"))
    cert = _load(os.path.join(rekor_dir, "tsa.der"))
    sha256 = _seq(_oid("2.16.840.1.101.3.4.2.1"))
    tst_info_oid = _oid("1.2.840.113549.1.9.16.1.4")
    tst = _seq(_int(1), _oid("1.3.6.1.4.1.57264.2"),
               _seq(sha256, _der(0x04, hashlib.sha256(signature).digest())),
               _int(7), _der(0x18, at.strftime("%Y%m%d%H%M%SZ").encode()))
    attrs = sorted([
        _seq(_oid("1.2.840.113549.1.9.3"), _der(0x31, tst_info_oid)),
        _seq(_oid("1.2.840.113549.1.9.4"), _der(0x31, _der(0x04, hashlib.sha256(tst).digest()))),
    ])
    signed = key.sign(_der(0x31, b"".join(attrs)), ec.ECDSA(hashes.SHA256()))
    signer = _seq(_int(1), _seq(cert.issuer.public_bytes(), _int(cert.serial_number)), sha256,
                  _der(0xA0, b"".join(attrs)), _seq(_oid("1.2.840.10045.4.3.2")),
                  _der(0x04, signed))
    signed_data = _seq(_int(3), _der(0x31, sha256),
                       _seq(tst_info_oid, _der(0xA0, _der(0x04, tst))),
                       _der(0xA0, cert.public_bytes(serialization.Encoding.DER)),
                       _der(0x31, signer))
    token = _seq(_oid("1.2.840.113549.1.7.2"), _der(0xA0, signed_data))
    return _seq(_seq(_int(0)), token)


def _rekor_public_der(directory):
    key = _load(os.path.join(directory, "rekor.key"))
    return key.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def trusted_root(ca_dir, rekor_dir):
    der = _rekor_public_der(rekor_dir)
    chain = [_load(os.path.join(ca_dir, n + ".der")) for n in ("intermediate", "root")]
    root = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [{
            "baseUrl": "https://rekor.test",
            "hashAlgorithm": "SHA2_256",
            "publicKey": {"rawBytes": b64(der), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                          "validFor": {"start": "2020-01-01T00:00:00Z"}},
            "logId": {"keyId": b64(hashlib.sha256(der).digest())},
        }],
        "certificateAuthorities": [{
            "subject": {"organization": "imagebump.test", "commonName": "test-fulcio"},
            "uri": "https://fulcio.test",
            "certChain": {"certificates": [
                {"rawBytes": b64(c.public_bytes(serialization.Encoding.DER))} for c in chain]},
            "validFor": {"start": "2020-01-01T00:00:00Z"},
        }],
        "ctlogs": _ctlogs(ca_dir),
        "timestampAuthorities": [{
            "subject": {"organization": "imagebump.test", "commonName": "test-tsa"},
            "uri": "https://tsa.test",
            "certChain": {"certificates": [
                {"rawBytes": b64(_load(os.path.join(rekor_dir, n + ".der"))
                                 .public_bytes(serialization.Encoding.DER))}
                for n in ("tsa", "tsa-root")]},
            "validFor": {"start": "2020-01-01T00:00:00Z"},
        }],
    }
    sys.stdout.write(json.dumps(root, indent=2))


def _leaf(ca_dir, subject, issuer, sct="valid"):
    """A Fulcio-like certificate for a fresh key, valid for ten minutes from SIGNED_AT, with
    an SCT of the CA's CT log (`sct`: valid, none, unknown-log)."""
    key = ec.generate_private_key(ec.SECP256R1())
    inter = _load(os.path.join(ca_dir, "intermediate.der"))
    inter_key = _load(os.path.join(ca_dir, "intermediate.key"))
    utf8 = issuer.encode()
    der_utf8 = bytes([0x0C, len(utf8)]) + utf8  # a DER UTF8String (issuers are short)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([]))
            .issuer_name(inter.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(SIGNED_AT)
            .not_valid_after(SIGNED_AT + datetime.timedelta(minutes=10))
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                           critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(subject)]),
                           critical=True)
            .add_extension(x509.UnrecognizedExtension(FULCIO_ISSUER_V1, utf8), critical=False)
            .add_extension(x509.UnrecognizedExtension(FULCIO_ISSUER, der_utf8), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(inter_key.public_key()),
                           critical=False))
    cert = builder.sign(inter_key, hashes.SHA384())
    if sct != "none":
        cert = _embed_sct(ca_dir, builder, cert, sct)
    return key, cert


# Certificate transparency: the test Fulcio's CT log, and the SCT it embeds (RFC 6962).

SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")


def _ct_log(ca_dir):
    """The CA's certificate transparency log key (ECDSA P-256), as Fulcio's CT log has one."""
    _save_key(ec.generate_private_key(ec.SECP256R1()), os.path.join(ca_dir, "ctlog.key"))


def _spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def _ctlogs(ca_dir):
    """The trusted root's `ctlogs`: the CA's CT log, its id the SHA-256 of its key."""
    der = _spki(_load(os.path.join(ca_dir, "ctlog.key")))
    return [{
        "baseUrl": "https://ctfe.test",
        "hashAlgorithm": "SHA2_256",
        "publicKey": {"rawBytes": b64(der), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                      "validFor": {"start": "2020-01-01T00:00:00Z"}},
        "logId": {"keyId": b64(hashlib.sha256(der).digest())},
    }]


def _sct_option(options):
    """The SCT a keyless signer's OPTIONs ask for: no-sct, sct-unknown-log, else a valid one."""
    if "no-sct" in options:
        return "none"
    return "unknown-log" if "sct-unknown-log" in options else "valid"


def _der_octet_string(data):
    n = len(data)
    length = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes(
        (n.bit_length() + 7) // 8, "big")
    return b"\x04" + length + data


def _embed_sct(ca_dir, builder, precert, mode):
    """`builder`'s certificate with an SCT over `precert` (the same certificate without the
    SCT list, so its TBS is the precertificate's) in the SCT list extension, added last.
    `unknown-log`: signed by a CT log no trusted root lists. The SCT carries an extension,
    as RFC 6962 allows."""
    inter = _load(os.path.join(ca_dir, "intermediate.der"))
    inter_key = _load(os.path.join(ca_dir, "intermediate.key"))
    log_key = (ec.generate_private_key(ec.SECP256R1()) if mode == "unknown-log"
               else _load(os.path.join(ca_dir, "ctlog.key")))
    log_id = hashlib.sha256(_spki(log_key)).digest()
    issuer_key_hash = hashlib.sha256(inter.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).digest()
    tbs = precert.tbs_certificate_bytes
    timestamp = int(SIGNED_AT.timestamp() * 1000) + 250
    extensions = b"imagebump"
    signed = (bytes([0, 0]) + timestamp.to_bytes(8, "big") + (1).to_bytes(2, "big")
              + issuer_key_hash + len(tbs).to_bytes(3, "big") + tbs
              + len(extensions).to_bytes(2, "big") + extensions)
    sig = log_key.sign(signed, ec.ECDSA(hashes.SHA256()))
    sct = (bytes([0]) + log_id + timestamp.to_bytes(8, "big")
           + len(extensions).to_bytes(2, "big") + extensions
           + bytes([4, 3]) + len(sig).to_bytes(2, "big") + sig)
    sct_list = (len(sct) + 2).to_bytes(2, "big") + len(sct).to_bytes(2, "big") + sct
    return (builder.add_extension(x509.UnrecognizedExtension(SCT_LIST, _der_octet_string(sct_list)),
                                  critical=False)
            .sign(inter_key, hashes.SHA384()))


def _merkle_root(leaves):
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _merkle_root(leaves[:k]) + _merkle_root(leaves[k:])).digest()


def _merkle_path(leaves, i):
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if i < k:
        return _merkle_path(leaves[:k], i) + [_merkle_root(leaves[k:])]
    return _merkle_path(leaves[k:], i - k) + [_merkle_root(leaves[:k])]


def _log(rekor_dir, body, integrated_time, options):
    """Log `body` in a tree of 13 entries (at index 9): its SET, inclusion proof, checkpoint."""
    key = _load(os.path.join(rekor_dir, "rekor.key"))
    log_id = hashlib.sha256(_rekor_public_der(rekor_dir)).digest()
    bodies = [b"filler %d" % i for i in range(13)]
    index = 9
    bodies[index] = body
    leaves = [hashlib.sha256(b"\x00" + b).digest() for b in bodies]
    root, path = _merkle_root(leaves), _merkle_path(leaves, index)
    global_index = 1000 + index
    set_payload = json.dumps({"body": b64(body), "integratedTime": integrated_time,
                              "logID": log_id.hex(), "logIndex": global_index},
                             sort_keys=True, separators=(",", ":")).encode()
    sett = key.sign(set_payload, ec.ECDSA(hashes.SHA256()))
    if "tamper-set" in options:
        sett = sett[:-1] + bytes([sett[-1] ^ 1])
    if "tamper-proof" in options:
        path[1] = bytes([path[1][0] ^ 1]) + path[1][1:]
    note = "rekor.test - 1193016\n%d\n%s\n" % (len(leaves), b64(root))
    note_sig = key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
    checkpoint = note + "\n\u2014 rekor.test " + b64(log_id[:4] + note_sig) + "\n"
    return {"log_id": log_id, "index": global_index, "set": sett, "root": root,
            "path": path, "size": len(leaves), "checkpoint": checkpoint, "shard_index": index}


def keyless(ca_dir, rekor_dir, layout, digest, reference, subject, issuer, *options):
    signed = digest
    for o in options:
        if o.startswith("signed="):
            signed = o.split("=", 1)[1]
    key, cert = _leaf(ca_dir, subject, issuer, _sct_option(options))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    chain_pem = b"".join(_load(os.path.join(ca_dir, n + ".der")).public_bytes(serialization.Encoding.PEM)
                         for n in ("intermediate", "root"))
    minutes = 20 if "expired" in options else 1
    integrated = int((SIGNED_AT + datetime.timedelta(minutes=minutes)).timestamp())
    if layout == "sig":
        body_payload = json.dumps({"critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": signed},
            "type": "cosign container image signature"}, "optional": None},
            separators=(",", ":")).encode()
        sig = key.sign(body_payload, ec.ECDSA(hashes.SHA256()))
        entry = {"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hashlib.sha256(body_payload).hexdigest()}},
            "signature": {"content": b64(sig), "publicKey": {"content": b64(cert_pem)}}}}
        body = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
        log = _log(rekor_dir, body, integrated, options)
        annotations = {
            "dev.cosignproject.cosign/signature": b64(sig),
            "dev.sigstore.cosign/certificate": cert_pem.decode(),
            "dev.sigstore.cosign/chain": chain_pem.decode(),
        }
        if "no-tlog" not in options:
            annotations["dev.sigstore.cosign/bundle"] = json.dumps({
                "SignedEntryTimestamp": b64(log["set"]),
                "Payload": {"body": b64(body), "integratedTime": integrated,
                            "logIndex": log["index"], "logID": log["log_id"].hex()}})
        sys.stdout.write(json.dumps({"payload": b64(body_payload), "annotations": annotations}))
        return
    statement = json.dumps({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": reference, "digest": {"sha256": signed.split(":", 1)[1]}}],
        "predicateType": "https://sigstore.dev/cosign/sign/v1",
        "predicate": {},
    }, separators=(",", ":")).encode()
    payload_type = "application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type.encode(), len(statement), statement)
    sig = key.sign(pae, ec.ECDSA(hashes.SHA256()))
    envelope = {"payload": b64(statement), "payloadType": payload_type,
                "signatures": [{"sig": b64(sig), "keyid": ""}]}
    entry = {"apiVersion": "0.0.1", "kind": "dsse", "spec": {
        "envelopeHash": {"algorithm": "sha256",
                         "value": hashlib.sha256(json.dumps(envelope).encode()).hexdigest()},
        "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()},
        "signatures": [{"signature": b64(sig), "verifier": b64(cert_pem)}]}}
    if "rekor-v2" in options:
        entry = {"apiVersion": "0.0.2", "kind": "hashedrekord", "spec": {"hashedRekordV002": {
            "data": {"algorithm": "SHA2_256", "digest": b64(hashlib.sha256(pae).digest())},
            "signature": {"content": b64(sig), "verifier": {
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "x509Certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))}}}}}}
    body = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    log = _log(rekor_dir, body, integrated, options)
    tlog = {
        "logIndex": str(log["index"]),
        "logId": {"keyId": b64(log["log_id"])},
        "kindVersion": {"kind": "dsse", "version": "0.0.1"},
        "integratedTime": str(integrated),
        "inclusionPromise": {"signedEntryTimestamp": b64(log["set"])},
        "inclusionProof": {
            "logIndex": str(log["shard_index"]),
            "rootHash": b64(log["root"]),
            "treeSize": str(log["size"]),
            "hashes": [b64(h) for h in log["path"]],
            "checkpoint": {"envelope": log["checkpoint"]},
        },
        "canonicalizedBody": b64(body),
    }
    if "rekor-v2" in options:
        tlog["kindVersion"] = {"kind": "hashedrekord", "version": "0.0.2"}
        del tlog["integratedTime"], tlog["inclusionPromise"]
    bundle = {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))},
            "tlogEntries": [] if "no-tlog" in options else [tlog],
        },
        "dsseEnvelope": envelope,
    }
    stamped = {"timestamp": 1, "late-timestamp": 20}
    for option, minutes in stamped.items():
        if option in options:
            at = SIGNED_AT + datetime.timedelta(minutes=minutes)
            bundle["verificationMaterial"]["timestampVerificationData"] = {"rfc3161Timestamps": [
                {"signedTimestamp": b64(_timestamp(rekor_dir, sig, at))}]}
    sys.stdout.write(json.dumps({"bundle": json.dumps(bundle)}))


# Attestations (tests/attestations.rs): in-toto statements in DSSE envelopes, as
# `cosign attest` writes them.
#
#     cosign_signer.py attest PRIVATE.pem DIGEST REFERENCE PREDICATE_TYPE PREDICATE_FILE
#                                               the DSSE envelope (JSON) of a `.att` layer or a
#                                               DSSE referrer, signed with the key
#     cosign_signer.py attest-bundle PRIVATE.pem DIGEST REFERENCE PREDICATE_TYPE PREDICATE_FILE
#                                               a key-signed Sigstore bundle v0.3 around it
#     cosign_signer.py attest-keyless CA_DIR REKOR_DIR DIGEST REFERENCE SUBJECT ISSUER
#                                     PREDICATE_TYPE PREDICATE_FILE
#                                               a keyless Sigstore bundle v0.3 (certificate, a
#                                               `dsse` Rekor entry with SET and inclusion proof)
#     cosign_signer.py attest-keyless-att CA_DIR REKOR_DIR DIGEST REFERENCE SUBJECT ISSUER
#                                         PREDICATE_TYPE PREDICATE_FILE
#                                               `cosign attest`'s legacy layout as JSON: the
#                                               envelope of a `.att` layer and its annotations
#                                               (certificate, chain, bundle: an `intoto` v0.0.2
#                                               Rekor entry with its SET)

def _statement(digest, reference, predicate_type, predicate_path):
    with open(predicate_path, "rb") as f:
        predicate = json.load(f)
    return json.dumps({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": reference, "digest": {"sha256": digest.split(":", 1)[1]}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }, separators=(",", ":")).encode()


def _pae(payload_type, payload):
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type.encode(), len(payload), payload)


def _attest_envelope(private_path, digest, reference, predicate_type, predicate_path):
    statement = _statement(digest, reference, predicate_type, predicate_path)
    payload_type = "application/vnd.in-toto+json"
    sig = signature(private_path, _pae(payload_type, statement))
    return {"payloadType": payload_type, "payload": b64(statement),
            "signatures": [{"keyid": "", "sig": sig}]}


def attest(private_path, digest, reference, predicate_type, predicate_path):
    sys.stdout.write(json.dumps(
        _attest_envelope(private_path, digest, reference, predicate_type, predicate_path)))


def attest_bundle(private_path, digest, reference, predicate_type, predicate_path):
    envelope = _attest_envelope(private_path, digest, reference, predicate_type, predicate_path)
    sys.stdout.write(json.dumps({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"publicKey": {"hint": ""}, "tlogEntries": []},
        "dsseEnvelope": envelope,
    }))


def attest_keyless(ca_dir, rekor_dir, digest, reference, subject, issuer, predicate_type,
                   predicate_path):
    key, cert = _leaf(ca_dir, subject, issuer)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    statement = _statement(digest, reference, predicate_type, predicate_path)
    payload_type = "application/vnd.in-toto+json"
    sig = key.sign(_pae(payload_type, statement), ec.ECDSA(hashes.SHA256()))
    envelope = {"payload": b64(statement), "payloadType": payload_type,
                "signatures": [{"sig": b64(sig), "keyid": ""}]}
    entry = {"apiVersion": "0.0.1", "kind": "dsse", "spec": {
        "envelopeHash": {"algorithm": "sha256",
                         "value": hashlib.sha256(json.dumps(envelope).encode()).hexdigest()},
        "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()},
        "signatures": [{"signature": b64(sig), "verifier": b64(cert_pem)}]}}
    body = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    integrated = int((SIGNED_AT + datetime.timedelta(minutes=1)).timestamp())
    log = _log(rekor_dir, body, integrated, ())
    tlog = {
        "logIndex": str(log["index"]),
        "logId": {"keyId": b64(log["log_id"])},
        "kindVersion": {"kind": "dsse", "version": "0.0.1"},
        "integratedTime": str(integrated),
        "inclusionPromise": {"signedEntryTimestamp": b64(log["set"])},
        "inclusionProof": {
            "logIndex": str(log["shard_index"]),
            "rootHash": b64(log["root"]),
            "treeSize": str(log["size"]),
            "hashes": [b64(h) for h in log["path"]],
            "checkpoint": {"envelope": log["checkpoint"]},
        },
        "canonicalizedBody": b64(body),
    }
    sys.stdout.write(json.dumps({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))},
            "tlogEntries": [tlog],
        },
        "dsseEnvelope": envelope,
    }))


def attest_keyless_att(ca_dir, rekor_dir, digest, reference, subject, issuer, predicate_type,
                       predicate_path):
    key, cert = _leaf(ca_dir, subject, issuer)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    chain_pem = b"".join(_load(os.path.join(ca_dir, n + ".der")).public_bytes(serialization.Encoding.PEM)
                         for n in ("intermediate", "root"))
    statement = _statement(digest, reference, predicate_type, predicate_path)
    payload_type = "application/vnd.in-toto+json"
    sig = b64(key.sign(_pae(payload_type, statement), ec.ECDSA(hashes.SHA256())))
    envelope = {"payloadType": payload_type, "payload": b64(statement),
                "signatures": [{"keyid": "", "sig": sig}]}
    # Rekor's intoto v0.0.2 canonical body: the signature base64 twice, the PEM once.
    entry = {"apiVersion": "0.0.2", "kind": "intoto", "spec": {"content": {
        "envelope": {"payloadType": payload_type,
                     "signatures": [{"publicKey": b64(cert_pem), "sig": b64(sig.encode())}]},
        "hash": {"algorithm": "sha256",
                 "value": hashlib.sha256(json.dumps(envelope).encode()).hexdigest()},
        "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()}}}}
    body = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    integrated = int((SIGNED_AT + datetime.timedelta(minutes=1)).timestamp())
    log = _log(rekor_dir, body, integrated, ())
    annotations = {
        "dev.cosignproject.cosign/signature": "",
        "dev.sigstore.cosign/certificate": cert_pem.decode(),
        "dev.sigstore.cosign/chain": chain_pem.decode(),
        "dev.sigstore.cosign/bundle": json.dumps({
            "SignedEntryTimestamp": b64(log["set"]),
            "Payload": {"body": b64(body), "integratedTime": integrated,
                        "logIndex": log["index"], "logID": log["log_id"].hex()}}),
        "predicateType": predicate_type,
    }
    sys.stdout.write(json.dumps({"envelope": json.dumps(envelope), "annotations": annotations}))


ATTEST_COMMANDS = {"attest": attest, "attest-bundle": attest_bundle,
                   "attest-keyless": attest_keyless, "attest-keyless-att": attest_keyless_att}

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] in ATTEST_COMMANDS:
    ATTEST_COMMANDS[sys.argv[1]](*sys.argv[2:])
    sys.exit(0)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"keygen": keygen, "payload": payload, "sign": sign, "bundle": bundle, "ca": ca,
     "rekor": rekor, "trusted-root": trusted_root, "keyless": keyless}[command](*args)
