//! Table-driven tests of the command-line value parsers.

use super::*;

#[test]
fn sizes_binary_decimal_and_scientific() {
    let cases: &[(&str, u64)] = &[
        ("10G", 10 << 30),
        ("10GiB", 10 << 30),
        ("10gi", 10 << 30),
        ("10GB", 10_000_000_000),
        ("512MB", 512_000_000),
        ("512M", 512 << 20),
        ("40GiB", 40 << 30),
        ("1.5GiB", 3 << 29),
        ("1.5GB", 1_500_000_000),
        ("1.5e9", 1_500_000_000),
        ("2E3", 2000),
        ("1e-3KiB", 1),
        ("1048576", 1_048_576),
        ("0", 0),
        ("7 kib", 7168),
        ("12B", 12),
        ("1K", 1024),
        ("2TB", 2_000_000_000_000),
        ("1T", 1 << 40),
    ];
    for (text, bytes) in cases {
        assert_eq!(parse_size(text), Ok(*bytes), "{text}");
    }
}

#[test]
fn bad_sizes_say_what_is_expected() {
    for text in [
        "",
        "GiB",
        "-1GiB",
        "1.2.3GB",
        "40 gigs",
        "1.",
        ".5GB",
        "10X",
        "1e",
        "99999999999TiB",
        "1e400",
    ] {
        let e = parse_size(text).expect_err(text);
        assert!(
            e.starts_with(&format!(
                "invalid size '{text}': expected e.g. 10GiB, 512MB, 1.5e9"
            )),
            "{e}"
        );
    }
}

#[test]
fn times_with_units_and_plain_microseconds() {
    let cases: &[(&str, i64)] = &[
        ("1.5ms", 1_500_000),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("250μs", 250_000),
        ("2s", 2_000_000_000),
        ("100ns", 100),
        ("394129.25", 394_129_250),
        ("-1", -1000),
        ("1e12", 1_000_000_000_000_000),
        ("0.0004", 0),
        ("3 ms", 3_000_000),
    ];
    for (text, ns) in cases {
        assert_eq!(
            parse_time_offset(text),
            Ok(TimeOffset { ns: *ns }),
            "{text}"
        );
    }
    for text in ["", "ms", "1.5 minutes", "1e999", "--3", "1h"] {
        let e = parse_time_offset(text).expect_err(text);
        assert!(e.starts_with(&format!("invalid time '{text}'")), "{e}");
    }
}

#[test]
fn instants_are_keywords_or_times() {
    assert_eq!(parse_instant("peak"), Ok(InstantArg::Peak));
    assert_eq!(parse_instant("END"), Ok(InstantArg::End));
    assert_eq!(parse_instant("oom"), Ok(InstantArg::Oom));
    assert_eq!(
        parse_instant("2ms"),
        Ok(InstantArg::At(TimeOffset { ns: 2_000_000 }))
    );
    let e = parse_instant("later").expect_err("later");
    assert!(e.contains("expected peak, oom, end"), "{e}");
}

#[test]
fn devices_by_ordinal_or_name() {
    use collector::model::{DeviceId, DeviceType};
    assert_eq!(parse_device("0"), Ok(DeviceArg::Ordinal(0)));
    assert_eq!(parse_device("-1"), Ok(DeviceArg::Ordinal(-1)));
    assert_eq!(parse_device("cuda:1"), Ok(DeviceArg::Id(DeviceId::cuda(1))));
    assert_eq!(parse_device("CPU"), Ok(DeviceArg::Id(DeviceId::CPU)));
    let xpu = DeviceId {
        device_type: DeviceType::XPU,
        index: 2,
    };
    assert_eq!(parse_device("xpu:2"), Ok(DeviceArg::Id(xpu)));
    for text in ["gpu0", "cuda:", "cuda:x", "", "cuda"] {
        let e = parse_device(text).expect_err(text);
        assert_eq!(
            e,
            format!("invalid device '{text}': expected e.g. 0, cuda:0, cpu")
        );
    }
    // A ROCm GPU is cuda:0 to torch and to --device; an ordinal matches any type.
    let hip = DeviceId {
        device_type: DeviceType::HIP,
        index: 0,
    };
    assert!(DeviceArg::Id(DeviceId::cuda(0)).matches(hip));
    assert!(!DeviceArg::Id(DeviceId::cuda(1)).matches(hip));
    assert!(DeviceArg::Ordinal(-1).matches(DeviceId::CPU));
    assert!(!DeviceArg::Id(DeviceId::CPU).matches(DeviceId::cuda(-1)));
}
