"""Certificates for the local control plane, made with `cryptography`: one CA, the apiserver's serving
cert, an admin client cert (group system:masters), the service-account key pair and Kueue's webhook
serving cert, all for 127.0.0.1; and, for kube-apiserver's aggregation layer, a second CA (the front
proxy's: Kubernetes' PKI guide keeps it apart from the client CA, so a cert it signs cannot pass as a user)
with the aggregator's client cert, and the serving cert of Kueue's visibility server for its Service's name
(the aggregator checks the name `<service>.<namespace>.svc`). Written once per run directory."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gpu_finops.facts.private_files import write_private

VALID = dt.timedelta(days=30)
FRONT_PROXY_CA = "front-proxy-ca"
FRONT_PROXY_CLIENT = "front-proxy-client"  # the CN kube-apiserver's --requestheader-allowed-names admits


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_key(key: rsa.RSAPrivateKey, path: Path) -> None:
    # 0600 from its creation: written and then chmodded, the key was readable by anyone in between.
    write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
    )


def _write_cert(cert: x509.Certificate, path: Path) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _ensure_ca(crt: Path, key_path: Path, cn: str) -> None:
    """A self-signed CA at crt/key_path, unless one is there."""
    if crt.exists() and key_path.exists():
        return
    key = _key()
    now = dt.datetime.now(dt.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALID)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write_key(key, key_path)
    _write_cert(ca, crt)


class Pki:
    """The run's PKI in one folder. `ensure()` makes whatever is missing."""

    def __init__(self, folder: Path):
        self.dir = folder
        self.ca_crt, self.ca_key = folder / "ca.crt", folder / "ca.key"
        self.sa_key, self.sa_pub = folder / "sa.key", folder / "sa.pub"

    def pair(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.crt", self.dir / f"{name}.key"

    @property
    def front_proxy_ca(self) -> Path:
        """The requestheader CA: kube-apiserver's --requestheader-client-ca-file."""
        return self.pair(FRONT_PROXY_CA)[0]

    def ensure(self) -> Pki:
        self.dir.mkdir(parents=True, exist_ok=True)
        _ensure_ca(self.ca_crt, self.ca_key, "gpu-finops-local-ca")
        _ensure_ca(*self.pair(FRONT_PROXY_CA), "gpu-finops-local-front-proxy-ca")
        if not self.sa_key.exists():
            key = _key()
            _write_key(key, self.sa_key)
            self.sa_pub.write_bytes(
                key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            )
        self.issue(
            "apiserver",
            "kube-apiserver",
            server=True,
            dns=[
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
            ips=["127.0.0.1", "10.96.0.1"],
        )
        self.issue("admin", "gpu-finops-admin", org="system:masters", client=True)
        self.issue("webhook", "gpu-finops-local-webhooks", server=True, dns=["localhost"], ips=["127.0.0.1"])
        # the aggregator's client cert, signed by the front-proxy CA (kube-apiserver's --proxy-client-cert-file)
        self.issue(FRONT_PROXY_CLIENT, FRONT_PROXY_CLIENT, client=True, ca=FRONT_PROXY_CA)
        return self

    def visibility_serving(self, service: str, namespace: str) -> tuple[Path, Path]:
        """Kueue's visibility server's serving cert, for the name the aggregator checks (`<svc>.<ns>.svc`,
        whatever address the EndpointSlice gives)."""
        return self.issue(
            "kueue-visibility",
            "kueue-visibility-server",
            server=True,
            dns=[f"{service}.{namespace}.svc", "localhost"],
            ips=["127.0.0.1"],
        )

    def issue(
        self,
        name: str,
        cn: str,
        *,
        org: str | None = None,
        server: bool = False,
        client: bool = False,
        dns: list[str] | None = None,
        ips: list[str] | None = None,
        ca: str | None = None,
    ) -> tuple[Path, Path]:
        """A cert signed by the run's CA (or by the CA named `ca`, e.g. the front proxy's), unless there."""
        crt_path, key_path = self.pair(name)
        if crt_path.exists() and key_path.exists():
            return crt_path, key_path
        ca_crt_path, ca_key_path = self.pair(ca) if ca else (self.ca_crt, self.ca_key)
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        ca_cert = x509.load_pem_x509_certificate(ca_crt_path.read_bytes())
        key = _key()
        now = dt.datetime.now(dt.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns or []]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips or []]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
        _write_key(key, key_path)
        _write_cert(cert, crt_path)
        return crt_path, key_path
