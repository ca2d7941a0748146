"""Package discovery: `envs/`, `algorithms/` and `baselines/` install as subpackages of `marl`.

Metadata lives in pyproject.toml; this file only maps the top-level folders into the `marl`
namespace so nothing generic like `envs` lands in site-packages.
"""

from setuptools import find_packages, setup

ROOTS = {
    "marl": "marl",
    "marl.envs": "envs",
    "marl.algorithms": "algorithms",
    "marl.baselines": "baselines",
}

packages = []
for name, folder in ROOTS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=ROOTS)
