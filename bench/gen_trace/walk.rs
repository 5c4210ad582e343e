//! The base trace as a template: literal bytes and the numeric slots each copy shifts.
//! The base was checked to be valid JSON before this walks it, so the walker only finds
//! where members and values are.

use std::ops::Range;

use anyhow::{Context, Result, bail};

/// What a slot holds, and so how much each copy adds to it.
#[derive(Clone, Copy, Debug)]
pub enum SlotKind {
    /// An event's `ts` (its integer µs part; a fraction stays literal).
    Ts,
    /// The N of `ProfilerStep#N`.
    Step,
    /// A memory event's `Addr`.
    Addr,
    /// A linking id, by group (see [`ID_GROUPS`]).
    Id(usize),
    /// `Total Allocated`, by device.
    Allocated(usize),
    /// `Total Reserved`, by device.
    Reserved(usize),
}

/// A number inside the body that copies change.
pub struct Slot {
    pub range: Range<usize>,
    pub kind: SlotKind,
    pub value: i128,
}

/// A device's totals over the base, in time order.
pub struct DeviceNet {
    pub key: (i128, i128),
    /// (ts µs, `Bytes`, `Total Allocated`, `Total Reserved`) in file order.
    events: Vec<(f64, i128, Option<i128>, Option<i128>)>,
    pub min_allocated: i64,
    pub min_reserved: i64,
}

impl DeviceNet {
    fn sorted(&self) -> Vec<&(f64, i128, Option<i128>, Option<i128>)> {
        let mut v: Vec<_> = self.events.iter().collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    }

    /// Total Allocated after the last event − before the first.
    pub fn net_allocated(&self) -> i64 {
        let with: Vec<_> = self
            .sorted()
            .into_iter()
            .filter(|e| e.2.is_some())
            .collect();
        match (with.first(), with.last()) {
            (Some(f), Some(l)) => (l.2.unwrap_or(0) - (f.2.unwrap_or(0) - f.1)) as i64,
            _ => 0,
        }
    }

    /// Total Reserved after the last event − after the first.
    pub fn net_reserved(&self) -> i64 {
        let with: Vec<_> = self.sorted().into_iter().filter_map(|e| e.3).collect();
        match (with.first(), with.last()) {
            (Some(f), Some(l)) => (l - f) as i64,
            _ => 0,
        }
    }
}

/// Ids shifted together (a flow's `id` is its kernel's `correlation`; a Python frame's
/// parent is another frame's id). `Python module id` is not here: a module keeps its id
/// from step to step.
pub const ID_GROUPS: &[&[&str]] = &[
    &["id", "correlation"],
    &["External id"],
    &["Ev Idx"],
    &["Sequence number"],
    &["Python id", "Python parent id"],
    &["Record function id"],
];

#[derive(Default)]
pub struct Template {
    /// `{`, the members before `traceEvents`, `"traceEvents":[` and the metadata events.
    pub head: Vec<u8>,
    pub has_meta: bool,
    /// The replicated events, joined by `,\n`.
    pub body: Vec<u8>,
    pub body_events: u64,
    /// In body order.
    pub slots: Vec<Slot>,
    /// `]`, the members after `traceEvents`, `}`.
    pub tail: Vec<u8>,
    /// First ts, last ts + dur (µs, rounded out).
    pub time_range: Option<(i64, i64)>,
    pub step_range: Option<(i64, i64)>,
    pub addr_range: Option<(u64, u64)>,
    pub id_max: Vec<i64>,
    pub devices: Vec<DeviceNet>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end of the value starting at `i` (valid JSON assumed).
fn value_end(b: &[u8], mut i: usize) -> usize {
    match b[i] {
        b'"' => {
            i += 1;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i + 1
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match b[i] {
                    b'"' => {
                        i = value_end(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']') && !b[i].is_ascii_whitespace()
            {
                i += 1;
            }
            i
        }
    }
}

/// The items of the object or array at `at`: (key without quotes, value) for objects,
/// (empty, value) for arrays.
fn items(b: &[u8], at: Range<usize>) -> Vec<(Range<usize>, Range<usize>)> {
    let object = b[at.start] == b'{';
    let mut out = Vec::new();
    let mut i = skip_ws(b, at.start + 1);
    while b[i] != b'}' && b[i] != b']' {
        let mut key = 0..0;
        if object {
            let end = value_end(b, i);
            key = i + 1..end - 1;
            i = skip_ws(b, end) + 1; // past ':'
            i = skip_ws(b, i);
        }
        let end = value_end(b, i);
        out.push((key, i..end));
        i = skip_ws(b, end);
        if b[i] == b',' {
            i = skip_ws(b, i + 1);
        }
    }
    out
}

/// An integer, or the integer part of a decimal (`None` for exponents and non-numbers).
fn int_part(b: &[u8], v: &Range<usize>) -> Option<(Range<usize>, i128)> {
    let text = std::str::from_utf8(&b[v.clone()]).ok()?;
    if text.contains(['e', 'E']) || !text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return None;
    }
    let len = text.find('.').unwrap_or(text.len());
    if len < text.len() && text.starts_with('-') {
        return None; // -1.5 + k is not (-1 + k).5
    }
    Some((v.start..v.start + len, text[..len].parse().ok()?))
}

fn number(b: &[u8], v: &Range<usize>) -> Option<f64> {
    std::str::from_utf8(&b[v.clone()]).ok()?.parse().ok()
}

/// The base as a template.
pub fn template(b: &[u8]) -> Result<Template> {
    let start = skip_ws(b, 0);
    if b.get(start) != Some(&b'{') {
        bail!("not a JSON object");
    }
    let top = items(b, start..value_end(b, start));
    let events = top
        .iter()
        .position(|(k, _)| &b[k.clone()] == b"traceEvents")
        .context("no traceEvents")?;
    let mut t = Template {
        id_max: vec![0; ID_GROUPS.len()],
        ..Template::default()
    };
    t.head.push(b'{');
    for (k, v) in &top[..events] {
        t.head.extend_from_slice(&b[k.start - 1..k.end + 1]);
        t.head.push(b':');
        t.head.extend_from_slice(&b[v.clone()]);
        t.head.push(b',');
    }
    t.head.extend_from_slice(b"\"traceEvents\":[\n");
    t.tail.extend_from_slice(b"\n]");
    for (k, v) in &top[events + 1..] {
        t.tail.push(b',');
        t.tail.extend_from_slice(&b[k.start - 1..k.end + 1]);
        t.tail.push(b':');
        t.tail.extend_from_slice(&b[v.clone()]);
    }
    t.tail.extend_from_slice(b"}\n");
    let list = &top[events].1;
    if b[list.start] != b'[' {
        bail!("traceEvents is not an array");
    }
    for (_, e) in items(b, list.clone()) {
        if b[e.start] != b'{' {
            continue;
        }
        let members = items(b, e.clone());
        let is_meta = members
            .iter()
            .any(|(k, v)| &b[k.clone()] == b"ph" && &b[v.clone()] == b"\"M\"");
        if is_meta {
            if t.has_meta {
                t.head.extend_from_slice(b",\n");
            }
            t.head.extend_from_slice(&b[e.clone()]);
            t.has_meta = true;
        } else {
            event(b, &e, &members, &mut t)?;
        }
    }
    Ok(t)
}

/// One replicated event: its bytes onto the body, its slots found.
fn event(
    b: &[u8],
    e: &Range<usize>,
    members: &[(Range<usize>, Range<usize>)],
    t: &mut Template,
) -> Result<()> {
    if t.body_events > 0 {
        t.body.extend_from_slice(b",\n");
    }
    let base = t.body.len() as i128 - e.start as i128;
    t.body.extend_from_slice(&b[e.clone()]);
    t.body_events += 1;
    let mut slots = Vec::new();
    let mut ts_us = None;
    let mut dur = 0.0;
    for (k, v) in members {
        match &b[k.clone()] {
            b"ts" => {
                let (r, value) = int_part(b, v).context("a ts that is not a plain decimal")?;
                ts_us = number(b, v);
                slots.push((r, SlotKind::Ts, value));
            }
            b"dur" => dur = number(b, v).unwrap_or(0.0),
            b"name" => {
                let text = &b[v.clone()];
                if let Some(digits) = text.strip_prefix(b"\"ProfilerStep#")
                    && let Some(digits) = digits.strip_suffix(b"\"")
                    && !digits.is_empty()
                    && digits.iter().all(u8::is_ascii_digit)
                {
                    let r = v.end - 1 - digits.len()..v.end - 1;
                    let n: i64 = std::str::from_utf8(digits)?.parse()?;
                    let (lo, hi) = t.step_range.unwrap_or((n, n));
                    t.step_range = Some((lo.min(n), hi.max(n)));
                    slots.push((r, SlotKind::Step, n as i128));
                }
            }
            b"args" if b[v.start] == b'{' => args(b, v, ts_us.unwrap_or(0.0), &mut slots, t)?,
            key => id_slot(b, key, v, &mut slots, t),
        }
    }
    if let Some(ts) = ts_us {
        let (lo, hi) = (ts.floor() as i64, (ts + dur).ceil() as i64);
        let (a, z) = t.time_range.unwrap_or((lo, hi));
        t.time_range = Some((a.min(lo), z.max(hi)));
    }
    slots.sort_by_key(|s| s.0.start);
    for (r, kind, value) in slots {
        let at = |x: usize| (x as i128 + base) as usize;
        t.slots.push(Slot {
            range: at(r.start)..at(r.end),
            kind,
            value,
        });
    }
    Ok(())
}

type Found = Vec<(Range<usize>, SlotKind, i128)>;

fn id_slot(b: &[u8], key: &[u8], v: &Range<usize>, slots: &mut Found, t: &mut Template) {
    let Some(g) = ID_GROUPS
        .iter()
        .position(|g| g.iter().any(|k| k.as_bytes() == key))
    else {
        return;
    };
    if let Some((r, value)) = int_part(b, v).filter(|(r, _)| r.end == v.end) {
        t.id_max[g] = t.id_max[g].max(value as i64);
        slots.push((r, SlotKind::Id(g), value));
    }
}

/// The memory fields and ids of an event's `args`. `ts` is read before `args` in every
/// profiler era; a memory event with `args` first is ordered as if at 0.
fn args(b: &[u8], a: &Range<usize>, ts: f64, slots: &mut Found, t: &mut Template) -> Result<()> {
    let members = items(b, a.clone());
    let get = |name: &[u8]| {
        members
            .iter()
            .find(|(k, _)| &b[k.clone()] == name)
            .and_then(|(_, v)| int_part(b, v).filter(|(r, _)| r.end == v.end))
    };
    let device = match (get(b"Device Type"), get(b"Device Id")) {
        (Some((_, ty)), Some((_, id))) if get(b"Bytes").is_some() => Some((ty, id)),
        _ => None,
    };
    let mut totals = (None, None);
    for (k, v) in &members {
        let key = &b[k.clone()];
        let Some((r, value)) = int_part(b, v).filter(|(r, _)| r.end == v.end) else {
            continue;
        };
        match (key, device) {
            (b"Addr", Some(_)) => {
                let addr = u64::try_from(value).context("a negative Addr")?;
                let (lo, hi) = t.addr_range.unwrap_or((addr, addr));
                t.addr_range = Some((lo.min(addr), hi.max(addr)));
                slots.push((r, SlotKind::Addr, value));
            }
            (b"Total Allocated", Some(key)) => {
                let d = device_index(t, key);
                totals.0 = Some(value);
                slots.push((r, SlotKind::Allocated(d), value));
            }
            (b"Total Reserved", Some(key)) => {
                let d = device_index(t, key);
                totals.1 = Some(value);
                slots.push((r, SlotKind::Reserved(d), value));
            }
            _ => id_slot(b, key, v, slots, t),
        }
    }
    if let (Some(key), Some((_, bytes))) = (device, get(b"Bytes")) {
        let d = device_index(t, key);
        let net = &mut t.devices[d];
        net.events.push((ts, bytes, totals.0, totals.1));
        if let Some(a) = totals.0 {
            net.min_allocated = net.min_allocated.min(a as i64);
        }
        if let Some(r) = totals.1 {
            net.min_reserved = net.min_reserved.min(r as i64);
        }
    }
    Ok(())
}

fn device_index(t: &mut Template, key: (i128, i128)) -> usize {
    if let Some(i) = t.devices.iter().position(|d| d.key == key) {
        return i;
    }
    t.devices.push(DeviceNet {
        key,
        events: Vec::new(),
        min_allocated: i64::MAX,
        min_reserved: i64::MAX,
    });
    t.devices.len() - 1
}
