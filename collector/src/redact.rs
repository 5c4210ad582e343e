//! Stripping user paths from a [`Recording`] before it is shared (`vramscope pack
//! --redact-paths`).
//!
//! Stacks, Python-function op names (`/home/alice/proj/train.py(42): step`), thread names,
//! the recorded command line and the host name can all say who ran what where; the host
//! name is replaced outright. Every absolute path in
//! those strings is cut down to what a reader of a bug report needs: code inside an
//! installed package keeps its path from `site-packages/` (or `dist-packages/`) on
//! (`site-packages/torch/nn/modules/module.py`: still library code to `live`'s grouping),
//! the standard library keeps `pythonX.Y/…`, and everything else keeps only its file name
//! (`train.py`). Op names such as `aten::mm` contain no paths and are left alone.

use std::borrow::Cow;

use crate::model::{Recording, StrId, StringTable};

/// Properties that name the machine a recording was made on (`record`'s host name): a
/// redacted pack says only that there was one.
const WHO_AND_WHERE: [&str; 1] = ["host"];
/// What a redacted property says.
const REDACTED: &str = "(redacted)";

/// What [`redact_paths`] changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redacted {
    /// Interned strings (op names, frame names and files) rewritten.
    pub strings: usize,
    /// Other strings (properties, thread names, diagnostics) rewritten.
    pub other: usize,
}

/// Rewrite every absolute path in `rec`'s strings as described in the module docs.
pub fn redact_paths(rec: &mut Recording) -> Redacted {
    let mut done = Redacted::default();
    // Two paths may shorten to the same text (`/a/x.py`, `/b/x.py`): re-intern, so equal
    // names keep one id and per-name grouping stays right.
    let mut table = StringTable::default();
    let mut remap = Vec::with_capacity(rec.strings.len());
    for i in 0..rec.strings.len() {
        let text = redact_text(rec.strings.get(StrId(i as u32)));
        if matches!(text, Cow::Owned(_)) {
            done.strings += 1;
        }
        remap.push(table.intern(&text));
    }
    let new_id = |id: StrId| remap.get(id.0 as usize).copied().unwrap_or(id);
    rec.ops.update(|op| op.name = new_id(op.name));
    for frame in rec.stacks.iter_mut().flatten() {
        frame.name = new_id(frame.name);
        frame.file = new_id(frame.file);
    }
    rec.strings = table;

    let mut rewrite = |s: &mut String| {
        if let Cow::Owned(new) = redact_text(s) {
            *s = new;
            done.other += 1;
        }
    };
    rec.meta.properties.values_mut().for_each(&mut rewrite);
    for t in &mut rec.threads {
        t.name.iter_mut().for_each(&mut rewrite);
    }
    let counts = std::mem::take(&mut rec.diagnostics.counts);
    for (mut what, n) in counts {
        rewrite(&mut what);
        *rec.diagnostics.counts.entry(what).or_insert(0) += n;
    }
    for key in WHO_AND_WHERE {
        if let Some(value) = rec.meta.properties.get_mut(key) {
            *value = REDACTED.to_owned();
            done.other += 1;
        }
    }
    done
}

/// Characters that may come right before a path inside a text.
fn starts_token(previous: Option<char>) -> bool {
    previous.is_none_or(|c| c.is_whitespace() || "([{<\"'=,;:".contains(c))
}

/// Characters that end a path inside a text.
fn ends_token(c: char) -> bool {
    c.is_whitespace() || "()[]{}<>\"',;".contains(c)
}

/// `s` with its absolute paths shortened; borrowed when nothing changed.
pub fn redact_text(s: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut previous = None;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let begins = starts_token(previous)
            && (c == '/' || c == '~' || c == '\\' || is_drive(&s[i..]))
            && path_start(&s[i..]);
        previous = Some(c);
        if !begins {
            continue;
        }
        let end = s[i..].find(ends_token).map_or(s.len(), |n| i + n);
        let path = &s[i..end];
        if let Some(short) = shorten(path) {
            out.push_str(&s[copied..i]);
            out.push_str(&short);
            copied = end;
        }
        while chars.peek().is_some_and(|&(j, _)| j < end) {
            previous = chars.next().map(|(_, c)| c);
        }
    }
    if copied == 0 {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// `C:\` or `C:/`.
fn is_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/')
}

/// Whether a path begins here: `/x/…`, `~/…`, `\\server\…`, `C:\…`.
fn path_start(s: &str) -> bool {
    let rest = if is_drive(s) {
        &s[3..]
    } else if let Some(r) = s.strip_prefix("~/") {
        r
    } else if let Some(r) = s.strip_prefix("\\\\") {
        r
    } else if let Some(r) = s.strip_prefix('/') {
        r
    } else {
        return false;
    };
    rest.chars()
        .next()
        .is_some_and(|c| !ends_token(c) && c != '/')
}

/// The shortened form of one path, or `None` to keep it (a single component like `/tmp`
/// says nothing about anybody).
fn shorten(path: &str) -> Option<String> {
    let parts: Vec<&str> = path
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != "~" && !is_drive_part(p))
        .collect();
    if parts.len() < 2 {
        return None;
    }
    let package_root = parts
        .iter()
        .rposition(|p| *p == "site-packages" || *p == "dist-packages");
    let stdlib_root = parts.iter().rposition(|p| {
        // `python3.11`, not a user's folder called `python3`.
        p.strip_prefix("python")
            .is_some_and(|v| v.contains('.') && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    let keep = match (package_root, stdlib_root) {
        (Some(root), _) if root + 1 < parts.len() => &parts[root..],
        (None, Some(root)) => &parts[root..],
        _ => &parts[parts.len() - 1..],
    };
    Some(keep.join("/"))
}

fn is_drive_part(p: &str) -> bool {
    p.len() == 2 && p.as_bytes()[0].is_ascii_alphabetic() && p.as_bytes()[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, OpCategory, OpSpan, SourceFormat};

    #[test]
    fn paths_are_shortened_and_other_text_is_kept() {
        let cases = [
            ("/home/alice/proj/train.py", "train.py"),
            (
                "/home/alice/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py(1501): _call_impl",
                "site-packages/torch/nn/modules/module.py(1501): _call_impl",
            ),
            (
                "/usr/lib/python3.11/threading.py",
                "python3.11/threading.py",
            ),
            (
                "python /home/bob/x/run.py --cfg /data/secret/c.yaml",
                "python run.py --cfg c.yaml",
            ),
            ("~/work/model.py(3): f", "model.py(3): f"),
            ("C:\\Users\\carol\\proj\\train.py", "train.py"),
            ("aten::mm", "aten::mm"),
            ("MB/s and 3/4 and a/b/c", "MB/s and 3/4 and a/b/c"),
            ("/tmp", "/tmp"),
            ("/home/python3/proj/x.py", "x.py"),
            ("??", "??"),
            ("", ""),
            ("file=/srv/u/a.py, line 3", "file=a.py, line 3"),
            ("Ünï /home/ü/ß.py", "Ünï ß.py"),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_text(input), expected, "{input}");
        }
        assert!(matches!(redact_text("aten::add_"), Cow::Borrowed(_)));
    }

    #[test]
    fn ids_are_remapped_when_paths_collapse() {
        let mut rec = Recording::empty(SourceFormat::TorchChromeTrace, "test");
        let a = rec.strings.intern("/a/one/x.py(1): f");
        let b = rec.strings.intern("/b/two/x.py(1): f");
        let mm = rec.strings.intern("aten::mm");
        let file = rec.strings.intern("/home/u/m.py");
        let t = rec.thread_index("1", "1");
        for (name, start_ns) in [(a, 0), (b, 10), (mm, 20)] {
            rec.ops.push(OpSpan {
                name,
                category: OpCategory::PythonFunction,
                thread: t,
                start_ns,
                end_ns: start_ns + 5,
            });
        }
        rec.stacks.push(vec![Frame {
            name: mm,
            file,
            line: 3,
        }]);
        rec.meta
            .properties
            .insert("command".into(), "python /home/u/train.py".into());
        rec.meta
            .properties
            .insert("host".into(), "gpu-node-17.lab.example.com".into());
        let done = redact_paths(&mut rec);
        assert_eq!(
            done,
            Redacted {
                strings: 3,
                other: 2
            }
        );
        assert_eq!(rec.meta.properties["host"], "(redacted)");
        assert_eq!(
            rec.ops.get(0).expect("an op").name,
            rec.ops.get(1).expect("an op").name,
            "equal texts share an id"
        );
        assert_eq!(rec.op_name(rec.ops.get(0).expect("an op")), "x.py(1): f");
        assert_eq!(rec.op_name(rec.ops.get(2).expect("an op")), "aten::mm");
        assert_eq!(rec.strings.get(rec.stacks[0][0].file), "m.py");
        assert_eq!(rec.strings.get(rec.stacks[0][0].name), "aten::mm");
        assert_eq!(rec.meta.properties["command"], "python train.py");
    }
}
