"""The ns-3 program, compiled against the ``ns3`` wheel's C++ libraries (docs/validation-ns3.md).

The wheel (``pip install "ns3==3.44.post0"``, or ``pip install "aqmlab[ns3]"``) carries ns-3's
headers (``ns3/include``) and shared libraries (``ns3/lib64``); its C++ libraries link without its
Python bindings. :func:`program` compiles ``dumbbell.cc`` beside this file once per source, wheel and
compiler, into ``$AQMLAB_NS3_CACHE`` (default ``~/.cache/aqmlab/ns3``), with the library folder as
the binary's run path, and returns the binary's path:

    g++ -std=c++20 -O2 -I<wheel>/include dumbbell.cc -o dumbbell -L<wheel>/lib64 -Wl,-rpath,<wheel>/lib64
        -lns3.44-core -lns3.44-network -lns3.44-internet -lns3.44-point-to-point -lns3.44-traffic-control
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..base.errors import Ns3Error, Ns3Missing

#: the release the program is written for (its attributes and trace sources are those of 3.44)
RELEASE = "3.44"
INSTALL = 'pip install "ns3==3.44.post0"'
SOURCE = Path(__file__).resolve().parent / "dumbbell.cc"
MODULES = ("core", "network", "internet", "point-to-point", "traffic-control")


def wheel() -> tuple[Path, Path, str]:
    """(include folder, library folder, version) of the installed ``ns3`` wheel; Ns3Missing without it."""
    import importlib.metadata as md

    try:
        dist = md.distribution("ns3")
    except md.PackageNotFoundError:
        raise Ns3Missing(f"ns-3 is not installed (no `ns3` wheel in this Python); install it with `{INSTALL}`") from None
    version = dist.version
    if not version.startswith(RELEASE):
        raise Ns3Missing(f"ns-3 {version} is installed; the program is written for ns-3 {RELEASE}: `{INSTALL}`")
    header = next((f for f in dist.files or () if str(f).endswith("include/ns3/core-module.h")), None)
    if header is None:
        raise Ns3Missing(f"the ns3 wheel {version} has no C++ headers (include/ns3/core-module.h)")
    include = Path(str(header.locate())).parents[1]
    lib = include.parent / "lib64"
    missing = [m for m in MODULES if not (lib / f"libns{RELEASE}-{m}.so").exists()]
    if missing:
        raise Ns3Missing(f"the ns3 wheel {version} lacks the libraries of {', '.join(missing)} in {lib}")
    return include, lib, version


def compiler() -> str:
    """The C++ compiler: ``$CXX`` or ``g++``; Ns3Missing without one."""
    cxx = os.environ.get("CXX") or "g++"
    found = shutil.which(cxx)
    if not found:
        raise Ns3Missing(f"no C++ compiler ({cxx}) to build the ns-3 program; install g++ or set CXX")
    return found


def command(cxx: str, include: Path, lib: Path, out: Path) -> list[str]:
    return [cxx, "-std=c++20", "-O2", f"-I{include}", str(SOURCE), "-o", str(out), f"-L{lib}",
            f"-Wl,-rpath,{lib}", *[f"-lns{RELEASE}-{m}" for m in MODULES]]


def cache_dir() -> Path:
    given = os.environ.get("AQMLAB_NS3_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aqmlab" / "ns3"


def program() -> Path:
    """The compiled program, built now if this source, wheel and compiler have not been built before."""
    include, lib, version = wheel()
    cxx = compiler()
    ident = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    key = hashlib.sha256(SOURCE.read_bytes() + f"{version}|{include}|{ident}".encode()).hexdigest()[:16]
    out = cache_dir() / key / "dumbbell"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        part = Path(tmp) / "dumbbell"
        r = subprocess.run(command(cxx, include, lib, part), capture_output=True, text=True)
        if r.returncode != 0:
            first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip()[:300])
            raise Ns3Error(f"the ns-3 program does not compile against the wheel {version}: {first}")
        os.replace(part, out)  # atomic: concurrent builds leave one whole binary
    return out


__all__ = ["RELEASE", "INSTALL", "SOURCE", "wheel", "compiler", "command", "cache_dir", "program"]
