//! The two sides' Python stacks in the user's code, and where they part.
//!
//! A stack is read outermost first and cut to the user's frames (library frames are known by
//! where their files live, [`crate::model::Frame::is_library`]). Two stacks either part in a
//! shared function at different lines (the construct between those lines decided), or one of
//! them goes on into user code the other never reached from the same line: a hook only some
//! ranks run, called by library code (Lightning calls `on_validation_epoch_end`), or the frames
//! of a loop one side is still in while the other has left it. Frames that only one side has
//! are that side's *extension*; the constructs guarding them are candidates too.

use crate::model::{Entry, Frame};

/// One side's user stack, outermost first, with whether each frame's caller is the user frame
/// just before it (no library code in between: parameters can be followed outward).
#[derive(Debug, Clone)]
pub(crate) struct UserStack<'t> {
    pub frames: Vec<&'t Frame>,
    /// `direct[i]`: frame `i` was called straight from frame `i - 1` (false for `i == 0`).
    pub direct: Vec<bool>,
    /// `dispatched[i]`: frame `i` was called from frame `i - 1` straight or through nothing
    /// but the library's call dispatch (`nn.Module.__call__`, an autograd Function's `apply`:
    /// the knowledge table's `call_dispatch`).
    pub dispatched: Vec<bool>,
}

impl<'t> UserStack<'t> {
    pub(crate) fn of(entry: &'t Entry) -> UserStack<'t> {
        match entry.stack() {
            Some(stack) => Self::of_frames(stack),
            None => UserStack { frames: Vec::new(), direct: Vec::new(), dispatched: Vec::new() },
        }
    }

    /// The user stack of frames given innermost first (an FR stack, a thread of a stacks
    /// file).
    pub(crate) fn of_frames(stack: &'t [Frame]) -> UserStack<'t> {
        // Innermost first: walk them outermost first.
        let mut frames = Vec::new();
        let mut direct = Vec::new();
        let mut dispatched = Vec::new();
        let mut previous_was_user = false;
        let mut only_dispatch_since = false;
        let table = desync_python::knowledge::knowledge();
        for f in stack.iter().rev() {
            if f.is_library() {
                previous_was_user = false;
                only_dispatch_since &= table.dispatches_call(&f.file, &f.function);
                continue;
            }
            direct.push(previous_was_user && !frames.is_empty());
            dispatched.push(only_dispatch_since && !frames.is_empty());
            frames.push(f);
            previous_was_user = true;
            only_dispatch_since = true;
        }
        UserStack { frames, direct, dispatched }
    }

    /// The user frames that called frame `i`, innermost first, as long as each call was
    /// direct: parameters of frame `i`'s function can be followed into them.
    pub(crate) fn direct_callers(&self, i: usize) -> Vec<&'t Frame> {
        let mut out = Vec::new();
        let mut j = i;
        while j > 0 && self.direct[j] {
            out.push(self.frames[j - 1]);
            j -= 1;
        }
        out
    }
}

/// Where two user stacks part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parting {
    /// Both are in the same function (frame `index` of each) at different lines.
    Lines { index: usize, departed_line: u32, reference_line: u32 },
    /// They agree on frames `..common` and then go on differently (or one of them stops).
    Extension { common: usize },
}

pub(crate) fn part(departed: &UserStack<'_>, reference: &UserStack<'_>) -> Parting {
    let mut common = 0;
    for (a, b) in departed.frames.iter().zip(&reference.frames) {
        if a.file != b.file || a.function != b.function {
            break;
        }
        if a.line != b.line {
            return Parting::Lines { index: common, departed_line: a.line, reference_line: b.line };
        }
        common += 1;
    }
    Parting::Extension { common }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{Call, Op};

    /// An entry whose stack holds `frames`, outermost first.
    pub(crate) fn entry(frames: &[(&str, &str, u32)]) -> Entry {
        // Innermost first, as Flight Recorder writes them.
        let stack: Vec<Frame> = frames
            .iter()
            .rev()
            .map(|(f, file, line)| Frame::new(Arc::from(*f), Arc::from(*file), *line))
            .collect();
        let call = Call {
            op: Arc::new(Op::parse("gloo:all_reduce", &mut |s| Arc::from(s))),
            pg_id: 0,
            pg_name: Arc::from("0"),
            pg_desc: Arc::from(""),
            input_sizes: Arc::from(Vec::new()),
            output_sizes: Arc::from(Vec::new()),
            input_dtypes: Arc::from(Vec::new()),
            output_dtypes: Arc::from(Vec::new()),
            is_p2p: false,
            timeout_ms: None,
            stack: Some(Arc::from(stack)),
        };
        let head = crate::model::Head {
            record_id: 0,
            collective_seq_id: 1,
            p2p_seq_id: 0,
            op_id: 0,
            call: Arc::new(call),
            state: crate::model::State::Scheduled,
            retired: false,
            clock_high: crate::model::ClockHigh::default(),
        };
        Entry::new(head, crate::model::Clocks::default())
    }

    const LIB: &str = "/venv/lib/python3.11/site-packages/lightning/pytorch/trainer/call.py";
    const C10D: &str = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py";

    #[test]
    fn a_hook_only_one_side_runs_is_an_extension() {
        let rank0 = entry(&[
            ("main", "/job/train.py", 40),
            ("_call_lightning_module_hook", LIB, 177),
            ("on_validation_epoch_end", "/job/model.py", 31),
            ("all_gather", C10D, 3000),
        ]);
        let others = entry(&[
            ("main", "/job/train.py", 40),
            ("_call_lightning_module_hook", LIB, 99),
            ("all_reduce", C10D, 2800),
        ]);
        let (a, b) = (UserStack::of(&rank0), UserStack::of(&others));
        assert_eq!(a.frames.len(), 2);
        assert_eq!(a.direct, [false, false], "the hook is called by Lightning, not by main");
        assert_eq!(part(&a, &b), Parting::Extension { common: 1 });
    }

    /// `model(x)` runs `forward` under `nn.Module.__call__`: the user frames around the
    /// module's dispatch frames are caller and callee; around a framework's loop they are not.
    #[test]
    fn frames_called_through_the_call_dispatch_only_are_marked() {
        const MODULE: &str = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py";
        let stack = entry(&[
            ("main", "/job/train.py", 40),
            ("fit", LIB, 12),
            ("step", "/job/loop.py", 9),
            ("_wrapped_call_impl", MODULE, 1779),
            ("_call_impl", MODULE, 1790),
            ("forward", "/job/model.py", 31),
            ("all_gather", C10D, 3000),
        ]);
        let user = UserStack::of(&stack);
        assert_eq!(user.frames.len(), 3);
        assert_eq!(user.direct, [false, false, false]);
        assert_eq!(user.dispatched, [false, false, true]);
    }

    #[test]
    fn lines_of_a_shared_function() {
        let a = entry(&[("main", "/job/train.py", 37), ("barrier", C10D, 1)]);
        let b =
            entry(&[("main", "/job/train.py", 26), ("helper", "/job/train.py", 5), ("x", C10D, 1)]);
        let (a, b) = (UserStack::of(&a), UserStack::of(&b));
        assert_eq!(
            part(&a, &b),
            Parting::Lines { index: 0, departed_line: 37, reference_line: 26 }
        );
        assert_eq!(b.direct, [false, true]);
        assert_eq!(b.direct_callers(1).len(), 1);
    }
}
