//! Property tests: a test-only emitter writes random value trees in three
//! styles and the decoder must give the same tree back; arbitrary and mutated
//! bytes must never panic; a truncated pickle must read as `UnexpectedEof`.
//!
//! Styles (what real writers do):
//! - `Torch`: torch C++ pickler as used by Flight Recorder: PROTO 2,
//!   `EMPTY_DICT` MARK .. SETITEMS, `EMPTY_LIST` MARK .. APPENDS, TUPLE1-3 or
//!   MARK .. TUPLE, BINUNICODE memoized by value (BINPUT, then BINGET),
//!   equal dicts memoized after SETITEMS and re-referenced (FR's shared frame
//!   dicts), BININT1/BININT2/BININT/LONG1(8), BINFLOAT.
//! - `Py4`: Python protocol 4: one FRAME, `SHORT_BINUNICODE`, MEMOIZE after every
//!   string and container, containers memoized before being filled, items in
//!   batches of 1000 with APPEND/SETITEM for a batch of one, minimal LONG1.
//! - `Py0`: Python protocol 0 text: INT/LONG/FLOAT, UNICODE with
//!   raw-unicode-escape, PUT/GET, MARK + LIST/DICT/TUPLE, APPEND/SETITEM,
//!   bytes through `_codecs.encode`.

use std::collections::HashMap;

use desync_pickle::{Kind, PickleErrorKind, Value, parse};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Tree {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Tree>),
    Tuple(Vec<Tree>),
    Dict(Vec<(String, Tree)>),
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Torch,
    Py4,
    Py0,
}

struct Emitter {
    style: Style,
    out: Vec<u8>,
    next_memo: u32,
    strings: HashMap<String, u32>,
    /// Torch style: dicts already written, keyed by their rendering.
    dicts: HashMap<String, u32>,
}

impl Emitter {
    fn emit(tree: &Tree, style: Style) -> Vec<u8> {
        let mut e = Emitter {
            style,
            out: Vec::new(),
            next_memo: 0,
            strings: HashMap::new(),
            dicts: HashMap::new(),
        };
        match style {
            Style::Torch => e.out.extend_from_slice(b"\x80\x02"),
            Style::Py4 => e.out.extend_from_slice(b"\x80\x04"),
            Style::Py0 => {}
        }
        e.value(tree);
        e.out.push(b'.');
        if let Style::Py4 = style {
            // One frame around everything after PROTO.
            let body = e.out.split_off(2);
            e.out.push(0x95);
            e.out.extend_from_slice(&(body.len() as u64).to_le_bytes());
            e.out.extend_from_slice(&body);
        }
        e.out
    }

    fn put(&mut self) -> u32 {
        let id = self.next_memo;
        self.next_memo += 1;
        match self.style {
            Style::Torch if id < 256 => self.out.extend_from_slice(&[b'q', id as u8]),
            Style::Torch => {
                self.out.push(b'r');
                self.out.extend_from_slice(&id.to_le_bytes());
            }
            Style::Py4 => self.out.push(0x94),
            Style::Py0 => self.out.extend_from_slice(format!("p{id}\n").as_bytes()),
        }
        id
    }

    fn get(&mut self, id: u32) {
        match self.style {
            Style::Py0 => self.out.extend_from_slice(format!("g{id}\n").as_bytes()),
            _ if id < 256 => self.out.extend_from_slice(&[b'h', id as u8]),
            _ => {
                self.out.push(b'j');
                self.out.extend_from_slice(&id.to_le_bytes());
            }
        }
    }

    fn int(&mut self, v: i64) {
        match self.style {
            Style::Py0 => {
                if i32::try_from(v).is_ok() {
                    self.out.extend_from_slice(format!("I{v}\n").as_bytes());
                } else {
                    self.out.extend_from_slice(format!("L{v}L\n").as_bytes());
                }
            }
            _ if (0..=0xff).contains(&v) => self.out.extend_from_slice(&[b'K', v as u8]),
            _ if (0..=0xffff).contains(&v) => {
                self.out.push(b'M');
                self.out.extend_from_slice(&(v as u16).to_le_bytes());
            }
            _ if i32::try_from(v).is_ok() => {
                self.out.push(b'J');
                self.out.extend_from_slice(&(v as i32).to_le_bytes());
            }
            Style::Torch => {
                self.out.extend_from_slice(&[0x8a, 8]);
                self.out.extend_from_slice(&v.to_le_bytes());
            }
            Style::Py4 => {
                // Minimal two's complement, as pickle.encode_long writes.
                let mut b = v.to_le_bytes().to_vec();
                while b.len() > 1 {
                    let (last, prev) = (b[b.len() - 1], b[b.len() - 2]);
                    if (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0) {
                        b.pop();
                    } else {
                        break;
                    }
                }
                self.out.extend_from_slice(&[0x8a, b.len() as u8]);
                self.out.extend_from_slice(&b);
            }
        }
    }

    fn raw_unicode_escape(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for c in s.chars() {
            let cp = u32::from(c);
            match c {
                '\\' | '\n' | '\r' | '\0' | '\x1a' => {
                    out.extend_from_slice(format!("\\u{cp:04x}").as_bytes());
                }
                _ if cp < 0x100 => out.push(cp as u8),
                _ if cp < 0x10000 => out.extend_from_slice(format!("\\u{cp:04x}").as_bytes()),
                _ => out.extend_from_slice(format!("\\U{cp:08x}").as_bytes()),
            }
        }
        out
    }

    fn string(&mut self, s: &str) {
        if let Some(&id) = self.strings.get(s) {
            self.get(id);
            return;
        }
        match self.style {
            Style::Py4 if s.len() < 256 => {
                self.out.extend_from_slice(&[0x8c, s.len() as u8]);
                self.out.extend_from_slice(s.as_bytes());
            }
            Style::Torch | Style::Py4 => {
                self.out.push(b'X');
                self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                self.out.extend_from_slice(s.as_bytes());
            }
            Style::Py0 => {
                self.out.push(b'V');
                self.out.extend_from_slice(&Self::raw_unicode_escape(s));
                self.out.push(b'\n');
            }
        }
        let id = self.put();
        self.strings.insert(s.to_string(), id);
    }

    fn bytes(&mut self, b: &[u8]) {
        match self.style {
            Style::Py0 => {
                if b.is_empty() {
                    self.out.extend_from_slice(b"c__builtin__\nbytes\n(tR");
                } else {
                    let latin1: String = b.iter().map(|&x| char::from(x)).collect();
                    self.out.extend_from_slice(b"c_codecs\nencode\n(V");
                    self.out.extend_from_slice(&Self::raw_unicode_escape(&latin1));
                    self.out.extend_from_slice(b"\nVlatin1\ntR");
                }
            }
            _ if b.len() < 256 => {
                self.out.extend_from_slice(&[b'C', b.len() as u8]);
                self.out.extend_from_slice(b);
            }
            _ => {
                self.out.push(b'B');
                self.out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                self.out.extend_from_slice(b);
            }
        }
    }

    fn value(&mut self, t: &Tree) {
        match t {
            Tree::None => self.out.push(b'N'),
            Tree::Bool(b) => match self.style {
                Style::Py0 => self.out.extend_from_slice(if *b { b"I01\n" } else { b"I00\n" }),
                _ => self.out.push(if *b { 0x88 } else { 0x89 }),
            },
            Tree::Int(v) => self.int(*v),
            Tree::Float(x) => {
                if let Style::Py0 = self.style {
                    self.out.extend_from_slice(format!("F{x:?}\n").as_bytes());
                } else {
                    self.out.push(b'G');
                    self.out.extend_from_slice(&x.to_be_bytes());
                }
            }
            Tree::Str(s) => self.string(s),
            Tree::Bytes(b) => self.bytes(b),
            Tree::List(items) => self.list(items),
            Tree::Tuple(items) => self.tuple(items),
            Tree::Dict(pairs) => self.dict(t, pairs),
        }
    }

    fn list(&mut self, items: &[Tree]) {
        match self.style {
            Style::Torch => {
                self.out.extend_from_slice(b"](");
                for i in items {
                    self.value(i);
                }
                self.out.push(b'e');
            }
            Style::Py4 => {
                self.out.push(b']');
                self.put();
                for batch in items.chunks(1000) {
                    if let [one] = batch {
                        self.value(one);
                        self.out.push(b'a');
                    } else {
                        self.out.push(b'(');
                        for i in batch {
                            self.value(i);
                        }
                        self.out.push(b'e');
                    }
                }
            }
            Style::Py0 => {
                self.out.extend_from_slice(b"(l");
                self.put();
                for i in items {
                    self.value(i);
                    self.out.push(b'a');
                }
            }
        }
    }

    fn tuple(&mut self, items: &[Tree]) {
        match (self.style, items.len()) {
            (Style::Py0, _) => {
                self.out.push(b'(');
                for i in items {
                    self.value(i);
                }
                self.out.push(b't');
                self.put();
                return;
            }
            (_, 0) => self.out.push(b')'),
            (_, n @ 1..=3) => {
                for i in items {
                    self.value(i);
                }
                self.out.push(0x85 + (n as u8 - 1));
            }
            _ => {
                self.out.push(b'(');
                for i in items {
                    self.value(i);
                }
                self.out.push(b't');
            }
        }
        if let Style::Py4 = self.style
            && !items.is_empty()
        {
            self.put();
        }
    }

    fn dict(&mut self, whole: &Tree, pairs: &[(String, Tree)]) {
        match self.style {
            Style::Torch => {
                let key = format!("{whole:?}");
                if let Some(&id) = self.dicts.get(&key) {
                    self.get(id);
                    return;
                }
                self.out.extend_from_slice(b"}(");
                for (k, v) in pairs {
                    self.string(k);
                    self.value(v);
                }
                self.out.push(b'u');
                let id = self.put();
                self.dicts.insert(key, id);
            }
            Style::Py4 => {
                self.out.push(b'}');
                self.put();
                for batch in pairs.chunks(1000) {
                    let single = batch.len() == 1;
                    if !single {
                        self.out.push(b'(');
                    }
                    for (k, v) in batch {
                        self.string(k);
                        self.value(v);
                    }
                    self.out.push(if single { b's' } else { b'u' });
                }
            }
            Style::Py0 => {
                self.out.extend_from_slice(b"(d");
                self.put();
                for (k, v) in pairs {
                    self.string(k);
                    self.value(v);
                    self.out.push(b's');
                }
            }
        }
    }
}

fn same(v: Value<'_>, t: &Tree) -> bool {
    match (v.kind(), t) {
        (Kind::None, Tree::None) => true,
        (Kind::Bool(a), Tree::Bool(b)) => a == *b,
        (Kind::Int(a), Tree::Int(b)) => a == *b,
        (Kind::Float(a), Tree::Float(b)) => {
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
        }
        (Kind::Str(a), Tree::Str(b)) => a == b,
        (Kind::Bytes(a), Tree::Bytes(b)) => a == b.as_slice(),
        (Kind::List, Tree::List(items)) | (Kind::Tuple, Tree::Tuple(items)) => {
            v.len() == items.len() && v.iter().zip(items).all(|(x, y)| same(x, y))
        }
        (Kind::Dict, Tree::Dict(pairs)) => {
            v.len() == pairs.len()
                && v.items()
                    .zip(pairs)
                    .all(|((k, x), (kk, y))| k.as_str() == Some(kk) && same(x, y))
        }
        _ => false,
    }
}

fn leaf() -> impl Strategy<Value = Tree> {
    prop_oneof![
        Just(Tree::None),
        any::<bool>().prop_map(Tree::Bool),
        any::<i64>().prop_map(Tree::Int),
        (0i64..70_000).prop_map(Tree::Int),
        any::<f64>().prop_map(Tree::Float),
        ".{0,8}".prop_map(Tree::Str),
        prop::sample::select(vec!["name", "filename", "line", "\\", "\u{e9}\u{1f600}"])
            .prop_map(|s| Tree::Str(s.to_string())),
        prop::collection::vec(any::<u8>(), 0..300).prop_map(Tree::Bytes),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    leaf().prop_recursive(4, 300, 12, |inner| {
        let key = prop_oneof![
            prop::sample::select(vec!["name", "filename", "line", "frames"]).prop_map(String::from),
            ".{0,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(Tree::List),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Tree::Tuple),
            prop::collection::vec((key, inner.clone()), 0..8).prop_map(Tree::Dict),
            // Repeated equal dicts: memoized and shared in torch style.
            (inner, 1..4usize).prop_map(|(t, n)| {
                let d = Tree::Dict(vec![("name".into(), t), ("line".into(), Tree::Int(3068))]);
                Tree::List(vec![d; n])
            }),
        ]
    })
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![Just(Style::Torch), Just(Style::Py4), Just(Style::Py0)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn emitted_trees_round_trip(t in tree(), s in style()) {
        let bytes = Emitter::emit(&t, s);
        let p = parse(&bytes).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert!(same(p.root(), &t), "{s:?}: {:?} vs {t:?}", p.root());
        prop_assert_eq!(p.end_offset(), bytes.len());
    }

    #[test]
    fn truncated_pickles_are_eof(t in tree(), s in style(), cut in any::<prop::sample::Index>()) {
        let bytes = Emitter::emit(&t, s);
        let cut = cut.index(bytes.len());
        let e = parse(&bytes[..cut]).expect_err("a strict prefix has no STOP");
        prop_assert_eq!(e.kind, PickleErrorKind::UnexpectedEof);
    }

    #[test]
    fn mutated_pickles_never_panic(
        t in tree(),
        s in style(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
    ) {
        let mut bytes = Emitter::emit(&t, s);
        for (at, byte, how) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => { bytes.remove(i); }
            }
        }
        if let Ok(p) = parse(&bytes) {
            // Walking whatever came out must not panic either.
            let _ = format!("{:?}", p.root());
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(p) = parse(&bytes) {
            let _ = format!("{:?}", p.root());
        }
    }

    #[test]
    fn opcode_soup_never_panics(ops in prop::collection::vec(
        prop_oneof![
            prop::sample::select(b"(.012FIJKLMNPQRSTUVXabcdegh}ijl]opqrstu)G".to_vec()),
            0x80u8..=0x98,
            any::<u8>(),
        ], 0..200)) {
        // Mostly valid opcode bytes, so the machine gets deep before failing.
        if let Ok(p) = parse(&ops) {
            let _ = format!("{:?}", p.root());
        }
    }
}

#[test]
fn memo_beyond_256_uses_long_forms() {
    // 1000 distinct strings, each used twice: LONG_BINPUT/LONG_BINGET in
    // torch style, LONG_BINGET in protocol 4.
    let strs: Vec<Tree> = (0..1000).map(|i| Tree::Str(format!("s{i}"))).collect();
    let t = Tree::List([strs.clone(), strs].concat());
    for s in [Style::Torch, Style::Py4, Style::Py0] {
        let bytes = Emitter::emit(&t, s);
        let p = parse(&bytes).unwrap();
        assert!(same(p.root(), &t), "{s:?}");
        let l = p.root();
        assert_eq!(l.index(3).unwrap().id(), l.index(1003).unwrap().id());
    }
    // Big batches: more than 1000 items cross APPENDS/SETITEMS batches.
    let big = Tree::Dict((0..2500).map(|i| (format!("k{i}"), Tree::Int(i))).collect());
    for s in [Style::Torch, Style::Py4, Style::Py0] {
        let bytes = Emitter::emit(&big, s);
        assert!(same(parse(&bytes).unwrap().root(), &big), "{s:?}");
    }
}
