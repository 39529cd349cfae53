"""Magnum cluster driver that hands every cluster change to the magnum-gitops service."""

__version__ = "0.1.0"

# The entry-point name in the magnum.drivers group (pyproject.toml), also sent in events and
# the value of the image property magnum_driver (Magnum >= 18).
DRIVER_NAME = "k8s_gitops_v1"
