"""A real single-node Apache Kafka broker for development and tests.

Apache Kafka (KRaft mode: one process is both broker and controller) runs from
the Maven Central jars that ``deploy/kafka/pom.xml`` resolves, so no Docker
engine or download site is needed, only ``mvn`` and a JDK 17+. Jars are cached
under ``$BINLAKE_CACHE_DIR`` (default ``~/.cache/binlake``); each broker gets a
run folder holding its config, data, log, pid and port.

``start`` formats storage, launches the broker in the background on free
loopback ports, waits until it answers Kafka API requests and records
``broker.json``; ``stop`` sends SIGTERM (then SIGKILL after a grace period);
``status`` says whether the recorded broker is alive. A failed start raises
BrokerError with the tail of the broker log. Replication factors are 1, so
transactions work on the single node. With ``sasl_ssl`` the broker also
listens with SASL_SSL (SCRAM over TLS, shared/devbroker/secure.py) on a port
of its own, ``BrokerInfo.sasl_ssl_port``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from binlake.shared.devbroker import interrupts
from binlake.shared.devbroker.secure import LISTENER, SaslSslListener
from binlake.shared.errors import BinlakeError

REPO: Final = Path(__file__).resolve().parents[2]
DEFAULT_POM: Final = REPO / "deploy" / "kafka" / "pom.xml"
STATE_FILE: Final = "broker.json"
PORTS_FROM: Final = 10000  # free_port draws from here up to the ephemeral range: above common services' ports

_LOG4J2: Final = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn">
  <Appenders>
    <File name="file" fileName="{log}">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="org.apache.kafka.clients" level="warn"/>
    <Root level="info"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
"""Brokers this process started: kept so they are reaped (no zombie, no ResourceWarning)."""


class BrokerError(BinlakeError):
    """The development broker could not be prepared, started or stopped."""


@dataclass(slots=True)
class BrokerInfo:
    pid: int
    port: int
    controller_port: int
    run_dir: str
    kafka_version: str
    sasl_ssl_port: int | None = None
    """The SASL_SSL listener's port, when the broker was started with one."""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        if self.sasl_ssl_port is None:
            raise BrokerError(f"the broker in {self.run_dir} has no SASL_SSL listener")
        return f"127.0.0.1:{self.sasl_ssl_port}"


def cache_dir() -> Path:
    return Path(os.environ.get("BINLAKE_CACHE_DIR", Path.home() / ".cache" / "binlake"))


def kafka_version(pom: Path = DEFAULT_POM) -> str:
    text = pom.read_text("utf-8")
    start = text.index("<kafka.version>") + len("<kafka.version>")
    return text[start : text.index("</kafka.version>")]


def ensure_jars(pom: Path = DEFAULT_POM) -> Path:
    """The folder of broker jars, resolved with Maven on first use (cached after)."""
    if not pom.exists():
        raise BrokerError(f"{pom} not found: run binlake from its source checkout, or set BINLAKE_KAFKA_POM")
    libs = cache_dir() / f"kafka-{kafka_version(pom)}" / "libs"
    marker = libs / ".complete"
    if marker.exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError("Maven (mvn) is needed to fetch the Kafka jars; install it (apt-get install maven)")
    libs.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={libs}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BrokerError(f"mvn could not resolve the Kafka jars:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    marker.touch()
    return libs


def _cluster_id() -> str:
    """A random Kafka cluster id: URL-safe base64 of a UUID, never starting with '-'.

    Kafka's own ``Uuid.randomUuid`` regenerates ids that start with '-', since
    command lines would read them as options (one start in 32 failed on this).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


_HANDED_OUT: Final[set[int]] = set()
"""Every port ``free_port`` gave this process, and a restarted broker's: never given again here."""


def free_port() -> int:
    """A loopback port nothing listens on now, for a process started next to listen on.

    It is drawn below the kernel's ephemeral range (``ip_local_port_range``):
    a port from ``bind(0)`` lies inside that range, where any outgoing
    connection on the machine may take it as its local port before our process
    binds it (seen: a demo normalizer's metrics port taken by a Kafka client's
    connection, the normalizer then exited with "address already in use").

    A port it gave once it never gives again in this process: a broker stopped for an outage must find its
    ports free when it starts again (seen: a chaos run's broker could not restart, its controller port
    "already in use" while it was down).
    """
    low = _ephemeral_low()
    for _ in range(200):
        port = random.randint(PORTS_FROM, low - 1) if low - 1 > PORTS_FROM else 0
        if port in _HANDED_OUT:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            chosen: int = sock.getsockname()[1]
            _HANDED_OUT.add(chosen)
            return chosen
    raise BrokerError(f"no free loopback port found between {PORTS_FROM} and {low - 1}")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default; elsewhere bind(0) is the fallback (see free_port)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        raise BrokerError("a JDK 17+ is needed to run the Kafka broker; set JAVA_HOME or put java on PATH")
    return java


def _server_properties(
    run_dir: Path, port: int, controller_port: int, sasl_ssl: tuple[SaslSslListener, int] | None = None
) -> str:
    listeners, advertised = f"PLAINTEXT://127.0.0.1:{port}", f"PLAINTEXT://127.0.0.1:{port}"
    protocols, secure = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", ""
    if sasl_ssl is not None:
        listener, secure_port = sasl_ssl
        advertised += f",{LISTENER}://127.0.0.1:{secure_port}"
        listeners = advertised
        protocols += f",{LISTENER}:{LISTENER}"
        secure = "".join(f"{key}={value}\n" for key, value in listener.properties(secure_port).items())
    return f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners={listeners},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners={advertised}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map={protocols}
{secure}log.dirs={run_dir / "data"}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
"""


def read_state(run_dir: Path) -> BrokerInfo | None:
    path = run_dir / STATE_FILE
    if not path.exists():
        return None
    return BrokerInfo(**json.loads(path.read_text()))


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child (exited, not reaped) is not alive.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _answers(port: int) -> bool:
    """True once the broker answers a Kafka ApiVersions request on ``port``."""
    request = (
        (18).to_bytes(2, "big")  # ApiVersions
        + (0).to_bytes(2, "big")  # version 0
        + (1).to_bytes(4, "big")  # correlation id
        + (7).to_bytes(2, "big")
        + b"binlake"
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(len(request).to_bytes(4, "big") + request)
            size = int.from_bytes(sock.recv(4), "big")
            body = sock.recv(size)
    except OSError:
        return False
    return len(body) >= 6 and int.from_bytes(body[4:6], "big") == 0


def log_tail(run_dir: Path, lines: int = 40) -> str:
    parts = []
    for name in ("broker.log", "stdout.log"):
        path = run_dir / name
        if path.exists():
            parts.append(f"--- {path} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
    return "\n".join(parts) or "(no broker log written)"


def start(
    run_dir: Path, *, timeout_s: float = 90.0, heap: str = "512m", sasl_ssl: SaslSslListener | None = None
) -> BrokerInfo:
    """Format storage and start a broker; return once it answers requests.

    ``sasl_ssl``: a SASL_SSL listener too, its SCRAM users written into the storage as it is formatted.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    current = read_state(run_dir)
    if current is not None and is_alive(current.pid):
        if _answers(current.port):
            return current
        raise BrokerError(f"a broker process {current.pid} from {run_dir} is alive but not answering; stop it first")
    libs = ensure_jars()
    for stale in ("data", STATE_FILE, "broker.log", "stdout.log"):
        target = run_dir / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    port, controller_port, secure_port = _distinct_ports(3)
    properties = run_dir / "server.properties"
    secure = None if sasl_ssl is None else (sasl_ssl, secure_port)
    properties.write_text(_server_properties(run_dir, port, controller_port, secure))
    log4j = run_dir / "log4j2.xml"
    log4j.write_text(_LOG4J2.format(log=run_dir / "broker.log"))
    java = _java()
    classpath = f"{libs}/*"
    base = [java, f"-Xmx{heap}", "-cp", classpath, f"-Dlog4j2.configurationFile={log4j}"]
    cluster_id = _cluster_id()
    formatted = subprocess.run(
        [*base, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(properties)]
        + ([] if sasl_ssl is None else sasl_ssl.format_arguments()),
        capture_output=True,
        text=True,
        check=False,
    )
    if formatted.returncode != 0:
        raise BrokerError(f"formatting broker storage failed:\n{formatted.stdout[-2000:]}{formatted.stderr[-2000:]}")
    return _launch(
        run_dir,
        base,
        properties,
        port,
        controller_port,
        timeout_s=timeout_s,
        sasl_ssl_port=None if sasl_ssl is None else secure_port,
    )


def _distinct_ports(count: int) -> list[int]:
    return [free_port() for _ in range(count)]  # free_port never hands out a port twice


def _listener_ports(listeners: str) -> dict[str, int]:
    """``NAME://host:port,...`` -> {NAME: port}."""
    return {item.split("://", 1)[0]: int(item.rsplit(":", 1)[1]) for item in listeners.split(",") if item}


def restart(run_dir: Path, *, timeout_s: float = 90.0, heap: str = "512m") -> BrokerInfo:
    """Start a stopped broker again on its old ports with its data (an outage, not a reset)."""
    base, properties, ports = relaunch(run_dir, heap)
    return _launch(
        run_dir,
        base,
        properties,
        ports["PLAINTEXT"],
        ports["CONTROLLER"],
        timeout_s=timeout_s,
        sasl_ssl_port=ports.get(LISTENER),
    )


def relaunch(run_dir: Path, heap: str) -> tuple[list[str], Path, dict[str, int]]:
    """What starting a stopped broker again takes: its command line, its properties and its listeners' ports."""
    properties = run_dir / "server.properties"
    if not properties.exists() or not (run_dir / "data").exists():
        raise BrokerError(f"no stopped broker in {run_dir} to restart; use start")
    current = read_state(run_dir)
    if current is not None and is_alive(current.pid):
        raise BrokerError(f"the broker in {run_dir} is still running (pid {current.pid})")
    settings = dict(
        line.split("=", 1) for line in properties.read_text().splitlines() if "=" in line and not line.startswith("#")
    )
    ports = _listener_ports(settings["listeners"])
    _HANDED_OUT.update(ports.values())  # a broker started by another process: its ports are not free_port's
    libs = ensure_jars()
    log4j = run_dir / "log4j2.xml"
    base = [_java(), f"-Xmx{heap}", "-cp", f"{libs}/*", f"-Dlog4j2.configurationFile={log4j}"]
    return base, properties, ports


def _launch(
    run_dir: Path,
    base: list[str],
    properties: Path,
    port: int,
    controller_port: int,
    *,
    timeout_s: float,
    sasl_ssl_port: int | None = None,
) -> BrokerInfo:
    before = set(_CHILDREN)
    try:
        process = spawn(run_dir, base, properties)
        version = kafka_version()
        info = BrokerInfo(process.pid, port, controller_port, str(run_dir), version, sasl_ssl_port=sasl_ssl_port)
        await_answer(process, info, deadline=time.monotonic() + timeout_s)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM) or failed before broker.json names it: nobody could stop it by its run folder.
        stop_launched(before)
        raise
    return info


def stop_launched(before: set[int], *, grace_s: float = 5.0) -> None:
    """Stop the brokers this process launched since ``before`` (its launched pids then) and has not stopped.

    All are signalled first, then waited for: a JVM still starting may take the whole grace period.
    """
    launched = set(_CHILDREN) - before
    for pid in launched:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for pid in launched:
        _terminate(pid, max(0.0, deadline - time.monotonic()))


def spawn(run_dir: Path, base: list[str], properties: Path) -> subprocess.Popen[bytes]:
    """Launch the broker JVM in the background (its own session: it outlives the CLI, stopped by pid).

    A SIGTERM meanwhile acts once the process is recorded in ``_CHILDREN`` (shared/devbroker/interrupts.py).
    """
    with open(run_dir / "stdout.log", "ab") as out, interrupts.deferred():
        process = subprocess.Popen(
            [*base, "-XX:+UseSerialGC", "kafka.Kafka", str(properties)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        _CHILDREN[process.pid] = process
    return process


def await_answer(process: subprocess.Popen[bytes], info: BrokerInfo, *, deadline: float) -> None:
    """Wait until the broker answers Kafka requests, then record ``broker.json``; raise BrokerError if it
    exits or the deadline passes (the caller stops it)."""
    run_dir = Path(info.run_dir)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerError(f"the broker exited with code {process.returncode} while starting:\n{log_tail(run_dir)}")
        if _answers(info.port):
            (run_dir / STATE_FILE).write_text(json.dumps(asdict(info)))
            return
        time.sleep(0.25)
    raise BrokerError(f"the broker in {run_dir} did not answer in time:\n{log_tail(run_dir)}")


def _terminate(pid: int, grace_s: float) -> None:
    child = _CHILDREN.pop(pid, None)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if child is not None and child.poll() is not None:
            return
        if child is None and not is_alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if child is not None:
        child.wait(10)


def stop(run_dir: Path, *, grace_s: float = 20.0) -> bool:
    """Stop the recorded broker; False when none was running."""
    info = read_state(run_dir)
    if info is None:
        return False
    alive = is_alive(info.pid)
    if alive:
        _terminate(info.pid, grace_s)
    (run_dir / STATE_FILE).unlink(missing_ok=True)
    return alive


def status(run_dir: Path) -> tuple[BrokerInfo | None, bool]:
    """The recorded broker and whether it answers now."""
    info = read_state(run_dir)
    if info is None or not is_alive(info.pid):
        return info, False
    return info, _answers(info.port)
