//! Decode errors.
//!
//! Role: say *where* (byte offset of the failing opcode) and *what* went
//! wrong, so a caller can report "rank 7: truncated at byte 1234 (BINUNICODE)"
//! and a watcher can tell an incomplete file (`UnexpectedEof`) from a corrupt
//! one. Invariant: `offset` is always the offset of the opcode byte being
//! executed (or the input length when the input ends between opcodes), never
//! a position inside its argument; `opcode` is `None` only in the latter case.

use std::fmt;

/// A failed decode: where, which opcode, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PickleError {
    /// Byte offset of the opcode that failed (or of the end of input).
    pub offset: usize,
    /// The opcode byte being executed, if any.
    pub opcode: Option<u8>,
    /// What went wrong.
    pub kind: PickleErrorKind,
}

/// Why a decode failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickleErrorKind {
    /// The input ended inside an opcode's argument or before STOP. A file that
    /// is still being written looks like this.
    UnexpectedEof,
    /// A byte that is not an opcode of protocols 0-5.
    UnknownOpcode,
    /// An opcode needed more values than the stack (above the last MARK) holds.
    StackUnderflow,
    /// An opcode that collects items up to a MARK found none.
    NoMark,
    /// A GET for a memo slot that was never PUT.
    BadMemoRef,
    /// A GLOBAL/INST module or name line is not UTF-8. (String *values* with
    /// invalid UTF-8 are decoded lossily instead; see
    /// [`crate::Pickle::lossy_string_count`].)
    InvalidUtf8,
    /// PERSID/BINPERSID: the pickle refers to objects stored outside it
    /// (e.g. tensor storages in a `torch.save` archive).
    PersistentId,
    /// `NEXT_BUFFER`: the pickle refers to out-of-band buffers (protocol 5).
    OutOfBandBuffer,
    /// Containers nested deeper than [`crate::MAX_DEPTH`].
    TooDeep,
    /// The input is too large for 32-bit node ids (over 4 GiB).
    InputTooLarge,
    /// Structurally invalid input; the text says which rule was broken.
    Malformed(&'static str),
}

impl PickleError {
    pub(crate) fn new(offset: usize, opcode: Option<u8>, kind: PickleErrorKind) -> Self {
        PickleError { offset, opcode, kind }
    }
}

impl fmt::Display for PickleErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PickleErrorKind::UnexpectedEof => f.write_str("unexpected end of input"),
            PickleErrorKind::UnknownOpcode => f.write_str("unknown opcode"),
            PickleErrorKind::StackUnderflow => f.write_str("stack underflow"),
            PickleErrorKind::NoMark => f.write_str("no MARK on the stack"),
            PickleErrorKind::BadMemoRef => f.write_str("reference to an unset memo slot"),
            PickleErrorKind::InvalidUtf8 => f.write_str("invalid UTF-8"),
            PickleErrorKind::PersistentId => {
                f.write_str("persistent id (external object reference) is not supported")
            }
            PickleErrorKind::OutOfBandBuffer => {
                f.write_str("out-of-band buffer (protocol 5) is not supported")
            }
            PickleErrorKind::TooDeep => write!(f, "nesting deeper than {}", crate::MAX_DEPTH),
            PickleErrorKind::InputTooLarge => f.write_str("input larger than 4 GiB"),
            PickleErrorKind::Malformed(why) => write!(f, "malformed pickle: {why}"),
        }
    }
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.kind, self.offset)?;
        if let Some(op) = self.opcode {
            match crate::op::name(op) {
                Some(name) => write!(f, " (opcode {name})")?,
                // Not the byte itself: an error must not quote a foreign file's content.
                None => f.write_str(" (not an opcode)")?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for PickleError {}
