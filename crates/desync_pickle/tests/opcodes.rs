//! Hand-assembled pickles, one group of tests per opcode family, plus the
//! error contract (kind, offset, opcode) for malformed input.
//!
//! The torch `tag_aggregates` samples were produced with
//! `torch._C._pickle_save(obj)` (torch 2.11) and copied out of the archive's
//! `data.pkl`; the rest follow `pickletools` documentation.

use desync_pickle::{Kind, PickleError, PickleErrorKind, Value, parse};

fn dbg(bytes: &[u8]) -> String {
    format!("{:?}", parse(bytes).unwrap_or_else(|e| panic!("{e}")).root())
}

fn err(bytes: &[u8]) -> PickleError {
    match parse(bytes) {
        Ok(p) => panic!("expected an error, got {:?}", p.root()),
        Err(e) => e,
    }
}

fn err_kind(bytes: &[u8]) -> PickleErrorKind {
    err(bytes).kind
}

#[test]
fn constants() {
    assert_eq!(dbg(b"N."), "None");
    assert_eq!(dbg(b"\x88."), "true");
    assert_eq!(dbg(b"\x89."), "false");
    // Protocol 0 spells booleans as INT 01 / 00.
    assert_eq!(dbg(b"I01\n."), "true");
    assert_eq!(dbg(b"I00\n."), "false");
    let p = parse(b"N.").unwrap();
    assert!(p.root().is_none());
    assert_eq!(p.root().as_bool(), None);
}

#[test]
fn integers() {
    assert_eq!(dbg(b"K\xff."), "255");
    assert_eq!(dbg(b"M\xff\xff."), "65535");
    assert_eq!(dbg(b"J\xff\xff\xff\xff."), "-1");
    assert_eq!(dbg(b"J\x00\x00\x00\x80."), "-2147483648");
    assert_eq!(dbg(b"I-5\n."), "-5");
    assert_eq!(dbg(b"I 12 \n."), "12");
    assert_eq!(dbg(b"L123L\n."), "123");
    assert_eq!(dbg(b"L-9223372036854775808L\n."), "-9223372036854775808");
    assert_eq!(dbg(b"\x8a\x00."), "0");
    assert_eq!(dbg(b"\x8a\x01\xff."), "-1");
    assert_eq!(dbg(b"\x8a\x08\x88\xf0\x90hHW\xea\x18."), "1795343369964155016");
    // Nine bytes that are only sign extension still fit i64.
    assert_eq!(dbg(b"\x8a\x09\xfe\xff\xff\xff\xff\xff\xff\xff\xff."), "-2");
    assert_eq!(dbg(b"\x8b\x02\x00\x00\x00\xff\x7f."), "32767");

    // 2**63 does not fit: BigInt with the payload borrowed from the input.
    let big = b"\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.";
    let p = parse(big).unwrap();
    let Kind::BigInt(b) = p.root().kind() else { panic!() };
    assert_eq!(b, &[0, 0, 0, 0, 0, 0, 0, 0x80, 0]);
    assert_eq!(p.root().as_i64(), None);
    assert_eq!(p.root().as_f64(), None);
    // The same number in protocol 0 text.
    let p = parse(b"L9223372036854775808L\n.").unwrap();
    assert_eq!(p.root().kind(), Kind::BigInt(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0]));

    let p = parse(b"K\x07.").unwrap();
    assert_eq!(p.root().as_i64(), Some(7));
    assert_eq!(p.root().as_f64(), Some(7.0));
    assert_eq!(p.root().as_bool(), None);
    assert_eq!(p.root().as_str(), None);
}

#[test]
fn floats() {
    assert_eq!(dbg(b"G?\xf8\x00\x00\x00\x00\x00\x00."), "1.5");
    assert_eq!(dbg(b"F-0.25\n."), "-0.25");
    assert_eq!(dbg(b"F1e+300\n."), "1e300");
    let p = parse(b"Fnan\n.").unwrap();
    assert!(p.root().as_f64().unwrap().is_nan());
    assert_eq!(parse(b"G?\xf8\x00\x00\x00\x00\x00\x00.").unwrap().root().as_i64(), None);
}

#[test]
fn strings() {
    assert_eq!(dbg(b"X\x03\x00\x00\x00abc."), "\"abc\"");
    assert_eq!(dbg(b"\x8c\x02hi."), "\"hi\"");
    assert_eq!(dbg(b"\x8d\x01\x00\x00\x00\x00\x00\x00\x00z."), "\"z\"");
    assert_eq!(dbg(b"X\x02\x00\x00\x00\xc3\xa9."), "\"\u{e9}\"");
    // Protocol 0: raw-unicode-escape (Latin-1 bytes, \u escapes).
    assert_eq!(dbg(b"Vcaf\xe9 \\u20ac\n."), "\"caf\u{e9} \u{20ac}\"");
    // Python 2 str: escapes, quotes.
    assert_eq!(dbg(b"S'it\\'s\\n'\n."), "\"it's\\n\"");
    assert_eq!(dbg(b"S\"x\"\n."), "\"x\"");
    assert_eq!(dbg(b"T\x02\x00\x00\x00ab."), "\"ab\"");
    assert_eq!(dbg(b"U\x02ab."), "\"ab\"");
    // Non-UTF-8 Python 2 str becomes bytes.
    assert_eq!(dbg(b"U\x01\xff."), "b\"\\xff\"");

    // Binary strings borrow from the input.
    let input = b"X\x03\x00\x00\x00abc.".to_vec();
    let p = parse(&input).unwrap();
    let s = p.root().as_str().unwrap();
    assert!(input.as_ptr_range().contains(&s.as_ptr()));

    // Invalid UTF-8 in a str value is repaired and counted, not fatal.
    let p = parse(b"X\x02\x00\x00\x00a\xff.").unwrap();
    assert_eq!(p.root().as_str(), Some("a\u{fffd}"));
    assert_eq!(p.lossy_string_count(), 1);
}

#[test]
fn bytes() {
    assert_eq!(parse(b"C\x02\x00\x01.").unwrap().root().as_bytes(), Some(&[0u8, 1][..]));
    assert_eq!(parse(b"B\x01\x00\x00\x00z.").unwrap().root().as_bytes(), Some(&b"z"[..]));
    let b8 = b"\x8e\x01\x00\x00\x00\x00\x00\x00\x00z.";
    assert_eq!(parse(b8).unwrap().root().kind(), Kind::Bytes(b"z"));
    let ba = b"\x96\x02\x00\x00\x00\x00\x00\x00\x00zz.";
    assert_eq!(parse(ba).unwrap().root().kind(), Kind::Bytes(b"zz"));
    // READONLY_BUFFER is a no-op on the value below it.
    assert_eq!(parse(b"C\x01q\x98.").unwrap().root().kind(), Kind::Bytes(b"q"));
}

#[test]
fn lists_tuples_dicts_sets() {
    assert_eq!(dbg(b"]."), "[]");
    assert_eq!(dbg(b"](K\x01K\x02e."), "[1, 2]");
    assert_eq!(dbg(b"]K\x01aK\x02a."), "[1, 2]");
    assert_eq!(dbg(b"(K\x01K\x02l."), "[1, 2]");
    assert_eq!(dbg(b"(lp0\nI1\naI2\na."), "[1, 2]");
    assert_eq!(dbg(b")."), "()");
    assert_eq!(dbg(b"K\x01\x85."), "(1,)");
    assert_eq!(dbg(b"K\x01K\x02\x86."), "(1, 2)");
    assert_eq!(dbg(b"K\x01K\x02K\x03\x87."), "(1, 2, 3)");
    assert_eq!(dbg(b"(K\x01K\x02K\x03K\x04t."), "(1, 2, 3, 4)");
    assert_eq!(dbg(b"}(\x8c\x01aK\x01\x8c\x01bK\x02u."), "{\"a\": 1, \"b\": 2}");
    assert_eq!(dbg(b"}\x8c\x01aK\x01s."), "{\"a\": 1}");
    assert_eq!(dbg(b"(\x8c\x01aK\x01d."), "{\"a\": 1}");
    assert_eq!(dbg(b"(dp0\nS'a'\np1\nI1\ns."), "{\"a\": 1}");
    assert_eq!(dbg(b"\x8f(K\x01K\x02\x90."), "{1, 2}");
    assert_eq!(dbg(b"(K\x01\x91."), "{1}");

    let p = parse(b"}(\x8c\x01aK\x01\x8c\x01bK\x02u.").unwrap();
    let d = p.root();
    assert_eq!(d.kind(), Kind::Dict);
    assert_eq!(d.len(), 2);
    assert!(!d.is_empty());
    assert_eq!(d.get("b").unwrap().as_i64(), Some(2));
    assert!(d.get("c").is_none());
    assert_eq!(d.iter().count(), 0, "iter() is for sequences");
    // A repeated key: the last value wins for get(), as in Python.
    let p = parse(b"}(\x8c\x01aK\x01\x8c\x01aK\x02u.").unwrap();
    assert_eq!(p.root().get("a").unwrap().as_i64(), Some(2));

    let p = parse(b"(K\x01\x91.").unwrap();
    assert!(p.root().is_frozenset());
    assert_eq!(p.root().kind(), Kind::Set);
    let p = parse(b"K\x01K\x02\x86.").unwrap();
    assert_eq!(p.root().items().count(), 0, "items() is for dicts");
    assert_eq!(p.root().index(1).unwrap().as_i64(), Some(2));
    assert!(p.root().index(2).is_none());
    assert_eq!(parse(b"K\x01.").unwrap().root().len(), 0);
}

#[test]
fn memo_shares_nodes() {
    // A dict memoized after SETITEMS and fetched twice, FR style.
    let bytes = b"\x80\x02](}(X\x01\x00\x00\x00aq\x00K\x01uq\x01h\x01h\x01e.";
    let p = parse(bytes).unwrap();
    let l = p.root();
    assert_eq!(l.len(), 3);
    let ids: Vec<u32> = l.iter().map(|v| v.id()).collect();
    assert!(ids[0] == ids[1] && ids[1] == ids[2]);
    assert_eq!(format!("{l:?}"), "[{\"a\": 1}, {\"a\": 1}, {\"a\": 1}]");
    // Nodes: list, dict, "a", 1 (the shared dict is one node).
    assert_eq!(p.node_count(), 4);
    assert_eq!(p.value(ids[0]).unwrap().get("a").unwrap().as_i64(), Some(1));
    assert!(p.value(99).is_none());

    // LONG_BINPUT / LONG_BINGET, PUT / GET, MEMOIZE.
    assert_eq!(dbg(b"](K\x07r\x00\x01\x00\x00j\x00\x01\x00\x00e."), "[7, 7]");
    assert_eq!(dbg(b"(lp0\nI7\np1\nag1\na."), "[7, 7]");
    assert_eq!(dbg(b"\x80\x04](K\x07\x94h\x00e."), "[7, 7]");
    // MEMOIZE numbers slots by count: the list is 0, the int 1.
    assert_eq!(dbg(b"\x80\x04]\x94(K\x07\x94h\x01e."), "[7, 7]");
    // A far-away protocol 0 PUT index must not allocate a huge table.
    let p = parse(b"(lp4000000000\nI7\nag4000000000\na.").unwrap();
    assert_eq!(p.root().len(), 2);
    assert_eq!(p.root().index(1).unwrap().id(), p.root().id());
}

#[test]
fn recursive_structures_terminate() {
    // l = []; l.append(l)
    let p = parse(b"\x80\x04]\x94h\x00a.").unwrap();
    let l = p.root();
    assert_eq!(l.index(0).unwrap().id(), l.id());
    let text = format!("{l:?}");
    assert!(text.contains('…'), "{text}");
}

#[test]
fn stack_manipulation() {
    assert_eq!(dbg(b"K\x01K\x020."), "1");
    assert_eq!(dbg(b"K\x01(K\x02K\x031."), "1");
    assert_eq!(dbg(b"K\x012\x86."), "(1, 1)");
    // POP on an empty segment pops the mark (Python 3.8+ behaviour).
    assert_eq!(dbg(b"K\x01(0."), "1");
    // STOP takes the top of the current segment.
    assert_eq!(dbg(b"(K\x01."), "1");
    // FRAME is a length hint; trailing bytes after STOP are ignored.
    let p = parse(b"\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00K\x01.junk").unwrap();
    assert_eq!(p.root().as_i64(), Some(1));
    assert_eq!(p.end_offset(), 14);
}

#[test]
fn torch_tag_aggregates() {
    // {'a': [1, 2, -1, 70000, 2**40]} as Dict[str, List[int]].
    let dict = b"\x80\x02ctorch.jit._pickle\nrestore_type_tag\nq\x00}(X\x01\x00\x00\x00aq\x01ctorch.jit._pickle\nbuild_intlist\nq\x02(](K\x01K\x02J\xff\xff\xff\xffJp\x11\x01\x00\x8a\x08\x00\x00\x00\x00\x00\x01\x00\x00etRuX\x14\x00\x00\x00Dict[str, List[int]]q\x03\x86R.";
    assert_eq!(dbg(dict), "{\"a\": [1, 2, -1, 70000, 1099511627776]}");
    let doubles =
        b"\x80\x02ctorch.jit._pickle\nbuild_doublelist\nq\x00(](G?\xf8\x00\x00\x00\x00\x00\x00etR.";
    assert_eq!(dbg(doubles), "[1.5]");
    let bools = b"\x80\x02ctorch.jit._pickle\nbuild_boollist\nq\x00(](\x88etR.";
    assert_eq!(dbg(bools), "[true]");
    assert_eq!(dbg(b"\x80\x02X\x01\x00\x00\x00sq\x00h\x00)\x87."), "(\"s\", \"s\", ())");
    // A tensor: its storage is a persistent id, outside the pickle.
    let tensor = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch\nLongStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x02tQq\x05K\x00(K\x02t(K\x01t\x89ccollections\nOrderedDict\nq\x06)RtRq\x07.";
    let e = err(tensor);
    assert_eq!(e.kind, PickleErrorKind::PersistentId);
    assert_eq!(e.offset, 95);
    assert_eq!(e.opcode, Some(b'Q'));
}

#[test]
fn globals_and_objects() {
    let od = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00aK\x01u.";
    assert_eq!(dbg(od), "{\"a\": 1}");
    // Old OrderedDict form: a list of [key, value] pairs.
    let od0 = b"ccollections\nOrderedDict\n((lp0\n(lp1\nS'k'\naI3\naatR.";
    assert_eq!(dbg(od0), "{\"k\": 3}");
    assert_eq!(dbg(b"ctorch\ndevice\nX\x04\x00\x00\x00cudaK\x00\x86R."), "\"cuda:0\"");
    assert_eq!(dbg(b"ctorch\ndevice\nX\x03\x00\x00\x00cpu\x85R."), "\"cpu\"");
    assert_eq!(dbg(b"c__builtin__\nset\n]K\x01a\x85R."), "{1}");
    assert_eq!(dbg(b"cbuiltins\nfrozenset\n)R."), "{}");
    assert_eq!(dbg(b"\x8c\x08builtins\x8c\x04list\x93)R."), "[]");
    let enc = b"c_codecs\nencode\nX\x02\x00\x00\x00\xc3\xa9X\x06\x00\x00\x00latin1\x86R.";
    assert_eq!(parse(enc).unwrap().root().kind(), Kind::Bytes(&[0xe9]));
    assert_eq!(parse(b"cbuiltins\nbytes\n)R.").unwrap().root().kind(), Kind::Bytes(b""));
    let ba = b"cbuiltins\nbytearray\nX\x01\x00\x00\x00zX\x07\x00\x00\x00latin-1\x86R.";
    assert_eq!(parse(ba).unwrap().root().kind(), Kind::Bytes(b"z"));

    // Unknown classes stay opaque, with their arguments and BUILD state.
    let p = parse(b"cfoo.bar\nBaz\nK\x05\x85R}(X\x01\x00\x00\x00xK\x01ub.").unwrap();
    let v = p.root();
    assert_eq!(v.kind(), Kind::Opaque { module: "foo.bar", name: "Baz" });
    assert_eq!(format!("{:?}", v.opaque_args().unwrap()), "(5,)");
    assert_eq!(format!("{:?}", v.opaque_state().unwrap()), "{\"x\": 1}");
    let p = parse(b"\x80\x04\x8c\x03foo\x8c\x03Bar\x93)\x81.").unwrap();
    assert_eq!(p.root().kind(), Kind::Opaque { module: "foo", name: "Bar" });
    let p = parse(b"\x80\x04\x8c\x03foo\x8c\x03Bar\x93)}\x92.").unwrap();
    assert_eq!(p.root().kind(), Kind::Opaque { module: "foo", name: "Bar" });
    let p = parse(b"(ifoo\nBar\n.").unwrap();
    assert_eq!(p.root().kind(), Kind::Opaque { module: "foo", name: "Bar" });
    let p = parse(b"(cfoo\nBar\nK\x01o.").unwrap();
    assert_eq!(format!("{:?}", p.root().opaque_args().unwrap()), "(1,)");
    // A bare global is opaque too, without args.
    let p = parse(b"cos\nsystem\n.").unwrap();
    assert_eq!(p.root().kind(), Kind::Opaque { module: "os", name: "system" });
    assert!(p.root().opaque_args().is_none());
    // Opaque values inside plain data do not fail the file.
    assert_eq!(dbg(b"](K\x01cfoo\nBar\n)Re."), "[1, <foo.Bar>]");
    let p = parse(b"\x82\x05.").unwrap();
    assert_eq!(p.root().kind(), Kind::Opaque { module: "copyreg._extension_registry", name: "5" });
}

#[test]
fn error_contract() {
    let e = err(b"");
    assert_eq!((e.offset, e.opcode, e.kind), (0, None, PickleErrorKind::UnexpectedEof));
    let e = err(b"\x80\x02K\x01");
    assert_eq!((e.offset, e.opcode, e.kind), (4, None, PickleErrorKind::UnexpectedEof));
    let e = err(b"\x80\x02\xff.");
    assert_eq!((e.offset, e.opcode, e.kind), (2, Some(0xff), PickleErrorKind::UnknownOpcode));
    assert_eq!(e.to_string(), "unknown opcode at byte 2 (not an opcode)");
    let e = err(b"\x80\x02X\x05\x00\x00\x00ab");
    assert_eq!((e.offset, e.opcode, e.kind), (2, Some(b'X'), PickleErrorKind::UnexpectedEof));
    assert_eq!(e.to_string(), "unexpected end of input at byte 2 (opcode BINUNICODE)");
    // Length fields far beyond the input fail before allocating.
    assert_eq!(err_kind(b"X\xff\xff\xff\xff."), PickleErrorKind::UnexpectedEof);
    assert_eq!(err_kind(b"\x8d\xff\xff\xff\xff\xff\xff\xff\xff."), PickleErrorKind::UnexpectedEof);
    assert_eq!(err_kind(b"\x95\xff\xff\xff\xff\xff\xff\xff\x7fN."), PickleErrorKind::UnexpectedEof);
    assert_eq!(
        err_kind(b"\x8b\xff\xff\xff\xff."),
        PickleErrorKind::Malformed("negative LONG4 length")
    );
    assert_eq!(err_kind(b"a."), PickleErrorKind::StackUnderflow);
    assert_eq!(err_kind(b"]K\x01(a."), PickleErrorKind::StackUnderflow);
    assert_eq!(err_kind(b"K\x01(\x86."), PickleErrorKind::StackUnderflow);
    assert_eq!(err_kind(b"."), PickleErrorKind::StackUnderflow);
    assert_eq!(err_kind(b"e."), PickleErrorKind::NoMark);
    assert_eq!(err_kind(b"(e."), PickleErrorKind::StackUnderflow);
    assert_eq!(err_kind(b"h\x05."), PickleErrorKind::BadMemoRef);
    assert_eq!(err_kind(b"g3\n."), PickleErrorKind::BadMemoRef);
    assert_eq!(err_kind(b"q\x00."), PickleErrorKind::StackUnderflow);
    assert_eq!(err_kind(b"P1\n."), PickleErrorKind::PersistentId);
    assert_eq!(err_kind(b"N\x97."), PickleErrorKind::OutOfBandBuffer);
    assert_eq!(err_kind(b"\x80\x06."), PickleErrorKind::Malformed("unsupported protocol"));
    assert_eq!(err_kind(b"K\x01(K\x02s."), PickleErrorKind::StackUnderflow);
    assert_eq!(
        err_kind(b"K\x01K\x01K\x02s."),
        PickleErrorKind::Malformed("SETITEM target is not a dict")
    );
    assert_eq!(
        err_kind(b"}(K\x01u."),
        PickleErrorKind::Malformed("odd number of items for SETITEMS")
    );
    assert_eq!(
        err_kind(b"K\x01K\x02a."),
        PickleErrorKind::Malformed("APPEND target is not a list")
    );
    assert_eq!(
        err_kind(b"](K\x01\x90."),
        PickleErrorKind::Malformed("ADDITEMS target is not a set")
    );
    assert_eq!(err_kind(b"Inope\n."), PickleErrorKind::Malformed("invalid INT literal"));
    assert_eq!(err_kind(b"Snope\n."), PickleErrorKind::Malformed("STRING argument must be quoted"));
    assert_eq!(err_kind(b"c\xff\nx\n."), PickleErrorKind::InvalidUtf8);
    assert_eq!(
        err_kind(b"K\x01K\x02\x93."),
        PickleErrorKind::Malformed("STACK_GLOBAL requires two strings")
    );
    assert_eq!(err_kind(b"\x82\x00."), PickleErrorKind::Malformed("EXT code must be positive"));
    let e: Box<dyn std::error::Error> = Box::new(err(b"h\x05."));
    assert_eq!(e.to_string(), "reference to an unset memo slot at byte 0 (opcode BINGET)");
}

#[test]
fn depth_limit() {
    let n = usize::from(desync_pickle::MAX_DEPTH);
    // n+1 nested lists are fine at depth MAX_DEPTH... one more is not.
    let ok: Vec<u8> = [vec![b']'; n], vec![b'a'; n - 1], vec![b'.']].concat();
    let p = parse(&ok).unwrap();
    let mut v: Value<'_> = p.root();
    let mut depth = 1;
    while let Some(c) = v.index(0) {
        v = c;
        depth += 1;
    }
    assert_eq!(depth, n);
    let deep: Vec<u8> = [vec![b']'; n + 1], vec![b'a'; n], vec![b'.']].concat();
    let e = err(&deep);
    assert_eq!(e.kind, PickleErrorKind::TooDeep);
    assert_eq!(e.opcode, Some(b'a'));
    // Nesting through the memo (each level built at stack depth 2) too.
    let mut memo_chain = b"\x80\x04]\x94".to_vec();
    for i in 0..=n {
        memo_chain.extend_from_slice(b"]r");
        memo_chain.extend_from_slice(&(i as u32 + 1).to_le_bytes());
        memo_chain.extend_from_slice(b"j");
        memo_chain.extend_from_slice(&(i as u32).to_le_bytes());
        memo_chain.extend_from_slice(b"a0");
    }
    memo_chain.extend_from_slice(b"N.");
    assert_eq!(err_kind(&memo_chain), PickleErrorKind::TooDeep);
}
