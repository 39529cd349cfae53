"""magnum.conf ``[gitops]`` options of the magnum-gitops driver.

The options are registered on import. Options registered after magnum.conf has been parsed
are still read from the loaded files, so importing this module from the driver is enough.
"""

from oslo_config import cfg

GROUP = "gitops"

DEFAULT_PROVIDES = ["vm:ubuntu:kubernetes", "vm:flatcar:kubernetes"]

opts = [
    cfg.StrOpt(
        "endpoint",
        help="Base URL of the magnum-gitops service, e.g. "
        "https://magnum-gitops.example.org:8443. Plain http is refused unless the host is "
        "a loopback address or allow_plain_http is set: events carry CA private keys and "
        "application credential secrets.",
    ),
    cfg.StrOpt(
        "token_file",
        help="File holding the bearer token sent as 'Authorization: Bearer <token>'. Read "
        "for every event and status request, so the token can be rotated without a "
        "restart.",
    ),
    cfg.StrOpt("ca_file", help="CA bundle that verifies the service's TLS certificate "
               "(default: the system bundle)."),
    cfg.StrOpt("cert_file", help="Client certificate (PEM) for mutual TLS."),
    cfg.StrOpt("key_file", help="Private key (PEM) of cert_file."),
    cfg.FloatOpt("timeout", default=10.0, min=0.1,
                 help="Seconds one HTTP request may take."),
    cfg.FloatOpt(
        "deadline",
        default=25.0,
        min=0.1,
        help="Seconds an event may take in all, retries included. Keep it well below "
        "oslo.messaging's rpc_response_timeout (60 s): upgrade is a synchronous RPC call.",
    ),
    cfg.IntOpt("retries", default=5, min=0,
               help="How many times an event is re-sent after a 5xx answer, a timeout or a "
               "refused connection (same event id and body), within the deadline."),
    cfg.FloatOpt("backoff_initial", default=0.5, min=0.0,
                 help="First pause between retries, in seconds; doubled after each retry."),
    cfg.FloatOpt("backoff_max", default=8.0, min=0.0,
                 help="Longest pause between retries, in seconds."),
    cfg.ListOpt(
        "provides",
        default=DEFAULT_PROVIDES,
        help="Cluster types this driver claims, each server_type:os_distro:coe (a bare "
        "os_distro means vm:<os_distro>:kubernetes). Magnum picks a driver by the "
        "template's (server_type, cluster_distro, coe); disable other drivers that claim "
        "the same types with [drivers] disabled_drivers.",
    ),
    cfg.BoolOpt(
        "resolve_in_conductor",
        default=True,
        help="Look up the image, networks, subnets, flavors, volume types, the public "
        "Keystone URL and the region in the conductor, with the requesting user's token, "
        "and send them as the event's 'resolved' section. Anything that cannot be looked "
        "up is left out for the service to resolve.",
    ),
    cfg.BoolOpt("allow_plain_http", default=False,
                help="Allow an http:// endpoint on a non-loopback host."),
    cfg.StrOpt(
        "app_cred_interface",
        default="public",
        help="Interface of the identity endpoint written into the cluster's clouds.yaml "
        "(resolved.keystone_public_url).",
    ),
]


def register(conf=None):
    conf = conf or cfg.CONF
    conf.register_opts(opts, group=GROUP)
    return conf[GROUP]


def list_opts():
    """For oslo-config-generator (entry point oslo.config.opts)."""
    return [(GROUP, opts)]


def parse_provides(entries):
    """Turn the 'provides' option into Magnum's list of {server_type, os, coe} dicts."""
    out = []
    for raw in entries or []:
        entry = raw.strip()
        if not entry:
            continue
        parts = entry.split(":")
        if len(parts) == 1:
            parts = ["vm", parts[0], "kubernetes"]
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise ValueError(
                "[gitops] provides: %r is not server_type:os_distro:coe or os_distro" % raw)
        item = {"server_type": parts[0].strip(), "os": parts[1].strip(),
                "coe": parts[2].strip()}
        if item not in out:
            out.append(item)
    return out


register()
