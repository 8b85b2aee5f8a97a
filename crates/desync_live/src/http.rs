//! Just enough HTTP/1.1 to POST to a debug-server worker and read its answer.
//!
//! The workers are torch's C++ `WorkerServer` (cpp-httplib): plain HTTP on a cluster network,
//! answers of a few kB to a few MB, with `Content-Length` or chunked. A dependency-free client
//! keeps the timeouts, the size cap and the errors ours; TLS and redirects are out of scope
//! because the workers never use them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Instant;

/// An FR dump of 20,000 entries with frames is under 50 MB; anything larger is not one.
const MAX_BODY: u64 = 256 << 20;
/// A status line, header or chunk-size line longer than this is not from a debug server.
const MAX_LINE: usize = 8 << 10;
/// cpp-httplib answers with a handful of headers.
const MAX_HEADERS: usize = 100;

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
    #[error("no complete answer within {0:.1} s")]
    Deadline(f64),
}

impl HttpError {
    /// The worker was reached but did not answer in time (or answered nonsense): it may be
    /// busy or slow, not gone. A refused or failed connection is [`HttpError::Connect`].
    pub fn is_slow(&self) -> bool {
        match self {
            Self::Deadline(_) | Self::Malformed(_) => true,
            Self::Io(e) => {
                matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock)
            }
            _ => false,
        }
    }
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

/// POSTs an empty body to `path` and returns the body of a 2xx answer, all of it before
/// `deadline`: a worker that drips one byte at a time, or sends headers forever, is cut off
/// there like one that never answers.
pub fn post(endpoint: &Endpoint, path: &str, deadline: Instant) -> Result<Vec<u8>, HttpError> {
    let timeout = deadline.saturating_duration_since(Instant::now());
    if timeout.is_zero() {
        return Err(HttpError::Deadline(0.0));
    }
    let mut last = None;
    let mut stream = None;
    for addr in endpoint.addrs()? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = stream.ok_or_else(|| {
        HttpError::Connect(last.unwrap_or_else(|| std::io::ErrorKind::TimedOut.into()))
    })?;
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
    let total = timeout.as_secs_f64();
    let reader = BufReader::new(Until { stream, deadline });
    read_response(reader).map_err(|e| match e {
        HttpError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            HttpError::Deadline(total)
        }
        other => other,
    })
}

/// A stream that refuses to read past a deadline: each read waits at most the time left.
struct Until {
    stream: TcpStream,
    deadline: Instant,
}

impl Read for Until {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf).map_err(|e| match e.kind() {
            // A read timeout reports WouldBlock on Unix.
            std::io::ErrorKind::WouldBlock => std::io::ErrorKind::TimedOut.into(),
            _ => e,
        })
    }
}

/// One line (without its terminator) of at most [`MAX_LINE`] bytes; `None` at the end of the
/// stream. Never buffers more than the limit, whatever the peer sends.
fn read_line(reader: &mut impl BufRead, what: &str) -> Result<Option<String>, HttpError> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            return Err(HttpError::Malformed(format!("{what} cut short")));
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE + 2 {
            return Err(HttpError::Malformed(format!("{what} longer than {MAX_LINE} bytes")));
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
    }
}

fn read_response(mut reader: impl BufRead) -> Result<Vec<u8>, HttpError> {
    let line = read_line(&mut reader, "status line")?.unwrap_or_default();
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Malformed(format!("status line `{}`", line.trim())))?;
    let mut content_length = None;
    let mut chunked = false;
    let mut headers = 0;
    loop {
        let Some(header) = read_line(&mut reader, "header")? else {
            return Err(HttpError::Malformed("headers cut short".into()));
        };
        if header.is_empty() {
            break;
        }
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(HttpError::Malformed(format!("more than {MAX_HEADERS} headers")));
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                content_length = Some(
                    value
                        .parse::<u64>()
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
        // Grown as the bytes arrive: the header's number is a claim, not a size to allocate.
        let mut body = Vec::new();
        (&mut reader).take(len).read_to_end(&mut body)?;
        if (body.len() as u64) < len {
            return Err(HttpError::Malformed(format!(
                "body cut short at {} of {len} bytes",
                body.len()
            )));
        }
        body
    } else {
        let mut body = Vec::new();
        reader.take(MAX_BODY + 1).read_to_end(&mut body)?;
        body
    };
    if body.len() as u64 > MAX_BODY {
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
    loop {
        let line = read_line(reader, "chunk size")?.unwrap_or_default();
        let size_text = line.trim().split(';').next().unwrap_or("");
        let size = u64::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Malformed(format!("chunk size `{size_text}`")))?;
        if size == 0 {
            // Trailers, if any, end with an empty line; what follows is not ours to read.
            while read_line(reader, "trailer")?.is_some_and(|l| !l.is_empty()) {}
            return Ok(body);
        }
        if (body.len() as u64).saturating_add(size) > MAX_BODY {
            return Err(HttpError::Malformed(format!("a body over {MAX_BODY} bytes")));
        }
        let before = body.len();
        (&mut *reader).take(size).read_to_end(&mut body)?;
        if ((body.len() - before) as u64) < size {
            return Err(HttpError::Malformed("chunk cut short".into()));
        }
        read_line(reader, "chunk end")?;
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

    #[test]
    fn hostile_answers_are_errors_not_crashes() {
        let huge_chunk =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nx";
        assert!(read_response(&huge_chunk[..]).unwrap_err().to_string().contains("over"));
        let overflow =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n";
        assert!(read_response(&overflow[..]).is_err());
        let endless_status = vec![b'H'; 1 << 20];
        assert!(read_response(&endless_status[..]).unwrap_err().to_string().contains("longer"));
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..10_000 {
            many.extend_from_slice(b"X-A: b\r\n");
        }
        assert!(read_response(&many[..]).unwrap_err().to_string().contains("headers"));
        let lying = b"HTTP/1.1 200 OK\r\nContent-Length: 200000000\r\n\r\nshort";
        assert!(read_response(&lying[..]).unwrap_err().to_string().contains("cut short"));
        let too_big = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n";
        assert!(read_response(&too_big[..]).is_err());
    }

    /// A worker that sends a byte every 100 ms is cut off at the deadline, not after the
    /// last byte.
    #[test]
    fn a_dripping_worker_is_cut_off_at_the_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".iter().cycle().take(60) {
                if conn.write_all(&[*byte]).is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let endpoint = Endpoint { host: "127.0.0.1".into(), port };
        let started = Instant::now();
        let err =
            post(&endpoint, "/x", started + std::time::Duration::from_millis(700)).unwrap_err();
        let took = started.elapsed();
        assert!(err.is_slow(), "{err}");
        assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
        drop(server);
    }
}
