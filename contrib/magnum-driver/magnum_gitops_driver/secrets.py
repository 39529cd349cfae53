"""The secrets only the conductor holds: an application credential made with the user's
token, and the cluster's four certificate/key pairs from Magnum's certificate store.

Nothing in this module logs a secret or puts one into an exception message.
"""

import contextlib
import logging as std_logging
import secrets as pysecrets

from oslo_log import log as logging
from oslo_utils import encodeutils

from magnum.common import cert_manager as cert_backends
from magnum.common import exception
from magnum.common import utils as magnum_utils
from magnum.common.x509 import operations as x509
from magnum.conductor.handlers.common import cert_manager

LOG = logging.getLogger(__name__)

CERT_REFS = ("ca_cert_ref", "magnum_cert_ref", "etcd_ca_cert_ref", "front_proxy_ca_cert_ref")

# At DEBUG, keystoneauth logs response bodies ("RESP BODY: ..."): the one that creates an
# application credential carries its secret, Barbican's payloads carry the CA keys.
HTTP_BODY_LOGGERS = ("keystoneauth", "keystoneclient", "openstack", "barbicanclient")


@contextlib.contextmanager
def no_http_body_logs():
    """Keep the HTTP client libraries below DEBUG for the duration of one call."""
    saved = []
    for name in HTTP_BODY_LOGGERS:
        logger = std_logging.getLogger(name)
        saved.append((logger, logger.level))
        if logger.getEffectiveLevel() < std_logging.INFO:
            logger.setLevel(std_logging.INFO)
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


def _text(value):
    return encodeutils.safe_decode(value) if isinstance(value, bytes) else value


def _key(cert):
    """The unencrypted PKCS#8 PEM key of a certificate-store entry."""
    passphrase = cert.get_private_key_passphrase()
    key = cert.get_private_key()
    if passphrase:
        key = x509.decrypt_key(key, passphrase)
    return _text(key)


def certificates(context, cluster):
    """{ca, etcd, front_proxy, magnum_client: {cert, key}} in PEM, keys unencrypted."""
    out = {}
    with no_http_body_logs():
        for name, kind in (("ca", None), ("etcd", "etcd"), ("front_proxy", "front_proxy")):
            c = cert_manager.get_cluster_ca_certificate(cluster, context=context,
                                                        ca_cert_type=kind)
            out[name] = {"cert": _text(c.get_certificate()), "key": _key(c)}
        c = cert_manager.get_cluster_magnum_cert(cluster, context=context)
        out["magnum_client"] = {"cert": _text(c.get_certificate()), "key": _key(c)}
    return out


def ca_bundle():
    """[drivers] openstack_ca_file, or None (the service then uses its own default)."""
    return magnum_utils.get_openstack_ca() or None


def app_cred_name(cluster):
    return "magnum-%s-%s" % (cluster.uuid, pysecrets.token_hex(4))


def create_app_cred(osc, context, cluster):
    """A new application credential of the requesting user, made with the user's token.

    Returns {"id", "secret", "name"}. Like magnum-capi-helm: no roles are named, so the
    credential carries the token's roles on the token's project.
    """
    if not context.user_id:
        raise exception.MagnumException(
            message="an application credential needs the requesting user's context")
    kc = osc.keystone().client
    name = app_cred_name(cluster)
    description = "Magnum cluster (%s)" % (cluster.name or cluster.uuid)
    try:
        with no_http_body_logs():
            ac = _create(kc, context, name, description)
    except Exception as e:
        LOG.warning("magnum-gitops: creating the application credential of cluster %(c)s "
                    "failed: %(t)s", {"c": cluster.uuid, "t": e.__class__.__name__})
        raise exception.MagnumException(
            message="Failed to create an application credential for the cluster (%s); a "
            "user authenticated with a restricted application credential cannot create "
            "one." % e.__class__.__name__)
    LOG.info("magnum-gitops: created application credential %(id)s (%(n)s) for cluster %(c)s",
             {"id": ac.id, "n": name, "c": cluster.uuid})
    return {"id": ac.id, "secret": ac.secret, "name": name}


def _keystoneclient(kc):
    """Whether kc is python-keystoneclient (Magnum <= 22: an application_credentials
    manager) rather than openstacksdk's identity proxy (master: a method of that name)."""
    return hasattr(kc, "application_credentials") and not callable(kc.application_credentials)


def _create(kc, context, name, description):
    if _keystoneclient(kc):
        return kc.application_credentials.create(
            user=context.user_id, name=name, description=description)
    # openstacksdk identity proxy (master)
    return kc.create_application_credential(context.user_id, name=name,
                                            description=description)


def delete_app_cred(osc, context, cluster, app_cred_id):
    """Best effort: remove a credential this driver just made (the event was refused)."""
    try:
        kc = osc.keystone().client
        if _keystoneclient(kc):
            kc.application_credentials.delete(app_cred_id, user=context.user_id)
        else:
            kc.delete_application_credential(context.user_id, app_cred_id)
        LOG.info("magnum-gitops: deleted application credential %(id)s of cluster %(c)s",
                 {"id": app_cred_id, "c": cluster.uuid})
    except Exception as e:  # noqa: BLE001
        LOG.warning("magnum-gitops: could not delete application credential %(id)s of "
                    "cluster %(c)s: %(t)s", {"id": app_cred_id, "c": cluster.uuid,
                                             "t": e.__class__.__name__})


def _not_found(e):
    """Whether a Keystone client error is a 404 (python-keystoneclient/keystoneauth:
    http_status; openstacksdk: status_code)."""
    return 404 in (getattr(e, "http_status", None), getattr(e, "status_code", None))


def delete_cluster_app_creds(osc, cluster):
    """Delete the application credentials this driver made for a deleted cluster.

    They are the credentials of the cluster's user named ``magnum-<cluster uuid>-…``:
    create_cluster's and rotate_credential's (the rotating user's, when it was the same
    user). Called once Magnum's status job sees DELETE_COMPLETE, with its admin context
    (Magnum's service user, which Keystone lets list and delete any user's credentials).
    Idempotent: a credential or user already gone is success. Raises when Keystone
    cannot list or delete, so that the caller tries again. Returns the deleted ids.
    """
    user = cluster.user_id
    prefix = "magnum-%s-" % cluster.uuid
    kc = osc.keystone().client
    legacy = _keystoneclient(kc)
    with no_http_body_logs():
        try:
            listed = list(kc.application_credentials.list(user=user) if legacy
                          else kc.application_credentials(user))
        except Exception as e:
            if _not_found(e):  # the user is gone, and its credentials with it
                return []
            raise
        deleted = []
        for ac in listed:
            if not (getattr(ac, "name", None) or "").startswith(prefix):
                continue
            try:
                if legacy:
                    kc.application_credentials.delete(ac.id, user=user)
                else:
                    kc.delete_application_credential(user, ac.id, ignore_missing=True)
            except Exception as e:
                if not _not_found(e):
                    raise
            deleted.append(ac.id)
    for ac_id in deleted:
        LOG.info("magnum-gitops: deleted application credential %(id)s of deleted cluster "
                 "%(c)s", {"id": ac_id, "c": cluster.uuid})
    return deleted


def delete_cert_refs(context, cluster, refs):
    """Delete certificate-store entries by reference (idempotent, never raises)."""
    backend = cert_backends.get_backend().CertManager
    for ref in refs:
        if not ref:
            continue
        try:
            backend.delete_cert(ref, resource_ref=cluster.uuid, context=context)
        except Exception as e:  # noqa: BLE001
            LOG.warning("magnum-gitops: deleting certificate %(r)s of cluster %(c)s failed: "
                        "%(t)s", {"r": ref, "c": cluster.uuid, "t": e.__class__.__name__})
