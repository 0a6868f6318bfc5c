"""What every replog process does the same way: gRPC server, health, reflection,
Prometheus /metrics, and a graceful stop on SIGTERM (logging: `replog.rpc.logs`)."""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
import sys
import threading
import time
import wsgiref.simple_server
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import grpc
import prometheus_client
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from replog.config import Config, HostPort
from replog.core.errors import ErrorCode
from replog.rpc import build_info, status, streams
from replog.rpc.heap import freeze_heap
from replog.rpc.request_metrics import REQUEST_DURATION, REQUESTS_FAILED
from replog.security.authenticate import Authenticator
from replog.security.authorizer import Authorizer
from replog.security.interceptor import SecurityInterceptor
from replog.security.limits import LimitsInterceptor, limits_of
from replog.security.quotas import QuotaInterceptor, QuotaManager
from replog.security.tls import ServerTls, grpc_server_credentials, metrics_ssl_context

log = logging.getLogger(__name__)

class Service(Protocol):
    """A process's own behaviour, plugged into the shared runner."""

    def add_to_server(self, server: grpc.aio.Server) -> Sequence[str]:
        """Register servicers; return their full service names (for reflection and health)."""

    async def start(self) -> None:
        """Runs after the port is bound; the process reports SERVING when it returns."""

    async def stop(self) -> None:
        """Runs on SIGTERM before the server stops (e.g. a broker's controlled shutdown)."""


class _MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Times every unary RPC and counts its failures, labelled with the method name."""

    async def intercept_service(self, continuation: Callable[..., Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        rpc = details.method.rsplit("/", 1)[-1]
        inner = handler.unary_unary

        async def timed(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            try:
                try:
                    return await inner(request, context)
                except (grpc.aio.AbortError, asyncio.CancelledError):
                    raise
                except Exception as error:
                    # A bug: the client gets UNKNOWN, as without this, and an ErrorInfo naming it a server error.
                    log.exception("%s failed", rpc)
                    await status.abort(context, grpc.StatusCode.UNKNOWN, f"{rpc} failed on the server: {error!r}",
                                       ErrorCode.UNKNOWN_SERVER_ERROR)
            except BaseException as error:
                code = context.code() or grpc.StatusCode.UNKNOWN
                if not isinstance(error, asyncio.CancelledError):
                    REQUESTS_FAILED.labels(rpc, _status_name(code)).inc()
                raise
            finally:
                REQUEST_DURATION.labels(rpc).observe(time.perf_counter() - started)

        return grpc.unary_unary_rpc_method_handler(
            timed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _status_name(code: Any) -> str:
    return code.name if isinstance(code, grpc.StatusCode) else str(code)


def channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


# grpc binds with SO_REUSEPORT on Linux: a second process on a port another grpc server holds would
# start as if all was well and get half its connections. Without it, the port in use is an error.
LISTEN_ALONE = (("grpc.so_reuseport", 0),)


def start_metrics_endpoint(host: str, port: int, tls: ServerTls | None = None) -> int:
    """Serve /metrics (HTTPS under `tls`) in a background thread; returns the bound port."""
    try:
        if tls is None:
            server, _ = prometheus_client.start_http_server(port, addr=host)
            return server.server_port
        httpd = wsgiref.simple_server.make_server(host, port, prometheus_client.make_wsgi_app(), _MetricsServer,
                                                  handler_class=_QuietHandler)
    except OSError as error:
        raise SystemExit(f"cannot listen on {host}:{port} (metrics.port): {error.strerror}.") from None
    # The handshake happens in the request's own thread: a client that stalls it holds only that one.
    httpd.socket = metrics_ssl_context(tls).wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=httpd.serve_forever, name="metrics", daemon=True).start()
    return httpd.server_port


class _MetricsServer(prometheus_client.exposition.ThreadingWSGIServer):
    """A scrape that fails (no client certificate, a connection dropped) is a warning line that says
    why, where socketserver would print a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        hint = ("; the metrics port serves HTTPS to clients with a certificate from ssl.cafile"
                if isinstance(error, ssl.SSLError) else "")
        log.warning("metrics: a scrape from %s failed: %s%s", _address(client_address), error, hint)


def _address(client_address: Any) -> str:
    """host:port of a client's address tuple (IPv4's two parts, IPv6's first two of four)."""
    if isinstance(client_address, tuple):
        return ":".join(str(part) for part in client_address[:2])
    return str(client_address)


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    """Scrapes are not worth a log line each."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def serve(name: str, service: Service, listener: HostPort, config: Config) -> None:
    """Run one service until SIGTERM or SIGINT, then stop it gracefully."""
    authenticator = Authenticator.from_config(config)
    authorizer = Authorizer.from_config(config)
    interceptors: list[grpc.aio.ServerInterceptor] = [_MetricsInterceptor(), LimitsInterceptor(limits_of(config))]
    # Quotas before the authorizer: a request it refuses counts against its principal's quotas too.
    quotas = QuotaManager.from_config(config)
    if quotas is not None:
        interceptors.append(QuotaInterceptor(authenticator, quotas))
    if authorizer is not None or authenticator.verifies_tokens:
        interceptors.append(SecurityInterceptor(authenticator, authorizer))
    server = grpc.aio.server(interceptors=interceptors,
                             options=[*channel_options(config["socket.request.max.bytes"]), *LISTEN_ALONE])
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = list(service.add_to_server(server))
    # grpc's servicer answers SERVING for "" from the start; a probe must not see that before
    # the service has started (a broker: registered in ZooKeeper).
    await _mark(health_servicer, names, health_pb2.HealthCheckResponse.NOT_SERVING)
    reflection.enable_server_reflection(
        [*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME],
        server,
    )
    address = f"{listener.host}:{listener.port}"
    tls = ServerTls.from_config(config)
    try:
        if tls is not None:
            bound = server.add_secure_port(address, grpc_server_credentials(tls))
        else:
            bound = server.add_insecure_port(address)
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise SystemExit(f"{name}: cannot listen on {address}: the port is in use or the address is not local.")
    health_server = await _start_health_server(health_servicer, listener.host, config["health.port"])
    metrics_port = start_metrics_endpoint(listener.host, config["metrics.port"], tls)
    build_info.record(name)
    for watcher in (authorizer, quotas):  # the ACLs and quotas are in before the first request
        if watcher is not None:
            await watcher.start(config["zookeeper.connection.timeout.ms"] / 1000, config["zookeeper.connect"])
    await server.start()
    log.info("%s listening on %s:%d (%s), metrics on port %d", name, listener.host, bound,
             f"TLS, client certificates {tls.client_auth}" if tls else "plaintext", metrics_port)

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    received: list[str] = []

    def on_signal(signum: signal.Signals) -> None:
        received.append(signum.name)
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)

    starter = asyncio.create_task(service.start())
    stopper = asyncio.create_task(stopping.wait())
    try:
        done, _ = await asyncio.wait({starter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if starter in done:
            starter.result()  # a failed start ends the process with its own message
            await _mark(health_servicer, names, health_pb2.HealthCheckResponse.SERVING)
            log.info("%s is SERVING", name)
            freeze_heap()
            await stopping.wait()
        else:
            starter.cancel()
        log.info("%s stopping on %s", name, received[0] if received else "a failed start")
        await _mark(health_servicer, names, health_pb2.HealthCheckResponse.NOT_SERVING)
        await service.stop()
    finally:
        stopper.cancel()
        ended = streams.end_streams()  # clients keep streams open for good: end them, not the grace period
        if ended:
            log.info("%s ended %d open request streams", name, ended)
        await server.stop(config["shutdown.grace.ms"] / 1000)
        if health_server is not None:
            await health_server.stop(0)
        for watcher in (authorizer, quotas):
            if watcher is not None:
                await watcher.stop()
    log.info("%s stopped", name)


async def _start_health_server(health_servicer: health.aio.HealthServicer, host: str,
                               port: int) -> grpc.aio.Server | None:
    """The health service alone on a plaintext port: the kubelet's gRPC probes cannot speak TLS,
    and the answer (SERVING or not) tells nobody anything else."""
    if port == 0:
        return None
    server = grpc.aio.server(options=LISTEN_ALONE)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise SystemExit(f"cannot listen on {host}:{port} (health.port): the port is in use.")
    await server.start()
    return server


async def _mark(health_servicer: health.aio.HealthServicer, names: Sequence[str], status: int) -> None:
    """Set the overall status ("") and each service's."""
    for service_name in ("", *names):
        await health_servicer.set(service_name, status)
