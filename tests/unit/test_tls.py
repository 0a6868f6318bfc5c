"""TLS on a real gRPC server and a real /metrics port, from PEM files made by the dev CA: who gets
in under ssl.client.auth, and certificates rotated on disk without a restart — new connections
get the new certificate while a stream opened before keeps going."""

import asyncio
import datetime
import logging
import os
import shutil
import socket
import ssl
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from replog.config import ConfigError
from replog.rpc.channels import ClientSecurity, aio_channel
from replog.rpc.server import start_metrics_endpoint
from replog.security import tls as tls_module
from replog.security.dev_ca import Authority
from replog.security.tls import ServerTls, grpc_server_credentials

WAIT_S_MAX = 10.0


@pytest.fixture
def pki(tmp_path):
    ca = Authority.create(str(tmp_path / "ca"))
    return {
        "ca": ca,
        "server": ca.issue(str(tmp_path / "ca"), "broker"),
        "alice": ca.issue(str(tmp_path / "ca"), "alice"),
        "stranger": Authority.create(str(tmp_path / "other")).issue(str(tmp_path / "other"), "mallory"),
        "expired": ca.issue(str(tmp_path / "ca"), "old", not_before=datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
                            valid_for=datetime.timedelta(days=1)),
        "dir": tmp_path,
    }


@pytest.fixture(autouse=True)
def quick_reload(monkeypatch):
    monkeypatch.setattr(tls_module, "RELOAD_CHECK_INTERVAL_S", 0.05)


def server_tls(pki, client_auth="required"):
    files = pki["server"]
    return ServerTls(files.certfile, files.keyfile, files.cafile, client_auth)


async def serving(credentials):
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    return server, servicer, f"127.0.0.1:{port}"


async def check(address, security):
    async with aio_channel(address, security=security) as channel:
        try:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
        except grpc.aio.AioRpcError as error:
            return error.code().name
    return "OK"


def client(files, ca=None):
    return ClientSecurity(ca or files.cafile, files.certfile, files.keyfile)


def test_mtls_admits_only_certificates_of_its_ca_that_are_valid_now(pki):
    async def scenario():
        server, _, address = await serving(grpc_server_credentials(server_tls(pki)))
        try:
            return {
                "alice": await check(address, client(pki["alice"])),
                "no certificate": await check(address, ClientSecurity(pki["ca"].cafile)),
                "another CA's": await check(address, client(pki["stranger"], pki["ca"].cafile)),
                "expired": await check(address, client(pki["expired"])),
                "plaintext": await check(address, ClientSecurity()),
            }
        finally:
            await server.stop(0)

    assert asyncio.run(scenario()) == {"alice": "OK", "no certificate": "UNAVAILABLE", "another CA's": "UNAVAILABLE",
                                       "expired": "UNAVAILABLE", "plaintext": "UNAVAILABLE"}


def test_without_client_auth_any_tls_client_gets_in_but_a_client_must_trust_the_server(pki):
    async def scenario():
        server, _, address = await serving(grpc_server_credentials(server_tls(pki, "none")))
        try:
            return (await check(address, ClientSecurity(pki["ca"].cafile)),
                    await check(address, ClientSecurity(pki["stranger"].cafile)))
        finally:
            await server.stop(0)

    assert asyncio.run(scenario()) == ("OK", "UNAVAILABLE")


def test_a_rotated_certificate_serves_new_connections_while_an_open_stream_goes_on(pki):
    """cert-manager swaps the Secret's files: here the server moves to a certificate of a new CA."""
    rotated = Authority.create(str(pki["dir"] / "rotated"))
    new_server = rotated.issue(str(pki["dir"] / "rotated"), "broker")
    live = {name: str(pki["dir"] / f"live-{name}.pem") for name in ("cert", "key", "ca")}
    for name, source in (("cert", pki["server"].certfile), ("key", pki["server"].keyfile), ("ca", pki["ca"].cafile)):
        shutil.copy(source, live[name])
    tls = ServerTls(live["cert"], live["key"], live["ca"], "none")

    async def scenario():
        server, servicer, address = await serving(grpc_server_credentials(tls))
        old_trust, new_trust = ClientSecurity(pki["ca"].cafile), ClientSecurity(rotated.cafile)
        try:
            async with aio_channel(address, security=old_trust) as channel:
                watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service="s"))
                await servicer.set("s", health_pb2.HealthCheckResponse.SERVING)
                first = await watch.read()
                for name, source in (("key", new_server.keyfile), ("cert", new_server.certfile),
                                     ("ca", rotated.cafile)):
                    shutil.copy(source, live[name] + ".new")
                    os.replace(live[name] + ".new", live[name])
                deadline = time.monotonic() + WAIT_S_MAX
                while await check(address, new_trust) != "OK":
                    assert time.monotonic() < deadline, "new connections never got the rotated certificate"
                    await asyncio.sleep(0.1)
                refused_with_old_trust = await check(address, old_trust)
                await servicer.set("s", health_pb2.HealthCheckResponse.NOT_SERVING)
                second = await asyncio.wait_for(watch.read(), WAIT_S_MAX)
            return first.status, refused_with_old_trust, second.status
        finally:
            await server.stop(0)

    first, refused, second = asyncio.run(scenario())
    assert (first, refused, second) == (health_pb2.HealthCheckResponse.SERVING, "UNAVAILABLE",
                                        health_pb2.HealthCheckResponse.NOT_SERVING)


def test_a_half_written_rotation_is_not_taken(pki, tmp_path):
    """A new certificate next to the old key does not load: the previous pair stays in use."""
    live_cert, live_key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    shutil.copy(pki["server"].certfile, live_cert)
    shutil.copy(pki["server"].keyfile, live_key)
    files = tls_module.Reloading(ServerTls(live_cert, live_key, pki["ca"].cafile), lambda tls: tls.read_pem()[1])
    before = files.current()[0]
    shutil.copy(pki["alice"].certfile, live_cert)
    time.sleep(0.1)
    assert files.current() == (before, False)
    shutil.copy(pki["alice"].keyfile, live_key)
    time.sleep(0.1)
    value, changed = files.current()
    assert changed and value != before


def test_the_expiry_gauge_follows_the_certificate_and_the_ca_through_a_rotation(pki, tmp_path):
    """What the certificate-expiry alerts read: the first certificate of each file to expire, and the
    rotated certificate's once the new files load."""
    soon = pki["ca"].issue(str(tmp_path / "ca"), "soon", valid_for=datetime.timedelta(days=3))
    live_cert, live_key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    shutil.copy(soon.certfile, live_cert)
    shutil.copy(soon.keyfile, live_key)
    # A CA file that also trusts a second certificate, which expires first.
    other = pki["ca"].issue(str(tmp_path / "ca"), "other", valid_for=datetime.timedelta(days=10))
    trusted = str(tmp_path / "trusted.pem")
    with open(trusted, "wb") as out:
        out.write(open(pki["ca"].cafile, "rb").read() + open(other.certfile, "rb").read())
    files = tls_module.Reloading(ServerTls(live_cert, live_key, trusted), lambda tls: tls.read_pem()[1])

    def expiry(kind):
        return tls_module.CERTIFICATE_EXPIRY.labels(kind)._value.get()

    assert expiry("certificate") == not_after(soon.certfile)
    assert expiry("ca") == not_after(other.certfile) < not_after(pki["ca"].cafile)
    assert expiry("certificate") - time.time() < 3 * 86400

    shutil.copy(pki["server"].certfile, live_cert)
    shutil.copy(pki["server"].keyfile, live_key)
    assert wait_until(lambda: files.current()[1])
    assert expiry("certificate") == not_after(pki["server"].certfile) > not_after(soon.certfile)


def not_after(path):
    from cryptography import x509

    with open(path, "rb") as pem:
        return x509.load_pem_x509_certificate(pem.read()).not_valid_after_utc.timestamp()


def wait_until(condition):
    deadline = time.monotonic() + WAIT_S_MAX
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_the_metrics_port_speaks_https_and_wants_a_client_certificate(pki, caplog, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start_metrics_endpoint("127.0.0.1", port, server_tls(pki))
    url = f"https://127.0.0.1:{port}/metrics"
    context = ssl.create_default_context(cafile=pki["ca"].cafile)
    context.load_cert_chain(pki["alice"].certfile, pki["alice"].keyfile)
    with urllib.request.urlopen(url, context=context, timeout=5) as response:
        assert b"replog_tls_certificate_expiry_timestamp_seconds" in response.read()
    caplog.set_level(logging.WARNING, logger="replog.rpc.server")
    with pytest.raises(OSError):
        urllib.request.urlopen(url, context=ssl.create_default_context(cafile=pki["ca"].cafile), timeout=5).read()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    # Each refused scrape is a warning that says why, not a traceback from the server's thread.
    deadline = time.monotonic() + 5
    while len(caplog.records) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    warnings = [r.getMessage() for r in caplog.records]
    assert any("did not return a certificate" in w and "a certificate from ssl.cafile" in w for w in warnings), warnings
    assert all(w.startswith("metrics: a scrape from 127.0.0.1:") for w in warnings), warnings
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("settings, complaint", [
    ({"ssl.certfile": "cert.pem"}, "ssl.keyfile is empty"),
    ({"ssl.certfile": "cert.pem", "ssl.keyfile": "key.pem"}, "needs ssl.cafile"),
    ({"ssl.client.auth": "required"}, "need ssl.certfile"),
    ({"ssl.certfile": "/nonexistent/cert.pem", "ssl.keyfile": "/nonexistent/key.pem", "ssl.cafile": "/nonexistent/ca"},
     "cannot load the TLS files"),
])
def test_tls_settings_that_cannot_work_are_one_sentence(settings, complaint):
    config = {"ssl.certfile": "", "ssl.keyfile": "", "ssl.cafile": "", "ssl.client.auth": "none", **settings}
    with pytest.raises(ConfigError, match=complaint):
        ServerTls.from_config(config)


def test_a_key_that_is_not_the_certificates_is_refused(pki):
    config = {"ssl.certfile": pki["server"].certfile, "ssl.keyfile": pki["alice"].keyfile,
              "ssl.cafile": pki["ca"].cafile, "ssl.client.auth": "required"}
    with pytest.raises(ConfigError, match="cannot load the TLS files"):
        ServerTls.from_config(config)


def test_a_server_is_verified_by_the_name_given_where_its_address_is_in_no_certificate(pki, tmp_path):
    """Controllers on Kubernetes are dialled at pod IPs: clients verify them as ssl.server.name."""
    internal = pki["ca"].issue(str(tmp_path), "internal", hosts=["replog-internal"])
    tls = ServerTls(internal.certfile, internal.keyfile, internal.cafile, "none")

    async def scenario():
        server, _, address = await serving(grpc_server_credentials(tls))
        try:
            return (await check(address, ClientSecurity(pki["ca"].cafile)),
                    await check(address, ClientSecurity(pki["ca"].cafile, server_name="replog-internal")),
                    await check(address, ClientSecurity(pki["ca"].cafile, server_name="someone-else")))
        finally:
            await server.stop(0)

    assert asyncio.run(scenario()) == ("UNAVAILABLE", "OK", "UNAVAILABLE")
