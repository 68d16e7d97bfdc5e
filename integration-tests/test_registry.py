"""Every package registers exactly one experiment, under its own name, and it loads."""

from icml26_core import registry
from packaging.requirements import Requirement


def test_there_are_packages(root):
    assert list((root / "packages").glob("*/pyproject.toml")), "no packages under packages/"


def test_package_names_agree_and_experiment_loads(pkg, meta):
    name = meta["name"]
    assert pkg.name == name, "folder and distribution names must agree"
    imp = name.replace("-", "_")
    assert (pkg / "src" / imp / "__init__.py").is_file(), f"import name must be {imp}"
    eps = meta.get("entry-points", {}).get("icml26.experiments", {})
    assert list(eps) == [name], f"{name} must register one experiment named {name!r}"
    assert eps[name] == f"{imp}.experiment:EXPERIMENT"
    deps = meta.get("dependencies", [])
    core = [r for r in map(Requirement, deps) if r.name == "icml26-core"]
    assert core and any(s.operator == "<" for s in core[0].specifier), (
        f"{name} must depend on icml26-core by a range capped at the next major version"
    )
    info = registry.load(name)
    assert info.experiment is not None, info.error
    assert info.experiment.name == name
