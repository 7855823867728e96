//! TLS for every HTTPS client the SDK builds: rustls with the `ring` provider.
//!
//! reqwest is built with `rustls-no-provider`, so no aws-lc-sys C build sits in the dependency
//! tree; a client then needs a process-wide rustls provider installed before it is built, or
//! reqwest panics. Every place that builds one (model clients, WebFetch, MCP over HTTP, the
//! OTLP exporter) calls [`ensure_provider`] first.

use std::sync::Once;

/// Installs ring as rustls's process-wide provider unless one is installed already (by the
/// application, which keeps its choice).
pub fn ensure_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Losing a race with another installer leaves theirs, which serves as well.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::ensure_provider;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::Arc;

    /// A self-signed P-256 certificate for `localhost`, valid until 2126 (made with
    /// `openssl req -x509 -newkey ec ... -addext basicConstraints=critical,CA:FALSE`).
    const CERT: &str = "\
-----BEGIN CERTIFICATE-----
MIIBpzCCAU2gAwIBAgIUSexyQGU7qeLhDIbHx/jM9sUgmGIwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNjE4NTgxOVoYDzIxMjYxMTAy
MTg1ODE5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQ+zpGbWbgGTU79gOA2V0ESE0S8Jn+L9Ri3RTP3IHUg7nm7ODzxiCGR
EFAX8ExWzRvZ4z/9jE+Q0WQ2gwipkfl9o3sweTAdBgNVHQ4EFgQUT0ynmED8YEHy
smXP4wyS6MnPOY8wHwYDVR0jBBgwFoAUT0ynmED8YEHysmXP4wyS6MnPOY8wFAYD
VR0RBA0wC4IJbG9jYWxob3N0MAwGA1UdEwEB/wQCMAAwEwYDVR0lBAwwCgYIKwYB
BQUHAwEwCgYIKoZIzj0EAwIDSAAwRQIhAPgaDlWvrCXnp/RRJ8mFKSZclhlAgK9v
NPv9TDYUZuhkAiBR9rWdPsd8381bpgee8ACWAJo/v74+6tXskJlTqvL12Q==
-----END CERTIFICATE-----
";
    const KEY: &str = "\
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgvi4Ym+2hQf/rPHip
JVb3tgq+Yw87vM/yzy9Di0WGsHGhRANCAAQ+zpGbWbgGTU79gOA2V0ESE0S8Jn+L
9Ri3RTP3IHUg7nm7ODzxiCGREFAX8ExWzRvZ4z/9jE+Q0WQ2gwipkfl9
-----END PRIVATE KEY-----
";

    /// One HTTPS request through reqwest to a local rustls server: the provider the SDK
    /// installs does the whole handshake (key exchange, certificate check, AEAD) both ways.
    #[tokio::test]
    async fn https_works_through_the_installed_provider() {
        ensure_provider();
        let cert = CertificateDer::from_pem_slice(CERT.as_bytes()).unwrap();
        let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).unwrap();
        let provider = rustls::crypto::CryptoProvider::get_default()
            .unwrap()
            .clone();
        let server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            let conn = rustls::ServerConnection::new(Arc::new(server_config)).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut request = Vec::new();
            let mut byte = [0u8; 1];
            while !request.ends_with(b"\r\n\r\n") {
                tls.read_exact(&mut byte).unwrap();
                request.push(byte[0]);
            }
            tls.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            )
            .unwrap();
            tls.conn.send_close_notify();
            tls.flush().unwrap();
            String::from_utf8(request).unwrap()
        });
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(CERT.as_bytes()).unwrap()])
            .no_proxy()
            .build()
            .unwrap();
        let response = client
            .get(format!("https://localhost:{port}/probe"))
            .send()
            .await
            .expect("the HTTPS request succeeds");
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.unwrap(), "hello");
        let request = server.join().unwrap();
        assert!(request.starts_with("GET /probe HTTP/1.1"), "{request}");
    }
}
