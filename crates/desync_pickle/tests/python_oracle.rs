//! Differential test against Python's own pickler (`_pickle`).
//!
//! A Python script (run at test time) builds a few hundred random plain-data
//! objects, pickles each with protocols 0 to 5, and writes the pickle next to
//! a canonical text form of the object. This test decodes every pickle and
//! renders the same canonical form from the decoded tree; the two must be
//! equal. Skips (with a message) when no Python interpreter is found.
//!
//! Canonical form, identical on both sides: `N`, `T`, `F`; `i<hex>` (minimal
//! little-endian two's complement bytes, like `pickle.encode_long`);
//! `f<hex of big-endian f64>`; `s<hex utf-8>`; `b<hex>`; `[..]` list; `(..)`
//! tuple; `{..}` set with sorted elements; `<k:v,..>` dict in order.

use std::path::PathBuf;
use std::process::Command;

use desync_pickle::{Kind, Value, parse};

const SCRIPT: &str = r#"
import collections, pickle, random, struct, sys

rng = random.Random(20261122)
ALPHABET = ['a', 'b', 'z', ' ', '\\', '\n', '\r', "'", '"', '\x00', '\x1a', 'L', 'I',
            '\xe9', '\u20ac', '\U0001f600', '\u0100', '\x80', '\xff', 'u', '\\u']

def encode_long(x):
    if x == 0:
        return b'\x00'
    n = (x.bit_length() >> 3) + 1
    r = x.to_bytes(n, 'little', signed=True)
    if x < 0 and n > 1 and r[-1] == 0xff and (r[-2] & 0x80) != 0:
        r = r[:-1]
    return r

def canon(o):
    if o is None: return 'N'
    if o is True: return 'T'
    if o is False: return 'F'
    if isinstance(o, int): return 'i' + encode_long(o).hex()
    if isinstance(o, float): return 'f' + struct.pack('>d', o).hex()
    if isinstance(o, str): return 's' + o.encode('utf-8').hex()
    if isinstance(o, (bytes, bytearray)): return 'b' + bytes(o).hex()
    if isinstance(o, list): return '[' + ','.join(canon(x) for x in o) + ']'
    if isinstance(o, tuple): return '(' + ','.join(canon(x) for x in o) + ')'
    if isinstance(o, (set, frozenset)): return '{' + ','.join(sorted(canon(x) for x in o)) + '}'
    if isinstance(o, dict): return '<' + ','.join(canon(k) + ':' + canon(v) for k, v in o.items()) + '>'
    raise TypeError(type(o))

def rstr():
    return ''.join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 12)))

def rint():
    return rng.choice([
        rng.randrange(0, 256), rng.randrange(256, 65536), rng.randrange(-2**31, 2**31),
        rng.randrange(-2**63, 2**63), rng.randrange(-2**200, 2**200), 2**63, -2**63,
        -2**63 - 1, 2**64, -1, -128, -129, 127, 128, 255, 256, 0])

def rfloat():
    return rng.choice([0.0, -0.0, 1.5, rng.random(), rng.uniform(-1e300, 1e300), 5e-324,
                       float('inf'), float('-inf'), float('nan'), 1e16, 0.1, 1e-7])

def scalar():
    k = rng.randrange(8)
    return [None, rng.random() < 0.5, rint(), rfloat(), rstr(),
            bytes(rng.randrange(256) for _ in range(rng.randrange(0, 6))),
            bytearray(rng.randrange(256) for _ in range(rng.randrange(0, 4))), rint()][k]

def key():
    return rng.choice([rstr(), rint(), (rint(), rstr())])

def value(depth):
    if depth <= 0 or rng.random() < 0.35:
        return scalar()
    k = rng.randrange(7)
    n = rng.randrange(0, 6)
    if k == 0: return [value(depth - 1) for _ in range(n)]
    if k == 1: return tuple(value(depth - 1) for _ in range(n))
    if k == 2: return {key(): value(depth - 1) for _ in range(n)}
    if k == 3: return {rng.choice([rint(), rstr()]) for _ in range(n)}
    if k == 4: return frozenset(rint() for _ in range(n))
    if k == 5: return collections.OrderedDict((rstr(), value(depth - 1)) for _ in range(n))
    shared = value(depth - 1)
    return [shared, shared, {'s': shared}]

objs = [value(4) for _ in range(250)]
# Large containers cross the 1000-item batching of APPENDS/SETITEMS.
objs.append(list(range(2500)))
objs.append({str(i): i for i in range(1200)})
objs.append(set(range(1100)))
with open(sys.argv[1], 'w') as out:
    for o in objs:
        c = canon(o)
        for proto in range(6):
            out.write('%d %s %s\n' % (proto, pickle.dumps(o, protocol=proto).hex(), c))
"#;

/// Any `CPython` will do for the oracle (no torch needed): `$DESYNC_PYTHON` or `python3`.
fn python() -> PathBuf {
    std::env::var_os("DESYNC_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Minimal little-endian two's complement, as `pickle.encode_long` writes.
fn minimal(mut b: Vec<u8>) -> Vec<u8> {
    while b.len() > 1 {
        let last = b[b.len() - 1];
        let prev = b[b.len() - 2];
        if (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0) {
            b.pop();
        } else {
            break;
        }
    }
    b
}

fn canon(v: Value<'_>) -> String {
    match v.kind() {
        Kind::None => "N".into(),
        Kind::Bool(true) => "T".into(),
        Kind::Bool(false) => "F".into(),
        Kind::Int(i) => format!("i{}", hex(&minimal(i.to_le_bytes().to_vec()))),
        Kind::BigInt(b) => format!("i{}", hex(&minimal(b.to_vec()))),
        Kind::Float(x) => format!("f{}", hex(&x.to_be_bytes())),
        Kind::Str(s) => format!("s{}", hex(s.as_bytes())),
        Kind::Bytes(b) => format!("b{}", hex(b)),
        Kind::List => format!("[{}]", v.iter().map(canon).collect::<Vec<_>>().join(",")),
        Kind::Tuple => format!("({})", v.iter().map(canon).collect::<Vec<_>>().join(",")),
        Kind::Set => {
            let mut items: Vec<String> = v.iter().map(canon).collect();
            items.sort();
            format!("{{{}}}", items.join(","))
        }
        Kind::Dict => {
            let items: Vec<String> =
                v.items().map(|(k, x)| format!("{}:{}", canon(k), canon(x))).collect();
            format!("<{}>", items.join(","))
        }
        Kind::Opaque { module, name } => format!("?{module}.{name}"),
    }
}

#[test]
fn agrees_with_cpython_pickler() {
    let py = python();
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("desync_pickle_oracle.txt");
    let status = Command::new(&py).arg("-c").arg(SCRIPT).arg(&out).status().unwrap();
    assert!(status.success(), "oracle script failed");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut cases = 0;
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (proto, pickle, expected) =
            (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        let bytes = unhex(pickle);
        let p = parse(&bytes).unwrap_or_else(|e| panic!("protocol {proto}: {e}\n{pickle}"));
        assert_eq!(p.end_offset(), bytes.len());
        assert_eq!(canon(p.root()), expected, "protocol {proto}: {pickle}");
        cases += 1;
    }
    assert_eq!(cases, 253 * 6);
}
