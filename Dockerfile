# One image for every replog service; the command picks which:
#   python -m replog.broker | python -m replog.controller | python -m replog.metadata
# Build: docker build -t replog . (or podman build). Wheels placed in wheelhouse/ in the build
# context are preferred to the index (set PIP_NO_INDEX=1 to build from them alone).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG PIP_NO_INDEX=0
# A C compiler for the record decoder (replog/protocol/_records.c); Python's headers come with
# the python image, and from python3-dev where the base is Debian's own Python.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && if ! python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then \
      apt-get install -y --no-install-recommends python3-dev; fi \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The compiled decoder must be there: without it consumers decode records several times slower.
RUN mkdir -p wheelhouse \
 && python3 -m venv /opt/replog \
 && /opt/replog/bin/pip wheel --no-cache-dir --find-links wheelhouse --wheel-dir /wheels '.[k8s,tls]' \
 && /opt/replog/bin/pip install --no-cache-dir --no-index --find-links /wheels 'replog[k8s,tls]' \
 && /opt/replog/bin/python -I -c 'import replog.protocol._records' \
 && /opt/replog/bin/pip uninstall -y -q pip setuptools \
 && /opt/replog/bin/python -m compileall -q /opt/replog

FROM ${PYTHON_IMAGE}
RUN groupadd --gid 10001 replog \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin replog \
 && mkdir -p /var/lib/replog \
 && chown 10001:10001 /var/lib/replog
COPY --from=build /opt/replog /opt/replog
ENV PATH=/opt/replog/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
WORKDIR /var/lib/replog
# The service is PID 1 with no shell in between: SIGTERM reaches Python, and a broker runs its
# controlled shutdown before it stops.
CMD ["python", "-m", "replog.metadata"]
