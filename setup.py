"""Packaging glue: the services live in services/<name>/ and the Spark data source in spark/, but they
import as replog.<name> and replog.spark."""

from setuptools import Extension, find_packages, setup

SERVICES = ("broker", "controller", "metadata")


def service_packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name in SERVICES:
        root = f"services/{name}"
        package_dir[f"replog.{name}"] = root
        packages.append(f"replog.{name}")
        packages += [f"replog.{name}.{sub}" for sub in find_packages(root)]
    package_dir["replog.spark"] = "spark"
    packages += ["replog.spark"] + [f"replog.spark.{sub}" for sub in find_packages("spark")]
    return packages, package_dir


packages, package_dir = service_packages()
setup(
    packages=find_packages(include=["replog", "replog.*"]) + packages,
    package_dir=package_dir,
    # The consumer's record decoder in C; optional: without a compiler the Python one serves.
    ext_modules=[Extension("replog.protocol._records", ["replog/protocol/_records.c"], optional=True)],
)
