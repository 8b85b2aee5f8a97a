//! Serializes one rank's dump: the torch pickle flavour and the JSON flavour.
//!
//! Role: walk a rank's simulated history twice (count, then write the ring
//! buffer's window) and write the exact key set and key order real dumps
//! have. Invariants:
//! - pickle (`FlightRecorder::dump`): top-level `version, pg_config,
//!   comm_lib_version, pg_status, entries`; `pg_config` sorted by
//!   `(name, desc)` (a `std::map` in C++), `pg_status` by numeric pg id;
//!   entry keys in `FlightRecorderDetail.hpp` insertion order, `frames` first
//!   and only when enabled, `duration_ms` only when computed; `None` for
//!   undiscovered times; each distinct frame dict written once and then
//!   referenced (memoized after its SETITEMS), the top-level dict memoized
//!   last;
//! - JSON (`dump_json`, nlohmann): every object's keys sorted as strings,
//!   no `frames`, `pg_status` values as strings, missing times as `0`,
//!   `process_group` as a 2-array, `nccl_comm_state: {}`, `entries` omitted
//!   when empty;
//! - memory: one rank's output buffer at a time; entries are written as they
//!   are simulated, never collected.

use std::fmt::Write as _;

use crate::pickler::Pickler;
use crate::plan::{Entry, PgStatus, Plan, RankClass, State};
use crate::spec::Format;

/// `thread_name` of the main Python thread in a torchrun job.
const THREAD_NAME: &str = "pt_main_thread";

struct Ctx<'a> {
    plan: &'a Plan,
    rank: u32,
    rc: Vec<RankClass>,
    status: Vec<PgStatus>,
    first_kept: u64,
    thread_id: String,
}

impl<'a> Ctx<'a> {
    fn new(plan: &'a Plan, rank: u32) -> Self {
        let rc = plan.rank_classes(rank);
        let mut total = 0u64;
        let status = plan.simulate(rank, &rc, |_| total += 1);
        let cap = u64::from(plan.spec.entries_per_rank);
        Ctx {
            plan,
            rank,
            rc,
            status,
            first_kept: total.saturating_sub(cap),
            thread_id: plan.thread_id(rank),
        }
    }

    /// `(name, desc, ranks)` sorted like the C++ `std::map` keyed by
    /// `(name, desc)`.
    fn pg_config(&self) -> Vec<(&str, &str, &str)> {
        let mut pgs: Vec<(&str, &str, &str)> = self
            .rc
            .iter()
            .zip(&self.plan.classes)
            .map(|(rc, c)| (rc.pg_name.as_str(), c.desc.as_str(), rc.ranks.as_str()))
            .collect();
        pgs.sort_unstable();
        pgs
    }

    fn entries(&self, mut f: impl FnMut(&Entry<'_>)) {
        let first = self.first_kept;
        let only_active = self.plan.spec.only_active;
        self.plan.simulate(self.rank, &self.rc, |e| {
            if e.record_id >= first && !(only_active && e.state == State::Completed) {
                f(e);
            }
        });
    }
}

/// The dump file of `rank` in `format` (`None` for a crashed rank).
pub(crate) fn render(plan: &Plan, rank: u32, format: Format) -> Option<Vec<u8>> {
    if !plan.has_dump(rank) {
        return None;
    }
    let ctx = Ctx::new(plan, rank);
    Some(match format {
        Format::Pickle => pickle(&ctx),
        Format::Json => json(&ctx),
    })
}

fn sizes(p: &mut Pickler, sizes: &[Vec<i64>]) {
    p.list_begin();
    for s in sizes {
        p.int_list(s);
    }
    p.list_end();
}

fn pickle(ctx: &Ctx<'_>) -> Vec<u8> {
    let plan = ctx.plan;
    let spec = &plan.spec;
    let per_entry = if spec.frames { 420 } else { 330 };
    let kept = u64::from(spec.entries_per_rank).min(plan.total_ops * 3) as usize;
    let mut p = Pickler::with_capacity(4096 + kept * per_entry);
    p.dict_begin();
    p.str("version");
    p.str(&spec.version);
    p.str("pg_config");
    p.dict_begin();
    for (name, desc, ranks) in ctx.pg_config() {
        p.str(name);
        p.dict_begin();
        p.str("name");
        p.str(name);
        p.str("desc");
        p.str(desc);
        p.str("ranks");
        p.str(ranks);
        p.dict_end();
    }
    p.dict_end();
    p.str("comm_lib_version");
    p.str(&spec.comm_lib_version);
    p.str("pg_status");
    p.dict_begin();
    for (class, st) in plan.classes.iter().zip(&ctx.status) {
        p.str(&class.pg_id.to_string());
        p.dict_begin();
        p.str("last_enqueued_collective");
        p.int(st.enqueued);
        p.str("last_started_collective");
        p.int(st.started);
        p.str("last_completed_collective");
        p.int(st.completed);
        p.dict_end();
    }
    p.dict_end();
    p.str("entries");
    p.list_begin();
    let mut frame_memo: Vec<Option<u32>> = vec![None; plan.frames.len()];
    ctx.entries(|e| {
        let rc = &ctx.rc[e.class];
        let class = &plan.classes[e.class];
        p.dict_begin();
        if spec.frames {
            p.str("frames");
            p.list_begin();
            for &f in &plan.callsites[e.callsite] {
                if let Some(id) = frame_memo[f] {
                    p.memo_get(id);
                } else {
                    let def = &plan.frames[f];
                    p.dict_begin();
                    p.str("name");
                    p.str(def.name);
                    p.str("filename");
                    p.str(def.file);
                    p.str("line");
                    p.int(i64::from(def.line));
                    p.dict_end();
                    frame_memo[f] = Some(p.memoize());
                }
            }
            p.list_end();
        }
        p.str("record_id");
        p.int(e.record_id as i64);
        p.str("pg_id");
        p.int(i64::from(class.pg_id));
        p.str("process_group");
        p.tuple_begin(2);
        p.str(&rc.pg_name);
        p.str(&class.desc);
        p.tuple_end(2);
        p.str("thread_name");
        p.str(THREAD_NAME);
        p.str("thread_id");
        p.str(&ctx.thread_id);
        p.str("collective_seq_id");
        p.int(e.collective_seq_id as i64);
        p.str("p2p_seq_id");
        p.int(e.p2p_seq_id as i64);
        p.str("op_id");
        p.int(e.op_id as i64);
        p.str("profiling_name");
        p.str(e.profiling_name);
        p.str("time_created_ns");
        p.int(e.time_created_ns);
        if let Some(d) = e.duration_ms {
            p.str("duration_ms");
            p.float(d);
        }
        p.str("input_sizes");
        sizes(&mut p, e.in_sizes);
        p.str("input_dtypes");
        p.str_list(e.dtypes);
        p.str("output_sizes");
        sizes(&mut p, e.out_sizes);
        p.str("output_dtypes");
        p.str_list(e.dtypes);
        p.str("state");
        p.str(e.state.as_str());
        p.str("time_discovered_started_ns");
        match e.started_ns {
            Some(t) => p.int(t),
            None => p.none(),
        }
        p.str("time_discovered_completed_ns");
        match e.completed_ns {
            Some(t) => p.int(t),
            None => p.none(),
        }
        p.str("retired");
        p.bool(e.retired);
        p.str("timeout_ms");
        p.int(spec.timeout_ms as i64);
        p.str("is_p2p");
        p.bool(e.is_p2p);
        p.dict_end();
    });
    p.list_end();
    p.dict_end();
    p.memoize();
    p.finish()
}

/// Minimal JSON writer with nlohmann's output conventions.
struct Json {
    out: String,
}

impl Json {
    fn str(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '\u{08}' => self.out.push_str("\\b"),
                '\u{0c}' => self.out.push_str("\\f"),
                c if u32::from(c) < 0x20 => {
                    let _ = write!(self.out, "\\u{:04x}", u32::from(c));
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    fn key(&mut self, first: &mut bool, k: &str) {
        if !*first {
            self.out.push(',');
        }
        *first = false;
        self.str(k);
        self.out.push(':');
    }

    fn int(&mut self, v: i64) {
        let _ = write!(self.out, "{v}");
    }

    /// Shortest round-trip digits; nlohmann keeps a `.0` on integral values.
    fn float(&mut self, v: f64) {
        let start = self.out.len();
        let _ = write!(self.out, "{v}");
        if !self.out[start..].contains(['.', 'e', 'n', 'i']) {
            self.out.push_str(".0");
        }
    }

    fn sizes(&mut self, sizes: &[Vec<i64>]) {
        self.out.push('[');
        for (i, s) in sizes.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push('[');
            for (j, v) in s.iter().enumerate() {
                if j > 0 {
                    self.out.push(',');
                }
                self.int(*v);
            }
            self.out.push(']');
        }
        self.out.push(']');
    }

    fn strs(&mut self, items: &[&str]) {
        self.out.push('[');
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.str(s);
        }
        self.out.push(']');
    }
}

fn json(ctx: &Ctx<'_>) -> Vec<u8> {
    let plan = ctx.plan;
    let spec = &plan.spec;
    let mut j = Json { out: String::with_capacity(4096 + spec.entries_per_rank as usize * 560) };
    let mut top = true;
    j.out.push('{');
    j.key(&mut top, "comm_lib_version");
    j.str(&spec.comm_lib_version);
    // Keys of an entry, sorted; written as one pass per entry.
    let mut any = false;
    ctx.entries(|e| {
        if any {
            j.out.push(',');
        } else {
            j.key(&mut top, "entries");
            j.out.push('[');
            any = true;
        }
        let rc = &ctx.rc[e.class];
        let class = &plan.classes[e.class];
        let mut first = true;
        j.out.push('{');
        j.key(&mut first, "collective_seq_id");
        j.int(e.collective_seq_id as i64);
        if let Some(d) = e.duration_ms {
            j.key(&mut first, "duration_ms");
            j.float(d);
        }
        j.key(&mut first, "input_dtypes");
        j.strs(e.dtypes);
        j.key(&mut first, "input_sizes");
        j.sizes(e.in_sizes);
        j.key(&mut first, "is_p2p");
        j.out.push_str(if e.is_p2p { "true" } else { "false" });
        j.key(&mut first, "op_id");
        j.int(e.op_id as i64);
        j.key(&mut first, "output_dtypes");
        j.strs(e.dtypes);
        j.key(&mut first, "output_sizes");
        j.sizes(e.out_sizes);
        j.key(&mut first, "p2p_seq_id");
        j.int(e.p2p_seq_id as i64);
        j.key(&mut first, "pg_id");
        j.int(i64::from(class.pg_id));
        j.key(&mut first, "process_group");
        j.out.push('[');
        j.str(&rc.pg_name);
        j.out.push(',');
        j.str(&class.desc);
        j.out.push(']');
        j.key(&mut first, "profiling_name");
        j.str(e.profiling_name);
        j.key(&mut first, "record_id");
        j.int(e.record_id as i64);
        j.key(&mut first, "retired");
        j.out.push_str(if e.retired { "true" } else { "false" });
        j.key(&mut first, "state");
        j.str(e.state.as_str());
        j.key(&mut first, "thread_id");
        j.str(&ctx.thread_id);
        j.key(&mut first, "thread_name");
        j.str(THREAD_NAME);
        j.key(&mut first, "time_created_ns");
        j.int(e.time_created_ns);
        j.key(&mut first, "time_discovered_completed_ns");
        j.int(e.completed_ns.unwrap_or(0));
        j.key(&mut first, "time_discovered_started_ns");
        j.int(e.started_ns.unwrap_or(0));
        j.key(&mut first, "timeout_ms");
        j.int(spec.timeout_ms as i64);
        j.out.push('}');
    });
    if any {
        j.out.push(']');
    }
    j.key(&mut top, "nccl_comm_state");
    j.out.push_str("{}");
    j.key(&mut top, "pg_config");
    j.out.push('{');
    let mut first = true;
    for (name, desc, ranks) in ctx.pg_config() {
        j.key(&mut first, name);
        let mut inner = true;
        j.out.push('{');
        j.key(&mut inner, "desc");
        j.str(desc);
        j.key(&mut inner, "name");
        j.str(name);
        j.key(&mut inner, "ranks");
        j.str(ranks);
        j.out.push('}');
    }
    j.out.push('}');
    j.key(&mut top, "pg_status");
    j.out.push('{');
    // JSON object keys sort as strings ("10" before "2").
    let mut status: Vec<(String, &PgStatus)> =
        plan.classes.iter().zip(&ctx.status).map(|(c, s)| (c.pg_id.to_string(), s)).collect();
    status.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut first = true;
    for (id, st) in status {
        j.key(&mut first, &id);
        let mut inner = true;
        j.out.push('{');
        for (k, v) in [
            ("last_completed_collective", st.completed),
            ("last_enqueued_collective", st.enqueued),
            ("last_started_collective", st.started),
        ] {
            j.key(&mut inner, k);
            j.str(&v.to_string());
        }
        j.out.push('}');
    }
    j.out.push('}');
    j.key(&mut top, "version");
    j.str(&spec.version);
    j.out.push('}');
    j.out.into_bytes()
}
