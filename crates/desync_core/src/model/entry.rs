//! One Flight Recorder entry: a collective or p2p operation as one rank recorded it.

use std::num::NonZeroI64;
use std::sync::Arc;

use super::Op;

/// Tensor shapes, one inner list per tensor (a 0-dim tensor is `[]`).
pub type Sizes = Arc<[Vec<i64>]>;

/// A Python stack, innermost frame first (FR's order).
pub type Stack = Arc<[Frame]>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: Arc<str>,
    pub file: Arc<str>,
    pub line: u32,
    /// [`Frame::is_library`], decided once per distinct frame: the four substring searches
    /// per frame of every entry were 8 % of the CPU at 4,096 ranks. Private so it cannot
    /// disagree with `file`.
    library: bool,
}

impl Frame {
    pub fn new(function: Arc<str>, file: Arc<str>, line: u32) -> Self {
        let library = is_library_file(&file);
        Self { function, file, line, library }
    }

    /// Library code: frames whose file lives where installed packages and the interpreter's
    /// own modules live (see [`is_library_file`]). The user's code is everything else; a
    /// collective issued inside a library is shown at the innermost user frame that led to it.
    pub fn is_library(&self) -> bool {
        self.library
    }

    /// The installed package the frame's file belongs to (`pytorch_lightning`), `torch` in a
    /// torch source tree, the file's name for the user's code.
    pub fn package(&self) -> &str {
        package_of(&self.file)
    }

    /// The same frame, with its library/user decision overridden (`--library`/`--user-code`).
    #[must_use]
    pub fn with_library(mut self, library: bool) -> Self {
        self.library = library;
        self
    }
}

/// Whether a frame's file is library code, by where it lives: under `site-packages` or
/// `dist-packages` (every pip, conda and Debian install), in the interpreter's standard library
/// (`…/lib/python3.11/…`, `…/lib64/python3.X/…`), or not a file at all (`<frozen …>`,
/// `<string>`). A source checkout of torch or a framework is found by the loader instead, from
/// the innermost frame of each stack (which is always torch's own code).
pub fn is_library_file(f: &str) -> bool {
    if f.starts_with('<') {
        return true;
    }
    let mut previous = "";
    for segment in f.split(['/', '\\']) {
        if segment == "site-packages" || segment == "dist-packages" {
            return true;
        }
        if (previous == "lib" || previous == "lib64") && is_python_dir(segment) {
            return true;
        }
        previous = segment;
    }
    false
}

/// See [`Entry::library_path`]; `stack` is innermost first.
fn library_path(stack: &[Frame]) -> Option<String> {
    let user = stack.iter().position(|f| !f.is_library())?;
    let below = &stack[..user];
    if below.iter().all(|f| is_collective_wrapper(&f.file)) {
        return None;
    }
    let name = |f: &Frame| format!("{} {}", package_of(&f.file), f.function);
    let (outer, inner) = (&below[below.len() - 1], &below[0]);
    Some(match below.len() {
        1 => name(outer),
        2 => format!("{} → {}", name(outer), name(inner)),
        _ => format!("{} → … → {}", name(outer), name(inner)),
    })
}

/// torch.distributed's Python entry points themselves (`dist.all_reduce` runs through
/// `distributed_c10d.py` and the `c10d_logger.py` decorator): a user call of the API, not a
/// library path worth showing.
fn is_collective_wrapper(file: &str) -> bool {
    let file = file.replace('\\', "/");
    ["torch/distributed/distributed_c10d.py", "torch/distributed/c10d_logger.py"]
        .iter()
        .any(|suffix| file.ends_with(suffix))
}

/// The installed package a library file belongs to (`pytorch_lightning` for
/// `.../site-packages/pytorch_lightning/trainer/trainer.py`), torch for a torch source tree, the
/// module for the standard library, the file name otherwise.
fn package_of(file: &str) -> &str {
    // Without collecting the segments: every entry's call path asks for its frames' packages.
    let segments = || file.split(['/', '\\']);
    let next_of = |i: usize| segments().nth(i + 1).map(|s| s.trim_end_matches(".py"));
    if let Some(i) = segments().position(|s| matches!(s, "site-packages" | "dist-packages")) {
        return next_of(i).unwrap_or(file);
    }
    let mut previous = "";
    for (i, segment) in segments().enumerate() {
        if segment == "torch" {
            return "torch";
        }
        if i > 0 && is_python_dir(segment) && matches!(previous, "lib" | "lib64") {
            return next_of(i).unwrap_or(file);
        }
        previous = segment;
    }
    segments().next_back().map_or(file, |s| s.trim_end_matches(".py"))
}

/// `python3.11`, `python3.13t`, `python2.7`.
fn is_python_dir(segment: &str) -> bool {
    segment.strip_prefix("python").is_some_and(|v| {
        let mut parts = v.trim_end_matches(['t', 'd', 'm']).splitn(2, '.');
        let major = parts.next().unwrap_or("");
        let minor = parts.next().unwrap_or("");
        !major.is_empty()
            && major.bytes().all(|b| b.is_ascii_digit())
            && !minor.is_empty()
            && minor.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Completion state as FR records it. Gloo and hook-recorded entries stay `Scheduled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Scheduled,
    Started,
    Completed,
    Unknown,
}

impl State {
    pub fn parse(s: &str) -> Self {
        match s {
            "scheduled" => Self::Scheduled,
            "started" => Self::Started,
            "completed" => Self::Completed,
            _ => Self::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Started => "started",
            Self::Completed => "completed",
            Self::Unknown => "unknown",
        }
    }
}

/// Dtype names, one per tensor ("Float", "`BFloat16`").
pub type Dtypes = Arc<[Arc<str>]>;

/// What an entry called, on which group, with which tensors, from where: everything that
/// repeats from one entry of a rank to the next. Interned per file (load/intern.rs), so an
/// [`Entry`] holds one thin pointer to it instead of ten (16,384 ranks x 2,000 entries is 32M
/// entries; each pointer here would cost 250 MB there).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Call {
    /// Shared by every call of the same `profiling_name` in a file.
    pub op: Arc<Op>,
    /// Process-local group uid; not comparable across ranks.
    pub pg_id: i64,
    pub pg_name: Arc<str>,
    pub pg_desc: Arc<str>,
    pub input_sizes: Sizes,
    pub output_sizes: Sizes,
    pub input_dtypes: Dtypes,
    pub output_dtypes: Dtypes,
    pub is_p2p: bool,
    pub timeout_ms: Option<u32>,
    /// `None` when the dump carries no frames (JSON dumps never do).
    pub stack: Option<Stack>,
}

impl Call {
    /// How many values this call stands for once every shared part is written out: itself,
    /// its frames, its shapes with their dimensions and its dtypes. Reports write these per
    /// entry, so the loader bounds their sum per file (load/limits.rs).
    pub fn expanded_size(&self) -> u64 {
        let shapes = |s: &Sizes| s.iter().map(|shape| 1 + shape.len() as u64).sum::<u64>();
        1 + self.stack.as_ref().map_or(0, |s| s.len() as u64)
            + shapes(&self.input_sizes)
            + shapes(&self.output_sizes)
            + (self.input_dtypes.len() + self.output_dtypes.len()) as u64
    }
}

/// What one entry says that every rank running the same stream says too: the ids, the call,
/// the state. Ranks of one job issue the same collectives in the same order, so the loader
/// shares one `Head` between all ranks whose entry at that place is equal (load/intern.rs,
/// `Streams`): memory grows with distinct streams, not with ranks. Only the clock readings
/// ([`Entry`]'s own fields) are kept per rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Per-process ring-buffer id (all process groups of the rank share the counter).
    pub record_id: u64,
    /// Per-group counter, starting at 1; p2p entries carry the current value unchanged.
    pub collective_seq_id: u64,
    pub p2p_seq_id: u64,
    pub op_id: u64,
    pub call: Arc<Call>,
    pub state: State,
    pub retired: bool,
    /// The high halves of the clocks of every rank sharing this head ([`ClockHigh`]).
    pub clock_high: ClockHigh,
}

/// One entry's clock readings, whole, as the dump wrote them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Clocks {
    pub created_ns: i64,
    /// `None` when never discovered: FR writes 0 (JSON) or nothing (pickle) then, and no real
    /// clock reads 0.
    pub started_ns: Option<NonZeroI64>,
    pub completed_ns: Option<NonZeroI64>,
    /// FR measures it as a C++ `float` (`std::optional<float> duration_`), so `f32` holds every
    /// value a real dump has exactly; the pickle's double is only that float widened.
    pub duration_ms: Option<f32>,
}

/// The part of an entry's clocks that ranks running the same stream share: which readings
/// exist, and the high 32 bits of the creation time (a 4.3 s window) and of the gaps from
/// creation to start and to completion. It lives in the shared [`Head`] (ranks whose high
/// halves differ get heads of their own), so each rank keeps only four 32-bit low halves
/// ([`Entry`]): 16 bytes of clocks instead of 32, every value exact, with no escape table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockHigh {
    created: i32,
    started: Option<i32>,
    completed: Option<i32>,
    duration: bool,
}

/// The per-rank low halves of [`Clocks`] (see [`ClockHigh`]); the duration is the f32's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClockLow {
    created: u32,
    started: u32,
    completed: u32,
    duration: u32,
}

impl Clocks {
    /// Splits the readings into the shared and the per-rank halves; [`Clocks::join`] gives
    /// back exactly these values (wrapping arithmetic is a bijection on `i64`).
    pub(crate) fn split(self) -> (ClockHigh, ClockLow) {
        let halves = |v: i64| ((v >> 32) as i32, v as u32);
        let gap = |t: Option<NonZeroI64>| t.map(|t| halves(t.get().wrapping_sub(self.created_ns)));
        let (created_hi, created_lo) = halves(self.created_ns);
        let started = gap(self.started_ns);
        let completed = gap(self.completed_ns);
        let high = ClockHigh {
            created: created_hi,
            started: started.map(|(hi, _)| hi),
            completed: completed.map(|(hi, _)| hi),
            duration: self.duration_ms.is_some(),
        };
        let low = ClockLow {
            created: created_lo,
            started: started.map_or(0, |(_, lo)| lo),
            completed: completed.map_or(0, |(_, lo)| lo),
            duration: self.duration_ms.map_or(0, f32::to_bits),
        };
        (high, low)
    }

    fn join(high: ClockHigh, low: ClockLow) -> Self {
        let whole = |hi: i32, lo: u32| (i64::from(hi) << 32) | i64::from(lo);
        let created_ns = whole(high.created, low.created);
        // A gap joined back gives the original nonzero reading, so `new` never fails here.
        let at = |hi: Option<i32>, lo: u32| {
            hi.and_then(|hi| NonZeroI64::new(created_ns.wrapping_add(whole(hi, lo))))
        };
        Self {
            created_ns,
            started_ns: at(high.started, low.started),
            completed_ns: at(high.completed, low.completed),
            duration_ms: high.duration.then(|| f32::from_bits(low.duration)),
        }
    }
}

/// One rank's entry: its shared [`Head`] and the low halves of the times only this rank
/// measured ([`ClockHigh`]). Reads of the head's fields go through `Deref` (`entry.record_id`,
/// `entry.call`), and every clock through [`Entry::clocks`] and its shorthands, so every stage
/// reads an entry as one record whatever is shared underneath.
#[derive(Debug, Clone)]
pub struct Entry {
    pub head: Arc<Head>,
    low: ClockLow,
}

impl std::ops::Deref for Entry {
    type Target = Head;

    fn deref(&self) -> &Head {
        &self.head
    }
}

impl Entry {
    /// An entry of `head` (whose `clock_high` is replaced by `clocks`' own) read at `clocks`.
    pub fn new(mut head: Head, clocks: Clocks) -> Self {
        let (high, low) = clocks.split();
        head.clock_high = high;
        Self { head: Arc::new(head), low }
    }

    /// An entry of a shared head; `low` must come from the same [`Clocks::split`] as the
    /// head's `clock_high`.
    pub(crate) fn from_parts(head: Arc<Head>, low: ClockLow) -> Self {
        Self { head, low }
    }

    /// The clock readings, whole: the head's high halves joined with this rank's low ones.
    pub fn clocks(&self) -> Clocks {
        Clocks::join(self.head.clock_high, self.low)
    }

    pub fn created_ns(&self) -> i64 {
        self.clocks().created_ns
    }

    pub fn duration_ms(&self) -> Option<f32> {
        self.clocks().duration_ms
    }

    /// The same entry with another call (a stack attached or reclassified after loading); the
    /// head is copied, so the ranks sharing the old one keep it.
    pub fn set_call(&mut self, call: Arc<Call>) {
        Arc::make_mut(&mut self.head).call = call;
    }
}

impl Entry {
    pub fn op(&self) -> &Op {
        &self.call.op
    }

    pub fn pg_id(&self) -> i64 {
        self.call.pg_id
    }

    pub fn pg_name(&self) -> &Arc<str> {
        &self.call.pg_name
    }

    pub fn pg_desc(&self) -> &Arc<str> {
        &self.call.pg_desc
    }

    pub fn input_sizes(&self) -> &Sizes {
        &self.call.input_sizes
    }

    pub fn output_sizes(&self) -> &Sizes {
        &self.call.output_sizes
    }

    pub fn input_dtypes(&self) -> &Dtypes {
        &self.call.input_dtypes
    }

    pub fn output_dtypes(&self) -> &Dtypes {
        &self.call.output_dtypes
    }

    pub fn is_p2p(&self) -> bool {
        self.call.is_p2p
    }

    pub fn timeout_ms(&self) -> Option<u32> {
        self.call.timeout_ms
    }

    pub fn stack(&self) -> Option<&Stack> {
        self.call.stack.as_ref()
    }

    pub fn started_ns(&self) -> Option<i64> {
        self.clocks().started_ns.map(NonZeroI64::get)
    }

    pub fn completed_ns(&self) -> Option<i64> {
        self.clocks().completed_ns.map(NonZeroI64::get)
    }

    /// The innermost frame outside torch: where the user's code called the collective.
    pub fn call_site(&self) -> Option<&Frame> {
        self.stack()?.iter().find(|f| !f.is_library())
    }

    /// The library frames between the user's call site and the collective, compacted for a
    /// line of output: `pytorch_lightning fit → … → torch broadcast`. `None` when the stack has
    /// no user frame, or when the user called the collective API itself (every library frame
    /// lies in torch.distributed's own wrappers): the op already says what ran.
    pub fn library_path(&self) -> Option<String> {
        library_path(self.stack()?)
    }

    /// The user part of the stack, innermost first.
    /// The frames above the innermost package's own (torch's, for every collective): the
    /// path by which the user's code, and the frameworks it called, reached the collective.
    pub fn call_path(&self) -> &[Frame] {
        let Some(stack) = self.stack() else { return &[] };
        let Some(inner) = stack.first() else { return &[] };
        let package = package_of(&inner.file);
        let own = stack.iter().take_while(|f| package_of(&f.file) == package).count();
        &stack[own..]
    }

    pub fn user_frames(&self) -> impl Iterator<Item = &Frame> {
        self.stack().map_or(&[][..], |s| &s[..]).iter().filter(|f| !f.is_library())
    }

    /// Whether the dump says this collective finished on this rank.
    pub fn is_completed(&self) -> bool {
        self.state == State::Completed
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroI64;

    use super::{Frame, library_path};

    fn frame(file: &str, function: &str) -> Frame {
        Frame::new(function.into(), file.into(), 1)
    }

    #[test]
    fn the_library_path_below_the_user_frame_is_compacted() {
        let sp = "/venv/lib/python3.11/site-packages";
        let lightning = [
            frame(&format!("{sp}/torch/distributed/distributed_c10d.py"), "broadcast"),
            frame(&format!("{sp}/lightning_fabric/utilities/distributed.py"), "_sync"),
            frame(&format!("{sp}/pytorch_lightning/trainer/trainer.py"), "fit"),
            frame("/job/train.py", "main"),
        ];
        assert_eq!(
            library_path(&lightning).as_deref(),
            Some("pytorch_lightning fit → … → torch broadcast")
        );
        let direct = [
            frame(&format!("{sp}/torch/distributed/c10d_logger.py"), "wrapper"),
            frame(&format!("{sp}/torch/distributed/distributed_c10d.py"), "all_reduce"),
            frame("/job/train.py", "main"),
        ];
        assert_eq!(library_path(&direct), None, "a direct call of the API needs no path");
        let stdlib = [frame("/usr/lib/python3.11/threading.py", "run"), frame("/job/a.py", "f")];
        assert_eq!(library_path(&stdlib).as_deref(), Some("threading run"));
        assert_eq!(library_path(&lightning[..3]), None, "no user frame, no call site");
    }

    #[test]
    fn library_files_are_known_by_where_they_live() {
        for f in [
            "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py",
            "/usr/lib/python3/dist-packages/numpy/core.py",
            "/usr/lib/python3.11/threading.py",
            "/root/.pyenv/versions/3.11.7/lib/python3.11/contextlib.py",
            "/opt/conda/lib64/python3.13t/functools.py",
            "<frozen importlib._bootstrap>",
            "C:\\Python311\\Lib\\site-packages\\torch\\x.py",
        ] {
            assert!(super::is_library_file(f), "{f}");
        }
        for f in [
            "/workspace/trainer/train.py",
            "/tmp/desync-jobs/early_stop/train.py",
            "/home/me/lib/python_utils/x.py",
            "/srv/lib/pythonic/x.py",
            "train.py",
        ] {
            assert!(!super::is_library_file(f), "{f}");
        }
    }

    /// Entries dominate memory (93% of the peak at 4,096 ranks when they were 232 bytes,
    /// BENCHMARKS.md): 100,000 ranks x 2,000 entries is 200M of them, and every 4 bytes here
    /// is 800 MB there. 24 = the shared `Head` pointer and the four 32-bit low halves of the
    /// clocks; the ids, the call, the state, the retired flag and the clocks' high halves
    /// live in the head, shared between ranks. Growing this struct is a decision, not an
    /// accident.
    #[test]
    fn entry_stays_small() {
        let size = std::mem::size_of::<super::Entry>();
        assert!(size <= 24, "Entry grew to {size} bytes");
    }

    fn clocks(created: i64, started: Option<i64>, completed: Option<i64>) -> super::Clocks {
        super::Clocks {
            created_ns: created,
            started_ns: started.and_then(NonZeroI64::new),
            completed_ns: completed.and_then(NonZeroI64::new),
            duration_ms: None,
        }
    }

    /// Every reading comes back exact, whether its gap fits the rank's 32 bits or needs the
    /// head's high half: a 40 s queue before the start, a collective that ran an hour, a start
    /// before creation (clocks stepped back), the extremes of `i64`.
    #[test]
    fn clocks_come_back_exact_across_32_bit_gaps() {
        let now = 1_764_000_000_123_456_789_i64;
        let hour = 3_600_000_000_000_i64;
        let cases = [
            clocks(now, Some(now + 1_000), Some(now + 2_000)),
            clocks(now, Some(now + 40_000_000_000), Some(now + hour)),
            clocks(now, Some(now - 5), None),
            clocks(now, None, Some(now + i64::from(u32::MAX) + 1)),
            clocks(0, None, None),
            clocks(-7, Some(i64::MAX), Some(i64::MIN)),
            clocks(i64::MAX, Some(i64::MIN + 1), Some(1)),
            super::Clocks { duration_ms: Some(12.5), ..clocks(now, Some(now + 3), None) },
            super::Clocks {
                duration_ms: Some(f32::from_bits(0x7fc0_0001)),
                ..clocks(now, None, None)
            },
        ];
        for c in cases {
            let (high, low) = c.split();
            let back = super::Clocks::join(high, low);
            assert_eq!(
                (back.created_ns, back.started_ns, back.completed_ns),
                (c.created_ns, c.started_ns, c.completed_ns),
                "{c:?}"
            );
            assert_eq!(back.duration_ms.map(f32::to_bits), c.duration_ms.map(f32::to_bits));
        }
        // Gaps that fit 32 bits share the head's high half; a gap past 4.3 s does not.
        let (short, _) = clocks(now, Some(now + 1_000), None).split();
        let (other_rank, _) = clocks(now + 700, Some(now + 2_500), None).split();
        let (long, _) = clocks(now, Some(now + 40_000_000_000), None).split();
        assert_eq!(short, other_rank);
        assert_ne!(short, long);
    }
}
