"""A throwaway OpenLDAP server (Debian's `slapd`, installed by
scripts/ensure-slapd.sh) for the LDAP sign-in tests.

`Slapd.start()` writes a cn=config directory with `slapadd -n 0` (the mdb
database for `BASE`, the `memberof` overlay so people carry `memberOf` as in
Active Directory), loads the skeleton of `DIRECTORY` (the organisation, its
people and groups units, a read-only service account) with `slapadd -n 1`, and
runs `slapd` in the foreground on 127.0.0.1:<free port>. As root, everything
runs as `nobody` (`tests.support.services.processes._drop_privileges`). It dies with
pytest
(PR_SET_PDEATHSIG) and is stopped at the end of the session.

People and groups are added live (`reset`, `add_user`, `add_to_group`,
`remove_user`, ...) through ldap3 bound as the database's root DN, so the overlay
keeps `memberOf` in step; each test starts from a fresh set (`reset`).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import ldap3

from tests.support.services.processes import (
    _die_with_parent,
    _drop_privileges,
    _free_port,
)

SLAPD = Path(os.environ.get("SLAPD", "/usr/sbin/slapd"))
SLAPADD = SLAPD.with_name("slapadd")
MODULES = Path("/usr/lib/ldap")
SCHEMAS = Path("/etc/ldap/schema")

BASE = "dc=example,dc=org"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
ROOT_DN = f"cn=admin,{BASE}"
ROOT_PASSWORD = "root-secret"  # noqa: S105 (a throwaway test directory)
READER_DN = f"cn=reader,{BASE}"
READER_PASSWORD = "reader-secret"  # noqa: S105
START_TIMEOUT = 30.0
PLACEHOLDER_MEMBER = READER_DN

CONFIG = """\
dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: {base}/slapd.pid
olcTLSCACertificateFile: {base}/ca.pem
olcTLSCertificateFile: {base}/server.pem
olcTLSCertificateKeyFile: {base}/server.key

dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: {modules}
olcModuleLoad: back_mdb
olcModuleLoad: memberof

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file://{schemas}/core.ldif
include: file://{schemas}/cosine.ldif
include: file://{schemas}/nis.ldif
include: file://{schemas}/inetorgperson.ldif

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcDbDirectory: {base}/data
olcDbMaxSize: 104857600
olcSuffix: {suffix}
olcRootDN: {root_dn}
olcRootPW: {root_password}
olcAccess: {{0}}to attrs=userPassword by self =xw by anonymous auth by * none
olcAccess: {{1}}to * by users read by * none

dn: olcOverlay={{0}}memberof,olcDatabase={{1}}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {{0}}memberof
olcMemberOfRefInt: TRUE
olcMemberOfGroupOC: groupOfNames
olcMemberOfMemberAD: member
olcMemberOfMemberOfAD: memberOf
"""


DIRECTORY = "\n".join(
    [
        f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\n"
        "dc: example\no: Example\n",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n",
        f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups\n",
        f"dn: {READER_DN}\nobjectClass: organizationalRole\n"
        "objectClass: simpleSecurityObject\ncn: reader\n"
        f"userPassword: {READER_PASSWORD}\n",
    ]
)


class Slapd:
    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="chatsite-slapd-"))
        self.port = self.tls_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.base / "slapd.log"

    @property
    def ca_file(self) -> Path:
        """The certificate of the CA that signed the server's (for StartTLS)."""
        return self.base / "ca.pem"

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def start(self) -> Slapd:
        drop = _drop_privileges()
        config_dir, data_dir = self.base / "slapd.d", self.base / "data"
        config_dir.mkdir()
        data_dir.mkdir()
        config = CONFIG.format(
            base=self.base,
            modules=MODULES,
            schemas=SCHEMAS,
            suffix=BASE,
            root_dn=ROOT_DN,
            root_password=ROOT_PASSWORD,
        )
        (self.base / "config.ldif").write_text(config)
        write_certificates(self.base)
        (self.base / "directory.ldif").write_text(DIRECTORY)
        if drop:
            os.chmod(self.base, 0o755)
            for path in (self.base, config_dir, data_dir, self.base / "server.key"):
                os.chown(path, drop["user"], drop["group"])
        # -n 0: the config database; -n 1: the directory's skeleton. People and
        # groups are added live (`reset`): slapadd bypasses the memberof overlay.
        for number, ldif in (("0", "config.ldif"), ("1", "directory.ldif")):
            add = subprocess.run(
                [SLAPADD, "-n", number, "-F", config_dir, "-l", self.base / ldif],
                capture_output=True,
                check=False,
                **drop,
            )
            if add.returncode != 0:
                raise RuntimeError(
                    f"slapadd -n {number} failed ({add.returncode}):\n"
                    f"{add.stdout.decode()}{add.stderr.decode()}"
                )
        self.port, self.tls_port = _free_port(), _free_port()
        log = open(self.log_path, "wb")  # noqa: SIM115 (closed with the process)
        self.proc = subprocess.Popen(
            # -d 0: stay in the foreground (no fork), log nothing but errors.
            [
                SLAPD,
                "-d",
                "0",
                "-F",
                config_dir,
                "-h",
                f"{self.url}/ {self.ldaps_url}/",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent(signal.SIGTERM),  # noqa: PLW1509
            **drop,
        )
        log.close()
        self._wait_until_listening()
        return self

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        for port in (self.port, self.tls_port):
            self._wait_for(port, deadline)

    def _wait_for(self, port: int, deadline: float) -> None:
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"slapd exited:\n{self.log_path.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("slapd did not listen in time") from None
                time.sleep(0.02)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not os.environ.get("CHATSITE_TEST_KEEP_SERVERS"):
            shutil.rmtree(self.base, ignore_errors=True)

    # -- changing the directory while it runs (live, so memberOf follows)

    def admin(self) -> ldap3.Connection:
        return ldap3.Connection(
            self.url, user=ROOT_DN, password=ROOT_PASSWORD, auto_bind=True
        )

    def reset(
        self, people: dict[str, dict[str, str]], groups: dict[str, list[str]]
    ) -> None:
        """Empty ou=people and ou=groups, then add `people` (uid -> attributes,
        "password" among them) and `groups` (cn -> member uids)."""
        with self.admin() as conn:
            for ou in (GROUPS, PEOPLE):
                conn.search(ou, "(objectClass=*)", ldap3.LEVEL, attributes=[])
                for entry in list(conn.response):
                    assert conn.delete(entry["dn"]), conn.result
            for uid, attributes in people.items():
                _add_user(conn, uid, attributes)
            for cn, members in groups.items():
                _add_group(conn, cn, members)

    def add_user(self, uid: str, **attributes: str) -> None:
        with self.admin() as conn:
            _add_user(conn, uid, attributes)

    def modify_user(self, uid: str, **values: str) -> None:
        with self.admin() as conn:
            changes = {k: [(ldap3.MODIFY_REPLACE, [v])] for k, v in values.items()}
            assert conn.modify(user_dn(uid), changes), conn.result

    def remove_user(self, uid: str) -> None:
        with self.admin() as conn:
            assert conn.delete(user_dn(uid)), conn.result

    def add_to_group(self, uid: str, cn: str) -> None:
        self._member(uid, cn, ldap3.MODIFY_ADD)

    def remove_from_group(self, uid: str, cn: str) -> None:
        self._member(uid, cn, ldap3.MODIFY_DELETE)

    def _member(self, uid: str, cn: str, how: str) -> None:
        with self.admin() as conn:
            changes = {"member": [(how, [user_dn(uid)])]}
            assert conn.modify(group_dn(cn), changes), conn.result


def _add_user(conn: ldap3.Connection, uid: str, attributes: dict[str, str]) -> None:
    values = dict(attributes)
    values["userPassword"] = values.pop("password")
    values.setdefault("cn", uid)
    values.setdefault("sn", uid)
    ok = conn.add(user_dn(uid), ["inetOrgPerson"], {"uid": uid, **values})
    assert ok, conn.result


def _add_group(conn: ldap3.Connection, cn: str, uids: list[str]) -> None:
    # groupOfNames needs a member: the placeholder is no person.
    members = [PLACEHOLDER_MEMBER, *(user_dn(uid) for uid in uids)]
    ok = conn.add(group_dn(cn), ["groupOfNames"], {"cn": cn, "member": members})
    assert ok, conn.result


def user_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


def group_dn(cn: str) -> str:
    return f"cn={cn},{GROUPS}"


def write_certificates(base: Path) -> None:
    """A CA of the session's own (ca.pem) and the server's certificate for
    127.0.0.1 signed by it (server.pem, server.key): StartTLS as in production,
    certificate checks included."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: str
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        certificate("chatsite test CA", ca_key, "chatsite test CA")
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        certificate("127.0.0.1", key, "chatsite test CA")
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (base / "ca.pem").write_bytes(ca.public_bytes(pem))
    (base / "server.pem").write_bytes(server.public_bytes(pem))
    key_path = base / "server.key"
    key_path.write_bytes(
        key.private_bytes(
            pem,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
