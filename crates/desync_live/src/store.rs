//! A read-only client for `PyTorch`'s `TCPStore` (the key-value store every `torchrun` job
//! rendezvouses through), enough to discover the debug-server workers.
//!
//! The wire format is torch's (`torch/csrc/distributed/c10d/TCPStoreBackend.hpp`), the same
//! for the libuv server (the default since torch 2.4) and the legacy one: a one-byte query type,
//! then its arguments; integers are native-endian (little-endian on every platform torch ships
//! for), strings and values are a `u64` length followed by the bytes. A new connection must first
//! send `VALIDATE` with a magic number, or the server ignores it.
//!
//! Only queries that read are implemented (`CHECK`, `GET`, `GETNUMKEYS`): `desync watch`
//! never writes to a job's store. `GET` blocks on the legacy server (and can throw) when the key
//! is missing, so callers `CHECK` first; [`StoreClient::get_if_present`] does both.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// `c10d::detail::validationMagicNumber`.
const VALIDATION_MAGIC: u32 = 0x3C85_F7CE;

/// `c10d::detail::QueryType`, only the variants we send.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Query {
    Validate = 0,
    Get = 3,
    Check = 5,
    GetNumKeys = 7,
}

/// torch's `TCPStore` client puts this before every key it sends (`TCPStore::keyPrefix_`), so
/// `store.set("a", ..)` in Python is `/a` on the wire; ours must do the same to find them.
const KEY_PREFIX: &str = "/";

/// `CheckResponseType::READY`.
const CHECK_READY: u8 = 0;

/// Values larger than this are not worker addresses; refusing them keeps a confused peer (not a
/// `TCPStore` at all) from making us allocate gigabytes.
const MAX_VALUE_LEN: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot resolve store address `{0}`")]
    Resolve(String),
    #[error("cannot connect to the TCPStore at {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("TCPStore at {addr}: {source}")]
    Io { addr: String, source: std::io::Error },
    #[error("TCPStore at {addr} sent {what}; is it a torch TCPStore?")]
    Protocol { addr: String, what: String },
}

pub struct StoreClient {
    addr: String,
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl StoreClient {
    /// Connects to `host:port` and validates the connection. `timeout` bounds the connect and
    /// every read, so a store that stops answering is an error, not a hang.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self, StoreError> {
        let resolved: Vec<SocketAddr> =
            addr.to_socket_addrs().map_err(|_| StoreError::Resolve(addr.to_owned()))?.collect();
        let mut last_error = None;
        for candidate in resolved {
            match TcpStream::connect_timeout(&candidate, timeout) {
                Ok(stream) => return Self::start(addr, stream, timeout),
                Err(e) => last_error = Some(e),
            }
        }
        Err(StoreError::Connect {
            addr: addr.to_owned(),
            source: last_error.unwrap_or_else(|| std::io::ErrorKind::NotFound.into()),
        })
    }

    fn start(addr: &str, stream: TcpStream, timeout: Duration) -> Result<Self, StoreError> {
        let io = |source| StoreError::Io { addr: addr.to_owned(), source };
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        let reader = BufReader::new(stream.try_clone().map_err(io)?);
        let mut client = Self { addr: addr.to_owned(), reader, writer: BufWriter::new(stream) };
        client.writer.write_all(&[Query::Validate as u8]).map_err(io)?;
        client.writer.write_all(&VALIDATION_MAGIC.to_le_bytes()).map_err(io)?;
        client.writer.flush().map_err(io)?;
        Ok(client)
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Which of `keys` exist, one answer per key. The queries are pipelined: thousands of
    /// keys cost one round trip, not thousands.
    pub fn check_each(&mut self, keys: &[String]) -> Result<Vec<bool>, StoreError> {
        for key in keys {
            self.send(Query::Check)?;
            self.send_u64(1)?;
            self.send_key(key)?;
        }
        self.flush()?;
        keys.iter().map(|_| Ok(self.read_u8()? == CHECK_READY)).collect()
    }

    /// The value of each key that exists (`None` for the others), pipelined like
    /// [`Self::check_each`].
    pub fn get_if_present(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let present = self.check_each(keys)?;
        let wanted: Vec<&String> =
            keys.iter().zip(&present).filter(|(_, p)| **p).map(|(k, _)| k).collect();
        for key in &wanted {
            self.send(Query::Get)?;
            self.send_key(key)?;
        }
        self.flush()?;
        let mut values = Vec::with_capacity(keys.len());
        for found in present {
            values.push(if found { Some(self.read_bytes()?) } else { None });
        }
        Ok(values)
    }

    /// How many keys the store holds (all prefixes); a cheap liveness probe.
    pub fn num_keys(&mut self) -> Result<i64, StoreError> {
        self.send(Query::GetNumKeys)?;
        self.flush()?;
        let mut buf = [0u8; 8];
        self.read_exact(&mut buf)?;
        Ok(i64::from_le_bytes(buf))
    }

    fn send(&mut self, query: Query) -> Result<(), StoreError> {
        self.write(&[query as u8])
    }

    fn send_u64(&mut self, value: u64) -> Result<(), StoreError> {
        self.write(&value.to_le_bytes())
    }

    fn send_key(&mut self, key: &str) -> Result<(), StoreError> {
        self.send_u64((KEY_PREFIX.len() + key.len()) as u64)?;
        self.write(KEY_PREFIX.as_bytes())?;
        self.write(key.as_bytes())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        let addr = &self.addr;
        self.writer.write_all(bytes).map_err(|source| StoreError::Io { addr: addr.clone(), source })
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        let addr = &self.addr;
        self.writer.flush().map_err(|source| StoreError::Io { addr: addr.clone(), source })
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), StoreError> {
        let addr = &self.addr;
        self.reader.read_exact(buf).map_err(|source| StoreError::Io { addr: addr.clone(), source })
    }

    fn read_u8(&mut self) -> Result<u8, StoreError> {
        let mut buf = [0u8; 1];
        self.read_exact(&mut buf)?;
        if buf[0] > 1 {
            return Err(self.protocol(format!("check answer {}", buf[0])));
        }
        Ok(buf[0])
    }

    fn read_bytes(&mut self) -> Result<Vec<u8>, StoreError> {
        let mut len = [0u8; 8];
        self.read_exact(&mut len)?;
        let len = u64::from_le_bytes(len);
        if len > MAX_VALUE_LEN {
            return Err(self.protocol(format!("a value of {len} bytes")));
        }
        let mut value = vec![0u8; len as usize];
        self.read_exact(&mut value)?;
        Ok(value)
    }

    fn protocol(&self, what: String) -> StoreError {
        StoreError::Protocol { addr: self.addr.clone(), what }
    }
}
