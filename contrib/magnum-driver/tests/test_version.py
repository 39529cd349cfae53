"""The driver's release is the repository's: _version.py carries the VERSION file."""

import os
import unittest

import testtools

from magnum_gitops_driver import _version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION_FILE = os.path.join(ROOT, "..", "..", "VERSION")


class TestVersion(testtools.TestCase):

    def test_version_is_the_repository_version(self):
        if not os.path.exists(VERSION_FILE):
            self.skipTest("not in a checkout of magnum-gitops: no VERSION file")
        with open(VERSION_FILE, encoding="utf-8") as f:
            want = f.read().strip()
        self.assertEqual(want, _version.__version__,
                         "magnum_gitops_driver/_version.py says %s, VERSION %s: copy VERSION "
                         "into it (the command is in its comment)"
                         % (_version.__version__, want))


if __name__ == "__main__":
    unittest.main()
