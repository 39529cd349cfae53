"""Magnum cluster driver that hands every cluster change to the magnum-gitops service."""

from magnum_gitops_driver._version import __version__  # noqa: F401 - the package's version

# The entry-point name in the magnum.drivers group (pyproject.toml), also sent in events and
# the value of the image property magnum_driver (Magnum >= 18).
DRIVER_NAME = "k8s_gitops_v1"
