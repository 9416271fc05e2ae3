//! Test certificates made with `openssl` (a CA, a server certificate
//! for 127.0.0.1 and localhost, a client certificate) and a TLS client
//! that stays connected, for the TLS tests and the TLS fuzz pass.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// A folder of test certificates: `ca`, `server` (signed by `ca`, for
/// 127.0.0.1 and localhost, with no extended key usage: as Redis's
/// `redis.crt`, a server's and, on the links it opens, a client's),
/// `client` (signed by `ca`), each `.crt` and `.key`. None (loudly)
/// without openssl.
pub fn certificates(name: &str) -> Option<PathBuf> {
    if !super::tool_answers("openssl", "version", "the TLS tests") {
        return None;
    }
    let dir = super::temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    make_ca(&dir, "ca");
    sign(&dir, "ca", "server", None, true);
    sign(&dir, "ca", "client", Some("clientAuth"), false);
    Some(dir)
}

pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn make_ca(dir: &Path, ca: &str) {
    let key = format!("{ca}.key");
    openssl(dir, &["genrsa", "-out", &key, "2048"]);
    let subject = format!("/O=lapse test/CN={ca}");
    let crt = format!("{ca}.crt");
    openssl(
        dir,
        &[
            "req", "-x509", "-new", "-nodes", "-sha256", "-key", &key, "-days", "30", "-subj",
            &subject, "-out", &crt,
        ],
    );
}

/// `name.crt` / `name.key` signed by the CA `ca`, for `usage` (none: any).
pub fn sign(dir: &Path, ca: &str, name: &str, usage: Option<&str>, server: bool) {
    let key = format!("{name}.key");
    openssl(dir, &["genrsa", "-out", &key, "2048"]);
    let csr = format!("{name}.csr");
    let subject = format!("/O=lapse test/CN={name}");
    openssl(
        dir,
        &[
            "req", "-new", "-sha256", "-subj", &subject, "-key", &key, "-out", &csr,
        ],
    );
    let ext = format!("{name}.ext");
    let mut text = "keyUsage=digitalSignature,keyEncipherment\n".to_string();
    if let Some(usage) = usage {
        text.push_str(&format!("extendedKeyUsage={usage}\n"));
    }
    if server {
        text.push_str("subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    }
    std::fs::write(dir.join(&ext), text).unwrap();
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-sha256",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "30",
            "-extfile",
            &ext,
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

pub fn path(dir: &Path, file: &str) -> String {
    dir.join(file).to_string_lossy().into_owned()
}

/// A server's TLS arguments: `tls_port` with the test server certificate,
/// its key and the CA.
pub fn server_args(dir: &Path, tls_port: u16) -> Vec<String> {
    vec![
        "--tls-port".into(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        path(dir, "server.crt"),
        "--tls-key-file".into(),
        path(dir, "server.key"),
        "--tls-ca-cert-file".into(),
        path(dir, "ca.crt"),
    ]
}

/// lapse with a TLS port (returned) beside a plain port of its own
/// (`--port 0` beside a TLS port would mean none), `extra` after.
pub fn lapse_with_tls(dir: &Path, extra: &[&str]) -> (super::Server, u16) {
    let tls_port = super::free_port();
    let mut args = vec!["--port".to_string(), super::free_port().to_string()];
    args.extend(server_args(dir, tls_port));
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (super::Server::lapse(&args), tls_port)
}

/// A TLS client that stays connected (rustls, trusting `ca`).
pub struct TlsClient(rustls::StreamOwned<rustls::ClientConnection, TcpStream>);

impl TlsClient {
    pub fn connect(
        dir: &Path,
        port: u16,
        ca: &str,
        client: Option<&str>,
    ) -> std::io::Result<TlsClient> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(dir.join(ca)).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = match client {
            Some(name) => {
                let chain = CertificateDer::pem_file_iter(dir.join(format!("{name}.crt")))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
                builder.with_client_auth_cert(chain, key).unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        let name = "localhost".try_into().unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let socket = TcpStream::connect(("127.0.0.1", port))?;
        socket.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut stream = rustls::StreamOwned::new(conn, socket);
        // The handshake completes (or fails) here.
        stream.flush()?;
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(TlsClient(stream))
    }

    /// Sends an inline command and reads one reply line.
    pub fn cmd(&mut self, line: &str) -> std::io::Result<String> {
        self.0.write_all(format!("{line}\r\n").as_bytes())?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(b"\r\n") {
            if self.0.read(&mut byte)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            reply.push(byte[0]);
        }
        Ok(String::from_utf8_lossy(&reply).trim().to_string())
    }
}
