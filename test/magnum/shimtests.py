"""The driver shim's own test helpers, reused here rather than written twice:
tests/keystone.py (Keystone's configuration and its sqlite fix-ups) and tests/service.py
(the Flux and Cluster API objects of a running cluster).
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIM = os.path.join(ROOT, "contrib", "magnum-driver")
if SHIM not in sys.path:
    sys.path.append(SHIM)

from tests import keystone  # noqa: E402,F401
from tests import service  # noqa: E402,F401
