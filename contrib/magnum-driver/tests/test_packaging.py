"""Packaging: install the package offline into a venv that sees Debian's python3-magnum
(--system-site-packages), then let Magnum's own code find it by its entry point.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHECK = textwrap.dedent("""
    import json, sys
    from importlib import metadata
    from magnum.common import config
    config.parse_args(["check", "--config-file", sys.argv[1]], default_config_files=[])
    from magnum.common import exception
    from magnum.drivers.common import driver
    out = {"found": {}, "definitions": {}}
    for os_distro in ("ubuntu", "flatcar", "rockylinux", "fedora-coreos"):
        try:
            d = driver.Driver.get_driver("vm", os_distro, "kubernetes")
            out["found"][os_distro] = "%s.%s" % (type(d).__module__, type(d).__name__)
        except exception.ClusterTypeNotSupported:
            out["found"][os_distro] = None
    for k, v in driver.Driver.get_drivers().items():
        out["definitions"][":".join(k)] = v["entry_point_name"]
    import magnum_gitops_driver
    out["module"] = magnum_gitops_driver.__file__
    out["version"] = metadata.version("magnum-gitops-driver")
    out["opts"] = [ep.value for ep in metadata.entry_points(group="oslo.config.opts")
                   if ep.name == "magnum_gitops_driver"]
    print(json.dumps(out))
""")


class TestInstalledPackage(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="magnum-gitops-driver-pkg-")
        try:
            cls._build()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def _build(cls):
        src = os.path.join(cls.tmp, "src")
        os.makedirs(src)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(os.path.join(ROOT, name), src)
        shutil.copytree(os.path.join(ROOT, "magnum_gitops_driver"),
                        os.path.join(src, "magnum_gitops_driver"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        cls.venv = os.path.join(cls.tmp, "venv")
        cls.python = os.path.join(cls.venv, "bin", "python")
        cls.env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        cls.env.update(PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                       PYTHONDONTWRITEBYTECODE="1")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", cls.venv],
                       check=True, capture_output=True)
        cls.install = subprocess.run(
            [cls.python, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
             "--no-index", src], capture_output=True, text=True, env=cls.env, cwd=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        super(TestInstalledPackage, self).setUp()
        self.assertEqual(0, self.install.returncode,
                         self.install.stdout + self.install.stderr)

    def run_py(self, *args):
        r = subprocess.run([self.python] + list(args), capture_output=True, text=True,
                           env=self.env, cwd=self.tmp)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        return r.stdout

    def conf(self, text):
        path = os.path.join(self.tmp, "magnum.conf")
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def check(self, conf_text):
        script = os.path.join(self.tmp, "check.py")
        with open(script, "w") as f:
            f.write(CHECK)
        return json.loads(self.run_py(script, self.conf(conf_text)).splitlines()[-1])

    def test_magnum_loader_finds_the_entry_point(self):
        out = self.check("""
            [gitops]
            endpoint = https://magnum-gitops.example.org
            provides = ubuntu,flatcar,vm:rockylinux:kubernetes
        """)
        driver = "magnum_gitops_driver.driver.Driver"
        self.assertEqual({"ubuntu": driver, "flatcar": driver, "rockylinux": driver,
                          "fedora-coreos": "magnum.drivers.k8s_fedora_coreos_v1.driver.Driver"},
                         out["found"])
        self.assertEqual("k8s_gitops_v1", out["definitions"]["vm:ubuntu:kubernetes"])
        self.assertIn(os.path.join(self.venv, "lib"), out["module"])  # the installed copy
        from magnum_gitops_driver import __version__
        self.assertEqual(__version__, out["version"])
        self.assertEqual(["magnum_gitops_driver.conf:list_opts"], out["opts"])

    def test_disabled_drivers_hides_it(self):
        out = self.check("""
            [drivers]
            disabled_drivers = k8s_gitops_v1
        """)
        self.assertIsNone(out["found"]["ubuntu"])
        self.assertNotIn("vm:ubuntu:kubernetes", out["definitions"])

    def test_zed_list_drivers_works(self):
        # Zed's magnum-driver-manage calls get_template_definition() on every driver.
        out = self.run_py("-c", "import sys; from magnum.cmd import driver_manage; "
                          "sys.exit(driver_manage.main(['list-drivers', '-d', '-p']))")
        rows = [line for line in out.splitlines() if "k8s_gitops_v1" in line]
        self.assertEqual(2, len(rows), out)
        self.assertIn("ubuntu", rows[0])
        self.assertIn("flatcar", rows[1])

    def test_oslo_config_generator_documents_the_options(self):
        out = self.run_py("-m", "oslo_config.generator", "--namespace", "magnum_gitops_driver")
        self.assertIn("[gitops]", out)
        for opt in ("endpoint", "token_file", "ca_file", "cert_file", "key_file", "timeout",
                    "deadline", "retries", "provides"):
            self.assertIn("#%s = " % opt, out)


if __name__ == "__main__":
    sys.exit(testtools.run.main(sys.argv, sys.stdout))
