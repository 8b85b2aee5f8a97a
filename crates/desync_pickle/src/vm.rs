//! The unpickling machine: executes opcodes into the node arena.
//!
//! Role: one pass over the input, one `match` per opcode, mirroring Python's
//! `_Unpickler` (stack split into segments by MARKs, a memo of node ids).
//! Invariants:
//! - every value on `stack` and in the memo is a valid node id;
//! - `marks` holds stack lengths in increasing order; an opcode may only pop
//!   values above the last mark (Python's "stack underflow" rule);
//! - each opcode adds at most one node, and every length field is checked
//!   against the remaining input before use, so memory is linear in the input;
//! - nothing here panics: indexing is bounds-checked by construction or by
//!   explicit checks, and arithmetic on untrusted numbers is checked.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::error::{PickleError, PickleErrorKind as E};
use crate::op;
use crate::text::{self, TextInt};
use crate::{DictBody, MAX_DEPTH, Node, NodeId, Opaque, Pickle, Seq};

type Res<T> = Result<T, E>;

pub(crate) fn run(input: &[u8]) -> Result<Pickle<'_>, PickleError> {
    // Node ids are u32 and every opcode is at least one byte, so inputs under
    // 4 GiB cannot overflow them.
    if u32::try_from(input.len()).is_err() {
        return Err(PickleError::new(0, None, E::InputTooLarge));
    }
    let mut vm = Vm {
        input,
        pos: 0,
        arena: Pickle {
            nodes: Vec::new(),
            strs: Vec::new(),
            blobs: Vec::new(),
            seqs: Vec::new(),
            dicts: Vec::new(),
            opaques: Vec::new(),
            root: 0,
            lossy: 0,
            end: 0,
        },
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Memo::default(),
        depths: Vec::new(),
    };
    // FR dumps decode to about one node per 7 input bytes (7.5 for a 2,000-entry
    // dump with frames); reserving up front saves the copies and page faults of
    // doubling. Err on the high side: one doubling of a ~1 MB arena per file cost
    // ~8 % of the CPU at 4,096 ranks, while unused capacity is never touched.
    let guess = input.len() / 6;
    vm.arena.nodes.reserve(guess);
    vm.depths.reserve(guess);
    vm.arena.seqs.reserve(guess / 4);
    loop {
        let Some(&opcode) = input.get(vm.pos) else {
            return Err(PickleError::new(input.len(), None, E::UnexpectedEof));
        };
        let op_start = vm.pos;
        vm.pos += 1;
        match vm.step(opcode) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Stop(root)) => {
                vm.arena.root = root;
                vm.arena.end = vm.pos;
                return Ok(vm.arena);
            }
            Err(kind) => return Err(PickleError::new(op_start, Some(opcode), kind)),
        }
    }
}

enum Flow {
    Continue,
    Stop(NodeId),
}

/// Memo slots. Dense for the usual small consecutive indices; a sparse map
/// for far-away ones (a protocol-0 `p999999999` must not allocate gigabytes).
#[derive(Default)]
struct Memo {
    dense: Vec<NodeId>,
    sparse: BTreeMap<u64, NodeId>,
    /// Number of distinct slots set: what MEMOIZE uses as its index.
    count: usize,
}

const UNSET: NodeId = NodeId::MAX;

impl Memo {
    fn get(&self, idx: u64) -> Option<NodeId> {
        let dense = usize::try_from(idx)
            .ok()
            .and_then(|i| self.dense.get(i))
            .copied()
            .filter(|&v| v != UNSET);
        dense.or_else(|| self.sparse.get(&idx).copied())
    }

    fn put(&mut self, idx: u64, value: NodeId) {
        let fresh = self.get(idx).is_none();
        let len = self.dense.len() as u64;
        // Dense growth is allowed only in proportion to the slots actually
        // used, so its size stays linear in the number of PUT opcodes.
        if idx < len || idx <= 2 * self.count as u64 + 1024 {
            let i = idx as usize;
            if i >= self.dense.len() {
                self.dense.resize(i + 1, UNSET);
            }
            self.dense[i] = value;
            if !self.sparse.is_empty() {
                self.sparse.remove(&idx);
            }
        } else {
            self.sparse.insert(idx, value);
        }
        if fresh {
            self.count += 1;
        }
    }
}

struct Vm<'a> {
    input: &'a [u8],
    pos: usize,
    arena: Pickle<'a>,
    stack: Vec<NodeId>,
    marks: Vec<usize>,
    memo: Memo,
    /// Nesting depth per node (0 for scalars), parallel to `arena.nodes`.
    /// Only needed while decoding, so it is not part of the result.
    depths: Vec<u16>,
}

/// How a container-building call treats its arguments.
#[derive(Clone, Copy, PartialEq)]
enum Call {
    /// REDUCE / INST / OBJ: `callable(*args)`.
    Reduce,
    /// `NEWOBJ` / `NEWOBJ_EX`: `cls.__new__(cls, *args)`; builtin containers
    /// start empty and are filled by later opcodes.
    NewObj,
}

impl<'a> Vm<'a> {
    // ---- input ----

    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        let input: &'a [u8] = self.input;
        let end = self.pos.checked_add(n).ok_or(E::UnexpectedEof)?;
        let bytes = input.get(self.pos..end).ok_or(E::UnexpectedEof)?;
        self.pos = end;
        Ok(bytes)
    }

    fn take_array<const N: usize>(&mut self) -> Res<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Res<u8> {
        Ok(self.take_array::<1>()?[0])
    }

    fn u16(&mut self) -> Res<u16> {
        Ok(u16::from_le_bytes(self.take_array()?))
    }

    fn u32(&mut self) -> Res<u32> {
        Ok(u32::from_le_bytes(self.take_array()?))
    }

    fn i32(&mut self) -> Res<i32> {
        Ok(i32::from_le_bytes(self.take_array()?))
    }

    fn u64(&mut self) -> Res<u64> {
        Ok(u64::from_le_bytes(self.take_array()?))
    }

    /// Bytes whose length came from the input: refused before any use when
    /// longer than what is left.
    fn take_len(&mut self, len: u64) -> Res<&'a [u8]> {
        let len = usize::try_from(len).map_err(|_| E::UnexpectedEof)?;
        self.take(len)
    }

    /// A newline-terminated argument, without the newline.
    fn line(&mut self) -> Res<&'a [u8]> {
        let input: &'a [u8] = self.input;
        let rest = input.get(self.pos..).ok_or(E::UnexpectedEof)?;
        let n = rest.iter().position(|&b| b == b'\n').ok_or(E::UnexpectedEof)?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    fn line_str(&mut self) -> Res<&'a str> {
        std::str::from_utf8(self.line()?).map_err(|_| E::InvalidUtf8)
    }

    // ---- stack ----

    fn base(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn push(&mut self, id: NodeId) {
        self.stack.push(id);
    }

    fn pop(&mut self) -> Res<NodeId> {
        if self.stack.len() <= self.base() {
            return Err(E::StackUnderflow);
        }
        self.stack.pop().ok_or(E::StackUnderflow)
    }

    fn top(&self) -> Res<NodeId> {
        if self.stack.len() <= self.base() {
            return Err(E::StackUnderflow);
        }
        self.stack.last().copied().ok_or(E::StackUnderflow)
    }

    /// Pops the last mark; returns the stack position where its items start.
    fn pop_mark(&mut self) -> Res<usize> {
        self.marks.pop().ok_or(E::NoMark)
    }

    /// After `pop_mark`, the container the items go into: the value just
    /// below the mark, which must lie in the now-current segment.
    fn mark_target(&self, mark: usize) -> Res<NodeId> {
        if mark == 0 || mark <= self.base() {
            return Err(E::StackUnderflow);
        }
        Ok(self.stack[mark - 1])
    }

    // ---- arena ----

    fn node(&mut self, n: Node) -> NodeId {
        let id = self.arena.nodes.len() as NodeId;
        self.arena.nodes.push(n);
        self.depths.push(0);
        id
    }

    /// Adds a container node of the given depth.
    fn container(&mut self, n: Node, depth: u16) -> NodeId {
        let id = self.node(n);
        self.depths[id as usize] = depth;
        id
    }

    fn push_node(&mut self, n: Node) {
        let id = self.node(n);
        self.push(id);
    }

    fn new_str(&mut self, s: Cow<'a, str>) -> NodeId {
        let i = self.arena.strs.len() as u32;
        self.arena.strs.push(s);
        self.node(Node::Str(i))
    }

    fn new_blob(&mut self, b: Cow<'a, [u8]>, big_int: bool) -> NodeId {
        let i = self.arena.blobs.len() as u32;
        self.arena.blobs.push(b);
        self.node(if big_int { Node::BigInt(i) } else { Node::Bytes(i) })
    }

    /// A string value from raw bytes: borrowed when valid UTF-8, else
    /// repaired with U+FFFD and counted (never fails the file).
    fn utf8_value(&mut self, bytes: &'a [u8]) -> NodeId {
        let s = if let Ok(s) = std::str::from_utf8(bytes) {
            Cow::Borrowed(s)
        } else {
            self.arena.lossy += 1;
            Cow::Owned(String::from_utf8_lossy(bytes).into_owned())
        };
        self.new_str(s)
    }

    /// A Python 2 `str` (STRING/BINSTRING): text when it is UTF-8, else bytes.
    fn py2_str(&mut self, bytes: Cow<'a, [u8]>) -> NodeId {
        match bytes {
            Cow::Borrowed(b) => match std::str::from_utf8(b) {
                Ok(s) => self.new_str(Cow::Borrowed(s)),
                Err(_) => self.new_blob(Cow::Borrowed(b), false),
            },
            Cow::Owned(v) => match String::from_utf8(v) {
                Ok(s) => self.new_str(Cow::Owned(s)),
                Err(e) => self.new_blob(Cow::Owned(e.into_bytes()), false),
            },
        }
    }

    fn int(&mut self, t: TextInt) -> NodeId {
        match t {
            TextInt::Small(v) => self.node(Node::Int(v)),
            TextInt::Big(b) => self.new_blob(Cow::Owned(b), true),
        }
    }

    /// LONG1/LONG4 payload: an int when it fits, else borrowed big-int bytes.
    fn long_bytes(&mut self, bytes: &'a [u8]) -> NodeId {
        match text::le_to_i64(bytes) {
            Some(v) => self.node(Node::Int(v)),
            None => self.new_blob(Cow::Borrowed(bytes), true),
        }
    }

    fn depth(&self, id: NodeId) -> u16 {
        self.depths[id as usize]
    }

    /// Depth of a container holding `children` (at least 1).
    fn depth_over(&self, children: impl IntoIterator<Item = NodeId>) -> Res<u16> {
        let deepest = children.into_iter().map(|c| self.depth(c)).max().unwrap_or(0);
        if deepest >= MAX_DEPTH {
            return Err(E::TooDeep);
        }
        Ok(deepest + 1)
    }

    fn new_seq(&mut self, items: &[NodeId], make: fn(u32) -> Node) -> Res<NodeId> {
        let depth = self.depth_over(items.iter().copied())?;
        let i = self.arena.seqs.len() as u32;
        self.arena.seqs.push(Seq::from_slice(items));
        Ok(self.container(make(i), depth))
    }

    /// A sequence of the stack values from `from` on, which are popped.
    fn seq_from_stack(&mut self, from: usize, make: fn(u32) -> Node) -> Res<NodeId> {
        let from = from.min(self.stack.len());
        let depth = self.depth_over(self.stack[from..].iter().copied())?;
        let i = self.arena.seqs.len() as u32;
        self.arena.seqs.push(Seq::from_slice(&self.stack[from..]));
        self.stack.truncate(from);
        Ok(self.container(make(i), depth))
    }

    fn new_dict(&mut self, pairs: Vec<(NodeId, NodeId)>) -> Res<NodeId> {
        let depth = self.depth_over(pairs.iter().flat_map(|&(k, v)| [k, v]))?;
        let i = self.arena.dicts.len() as u32;
        self.arena.dicts.push(DictBody { pairs });
        Ok(self.container(Node::Dict(i), depth))
    }

    fn new_opaque(
        &mut self,
        module: Cow<'a, str>,
        name: Cow<'a, str>,
        args: Option<NodeId>,
    ) -> Res<NodeId> {
        let depth = self.depth_over(args)?;
        let i = self.arena.opaques.len() as u32;
        self.arena.opaques.push(Opaque { module, name, args, state: None });
        Ok(self.container(Node::Opaque(i), depth))
    }

    /// Items popped off the stack from `mark` on.
    fn drain_from(&mut self, mark: usize) -> Vec<NodeId> {
        self.stack.split_off(mark.min(self.stack.len()))
    }

    /// APPEND/APPENDS (`want_set == false`) or ADDITEMS (`true`) of
    /// `stack[from..]` into `target`; the items stay on the stack (the caller
    /// truncates). Opaque targets (custom classes) silently drop the items.
    fn extend(&mut self, target: NodeId, from: usize, want_set: bool) -> Res<()> {
        let seq = match (self.arena.nodes[target as usize], want_set) {
            (Node::List(i), false) | (Node::Set(i), true) => i as usize,
            (Node::Opaque(_), _) => return Ok(()),
            (_, false) => return Err(E::Malformed("APPEND target is not a list")),
            (_, true) => return Err(E::Malformed("ADDITEMS target is not a set")),
        };
        let items = &self.stack[from..];
        let depth = self.depth_over(items.iter().copied())?;
        self.arena.seqs[seq].extend(items);
        let d = &mut self.depths[target as usize];
        *d = (*d).max(depth);
        Ok(())
    }

    /// SETITEM/SETITEMS of the key/value pairs `stack[from..]` into `target`.
    fn set_items(&mut self, target: NodeId, from: usize) -> Res<()> {
        let dict = match self.arena.nodes[target as usize] {
            Node::Dict(i) => i as usize,
            Node::Opaque(_) => return Ok(()),
            _ => return Err(E::Malformed("SETITEM target is not a dict")),
        };
        let flat = &self.stack[from..];
        if !flat.len().is_multiple_of(2) {
            return Err(E::Malformed("odd number of items for SETITEMS"));
        }
        let depth = self.depth_over(flat.iter().copied())?;
        self.arena.dicts[dict].pairs.extend(flat.chunks_exact(2).map(|kv| (kv[0], kv[1])));
        let d = &mut self.depths[target as usize];
        *d = (*d).max(depth);
        Ok(())
    }

    fn memo_get(&mut self, idx: u64) -> Res<()> {
        let id = self.memo.get(idx).ok_or(E::BadMemoRef)?;
        self.push(id);
        Ok(())
    }

    fn memo_put(&mut self, idx: u64) -> Res<()> {
        let top = self.top()?;
        self.memo.put(idx, top);
        Ok(())
    }

    fn str_of(&self, id: NodeId) -> Option<&Cow<'a, str>> {
        match self.arena.nodes[id as usize] {
            Node::Str(i) => Some(&self.arena.strs[i as usize]),
            _ => None,
        }
    }

    fn seq_of(&self, id: NodeId) -> Option<&[NodeId]> {
        match self.arena.nodes[id as usize] {
            Node::List(i) | Node::Tuple(i) | Node::Set(i) | Node::FrozenSet(i) => {
                Some(self.arena.seqs[i as usize].as_slice())
            }
            _ => None,
        }
    }

    fn global(&mut self, module: Cow<'a, str>, name: Cow<'a, str>) -> Res<NodeId> {
        self.new_opaque(module, name, None)
    }

    /// REDUCE/NEWOBJ of `callable` with the argument tuple `args`: rebuilds
    /// the plain-data wrappers and builtins listed in the crate docs, and
    /// turns everything else into an opaque value.
    fn call(&mut self, callable: NodeId, args: NodeId, how: Call) -> Res<NodeId> {
        let (module, name, bare) = match self.arena.nodes[callable as usize] {
            Node::Opaque(i) => {
                let o = &self.arena.opaques[i as usize];
                (o.module.clone(), o.name.clone(), o.args.is_none())
            }
            _ => (Cow::Borrowed(""), Cow::Borrowed(""), false),
        };
        // Only a bare global can be one of the known constructors; calling
        // an object (a call result) keeps that object's identity.
        if bare && let Some(v) = self.rebuild(&module, &name, args, how)? {
            return Ok(v);
        }
        self.new_opaque(module, name, Some(args))
    }

    fn rebuild(
        &mut self,
        module: &str,
        name: &str,
        args: NodeId,
        how: Call,
    ) -> Res<Option<NodeId>> {
        let argv: Vec<NodeId> = self.seq_of(args).map(<[NodeId]>::to_vec).unwrap_or_default();
        let first = argv.first().copied();
        let builtin = matches!(module, "builtins" | "__builtin__");
        let v = match (module, name) {
            // torch wrappers around plain data: the value is the first arg.
            (
                "torch.jit._pickle",
                "restore_type_tag" | "build_intlist" | "build_doublelist" | "build_boollist"
                | "build_tensorlist",
            ) => first,
            ("collections", "OrderedDict") => {
                // OrderedDict() then SETITEMS; the old form passes a list of
                // [key, value] pairs.
                let mut pairs = Vec::new();
                if let (Call::Reduce, Some(items)) = (how, first.and_then(|f| self.seq_of(f))) {
                    for &item in items {
                        match self.seq_of(item) {
                            Some(&[k, v]) => pairs.push((k, v)),
                            _ => return Ok(None),
                        }
                    }
                }
                Some(self.new_dict(pairs)?)
            }
            ("torch", "device") => {
                let Some(kind) = first.and_then(|f| self.str_of(f)).cloned() else {
                    return Ok(None);
                };
                let index = argv.get(1).map(|&i| self.arena.nodes[i as usize]);
                let s = match index {
                    None | Some(Node::None) => kind,
                    Some(Node::Int(i)) => Cow::Owned(format!("{kind}:{i}")),
                    Some(_) => return Ok(None),
                };
                Some(self.new_str(s))
            }
            (_, "set" | "frozenset" | "list" | "tuple") if builtin => {
                let items = match (how, first) {
                    (Call::NewObj, _) | (Call::Reduce, None) => Vec::new(),
                    (Call::Reduce, Some(f)) => match self.seq_of(f) {
                        Some(items) => items.to_vec(),
                        None => return Ok(None),
                    },
                };
                let make: fn(u32) -> Node = match name {
                    "set" => Node::Set,
                    "frozenset" => Node::FrozenSet,
                    "list" => Node::List,
                    _ => Node::Tuple,
                };
                Some(self.new_seq(&items, make)?)
            }
            (_, "dict") if builtin && (how == Call::NewObj || first.is_none()) => {
                Some(self.new_dict(Vec::new())?)
            }
            (_, "bytes" | "bytearray") if builtin => self.rebuild_bytes(&argv),
            ("_codecs", "encode") => self.rebuild_bytes(&argv),
            _ => None,
        };
        Ok(v)
    }

    /// `bytes()`, `bytes(b)`, `bytearray(s, 'latin-1')`, `_codecs.encode(s,
    /// 'latin1')`: how protocols 0-2 spell bytes values.
    fn rebuild_bytes(&mut self, argv: &[NodeId]) -> Option<NodeId> {
        let nodes = &self.arena.nodes;
        let bytes: Cow<'a, [u8]> = match argv {
            [] => Cow::Borrowed(&[]),
            [b] => match nodes[*b as usize] {
                Node::Bytes(i) => self.arena.blobs[i as usize].clone(),
                _ => return None,
            },
            [s, enc] => {
                let (Some(s), Some(enc)) = (self.str_of(*s), self.str_of(*enc)) else {
                    return None;
                };
                match enc.to_ascii_lowercase().as_str() {
                    "latin1" | "latin-1" | "iso-8859-1" | "iso8859-1" => {
                        let mut out = Vec::with_capacity(s.len());
                        for c in s.chars() {
                            match u8::try_from(u32::from(c)) {
                                Ok(b) => out.push(b),
                                Err(_) => return None,
                            }
                        }
                        Cow::Owned(out)
                    }
                    "utf8" | "utf-8" | "ascii" => Cow::Owned(s.as_bytes().to_vec()),
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(self.new_blob(bytes, false))
    }

    fn build(&mut self, state: NodeId) {
        let Ok(target) = self.top() else { return };
        // Anything but an opaque object (Python would call __setstate__ or
        // update __dict__) keeps its value: state on plain data is ignored.
        if let Node::Opaque(i) = self.arena.nodes[target as usize] {
            self.arena.opaques[i as usize].state = Some(state);
        }
    }

    // ---- the dispatch ----

    #[allow(clippy::too_many_lines)]
    fn step(&mut self, opcode: u8) -> Res<Flow> {
        match opcode {
            op::PROTO => {
                if self.u8()? > 5 {
                    return Err(E::Malformed("unsupported protocol"));
                }
            }
            op::FRAME => {
                // Frames only group opcodes for buffered reading; opcodes are
                // self-delimiting, so the length is just checked.
                let n = self.u64()?;
                let left = (self.input.len() - self.pos) as u64;
                if n > left {
                    return Err(E::UnexpectedEof);
                }
            }
            op::STOP => {
                let v = self.pop()?;
                return Ok(Flow::Stop(v));
            }

            // Marks and stack shuffling.
            op::MARK => self.marks.push(self.stack.len()),
            op::POP => {
                if self.stack.len() > self.base() {
                    self.stack.pop();
                } else {
                    let m = self.pop_mark()?;
                    self.stack.truncate(m);
                }
            }
            op::POP_MARK => {
                let m = self.pop_mark()?;
                self.stack.truncate(m);
            }
            op::DUP => {
                let v = self.top()?;
                self.push(v);
            }

            // Constants and numbers.
            op::NONE => self.push_node(Node::None),
            op::NEWTRUE => self.push_node(Node::Bool(true)),
            op::NEWFALSE => self.push_node(Node::Bool(false)),
            op::BININT => {
                let v = self.i32()?;
                self.push_node(Node::Int(i64::from(v)));
            }
            op::BININT1 => {
                let v = self.u8()?;
                self.push_node(Node::Int(i64::from(v)));
            }
            op::BININT2 => {
                let v = self.u16()?;
                self.push_node(Node::Int(i64::from(v)));
            }
            op::LONG1 => {
                let n = self.u8()?;
                let b = self.take(usize::from(n))?;
                let id = self.long_bytes(b);
                self.push(id);
            }
            op::LONG4 => {
                let n = self.i32()?;
                let n = u64::try_from(n).map_err(|_| E::Malformed("negative LONG4 length"))?;
                let b = self.take_len(n)?;
                let id = self.long_bytes(b);
                self.push(id);
            }
            op::BINFLOAT => {
                let v = f64::from_be_bytes(self.take_array()?);
                self.push_node(Node::Float(v));
            }
            op::INT => {
                let line = self.line()?;
                let id = match line {
                    // Protocol 0 spells booleans as INT 01 / 00.
                    b"01" => self.node(Node::Bool(true)),
                    b"00" => self.node(Node::Bool(false)),
                    _ => {
                        let v = text::parse_int(line).ok_or(E::Malformed("invalid INT literal"))?;
                        self.int(v)
                    }
                };
                self.push(id);
            }
            op::LONG => {
                let mut line = self.line()?;
                if let Some(rest) = line.strip_suffix(b"L") {
                    line = rest;
                }
                let v = text::parse_int(line).ok_or(E::Malformed("invalid LONG literal"))?;
                let id = self.int(v);
                self.push(id);
            }
            op::FLOAT => {
                let v =
                    text::parse_float(self.line()?).ok_or(E::Malformed("invalid FLOAT literal"))?;
                self.push_node(Node::Float(v));
            }

            // Text and bytes.
            op::BINUNICODE => {
                let n = self.u32()?;
                let b = self.take_len(u64::from(n))?;
                let id = self.utf8_value(b);
                self.push(id);
            }
            op::SHORT_BINUNICODE => {
                let n = self.u8()?;
                let b = self.take(usize::from(n))?;
                let id = self.utf8_value(b);
                self.push(id);
            }
            op::BINUNICODE8 => {
                let n = self.u64()?;
                let b = self.take_len(n)?;
                let id = self.utf8_value(b);
                self.push(id);
            }
            op::UNICODE => {
                let line = self.line()?;
                let (s, lossy) = text::raw_unicode_escape_decode(line)
                    .ok_or(E::Malformed("invalid raw-unicode-escape in UNICODE"))?;
                self.arena.lossy += usize::from(lossy);
                let id = self.new_str(Cow::Owned(s));
                self.push(id);
            }
            op::STRING => {
                let line = self.line()?;
                let quoted = line.len() >= 2
                    && line[0] == line[line.len() - 1]
                    && matches!(line[0], b'\'' | b'"');
                if !quoted {
                    return Err(E::Malformed("STRING argument must be quoted"));
                }
                let inner = &line[1..line.len() - 1];
                let bytes = if inner.contains(&b'\\') {
                    Cow::Owned(
                        text::escape_decode(inner)
                            .ok_or(E::Malformed("invalid escape in STRING"))?,
                    )
                } else {
                    Cow::Borrowed(inner)
                };
                let id = self.py2_str(bytes);
                self.push(id);
            }
            op::BINSTRING => {
                let n = self.i32()?;
                let n = u64::try_from(n).map_err(|_| E::Malformed("negative BINSTRING length"))?;
                let b = self.take_len(n)?;
                let id = self.py2_str(Cow::Borrowed(b));
                self.push(id);
            }
            op::SHORT_BINSTRING => {
                let n = self.u8()?;
                let b = self.take(usize::from(n))?;
                let id = self.py2_str(Cow::Borrowed(b));
                self.push(id);
            }
            op::BINBYTES => {
                let n = self.u32()?;
                let b = self.take_len(u64::from(n))?;
                let id = self.new_blob(Cow::Borrowed(b), false);
                self.push(id);
            }
            op::SHORT_BINBYTES => {
                let n = self.u8()?;
                let b = self.take(usize::from(n))?;
                let id = self.new_blob(Cow::Borrowed(b), false);
                self.push(id);
            }
            op::BINBYTES8 | op::BYTEARRAY8 => {
                let n = self.u64()?;
                let b = self.take_len(n)?;
                let id = self.new_blob(Cow::Borrowed(b), false);
                self.push(id);
            }
            op::NEXT_BUFFER => return Err(E::OutOfBandBuffer),
            // Marks the top value read-only: nothing to do for a decoder.
            op::READONLY_BUFFER => {
                self.top()?;
            }

            // Containers.
            op::EMPTY_LIST => {
                let id = self.new_seq(&[], Node::List)?;
                self.push(id);
            }
            op::EMPTY_TUPLE => {
                let id = self.new_seq(&[], Node::Tuple)?;
                self.push(id);
            }
            op::EMPTY_DICT => {
                let id = self.new_dict(Vec::new())?;
                self.push(id);
            }
            op::EMPTY_SET => {
                let id = self.new_seq(&[], Node::Set)?;
                self.push(id);
            }
            op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                let n = usize::from(opcode - op::TUPLE1) + 1;
                if self.stack.len() < self.base() + n {
                    return Err(E::StackUnderflow);
                }
                let id = self.seq_from_stack(self.stack.len() - n, Node::Tuple)?;
                self.push(id);
            }
            op::TUPLE | op::LIST | op::FROZENSET => {
                let m = self.pop_mark()?;
                let make: fn(u32) -> Node = match opcode {
                    op::TUPLE => Node::Tuple,
                    op::LIST => Node::List,
                    _ => Node::FrozenSet,
                };
                let id = self.seq_from_stack(m, make)?;
                self.push(id);
            }
            op::DICT => {
                let m = self.pop_mark()?;
                let flat = self.drain_from(m);
                if !flat.len().is_multiple_of(2) {
                    return Err(E::Malformed("odd number of items for DICT"));
                }
                let pairs = flat.chunks_exact(2).map(|kv| (kv[0], kv[1])).collect();
                let id = self.new_dict(pairs)?;
                self.push(id);
            }
            op::APPEND => {
                let v = self.pop()?;
                let target = self.top()?;
                self.stack.push(v);
                let from = self.stack.len() - 1;
                let r = self.extend(target, from, false);
                self.stack.truncate(from);
                r?;
            }
            op::APPENDS | op::ADDITEMS => {
                let m = self.pop_mark()?;
                let target = self.mark_target(m)?;
                let r = self.extend(target, m, opcode == op::ADDITEMS);
                self.stack.truncate(m);
                r?;
            }
            op::SETITEM => {
                if self.stack.len() < self.base() + 3 {
                    return Err(E::StackUnderflow);
                }
                let from = self.stack.len() - 2;
                let target = self.stack[from - 1];
                let r = self.set_items(target, from);
                self.stack.truncate(from);
                r?;
            }
            op::SETITEMS => {
                let m = self.pop_mark()?;
                let target = self.mark_target(m)?;
                let r = self.set_items(target, m);
                self.stack.truncate(m);
                r?;
            }

            // Memo.
            op::BINGET => {
                let i = self.u8()?;
                self.memo_get(u64::from(i))?;
            }
            op::LONG_BINGET => {
                let i = self.u32()?;
                self.memo_get(u64::from(i))?;
            }
            op::GET => {
                let i = text::parse_index(self.line()?).ok_or(E::Malformed("invalid GET index"))?;
                self.memo_get(i)?;
            }
            op::BINPUT => {
                let i = self.u8()?;
                self.memo_put(u64::from(i))?;
            }
            op::LONG_BINPUT => {
                let i = self.u32()?;
                self.memo_put(u64::from(i))?;
            }
            op::PUT => {
                let i = text::parse_index(self.line()?).ok_or(E::Malformed("invalid PUT index"))?;
                self.memo_put(i)?;
            }
            op::MEMOIZE => {
                let i = self.memo.count as u64;
                self.memo_put(i)?;
            }

            // Globals and object construction.
            op::GLOBAL => {
                let module = self.line_str()?;
                let name = self.line_str()?;
                let id = self.global(Cow::Borrowed(module), Cow::Borrowed(name))?;
                self.push(id);
            }
            op::STACK_GLOBAL => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(module), Some(name)) =
                    (self.str_of(module).cloned(), self.str_of(name).cloned())
                else {
                    return Err(E::Malformed("STACK_GLOBAL requires two strings"));
                };
                let id = self.global(module, name)?;
                self.push(id);
            }
            op::REDUCE => {
                let args = self.pop()?;
                let callable = self.pop()?;
                let id = self.call(callable, args, Call::Reduce)?;
                self.push(id);
            }
            op::NEWOBJ => {
                let args = self.pop()?;
                let cls = self.pop()?;
                let id = self.call(cls, args, Call::NewObj)?;
                self.push(id);
            }
            op::NEWOBJ_EX => {
                let _kwargs = self.pop()?;
                let args = self.pop()?;
                let cls = self.pop()?;
                let id = self.call(cls, args, Call::NewObj)?;
                self.push(id);
            }
            op::BUILD => {
                let state = self.pop()?;
                self.build(state);
            }
            op::INST => {
                let module = self.line_str()?;
                let name = self.line_str()?;
                let m = self.pop_mark()?;
                let items = self.drain_from(m);
                let args = self.new_seq(&items, Node::Tuple)?;
                let cls = self.global(Cow::Borrowed(module), Cow::Borrowed(name))?;
                let id = self.call(cls, args, Call::Reduce)?;
                self.push(id);
            }
            op::OBJ => {
                let m = self.pop_mark()?;
                let mut items = self.drain_from(m);
                if items.is_empty() {
                    return Err(E::StackUnderflow);
                }
                let cls = items.remove(0);
                let args = self.new_seq(&items, Node::Tuple)?;
                let id = self.call(cls, args, Call::Reduce)?;
                self.push(id);
            }
            op::EXT1 | op::EXT2 | op::EXT4 => {
                // Extension-registry codes name a global we cannot look up.
                let code = match opcode {
                    op::EXT1 => i64::from(self.u8()?),
                    op::EXT2 => i64::from(self.u16()?),
                    _ => i64::from(self.i32()?),
                };
                if code <= 0 {
                    return Err(E::Malformed("EXT code must be positive"));
                }
                let id = self.global(
                    Cow::Borrowed("copyreg._extension_registry"),
                    Cow::Owned(code.to_string()),
                )?;
                self.push(id);
            }
            op::PERSID => {
                self.line()?;
                return Err(E::PersistentId);
            }
            op::BINPERSID => return Err(E::PersistentId),
            _ => return Err(E::UnknownOpcode),
        }
        Ok(Flow::Continue)
    }
}
