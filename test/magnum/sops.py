"""Decrypt a SOPS-encrypted YAML file from Git with the age identity, as Flux's
kustomize-controller does (no sops binary here): the data key comes from `age -d`, each
ENC[AES256_GCM,...] value is AES-GCM with the key's path ("stringData:tls.crt:") as its
additional data. Only for tests that must compare what Git holds with what Magnum serves.
"""

import base64
import re
import subprocess

import yaml
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ENC = re.compile(r"^ENC\[AES256_GCM,data:(.*),iv:(.*),tag:(.*),type:(\w+)\]$")


def data_key(doc, identity_file):
    enc = doc["sops"]["age"][0]["enc"]
    p = subprocess.run(["age", "-d", "-i", identity_file], input=enc.encode(),
                       capture_output=True, check=True)
    return p.stdout


def _decrypt(value, key, path):
    m = ENC.match(value)
    if not m:
        return value
    data, iv, tag, kind = m.groups()
    plain = AESGCM(key).decrypt(base64.b64decode(iv),
                                base64.b64decode(data) + base64.b64decode(tag),
                                ("".join(p + ":" for p in path)).encode())
    return plain.decode() if kind == "str" else plain


def decrypt(text, identity_file):
    """The document with every encrypted value in plain text (the sops section dropped)."""
    doc = yaml.safe_load(text)
    key = data_key(doc, identity_file)

    def walk(node, path):
        if isinstance(node, dict):
            return {k: walk(v, path + [str(k)]) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, path) for v in node]
        if isinstance(node, str):
            return _decrypt(node, key, path)
        return node

    doc.pop("sops")
    return walk(doc, [])
