//! Just enough HTTP/1.1 to POST to a debug-server worker and read its answer.
//!
//! The workers are torch's C++ `WorkerServer` (cpp-httplib): plain HTTP on a cluster network,
//! answers of a few kB to a few MB, with `Content-Length` or chunked. A dependency-free client
//! keeps the timeouts, the size cap and the errors ours; TLS and redirects are out of scope
//! because the workers never use them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// An FR dump of 20,000 entries with frames is under 50 MB; anything larger is not one.
const MAX_BODY: usize = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("`{0}` is not an http:// URL")]
    Url(String),
    #[error("cannot resolve `{0}`")]
    Resolve(String),
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("malformed HTTP answer: {0}")]
    Malformed(String),
}

/// `http://host:port` split into its parts; the host may be `[v6]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    pub fn parse(url: &str) -> Result<Self, HttpError> {
        let bad = || HttpError::Url(url.to_owned());
        let rest = url.trim().strip_prefix("http://").ok_or_else(bad)?;
        let authority = rest.split('/').next().unwrap_or("");
        let (host, port) = authority.rsplit_once(':').ok_or_else(bad)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = port.parse().map_err(|_| bad())?;
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Self { host: host.to_owned(), port })
    }

    pub fn url(&self) -> String {
        if self.host.contains(':') {
            format!("http://[{}]:{}", self.host, self.port)
        } else {
            format!("http://{}:{}", self.host, self.port)
        }
    }

    fn addrs(&self) -> Result<Vec<SocketAddr>, HttpError> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .map_err(|_| HttpError::Resolve(self.host.clone()))
    }
}

/// POSTs an empty body to `path` and returns the body of a 2xx answer.
pub fn post(endpoint: &Endpoint, path: &str, timeout: Duration) -> Result<Vec<u8>, HttpError> {
    let mut last = None;
    let mut stream = None;
    for addr in endpoint.addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = stream.ok_or_else(|| {
        HttpError::Connect(last.unwrap_or_else(|| std::io::ErrorKind::NotFound.into()))
    })?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let host = endpoint.url();
    let host = host.trim_start_matches("http://");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\
         User-Agent: desync/{}\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    )?;
    stream.flush()?;
    read_response(BufReader::new(stream))
}

fn read_response(mut reader: impl BufRead) -> Result<Vec<u8>, HttpError> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Malformed(format!("status line `{}`", line.trim())))?;
    let mut content_length = None;
    let mut chunked = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(HttpError::Malformed("headers cut short".into()));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                content_length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| HttpError::Malformed(format!("Content-Length `{value}`")))?,
                );
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            }
        }
    }
    let body = if chunked {
        read_chunked(&mut reader)?
    } else if let Some(len) = content_length {
        if len > MAX_BODY {
            return Err(HttpError::Malformed(format!("a body of {len} bytes")));
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
        body
    } else {
        let mut body = Vec::new();
        reader.take(MAX_BODY as u64 + 1).read_to_end(&mut body)?;
        body
    };
    if body.len() > MAX_BODY {
        return Err(HttpError::Malformed(format!("a body over {MAX_BODY} bytes")));
    }
    if !(200..300).contains(&status) {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_owned();
        return Err(HttpError::Status { status, body: text });
    }
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let size_text = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Malformed(format!("chunk size `{size_text}`")))?;
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(HttpError::Malformed(format!("a body over {MAX_BODY} bytes")));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        line.clear();
        reader.read_line(&mut line)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://vm:34433").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("vm", 34433));
        let e = Endpoint::parse("http://[::1]:80/handler/x").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 80));
        assert_eq!(e.url(), "http://[::1]:80");
        assert!(Endpoint::parse("https://vm:1").is_err());
        assert!(Endpoint::parse("http://vm").is_err());
        assert!(Endpoint::parse("http://:12").is_err());
    }

    #[test]
    fn content_length_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";
        assert_eq!(read_response(&plain[..]).unwrap(), b"pong");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\npon\r\n1\r\ng\r\n0\r\n\r\n";
        assert_eq!(read_response(&chunked[..]).unwrap(), b"pong");
        let missing = b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
        let err = read_response(&missing[..]).unwrap_err().to_string();
        assert_eq!(err, "HTTP 404: not found");
        assert!(read_response(&b"garbage\r\n\r\n"[..]).is_err());
    }
}
