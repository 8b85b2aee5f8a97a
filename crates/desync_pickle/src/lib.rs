//! `desync_pickle`: a pickle decoder for untrusted input that never panics.
//!
//! Role: decode the Python pickles torch's Flight Recorder (FR) writes (torch
//! C++ pickler, protocol 2) and the ones Python tools write (protocols 0-5)
//! into a read-only tree that callers walk through cheap [`Value`] views.
//!
//! Design and invariants:
//! - **Arena.** Every decoded value is one node in a `Vec`; containers hold
//!   node ids. The pickle memo holds node ids too, so a memoized value that is
//!   referenced again (FR references each shared stack-frame dict from many
//!   entries with BINGET) is the *same* node: nothing is ever cloned, and
//!   [`Value::id`] lets callers cache work per shared node.
//! - **Borrowing.** Strings and bytes point into the input when the pickle
//!   stores them verbatim (all binary opcodes); only text-protocol escapes,
//!   lossy UTF-8 repairs and a few reconstructed values own their data.
//! - **No panics, bounded work.** Every read is bounds-checked; a length field
//!   larger than the rest of the input fails with
//!   [`PickleErrorKind::UnexpectedEof`] before anything is allocated; memo
//!   indices cannot make the memo grow faster than the input; containers
//!   nested deeper than [`MAX_DEPTH`] fail with [`PickleErrorKind::TooDeep`]
//!   (decoding itself is iterative, the limit protects recursive consumers).
//!   Work is linear in the input size.
//! - **Globals never sink a file.** `GLOBAL`/`STACK_GLOBAL` + `REDUCE`/`NEWOBJ`/`BUILD`
//!   are not executed. The wrappers torch adds around plain data
//!   (`torch.jit._pickle.restore_type_tag`, `build_intlist`, ...) are
//!   unwrapped, a few builtins are rebuilt (`collections.OrderedDict` → dict,
//!   `torch.device` → string, `set`, `bytes`, ...), and anything else becomes
//!   [`Kind::Opaque`] with its module and name. Only external references
//!   (`PERSID`/`BINPERSID`, `NEXT_BUFFER`) are errors, because their value is not in
//!   the file at all.
//!
//! ```
//! let p = desync_pickle::parse(b"\x80\x02}q\x00X\x01\x00\x00\x00aK\x01s.").unwrap();
//! assert_eq!(p.root().get("a").and_then(|v| v.as_i64()), Some(1));
//! ```

mod error;
pub mod op;
mod text;
mod vm;

use std::borrow::Cow;
use std::fmt;

pub use error::{PickleError, PickleErrorKind};

/// Stable id of a node within one [`Pickle`]: equal ids mean the same
/// (possibly memoized and shared) value.
pub type NodeId = u32;

/// Containers nested deeper than this are rejected with
/// [`PickleErrorKind::TooDeep`]. FR dumps nest 5 levels deep.
///
/// The depth of a container is fixed when it is nested into another, which
/// is exact for everything picklers write (a container is complete before
/// its parent takes it). A hand-made pickle that mutates an already-nested
/// container (through the memo), or builds a cycle, can chain deeper: code
/// that follows arbitrary links should keep a visited set or an explicit
/// stack rather than recurse.
pub const MAX_DEPTH: u16 = 1000;

/// Decodes one pickle (up to its STOP opcode; trailing bytes are ignored, as
/// `pickle.loads` ignores them).
pub fn parse(bytes: &[u8]) -> Result<Pickle<'_>, PickleError> {
    vm::run(bytes)
}

/// A decoded pickle: owns the node arena and borrows the input bytes.
pub struct Pickle<'a> {
    pub(crate) nodes: Vec<Node>,
    pub(crate) strs: Vec<Cow<'a, str>>,
    pub(crate) blobs: Vec<Cow<'a, [u8]>>,
    pub(crate) seqs: Vec<Seq>,
    pub(crate) dicts: Vec<DictBody>,
    pub(crate) opaques: Vec<Opaque<'a>>,
    pub(crate) root: NodeId,
    pub(crate) lossy: usize,
    pub(crate) end: usize,
}

/// One arena slot. Payload-carrying variants index the side tables, which
/// keeps a node at 16 bytes (a 26 MB FR dump has millions of nodes).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    BigInt(u32),
    Str(u32),
    Bytes(u32),
    List(u32),
    Tuple(u32),
    Set(u32),
    FrozenSet(u32),
    Dict(u32),
    Opaque(u32),
}

/// How many elements a sequence keeps inline.
const INLINE: usize = 6;

/// Elements of a list, tuple, set or frozenset. Most containers in an FR
/// dump hold one to six items (sizes, dtypes, frames, the `process_group`
/// tuple), so those live inline: no heap allocation each.
pub(crate) enum Seq {
    Inline { len: u8, items: [NodeId; INLINE] },
    Heap(Vec<NodeId>),
}

impl Seq {
    pub(crate) fn from_slice(items: &[NodeId]) -> Self {
        if items.len() <= INLINE {
            let mut inline = [0; INLINE];
            inline[..items.len()].copy_from_slice(items);
            Seq::Inline { len: items.len() as u8, items: inline }
        } else {
            Seq::Heap(items.to_vec())
        }
    }

    pub(crate) fn as_slice(&self) -> &[NodeId] {
        match self {
            Seq::Inline { len, items } => &items[..usize::from(*len)],
            Seq::Heap(v) => v,
        }
    }

    pub(crate) fn extend(&mut self, more: &[NodeId]) {
        match self {
            Seq::Inline { len, items } => {
                let n = usize::from(*len);
                if n + more.len() <= INLINE {
                    items[n..n + more.len()].copy_from_slice(more);
                    *len = (n + more.len()) as u8;
                } else {
                    let mut v = Vec::with_capacity(n + more.len());
                    v.extend_from_slice(&items[..n]);
                    v.extend_from_slice(more);
                    *self = Seq::Heap(v);
                }
            }
            Seq::Heap(v) => v.extend_from_slice(more),
        }
    }
}

/// Key/value pairs of a dict in insertion order.
pub(crate) struct DictBody {
    pub(crate) pairs: Vec<(NodeId, NodeId)>,
}

/// A value the decoder does not rebuild: a global (class or function) or the
/// result of calling one.
pub(crate) struct Opaque<'a> {
    pub(crate) module: Cow<'a, str>,
    pub(crate) name: Cow<'a, str>,
    /// Arguments it was called with (a tuple), `None` for a bare global.
    pub(crate) args: Option<NodeId>,
    /// State passed by BUILD, if any.
    pub(crate) state: Option<NodeId>,
}

impl Pickle<'_> {
    /// The top-level value.
    pub fn root(&self) -> Value<'_> {
        Value { p: self, id: self.root }
    }

    /// Number of nodes in the arena (every decoded value, memoized ones once).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The node with this id, e.g. one remembered from [`Value::id`].
    pub fn value(&self, id: NodeId) -> Option<Value<'_>> {
        ((id as usize) < self.nodes.len()).then_some(Value { p: self, id })
    }

    /// How many string values were not valid UTF-8 and were decoded with
    /// U+FFFD replacements (a C++ writer can emit raw non-UTF-8 file names;
    /// Python's `pickle.loads` would fail on them instead).
    pub fn lossy_string_count(&self) -> usize {
        self.lossy
    }

    /// Offset just past the STOP opcode (where trailing bytes, if any, start).
    pub fn end_offset(&self) -> usize {
        self.end
    }
}

impl fmt::Debug for Pickle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pickle")
            .field("node_count", &self.nodes.len())
            .field("root", &self.root())
            .finish()
    }
}

/// What a [`Value`] is. Containers carry no payload: walk them with
/// [`Value::iter`] / [`Value::items`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind<'p> {
    None,
    Bool(bool),
    /// Any integer that fits `i64`.
    Int(i64),
    /// An integer outside `i64`: little-endian two's complement bytes.
    BigInt(&'p [u8]),
    Float(f64),
    Str(&'p str),
    /// `bytes` or `bytearray`.
    Bytes(&'p [u8]),
    List,
    Tuple,
    /// `set` or `frozenset` (see [`Value::is_frozenset`]).
    Set,
    /// `dict` (also `collections.OrderedDict`).
    Dict,
    /// A global or the result of calling one that the decoder does not
    /// rebuild; see [`Value::opaque_args`] / [`Value::opaque_state`].
    Opaque {
        module: &'p str,
        name: &'p str,
    },
}

/// A cheap, copyable view of one node of a [`Pickle`].
#[derive(Clone, Copy)]
pub struct Value<'p> {
    p: &'p Pickle<'p>,
    id: NodeId,
}

impl<'p> Value<'p> {
    fn node(&self) -> Node {
        self.p.nodes[self.id as usize]
    }

    fn at(&self, id: NodeId) -> Value<'p> {
        Value { p: self.p, id }
    }

    fn seq_items(&self) -> &'p [NodeId] {
        match self.node() {
            Node::List(i) | Node::Tuple(i) | Node::Set(i) | Node::FrozenSet(i) => {
                self.p.seqs[i as usize].as_slice()
            }
            _ => &[],
        }
    }

    fn dict_pairs(&self) -> &'p [(NodeId, NodeId)] {
        match self.node() {
            Node::Dict(i) => &self.p.dicts[i as usize].pairs,
            _ => &[],
        }
    }

    /// Stable per node: a memoized value referenced many times has one id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    pub fn kind(&self) -> Kind<'p> {
        let p = self.p;
        match self.node() {
            Node::None => Kind::None,
            Node::Bool(b) => Kind::Bool(b),
            Node::Int(i) => Kind::Int(i),
            Node::Float(x) => Kind::Float(x),
            Node::BigInt(i) => Kind::BigInt(&p.blobs[i as usize]),
            Node::Str(i) => Kind::Str(&p.strs[i as usize]),
            Node::Bytes(i) => Kind::Bytes(&p.blobs[i as usize]),
            Node::List(_) => Kind::List,
            Node::Tuple(_) => Kind::Tuple,
            Node::Set(_) | Node::FrozenSet(_) => Kind::Set,
            Node::Dict(_) => Kind::Dict,
            Node::Opaque(i) => {
                let o = &p.opaques[i as usize];
                Kind::Opaque { module: &o.module, name: &o.name }
            }
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self.node(), Node::None)
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.node() {
            Node::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// Integers only (not bools); a big integer only when it fits `i64`
    /// (the decoder already stores those as plain ints).
    pub fn as_i64(&self) -> Option<i64> {
        match self.node() {
            Node::Int(i) => Some(i),
            _ => None,
        }
    }

    /// A float, or an integer converted to float.
    pub fn as_f64(&self) -> Option<f64> {
        match self.node() {
            Node::Float(x) => Some(x),
            Node::Int(i) => Some(i as f64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&'p str> {
        match self.node() {
            Node::Str(i) => Some(&self.p.strs[i as usize]),
            _ => None,
        }
    }

    /// `bytes`/`bytearray` payload.
    pub fn as_bytes(&self) -> Option<&'p [u8]> {
        match self.node() {
            Node::Bytes(i) => Some(&self.p.blobs[i as usize]),
            _ => None,
        }
    }

    /// Dict lookup by string key (linear scan). With a repeated key (only a
    /// hand-made pickle has one) the last value wins, as in Python.
    pub fn get(&self, key: &str) -> Option<Value<'p>> {
        let strs = &self.p.strs;
        let nodes = &self.p.nodes;
        self.dict_pairs()
            .iter()
            .rev()
            .find(|(k, _)| matches!(nodes[*k as usize], Node::Str(s) if strs[s as usize] == key))
            .map(|&(_, v)| self.at(v))
    }

    /// Dict pairs in insertion order; empty for non-dicts. A hand-made pickle
    /// can repeat a key; the pairs are then all yielded.
    pub fn items(&self) -> impl Iterator<Item = (Value<'p>, Value<'p>)> + use<'p> {
        let p = self.p;
        self.dict_pairs().iter().map(move |&(k, v)| (Value { p, id: k }, Value { p, id: v }))
    }

    /// Elements of a list, tuple, set or frozenset; empty otherwise.
    pub fn iter(&self) -> impl Iterator<Item = Value<'p>> + use<'p> {
        let p = self.p;
        self.seq_items().iter().map(move |&id| Value { p, id })
    }

    /// Element `i` of a list/tuple/set.
    pub fn index(&self, i: usize) -> Option<Value<'p>> {
        self.seq_items().get(i).map(|&id| self.at(id))
    }

    /// Number of elements (list/tuple/set) or pairs (dict); 0 otherwise.
    pub fn len(&self) -> usize {
        match self.node() {
            Node::Dict(_) => self.dict_pairs().len(),
            _ => self.seq_items().len(),
        }
    }

    /// `len() == 0`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_frozenset(&self) -> bool {
        matches!(self.node(), Node::FrozenSet(_))
    }

    /// For an [`Kind::Opaque`] call result: the argument tuple.
    pub fn opaque_args(&self) -> Option<Value<'p>> {
        match self.node() {
            Node::Opaque(i) => self.p.opaques[i as usize].args.map(|a| self.at(a)),
            _ => None,
        }
    }

    /// For an [`Kind::Opaque`] object: the state BUILD gave it.
    pub fn opaque_state(&self) -> Option<Value<'p>> {
        match self.node() {
            Node::Opaque(i) => self.p.opaques[i as usize].state.map(|a| self.at(a)),
            _ => None,
        }
    }
}

/// Recursion limit for `Debug` output (values can be cyclic).
const DEBUG_DEPTH: u32 = 24;

struct DebugAt<'p>(Value<'p>, u32);

impl fmt::Debug for DebugAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DebugAt(v, depth) = *self;
        let container = matches!(v.kind(), Kind::List | Kind::Tuple | Kind::Set | Kind::Dict);
        if container && depth >= DEBUG_DEPTH {
            return f.write_str("…");
        }
        match v.kind() {
            Kind::None => f.write_str("None"),
            Kind::Bool(b) => write!(f, "{b}"),
            Kind::Int(i) => write!(f, "{i}"),
            Kind::BigInt(b) => write!(f, "BigInt({b:02x?})"),
            Kind::Float(x) => write!(f, "{x:?}"),
            Kind::Str(s) => write!(f, "{s:?}"),
            Kind::Bytes(b) => write!(f, "b\"{}\"", b.escape_ascii()),
            Kind::List => f.debug_list().entries(v.iter().map(|c| DebugAt(c, depth + 1))).finish(),
            Kind::Tuple if v.is_empty() => f.write_str("()"),
            Kind::Tuple => {
                let mut t = f.debug_tuple("");
                for c in v.iter() {
                    t.field(&DebugAt(c, depth + 1));
                }
                t.finish()
            }
            Kind::Set => f.debug_set().entries(v.iter().map(|c| DebugAt(c, depth + 1))).finish(),
            Kind::Dict => f
                .debug_map()
                .entries(v.items().map(|(k, x)| (DebugAt(k, depth + 1), DebugAt(x, depth + 1))))
                .finish(),
            Kind::Opaque { module, name } => write!(f, "<{module}.{name}>"),
        }
    }
}

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        DebugAt(*self, 0).fmt(f)
    }
}
