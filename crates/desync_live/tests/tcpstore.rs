//! The `TCPStore` client against real torch servers, both implementations (libuv, the default
//! since torch 2.4, and the legacy one). Needs a Python with torch: `$DESYNC_PYTHON`
//! (scripts/test.sh sets it) or the checkout's `.venv`; without one the test fails with a
//! clear message rather than skip.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use desync_live::store::StoreClient;

/// A torch `TCPStore` master holding what `start_debug_server` writes for a 3-rank job
/// (ranks 0 and 2 registered, rank 1 not yet) plus a binary value; prints its port, then
/// lives until stdin closes.
const SERVER: &str = r#"
import sys, datetime, torch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, None, is_master=True, use_libuv=sys.argv[1] == "libuv",
                      timeout=datetime.timedelta(seconds=30), wait_for_workers=False)
prefixed = dist.PrefixStore("debug_server", store)
prefixed.set("rank0", "http://host-a:4001")
prefixed.set("rank2", "http://host-b:4003")
store.set("blob", bytes(range(256)) * 4)
print(store.port, store.libuvBackend, flush=True)
sys.stdin.read()
"#;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(backend: &str) -> (Server, u16) {
    let mut child = Command::new(common::torch_python())
        .args(["-c", SERVER, backend])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let mut words = line.split_whitespace();
    let port: u16 = words.next().and_then(|p| p.parse().ok()).expect("a port on stdout");
    let libuv = words.next() == Some("True");
    assert_eq!(libuv, backend == "libuv", "torch did not start the {backend} server");
    (Server(child), port)
}

fn exercise(backend: &str) {
    let (_server, port) = start(backend);
    let mut client =
        StoreClient::connect(&format!("127.0.0.1:{port}"), Duration::from_secs(5)).unwrap();
    let keys: Vec<String> =
        ["debug_server/rank0", "debug_server/rank1", "debug_server/rank2", "blob"]
            .map(String::from)
            .to_vec();
    assert_eq!(client.check_each(&keys).unwrap(), [true, false, true, true]);
    let values = client.get_if_present(&keys).unwrap();
    assert_eq!(values[0].as_deref(), Some(&b"http://host-a:4001"[..]));
    assert_eq!(values[1], None);
    assert_eq!(values[2].as_deref(), Some(&b"http://host-b:4003"[..]));
    let blob: Vec<u8> = (0..=255u8).cycle().take(1024).collect();
    assert_eq!(values[3].as_deref(), Some(&blob[..]));
    // Three keys set above, plus whatever the server keeps for itself.
    assert!(client.num_keys().unwrap() >= 3);

    let workers = desync_live::workers::discover(&mut client, None).unwrap();
    let found: Vec<(u32, &str)> = workers.iter().map(|w| (w.rank, w.registered.as_str())).collect();
    assert_eq!(found, [(0, "http://host-a:4001"), (2, "http://host-b:4003")]);
    // `host-a` does not resolve here: the worker is reached through the store's host.
    assert_eq!(workers[0].endpoint.host, "127.0.0.1");
}

#[test]
fn libuv_server() {
    exercise("libuv");
}

#[test]
fn legacy_server() {
    exercise("legacy");
}

#[test]
fn a_closed_port_is_a_clear_error() {
    // A port the system just handed out and took back is free, but the stores the other
    // tests start meanwhile (on port 0 too) can be given it: a port that turns out to be
    // taken is not this test's case, so it tries another.
    let err = (0..20)
        .find_map(|_| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            drop(listener);
            StoreClient::connect(&format!("127.0.0.1:{port}"), Duration::from_secs(2)).err()
        })
        .expect("a port nothing listens on");
    assert!(err.to_string().starts_with("cannot connect to the TCPStore at 127.0.0.1:"), "{err}");
}
