//! The record reader: a dict of known keys read straight from the opcode stream.
//!
//! Role: a torch C++ pickler entry is `EMPTY_DICT MARK` and a run of `key value` pairs ending
//! in `SETITEMS`, each key a `BINGET` of a memoized string. The generic machine pushes every
//! key and value on its stack, makes a node per number, then copies the pairs into a dict
//! that the caller walks again comparing key texts. Here the pairs go to a small stack of
//! their own with numbers kept in place, each key is found by its memo node (the keys come in
//! the same order entry after entry, so the previous record's key at the same position is
//! tried first), and the values land in the record's slots by key position.
//!
//! Invariant (exactness): the reader only takes opcodes whose effect it reproduces exactly,
//! and it checks every condition under which the generic machine would fail *before*
//! consuming the opcode. On anything else it stops and hands its state over
//! ([`Vm::hand_over`]): the record's MARK and every item it holds (numbers made nodes now) go
//! onto the generic stack, and the generic machine goes on from the opcode the reader did not
//! take: the pickle decodes to the same values, and fails with the same error at the same
//! offset, as with [`crate::parse`]. Only node ids (which callers use as identities, never
//! as positions) may differ.

use crate::vm::Vm;
use crate::{MAX_DEPTH, Node, NodeId, Pickle, Value, op};

/// One slot of a record, or one item on the reader's stack (never `Absent` there).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slot {
    Absent,
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Node(NodeId),
}

impl Slot {
    pub(crate) fn field<'p>(self, p: &'p Pickle<'p>) -> Option<crate::Field<'p>> {
        use crate::Field;
        Some(match self {
            Slot::Absent => return None,
            Slot::None => Field::None,
            Slot::Bool(b) => Field::Bool(b),
            Slot::Int(i) => Field::Int(i),
            Slot::Float(x) => Field::Float(x),
            Slot::Node(id) => Field::Value(Value { p, id }),
        })
    }
}

pub(crate) struct RecordBody {
    /// Key/value pairs the dict had.
    pub(crate) pairs: u32,
}

/// What the reader did with one opcode.
enum Step {
    /// Taken; go on.
    Go,
    /// Not taken (the input is where it was): the generic machine executes it.
    Refuse,
    /// Taken, but the dict is not a record: hand over after it.
    HandOver,
    /// The closing SETITEMS: the record is complete.
    Done,
}

/// The reader's state between opcodes; its buffers are reused from one dict to the next.
#[derive(Default)]
pub(crate) struct Reader {
    /// The keys a record may have (their position is the slot).
    pub(crate) keys: Vec<Box<str>>,
    /// Items above the record's MARK, as the generic stack would hold them.
    items: Vec<Slot>,
    /// Marks inside the record (positions in `items`), for nested lists and dicts.
    marks: Vec<usize>,
    /// Slot of each key node seen so far (`None`: not a key of the records).
    known: Vec<(NodeId, Option<u8>)>,
    /// The previous record's key node and slot at each pair position.
    guess: Vec<(NodeId, Option<u8>)>,
    /// Reused list of node ids for the container helpers.
    scratch: Vec<NodeId>,
}

impl Vm<'_> {
    /// Called with the input at the MARK after the EMPTY_DICT that made `dict` (which is on
    /// the generic stack). Returns with the record complete, or with the state handed over.
    pub(crate) fn read_record(&mut self, dict: NodeId) {
        let mut r = std::mem::take(&mut self.reader);
        r.items.clear();
        r.marks.clear();
        self.pos += 1;
        let complete = loop {
            let start = self.pos;
            let Some(&opcode) = self.input.get(start) else { break false };
            self.pos += 1;
            match self.record_step(&mut r, opcode, dict) {
                Step::Go => {}
                Step::Refuse => {
                    self.pos = start;
                    break false;
                }
                Step::HandOver => break false,
                Step::Done => break true,
            }
        };
        if !complete {
            self.hand_over(&r);
        }
        self.reader = r;
    }

    /// The generic stack the generic machine would hold at this point (see the module
    /// comment).
    fn hand_over(&mut self, r: &Reader) {
        self.marks.push(self.stack.len());
        let mut marks = r.marks.iter().peekable();
        for (i, &item) in r.items.iter().enumerate() {
            while marks.next_if(|&&m| m == i).is_some() {
                self.marks.push(self.stack.len());
            }
            let id = self.node_of(item);
            self.stack.push(id);
        }
        for _ in marks {
            self.marks.push(self.stack.len());
        }
    }

    /// The node for an item, made now for a number kept in place.
    fn node_of(&mut self, item: Slot) -> NodeId {
        match item {
            Slot::Node(id) => id,
            Slot::Int(v) => self.node(Node::Int(v)),
            Slot::Float(x) => self.node(Node::Float(x)),
            Slot::Bool(b) => self.node(Node::Bool(b)),
            Slot::None | Slot::Absent => self.node(Node::None),
        }
    }

    /// The items from `from` on as nodes (numbers made nodes in place), into `r.scratch`.
    fn nodes_from(&mut self, r: &mut Reader, from: usize) {
        r.scratch.clear();
        for i in from..r.items.len() {
            let id = self.node_of(r.items[i]);
            r.items[i] = Slot::Node(id);
            r.scratch.push(id);
        }
    }

    #[allow(clippy::too_many_lines)]
    fn record_step(&mut self, r: &mut Reader, opcode: u8, dict: NodeId) -> Step {
        let base = r.marks.last().copied().unwrap_or(0);
        let item = match opcode {
            op::BININT1 => match self.u8() {
                Ok(v) => Slot::Int(i64::from(v)),
                Err(_) => return Step::Refuse,
            },
            op::BININT2 => match self.u16() {
                Ok(v) => Slot::Int(i64::from(v)),
                Err(_) => return Step::Refuse,
            },
            op::BININT => match self.i32() {
                Ok(v) => Slot::Int(i64::from(v)),
                Err(_) => return Step::Refuse,
            },
            op::LONG1 => {
                let Ok(n) = self.u8() else { return Step::Refuse };
                let Ok(bytes) = self.take(usize::from(n)) else { return Step::Refuse };
                match crate::text::le_to_i64(bytes) {
                    Some(v) => Slot::Int(v),
                    None => return Step::Refuse,
                }
            }
            op::BINFLOAT => match self.take_array() {
                Ok(b) => Slot::Float(f64::from_be_bytes(b)),
                Err(_) => return Step::Refuse,
            },
            op::NEWTRUE => Slot::Bool(true),
            op::NEWFALSE => Slot::Bool(false),
            op::NONE => Slot::None,
            op::BINGET | op::LONG_BINGET => {
                let idx = if opcode == op::BINGET {
                    self.u8().map(u64::from)
                } else {
                    self.u32().map(u64::from)
                };
                match idx.ok().and_then(|i| self.memo.get(i)) {
                    Some(id) => Slot::Node(id),
                    None => return Step::Refuse,
                }
            }
            op::SHORT_BINUNICODE | op::BINUNICODE => {
                let n = if opcode == op::SHORT_BINUNICODE {
                    self.u8().map(u64::from)
                } else {
                    self.u32().map(u64::from)
                };
                let Some(bytes) = n.ok().and_then(|n| self.take_len(n).ok()) else {
                    return Step::Refuse;
                };
                Slot::Node(self.utf8_value(bytes))
            }
            op::BINPUT | op::LONG_BINPUT => {
                if r.items.len() <= base {
                    return Step::Refuse;
                }
                let idx = if opcode == op::BINPUT {
                    self.u8().map(u64::from)
                } else {
                    self.u32().map(u64::from)
                };
                let Ok(idx) = idx else { return Step::Refuse };
                self.nodes_from(r, r.items.len() - 1);
                self.memo.put(idx, r.scratch[0]);
                return Step::Go;
            }
            op::MARK => {
                r.marks.push(r.items.len());
                return Step::Go;
            }
            op::EMPTY_LIST => match self.new_seq(&[], Node::List) {
                Ok(id) => Slot::Node(id),
                Err(_) => return Step::Refuse,
            },
            op::EMPTY_TUPLE => match self.new_seq(&[], Node::Tuple) {
                Ok(id) => Slot::Node(id),
                Err(_) => return Step::Refuse,
            },
            op::EMPTY_DICT => match self.new_dict(Vec::new()) {
                Ok(id) => Slot::Node(id),
                Err(_) => return Step::Refuse,
            },
            op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                let n = usize::from(opcode - op::TUPLE1) + 1;
                if r.items.len() < base + n {
                    return Step::Refuse;
                }
                let from = r.items.len() - n;
                self.nodes_from(r, from);
                let Ok(id) = self.new_seq(&r.scratch, Node::Tuple) else { return Step::Refuse };
                r.items.truncate(from);
                Slot::Node(id)
            }
            op::APPENDS | op::SETITEMS if !r.marks.is_empty() => {
                // Filling a list or dict nested in the record: the target is the item just
                // below the mark, which must lie above the previous mark.
                let mark = base;
                let below = r.marks.len().checked_sub(2).map_or(0, |i| r.marks[i]);
                if mark == 0 || mark <= below {
                    return Step::Refuse;
                }
                let Slot::Node(target) = r.items[mark - 1] else { return Step::Refuse };
                let fits = match (self.arena.nodes[target as usize], opcode) {
                    (Node::List(_), op::APPENDS) => true,
                    (Node::Dict(_), _) => opcode == op::SETITEMS,
                    _ => false,
                };
                if !fits {
                    return Step::Refuse;
                }
                self.nodes_from(r, mark);
                let scratch = std::mem::take(&mut r.scratch);
                let filled = if opcode == op::APPENDS {
                    self.extend_with(target, &scratch, false)
                } else {
                    self.set_items_with(target, &scratch)
                };
                r.scratch = scratch;
                if filled.is_err() {
                    return Step::Refuse;
                }
                r.marks.pop();
                r.items.truncate(mark);
                return Step::Go;
            }
            op::SETITEMS => return self.finish_record(r, dict),
            _ => return Step::Refuse,
        };
        r.items.push(item);
        // The record's first key decides: a dict that starts with another key is no record
        // (a dump's top level, a process group's config) and is left to the generic machine.
        if r.marks.is_empty() && r.items.len() == 1 && self.key_slot(r, 0).is_none() {
            return Step::HandOver;
        }
        Step::Go
    }

    /// The slot of the record key at pair position `pair`, if it is one of the keys.
    fn key_slot(&mut self, r: &mut Reader, pair: usize) -> Option<u8> {
        let Some(&Slot::Node(key)) = r.items.get(2 * pair) else { return None };
        if let Some(&(id, slot)) = r.guess.get(pair)
            && id == key
        {
            return slot;
        }
        let slot = match r.known.iter().find(|(id, _)| *id == key) {
            Some(&(_, slot)) => slot,
            None => {
                let text = match self.arena.nodes[key as usize] {
                    Node::Str(i) => Some(&*self.arena.strs[i as usize]),
                    _ => None,
                };
                let slot = text.and_then(|t| r.keys.iter().position(|k| **k == *t));
                let slot = slot.and_then(|s| u8::try_from(s).ok());
                r.known.push((key, slot));
                slot
            }
        };
        if pair < r.guess.len() {
            r.guess[pair] = (key, slot);
        } else if pair == r.guess.len() {
            r.guess.push((key, slot));
        }
        slot
    }

    /// The closing SETITEMS of the record: its pairs into slots, unless one of the keys
    /// repeats or the depth is past the limit (then the generic machine executes this
    /// SETITEMS). A pair whose key is not one of the keys is counted and its value dropped
    /// (its node, if any, stays in the arena: the memo may refer to it).
    fn finish_record(&mut self, r: &mut Reader, dict: NodeId) -> Step {
        if r.items.len() % 2 != 0 {
            return Step::Refuse;
        }
        let width = r.keys.len();
        let start = self.arena.slots.len();
        self.arena.slots.resize(start + width, Slot::Absent);
        let mut deepest = 0;
        for pair in 0..r.items.len() / 2 {
            let slot = self.key_slot(r, pair).map(usize::from);
            let value = r.items[2 * pair + 1];
            match slot {
                Some(s) if matches!(self.arena.slots[start + s], Slot::Absent) => {
                    self.arena.slots[start + s] = value;
                }
                None => {}
                Some(_) => {
                    self.arena.slots.truncate(start);
                    return Step::Refuse;
                }
            }
            if let Slot::Node(id) = value {
                deepest = deepest.max(self.depths[id as usize]);
            }
        }
        if deepest >= MAX_DEPTH {
            self.arena.slots.truncate(start);
            return Step::Refuse;
        }
        let index = self.arena.records.len() as u32;
        let pairs = (r.items.len() / 2) as u32;
        self.arena.records.push(RecordBody { pairs });
        self.arena.nodes[dict as usize] = Node::Record(index);
        self.depths[dict as usize] = deepest + 1;
        Step::Done
    }
}
