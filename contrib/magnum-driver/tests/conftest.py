"""Make the driver importable and discoverable by Magnum's loader without installing it.

Magnum finds drivers through the ``magnum.drivers`` entry-point group (pkg_resources on
Zed, importlib.metadata from 18.0.0, stevedore for loading by name). When the package is not
installed, a dist-info carrying the same entry points as pyproject.toml is written to a
temporary directory on sys.path. test_packaging.py checks a real install separately.
"""

import atexit
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from magnum_gitops_driver import DRIVER_NAME, __version__  # noqa: E402

ENTRY_POINTS = """[magnum.drivers]
%s = magnum_gitops_driver.driver:Driver

[oslo.config.opts]
magnum_gitops_driver = magnum_gitops_driver.conf:list_opts
""" % DRIVER_NAME


def _installed():
    from importlib import metadata
    return any(ep.name == DRIVER_NAME
               for ep in metadata.entry_points(group="magnum.drivers"))


def _register():
    if _installed():
        return
    site = tempfile.mkdtemp(prefix="magnum-gitops-driver-site-")
    atexit.register(shutil.rmtree, site, True)
    info = os.path.join(site, "magnum_gitops_driver-%s.dist-info" % __version__)
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: magnum-gitops-driver\nVersion: %s\n"
                % __version__)
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write(ENTRY_POINTS)
    sys.path.insert(0, site)
    import pkg_resources
    pkg_resources.working_set.add_entry(site)


_register()
