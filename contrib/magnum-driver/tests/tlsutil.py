"""A throw-away CA with a server certificate for 127.0.0.1 and a client certificate."""

import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)
    return path


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make(directory, prefix="tls"):
    """Write {prefix}-ca.pem, -server.pem/-server.key, -client.pem/-client.key."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name(prefix + " test CA"))
          .issuer_name(_name(prefix + " test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    out = {"ca_file": _write(os.path.join(directory, prefix + "-ca.pem"),
                             ca.public_bytes(serialization.Encoding.PEM))}
    for role, usage, san in (
            ("server", ExtendedKeyUsageOID.SERVER_AUTH,
             x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])),
            ("client", ExtendedKeyUsageOID.CLIENT_AUTH, None)):
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(_name("magnum-" + role))
             .issuer_name(ca.subject).public_key(key.public_key())
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if san is not None:
            b = b.add_extension(san, critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        out[role + "_cert"] = _write(os.path.join(directory, "%s-%s.pem" % (prefix, role)),
                                     cert.public_bytes(serialization.Encoding.PEM))
        out[role + "_key"] = _write(os.path.join(directory, "%s-%s.key" % (prefix, role)),
                                    _key_pem(key))
    return out
