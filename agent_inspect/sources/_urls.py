"""Source addresses: ``kafka://host:port/topic`` and ``fluss://host:port/db.table`` URLs, ports and timeouts."""

from __future__ import annotations

import math
import socket
import urllib.request
from urllib.parse import unquote, urlsplit

from agent_inspect._errors import SourceError

__all__ = ["source_scheme", "split_source_url", "check_port", "check_timeout", "resolve_timeout", "page_answers",
           "port_answers", "scheduler_answers"]

_DEFAULT_TIMEOUT = 10.0  # seconds a reader waits for a broker, cluster or storage when its timeout is None


def source_scheme(source: str) -> str:
    """The scheme of a source's text, lower-cased ("kafka", "fluss", "file", …; "" for a plain path).

    For example::

        ai.sources.source_scheme("Kafka://broker:9092/topic")     # 'kafka' ("" for a plain path)
    """
    return source.split("://", 1)[0].lower() if "://" in source else ""


def split_source_url(url: str, scheme: str) -> tuple[str, str]:
    """``scheme://host:port/name`` as ``(servers, name)``; credentials in the URL are dropped, never echoed.

    For example::

        ai.sources.split_source_url("kafka://broker:9092/agent-action-state", "kafka")   # ("broker:9092", topic)
    """
    what = "topic" if scheme == "kafka" else "database.table"
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket; the URL may hold credentials: not echoed
        raise SourceError(f"{scheme} URL does not parse ({exc}); it must look like {scheme}://host:port/{what}") \
            from None
    servers = parts.netloc.rsplit("@", 1)[-1]  # never keep credentials in a URL
    name = unquote(parts.path.lstrip("/"))
    if parts.query:
        raise SourceError(f"{scheme}:// URLs take no query; pass client settings as config={{…}}")
    if not servers or not name or "/" in name:
        shown = f"{scheme}://{servers}/{parts.path.lstrip('/')}"  # without any credentials
        raise SourceError(f"{scheme} URL {shown!r} must look like {scheme}://host:port/{what}")
    for server in servers.split(","):
        check_port(server, scheme)
    return servers, name

def check_port(server: str, scheme: str) -> None:
    """``host``, ``host:port`` or ``[v6]:port`` with a port from 1 to 65535 (clients would take any text).

    For example::

        ai.sources.check_port("broker:9092", "kafka")  # fine; "broker:99999" raises an error
    """
    if server.startswith("["):
        host, _, rest = server.partition("]")
        port = rest[1:] if rest.startswith(":") else None
        bad_host = not rest.startswith(":") and rest != ""
    else:
        host, sep, port_text = server.rpartition(":")
        host, port = (host, port_text) if sep else (server, None)
        bad_host = ":" in host  # a bare IPv6 address
    if not host or bad_host:
        raise SourceError(f"{scheme} URL server {server!r} must be host:port (IPv6 in brackets: [::1]:port)")
    if port is None:
        return
    if not port.isdigit():
        raise SourceError(f"{scheme} URL server {server!r}: port {port!r} is not a number")
    if not 1 <= int(port) <= 65535:
        raise SourceError(f"{scheme} URL server {server!r}: port {int(port)} is outside 1..65535")

def check_timeout(timeout: float) -> None:
    """A :class:`SourceError` unless ``timeout`` is a positive, finite number of seconds.

    For example::

        ai.sources.check_timeout(10.0)                 # fine; 0 or a negative timeout raises SourceError
    """
    # librdkafka takes 0 or less as "wait forever": a silent peer would hang the load
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
            math.isfinite(timeout) and timeout > 0):
        raise SourceError(f"timeout must be a positive, finite number of seconds, not {timeout!r}")


def resolve_timeout(timeout: float | None) -> float:
    """The seconds a reader waits: ``timeout``, or 10 when None (every reader's default, one meaning for all).

    For example::

        ai.sources.resolve_timeout(None), ai.sources.resolve_timeout(30)   # (10.0, 30)
    """
    return _DEFAULT_TIMEOUT if timeout is None else timeout


def page_answers(url: str, *, timeout: float = 3.0) -> bool:
    """True when an http(s) page answers ``url`` with 200 (a read-only GET; any failure is False).

    For example::

        ai.sources.page_answers("http://127.0.0.1:9/")   # False: nothing answers there
    """
    if not url.startswith(("http://", "https://")):
        return False
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


def port_answers(address: str, *, timeout: float = 3.0) -> bool:
    """True when something accepts a TCP connection at ``address`` (``tcp://host:port`` or ``host:port``, as a Dask
    scheduler address is written) within ``timeout`` seconds; it only opens and closes the connection.

    For example::

        ai.sources.port_answers("tcp://127.0.0.1:9")   # False: nothing listens there
    """
    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is no number
        return False
    if not host or port is None:
        return False
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def scheduler_answers(address: str, *, timeout: float = 10.0) -> str | None:
    """None when a Dask scheduler at ``address`` completes Dask's handshake within ``timeout`` seconds; otherwise
    why not, in a few words. It only connects, greets and closes.

    Dask's own connect waits for the peer's greeting with no deadline, so a port that accepts and never answers
    (a proxy, a firewall, another service) would hang ``distributed.Client`` however short its timeout.

    For example::

        ai.sources.scheduler_answers("tcp://127.0.0.1:9", timeout=2)   # "nothing accepts a connection there"
    """
    import asyncio
    import concurrent.futures

    from distributed.comm import connect
    from distributed.security import Security

    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")   # Dask's default scheme is tcp
        port = parts.port
    except ValueError as exc:  # an unclosed IPv6 bracket, a port that is no number
        return f"not an address: {exc}"
    # Dask retries a refused connection for its whole timeout: a port nobody listens on is told at once
    if parts.scheme in ("tcp", "tls") and parts.hostname and port is not None and not port_answers(
            f"tcp://{parts.netloc}", timeout=min(timeout, 3.0)):
        return "nothing accepts a connection there"

    async def greet() -> None:
        # TLS (tls://) as the Client would take it: from Dask's configuration
        comm = await asyncio.wait_for(connect(address, timeout=timeout, **Security().get_connection_args("client")),
                                      timeout)
        await comm.close()

    # in a thread of its own: a notebook's event loop may be running in this one
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, greet()).result()
        except TimeoutError:
            return f"it accepted the connection but did not answer within {timeout:g}s: is it a Dask scheduler?"
        except Exception as exc:  # noqa: BLE001 - refused, closed, or a peer speaking another protocol
            return str(exc) or type(exc).__name__
    return None


def shown_url(url: str, text: str | None = None) -> str:
    """``url`` as an error message may show it: without the user and password a URL may carry (``s3://key:secret@…``,
    ``http://user:pass@collector``); given ``text`` (a client's message that may quote the URL), that text with the
    credentials taken out instead."""
    try:   # without a scheme ("user:pass@host:4318") everything before the last @ is the userinfo
        userinfo = urlsplit(url).netloc.rpartition("@")[0] if "://" in url else url.rpartition("@")[0]
    except ValueError:
        userinfo = ""
    shown = url if text is None else text
    return shown.replace(f"{userinfo}@", "") if userinfo else shown
