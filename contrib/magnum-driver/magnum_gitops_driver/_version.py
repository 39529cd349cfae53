# The release of magnum-gitops this driver belongs to: the repository's VERSION file, copied
# here so that a wheel or an sdist built anywhere carries it. tests/test_version.py fails
# when the two differ; from the repository's root, copy it again with
#   sed -i "s/^__version__ = .*/__version__ = \"$(cat VERSION)\"/" contrib/magnum-driver/magnum_gitops_driver/_version.py
__version__ = "0.2.0"
