//! The tools' logic, free of any MCP types: a [`Session`] keeps loaded analyses by handle and
//! answers each tool with a JSON value (or an error message for the client). Everything cites
//! rank, process group, seq and `file:line` so an LLM can point a human at the evidence.
//!
//! The client is an AI agent that may have read attacker-controlled text, so every path it
//! names (`load_dumps`' `path`, `source_root` and `path_maps` targets, `lint` paths) must
//! resolve, after symlinks and `..`, inside a root the server's user allowed
//! ([`Session::new`]); source files are then read only inside the handle's roots, which lie
//! inside those.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use desync_core::bridge::{Resolver, SourceOptions};
use desync_core::model::{Entry, format_ranks};
use desync_core::{Analysis, Config, NoProgress};
use serde_json::{Value, json};

/// Arguments of `load_dumps`, already unwrapped from the request.
#[derive(Debug, Clone, Default)]
pub struct LoadArgs {
    pub path: String,
    pub prefix: Option<String>,
    pub source_root: Option<String>,
    pub path_maps: Vec<String>,
    pub world_size: Option<u32>,
    /// The job's logs (`--log`); without any, logs found inside `path` are read.
    pub logs: Vec<String>,
}

/// The most an answer may take, serialized: an agent reads every answer into its context, and
/// a 100,000-rank job must not answer with megabytes. Lists are paged and rank sets written as
/// ranges so that real answers stay well below it; [`bound_answer`] holds the line for the rest.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024;
/// Ranks an answer's rank array lists; the `_ranges` sibling holds the whole set.
const ANSWER_RANKS: usize = 64;
/// Characters of a `_ranges` text kept in an answer (a scattered set's ranges grow with it).
const ANSWER_RANGES_CHARS: usize = 512;
/// Items a paged list returns when the client names no `limit`, and the most it may ask for.
pub const DEFAULT_PAGE: usize = 20;
pub const MAX_PAGE: usize = 100;

/// Which slice of a list to return: `offset` items skipped, at most `limit` (capped at
/// [`MAX_PAGE`]) returned. Every paged answer says `total`, `offset` and `next_offset` (null
/// on the last page).
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub offset: usize,
    pub limit: usize,
}

impl Default for Page {
    fn default() -> Self {
        Self { offset: 0, limit: DEFAULT_PAGE }
    }
}

impl Page {
    pub fn new(offset: Option<usize>, limit: Option<usize>) -> Self {
        Self {
            offset: offset.unwrap_or(0),
            limit: limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE),
        }
    }

    /// The range of a `total`-long list this page covers.
    fn range(self, total: usize) -> std::ops::Range<usize> {
        let start = self.offset.min(total);
        start..(start + self.limit).min(total)
    }

    /// `total`, `offset` and `next_offset` for a page over a `total`-long list.
    fn fields(self, total: usize) -> Value {
        let r = self.range(total);
        json!({
            "total": total,
            "offset": r.start,
            "next_offset": if r.end < total { Some(r.end) } else { None },
        })
    }
}

/// Handles kept at once; loading one more drops the oldest.
pub const MAX_HANDLES: usize = 16;
/// Memory of the analyses kept at once (see `Loaded::cost`); past it, the oldest
/// handles are dropped until the new one fits.
pub const MAX_LOADED_BYTES: usize = 2 << 30;

/// One loaded job: its analysis, the full JSON report and the source options it was run with.
struct Loaded {
    analysis: Analysis,
    report: Value,
    sources: SourceOptions,
    /// What keeping it costs: the analysis (estimated from what it holds) and the report
    /// (measured).
    cost: usize,
}

/// What a process group costs in an analysis beyond its entries (its model, its alignment and
/// the slots that hold them), and what each member holding it adds (its stream, and in its
/// dump the group's `pg_config` and `pg_status` items and interned call). Measured: 100,000
/// groups of one collective on 4 ranks grow the server by about 640 MB per load (RSS before
/// and after), of which the report, measured by [`value_bytes`], is about 100 MB and the
/// entries about 50 MB.
const BYTES_PER_GROUP: usize = 1_100;
const BYTES_PER_MEMBER: usize = 1_100;

impl Loaded {
    /// What the analysis alone holds, roughly: each entry with its share of interned parts,
    /// each process group and each member's part of it, and a token per class and seq.
    fn analysis_bytes(analysis: &Analysis) -> usize {
        let entries: usize = analysis.trace.ranks.iter().map(|r| r.entries.len()).sum();
        let groups: usize = analysis
            .alignment
            .groups
            .iter()
            .map(|g| {
                BYTES_PER_GROUP
                    + g.streams.len() * BYTES_PER_MEMBER
                    + g.classes.len() * g.seqs.len() * 16
            })
            .sum();
        entries * 128 + groups
    }
}

/// Bytes a JSON value holds in memory, measured by walking it: every `Value` slot, the bytes
/// strings own, and per object entry its key and map node share.
fn value_bytes(value: &Value) -> usize {
    const SLOT: usize = std::mem::size_of::<Value>();
    match value {
        Value::String(s) => s.capacity(),
        Value::Array(items) => {
            items.capacity() * SLOT + items.iter().map(value_bytes).sum::<usize>()
        }
        Value::Object(map) => {
            map.iter().map(|(key, v)| key.capacity() + 24 + SLOT + value_bytes(v)).sum::<usize>()
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// The server's state: analyses keyed by handle ("h1", "h2", ...), oldest first, and the
/// directories the client may name. The default allows nothing.
#[derive(Default)]
pub struct Session {
    next: AtomicU64,
    loaded: Mutex<Vec<(String, Arc<Loaded>)>>,
    /// Canonical: what every path the client names must resolve inside.
    allowed: Vec<PathBuf>,
}

type ToolResult = Result<Value, String>;

impl Session {
    /// A session whose client may name paths inside `allowed_roots` only (the server's
    /// `--allow-root` directories; a root that does not exist allows nothing).
    pub fn new(allowed_roots: impl IntoIterator<Item = PathBuf>) -> Session {
        let allowed =
            allowed_roots.into_iter().filter_map(|r| std::fs::canonicalize(r).ok()).collect();
        Session { allowed, ..Session::default() }
    }

    /// `path` resolved (symlinks and `..`), when that lies inside an allowed root; `what`
    /// names the argument in the error.
    fn allowed(&self, what: &str, path: &Path) -> Result<PathBuf, String> {
        let real =
            std::fs::canonicalize(path).map_err(|e| format!("{what} {}: {e}", path.display()))?;
        if self.allowed.iter().any(|root| real.starts_with(root)) {
            return Ok(real);
        }
        let roots = if self.allowed.is_empty() {
            "none: start the server with --allow-root DIR".to_owned()
        } else {
            self.allowed.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        };
        Err(format!(
            "{what} {}: outside the directories this server allows (allowed: {roots})",
            path.display()
        ))
    }

    fn get(&self, handle: &str) -> Result<Arc<Loaded>, String> {
        let list = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        list.iter().find(|(h, _)| h == handle).map(|(_, l)| l.clone()).ok_or_else(|| {
            let known: Vec<&str> = list.iter().map(|(h, _)| h.as_str()).collect();
            format!(
                "unknown handle {handle:?} (known: {}); call load_dumps first (handles are kept until released, at most {MAX_HANDLES} and about {} MiB, the oldest dropped first)",
                if known.is_empty() { "none".to_owned() } else { known.join(", ") },
                MAX_LOADED_BYTES >> 20
            )
        })
    }

    /// Keeps `loaded` under a new handle, dropping the oldest handles past the bounds.
    fn keep(&self, loaded: Loaded) -> (String, Vec<String>) {
        let handle = format!("h{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let mut list = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut dropped = Vec::new();
        let mut total: usize = list.iter().map(|(_, l)| l.cost).sum::<usize>() + loaded.cost;
        while !list.is_empty() && (list.len() >= MAX_HANDLES || total > MAX_LOADED_BYTES) {
            let (old, l) = list.remove(0);
            total -= l.cost;
            dropped.push(old);
        }
        list.push((handle.clone(), Arc::new(loaded)));
        (handle, dropped)
    }

    /// `release`: forgets a handle and the memory its analysis holds.
    pub fn release(&self, handle: &str) -> ToolResult {
        let mut list = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(at) = list.iter().position(|(h, _)| h == handle) else {
            drop(list);
            return Err(self.get(handle).err().unwrap_or_default());
        };
        list.remove(at);
        let left: Vec<&str> = list.iter().map(|(h, _)| h.as_str()).collect();
        Ok(json!({ "released": handle, "handles": left }))
    }

    /// `load_dumps`: runs the whole analysis and stores it under a new handle.
    pub fn load(&self, args: &LoadArgs) -> ToolResult {
        let path_maps = args
            .path_maps
            .iter()
            .map(|m| SourceOptions::parse_path_map(m))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let source_root = args.source_root.as_ref().map(PathBuf::from);
        if let Some(root) = &source_root {
            if !root.is_dir() {
                return Err(desync_core::Error::SourceRoot(root.clone()).to_string());
            }
            self.allowed("source_root", root)?;
        }
        for (_, to) in &path_maps {
            self.allowed("path_maps target", to)?;
        }
        let input = PathBuf::from(&args.path);
        if !input.exists() {
            return Err(format!("{}: no such file or directory", input.display()));
        }
        self.allowed("path", &input)?;
        let mut logs = Vec::with_capacity(args.logs.len());
        for log in &args.logs {
            let path = PathBuf::from(log);
            if !path.is_file() {
                return Err(format!("{}: no such file", path.display()));
            }
            self.allowed("logs", &path)?;
            logs.push(path);
        }
        // Sources are read only under the roots given here; with none, not at all.
        let config = Config {
            input,
            load: desync_core::load::LoadOptions {
                prefix: args.prefix.clone(),
                world_size: args.world_size,
                ..Default::default()
            },
            sources: SourceOptions { path_maps, source_root, ..SourceOptions::default() },
            logs,
            logs_beside: true,
        };
        let analysis = desync_core::analyze(&config, &NoProgress).map_err(|e| e.to_string())?;
        let cost = Loaded::analysis_bytes(&analysis);
        if cost > MAX_LOADED_BYTES {
            return Err(format!(
                "the analysis of {} would take about {} MiB to keep, past this server's {} MiB \
                 budget; run `desync analyze --format json` on it instead, or `desync summarize` \
                 where the dumps are",
                args.path,
                cost >> 20,
                MAX_LOADED_BYTES >> 20
            ));
        }
        let report = serde_json::to_value(desync_core::report::to_json(&analysis))
            .map_err(|e| format!("could not serialize the report: {e}"))?;
        let cost = cost + value_bytes(&report);
        let trace = &analysis.trace;
        let loaded: Vec<u32> = trace.ranks.iter().map(|r| r.rank).collect();
        let mut summary = json!({
            "world_size": trace.world_size,
            "process_groups": trace.process_groups.iter().take(DEFAULT_PAGE).map(pg_json).collect::<Vec<_>>(),
            "process_groups_total": trace.process_groups.len(),
            "warnings_count": trace.warnings.len(),
            "verdict_category": analysis.diagnosis.category.as_str(),
            "headline": analysis.diagnosis.headline,
        });
        rank_fields(&mut summary, "ranks_loaded", &loaded);
        rank_fields(&mut summary, "missing_ranks", &trace.missing_ranks);
        if trace.process_groups.len() > DEFAULT_PAGE {
            summary["process_groups_note"] = json!(format!(
                "the first {DEFAULT_PAGE} of {} process groups; call process_groups for the rest",
                trace.process_groups.len()
            ));
        }
        let (handle, dropped) =
            self.keep(Loaded { sources: config.sources, analysis, report, cost });
        eprintln!("desync mcp: loaded {} as {handle}", args.path);
        let mut answer = json!({ "handle": handle, "summary": summary });
        if !dropped.is_empty() {
            answer["dropped_handles"] = json!(dropped);
        }
        Ok(answer)
    }

    /// `verdict`: the report's verdict and evidence (plus where the job is stuck).
    pub fn verdict(&self, handle: &str) -> ToolResult {
        let l = self.get(handle)?;
        let mut answer = json!({
            "verdict": l.report["verdict"],
            "evidence": l.report["evidence"],
            "earliest_mismatch": l.report["earliest_mismatch"],
            "stuck_at": l.report["stuck_at"],
            "next_steps": l.report["next_steps"],
            "where_ranks_are": l.report["where_ranks_are"],
            "log": l.report["log"],
        });
        shorten_rank_sets(&mut answer);
        Ok(answer)
    }

    /// `groups`: one page of the report's behavioural groups.
    pub fn groups(&self, handle: &str, page: Page) -> ToolResult {
        let l = self.get(handle)?;
        let all = l.report["groups"].as_array().map_or(&[][..], Vec::as_slice);
        let mut answer = page.fields(all.len());
        answer["groups"] = json!(all[page.range(all.len())]);
        shorten_rank_sets(&mut answer);
        Ok(answer)
    }

    /// `process_groups`: one page of the job's process groups, with their members as ranges,
    /// how many stream classes each has and its mismatches.
    pub fn process_groups(&self, handle: &str, page: Page) -> ToolResult {
        let l = self.get(handle)?;
        let a = &l.analysis;
        let all = &a.alignment.groups;
        let mut answer = page.fields(all.len());
        answer["process_groups"] = all[page.range(all.len())]
            .iter()
            .map(|g| {
                let mut v = pg_json(&a.trace.process_groups[g.pg]);
                v["window_start"] = json!(g.window_start);
                v["stream_classes"] = json!(g.classes.len());
                v["mismatches"] = json!(g.mismatches.len());
                v["p2p_mismatches"] = json!(g.p2p_mismatches.len());
                v
            })
            .collect();
        Ok(answer)
    }

    /// `rank_entries`: the last `last` entries of one rank (at most [`MAX_PAGE`]), optionally of
    /// one process group, the newest `before` ones skipped (to page back through the history).
    pub fn rank_entries(
        &self,
        handle: &str,
        rank: u32,
        process_group: Option<&str>,
        last: usize,
        before: usize,
    ) -> ToolResult {
        let l = self.get(handle)?;
        let trace = &l.analysis.trace;
        let dump = trace.rank(rank).ok_or_else(|| {
            format!(
                "rank {rank} was not loaded (loaded: {})",
                format_ranks(&trace.ranks.iter().map(|r| r.rank).collect::<Vec<_>>())
            )
        })?;
        if let Some(pg) = process_group
            && trace.process_group(pg).is_none()
        {
            return Err(unknown_pg(&l.analysis, pg));
        }
        let matching: Vec<&Entry> = dump
            .entries
            .iter()
            .filter(|e| process_group.is_none_or(|pg| **e.pg_name() == *pg))
            .collect();
        let end = matching.len().saturating_sub(before);
        let start = end.saturating_sub(last.clamp(1, MAX_PAGE));
        Ok(json!({
            "rank": rank,
            "file": dump.path.to_string_lossy(),
            "process_group": process_group,
            "total": matching.len(),
            "before": matching.len() - end,
            // What to pass as `before` for the page of older entries (null: none left).
            "next_before": (start > 0).then_some(matching.len() - start),
            "entries": matching[start..end].iter().map(|e| entry_json(e)).collect::<Vec<_>>(),
        }))
    }

    /// `collective`: one (pg, seq) across the group's ranks, grouped by what each issued.
    pub fn collective(&self, handle: &str, process_group: &str, seq: u64) -> ToolResult {
        let l = self.get(handle)?;
        let trace = &l.analysis.trace;
        let pg = trace
            .process_group(process_group)
            .ok_or_else(|| unknown_pg(&l.analysis, process_group))?;
        // (what was issued, ranks) in first-seen order.
        let mut sides: Vec<(Value, Vec<u32>)> = Vec::new();
        let mut missing = Vec::new();
        let mut last_seq: Vec<(u32, Option<u64>)> = Vec::new();
        for &rank in &pg.members {
            let Some(dump) = trace.rank(rank) else {
                missing.push(rank);
                continue;
            };
            let in_pg =
                || dump.entries.iter().filter(|e| **e.pg_name() == *process_group && !e.is_p2p());
            if let Some(e) = in_pg().find(|e| e.collective_seq_id == seq) {
                let mut issued = entry_json(e);
                if let Value::Object(m) = &mut issued {
                    m.remove("record_id");
                    m.remove("seq");
                    m.remove("pg");
                }
                match sides.iter_mut().find(|(v, _)| *v == issued) {
                    Some((_, ranks)) => ranks.push(rank),
                    None => sides.push((issued, vec![rank])),
                }
            } else {
                missing.push(rank);
                last_seq.push((rank, in_pg().map(|e| e.collective_seq_id).max()));
            }
        }
        let sides_total = sides.len();
        let sides: Vec<Value> = sides
            .into_iter()
            .take(MAX_SIDES)
            .map(|(issued, ranks)| {
                let mut v = json!({});
                rank_text(&mut v, "ranks", &ranks);
                rank_array(&mut v, "rank_list", &ranks);
                if let (Value::Object(m), Value::Object(rest)) = (&mut v, issued) {
                    m.extend(rest);
                }
                v
            })
            .collect();
        // Ranks that never issued it, grouped by the last seq they did reach in the group.
        let mut by_last: Vec<(Option<u64>, Vec<u32>)> = Vec::new();
        for (rank, last) in last_seq {
            match by_last.iter_mut().find(|(l, _)| *l == last) {
                Some((_, ranks)) => ranks.push(rank),
                None => by_last.push((last, vec![rank])),
            }
        }
        let not_issued_total = by_last.len();
        let not_issued: Vec<Value> = by_last
            .into_iter()
            .take(MAX_SIDES)
            .map(|(last, ranks)| {
                let mut v = json!({ "last_seq_in_pg": last, "count": ranks.len() });
                rank_text(&mut v, "ranks", &ranks);
                v
            })
            .collect();
        let mismatch = l.report["mismatches"].as_array().and_then(|ms| {
            ms.iter()
                .find(|m| {
                    m["process_group"]["name"] == process_group && m["collective_seq_id"] == seq
                })
                .cloned()
        });
        let mut answer = json!({
            "process_group": pg_json(pg),
            "seq": seq,
            "consistent": sides_total == 1 && missing.is_empty(),
            "sides": sides,
            "sides_total": sides_total,
            "not_issued": not_issued,
            "not_issued_total": not_issued_total,
            "mismatch": mismatch,
        });
        rank_text(&mut answer, "missing_ranks", &missing);
        shorten_rank_sets(&mut answer);
        Ok(answer)
    }

    /// `compare_stacks`: the diverging stacks, the branch point and the explanation.
    pub fn compare_stacks(&self, handle: &str) -> ToolResult {
        let l = self.get(handle)?;
        let code = &l.report["code"];
        if code.is_null() {
            return Ok(json!({
                "code": null,
                "note": format!(
                    "no code finding: verdict is {} (healthy jobs have no branch point; otherwise pass source_root/path_maps to load_dumps)",
                    l.analysis.diagnosis.category.as_str()
                ),
            }));
        }
        let mut answer = json!({
            "branch": code["branch"],
            "explanation": code["explanation"],
            "stacks": code["stacks"],
            "snippet": code["snippet"],
            "not_found": code.get("not_found"),
        });
        shorten_rank_sets(&mut answer);
        Ok(answer)
    }

    /// `source`: lines around `file:line`, found through the handle's source options. Only
    /// files inside the roots given to `load_dumps` (its `source_root` and `path_maps`
    /// targets, symlinks and `..` resolved) are read; without a handle, none.
    pub fn source(&self, handle: Option<&str>, file: &str, line: u32, context: u32) -> ToolResult {
        let Some(handle) = handle else {
            return Err(format!(
                "{file}: not read: pass the handle of a load_dumps call with source_root or path_maps; no file outside those roots is ever read"
            ));
        };
        let loaded = self.get(handle)?;
        let resolver = Resolver::new(&loaded.sources);
        let resolved = resolver.resolve(file);
        let Some(path) = resolved.local_path else {
            return Err(format!(
                "{file}: not found under the handle's roots (tried: {})",
                resolved.tried.join(", ")
            ));
        };
        let text = resolver
            .read_local(&path)
            .map_err(|problem| format!("{file}: {}", problem.describe()))?;
        let lines: Vec<&str> = text.lines().collect();
        if line == 0 || line as usize > lines.len() {
            return Err(format!(
                "{}:{line}: line out of range (file has {} lines)",
                path.display(),
                lines.len()
            ));
        }
        let first = line.saturating_sub(context).max(1);
        let last = line.saturating_add(context).min(lines.len() as u32);
        Ok(json!({
            "file": file,
            "local_path": path.to_string_lossy(),
            "line": line,
            "start_line": first,
            "lines": (first..=last).map(|n| json!({
                "line": n,
                "text": lines[n as usize - 1],
                "marked": n == line,
            })).collect::<Vec<_>>(),
        }))
    }

    /// `probes_diff`: the unified diff of confirming probes, relative to the working directory.
    /// Only `*.py` files inside the handle's roots (inside the allowed ones) are read and
    /// patched.
    pub fn probes_diff(&self, handle: &str) -> Result<String, String> {
        let l = self.get(handle)?;
        if l.analysis.probes.is_empty() {
            return Ok(String::new());
        }
        let base = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
        Ok(desync_core::bridge::probes_diff(&l.analysis.probes, &base, &l.sources))
    }

    /// `lint`: findings over Python files/directories, as `desync lint --format json` prints
    /// them, one page of `findings` at a time.
    pub fn lint(&self, paths: &[String], page: Page) -> ToolResult {
        if paths.is_empty() {
            return Err("lint needs at least one path".to_owned());
        }
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        // The client names what to lint; only Python files inside the allowed roots are read
        // (a directory is searched for *.py), so `lint` cannot be pointed at a secret.
        for path in &paths {
            if !path.is_dir() && !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("py")) {
                return Err(format!(
                    "{}: lint reads Python files (*.py) and directories only",
                    path.display()
                ));
            }
            self.allowed("lint path", path)?;
        }
        let mut report = lint_allowed(&paths)?;
        if let Some(Value::Array(findings)) = report.get_mut("findings") {
            let all = std::mem::take(findings);
            let range = page.range(all.len());
            let fields = page.fields(all.len());
            report["findings"] = json!(all[range]);
            report["findings_page"] = fields;
        }
        Ok(report)
    }
}

/// [`Session::lint`] once its paths are checked.
fn lint_allowed(paths: &[PathBuf]) -> ToolResult {
    let report = desync_lint::lint_paths(paths, &desync_lint::Options::default());
    if report.files_checked == 0 && !report.errors.is_empty() {
        let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
        return Err(errors.join("; "));
    }
    let mut out = Vec::new();
    desync_lint::write_json(&report, &mut out).map_err(|e| e.to_string())?;
    serde_json::from_slice(&out).map_err(|e| e.to_string())
}

/// Sides (distinct things issued) and groups of ranks that did not issue it, listed by
/// `collective` at most.
const MAX_SIDES: usize = 20;

/// A process group for an answer: name, description and members as ranges.
fn pg_json(pg: &desync_core::model::ProcessGroup) -> Value {
    let mut v = json!({ "name": &*pg.name, "desc": &*pg.desc, "size": pg.members.len() });
    let mut members = pg.members.clone();
    members.sort_unstable();
    rank_text(&mut v, "ranks", &members);
    v
}

/// `ranks` as ranges text under `key`, shortened past [`ANSWER_RANGES_CHARS`] (then
/// `key_truncated: true`).
fn rank_text(v: &mut Value, key: &str, ranks: &[u32]) {
    let text = format_ranks(ranks);
    if text.len() <= ANSWER_RANGES_CHARS {
        v[key] = json!(text);
    } else {
        v[key] = json!(short_ranges(&text, ranks.len()));
        v[format!("{key}_truncated")] = json!(true);
    }
}

/// `ranks` as an array under `key`, the first [`ANSWER_RANKS`] (then `key_truncated: true`).
fn rank_array(v: &mut Value, key: &str, ranks: &[u32]) {
    v[key] = json!(ranks[..ranks.len().min(ANSWER_RANKS)]);
    if ranks.len() > ANSWER_RANKS {
        v[format!("{key}_truncated")] = json!(true);
    }
}

/// A rank set as the JSON report writes it (docs/json-schema.md, "Rank sets"): `key` the
/// array, `key_ranges` the ranges, both bounded here.
fn rank_fields(v: &mut Value, key: &str, ranks: &[u32]) {
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    rank_array(v, key, &sorted);
    rank_text(v, &format!("{key}_ranges"), &sorted);
    if v.get(format!("{key}_ranges_truncated")).is_some_and(|t| t == true) {
        v[format!("{key}_truncated")] = json!(true);
    }
}

/// The start of a long ranges text, cut at a comma, with how many ranks it stands for.
fn short_ranges(text: &str, count: usize) -> String {
    let mut cut = ANSWER_RANGES_CHARS.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind(',').unwrap_or(cut);
    format!("{},… ({count} ranks)", &text[..cut])
}

/// Shortens every rank set in a report excerpt to answer size: wherever an object has `K` (an
/// array) beside `K_ranges` (a string), the shape docs/json-schema.md gives every rank set,
/// the array keeps its first [`ANSWER_RANKS`] and the ranges their first
/// [`ANSWER_RANGES_CHARS`] characters, and `K_truncated` says so.
fn shorten_rank_sets(v: &mut Value) {
    match v {
        Value::Array(items) => items.iter_mut().for_each(shorten_rank_sets),
        Value::Object(map) => {
            let sets: Vec<String> = map
                .keys()
                .filter_map(|k| k.strip_suffix("_ranges"))
                .filter(|k| map.get(*k).is_some_and(Value::is_array))
                .map(str::to_owned)
                .collect();
            for key in sets {
                let mut cut = false;
                if let Some(Value::Array(ranks)) = map.get_mut(&key)
                    && ranks.len() > ANSWER_RANKS
                {
                    ranks.truncate(ANSWER_RANKS);
                    cut = true;
                }
                let ranges = format!("{key}_ranges");
                if let Some(Value::String(text)) = map.get_mut(&ranges)
                    && text.len() > ANSWER_RANGES_CHARS
                {
                    let count = text.split(',').map(range_len).sum();
                    *text = short_ranges(text, count);
                    cut = true;
                }
                if cut {
                    map.insert(format!("{key}_truncated"), Value::Bool(true));
                }
            }
            map.values_mut().for_each(shorten_rank_sets);
        }
        _ => {}
    }
}

/// Ranks one item of a ranges text stands for (`"5"` one, `"8-11"` four).
fn range_len(item: &str) -> usize {
    match item.split_once('-') {
        Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
            (Ok(a), Ok(b)) if b >= a => b - a + 1,
            _ => 1,
        },
        None => 1,
    }
}

/// The last line of defence for [`MAX_ANSWER_BYTES`]: an answer still larger (a huge lint
/// report, a pathological job) loses the second half of its longest list, then of its longest
/// string, until it fits, and says so in `answer_truncated`. Tools page and shorten rank sets
/// first, so real answers never get here.
pub fn bound_answer(mut v: Value) -> Value {
    let mut size = v.to_string().len();
    if size <= MAX_ANSWER_BYTES {
        return v;
    }
    let original = size;
    while size > MAX_ANSWER_BYTES {
        if !halve_largest(&mut v) {
            break;
        }
        size = v.to_string().len();
    }
    let note = format!(
        "this answer was {original} bytes, past the {MAX_ANSWER_BYTES}-byte bound: the longest lists and strings were cut; ask for smaller pages"
    );
    match &mut v {
        Value::Object(map) => {
            map.insert("answer_truncated".to_owned(), Value::String(note));
        }
        other => *other = json!({ "answer": other.take(), "answer_truncated": note }),
    }
    v
}

/// Halves the largest array (by serialized size) with more than one item, else the longest
/// string; false when nothing is left to cut.
fn halve_largest(v: &mut Value) -> bool {
    fn largest<'a>(v: &'a mut Value, best: &mut Option<(usize, &'a mut Value)>) {
        let size = v.to_string().len();
        let candidate = match v {
            Value::Array(items) => items.len() > 1,
            Value::String(text) => text.len() > 64,
            _ => false,
        };
        if candidate {
            // Its children are smaller than it: no need to look inside.
            if best.as_ref().is_none_or(|(s, _)| size > *s) {
                *best = Some((size, v));
            }
            return;
        }
        match v {
            Value::Array(items) => items.iter_mut().for_each(|i| largest(i, best)),
            Value::Object(map) => map.values_mut().for_each(|i| largest(i, best)),
            _ => {}
        }
    }
    let mut best = None;
    largest(v, &mut best);
    match best {
        Some((_, Value::Array(items))) => {
            items.truncate(items.len() / 2);
            true
        }
        Some((_, Value::String(text))) => {
            let mut cut = text.len() / 2;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
            true
        }
        _ => false,
    }
}

fn unknown_pg(a: &Analysis, name: &str) -> String {
    let known: Vec<String> = a.trace.process_groups.iter().map(|pg| pg.name.to_string()).collect();
    format!("unknown process group {name:?} (known: {})", known.join(", "))
}

fn entry_json(e: &Entry) -> Value {
    json!({
        "record_id": e.record_id,
        "seq": if e.is_p2p() { e.p2p_seq_id } else { e.collective_seq_id },
        "p2p": e.is_p2p(),
        "pg": e.pg_name(),
        "op": &*e.op().name,
        "profiling_name": &*e.op().profiling_name,
        "input_sizes": e.input_sizes(),
        "output_sizes": e.output_sizes(),
        "input_dtypes": e.input_dtypes().iter().map(|d| &**d).collect::<Vec<_>>(),
        "output_dtypes": e.output_dtypes().iter().map(|d| &**d).collect::<Vec<_>>(),
        "state": e.state.as_str(),
        "call_site": e.call_site().map(|f| json!({
            "at": format!("{}:{}", f.file, f.line),
            "function": &*f.function,
            "via": e.library_path(),
        })),
    })
}
