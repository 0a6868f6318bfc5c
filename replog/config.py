"""Service configuration with Kafka's names.

Each service declares its settings as a table of `Setting`s. Values come, from
weakest to strongest, from the defaults, a Java-style properties file,
`REPLOG_*` environment variables (`REPLOG_BROKER_ID` sets `broker.id`) and
`--override key=value` flags. A bad value stops the service with one sentence
that names the setting, the value and what would be accepted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

ENV_PREFIX = "REPLOG_"


class ConfigError(Exception):
    """A user's configuration mistake; the message is one sentence to show as is."""


class _Required:
    def __repr__(self) -> str:
        return "required"


REQUIRED: Any = _Required()


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str


@dataclasses.dataclass(frozen=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


# Parsers: each turns text into a value or raises ValueError with what was expected.


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("expected a whole number") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"expected at least {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"expected at most {maximum}")
        return value

    return parse


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


def string(text: str) -> str:
    return text.strip()


def non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError("expected a non-empty value")
    return text.strip()


def one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.strip() not in choices:
            raise ValueError("expected one of " + ", ".join(choices))
        return text.strip()

    return parse


def host_port(text: str) -> HostPort:
    """`host:port`, also accepting Kafka's listener form `PLAINTEXT://host:port`."""
    address = text.strip()
    if "://" in address:
        address = address.split("://", 1)[1]
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        raise ValueError("expected host:port")
    try:
        number = int(port)
    except ValueError:
        raise ValueError("expected host:port with a numeric port") from None
    if not 0 <= number <= 65535:
        raise ValueError("expected a port from 0 to 65535")
    return HostPort(host.strip("[]"), number)


def optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """`parse`, or None for an empty value (a setting whose default is another setting's value)."""

    def parse_optional(text: str) -> Any:
        return parse(text) if text.strip() else None

    return parse_optional


def zookeeper_hosts(text: str) -> list[HostPort]:
    """The ensemble's addresses in Kafka's `zookeeper.connect`, host:port[,host:port...][/chroot]."""
    hosts, _, chroot = text.strip().partition("/")
    if not hosts:
        raise ValueError("expected host:port[,host:port...][/chroot]")
    if chroot and not all(chroot.split("/")):  # a bare "/" is the root, as in Kafka
        raise ValueError(f"the chroot /{chroot} has an empty name in it; expected one like /replog or /a/b")
    return [host_port(entry) for entry in hosts.split(",")]


def zookeeper_connect(text: str) -> str:
    """Kafka's `zookeeper.connect`, checked."""
    zookeeper_hosts(text)
    return text.strip()


def path_list(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    if not paths:
        raise ValueError("expected one or more comma-separated directories")
    return paths


class Config(Mapping[str, Any]):
    """The resolved settings of one service; read with `config["broker.id"]`."""

    def __init__(self, values: dict[str, Any], sources: dict[str, str]) -> None:
        self._values = values
        self._sources = sources

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def source(self, name: str) -> str:
        """Where a value came from: default, a file, the environment or an override."""
        return self._sources[name]


def read_properties(path: str) -> dict[str, str]:
    """Java properties, the subset people write: `key=value` or `key: value`, # and ! comments."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        raise ConfigError(f"cannot read the config file {path}: {error.strerror}.") from None
    except UnicodeDecodeError as error:
        line = error.object.count(b"\n", 0, error.start) + 1
        raise ConfigError(f"{path} line {line} is not UTF-8 text; save the file as UTF-8.") from None
    entries: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        separator = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if separator < 0:
            raise ConfigError(f"{path} line {number} is not key=value: {raw!r}.")
        entries[line[:separator].strip()] = line[separator + 1 :].strip()
    return entries


def parse_overrides(pairs: Iterable[str], flag: str = "--override") -> dict[str, str]:
    entries: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} takes key=value, got {pair!r}.")
        entries[key.strip()] = value
    return entries


def env_name(setting_name: str) -> str:
    return ENV_PREFIX + setting_name.upper().replace(".", "_")


def load(
    service: str,
    settings: Iterable[Setting],
    *,
    file_path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> Config:
    table = {s.name: s for s in settings}
    raw: dict[str, tuple[str, str]] = {}
    if file_path:
        for key, value in read_properties(file_path).items():
            raw[key] = (value, f"the file {file_path}")
    for name in table:
        if env and env_name(name) in env:
            raw[name] = (env[env_name(name)], f"the environment variable {env_name(name)}")
    for key, value in (overrides or {}).items():
        raw[key] = (value, "--override")

    unknown = sorted(k for k in raw if k not in table)
    if unknown:
        raise ConfigError(
            f"unknown {service} setting {unknown[0]!r} (from {raw[unknown[0]][1]}); "
            f"known settings: {', '.join(sorted(table))}."
        )

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, setting in table.items():
        if name in raw:
            text, origin = raw[name]
            try:
                values[name] = setting.parse(text)
            except ValueError as error:
                raise ConfigError(
                    f"invalid value {text!r} for {name} (from {origin}): {error}."
                ) from None
            sources[name] = origin
        elif setting.default is REQUIRED:
            raise ConfigError(
                f"{service} setting {name} is required ({setting.doc}); set it in the "
                f"properties file, as {env_name(name)}, or with --override {name}=..."
            )
        else:
            values[name] = setting.default
            sources[name] = "default"
    return Config(values, sources)


# Settings every service shares.
ZOOKEEPER_SETTINGS = (
    Setting("zookeeper.connect", zookeeper_connect, REQUIRED,
            "the ZooKeeper ensemble, host:port[,host:port...][/chroot]"),
    Setting("zookeeper.session.timeout.ms", integer(1000, 600_000), 18_000,
            "ZooKeeper session timeout in ms: how long a stalled process keeps its ephemeral znodes"),
    Setting("zookeeper.connection.timeout.ms", integer(100, 600_000), 18_000,
            "how long to wait for the first ZooKeeper connection in ms"),
    Setting("zookeeper.auth.digest.file", string, "",
            "a file holding user:password, the digest identity this process authenticates to ZooKeeper with"),
    Setting("zookeeper.set.acl", boolean, False,
            "create znodes writable only by that identity (readable by all), so that only replog's "
            "services change cluster state; needs zookeeper.auth.digest.file"),
)

# TLS and who may do what (docs/SECURITY.md). The same files serve this process's listeners
# (gRPC and /metrics) and identify it to the other services it calls.
SECURITY_SETTINGS = (
    Setting("ssl.certfile", string, "",
            "PEM certificate chain this service presents, to its clients and to the services it calls; "
            "empty: plaintext listeners"),
    Setting("ssl.keyfile", string, "", "PEM private key of ssl.certfile"),
    Setting("ssl.cafile", string, "",
            "PEM CA certificates the certificates of peers must chain to (clients' ones under ssl.client.auth)"),
    Setting("ssl.client.auth", one_of("none", "requested", "required"), "none",
            "whether clients must present a certificate: required (mTLS), requested (the /metrics port "
            "only: asked for, checked when given) or none"),
    Setting("ssl.server.name", string, "",
            "verify every service this one calls as this name (a subject alternative name of their "
            "certificate) instead of the address dialled, for addresses no certificate can name (pod IPs)"),
    Setting("ssl.principal.mapping.rules", string, "DEFAULT",
            "how a client certificate's subject becomes a principal name: comma-separated "
            "RULE:pattern/replacement/[LU] rules then DEFAULT (the whole subject), as Kafka's"),
    Setting("token.hmac.secret.file", string, "",
            "a file holding the shared secret that signs bearer tokens (HS256); empty: no such tokens"),
    Setting("token.public.key.file", string, "",
            "a PEM public key that verifies bearer tokens (RS256 or ES256); empty: no such tokens"),
    Setting("authorizer.class.name", one_of("", "AclAuthorizer"), "",
            "AclAuthorizer checks every request against the ACLs in ZooKeeper; empty: everything is allowed"),
    Setting("super.users", string, "",
            "principals allowed everything, separated by semicolons: User:broker;User:admin"),
    Setting("allow.everyone.if.no.acl.found", boolean, False,
            "allow a request on a resource that no ACL matches (else only super users may)"),
)

# Bounds on one request (replog.core.limits); a request over one is refused whole.
LIMIT_SETTINGS = (
    Setting("max.partitions.per.request", integer(1, 2**31 - 1), 10_000,
            "partitions (or topics, where a request names only topics) one request may name"),
    Setting("max.records.per.batch", integer(1, 2**31 - 1), 1_000_000,
            "records one record batch of a produce request may hold"),
    Setting("max.topic.name.length", integer(1, 249), 249, "characters of a topic name in a request"),
    Setting("max.group.id.length", integer(1, 2**15), 255, "characters of a group id in a request"),
)

# How a broker measures a quota's rate (Kafka's names; replog.core.quota).
QUOTA_SETTINGS = (
    Setting("quota.window.num", integer(2, 100), 11, "samples a quota's rate is measured over"),
    Setting("quota.window.size.seconds", integer(1, 3600), 1, "seconds each quota sample spans"),
)

SERVER_SETTINGS = (
    *SECURITY_SETTINGS,
    *LIMIT_SETTINGS,
    *QUOTA_SETTINGS,
    Setting("health.port", integer(0, 65535), 0,
            "a plaintext port serving only the gRPC health service, for probes that speak no TLS "
            "(the kubelet's); 0: none"),
    Setting("metrics.port", integer(0, 65535), 0,
            "port of the Prometheus /metrics HTTP endpoint (0 picks a free port)"),
    Setting("socket.request.max.bytes", integer(1024, 2**31 - 1), 104_857_600,
            "largest gRPC message accepted or sent, in bytes"),
    Setting("shutdown.grace.ms", integer(0, 600_000), 5_000,
            "how long in-flight RPCs may finish after SIGTERM, in ms"),
)
