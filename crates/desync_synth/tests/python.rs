//! Generated dumps against the Python side of the world:
//! - Python's `pickle.load` / `json.load` read them, and their key sets, key
//!   order, value types and pickle opcodes match a real torch 2.11 dump
//!   (`tests/data`, NCCL on one H100); the JSON flavour carries the same
//!   data as the pickle flavour;
//! - torch's own analyzer (`torchfrtrace`) finds nothing wrong in a
//!   healthy set and reports the injected divergence at the right seq.
//!
//! Skipped with a message when no Python (or no torchfrtrace) is found.

use std::path::{Path, PathBuf};
use std::process::Command;

use desync_synth::{Format, OpMix, Plan, Spec, parse_groups, write_dir};

/// The Python with torch: `$DESYNC_PYTHON` (scripts/test.sh sets it to the cached venv),
/// else a `.venv` in the checkout. These tests compare with real torch; without it they fail
/// with a clear message rather than skip and count as passed.
fn torch_python() -> PathBuf {
    if let Some(p) = std::env::var_os("DESYNC_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with torch: run via scripts/test.sh or set DESYNC_PYTHON (scripts/venv.sh prints one)"
    );
    venv
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn healthy_spec() -> Spec {
    let mut s = Spec::new(4, 150);
    s.groups = parse_groups("tp=2,dp").unwrap();
    s.ops = OpMix::parse("p2p=8").unwrap();
    s.seed = 5;
    s
}

fn write(spec: &Spec, dir: &Path, format: Format) {
    let plan = Plan::new(spec).unwrap();
    write_dir(&plan, dir, "nccl_trace_rank_", format).unwrap();
}

const CHECK: &str = r"
import json, os, pickle, pickletools, sys

real_pkl, real_json, pkl_dir, json_dir = sys.argv[1:5]
real = pickle.load(open(real_pkl, 'rb'))
rj = json.load(open(real_json))
TORCH_OPS = {'PROTO', 'EMPTY_DICT', 'MARK', 'BINUNICODE', 'BINPUT', 'LONG_BINPUT', 'BINGET',
             'LONG_BINGET', 'SETITEMS', 'EMPTY_LIST', 'APPENDS', 'BININT1', 'BININT2', 'BININT',
             'LONG1', 'BINFLOAT', 'NEWTRUE', 'NEWFALSE', 'NONE', 'TUPLE2', 'STOP'}
assert {op.name for op, _, _ in pickletools.genops(open(real_pkl, 'rb').read())} <= TORCH_OPS
ref = real['entries'][0]
REF_KEYS = list(ref)
OPTIONAL = {'duration_ms'}
TIMES = ('time_discovered_started_ns', 'time_discovered_completed_ns')
tn = lambda v: type(v).__name__

def check_sizes(v):
    assert isinstance(v, list) and all(isinstance(s, list) and all(tn(x) == 'int' for x in s) for s in v), v

n_entries = n_frames = 0
pickles = {}
for f in sorted(os.listdir(pkl_dir)):
    b = open(os.path.join(pkl_dir, f), 'rb').read()
    ops = {op.name for op, _, _ in pickletools.genops(b)}
    assert ops <= TORCH_OPS, (f, ops - TORCH_OPS)
    d = pickle.loads(b)
    pickles[f] = d
    assert list(d) == list(real), (f, list(d))
    for name, cfg in d['pg_config'].items():
        assert list(cfg) == list(real['pg_config']['0']) and cfg['name'] == name, cfg
        assert all(tn(v) == 'str' for v in cfg.values())
    assert list(d['pg_config']) == sorted(d['pg_config'])
    for k, st in d['pg_status'].items():
        assert list(st) == list(real['pg_status']['0']) and all(tn(v) == 'int' for v in st.values())
    # pg_status agrees with the newest collectives of each PG.
    by_pg = {}
    for e in d['entries']:
        if not e['is_p2p']:
            by_pg.setdefault(str(e['pg_id']), []).append(e)
    for pg, es in by_pg.items():
        st = d['pg_status'][pg]
        assert st['last_enqueued_collective'] == es[-1]['collective_seq_id'], (f, pg)
        done = [e['collective_seq_id'] for e in es if e['state'] == 'completed']
        if done:
            assert st['last_completed_collective'] == done[-1], (f, pg)
    for e in d['entries']:
        n_entries += 1
        assert list(e) == [k for k in REF_KEYS if k in e], list(e)
        assert set(REF_KEYS) - OPTIONAL <= set(e), set(REF_KEYS) - set(e)
        assert ('duration_ms' in e) == (e['state'] == 'completed'), e
        assert e['state'] in ('scheduled', 'started', 'completed')
        for k, v in e.items():
            if k in TIMES:
                assert tn(v) in ('int', 'NoneType'), (k, v)
                assert (v is None) == (e['state'] == 'scheduled' or (k.endswith('completed_ns') and e['state'] == 'started'))
            elif k == 'frames':
                for fr in v:
                    n_frames += 1
                    assert list(fr) == ['name', 'filename', 'line'], fr
                    assert [tn(x) for x in fr.values()] == ['str', 'str', 'int']
            else:
                assert tn(v) == tn(ref[k]), (k, v, ref[k])
        pg = e['process_group']
        assert len(pg) == 2 and all(tn(x) == 'str' for x in pg)
        assert pg[0] in d['pg_config'] and d['pg_config'][pg[0]]['desc'] == pg[1]
        check_sizes(e['input_sizes'])
        check_sizes(e['output_sizes'])
        assert len(e['input_dtypes']) == len(e['input_sizes'])
        assert all(tn(x) == 'str' for x in e['input_dtypes'] + e['output_dtypes'])
assert n_entries > 0 and n_frames > 0

# JSON flavour: nlohmann conventions, and the same data as the pickles.
RJ_KEYS = sorted(rj['entries'][0])
for f in sorted(os.listdir(json_dir)):
    d = json.load(open(os.path.join(json_dir, f)))
    assert list(d) == list(rj) == sorted(rj), list(d)
    assert d['nccl_comm_state'] == {}
    for cfg in d['pg_config'].values():
        assert list(cfg) == sorted(cfg) == list(rj['pg_config']['0'])
    for st in d['pg_status'].values():
        assert list(st) == list(rj['pg_status']['0']) and all(tn(v) == 'str' for v in st.values())
    p = pickles[f]
    assert len(d['entries']) == len(p['entries'])
    for je, pe in zip(d['entries'], p['entries']):
        assert list(je) == [k for k in RJ_KEYS if k in je], list(je)
        assert set(RJ_KEYS) - OPTIONAL <= set(je)
        assert 'frames' not in je
        for k, v in je.items():
            want = pe[k]
            if k in TIMES and want is None:
                want = 0
            if k == 'process_group':
                want = list(want)
            assert v == want, (f, k, v, want)
    for pg, st in d['pg_status'].items():
        assert {k: int(v) for k, v in st.items()} == p['pg_status'][pg]
    assert {k: v for k, v in d.items() if k not in ('entries', 'nccl_comm_state', 'pg_status')} == \
        {k: v for k, v in p.items() if k not in ('entries', 'pg_status')}
print('ok', n_entries, n_frames)
";

#[test]
fn python_reads_dumps_shaped_like_real_ones() {
    let py = torch_python();
    let dir = tempfile::tempdir().unwrap();
    let (pkl, json) = (dir.path().join("pkl"), dir.path().join("json"));
    let mut spec = healthy_spec();
    spec.frames = true;
    write(&spec, &pkl, Format::Pickle);
    write(&spec, &json, Format::Json);
    let out = Command::new(py)
        .arg("-c")
        .arg(CHECK)
        .args([data("nccl_healthy.pkl"), data("nccl_healthy.json"), pkl, json])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("ok "), "{stdout}");
}

/// Runs torch's analyzer (the code behind `torchfrtrace`) on each dir in
/// one Python process (importing torch dominates the run time), returning
/// each dir's report.
fn fr_trace(dirs: &[&Path]) -> Vec<String> {
    let py = torch_python();
    // fr_trace prints its p2p tables with `tabulate`, an optional package
    // the venv lacks (it then crashes after a successful p2p match); a
    // stand-in module keeps the run about the analysis.
    let shim = dirs[0].parent().unwrap().join("shim");
    std::fs::create_dir_all(&shim).unwrap();
    std::fs::write(
        shim.join("tabulate.py"),
        "def tabulate(data, headers=None, **kwargs):\n    return '\\n'.join(map(str, data))\n",
    )
    .unwrap();
    // fr_trace logs to stderr; the separators go there too, to keep order.
    let driver = "import sys\n\
        from torch.distributed.flight_recorder.fr_trace import main\n\
        for d in sys.argv[1:]:\n    \
            sys.stderr.write('=== REPORT\\n'); sys.stderr.flush()\n    \
            main([d])\n";
    let out = Command::new(py)
        .arg("-c")
        .arg(driver)
        .args(dirs)
        .env("PYTHONPATH", &shim)
        .output()
        .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "fr_trace failed:\n{text}");
    text.split("=== REPORT\n").skip(1).map(str::to_string).collect()
}

#[test]
fn torchfrtrace_accepts_healthy_and_flags_divergence() {
    let tmp = tempfile::tempdir().unwrap();
    let healthy = tmp.path().join("healthy");
    write(&healthy_spec(), &healthy, Format::Pickle);
    let diverged = tmp.path().join("diverged");
    let mut spec = healthy_spec();
    spec.fault = "divergence:ranks=3,seq=50".parse().unwrap();
    write(&spec, &diverged, Format::Pickle);

    let reports = fr_trace(&[&healthy, &diverged]);
    let [report, diverged_report] = &reports[..] else { panic!("{reports:?}") };
    for bad in ["MISMATCH", "mismatch", "has errors", "Not all ranks", "missing", "Traceback"] {
        assert!(!report.contains(bad), "healthy set reported `{bad}`:\n{report}");
    }
    // The healthy set does exercise p2p batches (fr_trace prints "Match").
    assert!(report.contains("Match"), "{report}");

    let report = diverged_report;
    assert!(report.contains("Collective sequence number: 50 has errors"), "{report}");
    assert!(report.contains("Culprit rank 3"), "{report}");
    assert!(report.contains("COLLECTIVE_TYPE_MISMATCH"), "{report}");
}
