//! The live source and the watch loop against stand-in workers: a real torch `TCPStore`
//! holding `debug_server/rank<N>` like `start_debug_server` writes it, and small HTTP servers
//! answering like torch's workers with a real Gloo job's JSON dumps (the committed
//! `json_extra_collective` scenario). The real-job end to end is `python/tests/test_watch.py`;
//! this covers what a real job makes slow to reach: a restarted job and dead workers.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use desync_core::diagnose::Category;
use desync_live::watch::{Event, Flow, WatchOptions};
use desync_live::{Detail, Live, Snapshot, Source, SourceError};

/// Serves rank N's dump at `POST /handler/fr_trace_json`, a one-thread stack at
/// `dump_traceback`, 404 for anything else (like a worker without the NCCL recorder).
/// `restart` on stdin replaces every worker with one on a new port, as a restarted job would.
const JOB: &str = r#"
import sys, datetime, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import torch.distributed as dist

dumps = [open(p, "rb").read() for p in sys.argv[1:]]
store = dist.TCPStore("127.0.0.1", 0, None, is_master=True, wait_for_workers=False,
                      timeout=datetime.timedelta(seconds=30))
registry = dist.PrefixStore("debug_server", store)

class Worker(BaseHTTPRequestHandler):
    def do_POST(self):
        rank = self.server.rank
        if self.path == "/handler/fr_trace_json":
            body = dumps[rank]
        elif self.path == "/handler/dump_traceback":
            body = b'Thread 0x1 (most recent call first):\n  File "/job/train.py", line 9 in main\n'
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

def start_workers():
    servers = []
    for rank in range(len(dumps)):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Worker)
        server.rank = rank
        threading.Thread(target=server.serve_forever, daemon=True).start()
        registry.set(f"rank{rank}", f"http://localhost:{server.server_port}")
        servers.append(server)
    return servers

servers = start_workers()
print(store.port, flush=True)
for line in sys.stdin:
    if line.strip() == "restart":
        for server in servers:
            server.shutdown()
            server.server_close()
        servers = start_workers()
        print("restarted", flush=True)
"#;

struct Job {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    port: u16,
}

impl Job {
    fn start() -> Self {
        let dumps = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/scenarios/json_extra_collective/dumps");
        let files: Vec<PathBuf> =
            (0..4).map(|r| dumps.join(format!("gloo_trace_rank_{r}"))).collect();
        let mut child = Command::new(common::torch_python())
            .arg("-c")
            .arg(JOB)
            .args(&files)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let port = read_line(&mut stdout).trim().parse().expect("the store's port");
        Self { child, stdin, stdout, port }
    }

    fn restart(&mut self) {
        writeln!(self.stdin, "restart").unwrap();
        self.stdin.flush().unwrap();
        assert_eq!(read_line(&mut self.stdout).trim(), "restarted");
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_line(reader: &mut impl BufRead) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    line
}

fn ranks(snapshot: Snapshot) -> Vec<u32> {
    match snapshot {
        Snapshot::Taken { trace, reading } => {
            assert_eq!(reading.expected, 4);
            assert!(reading.unreachable.is_empty(), "{:?}", reading.unreachable);
            trace.ranks.iter().map(|r| r.rank).collect()
        }
        Snapshot::Unchanged => panic!("a live source always takes a snapshot"),
    }
}

#[test]
fn a_restarted_job_is_found_again() {
    let mut job = Job::start();
    let mut live =
        Live::from_store(format!("127.0.0.1:{}", job.port), None, Duration::from_secs(3), 8);
    assert_eq!(ranks(live.snapshot(Detail::Active).unwrap()), [0, 1, 2, 3]);
    let before: Vec<String> = live.workers().iter().map(|w| w.registered.clone()).collect();

    job.restart();
    // The old workers are gone: reported, and the next snapshot looks them up again.
    match live.snapshot(Detail::Active) {
        Err(SourceError::AllDown { count: 4, .. }) => {}
        other => panic!("expected every worker down, got {:?}", other.err()),
    }
    assert_eq!(ranks(live.snapshot(Detail::Active).unwrap()), [0, 1, 2, 3]);
    let after: Vec<String> = live.workers().iter().map(|w| w.registered.clone()).collect();
    assert_ne!(before, after, "the restarted job's workers have new ports");
}

#[test]
fn the_watch_loop_alerts_on_mismatched_collectives_and_saves_a_replayable_snapshot() {
    let job = Job::start();
    let mut live =
        Live::from_store(format!("127.0.0.1:{}", job.port), None, Duration::from_secs(3), 8);
    let save = tempfile::tempdir().unwrap();
    let options = WatchOptions {
        interval: Duration::from_millis(200),
        lag: Duration::from_mins(1),
        duration: Some(Duration::from_secs(20)),
        exit_on_alert: true,
        until_gone: None,
        save_dir: Some(save.path().to_path_buf()),
        sources: desync_core::bridge::SourceOptions::default(),
    };
    let mut seen = Vec::new();
    let alerts = desync_live::watch(&mut live, &options, &mut |event| {
        if let Event::Alert(alert) = event {
            let d = &alert.analysis.diagnosis;
            seen.push((d.category, d.culprit_ranks.as_slice().to_vec(), alert.saved.clone()));
        }
        Flow::Continue
    });
    assert_eq!(alerts, 1);
    let (category, culprits, saved) = seen.pop().expect("an alert event");
    // Rank 0's extra all_reduce: a different collective at one seq, no lag needed.
    assert_eq!((category, culprits), (Category::Divergence, vec![0]));
    let (dir, files) = saved.expect("saved");
    assert_eq!(files, 4 + 4 + 2, "dumps, stacks, report.txt and report.json");
    let replay = desync_core::analyze(
        &desync_core::Config { input: dir.join("dumps"), ..Default::default() },
        &desync_core::NoProgress,
    )
    .unwrap();
    assert_eq!(replay.diagnosis.category, Category::Divergence);
    assert_eq!(replay.diagnosis.culprit_ranks.as_slice(), [0]);
}
