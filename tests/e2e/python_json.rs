//! JSON as Python reads it (torch writes traces with Python's json): a key given twice
//! keeps its last value, `traceEvents` given twice its last array, a lone surrogate escape
//! (`"\udcff"`, what Python writes for bytes it cannot decode) is a character; and numbers
//! past what vramscope holds are named, never clamped or wrapped without a word.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::record_support::run_python;
use crate::support::*;

/// A CPU op and a 1 MiB allocation in it, as JSON text, with `ts` and `Bytes` given twice
/// (the first values wrong) when `twice`.
fn events(twice: bool, bytes: u64, device_id: &str) -> String {
    let (ts, b) = if twice {
        (
            "\"ts\":1,\"ts\":5",
            format!("\"Bytes\":7,\"Bytes\":{bytes}"),
        )
    } else {
        ("\"ts\":5", format!("\"Bytes\":{bytes}"))
    };
    format!(
        r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm \udcff","pid":1,"tid":1,"ts":0,"dur":10}},{{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,{ts},"args":{{{b},"Total Allocated":{bytes},"Addr":4096,"Device Type":1,"Device Id":{device_id}}}}}"#
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

/// `summary` of the trace `{TOP"traceEvents":[EVENTS]}` written as `name` in `dir`.
fn summary_of(dir: &Path, name: &str, top: &str, events: &str) -> Value {
    let path = write(dir, name, &format!(r#"{{{top}"traceEvents":[{events}]}}"#));
    vramscope_json(&["summary", path.to_str().expect("utf-8")])
}

fn warning(s: &Value, needle: &str) -> u64 {
    let warnings = s["warnings"].as_object().expect("warnings");
    let found = warnings.iter().find(|(k, _)| k.contains(needle));
    let (_, n) = found.unwrap_or_else(|| panic!("no warning with {needle:?}: {warnings:?}"));
    n.as_u64().expect("a count")
}

#[test]
fn keys_given_twice_keep_their_last_value_as_python_reads_them() {
    let dir = temp_dir("python-json-twice");
    // GIVEN a memory event with `ts` and `Bytes` given twice
    // WHEN summarized, THEN it is read with the last values, and a note says so
    let s = summary_of(&dir, "dup.json", "", &events(true, 1 << 20, "0"));
    assert_eq!(s["devices"][0]["device"], "cuda:0", "{s}");
    assert_eq!(s["devices"][0]["peak_allocated_bytes"], 1 << 20);
    assert_eq!(s["devices"][0]["peak_allocated_at_us"], 5.0);
    assert_eq!(warning(&s, "a key given twice read with its last value"), 1);
    // AND `traceEvents` given twice: the last array is the trace (Python keeps the last)
    let first = format!(r#""traceEvents":[{}],"#, events(false, 3 << 20, "0"));
    let s = summary_of(&dir, "arrays.json", &first, &events(false, 2 << 20, "0"));
    assert_eq!(s["events"], 2, "{s}");
    assert_eq!(s["devices"][0]["peak_allocated_bytes"], 2 << 20);
    assert_eq!(warning(&s, "\"traceEvents\" given again"), 1);
}

#[test]
fn a_lone_surrogate_escape_reads_as_a_replacement_character() {
    let dir = temp_dir("python-json-surrogate");
    let s = summary_of(&dir, "surrogate.json", "", &events(false, 1 << 20, "0"));
    assert_eq!(
        s["devices"][0]["peak_allocated_op"], "aten::mm \u{fffd}",
        "{s}"
    );
    assert_eq!(warning(&s, "lone surrogate escapes"), 1);
}

#[test]
fn numbers_past_the_range_are_named_not_clamped() {
    let dir = temp_dir("python-json-range");
    // A device id of 2^64: the event is skipped with a note, never `cuda:2147483647`.
    let s = summary_of(
        &dir,
        "device.json",
        "",
        &events(false, 1 << 20, "18446744073709551616"),
    );
    assert!(!s.to_string().contains("cuda:2147483647"), "{s}");
    assert_eq!(warning(&s, "Device Id outside -1..=2147483647 skipped"), 1);
    // baseTimeNanoseconds = i64::MAX: ignored with a note, the times exact from zero.
    let s = summary_of(
        &dir,
        "base.json",
        r#""baseTimeNanoseconds":9223372036854775807,"#,
        &events(false, 1 << 20, "0"),
    );
    assert_eq!(
        warning(&s, "baseTimeNanoseconds 9223372036854775807 would put"),
        1
    );
    assert_eq!(s["duration_us"], 10.0, "{s}");
    assert_eq!(s["devices"][0]["peak_allocated_at_us"], 5.0);
}

#[test]
fn snapshot_sizes_near_two_to_the_64_are_errors_not_negative_caches() {
    let dir = temp_dir("python-json-sizes");
    let script = r#"
import pickle, sys
seg = {"device": 0, "address": 1 << 32, "total_size": int(sys.argv[2]), "allocated_size": 512,
       "active_size": 512, "requested_size": 512, "stream": 0, "segment_type": "large",
       "blocks": [{"address": 1 << 32, "size": 512, "requested_size": 512,
                   "state": "active_allocated", "frames": []}]}
entry = {"action": "alloc", "addr": 1 << 33, "size": int(sys.argv[3]), "stream": 0,
         "time_us": 1, "frames": []}
pickle.dump({"segments": [seg], "device_traces": [[entry]]}, open(sys.argv[1], "wb"), protocol=2)
"#;
    for (name, total, entry, what) in [
        (
            "segment.pickle",
            u64::MAX - 4095,
            512,
            "a segment of 18446744073709547520 bytes",
        ),
        (
            "entry.pickle",
            2 << 20,
            u64::MAX,
            "a trace entry on cuda:0 of 18446744073709551615 bytes",
        ),
    ] {
        let path = dir.join(name);
        let p = path.to_str().expect("utf-8");
        run_python(&["-c", script, p, &total.to_string(), &entry.to_string()]);
        let out = vramscope(&["summary", p]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(p), "names the file: {stderr}");
        assert!(stderr.contains(what), "{stderr}");
        assert!(stderr.contains("more than any device holds"), "{stderr}");
        assert!(stderr.contains("take it again"), "{stderr}");
    }
}

#[test]
fn a_snapshot_segment_of_a_device_beyond_32_bits_is_skipped_with_a_note() {
    let dir = temp_dir("python-json-device");
    let script = r#"
import pickle, sys
def seg(device, address):
    return {"device": device, "address": address, "total_size": 2 << 20,
            "allocated_size": 512, "active_size": 512, "requested_size": 512, "stream": 0,
            "segment_type": "large",
            "blocks": [{"address": address, "size": 512, "requested_size": 512,
                        "state": "active_allocated", "frames": []}]}
pickle.dump({"segments": [seg(0, 1 << 32), seg((1 << 64) - 1, 1 << 33)],
             "device_traces": [[]]}, open(sys.argv[1], "wb"), protocol=2)
"#;
    let path = dir.join("device.pickle");
    let p = path.to_str().expect("utf-8");
    run_python(&["-c", script, p]);
    let s = vramscope_json(&["summary", p]);
    // Only cuda:0: the device 2^64 − 1 is no cuda:-1 and no cuda:2147483647.
    let devices: Vec<&str> = (s["devices"].as_array().expect("devices").iter())
        .filter_map(|d| d["device"].as_str())
        .collect();
    assert_eq!(devices, ["cuda:0"], "{s}");
    assert_eq!(
        warning(&s, "segments of a device numbered beyond 32 bits skipped"),
        1,
        "{s}"
    );
}

#[test]
fn snapshot_entries_adding_up_past_any_device_are_an_error_not_a_saturated_total() {
    // 2,048 allocations of 1 PiB each (each within the size limit): 2 EiB in all.
    let dir = temp_dir("python-json-total");
    let script = r#"
import pickle, sys
entries = [{"action": "alloc", "addr": (1 << 40) + i * (1 << 51), "size": 1 << 50,
            "stream": 0, "time_us": i, "frames": []} for i in range(2048)]
pickle.dump({"segments": [], "device_traces": [entries]}, open(sys.argv[1], "wb"), protocol=2)
"#;
    let path = dir.join("total.pickle");
    let p = path.to_str().expect("utf-8");
    run_python(&["-c", script, p]);
    let out = vramscope(&["summary", p]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(p), "names the file: {stderr}");
    assert!(
        stderr.contains("add up to more than any device holds"),
        "{stderr}"
    );
}
