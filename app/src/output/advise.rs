//! `advise`'s reporters: a table per device for people, one JSON document for programs
//! (`{"devices":[{"device","measured_peak_bytes","techniques":[…],"fits"?}]}`); each
//! technique's parameter under its own key (`world_size`, `factor`, `degree`, `rank`).

use std::io::{self, Write};

use collector::analysis::advise::{DeviceAdvice, Estimate, Fit, Parameter, Technique};
use collector::units::bytes_iec;
use serde_json::{Map, Value, json};

/// One device's advice with its display name (`cpu`, `cuda:0`).
pub struct NamedAdvice<'a> {
    /// The device's name.
    pub device: String,
    /// The advice.
    pub advice: &'a DeviceAdvice,
}

/// The advice as one JSON document.
pub fn advise_json(out: &mut impl Write, devices: &[NamedAdvice<'_>]) -> io::Result<()> {
    let devices: Vec<Value> = devices.iter().map(device_json).collect();
    serde_json::to_writer_pretty(&mut *out, &json!({ "devices": devices }))?;
    writeln!(out)
}

fn technique_json(t: Technique) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("technique".into(), t.as_str().into());
    if let Some((p, value)) = t.parameter() {
        m.insert(p.key().into(), value.into());
    }
    m
}

fn estimate_json(e: &Estimate) -> Value {
    let mut m = technique_json(e.technique);
    m.insert("estimated_peak_bytes".into(), e.estimated_peak_bytes.into());
    m.insert("saving_bytes".into(), e.saving_bytes.into());
    if let Some(h) = e.host_bytes {
        m.insert("host_bytes".into(), h.into());
    }
    m.insert("assumptions".into(), e.assumptions.as_str().into());
    m.insert("cost".into(), e.cost.as_str().into());
    m.insert(
        "incompatible_with".into(),
        e.technique.incompatible_with().into(),
    );
    Value::Object(m)
}

fn fit_json(f: &Fit) -> Value {
    let combination = f.combination.as_ref().map(|c| {
        c.iter()
            .map(|&t| Value::Object(technique_json(t)))
            .collect::<Vec<_>>()
    });
    json!({
        "capacity_bytes": f.capacity_bytes,
        "fits_as_measured": f.fits_as_measured,
        "combination": combination,
        "estimated_peak_bytes": f.estimated_peak_bytes,
    })
}

fn device_json(d: &NamedAdvice<'_>) -> Value {
    let mut m = Map::new();
    m.insert("device".into(), d.device.as_str().into());
    m.insert(
        "measured_peak_bytes".into(),
        d.advice.measured_peak_bytes.into(),
    );
    let techniques: Vec<Value> = d.advice.estimates.iter().map(estimate_json).collect();
    m.insert("techniques".into(), techniques.into());
    if let Some(f) = &d.advice.fit {
        m.insert("fits".into(), fit_json(f));
    }
    Value::Object(m)
}

/// A technique with its parameter, for people: `zero1 ×4 ranks`, `micro_batch ÷2`,
/// `tensor_parallel ×2`, `lora r=8`.
pub fn label(t: Technique) -> String {
    match t.parameter() {
        Some((Parameter::WorldSize, n)) => format!("{} ×{n} ranks", t.as_str()),
        Some((Parameter::Factor, k)) => format!("{} ÷{k}", t.as_str()),
        Some((Parameter::Degree, d)) => format!("{} ×{d}", t.as_str()),
        Some((Parameter::Rank, r)) => format!("{} r={r}", t.as_str()),
        None => t.as_str().to_owned(),
    }
}

/// The advice as text: per device a table of estimates, then each one's assumptions and
/// price, then the fit.
pub fn advise_text(out: &mut impl Write, devices: &[NamedAdvice<'_>]) -> io::Result<()> {
    for (i, d) in devices.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let a = d.advice;
        writeln!(
            out,
            "{}  measured peak {}",
            d.device,
            bytes_iec(a.measured_peak_bytes)
        )?;
        writeln!(
            out,
            "  {:<28} {:>12} {:>12}",
            "technique", "est. peak", "saving"
        )?;
        for e in &a.estimates {
            writeln!(
                out,
                "  {:<28} {:>12} {:>12}",
                label(e.technique),
                bytes_iec(e.estimated_peak_bytes),
                bytes_iec(e.saving_bytes)
            )?;
        }
        for e in &a.estimates {
            writeln!(out)?;
            writeln!(out, "  {}: {}", label(e.technique), e.assumptions)?;
            writeln!(out, "    price: {}", e.cost)?;
            if let Some(h) = e.host_bytes {
                writeln!(out, "    host memory: {}", bytes_iec(h))?;
            }
            let not_with = e.technique.incompatible_with();
            if !not_with.is_empty() {
                writeln!(out, "    not with: {}", not_with.join(", "))?;
            }
        }
        if let Some(f) = &a.fit {
            writeln!(out)?;
            fit_text(out, f)?;
        }
    }
    Ok(())
}

fn fit_text(out: &mut impl Write, f: &Fit) -> io::Result<()> {
    writeln!(out, "  {}", fit_sentence(f))
}

/// The smallest combination that fits, in one line (the text, the report and the viewer
/// say the same).
pub fn fit_sentence(f: &Fit) -> String {
    let capacity = bytes_iec(i64::try_from(f.capacity_bytes).unwrap_or(i64::MAX));
    if f.fits_as_measured {
        return format!("fits in {capacity} as measured: nothing to change");
    }
    match (&f.combination, f.estimated_peak_bytes) {
        (Some(c), Some(peak)) => {
            let names: Vec<String> = c.iter().map(|&t| label(t)).collect();
            format!(
                "to fit in {capacity}: {} (estimated peak {})",
                names.join(" + "),
                bytes_iec(peak)
            )
        }
        _ => format!("no combination is estimated to fit in {capacity}"),
    }
}
