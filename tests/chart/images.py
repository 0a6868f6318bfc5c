"""The images the chart's pods run, built here with podman from the repository's Dockerfile.

No registry can be reached, so the base image is Debian's own (debootstrap, with Python 3.11 as
bookworm ships it) and the wheels of the dependencies are built on the host, where pip trusts
the network, and put in the build context's wheelhouse/. Both are cached on the machine
(`~/.cache/replog`, podman's image store) between runs; the Dockerfile is the one users build.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from tests.chart.chart import ROOT

HERE = Path(__file__).resolve().parent
CONTAINERS_CONF = HERE / "containers.conf"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "replog"
BASE_IMAGE = "localhost/replog-test-base:bookworm"
ZOOKEEPER_CONTAINERFILE = HERE / "zookeeper.Containerfile"
# Tagged by its Containerfile: a changed one is built anew, an unchanged one comes from the cache.
ZOOKEEPER_IMAGE = ("localhost/replog-test-zookeeper:"
                   + hashlib.sha256(ZOOKEEPER_CONTAINERFILE.read_bytes()).hexdigest()[:12])
IMAGE = "localhost/replog:test"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BUILD_S_MAX = 1200


class EngineUnavailable(Exception):
    """podman cannot run containers on this machine; the message says why."""


def podman(*args: str, timeout_s: float = 300, check: bool = True, stdin: bytes | None = None
           ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}
    result = subprocess.run(["podman", *args], capture_output=True, text=stdin is None, env=env, timeout=timeout_s,
                            input=stdin)
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


def engine_problem() -> str | None:
    """Why podman cannot run a container here, or None when it can: it tries one, from the base
    image (made first where it is missing)."""
    if shutil.which("podman") is None:
        return "podman is not installed (make setup installs it: apt-get install podman runc debootstrap)"
    if shutil.which("debootstrap") is None:
        return "debootstrap is not installed (make setup installs it), so no base image can be made"
    info = podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False, timeout_s=60)
    if info.returncode != 0:
        return f"podman cannot start: {_last_line(info.stderr)}"
    ensure_base_image()
    tried = podman("run", "--rm", "--network", "none", BASE_IMAGE, "true", check=False, timeout_s=120)
    if tried.returncode != 0:
        return f"podman cannot run a container ({CONTAINERS_CONF.name}: runc, cgroupfs): {_last_line(tried.stderr)}"
    return None


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no reason given"


def image_exists(name: str) -> bool:
    return podman("image", "exists", name, check=False).returncode == 0


def ensure_base_image() -> None:
    """Debian bookworm's minimal root with Python 3.11 and venv, imported as BASE_IMAGE (cached)."""
    if image_exists(BASE_IMAGE):
        return
    with tempfile.TemporaryDirectory(prefix="replog-rootfs-") as rootfs:
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv", "bookworm", rootfs,
                        DEBIAN_MIRROR], check=True, capture_output=True, timeout=BUILD_S_MAX)
        for leftover in Path(rootfs, "var/cache/apt/archives").glob("*.deb"):
            leftover.unlink()
        archive = subprocess.run(["tar", "-C", rootfs, "-c", "."], check=True, capture_output=True).stdout
        podman("import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "-", BASE_IMAGE, stdin=archive)


def requirements() -> list[str]:
    """What the image's pip needs: the build system, the dependencies and the extras the Dockerfile
    installs (k8s, tls)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    return project["build-system"]["requires"] + project["project"]["dependencies"] + extras["k8s"] + extras["tls"]


def ensure_wheelhouse() -> Path:
    """Wheels of every requirement, built on the host once per set of requirements."""
    wanted = sorted(requirements())
    digest = hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]
    wheelhouse = CACHE / f"wheelhouse-{digest}"
    if not (wheelhouse / ".complete").exists():
        wheelhouse.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(wheelhouse), *wanted],
                       check=True, capture_output=True, timeout=BUILD_S_MAX)
        (wheelhouse / ".complete").touch()
    return wheelhouse


def build_context(wheelhouse: Path, directory: Path) -> Path:
    """The repository as .dockerignore leaves it, and the wheelhouse."""
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]

    def ignore(folder: str, names: list[str]) -> set[str]:
        relative = os.path.relpath(folder, ROOT)
        skip = set()
        for name in names:
            path = name if relative == "." else os.path.join(relative, name)
            if any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(name, p.removeprefix("**/")) for p in ignored):
                skip.add(name)
        return skip

    context = directory / "context"
    shutil.copytree(ROOT, context, ignore=ignore)
    shutil.copytree(wheelhouse, context / "wheelhouse")
    return context


def prepare() -> str | None:
    """What the images are built from and does not change with replog's code: the base image, the
    wheelhouse and the ZooKeeper stand-in (`make setup` makes them, as pulling base images would be
    elsewhere). Why podman cannot run containers here, or None once they are ready."""
    problem = engine_problem()  # makes the base image where podman runs
    if problem is not None:
        return problem
    ensure_wheelhouse()
    if not image_exists(ZOOKEEPER_IMAGE):
        podman("build", "--pull=never", "--network", "host", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
               "--tag", ZOOKEEPER_IMAGE, "--file", str(ZOOKEEPER_CONTAINERFILE), str(HERE),
               timeout_s=BUILD_S_MAX)
    return None


def build_images() -> None:
    """The replog image from the Dockerfile, on what `prepare` made."""
    wheelhouse = ensure_wheelhouse()
    with tempfile.TemporaryDirectory(prefix="replog-build-") as directory:
        context = build_context(wheelhouse, Path(directory))
        podman("build", "--pull=never", "--network", "host", "--build-arg", f"PYTHON_IMAGE={BASE_IMAGE}",
               "--build-arg", "PIP_NO_INDEX=1", "--tag", IMAGE, "--file", str(ROOT / "Dockerfile"), str(context),
               timeout_s=BUILD_S_MAX)


def image_size_bytes(name: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", name).stdout.strip())


if __name__ == "__main__":
    reason = prepare()
    print(f"the chart's pod tests will be skipped: {reason}" if reason else "the chart tests' base images are ready")
