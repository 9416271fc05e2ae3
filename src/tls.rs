//! TLS as redis-server's `tls-*` settings describe it, with rustls and its
//! `ring` provider: the settings, the server side's configuration built
//! from them (certificates, client authentication, protocols, cipher
//! suites, groups, the session cache), and the handle the TLS listeners
//! and CONFIG SET share, so that a new certificate serves new connections
//! while existing ones keep theirs.
//!
//! rustls speaks TLS 1.2 and 1.3 with ECDHE key exchange only: no DHE (so
//! `tls-dh-params-file` is kept and logged as unused), no TLS 1.0/1.1, no
//! renegotiation. Cipher names rustls has no suite for are logged and
//! left out; a list that leaves none is refused as OpenSSL refuses it.

use std::io;
use std::sync::{Arc, RwLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::pki_types::{ServerName, UnixTime};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, ServerConfig,
    ServerConnection, SignatureScheme, SupportedCipherSuite,
};
use tracing::warn;

/// `tls-auth-clients`: whether a client must show a certificate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthClients {
    #[default]
    Yes,
    No,
    Optional,
}

impl AuthClients {
    pub fn name(self) -> &'static str {
        match self {
            AuthClients::Yes => "yes",
            AuthClients::No => "no",
            AuthClients::Optional => "optional",
        }
    }
}

/// Redis 7.0's `tls-*` settings (and 8.12's `tls-groups`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// 0: no TLS listener.
    pub port: u16,
    pub cert_file: String,
    pub key_file: String,
    pub key_file_pass: String,
    pub client_cert_file: String,
    pub client_key_file: String,
    pub client_key_file_pass: String,
    pub dh_params_file: String,
    pub ca_cert_file: String,
    pub ca_cert_dir: String,
    pub auth_clients: AuthClients,
    pub replication: bool,
    pub cluster: bool,
    /// Space separated: `TLSv1.2`, `TLSv1.3` (empty: both).
    pub protocols: String,
    /// TLS 1.2 suites in OpenSSL's names, `:` separated (empty: all).
    pub ciphers: String,
    /// TLS 1.3 suites, `:` separated (empty: all).
    pub ciphersuites: String,
    pub prefer_server_ciphers: bool,
    pub session_caching: bool,
    pub session_cache_size: u32,
    pub session_cache_timeout: u32,
    /// Key exchange groups, `:` separated (empty: the provider's).
    pub groups: String,
}

impl TlsSettings {
    /// Whether TLS serves: a TLS port, or a cluster bus over TLS.
    pub fn in_use(&self) -> bool {
        self.port != 0 || self.cluster
    }
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            port: 0,
            cert_file: String::new(),
            key_file: String::new(),
            key_file_pass: String::new(),
            client_cert_file: String::new(),
            client_key_file: String::new(),
            client_key_file_pass: String::new(),
            dh_params_file: String::new(),
            ca_cert_file: String::new(),
            ca_cert_dir: String::new(),
            auth_clients: AuthClients::Yes,
            replication: false,
            cluster: false,
            protocols: String::new(),
            ciphers: String::new(),
            ciphersuites: String::new(),
            prefer_server_ciphers: false,
            session_caching: true,
            session_cache_size: 20480,
            session_cache_timeout: 300,
            groups: String::new(),
        }
    }
}

/// What new TLS connections get: the clients' configuration and, with
/// `tls-cluster`, the cluster bus's (its listener asks every peer for a
/// certificate, as Redis's bus does whatever `tls-auth-clients` says)
/// and the one for connections this node opens to its peers (bus links,
/// MIGRATE).
pub struct TlsConfigs {
    clients: Arc<ServerConfig>,
    peers: Option<(Arc<ServerConfig>, Arc<ClientConfig>)>,
}

/// The configurations from the settings (Redis's `tlsConfigure`): an
/// error names what is wrong, for the log.
pub fn configs(s: &TlsSettings) -> Result<TlsConfigs, String> {
    let clients = server_config(s, s.auth_clients)?;
    let peers = match s.cluster {
        false => None,
        true => Some((server_config(s, AuthClients::Yes)?, client_config(s)?)),
    };
    Ok(TlsConfigs { clients, peers })
}

/// The TLS configurations as the TLS listeners, the cluster bus and
/// MIGRATE use them: one handle shared by all and by CONFIG SET, which
/// swaps what it holds (connections made before keep theirs).
#[derive(Clone)]
pub struct TlsContext(Arc<RwLock<Arc<TlsConfigs>>>);

impl TlsContext {
    pub fn new(configs: TlsConfigs) -> TlsContext {
        TlsContext(Arc::new(RwLock::new(Arc::new(configs))))
    }

    /// New connections from now on use `configs`.
    pub fn replace(&self, configs: TlsConfigs) {
        if let Ok(mut current) = self.0.write() {
            *current = Arc::new(configs);
        }
    }

    fn current(&self) -> io::Result<Arc<TlsConfigs>> {
        self.0
            .read()
            .map(|c| c.clone())
            .map_err(|_| io::Error::other("TLS configuration unavailable"))
    }

    /// A new client connection's TLS state, before its handshake.
    pub fn accept(&self) -> io::Result<ServerConnection> {
        ServerConnection::new(self.current()?.clients.clone()).map_err(io::Error::other)
    }

    fn peers(&self) -> io::Result<(Arc<ServerConfig>, Arc<ClientConfig>)> {
        self.current()?
            .peers
            .clone()
            .ok_or_else(|| io::Error::other("tls-cluster is off"))
    }

    /// A connection accepted on the cluster bus (`tls-cluster`).
    pub fn accept_peer(&self) -> io::Result<ServerConnection> {
        ServerConnection::new(self.peers()?.0).map_err(io::Error::other)
    }

    /// A connection this node opens to a peer at `host` (`tls-cluster`).
    pub fn connect_peer(&self, host: &str) -> io::Result<ClientConnection> {
        connect(self.peers()?.1, host)
    }
}

/// The server side's configuration, asking the peer for a certificate
/// as `auth` says.
fn server_config(s: &TlsSettings, auth: AuthClients) -> Result<Arc<ServerConfig>, String> {
    if s.cert_file.is_empty() || s.key_file.is_empty() {
        return Err("No tls-cert-file or tls-key-file configured!".into());
    }
    if !s.dh_params_file.is_empty() {
        warn!("tls-dh-params-file is not used: rustls offers ECDHE key exchange only, no DHE");
    }
    let provider = Arc::new(provider(s)?);
    let versions = protocol_versions(&s.protocols)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?;
    let builder = match auth {
        AuthClients::No => builder.with_no_client_auth(),
        auth => {
            let roots = Arc::new(ca_roots(s)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = match auth {
                AuthClients::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("Failed to configure CA certificate(s): {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = certificates(&s.cert_file)?;
    let key = private_key(&s.key_file, &s.key_file_pass)?;
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("Failed to load certificate and private key: {e}"))?;
    config.ignore_client_order = s.prefer_server_ciphers;
    if s.session_caching {
        config.session_storage =
            ServerSessionMemoryCache::new(s.session_cache_size.max(1) as usize);
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(Arc::new(config))
}

/// The client side, for the links this node opens (to its primary with
/// `tls-replication`): the peer's chain checked against the CA, its name
/// not (Redis 7.0 checks none); this node shows `tls-client-cert-file`,
/// else `tls-cert-file`.
pub fn client_config(s: &TlsSettings) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(provider(s)?);
    let versions = protocol_versions(&s.protocols)?;
    let roots = Arc::new(ca_roots(s)?);
    let chain_check = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| format!("Failed to configure CA certificate(s): {e}"))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly(chain_check)));
    let (cert, key, pass) = match s.client_cert_file.is_empty() {
        true => (&s.cert_file, &s.key_file, &s.key_file_pass),
        false => (
            &s.client_cert_file,
            &s.client_key_file,
            &s.client_key_file_pass,
        ),
    };
    let config = match cert.is_empty() {
        true => builder.with_no_client_auth(),
        false => builder
            .with_client_auth_cert(certificates(cert)?, private_key(key, pass)?)
            .map_err(|e| format!("Failed to load client certificate and key: {e}"))?,
    };
    Ok(Arc::new(config))
}

/// A TLS client for `host` (a name or an address).
pub fn connect(config: Arc<ClientConfig>, host: &str) -> io::Result<ClientConnection> {
    let name = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
    };
    ClientConnection::new(config, name).map_err(io::Error::other)
}

/// webpki's check of the peer's chain, without its name check.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                NotValidForName | NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The ring provider with the suites and groups the settings allow.
fn provider(s: &TlsSettings) -> Result<CryptoProvider, String> {
    let mut provider = rustls::crypto::ring::default_provider();
    let tls13 = |suite: &SupportedCipherSuite| matches!(suite, SupportedCipherSuite::Tls13(_));
    let mut keep: Vec<SupportedCipherSuite> = Vec::new();
    for (wanted, is13, setting) in [
        (&s.ciphersuites, true, "tls-ciphersuites"),
        (&s.ciphers, false, "tls-ciphers"),
    ] {
        let of_kind: Vec<SupportedCipherSuite> = provider
            .cipher_suites
            .iter()
            .filter(|suite| tls13(suite) == is13)
            .copied()
            .collect();
        if wanted.trim().is_empty() || wanted.trim().eq_ignore_ascii_case("DEFAULT") {
            keep.extend(of_kind);
            continue;
        }
        let mut found = 0;
        for name in wanted.split([':', ',', ' ']).filter(|n| !n.is_empty()) {
            match of_kind.iter().find(|suite| suite_named(suite, name)) {
                Some(suite) => {
                    keep.push(*suite);
                    found += 1;
                }
                None => warn!("{setting}: rustls has no cipher suite {name}; left out"),
            }
        }
        if found == 0 {
            return Err(format!(
                "Failed to configure ciphers: {setting} names no suite rustls has"
            ));
        }
    }
    provider.cipher_suites = keep;
    if !s.groups.trim().is_empty() {
        let mut groups = Vec::new();
        for name in s.groups.split([':', ',', ' ']).filter(|n| !n.is_empty()) {
            let wanted = match name.to_ascii_lowercase().as_str() {
                "x25519" => Some(rustls::NamedGroup::X25519),
                "p-256" | "prime256v1" | "secp256r1" => Some(rustls::NamedGroup::secp256r1),
                "p-384" | "secp384r1" => Some(rustls::NamedGroup::secp384r1),
                _ => None,
            };
            match provider.kx_groups.iter().find(|g| Some(g.name()) == wanted) {
                Some(group) => groups.push(*group),
                None => warn!("tls-groups: rustls has no group {name}; left out"),
            }
        }
        if groups.is_empty() {
            return Err("Failed to set TLS groups: none of tls-groups is known".into());
        }
        provider.kx_groups = groups;
    }
    Ok(provider)
}

/// Whether `suite` is the one `name` means: rustls's name
/// (`TLS13_AES_128_GCM_SHA256`), IANA's (`TLS_AES_128_GCM_SHA256`) or
/// OpenSSL's for TLS 1.2 (`ECDHE-RSA-AES128-GCM-SHA256`).
fn suite_named(suite: &SupportedCipherSuite, name: &str) -> bool {
    let ours = format!("{:?}", suite.suite());
    let name = name.to_ascii_uppercase();
    if ours == name || ours.replacen("TLS13_", "TLS_", 1) == name {
        return true;
    }
    // OpenSSL's TLS 1.2 names: ECDHE-{ECDSA|RSA}-{AES128-GCM-SHA256 |
    // AES256-GCM-SHA384 | CHACHA20-POLY1305}.
    let openssl = ours
        .strip_prefix("TLS_ECDHE_")
        .map(|rest| {
            rest.replace("_WITH_", "-")
                .replace("AES_128_GCM", "AES128-GCM")
                .replace("AES_256_GCM", "AES256-GCM")
                .replace("CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305")
                .replace('_', "-")
        })
        .map(|rest| format!("ECDHE-{rest}"));
    openssl.is_some_and(|o| o == name)
}

/// `tls-protocols`: Redis's words, TLSv1.2 and TLSv1.3 (empty: both).
fn protocol_versions(
    protocols: &str,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    if protocols.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut versions = Vec::new();
    for word in protocols.split_whitespace() {
        match word.to_ascii_lowercase().as_str() {
            "tlsv1.3" => versions.push(&rustls::version::TLS13),
            "tlsv1.2" => versions.push(&rustls::version::TLS12),
            "tlsv1" | "tlsv1.1" => warn!("tls-protocols: rustls does not offer {word}; left out"),
            _ => return Err(format!("Invalid tls-protocols specified: {word}")),
        }
    }
    if versions.is_empty() {
        return Err("No valid protocols in tls-protocols".into());
    }
    Ok(versions)
}

/// The trusted CAs: `tls-ca-cert-file` and every certificate in
/// `tls-ca-cert-dir`.
fn ca_roots(s: &TlsSettings) -> Result<RootCertStore, String> {
    if s.ca_cert_file.is_empty() && s.ca_cert_dir.is_empty() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let mut roots = RootCertStore::empty();
    let mut files = Vec::new();
    if !s.ca_cert_file.is_empty() {
        files.push(std::path::PathBuf::from(&s.ca_cert_file));
    }
    if !s.ca_cert_dir.is_empty() {
        let dir = std::fs::read_dir(&s.ca_cert_dir)
            .map_err(|e| format!("Failed to configure CA certificate(s) dir: {e}"))?;
        files.extend(dir.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    for file in files {
        let certs = CertificateDer::pem_file_iter(&file)
            .map_err(|e| format!("Failed to load CA certificate(s) {}: {e}", file.display()))?;
        for cert in certs.flatten() {
            // A directory may hold other files: what does not parse is
            // not a CA.
            let _ = roots.add(cert);
        }
    }
    if roots.is_empty() {
        return Err("Failed to configure CA certificate(s): none found".into());
    }
    Ok(roots)
}

fn certificates(file: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
        .and_then(|certs| certs.collect())
        .map_err(|e| format!("Failed to load certificate: {file}: {e}"))?;
    if chain.is_empty() {
        return Err(format!(
            "Failed to load certificate: {file}: no certificate in it"
        ));
    }
    Ok(chain)
}

/// A PEM private key, decrypted with `pass` when it is an encrypted
/// PKCS#8 key (`ENCRYPTED PRIVATE KEY`, as OpenSSL 3 writes them: PBES2
/// with PBKDF2 or scrypt).
fn private_key(file: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let failed = |why: String| format!("Failed to load private key: {file}: {why}");
    let text = std::fs::read_to_string(file).map_err(|e| failed(e.to_string()))?;
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        use pkcs8::der::Decode;
        if pass.is_empty() {
            return Err(failed("it is encrypted and no password is set".into()));
        }
        let (_, document) = pkcs8::Document::from_pem(&text).map_err(|e| failed(e.to_string()))?;
        let encrypted = pkcs8::EncryptedPrivateKeyInfo::from_der(document.as_bytes())
            .map_err(|e| failed(e.to_string()))?;
        let plain = encrypted
            .decrypt(pass)
            .map_err(|_| failed("bad password or unsupported encryption".into()))?;
        return Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()));
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(failed(
            "an OpenSSL \"traditional\" encrypted key: convert it to PKCS#8 (openssl pkcs8 -topk8)"
                .into(),
        ));
    }
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| failed(e.to_string()))
}
