//! What ingest counts of the events it writes, in three passes over each batch
//! (ingest/reconcile.py reads it; its docstring says what the counts witness):
//! - per (input, device, action, plain) the events and their first and last times: the
//!   manifest's per-device counts and the Q, D and C held against blkparse's summary are sums
//!   of these groups, a few dozen per batch however many rows it holds;
//! - per CPU stream (input or none, device, CPU) its numbered events as fed: how many, the
//!   set of their sequence numbers, and the steps where the number or the time goes back.
//! - per task (pid) the time of its last plug (P): what the streaming pass must know before it
//!   starts (pass/plug.rs `session_plugged`), kept here so analyze need not scan for it.

use std::sync::Arc;

use crate::arrow_io::keys_within;
use crate::hash::FastMap;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array, PrimitiveArray, StringArray,
    StructArray,
};

/// Slots of the small cache in front of each map: rows of a batch reuse a few keys, mixed.
const CACHE_SLOTS: usize = 64;

/// A map from keys to indexes with a direct-mapped cache in front of it.
struct Index<K> {
    map: FastMap<K, usize>,
    cache: Vec<Option<(K, usize)>>,
}

impl<K: Copy + Eq + std::hash::Hash> Index<K> {
    fn new() -> Self {
        Index {
            map: FastMap::default(),
            cache: vec![None; CACHE_SLOTS],
        }
    }

    /// The key's index, `insert()` making it when it is new; `slot` picks its cache slot.
    #[inline(always)]
    fn get(&mut self, key: K, slot: usize, insert: impl FnOnce() -> usize) -> usize {
        let slot = slot % CACHE_SLOTS;
        if let Some((k, at)) = self.cache[slot] {
            if k == key {
                return at;
            }
        }
        let at = *self.map.entry(key).or_insert_with(insert);
        self.cache[slot] = Some((key, at));
        at
    }
}

/// The events table's columns the audit reads, typed.
struct Columns<'a> {
    input_id: &'a PrimitiveArray<Int16Type>,
    major: &'a PrimitiveArray<Int32Type>,
    minor: &'a PrimitiveArray<Int32Type>,
    cpu: &'a PrimitiveArray<Int32Type>,
    seq: &'a PrimitiveArray<Int64Type>,
    time: &'a PrimitiveArray<Int64Type>,
    pid: &'a PrimitiveArray<Int64Type>,
    action: Actions<'a>,
    pc_bytes: &'a ArrayRef,
    pdu: &'a ArrayRef,
}

impl<'a> Columns<'a> {
    fn of(batch: &'a StructArray) -> Result<Self, String> {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| format!("the events have no column {name}"))
        };
        let wrong = |name: &str, what: &str| format!("{name} is not {what}");
        let columns = Columns {
            input_id: column("input_id")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("input_id", "int16"))?,
            major: column("dev_major")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("dev_major", "int32"))?,
            minor: column("dev_minor")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("dev_minor", "int32"))?,
            cpu: column("cpu")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("cpu", "int32"))?,
            seq: column("seq")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("seq", "int64"))?,
            time: column("time_ns")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("time_ns", "int64"))?,
            pid: column("pid")?
                .as_primitive_opt()
                .ok_or_else(|| wrong("pid", "int64"))?,
            action: Actions::of(column("action")?)
                .ok_or_else(|| wrong("action", "a string or codes into strings"))?,
            pc_bytes: column("pc_bytes")?,
            pdu: column("pdu")?,
        };
        // the columns the schema declares not null (seq may be: an event without a number)
        for (name, nulls) in [
            ("input_id", columns.input_id.null_count()),
            ("dev_major", columns.major.null_count()),
            ("dev_minor", columns.minor.null_count()),
            ("cpu", columns.cpu.null_count()),
            ("time_ns", columns.time.null_count()),
            ("action", columns.action.null_count()),
        ] {
            if nulls > 0 {
                return Err(format!("{name} holds {nulls} nulls"));
            }
        }
        Ok(columns)
    }
}

/// The action column: its strings, or codes into them (the text scanner's dictionary array).
enum Actions<'a> {
    Texts(&'a StringArray),
    Codes {
        keys: &'a [i32],
        texts: Vec<&'a str>,
        nulls: usize,
    },
}

/// The action column ready to read by row: for codes, each code's `action_key` made once.
struct ActionKeys<'c, 'a> {
    actions: &'c Actions<'a>,
    by_code: Vec<u64>,
}

impl<'c, 'a> ActionKeys<'c, 'a> {
    fn new(actions: &'c Actions<'a>, long: &mut Vec<&'a str>) -> Self {
        let by_code = match actions {
            Actions::Texts(_) => Vec::new(),
            Actions::Codes { texts, .. } => texts.iter().map(|t| action_key(t, long)).collect(),
        };
        ActionKeys { actions, by_code }
    }

    /// The row's action and its key.
    #[inline(always)]
    fn of(&self, row: usize, long: &mut Vec<&'a str>) -> (&'a str, u64) {
        match self.actions {
            Actions::Texts(texts) => {
                let text = texts.value(row);
                (text, action_key(text, long))
            }
            Actions::Codes { keys, texts, .. } => {
                let code = keys[row] as usize;
                (texts[code], self.by_code[code])
            }
        }
    }
}

impl<'a> Actions<'a> {
    /// None when the column is neither, or a code is not one of the strings'.
    fn of(column: &'a ArrayRef) -> Option<Actions<'a>> {
        if let Some(texts) = column.as_string_opt::<i32>() {
            return Some(Actions::Texts(texts));
        }
        let codes = column.as_dictionary_opt::<Int32Type>()?;
        let values = codes.values().as_string_opt::<i32>()?;
        if values.null_count() > 0 || !keys_within(codes.keys(), values.len()) {
            return None;
        }
        Some(Actions::Codes {
            keys: codes.keys().values(),
            texts: values.iter().flatten().collect(),
            nulls: codes.null_count(),
        })
    }

    fn null_count(&self) -> usize {
        match self {
            Actions::Texts(texts) => texts.null_count(),
            Actions::Codes { nulls, .. } => *nulls,
        }
    }
}

/// A group's key: input, device, action letters (as `action_key`) and whether the event is
/// plain (no SCSI pass-through bytes, no payload: blkparse's summary counts only those).
type GroupKey = (i16, i32, i32, u64, bool);

/// Action texts of up to this many bytes are their own key.
const SHORT_ACTION: usize = 7;

/// An action's letters as one number, so a row's key compares without a call to memcmp: up to
/// SHORT_ACTION bytes, the bytes with the length in the top byte; a longer text (no reader
/// makes one) is numbered by `long`, the longer texts seen, with the top bit set.
#[inline(always)]
fn action_key<'a>(action: &'a str, long: &mut Vec<&'a str>) -> u64 {
    let bytes = action.as_bytes();
    if bytes.len() <= SHORT_ACTION {
        // byte by byte: one or two letters, too few for a call to memcpy to pay
        let mut key = (bytes.len() as u64) << 56;
        for (k, &b) in bytes.iter().enumerate() {
            key |= u64::from(b) << (8 * k);
        }
        return key;
    }
    let at = long.iter().position(|&a| a == action).unwrap_or_else(|| {
        long.push(action);
        long.len() - 1
    });
    (1 << 63) | at as u64
}

/// A group's events and their first and last times.
struct Group {
    events: i64,
    first_ns: i64,
    last_ns: i64,
}

/// CPUs numbered below this find their stream by their number, in a batch of one device.
const CPU_SLOTS: usize = 4096;

/// A CPU stream: (input id, or -1 when the inputs are one trace; dev_major, dev_minor, cpu).
type StreamKey = (i16, i32, i32, i32);

/// One CPU's numbered events of one device (of one input, for text).
#[derive(Default)]
struct Stream {
    events: i64,
    /// The numbers seen.
    numbers: SeqSet,
    /// (seq, time_ns) of the last event fed.
    last: Option<(i64, i64)>,
    /// Steps where the number or the time goes back, as fed.
    disorder: i64,
    /// The largest step back in time, as fed.
    back_ns: i64,
}

impl Stream {
    #[inline(always)]
    fn add(&mut self, seq: i64, time: i64) {
        self.events += 1;
        if let Some((last_seq, last_time)) = self.last {
            // as numpy subtracts int64s: wrapping (a damaged time cannot panic the audit)
            let back = last_time.wrapping_sub(time);
            if seq < last_seq || back > 0 {
                self.disorder += 1;
            }
            self.back_ns = self.back_ns.max(back);
        }
        self.last = Some((seq, time));
        self.numbers.insert(seq);
    }

    /// `add` for each of a run of events, the stream's counts kept in registers.
    fn add_run(&mut self, seqs: &[i64], times: &[i64]) {
        let (mut disorder, mut back_ns) = (self.disorder, self.back_ns);
        let mut last = self.last;
        for (&seq, &time) in seqs.iter().zip(times) {
            if let Some((last_seq, last_time)) = last {
                let back = last_time.wrapping_sub(time);
                disorder += i64::from(seq < last_seq || back > 0);
                back_ns = back_ns.max(back);
            }
            last = Some((seq, time));
            self.numbers.insert(seq);
        }
        self.events += seqs.len() as i64;
        (self.disorder, self.back_ns, self.last) = (disorder, back_ns, last);
    }
}

/// A set of sequence numbers, as 64-bit words of presence bits keyed by number / 64. A CPU
/// numbers its events one by one, so the numbers fill their words densely and one word takes
/// ~64 events: the set stays small however they came (with gaps, repeated by a second copy of
/// the trace, or out of order), and adding one is a bit set in the word at hand. (Scattered,
/// damaged numbers take a word each: no more than the runs of numbers this replaced.)
#[derive(Default)]
struct SeqSet {
    /// The words from `first` on, one after another: the words of numbers that follow each
    /// other are found by their place, not by a hash.
    run: Vec<u64>,
    first: i64,
    /// The words outside the run (before it, or past a gap of more than RUN_GAP words).
    words: FastMap<i64, u64>,
    /// The word numbers are being added to (key, bits), not yet in `run` or `words`.
    current: Option<(i64, u64)>,
}

/// Words a number may skip past the run's end and still extend it (a few lost events); past
/// that it goes to the map, so damaged numbers cannot grow the run without bound.
const RUN_GAP: usize = 4;

impl SeqSet {
    #[inline(always)]
    fn insert(&mut self, seq: i64) {
        // floor division and its remainder, for negative (damaged) numbers too
        let (key, bit) = (seq >> 6, 1u64 << (seq & 63));
        match &mut self.current {
            Some((k, bits)) if *k == key => *bits |= bit,
            current => {
                if let Some((k, bits)) = current.replace((key, bit)) {
                    self.keep(k, bits);
                }
            }
        }
    }

    /// Add a word's bits: in the run when it is in it or just past its end, else in the map.
    fn keep(&mut self, key: i64, bits: u64) {
        if self.run.is_empty() {
            self.first = key;
        }
        let at = key
            .checked_sub(self.first)
            .and_then(|at| usize::try_from(at).ok())
            .filter(|&at| at < self.run.len() + RUN_GAP);
        match at {
            Some(at) => {
                if at >= self.run.len() {
                    self.run.resize(at + 1, 0);
                }
                self.run[at] |= bits;
            }
            None => *self.words.entry(key).or_default() |= bits,
        }
    }

    /// (distinct numbers, first, last); 0s when empty.
    fn numbers(&mut self) -> (i64, i64, i64) {
        if let Some((k, bits)) = self.current.take() {
            self.keep(k, bits);
        }
        // the run joins the map (a word may be in both: the map took it before the run grew)
        for (at, &bits) in self.run.iter().enumerate().filter(|(_, &b)| b != 0) {
            *self.words.entry(self.first + at as i64).or_default() |= bits;
        }
        self.run.clear();
        let distinct = self.words.values().map(|w| i64::from(w.count_ones())).sum();
        // the lowest number is the lowest word's lowest bit, the highest the highest word's
        let first = self.words.iter().min_by_key(|(k, _)| **k);
        let last = self.words.iter().max_by_key(|(k, _)| **k);
        (
            distinct,
            first.map_or(0, |(k, w)| k * 64 + i64::from(w.trailing_zeros())),
            last.map_or(0, |(k, w)| k * 64 + 63 - i64::from(w.leading_zeros())),
        )
    }
}

/// The audit of every batch fed so far.
pub struct Audit {
    per_input: bool,
    unnumbered: Vec<String>,
    streams: Vec<(StreamKey, Stream)>,
    stream_index: FastMap<StreamKey, usize>,
    /// (pid, the latest time of its P events), in the order first plugged.
    last_plugs: Vec<(i64, i64)>,
    /// pid -> its place in last_plugs.
    plug_index: FastMap<i64, usize>,
}

impl Audit {
    /// `per_input`: text inputs each number their own events; the per-CPU files of one
    /// blktrace trace are one numbering. `unnumbered`: the actions printed without a number.
    pub fn new(per_input: bool, unnumbered: Vec<String>) -> Audit {
        Audit {
            per_input,
            unnumbered,
            streams: Vec::new(),
            stream_index: FastMap::default(),
            last_plugs: Vec::new(),
            plug_index: FastMap::default(),
        }
    }

    /// Feed one batch of events, in the order they were logged (read); returns its groups
    /// as columns, in the order each first appears: input_id, dev_major, dev_minor, action,
    /// plain, events, first_time_ns, last_time_ns.
    pub fn add(&mut self, batch: &StructArray) -> Result<Vec<(&'static str, ArrayRef)>, String> {
        let c = Columns::of(batch)?;
        // (a copy: the long action texts are borrowed while the streams are fed)
        let unnumbered_texts = self.unnumbered.clone();
        let mut long_actions = Vec::new();
        let unnumbered: Vec<u64> = unnumbered_texts
            .iter()
            .map(|a| action_key(a, &mut long_actions))
            .collect();
        let plug = action_key("P", &mut long_actions);
        let actions = ActionKeys::new(&c.action, &mut long_actions);
        // Three passes over the rows, one per tally: each loop keeps its few values in
        // registers, where one loop doing all three spilled them to the stack every row.
        let device = one_device(&c);
        let groups = Self::groups(&c, device, &actions, &mut long_actions);
        self.feed_streams(&c, device, &actions, &unnumbered, &mut long_actions);
        self.plugs(&c, &actions, plug, &mut long_actions);
        Ok(groups)
    }

    /// The batch's groups by (input, device, action, plain) as columns, in the order each
    /// first appears (`device`: the batch's one device, when it has one).
    fn groups<'a>(
        c: &Columns<'a>,
        device: Option<(i16, i32, i32)>,
        actions: &ActionKeys<'_, 'a>,
        long_actions: &mut Vec<&'a str>,
    ) -> Vec<(&'static str, ArrayRef)> {
        let all_plain =
            c.pc_bytes.null_count() == c.pc_bytes.len() && c.pdu.null_count() == c.pdu.len();
        let (input_ids, majors, minors) = (c.input_id.values(), c.major.values(), c.minor.values());
        let times = c.time.values();
        if let (
            true,
            Some(device),
            Actions::Codes {
                keys: codes, texts, ..
            },
        ) = (all_plain, device, actions.actions)
        {
            return groups_by_code(device, codes, texts, &actions.by_code, times);
        }
        let mut groups: Index<GroupKey> = Index::new();
        let mut keys: Vec<(GroupKey, &str)> = Vec::new();
        let mut found: Vec<Group> = Vec::new();
        for row in 0..times.len() {
            let plain = all_plain || (c.pc_bytes.is_null(row) && c.pdu.is_null(row));
            let (action, action_code) = actions.of(row, long_actions);
            let (major, minor, time) = (majors[row], minors[row], times[row]);
            let key = (input_ids[row], major, minor, action_code, plain);
            let slot = (action_code as usize)
                ^ (action_code >> 52) as usize
                ^ (minor as usize) << 1
                ^ usize::from(plain);
            let at = groups.get(key, slot, || {
                keys.push((key, action));
                found.push(Group {
                    events: 0,
                    first_ns: time,
                    last_ns: time,
                });
                found.len() - 1
            });
            let g = &mut found[at];
            g.events += 1;
            g.first_ns = g.first_ns.min(time);
            g.last_ns = g.last_ns.max(time);
        }
        group_columns(&keys, &found)
    }

    /// Each plugging task's latest P.
    fn plugs<'a>(
        &mut self,
        c: &Columns<'a>,
        actions: &ActionKeys<'_, 'a>,
        plug: u64,
        long_actions: &mut Vec<&'a str>,
    ) {
        let times = c.time.values();
        let mut plugs: Index<i64> = Index::new();
        for (row, &time) in times.iter().enumerate() {
            // (a pid is never null as stored; a batch made by hand may leave it so)
            if actions.of(row, long_actions).1 != plug || c.pid.is_null(row) {
                continue;
            }
            let pid = c.pid.value(row);
            let (index, all) = (&mut self.plug_index, &mut self.last_plugs);
            // (a P in every few events, from a few tasks: the cache spares the hash)
            let at = plugs.get(pid, pid as usize, || {
                *index.entry(pid).or_insert_with(|| {
                    all.push((pid, time));
                    all.len() - 1
                })
            });
            let last = &mut self.last_plugs[at].1;
            *last = (*last).max(time);
        }
    }

    /// Each numbered event into its CPU stream, in the order fed (`device`: the batch's one
    /// device, when it has one).
    fn feed_streams<'a>(
        &mut self,
        c: &Columns<'a>,
        device: Option<(i16, i32, i32)>,
        actions: &ActionKeys<'_, 'a>,
        unnumbered: &[u64],
        long_actions: &mut Vec<&'a str>,
    ) {
        let (input_ids, majors, minors) = (c.input_id.values(), c.major.values(), c.minor.values());
        let (cpus, seqs, times) = (c.cpu.values(), c.seq.values(), c.time.values());
        let seq_nulls = c.seq.null_count() > 0;
        if let (Some(device), Actions::Codes { keys: codes, .. }) = (device, actions.actions) {
            let numbered: Vec<bool> = actions
                .by_code
                .iter()
                .map(|k| !unnumbered.contains(k))
                .collect();
            let input = if self.per_input { device.0 } else { -1 };
            // each CPU's stream by the CPU's number (a few CPUs, numbered from 0)
            let mut at_cpu: Vec<usize> = Vec::new();
            let skip =
                |row: usize| !numbered[codes[row] as usize] || (seq_nulls && c.seq.is_null(row));
            let mut row = 0;
            while row < times.len() {
                if skip(row) {
                    row += 1;
                    continue;
                }
                let cpu = cpus[row];
                let mut end = row + 1;
                while end < times.len() && cpus[end] == cpu && !skip(end) {
                    end += 1;
                }
                let slot = usize::try_from(cpu).ok().filter(|&k| k < CPU_SLOTS);
                let at = match slot.and_then(|k| at_cpu.get(k)) {
                    Some(&at) if at != usize::MAX => at,
                    _ => {
                        let at = self.stream_at((input, device.1, device.2, cpu));
                        if let Some(k) = slot {
                            if at_cpu.len() <= k {
                                at_cpu.resize(k + 1, usize::MAX);
                            }
                            at_cpu[k] = at;
                        }
                        at
                    }
                };
                self.streams[at]
                    .1
                    .add_run(&seqs[row..end], &times[row..end]);
                row = end;
            }
            return;
        }
        let mut streams: Index<StreamKey> = Index::new();
        for row in 0..times.len() {
            if (seq_nulls && c.seq.is_null(row))
                || unnumbered.contains(&actions.of(row, long_actions).1)
            {
                continue;
            }
            let (minor, cpu) = (minors[row], cpus[row]);
            let input = if self.per_input { input_ids[row] } else { -1 };
            let skey = (input, majors[row], minor, cpu);
            let (index, all) = (&mut self.stream_index, &mut self.streams);
            let at = streams.get(skey, (cpu as usize) ^ (minor as usize) << 3, || {
                *index.entry(skey).or_insert_with(|| {
                    all.push((skey, Stream::default()));
                    all.len() - 1
                })
            });
            self.streams[at].1.add(seqs[row], times[row]);
        }
    }

    /// The stream's place in `streams`, made when new.
    fn stream_at(&mut self, key: StreamKey) -> usize {
        let all = &mut self.streams;
        *self.stream_index.entry(key).or_insert_with(|| {
            all.push((key, Stream::default()));
            all.len() - 1
        })
    }

    /// (pid, time of its last P) per task that plugged, by pid.
    pub fn last_plugs(&self) -> Vec<(&'static str, ArrayRef)> {
        let mut plugs = self.last_plugs.clone();
        plugs.sort_unstable();
        vec![
            (
                "pid",
                Arc::new(Int64Array::from_iter_values(plugs.iter().map(|p| p.0))) as ArrayRef,
            ),
            (
                "last_plug_ns",
                Arc::new(Int64Array::from_iter_values(plugs.iter().map(|p| p.1))),
            ),
        ]
    }

    /// Each stream, by key: input_id (-1: one trace), dev_major, dev_minor, cpu, events,
    /// distinct numbers, first_seq, last_seq, steps_back, largest_step_back_ns.
    pub fn streams(&mut self) -> Vec<(&'static str, ArrayRef)> {
        self.streams.sort_unstable_by_key(|(k, _)| *k);
        self.stream_index.clear();
        let mut numbers = Vec::with_capacity(self.streams.len());
        for (at, (key, s)) in self.streams.iter_mut().enumerate() {
            self.stream_index.insert(*key, at);
            numbers.push(s.numbers.numbers());
        }
        let keys: Vec<StreamKey> = self.streams.iter().map(|(k, _)| *k).collect();
        let stat = |f: fn(&Stream) -> i64| -> ArrayRef {
            Arc::new(Int64Array::from_iter_values(
                self.streams.iter().map(|(_, s)| f(s)),
            ))
        };
        vec![
            (
                "input_id",
                Arc::new(Int16Array::from_iter_values(keys.iter().map(|k| k.0))) as ArrayRef,
            ),
            (
                "dev_major",
                Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| k.1))),
            ),
            (
                "dev_minor",
                Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| k.2))),
            ),
            (
                "cpu",
                Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| k.3))),
            ),
            ("events", stat(|s| s.events)),
            (
                "distinct",
                Arc::new(Int64Array::from_iter_values(numbers.iter().map(|n| n.0))),
            ),
            (
                "first_seq",
                Arc::new(Int64Array::from_iter_values(numbers.iter().map(|n| n.1))),
            ),
            (
                "last_seq",
                Arc::new(Int64Array::from_iter_values(numbers.iter().map(|n| n.2))),
            ),
            ("steps_back", stat(|s| s.disorder)),
            ("largest_step_back_ns", stat(|s| s.back_ns)),
        ]
    }
}

/// `Audit::groups` of a batch of one device whose events are all plain, its actions codes:
/// each code's group found by the code, not by a key's hash or compare.
fn groups_by_code(
    device: (i16, i32, i32),
    codes: &[i32],
    texts: &[&str],
    key_of_code: &[u64],
    times: &[i64],
) -> Vec<(&'static str, ArrayRef)> {
    let mut keys: Vec<(GroupKey, &str)> = Vec::new();
    let mut found: Vec<Group> = Vec::new();
    let mut at_code = vec![usize::MAX; texts.len()];
    for (&code, &time) in codes.iter().zip(times) {
        let code = code as usize;
        let mut at = at_code[code];
        if at == usize::MAX {
            // (two codes of one text are one group)
            let key = (device.0, device.1, device.2, key_of_code[code], true);
            at = keys.iter().position(|(k, _)| *k == key).unwrap_or_else(|| {
                keys.push((key, texts[code]));
                found.push(Group {
                    events: 0,
                    first_ns: time,
                    last_ns: time,
                });
                found.len() - 1
            });
            at_code[code] = at;
        }
        let g = &mut found[at];
        g.events += 1;
        g.first_ns = g.first_ns.min(time);
        g.last_ns = g.last_ns.max(time);
    }
    group_columns(&keys, &found)
}

/// The batch's one (input, major, minor), when every row has the same.
fn one_device(c: &Columns<'_>) -> Option<(i16, i32, i32)> {
    let (input, major, minor) = (c.input_id.values(), c.major.values(), c.minor.values());
    let first = (*input.first()?, *major.first()?, *minor.first()?);
    let same = input.iter().all(|&v| v == first.0)
        && major.iter().all(|&v| v == first.1)
        && minor.iter().all(|&v| v == first.2);
    same.then_some(first)
}

fn group_columns(keys: &[(GroupKey, &str)], found: &[Group]) -> Vec<(&'static str, ArrayRef)> {
    vec![
        (
            "input_id",
            Arc::new(Int16Array::from_iter_values(keys.iter().map(|k| k.0 .0))) as ArrayRef,
        ),
        (
            "dev_major",
            Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| k.0 .1))),
        ),
        (
            "dev_minor",
            Arc::new(Int32Array::from_iter_values(keys.iter().map(|k| k.0 .2))),
        ),
        (
            "action",
            Arc::new(StringArray::from_iter_values(keys.iter().map(|k| k.1))),
        ),
        (
            "plain",
            Arc::new(BooleanArray::from(
                keys.iter().map(|k| k.0 .4).collect::<Vec<_>>(),
            )),
        ),
        (
            "events",
            Arc::new(Int64Array::from_iter_values(found.iter().map(|g| g.events))),
        ),
        (
            "first_time_ns",
            Arc::new(Int64Array::from_iter_values(
                found.iter().map(|g| g.first_ns),
            )),
        ),
        (
            "last_time_ns",
            Arc::new(Int64Array::from_iter_values(
                found.iter().map(|g| g.last_ns),
            )),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field};

    /// (dev_minor, cpu, seq, action, time_ns, pc_bytes) rows of input 0 on major 8; each
    /// row's pid is 100 + its cpu.
    type Row<'a> = (i32, i32, Option<i64>, &'a str, i64, Option<i64>);

    fn batch(rows: &[Row<'_>]) -> StructArray {
        let n = rows.len();
        let col =
            |name: &str, a: ArrayRef| (Arc::new(Field::new(name, a.data_type().clone(), true)), a);
        StructArray::from(vec![
            col("input_id", Arc::new(Int16Array::from(vec![0; n]))),
            col("dev_major", Arc::new(Int32Array::from(vec![8; n]))),
            col(
                "dev_minor",
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.0))),
            ),
            col(
                "cpu",
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1))),
            ),
            col(
                "seq",
                Arc::new(Int64Array::from(
                    rows.iter().map(|r| r.2).collect::<Vec<_>>(),
                )),
            ),
            col(
                "pid",
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|r| 100 + i64::from(r.1)),
                )),
            ),
            col(
                "action",
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.3))),
            ),
            col(
                "time_ns",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.4))),
            ),
            col(
                "pc_bytes",
                Arc::new(Int64Array::from(
                    rows.iter().map(|r| r.5).collect::<Vec<_>>(),
                )),
            ),
            col("pdu", arrow_array::new_null_array(&DataType::Utf8, n)),
        ])
    }

    fn ints(cols: &[(&str, ArrayRef)], name: &str) -> Vec<i64> {
        let a = &cols.iter().find(|(n, _)| *n == name).unwrap().1;
        a.as_primitive::<Int64Type>().values().to_vec()
    }

    fn audit() -> Audit {
        Audit::new(true, vec!["m".into()])
    }

    #[test]
    fn last_plugs_keep_each_pids_latest_p_over_batches() {
        let mut a = audit();
        // pid 100 plugs at 30 then 10 (out of order), 101 at 50; a PX or U is no plug
        a.add(&batch(&[
            (0, 0, Some(1), "P", 30, None),
            (0, 1, Some(1), "P", 50, None),
            (0, 0, Some(2), "U", 90, None),
        ]))
        .unwrap();
        a.add(&batch(&[
            (0, 0, Some(3), "P", 10, None),
            (0, 2, Some(1), "UT", 95, None),
            (0, 2, Some(2), "PX", 99, None),
            // pid 164 takes pid 100's cache slot, then 100 takes it back
            (0, 64, Some(1), "P", 70, None),
            (0, 0, Some(4), "P", 20, None),
            (0, 64, Some(2), "P", 60, None),
        ]))
        .unwrap();
        let plugs = a.last_plugs();
        assert_eq!(ints(&plugs, "pid"), vec![100, 101, 164]);
        assert_eq!(ints(&plugs, "last_plug_ns"), vec![30, 50, 70]);
    }

    /// The batch with its action column as codes into `texts` (as the text scanner hands it).
    fn with_action_codes(b: &StructArray, texts: &[&str], keys: Vec<Option<i32>>) -> StructArray {
        // SAFETY: not safe for every reader: a test's keys may lie outside the texts on
        // purpose, and the audit must refuse them without reading them
        let codes = unsafe {
            arrow_array::DictionaryArray::<Int32Type>::new_unchecked(
                Int32Array::from(keys),
                Arc::new(StringArray::from(texts.to_vec())),
            )
        };
        let (fields, mut columns, nulls) = b.clone().into_parts();
        let at = fields.iter().position(|f| f.name() == "action").unwrap();
        columns[at] = Arc::new(codes);
        let fields: Vec<_> = fields
            .iter()
            .zip(&columns)
            .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
            .collect();
        StructArray::new(fields.into(), columns, nulls)
    }

    #[test]
    fn actions_as_codes_count_as_the_strings_do() {
        let rows = [
            (0, 0, Some(1), "Q", 50, None),
            (0, 1, Some(1), "P", 10, None),
            (0, 0, Some(2), "m", 20, None),
            (0, 0, Some(3), "Q", 70, None),
        ];
        let texts = ["C", "Q", "P", "m", "Q"];
        let keys = vec![Some(4), Some(2), Some(3), Some(1)];
        let strings = batch(&rows);
        let codes = with_action_codes(&strings, &texts, keys);
        let (mut by_strings, mut by_codes) = (audit(), audit());
        let want = by_strings.add(&strings).unwrap();
        let got = by_codes.add(&codes).unwrap();
        for ((name, want), (_, got)) in want.iter().zip(&got) {
            assert_eq!(want.to_data(), got.to_data(), "{name}");
        }
        let (want, got) = (by_strings.streams(), by_codes.streams());
        assert_eq!(ints(&want, "events"), ints(&got, "events"));
        assert_eq!(ints(&got, "events"), vec![2, 1], "m is unnumbered");
        assert_eq!(ints(&by_codes.last_plugs(), "pid"), vec![101]);
        let outside = with_action_codes(&strings, &texts, vec![Some(5), Some(0), Some(0), Some(0)]);
        assert!(audit().add(&outside).is_err());
        let null = with_action_codes(&strings, &texts, vec![None, Some(0), Some(0), Some(0)]);
        assert!(audit().add(&null).is_err());
    }

    /// Every column of two audits' outputs equal.
    fn same_columns(want: &[(&str, ArrayRef)], got: &[(&str, ArrayRef)]) {
        assert_eq!(want.len(), got.len());
        for ((name, want), (_, got)) in want.iter().zip(got) {
            assert_eq!(want.to_data(), got.to_data(), "{name}");
        }
    }

    #[test]
    fn a_batch_of_one_device_counts_by_codes_as_by_strings() {
        // runs on a CPU, CPUs mixed, an unnumbered m, a number missing, a step back in
        // time and in number, a CPU past the slots and a negative one, a text two codes share
        let rows = [
            (0, 0, Some(1), "Q", 50, None),
            (0, 0, Some(2), "G", 51, None),
            (0, 1, Some(1), "P", 52, None),
            (0, 1, Some(2), "Q", 40, None),
            (0, 0, None, "Q", 53, None),
            (0, 0, Some(3), "m", 54, None),
            (0, 0, Some(2), "D", 55, None),
            (0, 5000, Some(7), "Q", 56, None),
            (0, -1, Some(9), "C", 57, None),
            (0, 1, Some(3), "C", 58, None),
            (0, 5000, Some(8), "P", 59, None),
        ];
        let texts = ["C", "Q", "P", "m", "G", "D", "Q", "P"];
        let keys = [1, 4, 2, 6, 1, 3, 5, 6, 0, 0, 7];
        let strings = batch(&rows);
        let codes = with_action_codes(&strings, &texts, keys.iter().map(|&k| Some(k)).collect());
        let (mut by_strings, mut by_codes) = (audit(), audit());
        for _ in 0..2 {
            same_columns(
                &by_strings.add(&strings).unwrap(),
                &by_codes.add(&codes).unwrap(),
            );
        }
        same_columns(&by_strings.streams(), &by_codes.streams());
        same_columns(&by_strings.last_plugs(), &by_codes.last_plugs());
        assert_eq!(ints(&by_codes.streams(), "events"), vec![2, 6, 6, 4]);
    }

    #[test]
    fn action_keys_tell_every_text_apart() {
        let mut long = Vec::new();
        let texts = [
            "U",
            "UT",
            "",
            "m",
            "U\0",
            "ABCDEFG",
            "ABCDEFGH",
            "ABCDEFGHI",
        ];
        let keys: Vec<u64> = texts.iter().map(|t| action_key(t, &mut long)).collect();
        for (k, key) in keys.iter().enumerate() {
            assert!(!keys[..k].contains(key), "{:?}", texts[k]);
        }
        assert_eq!(action_key("ABCDEFGHI", &mut long), keys[7]);
        assert_eq!(long, vec!["ABCDEFGH", "ABCDEFGHI"]);
    }

    #[test]
    fn groups_count_in_order_of_first_sight() {
        let b = batch(&[
            (0, 0, Some(1), "Q", 50, None),
            (16, 0, Some(1), "Q", 10, None),
            (0, 0, Some(2), "Q", 20, None),
            (0, 0, Some(3), "C", 70, None),
            (0, 0, Some(4), "Q", 90, Some(512)),
        ]);
        let out = audit().add(&b).unwrap();
        assert_eq!(ints(&out, "events"), vec![2, 1, 1, 1]);
        assert_eq!(ints(&out, "first_time_ns"), vec![20, 10, 70, 90]);
        assert_eq!(ints(&out, "last_time_ns"), vec![50, 10, 70, 90]);
        let plain = &out.iter().find(|(n, _)| *n == "plain").unwrap().1;
        let plain: Vec<_> = plain.as_boolean().iter().collect();
        assert_eq!(plain, vec![Some(true), Some(true), Some(true), Some(false)]);
        let minor = &out.iter().find(|(n, _)| *n == "dev_minor").unwrap().1;
        assert_eq!(
            minor.as_primitive::<Int32Type>().values().to_vec(),
            vec![0, 16, 0, 0]
        );
    }

    #[test]
    fn streams_count_gaps_repeats_and_steps_back() {
        let mut a = audit();
        // CPU 0: 1 2 3, then 7 (a gap of 3), 7 again (a repeat), then 5 (a step back in
        // number and time); CPU 1: one event; an m message takes no number
        a.add(&batch(&[
            (0, 0, Some(1), "Q", 10, None),
            (0, 1, Some(9), "Q", 15, None),
            (0, 0, Some(2), "G", 20, None),
            (0, 0, Some(0), "m", 25, None),
            (0, 0, Some(3), "I", 30, None),
        ]))
        .unwrap();
        a.add(&batch(&[
            (0, 0, Some(7), "D", 40, None),
            (0, 0, Some(7), "D", 40, None),
            (0, 0, Some(5), "C", 35, None),
            (0, 0, None, "C", 36, None),
        ]))
        .unwrap();
        let s = a.streams();
        assert_eq!(ints(&s, "events"), vec![6, 1]);
        assert_eq!(ints(&s, "distinct"), vec![5, 1]);
        assert_eq!(ints(&s, "first_seq"), vec![1, 9]);
        assert_eq!(ints(&s, "last_seq"), vec![7, 9]);
        assert_eq!(ints(&s, "steps_back"), vec![1, 0]);
        assert_eq!(ints(&s, "largest_step_back_ns"), vec![5, 0]);
    }

    #[test]
    fn a_seq_set_counts_each_number_once_however_they_come() {
        let mut set = SeqSet::default();
        assert_eq!(set.numbers(), (0, 0, 0));
        // a gap, a repeat, a step back across a word, a second copy, negative (damaged) numbers
        for seq in [5, 6, 7, 70, 71, 64, 63, 5, 6, 7, -1, -64, -65, 1 << 40] {
            set.insert(seq);
        }
        assert_eq!(set.numbers(), (11, -65, 1 << 40));
        let mut copies = SeqSet::default();
        for _ in 0..3 {
            (1..=1000).for_each(|seq| copies.insert(seq));
        }
        assert_eq!(copies.numbers(), (1000, 1, 1000));
        assert!(copies.words.len() <= 17, "{} words", copies.words.len());
    }

    #[test]
    fn a_seq_set_keeps_a_run_of_words_and_the_rest_apart() {
        let mut set = SeqSet::default();
        // a run from 640, a small gap it bridges, one past a gap too wide, numbers before the
        // run, then the run grown over the word the map took
        let seqs = (640..700).chain(900..910).chain([5000, 100, 101]);
        let seqs: Vec<i64> = seqs.chain((910..5010).step_by(7)).collect();
        let mut want: Vec<i64> = seqs.clone();
        seqs.iter().for_each(|&seq| set.insert(seq));
        set.insert(i64::MAX);
        set.insert(i64::MIN);
        assert!(set.words.contains_key(&(5000 >> 6)), "past a gap: the map");
        assert!(
            set.words.contains_key(&(100 >> 6)),
            "before the run: the map"
        );
        assert!(set.run.len() >= (5010 >> 6) - 10, "the run grew over them");
        want.extend([i64::MAX, i64::MIN]);
        want.sort_unstable();
        want.dedup();
        assert_eq!(set.numbers(), (want.len() as i64, i64::MIN, i64::MAX));
        // numbers fed after a count are counted with the earlier ones
        set.insert(641);
        set.insert(i64::MAX - 1);
        assert_eq!(set.numbers(), (want.len() as i64 + 1, i64::MIN, i64::MAX));
    }

    #[test]
    fn a_missing_column_is_named() {
        let b = StructArray::from(vec![(
            Arc::new(Field::new("input_id", DataType::Int16, true)),
            Arc::new(Int16Array::from(vec![0])) as ArrayRef,
        )]);
        assert_eq!(
            audit().add(&b).unwrap_err(),
            "the events have no column dev_major"
        );
    }
}
